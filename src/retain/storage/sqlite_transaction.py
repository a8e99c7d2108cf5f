"""What one SQLite transaction can do: the store's reads and writes, as SQL.

``SqliteTransaction`` runs the operations of ``storage.base.Transaction`` on one
connection, inside whatever transaction ``SqliteBackend`` (``sqlite.py``) has opened
around it; it neither begins, commits nor retries. The statements both engines share
come from ``statements.py``; word search over the FTS5 index is ``sqlite_fts``.

It is one piece past the usual size on purpose: a filter's SQL (``_filter_sql``), the
ways its rows are reached through an index (``passing``) and the listings and reads
that use them are one cost model, tuned together against the same measurements.
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from retain.chrono import parse_stamp, stamp
from retain.errors import MemoryExists
from retain.model import (
    Agent,
    Event,
    Injection,
    ListPosition,
    Load,
    Memory,
    Proposal,
    Team,
)
from retain.storage.base import (
    Described,
    KeySource,
    LexicalHit,
    LoadCounts,
    MemoryFilter,
    ScannedRow,
)
from retain.storage.mirror_links import MirrorLinkStatements
from retain.storage.panel import PanelStatements
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
from retain.storage.sqlite_fts import NARROW, FtsSearch
from retain.storage.sqlite_vectors import SqliteVectors
from retain.storage.statements import PROPOSAL_COLUMNS, SqlStatements, proposal_of
from retain.storage.words import scan_hits

if TYPE_CHECKING:
    from retain.storage.sqlite_ann import Indexes


def _json_list(text: str) -> tuple[str, ...]:
    """A stored JSON list (most are empty, and parsing "[]" is most of a row's cost)."""
    return tuple(json.loads(text)) if text != "[]" else ()


def _json_dict(text: str) -> dict[str, Any]:
    return dict(json.loads(text)) if text != "{}" else {}


def _memory(row: Sequence[Any]) -> Memory:
    return memory_of(row, _json_list, _json_dict)


_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode


_INSERT_CHUNK = 200  # rows per INSERT statement (29 parameters each)


@functools.lru_cache(maxsize=8)
def _insert_sql(rows: int) -> str:
    row = f"({_marks(INSERT_COLUMNS)})"
    return f"INSERT INTO memories ({', '.join(INSERT_COLUMNS)}) VALUES " + ", ".join([row] * rows)


def _params(m: Memory) -> dict[str, Any]:
    return params_of(m, _JSON, _JSON, int)


def _upsert(columns: Sequence[str]) -> str:
    return (
        f"INSERT INTO memories ({', '.join(INSERT_COLUMNS)}) "
        f"VALUES ({', '.join(':' + c for c in INSERT_COLUMNS)}) "
        "ON CONFLICT(id) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in columns)
        + " WHERE memories.content_hash = :expect_hash AND memories.updated_at = :expect_updated"
    )


# A restore puts created_at back in place, so the row keeps its number and with it its
# place in its thread.
_UPSERT = _upsert(UPDATE_COLUMNS)
_RESTORE = _upsert([*UPDATE_COLUMNS, "created_at"])


@functools.lru_cache(maxsize=512)
def _qmark(sql: str) -> str:
    """A shared statement (``statements.py``, psycopg's ``%s`` style) in SQLite's."""
    return sql.replace("%s", "?")


# A listing's filter holding fewer rows is read through its index and sorted: a project
# of 1,900 took 11 ms so (its rows read twice, then), against 6 walking a realm of that
# size in its order; a tag of 475 in 2,000, 2.6 against 3.3. In a larger store, up to
# √(page × rows) are (``_listed_few``): a walk reads about page × rows ÷ the filter's
# rows before its page is full.
LISTED_FEW = 500


def _marks(values: Sequence[object]) -> str:
    """A placeholder for each of ``values``, for ``IN (…)``."""
    return ", ".join("?" * len(values))


def _looked_up(table: str, key: str, args: list[Any]) -> tuple[str, str, list[Any]]:
    """A way of ``passing`` through a lookup table (``memory_tags``, ``memory_refs``): its
    rows matching ``key``, and the memories they name (each once), as ``m``."""
    named = f"(SELECT DISTINCT memory_num FROM {table} WHERE {key}) x "
    return f"{table} WHERE {key}", f"{named}CROSS JOIN memories m ON m.num = x.memory_num", args


def _indexed(index: str, key: str, args: list[Any]) -> tuple[str, str, list[Any]]:
    """A way of ``passing`` through an index of ``memories`` by realm: its rows of the
    realm matching ``key``, counted and read as ``m``."""
    rows = f"memories INDEXED BY {index} WHERE realm = ? AND {key}"
    return rows, f"(SELECT * FROM {rows}) AS m", args


def _narrow(where: MemoryFilter) -> bool:
    """Whether ``where`` keeps a tier, a tag, a reference, a trust, the expired or the
    long unverified, whose rows may be few enough to read through their index
    (``SqliteTransaction.passing``)."""
    kept = (where.scopes, where.tag, where.expired_at, where.verified_before)
    return any(k is not None for k in kept) or bool(where.referencing or where.trusts)


_SCANNED = ("coalesce(m.name, '')", "m.description", "m.body")  # what a plain-text scan reads


class SqliteTransaction(
    SqliteVectors, RelationStatements, MirrorLinkStatements, SqlStatements, PanelStatements
):
    """The operations of one connection, inside whatever transaction is open."""

    _memory = staticmethod(_memory)
    _SUBJECT_IS = "subject = %s COLLATE NOCASE"  # the memories_subject index (ASCII case)
    _LEDGER_STORE = "json_extract(metadata, '$.ledger.store')"

    def __init__(
        self,
        con: sqlite3.Connection,
        common: set[str],
        indexes: Callable[[], Indexes] | None = None,
        *,
        reading: bool = False,
    ) -> None:
        self.con = con
        self.fts = FtsSearch(con, common)
        self._head: tuple[int, str] | None = None  # the chain head this transaction read or wrote
        self._indexes = indexes  # how the store file's vectors are searched (None: not)
        self._ann = None
        # a read transaction's ``passing`` rows, kept for its later senses (its snapshot
        # cannot change them; a write transaction could)
        self._passed: dict[tuple[MemoryFilter, int], dict[int, str] | None] | None = (
            {} if reading else None
        )

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self.con.execute(_qmark(sql), args).fetchall()

    def _one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        return self.con.execute(_qmark(sql), args).fetchone()

    def _execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.con.execute(_qmark(sql), args)

    # -- helpers --------------------------------------------------------------

    def _filter_sql(self, where: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
        clauses = [f"{alias}.realm = ?"]
        args: list[Any] = [where.realm]
        if where.scopes is not None:
            clauses.append(f"{alias}.scope IN ({_marks(where.scopes)})")
            args.extend(where.scopes)
        elif where.tiers_only:
            clauses.append(f"({alias}.scope = 'global' OR {alias}.scope LIKE 'project:%')")
        clauses.append(f"{alias}.status IN ({_marks(where.statuses)})")
        args.extend(where.statuses)
        if where.tag is not None:
            clauses.append(
                f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.tag = ? "
                f"AND t.memory_num = {alias}.num)"
            )
            args.append(where.tag)
        if where.referencing:
            clauses.append(
                f"EXISTS (SELECT 1 FROM memory_refs r WHERE r.memory_num = {alias}.num "
                f"AND r.target IN ({_marks(where.referencing)}))"
            )
            args.extend(where.referencing)
        if where.verified_before is not None:
            clauses.append(f"{alias}.verified_at < ?")
            args.append(where.verified_before)
        if where.expired_at is not None:
            clauses.append(f"{alias}.expires_at IS NOT NULL AND {alias}.expires_at <= ?")
            args.append(where.expired_at)
        if where.live_at is not None:
            clauses.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
            args.append(where.live_at)
        if where.loads:
            clauses.append(f"{alias}.load IN ({_marks(where.loads)})")
            args.extend(where.loads)
        if where.trusts:
            clauses.append(f"{alias}.trust IN ({_marks(where.trusts)})")
            args.extend(where.trusts)
        if where.within is not None:
            clauses.append(f"{alias}.id IN (SELECT value FROM json_each(?))")
            args.append(json.dumps(where.within))
        if where.contains is not None:  # ASCII letters compare without case (SQLite's lower)
            clauses.append(
                f"instr(lower(coalesce({alias}.name, '') || char(10) || {alias}.description "
                f"|| char(10) || {alias}.body), lower(?)) > 0"
            )
            args.append(where.contains)
        if where.reviewer_only is not None:
            null = "IS NOT NULL" if where.reviewer_only else "IS NULL"
            clauses.append(f"{alias}.quarantine_reason {null}")
        return " AND ".join(clauses), args

    def passing(self, where: MemoryFilter, below: int) -> dict[int, str] | None:
        """The memories passing ``where`` (number → id) when its realm and scopes, its
        tag, the records it references, its trusts, its expired or its long unverified
        hold fewer than ``below`` rows, else None: a small tier's (and so on) rows,
        cheaper to search from than to find among many others. Each way's rows are
        counted first in its index alone (reading a large tier's first 2,450 rows whole
        to learn that it is large took 6 ms at 100,000 memories, counting them 0.3); then
        the rows of the first way that holds fewer than ``below`` are read, and the rest
        of the filter checked on each. A read transaction reads them once: a search's
        word senses ask for them sense by sense (3–8 ms at a million memories)."""
        if self._passed is None:
            return self._passing(where, below)
        if (where, below) not in self._passed:
            self._passed[where, below] = self._passing(where, below)
        return self._passed[where, below]

    def _passing(self, where: MemoryFilter, below: int) -> dict[int, str] | None:
        few = self._few(where, below)
        if few is None:
            return None
        read, way_args = few
        clause, args = self._filter_sql(where)
        return dict(
            self.con.execute(f"SELECT m.num, m.id FROM {read} WHERE {clause}", [*way_args, *args])
        )

    def _few(self, where: MemoryFilter, below: int) -> tuple[str, list[Any]] | None:
        """The rows (as ``m``) of the first way ``where`` narrows that holds fewer than
        ``below``, and their arguments; None when none does (see ``passing``)."""
        held, held_args = "realm = ?", [where.realm]
        if where.scopes is not None:
            held += f" AND scope IN ({_marks(where.scopes)})"
            held_args.extend(where.scopes)
        # Each way: the rows counted, the rows read (as ``m``), and their arguments.
        ways = [
            (
                f"memories WHERE {held}",
                f"(SELECT * FROM memories WHERE {held} LIMIT {below:d}) AS m",
                held_args,
            )
        ]
        if where.tag is not None:
            ways.append(_looked_up("memory_tags", "tag = ?", [where.tag]))
        if where.referencing:
            targets = f"target IN ({_marks(where.referencing)})"
            ways.append(_looked_up("memory_refs", targets, list(where.referencing)))
        if where.trusts:
            trusted = f"trust IN ({_marks(where.trusts)})"
            ways.append(_indexed("memories_trust", trusted, [where.realm, *where.trusts]))
        if where.expired_at is not None:
            expired = "expires_at IS NOT NULL AND expires_at <= ?"
            ways.append(_indexed("memories_expiry", expired, [where.realm, where.expired_at]))
        if where.verified_before is not None:
            stale = "verified_at < ?"
            ways.append(_indexed("memories_verified", stale, [where.realm, where.verified_before]))
        for counted, read, way_args in ways:
            if self._fewer(counted, way_args, below):
                return read, way_args
        return None

    def _fewer(self, rows: str, args: list[Any], below: int) -> bool:
        """Whether ``FROM {rows}`` holds fewer than ``below`` rows (counted up to it)."""
        (count,) = self.con.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {rows} LIMIT ?)", [*args, below]
        ).fetchone()
        return bool(count < below)

    # -- realms and projects --------------------------------------------------

    # -- agents and teams -----------------------------------------------------

    def _agents(self, realm: str, name: str | None) -> list[Agent]:
        rows = self.con.execute(
            "SELECT a.name, a.created_at, "
            "(SELECT json_group_array(team) FROM (SELECT t.team FROM team_members t "
            " WHERE t.realm = a.realm AND t.agent = a.name ORDER BY t.team)) "
            "FROM agents a WHERE a.realm = ? AND (? IS NULL OR a.name = ?) ORDER BY a.name",
            (realm, name, name),
        )
        return [Agent(r[0], parse_stamp(r[1]), tuple(json.loads(r[2]))) for r in rows]

    def _teams(self, realm: str, name: str | None) -> list[Team]:
        rows = self.con.execute(
            "SELECT t.name, t.created_at, "
            "(SELECT json_group_array(agent) FROM (SELECT m.agent FROM team_members m "
            " WHERE m.realm = t.realm AND m.team = t.name ORDER BY m.agent)) "
            "FROM teams t WHERE t.realm = ? AND (? IS NULL OR t.name = ?) ORDER BY t.name",
            (realm, name, name),
        )
        return [Team(r[0], parse_stamp(r[1]), tuple(json.loads(r[2]))) for r in rows]

    def list_proposals(
        self, realm: str, status: str | None, record: str | None = None
    ) -> list[Proposal]:
        rows = self.con.execute(
            f"SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE realm = ? "
            "AND (? IS NULL OR status = ?) AND (? IS NULL OR record = ?) "
            "ORDER BY rowid",  # the order they were made in
            (realm, status, status, record, record),
        )
        return [proposal_of(r) for r in rows]

    # -- memories -------------------------------------------------------------

    def find_by_name(self, realm: str, name: str, scopes: Sequence[str] | None) -> list[Memory]:
        sql = f"SELECT {COLUMNS} FROM memories WHERE realm = ? AND name = ? AND {NAMED}"
        args: list[Any] = [realm, name]
        if scopes is not None:
            if not scopes:
                return []
            sql += f" AND scope IN ({_marks(scopes)})"
            args.extend(scopes)
        # No ORDER BY: it would tempt the planner off the (realm, name) index.
        return sorted((_memory(r) for r in self.con.execute(sql, args)), key=lambda m: m.scope)

    def find_by_names(self, realm: str, names: Sequence[str]) -> dict[str, list[Memory]]:
        rows: list[Any] = []
        wanted = list(dict.fromkeys(names))
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            sql = (
                f"SELECT {COLUMNS} FROM memories "
                f"WHERE realm = ? AND name IN ({_marks(part)}) AND {NAMED}"
            )
            rows.extend(self.con.execute(sql, [realm, *part]))
        return by_name(map(_memory, rows))

    def _by_ids(self, columns: str, ids: Sequence[str]) -> list[Any]:
        rows: list[Any] = []
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            sql = f"SELECT {columns} FROM memories WHERE id IN ({_marks(part)})"
            rows.extend(self.con.execute(sql, part))
        return rows

    def update_memory(self, memory: Memory, current: Memory, *, restore: bool = False) -> bool:
        params = _params(memory)
        params["expect_hash"] = current.content_hash
        params["expect_updated"] = stamp(current.updated_at)
        try:
            cur = self.con.execute(_RESTORE if restore else _UPSERT, params)
        except sqlite3.IntegrityError as exc:
            raise self._integrity(exc) from exc
        return cur.rowcount == 1

    @staticmethod
    def _integrity(exc: sqlite3.IntegrityError) -> Exception:
        """A constraint the database settled: a name taken in a scope, or the error as is."""
        if "memories.realm, memories.name, memories.scope" in str(exc):
            return MemoryExists(
                "a memory of that name already exists in that tier",
                remedy="choose another name, or write to the existing memory",
            )
        return exc

    def insert_memories(self, memories: Sequence[Memory]) -> None:
        # Many rows per statement: the FTS5 index flushes once per statement.
        for start in range(0, len(memories), _INSERT_CHUNK):
            chunk = memories[start : start + _INSERT_CHUNK]
            values = [params[c] for m in chunk for params in (_params(m),) for c in INSERT_COLUMNS]
            try:
                self.con.execute(_insert_sql(len(chunk)), values)
            except sqlite3.IntegrityError as exc:
                raise self._integrity(exc) from exc

    def list_memories(
        self, where: MemoryFilter, limit: int | None = None, after: ListPosition | None = None
    ) -> list[Memory]:
        clause, args = self._filter_sql(where)
        if after is not None:
            clause += f" AND {AFTER_SQL}"
            args += after_args(after)
        # The few rows of a tier, tag, reference, trust, expiry or staleness are read and
        # sorted; others are read in the index's order until enough pass (at 100k, a tag
        # of 0.1% took 40 ms that way, a reference 180). A listing by load (a context's)
        # walks ``memories_load``, which holds the scopes too: counting first would only add.
        few = None
        if _narrow(where) and not where.loads:
            few = self._few(where, self._listed_few(limit))
        rows, row_args = few if few is not None else ("memories m", [])
        sql = (
            f"SELECT {M_COLUMNS} FROM {rows} WHERE {clause} "
            "ORDER BY m.priority ASC, m.created_at DESC, m.id DESC"
        )
        args = [*row_args, *args]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_memory(r) for r in self.con.execute(sql, args)]

    def _listed_few(self, limit: int | None) -> int:
        """Below how many rows a listing's filter is read through its index: ``LISTED_FEW``,
        or more in a larger store (its rows counted by the last row's number, which
        costs nothing), up to ``NARROW``: √(page × rows), or half the rows for a whole
        listing. At a million, a page of a filter of 1,000 walked 20,000 rows (40 ms)."""
        (rows,) = self.con.execute("SELECT coalesce(max(num), 0) FROM memories").fetchone()
        wanted = int(rows) // 2 if limit is None else math.isqrt(max(limit, 0) * int(rows))
        return max(LISTED_FEW, min(NARROW, wanted))

    def referencing(self, realm: str, targets: Sequence[str]) -> list[Memory]:
        if not targets:
            return []
        rows = self.con.execute(
            f"SELECT DISTINCT {M_COLUMNS} FROM memory_refs r "
            "JOIN memories m ON m.num = r.memory_num "
            f"WHERE m.realm = ? AND r.target IN ({_marks(targets)}) "
            "ORDER BY m.priority, m.created_at DESC",
            [realm, *targets],
        )
        return [_memory(r) for r in rows]

    # -- context ----------------------------------------------------------------

    def load_counts(self, where: MemoryFilter, now: str) -> LoadCounts:
        if not where.loads:  # every load, spelled out so that memories_load covers the count
            where = replace(where, loads=tuple(load.value for load in Load))
        clause, args = self._filter_sql(where)
        rows = self.con.execute(
            "SELECT m.load, count(*), coalesce(sum(m.expires_at <= ?), 0), "
            "min(CASE WHEN m.expires_at > ? THEN m.expires_at END) FROM memories m "
            f"WHERE {clause} GROUP BY m.load",
            [now, now, *args],
        )
        return load_counts_of(rows)

    def tag_counts(self, where: MemoryFilter) -> dict[str, int]:
        clause, args = self._filter_sql(where)
        rows = self.con.execute(
            "SELECT t.tag, count(*) FROM memory_tags t JOIN memories m ON m.num = t.memory_num "
            f"WHERE {clause} GROUP BY t.tag",
            args,
        )
        return {tag: int(n) for tag, n in rows}

    def insert_injections(self, realm: str, rows: Sequence[Injection]) -> None:
        self.con.executemany(
            "INSERT INTO injections(realm, memory_id, identity, session, surface, injected_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (realm, r.memory_id, r.identity, r.session, r.surface, stamp(r.injected_at))
                for r in rows
            ],
        )

    # -- lexical search -------------------------------------------------------

    def match_terms(
        self, where: MemoryFilter, terms: Sequence[str], *, prefix: bool, limit: int
    ) -> list[LexicalHit]:
        clause, args = self._filter_sql(where)
        tier = (lambda: self.passing(where, NARROW)) if _narrow(where) else None
        return self.fts.match(clause, args, terms, prefix=prefix, limit=limit, passing=tier)

    def lookup_descriptions(
        self, where: MemoryFilter, asked: Sequence[Sequence[str]], *, limit: int, fewest: int
    ) -> list[list[Described]]:
        clause, args = self._filter_sql(where)
        return self.fts.lookup(clause, args, asked, limit=limit, fewest=fewest)

    def scan_text(
        self, where: MemoryFilter, needles: Sequence[str], *, limit: int
    ) -> list[LexicalHit]:
        return scan_hits(needles, self.scan_rows(where, needles), limit)

    def scan_rows(self, where: MemoryFilter, needles: Sequence[str]) -> list[ScannedRow]:
        if not needles:
            return []
        clause, args = self._filter_sql(where)
        # Each field is tested alone: joining them first copied every row's text once for
        # each needle, which cost more than the tests (and scan_hits reads each field alone).
        tests, values = [], []
        for needle in needles:
            # LIKE folds ASCII case, in C, and compares any other character as it is:
            # right for ASCII and for a caseless script, and quicker than instr.
            if needle.isascii() or needle.casefold() == needle == needle.upper():
                escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                for text in _SCANNED:
                    tests.append(f"{text} LIKE ? ESCAPE '\\'")
                    values.append(f"%{escaped}%")
            else:  # folded in Python: one call a row, over the fields joined
                tests.append(f"instr(retain_fold({' || char(10) || '.join(_SCANNED)}), ?) > 0")
                values.append(needle.casefold())
        rows = self.con.execute(
            f"SELECT m.id, coalesce(m.name, ''), m.description, m.body FROM memories m "
            f"WHERE {clause} AND ({' OR '.join(tests)})",
            [*args, *values],
        ).fetchall()
        return [tuple(row) for row in rows]

    # -- search keys --------------------------------------------------------------

    def key_sources(self, ids: Sequence[str]) -> list[KeySource]:
        found: list[KeySource] = []
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self.con.execute(
                f"SELECT {KEY_COLUMNS} FROM memories WHERE {KEYED} AND id IN ({_marks(part)})",
                part,
            )
            found.extend(KeySource(*row) for row in rows)
        return found

    def thread_adjacent(self, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        found: dict[str, tuple[str | None, str | None]] = {}
        side = (
            "(SELECT o.id FROM memories o WHERE o.realm = m.realm AND o.scope = m.scope "
            "AND o.thread = m.thread AND o.num {op} m.num ORDER BY o.num {order} LIMIT 1)"
        )
        before, after = side.format(op="<", order="DESC"), side.format(op=">", order="ASC")
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self.con.execute(
                f"SELECT m.id, {before}, {after} FROM memories m "
                f"WHERE m.id IN ({_marks(part)}) AND m.thread IS NOT NULL",
                part,
            )
            found.update((row[0], (row[1], row[2])) for row in rows)
        return found

    def thread_positions(self, ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self.con.execute(
                "SELECT m.id, (SELECT count(*) FROM memories o WHERE o.realm = m.realm "
                "AND o.scope = m.scope AND o.thread = m.thread AND o.num <= m.num) "
                f"FROM memories m WHERE m.id IN ({_marks(part)}) "
                "AND m.thread IS NOT NULL",
                part,
            )
            found.update(rows)
        return found

    def subjects_named(self, realm: str, phrases: Sequence[str]) -> list[str]:
        found: set[str] = set()
        for start in range(0, len(phrases), 500):
            part = phrases[start : start + 500]
            rows = self.con.execute(
                "SELECT DISTINCT subject FROM memories WHERE realm = ? AND subject COLLATE NOCASE "
                f"IN ({_marks(part)})",
                [realm, *part],
            )
            found.update(r[0] for r in rows)
        return sorted(found)

    # -- the event log ---------------------------------------------------------

    def append_event(self, event: Event) -> None:
        self.con.execute(
            "INSERT INTO events(seq, event_id, realm, memory_id, kind, tx_time, principal, "
            "reason, payload, payload_digest, prev_hash, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.seq,
                event.event_id,
                event.realm,
                event.memory_id,
                event.kind,
                stamp(event.tx_time),
                event.principal,
                event.reason,
                event.payload,
                event.payload_digest,
                event.prev_hash,
                event.hash,
            ),
        )
        self._head = (event.seq, event.hash)

    def iter_events(self, realm: str | None = None) -> Iterator[Event]:
        sql = f"SELECT {EVENT_COLUMNS} FROM events"
        args: list[Any] = []
        if realm is not None:
            sql += " WHERE realm = ?"
            args.append(realm)
        for r in self.con.execute(sql + " ORDER BY seq", args):
            yield event_of(r)

    def count_events(self) -> int:
        return int(self.con.execute("SELECT count(*) FROM events").fetchone()[0])

    def list_events(
        self, realm: str, after_seq: int, limit: int, memory_id: str | None = None
    ) -> list[Event]:
        rows = self.con.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE realm = ? AND seq > ? "
            "AND (? IS NULL OR memory_id = ?) ORDER BY seq LIMIT ?",
            (realm, after_seq, memory_id, memory_id, limit),
        )
        return [event_of(r) for r in rows]
