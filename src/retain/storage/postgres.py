"""A store in PostgreSQL (psycopg 3, a connection pool), for many processes and hosts.

The same ``Transaction`` protocol as SQLite, and no business rule. What the engine
settles: a write transaction takes one advisory lock first, so writers are serialised
the way SQLite serialises them — the event chain stays one line and an invariant
checked by the service over several rows (the inline budget, names across tiers)
cannot be raced; a read is a ``REPEATABLE READ`` snapshot. Unique indexes back the
name rules. Words are searched with a weighted ``tsvector`` (name A, description B,
body C, context D; ``ts_rank_cd``), prefixes with ``:*``, plain text with ``strpos``
over each row's text lowered when written (``lowered``); vectors with pgvector, an
HNSW index per embedding model, stored just after the write that
made them commits, outside the write lock (``PendingVectors``, ``store_vectors``): the
HNSW insert is most of a write's server time.
The write records them in ``vectors_pending`` by its last statement (``finish``), so a
row's ``since`` is when the write committed; a row its writer never cleared (it died, or
failed, between the two) is made again by a later write (``stale_vectors``; the write
lock's statement tells a write whether there are any), and ``verify`` counts it as
pending, not as a missing vector.

A store is a schema of a database (``retain`` unless the URL's ``schema`` parameter
names another), so one database can hold several stores.

``PostgresBackend`` (here) opens the store, keeps its pool and runs each transaction;
``PostgresTransaction`` (``postgres_transaction``) is one transaction's reads and
writes, its word search in ``postgres_words`` and its vectors in ``postgres_vectors``;
the schema's migrations are ``postgres_schema``'s.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import psycopg
import psycopg_pool
from psycopg import IsolationLevel, sql
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from retain.errors import InvalidValue, SchemaTooNew, StoreBusy, StoreError
from retain.storage.base import Compaction, Progress, migrations_ahead
from retain.storage.postgres_schema import MIGRATIONS, latest_version
from retain.storage.postgres_transaction import PostgresTransaction
from retain.storage.postgres_vectors import (
    HNSW_EF_SEARCH,
    STALE_PENDING,
    STALE_VECTORS_S,
    PendingVectors,
    register_vector,
    store_vectors,
)
from retain.storage.postgres_words import Frequent

__all__ = ["PendingVectors", "PostgresBackend", "PostgresTransaction", "split_url", "store_vectors"]

T = TypeVar("T")

DEFAULT_SCHEMA = "retain"
POOL_SIZE = 8  # connections a process keeps, unless told ([postgres] pool_size)
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
# The write lock, and whether an earlier writer left stale vectors: one round trip.
_LOCK_AND_LOOK = (
    "SELECT pg_advisory_xact_lock(%s, hashtext(%s)), "
    "EXISTS (SELECT 1 FROM vectors_pending p WHERE " + STALE_PENDING.format(seconds="%s") + ")"
)
LOCK_TIMEOUT_MS = 10_000  # how long a writer waits for the write lock before it is busy
CONNECT_TIMEOUT_S = 5
_WRITE_LOCK = 7271  # with the schema's hash: the advisory lock a store's writers hold
_MIGRATE_LOCK = 7272
_RETRIES = 20
_IDLE_WAIT_S = 0.002  # how long read_beside waits for the pool to hand over an idle connection
# The full-text indexes: the weighted document's, and the descriptions' words alone
_WORD_INDEXES = ("memories_fts", "memories_description_words")
_STALE_DOCUMENT = "fts IS DISTINCT FROM ({})"  # a row whose stored document its text does not give


def split_url(url: str) -> tuple[str, str]:
    """A ``postgres://`` URL as a connection string and the schema its store lives in
    (the ``schema`` query parameter, else ``retain``)."""
    parts = urlsplit(url)
    schema: str | None = None
    kept: list[str] = []
    for item in filter(None, parts.query.split("&")):  # the others as written: libpq
        key, _, value = item.partition("=")  # decodes them (and no "+" as a space)
        if unquote(key) != "schema":
            kept.append(item)
        elif schema is None:  # (the first, if named twice)
            schema = unquote(value)
    conninfo = urlunsplit(parts._replace(query="&".join(kept)))
    return conninfo, DEFAULT_SCHEMA if schema is None else schema


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


class _Dropped(Exception):
    """A transaction's connection was dropped before it committed (``_attempt``)."""


def _isolate(con: psycopg.Connection[Any], level: IsolationLevel) -> None:
    """Start ``con``'s next transaction at ``level``, said by its ``BEGIN``: no round trip
    of its own, and whatever the server's or the role's default."""
    if con.isolation_level != level:
        con.isolation_level = level


class PostgresBackend:
    """A store in a schema of a PostgreSQL database, through a connection pool."""

    reads_wait = True  # every statement is a round trip to the server

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = POOL_SIZE,
        ef_search: int = HNSW_EF_SEARCH,
        progress: Progress | None = None,
    ) -> None:
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
        self._frequent = Frequent()  # the statistics' frequent description lexemes
        self._reached = 0  # the pid that last connected (a fork has not)
        self._pool_size = pool_size
        if type(ef_search) is not int or not 1 <= ef_search <= 1000:  # pgvector's bounds
            raise InvalidValue(  # past them, every search would fail
                f"ef_search must be a whole number from 1 to 1000, not {ef_search!r}",
                remedy=f"pass a depth from 1 to 1000 (retain's default is {HNSW_EF_SEARCH})",
                field="ef_search",
            )
        self._ef_search = ef_search  # the candidates its HNSW walks keep
        self._pool: psycopg_pool.ConnectionPool[Any] | None = None
        self._beside: ThreadPoolExecutor | None = None  # runs read_beside's reads
        self._pid = 0
        self._lock = threading.Lock()
        self._migrate(progress)

    # -- connections ------------------------------------------------------------

    def _configure(self, con: psycopg.Connection[Any]) -> None:
        # The store's schema, then the one pgvector lives in (its type and operators).
        con.execute(
            sql.SQL("SET search_path TO {}, {}").format(self._ident, sql.Identifier(self._ext))
        )
        con.execute(f"SET lock_timeout = {int(LOCK_TIMEOUT_MS)}")
        register_vector(con, self._ext)
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
                        configure=self._configure,  # (no check: ``_attempt`` says why)
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

    def _transaction(self, con: psycopg.Connection[Any]) -> PostgresTransaction:
        """A transaction on ``con`` sharing what the backend keeps across them."""
        return PostgresTransaction(
            con, self._indexed, self._common, self._ef_search, self._frequent
        )

    def _run(self, write: bool, fn: Callable[[PostgresTransaction], T]) -> T:
        pending: PendingVectors | None = None
        made: set[str] = set()

        def locked(con: psycopg.Connection[Any]) -> T:
            nonlocal pending, made
            tx = self._transaction(con)
            if write:  # one writer at a time in this store (its schema)
                # The same statement looks for vectors an earlier writer left stale, as the
                # store stood when this write asked for the lock: it costs no round trip.
                look = (_WRITE_LOCK, self.schema, STALE_VECTORS_S)
                tx.saw_stale = bool(tx._one(_LOCK_AND_LOOK, look)[1])
            result = fn(tx)
            tx.finish()
            pending, made = tx.pending, tx.made
            return result

        # a read is one snapshot; a write reads what committed before each statement
        # (its lock's last holder's write too)
        level = IsolationLevel.READ_COMMITTED if write else IsolationLevel.REPEATABLE_READ
        result = self._attempt(locked, isolation=level)
        self._indexed |= made  # (a try rolled back made none)
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
        isolation: IsolationLevel = IsolationLevel.READ_COMMITTED,
    ) -> T:
        """``fn`` in a transaction of its own at ``isolation``, tried again while the
        server says it raced, or once more when its connection was dropped before the
        transaction committed (a server restart, an idle connection closed by the server
        or the network). The pool does not test a connection before it lends it (a round
        trip each transaction): the first statement does, and on a drop the pool tests
        the others it holds, which a restart dropped alike, before the second try. (A
        transaction whose own statement ended its connection is not run a third time.)"""
        retried: tuple[type[psycopg.Error], ...] = (
            pg_errors.SerializationFailure,
            pg_errors.DeadlockDetected,
            *raced,
        )
        delay, races, dropped = 0.005, 0, False
        while True:
            try:
                with self.pool.connection() as con:
                    _isolate(con, isolation)
                    try:
                        return fn(con)
                    except psycopg.Error as exc:  # (nothing of the transaction landed)
                        if con.broken and not dropped:
                            raise _Dropped from exc
                        raise
            except _Dropped:
                dropped = True
                self.pool.check()  # (the dropped one is discarded as it is given back)
            except pg_errors.LockNotAvailable as exc:  # waited LOCK_TIMEOUT_MS already
                raise StoreBusy(
                    f"{self.location} stayed locked by another writer for "
                    f"{LOCK_TIMEOUT_MS / 1000:g} s",
                    remedy="retry once the other writers have finished",
                ) from exc
            except retried as exc:
                races += 1
                if races == _RETRIES:
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
                _isolate(con, IsolationLevel.REPEATABLE_READ)
                return fn(self._transaction(con))
            except psycopg.Error as exc:
                raise StoreError(
                    f"{self.location}: {exc}", remedy="verify the store", fix="verify"
                ) from exc
            finally:
                with contextlib.suppress(psycopg.Error):
                    con.rollback()  # it only read
                pool.putconn(con)

        # the caller's context goes with it (a verb's access grants: ``service.access``)
        return beside.submit(contextvars.copy_context().run, run)

    # -- schema -----------------------------------------------------------------------

    def _migrate(self, progress: Progress | None) -> None:
        try:
            with psycopg.connect(self.conninfo, connect_timeout=CONNECT_TIMEOUT_S) as con:
                # each statement sees what committed before it: the last migrator's work too
                _isolate(con, IsolationLevel.READ_COMMITTED)
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
                for migration in migrations_ahead(MIGRATIONS, current, progress):
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

    # -- compaction: what erasure leaves for the tables to shed -------------------------

    # The tables an erasure or a delete rewrites rows of.
    _COMPACTED = ("memories", "events", "proposals", "context_sessions", "memory_vectors")

    def index_vectors(
        self, model: str, dim: int, at_least: int, progress: Progress | None = None
    ) -> int:
        return 0  # pgvector's HNSW index is kept by every write

    def compact(self, *, full: bool = False, progress: Progress | None = None) -> Compaction:
        """VACUUM the tables erasures rewrite (dead rows and their index entries go; with
        ``full``, VACUUM FULL rewrites the tables, which locks each while it runs)."""
        command = sql.SQL("VACUUM (FULL) {}" if full else "VACUUM {}").format(
            sql.SQL(", ").join(sql.Identifier(self.schema, t) for t in self._COMPACTED)
        )

        def vacuum(con: psycopg.Connection[Any]) -> None:
            con.autocommit = True  # VACUUM runs outside a transaction
            try:
                con.execute(command)
            finally:
                if not con.broken:  # (a dropped one is discarded, and VACUUM tried again)
                    con.autocommit = False

        try:
            self._attempt(vacuum)
        except StoreError as exc:
            raise StoreError(
                f"{self.location}: cannot compact: {exc.__cause__ or exc}",
                remedy="retry",
                location=self.location,
            ) from exc
        return Compaction(("vacuumed_full",) if full else ("vacuumed",), True)

    def residue(self, needles: Sequence[str]) -> dict[str, list[str]]:
        """Each of ``needles`` still held as text by a row of the store's tables, with the
        tables holding it."""
        wanted = [n for n in needles if n]
        if not wanted:
            return {}

        def scan(tx: PostgresTransaction) -> dict[str, list[str]]:
            tables = [
                str(r[0])
                for r in tx._rows(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' "
                    "ORDER BY c.relname",
                    (self.schema,),
                )
            ]
            found: dict[str, list[str]] = {}
            for table in tables:
                tests = sql.SQL(", ").join(
                    sql.SQL("bool_or(strpos(t::text, {}) > 0)").format(sql.Literal(n))
                    for n in wanted
                )
                query = sql.SQL("SELECT {} FROM {} t").format(
                    tests, sql.Identifier(self.schema, table)
                )
                row = tx.con.execute(query).fetchone()
                for needle, held in zip(wanted, row or (), strict=False):
                    if held:
                        found.setdefault(needle, []).append(table)
            return found

        return self.read(scan)

    # -- the derived index ---------------------------------------------------------

    def check_index(self) -> tuple[bool, int, list[str]]:
        """The full-text index as it can go wrong here: a GIN index (the document's, or the
        descriptions' words') not valid (a failed build), or a stored document that its
        row's text no longer gives (the text search configuration or its stemmer changed
        since it was written: PostgreSQL computes a generated column once, on write).
        Every row's document is computed again."""

        def check(tx: PostgresTransaction) -> tuple[bool, int, list[str]]:
            problems: list[str] = []
            valid = tx._one(
                "SELECT count(*) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE i.indisvalid AND i.indisready AND c.relname = ANY(%s) AND n.nspname = %s",
                (list(_WORD_INDEXES), self.schema),
            )
            if int(valid[0]) != len(_WORD_INDEXES):
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
            for index in _WORD_INDEXES:
                tx.con.execute(f"REINDEX INDEX {index}")

        self.write(rebuild)
