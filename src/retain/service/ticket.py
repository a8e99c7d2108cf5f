"""Tickets: the curator's decisions on proposals, and the policy gate.

A proposal (``retain.service.proposal``) is a ticket. Operators and the steward decide
it: ``approve`` lands one memory in its target scope, ``reject`` closes it, and a ticket
left undecided past its ``expires_at`` (``[tickets] expire_after``, seven days by
default) is ``expired``. Expiry is read lazily: a pending ticket past its expiry reads
as ``expired`` at every door and takes no decision (``ticket_closed``), and
``expire_tickets`` (a sweep) stores it so, with its event. A review stores it too, when
it meets one (``promotions_waiting_on``).

The policy gate (``[gate]``, scope pattern → mode) may ask a second approver for a
scope: the first approval moves the ticket to ``pending_gate`` (recorded, and answered
``gate_pending``), and a second, distinct principal who is not the proposer lands it.

The landing goes through the normal row path (``rows.record``, so ``Work.create`` and
the admission every row passes): it is derived from the ticket, at the ticket's trust
label (approval never raises trust), by the proposer, with the proposer's taint in its
metadata. A landing admission refuses (a secret in it) rolls the approval back: such a
ticket can only be rejected. A promotion lands only while its record is held (active,
or quarantined: the steward's gated promotion, whose approval decides the record, which
becomes ``discarded``); otherwise it is ``stale_update``, and can only be rejected.

Statuses: ``open`` → ``pending_gate`` → ``approved`` | ``rejected`` | ``expired`` |
``invalidated`` (a review's tombstone of the record a promotion waits on). Events:
``ticket_wait``, ``ticket_approve``, ``ticket_reject``, ``ticket_expire``,
``ticket_invalidate``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from retain import fields
from retain.chrono import stamp
from retain.config import Settings
from retain.errors import AccessDenied, GatePending, NotFound, StaleUpdate, TicketClosed
from retain.model import (
    PENDING_TICKETS,
    Approval,
    Memory,
    Proposal,
    Status,
    TicketStatus,
    lower_trust,
)
from retain.service import access, rows
from retain.service.work import Work
from retain.storage.base import Reads

if TYPE_CHECKING:
    from datetime import datetime

    from retain.service import MemoryService

NO_GATE = "none"
SECOND_APPROVER = "second_approver"
STATUSES = tuple(status.value for status in TicketStatus)


# -- the gate ---------------------------------------------------------------------------


def gate_mode(settings: Settings, scope: str) -> str:
    """What the policy gate asks of an approval landing in ``scope``: the mode of the
    most specific ``[gate]`` pattern that matches it (``team:NAME`` before ``team:*``),
    ``none`` when none does."""
    best, mode = -1, NO_GATE
    for pattern, given in settings.gate:
        if pattern == scope:
            rank = 2
        elif pattern.endswith("*") and scope.startswith(pattern[:-1]):
            rank = 1
        else:
            continue
        if rank > best:
            best, mode = rank, given
    return mode


# -- reading, with expiry applied --------------------------------------------------------


def as_read(ticket: Proposal, now: datetime, settings: Settings) -> Proposal:
    """``ticket`` as every door shows it at ``now``: its expiry (one made before tickets
    expired has ``expire_after`` from its timestamp), and ``expired`` once past it."""
    if ticket.expires_at is None:
        ticket = replace(ticket, expires_at=ticket.created_at + settings.ticket_expire_after)
    if ticket.is_expired(now):
        ticket = replace(ticket, status=TicketStatus.EXPIRED.value)
    return ticket


def read_tickets(
    svc: MemoryService, tx: Reads, now: datetime, status: str | None, record: str | None = None
) -> list[Proposal]:
    """The realm's tickets as read at ``now``, of one ``status`` (as read: an open one
    past its expiry is ``expired``) and one promoted ``record`` when given."""
    stored = None if status in (*PENDING_TICKETS, TicketStatus.EXPIRED) else status
    read = [as_read(p, now, svc.settings) for p in tx.list_proposals(svc.realm, stored, record)]
    return [p for p in read if status is None or p.status == status]


def check_status(status: str | None) -> None:
    if status is None:
        return
    fields.text(status, "status")


def list_tickets(
    svc: MemoryService,
    *,
    status: str | None = None,
    target: str | None = None,
    record: str | None = None,
) -> list[Proposal]:
    """The realm's tickets, oldest first: the curator's queue. ``status`` keeps one
    status (``open``, ``pending_gate``, ...; an open ticket past its expiry reads as
    ``expired``), ``target`` one scope, ``record`` the promotions of one memory."""
    check_status(status)
    for value, what in ((target, "target"), (record, "record")):
        if value is not None:
            fields.text(value, what)

    def run(tx: Reads) -> list[Proposal]:
        listed = read_tickets(svc, tx, svc._read_now(tx), status, record)
        return [p for p in listed if target is None or p.target == target]

    return svc.backend.read(run)


def get_ticket(svc: MemoryService, ticket_id: str) -> Proposal:
    """One ticket by its id, as read now."""
    fields.text(ticket_id, "ticket_id")
    return svc.backend.read(lambda tx: _ticket(svc, tx, ticket_id, svc._read_now(tx)))


def _ticket(svc: MemoryService, tx: Reads, ticket_id: str, now: datetime) -> Proposal:
    found = tx.get_proposal(svc.realm, ticket_id)
    if found is None:
        raise NotFound(
            f"no ticket {ticket_id!r}",
            remedy="list the tickets to find its id",
            ticket=ticket_id,
        )
    return as_read(found, now, svc.settings)


# -- deciding -----------------------------------------------------------------------------


def approve(svc: MemoryService, ticket_id: str, *, reason: str = "") -> Proposal:
    """Approve a pending ticket: its memory lands in the target scope, and the ticket,
    ``approved``, names it (``landed``). Where the policy gate asks a second approver
    for that scope, the first approval is recorded (``pending_gate``) and answered
    ``gate_pending``; a second, distinct principal who is not the proposer lands it."""
    fields.text(ticket_id, "ticket_id")
    fields.text(reason, "reason")
    decided = svc._write(lambda work: receipted(work, _approve(svc, work, ticket_id, reason)))
    if decided.status == TicketStatus.PENDING_GATE:
        raise waiting(decided, "it waits at the policy gate for a second approver")
    return decided


def reject(svc: MemoryService, ticket_id: str, *, reason: str = "") -> Proposal:
    """Reject a pending ticket (open, or waiting at the gate): nothing lands."""
    fields.text(ticket_id, "ticket_id")
    fields.text(reason, "reason")

    def run(work: Work) -> Proposal:
        ticket = _decidable(svc, work, ticket_id, "reject")
        return receipted(work, _close(work, ticket, TicketStatus.REJECTED, "ticket_reject", reason))

    return svc._write(run)


def expire_tickets(svc: MemoryService) -> list[Proposal]:
    """Store every pending ticket past its expiry as ``expired`` (with its event); the
    tickets expired, oldest first."""

    def run(work: Work) -> list[Proposal]:
        overdue = [
            p
            for status in PENDING_TICKETS
            for p in work.reads.list_proposals(svc.realm, status)
            if as_read(p, work.now, svc.settings).status == TicketStatus.EXPIRED
        ]
        return [
            receipted(work, expire(work, p, svc.settings))
            for p in sorted(overdue, key=lambda p: p.id)
        ]

    return svc._write(run)


def receipted(work: Work, ticket: Proposal) -> Proposal:
    """``ticket`` with the receipt of the event that just recorded it."""
    return replace(ticket, receipt=work.last_receipt())


def expire(work: Work, ticket: Proposal, settings: Settings) -> Proposal:
    """Store a pending ticket past its expiry as ``expired``, with its event."""
    expired = replace(
        as_read(ticket, work.now, settings), status=TicketStatus.EXPIRED.value, decided_at=work.now
    )
    _store(work, expired, ticket)
    work.event("ticket_expire", expired.to_dict())
    return expired


# -- what a review asks (the promotions waiting on a record) -------------------------------


def promotions_waiting_on(
    work: Work, settings: Settings, record: str
) -> tuple[list[Proposal], list[Proposal]]:
    """The pending promotions of memory ``record``, for a review deciding it: (those
    past their expiry, expired now in ``work``; those still waiting). One query, by
    the ``proposals_record`` index."""
    pending = [
        p
        for p in work.reads.list_proposals(work.realm, None, record)
        if p.status in PENDING_TICKETS
    ]
    read = [(p, as_read(p, work.now, settings)) for p in pending]
    overdue = [p for p, now in read if now.status == TicketStatus.EXPIRED]
    waiting = [now for _, now in read if now.status != TicketStatus.EXPIRED]
    return [expire(work, p, settings) for p in overdue], waiting


def invalidate(work: Work, ticket: Proposal, *, reason: str = "") -> Proposal:
    """Close a pending promotion whose record a review tombstoned (``invalidated``), in
    the review's unit of work, with its event: a later approval lands nothing."""
    return _close(work, ticket, TicketStatus.INVALIDATED, "ticket_invalidate", reason)


def _close(work: Work, ticket: Proposal, status: TicketStatus, kind: str, reason: str) -> Proposal:
    """``ticket`` closed as ``status`` by the work's actor now, stored with its event."""
    closed = replace(
        ticket,
        status=status.value,
        decided_by=work.actor.principal,
        decided_at=work.now,
        decision_reason=reason,
    )
    _store(work, closed, ticket)
    work.event(kind, closed.to_dict(), reason=reason)
    return closed


# -- the steps -------------------------------------------------------------------------


def _approve(svc: MemoryService, work: Work, ticket_id: str, reason: str) -> Proposal:
    ticket = _decidable(svc, work, ticket_id, "approve")
    me = work.actor.principal
    if any(a.by == me for a in ticket.approvals):
        raise waiting(ticket, f"{me} approved it already; a second approver must be another")
    approval = Approval(me, work.now, reason)
    gated = gate_mode(svc.settings, ticket.target) == SECOND_APPROVER
    if gated and ticket.status == TicketStatus.OPEN:
        held = replace(
            ticket,
            status=TicketStatus.PENDING_GATE.value,
            approvals=(*ticket.approvals, approval),
        )
        _store(work, held, ticket)
        work.event("ticket_wait", held.to_dict(), reason=reason)
        return held
    promoted = _promoted(work, ticket)
    landed = rows.record(work, _landing(svc, work, ticket, promoted), reason=f"ticket {ticket.id}")
    if promoted is not None and promoted.status is Status.QUARANTINED:
        _decide_held(work, ticket, promoted, landed)
    approved = replace(
        ticket,
        status=TicketStatus.APPROVED.value,
        approvals=(*ticket.approvals, approval),
        decided_by=me,
        decided_at=work.now,
        decision_reason=reason,
        landed=landed.id,
    )
    _store(work, approved, ticket)
    work.event("ticket_approve", approved.to_dict(), reason=reason)
    return approved


def _decidable(svc: MemoryService, work: Work, ticket_id: str, verb: str) -> Proposal:
    """The pending ticket of that id as read now, or the refusal: ``not_found``,
    ``access_denied`` (no ``ticket.decide`` on its target, under access control),
    ``ticket_closed`` (decided, or past its expiry), or ``access_denied`` for its
    proposer (a ticket is decided by someone else)."""
    ticket = _ticket(svc, work.reads, ticket_id, work.now)
    access.decides(ticket.target)
    if not ticket.pending:
        raise TicketClosed(
            f"ticket {ticket.id!r} is {ticket.status}: it takes no decision",
            remedy="propose it again if it should still land",
            ticket=ticket.id,
            status=ticket.status,
        )
    if ticket.source == work.actor.principal:
        raise AccessDenied(
            f"{ticket.source} proposed ticket {ticket.id!r} and may not {verb} it",
            remedy="another operator or the steward decides it",
            ticket=ticket.id,
            principal=ticket.source,
        )
    return ticket


def _promoted(work: Work, ticket: Proposal) -> Memory | None:
    """The record a promotion names, as it stands: active (an agent's own memory) or
    quarantined (the steward's gated promotion), else ``stale_update``, since what the
    ticket would land is no longer held (forgotten, replaced, or decided by a review)."""
    if ticket.record is None:
        return None
    found = work.reads.get_many([ticket.record])
    if not found or found[0].status not in (Status.ACTIVE, Status.QUARANTINED):
        raise StaleUpdate(
            f"ticket {ticket.id!r} promotes record {ticket.record!r}, which is no longer held",
            remedy="reject the ticket; propose the record's current version if it should land",
            ticket=ticket.id,
            target=ticket.record,
        )
    return found[0]


def _decide_held(work: Work, ticket: Proposal, held: Memory, landed: Memory) -> None:
    """An approved gated promotion decides the quarantined record it promotes: the record
    is discarded (its content lives on as the landing, which stays ``ever_quarantined``
    and at most ``observed``), with a ``promote`` event on its own history; a later
    review of it is ``not_quarantined``."""
    discarded = replace(held, status=Status.DISCARDED, updated_at=work.now)
    rows.swap(work, discarded, held, "promoted")
    work.event(
        "promote",
        {"id": held.id, "status": Status.DISCARDED.value, "ticket": ticket.id,
         "landed": landed.id, "target": ticket.target},
        memory_id=held.id,
        reason=f"ticket {ticket.id}",
    )  # fmt: skip


def _landing(svc: MemoryService, work: Work, ticket: Proposal, promoted: Memory | None) -> Memory:
    """The memory an approval lands: in the target, by the proposer (a promotion's by
    its record's author), at the ticket's trust label (and never above the record it
    promotes, nor free of its ``ever_quarantined`` cap), its body the ticket's."""
    trust = ticket.trust if promoted is None else lower_trust(ticket.trust, promoted.trust)
    metadata: dict[str, Any] = {"ticket": ticket.id, "proposer_tainted": ticket.tainted}
    if ticket.record:
        metadata["promoted_from"] = ticket.record
    made = rows.authored(
        svc,
        work.now,
        ticket.target,
        ticket.summary,
        ticket.body or ticket.summary,
        supersedes=None,
        valid_from=None,
    )
    return replace(
        made,
        author=promoted.author if promoted is not None else ticket.source,
        derived_from=ticket.id,
        trust=trust,
        ever_quarantined=promoted is not None and promoted.ever_quarantined,
        metadata=metadata,
    )


def _store(work: Work, decided: Proposal, current: Proposal) -> None:
    if not work.decide_proposal(decided, current.status):
        raise StaleUpdate(
            f"ticket {current.id!r} was decided while this decision was made",
            remedy="read the ticket again",
            ticket=current.id,
        )


def waiting(ticket: Proposal, why: str, *, after: str = "", **more: Any) -> GatePending:
    """The ``gate_pending`` refusal of something that waits on pending ``ticket``
    (``after``: what can be done once it is decided)."""
    until = stamp(ticket.expires_at) if ticket.expires_at else None
    return GatePending(
        f"ticket {ticket.id!r} is not landed yet: {why}",
        remedy=f"another operator or the steward approves it before it expires ({until})" + after,
        ticket=ticket.id,
        expires_at=until,
        approvals=[a.by for a in ticket.approvals],
        **more,
    )
