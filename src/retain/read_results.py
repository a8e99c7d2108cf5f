"""What a read and a search give back: a memory's page (``ReadResult``, with its
``Reference`` lines) and a search's hits (``SearchResult`` of ``SearchHit``). Apart from
``retain.results`` (which gives them too) so that a read or a search loads these four
classes alone, and not the results of the verbs it does not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from retain.chrono import age_phrase
from retain.model import Memory


@dataclass(frozen=True, slots=True)
class Reference:
    """One line of a memory's references, resolved when it names a memory."""

    target: str
    description: str | None


@dataclass(frozen=True, slots=True)
class ReadResult:
    memory: Memory
    text: str
    offset: int
    next_offset: int | None
    total_chars: int
    caption: str
    references: tuple[Reference, ...]
    referenced_by: tuple[str, ...]

    def to_dict(self, now: datetime) -> dict[str, Any]:
        """The memory's record (without its whole body) and this page of the body."""
        return {
            **self.memory.to_dict(now),
            "text": self.text,
            "offset": self.offset,
            "next_offset": self.next_offset,
            "total_chars": self.total_chars,
            "caption": self.caption,
            "references": [
                {"target": r.target, "description": r.description} for r in self.references
            ],
            "referenced_by": list(self.referenced_by),
        }


@dataclass(frozen=True, slots=True)
class SearchHit:
    memory: Memory
    score: float
    senses: tuple[str, ...]
    scanned_terms: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    expired: bool = False  # past its expiry when the search ran

    def to_dict(self, now: datetime) -> dict[str, Any]:
        """The memory's public record with how it was found (a short body whole)."""
        record = self.memory.to_dict(now)
        record.update(
            expired=self.expired,
            score=round(self.score, 6),
            senses=list(self.senses),
            scanned=list(self.scanned_terms),
            verified=self.memory.was_verified,
            age=age_phrase(self.memory.created_at, now),
        )
        if self.memory.short_body is not None:
            record["body"] = self.memory.short_body
        return record


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: tuple[SearchHit, ...]
    summary: str
    listing: bool
    embedder: str = ""
    degraded: str | None = None  # why the configured embedder is not the one in use

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "listing": self.listing,
            "embedder": self.embedder,
            "degraded": self.degraded,
            "memories": [hit.to_dict(now) for hit in self.hits],
        }
