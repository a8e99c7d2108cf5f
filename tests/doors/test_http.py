"""The REST door through FastAPI's test client, on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from datetime import timedelta, timezone
from http.client import HTTPConnection
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.conftest import RETAIN, retain_serve, store_state

import retain
from retain import errors
from retain.chrono import ManualClock
from retain.doors import http
from retain.doors.http import app
from retain.service import MemoryService


@pytest.fixture
def client(service: MemoryService) -> TestClient:
    return TestClient(http.create_app(service))


def test_status_reports_the_store_and_the_embedder(client: TestClient) -> None:
    data = client.get("/v1/status").json()
    assert data["principal"] == "operator:test" and data["memories"] == 0
    for key in ("embedder", "embedder_configured", "degraded", "vectors", "chain_head"):
        assert key in data


def test_put_creates_then_keeps_what_a_request_leaves_out(client: TestClient) -> None:
    created = client.put(
        "/v1/memories/deploy-rule",
        json={
            "description": "Deploys need a green CI",
            "body": "never on Fridays",
            "tags": ["ops"],
        },
    )
    assert created.status_code == 201 and created.json()["created"] is True
    updated = client.put("/v1/memories/deploy-rule", json={"priority": 2})
    assert updated.status_code == 200
    data = updated.json()
    assert (data["priority"], data["body"], data["tags"]) == (2, "never on Fridays", ["ops"])
    assert data["changed"] is True and data["created"] is False
    same = client.put("/v1/memories/deploy-rule", json={"priority": 2}).json()
    assert same["changed"] is False


def test_get_read_edit_search_list_and_delete(client: TestClient) -> None:
    client.post("/v1/projects", json={"name": "web"})
    client.put(
        "/v1/memories/cache-policy?project=web",
        json={"description": "How the web cache expires", "body": "entries live ten minutes"},
    )
    got = client.get("/v1/memories/cache-policy", params={"project": "web"}).json()
    assert got["scope"] == "project:web" and got["body"] == "entries live ten minutes"
    page = client.get("/v1/memories/cache-policy/read", params={"project": "web"}).json()
    assert page["text"] == "entries live ten minutes" and page["next_offset"] is None
    edited = client.post(
        "/v1/memories/cache-policy/edit?project=web", json={"old": "ten", "new": "five"}
    ).json()
    assert edited["replacements"] == 1 and edited["body"] == "entries live five minutes"
    found = client.post(
        "/v1/memories/search", json={"queries": ["cache expiry"], "project": "web"}
    ).json()
    assert [m["name"] for m in found["memories"]] == ["cache-policy"]
    listed = client.get("/v1/memories", params={"project": "web"}).json()["memories"]
    assert [m["name"] for m in listed] == ["cache-policy"]
    removed = client.delete("/v1/memories/cache-policy", params={"project": "web"})
    said = removed.json()
    assert (said["removed"], said["referenced_by"], said["after"]) == ("cache-policy", [], None)
    assert said["before"].endswith("---\nentries live five minutes")
    assert "description: How the web cache expires\n" in said["before"]
    assert client.get("/v1/memories/cache-policy", params={"project": "web"}).status_code == 404


def test_a_search_runs_on_the_event_loop_only_where_reads_never_wait(
    service: MemoryService, backend_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_loop: list[bool] = []
    searched = MemoryService.search

    def search(self: MemoryService, *args: object, **kwargs: object) -> object:
        try:
            asyncio.get_running_loop()
            on_loop.append(True)
        except RuntimeError:  # a worker thread of the pool
            on_loop.append(False)
        return searched(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryService, "search", search)
    client = TestClient(http.create_app(service))
    assert client.post("/v1/memories/search", json={"queries": ["x"]}).status_code == 200
    # SQLite in WAL mode: a read is CPU work, done on the loop; PostgreSQL's wait on the
    # network, in the pool, where they do not hold up other requests.
    assert on_loop == [{"sqlite": True, "postgres": False}[backend_name]]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("get", "/v1/memories/missing", None, 404, "not_found"),
        ("put", "/v1/memories/new-one", {"body": "no description"}, 400, "description_required"),
        ("put", "/v1/memories/Bad Name", {"description": "d"}, 400, "invalid_name"),
        ("put", "/v1/memories/x", {"description": "d", "load": "weird"}, 400, "invalid_value"),
        ("put", "/v1/memories/x", {"description": "d", "colour": "red"}, 400, "invalid_value"),
        ("put", "/v1/memories/x", {"priority": "high"}, 400, "invalid_value"),
        ("put", "/v1/memories/x?project=nowhere", {"description": "d"}, 404, "project_not_found"),
        ("post", "/v1/remember", {"text": "a note"}, 403, "access_denied"),
        ("get", "/v1/nowhere", None, 404, "not_found"),
    ],
)
def test_refusals_carry_the_services_code_and_change_nothing(
    client: TestClient,
    service: MemoryService,
    method: str,
    path: str,
    body: dict[str, object] | None,
    status: int,
    code: str,
) -> None:
    before = store_state(service)
    response = client.request(method.upper(), path, json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and "details" in error
    assert store_state(service) == before


def test_a_conflict_is_409_with_the_service_message(client: TestClient) -> None:
    client.post("/v1/projects", json={"name": "web"})
    client.put("/v1/memories/shared?project=web", json={"description": "the web's own note"})
    response = client.put("/v1/memories/shared", json={"description": "a global note"})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "name_conflict"


def test_every_error_class_has_one_http_status() -> None:
    def leaves(cls: type[errors.RetainError]) -> list[type[errors.RetainError]]:
        subs = cls.__subclasses__()
        return [cls] if not subs else [leaf for sub in subs for leaf in leaves(sub)]

    unmapped = [cls.__name__ for cls in leaves(errors.RetainError) if cls.code == "retain_error"]
    assert not unmapped
    for cls in leaves(errors.RetainError):
        status = http.http_status(cls("x"))
        assert 400 <= status < 600
    assert http.http_status(errors.StoreBusy("x")) == 503
    assert http.http_status(errors.Unauthenticated("x")) == 401


def test_a_body_over_the_limit_is_refused_whole(service: MemoryService) -> None:
    client = TestClient(http.create_app(service, max_body_bytes=1000))
    response = client.put("/v1/memories/big", json={"description": "d", "body": "x" * 2000})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"

    def chunks() -> object:
        yield b'{"description": "d", "body": "'
        yield b"y" * 2000
        yield b'"}'

    streamed = client.put(
        "/v1/memories/big", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    assert client.get("/v1/status").json()["memories"] == 0


def test_tokens_map_requests_to_principals(service: MemoryService) -> None:
    service.add_agent("coder")
    tokens = {"op-secret": "operator:alice", "agent-secret": "agent:coder"}
    client = TestClient(http.create_app(service, tokens=tokens))
    anonymous = client.get("/v1/status")
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "unauthenticated"
    assert anonymous.headers["www-authenticate"] == "Bearer"
    wrong = client.get("/v1/status", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    foreign = client.get("/v1/status", headers=[(b"authorization", b"Bearer \xe9t\xff")])
    assert foreign.status_code == 401 and foreign.json()["error"]["code"] == "unauthenticated"
    agent = {"Authorization": "Bearer agent-secret"}
    assert client.get("/v1/status", headers=agent).json()["principal"] == "agent:coder"
    kept = client.post("/v1/remember", json={"text": "prefers tabs"}, headers=agent)
    assert kept.status_code == 201 and kept.json()["scope"] == "agent:coder"
    assert kept.json()["author"] == "agent:coder"
    refused = client.put(
        "/v1/memories/x", json={"description": "d"}, headers=agent
    )  # an agent writes through remember
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "access_denied"
    recalled = client.post("/v1/recall", json={"queries": ["tabs"]}, headers=agent).json()
    assert [m["id"] for m in recalled["memories"]] == [kept.json()["id"]]
    operator = {"Authorization": "Bearer op-secret"}
    written = client.put("/v1/memories/x", json={"description": "d"}, headers=operator).json()
    assert written["author"] == "operator:alice"


def test_a_token_may_hold_any_character(service: MemoryService) -> None:
    client = TestClient(http.create_app(service, tokens={"clé": "operator:alice"}))
    sent = [(b"authorization", "Bearer clé".encode())]
    assert client.get("/v1/status", headers=sent).json()["principal"] == "operator:alice"
    other = client.get("/v1/status", headers={"Authorization": "Bearer cle"})
    assert other.status_code == 401


def test_tokens_come_from_the_environment_and_a_file(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    file.write_text("# who may call\nfile-token = app:ci\n", encoding="utf-8")
    tokens = http.load_tokens(file, {"RETAIN_TOKENS": "a=agent:one, b=operator:two"})
    assert tokens == {"a": "agent:one", "b": "operator:two", "file-token": "app:ci"}
    with pytest.raises(errors.ConfigInvalid, match="not TOKEN=PRINCIPAL"):
        http.parse_tokens("just-a-token", "$RETAIN_TOKENS")
    with pytest.raises(errors.ConfigInvalid, match="is not a principal"):
        http.parse_tokens("t=root", "$RETAIN_TOKENS")
    with pytest.raises(errors.ConfigInvalid, match="given twice"):
        http.parse_tokens("t=agent:a,t=agent:b", "$RETAIN_TOKENS")
    with pytest.raises(errors.ConfigInvalid, match="cannot read the tokens file"):
        http.load_tokens(tmp_path / "missing", {})


def test_serving_beyond_loopback_needs_tokens() -> None:
    http.check_binding("127.0.0.1", {})
    http.check_binding("::1", {})
    http.check_binding("localhost", {})
    http.check_binding("0.0.0.0", {"t": "agent:a"})
    with pytest.raises(errors.ConfigInvalid, match="without tokens"):
        http.check_binding("0.0.0.0", {})


def test_agent_context_and_injections(service: MemoryService) -> None:
    service.add_agent("coder")
    client = TestClient(http.create_app(service, tokens={"t": "agent:coder"}))
    auth = {"Authorization": "Bearer t"}
    client.post("/v1/remember", json={"text": "the build uses make"}, headers=auth)
    rendered = client.post(
        "/v1/context", json={"session": "s1", "turn": "which build tool?"}, headers=auth
    ).json()
    assert "the build uses make" in rendered["text"] and rendered["injected"]
    rows = client.get("/v1/injections", headers=auth).json()["injections"]
    assert rows and rows[0]["session"] == "s1"


def test_openapi_lists_the_endpoints(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/status", "/v1/memories", "/v1/memories/{name}", "/v1/memories/search"):
        assert path in paths


@pytest.mark.parametrize("workers", [1, 2])
def test_retain_serve_answers_on_its_port(tmp_path: Path, workers: int) -> None:
    with retain_serve(tmp_path, "--workers", str(workers)) as (_, port):
        status = httpx.get(f"http://127.0.0.1:{port}/v1/status", timeout=2).json()
        assert status["location"] == str(tmp_path / "retain.db")
        base = f"http://127.0.0.1:{port}/v1"
        for i in range(4):  # spread over the workers: each sees the others' writes
            body = {"description": f"note {i} about tea"}
            assert httpx.put(f"{base}/memories/n{i}", json=body, timeout=10).status_code == 201
        found = httpx.post(f"{base}/memories/search", json={"queries": ["tea"]}, timeout=10)
        assert len(found.json()["memories"]) == 4


@pytest.mark.parametrize("workers", [1, 2])
def test_retain_serve_builds_the_vector_codes_before_it_listens(
    tmp_path: Path, workers: int
) -> None:
    """A store past ``[search] ann_from`` whose codes are missing (an earlier format's,
    their files gone) has them built by ``retain serve`` before it listens, so that no
    request waits for the build (and every worker finds them made)."""
    (tmp_path / "config.toml").write_text("[search]\nann_from = 2\n")
    store = retain.open(home=tmp_path)
    for name, text in {"tz": "Alice is in UTC+8", "boat": "The ferry leaves at dawn"}.items():
        store.write(name, description=text)
    store.search("timezone")  # the codes built once, then gone
    store.close()
    codes = list(tmp_path.glob("*.vectors/*.head.npy"))
    assert codes
    for path in codes:
        path.unlink()
    with retain_serve(tmp_path, "--workers", str(workers)) as (_, port):
        assert list(tmp_path.glob("*.vectors/*.head.npy"))  # built before it said it serves
        found = httpx.post(
            f"http://127.0.0.1:{port}/v1/memories/search",
            json={"queries": ["timezone"]},
            timeout=None,  # (a busy machine's search: no deadline of the client's)
        ).json()["memories"]
        assert found[0]["name"] == "tz" and "semantic" in found[0]["senses"]


def _connection_owners(server_port: int, client_ports: list[int]) -> list[int]:
    """The pid of the process holding the server's end of each client's connection."""
    inode_of: dict[int, str] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if int(local.rsplit(":", 1)[1], 16) == server_port and inode != "0":
                inode_of[int(remote.rsplit(":", 1)[1], 16)] = inode
    holder: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                for fd in (entry / "fd").iterdir():
                    link = os.readlink(fd)
                    if link.startswith("socket:["):
                        holder[link[8:-1]] = int(entry.name)
    return [holder[inode_of[port]] for port in client_ports]


def _answering(process: subprocess.Popen[str], count: int) -> list[int]:
    """The pids of the next ``count`` workers of ``retain serve`` to say they answer."""
    assert process.stderr is not None
    pids: list[int] = []
    for line in process.stderr:  # a line, or the end when the process exits
        if line.startswith("retain: worker ") and line.rstrip().endswith(" answering"):
            pids.append(int(line.split()[2]))
            if len(pids) == count:
                return pids
    pytest.fail(f"retain serve ended (exit {process.wait()}) before {count} workers answered")


def test_serve_workers_share_out_connections_and_a_dead_one_is_replaced(tmp_path: Path) -> None:
    connections: list[HTTPConnection] = []

    def connect() -> int:
        """A new kept-open connection, as agents' clients hold them; the pid serving it."""
        connection = HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", "/v1/status")
        assert connection.getresponse().read()
        connections.append(connection)
        (owner,) = _connection_owners(port, [connection.sock.getsockname()[1]])
        return owner

    with retain_serve(tmp_path, "--workers", "2") as (process, port):
        try:
            workers = set(_answering(process, 2))
            # One after another, kept open, until both workers hold one: on an idle
            # machine the second connection already goes to the other worker (a worker
            # holding more waits a step before it accepts); a busy one may take a few.
            owners = [connect()]
            while set(owners) != workers and len(owners) < 8:
                owners.append(connect())
            assert set(owners) == workers, owners  # the supervisor serves nothing itself
            os.kill(owners[0], signal.SIGKILL)  # a worker dies: another takes its place
            (new,) = _answering(process, 1)
            assert new not in workers
            # The new worker holds none, the other some: the new one takes the next (the
            # other waits 2 x ACCEPT_STEP_S first); a few tries allow for a busy machine.
            assert any(connect() == new for _ in range(5))
            assert process.poll() is None
        finally:
            for connection in connections:
                connection.close()


def test_retain_serve_refuses_a_public_address_without_tokens(tmp_path: Path) -> None:
    done = subprocess.run(
        [RETAIN, "serve", "--host", "0.0.0.0"],
        env={"RETAIN_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 13 and "config_invalid" in done.stderr


def test_memories_page_with_a_cursor_that_always_moves(
    client: TestClient, service: MemoryService
) -> None:
    for i in range(7):
        service.write(f"note-{i}", description=f"note {i}", priority=i % 3)
    expected = [m.name for m in service.list_memories()]
    first = client.get("/v1/memories", params={"limit": 3}).json()
    assert [m["name"] for m in first["memories"]] == expected[:3] and first["next_cursor"]
    service.delete(expected[2])  # the page's last memory goes: the cursor still moves on
    service.write(expected[0], description="note again", priority=9)  # and one moves back
    second = client.get("/v1/memories", params={"limit": 3, "cursor": first["next_cursor"]})
    names = [m["name"] for m in second.json()["memories"]]
    assert names == expected[3:6]
    third = client.get(
        "/v1/memories", params={"limit": 3, "cursor": second.json()["next_cursor"]}
    ).json()
    assert [m["name"] for m in third["memories"]] == [expected[6], expected[0]]
    assert third["next_cursor"] is None
    bad = client.get("/v1/memories", params={"cursor": "not-a-cursor"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_value"


def test_events_page_through_the_log(client: TestClient, service: MemoryService) -> None:
    for i in range(3):
        service.write(f"n{i}", description=f"note {i}")
    page = client.get("/v1/events", params={"limit": 2}).json()
    assert [e["kind"] for e in page["events"]] == ["realm_add", "create"]
    rest = client.get("/v1/events", params={"after": page["next_cursor"]}).json()
    assert [e["kind"] for e in rest["events"]] == ["create", "create"]
    assert rest["next_cursor"] is None
    assert [e["seq"] for e in page["events"] + rest["events"]] == [1, 2, 3, 4]
    one = service.get("n1").memory.id
    history = client.get("/v1/events", params={"memory_id": one}).json()["events"]
    assert [(e["kind"], e["memory_id"]) for e in history] == [("create", one)]


def test_facts_over_rest(client: TestClient) -> None:
    made = client.post(
        "/v1/facts",
        json={
            "subject": "Ada",
            "predicate": "employer",
            "value": "Acme",
            "valid_from": "2020-01-01",
        },
    )
    assert made.status_code == 201 and made.json()["fact"]["value"] == "Acme"
    again = client.post(
        "/v1/facts", json={"subject": "Ada", "predicate": "employer", "value": "Acme"}
    )
    assert again.status_code == 200 and again.json()["changed"] is False
    client.post(
        "/v1/facts",
        json={
            "subject": "Ada",
            "predicate": "employer",
            "value": "Initech",
            "valid_from": "2024-01-01",
        },
    )
    now = client.get("/v1/facts", params={"subject": "ada"}).json()["facts"]
    assert [f["value"] for f in now] == ["Initech"]
    then = client.get("/v1/facts", params={"subject": "Ada", "valid_at": "2022-01-01"}).json()
    assert [f["value"] for f in then["facts"]] == ["Acme"]
    history = client.get("/v1/facts/history", params={"subject": "Ada", "predicate": "employer"})
    assert [f["status"] for f in history.json()["facts"]] == ["superseded", "active"]
    back = client.post("/v1/facts/retract", json={"subject": "Ada", "predicate": "employer"})
    assert back.status_code == 200 and back.json()["restored"]["value"] == "Acme"
    missing = client.get("/v1/facts")
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "invalid_value"


def test_an_agent_may_not_read_the_event_log(service: MemoryService) -> None:
    service.add_agent("coder")
    client = TestClient(http.create_app(service, tokens={"t": "agent:coder"}))
    response = client.get("/v1/events", headers={"Authorization": "Bearer t"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "access_denied"


def test_a_serving_process_keeps_blas_to_one_thread() -> None:
    """In a new interpreter, as ``retain serve`` starts: numpy loaded only after the limit
    is set (a limit reaches only the libraries loaded when it is set)."""
    script = (
        "import sys, threadpoolctl\n"
        "from retain.doors import http\n"
        "assert 'numpy' not in sys.modules\n"
        "http.one_blas_thread()\n"
        "assert 'numpy' not in sys.modules\n"  # (not at start: it would cost the server RSS)
        "import numpy\n"
        "print([p['num_threads'] for p in threadpoolctl.threadpool_info()"
        " if p['user_api'] == 'blas'])\n"
    )
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: BLAS runs one thread whatever the server says")
    env = {k: v for k, v in os.environ.items() if k not in app.BLAS_THREADS}  # (none preset)
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    threads = json.loads(ran.stdout)
    assert threads and set(threads) == {1}


@pytest.mark.parametrize(
    "params", [{"after": 2**63}, {"after": -1}, {"limit": 0}], ids=["huge", "negative", "zero"]
)
def test_an_event_page_out_of_range_is_refused(client: TestClient, params: dict[str, int]) -> None:
    response = client.get("/v1/events", params=params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_value"


def test_a_listing_limit_beyond_the_store_is_refused(service: MemoryService) -> None:
    with pytest.raises(errors.InvalidValue, match="limit"):
        service.list_memories(limit=2**63)
    with pytest.raises(errors.InvalidValue, match="after"):
        service.events(after=2**63)


@pytest.mark.parametrize(
    ("queries", "measure"),
    [
        ([" ".join("alpha.beta.gamma.delta" for _ in range(3000))], "characters"),
        ([f"q{i}" for i in range(9)], "queries"),
        (["部署服务器" * 13_000], "characters"),
    ],
)
def test_a_search_past_a_query_limit_is_refused_with_400(
    client: TestClient, queries: list[str], measure: str
) -> None:
    client.put("/v1/memories/freeze", json={"description": "alpha.beta.gamma.delta freeze"})
    refused = client.post("/v1/memories/search", json={"queries": queries})
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["code"], error["details"]["measure"]) == ("query_too_long", measure)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_everything_from_the_server_itself(tmp_path: Path, page: str) -> None:
    import re

    import retain

    service = retain.open(tmp_path / "store.db", home=tmp_path)
    try:
        client = TestClient(http.create_app(service))
        html = client.get(page)
        assert html.status_code == 200
        assert "://" not in html.text  # no script, style or icon from another host
        urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)""", html.text)
        urls += re.findall(r"""(?:url|spec-url)\s*[:=]\s*["']([^"']+)""", html.text)
        assert "/openapi.json" in urls
        kinds: dict[str, str] = {}
        for url in urls:
            assert url.startswith("/") and not url.startswith("//"), url
            answer = client.get(url)
            assert answer.status_code == 200, url
            kinds[url.rsplit(".", 1)[-1]] = answer.headers["content-type"].split(";")[0]
        assert kinds["js"] in ("text/javascript", "application/javascript")
        assert kinds["png"] == "image/png"
        if page == "/docs":
            assert kinds["css"] == "text/css"
    finally:
        service.close()


def test_a_date_at_the_edge_of_the_calendar_is_stored_or_refused_never_a_500(
    client: TestClient, clock: ManualClock
) -> None:
    clock.zone = timezone(timedelta(hours=-12))  # year 1 in UTC is year 0 on this clock
    put = client.put(
        "/v1/memories/edge", json={"description": "At the edge", "valid_from": "0001-01-01T00:00Z"}
    )
    assert put.status_code == 201, put.text
    assert client.post("/v1/memories/search", json={"queries": ["edge"]}).status_code == 200
    early = client.get("/v1/facts", params={"subject": "ada", "valid_at": "0001-01-01T00:00+01:00"})
    assert early.status_code == 400, early.text
    assert early.json()["error"]["code"] == "invalid_time"
    assert early.json()["error"]["details"]["field"] == "valid_at"


@pytest.mark.parametrize(
    ("method", "path", "request_options", "field"),
    [
        ("put", "/v1/memories/a", {"json": {"description": "d", "tags": 5}}, "tags"),
        ("put", "/v1/memories/a", {"json": {"description": "d", "references": 5}}, "references"),
        ("put", "/v1/memories/a", {"json": {"description": "d", "priority": True}}, "priority"),
        ("put", "/v1/memories/a", {"json": {"description": "d", "priority": "3"}}, "priority"),
        ("put", "/v1/memories/a", {"json": {"description": "d", "tags": ["ok", 5]}}, "tags"),
        ("put", "/v1/memories/a", {"json": {"description": "d", "colour": "red"}}, "colour"),
        ("post", "/v1/memories/search", {"json": {"queries": 5}}, "queries"),
        ("post", "/v1/memories/search", {"json": {"limit": True}}, "limit"),
        ("post", "/v1/context", {"json": {"restate": "yes"}}, "restate"),
        ("get", "/v1/memories", {"params": {"limit": "ten"}}, "limit"),
        ("get", "/v1/facts", {"params": {}}, "subject"),
    ],
)
def test_a_wrong_type_is_the_services_invalid_value_naming_the_field(
    client: TestClient,
    service: MemoryService,
    method: str,
    path: str,
    request_options: dict[str, object],
    field: str,
) -> None:
    before = store_state(service)
    response = getattr(client, method)(path, **request_options)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_value"
    assert error["details"]["field"] == field
    assert error["message"].startswith(field) and "Input should" not in error["message"]
    assert store_state(service) == before


def test_a_project_counts_its_memories_under_the_name_every_door_uses(
    client: TestClient, service: MemoryService
) -> None:
    client.post("/v1/projects", json={"name": "web"})
    service.write("stack", description="Uses pnpm", project="web")
    listed = client.get("/v1/projects").json()["projects"]
    assert [(p["name"], p["memories"]) for p in listed] == [("web", 1)]
    assert "memory_count" not in listed[0]
    renamed = client.post("/v1/projects/web/rename", json={"name": "site"}).json()
    assert (renamed["name"], renamed["memories"]) == ("site", 1)
    assert [(p.name, p.memories) for p in service.list_projects()] == [("site", 1)]


def test_search_and_recall_take_one_query_string_as_python_does(
    client: TestClient, service: MemoryService
) -> None:
    service.write("deploy-rule", description="Deploys need a green CI run")
    service.add_agent("ada")
    one = client.post("/v1/memories/search", json={"queries": "deploys"})
    assert one.status_code == 200, one.text
    listed = client.post("/v1/memories/search", json={"queries": ["deploys"]}).json()
    assert [m["name"] for m in one.json()["memories"]] == ["deploy-rule"]
    assert one.json()["memories"] == listed["memories"]
    agent = TestClient(
        http.create_app(service, tokens={"t0ken": "agent:ada"}),
        headers={"Authorization": "Bearer t0ken"},
    )
    recalled = agent.post("/v1/recall", json={"queries": "deploys"})
    assert recalled.status_code == 200, recalled.text
    as_list = agent.post("/v1/recall", json={"queries": ["deploys"]}).json()
    assert [m["name"] for m in recalled.json()["memories"]] == ["deploy-rule"]
    assert recalled.json()["memories"] == as_list["memories"]


@pytest.mark.parametrize(
    ("method", "path", "request_options", "code", "field"),
    [
        ("get", "/v1/memories/bad$name", {}, "invalid_name", "name"),
        ("put", "/v1/memories/ok", {"json": {"description": "d"}, "params": {"project": "a b"}},
         "invalid_name", "project"),
        ("put", "/v1/memories/ok", {"json": {"description": "d", "expires": "soon"}},
         "invalid_time", "expires"),
        ("put", "/v1/memories/ok", {"json": {"description": "d", "references": ["r"] * 21}},
         "too_many_references", "references"),
        ("put", "/v1/memories/ok", {"json": {"description": "d", "tags": ["two words"]}},
         "invalid_value", "tags"),
        ("post", "/v1/context", {"json": {"recall_timeout_ms": 2**62}},
         "invalid_value", "recall_timeout_ms"),
    ],
)  # fmt: skip
def test_a_value_out_of_its_form_gets_the_code_python_gives_it(
    client: TestClient,
    service: MemoryService,
    method: str,
    path: str,
    request_options: dict[str, object],
    code: str,
    field: str,
) -> None:
    before = store_state(service)
    response = getattr(client, method)(path, **request_options)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == code
    if code in ("invalid_value", "invalid_time"):  # the codes that name a field
        assert error["details"]["field"] == field, error
    assert "Input should" not in error["message"]
    assert store_state(service) == before


def test_a_whole_number_written_as_json_float_is_that_number(client: TestClient) -> None:
    client.put("/v1/memories/a", json={"description": "Deploys need a green CI run"})
    found = client.post("/v1/memories/search", json={"queries": "deploys", "limit": 5.0})
    assert found.status_code == 200, found.text
    assert client.put("/v1/memories/a", json={"priority": 2.0}).json()["priority"] == 2
    assert client.put("/v1/memories/a", json={"priority": 2.5}).status_code == 400
