"""What the verbs take and give back: frozen value types over the nouns of ``retain.model``.

A write's request (``WriteRequest``, and the ``Restore`` an import brings), and each
verb's result: a write's, a conversation ingest's, read's, edit's, delete's, search's,
fact change's, context render's, export's, migration's, verification's, review's, the
store's status, and a session's observation and reset; a write's carries its
``receipt`` (``retain.receipt``, None when nothing was written). Each result says
what happened and renders itself for a door (``to_dict``); ``before`` and ``after`` of
a change are the memory's exported text, drawn only when read.

A read's and a search's results live in ``retain.read_results``, a write's, an edit's
and a delete's (and the write request) in ``retain.write_results``, so that a command
makes only the classes of the verbs it runs (each costs about a millisecond to make);
this module gives them too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from retain.chrono import stamp
from retain.model import Fact, Injection, Memory, Trust
from retain.read_results import ReadResult as ReadResult
from retain.read_results import Reference as Reference
from retain.read_results import SearchHit as SearchHit
from retain.read_results import SearchResult as SearchResult
from retain.receipt import Receipt as WriteReceipt
from retain.write_results import DeleteResult as DeleteResult
from retain.write_results import EditResult as EditResult
from retain.write_results import Restore as Restore
from retain.write_results import WriteRequest as WriteRequest
from retain.write_results import WriteResult as WriteResult
from retain.write_results import receipted as receipted


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote: the named memories of the shared tiers, the records (every
    other row) and the tickets; and the forgotten rows it left out (no text to carry)."""

    memories: int
    left_out: int = 0
    records: int = 0
    tickets: int = 0


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record an import passed over: where it was, and why."""

    source: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Landing:
    """One record of a foreign import: where it came from, the memory it is (or would
    be), and what its write does: ``create``, ``overwrite``, or (a dry run's) ``exists``,
    a name taken that only a forced import overwrites, or ``conflict``, another tier's
    name, which refuses the import."""

    source: str
    name: str
    action: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "name": self.name, "action": self.action}


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What ``import_from`` wrote (or, in a dry run, would write) and what it passed
    over and why; ``project_created`` when it created the project it filed into."""

    kind: str
    dry_run: bool
    landed: tuple[Landing, ...]
    skipped: tuple[Skipped, ...]
    project_created: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "dry_run": self.dry_run,
            "landed": [x.to_dict() for x in self.landed],
            "skipped": [x.to_dict() for x in self.skipped],
            "project_created": self.project_created,
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
class IngestResult:
    """What an ingest of a conversation's turns did: one write result a turn, in the
    turns' order (each with its receipt; None for a turn that was already stored as
    given, which changed nothing)."""

    thread: str
    project: str | None
    results: tuple[WriteResult, ...]

    @property
    def created(self) -> int:
        return sum(1 for r in self.results if r.created)

    @property
    def updated(self) -> int:
        return sum(1 for r in self.results if r.changed and not r.created)

    @property
    def unchanged(self) -> int:
        return sum(1 for r in self.results if not r.changed)

    @property
    def written(self) -> int:
        """The turns written: created or updated."""
        return self.created + self.updated

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.memory.name or "" for r in self.results)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(r.memory.id for r in self.results)

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            "thread": self.thread,
            "project": self.project,
            "turns": len(self.results),
            "written": self.written,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "memories": [
                {
                    "id": r.memory.id,
                    "name": r.memory.name,
                    "created": r.created,
                    "changed": r.changed,
                    "status": r.memory.status.value,
                    "receipt": receipted(r.receipt),
                }
                for r in self.results
            ],
        }


@dataclass(frozen=True, slots=True)
class RetierResult:
    """What a retier did: the memory as it stands, the trust it had, and whether it moved
    (asking for the trust it has changes nothing)."""

    memory: Memory
    previous: Trust
    changed: bool
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            **self.memory.to_dict(now),
            "previous_trust": self.previous.value,
            "changed": self.changed,
            "receipt": receipted(self.receipt),
        }


@dataclass(frozen=True, slots=True)
class FactChange:
    """What a fact write or retraction did: the version it wrote or retracted, and the
    one it ended (a write) or brought back (a retraction). ``changed`` is False for a
    write of the value already current: nothing was written."""

    fact: Fact
    other: Fact | None
    changed: bool
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    def to_dict(self, verb: str) -> dict[str, Any]:
        other = "superseded" if verb == "write" else "restored"
        return {
            "fact": self.fact.to_dict(),
            other: self.other.to_dict() if self.other else None,
            "changed": self.changed,
            "receipt": receipted(self.receipt),
        }


class QueuePage(list[Memory]):
    """A page of the quarantine queue: its records, oldest first, and ``next_cursor``,
    the id of its last record when more records the reader may review follow it (else
    None). It is a list, so a page reads as the records it holds; the cursor rides
    along for the doors that give one."""

    __slots__ = ("next_cursor",)

    def __init__(self, held: Iterable[Memory] = (), next_cursor: str | None = None) -> None:
        super().__init__(held)
        self.next_cursor = next_cursor


def held_record(memory: Memory, now: datetime) -> dict[str, Any]:
    """A quarantined memory as the quarantine queue shows it to a reviewer: its record
    and body, why it waits (``quarantine_reason``), the session it was written in, and
    the ``content_hash`` a review binds its decision to."""
    return memory.to_dict(now, body=True) | {
        "quarantine_reason": list(memory.quarantine_reason),
        "session": memory.session,
        "content_hash": memory.content_hash,
    }


@dataclass(frozen=True, slots=True)
class Receipt:
    """A record a review decided or made, as it stands now."""

    id: str
    status: str
    trust: str
    ever_quarantined: bool
    content_hash: str
    supersedes: str | None
    derived_from: str | None

    @classmethod
    def of(cls, memory: Memory) -> Receipt:
        return cls(
            memory.id,
            memory.status.value,
            memory.trust.value,
            memory.ever_quarantined,
            memory.content_hash,
            memory.supersedes,
            memory.derived_from,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "trust": self.trust,
            "ever_quarantined": self.ever_quarantined,
            "content_hash": self.content_hash,
            "supersedes": self.supersedes,
            "derived_from": self.derived_from,
        }


@dataclass(frozen=True, slots=True)
class Decision:
    """A committed review: its event (the audit token), when, and the review itself
    (verdict, reviewer, origin, successor, bound_hash, quarantine_reason,
    expired_promotions, invalidated_promotions, rationale)."""

    event_id: str
    at: datetime
    review: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"event_id": self.event_id, "at": stamp(self.at), "review": self.review}


@dataclass(frozen=True, slots=True)
class ReviewResult:
    """What a review did: ``outcome`` (``released``, ``tombstoned``, or, for a decision
    already made, ``already_released`` / ``already_tombstoned``, which wrote nothing),
    the origin and the successor as they stand now, and the decision."""

    outcome: str
    origin: Receipt
    successor: Receipt | None
    decision: Decision
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    @property
    def applied(self) -> bool:
        """Whether this call decided the record (else it was decided before)."""
        return not self.outcome.startswith("already_")

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "origin": self.origin.to_dict(),
            "successor": self.successor.to_dict() if self.successor else None,
            "decision": self.decision.to_dict(),
            "receipt": receipted(self.receipt),
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
    broken_at: int | None = None  # the seq of the chain's first broken link
    head_seq: int = 0  # the chain head: the last event that checked ...
    head_hash: str = ""  # ... and its hash
    signed_events: int = 0  # events whose signature checked with the store's key
    erased_events: int = 0  # events whose payload an erasure certificate accounts for
    key_id: str | None = None  # the signing key's, when one is configured
    head_signature: str | None = None  # the key's signature of the head (retain.signing)
    relations: dict[str, int] = field(default_factory=dict)  # the realm's edges, by type

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
            "relations": dict(self.relations),
            "early_reversals": self.early_reversals,
            "broken_at": self.broken_at,
            "head": {
                "seq": self.head_seq,
                "hash": self.head_hash,
                "key_id": self.key_id,
                "signature": self.head_signature,
            },
            "signed_events": self.signed_events,
            "erased_events": self.erased_events,
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


@dataclass(frozen=True, slots=True)
class Observation:
    """What ``observe`` made of a tool result a session ingested: the verdict (trusted,
    and the step of the content-trust precedence that decided), the server it was
    attributed to, whether the session is tainted now, and whether this observation
    tainted it (False when it was tainted already, or the content was trusted)."""

    identity: str
    session: str
    tool: str
    server: str | None
    trusted: bool
    step: str
    tainted: bool
    changed: bool
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    def to_dict(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "session": self.session,
            "tool": self.tool,
            "server": self.server,
            "trusted": self.trusted,
            "step": self.step,
            "tainted": self.tainted,
            "changed": self.changed,
            "receipt": receipted(self.receipt),
        }


@dataclass(frozen=True, slots=True)
class SessionReset:
    """What ``reset_session`` did at a boundary: whether it cleared the session's taint
    (a ``compact`` boundary never does), and whether the session is tainted now."""

    identity: str
    session: str
    boundary: str
    cleared: bool
    tainted: bool
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    def to_dict(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "session": self.session,
            "boundary": self.boundary,
            "cleared": self.cleared,
            "tainted": self.tainted,
            "receipt": receipted(self.receipt),
        }
