"""The tickets at the doors: ``retain ticket …``, ``/v1/tickets…`` and the ``ticket_*``
MCP tools give the same ticket, the same refusals (``gate_pending``, ``ticket_closed``)
with their details, and an agent is offered none of them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.doors.cli_helpers import ACCESS_DENIED, CONFLICT, NOT_FOUND, Retain
from tests.doors.test_mcp import call, fits, listed, operator_server

import retain
from retain.config import Settings
from retain.doors import http, mcp
from retain.model import Proposal
from retain.service import MemoryService

TICKET_TOOLS = {"ticket_list", "ticket_show", "ticket_approve", "ticket_reject", "ticket_expire"}


def proposed(home: Path, *summaries: str) -> list[Proposal]:
    """Tickets agent ada proposes in the store under ``home`` (the CLI has no propose)."""
    operator = retain.open(home=home)
    try:
        if not operator.list_agents():
            operator.add_agent("ada")
        ada = operator.acting_as("agent:ada")
        made = [ada.propose(summary, body=f"{summary}, always.") for summary in summaries]
        return [as_read(p) for p in made]
    finally:
        operator.close()


def as_read(ticket: Proposal) -> Proposal:
    """A ticket ``propose`` returned, as a read shows it: without the write's receipt."""
    assert ticket.receipt is not None and ticket.receipt.kind == "propose"
    return replace(ticket, receipt=None)


@pytest.fixture
def gated_home(retain: Retain) -> Retain:
    retain.home.mkdir(parents=True, exist_ok=True)
    (retain.home / "config.toml").write_text('[gate]\nglobal = "second_approver"\n')
    return retain


# -- the CLI ------------------------------------------------------------------------------


def test_the_cli_lists_shows_and_approves_a_ticket(retain: Retain) -> None:
    (made,) = proposed(retain.home, "Use UTC in logs")
    (listed_ticket,) = retain.json("ticket", "list")["tickets"]
    assert listed_ticket == made.to_dict()
    assert retain.json("ticket", "show", made.id) == made.to_dict()
    assert retain.json("ticket", "list", "--status", "approved")["tickets"] == []
    approved = retain.json("ticket", "approve", made.id, "--reason", "agreed")
    assert (approved["status"], approved["decided_by"], approved["decision_reason"]) == (
        "approved", "operator:local", "agreed",
    )  # fmt: skip
    landed = retain.json("list")["memories"]
    assert [m["description"] for m in landed] == ["Use UTC in logs"]
    text = retain.ok("ticket", "list").stdout
    assert made.id in text and "approved" in text


def test_the_cli_answers_gate_pending_then_lands_with_a_second_approver(
    gated_home: Retain,
) -> None:
    (made,) = proposed(gated_home.home, "Use UTC in logs")
    first = gated_home("ticket", "approve", made.id, "--format", "json")
    assert first.exit_code == CONFLICT
    error = json.loads(first.stderr)["error"]
    assert error["code"] == "gate_pending"
    assert error["details"] == {
        "ticket": made.id,
        "expires_at": made.to_dict()["expires_at"],
        "approvals": ["operator:local"],
    }
    assert gated_home.json("ticket", "show", made.id)["status"] == "pending_gate"
    gated_home.refused(
        "ticket", "approve", made.id, status=CONFLICT, code="gate_pending",
        remedy="another operator or the steward approves it",
    )  # fmt: skip
    approved = gated_home.json("ticket", "approve", made.id, "--as", "operator:bob")
    assert approved["status"] == "approved" and approved["landed"]
    gated_home.refused(
        "ticket", "reject", made.id, status=CONFLICT, code="ticket_closed",
        remedy="propose it again",
    )  # fmt: skip


def test_the_cli_rejects_expires_and_refuses(retain: Retain) -> None:
    made, other = proposed(retain.home, "Use tabs", "Use spaces")
    rejected = retain.json("ticket", "reject", made.id, "--reason", "spaces")
    assert (rejected["status"], rejected["decision_reason"]) == ("rejected", "spaces")
    assert retain.json("ticket", "expire") == {"tickets": []}  # none is past its expiry
    assert "Expired 0 tickets." in retain.ok("ticket", "expire").stdout
    retain.refused(
        "ticket", "show", "no-such", status=NOT_FOUND, code="not_found", remedy="list the tickets"
    )
    retain.refused(
        "ticket", "approve", other.id, "--as", "agent:ada", status=ACCESS_DENIED,
        code="access_denied", remedy="act as",
    )  # fmt: skip
    assert "status: open" in retain.ok("ticket", "show", other.id).stdout


# -- REST ---------------------------------------------------------------------------------


def test_the_rest_routes_decide_tickets_with_the_services_refusals(
    make_service: Any,
) -> None:
    operator = make_service(settings=Settings(gate=(("global", "second_approver"),)))
    operator.add_agent("ada")
    ada = operator.acting_as("agent:ada")
    made, other = as_read(ada.propose("Use UTC")), as_read(ada.propose("Use tabs"))
    tokens = {"op": "operator:alice", "op2": "operator:bob", "ag": "agent:ada"}
    client = TestClient(http.create_app(operator, tokens=tokens))

    def as_(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    listed_now = client.get("/v1/tickets", headers=as_("op")).json()["tickets"]
    assert listed_now == [made.to_dict(), other.to_dict()]
    assert client.get(f"/v1/tickets/{made.id}", headers=as_("op")).json() == made.to_dict()
    waiting = client.post(f"/v1/tickets/{made.id}/approve", headers=as_("op"))
    assert waiting.status_code == 409
    assert waiting.json()["error"]["code"] == "gate_pending"
    assert waiting.json()["error"]["details"]["ticket"] == made.id
    landed = client.post(
        f"/v1/tickets/{made.id}/approve", headers=as_("op2"), json={"reason": "fine"}
    )
    assert landed.status_code == 200 and landed.json()["status"] == "approved"
    assert landed.json()["decision_reason"] == "fine"
    closed = client.post(f"/v1/tickets/{made.id}/reject", headers=as_("op"))
    assert (closed.status_code, closed.json()["error"]["code"]) == (409, "ticket_closed")
    assert closed.json()["error"]["details"] == {"ticket": made.id, "status": "approved"}
    denied = client.post(f"/v1/tickets/{other.id}/reject", headers=as_("ag"))
    assert (denied.status_code, denied.json()["error"]["code"]) == (403, "access_denied")
    missing = client.get("/v1/tickets/no-such", headers=as_("op"))
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    swept = client.post("/v1/tickets/expire", headers=as_("op"))
    assert swept.json() == {"tickets": []}
    # the agent lists its own proposals, with the same shape
    own = client.get("/v1/proposals", headers=as_("ag")).json()["proposals"]
    assert [p["id"] for p in own] == [made.id, other.id]
    assert own[0] == operator.get_ticket(made.id).to_dict()


# -- MCP ----------------------------------------------------------------------------------


def test_an_agent_is_offered_no_ticket_tool_and_a_curator_every_one(
    service: MemoryService,
) -> None:
    service.add_agent("ada")
    agent_tools = set(
        listed(mcp.create_server(http.Services(service).of, local_principal="agent:ada"))
    )
    assert agent_tools & TICKET_TOOLS == set()
    assert set(listed(operator_server(service))) >= TICKET_TOOLS
    assert set(listed(operator_server(service, "steward"))) >= TICKET_TOOLS
    app_tools = set(listed(operator_server(service, "app:ci"))) & TICKET_TOOLS
    assert app_tools == {"ticket_expire"}  # the queue is the curators': it may hold an
    # agent's private record (a promotion)
    refused = call(operator_server(service, "agent:ada"), "ticket_approve", {"ticket_id": "x"})
    assert refused.is_error and refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "access_denied"


def test_the_ticket_tools_give_the_ticket_and_the_gate_as_the_other_doors(
    make_service: Any,
) -> None:
    operator = make_service(settings=Settings(gate=(("global", "second_approver"),)))
    operator.add_agent("ada")
    ada_server = mcp.create_server(http.Services(operator).of, local_principal="agent:ada")
    made = call(ada_server, "memory_propose", {"summary": "Use UTC", "evidence": "logs"})
    assert not made.is_error and made.structured_content is not None
    assert made.structured_content.pop("receipt")["kind"] == "propose"  # a write's alone
    ticket_id = made.structured_content["id"]
    server = operator_server(operator)
    tools = listed(server)
    shown = call(server, "ticket_show", {"ticket_id": ticket_id})
    assert shown.structured_content == made.structured_content
    assert tools["ticket_show"].output_schema is not None
    fits(tools["ticket_show"].output_schema, shown.structured_content)
    queue = call(server, "ticket_list", {"status": "open"})
    assert queue.structured_content == {"tickets": [made.structured_content]}
    waiting = call(server, "ticket_approve", {"ticket_id": ticket_id, "reason": "ok"})
    assert waiting.is_error and waiting.structured_content is not None
    error = waiting.structured_content["error"]
    assert (error["code"], error["details"]["ticket"]) == ("gate_pending", ticket_id)
    assert error["details"]["expires_at"] == made.structured_content["expires_at"]
    second = call(operator_server(operator, "steward"), "ticket_approve", {"ticket_id": ticket_id})
    assert not second.is_error and second.structured_content is not None
    assert second.structured_content["status"] == "approved"
    fits(tools["ticket_approve"].output_schema or {}, second.structured_content)
    closed = call(server, "ticket_reject", {"ticket_id": ticket_id})
    assert closed.is_error and closed.structured_content is not None
    assert closed.structured_content["error"]["code"] == "ticket_closed"
    swept = call(server, "ticket_expire", {})
    assert swept.structured_content == {"tickets": []}
