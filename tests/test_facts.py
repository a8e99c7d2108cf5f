"""Facts: write, read on both time axes, history and retraction, on both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.conftest import ServiceFactory

from retain import errors
from retain.chrono import ManualClock, parse_stamp, stamp
from retain.model import Status, Trust
from retain.service import MemoryService


def values(service: MemoryService, subject: str, *args: str, **options: str) -> list[str]:
    return [f.value for f in service.fact_read(subject, *args, **options)]


def test_a_new_value_supersedes_the_current_one_which_holds_until_it_starts(
    service: MemoryService, clock: ManualClock
) -> None:
    first = service.fact_write("Ada", "Employer", "Acme", valid_from="2020-01-01T00:00:00Z")
    assert first.changed and first.other is None
    assert (first.fact.predicate, first.fact.trust, first.fact.status) == (
        "employer",
        Trust.ATTESTED,
        Status.ACTIVE,
    )
    clock.advance(hours=1)
    second = service.fact_write("ada", "employer", "Initech", valid_from="2024-06-01T00:00:00Z")
    assert second.other is not None and second.other.id == first.fact.id
    assert second.fact.supersedes == first.fact.id
    assert second.other.status is Status.SUPERSEDED
    assert second.other.valid_to == parse_stamp("2024-06-01T00:00:00Z")
    assert values(service, "ADA") == ["Initech"]  # the subject is matched ignoring case
    assert values(service, "Ada", "employer", valid_at="2022-01-01") == ["Acme"]
    assert values(service, "Ada", "employer", valid_at="2019-01-01") == []
    # The history keeps both, in the order recorded, the first bounded by the second.
    history = service.fact_history("Ada", "EMPLOYER")
    assert [(f.value, f.status) for f in history] == [
        ("Acme", Status.SUPERSEDED),
        ("Initech", Status.ACTIVE),
    ]
    assert history[0].valid_to == history[1].valid_from
    events = [e.kind for e in service.events(after=0, limit=100)]
    assert events[-3:] == ["create", "create", "supersede"]


def test_known_at_answers_what_the_store_believed_then(
    service: MemoryService, clock: ManualClock
) -> None:
    first = service.fact_write("Ada", "city", "Paris", valid_from="2020-01-01T00:00:00Z")
    before = stamp(first.fact.recorded_at)
    clock.advance(hours=1)
    service.fact_write("Ada", "city", "Lyon", valid_from="2025-01-01T00:00:00Z")
    # Before the second write the store knew Paris, with no end.
    (then,) = service.fact_read("Ada", "city", known_at=before, valid_at="2025-06-01")
    assert (then.value, then.valid_to) == ("Paris", None)
    assert values(service, "Ada", "city", valid_at="2025-06-01") == ["Lyon"]
    assert values(service, "Ada", "city", known_at="2019-01-01T00:00:00Z") == []


def test_a_value_still_to_come_is_refused(service: MemoryService, clock: ManualClock) -> None:
    service.fact_write("Ada", "role", "engineer")
    clock.advance(days=1)
    with pytest.raises(errors.InvalidValue) as caught:
        service.fact_write(
            "Ada", "role", "manager", valid_from=stamp(clock.now().replace(year=2027))
        )
    assert caught.value.details["field"] == "valid_from"
    assert values(service, "Ada", "role", valid_at="2027-06-01") == ["engineer"]


def test_writing_the_current_value_again_writes_nothing(service: MemoryService) -> None:
    first = service.fact_write("Ada", "employer", "Acme")
    dated = service.fact_write("Ada", "city", "Paris", valid_from="2020-01-01T00:00:00Z")
    events = len(service.events(after=0, limit=100))
    again = service.fact_write("Ada", " Employer ", "Acme")
    assert not again.changed and again.fact.id == first.fact.id
    same = service.fact_write("Ada", "city", "Paris", valid_from="2020-01-01T00:00:00Z")
    assert not same.changed and same.fact.id == dated.fact.id
    assert len(service.events(after=0, limit=100)) == events


def test_a_new_value_must_start_after_the_current_one(service: MemoryService) -> None:
    service.fact_write("Ada", "employer", "Acme", valid_from="2024-01-01T00:00:00Z")
    with pytest.raises(errors.InvalidValue) as caught:
        service.fact_write("Ada", "employer", "Initech", valid_from="2023-01-01T00:00:00Z")
    assert caught.value.details["field"] == "valid_from"
    assert values(service, "Ada") == ["Acme"]
    assert len(service.fact_history("Ada", "employer")) == 1


def test_values_written_one_after_another_under_a_frozen_clock_follow_each_other(
    service: MemoryService, clock: ManualClock
) -> None:
    first = service.fact_write("Ada", "city", "Paris")
    second = service.fact_write("Ada", "city", "Lyon")  # the clock has not moved
    assert second.other is not None and second.other.id == first.fact.id
    # Each write is a tick (the finest step a stamp keeps) after the log's last event.
    assert first.fact.recorded_at == clock.now() + timedelta(microseconds=1)
    assert second.fact.recorded_at == first.fact.recorded_at + timedelta(microseconds=1)
    assert second.other.valid_to == second.fact.recorded_at
    assert values(service, "Ada", "city") == ["Lyon"]


def test_a_value_written_after_the_clock_is_set_back_starts_after_the_current_one(
    service: MemoryService, clock: ManualClock
) -> None:
    first = service.fact_write("Ada", "city", "Paris")
    clock.current -= timedelta(hours=1)
    second = service.fact_write("Ada", "city", "Lyon")
    assert second.fact.recorded_at == first.fact.recorded_at + timedelta(microseconds=1)
    assert [f.value for f in service.fact_history("Ada", "city")] == ["Paris", "Lyon"]
    assert service.verify().ok


def test_retracting_brings_back_the_value_it_superseded(
    service: MemoryService, clock: ManualClock
) -> None:
    service.fact_write("Ada", "employer", "Acme", valid_from="2020-01-01T00:00:00Z")
    clock.advance(hours=1)
    service.fact_write("Ada", "employer", "Initech", valid_from="2024-01-01T00:00:00Z")
    believed = stamp(clock.now())
    clock.advance(hours=1)
    change = service.fact_retract("Ada", "employer", reason="a typo")
    assert change.fact.value == "Initech" and change.fact.status is Status.RETRACTED
    assert change.fact.retracted_at == clock.now()
    assert change.other is not None and change.other.value == "Acme"
    assert (change.other.status, change.other.valid_to) == (Status.ACTIVE, None)
    assert values(service, "Ada", "employer") == ["Acme"]
    # Before the retraction, the store believed Initech.
    assert values(service, "Ada", "employer", known_at=believed) == ["Initech"]
    kinds = [(e.kind, e.reason) for e in service.events(after=0, limit=100)][-2:]
    assert kinds == [("retract", "a typo"), ("reinstate", "a typo")]
    # A retracted value is out of search; the value brought back is in it.
    assert [h.memory.body for h in service.search("Ada employer").hits] == ["Acme"]
    service.fact_retract("Ada", "employer")
    assert values(service, "Ada") == []
    with pytest.raises(errors.NotFound):
        service.fact_retract("Ada", "employer")


def test_facts_live_in_a_tier_and_a_reader_sees_its_own(service: MemoryService) -> None:
    service.add_project("web")
    service.fact_write("deploy", "owner", "ops")
    service.fact_write("deploy", "owner", "web team", project="web")
    assert values(service, "deploy", "owner") == ["ops"]
    read = service.fact_read("deploy", "owner", project="web")
    assert [(f.value, f.project) for f in read] == [("ops", None), ("web team", "web")]
    service.fact_retract("deploy", "owner", project="web")
    assert values(service, "deploy", project="web") == ["ops"]
    with pytest.raises(errors.ProjectNotFound):
        service.fact_write("deploy", "owner", "x", project="nope")


def test_an_agent_writes_facts_into_its_own_scope_only(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("ada")
    operator.add_project("web")
    agent = make_service(principal="agent:ada")
    written = agent.fact_write("Bob", "mood", "cheerful").fact
    assert (written.scope, written.trust, written.author) == (
        "agent:ada",
        Trust.OBSERVED,
        "agent:ada",
    )
    assert values(agent, "Bob") == ["cheerful"]
    assert values(operator, "Bob") == []  # not in the operator's view
    with pytest.raises(errors.AccessDenied):
        agent.fact_write("Bob", "mood", "grim", project="web")
    with pytest.raises(errors.AgentNotFound):
        make_service(principal="agent:ghost").fact_write("Bob", "mood", "x")
    with pytest.raises(errors.InvalidValue) as caught:  # only the fact verbs change a fact
        agent.update(written.id, "grim")
    assert caught.value.details["field"] == "id"
    assert values(agent, "Bob") == ["cheerful"]
    agent.forget(written.id)  # and forget, which erases any of its own
    assert values(agent, "Bob") == []


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        (("", "p", "v"), "subject"),
        (("s", "", "v"), "predicate"),
        (("s", "two\nlines", "v"), "predicate"),
        (("s", "p", "  "), "value"),
        (("s", "p" * 101, "v"), "predicate"),
    ],
)
def test_a_fact_needs_a_subject_a_predicate_and_a_value(
    service: MemoryService, arguments: tuple[str, str, str], field: str
) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        service.fact_write(*arguments)
    assert caught.value.details["field"] == field
    assert service.fact_read("s") == []


def test_a_project_whose_facts_are_all_retracted_can_be_removed(service: MemoryService) -> None:
    service.add_project("web")
    service.fact_write("deploy", "owner", "ops", project="web")
    with pytest.raises(errors.ProjectNotEmpty) as caught:
        service.remove_project("web")
    assert "retract its facts" in caught.value.remedy
    service.fact_retract("deploy", "owner", project="web")
    service.remove_project("web")
    assert [p.name for p in service.list_projects()] == []


@pytest.mark.parametrize("verb", ["read", "history", "retract"])
def test_every_fact_verb_needs_a_subject(service: MemoryService, verb: str) -> None:
    call = {
        "read": lambda: service.fact_read(" "),
        "history": lambda: service.fact_history("", "p"),
        "retract": lambda: service.fact_retract("", "p"),
    }[verb]
    with pytest.raises(errors.InvalidValue) as caught:
        call()
    assert caught.value.details["field"] == "subject"


def test_read_times_are_checked(service: MemoryService) -> None:
    with pytest.raises(errors.InvalidTime):
        service.fact_read("Ada", valid_at="yesterday")
    with pytest.raises(errors.InvalidTime):
        service.fact_read("Ada", known_at="2026-13-01")


def test_facts_are_carried_by_an_export_as_records(
    service: MemoryService, tmp_path: object
) -> None:
    service.write("note", description="a note")
    service.fact_write("Ada", "employer", "Acme")
    result = service.export(tmp_path / "snap")  # type: ignore[operator]
    assert (result.memories, result.records, result.left_out) == (1, 1, 0)
