"""Facts on two time axes: a subject's predicate holds a value from when it started to
hold (valid time) as the store learnt it (transaction time); a new value supersedes the
current one of its tier, a retraction withdraws it, and every version stays readable.

The rules of time (what held when, as known when) are ``retain.facts``'s, imported by
the verbs that use them: opening a store, or a read of a note, does not load them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from retain import fields
from retain.chrono import parse_moment, parse_optional_stamp, parse_stamp, parse_valid_from, stamp
from retain.errors import AccessDenied, InvalidValue, NotFound, NotQuarantined, StaleUpdate
from retain.model import (
    GLOBAL_SCOPE,
    Fact,
    Memory,
    Status,
    Trust,
    agent_scope,
    lower_trust,
    project_scope,
)
from retain.results import FactChange
from retain.service import rows, trust
from retain.service.admission import CAP
from retain.service.work import Work
from retain.storage.base import Reads

if TYPE_CHECKING:
    from retain.service import MemoryService


def _subject_of(subject: str) -> str:
    checked = fields.subject(subject)
    if not checked:
        raise InvalidValue(
            "a fact needs a subject", remedy="name who or what it is about", field="subject"
        )
    return checked


def _change(work: Work, version: Memory, other: Memory | None, now: datetime) -> FactChange:
    """A fact change's two versions, each as known now (the one may end the other), and
    the receipt of the event that wrote ``version``."""
    from retain import facts

    known = {f.id: f for f in facts.as_known([v for v in (version, other) if v], now)}
    return FactChange(
        known[version.id],
        known[other.id] if other else None,
        changed=True,
        receipt=work.receipt_for(version),
    )


def fact_write(
    svc: MemoryService,
    subject: str,
    predicate: str,
    value: str,
    *,
    project: str | None = None,
    valid_from: str | None = None,
    reason: str = "",
    redact: bool = False,
    evidence: Mapping[str, str] | None = None,
    supersedes: str | None = None,
) -> FactChange:
    """Record that ``subject``'s ``predicate`` is ``value`` (from ``valid_from``, else
    from now), in the project's tier, the global one, or, for an agent, its own.

    The version current in that tier is superseded: it stays in the history, holding
    until the new one starts. Writing the value already current (with no
    ``valid_from``, or its own, and no ``evidence``) writes nothing. A new version must
    start after the current one, and no later than now: a fact records what holds. A
    value that looks like a credential is refused (an agent's lands quarantined), unless
    ``redact`` writes each secret as its marker. With ``evidence`` (a memory or fact
    whose value equals this one, ``trust``), the version is ``verified``, or, written by
    an agent, records the agent's claim. ``supersedes`` names the version this one
    replaces: the write is refused (``stale_update``) unless it is still the tier's
    current value, so two writers who read the same value cannot both replace it.
    """
    from retain import facts

    subject, predicate = _subject_of(subject), fields.predicate(predicate)
    value = fields.text(value, "value").strip()
    if not value:
        raise InvalidValue("a fact needs a value", remedy="give the value", field="value")
    fields.text(reason, "reason")
    if supersedes is not None:
        fields.text(supersedes, "supersedes")
    proof = trust.evidence_of(evidence)
    when = parse_optional_stamp(parse_valid_from(valid_from, svc.clock)) if valid_from else None
    if when is not None and when > svc._now():
        raise InvalidValue(
            f"a fact records what holds, and {stamp(when)} is still to come",
            remedy="write the value when it starts to hold (a plan can be a note until then)",
            field="valid_from",
        )

    def run(work: Work) -> FactChange:
        tx, now = work.reads, work.now
        scope = _scope(svc, tx, project, "write")
        current = _current(svc, tx, scope, subject, predicate)
        if supersedes is not None and (current is None or current.id != supersedes):
            raise StaleUpdate(
                f"the value {supersedes!r} of {subject!r} {predicate!r} is no longer current "
                f"in {scope} (it is {current.id if current else 'none'!r} now)",
                remedy="read the fact again, and write naming the version now current",
                id=supersedes,
                current=current.id if current else None,
            )
        if (
            current is not None
            and current.body == value
            and proof is None
            and when in (None, current.valid_from)
        ):
            return FactChange(facts.as_known([current], now)[0], None, changed=False)
        began = when or now
        if current is not None and began <= facts.start(current):
            raise InvalidValue(
                f"the new value of {subject!r} {predicate!r} would start at {stamp(began)}, "
                f"not after the current one ({stamp(facts.start(current))})",
                remedy="give a later valid_from, or retract the current value first",
                field="valid_from",
            )
        fact = rows.authored(
            svc,
            now,
            scope,
            fields.description(f"{subject} {predicate}"[: fields.DESCRIPTION_NOTE_AT]),
            value,
            subject=subject,
            predicate=predicate,
            supersedes=current.id if current is not None else None,
            valid_from=when,
        )
        if proof is not None:
            record = trust.checked(svc, tx, proof, value, claimant=fact.id)
            fact = trust.evidenced(svc, fact, record, now)
        if current is None:
            return _change(work, rows.record(work, fact, reason=reason), None, now)
        ended = replace(
            current,
            status=Status.SUPERSEDED,
            valid_to=began,
            updated_at=now,
            superseded_by=fact.id,
        )
        stored = rows.supersede(work, fact, current, ended, "written", reason=reason)
        return _change(work, stored, ended if stored.status is Status.ACTIVE else None, now)

    return svc._write(run, redact=redact)


def fact_read(
    svc: MemoryService,
    subject: str,
    predicate: str | None = None,
    *,
    project: str | None = None,
    valid_at: str | None = None,
    known_at: str | None = None,
    min_trust: str | None = None,
) -> list[Fact]:
    """The values of ``subject``'s facts (of one ``predicate``, or all) that held at
    ``valid_at`` as the store knew at ``known_at`` (both default to now), in the tiers
    the reader sees: global, the project's, and an agent's teams' and its own; with
    ``min_trust``, only the values trusted at least that."""
    from retain import facts

    subject = _subject_of(subject)
    least = trust.minimum(min_trust)
    chosen = fields.predicate(predicate) if predicate is not None else None
    valid_given = parse_stamp(parse_moment(valid_at, svc.clock, "valid_at")) if valid_at else None
    known_given = parse_stamp(parse_moment(known_at, svc.clock, "known_at")) if known_at else None

    def run(tx: Reads) -> list[Fact]:
        now = svc._read_now(tx)
        valid, known = valid_given or now, known_given or now
        view = svc._reader(tx, project)
        scopes = view.scopes
        versions = [v for v in _versions(svc, tx, scopes, subject, chosen) if view.sees(v)]
        found = [
            f
            for f in facts.as_known(versions, known)
            if facts.holds(f, valid, known) and trust.meets(f.trust, least)
        ]
        return sorted(found, key=lambda f: (f.predicate, scopes.index(f.scope)))

    return svc.backend.read(run)


def fact_history(
    svc: MemoryService,
    subject: str,
    predicate: str,
    *,
    project: str | None = None,
    min_trust: str | None = None,
) -> list[Fact]:
    """Every version of ``subject``'s ``predicate`` in the tiers the reader sees, in
    the order they were recorded, each with when it held and when it was believed;
    with ``min_trust``, only the versions trusted at least that (each keeps the times
    the whole history gives it)."""
    from retain import facts

    subject, chosen = _subject_of(subject), fields.predicate(predicate)
    least = trust.minimum(min_trust)

    def run(tx: Reads) -> list[Fact]:
        view = svc._reader(tx, project)
        versions = [v for v in _versions(svc, tx, view.scopes, subject, chosen) if view.sees(v)]
        known = facts.as_known(versions, svc._read_now(tx))
        return [f for f in known if trust.meets(f.trust, least)]

    return svc.backend.read(run)


def fact_retract(
    svc: MemoryService,
    subject: str,
    predicate: str,
    *,
    project: str | None = None,
    reason: str = "",
) -> FactChange:
    """Withdraw the current value of ``subject``'s ``predicate`` in one tier (as
    ``fact_write`` chooses it): it was never so. The value it superseded holds again.

    The retracted version stays in the history, believed until now.
    """
    subject, predicate = _subject_of(subject), fields.predicate(predicate)
    fields.text(reason, "reason")

    def run(work: Work) -> FactChange:
        tx, now = work.reads, work.now
        scope = _scope(svc, tx, project, "retract")
        current = _current(svc, tx, scope, subject, predicate)
        if current is None:
            raise NotFound(
                f"no current value of {subject!r} {predicate!r} in {scope}",
                remedy="read the fact, or its history, to see what there is",
                subject=subject,
                predicate=predicate,
                scope=scope,
            )
        retracted = replace(current, status=Status.RETRACTED, updated_at=now)
        rows.swap(work, retracted, current, "retracted")
        retraction = work.event(
            "retract", rows.payload_of(retracted, now), memory_id=current.id, reason=reason
        )
        restored = None
        previous = tx.get_many([current.supersedes]) if current.supersedes else []
        if previous and previous[0].status is Status.SUPERSEDED:
            restored = replace(previous[0], status=Status.ACTIVE, valid_to=None, updated_at=now)
            rows.swap(work, restored, previous[0], "reinstated")
            payload = rows.payload_of(restored, now)
            work.event("reinstate", payload, memory_id=restored.id, reason=reason)
        return replace(
            _change(work, retracted, restored, now),
            receipt=work.receipt(retraction, retracted.content_hash),
        )

    return svc._write(run)


def fact_confirm(svc: MemoryService, fact_id: str, *, reason: str = "") -> FactChange:
    """Lift a claimed fact held for review (an unauthenticated writer's) to ``attested``:
    a reviewer vouches for it. It leaves quarantine and becomes its tier's current value
    (the version current until then is superseded), still trusted at most ``observed``,
    as every row once held for review. A fact held for another reason (a tainted
    session, a secret) is decided by ``review``."""
    from retain import facts
    from retain.service import access

    fields.text(fact_id, "id")
    fields.text(reason, "reason")

    def run(work: Work) -> FactChange:
        tx, now = work.reads, work.now
        held = svc._reader(tx).get(tx, fact_id)
        if held is None or held.predicate is None or held.subject is None:
            raise NotFound(
                f"no fact version {fact_id!r} to confirm",
                remedy="list the quarantine queue to find it",
                id=fact_id,
            )
        if held.status is not Status.QUARANTINED:
            raise NotQuarantined(
                f"fact {fact_id!r} is not waiting for review (it is {held.status.value})",
                remedy="only a claimed fact held for review is confirmed",
                id=fact_id,
                status=held.status.value,
            )
        if set(held.quarantine_reason) != {"claimed"}:
            raise InvalidValue(
                f"fact {fact_id!r} is held for review as {', '.join(held.quarantine_reason)}, "
                "not only as a claim",
                remedy="decide it with review (release or tombstone)",
                field="id",
                reasons=list(held.quarantine_reason),
            )
        access.decides(held.scope)
        current = _current(svc, tx, held.scope, held.subject, held.predicate)
        began = facts.start(held)
        if current is not None and began <= facts.start(current):
            raise InvalidValue(
                f"fact {fact_id!r} would start at {stamp(began)}, not after the value now "
                f"current ({stamp(facts.start(current))})",
                remedy="write the claimed value again as a new fact, or tombstone it",
                field="id",
            )
        confirmed = replace(
            held,
            status=Status.ACTIVE,
            quarantine_reason=(),
            trust=lower_trust(Trust.ATTESTED, CAP),  # vouched for, and capped for good
            supersedes=current.id if current is not None else None,
            updated_at=now,
            changed_by=svc.principal,
            metadata={**held.metadata, facts.CONFIRMED: {"by": svc.principal, "at": stamp(now)}},
        )
        rows.swap(work, confirmed, held, "confirmed")
        work.event("confirm", rows.payload_of(confirmed, now), memory_id=held.id, reason=reason)
        ended = None
        if current is not None:
            ended = replace(current, status=Status.SUPERSEDED, valid_to=began, updated_at=now)
            rows.swap(work, ended, current, "superseded")
            work.event("supersede", rows.payload_of(ended, now), memory_id=current.id,
                reason=reason,
            )  # fmt: skip
        return _change(work, confirmed, ended, now)

    return svc._write(run)


def _scope(svc: MemoryService, tx: Reads, project: str | None, verb: str) -> str:
    """The tier a fact is written to or retracted from: an agent's own (an agent
    writes no shared tier), else the project's, else the global one."""
    if svc.identity is not None:
        agent = svc._agent(tx)
        if project:
            raise AccessDenied(
                f"an agent may not {verb} facts of a project's tier",
                remedy="write the fact without a project (it goes to the agent's own "
                "scope), or propose it for a curator to decide",
                principal=svc.principal,
            )
        return agent_scope(agent.name)
    if project:
        svc._require_project(tx, project)
        return project_scope(project)
    return GLOBAL_SCOPE


def _versions(
    svc: MemoryService, tx: Reads, scopes: Sequence[str], subject: str, predicate: str | None
) -> list[Memory]:
    from retain import facts

    versions = tx.fact_versions(svc.realm, scopes, subject, predicate)
    return [v for v in versions if v.status in facts.SHOWN]


def _current(
    svc: MemoryService, tx: Reads, scope: str, subject: str, predicate: str
) -> Memory | None:
    """The version of a fact that is current in one tier: the one active row, or, where
    the assertion ledger left several (assertions accumulate), the newest of them."""
    versions = tx.fact_versions(svc.realm, [scope], subject, predicate)
    active = [v for v in versions if v.status is Status.ACTIVE]
    return max(active, key=lambda v: (v.created_at, v.id), default=None)
