"""Each door sets the session an agent acts in from the host, never from a field a model
fills in: the CLI's ``--session`` and ``$RETAIN_SESSION``, REST's ``Retain-Session``
header, ``retain mcp --session`` (SPEC16 1.3, S1); and a tainted session's writes are
quarantined through each of them."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession, StdioServerParameters, stdio_client
from tests.doors.cli_helpers import RETAIN, Retain

import retain
from retain.doors import http
from retain.model import Status
from retain.service import MemoryService

ADA = "agent:ada"


@pytest.fixture
def tainted(tmp_path: Path) -> Retain:
    """A store where agent ada's session s1 read a web page and s2 read nothing."""
    cli = Retain(tmp_path / "home")
    cli.ok("agent", "add", "ada")
    cli.ok("session", "observe", "web_fetch", "--identity", ADA, "--session", "s1")
    cli.ok("session", "reset", "--identity", ADA, "--session", "s2", "--boundary", "new")
    return cli


def test_the_cli_takes_the_session_from_its_option_or_the_environment(tainted: Retain) -> None:
    def status(*args: str, env: dict[str, str | None] | None = None) -> str:
        written = tainted.json(*args, "remember", "a note", "--as", ADA, env=env)
        return str(written["status"])

    assert status("--session", "s1") == "quarantined"
    assert status("--session", "s2") == "active"
    assert status(env={"RETAIN_SESSION": "s1"}) == "quarantined"
    assert status("--session", "s2", env={"RETAIN_SESSION": "s1"}) == "active"  # the option
    shown = tainted.json("session", "show", "--identity", ADA, env={"RETAIN_SESSION": "s1"})
    assert (shown["session"], shown["tainted"]) == ("s1", True)


def test_an_agent_reports_its_own_session_from_the_cli(tainted: Retain) -> None:
    seen = tainted.json(
        "--session", "s3", "session", "observe", "fetch", "--as", ADA
    )  # no --identity, no --session of its own: its actor's
    assert (seen["identity"], seen["session"], seen["tainted"]) == (ADA, "s3", True)
    refused = tainted("--session", "s3", "session", "reset", "--identity", ADA, "--as", ADA)
    assert refused.exit_code == 15  # an agent may not clear its own taint


def test_rest_takes_the_session_from_the_retain_session_header(tmp_path: Path) -> None:
    operator = retain.open(home=tmp_path)
    try:
        operator.add_agent("ada")
        tokens = {"t-ada": ADA, "t-host": "app:host"}
        with TestClient(http.create_app(operator, tokens=tokens)) as client:
            host = {"Authorization": "Bearer t-host"}
            agent = {"Authorization": "Bearer t-ada"}
            seen = client.post(
                "/v1/sessions/s1/observations",
                json={"tool": "web_fetch", "identity": ADA},
                headers=host,
            )
            assert seen.status_code == 200 and seen.json()["tainted"] is True
            opened = client.post(
                "/v1/sessions/s2/reset", json={"identity": ADA, "boundary": "new"}, headers=host
            )
            assert opened.status_code == 200
            for key, expected in (("s1", "quarantined"), ("s2", "active")):
                written = client.post(
                    "/v1/remember",
                    json={"text": f"written in {key}"},
                    headers={**agent, "Retain-Session": key},
                )
                assert written.status_code == 201, written.text
                assert (written.json()["status"], key) == (expected, key)
            blank = client.post(
                "/v1/remember", json={"text": "x"}, headers={**agent, "Retain-Session": " "}
            )
            assert blank.status_code == 400
            assert blank.json()["error"]["details"]["field"] == "session"
            shown = client.get("/v1/sessions/s1", params={"identity": ADA}, headers=host)
            assert shown.json()["cause"] == {
                "tool": "web_fetch", "server": None, "step": "always_untrusted"}  # fmt: skip
            reset = client.post(
                "/v1/sessions/s1/reset", json={"identity": ADA, "boundary": "new"}, headers=host
            )
            assert reset.json()["cleared"] is True
            denied = client.post("/v1/sessions/s1/reset", json={"identity": ADA}, headers=agent)
            assert denied.status_code == 403
            missing = client.get("/v1/sessions/nope", params={"identity": ADA}, headers=host)
            assert missing.status_code == 404
            assert missing.json()["error"]["code"] == "session_not_found"
    finally:
        operator.close()


def test_retain_mcp_acts_in_the_session_it_was_started_in(tmp_path: Path) -> None:
    store = retain.open(home=tmp_path)
    store.add_agent("coder")
    store.observe("web_search", identity="agent:coder", session="s1")
    store.reset_session("agent:coder", "s2", boundary="new")  # its host reports a new one
    store.close()

    def remembered(args: list[str]) -> str:
        params = StdioServerParameters(
            command=str(RETAIN),
            args=["mcp", "--as", "agent:coder", *args],
            env={"RETAIN_HOME": str(tmp_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        )

        async def run() -> str:
            with open(tmp_path / "stderr.log", "w", encoding="utf-8") as log:
                async with (
                    stdio_client(params, errlog=log) as streams,
                    ClientSession(*streams) as session,
                ):
                    await session.initialize()
                    tools = {t.name for t in (await session.list_tools()).tools}
                    assert not {t for t in tools if "session" in t or "observe" in t}
                    kept = await session.call_tool("memory_remember", {"text": "a page said"})
                    assert kept.structured_content is not None
                    return str(kept.structured_content["status"])

        return anyio.run(run)

    assert remembered(["--session", "s1"]) == "quarantined"
    assert remembered(["--session", "s2"]) == "active"


def test_python_takes_the_session_at_open_and_acting_as(tmp_path: Path) -> None:
    host = retain.open(home=tmp_path)
    try:
        host.add_agent("ada")
        host.observe("fetch", identity=ADA, session="s1")
        opened = retain.open(home=tmp_path, principal=ADA, session="s1")
        try:
            assert opened.actor.session == "s1"
            assert opened.remember("held").status is Status.QUARANTINED
        finally:
            opened.close()
        host.reset_session(ADA, "s2", boundary="new")  # its host reports a new session
        same: MemoryService = host.acting_as(ADA, session="s2")
        assert same.remember("kept").status is Status.ACTIVE
        again = same.acting_as(ADA, session="s1")  # the same principal, another context
        assert again.store is same.store and again.actor.session == "s1"
        assert again.remember("held too").status is Status.QUARANTINED
    finally:
        host.close()
