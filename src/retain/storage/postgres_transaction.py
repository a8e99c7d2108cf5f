"""One PostgreSQL transaction's reads and writes: ``PostgresTransaction``.

The same ``Transaction`` protocol as SQLite, and no business rule: memories, agents,
teams, proposals, the context's counts and the event log, on one connection inside the
transaction ``PostgresBackend`` opened (``postgres``). Events are held back and
inserted in one statement, before the log is read and by the write's last statement
(``finish``), which also records the vectors left to store once it commits. Its word
search is ``PostgresWords`` (``postgres_words``), its vectors ``PostgresVectors``
(``postgres_vectors``); the statements both engines run alike are ``SqlStatements``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.types.json import Jsonb

from retain.chrono import parse_stamp, stamp
from retain.errors import MemoryExists
from retain.model import Agent, Event, Injection, ListPosition, Memory, Proposal, Team
from retain.storage.base import KeySource, LoadCounts, MemoryFilter
from retain.storage.mirror_links import MirrorLinkStatements
from retain.storage.panel import PanelStatements
from retain.storage.postgres_vectors import HNSW_EF_SEARCH, PendingVectors, PostgresVectors
from retain.storage.postgres_words import Frequent, PostgresWords
from retain.storage.relations import RelationStatements
from retain.storage.rows import (
    AFTER_SQL,
    COLUMNS,
    EVENT_COLUMNS,
    INSERT_COLUMNS,
    KEY_COLUMNS,
    KEYED,
    M_COLUMNS,
    NAMED,
    UPDATE_COLUMNS,
    after_args,
    by_name,
    event_of,
    load_counts_of,
    memory_of,
    params_of,
)
from retain.storage.statements import PROPOSAL_COLUMNS, SqlStatements, proposal_of

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
    "SELECT * FROM unnest(%b::bigint[], %b::text[], %b::text[], %b::text[], "
    "%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[], "
    "%b::text[], %b::text[])"
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


class PostgresTransaction(
    PostgresWords,
    PostgresVectors,
    RelationStatements,
    MirrorLinkStatements,
    SqlStatements,
    PanelStatements,
):
    """The operations of one connection, inside the transaction the backend opened."""

    _memory = staticmethod(_memory)
    _SUBJECT_IS = "lower(subject) = lower(%s)"  # the memories_subject index
    _LEDGER_STORE = "(metadata #>> '{ledger,store}')"

    def __init__(
        self,
        con: psycopg.Connection[Any],
        indexed: set[str] | None = None,
        common: set[str] | None = None,
        ef_search: int = HNSW_EF_SEARCH,
        frequent: Frequent | None = None,
    ) -> None:
        self.con = con
        self._head: tuple[int, str] | None = None  # the chain head this transaction read or wrote
        self._indexed = indexed if indexed is not None else set()  # HNSW indexes made
        self.made: set[str] = set()  # … by this transaction, not the backend's until it commits
        self._common = common if common is not None else set()  # terms known to be common
        self._frequent = frequent if frequent is not None else Frequent()
        self.pending: PendingVectors | None = None  # vectors to store once this commits
        self._events: list[tuple[Any, ...]] = []  # appended, not yet inserted
        self.ef_search = ef_search  # the candidates its HNSW walks keep
        self._ef_set: int | None = None  # the HNSW search depth this transaction set
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
        if where.trusts:
            clauses.append(f"{alias}.trust = ANY(%s)")
            args.append(list(where.trusts))
        if where.within is not None:
            clauses.append(f"{alias}.id = ANY(%s)")
            args.append(list(where.within))
        if where.contains is not None:
            clauses.append(
                f"strpos(lower(coalesce({alias}.name, '') || chr(10) || {alias}.description "
                f"|| chr(10) || {alias}.body), lower(%s)) > 0"
            )
            args.append(where.contains)
        if where.reviewer_only is not None:
            null = "IS NOT NULL" if where.reviewer_only else "IS NULL"
            clauses.append(f"{alias}.quarantine_reason {null}")
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

    def list_proposals(
        self, realm: str, status: str | None, record: str | None = None
    ) -> list[Proposal]:
        rows = self._rows(
            f"SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE realm = %s "
            "AND (%s::text IS NULL OR status = %s) AND (%s::text IS NULL OR record = %s) "
            "ORDER BY seq",  # the order they were made in
            (realm, status, status, record, record),
        )
        return [proposal_of(r) for r in rows]

    # -- memories -------------------------------------------------------------

    def find_by_name(self, realm: str, name: str, scopes: Sequence[str] | None) -> list[Memory]:
        sql = f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND name = %s AND {NAMED}"
        args: list[Any] = [realm, name]
        if scopes is not None:
            if not scopes:
                return []
            sql += " AND scope = ANY(%s)"
            args.append(list(scopes))
        return sorted((_memory(r) for r in self._rows(sql, args)), key=lambda m: m.scope)

    def find_by_names(self, realm: str, names: Sequence[str]) -> dict[str, list[Memory]]:
        rows: list[Any] = []
        wanted = list(dict.fromkeys(names))
        sql = f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND name = ANY(%s) AND {NAMED}"
        for start in range(0, len(wanted), 10_000):  # an import's all at once: in parts
            rows += self._rows(sql, [realm, wanted[start : start + 10_000]])
        return by_name(map(_memory, rows))

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
        try:  # a refusal ends the write: no savepoint (two round trips) keeps the rest
            cur = self.con.execute(_RESTORE if restore else _UPSERT, params)
        except pg_errors.UniqueViolation as exc:
            raise self._integrity(exc) from exc
        return cur.rowcount == 1

    def insert_memories(self, memories: Sequence[Memory]) -> None:
        if not memories:
            return
        try:
            with self.con.cursor() as cur:  # (no savepoint, as for an update)
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
        return load_counts_of(rows)

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

    # -- search keys --------------------------------------------------------------
    # (their vectors, and the nearest rows: ``PostgresVectors``)

    def key_sources(self, ids: Sequence[str]) -> list[KeySource]:
        if not ids:
            return []
        rows = self._rows(
            f"SELECT {KEY_COLUMNS} FROM memories WHERE {KEYED} AND id = ANY(%s)", (list(ids),)
        )
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
