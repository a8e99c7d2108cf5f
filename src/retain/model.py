"""The nouns: frozen value types that cross every layer.

Nothing here touches storage or enforces a rule; the service does that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from retain.chrono import age_phrase, stamp

DEFAULT_REALM = "default"
GLOBAL_SCOPE = "global"
PROJECT_PREFIX = "project:"
AGENT_PREFIX = "agent:"
OPERATOR_PREFIX = "operator:"
TEAM_PREFIX = "team:"
DEFAULT_PRIORITY = 5
COUNT_MAX = 2**31 - 1  # the largest count a store's count column (PostgreSQL INTEGER) holds
SHORT_BODY_CHARS = 280


class Load(StrEnum):
    """How a memory reaches an agent's context."""

    INLINE = "inline"  # body rendered whole, within the inline budget
    INDEX = "index"  # listed by description in the index
    SEARCH = "search"  # reached by search alone


class Trust(StrEnum):
    """How far a memory is trusted, lowest first."""

    CLAIMED = "claimed"
    OBSERVED = "observed"
    ATTESTED = "attested"
    VERIFIED = "verified"


def lower_trust(a: Trust, b: Trust) -> Trust:
    """The less trusted of two levels."""
    order = list(Trust)
    return a if order.index(a) <= order.index(b) else b


class Status(StrEnum):
    """Where a memory stands in its life."""

    ACTIVE = "active"
    QUARANTINED = "quarantined"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    DISCARDED = "discarded"
    FORGOTTEN = "forgotten"


def project_scope(project: str) -> str:
    """The scope string of a project's tier."""
    return PROJECT_PREFIX + project


def agent_scope(agent: str) -> str:
    """The scope of an agent identity's own memories."""
    return AGENT_PREFIX + agent


def team_scope(team: str) -> str:
    """The scope a team's agents share."""
    return TEAM_PREFIX + team


def scope_project(scope: str) -> str | None:
    """The project a scope belongs to, or None for any other scope."""
    return scope[len(PROJECT_PREFIX) :] if scope.startswith(PROJECT_PREFIX) else None


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory, every stored field, and ``superseded_by``: derived, never stored.

    ``supersedes`` is the memory this one replaced (an agent's update, a fact's next
    version); ``superseded_by``, on a superseded memory the service read, is the one
    that replaced it (None on any other, and on one built outside a read)."""

    id: str
    realm: str
    scope: str
    name: str | None
    description: str
    body: str
    tags: tuple[str, ...]
    priority: int
    load: Load
    references: tuple[str, ...]
    source: str
    subject: str | None
    predicate: str | None
    trust: Trust
    status: Status
    ever_quarantined: bool
    supersedes: str | None
    content_hash: str
    author: str
    created_at: datetime
    updated_at: datetime
    verified_at: datetime
    expires_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    read_count: int
    metadata: dict[str, Any] = field(default_factory=dict)
    thread: str | None = None
    changed_by: str | None = None  # who last changed it, once someone has (else its author)
    superseded_by: str | None = None

    @property
    def project(self) -> str | None:
        return scope_project(self.scope)

    @property
    def tier(self) -> str:
        """``global``, the project's name, or the agent or team scope, for people."""
        if self.project:
            return self.project
        return self.scope

    @property
    def body_bytes(self) -> int:
        return len(self.body.encode("utf-8"))

    @property
    def was_verified(self) -> bool:
        """Checked after it was recorded."""
        return self.verified_at > self.created_at

    @property
    def short_body(self) -> str | None:
        """The body, when short enough to show with a search hit."""
        return self.body if len(self.body) <= SHORT_BODY_CHARS else None

    def is_expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def position(self) -> ListPosition:
        return ListPosition(self.priority, self.created_at, self.id)

    def to_dict(self, now: datetime, *, body: bool = False) -> dict[str, Any]:
        """The public record: what ``--format json`` and the HTTP API print."""
        record: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "scope": self.scope,
            "project": self.project,
            "description": self.description,
            "priority": self.priority,
            "load": self.load.value,
            "tags": list(self.tags),
            "references": list(self.references),
            "source": self.source,
            "subject": self.subject,
            "thread": self.thread,
            "valid_from": stamp(self.valid_from) if self.valid_from else None,
            "trust": self.trust.value,
            "status": self.status.value,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "author": self.author,
            "changed_by": self.changed_by or self.author,
            "created_at": stamp(self.created_at),
            "updated_at": stamp(self.updated_at),
            "verified_at": stamp(self.verified_at),
            "expires_at": stamp(self.expires_at) if self.expires_at else None,
            "expired": self.is_expired(now),
            "read_count": self.read_count,
        }
        if body:
            record["body"] = self.body
        return record


@dataclass(frozen=True, slots=True)
class Project:
    name: str
    created_at: datetime
    memories: int = 0  # how many it holds: one name for this count at every door


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote, and the agents' memories it left out (not in the format yet)."""

    memories: int
    left_out: int = 0


@dataclass(frozen=True, slots=True)
class Proposal:
    """An agent's request to write beyond its own scope, for a curator to decide."""

    id: str
    source: str  # the proposing principal
    target: str  # the scope it would be written to: global or team:<name>
    trust: Trust
    summary: str
    body: str
    evidence: str
    action: str  # what the curator would do: "add"
    status: str  # "open" until decided
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Agent:
    """A registered agent identity of a realm, and the teams it belongs to."""

    name: str
    created_at: datetime
    teams: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Team:
    """A group of agents that shares a scope (the seeds' "mob")."""

    name: str
    created_at: datetime
    members: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Injection:
    """One row of the injection ledger: a memory rendered into an identity's context."""

    memory_id: str
    identity: str  # the principal it was rendered for (agent:<name>, app:<name>, ...)
    session: str  # the context session's key ("" when none was given)
    surface: str  # inline, listed (over the inline budget), index or recall
    injected_at: datetime
    seq: int = 0

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"seq": self.seq} if self.seq else {}  # 0: not read back
        return record | {
            "memory_id": self.memory_id,
            "identity": self.identity,
            "session": self.session,
            "surface": self.surface,
            "injected_at": stamp(self.injected_at),
        }


@dataclass(frozen=True, slots=True)
class ContextResult:
    """The memory section rendered for one view, and what went into it."""

    text: str
    full: bool  # the whole section (else only what changed since the session's last turn)
    session: str
    project: str | None
    changes: tuple[str, ...]  # the kinds of change a delta holds (empty for a full one)
    injected: tuple[Injection, ...]  # the injection ledger rows this render wrote
    inline_bytes: int  # every inline body in force in the view
    inline_budget: int
    index_left_out: int  # index memories not listed for the ceilings
    search_only: int
    expired: int
    recall: str  # off (no turn text), ok, or skipped
    recall_note: str | None = None  # why recall was skipped

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "full": self.full,
            "session": self.session,
            "project": self.project,
            "changes": list(self.changes),
            "injected": [i.to_dict() for i in self.injected],
            "inline_bytes": self.inline_bytes,
            "inline_budget": self.inline_budget,
            "index_left_out": self.index_left_out,
            "search_only": self.search_only,
            "expired": self.expired,
            "recall": self.recall,
            "recall_note": self.recall_note,
        }


@dataclass(frozen=True, slots=True)
class MigrateResult:
    """What ``migrate_to`` copied (a copy that did not verify raised instead)."""

    source: str
    target: str
    realms: int
    memories: int
    events: int
    chain_head: str  # the same in both stores
    rekeyed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "realms": self.realms,
            "memories": self.memories,
            "events": self.events,
            "chain_head": self.chain_head,
            "rekeyed": self.rekeyed,
        }


@dataclass(frozen=True, slots=True)
class ListPosition:
    """Where a memory stands in index order (priority, then newest first, then id): a
    listing continues after it, whatever has changed since."""

    priority: int
    created_at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the append-only, hash-chained log."""

    seq: int
    event_id: str
    realm: str
    memory_id: str | None
    kind: str
    tx_time: datetime
    principal: str
    reason: str
    payload: str | None
    payload_digest: str
    prev_hash: str
    hash: str
    withheld: bool = False  # the reader's view does not see its memory: no payload shown

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "event_id": self.event_id,
            "realm": self.realm,
            "memory_id": self.memory_id,
            "kind": self.kind,
            "tx_time": stamp(self.tx_time),
            "principal": self.principal,
            "reason": self.reason,
            "payload": self.payload,
            "payload_digest": self.payload_digest,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
            "withheld": self.withheld,
        }


@dataclass(frozen=True, slots=True)
class Restore:
    """Values an import brings back as they were, instead of stamping new ones."""

    created_at: datetime
    verified_at: datetime
    read_count: int


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One memory write. ``None`` keeps what is there; ``""`` clears body or expiry,
    ``[]`` clears a list."""

    name: str
    description: str | None = None
    body: str | None = None
    tags: Sequence[str] | None = None
    priority: int | None = None
    load: str | Load | None = None
    references: Sequence[str] | None = None
    source: str | None = None
    expires: str | None = None
    subject: str | None = None
    thread: str | None = None
    valid_from: str | None = None
    project: str | None = None
    tier: str | None = None
    verified: bool = False
    create_only: bool = False
    expected_hash: str | None = None
    restore: Restore | None = None
    exact_tier: bool = False


def exported_text(memory: Memory) -> str:
    """``memory`` as the text an export writes for it (frontmatter, then the body): what
    a change's ``before`` and ``after`` are drawn over."""
    # transfer imports this module, so its renderer is imported when a text is asked
    # for: one renderer for exports and diffs, and no YAML work for a result whose
    # texts nobody reads (a batch write or an import).
    from retain.transfer import render

    return render(memory).decode("utf-8")


class _Changed:
    """``before`` and ``after`` of a result that changed ``memory`` from ``previous``
    (None: the change created it), rendered only when read."""

    __slots__ = ()
    memory: Memory
    previous: Memory | None

    @property
    def before(self) -> str | None:
        return None if self.previous is None else exported_text(self.previous)

    @property
    def after(self) -> str:
        return exported_text(self.memory)


@dataclass(frozen=True, slots=True)
class WriteResult(_Changed):
    """What a write did. ``before`` and ``after`` are the memory's exported text before
    and after it (``before`` None for a new memory; equal when nothing changed)."""

    memory: Memory
    created: bool
    changed: bool
    notes: tuple[str, ...] = ()
    previous: Memory | None = None  # the memory as it was (None: the write created it)

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            **self.memory.to_dict(now, body=True),
            "created": self.created,
            "changed": self.changed,
            "notes": list(self.notes),
            "before": self.before,
            "after": self.after,
        }


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
class EditResult(_Changed):
    """What an edit did; ``before`` and ``after`` are the memory's exported text."""

    memory: Memory
    replacements: int
    excerpt: str
    previous: Memory | None = None  # the memory as it was before the edit

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            **self.memory.to_dict(now, body=True),
            "replacements": self.replacements,
            "excerpt": self.excerpt,
            "before": self.before,
            "after": self.after,
        }


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """What a delete removed: the memory as it was (``before``, its exported text;
    ``after`` is None) and what still references it."""

    memory: Memory
    referenced_by: tuple[str, ...]

    @property
    def before(self) -> str:
        return exported_text(self.memory)

    @property
    def after(self) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "removed": self.memory.name,
            "referenced_by": list(self.referenced_by),
            "before": self.before,
            "after": self.after,
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


@dataclass(frozen=True, slots=True)
class Fact:
    """One version of a fact (a memory with a subject and a predicate, its body the
    value), on both time axes as known at one moment: ``valid_from``/``valid_to`` when
    the value held in the world, ``recorded_at``/``retracted_at`` when the store
    believed it. ``valid_to`` is where a later version took over (None: still holds)."""

    id: str
    scope: str
    subject: str
    predicate: str
    value: str
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime
    retracted_at: datetime | None
    author: str
    trust: Trust
    status: Status  # the row's status now
    supersedes: str | None
    superseded_by: str | None = None  # the later version that took over, as known then

    @property
    def project(self) -> str | None:
        return scope_project(self.scope)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "project": self.project,
            "subject": self.subject,
            "predicate": self.predicate,
            "value": self.value,
            "valid_from": stamp(self.valid_from) if self.valid_from else None,
            "valid_to": stamp(self.valid_to) if self.valid_to else None,
            "recorded_at": stamp(self.recorded_at),
            "retracted_at": stamp(self.retracted_at) if self.retracted_at else None,
            "author": self.author,
            "trust": self.trust.value,
            "status": self.status.value,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
        }


@dataclass(frozen=True, slots=True)
class FactChange:
    """What a fact write or retraction did: the version it wrote or retracted, and the
    one it ended (a write) or brought back (a retraction). ``changed`` is False for a
    write of the value already current: nothing was written."""

    fact: Fact
    other: Fact | None
    changed: bool

    def to_dict(self, verb: str) -> dict[str, Any]:
        other = "superseded" if verb == "write" else "restored"
        return {
            "fact": self.fact.to_dict(),
            other: self.other.to_dict() if self.other else None,
            "changed": self.changed,
        }


@dataclass(frozen=True, slots=True)
class VerifyReport:
    ok: bool
    memories: int
    index_documents: int
    index_sound: bool
    events: int
    chain_ok: bool
    problems: tuple[str, ...]
    rebuilt: bool = False
    vectors: int = 0
    pending_vectors: int = 0  # vectors a committed write has yet to store: work, not damage
    # events stamped before their predecessor by a version that read the time before the
    # write lock, before the store held the rule: counted, not a fault
    early_reversals: int = 0
    notes: tuple[str, ...] = ()  # what is worth knowing and is no problem

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "memories": self.memories,
            "index_documents": self.index_documents,
            "index_sound": self.index_sound,
            "events": self.events,
            "chain_ok": self.chain_ok,
            "vectors": self.vectors,
            "pending_vectors": self.pending_vectors,
            "early_reversals": self.early_reversals,
            "problems": list(self.problems),
            "notes": list(self.notes),
            "rebuilt": self.rebuilt,
        }


@dataclass(frozen=True, slots=True)
class StoreStatus:
    location: str
    schema_version: int
    realm: str
    memories: int
    projects: int
    events: int
    chain_head: str
    inline_bytes: int
    inline_max_bytes: int
    size_bytes: int
    embedder: str = ""  # the model in use
    embedder_configured: str = ""
    degraded: str | None = None  # why the configured embedder is not the one in use
    vectors: int = 0  # memories of the realm with a vector of the model in use

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "schema_version": self.schema_version,
            "realm": self.realm,
            "memories": self.memories,
            "projects": self.projects,
            "events": self.events,
            "chain_head": self.chain_head,
            "inline_bytes": self.inline_bytes,
            "inline_max_bytes": self.inline_max_bytes,
            "size_bytes": self.size_bytes,
            "embedder": self.embedder,
            "embedder_configured": self.embedder_configured,
            "degraded": self.degraded,
            "vectors": self.vectors,
        }
