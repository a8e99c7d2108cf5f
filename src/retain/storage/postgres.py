"""A store in PostgreSQL (psycopg 3, a connection pool), for many processes and hosts.

The same ``Transaction`` protocol as SQLite, and no business rule. What the engine
settles: a write transaction takes one advisory lock first, so writers are serialised
the way SQLite serialises them — the event chain stays one line and an invariant
checked by the service over several rows (the inline budget, names across tiers)
cannot be raced; a read is a ``REPEATABLE READ`` snapshot. Unique indexes back the
name rules. Words are searched with a weighted ``tsvector`` (name A, description B,
body C, context D; ``ts_rank_cd``), prefixes with ``:*``, plain text with ``strpos``
over each row's text lowered when written (``lowered``); vectors with pgvector, an
HNSW index per embedding model (``NativeVectors``), stored just after the write that
made them commits, outside the write lock (``PendingVectors``, ``store_vectors``): the
HNSW insert is most of a write's server time.
The write records them in ``vectors_pending`` by its last statement (``finish``), so a
row's ``since`` is when the write committed; a row its writer never cleared (it died, or
failed, between the two) is made again by a later write (``stale_vectors``; the write
lock's statement tells a write whether there are any), and ``verify`` counts it as
pending, not as a missing vector.

A store is a schema of a database (``retain`` unless the URL's ``schema`` parameter
names another), so one database can hold several stores.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt
import psycopg
import psycopg_pool
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from retain.chrono import parse_stamp, stamp
from retain.errors import MemoryExists, SchemaTooNew, StoreBusy, StoreError
from retain.model import (
    Agent,
    Event,
    Injection,
    ListPosition,
    Memory,
    Proposal,
    Team,
    Trust,
)
from retain.storage import words as plan
from retain.storage.base import (
    KeySource,
    LexicalHit,
    LoadCounts,
    MemoryFilter,
    ScannedRow,
    SearchKey,
    StoredVector,
    VectorRows,
)
from retain.storage.postgres_schema import MIGRATIONS, latest_version
from retain.storage.rows import (
    AFTER_SQL,
    COLUMNS,
    EVENT_COLUMNS,
    INSERT_COLUMNS,
    KEY_COLUMNS,
    M_COLUMNS,
    UPDATE_COLUMNS,
    after_args,
    event_of,
    memory_of,
    params_of,
)
from retain.storage.statements import SqlStatements
from retain.storage.words import scan_hits

if TYPE_CHECKING:
    from retain.storage.base import Vector

T = TypeVar("T")

DEFAULT_SCHEMA = "retain"
POOL_SIZE = 8  # connections a process keeps, unless told ([postgres] pool_size)
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
HNSW_EF_SEARCH = 100  # candidates an HNSW search keeps (pgvector's default is 40)
DEFERRED_VECTORS_MAX = 10_000  # a write with more stores them in its own transaction
# A write's vectors still to store this long after it committed, by a live connection:
# its writer failed between the two, and the next write makes them.
STALE_VECTORS_S = 30.0
# A row of ``vectors_pending`` its writer will not clear: its connection is gone, or it
# committed STALE_VECTORS_S ago (``since`` is stamped by the write's last statement).
_STALE_PENDING = (
    "(p.since < clock_timestamp() - make_interval(secs => {seconds}) "
    "OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = p.pid))"
)
# The write lock, and whether an earlier writer left stale vectors: one round trip.
_LOCK_AND_LOOK = (
    "SELECT pg_advisory_xact_lock(%s, hashtext(%s)), "
    "EXISTS (SELECT 1 FROM vectors_pending p WHERE " + _STALE_PENDING.format(seconds="%s") + ")"
)
# What a write leaves to store after it commits, recorded by its last statement, so
# that ``since`` is (within that statement) the moment it committed: a row recorded
# as its vectors were made would, in a write that ran long, look stale at once.
_MARK_PENDING = (
    "INSERT INTO vectors_pending(memory_num, version, since) "
    "SELECT unnest(%s::bigint[]), %s, clock_timestamp() "
    "ON CONFLICT (memory_num) DO UPDATE SET version = excluded.version, "
    "pid = excluded.pid, since = excluded.since"
)
_INSERT_EVENTS = (
    "INSERT INTO events(seq, event_id, realm, memory_id, kind, tx_time, principal, "
    "reason, payload, payload_digest, prev_hash, hash) "
    "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], "
    "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
    "%s::text[], %s::text[])"
)
LOCK_TIMEOUT_MS = 10_000  # how long a writer waits for the write lock before it is busy
CONNECT_TIMEOUT_S = 5
_WRITE_LOCK = 7271  # with the schema's hash: the advisory lock a store's writers hold
_MIGRATE_LOCK = 7272
_RETRIES = 20
_IDLE_WAIT_S = 0.002  # how long read_beside waits for the pool to hand over an idle connection
# name A, description B, body C, context D as ts_rank_cd weighs them ({D, C, B, A})
_WEIGHTS = "'{0.04, 0.1, 0.5, 1.0}'"
_FIELD_WEIGHT = {"name": "A", "description": "B", "body": "C"}
_TEXTS = "coalesce(m.name, ''), m.description, m.body, m.context"
_STALE_DOCUMENT = "fts IS DISTINCT FROM ({})"  # a row whose stored document its text does not give
_CONFIG = "'retain_english'"
_LONG_NEEDLE = 64  # bytes: a scanned term longer is sought by its first letters first
_NEEDLE_PIECE = 8  # characters  # the store's text search configuration (no stop words)

# Each term's rows counted up to a bound, and the highest row number, for terms given as
# arrays of tsquery function names and arguments: one text whatever the terms, which
# psycopg prepares once it recurs (planning a statement cost as much as running it).
_FREQUENCIES = (
    "SELECT CASE WHEN numnode(x.q) = 0 THEN 0 ELSE (SELECT count(*) FROM "
    "(SELECT 1 FROM memories WHERE fts @@ x.q LIMIT %s) c) END, "
    "(SELECT coalesce(max(num), 0) FROM memories) "
    "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(kind, value, i), "
    f"LATERAL (SELECT CASE t.kind WHEN 'plainto_tsquery' THEN plainto_tsquery({_CONFIG}, t.value) "
    f"WHEN 'phraseto_tsquery' THEN phraseto_tsquery({_CONFIG}, t.value) "
    f"ELSE to_tsquery({_CONFIG}, t.value) END AS q) x ORDER BY t.i"
)

_INSERT = (
    f"INSERT INTO memories ({', '.join(INSERT_COLUMNS)}) "
    f"VALUES ({', '.join('%(' + c + ')s' for c in INSERT_COLUMNS)})"
)


def _upsert(columns: Sequence[str]) -> str:
    return (
        _INSERT
        + " ON CONFLICT (id) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in columns)
        + " WHERE memories.content_hash = %(expect_hash)s"
        " AND memories.updated_at = %(expect_updated)s"
    )


_UPSERT = _upsert(UPDATE_COLUMNS)
_RESTORE = _upsert([*UPDATE_COLUMNS, "created_at"])


def _memory(row: Sequence[Any]) -> Memory:
    return memory_of(row, tuple, dict)


def _params(m: Memory) -> dict[str, Any]:
    return params_of(m, Jsonb, Jsonb, bool)


@functools.cache
def _vector_format(dim: int) -> str:
    return "[" + ",".join(["%.9g"] * dim) + "]"  # nine digits: a float32 read back exactly


def _literal(vector: Vector) -> str:
    """A vector as pgvector reads it: ``[0.1,0.2,…]``."""
    return _vector_format(len(vector)) % tuple(np.asarray(vector, dtype=np.float32).tolist())


def _parse(text: str) -> npt.NDArray[np.float32]:
    return np.array(json.loads(text), dtype=np.float32)


def _lexeme(word: str) -> str:
    """``word`` as one quoted tsquery lexeme (its quotes and backslashes escaped)."""
    return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _term_queries(terms: Sequence[str]) -> list[tuple[str, str]]:
    """The tsquery expression and argument of each distinct term: a phrase for a term of
    two words, else the term's words."""
    queries = []
    for term in dict.fromkeys(t for t in terms if t.strip()):
        kind = "phraseto_tsquery" if " " in term.strip() else "plainto_tsquery"
        queries.append((f"{kind}({_CONFIG}, %s)", term))
    return queries


def _idf(count: int, total: int) -> float:
    """BM25's inverse document frequency of a term ``count`` of ``total`` rows hold."""
    return math.log((total - count + 0.5) / (count + 0.5) + 1.0)


@dataclass(slots=True)
class PendingVectors:
    """A write's vectors, stored once it has committed; ``version`` orders the writes."""

    version: int
    vectors: dict[int, StoredVector]  # by memory number


def store_vectors(con: psycopg.Connection[Any], pending: PendingVectors) -> None:
    """Store ``pending``'s vectors for the memories that still exist, each replacing one
    an earlier write stored (a later write's stays). One statement: the sums' triggers run
    once for it."""
    rows = sorted(pending.vectors.items())  # in one order: concurrent writers do not deadlock
    if not rows:
        return
    con.execute(  # what a later write left pending is that write's to store
        "DELETE FROM vectors_pending WHERE memory_num = ANY(%s) AND version <= %s",
        ([num for num, _ in rows], pending.version),
    )
    con.execute(
        "INSERT INTO memory_vectors(memory_num, realm, model, dim, embedding, version) "
        "SELECT k.num, m.realm, k.model, k.dim, k.embedding::vector, %s "
        "FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::text[]) "
        "AS k(num, model, dim, embedding) JOIN memories m ON m.num = k.num ORDER BY k.num "
        "ON CONFLICT (memory_num) DO UPDATE SET vec = nextval('memory_vectors_vec_seq'), "
        "realm = excluded.realm, model = excluded.model, dim = excluded.dim, "
        "embedding = excluded.embedding, version = excluded.version "
        "WHERE memory_vectors.version < excluded.version",
        (
            pending.version,
            [num for num, _ in rows],
            [v.model for _, v in rows],
            [v.dim for _, v in rows],
            [_literal(v.vector) for _, v in rows],
        ),
    )


class PostgresTransaction(SqlStatements):
    """The operations of one connection, inside the transaction the backend opened."""

    _memory = staticmethod(_memory)
    _SUBJECT_IS = "lower(subject) = lower(%s)"  # the memories_subject index

    def __init__(
        self,
        con: psycopg.Connection[Any],
        indexed: set[str] | None = None,
        common: set[str] | None = None,
    ) -> None:
        self.con = con
        self._head: tuple[int, str] | None = None  # the chain head this transaction read or wrote
        self._indexed = indexed if indexed is not None else set()  # HNSW indexes made
        self._common = common if common is not None else set()  # terms known to be common
        self.pending: PendingVectors | None = None  # vectors to store once this commits
        self._events: list[tuple[Any, ...]] = []  # appended, not yet inserted
        self._ef_search: int | None = None  # the HNSW search depth this transaction set
        # A search's terms' row counts and the highest row number, counted ahead in its
        # read's snapshot (``count_ahead``; a write, whose rows change, keeps none).
        self._counted: dict[str, int] = {}
        self._highest: int | None = None
        self.saw_stale = False  # set by the write lock's statement (``PostgresBackend``)

    def _rows(
        self, sql: str, args: Sequence[Any] | dict[str, Any] = (), *, prepare: bool | None = None
    ) -> list[Any]:
        return self.con.execute(sql, args, prepare=prepare).fetchall()

    def _planned(self, sql: str, args: Sequence[Any]) -> list[Any]:
        """The rows of a statement planned with its arguments, never prepared: a
        prepared statement's generic plan computes ``plainto_tsquery(%s)`` (or
        ``lower(%s)``) again for every row it tests, where a plan made with the values
        computes it once (a ranking of 32 words: 61 ms generic, 19 ms planned with them,
        planning included)."""
        return self._rows(sql, args, prepare=False)

    def _one(self, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.con.execute(sql, args).fetchone()

    def _execute(self, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.con.execute(sql, args)

    # -- helpers --------------------------------------------------------------

    def _filter_sql(self, where: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
        clauses = [f"{alias}.realm = %s"]
        args: list[Any] = [where.realm]
        if where.scopes is not None:
            clauses.append(f"{alias}.scope = ANY(%s)")
            args.append(list(where.scopes))
        elif where.tiers_only:
            clauses.append(f"({alias}.scope = 'global' OR {alias}.scope LIKE 'project:%%')")
        clauses.append(f"{alias}.status = ANY(%s)")
        args.append(list(where.statuses))
        if where.tag is not None:
            clauses.append(f"{alias}.tags ? %s")
            args.append(where.tag)
        if where.referencing:
            clauses.append(f"{alias}.refs ?| %s")
            args.append(list(where.referencing))
        if where.verified_before is not None:
            clauses.append(f"{alias}.verified_at < %s")
            args.append(where.verified_before)
        if where.expired_at is not None:
            clauses.append(f"{alias}.expires_at IS NOT NULL AND {alias}.expires_at <= %s")
            args.append(where.expired_at)
        if where.live_at is not None:
            clauses.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > %s)")
            args.append(where.live_at)
        if where.loads:
            clauses.append(f"{alias}.load = ANY(%s)")
            args.append(list(where.loads))
        return " AND ".join(clauses), args

    # -- realms and projects --------------------------------------------------

    # -- agents and teams -----------------------------------------------------

    def _agents(self, realm: str, name: str | None) -> list[Agent]:
        rows = self._rows(
            "SELECT a.name, a.created_at, ARRAY(SELECT t.team FROM team_members t "
            " WHERE t.realm = a.realm AND t.agent = a.name ORDER BY t.team) "
            "FROM agents a WHERE a.realm = %s AND (%s::text IS NULL OR a.name = %s) "
            "ORDER BY a.name",
            (realm, name, name),
        )
        return [Agent(r[0], parse_stamp(r[1]), tuple(r[2])) for r in rows]

    def _teams(self, realm: str, name: str | None) -> list[Team]:
        rows = self._rows(
            "SELECT t.name, t.created_at, ARRAY(SELECT m.agent FROM team_members m "
            " WHERE m.realm = t.realm AND m.team = t.name ORDER BY m.agent) "
            "FROM teams t WHERE t.realm = %s AND (%s::text IS NULL OR t.name = %s) "
            "ORDER BY t.name",
            (realm, name, name),
        )
        return [Team(r[0], parse_stamp(r[1]), tuple(r[2])) for r in rows]

    def list_proposals(self, realm: str, status: str | None) -> list[Proposal]:
        rows = self._rows(
            "SELECT id, source, target, trust, summary, body, evidence, action, status, "
            "created_at FROM proposals WHERE realm = %s AND (%s::text IS NULL OR status = %s) "
            "ORDER BY seq",  # the order they were made in
            (realm, status, status),
        )
        return [
            Proposal(r[0], r[1], r[2], Trust(r[3]), r[4], r[5], r[6], r[7], r[8], parse_stamp(r[9]))
            for r in rows
        ]

    # -- memories -------------------------------------------------------------

    def find_by_name(self, realm: str, name: str, scopes: Sequence[str] | None) -> list[Memory]:
        sql = f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND name = %s"
        args: list[Any] = [realm, name]
        if scopes is not None:
            if not scopes:
                return []
            sql += " AND scope = ANY(%s)"
            args.append(list(scopes))
        return sorted((_memory(r) for r in self._rows(sql, args)), key=lambda m: m.scope)

    def _by_ids(self, columns: str, ids: Sequence[str]) -> list[Any]:
        if not ids:
            return []
        return self._rows(f"SELECT {columns} FROM memories WHERE id = ANY(%s)", (list(ids),))

    @staticmethod
    def _integrity(exc: pg_errors.UniqueViolation) -> Exception:
        """A constraint the database settled: a name taken in a scope, or the error as is."""
        if exc.diag.constraint_name == "memories_name":
            return MemoryExists(
                "a memory of that name already exists in that tier",
                remedy="choose another name, or write to the existing memory",
            )
        return exc

    def update_memory(self, memory: Memory, current: Memory, *, restore: bool = False) -> bool:
        params = _params(memory)
        params["expect_hash"] = current.content_hash
        params["expect_updated"] = stamp(current.updated_at)
        try:
            with self.con.transaction():  # a savepoint: the refusal leaves the rest intact
                cur = self.con.execute(_RESTORE if restore else _UPSERT, params)
        except pg_errors.UniqueViolation as exc:
            raise self._integrity(exc) from exc
        return cur.rowcount == 1

    def insert_memories(self, memories: Sequence[Memory]) -> None:
        if not memories:
            return
        try:
            with self.con.transaction(), self.con.cursor() as cur:
                cur.executemany(_INSERT, [_params(m) for m in memories])
        except pg_errors.UniqueViolation as exc:
            raise self._integrity(exc) from exc

    def list_memories(
        self, where: MemoryFilter, limit: int | None = None, after: ListPosition | None = None
    ) -> list[Memory]:
        clause, args = self._filter_sql(where)
        if after is not None:
            clause += " AND " + AFTER_SQL.replace("?", "%s")
            args += after_args(after)
        sql = (
            f"SELECT {M_COLUMNS} FROM memories m WHERE {clause} "
            "ORDER BY m.priority ASC, m.created_at DESC, m.id DESC"
        )
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        return [_memory(r) for r in self._rows(sql, args)]

    def referencing(self, realm: str, targets: Sequence[str]) -> list[Memory]:
        if not targets:
            return []
        rows = self._rows(
            f"SELECT {M_COLUMNS} FROM memories m WHERE m.realm = %s AND m.refs ?| %s "
            "ORDER BY m.priority, m.created_at DESC",
            (realm, list(targets)),
        )
        return [_memory(r) for r in rows]

    # -- context ----------------------------------------------------------------

    def load_counts(self, where: MemoryFilter, now: str) -> LoadCounts:
        clause, args = self._filter_sql(where)
        rows = self._rows(
            "SELECT m.load, count(*), count(*) FILTER (WHERE m.expires_at <= %s), "
            "min(m.expires_at) FILTER (WHERE m.expires_at > %s) FROM memories m "
            f"WHERE {clause} GROUP BY m.load",
            [now, now, *args],
        )
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

    def tag_counts(self, where: MemoryFilter) -> dict[str, int]:
        clause, args = self._filter_sql(where)
        rows = self._rows(
            "SELECT t.tag, count(*) FROM memories m, jsonb_array_elements_text(m.tags) t(tag) "
            f"WHERE {clause} GROUP BY t.tag",
            args,
        )
        return {tag: int(n) for tag, n in rows}

    def insert_injections(self, realm: str, rows: Sequence[Injection]) -> None:
        if not rows:
            return
        with self.con.cursor() as cur:
            cur.executemany(
                "INSERT INTO injections(realm, memory_id, identity, session, surface, "
                "injected_at) VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    (realm, r.memory_id, r.identity, r.session, r.surface, stamp(r.injected_at))
                    for r in rows
                ],
            )

    # -- lexical search -------------------------------------------------------

    def _prefix_forms(self, words: Sequence[str]) -> list[str]:
        """What words are retried as in the prefix sense, in order, each once: each word
        itself and its stem shortened by one and two letters, down to four (``deplo:*``
        finds deploys and deployment; a misspelt ``kestrl`` finds kestrel through
        ``kestr:*``). Every word's stem in one statement."""
        if not words:
            return []
        rows = self._rows(
            "SELECT ts_lexize('retain_stem', w) FROM unnest(%s::text[]) WITH ORDINALITY "
            "AS t(w, i) ORDER BY i",
            (list(words),),
        )
        forms: list[str] = []
        for word, (stems,) in zip(words, rows, strict=True):
            if len(word) >= 3:
                forms.append(word)
            if stems is not None and len(stems) == 1:
                for cut in (1, 2):
                    form = stems[0][:-cut]
                    if len(form) >= plan.MIN_PREFIX:
                        forms.append(form)
        return list(dict.fromkeys(forms))

    def match_terms(
        self, where: MemoryFilter, terms: Sequence[str], *, prefix: bool, limit: int
    ) -> list[LexicalHit]:
        """Rows holding the terms, planned as the SQLite backend plans them (see
        ``sqlite_fts``): the rarest terms lead and rank their rows — each term's
        cover-density rank (fields weighted, longer documents lower) times its IDF — and
        common terms add a bounded bonus; when every term is common, the rows the words
        name come first, then the newest rows holding them all (else any)."""
        queries: list[tuple[str, str]] = []  # (tsquery expression, its argument)
        if prefix:
            for form in self._prefix_forms([t for t in terms if t]):
                queries.append((f"to_tsquery({_CONFIG}, %s)", _lexeme(form) + ":*"))
        else:
            queries = _term_queries(terms)
        counts, total = self._frequencies(queries)
        stats = sorted((n, q, v) for (q, v), n in zip(queries, counts, strict=True) if n)
        if not stats:
            return []
        lead: list[tuple[int, str, str]] = []
        running = 0
        for n, q, v in stats:
            if n >= plan.COMMON or running + n > plan.COMMON:
                break
            lead.append((n, q, v))
            running += n
        rest = [(v, n) for n, q, v in stats if (n, q, v) not in lead]
        total = max(total, 1)
        clause, args = self._filter_sql(where)
        if lead:
            # A term's rank is asked of the rows holding it alone: ``ts_rank_cd`` of a row
            # without the term is 0, and costs more than testing (32 words: 55 → 19 ms).
            rank = " + ".join(
                f"%s::float8 * CASE WHEN m.fts @@ {q} "
                f"THEN ts_rank_cd({_WEIGHTS}, m.fts, {q}, 1) ELSE 0 END"
                for _, q, _ in lead
            )
            ranked: list[Any] = [x for n, _, v in lead for x in (_idf(n, total), v, v)]
            values = [v for _, _, v in lead]
            texts = f", {_TEXTS}" if rest else ""  # the bonus reads them; else not sent
            rows = self._planned(
                f"SELECT m.id, {rank} AS s{texts} FROM memories m "
                f"WHERE m.fts @@ ({' || '.join(q for _, q, _ in lead)}) AND {clause} "
                "ORDER BY s DESC, m.num ASC LIMIT %s",
                [*ranked, *values, *args, max(limit * plan.CANDIDATES, 16)],
            )
        else:
            typed = [t for t in dict.fromkeys(terms) if any(v == t for _, _, v in stats)]
            rows = self._newest([(q, v) for _, q, v in stats], typed, clause, args, limit)
        if not rest:
            return [LexicalHit(r[0], float(r[1])) for r in rows[:limit]]
        weighted = [(word, plan.idf(count, total)) for word, count in rest]
        hits = [LexicalHit(r[0], float(r[1]) + plan.bonus(weighted, r[2:])) for r in rows]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    def count_ahead(self, terms: Sequence[str]) -> None:
        """Count the rows of a search's words and phrases in one statement, before its
        queries' senses ask for them one query at a time (``CountsAhead``)."""
        self._frequencies(_term_queries(terms), keep=True)

    def _newest(
        self,
        queries: list[tuple[str, str]],
        typed: list[str],
        clause: str,
        args: list[Any],
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """Memories the words name (``typed``, in the query's order), then the newest
        rows holding them all (else any): what ranks a query of common words alone."""
        joined = "-".join(typed)
        names = list(dict.fromkeys([*typed, joined, *(w.lower() for w in typed), joined.lower()]))
        named = self._rows(
            f"SELECT m.id, 0, {_TEXTS} FROM memories m WHERE m.name = ANY(%s) AND {clause}",
            [names, *args],
        )
        rows: list[Any] = []
        for joiner in (" && ", " || "):
            rows = self._planned(
                f"SELECT m.id, 0, {_TEXTS} FROM memories m "
                f"WHERE m.fts @@ ({joiner.join(q for q, _ in queries)}) AND {clause} "
                "ORDER BY m.num DESC LIMIT %s",
                [*(v for _, v in queries), *args, plan.WINDOW],
            )
            if len(rows) >= limit or len(queries) == 1:
                break
        first: dict[str, tuple[Any, ...]] = {}
        for row in named + rows:
            first.setdefault(row[0], tuple(row))
        # Newer rows first among equal bonuses: a tiny decreasing score keeps that order.
        return [(r[0], -i * 1e-6, *r[2:]) for i, r in enumerate(first.values())]

    def _total(self) -> int:
        """About how many rows the store holds (the highest row number: instant)."""
        return int(self._one("SELECT coalesce(max(num), 0) FROM memories")[0])

    def _frequencies(
        self, queries: Sequence[tuple[str, str]], *, keep: bool = False
    ) -> tuple[list[int], int]:
        """Rows matching each term's query (a tsquery expression and its argument),
        counted up to ``COMMON`` (0 for a query that holds no word), and about how many
        rows the store holds (the highest row number: instant), in one statement: a
        statement a term made a search's words cost a round trip each. A term found
        common is remembered for the life of the backend, as SQLite's planner remembers
        it: counting it means reading ``COMMON`` rows; a rare count is never kept, so a
        new row is always seen, except by the rest of the read that counted it ahead
        (``keep``, ``count_ahead``), whose snapshot stays."""
        terms = [f"{q}\0{v}" for q, v in queries]
        counts = [plan.COMMON if t in self._common else self._counted.get(t, -1) for t in terms]
        asked = [i for i, n in enumerate(counts) if n < 0]
        if not asked:
            return counts, self._highest if self._highest is not None else self._total()
        rows = self._rows(_FREQUENCIES, [
            plan.COMMON,
            [queries[i][0].split("(", 1)[0] for i in asked],
            [queries[i][1] for i in asked],
        ])  # fmt: skip
        for i, (count, _) in zip(asked, rows, strict=True):
            counts[i] = int(count)
            if keep:
                self._counted[terms[i]] = counts[i]
            if counts[i] >= plan.COMMON:
                self._common.add(terms[i])
        highest = int(rows[0][1])
        if keep:
            self._highest = highest
        return counts, highest

    def lookup_words(
        self, where: MemoryFilter, words: Sequence[str], *, field: str, limit: int
    ) -> list[str]:
        weight = _FIELD_WEIGHT[field]
        query = f"to_tsquery({_CONFIG}, %s)"
        forms = [f"{_lexeme(word)}:{weight}" for word in dict.fromkeys(w for w in words if w)]
        counts, _ = self._frequencies([(query, form) for form in forms])
        stats = sorted((n, form) for form, n in zip(forms, counts, strict=True) if n)
        if not stats:
            return []
        rarest = [form for _, form in stats[:2]]
        clause, args = self._filter_sql(where)
        rows = self._planned(
            f"SELECT m.id FROM memories m WHERE m.fts @@ ({' && '.join([query] * len(rarest))}) "
            f"AND {clause} ORDER BY m.num DESC LIMIT %s",
            [*rarest, *args, limit],
        )
        return [r[0] for r in rows]

    def scan_text(
        self, where: MemoryFilter, needles: Sequence[str], *, limit: int
    ) -> list[LexicalHit]:
        return scan_hits(needles, self.scan_rows(where, needles), limit)

    def scan_rows(self, where: MemoryFilter, needles: Sequence[str]) -> list[ScannedRow]:
        """The rows whose lowered text holds a needle lowered: each row's text is lowered
        when it is written (``lowered``, migration 7), not at each search (lowering the
        rows the filters keep was most of a scan: 50 of 60 ms at 10,000 memories);
        ``scan_hits`` checks each field alone afterwards."""
        if not needles:
            return []
        clause, args = self._filter_sql(where)
        # ``strpos`` prepares a table of its needle at every call, a cost in the needle's
        # length: a long needle is sought only in a text as long, and by its first
        # letters first (which a row holding the needle holds too), so most rows cost a
        # short needle's table (four runs of 100 Chinese characters: 26 ms, 16 ms).
        tests: list[str] = []
        values: list[str] = []
        for needle in needles:
            if len(needle.encode("utf-8")) > _LONG_NEEDLE:
                tests.append(
                    "(octet_length(m.lowered) >= octet_length(lower(%s)) "
                    f"AND strpos(m.lowered, left(lower(%s), {_NEEDLE_PIECE})) > 0 "
                    "AND strpos(m.lowered, lower(%s)) > 0)"
                )
                values.extend((needle, needle, needle))
            else:
                tests.append("strpos(m.lowered, lower(%s)) > 0")
                values.append(needle)
        rows = self._planned(
            f"SELECT m.id, coalesce(m.name, ''), m.description, m.body FROM memories m "
            f"WHERE {clause} AND ({' OR '.join(tests)})",
            [*args, *values],
        )
        return [tuple(row) for row in rows]

    # -- search keys --------------------------------------------------------------

    def key_sources(self, ids: Sequence[str]) -> list[KeySource]:
        if not ids:
            return []
        rows = self._rows(f"SELECT {KEY_COLUMNS} FROM memories WHERE id = ANY(%s)", (list(ids),))
        return [KeySource(*row) for row in rows]

    def thread_adjacent(self, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        if not ids:
            return {}
        side = (
            "(SELECT o.id FROM memories o WHERE o.realm = m.realm AND o.scope = m.scope "
            "AND o.thread = m.thread AND o.num {op} m.num ORDER BY o.num {order} LIMIT 1)"
        )
        before, after = side.format(op="<", order="DESC"), side.format(op=">", order="ASC")
        rows = self._rows(
            f"SELECT m.id, {before}, {after} FROM memories m "
            "WHERE m.id = ANY(%s) AND m.thread IS NOT NULL",
            (list(ids),),
        )
        return {row[0]: (row[1], row[2]) for row in rows}

    def thread_positions(self, ids: Sequence[str]) -> dict[str, int]:
        if not ids:
            return {}
        rows = self._rows(
            "SELECT m.id, (SELECT count(*) FROM memories o WHERE o.realm = m.realm "
            "AND o.scope = m.scope AND o.thread = m.thread AND o.num <= m.num) "
            "FROM memories m WHERE m.id = ANY(%s) AND m.thread IS NOT NULL",
            (list(ids),),
        )
        return {r[0]: int(r[1]) for r in rows}

    def set_keys(self, keys: Sequence[SearchKey]) -> None:
        with self.con.cursor() as cur:
            contexts = [(k.context, k.num) for k in keys if k.context is not None]
            if contexts:
                cur.executemany("UPDATE memories SET context = %s WHERE num = %s", contexts)
            # The old vectors go with the write: until its new ones are stored (after it
            # commits, ``PostgresBackend``), the memory has none, which ``verify`` counts.
            # A key with no vector (no embedder) has none to wait for either: what an
            # earlier writer left pending for it goes too, in the same statement.
            bare = [k.num for k in keys if k.vector is None]
            unpend = "WITH unpended AS (DELETE FROM vectors_pending WHERE memory_num = ANY(%s)) "
            cur.execute(
                (unpend if bare else "") + "DELETE FROM memory_vectors WHERE memory_num = ANY(%s)",
                ([bare] if bare else []) + [[k.num for k in keys]],
            )
        vectors = [v for k in keys if (v := k.vector) is not None]
        for model, dim in {(v.model, v.dim) for v in vectors}:
            self._ensure_hnsw(model, dim)
        if not vectors:
            return
        if self.pending is None:
            version = int(self._one("SELECT nextval('vector_versions')")[0])
            self.pending = PendingVectors(version, {})
        self.pending.vectors.update((v.num, v) for v in vectors)  # recorded by ``finish``
        if len(self.pending.vectors) > DEFERRED_VECTORS_MAX:  # a reindex, a large import
            store_vectors(self.con, self.pending)
            self.pending.vectors.clear()

    def _ensure_hnsw(self, model: str, dim: int) -> None:
        """An HNSW index over the vectors of one model (of its size), made when the first
        is written: pgvector indexes vectors of one declared size."""
        name = "memory_vectors_hnsw_" + hashlib.sha256(f"{model}\0{dim}".encode()).hexdigest()[:16]
        if name in self._indexed:
            return
        self.con.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON memory_vectors USING hnsw "
                "((embedding::vector({})) vector_cosine_ops) WHERE model = {} AND dim = {}"
            ).format(sql.Identifier(name), sql.Literal(dim), sql.Literal(model), sql.Literal(dim))
        )
        self._indexed.add(name)

    def vector_sums(self, model: str, realm: str) -> list[tuple[int, npt.NDArray[np.float32], int]]:
        rows = self._rows(
            "SELECT dim, total::text, n FROM vector_sums WHERE realm = %s AND model = %s AND n > 0",
            (realm, model),
        )
        return [(int(dim), _parse(total), int(n)) for dim, total, n in rows]

    def nearest(
        self, model: str, queries: npt.NDArray[np.float32], where: MemoryFilter, limit: int
    ) -> list[list[LexicalHit]]:
        dim = int(queries.shape[1])
        if not len(queries):
            return []
        clause, args = self._filter_sql(where)
        # Filters are applied as the index is walked, until ``limit`` rows pass: set once
        # a transaction.
        ef_search = max(HNSW_EF_SEARCH, limit)
        if self._ef_search != ef_search:
            self.con.execute(
                "SET LOCAL hnsw.iterative_scan = relaxed_order; "
                f"SET LOCAL hnsw.ef_search = {ef_search}"
            )
            self._ef_search = ef_search
        # Every query's walk of the index in one statement (a LATERAL over the queries):
        # a search's synonyms each cost a round trip and a statement's overhead before.
        # The queries arrive as vectors, not texts: a text cast in the walk is parsed
        # again for every row it reads.
        distance = f"(v.embedding::vector({dim}) <=> q.vector)"
        rows = self._rows(
            f"SELECT q.i, n.id, n.cosine FROM unnest(%s::text[]::vector({dim})[]) "
            "WITH ORDINALITY AS q(vector, i) "
            f"CROSS JOIN LATERAL (SELECT m.id, 1 - {distance} AS cosine FROM memory_vectors v "
            f"JOIN memories m ON m.num = v.memory_num "
            f"WHERE v.model = %s AND v.dim = %s AND {clause} ORDER BY {distance} LIMIT %s) n",
            [[_literal(query) for query in queries], model, dim, *args, limit],
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
            f"WHERE {_STALE_PENDING.format(seconds='%s')} ORDER BY p.memory_num LIMIT %s",
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

    def filter_nums(self, where: MemoryFilter, nums: Sequence[int]) -> dict[int, str]:
        if not nums:
            return {}
        clause, args = self._filter_sql(where)
        rows = self._rows(
            f"SELECT m.num, m.id FROM memories m WHERE m.num = ANY(%s) AND {clause}",
            [list(nums), *args],
        )
        return {int(num): memory_id for num, memory_id in rows}

    def subjects_named(self, realm: str, phrases: Sequence[str]) -> list[str]:
        if not phrases:
            return []
        rows = self._rows(
            "SELECT DISTINCT subject FROM memories WHERE realm = %s AND subject IS NOT NULL "
            "AND lower(subject) IN (SELECT lower(p) FROM unnest(%s::text[]) p)",
            (realm, list(phrases)),
        )
        return sorted(r[0] for r in rows)

    # -- the event log ---------------------------------------------------------

    def append_event(self, event: Event) -> None:
        self._events.append(
            (
                event.seq, event.event_id, event.realm, event.memory_id, event.kind,
                stamp(event.tx_time), event.principal, event.reason, event.payload,
                event.payload_digest, event.prev_hash, event.hash,
            )
        )  # fmt: skip
        self._head = (event.seq, event.hash)

    def _flush(self) -> None:
        self.flush_events()

    def flush_events(self) -> None:
        """Insert the events appended since the last flush, in one statement (before the
        log is read, and before the transaction commits)."""
        if not self._events:
            return
        self.con.execute(_INSERT_EVENTS, self._event_columns())
        self._events.clear()

    def _event_columns(self) -> list[list[Any]]:
        return [list(column) for column in zip(*self._events, strict=True)]

    def finish(self) -> None:
        """The write's last statement: the events still held back, and the record (in
        ``vectors_pending``) of the vectors left to store once it commits, stamped as it
        runs; one statement for both, so one round trip."""
        pending = self.pending
        if pending is None or not pending.vectors:
            self.flush_events()
            return
        mark = (sorted(pending.vectors), pending.version)
        if self._events:
            self.con.execute(
                f"WITH logged AS ({_INSERT_EVENTS}) {_MARK_PENDING}",
                [*self._event_columns(), *mark],
            )
            self._events.clear()
        else:
            self.con.execute(_MARK_PENDING, mark)

    def iter_events(self, realm: str | None = None) -> Iterator[Event]:
        self.flush_events()
        after = 0
        while True:  # a page at a time, so a long log is never held whole
            rows = self._rows(
                f"SELECT {EVENT_COLUMNS} FROM events "
                "WHERE seq > %s AND (%s::text IS NULL OR realm = %s) ORDER BY seq LIMIT 5000",
                (after, realm, realm),
            )
            if not rows:
                return
            yield from (event_of(r) for r in rows)
            after = int(rows[-1][0])

    def count_events(self) -> int:
        self.flush_events()
        return int(self._one("SELECT count(*) FROM events")[0])

    def list_events(
        self, realm: str, after_seq: int, limit: int, memory_id: str | None = None
    ) -> list[Event]:
        self.flush_events()
        rows = self._rows(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE realm = %s AND seq > %s "
            "AND (%s::text IS NULL OR memory_id = %s) ORDER BY seq LIMIT %s",
            (realm, after_seq, memory_id, memory_id, limit),
        )
        return [event_of(r) for r in rows]


def split_url(url: str) -> tuple[str, str]:
    """A ``postgres://`` URL as a connection string and the schema its store lives in
    (the ``schema`` query parameter, else ``retain``)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), DEFAULT_SCHEMA)
    kept = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=kept)), schema


def _shown(conninfo: str, schema: str) -> str:
    """Where a store is, as it may be shown: user, hosts, database and schema, never a
    password (whether in the URL's user part or a ``password`` parameter)."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.Error as exc:
        raise StoreError(
            f"the database URL cannot be read: {exc}",
            remedy="write it like postgresql://user:password@host:5432/database",
        ) from exc
    user = f"{params['user']}@" if params.get("user") else ""
    host = str(params.get("host", ""))
    port = f":{params['port']}" if params.get("port") and "," not in host else ""
    return f"postgresql://{user}{host}{port}/{params.get('dbname', '')}?schema={schema}"


class PostgresBackend:
    """A store in a schema of a PostgreSQL database, through a connection pool."""

    reads_wait = True  # every statement is a round trip to the server

    def __init__(self, url: str, *, pool_size: int = POOL_SIZE) -> None:
        self.conninfo, self.schema = split_url(url)
        if not _SCHEMA_NAME.fullmatch(self.schema):
            raise StoreError(
                f"schema {self.schema!r} is not a plain lower-case identifier",
                remedy="name the schema with a-z, digits and underscores, starting with a "
                "letter or underscore (at most 63)",
            )
        self.location = _shown(self.conninfo, self.schema)
        self._ident = sql.Identifier(self.schema)
        self._ext = "public"  # the schema pgvector lives in (found by _migrate)
        self._indexed: set[str] = set()  # the store's HNSW indexes known to exist
        self._common: set[str] = set()  # word queries known to match COMMON rows or more
        self._reached = 0  # the pid that last connected (a fork has not)
        self._pool_size = pool_size
        self._pool: psycopg_pool.ConnectionPool[Any] | None = None
        self._beside: ThreadPoolExecutor | None = None  # runs read_beside's reads
        self._pid = 0
        self._lock = threading.Lock()
        self._migrate()

    # -- connections ------------------------------------------------------------

    def _configure(self, con: psycopg.Connection[Any]) -> None:
        # The store's schema, then the one pgvector lives in (its type and operators).
        con.execute(
            sql.SQL("SET search_path TO {}, {}").format(self._ident, sql.Identifier(self._ext))
        )
        con.execute(f"SET lock_timeout = {int(LOCK_TIMEOUT_MS)}")
        con.commit()

    @property
    def pool(self) -> psycopg_pool.ConnectionPool[Any]:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():  # a fork gets its own pool
                try:
                    if self._reached != os.getpid():
                        # One plain connection first: a wrong host, database or password is
                        # reported at once, with the server's own words (opening the store
                        # has just connected once in this process, so it need not again).
                        psycopg.connect(self.conninfo, connect_timeout=CONNECT_TIMEOUT_S).close()
                    self._pool = psycopg_pool.ConnectionPool(
                        self.conninfo,
                        min_size=min(2, self._pool_size),  # a read and one beside it
                        max_size=self._pool_size,
                        configure=self._configure,
                        check=psycopg_pool.ConnectionPool.check_connection,
                        open=True,
                        timeout=10,
                    )
                    self._pool.wait(timeout=10)
                except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                    self._pool = None
                    raise StoreError(
                        f"cannot connect to {self.location}: {exc}",
                        remedy="check the database URL, that the server runs, and the credentials",
                        location=self.location,
                    ) from exc
                self._beside = ThreadPoolExecutor(self._pool_size, "retain-beside")
                self._pid = os.getpid()
            return self._pool

    def close(self) -> None:
        with self._lock:
            if self._pool is not None and self._pid == os.getpid():
                if self._beside is not None:
                    self._beside.shutdown()
                self._pool.close()
            self._pool = None
            self._beside = None

    # -- transactions -------------------------------------------------------------

    def _run(self, write: bool, fn: Callable[[PostgresTransaction], T]) -> T:
        pending: PendingVectors | None = None

        def locked(con: psycopg.Connection[Any]) -> T:
            nonlocal pending
            tx = PostgresTransaction(con, self._indexed, self._common)
            if write:  # one writer at a time in this store (its schema)
                # The same statement looks for vectors an earlier writer left stale, as the
                # store stood when this write asked for the lock: it costs no round trip.
                look = (_WRITE_LOCK, self.schema, STALE_VECTORS_S)
                tx.saw_stale = bool(tx._one(_LOCK_AND_LOOK, look)[1])
            else:
                con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            result = fn(tx)
            tx.finish()
            pending = tx.pending
            return result

        result = self._attempt(locked)
        if pending is not None and pending.vectors:
            vectors = pending
            try:  # a memory deleted meanwhile fails the foreign key: the next try skips it
                self._attempt(
                    lambda con: store_vectors(con, vectors), raced=(pg_errors.ForeignKeyViolation,)
                )
            except StoreError as exc:
                raise StoreError(
                    f"the write landed, but storing its vectors failed: {exc.message}",
                    remedy="nothing to redo: a later write makes them (verify counts them as "
                    "pending until then)",
                    location=self.location,
                ) from exc
        return result

    def _attempt(
        self,
        fn: Callable[[psycopg.Connection[Any]], T],
        raced: tuple[type[psycopg.Error], ...] = (),
    ) -> T:
        """``fn`` in a transaction of its own, tried again while the server says it raced."""
        retried: tuple[type[psycopg.Error], ...] = (
            pg_errors.SerializationFailure,
            pg_errors.DeadlockDetected,
            *raced,
        )
        delay = 0.005
        for attempt in range(_RETRIES):
            try:
                with self.pool.connection() as con:
                    return fn(con)
            except pg_errors.LockNotAvailable as exc:  # waited LOCK_TIMEOUT_MS already
                raise StoreBusy(
                    f"{self.location} stayed locked by another writer for "
                    f"{LOCK_TIMEOUT_MS / 1000:g} s",
                    remedy="retry once the other writers have finished",
                ) from exc
            except retried as exc:
                if attempt == _RETRIES - 1:
                    raise StoreBusy(
                        f"{self.location} stayed busy: {exc}",
                        remedy="retry once the other writers have finished",
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
            except psycopg_pool.PoolTimeout as exc:
                raise StoreBusy(
                    f"no connection to {self.location} came free: {exc}",
                    remedy="retry, or raise the pool size",
                ) from exc
            except psycopg.Error as exc:
                raise StoreError(
                    f"{self.location}: {exc}", remedy="verify the store", fix="verify"
                ) from exc
        raise AssertionError("unreachable")

    def write(self, fn: Callable[[PostgresTransaction], T]) -> T:
        return self._run(True, fn)

    def read(self, fn: Callable[[PostgresTransaction], T]) -> T:
        return self._run(False, fn)

    def read_beside(self, fn: Callable[[PostgresTransaction], T]) -> Future[T] | None:
        """``fn`` in a read transaction of its own, started now in a worker thread on an
        idle connection of the pool, so that it runs beside the caller's next read (a
        search's semantic sense beside its word senses: the server has a core for
        each). None, and nothing started, when no connection is idle: the caller then
        runs ``fn`` in its own read. The thread never waits for a connection, so reads
        waiting on each other cannot exhaust the pool."""
        pool = self.pool
        if self._pool_size < 2 or not pool.get_stats().get("pool_available"):
            return None
        try:
            con = pool.getconn(timeout=_IDLE_WAIT_S)
        except psycopg_pool.PoolTimeout:
            return None
        beside = self._beside
        assert beside is not None  # made with the pool

        def run() -> T:
            try:
                con.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                return fn(PostgresTransaction(con, self._indexed, self._common))
            except psycopg.Error as exc:
                raise StoreError(
                    f"{self.location}: {exc}", remedy="verify the store", fix="verify"
                ) from exc
            finally:
                with contextlib.suppress(psycopg.Error):
                    con.rollback()  # it only read
                pool.putconn(con)

        return beside.submit(run)

    # -- schema -----------------------------------------------------------------------

    def _migrate(self) -> None:
        try:
            with psycopg.connect(self.conninfo, connect_timeout=CONNECT_TIMEOUT_S) as con:
                con.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_MIGRATE_LOCK, self.schema)
                )
                self._ext = self._extension_schema(con) or "public"
                con.execute(
                    sql.SQL("SET LOCAL search_path TO {}, {}").format(
                        self._ident, sql.Identifier(self._ext)
                    )
                )
                exists = con.execute(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
                ).fetchone()
                if not exists:  # a role may use a schema made for it without CREATE rights
                    con.execute(sql.SQL("CREATE SCHEMA {}").format(self._ident))
                con.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                row = con.execute("SELECT max(version) FROM schema_migrations").fetchone()
                current = int(row[0] or 0) if row else 0
                if current > latest_version():
                    raise SchemaTooNew(
                        f"{self.location} is at schema version {current}; this retain knows "
                        f"up to {latest_version()}",
                        remedy="upgrade retain to open this store",
                        version=current,
                    )
                if current < latest_version():  # a migration waits for writers, as SQLite's
                    con.execute(
                        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                        (_WRITE_LOCK, self.schema),
                    )
                for migration in MIGRATIONS:
                    if migration.version > current:
                        con.execute(migration.sql)
                        con.execute(
                            "INSERT INTO schema_migrations(version, name, applied_at) "
                            "VALUES (%s, %s, now()::text)",
                            (migration.version, migration.name),
                        )
                self._ext = self._extension_schema(con) or "public"
            self._reached = os.getpid()  # the server answered this process
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot prepare the store {self.location}: {exc}",
                remedy="check the database URL, that the role may create a schema, and that "
                "the pgvector extension is available (CREATE EXTENSION vector)",
            ) from exc

    @staticmethod
    def _extension_schema(con: psycopg.Connection[Any]) -> str | None:
        row = con.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        ).fetchone()
        return str(row[0]) if row else None

    def schema_version(self) -> int:
        return self.read(
            lambda tx: int(tx._one("SELECT max(version) FROM schema_migrations")[0] or 0)
        )

    def size_bytes(self) -> int:
        return self.read(
            lambda tx: int(
                tx._one(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind = 'r'",
                    (self.schema,),
                )[0]
            )
        )

    # -- the derived index ---------------------------------------------------------

    def check_index(self) -> tuple[bool, int, list[str]]:
        """The full-text index as it can go wrong here: the GIN index not valid (a failed
        build), or a stored document that its row's text no longer gives (the text search
        configuration or its stemmer changed since it was written: PostgreSQL computes a
        generated column once, on write). Every row's document is computed again."""

        def check(tx: PostgresTransaction) -> tuple[bool, int, list[str]]:
            problems: list[str] = []
            valid = tx._one(
                "SELECT i.indisvalid AND i.indisready FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.relname = 'memories_fts' AND n.nspname = %s",
                (self.schema,),
            )
            if valid is None or not valid[0]:
                problems.append("full-text index is missing or not valid")
            memories = int(tx._one("SELECT count(*) FROM memories")[0])
            stale_rows = _STALE_DOCUMENT.format(self._document(tx))
            stale = int(tx._one(f"SELECT count(*) FROM memories WHERE {stale_rows}")[0])
            if stale:
                problems.append(
                    f"full-text index holds {stale} of {memories} memories' documents as their "
                    "text no longer gives them"
                )
            return (not problems, memories - stale, problems)

        return self.read(check)

    def _document(self, tx: PostgresTransaction) -> str:
        """The expression the store computes a row's document with, as the catalogue has it."""
        row = tx._one(
            "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d "
            "JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
            "WHERE d.adrelid = 'memories'::regclass AND a.attname = 'fts'"
        )
        return str(row[0])

    def rebuild_index(self) -> None:
        def rebuild(tx: PostgresTransaction) -> None:
            # An update computes a generated column again: the stale documents first.
            stale = _STALE_DOCUMENT.format(self._document(tx))
            tx.con.execute(f"UPDATE memories SET context = context WHERE {stale}")
            tx.con.execute("REINDEX INDEX memories_fts")

        self.write(rebuild)
