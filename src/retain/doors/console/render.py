"""The console's pages as HTML: the Jinja2 templates beside this module (escaped
throughout), the filters they use, and the geometry of its charts, computed here so
that the templates only place what they are given. No script, style or font is fetched
from anywhere but this server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from retain.budget import kib
from retain.chrono import stamp
from retain.panel_results import DayCount

_ENV = Environment(
    loader=PackageLoader("retain.doors.console", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,  # a template naming what a page did not give is a bug
    trim_blocks=True,
    lstrip_blocks=True,
)


def when(moment: datetime | None) -> str:
    """An instant as people read it: ``2026-12-05 08:40:12 UTC``."""
    if moment is None:
        return "—"
    return stamp(moment)[:19].replace("T", " ") + " UTC"


def percent(part: float, whole: float) -> float:
    return 0.0 if whole <= 0 else round(100.0 * part / whole, 2)


_ENV.filters.update(when=when, size=kib, percent=percent)


def page(template: str, **values: Any) -> str:
    """The page ``template`` rendered with ``values``."""
    return _ENV.get_template(template).render(**values)


@dataclass(frozen=True, slots=True)
class Bar:
    """One day's column of the activity chart, in the chart's own units."""

    x: float
    writes: float  # the height of the day's writes
    quarantines: float  # the height of its quarantines, drawn over the writes
    day: DayCount


CHART_HEIGHT = 120.0
BAR_WIDTH = 10.0
BAR_GAP = 4.0


def activity(days: Sequence[DayCount]) -> tuple[list[Bar], int, float]:
    """The activity chart's columns, the day count its top stands for, and its width."""
    top = max((d.writes for d in days), default=0) or 1
    scale = CHART_HEIGHT / top
    bars = [
        Bar(n * (BAR_WIDTH + BAR_GAP), d.writes * scale, d.quarantines * scale, d)
        for n, d in enumerate(days)
    ]
    return bars, top, max(len(days) * (BAR_WIDTH + BAR_GAP) - BAR_GAP, BAR_WIDTH)


def shares(counts: Mapping[str, int], order: Sequence[str]) -> list[tuple[str, int, float]]:
    """``counts`` in ``order`` (then any other key), each with its share of the whole in
    percent: the segments of a stacked bar."""
    total = sum(counts.values())
    keys = [k for k in order if counts.get(k)] + sorted(k for k in counts if k not in order)
    return [(k, counts[k], percent(counts[k], total)) for k in keys]


_ENV.globals.update(shares=shares, chart_height=CHART_HEIGHT, bar_width=BAR_WIDTH)
