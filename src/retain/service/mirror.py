"""Write-through mirrors (``retain.mirrors``): what a write, a removal and an erasure
send to them, and the backlog a mirror that was down has yet to take.

A write marks the rows it changed (``Work``): an active row of a mirrored scope is to be
put, one that left (deleted, retracted, superseded, held for review) to be removed. Its
links are written ``pending`` or ``removing`` in the write's own transaction, so a crash
after the commit leaves them in the backlog. Once the write commits, ``flush`` sends
each to every mirror that takes its scope, and records the outcome: ``mirrored`` with the
mirror's id, ``removed``, or ``failed`` / ``remove_failed`` with the error. A mirror's
failure never undoes the write: ``retry`` sends the backlog again, ``status`` shows it.

An erasure (``forget``, and a sweep) reaches each mirror holding one of its memories by
the link's id, then asks the mirror whether the value is gone (``verify_removed``):
``verified``, ``still_indexed``, ``unverified`` (the mirror cannot tell) or ``failed``.
The answers are the certificate's ``mirrors``, recorded as a ``forget_mirrors`` event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from retain import fields
from retain.mirrors import (
    FAILED,
    FAILED_REMOVAL,
    MIRRORED,
    PENDING,
    REMOVE_FAILED,
    REMOVED,
    REMOVING,
    STILL_INDEXED,
    UNVERIFIED,
    VERIFIED,
    Configured,
    Mirrored,
    MirrorLink,
    mirrored,
    verifier,
)
from retain.model import Status
from retain.storage.base import Progress

if TYPE_CHECKING:
    from retain.model import Memory
    from retain.service import MemoryService
    from retain.service.work import Work

ERROR_CHARS = 500  # of a mirror's error, as its link keeps it
MIRRORS_EVENT = "forget_mirrors"


@dataclass(frozen=True, slots=True)
class Mark:
    """A memory a write changed, as its mirrors are to receive it: put, or removed."""

    record: Mirrored
    remove: bool


@dataclass(frozen=True, slots=True)
class MirrorStatus:
    """``status``: the links by mirror and state, and the backlog's oldest links."""

    mirrors: tuple[str, ...]
    counts: dict[str, dict[str, int]]
    backlog: tuple[MirrorLink, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "mirrors": list(self.mirrors),
            "counts": self.counts,
            "backlog": [link.to_dict() for link in self.backlog],
        }


@dataclass(frozen=True, slots=True)
class RetryResult:
    """``retry``: how many links were sent again, and how they stand now."""

    tried: int
    mirrored: int
    removed: int
    failed: int
    unknown: tuple[str, ...] = ()  # mirrors the backlog names that this store lacks

    def to_dict(self) -> dict[str, Any]:
        return {
            "tried": self.tried,
            "mirrored": self.mirrored,
            "removed": self.removed,
            "failed": self.failed,
            "unknown": list(self.unknown),
        }


def mark(work: Work, memory: Memory, *, removed: bool = False) -> None:
    """Note a row the work changed: an active one for its scope's mirrors; one that left
    for every mirror that holds it, configured here or not (its links say)."""
    gone = removed or memory.status is not Status.ACTIVE
    if gone or any(c.takes(memory.scope) for c in work.store.mirrors):
        work.mirroring[memory.id] = (memory, gone)


def staged(work: Work) -> list[Mark]:
    """The work's marks as links in its own transaction (``pending``, ``removing``), and
    as what ``flush`` sends once it commits."""
    if not work.mirroring:
        return []
    marks = []
    stored = work.reads.mirror_links(work.realm, sorted(work.mirroring))
    known = {(k.memory_id, k.mirror): k for k in stored}
    for memory_id, (memory, gone) in work.mirroring.items():
        event = work.latest(memory_id)
        if gone:  # every mirror that holds it, by its links
            held = [k for k in stored if k.memory_id == memory_id and k.state != REMOVED]
            for holding in held:
                work.put_mirror_link(replace(holding, state=REMOVING, updated_at=work.now))
            if held:
                marks.append(Mark(mirrored(memory, event), True))
            continue
        marks.append(Mark(mirrored(memory, event), False))
        for configured in work.store.mirrors:
            if configured.takes(memory.scope):
                before = known.get((memory_id, configured.mirror.name))
                work.put_mirror_link(_link(work, memory_id, configured, PENDING, before))
    return marks


def leaving(work: Work, memory_ids: Sequence[str]) -> None:
    """Mark the links of memories an erasure takes out ``removing``, in its transaction."""
    for link in work.reads.mirror_links(work.realm, memory_ids):
        work.put_mirror_link(replace(link, state=REMOVING, updated_at=work.now))


def _link(
    work: Work, memory_id: str, configured: Configured, state: str, link: MirrorLink | None
) -> MirrorLink:
    """A link staged in the work's transaction (its outcome comes once it commits)."""
    return MirrorLink(
        realm=work.realm,
        memory_id=memory_id,
        mirror=configured.mirror.name,
        state=state,
        external_id=link.external_id if link else None,
        attempts=link.attempts if link else 0,
        error=link.error if link else "",
        updated_at=work.now,
    )


def flush(svc: MemoryService, marks: Sequence[Mark]) -> None:
    """Send a committed write's marks to their mirrors, and record how each went."""
    if not marks:
        return
    ids = sorted({m.record.id for m in marks})
    stored = svc.backend.read(lambda tx: tx.mirror_links(svc.realm, ids))
    mirrors = {c.mirror.name: c for c in svc.store.mirrors}
    done: list[tuple[MirrorLink, MirrorLink]] = []
    for m in marks:
        wanted = REMOVING if m.remove else PENDING
        for link in stored:
            if link.memory_id != m.record.id or link.state != wanted:
                continue  # not this write's to send, or a later one moved it on
            configured = mirrors.get(link.mirror)
            if configured is not None:  # else it waits in the backlog, for a retry
                done.append((link, _sent(svc, configured, link, m.record, m.remove)[0]))
    _record(svc, done)


def _sent(
    svc: MemoryService, configured: Configured, link: MirrorLink, record: Mirrored, remove: bool
) -> tuple[MirrorLink, str]:
    """``record`` put to (or removed from) one mirror: the link as it stands after, and
    (for a removal) its verification."""
    mirror, now = configured.mirror, svc.clock.now()
    tried = replace(link, attempts=link.attempts + 1, updated_at=now)
    if not remove:
        try:
            external = mirror.put(record)
        except Exception as exc:  # a mirror is another system: any failure is its own
            return replace(tried, state=FAILED, error=_error(exc, record)), FAILED_REMOVAL
        return replace(tried, state=MIRRORED, external_id=str(external), error=""), VERIFIED
    if link.external_id is None:
        # no id came back: a put that failed, or one whose answer was lost after the
        # mirror stored it (a crash, a timeout). Nothing to remove by; nothing known.
        return replace(tried, state=REMOVED, error=""), UNVERIFIED
    try:
        mirror.remove(link.external_id, record)
    except Exception as exc:
        return replace(tried, state=REMOVE_FAILED, error=_error(exc, record)), FAILED_REMOVAL
    check = verifier(mirror)
    if check is None or not record.text:  # no way to check, or no text left to check by
        return replace(tried, state=REMOVED, error=""), UNVERIFIED
    try:
        gone = check(link.external_id, record)
    except Exception as exc:
        return replace(tried, state=REMOVE_FAILED, error=_error(exc, record)), FAILED_REMOVAL
    if not gone:
        still = "removed, but the mirror's own search still finds the value"
        return replace(tried, state=REMOVE_FAILED, error=still), STILL_INDEXED
    return replace(tried, state=REMOVED, error=""), VERIFIED


def _error(exc: Exception, record: Mirrored) -> str:
    """A mirror's failure as its link keeps it: the memory's own text, which a client may
    echo (and an erasure takes out of the store), is never kept."""
    said = f"{type(exc).__name__}: {exc}"
    for text in (record.body, record.description):
        if text:
            said = said.replace(text, "[the memory's text]")
    return said[:ERROR_CHARS]


def _record(svc: MemoryService, done: Sequence[tuple[MirrorLink, MirrorLink]]) -> None:
    """Each outcome recorded over the link it was sent from, unless that link moved on
    meanwhile (a later write, a delete or an erasure staged it again): then its own send
    settles it, and a value this send put where it now leaves is taken out again, so that
    no erased or stale text stays there."""

    def run(work: Work) -> list[MirrorLink]:
        ids = sorted({after.memory_id for _, after in done})
        now = {(k.memory_id, k.mirror): k for k in work.reads.mirror_links(work.realm, ids)}
        undo = []
        for before, after in done:
            current = now.get((after.memory_id, after.mirror))
            if current is None or (current.state, current.updated_at) == (
                before.state,
                before.updated_at,
            ):
                work.put_mirror_link(after)
            elif after.state == MIRRORED and current.state in (REMOVING, REMOVED):
                undo.append(after)
        return undo

    if not done:
        return
    mirrors = {c.mirror.name: c.mirror for c in svc.store.mirrors}
    for link in svc._write(run):
        if link.external_id is not None and link.mirror in mirrors:
            with contextlib.suppress(Exception):  # a failure leaves the link removing
                mirrors[link.mirror].remove(link.external_id, _absent(link))


def erased(svc: MemoryService, records: Sequence[Mirrored]) -> dict[str, str]:
    """An erasure committed: each mirror holding one of ``records`` (pre-erasure) told to
    remove it and asked whether it is gone; the worst answer per mirror."""
    if not records:
        return {}
    ids = sorted(r.id for r in records)
    links = svc.backend.read(lambda tx: tx.mirror_links(svc.realm, ids))
    by_id = {r.id: r for r in records}
    mirrors = {c.mirror.name: c for c in svc.store.mirrors}
    order = [VERIFIED, UNVERIFIED, STILL_INDEXED, FAILED_REMOVAL]
    answers: dict[str, str] = {}
    done: list[tuple[MirrorLink, MirrorLink]] = []
    for link in links:
        configured = mirrors.get(link.mirror)
        if configured is None:
            answers[link.mirror] = FAILED_REMOVAL  # a mirror this store no longer has
            continue
        after, answer = _sent(svc, configured, link, by_id[link.memory_id], remove=True)
        done.append((link, after))
        worst = answers.get(link.mirror, VERIFIED)
        answers[link.mirror] = max(worst, answer, key=order.index)
    _record(svc, done)
    return answers


def status(svc: MemoryService, *, limit: int = 100) -> MirrorStatus:
    """The links by mirror and state, and at most ``limit`` of the backlog, oldest first."""
    fields.page(limit)

    def run(tx: Any) -> tuple[dict[tuple[str, str], int], list[MirrorLink]]:
        return tx.mirror_counts(svc.realm), tx.mirror_backlog(svc.realm, limit)

    counted, backlog = svc.backend.read(run)
    counts: dict[str, dict[str, int]] = {}
    for (mirror, state), n in sorted(counted.items()):
        counts.setdefault(mirror, {})[state] = n
    names = tuple(c.mirror.name for c in svc.store.mirrors)
    return MirrorStatus(names, counts, tuple(backlog))


def retry(svc: MemoryService, *, progress: Progress | None = None) -> RetryResult:
    """Send the backlog again: a link to put puts the memory as it is now (or removes it,
    if it left), a link to remove removes it; each outcome recorded."""
    backlog = svc.backend.read(lambda tx: tx.mirror_backlog(svc.realm, 2**31 - 1))
    ids = sorted({k.memory_id for k in backlog})
    rows = {m.id: m for m in svc.backend.read(lambda tx: tx.get_many(ids))}
    mirrors = {c.mirror.name: c for c in svc.store.mirrors}
    done: list[tuple[MirrorLink, MirrorLink]] = []
    unknown: set[str] = set()
    for n, link in enumerate(backlog, start=1):
        configured = mirrors.get(link.mirror)
        if configured is None:
            unknown.add(link.mirror)
            continue
        memory = rows.get(link.memory_id)
        gone = (
            memory is None
            or memory.status is not Status.ACTIVE
            or link.state in (REMOVING, REMOVE_FAILED)
        )
        record = mirrored(memory, None) if memory is not None else _absent(link)
        done.append((link, _sent(svc, configured, link, record, remove=gone)[0]))
        if progress is not None:
            progress("mirror", n, len(backlog))
    _record(svc, done)
    states = [after.state for _, after in done]
    return RetryResult(
        tried=len(done),
        mirrored=states.count(MIRRORED),
        removed=states.count(REMOVED),
        failed=len(done) - states.count(MIRRORED) - states.count(REMOVED),
        unknown=tuple(sorted(unknown)),
    )


def _absent(link: MirrorLink) -> Mirrored:
    """A deleted memory's stand-in for a removal: its id alone (its text is not read)."""
    return Mirrored(link.memory_id, "", "", "", {"memory_id": link.memory_id})
