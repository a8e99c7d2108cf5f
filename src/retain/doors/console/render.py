"""The console's pages as HTML: the Jinja2 templates beside this module (escaped
throughout), the filters they use, and the geometry of its charts, computed here so
that the templates only place what they are given. No script, style or font is fetched
from anywhere but this server.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from retain.budget import kib
from retain.chrono import stamp
from retain.model import Event
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


# Why a record waits for review, in words (the codes of ``retain.service.admission``).
REASONS: Mapping[str, str] = {
    "llm_writes": "every agent write waits for review here ([memory] llm_writes)",
    "tainted_session": "written in a session that had read untrusted content",
    "secret_detected": "it holds what looks like a secret: it can only be discarded",
    "claimed": "written by an anonymous caller",
}


def reason(code: str) -> str:
    return REASONS.get(code, code)


def gist(event: Event) -> str:
    """What an event of the log says, in a line: a review's verdict and rationale, why a
    write was held, whose session was tainted, which ticket; "" when its payload is
    withheld or says nothing more than its kind."""
    if event.payload is None:
        return ""
    try:
        payload = json.loads(event.payload)
    except ValueError:
        return ""
    if not isinstance(payload, dict):
        return ""
    if event.kind == "review" and isinstance(payload.get("review"), dict):
        review = payload["review"]
        verdict = {"release": "released", "tombstone": "discarded"}.get(
            str(review.get("verdict")), str(review.get("verdict"))
        )
        why = str(review.get("rationale") or "")
        return verdict + (f": “{why}”" if why else "")
    if event.kind == "quarantine" and payload.get("reasons"):
        return "held: " + "; ".join(reason(str(r)) for r in payload["reasons"])
    if event.kind == "taint":
        cause = payload.get("cause") or {}
        tool = cause.get("tool") if isinstance(cause, dict) else None
        return (
            f"{payload.get('identity')} session {payload.get('session')}: "
            f"{payload.get('from')} → {payload.get('to')}" + (f" (read {tool})" if tool else "")
        )
    if event.kind.startswith("ticket_") or event.kind == "propose":
        return f"ticket {payload.get('id')}: {payload.get('summary', '')}".rstrip(": ")
    if event.kind == "promote":
        return f"promoted to {payload.get('target')} as {payload.get('landed')}"
    return ""


_ENV.filters.update(when=when, size=kib, percent=percent, gist=gist, reason=reason)


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
