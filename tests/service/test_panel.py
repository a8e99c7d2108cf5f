"""The console's verbs (issue 22): the records newest-updated first a keyset page at a
time, one record with its supersede chain, the overview and the timeline, each through
the reader's view; what the view covers but may not read is given withheld, never
matched by a text filter, and never pretended away.
"""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory

from retain.chrono import ManualClock
from retain.config import AccessSettings, Settings
from retain.errors import AccessDenied, InvalidName, InvalidValue, NotFound
from retain.grants import Grant
from retain.model import Memory
from retain.service import MemoryService

HELD = Settings(llm_writes="quarantined")  # every agent write waits for review
OPEN_DOOR = Settings(anonymous_writes=True)  # an anonymous write waits for review


@pytest.fixture
def operator(make_service: ServiceFactory) -> MemoryService:
    service = make_service(principal="operator:ann")
    service.add_agent("ada")
    service.add_agent("bob")
    service.add_project("web")
    return service


def ids(rows: object) -> list[str]:
    return [row.memory.id for row in rows]  # type: ignore[attr-defined]


def test_records_come_newest_updated_first_a_page_at_a_time(
    operator: MemoryService, clock: ManualClock
) -> None:
    written = []
    for n in range(7):
        written.append(operator.write(f"note-{n}", description=f"note {n}", body="x" * n).memory)
        clock.advance(seconds=1)
    operator.edit("note-2", "xx", "changed")  # updated last: first now
    seen: list[str] = []
    cursor = None
    while True:
        page = operator.records(limit=3, cursor=cursor)
        assert len(page.rows) <= 3
        seen += ids(page.rows)
        if page.next_cursor is None:
            break
        assert page.next_cursor != cursor  # the cursor always moves
        cursor = page.next_cursor
    expected = [written[2].id] + [m.id for m in reversed(written) if m.id != written[2].id]
    assert seen == expected
    row = operator.records(limit=1).rows[0].to_dict()
    assert "body" not in row and row["body_bytes"] == len("changed")


def test_a_full_last_page_has_no_cursor(operator: MemoryService) -> None:
    for n in range(4):
        operator.write(f"n{n}", description="d", body="b")
    assert operator.records(limit=4).next_cursor is None
    first = operator.records(limit=2)
    assert first.next_cursor is not None
    assert operator.records(limit=2, cursor=first.next_cursor).next_cursor is None


def test_filters_keep_scope_status_trust_tag_and_text(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    operator.write(
        "deploy", description="How we deploy", body="Use the BLUE pipeline", tags=["ops"]
    )
    operator.write("style", description="code style", body="black", project="web")
    ada = make_service(principal="agent:ada")
    was = ada.remember("ada likes tea")
    own = ada.update(was.id, "ada likes green tea")
    assert [r.memory.name for r in operator.records(scope="project:web").rows] == ["style"]
    assert ids(operator.records(identity="agent:ada").rows) == [own.id, was.id]
    assert ids(operator.records(status="superseded").rows) == [was.id]
    assert ids(operator.records(identity="agent:ada", status="active").rows) == [own.id]
    assert [r.memory.name for r in operator.records(tag="ops").rows] == ["deploy"]
    assert [r.memory.name for r in operator.records(text="blue pipe").rows] == ["deploy"]
    assert [r.memory.name for r in operator.records(text="how WE").rows] == ["deploy"]
    assert ids(operator.records(trust="observed").rows) == [own.id, was.id]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"status": "gone"}, "status"),
        ({"trust": "sure"}, "trust"),
        ({"cursor": "yesterday"}, "cursor"),
        ({"cursor": "MjAyNi0wMy0wMVQxMjowMDowMFo"}, "cursor"),  # a stamp and no id
        ({"scope": "nowhere"}, "scope"),
        ({"scope": "global", "identity": "agent:ada"}, "identity"),
        ({"identity": "ada"}, "identity"),
        ({"text": ""}, "text"),
        ({"limit": 0}, "limit"),
    ],
)
def test_a_bad_filter_is_refused_by_name(
    operator: MemoryService, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidValue) as refused:
        operator.records(**kwargs)  # type: ignore[arg-type]
    assert refused.value.details.get("field") == field


def test_a_bad_identity_is_refused(operator: MemoryService) -> None:
    with pytest.raises(InvalidName):
        operator.records(identity="agent:no such/agent")


def held(make_service: ServiceFactory, text: str = "the vault code is 1234") -> Memory:
    return make_service(principal="agent:ada", settings=HELD).remember(text)


def test_a_quarantined_row_is_withheld_from_a_reader_who_may_not_review_it(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    waiting = held(make_service)
    ada = make_service(principal="agent:ada", settings=HELD)
    (row,) = ada.records().rows
    assert row.withheld and row.memory.id == waiting.id
    shown = row.to_dict()
    assert shown["withheld"] and shown["needs"] == "memory.quarantine.review"
    assert "name" not in shown and "description" not in shown and "body_bytes" not in shown
    assert ada.records().withheld == 1
    # its content is never matched for the reader: the filter says it did not search it
    filtered = ada.records(text="vault")
    assert filtered.rows == () and filtered.unsearched
    # the reviewer reads it whole, and matches it
    (whole,) = operator.records(text="vault").rows
    assert not whole.withheld and not operator.records(text="vault").unsearched
    # a reader whose view does not cover the scope is not told it exists
    assert make_service(principal="agent:bob").records().rows == ()
    assert make_service(principal="app:ci").records(scope="agent:ada").rows == ()


def test_a_record_is_whole_withheld_or_not_found(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    waiting = held(make_service)
    whole = operator.record(waiting.id)
    assert not whole.record.withheld and whole.memory.body == waiting.body
    assert whole.to_dict()["record"]["content_hash"] == waiting.content_hash
    withheld = make_service(principal="agent:ada").record(waiting.id)
    assert withheld.record.withheld
    shown = withheld.to_dict()["record"]
    assert "body" not in shown and shown["status"] == "quarantined"
    for stranger in ("agent:bob", "app:ci"):
        with pytest.raises(NotFound):
            make_service(principal=stranger).record(waiting.id)
    with pytest.raises(NotFound):
        operator.record("01NOSUCHRECORD")


def test_a_record_shows_its_supersede_chain(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    ada = make_service(principal="agent:ada")
    first = ada.remember("tea at 3")
    second = ada.update(first.id, "tea at 4")
    third = ada.update(second.id, "tea at 5")
    middle = operator.record(second.id)
    assert ids(middle.ancestors) == [first.id]
    assert ids(middle.successors) == [third.id]
    assert ids(operator.record(third.id).ancestors) == [second.id, first.id]
    assert ids(operator.record(first.id).successors) == [second.id, third.id]
    assert operator.record(first.id).memory.superseded_by == second.id


def test_the_overview_counts_each_scope_as_the_view_sees_it(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    operator.write("a", description="d", body="12345")
    operator.write("b", description="d", body="123", project="web", load="inline")
    make_service(principal="anonymous", settings=OPEN_DOOR).write("tip", description="d", body="x")
    held(make_service)
    seen = {s.scope: s for s in operator.overview().scopes}
    assert seen["global"].statuses == {"active": 1, "quarantined": 1}
    assert seen["global"].body_bytes == 6 and seen["global"].withheld == 0
    assert seen["agent:ada"].statuses == {"quarantined": 1}
    assert seen["project:web"].trusts == {"attested": 1}
    app = {s.scope: s for s in make_service(principal="app:ci").overview().scopes}
    assert "agent:ada" not in app  # outside its view: not given
    assert app["global"].statuses == {"active": 1} and app["global"].withheld == 1
    assert app["global"].body_bytes == 5
    bands = {b.project: b for b in operator.overview().bands}
    assert bands["web"].inline_bytes >= 3 and bands["web"].budget > 0
    with pytest.raises(AccessDenied):
        make_service(principal="agent:ada").overview()


def test_the_overview_counts_writes_and_quarantines_by_day(
    operator: MemoryService, make_service: ServiceFactory, clock: ManualClock
) -> None:
    operator.write("a", description="d", body="b")
    clock.advance(days=1)
    operator.edit("a", "b", "c")
    held(make_service)
    days = operator.overview(days=3).days
    assert [d.day for d in days] == [
        (clock.current.date().fromordinal(clock.current.date().toordinal() - n)).isoformat()
        for n in (2, 1, 0)
    ]
    assert [(d.writes, d.quarantines) for d in days] == [(0, 0), (1, 0), (2, 1)]
    with pytest.raises(InvalidValue):
        operator.overview(days=0)


def test_the_timeline_reads_the_log_newest_first(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    for n in range(3):
        operator.write(f"t{n}", description="d", body="b")
    waiting = held(make_service)
    newest = operator.timeline(limit=2)
    assert [e.seq for e in newest] == sorted((e.seq for e in newest), reverse=True)
    older = operator.timeline(limit=100, before=newest[-1].seq)
    assert all(e.seq < newest[-1].seq for e in older)
    quarantines = operator.timeline(kinds=("quarantine",))
    assert [e.memory_id for e in quarantines] == [waiting.id]
    (about,) = make_service(principal="app:ci").timeline(kinds=("quarantine",))
    assert about.withheld and about.payload is None
    with pytest.raises(AccessDenied):
        make_service(principal="agent:ada").timeline()


def test_a_filter_never_tells_a_reader_who_may_not_review_what_held_content_says(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    """An operator under access control without memory.quarantine.review: a text filter
    leaves reviewer-only rows out whatever they say, so whether one matched is not told."""
    held(make_service, "the vault code is 1234")
    grants = tuple(
        Grant(who, action, "realm:default", id=f"config:{n}")
        for n, (who, action) in enumerate(
            [("operator:ann", "realm.admin"), ("operator:ann", "memory.read"),
             ("operator:bob", "memory.read")], start=1,
        )
    )  # fmt: skip
    controlled = Settings(access=AccessSettings(control=True, grants=grants))
    bob = make_service(principal="operator:bob", settings=controlled)
    matched, missed = bob.records(text="vault code"), bob.records(text="nothing like it")
    assert matched.rows == missed.rows == ()
    assert matched.unsearched and missed.unsearched
    (row,) = bob.records().rows  # unfiltered, it is there, withheld
    assert row.withheld


def test_a_withheld_record_keeps_its_place_in_the_chain(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    ada = make_service(principal="agent:ada")
    kept = ada.remember("the door code is 42")
    update = make_service(principal="agent:ada", settings=HELD).update(kept.id, "it is 43")
    seen = ada.record(kept.id)
    (claimant,) = seen.successors
    assert claimant.withheld and claimant.memory.id == update.id
    assert claimant.to_dict()["supersedes"] == kept.id
    assert ids(ada.record(update.id).ancestors) == [kept.id]


def test_a_released_original_names_its_successor(
    operator: MemoryService, make_service: ServiceFactory
) -> None:
    waiting = held(make_service)
    operator.review(waiting.id, "release", waiting.content_hash)
    origin = operator.record(waiting.id)
    assert origin.memory.status.value == "discarded"
    assert ids(origin.derived) == [f"{waiting.id}-released"]
    assert origin.to_dict()["derived"][0]["id"] == f"{waiting.id}-released"
