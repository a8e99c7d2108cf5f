"""Conversation ingestion at the REST and MCP doors: ``POST /v1/conversations`` and the
``ingest_conversation`` tool give the service's answers and refusals, and an agent is
offered no such tool (the CLI's ``retain ingest``: ``test_cli_ingest.py``)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.conftest import ServiceFactory, store_state
from tests.doors.test_mcp import as_agent, call, fits, listed, operator_server

from retain.doors import http
from retain.service import MemoryService

TURNS: list[dict[str, Any]] = [
    {"speaker": "Ada", "text": "We adopted a puppy.", "id": "D1:1", "at": "2023-05-08"},
    {"speaker": "Bob", "text": "Show me!", "id": "D1:2", "caption": "a puppy on a rug"},
]


def test_the_rest_route_ingests_and_says_whether_it_wrote(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("ada")
    tokens = {"op": "operator:alice", "ag": "agent:ada"}
    client = TestClient(http.create_app(operator, tokens=tokens))
    op, ag = ({"Authorization": f"Bearer {t}"} for t in ("op", "ag"))
    body = {"thread": "session-1", "turns": TURNS, "at": "2023-05-08T14:00:00Z"}
    first = client.post("/v1/conversations", headers=op, json=body)
    assert first.status_code == 201, first.json()
    answer = first.json()
    assert (answer["thread"], answer["created"], answer["turns"]) == ("session-1", 2, 2)
    assert [m["name"] for m in answer["memories"]] == ["session-1-d1-1", "session-1-d1-2"]
    assert all(m["receipt"] for m in answer["memories"])
    second = operator.get("session-1-d1-2").memory
    assert (second.subject, second.body) == ("Bob", "Show me! [image: a puppy on a rug]")
    again = client.post("/v1/conversations", headers=op, json=body)
    assert again.status_code == 200 and again.json()["unchanged"] == 2
    before = store_state(operator)
    missing = client.post(
        "/v1/conversations",
        headers=op,
        json={"thread": "t", "turns": [TURNS[0], {"speaker": "x", "text": " "}]},
    )
    assert (missing.status_code, missing.json()["error"]["code"]) == (400, "invalid_value")
    assert missing.json()["error"]["details"]["turn"] == 2
    empty = client.post("/v1/conversations", headers=op, json={"thread": "t", "turns": []})
    assert empty.json()["error"]["details"]["field"] == "turns"
    denied = client.post("/v1/conversations", headers=ag, json=body)
    assert (denied.status_code, denied.json()["error"]["code"]) == (403, "access_denied")
    assert store_state(operator) == before


def test_the_tool_ingests_as_its_output_schema_says(service: MemoryService) -> None:
    server = operator_server(service)
    tool = listed(server)["ingest_conversation"]
    result = call(server, "ingest_conversation", {"thread": "session-1", "turns": TURNS})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    fits(tool.output_schema or {}, result.structured_content)
    assert result.structured_content["created"] == 2
    again = call(server, "ingest_conversation", {"thread": "session-1", "turns": TURNS})
    assert again.structured_content is not None and again.structured_content["unchanged"] == 2
    bad = call(
        server,
        "ingest_conversation",
        {"thread": "t", "turns": [{"speaker": "Ada", "text": "x", "at": "soon"}]},
    )
    assert bad.is_error and bad.structured_content is not None
    assert bad.structured_content["error"]["code"] == "invalid_time"


def test_an_agent_is_not_offered_the_tool(service: MemoryService) -> None:
    assert "ingest_conversation" not in listed(as_agent(service))
    assert "ingest_conversation" in listed(operator_server(service, "app:ci"))
