"""Trust tiers you can check: reading at a minimum trust, ``verified`` earned by evidence
the store checked, the cap on what was ever quarantined, and ``retier``, the reviewed
verb that moves a memory's trust.

The tiers run ``claimed < observed < attested < verified``. A writer's own rows enter at
its ceiling (``actor.Actor.trust``) and a change takes the lower trust (``rows.changed``);
only two things lift a row above that:

* evidence: a write (``write``, ``fact_write``) or a retier naming a memory or fact in
  the writer's view, active and trusted at least ``attested`` (so that nothing is
  laundered through a lower row), whose body, or the JSON field at ``path`` in it,
  equals the claim exactly. A writer whose ceiling is ``attested`` then writes
  ``verified``; anyone else (an agent, an anonymous caller) keeps its ceiling, and the
  check is recorded as its claim (``metadata.provenance.epistemic = "verified_claim"``).
  Evidence that does not bear the claim out is refused (``evidence_mismatch``, with the
  reason and never a value).
* ``retier``: an operator or the steward sets a memory's trust, one event, with a
  reason; ``verified`` needs evidence here too.

A memory that was ever quarantined is capped at ``observed`` for good: a retier or a
write above it is ``trust_capped`` (the check is admission's, ``admission.check_cap``,
so every path is held to it; a retier and an evidenced write ask it first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain import fields
from retain.chrono import stamp
from retain.errors import EvidenceMismatch, InvalidValue, NotFound
from retain.model import Memory, Status, Trust
from retain.service import access, rows
from retain.service.admission import check_cap
from retain.service.rows import PROVENANCE, unproven
from retain.service.work import Work
from retain.storage.base import MemoryFilter, Reads

if TYPE_CHECKING:
    from retain.results import RetierResult  # imported by retier, which makes one
    from retain.service import MemoryService

ORDER = tuple(Trust)
NAMES = ", ".join(t.value for t in ORDER)
EVIDENCE_FLOOR = Trust.ATTESTED  # the least a memory is trusted to stand as evidence
PATH_MAX_CHARS = 500
# An evidence path: dotted keys (or list indexes), none empty; a leading "$" key stands
# for the root. The doors' schemas state it, the service checks it (``evidence_of``).
PATH_PATTERN = r"^[^.\x00]+(?:\.[^.\x00]+)*$"


def rank(trust: Trust) -> int:
    return ORDER.index(trust)


def named(value: object, field: str) -> Trust:
    """``value`` as a trust tier, else ``invalid_value`` naming ``field``."""
    if isinstance(value, Trust):
        return value
    if isinstance(value, str):
        for tier in ORDER:
            if tier.value == value:
                return tier
    raise InvalidValue(
        f"{field} {value!r} is not a trust tier",
        remedy=f"pass one of {NAMES}",
        field=field,
    )


def minimum(value: str | None) -> Trust | None:
    """A read's ``min_trust``, checked before any I/O (None: every tier)."""
    return None if value is None else named(value, "min_trust")


def at_least(least: Trust | None) -> tuple[str, ...]:
    """The tiers a filter keeps for ``least`` (empty: every tier)."""
    if least is None or least is ORDER[0]:
        return ()
    return tuple(t.value for t in ORDER[rank(least) :])


def narrowed(where: MemoryFilter, least: Trust | None) -> MemoryFilter:
    """``where`` keeping only memories trusted at least ``least``."""
    trusts = at_least(least)
    return replace(where, trusts=trusts) if trusts else where


def meets(level: Trust, least: Trust | None) -> bool:
    """Whether ``level`` is at least ``least`` (None: anything is)."""
    return least is None or rank(level) >= rank(least)


# -- evidence ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a write offers as proof: a memory or fact (its id, or a name) and, in its
    body read as JSON, the path of the field that holds the claim (None: the body)."""

    ref: str
    path: tuple[str, ...] | None = None

    @property
    def path_text(self) -> str | None:
        return None if self.path is None else ".".join(self.path)

    def details(self) -> dict[str, Any]:
        return {"ref": self.ref, "path": self.path_text}


def evidence_of(value: object) -> Evidence | None:
    """An ``evidence`` argument checked before any I/O: ``{"ref": ID, "path"?: PATH}``,
    the path dotted (``plan.tier``, ``items.0``; a leading ``$`` is allowed)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not set(value) <= {"ref", "path"}:
        raise InvalidValue(
            "evidence must be an object with ref and, optionally, path",
            remedy='pass evidence as {"ref": "<memory or fact id>", "path": "field.in.body"}',
            field="evidence",
        )
    ref = value.get("ref")
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidValue(
            "evidence needs a ref: the id of the memory or fact that bears the claim out",
            remedy="pass the id (or name) of a memory or fact you can read",
            field="evidence.ref",
        )
    fields.text(ref, "evidence.ref")
    path = value.get("path")
    if path is None:
        return Evidence(ref.strip())
    if not isinstance(path, str) or len(path) > PATH_MAX_CHARS:
        raise InvalidValue(
            f"evidence.path must be text of at most {PATH_MAX_CHARS} characters",
            remedy="pass the dotted path of the field, like plan.tier",
            field="evidence.path",
        )
    if not re.fullmatch(PATH_PATTERN, fields.text(path, "evidence.path")):
        raise InvalidValue(
            f"evidence.path {path!r} names no field",
            remedy="pass the dotted path of the field, like plan.tier or items.0",
            field="evidence.path",
        )
    parts = path.split(".")
    return Evidence(ref.strip(), tuple(parts[1:] if parts[0] == "$" and parts[1:] else parts))


def _refused(evidence: Evidence, reason: str, said: str, remedy: str) -> EvidenceMismatch:
    return EvidenceMismatch(
        f"the evidence {evidence.ref!r} does not bear the claim out: {said}",
        remedy=remedy,
        reason=reason,
        **evidence.details(),
    )


def _found(svc: MemoryService, tx: Reads, evidence: Evidence) -> Memory | None:
    """The memory or fact the evidence names, as the writer's view finds it: by id, or
    by a name that one memory of the view holds."""
    view = svc._reader(tx)
    by_id = view.get(tx, evidence.ref)
    if by_id is not None:
        return by_id
    if not fields.is_name(evidence.ref):
        return None
    named_ = [
        m for m in tx.find_by_name(svc.realm, evidence.ref, view.lookup_scopes()) if view.sees(m)
    ]
    return named_[0] if len(named_) == 1 else None


def _field(body: str, path: tuple[str, ...]) -> tuple[bool, Any]:
    """The value at ``path`` in ``body`` read as JSON: (found, value)."""
    try:
        value: Any = json.loads(body)
    except ValueError:
        return False, None
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def _equal(value: Any, claim: str) -> bool:
    """Whether a JSON field holds the claim: the same text for a string, else the same
    JSON value (the claim read as JSON, ``42`` for 42; ``true`` is not 1)."""
    if isinstance(value, str):
        return value == claim
    try:
        said = json.loads(claim)
    except ValueError:
        return False
    return json.dumps(value, sort_keys=True) == json.dumps(said, sort_keys=True)


def checked(
    svc: MemoryService, tx: Reads, evidence: Evidence, claim: str, *, claimant: str | None
) -> dict[str, Any]:
    """Check ``evidence`` against ``claim`` in the writer's view, and the record of the
    check; ``evidence_mismatch`` when it does not bear the claim out. ``claimant`` is the
    id of the row the claim is made for (evidence cannot be the claim itself)."""
    found = _found(svc, tx, evidence)
    if found is None:
        raise _refused(
            evidence,
            "not_found",
            "no memory or fact of that id (or name) is in the writer's view",
            "name the id of a memory or fact you can read",
        )
    if found.id == claimant:
        raise _refused(
            evidence,
            "self",
            "a memory cannot stand as its own evidence",
            "name another memory or fact that holds the same value",
        )
    if found.status is not Status.ACTIVE:
        raise _refused(
            evidence,
            "not_active",
            f"it is {found.status.value}, not active",
            "name the current version of the memory or fact",
        )
    if rank(found.trust) < rank(EVIDENCE_FLOOR):
        raise _refused(
            evidence,
            "untrusted",
            f"it is trusted {found.trust.value}, below {EVIDENCE_FLOOR.value}",
            f"name evidence trusted {EVIDENCE_FLOOR.value} or verified, or have it retiered",
        )
    if evidence.path is None:
        same = found.body == claim
    else:
        present, value = _field(found.body, evidence.path)
        if not present:
            raise _refused(
                evidence,
                "path_missing",
                "its body has no JSON field at that path",
                "name the path of the field that holds the value, like plan.tier",
            )
        same = _equal(value, claim)
    if not same:
        where = "its body" if evidence.path is None else "the field at that path"
        raise _refused(
            evidence,
            "value_differs",
            f"{where} holds another value",
            "write the value the evidence holds, exactly, or name other evidence",
        )
    return {
        "ref": found.id,
        "path": evidence.path_text,
        "content_hash": found.content_hash,
        "trust": found.trust.value,
        "checked_by": svc.principal,
    }


def evidenced(svc: MemoryService, memory: Memory, record: dict[str, Any], now: datetime) -> Memory:
    """``memory`` as the checked evidence ``record`` leaves it: ``verified`` when the
    writer's own ceiling is ``attested`` (an application, an operator, the steward),
    else at the trust it has, with the check recorded as the writer's claim. Refused
    above the cap for a memory that was ever quarantined."""
    record = {**record, "checked_at": stamp(now)}
    if svc.actor.trust is Trust.ATTESTED:
        check_cap(memory, Trust.VERIFIED)
        provenance = {"epistemic": "verified", "verification_evidence": record}
        verified = Trust.VERIFIED
    else:
        provenance = {"epistemic": "verified_claim", "verification_evidence": record}
        verified = memory.trust
    metadata = {**memory.metadata, PROVENANCE: provenance}
    return replace(memory, trust=verified, metadata=metadata, updated_at=now)


# -- the verb -----------------------------------------------------------------------------


def retier(
    svc: MemoryService,
    memory_id: str,
    trust: str,
    *,
    reason: str,
    evidence: Mapping[str, str] | None = None,
) -> RetierResult:
    """Set a memory's (or a fact version's) trust: the reviewed way trust rises, and a
    way to lower it. ``verified`` needs ``evidence`` that bears its body out; a memory
    that was ever quarantined stays at ``observed`` or below (``trust_capped``). The
    memory must be active and in the reviewer's view; one ``retier`` event records the
    move, the reviewer and the reason. Asking for the trust it has changes nothing."""
    from retain.results import RetierResult

    fields.text(memory_id, "memory_id")
    asked = named(trust, "trust")
    if not fields.text(reason, "reason").strip():
        raise InvalidValue(
            "a retier needs a reason",
            remedy="say why the memory is trusted more (or less) now",
            field="reason",
        )
    proof = evidence_of(evidence)
    if asked is Trust.VERIFIED and proof is None:
        raise InvalidValue(
            "verified needs evidence the store can check",
            remedy="name a memory or fact trusted attested or above whose value equals it",
            field="evidence",
        )
    if proof is not None and asked is not Trust.VERIFIED:
        raise InvalidValue(
            f"evidence is checked for verified, not for {asked.value}",
            remedy="leave evidence out, or retier to verified",
            field="evidence",
        )

    def run(work: Work) -> RetierResult:
        tx, now = work.reads, work.now
        memory = _target(svc, tx, memory_id)
        access.decides(memory.scope)
        check_cap(memory, asked)
        if memory.trust is asked and proof is None:
            return RetierResult(memory, memory.trust, changed=False)
        if proof is not None:
            record = checked(svc, tx, proof, memory.body, claimant=memory.id)
            moved = evidenced(svc, memory, record, now)
        else:
            moved = replace(unproven(memory, claims=False), trust=asked)
        moved = replace(moved, updated_at=now)
        rows.swap(work, moved, memory, "retiered")
        payload = rows.payload_of(moved, now) | {
            "retier": {
                "from": memory.trust.value,
                "to": moved.trust.value,
                "evidence": moved.metadata.get(PROVENANCE) if proof is not None else None,
            }
        }
        event = work.event("retier", payload, memory_id=memory.id, reason=reason)
        return RetierResult(
            moved, memory.trust, changed=True, receipt=work.receipt(event, moved.content_hash)
        )

    return svc._write(run)


def _target(svc: MemoryService, tx: Reads, memory_id: str) -> Memory:
    """The active memory a retier names (its id, or a name one memory of the view
    holds), as the reviewer's view finds it."""
    from retain.service import lookup

    memory = svc._reader(tx).get(tx, memory_id)
    if memory is None and fields.is_name(memory_id):
        memory = lookup.locate(svc, tx, memory_id, None)
    if memory is None or memory.status is not Status.ACTIVE:
        raise NotFound(
            f"no active memory {memory_id!r} to retier",
            remedy="check the id by listing or searching the memories",
            fix="find",
            id=memory_id,
        )
    return memory
