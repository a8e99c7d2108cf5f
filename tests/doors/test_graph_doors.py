"""The relation graph at the doors: ``retain graph|link|decide|dedup|hygiene``,
``/v1/memories/{id}/graph``, ``/v1/relations``, ``/v1/memories/{id}/decide``,
``/v1/dedup`` and ``/v1/hygiene``, and the ``memory_graph``, ``memory_link``,
``memory_decide``, ``memory_dedup`` and ``memory_hygiene`` tools give the service's
answers and refusals: an unknown memory is ``not_found`` at every door (never an empty
graph), a supersede keeps the older memory readable, a contradiction raises the signal
the gate and the hygiene report show, a dedup pass lists a planted near-copy, and the
hygiene report has every section."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import ServiceFactory
from tests.doors.cli_helpers import ACCESS_DENIED, CONFLICT, INVALID, NOT_FOUND, Retain
from tests.doors.test_mcp import as_agent, call, fits, listed, operator_server

import retain
from retain import graph, hygiene
from retain.doors import http
from retain.doors.cli import graph as graph_commands
from retain.service import MemoryService

TOOLS = {"memory_graph", "memory_link", "memory_decide", "memory_dedup", "memory_hygiene"}
UNKNOWN = "01ZZZZZZZZZZZZZZZZZZZZZZZZ"  # an id no memory has

ALICE = "Alice works in the UTC+8 time zone"
NEAR_COPY = "Alice is in the UTC+8 time zone"  # a reworded copy of ALICE
OTHER_ZONE = "Alice works in the UTC+9 time zone"  # the same note, another fact
DEPLOYS = "Deploys go out on Tuesdays after the review"


def plant(service: MemoryService) -> dict[str, str]:
    """Four global memories, a near-copy pair among them: their ids by name."""
    written = {
        "alice-tz": ALICE,
        "alice-zone": NEAR_COPY,
        "alice-tz9": OTHER_ZONE,
        "deploys": DEPLOYS,
    }
    return {name: service.write(name, description=text).memory.id for name, text in written.items()}


def plant_in(home: Any) -> dict[str, str]:
    operator = retain.open(home=home)
    try:
        return plant(operator)
    finally:
        operator.close()


def edges(data: dict[str, Any], direction: str) -> set[tuple[str, str | None]]:
    """A graph's edges one way, as (type, the other memory's name)."""
    return {(e["type"], e["name"]) for e in data[direction]}


# -- the CLI ------------------------------------------------------------------------------


def test_the_cli_graph_of_an_unknown_memory_is_not_found(retain: Retain) -> None:
    plant_in(retain.home)
    for unknown in (UNKNOWN, "no-such-memory"):
        retain.refused("graph", unknown, status=NOT_FOUND, code="not_found", remedy="`retain list`")


def test_the_cli_links_and_the_graph_shows_the_edge_both_ways(retain: Retain) -> None:
    ids = plant_in(retain.home)
    linked = retain.json("link", "deploys", "alice-tz", "derived_from", "--reason", "from it")
    assert linked["changed"] and linked["relation"]["type"] == "derived_from"
    assert (linked["relation"]["source"], linked["relation"]["target"]) == (
        ids["deploys"], ids["alice-tz"],
    )  # fmt: skip
    assert linked["receipt"] is not None
    again = retain.ok("link", "deploys", "alice-tz", "derived_from").stdout
    assert again.startswith("Unchanged: deploys derived_from alice-tz")
    source = retain.json("graph", "deploys")
    assert set(source) == {"memory", "outgoing", "incoming"}
    assert edges(source, "outgoing") == {("derived_from", "alice-tz")}
    target = retain.json("graph", ids["alice-tz"])  # by id too
    assert edges(target, "incoming") == {("derived_from", "deploys")}
    text = retain.ok("graph", "alice-tz").stdout
    assert "alice-tz (global): " + ALICE in text
    assert "Outgoing: none." in text and "Incoming:" in text
    assert "derived_from" in text and "deploys" in text and DEPLOYS in text


def test_the_cli_refuses_a_bad_link_and_a_principal_that_may_not(retain: Retain) -> None:
    plant_in(retain.home)
    retain.refused(
        "link", "deploys", "alice-tz", "references", status=INVALID, code="invalid_value",
        remedy="references",
    )  # fmt: skip
    retain.refused(
        "link", "deploys", "alice-tz", "cites", status=INVALID, code="invalid_value",
        remedy="similar_to",
    )  # fmt: skip
    retain.refused(
        "decide", "deploys", "merge", "--target", "alice-tz", status=INVALID,
        code="invalid_value", remedy="supersede, contradict, keep",
    )  # fmt: skip
    retain.refused(
        "link", "deploys", "alice-tz", "similar_to", "--as", "app:ci", status=ACCESS_DENIED,
        code="access_denied", remedy="`--as steward`",
    )  # fmt: skip
    retain.refused(
        "link", "deploys", UNKNOWN, "similar_to", status=NOT_FOUND, code="not_found",
        remedy="`retain list`",
    )  # fmt: skip
    assert retain("decide", "deploys", "keep").exit_code == 2  # --target is required


def test_the_cli_supersede_keeps_the_older_memory_readable(retain: Retain) -> None:
    ids = plant_in(retain.home)
    decided = retain.json("decide", "alice-tz", "supersede", "--target", "alice-zone")
    assert decided["relation"]["type"] == "supersedes"
    assert decided["target"]["status"] == "superseded"
    older = retain.json("get", "alice-tz")
    assert (older["id"], older["status"]) == (ids["alice-tz"], "superseded")
    assert older["superseded_by"] == ids["alice-zone"]
    assert older["description"] == ALICE  # readable, as it was
    shown = retain.json("graph", ids["alice-tz"])
    assert shown["memory"]["superseded_by"] == ids["alice-zone"]
    assert ("supersedes", "alice-zone") in edges(shown, "incoming")
    text = retain.ok("graph", ids["alice-tz"]).stdout
    assert f"superseded, superseded by {ids['alice-zone']}" in text
    refusal = retain.refused(
        "decide", ids["alice-tz"], "supersede", "--target", "alice-zone", status=CONFLICT,
        code="not_active", remedy="read its graph",
    )  # fmt: skip
    assert refusal.error["details"]["status"] == "superseded"
    before = retain.json("graph", "alice-zone")
    retain.refused(
        "decide", ids["alice-tz"], "keep", "--target", "alice-zone", status=CONFLICT,
        code="not_active", remedy="read its graph",
    )  # fmt: skip
    assert retain.json("graph", "alice-zone") == before
    said = retain.ok("decide", "alice-tz9", "supersede", "--target", "alice-zone").stdout
    assert (
        said
        == "Superseded alice-tz9 by alice-zone: alice-tz9 stays readable, pointing at alice-zone.\n"
    )


def test_the_cli_contradiction_shows_in_the_gate_and_the_hygiene_report(retain: Retain) -> None:
    plant_in(retain.home)
    said = retain.ok("decide", "alice-tz", "contradict", "--target", "alice-tz9").stdout
    assert "Recorded that alice-tz and alice-tz9 contradict each other." in said
    assert "Conflict signalled: alice-tz contradicts in knowledge_graph." in said
    gate = retain.json("gate", "alice-tz", "contradicts")
    assert gate["contested"] and gate["conflicts"][0]["store"] == "knowledge_graph"
    report = retain.json("hygiene")
    assert report["sections"]["contradictions"]["count"] == 1
    assert report["sections"]["conflicts"]["count"] == 1
    (pair,) = report["sections"]["contradictions"]["items"]
    assert {pair["first"]["name"], pair["second"]["name"]} == {"alice-tz", "alice-tz9"}
    assert "Open contradictions: 1" in retain.ok("hygiene").stdout
    kept = retain.ok("decide", "alice-tz", "keep", "--target", "alice-tz9").stdout
    assert "Kept both alice-tz and alice-tz9." in kept
    assert "Conflict cleared: alice-tz contradicts in knowledge_graph." in kept
    assert not retain.json("gate", "alice-tz", "contradicts")["contested"]


def test_the_cli_dedup_lists_the_planted_pair_for_review(retain: Retain) -> None:
    ids = plant_in(retain.home)
    found = retain.json("dedup")
    assert found["compared"] == 4 and found["linked"] == len(found["pairs"]) >= 1
    pairs = {frozenset((p["first"]["id"], p["second"]["id"])): p for p in found["pairs"]}
    planted = pairs[frozenset((ids["alice-tz"], ids["alice-zone"]))]
    assert planted["new"] and planted["relation"]["open"]
    assert planted["score"] >= found["threshold"] == graph.THRESHOLD
    assert ids["deploys"] not in {i for pair in pairs for i in pair}
    text = retain.ok("dedup").stdout  # listed again, linked once
    assert "0 new pairs linked" in text
    assert ALICE in text and NEAR_COPY in text
    first, second = planted["first"]["id"], planted["second"]["id"]
    assert f"retain decide {first} ACTION --target {second}" in text
    strict = retain.json("dedup", "--threshold", "1")
    assert strict["threshold"] == 1.0 and strict["linked"] == 0
    retain.refused(
        "dedup",
        "--threshold",
        "0",
        status=INVALID,
        code="invalid_value",
        remedy=str(graph.THRESHOLD),
    )
    assert retain("dedup", "--threshold", "most").exit_code == 2  # not a number: usage


def test_the_cli_dedup_flags_details_only_one_side_names(retain: Retain) -> None:
    ids = plant_in(retain.home)
    found = retain.json("dedup", "--threshold", "0.3")
    pairs = {frozenset((p["first"]["id"], p["second"]["id"])): p for p in found["pairs"]}
    changed = pairs[frozenset((ids["alice-tz"], ids["alice-tz9"]))]
    assert sorted(changed["differs"]) == [["+8"], ["+9"]]
    assert changed["score"] < changed["cosine"]
    text = retain.ok("dedup", "--threshold", "0.3").stdout
    assert "possible contradiction" in text


def test_the_cli_lists_every_type_of_edge_it_may_be_shown() -> None:
    assert sorted(graph_commands.EDGE_ORDER) == sorted(graph.TYPES)


def test_the_cli_dedup_draws_a_progress_bar(
    retain: Retain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass reports its phases to the progress bar every long command draws (on a
    terminal's stderr: here, a recorder in its place)."""
    plant_in(retain.home)
    seen: list[tuple[str, int, int]] = []

    @contextlib.contextmanager
    def recorder() -> Iterator[Any]:
        yield lambda phase, done, total: seen.append((phase, done, total))

    monkeypatch.setattr(graph_commands, "progress_bar", recorder)
    retain.ok("dedup")
    assert {phase for phase, _, _ in seen} == {"embed", "compare"}
    assert seen[-1] == ("compare", 4, 4)


def test_the_cli_hygiene_reports_every_section_and_exits_zero(retain: Retain) -> None:
    plant_in(retain.home)
    retain.ok("add", "runbook", "-d", "the runbook", "--reference", "nowhere")
    retain.ok("dedup")
    report = retain.json("hygiene")
    assert list(report["sections"]) == list(hygiene.SECTIONS)
    assert report["unverified_for"] == "90d" and report["expiring_within"] == "7d"
    assert not report["clean"]
    assert report["sections"]["dangling_references"]["items"][0]["reference"] == "nowhere"
    assert report["sections"]["near_duplicates"]["count"] >= 1
    result = retain("hygiene")
    assert result.exit_code == 0  # a report, whatever it finds
    assert "References that name no memory: 1" in result.stdout and "nowhere" in result.stdout
    assert "Not verified for 90d: 0" in result.stdout
    limited = retain.json("hygiene", "--limit", "1", "--unverified", "1s", "--expiring", "2w")
    assert limited["unverified_for"] == "1s" and limited["expiring_within"] == "2w"
    assert all(len(s["items"]) <= 1 for s in limited["sections"].values())
    retain.refused(
        "hygiene", "--unverified", "soon", status=INVALID, code="invalid_time", remedy="90d"
    )
    retain.refused("hygiene", "--limit", "0", status=INVALID, code="invalid_value", remedy="")
    retain.refused(
        "hygiene", "--as", "app:ci", status=ACCESS_DENIED, code="access_denied",
        remedy="`--as steward`",
    )  # fmt: skip


def test_the_cli_says_a_clean_store_is_clean(retain: Retain) -> None:
    retain.ok("project", "list")  # a store, empty
    assert "Clean: nothing needs attention." in retain.ok("hygiene").stdout
    assert retain.json("hygiene")["clean"] is True


# -- REST -----------------------------------------------------------------------------------

TOKENS = {"op": "operator:alice", "st": "steward", "app": "app:records", "ag": "agent:ada"}


def as_(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def client(make_service: ServiceFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    operator = make_service()
    operator.add_agent("ada")
    ids = plant(operator)
    with TestClient(http.create_app(operator, tokens=TOKENS)) as client:
        yield client, ids


def code_of(response: Any) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_the_rest_graph_of_an_unknown_memory_is_404(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    web, _ = client
    for unknown in (UNKNOWN, "no-such-memory"):
        missing = web.get(f"/v1/memories/{unknown}/graph", headers=as_("op"))
        assert code_of(missing) == (404, "not_found")
        assert "GET /v1/memories" in missing.json()["error"]["remedy"]


def test_the_rest_links_and_the_graph_shows_the_edge(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    web, ids = client
    body = {"source": "deploys", "target": ids["alice-tz"], "type": "derived_from"}
    made = web.post("/v1/relations", headers=as_("st"), json={**body, "reason": "from it"})
    assert made.status_code == 201 and made.json()["changed"]
    assert made.json()["relation"]["principal"] == "steward"
    again = web.post("/v1/relations", headers=as_("st"), json=body)
    assert again.status_code == 200 and not again.json()["changed"]
    seen = web.get("/v1/memories/deploys/graph", headers=as_("ag"))  # anyone reads it
    assert seen.status_code == 200
    assert edges(seen.json(), "outgoing") == {("derived_from", "alice-tz")}
    assert edges(seen.json(), "incoming") == set()
    refused = web.post("/v1/relations", headers=as_("op"), json={**body, "type": "references"})
    assert code_of(refused) == (400, "invalid_value")
    assert refused.json()["error"]["details"]["field"] == "type"
    assert code_of(web.post("/v1/relations", headers=as_("app"), json=body)) == (
        403, "access_denied",
    )  # fmt: skip
    assert code_of(web.post("/v1/relations", headers=as_("op"), json={**body, "kind": "x"})) == (
        400, "invalid_value",
    )  # fmt: skip


def test_the_rest_decides_a_supersede_and_a_contradiction(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    web, ids = client
    route = "/v1/memories/alice-tz/decide"
    superseded = web.post(
        route, headers=as_("op"), json={"action": "supersede", "target": "alice-zone"}
    )
    assert superseded.status_code == 201
    assert superseded.json()["relation"]["type"] == "supersedes"
    older = web.get("/v1/memories/alice-tz", headers=as_("op")).json()
    assert older["status"] == "superseded" and older["superseded_by"] == ids["alice-zone"]
    again = web.post(route, headers=as_("op"), json={"action": "supersede", "target": "alice-zone"})
    assert code_of(again) == (409, "not_active")
    keep = {"action": "keep", "target": "alice-zone"}
    assert code_of(web.post(route, headers=as_("op"), json=keep)) == (409, "not_active")
    contradict = {"action": "contradict", "target": "alice-tz9", "reason": "which zone?"}
    raised = web.post("/v1/memories/alice-zone/decide", headers=as_("st"), json=contradict)
    assert raised.status_code == 201 and raised.json()["conflict"]["active"]
    kept = {"action": "keep", "target": "alice-tz9"}
    assert (
        web.post("/v1/memories/alice-zone/decide", headers=as_("st"), json=kept).status_code == 201
    )
    unchanged = web.post("/v1/memories/alice-zone/decide", headers=as_("st"), json=kept)
    assert unchanged.status_code == 200 and unchanged.json()["receipt"] is None
    raised = web.post("/v1/memories/alice-zone/decide", headers=as_("st"), json=contradict)
    assert raised.json()["conflict"]["active"]
    key = raised.json()["conflict"]
    gate = web.get(
        "/v1/gate", headers=as_("ag"), params={"subject": key["entity"], "predicate": key["topic"]}
    )
    assert gate.json()["contested"]
    report = web.get("/v1/hygiene", headers=as_("st")).json()
    assert report["sections"]["conflicts"]["count"] == 1
    assert report["sections"]["contradictions"]["count"] == 1
    assert code_of(
        web.post("/v1/memories/alice-zone/decide", headers=as_("op"), json={"action": "merge",
                 "target": "alice-tz9"})
    ) == (400, "invalid_value")  # fmt: skip
    assert code_of(
        web.post(f"/v1/memories/{UNKNOWN}/decide", headers=as_("op"), json=contradict)
    ) == (404, "not_found")


def test_the_rest_dedup_lists_the_planted_pair(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    web, ids = client
    found = web.post("/v1/dedup", headers=as_("app"))  # no body: the defaults
    assert found.status_code == 200
    pairs = {frozenset((p["first"]["id"], p["second"]["id"])) for p in found.json()["pairs"]}
    assert frozenset((ids["alice-tz"], ids["alice-zone"])) in pairs
    strict = web.post("/v1/dedup", headers=as_("op"), json={"threshold": 1, "project": ""})
    assert strict.status_code == 200 and strict.json()["threshold"] == 1.0
    assert code_of(web.post("/v1/dedup", headers=as_("op"), json={"threshold": 0})) == (
        400, "invalid_value",
    )  # fmt: skip
    assert code_of(web.post("/v1/dedup", headers=as_("ag"))) == (403, "access_denied")


def test_the_rest_hygiene_has_every_section(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    web, _ = client
    report = web.get("/v1/hygiene", headers=as_("op"), params={"limit": 5})
    assert report.status_code == 200
    assert list(report.json()["sections"]) == list(hygiene.SECTIONS)
    periods = {"unverified": "1s", "expiring": "2w"}
    assert web.get("/v1/hygiene", headers=as_("op"), params=periods).json()["expiring_within"] == (
        "2w"
    )
    bad = web.get("/v1/hygiene", headers=as_("op"), params={"unverified": "soon"})
    assert code_of(bad) == (400, "invalid_time")
    assert code_of(web.get("/v1/hygiene", headers=as_("op"), params={"limit": 0})) == (
        400, "invalid_value",
    )  # fmt: skip
    assert code_of(web.get("/v1/hygiene", headers=as_("app"))) == (403, "access_denied")


# -- MCP ------------------------------------------------------------------------------------


def test_the_tools_are_offered_as_the_policy_table_says(service: MemoryService) -> None:
    assert set(listed(operator_server(service))) >= TOOLS
    assert set(listed(operator_server(service, "steward"))) >= TOOLS
    assert set(listed(operator_server(service, "app:ci"))) & TOOLS == {
        "memory_graph", "memory_dedup",
    }  # fmt: skip
    assert set(listed(as_agent(service))) & TOOLS == {"memory_graph"}


def test_the_hints_say_what_each_tool_does_to_the_store(service: MemoryService) -> None:
    tools = listed(operator_server(service))
    hints = {name: tools[name].annotations for name in TOOLS}
    read_only = {n for n, h in hints.items() if h is not None and h.read_only_hint}
    destructive = {n for n, h in hints.items() if h is not None and h.destructive_hint}
    assert read_only == {"memory_graph", "memory_hygiene"}
    assert destructive == {"memory_link", "memory_decide"}  # a supersede retires a memory
    dedup = hints["memory_dedup"]
    assert dedup is not None and dedup.idempotent_hint  # a second pass links nothing new


def test_the_graph_tool_fails_loudly_on_an_unknown_memory(service: MemoryService) -> None:
    plant(service)
    for server in (operator_server(service), as_agent(service)):
        refused = call(server, "memory_graph", {"memory": UNKNOWN})
        assert refused.is_error and refused.structured_content is not None
        assert refused.structured_content["error"]["code"] == "not_found"
        assert "memory_search" in refused.structured_content["error"]["remedy"]


def test_the_tools_answer_as_their_output_schemas_say(service: MemoryService) -> None:
    ids = plant(service)
    service.write("runbook", description="the runbook", references=["nowhere"])
    op = operator_server(service)
    schemas = {n: t.output_schema for n, t in listed(op).items()}
    steps: list[tuple[str, dict[str, Any]]] = [
        ("memory_dedup", {}),
        ("memory_link", {"source": "deploys", "target": "runbook", "type": "derived_from"}),
        ("memory_decide", {"memory": "alice-tz", "action": "contradict", "target": "alice-tz9"}),
        ("memory_hygiene", {"limit": 3}),
        ("memory_graph", {"memory": "alice-tz"}),
        ("memory_graph", {"memory": "runbook"}),  # a reference that names no memory
        ("memory_decide", {"memory": "alice-tz", "action": "keep", "target": "alice-tz9"}),
        ("memory_decide", {"memory": "alice-tz", "action": "supersede", "target": "alice-zone"}),
        ("memory_graph", {"memory": ids["alice-tz"]}),
        ("memory_dedup", {"threshold": 0.5, "project": ""}),
    ]
    results = {}
    for tool, arguments in steps:
        result = call(op, tool, arguments)
        assert not result.is_error, (tool, result.content)
        schema = schemas[tool]
        assert schema is not None
        fits(schema, result.structured_content)
        results[tool, json.dumps(arguments, sort_keys=True)] = result.structured_content
    report = results["memory_hygiene", '{"limit": 3}']
    assert list(report["sections"]) == list(hygiene.SECTIONS)
    for name in ("dangling_references", "contradictions", "conflicts", "near_duplicates"):
        assert report["sections"][name]["count"] >= 1, name
    retired = results["memory_graph", json.dumps({"memory": ids["alice-tz"]})]
    assert retired["memory"]["superseded_by"] == ids["alice-zone"]
    assert ("supersedes", "alice-zone") in edges(retired, "incoming")


def test_a_contradiction_over_mcp_is_what_the_gate_reports(service: MemoryService) -> None:
    plant(service)
    op, agent = operator_server(service), as_agent(service)
    decided = call(
        op, "memory_decide", {"memory": "alice-tz", "action": "contradict", "target": "alice-tz9"}
    )
    assert not decided.is_error and decided.structured_content is not None
    key = decided.structured_content["conflict"]
    gate = call(agent, "memory_gate", {"subject": key["entity"], "predicate": key["topic"]})
    assert gate.structured_content is not None and gate.structured_content["contested"]
    refused = call(agent, "memory_decide", {"memory": "alice-tz", "action": "keep",
                                            "target": "alice-tz9"})  # fmt: skip
    assert refused.is_error and refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "access_denied"
    bad = call(op, "memory_link", {"source": "alice-tz", "target": "alice-tz9",
                                   "type": "references"})  # fmt: skip
    assert bad.structured_content is not None
    assert bad.structured_content["error"]["code"] == "invalid_value"
