"""What a hygiene pass reports (``retain hygiene``): one section per thing that keeps a
store honest, each with how many there are and the first of them.

The sections, in the order they are listed: memories unverified for longer than the
period asked, memories past their expiry, references that name no memory, inline bands
near or past their budget, open contradictions, active conflict signals, tickets about
to expire, and clusters of near-duplicates waiting for a curator. The service fills them
(``retain.service.hygiene``, which imports this module when it runs: it is not worth
every command's start); nothing here reads a store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from retain.chrono import stamp

SECTIONS = (
    "unverified",
    "expired",
    "dangling_references",
    "inline_pressure",
    "contradictions",
    "conflicts",
    "tickets_expiring",
    "near_duplicates",
)


@dataclass(frozen=True, slots=True)
class Section:
    """One section: its name, how many it counts and the first of them (as records)."""

    name: str
    count: int
    items: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "items": list(self.items)}


@dataclass(frozen=True, slots=True)
class HygieneReport:
    """A hygiene pass's sections, in ``SECTIONS`` order, as read at ``now``."""

    sections: tuple[Section, ...]
    now: datetime
    unverified: str
    expiring: str

    @property
    def clean(self) -> bool:
        return not any(s.count for s in self.sections)

    def section(self, name: str) -> Section:
        return next(s for s in self.sections if s.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "read_at": stamp(self.now),
            "unverified_for": self.unverified,
            "expiring_within": self.expiring,
            "clean": self.clean,
            "sections": {s.name: s.to_dict() for s in self.sections},
        }


def clusters(pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The connected groups of the pairs' ends, each sorted, largest first."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(root(x), []).append(x)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
