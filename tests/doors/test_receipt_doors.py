"""Receipts at the REST and MCP doors: every writing route's and tool's result carries
the write's receipt (typed in the tool's output schema), signed when the store has a
key; and the signed chain head at ``GET /v1/chain/head``."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import ServiceFactory
from tests.doors.test_mcp import as_agent, call, listed, operator_server

from retain import receipt, signing
from retain.doors import http
from retain.receipt import Receipt
from retain.service import MemoryService


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> signing.Signer:
    made = signing.generate()
    monkeypatch.setenv(signing.ENV, made.private_text)
    return made


def verified(data: dict[str, Any], key: signing.Signer) -> Receipt:
    return receipt.verify(Receipt.from_dict(data), key.public)


def test_rest_write_results_carry_signed_receipts(
    make_service: ServiceFactory, key: signing.Signer
) -> None:
    service = make_service()
    client = TestClient(http.create_app(service))
    put = client.put("/v1/memories/plan", json={"description": "The plan", "body": "ship"})
    assert put.status_code == 201
    made = verified(put.json(), key)
    assert (made.kind, made.memory_id) == ("create", put.json()["id"])
    assert made.content_hash == service.get("plan").memory.content_hash
    edited = client.post("/v1/memories/plan/edit", json={"old": "ship", "new": "sail"}).json()
    assert verified(edited, key).kind == "edit"
    fact = client.post("/v1/facts", json={"subject": "acct:42", "predicate": "plan",
                                          "value": "enterprise"})  # fmt: skip
    assert verified(fact.json(), key).memory_id == fact.json()["fact"]["id"]
    assert verified(client.delete("/v1/memories/plan").json(), key).kind == "delete"
    again = client.put("/v1/memories/n", json={"description": "A note"})
    same = client.put("/v1/memories/n", json={"description": "A note"}).json()
    assert again.json()["receipt"] is not None and same["receipt"] is None  # nothing written


def test_rest_serves_the_signed_chain_head(
    make_service: ServiceFactory, key: signing.Signer
) -> None:
    service = make_service()
    service.write("n", description="A note")
    head = TestClient(http.create_app(service)).get("/v1/chain/head").json()
    status = service.status()
    assert (head["seq"], head["hash"], head["key_id"]) == (
        status.events,
        status.chain_head,
        key.key_id,
    )
    message = signing.head_message(head["seq"], head["hash"])
    assert key.public.verifies(message, head["signature"])


def test_the_chain_head_unsigned_without_a_key(service: MemoryService) -> None:
    head = service.chain_head()
    assert (head.seq, head.key_id, head.signature) == (1, None, None)


def test_mcp_tool_results_carry_receipts_in_their_schema(
    make_service: ServiceFactory, key: signing.Signer
) -> None:
    service = make_service()
    server = operator_server(service)
    written = call(server, "memory_write", {"name": "plan", "description": "The plan"})
    assert not written.is_error
    data = written.structured_content
    assert data is not None and verified(data, key).kind == "create"
    schema = listed(server)["memory_write"].output_schema
    assert schema is not None and "receipt" in schema["properties"]
    agent = as_agent(service, "ada")
    kept = call(agent, "memory_remember", {"text": "use node 20"}).structured_content
    assert kept is not None and verified(kept, key).principal == "agent:ada"
    assert "receipt" in listed(agent)["memory_remember"].output_schema["properties"]  # type: ignore[index]
