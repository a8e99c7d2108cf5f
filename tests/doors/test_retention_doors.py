"""Legal holds and sweeps at the doors: ``retain hold|release|held|sweep``,
``/v1/memories/{id}/hold`` and ``/v1/sweep``, and the ``memory_hold``, ``memory_release``,
``memory_held`` and ``memory_sweep`` tools give the service's answers and refusals
(``hold_active`` with its own exit status and HTTP 409), and an agent is offered none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import ServiceFactory
from tests.doors.cli_helpers import CONFLICT, HOLD_ACTIVE, INVALID, NOT_FOUND, Retain
from tests.doors.test_mcp import as_agent, call, fits, listed, operator_server

import retain
from retain.doors import http
from retain.service import MemoryService

TOOLS = {"memory_hold", "memory_release", "memory_held", "memory_sweep"}


def agents_note(home: Path) -> str:
    """An own memory of agent ada in the store under ``home``: its id."""
    operator = retain.open(home=home)
    try:
        operator.add_agent("ada")
        return operator.acting_as("agent:ada").remember("the old locker code is 4711").id
    finally:
        operator.close()


# -- the CLI ------------------------------------------------------------------------------


def test_the_cli_holds_refuses_forget_and_releases(retain: Retain) -> None:
    own = agents_note(retain.home)
    placed = retain.json("hold", own, "--reason", "matter 42")
    assert (placed["kind"], placed["target"], placed["principal"], placed["reason"]) == (
        "hold", own, "operator:local", "matter 42",
    )  # fmt: skip
    state = retain.json("held", own)
    assert state["held"] and state["hold"]["reason"] == "matter 42"
    assert "Held: " in retain.ok("held", own).stdout
    refusal = retain.refused(
        "forget", own, "--as", "agent:ada", status=HOLD_ACTIVE, code="hold_active",
        remedy=f"retain release {own}",
    )  # fmt: skip
    assert refusal.error["details"]["reason"] == "matter 42"
    retain.refused(
        "hold", own, "--reason", "again", status=CONFLICT, code="already_held",
        remedy="release it",
    )  # fmt: skip
    released = retain.json("release", own, "--reason", "closed")
    assert (released["kind"], released["reason"]) == ("release", "closed")
    assert "Not held" in retain.ok("held", own).stdout
    retain.refused(
        "release", own, "--reason", "again", status=CONFLICT, code="not_held",
        remedy="check the id",
    )  # fmt: skip
    retain.ok("forget", own, "--as", "agent:ada")


def test_the_cli_refuses_a_hold_it_cannot_see_or_without_a_reason(retain: Retain) -> None:
    own = agents_note(retain.home)
    retain.refused(
        "hold", own, "--reason", "x", "--as", "app:records", status=NOT_FOUND,
        code="not_found", remedy="a memory you can see",
    )  # fmt: skip
    retain.refused(
        "hold", own, "--reason", " ", status=INVALID, code="invalid_value", remedy="say why"
    )
    assert retain("hold", own).exit_code == 2  # --reason is required


def test_the_cli_sweeps_a_dry_run_and_lists_what_is_held(retain: Retain) -> None:
    own = agents_note(retain.home)
    kept = retain.json("add", "plan", "-d", "the launch plan")["id"]
    retain.ok("hold", kept, "--reason", "matter 42")
    before = retain.state()
    data = retain.json("sweep", "--before", "2999-01-01", "--dry-run", "--reason", "policy")
    assert [s["id"] for s in data["selected"]] == [own]
    assert data["held"] == [kept] and data["dry_run"] and data["forgotten"] == []
    text = retain.ok("sweep", "--before", "2999-01-01", "--dry-run", "--reason", "policy").stdout
    assert own in text and "Would forget 1 memories" in text and f"Held, so kept: {kept}." in text
    assert retain.state() == before
    scoped = retain.json(
        "sweep", "--scope", "global", "--before", "2999-01-01", "--dry-run", "--reason", "p"
    )
    assert scoped["selected"] == [] and scoped["held"] == [kept]
    retain.refused(
        "sweep", "--scope", "nowhere", "--reason", "p", status=INVALID, code="invalid_value",
        remedy="name global",
    )  # fmt: skip


def test_the_cli_sweep_takes_the_windows_of_config_toml(retain: Retain) -> None:
    own = agents_note(retain.home)
    (retain.home / "config.toml").write_text('[retention]\n"agent:*" = "P1D"\n')
    data = retain.json("sweep", "--dry-run", "--reason", "policy")
    assert data["selected"] == []  # learned just now: inside its day
    assert data["retention"][0]["pattern"] == "agent:*"
    assert data["retention"][0]["window"] == "P1D"
    (retain.home / "config.toml").write_text('[retention]\n"agent:*" = "1d"\n')
    failed = retain("sweep", "--dry-run", "--reason", "p", "--format", "json")
    assert json.loads(failed.stderr)["error"]["details"]["key"] == "retention.agent:*"
    assert own


# -- REST -----------------------------------------------------------------------------------


def test_the_rest_routes_hold_release_and_sweep(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("ada")
    own = operator.acting_as("agent:ada").remember("the old locker code is 4711")
    tokens = {"op": "operator:alice", "app": "app:records", "ag": "agent:ada"}
    client = TestClient(http.create_app(operator, tokens=tokens))

    def as_(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    route = f"/v1/memories/{own.id}/hold"
    placed = client.post(route, headers=as_("op"), json={"reason": "matter 42"})
    assert placed.status_code == 201 and placed.json()["kind"] == "hold"
    again = client.post(route, headers=as_("op"), json={"reason": "matter 43"})
    assert (again.status_code, again.json()["error"]["code"]) == (409, "already_held")
    assert client.get(route, headers=as_("op")).json()["hold"]["reason"] == "matter 42"
    forgot = client.post("/v1/forget", headers=as_("ag"), json={"id": own.id})
    assert (forgot.status_code, forgot.json()["error"]["code"]) == (409, "hold_active")
    assert "DELETE /v1/memories/" in forgot.json()["error"]["remedy"]
    unseen = client.get(route, headers=as_("app"))
    assert (unseen.status_code, unseen.json()["error"]["code"]) == (404, "not_found")
    denied = client.get(route, headers=as_("ag"))
    assert (denied.status_code, denied.json()["error"]["code"]) == (403, "access_denied")
    swept = client.post(
        "/v1/sweep", headers=as_("op"),
        json={"reason": "policy", "before": "2999-01-01", "dry_run": True},
    )  # fmt: skip
    assert swept.status_code == 200 and swept.json()["held"] == [own.id]
    released = client.delete(route, headers=as_("op"), params={"reason": "closed"})
    assert released.status_code == 200 and released.json()["kind"] == "release"
    gone = client.delete(route, headers=as_("op"), params={"reason": "closed"})
    assert (gone.status_code, gone.json()["error"]["code"]) == (409, "not_held")


# -- MCP ------------------------------------------------------------------------------------


def test_the_tools_are_offered_to_operators_and_never_to_an_agent(service: MemoryService) -> None:
    assert set(listed(operator_server(service))) >= TOOLS
    assert not TOOLS & set(listed(as_agent(service)))
    assert set(listed(operator_server(service, "steward"))) & TOOLS == {"memory_held"}


def test_the_tools_answer_as_their_output_schemas_say(service: MemoryService) -> None:
    op = operator_server(service)
    schemas = {n: t.output_schema for n, t in listed(op).items()}
    plan = service.write("plan", description="the launch plan").memory.id
    steps: list[tuple[str, dict[str, Any]]] = [
        ("memory_hold", {"id": plan, "reason": "matter 42"}),
        ("memory_held", {"id": plan}),
        ("memory_sweep", {"reason": "policy", "before": "2999-01-01", "dry_run": True}),
        ("memory_release", {"id": plan, "reason": "closed"}),
    ]
    for tool, arguments in steps:
        result = call(op, tool, arguments)
        assert not result.is_error, (tool, result.content)
        schema = schemas[tool]
        assert schema is not None
        fits(schema, result.structured_content)
    refused = call(op, "memory_release", {"id": plan, "reason": "again"})
    assert refused.is_error and refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "not_held"


@pytest.mark.parametrize("tool", sorted(TOOLS - {"memory_held"}))
def test_a_hold_and_a_sweep_say_they_change_the_store(service: MemoryService, tool: str) -> None:
    annotations = listed(operator_server(service))[tool].annotations
    assert annotations is not None and annotations.read_only_hint is False
    assert annotations.destructive_hint is (tool == "memory_sweep")


def test_the_cli_sweep_forgets_and_prints_each_certificate(retain: Retain) -> None:
    own = agents_note(retain.home)
    kept = retain.json("add", "plan", "-d", "the launch plan")["id"]
    retain.ok("hold", kept, "--reason", "matter 42")
    text = retain.ok("sweep", "--before", "2999-01-01", "--reason", "policy").stdout
    assert "Forgot 1 memories." in text and f"Held, so kept: {kept}." in text
    again = retain.json("sweep", "--before", "2999-01-01", "--reason", "policy", "--no-digest")
    assert again["selected"] == [] and again["forgotten"] == [] and again["held"] == [kept]
    certificate = retain.json("certificate", own)
    assert (certificate["target"], certificate["reason"]) == (own, "policy")
