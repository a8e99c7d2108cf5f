"""Vectors in PostgreSQL: the transaction's part that stores and walks pgvector rows.

Vectors are stored with pgvector, an HNSW index per embedding model,
just after the write that made them commits, outside the write lock
(``PendingVectors``, ``store_vectors``, called by ``PostgresBackend``): the HNSW insert
is most of a write's server time. A write with more than ``DEFERRED_VECTORS_MAX`` stores
them in its own transaction. What a write leaves to store is recorded in
``vectors_pending`` (by ``PostgresTransaction.finish``); a row its writer never cleared
(``STALE_PENDING``) is made again by a later write (``stale_vectors``).
``PostgresVectors`` is a mixin of ``PostgresTransaction`` (``postgres_transaction``),
which supplies the connection and the filters.
"""

from __future__ import annotations

import functools
import hashlib
import json
import struct
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types import TypeInfo

from retain.storage.base import LexicalHit, MemoryFilter, SearchKey, StoredVector, VectorRows

if TYPE_CHECKING:
    from retain.storage.base import Vector

# Candidates an HNSW walk keeps unless ``[postgres] ef_search`` says otherwise (pgvector's
# own default is 40). On real sentences at 100k it finds 0.96 of the exact ten, 0.98 at
# 200 for 1.2–2.7 ms more a walk; at 1M, 200 costs 7 ms more (bench/semantic_recall.py).
HNSW_EF_SEARCH = 100
DEFERRED_VECTORS_MAX = 10_000  # a write with more stores them in its own transaction
# A write's vectors still to store this long after it committed, by a live connection:
# its writer failed between the two, and the next write makes them.
STALE_VECTORS_S = 30.0
# A row of ``vectors_pending`` its writer will not clear: its connection is gone, or it
# committed STALE_VECTORS_S ago (``since`` is stamped by the write's last statement).
STALE_PENDING = (
    "(p.since < clock_timestamp() - make_interval(secs => {seconds}) "
    "OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = p.pid))"
)


class Packed(bytes):
    """A vector in pgvector's binary form (its dimension, a zero, then big-endian
    float32s), sent as a ``vector``: nothing to format as text here, or to parse there
    (a 256-dimensional literal cost the writer 39 µs)."""

    __slots__ = ()

    @classmethod
    def of(cls, vector: Vector) -> Packed:
        values = np.asarray(vector, dtype=">f4")
        return cls(struct.pack(">HH", len(values), 0) + values.tobytes())


def register_vector(con: psycopg.Connection[Any], schema: str) -> None:
    """Let ``con`` send a ``Packed`` as pgvector's ``vector`` (of ``schema``, the one the
    extension lives in), alone or in an array."""
    info = TypeInfo.fetch(con, sql.Identifier(schema, "vector"))
    if info is None:
        raise RuntimeError(f"there is no pgvector type in the schema {schema!r}")
    info.register(con)
    con.adapters.register_dumper(Packed, _packed_dumper(info.oid))


@functools.cache
def _packed_dumper(vector_oid: int) -> type[Dumper]:
    class PackedDumper(Dumper):
        format = Format.BINARY
        oid = vector_oid

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    return PackedDumper


def _parse(text: str) -> npt.NDArray[np.float32]:
    return np.array(json.loads(text), dtype=np.float32)


@dataclass(slots=True)
class PendingVectors:
    """A write's vectors, stored once it has committed; ``version`` orders the writes."""

    version: int
    vectors: dict[int, StoredVector]  # by memory number


def store_vectors(con: psycopg.Connection[Any], pending: PendingVectors) -> None:
    """Store ``pending``'s vectors for the memories that still exist, each replacing one
    an earlier write stored (a later write's stays), and clear what the write left pending
    (what a later write left is that write's to store). One statement: one round trip,
    and the sums' triggers run once for it."""
    rows = sorted(pending.vectors.items())  # in one order: concurrent writers do not deadlock
    if not rows:
        return
    nums = [num for num, _ in rows]
    con.execute(
        "WITH unpended AS (DELETE FROM vectors_pending WHERE memory_num = ANY(%s) "
        "AND version <= %s) "
        "INSERT INTO memory_vectors(memory_num, realm, model, dim, embedding, version) "
        "SELECT k.num, m.realm, k.model, k.dim, k.embedding, %s "
        "FROM unnest(%b::bigint[], %b::text[], %b::int[], %b::vector[]) "
        "AS k(num, model, dim, embedding) JOIN memories m ON m.num = k.num ORDER BY k.num "
        "ON CONFLICT (memory_num) DO UPDATE SET vec = nextval('memory_vectors_vec_seq'), "
        "realm = excluded.realm, model = excluded.model, dim = excluded.dim, "
        "embedding = excluded.embedding, version = excluded.version "
        "WHERE memory_vectors.version < excluded.version",
        (
            nums,
            pending.version,
            pending.version,
            nums,
            [v.model for _, v in rows],
            [v.dim for _, v in rows],
            [Packed.of(v.vector) for _, v in rows],
        ),
    )


class PostgresVectors(ABC):
    """A transaction's vectors: a write's keys' vectors held to store after it commits,
    the HNSW indexes, the nearest rows, and what writers left pending."""

    con: psycopg.Connection[Any]
    _indexed: set[str]  # the HNSW indexes made, kept by the backend
    made: set[str]  # the HNSW indexes this transaction made
    pending: PendingVectors | None  # vectors to store once this commits
    ef_search: int  # the candidates the store's HNSW walks keep ([postgres] ef_search)
    _ef_set: int | None  # the HNSW search depth this transaction set
    saw_stale: bool  # set by the write lock's statement (``PostgresBackend``)

    @abstractmethod
    def _rows(
        self, sql: str, args: Sequence[Any] | dict[str, Any] = (), *, prepare: bool | None = None
    ) -> list[Any]:
        """Every row ``sql`` selects."""

    @abstractmethod
    def _one(self, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """The first row ``sql`` selects, or None."""

    @abstractmethod
    def _filter_sql(self, where: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
        """``where`` as a clause over ``alias`` and its arguments."""

    def set_keys(self, keys: Sequence[SearchKey]) -> None:
        vectors = [v for k in keys if (v := k.vector) is not None]
        first = bool(vectors) and self.pending is None  # the write's version comes with it
        with self.con.cursor() as cur:
            contexts = [(k.context, k.num) for k in keys if k.context is not None]
            if contexts:
                cur.executemany("UPDATE memories SET context = %s WHERE num = %s", contexts)
            # The old vectors go with the write: until its new ones are stored (after it
            # commits, ``PostgresBackend``), the memory has none, which ``verify`` counts.
            # A key with no vector (no embedder) has none to wait for either: what an
            # earlier writer left pending for it goes too. One statement for all of it,
            # and for the write's version when it has vectors to store.
            bare = [k.num for k in keys if k.vector is None]
            parts, args = [], []
            if bare:
                parts.append("unpended AS (DELETE FROM vectors_pending WHERE memory_num = ANY(%s))")
                args.append(bare)
            remove = "DELETE FROM memory_vectors WHERE memory_num = ANY(%s)"
            args.append([k.num for k in keys])
            if first:  # the removal beside, the version what the statement selects
                parts.append(f"gone AS ({remove})")
            last = "SELECT nextval('vector_versions')" if first else remove
            cur.execute(("WITH " + ", ".join(parts) + " " if parts else "") + last, args)
            if first:
                row = cur.fetchone()
                assert row is not None  # (a SELECT of one value gives one row)
                self.pending = PendingVectors(int(row[0]), {})
        for model, dim in {(v.model, v.dim) for v in vectors}:
            self._ensure_hnsw(model, dim)
        if self.pending is None or not vectors:
            return
        self.pending.vectors.update((v.num, v) for v in vectors)  # recorded by ``finish``
        if len(self.pending.vectors) > DEFERRED_VECTORS_MAX:  # a reindex, a large import
            store_vectors(self.con, self.pending)
            self.pending.vectors.clear()

    def _ensure_hnsw(self, model: str, dim: int) -> None:
        """An HNSW index over the vectors of one model (of its size), made when the first
        is written: pgvector indexes vectors of one declared size."""
        name = "memory_vectors_hnsw_" + hashlib.sha256(f"{model}\0{dim}".encode()).hexdigest()[:16]
        if name in self._indexed or name in self.made:
            return
        self.con.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON memory_vectors USING hnsw "
                "((embedding::vector({})) vector_cosine_ops) WHERE model = {} AND dim = {}"
            ).format(sql.Identifier(name), sql.Literal(dim), sql.Literal(model), sql.Literal(dim))
        )
        self.made.add(name)  # known to the backend once this commits

    def open_vectors(self, model: str, dim: int, ann_from: int) -> None:  # noqa: B027
        """Nothing to open: pgvector's HNSW index, whatever the size."""

    def vector_sums(self, model: str, realm: str) -> list[tuple[int, Vector, int]]:
        rows = self._rows(
            "SELECT dim, total::text, n FROM vector_sums WHERE realm = %s AND model = %s AND n > 0",
            (realm, model),
        )
        return [(int(dim), _parse(total), int(n)) for dim, total, n in rows]

    def nearest(
        self, model: str, queries: Sequence[Vector], where: MemoryFilter, limit: int
    ) -> list[list[LexicalHit]]:
        if not len(queries):
            return []
        dim = len(queries[0])
        clause, args = self._filter_sql(where)
        # Filters are applied as the index is walked, until ``limit`` rows pass: set once
        # a transaction.
        ef_search = max(self.ef_search, limit)
        if self._ef_set != ef_search:
            self.con.execute(
                "SET LOCAL hnsw.iterative_scan = relaxed_order; "
                f"SET LOCAL hnsw.ef_search = {ef_search}"
            )
            self._ef_set = ef_search
        # Every query's walk of the index in one statement (a LATERAL over the queries):
        # a search's synonyms each cost a round trip and a statement's overhead before.
        # The queries arrive as vectors, not texts: a text cast in the walk is parsed
        # again for every row it reads.
        distance = f"(v.embedding::vector({dim}) <=> q.vector)"
        rows = self._rows(
            f"SELECT q.i, n.id, n.cosine FROM unnest(%b::vector({dim})[]) "
            "WITH ORDINALITY AS q(vector, i) "
            f"CROSS JOIN LATERAL (SELECT m.id, 1 - {distance} AS cosine FROM memory_vectors v "
            f"JOIN memories m ON m.num = v.memory_num "
            f"WHERE v.model = %s AND v.dim = %s AND {clause} ORDER BY {distance} LIMIT %s) n",
            [[Packed.of(query) for query in queries], model, dim, *args, limit],
        )
        found: list[list[LexicalHit]] = [[] for _ in queries]
        for i, memory_id, cosine in rows:
            found[int(i) - 1].append(LexicalHit(memory_id, float(cosine)))
        for hits in found:
            hits.sort(key=lambda h: -h.score)  # relaxed order: nearly sorted
        return found

    def vectors_after(self, model: str, vec: int, limit: int) -> VectorRows:
        rows = self._rows(
            "SELECT vec, memory_num, dim, embedding::text, realm FROM memory_vectors "
            "WHERE model = %s AND vec > %s ORDER BY vec LIMIT %s",
            (model, vec, limit),
        )
        if not rows:
            return VectorRows(vec, [], [], [], [])
        vecs, nums, dims, texts, realms = (list(column) for column in zip(*rows, strict=True))
        blobs = [_parse(text).astype("<f4").tobytes() for text in texts]
        return VectorRows(vecs[-1], nums, dims, realms, blobs)

    def saw_stale_vectors(self) -> bool:
        return self.saw_stale

    def stale_vectors(self, limit: int) -> list[str]:
        rows = self._rows(
            "SELECT m.id FROM vectors_pending p JOIN memories m ON m.num = p.memory_num "
            f"WHERE {STALE_PENDING.format(seconds='%s')} ORDER BY p.memory_num LIMIT %s",
            (STALE_VECTORS_S, limit),
        )
        return [r[0] for r in rows]

    def pending_vectors(self, model: str) -> int:
        row = self._one(
            "SELECT count(*) FROM vectors_pending p WHERE NOT EXISTS "
            "(SELECT 1 FROM memory_vectors v WHERE v.memory_num = p.memory_num AND v.model = %s)",
            (model,),
        )
        return int(row[0])

    def vector_count(self, model: str) -> int:
        return int(self._one("SELECT count(*) FROM memory_vectors WHERE model = %s", (model,))[0])

    def vector_counts(self, realm: str | None = None) -> dict[str, int]:
        if realm is None:
            rows = self._rows("SELECT model, count(*) FROM memory_vectors GROUP BY model")
        else:
            rows = self._rows(
                "SELECT model, count(*) FROM memory_vectors WHERE realm = %s GROUP BY model",
                (realm,),
            )
        return {model: int(count) for model, count in rows}
