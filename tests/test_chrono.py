"""Time parsing and the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from retain import errors
from retain.chrono import (
    ManualClock,
    age_phrase,
    parse_duration,
    parse_expires,
    parse_stamp,
    stamp,
)
from retain.ids import IdFactory


def test_stamp_is_fixed_width_utc_and_round_trips() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    text = stamp(moment)
    assert text == "2026-01-02T01:04:05.000006Z"
    assert parse_stamp(text) == moment


def test_naive_timestamps_are_refused() -> None:
    with pytest.raises(errors.InvalidTime):
        parse_stamp("2026-01-02T00:00:00")
    with pytest.raises(errors.InvalidTime):
        stamp(datetime(2026, 1, 1))


def test_a_bare_date_expires_when_the_next_local_day_begins() -> None:
    clock = ManualClock(zone=timezone(timedelta(hours=8)))
    assert parse_expires("2026-10-25", clock) == "2026-10-25T16:00:00.000000Z"
    assert parse_expires("2026-10-25T18:00:00+02:00", clock) == "2026-10-25T16:00:00.000000Z"


@pytest.mark.parametrize(("text", "days"), [("90d", 90), ("2w", 14), ("36h", 1.5)])
def test_durations(text: str, days: float) -> None:
    assert parse_duration(text) == timedelta(days=days)


@pytest.mark.parametrize("text", ["90", "d", "ninety days", "5y", "-3d"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(errors.InvalidTime):
        parse_duration(text)


def test_age_phrases() -> None:
    now = datetime(2026, 3, 10, 12, tzinfo=UTC)
    assert age_phrase(now, now) == "today"
    assert age_phrase(now - timedelta(days=1), now) == "yesterday"
    assert age_phrase(now - timedelta(days=47), now) == "47 days ago"


def test_ids_sort_by_creation_even_within_one_millisecond() -> None:
    factory = IdFactory()
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    ids = [factory.new(moment) for _ in range(1000)]
    ids.append(factory.new(moment + timedelta(milliseconds=1)))
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(len(i) == 26 for i in ids)
