"""The relation graph's statements, the same on SQLite and PostgreSQL: a realm's edges
between memories (``retain.graph``), one row per (source, target, type).

In psycopg's ``%s`` style, like ``statements``; a transaction supplies ``_rows`` and
``_execute``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from retain.chrono import parse_optional_stamp, parse_stamp, stamp
from retain.graph import SYMMETRIC, Relation
from retain.model import Memory
from retain.storage.rows import COLUMNS

_COLUMNS = (
    "id, source, target, type, score, reason, principal, created_at, decision, decided_by, "
    "decided_at"
)
_OPEN = "decision IS NULL AND type IN ({})".format(", ".join(f"'{t}'" for t in sorted(SYMMETRIC)))


def _relation(realm: str, row: Sequence[Any]) -> Relation:
    return Relation(
        id=row[0], realm=realm, source=row[1], target=row[2], type=row[3],
        score=None if row[4] is None else float(row[4]), reason=row[5], principal=row[6],
        created_at=parse_stamp(row[7]), decision=row[8], decided_by=row[9],
        decided_at=parse_optional_stamp(row[10]),
    )  # fmt: skip


class RelationStatements(ABC):
    """A transaction's reads and writes of the ``relations`` table."""

    @abstractmethod
    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]: ...

    @abstractmethod
    def _execute(self, sql: str, args: Sequence[Any] = ()) -> Any: ...

    @abstractmethod
    def _memory(self, row: Sequence[Any]) -> Memory: ...

    def derived_from(self, realm: str, memory_id: str) -> list[Memory]:
        rows = self._rows(
            f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND derived_from = %s "
            "ORDER BY created_at, id",
            (realm, memory_id),
        )
        return [self._memory(row) for row in rows]

    def relations(self, realm: str, ids: Sequence[str]) -> list[Relation]:
        found: dict[str, Relation] = {}
        for start in range(0, len(ids), 400):
            part = list(ids[start : start + 400])
            marks = ", ".join(["%s"] * len(part))
            rows = self._rows(
                f"SELECT {_COLUMNS} FROM relations WHERE realm = %s "
                f"AND (source IN ({marks}) OR target IN ({marks}))",
                [realm, *part, *part],
            )
            for row in rows:
                found[row[0]] = _relation(realm, row)
        return sorted(found.values(), key=lambda r: (r.created_at, r.id))

    def open_relations(self, realm: str, after: str | None, limit: int) -> list[Relation]:
        sql = f"SELECT {_COLUMNS} FROM relations WHERE realm = %s AND {_OPEN}"
        args: list[Any] = [realm]
        if after is not None:
            sql += " AND id > %s"
            args.append(after)
        rows = self._rows(sql + " ORDER BY id LIMIT %s", [*args, limit])
        return [_relation(realm, row) for row in rows]

    def relation_counts(self, realm: str | None = None) -> dict[str, int]:
        sql = "SELECT type, count(*) FROM relations"
        args: list[Any] = []
        if realm is not None:
            sql += " WHERE realm = %s"
            args.append(realm)
        return {row[0]: int(row[1]) for row in self._rows(sql + " GROUP BY type", args)}

    def put_relation(self, relation: Relation) -> None:
        r = relation
        self._execute(
            f"INSERT INTO relations(realm, {_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (realm, source, target, type) DO UPDATE SET score = excluded.score, "
            "reason = excluded.reason, principal = excluded.principal, "
            "created_at = excluded.created_at, decision = excluded.decision, "
            "decided_by = excluded.decided_by, decided_at = excluded.decided_at",
            (
                r.realm, r.id, r.source, r.target, r.type, r.score, r.reason, r.principal,
                stamp(r.created_at), r.decision, r.decided_by,
                None if r.decided_at is None else stamp(r.decided_at),
            ),
        )  # fmt: skip

    def delete_relations(self, realm: str, memory_id: str) -> int:
        cursor = self._execute(
            "DELETE FROM relations WHERE realm = %s AND (source = %s OR target = %s)",
            (realm, memory_id, memory_id),
        )
        return int(cursor.rowcount)

    def erase_relation_reasons(self, realm: str, memory_id: str) -> None:
        self._execute(
            "UPDATE relations SET reason = '' WHERE realm = %s AND (source = %s OR target = %s)",
            (realm, memory_id, memory_id),
        )
