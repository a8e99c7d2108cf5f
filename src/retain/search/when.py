"""Time expressions: the days, weeks, months and years a text names, and their index tokens.

A memory is found by the times it holds and the times it mentions. "8 May 2023",
"May 2023", "in 2022" name a time outright; "yesterday", "last Friday", "two weeks
ago", "next month" name one relative to an *anchor* — the day the text was said (a
memory's ``valid_from``) or, for a question, the day it is asked. ``spans`` finds
both kinds and resolves them to calendar spans at the grain they were said in.

Each span becomes *tokens* of the search key's context (``span_tokens``): a day
holds the tokens of its day, ISO week, month and year (and its day and month of any
year, for a question that names no year); a month its month and year; and so on. A
question's span asks for the one token of its own grain (``query_tokens``), so "in
May 2023" finds every day of May 2023 and a mention of "last month" said in June,
while "on 8 May 2023" finds that day only. The tokens are plain words the index
keeps whole (``dd20230508``); nobody types them.
"""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import cache

DAY, WEEK, MONTH, YEAR = "day", "week", "month", "year"

# fmt: off
MONTHS = {name: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
    ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
    ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec"),
), start=1) for name in names}
WEEKDAYS = {name: n for n, names in enumerate((
    ("monday",), ("tuesday", "tues"), ("wednesday",), ("thursday", "thurs"), ("friday",),
    ("saturday",), ("sunday",),
)) for name in names}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}
AROUND = {  # days from the anchor; the rest ("today", "tonight", "this morning") are 0
    "day before yesterday": -2, "yesterday": -1, "last night": -1, "tomorrow": 1,
    "day after tomorrow": 2,
}
# fmt: on

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_COUNT = r"(?P<count>\d{1,2}|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(sorted(WEEKDAYS, key=len, reverse=True)) + r")"
_PATTERNS = (
    ("iso", rf"\b{_YEAR}-(?P<mnum>[01]\d)-(?P<day>[0-3]\d)\b"),
    ("day month year", rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b"),
    ("month day year", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
    ("day month", rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}\b"),
    ("month day", rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:am|pm|[:.]\d))"),
    ("month year", rf"\b{_MONTH}(?:\s+of)?,?\s+{_YEAR}\b"),
    ("year", rf"\b(?:in|of|during|since|from|until|by|before|after|around)\s+{_YEAR}\b(?!-\d)"),
    (
        "month",
        rf"\b(?:in|of|during|since|from|until|by|before|after|around|early|late|mid)"
        rf"[\s-]+{_MONTH}\b(?!,?\s+(?:of\s+)?(?:[0-3]?\d\b|(?:19|20)\d\d))",
    ),
    ("ago", rf"\b{_COUNT}\s+{_UNIT}\s+(?:ago|back)\b"),
    ("in", rf"\bin\s+{_COUNT}\s+{_UNIT}(?:'s)?(?:\s+time)?\b"),
    (
        "around",
        r"\b(?P<rel>day before yesterday|day after tomorrow|yesterday|last night"
        r"|tonight|today|this morning|this afternoon|this evening|tomorrow)\b",
    ),
    (
        "relative",
        r"\b(?P<which>last|this|next|past|coming|previous|earlier this)\s+"
        r"(?P<what>week|weekend|month|year)\b",
    ),
    ("weekday", rf"\b(?P<which>last|this|next|on|coming|past)\s+{_WEEKDAY}\b"),
)
_NAMED = re.compile(r"[(][?]P<([a-z]+)>")
# Every pattern starts with ``\b`` and a word character, so a match can start only where
# a word does, and only where that word is one a pattern opens with: a number, a month,
# a count, or one of these. The finder is tried there alone (a few words of a text).
_OPENERS = frozenset((
    *MONTHS, *(words.split()[0] for words in NUMBERS), *(w.split()[0] for w in AROUND),
    "in", "of", "during", "since", "from", "until", "by", "before", "after", "around",
    "early", "late", "mid", "today", "tonight", "this", "last", "next", "past", "coming",
    "previous", "earlier", "on",
))  # fmt: skip
_WORD = re.compile(r"\b\w+")
# And every pattern holds a digit or one of these words whole (a month, a weekday, a unit,
# a word of ``AROUND`` or "this morning"): a text of ASCII alone holding neither is not
# looked at further (most memories name no time: 84% of the synthetic corpus's, 87% of
# LoCoMo's turns; 45 µs a memory of it became 24, then 13 with the words read as bytes).
_NEEDED = frozenset((
    *MONTHS, *WEEKDAYS, "day", "days", "week", "weeks", "weekend", "month", "months",
    "year", "years", "yesterday", "tomorrow", "night", "tonight", "today", "morning",
    "afternoon", "evening",
))  # fmt: skip
_NEEDED_BYTES = frozenset(word.encode("ascii") for word in _NEEDED)
# An ASCII text's bytes with its letters lower-cased, each digit made "#" and every other
# byte a space: its words split on the spaces, and a digit is a "#". A word the finder
# reads (``\w+``) that is letters alone is one of these words.
_LETTERS = bytes(
    ord(c.lower()) if c.isascii() and c.isalpha() else ord("#") if c.isdecimal() else 32
    for c in map(chr, range(256))
)


@dataclass(frozen=True, slots=True)
class Span:
    """A time a text names: the days ``first``–``last`` at ``grain``, said at ``where``
    (the characters of the text that name it); ``yearless`` when no year was said,
    ``relative`` when it was said relative to the anchor ("last Friday")."""

    first: date
    last: date
    grain: str
    where: tuple[int, int]
    yearless: bool = False
    relative: bool = False


def spans(text: str, anchor: date | None) -> list[Span]:
    """The times ``text`` names, in order; relative ones only when ``anchor`` is given."""
    found = []
    for match in _matches(text):
        kind = int((match.lastgroup or "p0")[1:])  # the pattern's group closes last
        prefix = f"g{kind}_"
        parts = {k[len(prefix) :]: v for k, v in match.groupdict().items() if k.startswith(prefix)}
        span = _resolve(_PATTERNS[kind][0], parts, anchor, match.span())
        if span is not None:
            found.append(span)
    return found


@cache
def finder() -> re.Pattern[str]:
    """One pattern of every pattern: the i-th is the group ``p<i>``, its parts
    ``g<i>_<part>``. Compiled at first use (about 5 ms), so that a command that never
    looks for a time does not pay for it."""
    return re.compile(
        "|".join(
            f"(?P<p{i}>" + _NAMED.sub(f"(?P<g{i}_" + r"\1>", p) + ")"
            for i, (_, p) in enumerate(_PATTERNS)
        ),
        re.I,
    )


def _matches(text: str) -> Iterator[re.Match[str]]:
    """What ``finder().finditer(text)`` finds, leftmost first, none overlapping (the
    pattern is compiled only for a text with a word it could match at)."""
    if text.isascii():
        letters = text.encode("ascii").translate(_LETTERS)
        if b"#" not in letters and _NEEDED_BYTES.isdisjoint(letters.split()):
            return
    end = 0
    for word in _WORD.finditer(text):
        if word.start() < end:
            continue
        opening = word.group()
        if opening.isascii() and opening.isalpha() and opening.lower() not in _OPENERS:
            continue  # (a word of other letters, or with a digit, is tried: re.I folds more)
        match = finder().match(text, word.start())
        if match is not None:
            yield match
            end = match.end()


def strip(text: str, named: list[Span]) -> str:
    """``text`` without the words that name the absolute times of ``named`` (the words
    of a relative one, "last weekend", are what a memory of it says too)."""
    for span in sorted((s for s in named if not s.relative), key=lambda s: -s.where[0]):
        start, end = span.where
        text = text[:start] + " " + text[end:]
    return text


def span_tokens(span: Span) -> list[str]:
    """The tokens a memory holds for ``span``: every coarser grain it falls in too."""
    out: list[str] = []
    if span.grain == DAY and span.yearless:
        out = [f"md{d.month:02}{d.day:02}" for d in _days(span)] + [f"mo{span.first.month:02}"]
    elif span.grain == DAY:
        for day in _days(span):
            week = day.isocalendar()
            out += [
                f"dd{day:%Y%m%d}",
                f"md{day:%m%d}",
                f"ww{week.year}{week.week:02}",
                f"mm{day:%Y%m}",
                f"mo{day:%m}",
                f"yy{day.year}",
            ]
    elif span.grain == WEEK:
        week = span.first.isocalendar()
        out = [f"ww{week.year}{week.week:02}"]
        out += [f"mm{d:%Y%m}" for d in (span.first, span.last)] + [f"yy{span.first.year}"]
    elif span.grain == MONTH and span.yearless:
        out = [f"mo{span.first.month:02}"]
    elif span.grain == MONTH:
        out = [f"mm{span.first:%Y%m}", f"mo{span.first:%m}", f"yy{span.first.year}"]
    else:
        out = [f"yy{span.first.year}"]
    return list(dict.fromkeys(out))


def query_tokens(span: Span) -> list[str]:
    """The tokens a question's ``span`` asks for: those of its own grain."""
    if span.grain == DAY:
        prefix, form = ("md", "%m%d") if span.yearless else ("dd", "%Y%m%d")
        return [f"{prefix}{d.strftime(form)}" for d in _days(span)]
    if span.grain == WEEK:
        week = span.first.isocalendar()
        return [f"ww{week.year}{week.week:02}"]
    if span.grain == MONTH:
        return [f"mo{span.first:%m}" if span.yearless else f"mm{span.first:%Y%m}"]
    return [f"yy{span.first.year}"]


def _days(span: Span) -> list[date]:
    return [span.first + timedelta(n) for n in range((span.last - span.first).days + 1)]


def _resolve(
    kind: str, parts: dict[str, str | None], anchor: date | None, where: tuple[int, int]
) -> Span | None:
    """One match as a span, or None when it names no real day (31 February) or needs
    an anchor it has not got."""
    month = MONTHS.get((parts.get("month") or "").lower().rstrip("."))
    if mnum := parts.get("mnum"):
        month = int(mnum)
    year = int(parts.get("year") or 0) or None
    day = int(parts.get("day") or 0) or None
    if kind in ("iso", "day month year", "month day year", "day month", "month day"):
        if month is None or day is None:
            return None
        try:
            when = date(year or 2000, month, day)  # 2000: a leap year, for 29 February
        except ValueError:
            return None
        return Span(when, when, DAY, where, yearless=year is None)
    if kind == "month year" and month is not None and year is not None:
        return _month(year, month, where)
    if kind == "year" and year is not None:
        return Span(date(year, 1, 1), date(year, 12, 31), YEAR, where)
    if kind == "month" and month is not None:
        first = date(2000, month, 1)
        return Span(first, first, MONTH, where, yearless=True)
    if anchor is None:
        return None
    span = _relative(kind, parts, anchor, where)
    return None if span is None else replace(span, relative=True)


def _relative(
    kind: str, parts: dict[str, str | None], anchor: date, where: tuple[int, int]
) -> Span | None:
    if kind in ("ago", "in"):
        count_word = (parts.get("count") or "").lower()
        count = int(count_word) if count_word.isdigit() else NUMBERS.get(count_word, 0)
        if not count:
            return None
        sign = -1 if kind == "ago" else 1
        return _shifted(anchor, (parts.get("unit") or "").lower(), sign * count, where)
    if kind == "around":
        rel = (parts.get("rel") or "").lower()
        when = anchor + timedelta(AROUND.get(rel, 0))
        return Span(when, when, DAY, where)
    which = (parts.get("which") or "").lower()
    step = {"last": -1, "past": -1, "previous": -1, "next": 1, "coming": 1}.get(which, 0)
    if kind == "relative":
        what = (parts.get("what") or "").lower()
        if what == "weekend":
            monday = anchor - timedelta(anchor.weekday()) + timedelta(7 * step)
            return Span(monday + timedelta(5), monday + timedelta(6), DAY, where)
        return _shifted(anchor, what, step, where)
    weekday = WEEKDAYS.get((parts.get("weekday") or "").lower())
    if weekday is None:
        return None
    if which == "on":  # "on Friday": said of the past, the last one; of the future, unknown
        return None
    if step < 0:  # the last such day before the anchor
        back = (anchor.weekday() - weekday) % 7 or 7
        when = anchor - timedelta(back)
    elif step > 0:  # the first such day after it
        ahead = (weekday - anchor.weekday()) % 7 or 7
        when = anchor + timedelta(ahead)
    else:  # this Friday: the one of the anchor's week
        when = anchor - timedelta(anchor.weekday()) + timedelta(weekday)
    return Span(when, when, DAY, where)


def _shifted(anchor: date, unit: str, count: int, where: tuple[int, int]) -> Span | None:
    """The ``unit`` ``count`` units from ``anchor``'s (negative: before it)."""
    if unit == "day":
        when = anchor + timedelta(count)
        return Span(when, when, DAY, where)
    if unit == "week":
        monday = anchor - timedelta(anchor.weekday()) + timedelta(7 * count)
        return Span(monday, monday + timedelta(6), WEEK, where)
    if unit == "month":
        months = anchor.year * 12 + anchor.month - 1 + count
        return _month(months // 12, months % 12 + 1, where)
    if unit == "year":
        year = anchor.year + count
        return Span(date(year, 1, 1), date(year, 12, 31), YEAR, where)
    return None


def _month(year: int, month: int, where: tuple[int, int]) -> Span:
    return Span(date(year, month, 1), date(year, month, monthrange(year, month)[1]), MONTH, where)
