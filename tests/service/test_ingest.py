"""ingest_conversation: a thread's turns written as memories, one a turn, all or none."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import Turn, errors
from retain.chrono import ManualClock
from retain.conversation import MAX_TURNS
from retain.model import Load
from retain.service import MemoryService

TURNS: list[dict[str, Any]] = [
    {"speaker": "Caroline", "text": "I went to a support group yesterday.", "id": "D1:1",
     "at": "2023-05-08T13:56:00+00:00"},
    {"speaker": "Melanie", "text": "How was it?", "id": "D1:2", "at": "2023-05-08T13:57:00+00:00"},
    {"speaker": "Caroline", "text": "Look at this.", "id": "D1:3", "caption": "a rainbow flag",
     "at": "2023-05-08T13:58:00+00:00"},
]  # fmt: skip
SECRET = "AKIAIOSFODNN7EXAMPLE"  # the shape of an AWS access key


def events(service: MemoryService) -> int:
    return service.status().events


def test_each_turn_becomes_a_memory_with_the_conversation_fields(service: MemoryService) -> None:
    result = service.ingest_conversation(TURNS, thread="session-1")
    assert result.names == ("session-1-d1-1", "session-1-d1-2", "session-1-d1-3")
    assert (result.created, result.updated, result.unchanged, result.written) == (3, 0, 0, 3)
    first = service.get("session-1-d1-1").memory
    assert first.body == "I went to a support group yesterday."
    assert first.description == "Turn D1:1 of session-1"
    assert (first.subject, first.thread, first.load, first.scope) == (
        "Caroline", "session-1", Load.SEARCH, "global"
    )  # fmt: skip
    assert first.valid_from == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    shared = service.get("session-1-d1-3").memory
    assert shared.body == "Look at this. [image: a rainbow flag]"
    assert all(r.receipt is not None for r in result.results)
    assert result.ids == tuple(service.get(n).memory.id for n in result.names)


def test_turns_are_written_in_order_so_their_neighbours_are_the_adjacent_turns(
    service: MemoryService,
) -> None:
    result = service.ingest_conversation(TURNS, thread="session-1")
    assert list(result.ids) == sorted(result.ids)  # ids are sortable by the order of writing
    assert [r.receipt.seq for r in result.results if r.receipt] == sorted(
        r.receipt.seq for r in result.results if r.receipt
    )


def test_a_turn_may_be_a_turn_value_and_a_turn_without_id_is_named_by_its_place(
    service: MemoryService,
) -> None:
    turns = [Turn("Ada", "first"), Turn("Bob", "second", at="2024-01-02")]
    result = service.ingest_conversation(turns, thread="Chat 7", at="2024-01-01T09:00:00Z")
    assert result.names == ("chat-7-1", "chat-7-2")
    assert service.get("chat-7-1").memory.valid_from == datetime(2024, 1, 1, 9, tzinfo=UTC)
    assert service.get("chat-7-2").memory.thread == "Chat 7"


def test_a_turn_is_described_by_where_it_stands_not_by_its_words(
    service: MemoryService,
) -> None:
    text = " ".join(f"word{i}" for i in range(40))
    service.ingest_conversation([{"speaker": "Ada", "text": text}], thread="t", at="2024-01-01")
    memory = service.get("t-1").memory
    assert memory.description == "Turn 1 of t"
    assert "Ada" not in memory.description  # no benchmark-shaped "<speaker> on <day>"
    assert "word0" not in memory.description and "2024" not in memory.description


def test_ingesting_the_same_turns_again_changes_nothing(service: MemoryService) -> None:
    service.ingest_conversation(TURNS, thread="session-1", project=None)
    before = store_state(service)
    again = service.ingest_conversation(TURNS, thread="session-1")
    assert (again.created, again.updated, again.unchanged) == (0, 0, 3)
    assert all(r.receipt is None for r in again.results)
    assert store_state(service) == before


def test_a_turn_without_a_time_keeps_the_time_it_was_first_written_at(
    service: MemoryService, clock: ManualClock
) -> None:
    turns = [{"speaker": "Ada", "text": "no time given"}]
    service.ingest_conversation(turns, thread="live")
    first = service.get("live-1").memory
    assert first.valid_from == first.created_at  # the write's own instant
    clock.advance(seconds=3600)
    before = store_state(service)
    again = service.ingest_conversation(turns, thread="live")
    assert again.unchanged == 1
    assert store_state(service) == before


def test_a_turn_that_differs_from_what_is_stored_updates_it(service: MemoryService) -> None:
    service.ingest_conversation(TURNS, thread="session-1")
    changed = [TURNS[0], {**TURNS[1], "text": "How was it, really?"}, TURNS[2]]
    count = events(service)
    result = service.ingest_conversation(changed, thread="session-1", reason="corrected")
    assert (result.created, result.updated, result.unchanged) == (0, 1, 2)
    assert service.get("session-1-d1-2").memory.body == "How was it, really?"
    assert events(service) == count + 1
    assert service.events(after=count)[0].reason == "corrected"


def test_a_project_holds_the_turns_when_named(service: MemoryService) -> None:
    service.add_project("conv-26")
    result = service.ingest_conversation(TURNS, thread="session-1", project="conv-26")
    assert result.project == "conv-26"
    assert service.get("session-1-d1-1", project="conv-26").memory.scope == "project:conv-26"
    with pytest.raises(errors.ProjectNotFound):
        service.ingest_conversation(TURNS, thread="session-1", project="nowhere")


def refused(service: MemoryService, error: type[errors.RetainError], /, *args: Any, **kw: Any):
    before = store_state(service)
    with pytest.raises(error) as caught:
        service.ingest_conversation(*args, **kw)
    assert store_state(service) == before
    return caught.value


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"text": "who said it?"}, "speaker"),
        ({"speaker": "Ada"}, "text"),
        ({"speaker": " ", "text": "x"}, "speaker"),
        ({"speaker": "Ada", "text": "  "}, "turns"),
        ({"speaker": "Ada\nBob", "text": "x"}, "speaker"),
        ({"speaker": "Ada", "text": 5}, "text"),
        ({"speaker": "Ada", "text": "x", "mood": "glad"}, "mood"),
        ({"speaker": "Ada", "text": "x", "id": "a\nb"}, "id"),
        ("just text", "turns"),
    ],
)
def test_a_malformed_turn_is_refused_by_its_place_and_nothing_is_written(
    service: MemoryService, bad: Any, field: str
) -> None:
    error = refused(service, errors.InvalidValue, [TURNS[0], bad], thread="t")
    assert error.details["field"] == field
    assert error.details["turn"] == 2


def test_a_bad_time_is_refused_naming_the_turn(service: MemoryService) -> None:
    bad = {"speaker": "Ada", "text": "x", "at": "last Friday"}
    error = refused(service, errors.InvalidTime, [TURNS[0], bad], thread="t")
    assert (error.details["turn"], error.details["field"]) == (2, "at")
    assert error.code == "invalid_time"
    error = refused(service, errors.InvalidTime, TURNS, thread="t", at="2023-02-30")
    assert error.details["field"] == "at"


def test_no_turns_too_many_turns_and_no_thread_are_refused(service: MemoryService) -> None:
    assert refused(service, errors.InvalidValue, [], thread="t").details["field"] == "turns"
    many = [{"speaker": "Ada", "text": "hi"}] * (MAX_TURNS + 1)
    error = refused(service, errors.InvalidValue, many, thread="t")
    assert (error.details["limit"], error.details["actual"]) == (MAX_TURNS, MAX_TURNS + 1)
    assert refused(service, errors.InvalidValue, TURNS, thread="").details["field"] == "thread"
    refused(service, errors.InvalidValue, TURNS, thread="a\nb")


def test_two_turns_that_would_share_a_name_are_refused(service: MemoryService) -> None:
    twins = [{**TURNS[0], "id": "x:1"}, {**TURNS[1], "id": "x-1"}]
    error = refused(service, errors.InvalidValue, twins, thread="t")
    assert (error.details["turn"], error.details["name"]) == (2, "t-x-1")


def test_a_turn_whose_name_another_thread_holds_is_refused(service: MemoryService) -> None:
    service.ingest_conversation([{"speaker": "Ada", "text": "one", "id": "1-2"}], thread="s")
    error = refused(service, errors.NameConflict, [{"speaker": "Bob", "text": "x", "id": "2"}],
                    thread="s-1")  # fmt: skip
    assert (error.details["name"], error.details["thread"]) == ("s-1-2", "s")


def test_a_secret_in_a_turn_is_refused_with_its_place_and_nothing_is_written(
    service: MemoryService,
) -> None:
    leaky = {"speaker": "Ada", "text": f"the key is {SECRET}", "id": "D1:9"}
    error = refused(service, errors.SecretDetected, [TURNS[0], leaky], thread="session-1")
    assert (error.details["turn"], error.details["turn_id"]) == (2, "D1:9")
    assert error.message.startswith("turn 2: ")
    assert SECRET not in str(error) and SECRET not in repr(error.details)
    result = service.ingest_conversation([leaky], thread="session-1", redact=True)
    assert SECRET not in service.get(result.names[0]).memory.body


def test_an_agent_may_not_ingest_into_the_shared_tiers(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("ada")
    agent = make_service(principal="agent:ada")
    with pytest.raises(errors.AccessDenied):
        agent.ingest_conversation(TURNS, thread="session-1")
    assert operator.list_memories() == []


def test_progress_is_reported_per_turn(service: MemoryService) -> None:
    seen: list[tuple[str, int, int]] = []
    service.ingest_conversation(TURNS, thread="t", progress=lambda *step: seen.append(step))
    assert [s for s in seen if s[0] == "write"] == [("write", i, 3) for i in (1, 2, 3)]
