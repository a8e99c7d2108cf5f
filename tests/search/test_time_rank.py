"""A question that names a time, or a subject, and what its words alone may find."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory

from retain import WriteRequest
from retain.search import lexical, rank
from retain.search.lexical import SEMANTIC, STEM, SUBJECT, TIME, analyze
from retain.service import MemoryService


def turns(service: MemoryService, thread: str, day: str, *said: tuple[str, str]) -> None:
    service.write_many(
        [
            WriteRequest(
                f"{thread}-{n}",
                description=text[:40],
                body=text,
                subject=speaker,
                thread=thread,
                valid_from=day,
            )
            for n, (speaker, text) in enumerate(said, start=1)
        ]
    )


@pytest.fixture
def chat(lexical_service: MemoryService) -> MemoryService:
    """Two sessions: the first on 5 May 2023, the second three days later, where Jo says
    what she did "last Friday" — the day of the first."""
    turns(
        lexical_service, "s1", "2023-05-05T18:00:00+00:00",
        ("Jo", "Bye for now!"), ("Al", "See you soon, take care."),
    )  # fmt: skip
    turns(
        lexical_service, "s2", "2023-05-08T18:00:00+00:00",
        ("Al", "How was your week?"),
        ("Jo", "Last Friday I ran a charity race for the shelter."),
        ("Al", "I ran a race in March, it rained."),
    )  # fmt: skip
    return lexical_service


def ranked(service: MemoryService, query: str) -> list[tuple[str | None, tuple[str, ...]]]:
    return [(h.memory.name, h.senses) for h in service.search(query).hits]


def test_a_question_naming_a_day_prefers_what_was_said_of_that_day(chat: MemoryService) -> None:
    found = ranked(chat, "What race did Jo run on 5 May 2023?")
    assert [name for name, _ in found][:2] == ["s2-2", "s2-3"]
    assert TIME in found[0][1] and TIME not in found[1][1]  # said of that day, three days on
    assert not any(name.startswith("s1") for name, _ in found)  # that day's words hold no race


def test_a_date_alone_finds_nothing(chat: MemoryService) -> None:
    # "Bye for now!" was said on 5 May 2023, and holds no word of the question
    assert ranked(chat, "What happened on 5 May 2023?") == []
    assert ranked(chat, "5 May 2023") == []


def test_a_speakers_name_alone_finds_nothing_and_lifts_what_the_words_found(
    chat: MemoryService,
) -> None:
    assert ranked(chat, "Jo") == []
    found = ranked(chat, "Did Jo run a race?")
    assert found[0][0] == "s2-2" and {STEM, SUBJECT} <= set(found[0][1])
    assert SUBJECT not in dict(found)["s2-3"]  # Al's


def test_a_relative_question_is_resolved_against_the_search_day(
    make_service: ServiceFactory,
) -> None:
    service = make_service()  # the clock stands at Sunday 1 March 2026
    service.write("fri", description="Ran a race", valid_from="2026-02-27T10:00:00+00:00")
    service.write("mon", description="Ran a race", valid_from="2026-02-23T10:00:00+00:00")
    found = ranked(service, "race last Friday")
    assert found[0][0] == "fri" and TIME in found[0][1]
    assert TIME not in dict(found)["mon"]


def test_a_time_most_memories_hold_tells_nothing_apart(
    lexical_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "TIME_DEPTH", 2)
    for n in range(3):
        lexical_service.write(f"r{n}", description="Ran a race", valid_from="2023-05-05")
    assert all(TIME not in senses for _, senses in ranked(lexical_service, "race in May 2023"))
    monkeypatch.setattr(lexical, "TIME_DEPTH", 3)
    assert all(TIME in senses for _, senses in ranked(lexical_service, "race in May 2023"))


def test_a_query_plan_keeps_relative_words_and_drops_absolute_ones() -> None:
    (plan,) = lexical.plan_queries(["race last weekend before 10 April 2023"])
    assert plan.words == ("race", "last", "weekend")
    assert plan.times == ("dd20230410",)  # no day to resolve "last weekend" against
    assert plan.text == "race last weekend before 10 April 2023"


def test_coverage_is_the_best_share_of_the_query_words_one_text_holds() -> None:
    plan = analyze("charity race shelter")
    assert lexical.coverage(plan, []) == 0.0
    assert lexical.coverage(plan, ["Races for charities", "a shelter"]) == pytest.approx(2 / 3)
    assert lexical.coverage(analyze("the of"), ["the of"]) == 1.0


def test_the_semantic_weight_falls_as_the_words_hold_more_of_the_query() -> None:
    weights = [rank.semantic_weight(c) for c in (0.0, 0.5, 1.0)]
    assert weights[0] == rank.SEMANTIC_MOST and weights[2] == rank.SEMANTIC_LEAST
    assert weights[0] > weights[1] > weights[2]
    semantic = lexical.SenseHits(SEMANTIC, (lexical.LexicalHit("a", 0.9),))
    fused = rank.fuse([("q", [semantic])], {"q": 2.0})
    assert fused["a"].score == pytest.approx(2.0 / (rank.RRF_K + 1))
