"""What the console's verbs answer (``retain.service.panel``): a page of records without
their bodies, one record with its supersede chain, and the overview of a realm.

A row the reader's view covers but may not read, because it was written quarantined and
the reader may not review it, is given **withheld**: its id, scope, status, trust, times
and place in a supersede chain, never its name, description, tags or body. The console
says so instead of pretending the row does not exist; a row outside the view is not
given at all (``View.shows`` decides which).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from retain.chrono import stamp
from retain.grants import REVIEW
from retain.model import Event, Memory


@dataclass(frozen=True, slots=True)
class RecordRow:
    """One row of a listing: a memory without its body (``body_bytes`` stands in)."""

    memory: Memory
    withheld: bool = False

    def to_dict(self) -> dict[str, Any]:
        m = self.memory
        row: dict[str, Any] = {
            "id": m.id,
            "scope": m.scope,
            "status": m.status.value,
            "trust": m.trust.value,
            "ever_quarantined": m.ever_quarantined,
            "created_at": stamp(m.created_at),
            "updated_at": stamp(m.updated_at),
            "supersedes": m.supersedes,
            "superseded_by": m.superseded_by,
            "withheld": self.withheld,
        }
        if self.withheld:
            return row | {"needs": REVIEW}
        return row | {
            "name": m.name,
            "description": m.description,
            "tags": list(m.tags),
            "author": m.author,
            "body_bytes": m.body_bytes,
        }


@dataclass(frozen=True, slots=True)
class RecordPage:
    """A page of records, newest-updated first. ``next_cursor`` names its last row and is
    set exactly when more rows follow; ``withheld`` counts its withheld rows, and
    ``unsearched`` is True when a text or tag filter left out rows the reader may not
    read (their content is never matched for it)."""

    rows: tuple[RecordRow, ...]
    next_cursor: str | None = None
    unsearched: bool = False

    @property
    def withheld(self) -> int:
        return sum(row.withheld for row in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": [row.to_dict() for row in self.rows],
            "next_cursor": self.next_cursor,
            "withheld": self.withheld,
            "unsearched": self.unsearched,
        }


@dataclass(frozen=True, slots=True)
class RecordView:
    """One record as the reader may see it: whole (with its body), or withheld; its
    supersede chain, the records it replaced (``ancestors``, nearest first) and those
    that replaced or claimed to replace it (``successors``, in order, with quarantined
    updates, retracted and discarded ones among them), and the records copied from it
    (``derived``: a release's successor, a promotion's copy), each as a body-free row."""

    record: RecordRow
    now: datetime
    ancestors: tuple[RecordRow, ...] = ()
    successors: tuple[RecordRow, ...] = ()
    derived: tuple[RecordRow, ...] = ()  # copied from it: a release's successor, a promotion

    @property
    def memory(self) -> Memory:
        return self.record.memory

    def to_dict(self) -> dict[str, Any]:
        shown = self.record.to_dict()
        if not self.record.withheld:
            shown = self.memory.to_dict(self.now, body=True) | {
                "content_hash": self.memory.content_hash,
                "quarantine_reason": list(self.memory.quarantine_reason),
                "session": self.memory.session,
                "body_bytes": self.memory.body_bytes,
                "withheld": False,
            }
        return {
            "record": shown,
            "ancestors": [row.to_dict() for row in self.ancestors],
            "successors": [row.to_dict() for row in self.successors],
            "derived": [row.to_dict() for row in self.derived],
        }


@dataclass(frozen=True, slots=True)
class ScopeCount:
    """One scope's rows as the reader may see them: how many stand at each status and at
    each trust, and their bodies' bytes; ``withheld``: rows the view covers but may not
    read (written quarantined), counted apart and in no other figure."""

    scope: str
    statuses: dict[str, int] = field(default_factory=dict)
    trusts: dict[str, int] = field(default_factory=dict)
    body_bytes: int = 0
    withheld: int = 0

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "total": self.total,
            "statuses": dict(self.statuses),
            "trusts": dict(self.trusts),
            "body_bytes": self.body_bytes,
            "withheld": self.withheld,
        }


@dataclass(frozen=True, slots=True)
class BandUse:
    """What one inline band holds against the budget: the global tier alone
    (``project`` None) or the global tier with one project's."""

    project: str | None
    inline_bytes: int
    budget: int

    @property
    def pressure(self) -> float:
        return self.inline_bytes / self.budget if self.budget else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "inline_bytes": self.inline_bytes,
            "budget": self.budget,
            "pressure": round(self.pressure, 4),
        }


@dataclass(frozen=True, slots=True)
class DayCount:
    """One day's writes and quarantines in the log (``day``: ``YYYY-MM-DD``, UTC)."""

    day: str
    writes: int = 0
    quarantines: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day, "writes": self.writes, "quarantines": self.quarantines}


@dataclass(frozen=True, slots=True)
class Overview:
    """A realm at a glance: each scope's counts, each inline band's use of the budget,
    and the log's writes and quarantines on each of the last ``days`` days."""

    realm: str
    scopes: tuple[ScopeCount, ...]
    bands: tuple[BandUse, ...]
    days: tuple[DayCount, ...]

    @property
    def withheld(self) -> int:
        return sum(s.withheld for s in self.scopes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "realm": self.realm,
            "scopes": [s.to_dict() for s in self.scopes],
            "bands": [b.to_dict() for b in self.bands],
            "days": [d.to_dict() for d in self.days],
            "withheld": self.withheld,
        }


class EventPage(list[Event]):
    """A page of the timeline, newest first, and ``next_cursor``: the ``seq`` to read
    below for the next page, set exactly when more events follow (else None)."""

    __slots__ = ("next_cursor",)

    def __init__(self, events: Iterable[Event] = (), next_cursor: int | None = None) -> None:
        super().__init__(events)
        self.next_cursor = next_cursor
