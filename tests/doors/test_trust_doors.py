"""Trust tiers at the doors: ``retain retier`` and ``--min-trust``/``--evidence`` on the
CLI, the REST fields and ``POST /v1/memories/{id}/retier``, the MCP tools' ``min_trust``
and ``evidence`` arguments; a trust that is no tier is ``invalid_value`` naming the
field at each."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from tests.doors.cli_helpers import CONFLICT, INVALID, NOT_FOUND, Retain
from tests.doors.test_mcp import as_agent, call, listed, operator_server

from retain.doors import http
from retain.service import MemoryService

CRM = json.dumps({"plan": {"tier": "enterprise"}})


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_add_with_evidence_is_verified_and_retier_moves_it(retain: Retain) -> None:
    retain.ok("add", "crm", "-d", "the CRM record", "--body", CRM)
    written = retain.json(
        "add", "tier", "-d", "the tier", "--body", "enterprise",
        "--evidence", "crm", "--evidence-path", "plan.tier",
    )  # fmt: skip
    assert written["trust"] == "verified"
    assert written["provenance"]["epistemic"] == "verified"
    moved = retain.json("retier", written["id"], "observed", "--reason", "the CRM moved")
    assert (moved["previous_trust"], moved["trust"], moved["changed"]) == (
        "verified",
        "observed",
        True,
    )
    said = retain.ok("retier", "tier", "attested", "--reason", "checked by hand").stdout
    assert "Retiered 'tier' from observed to attested." in said
    as_steward = retain.ok("retier", "tier", "attested", "--reason", "again", "--as", "steward")
    assert "Unchanged" in as_steward.stdout


def test_cli_min_trust_on_the_reads(retain: Retain) -> None:
    retain.ok("add", "low", "-d", "kestrel rumour", "--body", "r")
    retain.ok("add", "high", "-d", "kestrel fact", "--body", "f")
    retain.ok("retier", "low", "observed", "--reason", "unchecked")
    listed_ = retain.json("list", "--min-trust", "attested")["memories"]
    assert [m["name"] for m in listed_] == ["high"]
    found = retain.json("search", "kestrel", "--min-trust", "attested")["memories"]
    assert [h["name"] for h in found] == ["high"]
    retain.refused(
        "get", "low", "--min-trust", "attested",
        status=NOT_FOUND, code="not_found", remedy="ask for a lower trust",
    )  # fmt: skip
    refusal = retain.refused(
        "list", "--min-trust", "high",
        status=INVALID, code="invalid_value", remedy="claimed, observed, attested, verified",
    )  # fmt: skip
    assert refusal.error["details"]["field"] == "min_trust"
    retain.ok("fact", "write", "acct", "plan", "enterprise")
    assert retain.json("fact", "read", "acct", "--min-trust", "verified")["facts"] == []
    assert len(retain.json("fact", "history", "acct", "plan", "--min-trust", "attested")["facts"])
    assert "kestrel fact" in retain.ok("context", "--min-trust", "attested").stdout
    assert "kestrel rumour" not in retain.ok("context", "--min-trust", "attested").stdout


def test_cli_refusals_of_the_trust_codes(retain: Retain) -> None:
    retain.ok("add", "crm", "-d", "the CRM record", "--body", CRM)
    refusal = retain.refused(
        "fact", "write", "acct", "plan", "free", "--evidence", "crm", "--evidence-path",
        "plan.tier", status=CONFLICT, code="evidence_mismatch", remedy="exactly",
    )  # fmt: skip
    details = refusal.error["details"]
    assert details == {"reason": "value_differs", "ref": "crm", "path": "plan.tier"}
    refusal = retain.refused(
        "retier", "crm", "verified", "--reason", "r",
        status=INVALID, code="invalid_value", remedy="name a memory or fact",
    )  # fmt: skip
    assert refusal.error["details"]["field"] == "evidence"
    retain.refused(
        "retier", "crm", "observed", "--reason", "r", "--as", "app:ci",
        status=15, code="access_denied", remedy="--as",
    )  # fmt: skip


# -- REST ---------------------------------------------------------------------------------------


def test_rest_evidence_retier_and_min_trust(service: MemoryService) -> None:
    client = TestClient(http.create_app(service))
    crm = client.put("/v1/memories/crm", json={"description": "the CRM", "body": CRM}).json()
    tier = client.put(
        "/v1/memories/tier",
        json={"description": "the tier", "body": "enterprise",
              "evidence": {"ref": crm["id"], "path": "plan.tier"}},
    )  # fmt: skip
    assert tier.status_code == 201 and tier.json()["trust"] == "verified"
    moved = client.post(
        f"/v1/memories/{tier.json()['id']}/retier",
        json={"trust": "observed", "reason": "the CRM moved"},
    )
    assert moved.status_code == 200
    assert (moved.json()["previous_trust"], moved.json()["trust"]) == ("verified", "observed")
    assert client.get("/v1/memories/tier", params={"min_trust": "attested"}).status_code == 404
    assert client.get("/v1/memories/tier", params={"min_trust": "observed"}).status_code == 200
    names = [m["name"] for m in client.get("/v1/memories?min_trust=attested").json()["memories"]]
    assert names == ["crm"]
    hits = client.post("/v1/memories/search", json={"queries": [], "min_trust": "attested"})
    assert [h["name"] for h in hits.json()["memories"]] == ["crm"]
    bad = client.get("/v1/memories", params={"min_trust": "high"})
    assert bad.status_code == 400
    assert bad.json()["error"]["details"]["field"] == "min_trust"
    mismatch = client.post(
        "/v1/facts",
        json={"subject": "acct", "predicate": "plan", "value": "free",
              "evidence": {"ref": crm["id"], "path": "plan.tier"}},
    )  # fmt: skip
    assert mismatch.status_code == 409
    assert mismatch.json()["error"]["code"] == "evidence_mismatch"
    written = client.post(
        "/v1/facts",
        json={"subject": "acct", "predicate": "plan", "value": "enterprise",
              "evidence": {"ref": crm["id"], "path": "plan.tier"}},
    )  # fmt: skip
    assert written.status_code == 201
    verified = client.get("/v1/facts", params={"subject": "acct", "min_trust": "verified"})
    assert [f["value"] for f in verified.json()["facts"]] == ["enterprise"]
    history = client.get(
        "/v1/facts/history",
        params={"subject": "acct", "predicate": "plan", "min_trust": "verified"},
    )
    assert len(history.json()["facts"]) == 1
    context = client.post("/v1/context", json={"min_trust": "verified"}).json()
    assert "the CRM" not in context["text"]


def test_rest_retier_is_a_reviewers(service: MemoryService) -> None:
    memory = service.write("m", description="m", body="x").memory
    tokens = {"app-token": "app:ci", "steward-token": "steward"}
    client = TestClient(http.create_app(service, tokens=tokens))
    route = f"/v1/memories/{memory.id}/retier"
    body = {"trust": "observed", "reason": "unchecked"}
    denied = client.post(route, json=body, headers={"Authorization": "Bearer app-token"})
    assert denied.status_code == 403
    done = client.post(route, json=body, headers={"Authorization": "Bearer steward-token"})
    assert done.status_code == 200 and done.json()["trust"] == "observed"
    capped = client.post(
        route, json={"trust": "nope", "reason": "r"},
        headers={"Authorization": "Bearer steward-token"},
    )  # fmt: skip
    assert capped.status_code == 400 and capped.json()["error"]["details"]["field"] == "trust"


# -- MCP ----------------------------------------------------------------------------------------


def _data(result: Any) -> dict[str, Any]:
    assert result.structured_content is not None
    data: dict[str, Any] = result.structured_content
    return data


def test_mcp_min_trust_and_evidence_for_an_operator(service: MemoryService) -> None:
    server = operator_server(service)
    # (the SDK reads a JSON-shaped string argument as JSON, so this body is plain text)
    crm = _data(
        call(server, "memory_write", {"name": "crm", "description": "CRM", "body": "enterprise"})
    )
    written = _data(
        call(server, "memory_write", {
            "name": "tier", "description": "the tier", "body": "enterprise",
            "evidence": {"ref": crm["id"]},
        })
    )  # fmt: skip
    assert written["trust"] == "verified"
    service.retier(crm["id"], "observed", reason="unchecked")
    found = _data(call(server, "memory_search", {"queries": [], "min_trust": "attested"}))
    assert [h["name"] for h in found["memories"]] == ["tier"]
    bad = call(server, "memory_search", {"queries": [], "min_trust": "high"})
    assert bad.is_error
    assert _data(bad)["error"]["code"] == "invalid_value"
    assert _data(bad)["error"]["details"]["field"] == "min_trust"
    assert "memory_retier" not in listed(server) and "retier" not in server.verbs.values()


def test_mcp_an_agents_evidence_is_recorded_as_its_claim(service: MemoryService) -> None:
    crm = service.write("crm", description="the CRM", body=CRM).memory
    server = as_agent(service)
    done = _data(
        call(server, "fact_write", {
            "subject": "acct", "predicate": "plan", "value": "enterprise",
            "evidence": {"ref": crm.id, "path": "plan.tier"},
        })
    )  # fmt: skip
    assert done["fact"]["trust"] == "observed"
    facts = _data(call(server, "fact_read", {"subject": "acct", "min_trust": "attested"}))
    assert facts["facts"] == []
    recalled = _data(call(server, "memory_recall", {"queries": ["CRM"], "min_trust": "verified"}))
    assert recalled["memories"] == []
    refused = _data(
        call(server, "fact_write", {
            "subject": "acct", "predicate": "plan", "value": "free",
            "evidence": {"ref": crm.id, "path": "plan.tier"},
        })
    )  # fmt: skip
    assert refused["error"]["code"] == "evidence_mismatch"
    assert "enterprise" not in json.dumps(refused)


def test_cli_and_rest_remember_take_evidence(retain: Retain, service: MemoryService) -> None:
    retain.ok("add", "crm", "-d", "the CRM record", "--body", CRM)
    retain.ok("agent", "add", "ada")
    kept = retain.json(
        "remember", "enterprise", "--as", "agent:ada",
        "--evidence", "crm", "--evidence-path", "plan.tier",
    )  # fmt: skip
    assert (kept["trust"], kept["provenance"]["epistemic"]) == ("observed", "verified_claim")
    crm = service.write("crm", description="the CRM", body=CRM).memory
    service.add_agent("bea")
    client = TestClient(http.create_app(service, tokens={"t": "agent:bea"}))
    answer = client.post(
        "/v1/remember",
        json={"text": "enterprise", "evidence": {"ref": crm.id, "path": "plan.tier"}},
        headers={"Authorization": "Bearer t"},
    )
    assert answer.status_code == 201 and answer.json()["trust"] == "observed"
    assert answer.json()["provenance"]["epistemic"] == "verified_claim"
