"""What the relation graph's verbs give back (``retain.service.relation``): a memory's
edges (``GraphResult``), a link's or a decision's outcome (``LinkResult``) and a dedup
pass's pairs (``DedupResult``). Imported when one of those verbs runs, not with the
service: five classes cost every command a few milliseconds to make.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retain.assertions import ConflictSignal
    from retain.graph import Relation
    from retain.model import Memory
    from retain.receipt import Receipt


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge of a memory's graph as ``graph`` shows it: its type, whether it leaves
    the memory (``out``) or arrives, the memory at the other end (None: a reference that
    names no memory, given as ``reference``), and the stored relation behind it (None:
    read from the memories themselves: a reference, a version's ``supersedes``, a
    successor's ``derived_from``)."""

    type: str
    out: bool
    other: Memory | None
    relation: Relation | None = None
    reference: str | None = None

    def to_dict(self, now: datetime) -> dict[str, Any]:
        other = self.other
        return {
            "type": self.type,
            "direction": "out" if self.out else "in",
            "id": None if other is None else other.id,
            "name": None if other is None else other.name,
            "scope": None if other is None else other.scope,
            "description": None if other is None else other.description,
            "status": None if other is None else other.status.value,
            "expired": None if other is None else other.is_expired(now),
            "reference": self.reference,
            "relation": None if self.relation is None else self.relation.to_dict(),
            "stored": self.relation is not None,
        }


@dataclass(frozen=True, slots=True)
class GraphResult:
    """A memory with its outgoing and incoming edges (``graph``)."""

    memory: Memory
    edges: tuple[Edge, ...]
    now: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory.to_dict(self.now),
            "outgoing": [e.to_dict(self.now) for e in self.edges if e.out],
            "incoming": [e.to_dict(self.now) for e in self.edges if not e.out],
        }


@dataclass(frozen=True, slots=True)
class LinkResult:
    """What ``link`` or ``decide`` did: the relation as it stands, the memories at its
    ends as they now are, whether the call changed anything, and its receipt."""

    relation: Relation
    source: Memory
    target: Memory
    changed: bool
    now: datetime
    receipt: Receipt | None = None
    conflict: ConflictSignal | None = None  # a contradiction's signal, as it now stands

    def to_dict(self) -> dict[str, Any]:
        return {
            "relation": self.relation.to_dict(),
            "source": self.source.to_dict(self.now),
            "target": self.target.to_dict(self.now),
            "changed": self.changed,
            "conflict": None if self.conflict is None else self.conflict.to_dict(),
            "receipt": None if self.receipt is None else self.receipt.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    """A pair for a curator: two memories, their cosine and score, the details only one
    of them names (a possible contradiction), and the ``similar_to`` relation recording
    them (``new``: linked by this pass)."""

    first: Memory
    second: Memory
    cosine: float
    score: float
    relation: Relation
    new: bool
    differs: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "first": self.first.to_dict(now),
            "second": self.second.to_dict(now),
            "cosine": round(self.cosine, 4),
            "score": round(self.score, 4),
            "relation": self.relation.to_dict(),
            "new": self.new,
            "differs": [list(self.differs[0]), list(self.differs[1])],
        }


@dataclass(frozen=True, slots=True)
class DedupResult:
    """What a ``dedup`` pass found: the pairs at or above ``threshold`` waiting for a
    curator (those linked before and still open too), best first, and how many memories
    it compared."""

    pairs: tuple[Candidate, ...]
    compared: int
    threshold: float
    linked: int
    now: datetime
    receipt: Receipt | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "compared": self.compared,
            "linked": self.linked,
            "pairs": [p.to_dict(self.now) for p in self.pairs],
            "receipt": None if self.receipt is None else self.receipt.to_dict(),
        }
