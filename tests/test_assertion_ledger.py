"""The assertion ledger (the seed's "Indexing", "Querying", "Conflict detection" and
"Memory store info") and the gate over it, on both backends: normalisation, the
substring query, conflict signals one per key, store counts, the gate contested and
resolved, the view, access grants, and refusals that write nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conftest import ServiceFactory, raw_sql, store_state

from retain import errors
from retain.assertions import STORES
from retain.chrono import ManualClock
from retain.config import AccessSettings, Settings
from retain.grants import Grant
from retain.model import Status
from retain.service import MemoryService

RUNBOOK = "Production deploys require approval."


def counts(service: MemoryService) -> dict[str, int]:
    return {info.store: info.record_count for info in service.stores()}


def facts_of(service: MemoryService, **filters: Any) -> list[str]:
    return [a.fact for a in service.query(**filters).assertions]


def test_an_assertion_is_a_fact_with_its_key_normalised(service: MemoryService) -> None:
    done = service.index(
        "  Identity:OPS ", " DEPLOYMENT\t", " Knowledge_Graph ", f"  {RUNBOOK} ",
        metadata={"source": "runbook"},
    )  # fmt: skip
    a = done.assertion
    assert a is not None and done.conflict is None
    assert (a.entity, a.topic, a.store, a.fact) == (
        "identity:ops", "deployment", "knowledge_graph", RUNBOOK,
    )  # fmt: skip
    assert a.metadata == {"source": "runbook"} and a.scope == "global"
    # It is a fact of the store: read as one, with its create event.
    (held,) = service.fact_read("identity:ops", "deployment")
    assert (held.id, held.value, held.status) == (a.id, RUNBOOK, Status.ACTIVE)
    (created,) = [e for e in service.events(limit=1000) if e.memory_id == a.id]
    assert created.kind == "create"
    # The store, the topic and the caller's metadata are kept under the ledger's own key,
    # so that no key of the caller's can pose as the store's (provenance, redacted).
    ((kept,),) = raw_sql(service, "SELECT metadata FROM memories WHERE id = ?", (a.id,))
    kept = json.loads(kept) if isinstance(kept, str) else kept
    assert kept == {"ledger": {"store": "knowledge_graph", "topic": "deployment",
                               "metadata": {"source": "runbook"}}}  # fmt: skip


def test_only_ascii_capitals_are_folded(service: MemoryService) -> None:
    service.index("Équipe", "Leader", "vector", "Zoé")
    assert facts_of(service, entity="ÉQUIPE") == ["Zoé"]  # A-Z folded: É stays É
    assert facts_of(service, entity="équipe") == []  # not Unicode case
    assert facts_of(service, entity="Équipe", topic="LEADER") == ["Zoé"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"entity": "  ", "topic": "t", "store": "vector", "fact": "x"}, "entity"),
        ({"entity": "e", "topic": " \t", "store": "vector", "fact": "x"}, "topic"),
        ({"entity": "e", "topic": "t" * 101, "store": "vector", "fact": "x"}, "topic"),
        ({"entity": "e" * 201, "topic": "t", "store": "vector", "fact": "x"}, "entity"),
        ({"entity": "e", "topic": "a\nb", "store": "vector", "fact": "x"}, "topic"),
        ({"entity": "e", "topic": "t", "store": "graph", "fact": "x"}, "store"),
        ({"entity": "e", "topic": "t", "store": "", "fact": "x"}, "store"),
        ({"entity": "e", "topic": "t", "store": "vector", "fact": "   "}, "fact"),
        ({"entity": "e", "topic": "t", "store": "vector"}, "fact"),  # neither fact nor conflict
        ({"entity": "e", "topic": "t", "store": "vector", "metadata": {"a": 1},
          "conflict": True}, "metadata"),  # a signal keeps no metadata
        ({"entity": "e", "topic": "t", "store": "vector", "fact": "x",
          "conflict_reason": "why"}, "conflict_reason"),  # a reason needs conflict
        ({"entity": "e", "topic": "t", "store": "vector", "fact": "x",
          "metadata": {"a": {1, 2}}}, "metadata"),  # not JSON
        ({"entity": "e", "topic": "t", "store": "vector", "fact": "x",
          "metadata": {"a": "x" * 10_001}}, "metadata"),  # too much
        ({"entity": "e", "topic": "t", "store": "vector", "fact": "x",
          "metadata": {"a": ["b\x00"]}}, "metadata"),  # a NUL, written by JSON as an escape
    ],
)  # fmt: skip
def test_a_bad_index_is_refused_and_writes_nothing(
    service: MemoryService, arguments: dict[str, Any], field: str
) -> None:
    service.index("e", "t", "vector", "kept")
    before = store_state(service), service.query()
    with pytest.raises(errors.InvalidValue) as caught:
        service.index(**arguments)
    assert caught.value.code == "invalid_value" and caught.value.details["field"] == field
    assert (store_state(service), service.query()) == before


def test_an_unsupported_store_is_named_with_the_five(service: MemoryService) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        service.index("e", "t", "graph", "x")
    assert caught.value.details["stores"] == list(STORES)
    assert all(store in caught.value.remedy for store in STORES)


def test_empty_and_unsupported_filters_are_absent(service: MemoryService) -> None:
    service.index("a", "t", "vector", "one")
    service.index("b", "t", "document", "two")
    everything = ["one", "two"]
    assert facts_of(service) == everything
    assert facts_of(service, store="nope") == everything  # unsupported: no filter
    assert facts_of(service, entity="  ", topic="", store=" ") == everything
    assert facts_of(service, store=" DOCUMENT ") == ["two"]
    assert facts_of(service, entity="nobody") == []


def test_query_is_a_case_insensitive_substring_of_each_field(service: MemoryService) -> None:
    service.index("identity:ops", "deployment", "knowledge_graph", RUNBOOK)
    service.index("service:billing", "owner", "key_value", "Team Ledger")
    service.index("service:search", "latency", "timeline", "p99 is 40ms", conflict=True,
                  conflict_reason="Two Dashboards disagree")  # fmt: skip
    assert facts_of(service, query="OPS") == [RUNBOOK]  # the entity
    assert facts_of(service, query="Own") == ["Team Ledger"]  # the topic
    assert facts_of(service, query="APPROVAL") == [RUNBOOK]  # the fact
    assert facts_of(service, query="zzz") == []
    # a signal's reason stands where an assertion's fact does
    assert [c.entity for c in service.query(query="dashboards").conflicts] == ["service:search"]
    assert service.query(query="40ms").conflicts == []
    assert [c.entity for c in service.query(query="SEARCH").conflicts] == ["service:search"]
    # exact filters first, then the substring
    assert facts_of(service, store="key_value", query="approval") == []


def test_assertions_accumulate_on_one_key(service: MemoryService) -> None:
    first = service.index("identity:ops", "deployment", "vector", "needs approval").assertion
    second = service.index("identity:ops", "deployment", "vector", "needs approval").assertion
    third = service.index("identity:ops", "deployment", "vector", "needs two").assertion
    assert first and second and third
    assert facts_of(service) == ["needs approval", "needs approval", "needs two"]
    history = service.fact_history("identity:ops", "deployment")
    assert [f.status for f in history] == [Status.ACTIVE] * 3  # none superseded another
    assert {f.supersedes for f in history} == {None}


def test_a_conflict_only_write_records_the_signal_and_no_fact(
    service: MemoryService, clock: ManualClock
) -> None:
    before = service.list_memories()
    done = service.index("identity:ops", "deployment", "knowledge_graph", conflict=True,
                         conflict_reason="runbook and wiki differ")  # fmt: skip
    assert done.assertion is None and done.conflict_changed
    assert done.conflict is not None and done.conflict.active
    assert service.list_memories() == before
    assert service.fact_read("identity:ops") == []
    found = service.query()
    assert found.assertions == [] and [c.reason for c in found.conflicts] == [
        "runbook and wiki differ"
    ]
    (event,) = [e for e in service.events(limit=1000) if e.kind == "conflict"]
    assert event.memory_id is None and event.reason == "runbook and wiki differ"
    assert event.tx_time == done.conflict.updated_at


def test_a_fact_with_conflict_records_both(service: MemoryService) -> None:
    done = service.index("identity:ops", "deployment", "vector", RUNBOOK, conflict=True)
    assert done.assertion is not None and done.conflict is not None
    found = service.query()
    assert [a.fact for a in found.assertions] == [RUNBOOK]
    assert [(c.store, c.reason) for c in found.conflicts] == [("vector", "")]


def test_one_signal_per_key_a_second_updates_reason_and_time(
    service: MemoryService, clock: ManualClock
) -> None:
    first = service.index("E", "T", "vector", conflict=True, conflict_reason="one").conflict
    clock.advance(minutes=5)
    second = service.index(" e ", "t", "VECTOR", conflict=True, conflict_reason="two").conflict
    assert first is not None and second is not None
    assert second.reason == "two" and second.updated_at > first.updated_at
    (only,) = service.query().conflicts
    assert (only.key, only.reason, only.updated_at) == (("e", "t", "vector"), "two",
                                                        second.updated_at)  # fmt: skip
    service.index("e", "t", "document", conflict=True)  # another store: another key
    assert [c.store for c in service.query().conflicts] == ["document", "vector"]
    rows = raw_sql(service, "SELECT store, reason FROM conflicts ORDER BY store")
    assert [tuple(r) for r in rows] == [("document", ""), ("vector", "two")]
    kinds = [e.kind for e in service.events(limit=1000) if e.kind.startswith("conflict")]
    assert kinds == ["conflict", "conflict", "conflict"]  # every change an event


def test_clearing_a_signal_is_an_event_and_clearing_none_writes_nothing(
    service: MemoryService, clock: ManualClock
) -> None:
    service.index("e", "t", "vector", conflict=True, conflict_reason="disputed")
    clock.advance(minutes=1)
    cleared = service.index("e", "t", "vector", conflict=False, conflict_reason="checked")
    assert cleared.conflict_changed and cleared.conflict is not None
    assert not cleared.conflict.active and cleared.conflict.reason == "disputed"
    assert service.query().conflicts == []
    (event,) = [e for e in service.events(limit=1000) if e.kind == "conflict_clear"]
    assert event.reason == "checked" and event.tx_time == cleared.conflict.updated_at
    before = store_state(service)
    again = service.index("e", "t", "vector", conflict=False)
    assert not again.conflict_changed and store_state(service) == before
    never = service.index("other", "t", "vector", conflict=False)
    assert never.conflict is None and not never.conflict_changed
    assert store_state(service) == before
    # set again: active, with the new reason
    assert service.index("e", "t", "vector", conflict=True).conflict_changed
    assert [c.reason for c in service.query().conflicts] == [""]


def test_stores_count_assertions_and_active_signals(service: MemoryService) -> None:
    assert counts(service) == dict.fromkeys(STORES, 0)
    assert [info.store for info in service.stores()] == list(STORES)
    service.index("a", "t", "knowledge_graph", "one")
    service.index("b", "t", "knowledge_graph", "two", conflict=True)
    service.index("c", "t", "timeline", conflict=True)
    service.index("d", "t", "timeline", conflict=True)
    service.index("d", "t", "timeline", conflict=False)  # cleared: no longer counted
    service.fact_write("z", "t", "a plain fact is no assertion")
    assert counts(service) == {**dict.fromkeys(STORES, 0), "knowledge_graph": 3, "timeline": 1}
    # A fact's new value supersedes the current one of its tier, an assertion as any
    # other: it leaves the ledger (its history keeps it).
    service.fact_write("a", "t", "a new value")
    assert counts(service)["knowledge_graph"] == 2
    assert [f.status for f in service.fact_history("a", "t")] == [
        Status.SUPERSEDED, Status.ACTIVE,
    ]  # fmt: skip


def test_the_gate_is_contested_by_a_signal_until_it_is_cleared(service: MemoryService) -> None:
    service.fact_write("identity:ops", "deployment", RUNBOOK)
    assert not service.gate("identity:ops", "deployment").contested
    service.index("identity:ops", "deployment", "document", conflict=True,
                  conflict_reason="wiki says otherwise")  # fmt: skip
    answer = service.gate(" Identity:Ops ", "DEPLOYMENT")
    assert answer.contested and answer.facts == []  # one value: the facts agree
    assert [(c.store, c.reason) for c in answer.conflicts] == [("document", "wiki says otherwise")]
    assert not service.gate("identity:ops", "rollback").contested  # another key
    service.index("identity:ops", "deployment", "document", conflict=False)
    assert not service.gate("identity:ops", "deployment").contested


def test_the_gate_is_contested_by_two_believed_facts_until_one_is_retracted(
    service: MemoryService, clock: ManualClock
) -> None:
    plain = service.fact_write("bob", "employer", "acme").fact
    clock.advance(minutes=1)
    service.index("bob", "employer", "vector", "acme")  # the same value: no contradiction
    assert not service.gate("bob", "employer").contested
    clock.advance(minutes=1)
    other = service.index("bob", "employer", "knowledge_graph", "globex").assertion
    assert other is not None
    answer = service.gate("Bob", "Employer")
    assert answer.contested and answer.conflicts == []
    assert {f["value"] for f in answer.facts} == {"acme", "globex"}
    assert {f["store"] for f in answer.facts} == {None, "vector", "knowledge_graph"}
    assert plain.id in {f["id"] for f in answer.facts}
    retracted = service.fact_retract("bob", "employer")  # the newest of the tier: globex
    assert retracted.fact.id == other.id and retracted.fact.status is Status.RETRACTED
    assert not service.gate("bob", "employer").contested
    assert [e.kind for e in service.events(limit=1000)][-1] == "retract"


def test_the_gate_counts_facts_of_different_tiers(service: MemoryService) -> None:
    service.add_project("web")
    service.fact_write("site", "host", "alpha")
    service.fact_write("site", "host", "beta", project="web")
    assert service.gate("site", "host").contested
    service.fact_retract("site", "host", project="web")
    assert not service.gate("site", "host").contested


def test_what_the_view_does_not_see_is_not_returned(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_project("web")
    operator.add_agent("ada")
    operator.add_agent("bea")
    operator.index("site", "host", "vector", "alpha")
    operator.index("site", "host", "vector", "beta", project="web")
    ada = operator.acting_as("agent:ada")
    ada.fact_write("site", "host", "gamma")  # ada's own tier
    bea = operator.acting_as("agent:bea")
    assert facts_of(operator) == ["alpha", "beta"]
    assert facts_of(bea) == ["alpha"]  # off the project, the project's tier is out of view
    assert facts_of(bea.acting_as("agent:bea"), project="web") == ["alpha", "beta"]
    assert counts(bea)["vector"] == 1 and counts(operator)["vector"] == 2
    assert not bea.gate("site", "host").contested  # beta and gamma are out of bea's view
    assert bea.gate("site", "host", project="web").contested
    assert ada.gate("site", "host").contested  # its own gamma against alpha
    app = operator.acting_as("app:ci")
    assert facts_of(app) == ["alpha", "beta"]  # the shared tiers
    assert {f["value"] for f in app.gate("site", "host").facts} == {"alpha", "beta"}


def test_an_agent_may_read_the_ledger_but_not_index_it(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("ada")
    ada = operator.acting_as("agent:ada")
    before = store_state(operator)
    with pytest.raises(errors.AccessDenied):
        ada.index("e", "t", "vector", "x")
    assert store_state(operator) == before
    assert ada.query().assertions == []
    steward = operator.acting_as("steward")  # the steward bridges conflict signals
    assert steward.index("e", "t", "vector", conflict=True).conflict_changed
    assert [c.entity for c in ada.query().conflicts] == ["e"]


def _grants(*extra: tuple[str, str, str]) -> Settings:
    given = [("operator:set-up", a, "realm:default")
             for a in ("realm.admin", "memory.read", "memory.write")] + list(extra)  # fmt: skip
    return Settings(
        access=AccessSettings(
            control=True,
            grants=tuple(
                Grant(s, a, on, id=f"config:{n}") for n, (s, a, on) in enumerate(given, 1)
            ),
        )
    )


def test_under_access_control_the_ledger_needs_grants(make_service: ServiceFactory) -> None:
    settings = _grants(
        ("app:reader", "memory.read", "realm:default"),
        ("app:writer", "memory.read", "realm:default"),
        ("app:writer", "memory.write", "realm:default"),
    )
    setup = make_service(settings=settings, principal="operator:set-up")
    setup.index("e", "t", "vector", "x", conflict=True)
    reader = setup.acting_as("app:reader")
    assert facts_of(reader) == ["x"] and len(reader.query().conflicts) == 1
    assert reader.gate("e", "t").contested
    before = store_state(setup)
    with pytest.raises(errors.AccessDenied):
        reader.index("e", "t", "vector", "y")
    assert store_state(setup) == before
    writer = setup.acting_as("app:writer")
    assert writer.index("e", "t", "vector", conflict=False).conflict_changed
    stranger = setup.acting_as("app:stranger")
    with pytest.raises(errors.AccessDenied):
        stranger.query()
    with pytest.raises(errors.AccessDenied):
        stranger.gate("e", "t")


def test_a_signal_survives_a_migration(make_service: ServiceFactory, tmp_path: Any) -> None:
    from retain.storage.sqlite import SqliteBackend

    source = make_service()
    source.index("e", "t", "vector", "x", conflict=True, conflict_reason="why")
    source.index("f", "t", "vector", conflict=True)
    source.index("f", "t", "vector", conflict=False)
    source.migrate_to(SqliteBackend(tmp_path / "copy.db"))
    copy = MemoryService(SqliteBackend(tmp_path / "copy.db"))
    try:
        assert copy.query().to_dict() == source.query().to_dict()
        assert counts(copy) == counts(source)
    finally:
        copy.close()


@pytest.mark.parametrize(
    "given",
    ["vector", " Vector\t", "KEY_VALUE", "knowledge_graph", "\u3000timeline ", "Document",
     "vectors", "graph", "", " ", "key value", "VECTÖR", "vector\x00"],
)  # fmt: skip
def test_the_store_pattern_states_exactly_the_stores_index_takes(given: str) -> None:
    import re

    from retain.assertions import STORE_PATTERN, store_of

    try:
        store_of(given)
        taken = True
    except errors.InvalidValue:
        taken = False
    assert bool(re.fullmatch(STORE_PATTERN, given)) == taken


def test_an_assertion_is_admitted_as_every_write_a_secret_refused(service: MemoryService) -> None:
    service.index("e", "t", "vector", conflict=True)
    before = store_state(service), service.query()
    with pytest.raises(errors.RetainError) as caught:  # the signal with it is not written
        service.index("ci", "token", "key_value", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
                      conflict=True, conflict_reason="leaked")  # fmt: skip
    assert caught.value.code == "secret_detected"
    assert (store_state(service), service.query()) == before


def test_a_forgotten_assertion_leaves_the_ledger_and_the_gate(service: MemoryService) -> None:
    service.index("bob", "employer", "vector", "acme")
    gone = service.index("bob", "employer", "document", "globex").assertion
    assert gone is not None and service.gate("bob", "employer").contested
    service.forget(gone.id, reason="wrong", compact=False)
    assert facts_of(service) == ["acme"]
    assert counts(service)["document"] == 0
    assert not service.gate("bob", "employer").contested
