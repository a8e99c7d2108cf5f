"""The MCP door: in process, over streamable HTTP (a real server on a loopback port) and
over stdio (``retain mcp`` as a desktop client starts it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
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
from retain import errors
from retain import service as service_module
from retain.config import Settings
from retain.doors import http, mcp
from retain.errors import all_error_classes
from retain.service import MemoryService, policy
from retain.service.actor import Actor, Kind


def as_agent(service: MemoryService, name: str = "coder") -> Any:
    service.add_agent(name)
    return mcp.create_server(http.Services(service).of, local_principal=f"agent:{name}")


def call(server: Any, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    async def run() -> CallToolResult:
        async with Client(server, mode="legacy") as client:
            result: CallToolResult = await client.call_tool(tool, arguments)
            return result

    return anyio.run(run)


def operator_server(service: MemoryService, principal: str | None = None) -> Any:
    return mcp.create_server(
        http.Services(service).of, local_principal=principal or service.principal
    )


def listed(server: Any) -> dict[str, Any]:
    """The tools a client of ``server`` is shown, by name."""

    async def run() -> dict[str, Any]:
        async with Client(server, mode="legacy") as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    return anyio.run(run)


def instructions(server: Any) -> str:
    async def run() -> str:
        async with Client(server, mode="legacy") as client:
            return client.instructions or ""

    return anyio.run(run)


def fits(schema: dict[str, Any], data: Any, defs: dict[str, Any] | None = None) -> None:
    """``data`` has exactly the fields ``schema`` declares (no more, none missing), down
    through objects, lists and optional values: the output schema is the truth."""
    defs = schema.get("$defs", {}) if defs is None else defs
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in schema:
        if data is None:
            assert {"type": "null"} in schema["anyOf"]
            return
        schema = next(s for s in schema["anyOf"] if s != {"type": "null"})
    if "properties" in schema:
        assert isinstance(data, dict)
        assert set(data) <= set(schema["properties"]), set(data) - set(schema["properties"])
        assert set(schema.get("required", [])) <= set(data)
        for key, value in data.items():
            fits(schema["properties"][key], value, defs)
    elif schema.get("type") == "array":
        assert isinstance(data, list)
        for item in data:
            fits(schema["items"], item, defs)


ALL_TOOLS = {
    "memory_search", "memory_read", "memory_write", "memory_edit", "memory_delete",
    "memory_remember", "memory_recall", "memory_update", "memory_forget", "memory_propose",
    "fact_write", "fact_read", "fact_history", "fact_retract", "fact_confirm",
    "ticket_list", "ticket_show", "ticket_approve", "ticket_reject", "ticket_expire",
    "memory_list_quarantine", "memory_review",
    "access_list", "access_grant", "access_revoke",
    "memory_index", "memory_query", "memory_stores", "memory_gate",
    "memory_hold", "memory_release", "memory_held", "memory_sweep",
    "ingest_conversation",
    "memory_graph", "memory_link", "memory_decide", "memory_dedup", "memory_hygiene",
}  # fmt: skip


def test_every_tool_says_truthfully_what_it_does(service: MemoryService) -> None:
    tools = listed(as_agent(service)) | listed(operator_server(service))
    assert set(tools) == ALL_TOOLS
    for tool in tools.values():
        hints = tool.annotations
        assert hints is not None and hints.open_world_hint is False, tool.name
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint)
        assert tool.description and tool.title, tool.name
        for argument, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), (tool.name, argument)
        output = tool.output_schema  # typed: named fields, not a free dict
        assert output is not None and output.get("properties"), tool.name
        assert output.get("additionalProperties") is not True, tool.name
    read_only = {
        name for name, t in tools.items() if t.annotations and t.annotations.read_only_hint
    }
    # a read records itself; a fact write keeps the value it supersedes in the history
    assert read_only == {
        "memory_search", "memory_recall", "fact_read", "fact_history", "ticket_list",
        "ticket_show", "memory_list_quarantine", "access_list", "memory_query",
        "memory_stores", "memory_gate",
        "memory_held", "memory_graph", "memory_hygiene",
    }  # fmt: skip
    destructive = {n for n, t in tools.items() if t.annotations and t.annotations.destructive_hint}
    # an ingest overwrites a stored turn that differs, as a write does; a supersede (a
    # decision, or a supersedes link) retires a memory for good
    assert destructive == {
        "memory_write", "memory_edit", "memory_delete", "memory_update", "memory_forget",
        "fact_retract", "memory_review", "access_revoke", "memory_sweep", "ingest_conversation",
        "memory_link", "memory_decide",
    }  # fmt: skip
    ingest = tools["ingest_conversation"].annotations
    assert ingest is not None and ingest.idempotent_hint  # the same turns again: no change
    assert tools["fact_write"].annotations and tools["fact_write"].annotations.idempotent_hint


def test_arguments_declare_their_sets_and_bounds(service: MemoryService) -> None:
    tools = listed(operator_server(service)) | listed(as_agent(service))

    def arg(tool: str, name: str) -> dict[str, Any]:
        schema: dict[str, Any] = tools[tool].input_schema["properties"][name]
        return next((s for s in schema.get("anyOf", []) if s != {"type": "null"}), schema)

    assert arg("memory_write", "load")["enum"] == [load.value for load in retain.Load]
    for tool in ("memory_write", "memory_search"):
        assert arg(tool, "tier")["enum"] == ["global", "project"]
    for tool in ("memory_write", "memory_remember", "memory_update"):
        assert (arg(tool, "priority")["minimum"], arg(tool, "priority")["maximum"]) == (0, 9)
    for tool in ("memory_search", "memory_recall"):
        limit = arg(tool, "limit")
        assert (limit["minimum"], limit["maximum"]) == (1, service_module.SEARCH_LIMIT_MAX)
    assert arg("memory_read", "offset")["minimum"] == 0
    # the bounds are the service's: one past each end is refused by the verb itself
    for priority, ok in ((0, True), (9, True), (-1, False), (10, False)):
        try:
            service.write(f"p{priority + 1}", description="d", priority=priority)
        except errors.InvalidValue:
            assert not ok
        else:
            assert ok
    for limit, ok in ((1, True), (service_module.SEARCH_LIMIT_MAX, True), (0, False)):
        try:
            service.search(["x"], limit=limit)
        except errors.InvalidValue:
            assert not ok
        else:
            assert ok


# Arguments each tool can be called with on an empty store: a principal allowed the
# verb gets an answer or a refusal other than access_denied.
SAMPLE_CALLS: dict[str, dict[str, Any]] = {
    "memory_search": {"queries": ["tea"]},
    "memory_read": {"name": "nothing-here"},
    "memory_write": {"name": "tea", "description": "Tea"},
    "memory_edit": {"name": "nothing-here", "old": "a", "new": "b"},
    "memory_delete": {"name": "nothing-here"},
    "memory_remember": {"text": "likes tea"},
    "memory_recall": {"queries": ["tea"]},
    "memory_update": {"id": "01NOSUCHMEMORY", "text": "likes coffee"},
    "memory_forget": {"id": "01NOSUCHMEMORY"},
    "memory_propose": {"summary": "Tea at four"},
    "fact_write": {"subject": "Bob", "predicate": "drink", "value": "tea"},
    "fact_read": {"subject": "Bob"},
    "fact_history": {"subject": "Bob", "predicate": "drink"},
    "fact_retract": {"subject": "Nobody", "predicate": "drink"},
    "fact_confirm": {"id": "01NOSUCHFACT"},
    "ticket_list": {},
    "ticket_show": {"ticket_id": "01NOSUCHTICKET"},
    "ticket_approve": {"ticket_id": "01NOSUCHTICKET"},
    "ticket_reject": {"ticket_id": "01NOSUCHTICKET"},
    "ticket_expire": {},
    "memory_list_quarantine": {},
    "memory_review": {"id": "01NOSUCHMEMORY", "verdict": "tombstone", "expected_content_hash": "x"},
    "access_list": {},
    "access_grant": {"subject": "agent:coder", "action": "memory.read", "on": "scope:global"},
    "access_revoke": {"subject": "agent:nobody", "action": "memory.read", "on": "scope:global"},
    "memory_index": {"entity": "bob", "topic": "drink", "store": "key_value", "fact": "tea"},
    "memory_query": {"entity": "bob"},
    "memory_stores": {},
    "memory_gate": {"subject": "bob", "predicate": "drink"},
    "memory_hold": {"id": "01NOSUCHMEMORY", "reason": "matter 42"},
    "memory_release": {"id": "01NOSUCHMEMORY", "reason": "closed"},
    "memory_held": {"id": "01NOSUCHMEMORY"},
    "memory_sweep": {"reason": "retention", "dry_run": True},
    "ingest_conversation": {"thread": "chat", "turns": [{"speaker": "Ada", "text": "hi"}]},
    "memory_graph": {"memory": "01NOSUCHMEMORY"},
    "memory_link": {"source": "01NOSUCHMEMORY", "target": "01NOSUCHOTHER", "type": "similar_to"},
    "memory_decide": {"memory": "01NOSUCHMEMORY", "action": "keep", "target": "01NOSUCHOTHER"},
    "memory_dedup": {},
    "memory_hygiene": {},
}


@pytest.mark.parametrize("principal", ["agent:coder", "operator:alice", "app:ci"])
def test_each_principal_is_shown_exactly_the_tools_the_service_lets_it_use(
    service: MemoryService, principal: str
) -> None:
    service.add_agent("coder")
    server = operator_server(service, principal)
    shown = set(listed(server))
    assert set(SAMPLE_CALLS) == ALL_TOOLS
    allowed = set()
    for tool, arguments in SAMPLE_CALLS.items():
        result = call(server, tool, arguments)
        code = (result.structured_content or {}).get("error", {}).get("code")
        if code != "access_denied":
            allowed.add(tool)
    assert shown == allowed  # the service's refusals, not a second list, decide
    actor = Actor(principal)
    assert shown == {
        name
        for name, verb in server.verbs.items()
        if policy.allows(policy.POLICY[verb], actor, Settings())
    }
    if actor.kind is Kind.AGENT:
        assert {"memory_remember", "memory_recall", "memory_propose"} <= shown
        assert not shown & {"memory_write", "memory_edit", "memory_delete"}
        assert not shown & {"memory_list_quarantine", "memory_review"}  # no reviewer's tool
    elif actor.kind is Kind.APP:
        assert not shown & {"memory_list_quarantine", "memory_review"}
    else:
        assert {"memory_list_quarantine", "memory_review"} <= shown
    if actor.kind is not Kind.AGENT:
        assert {"memory_write", "memory_edit", "memory_delete"} <= shown
        assert not shown & {"memory_remember", "memory_recall", "memory_update"}


@pytest.mark.parametrize(
    "principal", ["agent:coder", "operator:local", "app:ci", "steward", "anonymous"]
)
def test_the_instructions_name_only_tools_the_principal_is_shown(
    service: MemoryService, principal: str
) -> None:
    import re

    service.add_agent("coder")
    server = operator_server(service, principal)
    text = instructions(server)
    named = set(re.findall(r"\b(?:memory|fact|ticket|access)_[a-z_]+[a-z]", text))
    assert named and named <= set(listed(server)), named - set(listed(server))
    assert principal in text
    writes = principal.startswith(("operator:", "app:"))  # the steward and anonymous read
    lead = "memory_remember" if principal.startswith("agent:") else "memory_search"
    assert lead in named and ("memory_write" in named) == writes
    # a reviewer and curator is told of the queue, the review and the tickets' decisions
    curator = principal.startswith("operator:") or principal == "steward"
    decides = {"memory_list_quarantine", "memory_review", "ticket_list", "ticket_show"}
    decides |= {"ticket_approve", "ticket_reject"}
    assert (decides <= named) == curator and (decides & named == set()) == (not curator)
    stages = principal in ("agent:coder", "steward")  # an agent proposes, the steward stages
    assert ("memory_propose" in named) == stages


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("memory_write", {"name": "n", "description": "d", "priority": 12}, "priority"),
        ("memory_write", {"name": "n", "description": "d", "load": "always"}, "load"),
        ("memory_write", {"name": "n", "description": "d", "tier": "team"}, "tier"),
        ("memory_write", {"name": "n", "description": "d", "tags": 5}, "tags"),
        ("memory_write", {"description": "d"}, "name"),
        ("memory_write", {"name": "n", "descripton": "d"}, "descripton"),
        ("memory_search", {"queries": ["x"], "limit": 0}, "limit"),
        ("memory_search", {"queries": ["x"], "limit": "many"}, "limit"),
        ("memory_search", {"queries": "x", "limit": 10**6}, "limit"),
        ("memory_read", {"name": "n", "offset": -1}, "offset"),
        ("fact_read", {"subject": ["Bob"]}, "subject"),
    ],
    ids=[
        "priority-above", "load-not-in-set", "tier-not-in-set", "tags-not-a-list",
        "missing", "unknown-argument", "limit-below", "limit-not-a-number", "limit-above",
        "offset-below", "not-text",
    ],
)  # fmt: skip
def test_a_bad_argument_is_a_tool_error_with_the_stable_code(
    service: MemoryService, tool: str, arguments: dict[str, Any], field: str
) -> None:
    refused = call(operator_server(service), tool, arguments)
    assert refused.is_error and refused.structured_content is not None
    error = refused.structured_content["error"]
    assert error["code"] == "invalid_value" and error["details"]["field"] == field
    assert field in error["message"] and error["remedy"]
    text = refused.content[0].text  # type: ignore[union-attr]
    assert text.startswith("[invalid_value] ")
    assert "validation error" not in text and "pydantic" not in text and "type=" not in text
    assert service.backend.read(lambda tx: tx.count_events()) == 1  # the realm's: no write


def test_an_unknown_argument_is_refused_with_the_close_match(service: MemoryService) -> None:
    refused = call(operator_server(service), "memory_write", {"name": "n", "descripton": "d"})
    assert refused.structured_content is not None
    assert "did you mean description?" in refused.structured_content["error"]["message"]


def test_every_result_has_exactly_the_fields_its_output_schema_declares(
    service: MemoryService,
) -> None:
    service.add_project("web")
    op, agent = operator_server(service), as_agent(service)
    schemas = {n: t.output_schema for n, t in (listed(op) | listed(agent)).items()}
    fact = {"subject": "Bob", "predicate": "p"}
    call(op, "memory_write", {"name": "tea", "description": "Tea", "body": "at four"})
    kept = call(agent, "memory_remember", {"text": "likes tea", "tags": ["drink"]})
    assert kept.structured_content is not None
    own = kept.structured_content["id"]
    posture = Settings(llm_writes="quarantined")  # the same store: the agent's writes held
    held = MemoryService(service.backend, settings=posture, principal="agent:coder").remember(
        "tea is at five"
    )
    hashed = held.content_hash
    steps = [
        (op, "memory_search", {"queries": ["tea"]}),
        (op, "memory_search", {"queries": []}),
        (op, "memory_read", {"name": "tea"}),
        (op, "memory_edit", {"name": "tea", "old": "four", "new": "5"}),
        (op, "memory_write", {"name": "tea", "description": "Tea time"}),
        (agent, "memory_recall", {"queries": ["tea"]}),
        (agent, "memory_propose", {"summary": "Tea at four"}),
        (op, "fact_write", {**fact, "value": "a", "valid_from": "2025-01-01"}),
        (op, "fact_write", {**fact, "value": "b"}),
        (op, "fact_read", {"subject": "Bob"}),
        (op, "fact_history", fact),
        (op, "fact_retract", fact),
        (op, "memory_delete", {"name": "tea"}),
        (op, "memory_list_quarantine", {}),
        (
            op,
            "memory_review",
            {"id": held.id, "verdict": "release", "expected_content_hash": hashed},
        ),
        (agent, "memory_update", {"id": own, "text": "tea!"}),
    ]
    results = [("memory_remember", kept)] + [(t, call(s, t, a)) for s, t, a in steps]
    updated = results[-1][1].structured_content
    assert updated is not None
    results.append(("memory_forget", call(agent, "memory_forget", {"id": updated["id"]})))
    for tool, result in results:
        assert not result.is_error, (tool, result.content)
        schema = schemas[tool]
        assert schema is not None
        fits(schema, result.structured_content)


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
    assert gone.structured_content and gone.structured_content["target"] == current
    assert gone.structured_content["places"]["store_files"] == "verified"
    again = call(server, "memory_forget", {"id": current})
    assert again.is_error and again.structured_content
    assert again.structured_content["error"]["code"] == "already_forgotten"
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
    assert removed and (removed["removed"], removed["referenced_by"]) == ("deploy", [])
    assert (removed["before"].endswith("---\nMondays off"), removed["after"]) == (True, None)
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
    async def session(token: str) -> tuple[str, str, set[str], str]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as client,
            streamable_http_client(f"{served}/mcp/", http_client=client) as streams,
            ClientSession(*streams) as mcp_session,
        ):
            hello = await mcp_session.initialize()
            tools = {t.name for t in (await mcp_session.list_tools()).tools}
            kept = await mcp_session.call_tool("memory_remember", {"text": "uses make"})
            wrote = await mcp_session.call_tool("memory_write", {"name": "n", "description": "d"})
            kept_by = (kept.structured_content or {}).get("author", "")
            refused = (wrote.structured_content or {}).get("error", {}).get("code", "")
            return str(kept_by), str(refused), tools, hello.instructions or ""

    author, code, agent_tools, agent_told = anyio.run(session, "agent-token")
    assert (author, code) == ("agent:coder", "access_denied")
    _, op_code, op_tools, op_told = anyio.run(session, "op-token")
    assert op_code == ""  # the operator's write went through
    # each connection is shown the tools of its token's principal, and told about them
    assert "memory_remember" in agent_tools and "memory_write" not in agent_tools
    assert "memory_write" in op_tools and "memory_remember" not in op_tools
    assert "agent:coder" in agent_told and "operator:alice" in op_told
    rest = httpx2.get(f"{served}/v1/status", headers={"Authorization": "Bearer op-token"})
    assert rest.json()["principal"] == "operator:alice"


def test_streamable_http_refuses_a_request_without_a_known_token(served: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong"}):
        response = httpx2.post(f"{served}/mcp/", json=body, headers={**headers, **auth})
        assert response.status_code == 401


def test_each_start_of_the_app_runs_its_mcp_server_at_its_first_requests(
    service: MemoryService,
) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    app = http.create_app(service)
    for _ in range(2):  # a session manager runs once: each start of the app makes its own
        with (
            TestClient(app, base_url="http://127.0.0.1:8765") as client,
            ThreadPoolExecutor(4) as pool,
        ):
            # the first requests arrive together: each waits for the server they started
            answers = list(
                pool.map(lambda _: client.post("/mcp/", json=hello, headers=accept), range(4))
            )
            assert [a.status_code for a in answers] == [200] * 4
            assert all("serverInfo" in a.text for a in answers)
    # stopped, the app's MCP endpoint says so
    stopped = TestClient(app, base_url="http://127.0.0.1:8765").post("/mcp/", json=hello)
    assert stopped.status_code == 503 and stopped.json()["error"]["code"] == "store_busy"


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


# The HTTP status of every code, written out here rather than read from the door's table.
HTTP_STATUS_OF = {
    "retain_error": 500,
    "invalid_input": 400, "invalid_name": 400, "invalid_value": 400, "invalid_time": 400,
    "description_required": 400, "too_many_references": 400, "no_project": 400,
    "request_too_large": 413,
    "not_found": 404, "project_not_found": 404, "agent_not_found": 404,
    "team_not_found": 404, "session_not_found": 404,
    "conflict": 409, "name_conflict": 409, "memory_exists": 409, "project_exists": 409,
    "agent_exists": 409, "team_exists": 409, "ambiguous_name": 409,
    "evidence_mismatch": 409, "trust_capped": 409,
    "project_not_empty": 409, "ticket_closed": 409, "gate_pending": 409,
    "grant_read_only": 409, "already_forgotten": 409, "not_active": 409,
    "hold_active": 409, "already_held": 409, "not_held": 409,
    "budget_exceeded": 422, "inline_budget_exceeded": 422,
    "edit_failed": 422, "edit_no_match": 422, "edit_ambiguous": 422,
    "stale_update": 412,
    "transfer_error": 422, "export_target_not_empty": 422, "unexportable_description": 422,
    "snapshot_invalid": 422, "unknown_format_version": 422,
    "migrate_target_not_empty": 422, "migrate_mismatch": 422,
    "store_error": 500, "store_busy": 503, "schema_too_new": 500, "integrity_failed": 500,
    "access_denied": 403, "unauthenticated": 401, "memory_disabled": 403, "forged_request": 403,
    "embedder_error": 503, "embedder_failed": 503, "dimension_mismatch": 503,
    "recall_failed": 504,
    "config_invalid": 500, "extra_missing": 500,
    "no_terminal": 400, "query_too_long": 400, "transcript_invalid": 400,
    "listen_failed": 500, "invalid_port": 500, "port_in_use": 500,
    "secret_detected": 422,
    "review_refused": 409, "content_mismatch": 409, "not_quarantined": 409,
    "successor_conflict": 409,
    "key_invalid": 400, "key_missing": 500, "signature_invalid": 422,
}  # fmt: skip


def test_every_code_has_its_http_status_pinned() -> None:
    codes = [cls.code for cls in all_error_classes()]
    assert sorted(codes) == sorted(HTTP_STATUS_OF), "pin each new code's status above"


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.code)
def test_every_code_reaches_every_door_unchanged(cls: type[retain.RetainError]) -> None:
    import json

    from retain.doors import cli

    error = cls("what would have happened", remedy="what to do", name="x")
    response = http.error_response(error)
    rest = json.loads(response.body)["error"]
    tool = mcp.refusal(error)
    assert tool.is_error and tool.structured_content is not None
    assert rest == tool.structured_content["error"]
    assert rest == {
        "code": cls.code,
        "message": "what would have happened",
        "remedy": "what to do",
        "details": {"name": "x"},
    }
    assert tool.content[0].text == f"[{cls.code}] what would have happened\nwhat to do"  # type: ignore[union-attr]
    assert response.status_code == HTTP_STATUS_OF[cls.code]
    assert cli.exit_code(error) not in (0, cli.EXIT_BUG) or cls is retain.RetainError


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "path", "body", "code"),
    [
        ("memory_read", {"name": "missing"}, "GET", "/memories/missing/read", None, "not_found"),
        (
            "memory_write",
            {"name": "Bad Name", "description": "d"},
            "PUT",
            "/memories/Bad Name",
            {"description": "d"},
            "invalid_name",
        ),
        (
            "memory_write",
            {"name": "x", "description": "d", "project": "nowhere"},
            "PUT",
            "/memories/x?project=nowhere",
            {"description": "d"},
            "project_not_found",
        ),
        (
            "memory_edit",
            {"name": "kept", "old": "absent", "new": "b"},
            "POST",
            "/memories/kept/edit",
            {"old": "absent", "new": "b"},
            "edit_no_match",
        ),
        ("memory_remember", {"text": "a note"}, "POST", "/remember", {"text": "a note"},
         "access_denied"),
    ],
    ids=lambda v: v if isinstance(v, str) and v.isidentifier() else None,
)  # fmt: skip
def test_a_refusal_is_the_same_envelope_over_mcp_and_rest(
    service: MemoryService,
    tool: str,
    arguments: dict[str, Any],
    method: str,
    path: str,
    body: dict[str, Any] | None,
    code: str,
) -> None:
    service.write("kept", description="a kept note", body="some text")
    server = mcp.create_server(http.Services(service).of, local_principal=service.principal)
    answered = call(server, tool, arguments)
    response = TestClient(http.create_app(service)).request(method, f"/v1{path}", json=body)
    assert answered.is_error and answered.structured_content is not None
    envelope = response.json()
    told, said = answered.structured_content["error"], envelope["error"]
    # one refusal: the same code, message and details; each door adds its own hint
    # for the fix to the service's remedy (MCP a tool or an operator's command, REST a route)
    assert {k: v for k, v in told.items() if k != "remedy"} == {
        k: v for k, v in said.items() if k != "remedy"
    }
    plain = told["remedy"].split(" (")[0]
    assert said["remedy"].startswith(plain) and plain
    if "fix" in said["details"]:
        assert told["remedy"] != said["remedy"]
    assert envelope["error"]["code"] == code
    assert response.status_code == HTTP_STATUS_OF[code]
    text = answered.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"[{code}] {envelope['error']['message']}")


def test_a_proposal_has_one_shape_at_every_door(service: MemoryService) -> None:
    server = as_agent(service)
    made = call(server, "memory_propose", {"summary": "Deploys need a green CI run"})
    assert not made.is_error and made.structured_content is not None
    listed = TestClient(http.create_app(service)).get("/v1/proposals").json()["proposals"]
    proposed = dict(made.structured_content)
    assert proposed.pop("receipt")["kind"] == "propose"  # a write's: a listing has none
    assert listed == [proposed]
    assert proposed["source"] == "agent:coder"


def test_with_memory_turned_off_no_tool_is_offered_and_the_section_is_empty(
    make_service: Any,
) -> None:
    from retain.config import Settings

    on = make_service()
    on.add_agent("coder")
    on.write("deploy", description="Deploy rule", body="Fridays off", load="inline")
    off = make_service(settings=Settings(memory_enabled=False), principal="agent:coder")
    assert off.offered_verbs() == ()
    server = operator_server(off, "agent:coder")
    assert listed(server) == {}
    assert "turned off" in instructions(server)
    refused = call(server, "memory_remember", {"text": "likes tea"})
    assert refused.is_error and refused.structured_content
    assert refused.structured_content["error"]["code"] == "memory_disabled"
    section = off.context(session="s1")
    assert (section.text, section.injected) == ("", ())
    assert off.list_injections() == []  # nothing was rendered, so nothing recorded
    assert "# Memory" in on.context().text  # the same store renders with memory on

    async def resource() -> str:
        async with Client(server, mode="legacy") as client:
            read = await client.read_resource(mcp.CONTEXT_URI)
            return str(read.contents[0].text)  # type: ignore[union-attr]

    assert anyio.run(resource) == ""
    # what is stored stays reachable by the other doors
    operator = make_service(settings=Settings(memory_enabled=False))
    listing = TestClient(http.create_app(operator)).get("/v1/memories").json()
    assert [m["name"] for m in listing["memories"]] == ["deploy"]
    assert [h.memory.name for h in operator.search(["deploy"]).hits] == ["deploy"]


def test_the_cli_reaches_the_store_with_memory_turned_off(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from retain.doors import cli

    store = retain.open(home=tmp_path)
    store.write("deploy", description="Deploy rule")
    store.close()
    (tmp_path / "config.toml").write_text("[memory]\nenabled = false\n")
    shown = CliRunner().invoke(cli.cli, ["list", "--home", str(tmp_path), "--format", "json"])
    assert shown.exit_code == 0, shown.output
    assert [m["name"] for m in json.loads(shown.output)["memories"]] == ["deploy"]


def test_retain_mcp_refuses_an_agent_that_is_not_registered(tmp_path: Path) -> None:
    import subprocess

    run = subprocess.run(
        [RETAIN, "mcp", "--as", "agent:nobody", "--home", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 3, run.stderr  # not_found's exit status, before any request
    assert "[agent_not_found]" in run.stderr and "nobody" in run.stderr
    assert run.stdout == ""  # nothing on the protocol's stream


class Stdio:
    """A client talking JSON-RPC lines to a server process, one request at a time."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        import subprocess

        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            text=True,
            encoding="utf-8",
        )
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any] | None = None) -> None:
        import json

        assert self.process.stdin is not None
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        import json

        assert self.process.stdin is not None and self.process.stdout is not None
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()  # the answer, or "" if the server died
        assert line, self.close()
        answer: dict[str, Any] = json.loads(line)
        assert answer.get("id") == self.next_id and "result" in answer, answer
        return dict(answer["result"])

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait()
        self.process.stdout.close()
        with self.process.stderr:
            return self.process.stderr.read()


def _launch(block: str, client: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment a client's block tells it to start the server with."""
    import json
    import shlex

    if client == "claude-code":
        words = shlex.split(block)
        assert words[:8] == ["claude", "mcp", "add", "--transport", "stdio", "--scope", "user",
                             "retain"]  # fmt: skip
        cut = words.index("--")
        options = words[8:cut]
        assert options[::2] == ["--env"] * (len(options) // 2)
        env = dict(pair.split("=", 1) for pair in options[1::2])
        return words[cut + 1 :], env
    entry = json.loads(block)["mcpServers"]["retain"]
    return [entry["command"], *entry["args"]], dict(entry["env"])


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code", "cursor"])
def test_a_client_with_a_bare_environment_reaches_the_configured_store(
    tmp_path: Path, client: str
) -> None:
    import os
    import subprocess

    home = tmp_path / "store"
    store = retain.open(home=home)
    store.add_agent("coder")
    store.close()
    printed = subprocess.run(
        [RETAIN, "mcp", "config", "--client", client, "--as", "agent:coder", "--home", str(home)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    command, env = _launch(printed.stdout, client)
    assert os.path.isabs(command[0]) and env == {"RETAIN_HOME": str(home)}
    assert command[1:] == ["mcp", "--as", "agent:coder"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # the client's own environment: no PATH at all, and (for two of them) another HOME
    bare = env if client == "cursor" else {**env, "HOME": str(elsewhere)}
    server = Stdio(command, bare, cwd=elsewhere)
    hello = server.ask(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    )
    server.send("notifications/initialized")
    tools = {t["name"] for t in server.ask("tools/list", {})["tools"]}
    kept = server.ask(
        "tools/call", {"name": "memory_remember", "arguments": {"text": "likes green tea"}}
    )
    errors_seen = server.close()
    assert server.process.returncode == 0, errors_seen
    assert "agent:coder" in hello["instructions"]
    assert "memory_remember" in tools and "memory_write" not in tools
    assert not kept.get("isError"), kept
    again = retain.open(home=home, principal="agent:coder")  # the store it was given
    assert [h.memory.body for h in again.recall(["green tea"]).hits] == ["likes green tea"]
    again.close()
    assert not (elsewhere / ".local").exists()  # no store was made under the other HOME


def test_the_config_block_names_the_installation_that_printed_it() -> None:
    import sys

    from retain.doors import launch

    assert launch.retain_command(RETAIN) == [RETAIN]
    fallback = launch.retain_command("/nowhere/pytest")
    assert fallback == [sys.executable, "-m", "retain"]


@pytest.mark.parametrize("where", ["before", "after"])
def test_the_config_block_carries_a_postgres_stores_url(postgres_url: str, where: str) -> None:
    import json

    from click.testing import CliRunner
    from tests.conftest import fresh_schema

    from retain.doors import cli

    url = fresh_schema(postgres_url)
    store = retain.open(url)
    store.add_agent("coder")
    store.close()
    given = ["--database-url", url]
    args = ["mcp", *given, "config"] if where == "before" else ["mcp", "config", *given]
    shown = CliRunner().invoke(cli.cli, [*args, "--as", "agent:coder"], env={})
    assert shown.exit_code == 0, shown.output
    block = json.loads(shown.stdout)["mcpServers"]["retain"]
    assert block["env"]["RETAIN_DATABASE_URL"] == url


def test_a_reviewer_releases_over_mcp_what_an_agent_wrote_held(service: MemoryService) -> None:
    agent = as_agent(service)
    posture = Settings(llm_writes="quarantined")  # the same store: the agent's writes held
    MemoryService(service.backend, settings=posture, principal="agent:coder").remember(
        "tea is served at five"
    )
    recalled = call(agent, "memory_recall", {"queries": ["tea five"]}).structured_content
    assert recalled is not None and recalled["memories"] == []
    reviewer = operator_server(service, "steward")
    queue = call(reviewer, "memory_list_quarantine", {}).structured_content
    assert queue is not None
    (row,) = queue["quarantine"]
    decision = {"id": row["id"], "verdict": "release", "expected_content_hash": row["content_hash"]}
    done = call(reviewer, "memory_review", decision).structured_content
    assert done is not None and done["outcome"] == "released"
    assert done["decision"]["review"]["reviewer"] == "steward"
    found = call(agent, "memory_recall", {"queries": ["tea five"]}).structured_content
    assert found is not None
    assert [(m["id"], m["trust"], m["ever_quarantined"]) for m in found["memories"]] == [
        (f"{row['id']}-released", "observed", True)
    ]
    refused = call(agent, "memory_review", decision).structured_content
    assert refused is not None and refused["error"]["code"] == "access_denied"
