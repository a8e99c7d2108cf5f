"""Facts on two time axes, from a fact's versions alone.

A fact is a lineage of memories in one scope sharing a subject (matched ignoring case)
and a predicate; each version's body is the value, and each new version names the one
it took over from in ``supersedes``. Nothing else is stored: what the store believed at
any moment is derived from the rows.

* A version is *recorded* at its ``created_at`` and believed from then until it is
  retracted (its row's ``updated_at`` once its status is ``retracted``; a retracted row
  never changes again).
* It holds in the world from its ``valid_from`` (unknown: from when it was recorded)
  until the start of the first later version that took over from it and was believed at
  the moment asked about. So a retraction brings back, as of that moment, the value its
  version ended. That later version is its ``superseded_by``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from retain.model import Fact, Memory, Status, Trust

# What a fact read or history shows: a quarantined, discarded or forgotten version was
# never a value the store stood by.
SHOWN = (Status.ACTIVE, Status.SUPERSEDED, Status.RETRACTED)


def start(version: Memory) -> datetime:
    """When a version's value began to hold: its ``valid_from``, else its recording."""
    return version.valid_from or version.created_at


def retracted_at(version: Memory) -> datetime | None:
    return version.updated_at if version.status is Status.RETRACTED else None


def as_known(versions: Sequence[Memory], known_at: datetime) -> list[Fact]:
    """The versions recorded by ``known_at``, each as the store knew it then, in the
    order they were recorded."""
    recorded = sorted(
        (v for v in versions if v.created_at <= known_at), key=lambda v: (v.created_at, v.id)
    )
    ends: dict[str, datetime] = {}
    successors: dict[str, str] = {}  # the latest version believed to take over from each
    for version in recorded:
        gone = retracted_at(version)
        if version.supersedes is not None and (gone is None or gone > known_at):
            began = start(version)
            successors[version.supersedes] = version.id
            if version.supersedes not in ends or began < ends[version.supersedes]:
                ends[version.supersedes] = began
    return [_fact(v, ends.get(v.id), successors.get(v.id), known_at) for v in recorded]


def holds(fact: Fact, valid_at: datetime, known_at: datetime) -> bool:
    """Whether the store, at ``known_at``, believed ``fact`` held at ``valid_at``."""
    believed = fact.retracted_at is None or fact.retracted_at > known_at
    began = fact.valid_from or fact.recorded_at
    return believed and began <= valid_at and (fact.valid_to is None or valid_at < fact.valid_to)


def _fact(
    version: Memory, valid_to: datetime | None, successor: str | None, known_at: datetime
) -> Fact:
    gone = retracted_at(version)
    return Fact(
        id=version.id,
        scope=version.scope,
        subject=version.subject or "",
        predicate=version.predicate or "",
        value=version.body,
        valid_from=version.valid_from,
        valid_to=valid_to,
        recorded_at=version.created_at,
        retracted_at=gone if gone is not None and gone <= known_at else None,
        author=version.author,
        trust=version.trust,
        status=version.status,
        supersedes=version.supersedes,
        superseded_by=successor,
        ever_quarantined=version.ever_quarantined,
        provenance=provenance(version),
    )


CONFIRMED = "confirmed"  # the metadata key of a reviewer's confirmation of a claimed fact


def provenance(version: Memory) -> str:
    """How a fact came in: ``verified`` (its value equals evidence the store checked),
    ``claimed`` (an unauthenticated writer said so, and no reviewer has confirmed it),
    else ``attested`` (an authenticated principal wrote it, or a reviewer confirmed it)."""
    if version.trust is Trust.VERIFIED:
        return "verified"
    if CONFIRMED not in version.metadata and (
        version.trust is Trust.CLAIMED or "claimed" in version.quarantine_reason
    ):
        return "claimed"
    return "attested"
