"""Write-through mirrors: other stores that every applied write of a mirrored scope lands
in, and that an erasure reaches and then asks whether the value is gone.

A ``Mirror`` has a ``name``, ``put(memory) -> external_id`` and ``remove(external_id,
memory)``, and may have ``verify_removed(external_id, memory) -> bool``. What it is given
is a ``Mirrored``: the memory's text and its custody metadata (the memory's id, scope,
principal, trust, the receipt of the write, when it held, ``source: "retain"``). The
mirror's own id for it is recorded on the memory (a ``MirrorLink``), and a removal
reaches the mirror by that id. A mirror that is down never loses a write: the link stays
``pending`` or ``failed`` with the error, until a retry lands it.

Shipped: ``JsonlMirror`` (a JSON lines file), ``LangGraphMirror`` (any LangGraph
``BaseStore``), ``PgvectorMirror`` (a table in any PostgreSQL with pgvector). A hosted
service (mem0 Platform, Zep, Letta) is a class of a few lines over its client
(docs/mirrors.md). Which scopes a mirror takes is a list of scope patterns, as
``[retention]`` writes them (``*``, ``global``, ``project:*``, ``agent:NAME``, …).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from retain.chrono import stamp
from retain.model import Memory

# a link's states: what the mirror holds of the memory, as far as the store knows
PENDING = "pending"  # to put: written here, not yet in the mirror
MIRRORED = "mirrored"  # put: the mirror holds it under external_id
FAILED = "failed"  # the put failed; a retry puts it again
REMOVING = "removing"  # to remove from the mirror
REMOVED = "removed"  # removed (verified, or without a way to verify)
REMOVE_FAILED = "remove_failed"  # the removal failed, or the value is still found there
BACKLOG = (PENDING, FAILED, REMOVING, REMOVE_FAILED)

# an erasure's verification per mirror, as its certificate reports it
VERIFIED = "verified"  # removed, and the mirror's own search no longer finds it
STILL_INDEXED = "still_indexed"  # removed, but the mirror still finds the value
UNVERIFIED = "unverified"  # removed; the mirror has no way to check
FAILED_REMOVAL = "failed"  # the removal itself failed (the link says why)


@dataclass(frozen=True, slots=True)
class Mirrored:
    """A memory as a mirror receives it: its text and its custody metadata."""

    id: str
    scope: str
    description: str
    body: str
    custody: Mapping[str, Any]

    @property
    def text(self) -> str:
        """What a mirror stores and searches: the description, then the body."""
        return self.description if not self.body else f"{self.description}\n{self.body}"


def mirrored(memory: Memory, receipt: str | None) -> Mirrored:
    """``memory`` as mirrors receive it, ``receipt`` the id of the event that wrote it."""
    custody = {
        "realm": memory.realm,
        "memory_id": memory.id,
        "scope": memory.scope,
        "name": memory.name,
        "principal": memory.changed_by or memory.author,
        "author": memory.author,
        "trust": memory.trust.value,
        "receipt_id": receipt,
        "valid_from": stamp(memory.valid_from) if memory.valid_from else None,
        "source": "retain",
    }
    return Mirrored(memory.id, memory.scope, memory.description, memory.body, custody)


@runtime_checkable
class Mirror(Protocol):
    """Another store every applied write of its scopes lands in (see the module)."""

    name: str

    def put(self, memory: Mirrored) -> str:
        """Store ``memory`` (again, if it was: the same id replaces it); its id there."""
        ...

    def remove(self, external_id: str, memory: Mirrored) -> None:
        """Remove what ``put`` stored under ``external_id``."""
        ...


def verifier(mirror: Mirror) -> Callable[[str, Mirrored], bool] | None:
    """The mirror's ``verify_removed``, when it has one."""
    found = getattr(mirror, "verify_removed", None)
    return found if callable(found) else None


@dataclass(frozen=True, slots=True)
class MirrorLink:
    """What one mirror holds of one memory, as the store last knew it."""

    realm: str
    memory_id: str
    mirror: str
    state: str
    external_id: str | None
    attempts: int
    error: str
    updated_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "mirror": self.mirror,
            "state": self.state,
            "external_id": self.external_id,
            "attempts": self.attempts,
            "error": self.error,
            "updated_at": stamp(self.updated_at),
        }


@dataclass(frozen=True, slots=True)
class Configured:
    """A mirror and the scope patterns it takes."""

    mirror: Mirror
    scopes: tuple[str, ...] = ("*",)

    def takes(self, scope: str) -> bool:
        from retain.governance.retention import rank

        return any(rank(pattern, scope) > 0 for pattern in self.scopes)


@dataclass(frozen=True, slots=True)
class MirrorSpec:
    """A ``[[mirrors]]`` entry of config.toml: a shipped kind and its options."""

    name: str
    kind: str
    scopes: tuple[str, ...]
    options: Mapping[str, str] = field(default_factory=dict)


# -- the shipped mirrors ----------------------------------------------------------------


class JsonlMirror:
    """A JSON lines file: one line per memory, ``{"id", "text", "custody"}``, the memory's
    id its id there. A put or removal writes the file anew beside it and moves it into
    place, so a reader never sees half of one."""

    def __init__(self, path: str | os.PathLike[str], *, name: str = "jsonl") -> None:
        self.path = Path(path)
        self.name = name

    def _lines(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        held: dict[str, dict[str, Any]] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                held[str(record["id"])] = record
        return held

    def _write(self, held: Mapping[str, Mapping[str, Any]]) -> None:
        import tempfile  # here: with shutil and random, 3 ms of a command that mirrors nothing

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for record in held.values():
                out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, self.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The file to itself while it is read and written anew (another thread or
        process writing it waits): a lock file beside it."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(f".{self.path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def put(self, memory: Mirrored) -> str:
        with self._locked():
            held = self._lines()
            held[memory.id] = {
                "id": memory.id, "text": memory.text, "custody": dict(memory.custody),
            }  # fmt: skip
            self._write(held)
        return memory.id

    def remove(self, external_id: str, memory: Mirrored) -> None:
        with self._locked():
            held = self._lines()
            if held.pop(external_id, None) is not None:
                self._write(held)

    def verify_removed(self, external_id: str, memory: Mirrored) -> bool:
        """Neither the id nor the text is in the file."""
        held = self._lines()
        return external_id not in held and all(
            record.get("text") != memory.text for record in held.values()
        )


class LangGraphMirror:
    """Any LangGraph ``BaseStore``: one item per memory in ``namespace``, keyed by the
    memory's id, its value ``{"text", **custody}``. Where LangMem keeps its memories."""

    def __init__(
        self, store: Any, *, namespace: Sequence[str] = ("retain",), name: str = "langgraph"
    ) -> None:
        self.store = store
        self.namespace = tuple(namespace)
        self.name = name

    def put(self, memory: Mirrored) -> str:
        self.store.put(self.namespace, memory.id, {"text": memory.text, **memory.custody})
        return memory.id

    def remove(self, external_id: str, memory: Mirrored) -> None:
        self.store.delete(self.namespace, external_id)

    def verify_removed(self, external_id: str, memory: Mirrored) -> bool:
        """No item under the id, and no item of the namespace holds the text (the store's
        own search, filtered on it)."""
        if self.store.get(self.namespace, external_id) is not None:
            return False
        found = self.store.search(self.namespace, filter={"text": memory.text}, limit=1)
        return not found


class PgvectorMirror:
    """A table in any PostgreSQL with pgvector: one row per memory keyed by its id, with
    its text, custody and embedding (``embed``: texts → vectors of ``dimensions``).
    Removal is verified by a nearest-neighbour search for the value's own vector."""

    def __init__(
        self,
        url: str,
        *,
        embed: Callable[[list[str]], Sequence[Sequence[float]]],
        dimensions: int,
        table: str = "retain_mirror",
        name: str = "pgvector",
        neighbours: int = 5,
    ) -> None:
        import re

        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", table):
            from retain.errors import InvalidValue

            raise InvalidValue(
                f"table {table!r} is not a plain lower-case SQL name",
                remedy="name the table with lower-case letters, digits and _",
                field="table",
            )
        self.url, self.embed, self.dimensions = url, embed, dimensions
        self.table, self.name, self.neighbours = table, name, neighbours
        self._ready = False

    def _connect(self) -> Any:
        import psycopg

        con = psycopg.connect(self.url, autocommit=True)
        if not self._ready:
            con.execute("CREATE EXTENSION IF NOT EXISTS vector")
            con.execute(
                f"CREATE TABLE IF NOT EXISTS {self.table} (id TEXT PRIMARY KEY, text TEXT "
                f"NOT NULL, custody JSONB NOT NULL, embedding vector({self.dimensions}))"
            )
            self._ready = True
        return con

    def _vector(self, text: str) -> str:
        (vector,) = self.embed([text])
        return "[" + ",".join(repr(float(x)) for x in vector) + "]"

    def put(self, memory: Mirrored) -> str:
        with self._connect() as con:
            con.execute(
                f"INSERT INTO {self.table} (id, text, custody, embedding) "
                "VALUES (%s, %s, %s::jsonb, %s::vector) ON CONFLICT (id) DO UPDATE SET "
                "text = EXCLUDED.text, custody = EXCLUDED.custody, "
                "embedding = EXCLUDED.embedding",
                (
                    memory.id,
                    memory.text,
                    json.dumps(dict(memory.custody)),
                    self._vector(memory.text),
                ),
            )
        return memory.id

    def remove(self, external_id: str, memory: Mirrored) -> None:
        with self._connect() as con:
            con.execute(f"DELETE FROM {self.table} WHERE id = %s", (external_id,))

    def verify_removed(self, external_id: str, memory: Mirrored) -> bool:
        """No row under the id, and none of the value's nearest neighbours holds it."""
        with self._connect() as con:
            if con.execute(f"SELECT 1 FROM {self.table} WHERE id = %s", (external_id,)).fetchone():
                return False
            rows = con.execute(
                f"SELECT text FROM {self.table} ORDER BY embedding <=> %s::vector LIMIT %s",
                (self._vector(memory.text), self.neighbours),
            ).fetchall()
        return all(row[0] != memory.text for row in rows)


# -- configuration ----------------------------------------------------------------------

KINDS = ("jsonl", "pgvector")  # what config.toml can name; other mirrors are added in code
OPTIONS = {"jsonl": ("path",), "pgvector": ("url", "url_env", "table")}


def scope_patterns(patterns: Sequence[str] | str, what: str) -> tuple[str, ...]:
    """Scope patterns as ``[retention]`` writes them, or ``invalid_value``."""
    from retain.errors import InvalidValue
    from retain.governance.retention import is_pattern

    listed = [patterns] if isinstance(patterns, str) else list(patterns)
    bad = [p for p in listed if not isinstance(p, str) or not is_pattern(p)]
    if not listed or bad:
        raise InvalidValue(
            f"{what}'s scopes {listed!r} are not scope patterns",
            remedy='list patterns such as "*", "global", "project:*" or "agent:ada"',
            field="scopes",
        )
    return tuple(listed)


def specs_of(entries: Any, path: Path, home: Path) -> tuple[MirrorSpec, ...]:
    """config.toml's ``[[mirrors]]``: each a ``name``, a ``kind`` (``jsonl``, ``pgvector``),
    its ``scopes`` (default every scope) and its kind's options; else ``config_invalid``."""
    from retain.errors import ConfigInvalid, InvalidValue
    from retain.fields import is_name

    def refused(message: str, remedy: str) -> ConfigInvalid:
        return ConfigInvalid(f"[[mirrors]] in {path}: {message}", remedy=remedy, path=str(path))

    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise refused("it is not a list of tables", "write each mirror as a [[mirrors]] table")
    specs: list[MirrorSpec] = []
    for entry in entries:
        name, kind = entry.get("name"), entry.get("kind")
        if not isinstance(name, str) or not is_name(name):
            raise refused(f"name {name!r} is not a name", 'give each mirror name = "notes-file"')
        if any(s.name == name for s in specs):
            raise refused(f"two mirrors are named {name!r}", "give each mirror a name of its own")
        if kind not in KINDS:
            raise refused(
                f"mirror {name!r} has kind {kind!r}",
                f"set kind to one of {', '.join(KINDS)} (other mirrors are added in Python)",
            )
        unknown = sorted(set(entry) - {"name", "kind", "scopes", *OPTIONS[kind]})
        if unknown:
            raise refused(
                f"mirror {name!r} has {', '.join(unknown)}, which a {kind} mirror does not take",
                f"a {kind} mirror takes name, kind, scopes and {', '.join(OPTIONS[kind])}",
            )
        try:
            scopes = scope_patterns(entry.get("scopes", ["*"]), f"mirror {name!r}")
        except InvalidValue as exc:
            raise refused(exc.message, exc.remedy) from exc
        options = {k: entry[k] for k in OPTIONS[kind] if k in entry}
        if not all(isinstance(v, str) and v for v in options.values()):
            raise refused(f"mirror {name!r} has an option that is not text", "quote each option")
        if kind == "jsonl":
            if "path" not in options:
                raise refused(f"mirror {name!r} has no path", 'set path = "mirror.jsonl"')
            options["path"] = str(home / options["path"])  # a relative path is the home's
        elif ("url" in options) == ("url_env" in options):
            raise refused(
                f"mirror {name!r} needs one of url and url_env",
                'set url_env = "MIRROR_DATABASE_URL" (or url, which then lives in this file)',
            )
        specs.append(MirrorSpec(name, kind, scopes, options))
    return tuple(specs)


def built(spec: MirrorSpec, store: Any) -> Configured:
    """The mirror a ``[[mirrors]]`` entry describes; a pgvector one embeds with the store's
    embedder."""
    if spec.kind == "jsonl":
        return Configured(JsonlMirror(spec.options["path"], name=spec.name), spec.scopes)
    url = spec.options.get("url") or os.environ.get(spec.options.get("url_env", ""), "")
    if not url:
        from retain.errors import ConfigInvalid

        raise ConfigInvalid(
            f"mirror {spec.name!r} reads its URL from ${spec.options.get('url_env')}, "
            "which is not set",
            remedy="set the variable, or give the mirror's url",
            mirror=spec.name,
        )
    embedder = store.embedder.embedder

    def embed(texts: list[str]) -> Sequence[Sequence[float]]:
        vectors: Sequence[Sequence[float]] = embedder.embed(texts).tolist()
        return vectors

    mirror = PgvectorMirror(
        url, embed=embed, dimensions=embedder.dim, table=spec.options.get("table", "retain_mirror"),
        name=spec.name,
    )  # fmt: skip
    return Configured(mirror, spec.scopes)
