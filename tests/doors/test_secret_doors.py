"""Secrets at the doors: ``secret_detected`` as each door answers it (exit 19, HTTP 422,
an MCP tool error), never with the value, and the redact option at each door that
writes (``--redact``, the body field ``redact``, the tool argument ``redact``)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.doors.cli_helpers import SECRET_DETECTED, Retain
from tests.doors.test_mcp import as_agent, call, listed, operator_server

import retain as retain_pkg
from retain.doors import http
from retain.service import MemoryService

TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
MARKER = "[redacted:github_token]"
REDACTING_TOOLS = (
    "memory_write", "memory_edit", "memory_remember", "memory_update", "memory_propose",
    "fact_write",
)  # fmt: skip


# -- the command line ---------------------------------------------------------------------


def test_cli_refuses_a_secret_with_exit_19_and_never_prints_it(retain: Retain) -> None:
    refusal = retain.refused(
        "add", "ci", "-d", "the CI token", "--body", f"token {TOKEN}",
        status=SECRET_DETECTED, code="secret_detected", remedy="`--redact`",
    )  # fmt: skip
    assert TOKEN not in refusal.stderr and TOKEN not in str(refusal.error)
    assert refusal.error["details"]["findings"] == [
        {"kind": "github_token", "field": "body", "start": 6, "end": 46}
    ]


def test_cli_redact_writes_the_marker(retain: Retain) -> None:
    retain.ok("add", "ci", "-d", "the CI token", "--body", f"token {TOKEN}", "--redact")
    assert retain.body("ci") == f"token {MARKER}"
    retain.ok("edit", "ci", "--old", MARKER, "--new", f"{TOKEN} again", "--redact")
    assert retain.body("ci") == f"token {MARKER} again"
    retain.refused(
        "edit", "ci", "--old", "again", "--new", TOKEN,
        status=SECRET_DETECTED, code="secret_detected", remedy="`--redact`",
    )  # fmt: skip


def test_cli_agent_and_fact_commands_take_redact(retain: Retain) -> None:
    retain.ok("agent", "add", "ada")
    memory = retain.json("remember", f"the token is {TOKEN}", "--as", "agent:ada", "--redact")
    assert memory["body"] == f"the token is {MARKER}" and memory["status"] == "active"
    assert memory["redacted"] == ["github_token"]
    held = retain.json("remember", f"the token is {TOKEN}", "--as", "agent:ada")
    assert (held["status"], held["redacted"]) == ("quarantined", None)
    said = retain.ok("fact", "write", "ci", "token", TOKEN, "--redact").stdout
    assert TOKEN not in said
    store = retain_pkg.open(home=retain.home)
    try:
        (fact,) = store.fact_read("ci", "token")
        assert fact.value == MARKER
    finally:
        store.close()


# -- REST -----------------------------------------------------------------------------------


@pytest.fixture
def client(service: MemoryService) -> TestClient:
    service.add_agent("ada")
    return TestClient(http.create_app(service))


def _refused(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    assert TOKEN not in response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "secret_detected"
    assert "redact: true" in error["remedy"]
    return error


def test_rest_refuses_a_secret_with_422_and_redacts_on_request(client: TestClient) -> None:
    error = _refused(client.put("/v1/memories/ci", json={"description": "t", "body": TOKEN}))
    assert error["details"]["kinds"] == ["github_token"]
    written = client.put(
        "/v1/memories/ci", json={"description": "t", "body": TOKEN, "redact": True}
    )
    assert written.status_code == 201 and written.json()["body"] == MARKER
    assert written.json()["redacted"] == ["github_token"]
    _refused(client.post("/v1/memories/ci/edit", json={"old": MARKER, "new": TOKEN}))
    edited = client.post(
        "/v1/memories/ci/edit", json={"old": MARKER, "new": f"{TOKEN}!", "redact": True}
    )
    assert edited.status_code == 200 and edited.json()["body"] == f"{MARKER}!"
    _refused(client.post("/v1/facts", json={"subject": "ci", "predicate": "t", "value": TOKEN}))
    fact = client.post(
        "/v1/facts", json={"subject": "ci", "predicate": "t", "value": TOKEN, "redact": True}
    )
    assert fact.status_code in (200, 201) and TOKEN not in fact.text


def test_rest_agent_verbs_take_redact(service: MemoryService) -> None:
    service.add_agent("ada")
    agent = TestClient(http.create_app(service, tokens={"t": "agent:ada"}))
    headers = {"Authorization": "Bearer t"}
    held = agent.post("/v1/remember", json={"text": TOKEN}, headers=headers)
    assert held.status_code == 201 and held.json()["status"] == "quarantined"
    kept = agent.post("/v1/remember", json={"text": TOKEN, "redact": True}, headers=headers)
    assert kept.json()["body"] == MARKER
    _refused(agent.post("/v1/proposals", json={"summary": "x", "body": TOKEN}, headers=headers))
    proposed = agent.post(
        "/v1/proposals", json={"summary": "x", "body": TOKEN, "redact": True}, headers=headers
    )
    assert proposed.json()["body"] == MARKER


# -- MCP ------------------------------------------------------------------------------------


def test_every_offered_writing_tool_takes_redact(service: MemoryService) -> None:
    tools = {**listed(operator_server(service)), **listed(as_agent(service))}
    for name in REDACTING_TOOLS:
        assert "redact" in tools[name].input_schema["properties"], name


def test_mcp_refuses_a_secret_as_a_tool_error_and_redacts_on_request(
    service: MemoryService,
) -> None:
    server = operator_server(service)
    refused = call(server, "memory_write", {"name": "ci", "description": "t", "body": TOKEN})
    assert refused.is_error and refused.structured_content is not None
    error = refused.structured_content["error"]
    assert error["code"] == "secret_detected" and "the redact argument" in error["remedy"]
    assert TOKEN not in str(refused.content) and TOKEN not in str(error)
    written = call(
        server, "memory_write", {"name": "ci", "description": "t", "body": TOKEN, "redact": True}
    )
    assert not written.is_error and written.structured_content is not None
    assert written.structured_content["body"] == MARKER


def test_mcp_agent_tools_redact_or_hold(service: MemoryService) -> None:
    server = as_agent(service, "ada")
    held = call(server, "memory_remember", {"text": TOKEN})
    assert held.structured_content is not None
    assert held.structured_content["status"] == "quarantined"
    kept = call(server, "memory_remember", {"text": TOKEN, "redact": True})
    assert kept.structured_content is not None and kept.structured_content["body"] == MARKER
    refused = call(server, "memory_propose", {"summary": "x", "evidence": TOKEN})
    assert refused.is_error and TOKEN not in str(refused.content)
    proposed = call(server, "memory_propose", {"summary": "x", "evidence": TOKEN, "redact": True})
    assert proposed.structured_content is not None
    assert proposed.structured_content["evidence"] == MARKER
