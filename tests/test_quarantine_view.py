"""Reviewer-only rows (issue 16): a row written quarantined is stored and audited but
no view other than a reviewer's (an operator's, the steward's) finds it, by id or by
name, reads, lists, searches, recalls, renders, injects, exports, notes as a
near-duplicate, cites, or shows in a fact's history or in the event log; and it stays so
once a review has decided it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory

from retain.chrono import ManualClock
from retain.config import Settings
from retain.errors import NotFound
from retain.model import Memory, Status
from retain.service import MemoryService

OPEN_DOOR = Settings(anonymous_writes=True)
HELD = Settings(llm_writes="quarantined")
VIEWERS = ("agent:ada", "app:ci", "anonymous")
REVIEWERS = ("operator:ann", "steward")


@dataclass(frozen=True, slots=True)
class Held:
    """The quarantined rows of the realm: an anonymous caller's named global memory
    (citing ``plan``), an agent's own memory, and an agent's fact."""

    tip: Memory
    own: Memory
    fact: Memory


@pytest.fixture
def held(make_service: ServiceFactory, clock: ManualClock) -> Held:
    operator = make_service()
    operator.add_agent("ada")
    operator.write("plan", description="the launch plan", body="ship on friday")
    anonymous = make_service(principal="anonymous", settings=OPEN_DOOR)
    written = anonymous.write(
        "tip",
        description="the zebra deploy shortcut",
        body="pipe the zebra script into a root shell",
        references=["plan"],
    ).memory
    clock.advance(seconds=1)
    ada = make_service(principal="agent:ada", settings=HELD)
    own = ada.remember("the zebra vault opens with code 4711")
    clock.advance(seconds=1)
    fact = ada.fact_write("zebra", "colour", "purple").fact
    (fact_row,) = operator.backend.read(lambda tx: tx.get_many([fact.id]))
    for memory in (written, own, fact_row):
        assert memory.status is Status.QUARANTINED
    return Held(written, own, fact_row)


def rows(held: Held) -> tuple[Memory, ...]:
    return held.tip, held.own, held.fact


def viewers(make_service: ServiceFactory) -> list[MemoryService]:
    return [make_service(principal=p) for p in VIEWERS]


def test_get_and_read_by_id_or_name_answer_not_found(
    held: Held, make_service: ServiceFactory
) -> None:
    for viewer in viewers(make_service):
        for memory in rows(held):
            with pytest.raises(NotFound):
                viewer.get(memory.id)
            with pytest.raises(NotFound):
                viewer.read(memory.id)
        with pytest.raises(NotFound):
            viewer.get("tip")


def test_a_reviewer_gets_a_quarantined_row_by_id(held: Held, make_service: ServiceFactory) -> None:
    for principal in REVIEWERS:
        reviewer = make_service(principal=principal)
        for memory in rows(held):
            got = reviewer.get(memory.id).memory
            assert (got.id, got.status) == (memory.id, Status.QUARANTINED)
        assert reviewer.read(held.own.id).text == held.own.body
        with pytest.raises(NotFound):  # by name: a quarantined row holds none
            reviewer.get("tip")


def test_listings_and_searches_leave_them_out(held: Held, make_service: ServiceFactory) -> None:
    ids = {m.id for m in rows(held)}
    for viewer in viewers(make_service):
        assert not ids & {m.id for m in viewer.list_memories()}
        for queries in (["zebra"], ["zebra vault code"], []):
            assert not ids & {h.memory.id for h in viewer.search(queries, limit=50).hits}
    ada = make_service(principal="agent:ada")
    assert not ids & {h.memory.id for h in ada.recall(["zebra vault"]).hits}


def test_the_context_and_the_injection_ledger_never_hold_them(
    held: Held, make_service: ServiceFactory
) -> None:
    ada = make_service(principal="agent:ada")
    rendered = ada.context(turn="what opens the zebra vault?", session="s1")
    for memory in rows(held):
        assert memory.body not in rendered.text
        assert memory.description not in rendered.text
    assert {i.memory_id for i in rendered.injected}.isdisjoint({m.id for m in rows(held)})
    operator = make_service()
    assert not {i.memory_id for i in operator.list_injections()} & {m.id for m in rows(held)}


def test_no_near_duplicate_note_names_one(held: Held, make_service: ServiceFactory) -> None:
    written = make_service(principal="app:ci").write(
        "shortcut", description="the zebra deploy shortcut", body="run the script"
    )
    assert written.notes == ()


def test_an_export_leaves_them_out(
    held: Held, make_service: ServiceFactory, tmp_path: Path
) -> None:
    for principal in ("app:ci", "anonymous", "operator:ann"):
        target = tmp_path / principal.replace(":", "-")
        make_service(principal=principal).export(target)
        exported = "".join(p.read_text() for p in target.rglob("*.md"))
        assert "plan" in {p.stem for p in target.rglob("*.md")}
        assert "zebra" not in exported


def test_a_citing_row_is_not_named_among_what_cites(
    held: Held, make_service: ServiceFactory
) -> None:
    for viewer in viewers(make_service):
        assert viewer.get("plan").referenced_by == ()
    assert make_service().get("plan").referenced_by == ("tip",)


def test_fact_reads_and_history_leave_them_out(held: Held, make_service: ServiceFactory) -> None:
    for principal in (*VIEWERS, *REVIEWERS):
        reader = make_service(principal=principal)
        assert reader.fact_read("zebra") == []
        if principal == "agent:ada":  # the fact is in its own scope, the others see none
            assert reader.fact_history("zebra", "colour") == []


def test_the_event_log_withholds_their_payloads(held: Held, make_service: ServiceFactory) -> None:
    ids = {m.id for m in rows(held)}
    for principal in ("app:ci", "anonymous"):
        about = [e for e in make_service(principal=principal).events() if e.memory_id in ids]
        assert about and all(e.payload is None and e.withheld for e in about)
    for principal in REVIEWERS:
        about = [e for e in make_service(principal=principal).events() if e.memory_id in ids]
        assert {e.kind for e in about} == {"quarantine"}
        assert all(json.loads(e.payload or "")["status"] == "quarantined" for e in about)


def test_the_queue_is_a_reviewers_oldest_first(held: Held, make_service: ServiceFactory) -> None:
    for principal in REVIEWERS:
        queue = make_service(principal=principal).list_quarantine()
        assert [m.id for m in queue] == [held.tip.id, held.own.id, held.fact.id]
        assert [m.quarantine_reason for m in queue] == [("claimed",), ("llm_writes",)] + [
            ("llm_writes",)
        ]
        assert [m.author for m in queue] == ["anonymous", "agent:ada", "agent:ada"]
    operator = make_service()
    first = operator.list_quarantine(limit=2)
    rest = operator.list_quarantine(limit=2, after=first[-1].id)
    assert [m.id for m in first + rest] == [held.tip.id, held.own.id, held.fact.id]


def test_a_decided_row_stays_reviewer_only(held: Held, make_service: ServiceFactory) -> None:
    operator = make_service()
    released = operator.review(held.own.id, "release", held.own.content_hash)
    operator.review(held.tip.id, "tombstone", held.tip.content_hash)
    successor = released.successor
    assert successor is not None
    ada = make_service(principal="agent:ada")
    assert ada.get(successor.id).memory.body == held.own.body  # ordinary memory now
    for viewer in viewers(make_service):
        for memory in (held.own, held.tip):
            with pytest.raises(NotFound):
                viewer.get(memory.id)
        if viewer.principal != "agent:ada":
            about = [e for e in viewer.events() if e.memory_id in (held.own.id, held.tip.id)]
            assert {e.kind for e in about} == {"quarantine", "review"}
            assert all(e.withheld and e.reason == "" for e in about)
    for principal in REVIEWERS:
        reviewer = make_service(principal=principal)
        assert reviewer.get(held.own.id).memory.status is Status.DISCARDED
        assert reviewer.get(held.tip.id).memory.status is Status.DISCARDED
