"""Time: the injectable clock, the stored timestamp form, and the parsers for
expiry dates and durations that every door accepts (``90d``-style periods, and the
ISO 8601 durations of ``[retention]``: ``Period``).

Stored timestamps are UTC, RFC 3339, fixed width with microseconds
(``2026-11-29T14:45:52.123456Z``), so text order is time order.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Protocol

from retain.errors import InvalidTime

TICK = timedelta(microseconds=1)  # the finest step a stored timestamp keeps (``stamp``)


class Clock(Protocol):
    """Where retain gets the time; tests and simulations pass their own."""

    def now(self) -> datetime:
        """The current instant, timezone-aware."""
        ...

    def local_tz(self) -> tzinfo | None:
        """The zone a bare date (``YYYY-MM-DD``) is read in; None for the system's rules."""
        ...


class SystemClock:
    """The machine's clock and local zone (daylight saving included)."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def local_tz(self) -> tzinfo | None:
        return None


@dataclass
class ManualClock:
    """A clock that moves only when told: for tests, replays and simulations."""

    current: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    zone: tzinfo = UTC

    def now(self) -> datetime:
        return self.current

    def local_tz(self) -> tzinfo:
        return self.zone

    def advance(self, **delta: float) -> None:
        """Move the clock forward by ``timedelta(**delta)``."""
        self.current += timedelta(**delta)


@functools.lru_cache(maxsize=256)
def stamp(moment: datetime) -> str:
    """The stored form of an instant."""
    if moment.tzinfo is None:
        raise InvalidTime(
            f"timestamp {moment.isoformat()} has no timezone",
            remedy="give an offset or Z",
        )
    try:
        utc = moment.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidTime(
            f"{moment.isoformat()} is outside the years 1–9999 in UTC",
            remedy="give a time between years 1 and 9999",
        ) from exc
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def parse_stamp(text: str) -> datetime:
    """Read a stored or RFC 3339 timestamp back into an aware datetime."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise InvalidTime(
            f"{text!r} is not an RFC 3339 timestamp",
            remedy="write it like 2026-10-25T18:00:00Z",
            value=text,
        ) from exc
    if moment.tzinfo is None:
        raise InvalidTime(
            f"timestamp {text!r} has no timezone",
            remedy="add an offset such as Z or +02:00, or give a bare YYYY-MM-DD date",
            value=text,
        )
    return moment


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_optional_stamp(text: str | None) -> datetime | None:
    """A stored timestamp, or None for an empty column."""
    return parse_stamp(text) if text else None


def parse_expires(text: str, clock: Clock) -> str:
    """An expiry as written by a user, to its stored form.

    An RFC 3339 timestamp is taken as given. A bare ``YYYY-MM-DD`` means the
    whole of that day in local time: the memory expires when the next day
    begins.
    """
    return _parse_moment(text, clock, "expires", day_end=True)


def parse_valid_from(text: str, clock: Clock) -> str:
    """When a memory began to hold, to its stored form: a bare date is that
    day's local midnight."""
    return _parse_moment(text, clock, "valid_from", day_end=False)


def parse_moment(text: str, clock: Clock, field: str) -> str:
    """An instant a read asks about (``valid_at``, ``known_at``), to its stored form: a
    bare date is that day's local midnight."""
    return _parse_moment(text, clock, field, day_end=False)


def _parse_moment(text: str, clock: Clock, field: str, *, day_end: bool) -> str:
    if not isinstance(text, str):
        raise InvalidTime(
            f"{field} {text!r} is not text",
            remedy="give an RFC 3339 timestamp or a YYYY-MM-DD date as a string",
            field=field,
        )
    text = text.strip()
    if _DATE.match(text):
        try:
            day = date.fromisoformat(text)
        except ValueError as exc:
            raise InvalidTime(
                f"{text!r} is not a calendar date",
                remedy="write a real date as YYYY-MM-DD",
                field=field,
                value=text,
            ) from exc
        if day_end and day == date.max:
            raise InvalidTime(
                f"{text!r} is the last day retain can store",
                remedy="give an earlier date, or no expiry",
                field=field,
                value=text,
            )
        if day_end:
            day += timedelta(days=1)
        midnight = datetime(day.year, day.month, day.day)
        zone = clock.local_tz()
        try:
            # With no zone given, astimezone() applies the system's rules for that very day.
            local = midnight.replace(tzinfo=zone) if zone is not None else midnight.astimezone()
            return stamp(local)
        except (InvalidTime, OverflowError, ValueError) as exc:  # a day next to year 1 or 9999
            raise _off_calendar(text, field) from exc
    try:
        moment = parse_stamp(text)
    except InvalidTime as exc:
        exc.details["field"] = field
        raise
    try:
        return stamp(moment)
    except InvalidTime as exc:
        raise _off_calendar(text, field) from exc


def _off_calendar(text: str, field: str) -> InvalidTime:
    return InvalidTime(
        f"{field} {text!r} falls outside the years 1–9999 once read in UTC",
        remedy="give a time between 0001-01-02 and 9999-12-30",
        field=field,
        value=text,
    )


_DURATION = re.compile(r"^\s*([0-9]+)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """A duration such as ``90d``, ``12h``, ``2w`` (units s, m, h, d, w)."""
    match = _DURATION.match(text)
    if not match:
        raise InvalidTime(
            f"{text!r} is not a duration",
            remedy="write a number and a unit, such as 90d, 12h or 2w",
            value=text,
        )
    try:
        return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    except OverflowError as exc:
        raise InvalidTime(
            f"{text!r} is longer than retain can count", remedy="give a shorter period"
        ) from exc


_ISO_PERIOD = re.compile(
    r"^P(?:(?P<Y>[0-9]+)Y)?(?:(?P<M>[0-9]+)M)?(?:(?P<W>[0-9]+)W)?(?:(?P<D>[0-9]+)D)?"
    r"(?:T(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+)S)?)?$"
)


@dataclass(frozen=True, slots=True)
class Period:
    """An ISO 8601 duration (``P365D``, ``P1Y6M``, ``PT12H``): calendar ``months`` (a
    year is twelve), counted back on the calendar, and an exact ``span`` (weeks, days of
    24 hours, hours, minutes, seconds). ``text`` is the duration as written."""

    text: str
    months: int
    span: timedelta

    @property
    def empty(self) -> bool:
        """Whether it is no time at all (``P0D``)."""
        return self.months == 0 and self.span == timedelta(0)

    def back_from(self, moment: datetime) -> datetime:
        """The instant this period before ``moment``: the months back on the calendar
        (in UTC; a day past the shorter month's end is its last day), then the span;
        refused (``invalid_time``) rather than reaching before year 1."""
        utc = moment.astimezone(UTC)
        if self.months:
            count = utc.year * 12 + utc.month - 1 - self.months
            year, month = divmod(count, 12)
            if year < 1:
                raise InvalidTime(
                    f"{self.text} reaches back before year 1", remedy="give a shorter period"
                )
            import calendar

            day = min(utc.day, calendar.monthrange(year, month + 1)[1])
            utc = utc.replace(year=year, month=month + 1, day=day)
        return before(utc, self.span)


def parse_period(text: str) -> Period:
    """An ISO 8601 duration of whole numbers: ``P[nY][nM][nW][nD][T[nH][nM][nS]]``, at
    least one part, ``T`` only before a time part (``P365D``, ``P1Y``, ``P2W``, ``PT36H``).
    Fractions, signs and the ``PYYYY-MM-DD`` form are refused (``invalid_time``)."""
    written = text.strip().upper() if isinstance(text, str) else ""
    match = _ISO_PERIOD.match(written)
    if (
        match is None
        or not any(match.groupdict().values())
        or written.endswith("T")
        or not isinstance(text, str)
    ):
        raise InvalidTime(
            f"{text!r} is not an ISO 8601 duration",
            remedy="write P and whole numbers with their units, such as P365D, P1Y, P2W or "
            "PT12H (Y years, M months, W weeks, D days; after T: H hours, M minutes, S seconds)",
            value=text,
        )
    part = {k: int(v) if v else 0 for k, v in match.groupdict().items()}
    try:
        span = timedelta(
            weeks=part["W"], days=part["D"], hours=part["h"], minutes=part["m"], seconds=part["s"]
        )
    except OverflowError as exc:
        raise InvalidTime(
            f"{text!r} is longer than retain can count", remedy="give a shorter period"
        ) from exc
    months = part["Y"] * 12 + part["M"]
    if months > 12 * 10_000:
        raise InvalidTime(
            f"{text!r} is longer than retain can count", remedy="give a shorter period"
        )
    return Period(written, months, span)


def before(moment: datetime, period: timedelta) -> datetime:
    """``moment - period``, refused rather than overflowing before year 1."""
    try:
        return moment - period
    except OverflowError as exc:
        raise InvalidTime(
            "that period reaches back before year 1", remedy="give a shorter period"
        ) from exc


def after(moment: datetime, period: timedelta) -> datetime:
    """``moment + period``, refused rather than overflowing past year 9999."""
    try:
        return moment + period
    except OverflowError as exc:
        raise InvalidTime(
            "that period reaches past year 9999", remedy="give a shorter period"
        ) from exc


def in_zone(moment: datetime, zone: tzinfo | None) -> datetime:
    """``moment`` on the clock of ``zone`` (None: the system's), or in UTC where that clock
    would read a day before year 1 or after 9999."""
    try:
        return moment.astimezone(zone)
    except (OverflowError, ValueError):
        return moment.astimezone(UTC)


def age_phrase(then: datetime, now: datetime) -> str:
    """``today``, ``yesterday``, ``N days ago``: how a person says an age."""
    days = (now.date() - then.astimezone(now.tzinfo).date()).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    return f"{days} days ago"


def age_days(then: datetime, now: datetime) -> float:
    """Age in days, fractional, never negative."""
    return max(0.0, (now - then).total_seconds() / 86400.0)
