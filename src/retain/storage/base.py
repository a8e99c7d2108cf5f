"""The storage seam: what the service asks of a database, and nothing more.

A backend owns SQL, transactions, retries and the mapping of driver errors
to ``StoreError``. It holds no business rule: it never decides whether a
write is allowed, only carries it out. Every backend passes the same contract
tests.

It is one piece past the usual size on purpose: it is the whole seam (the value types
that cross it and the protocols each backend implements), so that what a backend
owes the service is read in one place.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:  # vectors are numpy arrays; only a command that makes one loads numpy
    import numpy as np
    import numpy.typing as npt

    # a vector made by numpy, or a write's few made without it (float32 values alike)
    Vector = npt.NDArray[np.float32] | array[float]

    # the ledger's signals, holds, the graph's edges and mirrors' links: imported where
    # a row is made one (statements, relations, mirror_links), not for these annotations
    from retain.assertions import ConflictSignal
    from retain.governance.retention import Hold
    from retain.graph import Relation
    from retain.mirrors import MirrorLink

from retain.grants import Grant
from retain.model import (
    Agent,
    AgentSession,
    Event,
    Injection,
    ListPosition,
    Memory,
    Project,
    Proposal,
    Status,
    Team,
)

Progress = Callable[[str, int, int], None]
"""A long operation reports ``(phase, done, total)`` through one of these."""

T = TypeVar("T")


class Versioned(Protocol):
    @property
    def version(self) -> int: ...


V = TypeVar("V", bound=Versioned)


def migrations_ahead(
    migrations: Sequence[V], current: int, progress: Progress | None
) -> Iterator[V]:
    """The migrations past ``current``, in order. When an older store is upgraded, each is
    reported to ``progress`` (phase ``schema``) before it is applied, and all once they
    are: an index made over a large store takes seconds (5 at 1M memories). A new store's
    are not reported: its tables are empty."""
    ahead = [m for m in migrations if m.version > current]
    report = progress if current and ahead else None
    for done, migration in enumerate(ahead):
        if report is not None:
            report("schema", done, len(ahead))
        yield migration
    if report is not None:
        report("schema", len(ahead), len(ahead))


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Which memories a listing or search may return.

    ``scopes`` None means every scope of the realm. Timestamps are in stored
    form. ``expired_at`` keeps only memories expired at that instant, ``live_at``
    only those not expired then.
    """

    realm: str
    scopes: tuple[str, ...] | None = None
    statuses: tuple[str, ...] = ("active",)
    tag: str | None = None
    referencing: tuple[str, ...] = ()
    verified_before: str | None = None
    expired_at: str | None = None
    live_at: str | None = None  # keeps only memories not expired at that instant
    tiers_only: bool = False  # with ``scopes`` None: the tiers (global, projects), no identity
    loads: tuple[str, ...] = ()  # keeps only memories of these loads (empty: every load)
    trusts: tuple[str, ...] = ()  # keeps only memories at these trusts (empty: every trust)
    within: tuple[str, ...] | None = None  # keeps only these memory ids (None: any)
    contains: str | None = None  # keeps only those whose name, description or body holds it
    reviewer_only: bool | None = None  # True: only rows written quarantined; False: none


ScannedRow = tuple[str, str, str, str]  # a plain-text scan's row: id, name, description, body


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


@dataclass(frozen=True, slots=True)
class CensusRow:
    """How many rows of one scope stand at one status and trust, and their bodies' bytes;
    ``reviewer_only``: rows written quarantined (only a reviewer's view sees them)."""

    scope: str
    status: str
    trust: str
    reviewer_only: bool
    count: int
    body_bytes: int


@dataclass(frozen=True, slots=True)
class LoadCounts:
    """What the memory section counts: live index and search-only memories, expired ones
    (of any load), and the next expiry (stored form; None when none is due)."""

    index: int = 0
    search: int = 0
    expired: int = 0
    next_expiry: str | None = None


@dataclass(frozen=True, slots=True)
class KeySource:
    """What a memory's search key is made from (a thread neighbour's too)."""

    num: int
    memory_id: str
    realm: str
    scope: str
    name: str | None
    thread: str | None
    subject: str | None
    description: str
    body: str
    valid_from: str | None
    context: str  # the derived context the row holds now


@dataclass(frozen=True, slots=True)
class Described:
    """What a near-copy note weighs of a memory, read by the lookup that found it: its
    description and whether its writer's view may name it, without its body."""

    id: str
    realm: str
    scope: str
    name: str | None
    description: str
    status: Status
    reviewer_only: bool  # written quarantined (a ``quarantine_reason`` is kept)


@dataclass(frozen=True, slots=True)
class Standing:
    """What ranking needs of a memory, without its body: a search weighs every candidate
    by it and fetches only its results whole."""

    id: str
    scope: str
    thread: str | None
    subject: str | None
    priority: int
    read_count: int
    verified_at: datetime
    description: str
    body_bytes: int


@dataclass(frozen=True, slots=True)
class StoredVector:
    vec: int  # grows with every write, so a reader can pick up only what is new (0: unsaved)
    num: int
    model: str
    dim: int
    vector: Vector
    realm: str = ""


def vector_bytes(vector: Vector) -> bytes:
    """A vector as stored: float32, little-endian."""
    if isinstance(vector, array):
        if sys.byteorder == "little":
            return vector.tobytes()
        swapped = array("f", vector)
        swapped.byteswap()
        return swapped.tobytes()
    return vector.astype("<f4").tobytes()


@dataclass(frozen=True, slots=True)
class VectorRows:
    """Stored vectors of one model, in the order they were written, as columns."""

    last_vec: int
    nums: list[int]
    dims: list[int]
    realms: list[str]
    blobs: list[bytes]  # float32, little-endian


@dataclass(frozen=True, slots=True)
class SearchKey:
    """The derived search data of one memory: its context words (None: unchanged) and its
    vector (None: none)."""

    num: int
    context: str | None
    vector: StoredVector | None


class Reads(Protocol):
    """What a transaction reads: every verb's, through the view."""

    def realm_exists(self, realm: str) -> bool: ...
    def list_realms(self) -> list[tuple[str, str]]:
        """Every realm as (name, created_at), oldest first."""
        ...

    def get_project(self, realm: str, name: str) -> Project | None: ...
    def list_projects(self, realm: str) -> list[Project]: ...
    def get_agent(self, realm: str, name: str) -> Agent | None: ...
    def list_agents(self, realm: str) -> list[Agent]: ...
    def get_team(self, realm: str, name: str) -> Team | None: ...
    def list_teams(self, realm: str) -> list[Team]: ...
    def list_proposals(
        self, realm: str, status: str | None, record: str | None = None
    ) -> list[Proposal]:
        """The realm's proposals in the order they were made, of one ``status`` and of
        one promoted ``record`` when given."""
        ...

    def get_proposal(self, realm: str, proposal_id: str) -> Proposal | None: ...
    def list_grants(self, realm: str) -> list[Grant]:
        """The realm's stored grants, oldest first."""
        ...

    def get_hold(self, realm: str, target: str) -> Hold | None:
        """The legal hold standing on the memory ``target`` (its id), if one does."""
        ...

    def list_holds(self, realm: str) -> list[Hold]:
        """The realm's standing holds, oldest first."""
        ...

    def held_among(self, realm: str, targets: Sequence[str]) -> set[str]:
        """Which of the memories ``targets`` (ids) a hold stands on."""
        ...

    def memory_scopes(self, realm: str) -> list[str]:
        """Every scope the realm's memories are in (whatever their status), sorted."""
        ...

    def learned_before(
        self, realm: str, scope: str, before: str, after: tuple[str, str] | None, limit: int
    ) -> list[Memory]:
        """The memories of ``scope`` the store learned (``created_at``) before the stamp
        ``before``, whatever their status but ``forgotten``, in the order learned (then
        id), after the position ``after`` (its created_at stamp and id), at most ``limit``."""
        ...

    def count_memories(self, realm: str | None, scope: str | None = None) -> int:
        """Memories of a realm (the active ones of one scope), or of every realm with
        ``realm`` None."""
        ...

    def find_by_name(self, realm: str, name: str, scopes: Sequence[str] | None) -> list[Memory]:
        """The memories that hold ``name`` (of ``scopes``; None: any), by scope: a
        quarantined or discarded row holds no name."""
        ...

    def find_by_names(self, realm: str, names: Sequence[str]) -> dict[str, list[Memory]]:
        """``find_by_name`` of each of ``names`` in any scope, read together: the names
        some memory holds (a name no memory holds is not a key)."""
        ...

    def get_many(self, ids: Sequence[str]) -> list[Memory]: ...
    def quarantined(self, realm: str, after: str | None, limit: int) -> list[Memory]:
        """A realm's quarantined memories, oldest first (by creation, then id), after
        the memory of id ``after`` (None: from the first), at most ``limit``."""
        ...

    def successors(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(the id it supersedes, id, status) of every memory whose ``supersedes`` is
        one of ``ids``, in no order."""
        ...

    def relations(self, realm: str, ids: Sequence[str]) -> list[Relation]:
        """The realm's stored edges with one of ``ids`` at either end, oldest first."""
        ...

    def mirror_links(self, realm: str, memory_ids: Sequence[str]) -> list[MirrorLink]:
        """What each mirror holds of each of ``memory_ids``, by memory then mirror."""
        ...

    def list_mirror_links(self, realm: str) -> list[MirrorLink]:
        """Every link of the realm (what a copy of the store carries)."""
        ...

    def mirror_backlog(self, realm: str, limit: int) -> list[MirrorLink]:
        """The links a mirror has yet to take (pending, failed, removing,
        remove_failed), oldest first, at most ``limit``."""
        ...

    def mirror_counts(self, realm: str) -> dict[tuple[str, str], int]:
        """How many links each (mirror, state) has."""
        ...

    def open_relations(self, realm: str, after: str | None, limit: int) -> list[Relation]:
        """The realm's pairs waiting for a curator (``Relation.open``), by id, after the
        relation of id ``after`` (None: from the first), at most ``limit``."""
        ...

    def derived_from(self, realm: str, memory_id: str) -> list[Memory]:
        """The memories made from ``memory_id`` (their ``derived_from``), oldest first."""
        ...

    def relation_counts(self, realm: str | None = None) -> dict[str, int]:
        """How many edges of each type are stored (in ``realm``; None: every realm)."""
        ...

    def fact_versions(
        self, realm: str, scopes: Sequence[str], subject: str, predicate: str | None
    ) -> list[Memory]:
        """Every version, whatever its status, of the facts of ``scopes`` about
        ``subject`` (ignoring case), of one ``predicate`` or of all, in no order."""
        ...

    def ledger_facts(
        self,
        realm: str,
        scopes: Sequence[str] | None,
        subject: str | None,
        predicate: str | None,
        *,
        indexed: bool,
    ) -> list[Memory]:
        """The active facts of a realm (of ``scopes``; None: every scope), of one
        ``subject`` (ignoring case) and one ``predicate`` when given, oldest first;
        ``indexed``: only the assertions of the ledger (metadata ``ledger.store``)."""
        ...

    def conflicts(
        self,
        realm: str,
        entity: str | None = None,
        topic: str | None = None,
        store: str | None = None,
        *,
        active_only: bool = True,
    ) -> list[ConflictSignal]:
        """The realm's conflict signals (the active ones, unless ``active_only`` is
        False), of one entity, topic and store when given, by key."""
        ...

    def standings(self, ids: Sequence[str]) -> list[Standing]:
        """The ranking facts of ``ids`` that exist, in their order."""
        ...

    def list_memories(
        self, where: MemoryFilter, limit: int | None = None, after: ListPosition | None = None
    ) -> list[Memory]:
        """In index order (priority, newest first, id), after ``after`` when given."""
        ...

    def inline_entries(self, realm: str, now: str) -> list[InlineEntry]: ...
    def recent_memories(
        self, where: MemoryFilter, limit: int, before: tuple[str, str] | None = None
    ) -> list[Memory]:
        """Newest-updated first (then id, descending), after the position ``before``
        (``updated_at``, ``id``) when given."""
        ...

    def census(self, realm: str) -> list[CensusRow]:
        """Each scope's rows counted by status, trust and whether written quarantined."""
        ...

    def event_days(
        self, realm: str, since: str, kinds: Sequence[str]
    ) -> list[tuple[str, str, int]]:
        """(day, kind, count) of the realm's events of ``kinds`` since ``since``."""
        ...

    def recent_events(
        self, realm: str, before_seq: int | None, limit: int, kinds: Sequence[str] = ()
    ) -> list[Event]:
        """The realm's events newest first, below ``before_seq`` when given."""
        ...

    def referencing(self, realm: str, targets: Sequence[str]) -> list[Memory]: ...

    def load_counts(self, where: MemoryFilter, now: str) -> LoadCounts:
        """Of the memories ``where`` keeps: how many are live by load and how many expired
        at ``now``, and when the next of them expires."""
        ...

    def tag_counts(self, where: MemoryFilter) -> dict[str, int]:
        """How many of the memories ``where`` keeps carry each tag."""
        ...

    def list_injections(
        self,
        realm: str,
        *,
        memory_id: str | None = None,
        identity: str | None = None,
        session: str | None = None,
        limit: int = 100,
    ) -> list[Injection]:
        """Ledger rows, newest first."""
        ...

    def get_context_state(self, realm: str, identity: str, session: str) -> str | None: ...
    def legacy_imported(self, realm: str, identity: str, sha256: str) -> bool: ...
    def list_legacy_imports(self, realm: str) -> list[tuple[str, str, str]]:
        """(identity, sha256, imported_at) of every legacy file imported into a realm."""
        ...

    def list_context_states(self, realm: str) -> list[tuple[str, str, str, str]]:
        """(identity, session, state, updated_at) of every context session of a realm."""
        ...

    def get_session(self, realm: str, identity: str, key: str) -> AgentSession | None: ...
    def latest_sessions(self, realm: str, identity: str) -> list[AgentSession]:
        """The identity's sessions observed last (several when they share that instant)."""
        ...

    def list_sessions(self, realm: str) -> list[AgentSession]:
        """Every agent session of a realm, by identity and key."""
        ...

    def match_terms(
        self, where: MemoryFilter, terms: Sequence[str], *, prefix: bool, limit: int
    ) -> list[LexicalHit]:
        """Rows holding the words (or, with ``prefix``, words starting like them), best first."""
        ...

    def lookup_descriptions(
        self, where: MemoryFilter, asked: Sequence[Sequence[str]], *, limit: int, fewest: int
    ) -> list[list[Described]]:
        """For each word list of ``asked``, the newest ``limit`` rows whose descriptions
        hold its two rarest words of those ``fewest`` descriptions or more hold
        (``words.rarest``: none for a list with no such word, nor for one left with one
        word that ``DESCRIPTION_COMMON`` descriptions hold), newest first: a batch's
        lookups at once."""
        ...

    def scan_text(
        self, where: MemoryFilter, needles: Sequence[str], *, limit: int
    ) -> list[LexicalHit]:
        """Rows holding one of ``needles`` as plain text, scored (``words.scan_hits``)."""
        ...

    def scan_rows(self, where: MemoryFilter, needles: Sequence[str]) -> list[ScannedRow]:
        """The (id, name, description, body) of the rows ``where`` keeps that hold one of
        ``needles`` as the engine folds case: one pass over the rows, for every needle."""
        ...

    def key_sources(self, ids: Sequence[str]) -> list[KeySource]: ...
    def thread_neighbours(
        self, source: KeySource, radius: int
    ) -> tuple[list[KeySource], list[KeySource]]:
        """Up to ``radius`` memories of ``source``'s thread (in its scope: a thread never
        crosses tiers) before it and after it, nearest first."""
        ...

    def thread_adjacent(self, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """For each of ``ids`` in a thread, the ids just before and just after it there
        (within its scope)."""
        ...

    def thread_positions(self, ids: Sequence[str]) -> dict[str, int]:
        """For each of ``ids`` in a thread, its place there (1 = first)."""
        ...

    def iter_memories(self, after_num: int, limit: int) -> list[tuple[int, Memory]]:
        """Every realm's memories, whatever their status, in ``num`` order, a page at a
        time (for copying a store)."""
        ...

    def iter_key_sources(self, after_num: int, limit: int) -> list[KeySource]:
        """Every realm's memories in ``num`` order, a page at a time (for reindexing)."""
        ...

    def last_vector(self) -> int:
        """The newest ``vec`` written (0 for none): it changes whenever a vector is written."""
        ...

    def vectors_after(self, model: str, vec: int, limit: int) -> VectorRows:
        """Up to ``limit`` vectors of ``model`` written after ``vec``, oldest first."""
        ...

    def vector_nums(self, model: str) -> set[int]: ...

    def saw_stale_vectors(self) -> bool:
        """Whether, when this write took the write lock, a writer had left vectors to
        store that it never will (those ``stale_vectors`` lists); answered without a
        query of its own."""
        ...

    def stale_vectors(self, limit: int) -> list[str]:
        """Memories whose vectors a write left to store after its commit and whose writer
        never did (it died or failed in between): their ids, at most ``limit``."""
        ...

    def pending_vectors(self, model: str) -> int:
        """Memories with no vector of ``model`` whose vectors a committed write has yet
        to store (or a later write to make again)."""
        ...

    def vector_count(self, model: str) -> int: ...
    def vector_counts(self, realm: str | None = None) -> dict[str, int]:
        """How many memories have a vector, by model."""
        ...

    def open_vectors(self, model: str, dim: int, ann_from: int) -> None:
        """Make ready this transaction's search of ``model``'s vectors, which the database
        does itself (PostgreSQL: pgvector's index; SQLite: from ``ann_from`` of them the
        codes beside its file, built or extended as needed, below it every row in
        memory); asked before the two methods below."""
        ...

    def vector_sums(self, model: str, realm: str) -> list[tuple[int, Vector, int]]:
        """(dim, the sum of the realm's vectors of ``model`` as float32, how many) for
        each size."""
        ...

    def nearest(
        self, model: str, queries: Sequence[Vector], where: MemoryFilter, limit: int
    ) -> list[list[LexicalHit]]:
        """For each of ``queries`` (float32 vectors, of one size), the ``limit`` memories
        passing ``where`` whose ``model`` vectors are nearest to it (by cosine), best
        first, each with its cosine."""
        ...

    def subjects_named(self, realm: str, phrases: Sequence[str]) -> list[str]:
        """The stored subjects that equal one of ``phrases`` (ignoring case)."""
        ...

    def chain_head(self) -> tuple[int, str]: ...
    def last_tx_time(self) -> datetime | None: ...
    def ordered_from(self) -> int:
        """The ``seq`` from which transaction times do not decrease along the log: events
        before it were written before the store held that rule (by an earlier version)."""
        ...

    def iter_events(self, realm: str | None = None) -> Iterator[Event]: ...
    def list_events(
        self, realm: str, after_seq: int, limit: int, memory_id: str | None = None
    ) -> list[Event]:
        """A realm's events with ``seq`` above ``after_seq``, oldest first."""
        ...

    def count_events(self) -> int: ...
    def iter_signatures(self) -> Iterator[tuple[int, str, str]]:
        """(seq, key id, signature) of every signed event, in ``seq`` order."""
        ...

    def derived_of(self, realm: str, ids: Sequence[str]) -> list[Memory]:
        """The memories copied from one of ``ids`` (their ``derived_from``)."""
        ...

    def tickets_of(self, realm: str, ids: Sequence[str]) -> list[Proposal]:
        """The tickets of ``ids``, and those that promote or landed one of them."""
        ...

    def holders(self, realm: str, values: Sequence[str]) -> set[str]:
        """Of ``values``, those a memory's text or an event's payload of ``realm`` holds
        (after an erasure: text shared with what it left in place)."""
        ...

    def get_event(self, realm: str, event_id: str) -> Event | None: ...
    def count_keyed(self) -> int:
        """How many memories of the store have a search key (all but the forgotten)."""
        ...

    def vectors_of(self, ids: Sequence[str]) -> int:
        """How many stored vectors the memories of ``ids`` have."""
        ...

    def events_naming(self, realm: str, ids: Sequence[str]) -> list[Event]:
        """The events about one of ``ids``, and those about no memory whose payload names
        one (a ticket's), oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class Compaction:
    """What a store's compaction did (``Backend.compact``): its steps, and whether it
    completed (False: something kept a step from finishing, a reader of the log, or
    another process writing the vector codes)."""

    steps: tuple[str, ...]
    complete: bool

    def to_dict(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "complete": self.complete}


class Transaction(Reads, Protocol):
    """Operations that run inside one transaction of a backend."""

    # What changes the store: called by the unit of work alone (retain.service.work),
    # and by the store's own upkeep (migrations, copies, the index rebuild).

    def ensure_realm(self, realm: str, now: str) -> None: ...
    def insert_project(self, realm: str, name: str, now: str) -> None: ...
    def rename_project(self, realm: str, old: str, new: str) -> int: ...
    def delete_project(self, realm: str, name: str) -> None: ...
    def insert_agent(self, realm: str, name: str, now: str) -> None: ...
    def insert_team(self, realm: str, name: str, now: str) -> None: ...
    def insert_proposal(self, realm: str, proposal: Proposal) -> None: ...
    def update_proposal(self, realm: str, proposal: Proposal, status_was: str) -> bool:
        """Store a decided proposal if it still stands at ``status_was`` (else False)."""
        ...

    def insert_grant(self, grant: Grant) -> None: ...
    def delete_grant(self, grant_id: str) -> None: ...
    def insert_hold(self, hold: Hold) -> None: ...
    def delete_hold(self, realm: str, target: str) -> bool:
        """Remove the hold on ``target``; False when none stood."""
        ...

    def add_member(self, realm: str, team: str, agent: str, now: str) -> bool:
        """Put ``agent`` in ``team``; False when it was a member already."""
        ...

    def insert_memories(self, memories: Sequence[Memory]) -> None:
        """Insert new memories, as few statements as the backend allows."""
        ...

    def update_memory(self, memory: Memory, current: Memory, *, restore: bool = False) -> bool:
        """Replace ``current`` with ``memory`` unless the row moved on since (then False).

        ``created_at`` is kept, except by a ``restore``, which takes ``memory``'s."""
        ...

    def delete_memory(self, memory_id: str) -> None: ...
    def increment_read_count(self, memory_id: str) -> int: ...
    def insert_injections(self, realm: str, rows: Sequence[Injection]) -> None: ...
    def record_legacy_import(self, realm: str, identity: str, sha256: str, now: str) -> None: ...
    def put_context_state(
        self, realm: str, identity: str, session: str, state: str, now: str
    ) -> None: ...

    def put_session(self, realm: str, session: AgentSession) -> None:
        """Insert or replace the session (realm, identity, key)."""
        ...

    def put_conflict(self, signal: ConflictSignal) -> None:
        """Insert or replace the signal of (realm, entity, topic, store)."""
        ...

    def put_mirror_link(self, link: MirrorLink) -> None:
        """Insert the link, or replace the one of its (realm, memory, mirror)."""
        ...

    def put_relation(self, relation: Relation) -> None:
        """Insert the edge, or replace the one of its (realm, source, target, type)."""
        ...

    def delete_relations(self, realm: str, memory_id: str) -> int:
        """Remove every edge with ``memory_id`` at either end; how many."""
        ...

    def erase_relation_reasons(self, realm: str, memory_id: str) -> None:
        """Take the reasons out of every edge with ``memory_id`` at either end."""
        ...

    def set_keys(self, keys: Sequence[SearchKey]) -> None: ...
    def set_ordered_from(self, seq: int) -> None:
        """Record that the rule holds from ``seq`` (a copy of a store keeps its source's)."""
        ...

    def append_event(self, event: Event) -> None: ...
    def rewrite_payload(self, seq: int, payload: str) -> None:
        """Replace an event's payload (an erasure's: its digest and hash stay)."""
        ...

    def erase_ticket(self, realm: str, ticket: Proposal) -> None:
        """Store a ticket's erased text (summary, body, evidence)."""
        ...

    def sign_event(self, seq: int, key_id: str, signature: str) -> None:
        """Keep the signing key's signature of the event ``seq``."""
        ...


@runtime_checkable
class CountsAhead(Protocol):
    """A transaction whose every statement is a round trip to a server (PostgreSQL): it
    counts the rows of all of a search's words and phrases in one, before the search's
    queries ask for them one at a time (eight synonyms asked sixteen times)."""

    def count_ahead(self, terms: Sequence[str]) -> None:
        """Count, for the rest of the transaction, the rows matching each of ``terms``
        as ``match_terms`` counts them unprefixed."""
        ...


T_co = TypeVar("T_co", covariant=True)


class Pending(Protocol[T_co]):
    """A read started beside the caller's (``ReadsBeside``): its result once it ends."""

    def result(self) -> T_co:
        """What the read returned, waiting for it; what it raised is raised."""
        ...


@runtime_checkable
class ReadsBeside(Protocol):
    """A backend that can run a read beside another at the same time, on a second
    connection (PostgreSQL's pool; SQLite's spare connection), to spread one search over
    the machine's cores."""

    def read_beside(self, fn: Callable[[Transaction], T]) -> Pending[T] | None:
        """``fn`` started now in a read transaction of its own; None, and nothing
        started, when the backend has no room for it (the caller runs ``fn`` itself)."""
        ...


class Backend(Protocol):
    """A store: transactions over one database."""

    location: str
    # Whether a read can wait: on the network, or on another process's lock. False for
    # SQLite in WAL mode, where a read is this process's own work (a reader never waits
    # for a writer), so a server may run it on its event loop.
    reads_wait: bool

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
    def compact(self, *, full: bool = False, progress: Progress | None = None) -> Compaction:
        """Shed what erasures and deletes left in the store's files (SQLite: merge the
        full-text index, build the vector codes again, with ``progress``, when
        it holds a deleted row's codes, checkpoint and truncate the log; PostgreSQL:
        VACUUM)."""
        ...

    def index_vectors(
        self, model: str, dim: int, at_least: int, progress: Progress | None = None
    ) -> int:
        """Bring the store's own index of ``model``'s vectors up to date, building it once
        the store holds ``at_least`` of them (SQLite's vector codes; PostgreSQL's is
        kept by every write); how many it holds (0: none is kept, or none could be
        built while another process held it)."""
        ...

    def residue(self, needles: Sequence[str]) -> dict[str, list[str]]:
        """Each of ``needles`` still stored, with where: the store's files (SQLite), or
        the tables one of whose rows holds it (PostgreSQL)."""
        ...

    def close(self) -> None: ...
