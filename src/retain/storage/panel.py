"""The console's statements, the same on SQLite and PostgreSQL: the records newest-updated
first a keyset page at a time, each scope's rows counted by status and trust with their
body bytes, the log's events per day, and the log newest first.

In psycopg's ``%s`` style, like ``statements``; a transaction supplies ``_rows``,
``_flush`` (PostgreSQL holds appended events back), ``_filter_sql`` and ``_memory``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from retain.model import Event, Memory
from retain.storage.base import CensusRow, MemoryFilter
from retain.storage.rows import EVENT_COLUMNS, M_COLUMNS, event_of


class PanelStatements(ABC):
    """A transaction's reads for the console (``retain.service.panel``)."""

    @abstractmethod
    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]: ...

    @abstractmethod
    def _flush(self) -> None: ...

    @abstractmethod
    def _filter_sql(self, where: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]: ...

    @abstractmethod
    def _memory(self, row: Sequence[Any]) -> Memory: ...

    def recent_memories(
        self, where: MemoryFilter, limit: int, before: tuple[str, str] | None = None
    ) -> list[Memory]:
        """The memories ``where`` keeps, newest-updated first (then by id, descending),
        at most ``limit``, those after the position ``before`` (updated_at, id) only."""
        clause, args = self._filter_sql(where)
        if before is not None:
            clause += " AND (m.updated_at < %s OR (m.updated_at = %s AND m.id < %s))"
            args += [before[0], before[0], before[1]]
        rows = self._rows(
            f"SELECT {M_COLUMNS} FROM memories m WHERE {clause} "
            "ORDER BY m.updated_at DESC, m.id DESC LIMIT %s",
            [*args, limit],
        )
        return [self._memory(r) for r in rows]

    def census(self, realm: str) -> list[CensusRow]:
        """Every scope's rows counted by status, trust and whether they were written
        quarantined, with their bodies' bytes, by scope."""
        rows = self._rows(
            "SELECT m.scope, m.status, m.trust, m.quarantine_reason IS NOT NULL, count(*), "
            "coalesce(sum(m.body_bytes), 0) FROM memories m WHERE m.realm = %s "
            "GROUP BY m.scope, m.status, m.trust, m.quarantine_reason IS NOT NULL "
            "ORDER BY m.scope, m.status, m.trust",
            (realm,),
        )
        return [CensusRow(r[0], r[1], r[2], bool(r[3]), int(r[4]), int(r[5])) for r in rows]

    def event_days(
        self, realm: str, since: str, kinds: Sequence[str]
    ) -> list[tuple[str, str, int]]:
        """(day, kind, how many) of the realm's events of ``kinds`` stamped at ``since``
        or later, by day (``YYYY-MM-DD``, UTC) and kind."""
        self._flush()
        marks = ", ".join(["%s"] * len(kinds))
        rows = self._rows(
            "SELECT substr(tx_time, 1, 10) AS day, kind, count(*) FROM events "
            f"WHERE realm = %s AND tx_time >= %s AND kind IN ({marks}) "
            "GROUP BY day, kind ORDER BY day, kind",
            [realm, since, *kinds],
        )
        return [(str(r[0]), str(r[1]), int(r[2])) for r in rows]

    def recent_events(
        self, realm: str, before_seq: int | None, limit: int, kinds: Sequence[str] = ()
    ) -> list[Event]:
        """The realm's events newest first, those below ``before_seq`` only, of ``kinds``
        only when any are named, at most ``limit``."""
        self._flush()
        clauses: list[str] = ["realm = %s"]
        args: list[Any] = [realm]
        if before_seq is not None:
            clauses.append("seq < %s")
            args.append(before_seq)
        if kinds:
            clauses.append(f"kind IN ({', '.join(['%s'] * len(kinds))})")
            args.extend(kinds)
        rows = self._rows(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE {' AND '.join(clauses)} "
            "ORDER BY seq DESC LIMIT %s",
            [*args, limit],
        )
        return [event_of(r) for r in rows]
