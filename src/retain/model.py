"""The nouns: frozen value types that cross every layer.

The enums and scopes, and what a store holds: a memory, a project, an agent, a team,
an event of the log, a proposal, a fact, an injection, an agent's session, a listing's
position. What the verbs take and give back (``WriteRequest``, ``WriteResult``,
``SearchResult``, ...) is in ``retain.results``, over these. Nothing here touches
storage or enforces a rule; the service does that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from retain.chrono import stamp

if TYPE_CHECKING:
    from retain.receipt import Receipt

DEFAULT_REALM = "default"
GLOBAL_SCOPE = "global"
PROJECT_PREFIX = "project:"
AGENT_PREFIX = "agent:"
OPERATOR_PREFIX = "operator:"
TEAM_PREFIX = "team:"
DEFAULT_PRIORITY = 5
COUNT_MAX = 2**31 - 1  # the largest count a store's count column (PostgreSQL INTEGER) holds
SHORT_BODY_CHARS = 280
CALLER = "caller"  # the metadata key a writer's own metadata is kept under


def with_caller(memory: Memory, caller: Mapping[str, Any]) -> dict[str, Any]:
    """``memory``'s metadata with the caller's part set to ``caller`` (empty: removed);
    the store's own keys (provenance, redactions, …) kept."""
    kept = {k: v for k, v in memory.metadata.items() if k != CALLER}
    return {**kept, CALLER: dict(caller)} if caller else kept


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
    derived_from: str | None = None  # the row it was made from: a released one, a ticket
    quarantine_reason: tuple[str, ...] = ()  # why it was written quarantined, if it was
    session: str | None = None  # the session key of the write that made it, if one was named
    superseded_by: str | None = None
    # the receipt of the write that returned it (an agent's own verbs): never stored
    receipt: Receipt | None = field(default=None, compare=False)

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
            "provenance": self.metadata.get("provenance"),  # a checked claim, if any
            "redacted": self.metadata.get("redacted"),  # the kinds written as markers
            "metadata": self.metadata.get(CALLER, {}),  # the caller's own
            "status": self.status.value,
            "ever_quarantined": self.ever_quarantined,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "derived_from": self.derived_from,
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
        if self.receipt is not None:
            record["receipt"] = self.receipt.to_dict()
        return record


@dataclass(frozen=True, slots=True)
class Project:
    name: str
    created_at: datetime
    memories: int = 0  # how many it holds: one name for this count at every door


class TicketStatus(StrEnum):
    """Where a ticket (a proposal) stands: ``open`` until a curator decides it, then
    ``pending_gate`` while the policy gate waits for a second approver, and at last one
    of the closed ones."""

    OPEN = "open"
    PENDING_GATE = "pending_gate"
    APPROVED = "approved"  # its memory landed in the target scope
    REJECTED = "rejected"
    EXPIRED = "expired"  # undecided past its expires_at
    INVALIDATED = "invalidated"  # the record it promotes was tombstoned by a review


PENDING_TICKETS = (TicketStatus.OPEN, TicketStatus.PENDING_GATE)


@dataclass(frozen=True, slots=True)
class Approval:
    """One approval of a ticket: who gave it, when, and why."""

    by: str
    at: datetime
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Proposal:
    """A ticket: an agent's request to write beyond its own scope, for a curator to
    decide (the seeds' memory ticket: id, timestamp, source agent, scope, trust label,
    summary, evidence, action, status).

    ``created_at`` is its timestamp, ``source`` the proposing principal, ``target`` its
    scope and ``trust`` its label (the most its memory may be trusted: approval never
    raises it). ``record`` is the memory it promotes (``action`` ``promote``), if any;
    ``tainted`` whether the proposer's session was tainted when it proposed. Deciding
    fills ``approvals`` (the first of two, where the policy gate asks for a second),
    ``decided_by``/``decided_at``/``decision_reason`` and, once approved, ``landed``:
    the memory it wrote."""

    id: str
    source: str  # the proposing principal
    target: str  # the scope it would be written to: global or team:<name>
    trust: Trust
    summary: str
    body: str
    evidence: str
    action: str  # what approving does: "add" a memory, or "promote" the record
    status: str  # a TicketStatus: "open" until decided
    created_at: datetime
    record: str | None = None
    tainted: bool = False
    expires_at: datetime | None = None
    approvals: tuple[Approval, ...] = ()
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_reason: str = ""
    landed: str | None = None
    # the receipt of the write that returned it (propose, a decision): never stored
    receipt: Receipt | None = field(default=None, compare=False)

    @property
    def pending(self) -> bool:
        """Waiting for a decision (open, or at the gate), whatever the clock says."""
        return self.status in PENDING_TICKETS

    def is_expired(self, now: datetime) -> bool:
        """Pending past its expiry: it reads as ``expired`` until a sweep stores it so."""
        return self.pending and self.expires_at is not None and self.expires_at <= now

    def to_dict(self) -> dict[str, Any]:
        """The public record: what the doors print and the ticket's events carry."""
        return {
            "id": self.id,
            "source": self.source,
            "target": self.target,
            "trust": self.trust.value,
            "summary": self.summary,
            "body": self.body,
            "evidence": self.evidence,
            "action": self.action,
            "status": str(self.status),
            "created_at": stamp(self.created_at),
            "record": self.record,
            "tainted": self.tainted,
            "expires_at": stamp(self.expires_at) if self.expires_at else None,
            "approvals": [
                {"by": a.by, "at": stamp(a.at), "reason": a.reason} for a in self.approvals
            ],
            "decided_by": self.decided_by,
            "decided_at": stamp(self.decided_at) if self.decided_at else None,
            "decision_reason": self.decision_reason,
            "landed": self.landed,
        } | ({} if self.receipt is None else {"receipt": self.receipt.to_dict()})


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
class AgentSession:
    """An agent context's durable session (its key is the host's, never the model's) and
    its taint: whether it ingested untrusted content since its last fresh-context
    boundary, when it first did, and why (``cause``: the tool, server and step)."""

    identity: str  # the agent acting in it (agent:<name>)
    key: str
    tainted: bool
    tainted_at: datetime | None
    cause: dict[str, Any] | None
    started_at: datetime  # its last fresh-context boundary (or its first observation)
    updated_at: datetime  # its last observation or boundary

    def to_dict(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "session": self.key,
            "tainted": self.tainted,
            "tainted_at": None if self.tainted_at is None else stamp(self.tainted_at),
            "cause": self.cause,
            "started_at": stamp(self.started_at),
            "updated_at": stamp(self.updated_at),
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
    ever_quarantined: bool = False  # its row was ever held for review (reviewer-only)
    provenance: str = "attested"  # claimed, attested or verified (``facts.provenance``)

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
            "provenance": self.provenance,
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
