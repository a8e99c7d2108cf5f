"""Lookups: a memory by name or id as the actor's view finds it, the page of a body
that counts as a read, the listings and the filter a listing or a search of the tiers
selects with.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from retain import fields
from retain.chrono import age_phrase, before, parse_duration, stamp
from retain.errors import AmbiguousName, InvalidValue, NotFound
from retain.model import (
    AGENT_PREFIX,
    GLOBAL_SCOPE,
    PROJECT_PREFIX,
    TEAM_PREFIX,
    Memory,
    Status,
    Trust,
    project_scope,
)
from retain.read_results import ReadResult, Reference
from retain.service import rows, trust
from retain.service.work import Work
from retain.storage.base import MemoryFilter, Reads

if TYPE_CHECKING:
    from retain.service import MemoryService

READ_PAGE_CHARS = 16_000


@dataclass(frozen=True, slots=True)
class Record:
    """A memory with what cites it: the answer to ``get``."""

    memory: Memory
    referenced_by: tuple[str, ...]


def locate(
    svc: MemoryService, tx: Reads, name: str, project: str | None, *, unnamed: bool = False
) -> Memory:
    """The memory ``name`` names in the tiers ``project`` picks, as the actor's view
    sees them; with ``unnamed``, an id names a memory without a name (an agent's own,
    a fact's version) in the view. Outside the view is ``not_found``."""
    fields.name(name)
    view = svc._reader(tx, project)
    found = [m for m in tx.find_by_name(svc.realm, name, view.lookup_scopes()) if view.sees(m)]
    if not found and unnamed and project is None:
        found = [m for m in tx.get_many([name]) if _by_id(m) and view.sees(m)]
    if not found:
        where = (
            "any tier"
            if project is None
            else ("the global tier" if project == "" else f"project {project!r} or global")
        )
        raise NotFound(
            f"no memory named {name!r} in {where}",
            remedy="check the name by listing or searching the memories",
            fix="find",
            name=name,
            project=project,
        )
    if len(found) > 1:
        tiers = [m.tier for m in found]
        raise AmbiguousName(
            f"{name!r} is in several projects: {', '.join(tiers)}",
            remedy="name the project the call means",
            fix="name_project",
            name=name,
            projects=tiers,
        )
    return found[0]


def _by_id(memory: Memory) -> bool:
    """Whether ``memory`` is found by its id: it holds no name (it has none, or it is
    quarantined or discarded: a row waiting for review, or reviewed, holds none)."""
    return memory.name is None or memory.status in (Status.QUARANTINED, Status.DISCARDED)


def get(
    svc: MemoryService, name: str, *, project: str | None = None, min_trust: str | None = None
) -> Record:
    """Every field of a memory and what references it; counts as no read. With
    ``min_trust``, a memory trusted less is ``not_found``, as one outside the view."""
    least = trust.minimum(min_trust)

    def run(tx: Reads) -> Record:
        memory = locate(svc, tx, name, project, unnamed=True)
        if least is not None and not trust.meets(memory.trust, least):
            raise NotFound(
                f"no memory named {name!r} trusted {least.value} or above",
                remedy="check the name by listing or searching the memories, or ask for "
                "a lower trust",
                fix="find",
                name=name,
                project=project,
                min_trust=least.value,
            )
        return Record(rows.linked(tx, [memory])[0], referenced_by(svc, tx, memory))

    return svc.backend.read(run)


def referenced_by(svc: MemoryService, tx: Reads, memory: Memory) -> tuple[str, ...]:
    """What cites ``memory``: by its id from anywhere, by its name from where that
    name resolves to it (its own tier, or anywhere for a global memory)."""
    targets = [memory.id] + ([memory.name] if memory.name else [])
    view = svc._reader(tx)
    return tuple(
        rows.label(m)
        for m in tx.referencing(svc.realm, targets)
        if m.id != memory.id and not view.hides(m) and cites(m, memory)
    )


def cites(citing: Memory, memory: Memory) -> bool:
    """Whether a reference of ``citing`` (one naming ``memory``'s id or name) resolves to
    ``memory``: its id from anywhere, its name from its own tier or, for a global memory,
    from anywhere."""
    return (
        memory.id in citing.references
        or memory.scope == GLOBAL_SCOPE
        or citing.scope == memory.scope
    )


def read(
    svc: MemoryService, name: str, *, offset: int = 0, project: str | None = None
) -> ReadResult:
    """A page of a memory's body with its caption; the first page counts as a read."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidValue(
            f"offset {offset!r} is not a whole number of characters ≥ 0",
            remedy="pass 0 or a continuation offset a read returned",
            field="offset",
        )

    def run(work: Work) -> ReadResult:
        tx, now = work.reads, work.now
        memory = rows.linked(tx, [locate(svc, tx, name, project, unnamed=True)])[0]
        if offset > len(memory.body):
            raise InvalidValue(
                f"offset {offset} is past the end of {name!r} ({len(memory.body)} characters)",
                remedy="pass 0 or a continuation offset a read returned",
                field="offset",
            )
        if offset == 0:
            count = work.count_read(memory.id)
            memory = replace(memory, read_count=count)
            work.event("read", {"read_count": count}, memory_id=memory.id)
        end = offset + READ_PAGE_CHARS
        references = []
        for target in memory.references:
            named = (
                tx.find_by_name(svc.realm, target, [GLOBAL_SCOPE, memory.scope])
                if fields.is_name(target)
                else []
            )
            references.append(Reference(target, named[0].description if named else None))
        return ReadResult(
            memory=memory,
            text=memory.body[offset:end],
            offset=offset,
            next_offset=end if end < len(memory.body) else None,
            total_chars=len(memory.body),
            caption=caption(memory, now),
            references=tuple(references),
            referenced_by=referenced_by(svc, tx, memory),
        )

    return svc._write(run)


def caption(memory: Memory, now: datetime) -> str:
    """ "Recorded 47 days ago, verified yesterday" and the expiry, when there is one."""
    recorded = f"Recorded {age_phrase(memory.created_at, now)}"
    if memory.was_verified:
        checked = f"verified {age_phrase(memory.verified_at, now)}"
    else:
        checked = "not verified since"
    text = f"{recorded}, {checked}."
    if memory.is_expired(now):
        text += f" Expired {age_phrase(memory.expires_at or now, now)}."
    return text + " A point-in-time note, not live state."


def list_memories(
    svc: MemoryService,
    *,
    project: str | None = None,
    tag: str | None = None,
    referencing: str | None = None,
    unverified: str | None = None,
    expired: bool = False,
    limit: int | None = None,
    after: str | None = None,
    min_trust: str | None = None,
) -> list[Memory]:
    """Memories in index order (priority, then newest first); ``after`` is a cursor
    (``fields.cursor_of`` of the last memory of a page) to continue from; with
    ``min_trust``, only those trusted at least that."""
    least = trust.minimum(min_trust)
    position = fields.cursor(after) if after is not None else None
    if limit is not None:
        fields.page(limit)
    now = svc._now()

    def run(tx: Reads) -> list[Memory]:
        where = filter_of(
            svc, tx, now, project, tag, referencing, unverified, expired, listing=True,
            min_trust=least,
        )  # fmt: skip
        return rows.linked(tx, tx.list_memories(where, limit, position))

    return svc.backend.read(run)


def filter_of(
    svc: MemoryService,
    tx: Reads,
    now: datetime,
    project: str | None,
    tag: str | None,
    referencing: str | None,
    unverified: str | None,
    expired: bool,
    *,
    listing: bool,
    tier: str | None = None,
    min_trust: Trust | None = None,
) -> MemoryFilter:
    scopes: tuple[str, ...] | None
    if project is None:
        scopes = None if tier != "global" else (GLOBAL_SCOPE,)
    elif project == "":
        scopes = (GLOBAL_SCOPE,)
    else:
        svc._require_project(tx, project)
        if listing or tier == "project":
            scopes = (project_scope(project),)
        elif tier == "global":
            scopes = (GLOBAL_SCOPE,)
        else:
            scopes = (GLOBAL_SCOPE, project_scope(project))
    with_own = tier is None and (not listing or project is None)
    scopes, tiers_only = svc._reader(tx).narrow(scopes, with_own=with_own, reads=tx)
    for value, field in ((referencing, "referencing"), (unverified, "unverified")):
        if value is not None:
            fields.text(value, field)
    targets: tuple[str, ...] = ()
    if referencing:
        targets = (referencing,)
        named = tx.find_by_name(svc.realm, referencing, None) if fields.is_name(referencing) else []
        targets += tuple(m.id for m in named)
    verified_before = stamp(before(now, parse_duration(unverified))) if unverified else None
    if tag is not None:
        fields.tags([tag])
    return MemoryFilter(
        realm=svc.realm,
        scopes=scopes,
        tiers_only=tiers_only,
        tag=tag,
        referencing=targets,
        verified_before=verified_before,
        expired_at=stamp(now) if expired else None,
        trusts=trust.at_least(min_trust),
    )


def check_scope(scope: str) -> None:
    """A scope a verb may be asked for by name (a sweep's, a dedup pass's): global, or
    project:, team: or agent: a name; else ``invalid_value``."""
    fields.text(scope, "scope")
    prefix = next((p for p in (PROJECT_PREFIX, TEAM_PREFIX, AGENT_PREFIX) if scope.startswith(p)),
                  None)  # fmt: skip
    if scope == GLOBAL_SCOPE or (prefix is not None and fields.is_name(scope[len(prefix) :])):
        return
    raise InvalidValue(
        f"{scope!r} is not a scope",
        remedy="name global, or a scope such as project:web, team:blue or agent:ada",
        field="scope",
    )
