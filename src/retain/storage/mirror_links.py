"""The mirror links' statements, the same on SQLite and PostgreSQL: what each
write-through mirror holds of each memory (``retain.mirrors``), one row per (realm,
memory, mirror).

In psycopg's ``%s`` style, like ``statements``; a transaction supplies ``_rows`` and
``_execute``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from retain.chrono import parse_stamp, stamp
from retain.mirrors import BACKLOG, MirrorLink

_COLUMNS = "memory_id, mirror, state, external_id, attempts, error, updated_at"


def _link(realm: str, row: Sequence[Any]) -> MirrorLink:
    return MirrorLink(
        realm=realm, memory_id=row[0], mirror=row[1], state=row[2], external_id=row[3],
        attempts=int(row[4]), error=row[5], updated_at=parse_stamp(row[6]),
    )  # fmt: skip


class MirrorLinkStatements(ABC):
    """A transaction's reads and writes of the ``mirror_links`` table."""

    @abstractmethod
    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]: ...

    @abstractmethod
    def _execute(self, sql: str, args: Sequence[Any] = ()) -> Any: ...

    def mirror_links(self, realm: str, memory_ids: Sequence[str]) -> list[MirrorLink]:
        found: list[MirrorLink] = []
        for start in range(0, len(memory_ids), 400):
            part = list(memory_ids[start : start + 400])
            marks = ", ".join(["%s"] * len(part))
            rows = self._rows(
                f"SELECT {_COLUMNS} FROM mirror_links WHERE realm = %s "
                f"AND memory_id IN ({marks}) ORDER BY memory_id, mirror",
                [realm, *part],
            )
            found += [_link(realm, row) for row in rows]
        return found

    def list_mirror_links(self, realm: str) -> list[MirrorLink]:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM mirror_links WHERE realm = %s ORDER BY memory_id, mirror",
            (realm,),
        )
        return [_link(realm, row) for row in rows]

    def mirror_backlog(self, realm: str, limit: int) -> list[MirrorLink]:
        marks = ", ".join(["%s"] * len(BACKLOG))
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM mirror_links WHERE realm = %s AND state IN ({marks}) "
            "ORDER BY updated_at, memory_id, mirror LIMIT %s",
            [realm, *BACKLOG, limit],
        )
        return [_link(realm, row) for row in rows]

    def mirror_counts(self, realm: str) -> dict[tuple[str, str], int]:
        rows = self._rows(
            "SELECT mirror, state, count(*) FROM mirror_links WHERE realm = %s "
            "GROUP BY mirror, state",
            (realm,),
        )
        return {(row[0], row[1]): int(row[2]) for row in rows}

    def put_mirror_link(self, link: MirrorLink) -> None:
        k = link
        self._execute(
            f"INSERT INTO mirror_links(realm, {_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (realm, memory_id, mirror) DO UPDATE SET state = excluded.state, "
            "external_id = excluded.external_id, attempts = excluded.attempts, "
            "error = excluded.error, updated_at = excluded.updated_at",
            (
                k.realm, k.memory_id, k.mirror, k.state, k.external_id, k.attempts, k.error,
                stamp(k.updated_at),
            ),
        )  # fmt: skip
