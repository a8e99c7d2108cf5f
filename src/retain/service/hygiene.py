"""The hygiene pass: what keeps a store honest, listed in one read (``retain.hygiene``).

Every section is read through the caller's view, as a listing is: a memory it does not
see is neither listed nor counted. It changes nothing; a curator acts on what it lists
(``verify`` a memory again, ``decide`` a pair, ``approve`` a ticket), and a scheduled job
runs it so that nobody has to remember to (``docs/graph.md``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain import budget, fields
from retain.chrono import after, before, parse_duration, stamp
from retain.graph import CONTRADICTS, SIMILAR_TO, Relation
from retain.model import GLOBAL_SCOPE, Memory, Status
from retain.service import assertion, ticket
from retain.service.relation import conflict_key
from retain.service.view import View
from retain.storage.base import MemoryFilter, Reads

if TYPE_CHECKING:
    from retain.hygiene import HygieneReport, Section
    from retain.service import MemoryService

PAGE = 1000  # rows read at a time
UNVERIFIED = "90d"  # the default period a memory may go unverified
EXPIRING = "7d"  # the default window of a ticket about to expire
PRESSURE = 0.8  # a band holding this share of its budget or more is listed
SHOWN = 20  # the items a section lists by default


def hygiene_of(
    svc: MemoryService,
    *,
    unverified: str = UNVERIFIED,
    expiring: str = EXPIRING,
    limit: int = SHOWN,
) -> HygieneReport:
    """Every section of ``retain.hygiene.SECTIONS`` as the caller sees the store now:
    memories not verified within ``unverified`` (a period: ``90d``), tickets expiring
    within ``expiring``, at most ``limit`` items a section (each counts them all)."""
    unverified_for = parse_duration(fields.text(unverified, "unverified"))
    expiring_in = parse_duration(fields.text(expiring, "expiring"))
    fields.page(limit)

    from retain.hygiene import HygieneReport

    def run(tx: Reads) -> HygieneReport:
        now = svc._read_now(tx)
        view = svc._reader(tx)
        scopes, tiers_only = view.narrow(None, with_own=True, reads=tx)
        where = MemoryFilter(realm=svc.realm, scopes=scopes, tiers_only=tiers_only)
        every = tx.list_memories(where, None)
        old = stamp(before(now, unverified_for))
        stale = [m for m in every if stamp(m.verified_at) < old]
        gone = [m for m in every if m.is_expired(now)]  # the same read, not a second
        open_pairs = _open(svc, tx)
        sections = (
            _section("unverified", [_memory(m, now) for m in stale], limit),
            _section("expired", [_memory(m, now) for m in gone], limit),
            _section("dangling_references", _dangling(svc, tx, view, every, now), limit),
            _section("inline_pressure", _pressure(svc, tx, now), limit),
            _section("contradictions", _pairs(tx, view, open_pairs, CONTRADICTS, now), limit),
            _section(
                "conflicts", [c.to_dict() for c in assertion.active_signals(svc, tx, view)], limit
            ),
            _section("tickets_expiring", _tickets(svc, tx, now, after(now, expiring_in)), limit),
            _section("near_duplicates", _clusters(tx, view, open_pairs, now), limit),
        )
        return HygieneReport(sections, now, unverified, expiring)

    return svc.backend.read(run)


def _section(name: str, items: list[dict[str, Any]], limit: int) -> Section:
    from retain.hygiene import Section

    return Section(name, len(items), tuple(items[:limit]))


def _memory(memory: Memory, now: datetime) -> dict[str, Any]:
    return {
        "id": memory.id,
        "name": memory.name,
        "scope": memory.scope,
        "description": memory.description,
        "verified_at": stamp(memory.verified_at),
        "expires_at": stamp(memory.expires_at) if memory.expires_at else None,
        "expired": memory.is_expired(now),
    }


def _dangling(
    svc: MemoryService, tx: Reads, view: View, memories: list[Memory], now: datetime
) -> list[dict[str, Any]]:
    """Each reference of a memory that names no memory the store holds (by id, or by a
    name from where it resolves)."""
    cited = {r for m in memories for r in m.references}
    if not cited:
        return []
    by_id = {m.id for m in tx.get_many(sorted(cited))}
    named: dict[str, set[str]] = {}
    for name in sorted(r for r in cited if r not in by_id and fields.is_name(r)):
        named[name] = {m.scope for m in tx.find_by_name(svc.realm, name, None)}
    found = []
    for memory in memories:
        for reference in memory.references:
            scopes = named.get(reference, set())
            if reference in by_id or GLOBAL_SCOPE in scopes or memory.scope in scopes:
                continue
            found.append({**_memory(memory, now), "reference": reference})
    return found


def _pressure(svc: MemoryService, tx: Reads, now: datetime) -> list[dict[str, Any]]:
    """Each inline band holding ``PRESSURE`` of the budget or more, fullest first."""
    limit = svc.settings.inline_max_bytes
    entries = tx.inline_entries(svc.realm, stamp(now))
    found = []
    for band in budget.bands(entries).values():
        share = band.total / limit if limit else (1.0 if band.total else 0.0)
        if share >= PRESSURE:
            found.append(
                {"project": band.project, "bytes": band.total, "budget": limit,
                 "share": round(share, 3), "memories": len(band.members)}
            )  # fmt: skip
    return sorted(found, key=lambda b: -b["share"])


def _open(svc: MemoryService, tx: Reads) -> list[Relation]:
    found: list[Relation] = []
    while True:
        page = tx.open_relations(svc.realm, found[-1].id if found else None, PAGE)
        found += page
        if len(page) < PAGE:
            return found


def _pairs(
    tx: Reads, view: View, relations: list[Relation], kind: str, now: datetime
) -> list[dict[str, Any]]:
    """The open pairs of ``kind`` whose two memories the reader sees."""
    chosen = [r for r in relations if r.type == kind]
    ends = _seen(tx, view, chosen)
    return [
        {"relation": r.to_dict(), "first": _memory(ends[r.source], now),
         "second": _memory(ends[r.target], now),
         "key": list(conflict_key(ends[r.source], ends[r.target]))}
        for r in chosen
        if r.source in ends and r.target in ends
    ]  # fmt: skip


def _seen(tx: Reads, view: View, relations: list[Relation]) -> dict[str, Memory]:
    """The active memories at the relations' ends that the reader sees (a pair with an end
    superseded, retracted or gone since waits for nobody)."""
    ids = sorted({r.source for r in relations} | {r.target for r in relations})
    return {m.id: m for m in tx.get_many(ids) if m.status is Status.ACTIVE and view.sees(m)}


def _tickets(svc: MemoryService, tx: Reads, now: datetime, until: datetime) -> list[dict[str, Any]]:
    """The open tickets whose expiry falls before ``until``, soonest first."""
    waiting = ticket.read_tickets(svc, tx, now, "open")
    soon = [p for p in waiting if p.expires_at is not None and p.expires_at <= until]
    soon.sort(key=lambda p: (p.expires_at, p.id))
    return [
        {"id": p.id, "source": p.source, "target": p.target, "summary": p.summary,
         "expires_at": stamp(p.expires_at) if p.expires_at else None}
        for p in soon
    ]  # fmt: skip


def _clusters(
    tx: Reads, view: View, relations: list[Relation], now: datetime
) -> list[dict[str, Any]]:
    """The groups of memories joined by open ``similar_to`` pairs, largest first."""
    from retain.hygiene import clusters

    chosen = [r for r in relations if r.type == SIMILAR_TO]
    ends = _seen(tx, view, chosen)
    pairs = [(r.source, r.target) for r in chosen if r.source in ends and r.target in ends]
    return [
        {"size": len(group), "memories": [_memory(ends[i], now) for i in group],
         "pairs": sum(1 for a, _ in pairs if a in group)}
        for group in clusters(pairs)
    ]  # fmt: skip
