"""The MCP door: in process, over streamable HTTP (a real server on a loopback port) and
over stdio (``retain mcp`` as a desktop client starts it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from fastapi.testclient import TestClient
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from tests.conftest import RETAIN, free_port, retain_serve

import retain
from retain.doors import http, mcp
from retain.errors import all_error_classes
from retain.service import MemoryService


def as_agent(service: MemoryService, name: str = "coder") -> Any:
    service.add_agent(name)
    return mcp.create_server(http.Services(service).of, local_principal=f"agent:{name}")


def call(server: Any, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async def run() -> CallToolResult:
        async with Client(server, mode="legacy") as client:
            result: CallToolResult = await client.call_tool(tool, arguments)
            return result

    return anyio.run(run)


def test_every_tool_says_truthfully_what_it_does(service: MemoryService) -> None:
    async def run() -> dict[str, Any]:
        async with Client(as_agent(service), mode="legacy") as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = anyio.run(run)
    assert set(tools) == {
        "memory_search", "memory_read", "memory_write", "memory_edit", "memory_delete",
        "memory_remember", "memory_recall", "memory_update", "memory_forget", "memory_propose",
        "fact_write", "fact_read", "fact_history", "fact_retract",
    }  # fmt: skip
    for tool in tools.values():
        hints = tool.annotations
        assert hints is not None and hints.open_world_hint is False, tool.name
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint)
        assert tool.output_schema is not None and tool.description
    read_only = {
        name for name, t in tools.items() if t.annotations and t.annotations.read_only_hint
    }
    # a read records itself; a fact write keeps the value it supersedes in the history
    assert read_only == {"memory_search", "memory_recall", "fact_read", "fact_history"}
    destructive = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    assert destructive == {
        "memory_write", "memory_edit", "memory_delete", "memory_update", "memory_forget",
        "fact_retract",
    }  # fmt: skip
    assert tools["fact_write"].annotations and tools["fact_write"].annotations.idempotent_hint


def test_an_agent_remembers_recalls_updates_and_forgets(service: MemoryService) -> None:
    server = as_agent(service)
    kept = call(server, "memory_remember", {"text": "the build uses make", "tags": ["build"]})
    assert not kept.is_error and kept.structured_content is not None
    memory = kept.structured_content
    assert memory["scope"] == "agent:coder" and memory["author"] == "agent:coder"
    found = call(server, "memory_recall", {"queries": ["which build tool"]}).structured_content
    assert found is not None and [m["id"] for m in found["memories"]] == [memory["id"]]
    changed = call(server, "memory_update", {"id": memory["id"], "text": "the build uses ninja"})
    assert changed.structured_content and changed.structured_content["body"].endswith("ninja")
    current = changed.structured_content["id"]
    gone = call(server, "memory_forget", {"id": current, "reason": "moved to bazel"})
    assert gone.structured_content and gone.structured_content["status"] == "forgotten"
    assert service.backend.read(lambda tx: tx.count_events()) > 0


def test_an_agent_writes_reads_and_retracts_facts_of_its_own(service: MemoryService) -> None:
    server = as_agent(service)
    first = call(
        server,
        "fact_write",
        {"subject": "Bob", "predicate": "team", "value": "infra", "valid_from": "2025-01-01"},
    ).structured_content
    assert first and first["fact"]["scope"] == "agent:coder" and first["superseded"] is None
    second = call(
        server, "fact_write", {"subject": "Bob", "predicate": "team", "value": "search"}
    ).structured_content
    assert second and second["superseded"]["value"] == "infra"
    now = call(server, "fact_read", {"subject": "bob"}).structured_content
    assert now and [f["value"] for f in now["facts"]] == ["search"]
    then = call(
        server, "fact_read", {"subject": "Bob", "predicate": "team", "valid_at": "2025-06-01"}
    ).structured_content
    assert then and [f["value"] for f in then["facts"]] == ["infra"]
    history = call(server, "fact_history", {"subject": "Bob", "predicate": "team"})
    assert history.structured_content and len(history.structured_content["facts"]) == 2
    back = call(server, "fact_retract", {"subject": "Bob", "predicate": "team", "reason": "typo"})
    assert back.structured_content and back.structured_content["restored"]["value"] == "infra"


def test_refusals_are_error_results_with_the_services_code(service: MemoryService) -> None:
    server = as_agent(service)
    refused = call(server, "memory_write", {"name": "x", "description": "d"})
    assert refused.is_error and refused.structured_content is not None
    error = refused.structured_content["error"]
    assert error["code"] == "access_denied" and error["remedy"]
    assert refused.content[0].text.startswith("[access_denied] ")  # type: ignore[union-attr]
    missing = call(server, "memory_forget", {"id": "01NOSUCHMEMORY"})
    assert missing.is_error and missing.structured_content
    assert missing.structured_content["error"]["code"] == "not_found"


def test_an_operator_writes_searches_reads_edits_and_deletes(service: MemoryService) -> None:
    server = mcp.create_server(http.Services(service).of, local_principal=service.principal)
    made = call(
        server,
        "memory_write",
        {"name": "deploy", "description": "Deploy rule", "body": "Fridays off"},
    )
    assert made.structured_content and made.structured_content["created"] is True
    hits = call(server, "memory_search", {"queries": ["deploy rule"]}).structured_content
    assert hits and [m["name"] for m in hits["memories"]] == ["deploy"]
    page = call(server, "memory_read", {"name": "deploy"}).structured_content
    assert page and page["text"] == "Fridays off"
    edited = call(server, "memory_edit", {"name": "deploy", "old": "Fridays", "new": "Mondays"})
    assert edited.structured_content and edited.structured_content["replacements"] == 1
    removed = call(server, "memory_delete", {"name": "deploy"}).structured_content
    assert removed == {"removed": "deploy", "referenced_by": []}
    again = call(server, "memory_delete", {"name": "deploy"})
    assert again.is_error and again.structured_content
    assert again.structured_content["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("tool", "arguments", "rest", "code"),
    [
        ("memory_read", {"name": "nope"}, ("GET", "/v1/memories/nope/read", None), "not_found"),
        (
            "memory_write",
            {"name": "Bad Name", "description": "d"},
            ("PUT", "/v1/memories/Bad Name", {"description": "d"}),
            "invalid_name",
        ),
        (
            "memory_write",
            {"name": "x"},
            ("PUT", "/v1/memories/x", {}),
            "description_required",
        ),
        (
            "memory_remember",
            {"text": "a note"},
            ("POST", "/v1/remember", {"text": "a note"}),
            "access_denied",
        ),
        (
            "memory_search",
            {"queries": ["x"], "project": "nowhere"},
            ("POST", "/v1/memories/search", {"queries": ["x"], "project": "nowhere"}),
            "project_not_found",
        ),
        (
            "fact_retract",
            {"subject": "Nobody", "predicate": "employer"},
            ("POST", "/v1/facts/retract", {"subject": "Nobody", "predicate": "employer"}),
            "not_found",
        ),
        (
            "fact_write",
            {"subject": "s", "predicate": "p", "value": " "},
            ("POST", "/v1/facts", {"subject": "s", "predicate": "p", "value": " "}),
            "invalid_value",
        ),
        (
            "fact_read",
            {"subject": "s", "valid_at": "someday"},
            ("GET", "/v1/facts?subject=s&valid_at=someday", None),
            "invalid_time",
        ),
    ],
)
def test_every_door_refuses_with_the_same_code(
    service: MemoryService,
    tool: str,
    arguments: dict[str, Any],
    rest: tuple[str, str, dict[str, Any] | None],
    code: str,
) -> None:
    from retain.doors import cli

    server = mcp.create_server(http.Services(service).of, local_principal=service.principal)
    result = call(server, tool, arguments)
    assert result.is_error and result.structured_content
    assert result.structured_content["error"]["code"] == code
    method, path, body = rest
    response = TestClient(http.create_app(service)).request(method, path, json=body)
    assert response.json()["error"]["code"] == code
    with pytest.raises(retain.RetainError) as raised:  # the verb itself, as the CLI calls it
        verb = {
            "memory_read": lambda: service.read("nope"),
            "memory_write": lambda: service.write(
                arguments["name"], **{k: v for k, v in arguments.items() if k != "name"}
            ),
            "memory_remember": lambda: service.remember("a note"),
            "memory_search": lambda: service.search(["x"], project="nowhere"),
            "fact_retract": lambda: service.fact_retract("Nobody", "employer"),
            "fact_write": lambda: service.fact_write("s", "p", " "),
            "fact_read": lambda: service.fact_read("s", valid_at="someday"),
        }[tool]
        verb()
    assert raised.value.code == code and cli.exit_code(raised.value) != cli.EXIT_BUG


def test_the_context_resource_renders_the_agents_memory(service: MemoryService) -> None:
    server = as_agent(service)
    call(server, "memory_remember", {"text": "prefers tabs", "description": "Tabs, not spaces"})

    async def run() -> str:
        async with Client(server, mode="legacy") as client:
            read = await client.read_resource(mcp.CONTEXT_URI)
            return str(read.contents[0].text)  # type: ignore[union-attr]

    assert "# Memory" in anyio.run(run)


@pytest.fixture
def served(service: MemoryService) -> Iterator[str]:
    """``retain serve``'s app on a loopback port, with two tokens; its base URL."""
    service.add_agent("coder")
    tokens = {"agent-token": "agent:coder", "op-token": "operator:alice"}
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(http.create_app(service, tokens=tokens), port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_streamable_http_acts_as_the_tokens_principal(served: str) -> None:
    async def session(token: str) -> tuple[str, str]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as client,
            streamable_http_client(f"{served}/mcp/", http_client=client) as streams,
            ClientSession(*streams) as mcp_session,
        ):
            await mcp_session.initialize()
            kept = await mcp_session.call_tool("memory_remember", {"text": "uses make"})
            wrote = await mcp_session.call_tool("memory_write", {"name": "n", "description": "d"})
            kept_by = (kept.structured_content or {}).get("author", "")
            refused = (wrote.structured_content or {}).get("error", {}).get("code", "")
            return str(kept_by), str(refused)

    author, code = anyio.run(session, "agent-token")
    assert (author, code) == ("agent:coder", "access_denied")
    assert anyio.run(session, "op-token")[1] == ""  # the operator's write went through
    rest = httpx2.get(f"{served}/v1/status", headers={"Authorization": "Bearer op-token"})
    assert rest.json()["principal"] == "operator:alice"


def test_streamable_http_refuses_a_request_without_a_known_token(served: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong"}):
        response = httpx2.post(f"{served}/mcp/", json=body, headers={**headers, **auth})
        assert response.status_code == 401


def test_retain_mcp_serves_over_stdio(tmp_path: Path) -> None:
    store = retain.open(home=tmp_path)
    store.add_agent("coder")
    store.close()
    params = StdioServerParameters(
        command=RETAIN,
        args=["mcp", "--as", "agent:coder"],
        env={"RETAIN_HOME": str(tmp_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )

    async def run() -> tuple[str, list[str]]:
        with open(tmp_path / "stderr.log", "w", encoding="utf-8") as log:
            async with (
                stdio_client(params, errlog=log) as streams,
                ClientSession(*streams) as session,
            ):
                await session.initialize()
                kept = await session.call_tool("memory_remember", {"text": "likes tea"})
                found = await session.call_tool("memory_recall", {"queries": ["tea"]})
                assert kept.structured_content and found.structured_content
                names = [m["scope"] for m in found.structured_content["memories"]]
                return str(kept.structured_content["author"]), names

    author, scopes = anyio.run(run)
    assert author == "agent:coder" and scopes == ["agent:coder"]


def test_mcp_answers_behind_several_worker_processes(tmp_path: Path) -> None:
    tokens = {"RETAIN_TOKENS": "op=operator:ops"}
    with retain_serve(tmp_path, "--workers", "2", env=tokens) as (_, port):

        async def run() -> list[str]:
            url = f"http://127.0.0.1:{port}/mcp/"
            async with (
                httpx2.AsyncClient(headers={"Authorization": "Bearer op"}) as client,
                streamable_http_client(url, http_client=client) as streams,
                ClientSession(*streams) as session,
            ):
                await session.initialize()
                for i in range(6):
                    wrote = await session.call_tool(
                        "memory_write", {"name": f"n{i}", "description": f"tea note {i}"}
                    )
                    assert not wrote.is_error, wrote.content
                found = await session.call_tool("memory_search", {"queries": ["tea"]})
                assert found.structured_content is not None
                return [m["name"] for m in found.structured_content["memories"]]

        assert sorted(anyio.run(run)) == [f"n{i}" for i in range(6)]


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.code)
def test_every_code_reaches_every_door_unchanged(cls: type[retain.RetainError]) -> None:
    import json

    from retain.doors import cli

    error = cls("what would have happened", remedy="what to do", name="x")
    rest = json.loads(http.error_response(error).body)["error"]
    tool = mcp.refusal(error)
    assert tool.is_error and tool.structured_content is not None
    assert rest == tool.structured_content["error"] == error.to_dict()
    assert rest["code"] == cls.code
    assert 400 <= http.http_status(error) < 600
    assert cli.exit_code(error) not in (0, cli.EXIT_BUG) or cls is retain.RetainError


def test_a_proposal_has_one_shape_at_every_door(service: MemoryService) -> None:
    server = as_agent(service)
    made = call(server, "memory_propose", {"summary": "Deploys need a green CI run"})
    assert not made.is_error and made.structured_content is not None
    listed = TestClient(http.create_app(service)).get("/v1/proposals").json()["proposals"]
    assert listed == [made.structured_content]
    assert made.structured_content["source"] == "agent:coder"
