"""Retention: ``sweep`` forgets every memory the store learned (its ``created_at``, the
transaction time it was written at) before an instant, in one scope or in every scope
the actor sees, skipping held memories and naming them.

Without an instant, the ``[retention]`` windows of config.toml decide, scope by scope:
a scope's memories learned longer ago than its window (the most specific pattern's:
``retain.governance.retention``) go, counted back from now; a scope no pattern matches
is kept. Every status but ``forgotten`` is swept (a superseded, retracted or quarantined
version holds its text too). A dry run selects the same memories and writes nothing.

The selection is read in one read transaction, a scope's memories a page at a time in
the order learned (index ``memories_learned``), each as the actor's view sees it. The
forgetting then runs a page of the selection per write transaction, each memory read
again under the lock and erased with its copies by ``erasure.erase`` (the one erasure
``forget`` runs), its certificate appended; a memory held since the selection, or one a
copy of which is held, is kept and listed as held; one erased meanwhile (as an earlier
memory's copy, or by another caller) is passed over. Once every page is in, the store
compacts once and each certificate records its verification (``erasure.settle``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from retain import fields
from retain.chrono import parse_moment, parse_stamp, stamp
from retain.errors import HoldActive, InvalidValue, NotFound
from retain.governance.retention import Cutoff, SweepResult, Swept, window_for
from retain.model import (
    Memory,
    Proposal,
    Status,
)
from retain.service import erasure, lookup
from retain.service.work import Work
from retain.storage.base import Progress, Reads

if TYPE_CHECKING:
    from retain.service import MemoryService

PAGE = 200  # memories a sweep reads (and forgets) at a time


@dataclass(slots=True)
class _Selection:
    """What a sweep's read found: the cutoffs, the memories to forget, the held ones."""

    cutoffs: list[Cutoff] = field(default_factory=list)
    selected: list[Swept] = field(default_factory=list)
    held: list[str] = field(default_factory=list)


def sweep(
    svc: MemoryService,
    *,
    reason: str,
    before: str | None = None,
    scope: str | None = None,
    keep_digest: bool = True,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> SweepResult:
    """Forget what the store learned before ``before`` (RFC 3339 or YYYY-MM-DD; None:
    each scope's retention window decides), in ``scope`` (None: every scope the actor
    sees), keeping each value's digest unless ``keep_digest`` is false; held memories are
    skipped and listed. ``dry_run`` lists what would go and writes nothing. Reports
    ``("select", scopes done, scopes)`` and ``("forget", done, total)`` to ``progress``."""
    fields.text(reason, "reason")
    if not reason.strip():
        raise InvalidValue(
            "a sweep needs a reason", remedy="say why, in a line (the retention policy, a "
            "request)", field="reason",
        )  # fmt: skip
    instant = parse_stamp(parse_moment(before, svc.clock, "before")) if before else None
    if scope is not None:
        lookup.check_scope(scope)
    chosen = svc.backend.read(lambda tx: _select(svc, tx, instant, scope, progress))
    certificates: list[erasure.Certificate] = []
    if not dry_run:
        done, late = _forget(svc, chosen, reason, keep_digest, progress)
        reached = [erasure.reached(svc, e).mirrors for e in done]  # each to its mirrors
        settled = erasure.settle(svc, done)
        certificates = [replace(c, mirrors=m) for c, m in zip(settled, reached, strict=True)]
        chosen.held.extend(late)
        chosen.selected = [s for s in chosen.selected if s.id not in set(late)]
    return SweepResult(
        before=instant,
        scope=scope,
        retention=tuple(chosen.cutoffs),
        selected=tuple(chosen.selected),
        held=tuple(chosen.held),
        dry_run=dry_run,
        forgotten=tuple(c.to_dict() for c in certificates),
    )


def _forget(
    svc: MemoryService,
    chosen: _Selection,
    reason: str,
    keep_digest: bool,
    progress: Progress | None,
) -> tuple[list[erasure.Erasure], list[str]]:
    """Erase the selection a page per write transaction: the erasures committed, and
    the ids kept because a hold stands on them (or on a copy of them) by now."""
    ids = [s.id for s in chosen.selected]
    done: list[erasure.Erasure] = []
    late: list[str] = []

    def page(work: Work, *, part: list[str]) -> tuple[list[erasure.Erasure], list[str]]:
        view = svc._reader(work.reads)

        def reach(item: Memory | Proposal) -> bool:  # a copy it may erase: one it sees
            return view.sees_proposal(item) if isinstance(item, Proposal) else view.sees(item)

        erased, held = [], []
        for memory_id in part:
            memory = view.get(work.reads, memory_id)  # again, under the lock
            if memory is None or memory.status is Status.FORGOTTEN:
                continue  # erased meanwhile: as a copy of one before it, or by another
            try:
                erased.append(
                    erasure.erase(work, memory, reason=reason, keep_digest=keep_digest,
                                  reach=reach)
                )  # fmt: skip
            except HoldActive:  # refused before the erasure changed anything
                held.append(memory_id)
        return erased, held

    for start in range(0, len(ids), PAGE):
        if progress is not None:
            progress("forget", start, len(ids))
        erased, held = svc._write(functools.partial(page, part=ids[start : start + PAGE]))
        done.extend(erased)
        late.extend(held)
    if progress is not None:
        progress("forget", len(ids), len(ids))
    return done, late


def _select(
    svc: MemoryService,
    tx: Reads,
    instant: datetime | None,
    scope: str | None,
    progress: Progress | None,
) -> _Selection:
    """The cutoff of each scope swept, and the memories learned before it, as the
    actor's view sees them: those a hold stands on apart."""
    view = svc._reader(tx)
    realm = svc.realm
    if scope is not None and not view.covers(realm, scope):
        raise NotFound(
            f"no scope {scope!r} to sweep",
            remedy="name a scope you can see, or none to sweep every one",
            scope=scope,
        )
    now = svc._read_now(tx)
    chosen = _Selection()
    for s in [scope] if scope is not None else tx.memory_scopes(realm):
        if not view.covers(realm, s):
            continue
        if instant is not None:
            chosen.cutoffs.append(Cutoff(s, instant))
            continue
        window = window_for(svc.settings.retention, s)
        if window is not None:
            chosen.cutoffs.append(Cutoff(s, window.period.back_from(now), window))
    for done, cutoff in enumerate(chosen.cutoffs):
        if progress is not None:
            progress("select", done, len(chosen.cutoffs))
        after: tuple[str, str] | None = None
        while page := tx.learned_before(realm, cutoff.scope, stamp(cutoff.before), after, PAGE):
            after = (stamp(page[-1].created_at), page[-1].id)
            seen = [m for m in page if view.sees(m)]
            held = tx.held_among(realm, [m.id for m in seen])
            for memory in seen:
                if memory.id in held:
                    chosen.held.append(memory.id)
                else:
                    chosen.selected.append(
                        Swept(memory.id, memory.scope, memory.created_at, memory.status.value)
                    )
    if progress is not None:
        progress("select", len(chosen.cutoffs), len(chosen.cutoffs))
    return chosen
