"""Time parsing and the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory

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
from retain.service import MemoryService


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


# -- the edges of the calendar, through the service (both backends) ------------------------

EDGES = [
    "0001-01-01",
    "0001-01-02",
    "9999-12-30",
    "9999-12-31",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59-01:00",
]
ZONES = [UTC, timezone(timedelta(hours=-12)), timezone(timedelta(hours=14))]


def _edge_calls(service: MemoryService, agent: MemoryService, moment: str) -> list[object]:
    """Every verb that takes a date, given ``moment``, and every read after it."""
    calls = [
        lambda: service.fact_write("ada", "employer", "Acme", valid_from=moment),
        lambda: service.fact_read("ada", valid_at=moment),
        lambda: service.fact_read("ada", known_at=moment),
        lambda: service.write("edge", description="at the edge", valid_from=moment),
        lambda: service.write("ends", description="ends at the edge", expires=moment),
        lambda: agent.remember("at the edge", valid_from=moment),
    ]
    answers: list[object] = []
    for call in calls:
        try:
            answers.append(call())
        except errors.InvalidInput as exc:  # refused, naming the field; never a crash
            assert exc.details.get("field"), exc
            answers.append(exc.code)
    return answers


@pytest.mark.parametrize("zone", ZONES, ids=["utc", "utc-12", "utc+14"])
@pytest.mark.parametrize("moment", EDGES)
def test_dates_at_the_edge_of_the_calendar_are_stored_or_refused(
    make_service: ServiceFactory, clock: ManualClock, moment: str, zone: timezone, tmp_path: Path
) -> None:
    clock.zone = zone
    service = make_service()
    service.add_agent("ada")
    agent = make_service(principal="agent:ada")
    _edge_calls(service, agent, moment)
    # Whatever was stored reads back through every door's verbs.
    service.list_memories()
    service.search("edge")
    service.fact_read("ada")
    service.fact_history("ada", "employer")
    service.context()
    agent.recall("edge")
    agent.context(turn="edge")
    service.export(tmp_path / "snapshot")
    make_service(realm="copy").import_(tmp_path / "snapshot", create=True)
