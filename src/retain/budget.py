"""The inline budget: inline bodies share ``[memory] inline_max_bytes``.

It is counted in UTF-8 bytes of body text over the inline memories in force
(active, not expired, non-empty). A session's band is what it sees: the
global tier plus its project's, so a project write is measured against
global + that project, and a global write against global + the fullest
project. A change may not take any band it touches past the budget unless
it leaves that band no larger than before: a store already over budget can
always be brought back one memory at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from retain.chrono import stamp
from retain.errors import InlineBudgetExceeded
from retain.model import GLOBAL_SCOPE, Load, Memory, Status, scope_project
from retain.storage.base import InlineEntry


def counts(memory: Memory, now_stamp: str) -> bool:
    """Whether a memory spends inline budget."""
    return (
        memory.load is Load.INLINE
        and memory.status is Status.ACTIVE
        and memory.body_bytes > 0
        and (memory.expires_at is None or stamp(memory.expires_at) > now_stamp)
    )


def entry(memory: Memory) -> InlineEntry:
    return InlineEntry(memory.id, memory.name, memory.scope, memory.body_bytes)


@dataclass(frozen=True, slots=True)
class Band:
    project: str | None
    total: int
    members: tuple[InlineEntry, ...]


def bands(entries: Iterable[InlineEntry], projects: Iterable[str] = ()) -> dict[str | None, Band]:
    """Every band: the global tier alone (key None) and global + each project."""
    global_members = []
    by_project: dict[str, list[InlineEntry]] = {p: [] for p in projects}
    for e in entries:
        project = scope_project(e.scope)
        if e.scope == GLOBAL_SCOPE:
            global_members.append(e)
        elif project is not None:
            by_project.setdefault(project, []).append(e)
    global_total = sum(e.body_bytes for e in global_members)
    result: dict[str | None, Band] = {None: Band(None, global_total, tuple(global_members))}
    for project, members in by_project.items():
        result[project] = Band(
            project,
            global_total + sum(e.body_bytes for e in members),
            tuple(global_members + members),
        )
    return result


def kib(n: int) -> str:
    """A size as people read it: bytes below 1 KiB, KiB to one decimal above."""
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB"


def check(
    before: Iterable[InlineEntry],
    after: Iterable[InlineEntry],
    *,
    budget: int,
    touched: Iterable[str],
) -> None:
    """Refuse when a band containing a touched scope grows past the budget."""
    before_list, after_list = list(before), list(after)
    touched_scopes = set(touched)
    if not touched_scopes:
        return
    names = {scope_project(e.scope) for e in before_list + after_list}
    names.update(scope_project(s) for s in touched_scopes)
    projects = [p for p in names if p is not None]
    old = bands(before_list, projects)
    new = bands(after_list, projects)
    worst: Band | None = None
    for key, band in new.items():
        affected = GLOBAL_SCOPE in touched_scopes or (
            key is not None and f"project:{key}" in touched_scopes
        )
        if not affected:
            continue
        previous = old[key].total if key in old else 0
        if (
            band.total > budget
            and band.total > previous
            and (worst is None or band.total > worst.total)
        ):
            worst = band
    if worst is None:
        return
    largest = sorted(worst.members, key=lambda e: (-e.body_bytes, e.name or ""))[:3]
    named = [f"'{e.name or e.memory_id}' ({kib(e.body_bytes)})" for e in largest]
    listing = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    where = f" in the band of project {worst.project!r}" if worst.project else ""
    raise InlineBudgetExceeded(
        f"inline memories would total {kib(worst.total)}{where} against the "
        f"{kib(budget)} inline budget ([memory] inline_max_bytes)",
        remedy=f"shorten {listing}, or set load: index on one that is not a standing rule",
        total_bytes=worst.total,
        budget_bytes=budget,
        project=worst.project,
        largest=[{"name": e.name, "bytes": e.body_bytes} for e in largest],
    )
