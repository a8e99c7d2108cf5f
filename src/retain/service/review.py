"""Quarantine review: the queue of records waiting for review, and a reviewer's decision
on one of them (``release`` or ``tombstone``), in one transaction.

A **release** makes the content ordinary memory: a new row, ``<id>-released``, in the
origin's scope with its name, body and author, trusted ``observed``, marked
``ever_quarantined`` and ``derived_from`` the origin, admitted as every row is
(``Work.create``; a reviewer's write is never quarantined). A quarantined update (it
``supersedes`` an active record) is released as a supersede of that record, so one
version stays active. The origin is ``discarded`` either way (a **tombstone** does only
that); nothing is deleted, and the origin stays reviewer-only (``View.sees``).

The reviewer is the session's principal, never an argument. Each applied decision appends
exactly one ``review`` event about the origin, whose payload holds the review (verdict,
reviewer, origin, successor, bound hash, the quarantine reason, the promotions it expired
or invalidated, the rationale) and the successor's record; the event's ``reason`` stays
empty, so a reader the payload is withheld from learns nothing of the rationale. A
repeated decision is recognised from that event alone: it answers ``already_released``
or ``already_tombstoned`` with the original decision and writes nothing. The checks, in
order (``docs/concepts.md``, "Quarantine"):

1. the policy table (reviewers: an operator or the steward) — ``access_denied``;
2. the record is in the reviewer's view — else ``not_found``; under access control,
   the reviewer holds on its scope ``memory.quarantine.review`` and what the verdict
   writes (``memory.write`` to release, ``memory.delete`` to tombstone) — else
   ``access_denied``;
3. not quarantined: a review event with the same verdict is a replay; another verdict,
   ``not_quarantined``; no review event and a row holding ``<id>-released``,
   ``successor_conflict``; otherwise (a plain forget, never quarantined)
   ``not_quarantined``;
4. the content is what the reviewer read — else ``content_mismatch``;
4b. a release of content matching a secret pattern — ``secret_detected`` (tombstone is
   its only exit);
5. the pending promotions of the record (tickets naming it): one past its expiry is
   expired and listed (``expired_promotions``); a release one still waits on is refused
   ``gate_pending`` (with the ticket and its expiry), and so is the steward's
   tombstone; an operator's tombstone invalidates them in the same transaction and
   lists them (``invalidated_promotions``), so a later approval lands nothing;
6. a release of an update whose target is no longer active — ``stale_update``;
7. a release of a named record whose name is taken now — ``name_conflict``; an inline
   one past the inline budget — ``inline_budget_exceeded``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from retain import budget, fields
from retain.chrono import stamp
from retain.errors import (
    ContentMismatch,
    InvalidValue,
    NameConflict,
    NotFound,
    NotQuarantined,
    StaleUpdate,
    SuccessorConflict,
)
from retain.governance import secrets
from retain.model import Memory, Proposal, Status, Trust
from retain.results import Decision, QueuePage, Receipt, ReviewResult
from retain.service import access, rows, ticket
from retain.service.actor import Kind
from retain.service.tier import name_clash
from retain.service.work import Work
from retain.storage.base import Reads

if TYPE_CHECKING:
    from retain.service import MemoryService
    from retain.service.view import View

RELEASE = "release"
TOMBSTONE = "tombstone"
VERDICTS = (RELEASE, TOMBSTONE)
DONE = {RELEASE: "released", TOMBSTONE: "tombstoned"}  # a verdict's outcome
SUCCESSOR = "-released"  # a released record's successor is its id with this after it
EVENT = "review"
_EVENTS_PAGE = 200  # the origin's events read at a time, looking for its review
_QUEUE_READ = 200  # the fewest queue rows a read asks for once rows were hidden


def successor_id(memory_id: str) -> str:
    return memory_id + SUCCESSOR


def list_quarantine(svc: MemoryService, *, limit: int = 100, after: str | None = None) -> QueuePage:
    """The quarantine queue: the realm's records waiting for review that the reviewer
    may review, oldest first, at most ``limit``; ``after`` is the id of the last record
    of the page before (a record decided since still marks its place). The page is cut
    from the rows the reviewer may review (under access grants, the store's rows are
    read past those it may not), and its ``next_cursor`` is set exactly when more
    follow."""
    fields.page(limit)
    if after is not None:
        fields.text(after, "after")
    return svc.backend.read(lambda tx: _queue(tx, svc.realm, svc._reader(tx), limit, after))


def _queue(tx: Reads, realm: str, view: View, limit: int, after: str | None) -> QueuePage:
    """The first ``limit`` records after ``after`` that ``view`` sees, and whether one
    more follows: store pages are read, each after the last row of the one before,
    until ``limit`` + 1 are seen or the queue ends. The first asks for ``limit`` + 1
    rows (all of them, for a reviewer who may review every record); one that hid rows
    is followed by reads of at least ``_QUEUE_READ``."""
    seen: list[Memory] = []
    mark, ask = after, limit + 1
    while True:
        batch = tx.quarantined(realm, mark, ask)
        seen.extend(m for m in batch if view.sees(m))
        if len(seen) > limit or len(batch) < ask:
            break
        mark, ask = batch[-1].id, max(limit + 1 - len(seen), _QUEUE_READ)
    page = seen[:limit]
    return QueuePage(page, page[-1].id if len(seen) > limit else None)


def review(
    svc: MemoryService,
    memory_id: str,
    verdict: str,
    expected_content_hash: str,
    *,
    rationale: str = "",
) -> ReviewResult:
    """Decide a quarantined record: ``release`` it (a successor at ``observed`` becomes
    ordinary memory) or ``tombstone`` it, bound to the content the reviewer read
    (``expected_content_hash``, its ``content_hash``). See the module docstring."""
    fields.text(memory_id, "id")
    fields.text(verdict, "verdict")
    if verdict not in VERDICTS:
        raise InvalidValue(
            f"verdict {verdict!r} is not release or tombstone",
            remedy="release the record into memory, or tombstone it",
            field="verdict",
        )
    fields.text(expected_content_hash, "expected_content_hash")
    fields.text(rationale, "rationale")

    def run(work: Work) -> ReviewResult:
        tx = work.reads
        origin = svc._reader(tx).get(tx, memory_id)
        if origin is None:
            raise NotFound(
                f"no record {memory_id!r} to review",
                remedy="take the id from the quarantine queue",
                fix="quarantine",
                id=memory_id,
            )
        access.decides(origin.scope, verdict=verdict)
        if origin.status is not Status.QUARANTINED:
            return _decided(tx, origin, verdict)
        if expected_content_hash != origin.content_hash:
            raise ContentMismatch(
                f"record {memory_id!r} is not the content the review was bound to",
                remedy="read the record again and decide on what it holds now",
                fix="quarantine",
                id=memory_id,
                expected=expected_content_hash,
                actual=origin.content_hash,
            )
        if verdict == RELEASE:  # a secret is never released: tombstone is its only exit
            held = secrets.findings_of(origin, svc.settings.secrets)
            if held:
                raise secrets.refusal(
                    held,
                    what=f"record {origin.id!r}",
                    why="content holding a secret is never released",
                    remedy="tombstone it",
                    id=origin.id,
                )
        expired, invalidated = _promotions(svc, work, origin, verdict)
        decided = {
            "verdict": verdict,
            "reviewer": svc.principal,
            "origin": origin.id,
            "successor": successor_id(origin.id) if verdict == RELEASE else None,
            "bound_hash": expected_content_hash,
            "quarantine_reason": list(origin.quarantine_reason),
            "expired_promotions": [p.id for p in expired],
            "invalidated_promotions": [p.id for p in invalidated],
            "rationale": rationale,
        }
        discarded = replace(origin, status=Status.DISCARDED, updated_at=work.now)
        successor, superseded = _release(svc, work, origin) if verdict == RELEASE else (None, None)
        discarded = rows.swap(work, discarded, origin, "reviewed")
        payload = {
            "review": decided,
            "successor": rows.payload_of(successor, work.now) if successor else None,
            "superseded": superseded,
        }
        event = work.event(EVENT, payload, memory_id=origin.id)
        return ReviewResult(
            DONE[verdict],
            Receipt.of(discarded),
            Receipt.of(successor) if successor is not None else None,
            Decision(event.event_id, event.tx_time, decided),
            receipt=work.receipt(event, successor.content_hash if successor else None),
        )

    return svc._write(run)


def _promotions(
    svc: MemoryService, work: Work, origin: Memory, verdict: str
) -> tuple[list[Proposal], list[Proposal]]:
    """The pending promotions of ``origin`` as the review meets them (check 5): those
    past their expiry are expired now; a release one still waits on is refused
    ``gate_pending``, and so is the steward's tombstone; an operator's tombstone
    invalidates them in the same transaction. The (expired, invalidated) promotions."""
    expired, pending = ticket.promotions_waiting_on(work, svc.settings, origin.id)
    if not pending:
        return expired, []
    if verdict == RELEASE or svc.actor.kind is not Kind.OPERATOR:
        raise ticket.waiting(
            pending[0],
            f"it promotes record {origin.id!r}, which no review decides while the "
            "ticket is pending",
            after="; or rejects it, and the record is reviewed then",
            fix="ticket",
        )
    reason = f"record {origin.id} tombstoned by a review"
    return expired, [ticket.invalidate(work, p, reason=reason) for p in pending]


def _decided(tx: Reads, origin: Memory, verdict: str) -> ReviewResult:
    """The answer for a record no longer quarantined: the replay of its review (the
    same verdict), or the refusal (check 3 of the module docstring)."""
    decision = decision_of(tx, origin)
    if decision is None:
        if tx.get_many([successor_id(origin.id)]):
            raise SuccessorConflict(
                f"a record holds {successor_id(origin.id)!r}, but {origin.id!r} was never reviewed",
                remedy="look at both records; nothing was decided",
                id=origin.id,
                successor=successor_id(origin.id),
            )
        raise NotQuarantined(
            f"record {origin.id!r} is not waiting for review (it is {origin.status.value})",
            remedy="only a quarantined record is reviewed; take one from the quarantine queue",
            fix="quarantine",
            id=origin.id,
            status=origin.status.value,
        )
    earlier = decision.review.get("verdict")
    if earlier != verdict:
        raise NotQuarantined(
            f"record {origin.id!r} was {DONE.get(str(earlier), earlier)} by a review already",
            remedy="a decided record is not decided again",
            id=origin.id,
            status=origin.status.value,
            verdict=earlier,
            event_id=decision.event_id,
        )
    made = decision.review.get("successor")
    now = tx.get_many([made]) if isinstance(made, str) else []  # as it stands now
    return ReviewResult(
        f"already_{DONE[verdict]}",
        Receipt.of(origin),
        Receipt.of(now[0]) if now else None,
        decision,
    )


def decision_of(tx: Reads, origin: Memory) -> Decision | None:
    """The review that decided ``origin``, from its own ``review`` event (the only
    evidence of one: a plain forget, or a row holding the successor's id, is none)."""
    after = 0
    while True:
        page = tx.list_events(origin.realm, after, _EVENTS_PAGE, origin.id)
        for event in page:
            if event.kind == EVENT:
                payload = json.loads(event.payload) if event.payload else {}
                return Decision(event.event_id, event.tx_time, dict(payload.get("review") or {}))
        if len(page) < _EVENTS_PAGE:
            return None
        after = page[-1].seq


def _release(svc: MemoryService, work: Work, origin: Memory) -> tuple[Memory, str | None]:
    """Create the successor of ``origin`` (superseding the record a quarantined update
    was to replace): the row stored, and the id it superseded (if any)."""
    tx, now = work.reads, work.now
    target = _target(tx, origin)
    if origin.name is not None:
        _check_name_free(tx, origin)
    successor = replace(
        origin,
        id=successor_id(origin.id),
        status=Status.ACTIVE,
        trust=Trust.OBSERVED,
        ever_quarantined=True,
        derived_from=origin.id,
        quarantine_reason=(),
        created_at=now,
        updated_at=now,
        verified_at=now,
        read_count=0,
        changed_by=svc.principal,
        superseded_by=None,
    )
    _check_inline(svc, tx, successor, stamp(now))
    (stored,) = work.create([successor])
    if target is None:
        return stored, None
    from retain import facts

    retired = replace(
        target,
        status=Status.SUPERSEDED,
        updated_at=now,
        superseded_by=stored.id,
        valid_to=facts.start(stored) if target.predicate is not None else target.valid_to,
    )
    rows.swap(work, retired, target, "superseded")
    return stored, target.id


def _target(tx: Reads, origin: Memory) -> Memory | None:
    """The active record a quarantined update supersedes (None: it is no update), or
    ``stale_update`` when that record is gone (missing, forgotten or replaced)."""
    if origin.supersedes is None:
        return None
    found = tx.get_many([origin.supersedes])
    if not found or found[0].status is not Status.ACTIVE:
        raise StaleUpdate(
            f"record {origin.id!r} updates {origin.supersedes!r}, which is no longer active",
            remedy="tombstone it instead, and write the change again on what holds now",
            id=origin.id,
            target=origin.supersedes,
        )
    return found[0]


def _check_name_free(tx: Reads, origin: Memory) -> None:
    """Refuse a release whose name another record holds now in its scope (or, for a
    global record, anywhere in the realm; for a project's, in the global tier)."""
    name = origin.name or ""
    held = name_clash(tx.find_by_name(origin.realm, name, None), origin.scope)
    if held:
        tiers = sorted({m.tier for m in held})
        raise NameConflict(
            f"{name!r} is held now by a memory of the {', '.join(tiers)} tier",
            remedy="tombstone this record, or free the name first",
            name=name,
            tiers=tiers,
            id=origin.id,
        )


def _check_inline(svc: MemoryService, tx: Reads, successor: Memory, now: str) -> None:
    """Refuse a release of an inline record that would take its band past the budget."""
    if not budget.counts(successor, now):
        return
    entries = tx.inline_entries(svc.realm, now)
    budget.check(
        entries,
        [*entries, budget.entry(successor)],
        budget=svc.settings.inline_max_bytes,
        touched=[successor.scope],
    )
