"""Vectors in SQLite: the transaction's part that stores, reads and searches them.

A memory's vector is a row of ``memory_vectors``, stored in the write's own
transaction (``set_keys``); ``vec`` only grows, so the rows held in memory take in
what is new by asking for the rows past the last they saw (``vectors_after``). The
store searches its vectors itself (``open_vectors``, ``vector_sums``, ``nearest``, as
PostgreSQL's; ``sqlite_ann``): past ``[search] ann_from`` of them through the vector
codes beside its file, below it every row exactly in memory.
``SqliteVectors`` is a mixin of ``SqliteTransaction`` (``sqlite_transaction``), which
supplies the connection, the filters and the store's indexes, as ``PostgresVectors``
is of ``PostgresTransaction``.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from retain.storage.base import LexicalHit, MemoryFilter, SearchKey, VectorRows, vector_bytes

if TYPE_CHECKING:
    from retain.storage.base import Vector
    from retain.storage.sqlite_ann import Approximate, Indexes
    from retain.storage.sqlite_transaction import SqliteTransaction

_NUMS = "SELECT num FROM memories WHERE "  # (memories by their realm's index)
_EVERY = "SELECT model, count(*) FROM memory_vectors GROUP BY model"  # (the model's index)
# each model's vectors of the memories of a query of ``_NUMS``: the memories outermost,
# each vector found by its memory's number
_OF = (
    "SELECT v.model, count(*) FROM ({}) m "
    "CROSS JOIN memory_vectors v ON v.memory_num = m.num GROUP BY v.model"
)


class SqliteVectors(ABC):
    """The vector rows of one SQLite connection (see the module docstring)."""

    con: sqlite3.Connection
    _indexes: Callable[[], Indexes] | None  # how the store file's vectors are searched
    _ann: Approximate | None  # the one ``open_vectors`` opened

    @abstractmethod
    def _filter_sql(self, where: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
        """``where`` as a clause over ``alias`` and its arguments."""

    def _as_transaction(self) -> SqliteTransaction:
        """This, as the whole transaction the index reads through."""
        return cast("SqliteTransaction", self)

    def set_keys(self, keys: Sequence[SearchKey]) -> None:
        contexts = {k.num: k.context for k in keys if k.context is not None}
        if contexts:
            self.con.execute(
                "UPDATE memories SET context = k.value FROM json_each(?) AS k "
                "WHERE memories.num = CAST(k.key AS INTEGER)",
                (json.dumps(contexts, ensure_ascii=False),),
            )
        self.con.executemany(
            # REPLACE deletes the old row: the new one takes a fresh, higher ``vec``.
            "INSERT OR REPLACE INTO memory_vectors(memory_num, model, dim, vector) "
            "VALUES (?, ?, ?, ?)",
            [
                (k.num, v.model, v.dim, vector_bytes(v.vector))
                for k in keys
                if (v := k.vector) is not None
            ],
        )
        self.con.executemany(
            "DELETE FROM memory_vectors WHERE memory_num = ?",
            [(k.num,) for k in keys if k.vector is None],
        )

    def vectors_after(self, model: str, vec: int, limit: int) -> VectorRows:
        rows = self.con.execute(
            "SELECT v.vec, v.memory_num, v.dim, v.vector, m.realm "
            "FROM memory_vectors v JOIN memories m ON m.num = v.memory_num "
            "WHERE v.model = ? AND v.vec > ? ORDER BY v.vec LIMIT ?",
            (model, vec, limit),
        ).fetchall()
        if not rows:
            return VectorRows(vec, [], [], [], [])
        vecs, nums, dims, blobs, realms = (list(column) for column in zip(*rows, strict=True))
        return VectorRows(vecs[-1], nums, dims, realms, blobs)

    # -- the search of the vectors (storage.sqlite_ann): codes past [search] ann_from --

    def open_vectors(self, model: str, dim: int, ann_from: int) -> None:
        """Open ``model``'s vectors for this transaction's search: through the codes
        beside the file from ``ann_from`` of them (built or extended as needed), else
        every row in memory (``sqlite_ann.Indexes.searched``)."""
        if self._indexes is None:
            raise RuntimeError("this transaction was made without its store's vectors")
        self._ann = self._indexes().searched(self._as_transaction(), model, dim, ann_from)

    def vector_sums(self, model: str, realm: str) -> list[tuple[int, Vector, int]]:
        ann = self._opened_ann(model)
        total, count = ann.sums(realm)
        return [(ann.meta.dim, total, count)] if count else []

    def nearest(
        self, model: str, queries: Sequence[Vector], where: MemoryFilter, limit: int
    ) -> list[list[LexicalHit]]:
        from retain.storage import sqlite_ann

        return sqlite_ann.nearest(
            self._as_transaction(), self._opened_ann(model), queries, where, limit
        )

    def _opened_ann(self, model: str) -> Approximate:
        if self._ann is None or self._ann.meta.model != model:
            raise RuntimeError(f"open_vectors({model!r}, …) was not asked first")
        return self._ann

    def vectors_by_num(self, model: str, nums: Sequence[int]) -> tuple[list[int], list[bytes]]:
        """Of ``nums``, those with a vector of ``model``, and their vectors."""
        rows = self._by_nums(
            nums,
            "SELECT v.memory_num, v.vector FROM c CROSS JOIN memory_vectors v "
            "ON v.memory_num = c.num WHERE v.model = ?",
            [model],
        )
        return [num for num, _ in rows], [blob for _, blob in rows]

    def vectors_passing(
        self, model: str, where: MemoryFilter, nums: Sequence[int]
    ) -> tuple[list[int], list[str], list[bytes]]:
        """Of ``nums``, the memories passing ``where`` with a vector of ``model``: their
        numbers, ids and vectors (a row the filter refuses costs no vector's read)."""
        clause, args = self._filter_sql(where)
        rows = self._by_nums(
            nums,
            "SELECT m.num, m.id, v.vector FROM c CROSS JOIN memories m ON m.num = c.num "
            f"CROSS JOIN memory_vectors v ON v.memory_num = m.num WHERE v.model = ? AND {clause}",
            [model, *args],
        )
        return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]

    def vectors_where(
        self, model: str, where: MemoryFilter, after_num: int, limit: int
    ) -> tuple[list[int], list[str], list[bytes]]:
        """The memories passing ``where`` past ``after_num`` (in number order, at most
        ``limit``) with a vector of ``model``: their numbers, ids and vectors."""
        clause, args = self._filter_sql(where)
        rows = self.con.execute(
            "SELECT m.num, m.id, v.vector FROM memories m "
            "JOIN memory_vectors v ON v.memory_num = m.num "
            f"WHERE v.model = ? AND m.num > ? AND {clause} ORDER BY m.num LIMIT ?",
            [model, after_num, *args, limit],
        ).fetchall()
        if not rows:
            return [], [], []
        nums, ids, blobs = (list(column) for column in zip(*rows, strict=True))
        return nums, ids, blobs

    def saw_stale_vectors(self) -> bool:
        return False  # vectors are stored in the write's own transaction

    def stale_vectors(self, limit: int) -> list[str]:
        return []

    def pending_vectors(self, model: str) -> int:
        return 0

    def vector_count(self, model: str) -> int:
        row = self.con.execute("SELECT count(*) FROM memory_vectors WHERE model = ?", (model,))
        return int(row.fetchone()[0])

    def vector_counts(self, realm: str | None = None) -> dict[str, int]:
        # Each vector's realm is its memory's, looked up a seek at a time (a million took
        # 0.86 s), so as few are looked up as can be: none in a store of one realm (the
        # model's index alone counts them: 58 ms), else the realm's or, when they are
        # fewer, the other realms', taken away from every one.
        if realm is None or not self._other_realm(realm):
            return self._by_model(_EVERY)
        elsewhere = f"{_NUMS}realm < ? UNION ALL {_NUMS}realm > ?"
        mine = self.con.execute("SELECT count(*) FROM memories WHERE realm = ?", (realm,))
        within = int(mine.fetchone()[0])
        others = self.con.execute(  # (counted up to the realm's: each is a seek to come)
            f"SELECT count(*) FROM ({elsewhere} LIMIT ?)", (realm, realm, within + 1)
        )
        if int(others.fetchone()[0]) > within:
            return self._by_model(_OF.format(f"{_NUMS}realm = ?"), realm)
        counts = self._by_model(_EVERY)
        for model, count in self._by_model(_OF.format(elsewhere), realm, realm).items():
            counts[model] -= count
        return {model: count for model, count in counts.items() if count}

    def _by_model(self, sql: str, *args: Any) -> dict[str, int]:
        return {model: int(count) for model, count in self.con.execute(sql, args)}

    def _other_realm(self, realm: str) -> bool:
        """Whether a memory of another realm than ``realm`` is stored (two seeks of an
        index leading with the realm)."""
        return (
            self.con.execute(
                "SELECT 1 FROM memories WHERE realm < ? UNION ALL "
                "SELECT 1 FROM memories WHERE realm > ? LIMIT 1",
                (realm, realm),
            ).fetchone()
            is not None
        )

    def _by_nums(self, nums: Sequence[int], select: str, args: Sequence[Any]) -> list[Any]:
        """The rows of ``select`` over ``c(num)``, ``nums`` 500 at a time (``args`` follow
        them). ``c CROSS JOIN`` keeps the numbers outermost: each row is fetched by its
        key, never by scanning an index the planner would pick without statistics."""
        found: list[Any] = []
        for start in range(0, len(nums), 500):
            part = list(nums[start : start + 500])
            values = ", ".join(["(?)"] * len(part))
            found += self.con.execute(f"WITH c(num) AS (VALUES {values}) {select}", [*part, *args])
        return found
