"""A memory as a row of the ``memories`` table, the same for every backend.

The columns, and the mapping both ways; an engine passes how it stores lists, mappings
and flags (SQLite: JSON text and integers; PostgreSQL: ``jsonb`` and booleans).
Timestamps are stored in retain's text form on both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from retain.chrono import parse_optional_stamp, parse_stamp, stamp
from retain.model import Event, ListPosition, Load, Memory, Status, Trust
from retain.storage.base import Described, LoadCounts, Standing

COLUMNS = (
    "id, realm, scope, name, description, body, tags, priority, load, refs, source, subject, "
    "predicate, trust, status, ever_quarantined, supersedes, content_hash, author, created_at, "
    "updated_at, verified_at, expires_at, valid_from, valid_to, read_count, metadata, thread, "
    "changed_by, derived_from, quarantine_reason, session"
)
# The rows that hold their name: a quarantined write waiting for review, or a discarded
# one, holds none (the unique name index covers the same rows).
NAMED = "status NOT IN ('quarantined', 'discarded')"
M_COLUMNS = ", ".join("m." + c.strip() for c in COLUMNS.split(","))
INSERT_COLUMNS = [
    "id", "realm", "scope", "name", "description", "body", "body_bytes", "tags", "priority",
    "load", "refs", "source", "subject", "predicate", "trust", "status", "ever_quarantined",
    "supersedes", "content_hash", "author", "created_at", "updated_at", "verified_at",
    "expires_at", "valid_from", "valid_to", "read_count", "metadata", "thread", "changed_by",
    "derived_from", "quarantine_reason", "session",
]  # fmt: skip
# created_at is absent from the update list: the statement itself keeps it. Only a
# restore (import --force) puts the snapshot's back.
UPDATE_COLUMNS = [c for c in INSERT_COLUMNS if c not in ("id", "realm", "created_at")]
KEY_COLUMNS = "num, id, realm, scope, name, thread, subject, description, body, valid_from, context"
# The rows that have a search key: a forgotten row has none (its text is gone).
KEYED = "status <> 'forgotten'"
STANDING_COLUMNS = (
    "id, scope, thread, subject, priority, read_count, verified_at, description, body_bytes"
)


def standing_of(row: Sequence[Any]) -> Standing:
    """The ranking facts of a row selected as ``STANDING_COLUMNS``."""
    return Standing(
        id=row[0],
        scope=row[1],
        thread=row[2],
        subject=row[3],
        priority=row[4],
        read_count=row[5],
        verified_at=parse_stamp(row[6]),
        description=row[7],
        body_bytes=row[8],
    )


# The columns of ``m`` a near-copy note weighs (``described_of``)
DESCRIBED_COLUMNS = "m.id, m.realm, m.scope, m.name, m.description, m.status, m.quarantine_reason"


def described_of(row: Sequence[Any]) -> Described:
    """A row selected as ``DESCRIBED_COLUMNS``, as a note weighs it."""
    return Described(
        id=row[0],
        realm=row[1],
        scope=row[2],
        name=row[3],
        description=row[4],
        status=Status(row[5]),
        reviewer_only=bool(row[6]),
    )


def memory_of(
    row: Sequence[Any],
    strings: Callable[[Any], tuple[str, ...]],
    mapping: Callable[[Any], dict[str, Any]],
) -> Memory:
    """The memory of a row selected as ``COLUMNS``."""
    return Memory(
        id=row[0],
        realm=row[1],
        scope=row[2],
        name=row[3],
        description=row[4],
        body=row[5],
        tags=strings(row[6]),
        priority=row[7],
        load=Load(row[8]),
        references=strings(row[9]),
        source=row[10],
        subject=row[11],
        predicate=row[12],
        trust=Trust(row[13]),
        status=Status(row[14]),
        ever_quarantined=bool(row[15]),
        supersedes=row[16],
        content_hash=row[17],
        author=row[18],
        created_at=parse_stamp(row[19]),
        updated_at=parse_stamp(row[20]),
        verified_at=parse_stamp(row[21]),
        expires_at=parse_optional_stamp(row[22]),
        valid_from=parse_optional_stamp(row[23]),
        valid_to=parse_optional_stamp(row[24]),
        read_count=row[25],
        metadata=mapping(row[26]),
        thread=row[27],
        changed_by=row[28],
        derived_from=row[29],
        quarantine_reason=tuple(row[30].split(",")) if row[30] else (),
        session=row[31],
    )


def by_name(memories: Iterable[Memory]) -> dict[str, list[Memory]]:
    """Named memories grouped by name, each group by scope (``find_by_names``)."""
    found: dict[str, list[Memory]] = {}
    for memory in memories:
        found.setdefault(str(memory.name), []).append(memory)
    for held in found.values():
        held.sort(key=lambda m: m.scope)
    return found


def _stamp_or_none(value: Any) -> str | None:
    return stamp(value) if value is not None else None


def params_of(
    m: Memory,
    strings: Callable[[list[str]], Any],
    mapping: Callable[[dict[str, Any]], Any],
    flag: Callable[[bool], Any],
) -> dict[str, Any]:
    """A memory's row, by ``INSERT_COLUMNS`` name."""
    return {
        "id": m.id,
        "realm": m.realm,
        "scope": m.scope,
        "name": m.name,
        "description": m.description,
        "body": m.body,
        "body_bytes": m.body_bytes,
        "tags": strings(list(m.tags)),
        "priority": m.priority,
        "load": m.load.value,
        "refs": strings(list(m.references)),
        "source": m.source,
        "subject": m.subject,
        "predicate": m.predicate,
        "trust": m.trust.value,
        "status": m.status.value,
        "ever_quarantined": flag(m.ever_quarantined),
        "supersedes": m.supersedes,
        "content_hash": m.content_hash,
        "author": m.author,
        "created_at": stamp(m.created_at),
        "updated_at": stamp(m.updated_at),
        "verified_at": stamp(m.verified_at),
        "expires_at": _stamp_or_none(m.expires_at),
        "valid_from": _stamp_or_none(m.valid_from),
        "valid_to": _stamp_or_none(m.valid_to),
        "read_count": m.read_count,
        "metadata": mapping(m.metadata),
        "thread": m.thread,
        "changed_by": m.changed_by,
        "derived_from": m.derived_from,
        "quarantine_reason": ",".join(m.quarantine_reason) or None,
        "session": m.session,
    }


# After a position in index order (priority ASC, created_at DESC, id DESC): ``?`` placeholders.
AFTER_SQL = (
    "(m.priority > ? OR (m.priority = ? AND (m.created_at < ? OR (m.created_at = ? AND m.id < ?))))"
)


def after_args(after: ListPosition) -> list[Any]:
    created = stamp(after.created_at)
    return [after.priority, after.priority, created, created, after.id]


EVENT_COLUMNS = (
    "seq, event_id, realm, memory_id, kind, tx_time, principal, reason, payload, "
    "payload_digest, prev_hash, hash"
)


def event_of(r: Sequence[Any]) -> Event:
    """An ``events`` row of ``EVENT_COLUMNS`` as an ``Event``."""
    return Event(int(r[0]), r[1], r[2], r[3], r[4], parse_stamp(r[5]), *r[6:12])


def load_counts_of(rows: Iterable[Sequence[Any]]) -> LoadCounts:
    """A view's counts from rows of (load, memories, of them expired, the soonest expiry
    still to come), one row a load."""
    live: dict[str, int] = {}
    expired = 0
    upcoming: list[str] = []
    for load, total, gone, soonest in rows:
        live[load] = int(total) - int(gone)
        expired += int(gone)
        if soonest is not None:
            upcoming.append(soonest)
    return LoadCounts(
        index=live.get("index", 0),
        search=live.get("search", 0),
        expired=expired,
        next_expiry=min(upcoming, default=None),
    )
