"""The console's verbs: the records of a realm newest-updated first (``records``), one
record with its supersede chain (``record``), the realm at a glance (``overview``) and
the log newest first (``timeline``). The console's other panels are the verbs every door
calls (the quarantine queue, tickets, injections, holds, certificates, grants).

Every row is judged by the reader's view (``retain.service.view``): a row outside it is
not given; a row it covers but may not read because it was written quarantined (a
reviewer-only row, for a reader who may not review it) is given **withheld**
(``retain.panel_results``), so that the page can say what access kept back. A text or
tag filter never matches a withheld row's content: such rows are left out of a filtered
listing, and the page says that the filter did not search them.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from datetime import UTC, datetime, time, timedelta
from typing import TYPE_CHECKING

from retain import budget, fields
from retain.chrono import parse_stamp, stamp
from retain.errors import InvalidTime, InvalidValue, NotFound
from retain.model import AGENT_PREFIX, Memory, Status
from retain.panel_results import (
    BandUse,
    DayCount,
    EventPage,
    Overview,
    RecordPage,
    RecordRow,
    RecordView,
    ScopeCount,
)
from retain.service import audit, lookup, rows
from retain.service.trust import named
from retain.service.view import WHOLE, WITHHELD, View
from retain.storage.base import MemoryFilter, Reads

if TYPE_CHECKING:
    from retain.service import MemoryService

RECORDS_PAGE = 50  # a listing's page unless asked otherwise
CHAIN_MAX = 50  # the most records a chain walks each way
DAYS_MAX = 366  # the longest activity an overview counts
WRITES = ("create", "edit", "supersede", "quarantine")  # the events that write a memory
QUARANTINES = ("quarantine",)
_STATUSES = tuple(s.value for s in Status)
_SCAN = 200  # the store's rows read at a time, past those the view leaves out
_CURSOR_MARK = "~"


def cursor_of(memory: Memory) -> str:
    """The position after ``memory`` in the newest-updated-first order, as an opaque
    cursor (URL-safe base64, the form ``fields.CURSOR_PATTERN`` states)."""
    raw = f"{stamp(memory.updated_at)}{_CURSOR_MARK}{memory.id}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _position(cursor: str) -> tuple[str, str]:
    fields.text(cursor, "cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
        at, mark, memory_id = raw.partition(_CURSOR_MARK)
        if not mark or not memory_id or "\x00" in memory_id:
            raise ValueError(cursor)
        return stamp(parse_stamp(at)), memory_id
    except (ValueError, InvalidTime):  # binascii.Error, UnicodeDecodeError: ValueErrors
        raise InvalidValue(
            f"{cursor!r} is not a cursor of this listing",
            remedy="pass the next_cursor a page gave, or none for the first page",
            field="cursor",
        ) from None


def _check_status(status: str | None) -> None:
    if status is not None and status not in _STATUSES:
        raise InvalidValue(
            f"status {status!r} is not a memory's status",
            remedy=f"pass one of {', '.join(_STATUSES)}",
            field="status",
        )


def records(
    svc: MemoryService,
    *,
    scope: str | None = None,
    identity: str | None = None,
    status: str | None = None,
    trust: str | None = None,
    tag: str | None = None,
    text: str | None = None,
    limit: int = RECORDS_PAGE,
    cursor: str | None = None,
) -> RecordPage:
    """The realm's records of every status that the view covers, newest-updated first,
    without bodies: ``scope`` keeps one scope, ``identity`` one agent's own (``agent:NAME``),
    ``status`` and ``trust`` one of each, ``tag`` those carrying it and ``text``
    those whose name, description or body holds it (ASCII letters without case on
    SQLite, every letter on PostgreSQL). ``cursor`` is the ``next_cursor`` of the page
    before; it always moves, and it is set exactly when more rows follow."""
    if scope is not None:
        lookup.check_scope(scope)
    if identity is not None:
        fields.text(identity, "identity")
        if not identity.startswith(AGENT_PREFIX):
            raise InvalidValue(
                f"identity {identity!r} is not an agent's",
                remedy="name an agent as agent:NAME",
                field="identity",
            )
        fields.name(identity[len(AGENT_PREFIX) :], what="agent")
        wanted = identity
        if scope is not None and scope != wanted:
            raise InvalidValue(
                f"scope {scope!r} and identity {identity!r} name two scopes",
                remedy="pass one of them",
                field="identity",
            )
        scope = wanted
    _check_status(status)
    tier = None if trust is None else named(trust, "trust")
    for value, what in ((tag, "tag"), (text, "text")):
        if value is not None:
            fields.text(value, what)
            if not value:
                raise InvalidValue(f"{what} is empty", remedy=f"leave {what} out", field=what)
    fields.page(limit)
    before = None if cursor is None else _position(cursor)
    filtered = tag is not None or text is not None

    def run(tx: Reads) -> RecordPage:
        view = svc._reader(tx)
        # a filter looks into reviewer-only rows only for a view that sees every one of
        # them: whether it left any out is never told by the data
        unsearched = filtered and not view.reviews_all
        if scope is not None and not view.covers(svc.realm, scope):
            return RecordPage((), None, unsearched)  # not the reader's: nothing to read
        scopes, tiers_only = view.narrow(
            None if scope is None else (scope,), with_own=scope is None, reads=tx
        )
        where = MemoryFilter(
            realm=svc.realm,
            scopes=scopes,
            tiers_only=tiers_only,
            statuses=(status,) if status else _STATUSES,
            tag=tag,
            trusts=(tier.value,) if tier else (),
            contains=text,
            reviewer_only=False if filtered and not view.reviews else None,
        )
        shown: list[RecordRow] = []
        position, ask = before, max(limit + 1, _SCAN)
        while len(shown) <= limit:
            batch = tx.recent_memories(where, ask, position)
            for memory in rows.linked(tx, batch):
                row = _row(view, memory)
                if row is not None and not (row.withheld and filtered):
                    shown.append(row)  # (a withheld row a filter matched is left out)
            if len(batch) < ask:
                break
            position = (stamp(batch[-1].updated_at), batch[-1].id)
        more = len(shown) > limit
        page = tuple(shown[:limit])
        return RecordPage(page, cursor_of(page[-1].memory) if more else None, unsearched)

    return svc.backend.read(run)


def _row(view: View, memory: Memory) -> RecordRow | None:
    """``memory`` as a row of ``view``'s listing: whole, withheld, or not given (None)."""
    shown = view.shows(memory.realm, memory.scope, reviewer_only=bool(memory.quarantine_reason))
    return None if shown is None else RecordRow(memory, withheld=shown == WITHHELD)


def record(svc: MemoryService, memory_id: str) -> RecordView:
    """One record by id, with its body when the reader may read it, else withheld (see
    the module docstring), its supersede chain and the records copied from it (a
    release's successor, a promotion's copy) as far as the view covers them. A record
    outside the view is ``not_found``."""
    fields.text(memory_id, "id")
    now = svc._now()

    def run(tx: Reads) -> RecordView:
        view = svc._reader(tx)
        found = tx.get_many([memory_id])
        row = _row(view, rows.linked(tx, found)[0]) if found else None
        if row is None:
            raise NotFound(
                f"no record {memory_id!r}",
                remedy="check the id by listing the records",
                fix="find",
                id=memory_id,
            )
        memory = row.memory
        derived = [r for m in tx.derived_of(svc.realm, [memory.id]) if (r := _row(view, m))]
        return RecordView(
            row, now, _ancestors(tx, view, memory), _successors(tx, view, memory),
            tuple(sorted(derived, key=lambda r: r.memory.id)),
        )  # fmt: skip

    return svc.backend.read(run)


def _ancestors(tx: Reads, view: View, memory: Memory) -> tuple[RecordRow, ...]:
    """The records ``memory`` replaced, nearest first, up to the first the view does not
    give (or ``CHAIN_MAX``)."""
    found: list[RecordRow] = []
    at = memory.supersedes
    while at is not None and len(found) < CHAIN_MAX:
        got = rows.linked(tx, tx.get_many([at]))
        row = _row(view, got[0]) if got else None
        if row is None:
            break
        found.append(row)
        at = row.memory.supersedes
    return tuple(found)


def _successors(tx: Reads, view: View, memory: Memory) -> tuple[RecordRow, ...]:
    """The records that replaced or claimed to replace ``memory``, breadth first by id
    (ids sort by creation), as far as the view gives them (or ``CHAIN_MAX``)."""
    found: list[RecordRow] = []
    frontier, seen = [memory.id], {memory.id}
    while frontier and len(found) < CHAIN_MAX:
        ids = sorted({new for _, new, _ in tx.successors(frontier)} - seen)
        seen.update(ids)
        frontier = []
        for successor in rows.linked(tx, tx.get_many(ids)):
            row = _row(view, successor)
            if row is not None and len(found) < CHAIN_MAX:
                found.append(row)
                frontier.append(successor.id)
    return tuple(found)


def overview(svc: MemoryService, *, days: int = 30) -> Overview:
    """Each scope the view covers with its rows counted by status and trust and their
    bodies' bytes (rows it may not read counted apart, as withheld), each inline band's
    use of the budget, and the writes and quarantines of the last ``days`` days."""
    fields.whole(days, "days", 1)
    if days > DAYS_MAX:
        raise InvalidValue(
            f"days {days} is more than {DAYS_MAX}",
            remedy=f"ask for at most {DAYS_MAX} days",
            field="days",
        )
    now = svc._now()
    first = (now - timedelta(days=days - 1)).date()

    def run(tx: Reads) -> Overview:
        view = svc._reader(tx)
        statuses: dict[str, dict[str, int]] = {}
        trusts: dict[str, dict[str, int]] = {}
        sizes: dict[str, int] = {}
        withheld: dict[str, int] = {}
        for row in tx.census(svc.realm):
            shown = view.shows(svc.realm, row.scope, reviewer_only=row.reviewer_only)
            if shown == WHOLE:
                by_status = statuses.setdefault(row.scope, {})
                by_status[row.status] = by_status.get(row.status, 0) + row.count
                by_trust = trusts.setdefault(row.scope, {})
                by_trust[row.trust] = by_trust.get(row.trust, 0) + row.count
                sizes[row.scope] = sizes.get(row.scope, 0) + row.body_bytes
            elif shown == WITHHELD:
                withheld[row.scope] = withheld.get(row.scope, 0) + row.count
        scopes = tuple(
            ScopeCount(s, statuses.get(s, {}), trusts.get(s, {}), sizes.get(s, 0),
                       withheld.get(s, 0))
            for s in sorted({*statuses, *withheld})
        )  # fmt: skip
        projects = [p.name for p in tx.list_projects(svc.realm)]
        entries = [
            e for e in tx.inline_entries(svc.realm, stamp(now)) if view.covers(svc.realm, e.scope)
        ]
        bands = tuple(
            BandUse(band.project, band.total, svc.settings.inline_max_bytes)
            for band in budget.bands(entries, projects).values()
        )
        by_day: dict[str, DayCount] = {
            d.isoformat(): DayCount(d.isoformat())
            for d in (first + timedelta(days=n) for n in range(days))
        }
        since = stamp(datetime.combine(first, time(), UTC))
        for day, kind, n in tx.event_days(svc.realm, since, WRITES):
            if day in by_day:
                was = by_day[day]
                by_day[day] = replace(
                    was,
                    writes=was.writes + n,
                    quarantines=was.quarantines + (n if kind in QUARANTINES else 0),
                )
        return Overview(svc.realm, scopes, bands, tuple(by_day.values()))

    return svc.backend.read(run)


def timeline(
    svc: MemoryService,
    *,
    kinds: tuple[str, ...] = (),
    before: int | None = None,
    limit: int = 100,
) -> EventPage:
    """The realm's log newest first: the events below ``seq`` ``before`` (None: from
    the newest), of ``kinds`` only when any are named, at most ``limit``, with the
    cursor of the next page when more follow; an event about a memory the view does not
    see keeps its place without its payload."""
    if isinstance(kinds, str) or not isinstance(kinds, tuple | list):
        raise InvalidValue(
            "kinds is not a list of event kinds", remedy="pass a list of kinds", field="kinds"
        )
    for kind in kinds:
        fields.text(kind, "kinds")
    if before is not None:
        fields.whole(before, "before", 1)
    fields.page(limit)

    def run(tx: Reads) -> EventPage:
        listed = tx.recent_events(svc.realm, before, limit + 1, tuple(kinds))
        page = audit.as_seen(tx, svc._reader(tx), listed[:limit])
        return EventPage(page, page[-1].seq if len(listed) > limit else None)

    return svc.backend.read(run)
