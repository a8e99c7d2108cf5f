"""The times a text names, resolved against the day it was said, and their tokens."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retain.search import when
from retain.search.when import DAY, MONTH, WEEK, YEAR

MONDAY = date(2023, 5, 8)  # a Monday


def named(text: str, anchor: date | None = MONDAY) -> list[tuple[str, str, str]]:
    return [(s.first.isoformat(), s.last.isoformat(), s.grain) for s in when.spans(text, anchor)]


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("on 8 May 2023 we met", ("2023-05-08", "2023-05-08", DAY)),
        ("on the 8th of May, 2023", ("2023-05-08", "2023-05-08", DAY)),
        ("May 8, 2023", ("2023-05-08", "2023-05-08", DAY)),
        ("notes of 2023-05-08", ("2023-05-08", "2023-05-08", DAY)),
        ("back in May 2023", ("2023-05-01", "2023-05-31", MONTH)),
        ("in May of 2023", ("2023-05-01", "2023-05-31", MONTH)),
        ("February 2024", ("2024-02-01", "2024-02-29", MONTH)),
        ("in 2022 I moved", ("2022-01-01", "2022-12-31", YEAR)),
    ],
)
def test_a_time_said_outright_needs_no_anchor(text: str, span: tuple[str, str, str]) -> None:
    assert named(text, None) == [span]


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("yesterday was fun", ("2023-05-07", "2023-05-07", DAY)),
        ("last night", ("2023-05-07", "2023-05-07", DAY)),
        ("the day before yesterday", ("2023-05-06", "2023-05-06", DAY)),
        ("tomorrow", ("2023-05-09", "2023-05-09", DAY)),
        ("I went there last Friday!", ("2023-05-05", "2023-05-05", DAY)),
        ("next Monday", ("2023-05-15", "2023-05-15", DAY)),
        ("this Friday", ("2023-05-12", "2023-05-12", DAY)),
        ("last weekend", ("2023-05-06", "2023-05-07", DAY)),
        ("this week", ("2023-05-08", "2023-05-14", WEEK)),
        ("two weeks ago", ("2023-04-24", "2023-04-30", WEEK)),
        ("3 days ago", ("2023-05-05", "2023-05-05", DAY)),
        ("in a few days", ("2023-05-11", "2023-05-11", DAY)),
        ("next month", ("2023-06-01", "2023-06-30", MONTH)),
        ("a month ago", ("2023-04-01", "2023-04-30", MONTH)),
        ("last year", ("2022-01-01", "2022-12-31", YEAR)),
        ("four years back", ("2019-01-01", "2019-12-31", YEAR)),
    ],
)
def test_a_relative_time_is_resolved_against_the_anchor(
    text: str, span: tuple[str, str, str]
) -> None:
    assert named(text) == [span]
    assert named(text, None) == []  # no day it was said: no time


def test_months_across_a_year_end_and_short_months() -> None:
    assert named("next month", date(2023, 12, 20)) == [("2024-01-01", "2024-01-31", MONTH)]
    assert named("a month ago", date(2023, 3, 31)) == [("2023-02-01", "2023-02-28", MONTH)]


def test_words_that_only_look_like_times_name_none() -> None:
    assert named("I may go, we can march on") == []
    assert named("on Friday") == []  # which Friday is not said
    assert named("2000 people came") == []  # a bare number is not a year
    assert named("31 February 2023") == []  # no such day
    assert named("May 20 at 5pm")[0][2] == DAY and named("May 20:30") == []


def test_a_day_without_a_year_is_yearless() -> None:
    (span,) = when.spans("on 8 May", MONDAY)
    assert span.yearless and span.grain == DAY
    assert when.query_tokens(span) == ["md0508"]
    assert when.span_tokens(span) == ["md0508", "mo05"]


def test_a_day_holds_every_coarser_grain_and_a_question_asks_its_own() -> None:
    (friday,) = when.spans("last Friday", MONDAY)
    assert when.span_tokens(friday) == [
        "dd20230505", "md0505", "ww202318", "mm202305", "mo05", "yy2023",
    ]  # fmt: skip
    assert when.query_tokens(friday) == ["dd20230505"]
    (month,) = when.spans("in May 2023", None)
    assert when.query_tokens(month) == ["mm202305"]
    assert set(when.query_tokens(month)) <= set(when.span_tokens(friday))
    (weekend,) = when.spans("last weekend", MONDAY)
    assert when.query_tokens(weekend) == ["dd20230506", "dd20230507"]


def test_only_absolute_times_are_taken_out_of_a_query() -> None:
    text = "What did Jo do last weekend before 10 April 2023?"
    assert " ".join(when.strip(text, when.spans(text, MONDAY)).split()) == (
        "What did Jo do last weekend before ?"
    )


def test_a_text_of_ascii_with_no_digit_and_no_time_word_is_not_looked_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried: list[str] = []
    finder = when.finder()

    class Spy:
        def match(self, text: str, at: int) -> re.Match[str] | None:
            tried.append(text[at:])
            return finder.match(text, at)

    monkeypatch.setattr(when, "finder", Spy)
    assert when.spans("Alice moved in with a few of her friends last night", MONDAY)
    assert tried  # "night": a time word, so the finder is tried at the openers
    tried.clear()
    assert when.spans("Alice moved in with a few of her friends", MONDAY) == []
    assert tried == []  # openers ("in", "a", "of"), but no word a pattern needs
    # not ASCII: looked at whole (the finder's case folding takes "ſ" for an "s")
    assert [span.grain for span in when.spans("Alice moved in a few dayſ ago", MONDAY)] == [DAY]


_PIECES = st.sampled_from(
    [
        *when.MONTHS,
        *when.WEEKDAYS,
        *when.NUMBERS,
        *when.AROUND,
        "2023",
        "1999",
        "08",
        "8th",
        "31",
        "2023-05-08",
        "in",
        "of",
        "In",
        "MAY",
        "during",
        "since",
        "From",
        "until",
        "by",
        "before",
        "after",
        "around",
        "late",
        "on",
        "coming",
        "previous",
        "earlier",
        "today",
        "tonight",
        "this morning",
        "mayday",
        "inn",
        "last",
        "next",
        "this",
        "past",
        "ago",
        "back",
        "week",
        "weekend",
        "days",
        "months",
        "year",
        "early",
        "mid",
        "am",
        "pm",
        ":30",
        ".",
        ",",
        "-",
        "'s",
        "time",
        "_",
        "ſ",
        "İ",
        "٣",
        "x",
        "May.",
        "\n",
        "\u2028",
    ]
)
_SEPARATORS = st.sampled_from(["", " ", "  ", "-", ", ", "\t"])


@settings(max_examples=1000, deadline=None, database=None)
@given(st.lists(st.tuples(_PIECES, _SEPARATORS), max_size=24), st.text(max_size=40))
def test_the_finder_tried_at_word_starts_finds_what_a_scan_of_every_position_finds(
    pieces: list[tuple[str, str]], noise: str
) -> None:
    text = "".join(p + s for p, s in pieces) + noise + "".join(s + p for p, s in pieces)
    everywhere = [(m.span(), m.lastgroup) for m in when.finder().finditer(text)]
    assert [(m.span(), m.lastgroup) for m in when._matches(text)] == everywhere
