"""The storage seam: what the service asks of a database, and nothing more.

A backend owns SQL, transactions, retries and the mapping of driver errors
to ``StoreError``. It holds no business rule: it never decides whether a
write is allowed, only carries it out. Every backend passes the same contract
tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from retain.model import Event, Memory, Project

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Which memories a listing or search may return.

    ``scopes`` None means every scope of the realm. Timestamps are in stored
    form. ``expired_at`` keeps only memories expired at that instant.
    """

    realm: str
    scopes: tuple[str, ...] | None = None
    statuses: tuple[str, ...] = ("active",)
    tag: str | None = None
    referencing: tuple[str, ...] = ()
    verified_before: str | None = None
    expired_at: str | None = None


@dataclass(frozen=True, slots=True)
class LexicalHit:
    memory_id: str
    score: float  # higher is better
    matched: tuple[str, ...] = ()  # for a scan: the needles that matched


@dataclass(frozen=True, slots=True)
class InlineEntry:
    memory_id: str
    name: str | None
    scope: str
    body_bytes: int


class Transaction(Protocol):
    """Operations that run inside one transaction of a backend."""

    # realms and projects
    def realm_exists(self, realm: str) -> bool: ...
    def ensure_realm(self, realm: str, now: str) -> None: ...
    def get_project(self, realm: str, name: str) -> Project | None: ...
    def list_projects(self, realm: str) -> list[Project]: ...
    def insert_project(self, realm: str, name: str, now: str) -> None: ...
    def rename_project(self, realm: str, old: str, new: str) -> int: ...
    def delete_project(self, realm: str, name: str) -> None: ...
    def count_memories(self, realm: str, scope: str | None = None) -> int: ...

    # memories
    def find_by_name(self, realm: str, name: str, scopes: Sequence[str] | None) -> list[Memory]: ...
    def get_many(self, ids: Sequence[str]) -> list[Memory]: ...
    def insert_memories(self, memories: Sequence[Memory]) -> None:
        """Insert new memories, as few statements as the backend allows."""
        ...

    def update_memory(self, memory: Memory, current: Memory) -> bool:
        """Replace ``current`` with ``memory`` unless the row moved on since (then False)."""
        ...

    def delete_memory(self, memory_id: str) -> None: ...
    def increment_read_count(self, memory_id: str) -> int: ...
    def list_memories(self, where: MemoryFilter, limit: int | None = None) -> list[Memory]: ...
    def inline_entries(self, realm: str, now: str) -> list[InlineEntry]: ...
    def referencing(self, realm: str, targets: Sequence[str]) -> list[Memory]: ...

    # lexical search
    def match_terms(
        self, where: MemoryFilter, terms: Sequence[str], *, prefix: bool, limit: int
    ) -> list[LexicalHit]:
        """Rows holding the words (or, with ``prefix``, words starting like them), best first."""
        ...

    def lookup_words(
        self, where: MemoryFilter, words: Sequence[str], *, field: str, limit: int
    ) -> list[str]:
        """Ids of rows whose ``field`` (name, description or body) holds the rarest words."""
        ...

    def scan_text(
        self, where: MemoryFilter, needles: Sequence[str], *, limit: int
    ) -> list[LexicalHit]: ...

    # the event log
    def chain_head(self) -> tuple[int, str]: ...
    def append_event(self, event: Event) -> None: ...
    def iter_events(self, realm: str | None = None) -> Iterator[Event]: ...
    def count_events(self) -> int: ...


class Backend(Protocol):
    """A store: transactions over one database."""

    location: str

    def write(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` in one write transaction; all of it lands or none does."""
        ...

    def read(self, fn: Callable[[Transaction], T]) -> T:
        """Run ``fn`` against one consistent snapshot."""
        ...

    def schema_version(self) -> int: ...
    def size_bytes(self) -> int: ...
    def check_index(self) -> tuple[bool, int, list[str]]:
        """(sound, documents held, problems) for the full-text index."""
        ...

    def rebuild_index(self) -> None: ...
    def close(self) -> None: ...
