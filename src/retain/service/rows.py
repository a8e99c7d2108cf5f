"""How a verb makes, records and swaps the rows of memories: the helpers the tiers,
an agent's own memory and the facts share (a new memory's fields, its create event, the
compare-and-swap of a changed row, the last writer and the lower trust of a change).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain.errors import StaleUpdate
from retain.graph import SUPERSEDES
from retain.model import DEFAULT_PRIORITY, Load, Memory, Status, lower_trust
from retain.service.admission import CAP
from retain.service.work import Work
from retain.storage.base import Reads

if TYPE_CHECKING:
    from retain.service import MemoryService

PROVENANCE = "provenance"  # the metadata key a checked claim is recorded under


def content_hash(body: str) -> str:
    """The compare-and-swap token of a body."""
    import hashlib  # on first use: a read that compares no body never loads OpenSSL

    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def label(memory: Memory) -> str:
    name = memory.name or memory.id
    return f"{memory.project}/{name}" if memory.project else name


def payload_of(memory: Memory, now: datetime) -> dict[str, Any]:
    return memory.to_dict(now, body=True)


def authored(
    svc: MemoryService,
    now: datetime,
    scope: str,
    description: str,
    body: str,
    *,
    tags: tuple[str, ...] = (),
    priority: int = DEFAULT_PRIORITY,
    subject: str | None = None,
    predicate: str | None = None,
    thread: str | None = None,
    supersedes: str | None,
    valid_from: datetime | None,
) -> Memory:
    """A new memory found by search alone, by this principal and at its trust: an
    agent's own, or a fact's version."""
    return Memory(
        id=svc.store.ids.new(now),
        realm=svc.realm,
        scope=scope,
        name=None,
        description=description,
        body=body,
        tags=tags,
        priority=priority,
        load=Load.SEARCH,
        references=(),
        source="",
        subject=subject,
        predicate=predicate,
        trust=svc.actor.trust,
        status=Status.ACTIVE,
        ever_quarantined=False,
        supersedes=supersedes,
        content_hash=content_hash(body),
        author=svc.principal,
        created_at=now,
        updated_at=now,
        verified_at=now,
        expires_at=None,
        valid_from=valid_from,
        valid_to=None,
        read_count=0,
        thread=thread,
    )


def record(
    work: Work,
    memory: Memory,
    *,
    principal: str | None = None,
    reason: str = "",
) -> Memory:
    """Insert a new memory (an agent's, a fact's) with its event, as admission lets it
    in (the row stored); its search key is made when the work finishes."""
    (stored,) = work.create([memory])
    work.event(*created(stored, work.now), memory_id=stored.id, principal=principal, reason=reason)
    return stored


def created(memory: Memory, now: datetime) -> tuple[str, dict[str, Any]]:
    """The event of a new row: ``create``, or ``quarantine`` (with its reasons) for a row
    admitted to wait for review."""
    payload = payload_of(memory, now)
    if memory.status is not Status.QUARANTINED:
        return "create", payload
    return "quarantine", {**payload, "reasons": list(memory.quarantine_reason)}


def supersede(
    work: Work,
    new: Memory,
    old: Memory,
    retired: Memory,
    verb: str,
    *,
    reason: str = "",
    remedy: str = "read it again and retry",
) -> Memory:
    """Record ``new``, which takes over from ``old``: ``old`` becomes ``retired`` (with
    its ``supersede`` event) only when ``new`` was admitted active. A successor held for
    review leaves ``old`` in force, so that one version stays active until a review
    releases it. A row that was ever quarantined passes the mark to its successor, and
    with it the cap on its trust."""
    if old.ever_quarantined and not new.ever_quarantined:
        new = replace(new, ever_quarantined=True, trust=lower_trust(new.trust, CAP))
    stored = record(work, new, reason=reason)
    if stored.status is Status.ACTIVE:
        swap(work, retired, old, verb, remedy=remedy)
        work.event("supersede", payload_of(retired, work.now), memory_id=old.id, reason=reason)
    return stored


def swap(
    work: Work, new: Memory, old: Memory, verb: str, *, remedy: str = "read it again and retry"
) -> Memory:
    """Swap a row for its changed self (the row stored), refused if another write
    changed it first."""
    stored = work.change(new, old)
    if stored is None:
        raise StaleUpdate(
            f"memory {old.id!r} changed while it was being {verb}", remedy=remedy, id=old.id
        )
    return stored


def changed(svc: MemoryService, memory: Memory, now: datetime) -> Memory:
    """A change of ``memory``'s content by the actor: stamped, its last writer
    recorded (the author stays who wrote it), and its trust the lower of its own and
    the writer's. Trust never rises by a change: raising it is a review, or evidence
    checked for the new content (``trust.evidenced``); a check of what it said before
    is dropped with it."""
    return replace(
        unproven(memory),
        updated_at=now,
        changed_by=svc.principal,
        trust=lower_trust(memory.trust, svc.actor.trust),
    )


def unproven(memory: Memory, *, claims: bool = True) -> Memory:
    """``memory`` without the record of a check: what a change of it leaves, since the
    check was of what it said before (``claims`` False: an agent's claim stays, only a
    record that made it ``verified`` goes, as when a retier takes that away)."""
    recorded = memory.metadata.get(PROVENANCE)
    if recorded is None:
        return memory
    if not claims and isinstance(recorded, dict) and recorded.get("epistemic") != "verified":
        return memory
    return replace(memory, metadata={k: v for k, v in memory.metadata.items() if k != PROVENANCE})


def same(a: Memory, b: Memory) -> bool:
    return replace(a, updated_at=b.updated_at) == b


def linked(tx: Reads, memories: Sequence[Memory]) -> list[Memory]:
    """``memories``, each superseded one with ``superseded_by``: the latest memory
    that took over from it and was not retracted or discarded (a retracted version
    was never so, the one it ended is active again; a discarded one, a quarantined
    update a review tombstoned or released, never took over)."""
    retired = [m.id for m in memories if m.status is Status.SUPERSEDED]
    if not retired:
        return list(memories)
    latest: dict[str, str] = {}
    for old, new, status in tx.successors(retired):
        taken = status not in (Status.RETRACTED.value, Status.DISCARDED.value)
        if taken and new > latest.get(old, ""):
            latest[old] = new  # ids sort by creation
    unlinked = {m.id: m.realm for m in memories if m.id in retired and m.id not in latest}
    for realm in set(unlinked.values()):  # a curator's supersede (once a row)
        for relation in tx.relations(realm, list(unlinked)):
            if relation.type == SUPERSEDES and relation.target in unlinked:
                latest[relation.target] = relation.source
    return [replace(m, superseded_by=latest[m.id]) if m.id in latest else m for m in memories]
