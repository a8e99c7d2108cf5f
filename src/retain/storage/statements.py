"""The statements both SQL backends run alike, written once.

They are in psycopg's ``%s`` parameter style; the SQLite backend turns each ``%s`` into
``?``. A backend's transaction supplies ``_rows``, ``_one`` and ``_execute`` to run
them, and ``_memory``, ``_agents`` and ``_teams`` for the rows its engine holds
differently (JSON text against ``jsonb``, arrays).

It is one piece past the usual size on purpose: it is the SQL both backends run
alike, kept in one place so that neither drifts from the other.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from retain.chrono import parse_optional_stamp, parse_stamp, stamp
from retain.grants import Grant
from retain.ledger import GENESIS
from retain.model import (
    COUNT_MAX,
    Agent,
    AgentSession,
    Approval,
    Event,
    Injection,
    Memory,
    Project,
    Proposal,
    Team,
    Trust,
)
from retain.storage.base import InlineEntry, KeySource, Standing
from retain.storage.rows import (
    COLUMNS,
    EVENT_COLUMNS,
    KEY_COLUMNS,
    KEYED,
    STANDING_COLUMNS,
    event_of,
    standing_of,
)

if TYPE_CHECKING:  # a signal and a hold: imported where a row is made one
    from retain.assertions import ConflictSignal
    from retain.governance.retention import Hold

R = TypeVar("R")

# A proposal's (a ticket's) columns, as ``proposal_of`` reads them.
PROPOSAL_COLUMNS = (
    "id, source, target, trust, summary, body, evidence, action, status, created_at, "
    "record, tainted, expires_at, approvals, decided_by, decided_at, decision_reason, landed"
)


def proposal_of(row: Sequence[Any]) -> Proposal:
    """The proposal of a row selected as ``PROPOSAL_COLUMNS``."""
    approvals = tuple(
        Approval(a["by"], parse_stamp(a["at"]), a.get("reason", "")) for a in json.loads(row[13])
    )
    return Proposal(
        id=row[0], source=row[1], target=row[2], trust=Trust(row[3]), summary=row[4],
        body=row[5], evidence=row[6], action=row[7], status=row[8],
        created_at=parse_stamp(row[9]), record=row[10], tainted=bool(row[11]),
        expires_at=parse_optional_stamp(row[12]), approvals=approvals, decided_by=row[14],
        decided_at=parse_optional_stamp(row[15]), decision_reason=row[16], landed=row[17],
    )  # fmt: skip


def _like(value: str) -> str:
    """A LIKE pattern matching text that holds ``value`` (escaped with ``!``)."""
    escaped = value.replace("!", "!!").replace("%", "!%").replace("_", "!_")
    return f"%{escaped}%"


def _approvals_text(approvals: Sequence[Approval]) -> str:
    return json.dumps([{"by": a.by, "at": stamp(a.at), "reason": a.reason} for a in approvals])


def _proposal_values(p: Proposal) -> tuple[Any, ...]:
    """A proposal's values in the order of ``PROPOSAL_COLUMNS``."""
    return (
        p.id, p.source, p.target, p.trust.value, p.summary, p.body, p.evidence, p.action,
        p.status, stamp(p.created_at), p.record, p.tainted,
        stamp(p.expires_at) if p.expires_at else None, _approvals_text(p.approvals),
        p.decided_by, stamp(p.decided_at) if p.decided_at else None, p.decision_reason,
        p.landed,
    )  # fmt: skip


_HOLD_COLUMNS = "target, reason, held_by, held_at, event_id"


def _hold_of(realm: str, row: Sequence[Any]) -> Hold:
    """The hold of a row selected as ``_HOLD_COLUMNS``."""
    from retain.governance.retention import Hold

    return Hold(realm, row[0], row[1], row[2], parse_stamp(row[3]), row[4])


class SqlStatements(ABC):
    """The part of a SQL transaction that is the same on SQLite and PostgreSQL."""

    _head: tuple[int, str] | None  # the chain head this transaction read or wrote
    # ``subject`` equal to a parameter ignoring case, as the engine's subject index has it
    _SUBJECT_IS: str
    # the store an assertion was indexed in: its metadata's ``ledger.store`` (or NULL)
    _LEDGER_STORE: str

    @abstractmethod
    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """Every row ``sql`` selects."""

    @abstractmethod
    def _one(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """The first row ``sql`` selects, or None."""

    @abstractmethod
    def _execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        """Run ``sql``; its cursor (``rowcount``)."""

    @abstractmethod
    def _by_ids(self, columns: str, ids: Sequence[str]) -> list[Any]:
        """The ``columns`` of the memories of ``ids`` that exist, in no order."""

    @abstractmethod
    def _memory(self, row: Sequence[Any]) -> Memory:
        """The memory of a row selected as ``COLUMNS``."""

    @abstractmethod
    def _agents(self, realm: str, name: str | None) -> list[Agent]:
        """The realm's agents (one, by ``name``), each with its teams."""

    @abstractmethod
    def _teams(self, realm: str, name: str | None) -> list[Team]:
        """The realm's teams (one, by ``name``), each with its members."""

    def get_many(self, ids: Sequence[str]) -> list[Memory]:
        return self._in_order(ids, COLUMNS, self._memory)

    def quarantined(self, realm: str, after: str | None, limit: int) -> list[Memory]:
        sql = f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND status = 'quarantined'"
        args: list[Any] = [realm]
        if after is not None:  # the rows after that one, in the same order
            sql += " AND (created_at, id) > (SELECT created_at, id FROM memories WHERE id = %s)"
            args.append(after)
        rows = self._rows(sql + " ORDER BY created_at, id LIMIT %s", [*args, limit])
        return [self._memory(row) for row in rows]

    def successors(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        found: list[tuple[str, str, str]] = []
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            rows = self._rows(
                "SELECT supersedes, id, status FROM memories "
                f"WHERE supersedes IN ({', '.join(['%s'] * len(part))})",
                part,
            )
            found.extend((r[0], r[1], r[2]) for r in rows)
        return found

    def fact_versions(
        self, realm: str, scopes: Sequence[str], subject: str, predicate: str | None
    ) -> list[Memory]:
        if not scopes:
            return []
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND {self._SUBJECT_IS} "
            f"AND predicate IS NOT NULL AND scope IN ({', '.join(['%s'] * len(scopes))})"
        )
        args = [realm, subject, *scopes]
        if predicate is not None:
            sql += " AND predicate = %s"
            args.append(predicate)
        return [self._memory(row) for row in self._rows(sql, args)]

    def standings(self, ids: Sequence[str]) -> list[Standing]:
        return self._in_order(ids, STANDING_COLUMNS, standing_of)

    def _in_order(
        self, ids: Sequence[str], columns: str, make: Callable[[Sequence[Any]], R]
    ) -> list[R]:
        """``make`` of each row of ``ids`` that exists (``columns`` start with the id),
        in the order of ``ids``."""
        found = {row[0]: make(row) for row in self._by_ids(columns, ids)}
        return [found[i] for i in ids if i in found]

    def realm_exists(self, realm: str) -> bool:
        return self._one("SELECT 1 FROM realms WHERE name = %s", (realm,)) is not None

    def ensure_realm(self, realm: str, now: str) -> None:
        self._execute(
            "INSERT INTO realms(name, created_at) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
            (realm, now),
        )

    def add_member(self, realm: str, team: str, agent: str, now: str) -> bool:
        cur = self._execute(
            "INSERT INTO team_members(realm, team, agent, joined_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (realm, team, agent, now),
        )
        return bool(cur.rowcount == 1)

    def count_keyed(self) -> int:
        return int(self._one(f"SELECT count(*) FROM memories WHERE {KEYED}")[0])

    def count_memories(self, realm: str | None, scope: str | None = None) -> int:
        if realm is None:
            row = self._one("SELECT count(*) FROM memories")
        elif scope is None:
            row = self._one("SELECT count(*) FROM memories WHERE realm = %s", (realm,))
        else:
            row = self._one(
                "SELECT count(*) FROM memories WHERE realm = %s AND scope = %s "
                "AND status = 'active'",
                (realm, scope),
            )
        return int(row[0])

    def record_legacy_import(self, realm: str, identity: str, sha256: str, now: str) -> None:
        self._execute(
            "INSERT INTO legacy_imports(realm, identity, sha256, imported_at) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (realm, identity, sha256, now),
        )

    def list_realms(self) -> list[tuple[str, str]]:
        rows = self._rows("SELECT name, created_at FROM realms ORDER BY created_at, name")
        return [(r[0], r[1]) for r in rows]

    def get_project(self, realm: str, name: str) -> Project | None:
        row = self._one(
            "SELECT name, created_at FROM projects WHERE realm = %s AND name = %s", (realm, name)
        )
        return Project(row[0], parse_stamp(row[1])) if row else None

    def list_projects(self, realm: str) -> list[Project]:
        rows = self._rows(
            "SELECT p.name, p.created_at, "
            "(SELECT count(*) FROM memories m WHERE m.realm = p.realm "
            " AND m.scope = 'project:' || p.name) "
            "FROM projects p WHERE p.realm = %s ORDER BY p.name",
            (realm,),
        )
        return [Project(r[0], parse_stamp(r[1]), int(r[2])) for r in rows]

    def insert_project(self, realm: str, name: str, now: str) -> None:
        self._execute(
            "INSERT INTO projects(realm, name, created_at) VALUES (%s, %s, %s)", (realm, name, now)
        )

    def rename_project(self, realm: str, old: str, new: str) -> int:
        self._execute(
            "UPDATE projects SET name = %s WHERE realm = %s AND name = %s", (new, realm, old)
        )
        cur = self._execute(
            "UPDATE memories SET scope = %s WHERE realm = %s AND scope = %s",
            ("project:" + new, realm, "project:" + old),
        )
        return int(cur.rowcount)

    def delete_project(self, realm: str, name: str) -> None:
        self._execute("DELETE FROM projects WHERE realm = %s AND name = %s", (realm, name))

    def get_agent(self, realm: str, name: str) -> Agent | None:
        return next(iter(self._agents(realm, name)), None)

    def insert_agent(self, realm: str, name: str, now: str) -> None:
        self._execute(
            "INSERT INTO agents(realm, name, created_at) VALUES (%s, %s, %s)", (realm, name, now)
        )

    def list_agents(self, realm: str) -> list[Agent]:
        return self._agents(realm, None)

    def get_team(self, realm: str, name: str) -> Team | None:
        return next(iter(self._teams(realm, name)), None)

    def insert_team(self, realm: str, name: str, now: str) -> None:
        self._execute(
            "INSERT INTO teams(realm, name, created_at) VALUES (%s, %s, %s)", (realm, name, now)
        )

    def list_teams(self, realm: str) -> list[Team]:
        return self._teams(realm, None)

    def insert_proposal(self, realm: str, proposal: Proposal) -> None:
        p = proposal
        self._execute(
            f"INSERT INTO proposals(realm, {PROPOSAL_COLUMNS}) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (realm, *_proposal_values(p)),
        )

    def update_proposal(self, realm: str, proposal: Proposal, status_was: str) -> bool:
        """Store a decided ``proposal`` if it still stands at ``status_was`` (else False:
        another decision came first)."""
        p = proposal
        cursor = self._execute(
            "UPDATE proposals SET status = %s, approvals = %s, decided_by = %s, "
            "decided_at = %s, decision_reason = %s, landed = %s "
            "WHERE realm = %s AND id = %s AND status = %s",
            (
                p.status, _approvals_text(p.approvals), p.decided_by,
                stamp(p.decided_at) if p.decided_at else None, p.decision_reason, p.landed,
                realm, p.id, status_was,
            ),
        )  # fmt: skip
        return bool(cursor.rowcount)

    def get_proposal(self, realm: str, proposal_id: str) -> Proposal | None:
        row = self._one(
            f"SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE realm = %s AND id = %s",
            (realm, proposal_id),
        )
        return None if row is None else proposal_of(row)

    def list_grants(self, realm: str) -> list[Grant]:
        rows = self._rows(
            "SELECT id, subject, action, target, effect, created_at, created_by FROM grants "
            "WHERE realm = %s ORDER BY created_at, id",
            (realm,),
        )
        return [
            Grant(r[1], r[2], r[3], r[4], "stored", r[0], realm, parse_stamp(r[5]), r[6])
            for r in rows
        ]

    def insert_grant(self, grant: Grant) -> None:
        g = grant
        self._execute(
            "INSERT INTO grants(id, realm, subject, action, target, effect, created_at, "
            "created_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (g.id, g.realm, g.subject, g.action, g.on, g.effect,
             stamp(g.created_at) if g.created_at else "", g.created_by or ""),
        )  # fmt: skip

    def delete_grant(self, grant_id: str) -> None:
        self._execute("DELETE FROM grants WHERE id = %s", (grant_id,))

    # -- legal holds, and what a retention sweep reads -----------------------------------

    def get_hold(self, realm: str, target: str) -> Hold | None:
        row = self._one(
            f"SELECT {_HOLD_COLUMNS} FROM holds WHERE realm = %s AND target = %s",
            (realm, target),
        )
        return None if row is None else _hold_of(realm, row)

    def list_holds(self, realm: str) -> list[Hold]:
        rows = self._rows(
            f"SELECT {_HOLD_COLUMNS} FROM holds WHERE realm = %s ORDER BY held_at, target",
            (realm,),
        )
        return [_hold_of(realm, row) for row in rows]

    def held_among(self, realm: str, targets: Sequence[str]) -> set[str]:
        held: set[str] = set()
        for start in range(0, len(targets), 500):
            part = list(targets[start : start + 500])
            rows = self._rows(
                "SELECT target FROM holds WHERE realm = %s "
                f"AND target IN ({', '.join(['%s'] * len(part))})",
                [realm, *part],
            )
            held.update(r[0] for r in rows)
        return held

    def insert_hold(self, hold: Hold) -> None:
        self._execute(
            f"INSERT INTO holds(realm, {_HOLD_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
            (hold.realm, hold.target, hold.reason, hold.held_by, stamp(hold.held_at),
             hold.event_id),
        )  # fmt: skip

    def delete_hold(self, realm: str, target: str) -> bool:
        cursor = self._execute(
            "DELETE FROM holds WHERE realm = %s AND target = %s", (realm, target)
        )
        return bool(cursor.rowcount)

    def memory_scopes(self, realm: str) -> list[str]:
        rows = self._rows(
            "SELECT DISTINCT scope FROM memories WHERE realm = %s ORDER BY scope", (realm,)
        )
        return [r[0] for r in rows]

    def learned_before(
        self, realm: str, scope: str, before: str, after: tuple[str, str] | None, limit: int
    ) -> list[Memory]:
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND scope = %s "
            "AND created_at < %s AND status <> 'forgotten'"
        )
        args: list[Any] = [realm, scope, before]
        if after is not None:  # the rows after that one, in the same order
            sql += " AND (created_at, id) > (%s, %s)"
            args.extend(after)
        rows = self._rows(sql + " ORDER BY created_at, id LIMIT %s", [*args, limit])
        return [self._memory(row) for row in rows]

    def delete_memory(self, memory_id: str) -> None:
        self._execute("DELETE FROM memories WHERE id = %s", (memory_id,))

    def increment_read_count(self, memory_id: str) -> int:
        row = self._one(  # a count at what the column holds stays there
            "UPDATE memories SET read_count = CASE WHEN read_count < %s THEN read_count + 1 "
            "ELSE read_count END WHERE id = %s RETURNING read_count",
            (COUNT_MAX, memory_id),
        )
        return int(row[0])

    def inline_entries(self, realm: str, now: str) -> list[InlineEntry]:
        rows = self._rows(
            "SELECT id, name, scope, body_bytes FROM memories WHERE realm = %s "
            "AND load = 'inline' AND status = 'active' AND body_bytes > 0 "
            "AND (expires_at IS NULL OR expires_at > %s)",
            (realm, now),
        )
        return [InlineEntry(r[0], r[1], r[2], r[3]) for r in rows]

    def list_injections(
        self,
        realm: str,
        *,
        memory_id: str | None = None,
        identity: str | None = None,
        session: str | None = None,
        limit: int = 100,
    ) -> list[Injection]:
        clauses, args = ["realm = %s"], [realm]
        for column, value in (("memory_id", memory_id), ("identity", identity),
                              ("session", session)):  # fmt: skip
            if value is not None:
                clauses.append(f"{column} = %s")
                args.append(value)
        rows = self._rows(
            "SELECT seq, memory_id, identity, session, surface, injected_at FROM injections "
            f"WHERE {' AND '.join(clauses)} ORDER BY seq DESC LIMIT %s",
            [*args, limit],
        )
        return [Injection(r[1], r[2], r[3], r[4], parse_stamp(r[5]), seq=r[0]) for r in rows]

    def get_context_state(self, realm: str, identity: str, session: str) -> str | None:
        row = self._one(
            "SELECT state FROM context_sessions "
            "WHERE realm = %s AND identity = %s AND session = %s",
            (realm, identity, session),
        )
        return None if row is None else str(row[0])

    def legacy_imported(self, realm: str, identity: str, sha256: str) -> bool:
        row = self._one(
            "SELECT 1 FROM legacy_imports WHERE realm = %s AND identity = %s AND sha256 = %s",
            (realm, identity, sha256),
        )
        return row is not None

    def list_legacy_imports(self, realm: str) -> list[tuple[str, str, str]]:
        rows = self._rows(
            "SELECT identity, sha256, imported_at FROM legacy_imports WHERE realm = %s "
            "ORDER BY imported_at, identity",
            (realm,),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def list_context_states(self, realm: str) -> list[tuple[str, str, str, str]]:
        rows = self._rows(
            "SELECT identity, session, state, updated_at FROM context_sessions "
            "WHERE realm = %s ORDER BY identity, session",
            (realm,),
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def put_context_state(
        self, realm: str, identity: str, session: str, state: str, now: str
    ) -> None:
        self._execute(
            "INSERT INTO context_sessions(realm, identity, session, state, updated_at) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (realm, identity, session) "
            "DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
            (realm, identity, session, state, now),
        )

    _SESSION = "identity, key, tainted, tainted_at, cause, started_at, updated_at"

    @staticmethod
    def _session(row: Sequence[Any]) -> AgentSession:
        return AgentSession(
            identity=row[0],
            key=row[1],
            tainted=bool(row[2]),
            tainted_at=None if row[3] is None else parse_stamp(row[3]),
            cause=None if row[4] is None else json.loads(row[4]),
            started_at=parse_stamp(row[5]),
            updated_at=parse_stamp(row[6]),
        )

    def get_session(self, realm: str, identity: str, key: str) -> AgentSession | None:
        row = self._one(
            f"SELECT {self._SESSION} FROM sessions WHERE realm = %s AND identity = %s AND key = %s",
            (realm, identity, key),
        )
        return None if row is None else self._session(row)

    def latest_sessions(self, realm: str, identity: str) -> list[AgentSession]:
        rows = self._rows(
            f"SELECT {self._SESSION} FROM sessions WHERE realm = %s AND identity = %s "
            "AND updated_at = (SELECT max(updated_at) FROM sessions "
            "WHERE realm = %s AND identity = %s) ORDER BY key",
            (realm, identity, realm, identity),
        )
        return [self._session(r) for r in rows]

    def list_sessions(self, realm: str) -> list[AgentSession]:
        rows = self._rows(
            f"SELECT {self._SESSION} FROM sessions WHERE realm = %s ORDER BY identity, key",
            (realm,),
        )
        return [self._session(r) for r in rows]

    def put_session(self, realm: str, session: AgentSession) -> None:
        cause = None if session.cause is None else json.dumps(session.cause, sort_keys=True)
        self._execute(
            f"INSERT INTO sessions(realm, {self._SESSION}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (realm, identity, key) "
            "DO UPDATE SET tainted = excluded.tainted, tainted_at = excluded.tainted_at, "
            "cause = excluded.cause, started_at = excluded.started_at, "
            "updated_at = excluded.updated_at",
            (
                realm,
                session.identity,
                session.key,
                session.tainted,
                None if session.tainted_at is None else stamp(session.tainted_at),
                cause,
                stamp(session.started_at),
                stamp(session.updated_at),
            ),
        )

    def ledger_facts(
        self,
        realm: str,
        scopes: Sequence[str] | None,
        subject: str | None,
        predicate: str | None,
        *,
        indexed: bool,
    ) -> list[Memory]:
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND status = 'active' "
            "AND subject IS NOT NULL AND predicate IS NOT NULL"
        )
        args: list[Any] = [realm]
        if scopes is not None:
            if not scopes:
                return []
            sql += f" AND scope IN ({', '.join(['%s'] * len(scopes))})"
            args.extend(scopes)
        if subject is not None:
            sql += f" AND {self._SUBJECT_IS}"
            args.append(subject)
        if predicate is not None:
            sql += " AND predicate = %s"
            args.append(predicate)
        if indexed:
            sql += f" AND {self._LEDGER_STORE} IS NOT NULL"
        rows = self._rows(sql + " ORDER BY created_at, id", args)
        return [self._memory(row) for row in rows]

    _CONFLICT = "entity, topic, store, reason, active, updated_at"

    def conflicts(
        self,
        realm: str,
        entity: str | None = None,
        topic: str | None = None,
        store: str | None = None,
        *,
        active_only: bool = True,
    ) -> list[ConflictSignal]:
        from retain.assertions import ConflictSignal

        sql = f"SELECT {self._CONFLICT} FROM conflicts WHERE realm = %s"
        args: list[Any] = [realm]
        for column, value in (("entity", entity), ("topic", topic), ("store", store)):
            if value is not None:
                sql += f" AND {column} = %s"
                args.append(value)
        if active_only:
            sql += " AND active = %s"
            args.append(True)
        rows = self._rows(sql + " ORDER BY entity, topic, store", args)
        return [
            ConflictSignal(realm, r[0], r[1], r[2], r[3], bool(r[4]), parse_stamp(r[5]))
            for r in rows
        ]

    def put_conflict(self, signal: ConflictSignal) -> None:
        s = signal
        self._execute(
            f"INSERT INTO conflicts(realm, {self._CONFLICT}) VALUES (%s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (realm, entity, topic, store) DO UPDATE SET reason = excluded.reason, "
            "active = excluded.active, updated_at = excluded.updated_at",
            (s.realm, s.entity, s.topic, s.store, s.reason, s.active, stamp(s.updated_at)),
        )

    def thread_neighbours(
        self, source: KeySource, radius: int
    ) -> tuple[list[KeySource], list[KeySource]]:
        sql = (
            f"SELECT {KEY_COLUMNS} FROM memories WHERE realm = %s AND scope = %s "
            "AND thread = %s AND num {op} %s ORDER BY num {order} LIMIT %s"
        )
        args = (source.realm, source.scope, source.thread, source.num, radius)
        before = self._rows(sql.format(op="<", order="DESC"), args)
        after = self._rows(sql.format(op=">", order="ASC"), args)
        return [KeySource(*r) for r in before], [KeySource(*r) for r in after]

    def iter_memories(self, after_num: int, limit: int) -> list[tuple[int, Memory]]:
        rows = self._rows(
            f"SELECT num, {COLUMNS} FROM memories WHERE num > %s ORDER BY num LIMIT %s",
            (after_num, limit),
        )
        return [(int(r[0]), self._memory(r[1:])) for r in rows]

    def iter_key_sources(self, after_num: int, limit: int) -> list[KeySource]:
        rows = self._rows(
            f"SELECT {KEY_COLUMNS} FROM memories WHERE num > %s AND {KEYED} ORDER BY num LIMIT %s",
            (after_num, limit),
        )
        return [KeySource(*r) for r in rows]

    def last_vector(self) -> int:
        row = self._one("SELECT max(vec) FROM memory_vectors")
        return int(row[0] or 0)

    def vector_nums(self, model: str) -> set[int]:
        rows = self._rows("SELECT memory_num FROM memory_vectors WHERE model = %s", (model,))
        return {r[0] for r in rows}

    def last_tx_time(self) -> datetime | None:
        """The transaction time of the log's last event (None for an empty log). Read at
        the start of a write, under its lock: the head it reads is the one the write's
        first event follows, so ``chain_head`` need not read it again."""
        self._flush()
        row = self._one("SELECT seq, hash, tx_time FROM events ORDER BY seq DESC LIMIT 1")
        if self._head is None:
            self._head = (int(row[0]), str(row[1])) if row else (0, GENESIS)
        return parse_stamp(row[2]) if row else None

    def ordered_from(self) -> int:
        """The ``seq`` from which the log's transaction times do not decrease (the first
        event a writer of this version appended; 1 when the store began with it)."""
        row = self._one("SELECT from_seq FROM event_rules WHERE rule = 'tx_time_ordered'")
        return int(row[0]) if row else 1

    def set_ordered_from(self, seq: int) -> None:
        self._execute("UPDATE event_rules SET from_seq = %s WHERE rule = 'tx_time_ordered'", (seq,))

    # -- erasure: what a forgotten row's copies and events are, and their rewriting ----------

    def derived_of(self, realm: str, ids: Sequence[str]) -> list[Memory]:
        if not ids:
            return []
        marks = ", ".join(["%s"] * len(ids))
        rows = self._rows(
            f"SELECT {COLUMNS} FROM memories WHERE realm = %s AND derived_from IN ({marks})",
            (realm, *ids),
        )
        return [self._memory(r) for r in rows]

    def tickets_of(self, realm: str, ids: Sequence[str]) -> list[Proposal]:
        if not ids:
            return []
        marks = ", ".join(["%s"] * len(ids))
        rows = self._rows(
            f"SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE realm = %s AND "
            f"(id IN ({marks}) OR record IN ({marks}) OR landed IN ({marks}))",
            (realm, *ids, *ids, *ids),
        )
        return [proposal_of(r) for r in rows]

    def events_naming(self, realm: str, ids: Sequence[str]) -> list[Event]:
        if not ids:
            return []
        self._flush()
        marks = ", ".join(["%s"] * len(ids))
        quoted = " OR ".join(["payload LIKE %s"] * len(ids))
        # An event about another memory names one of ``ids`` only as a link (a successor's
        # ``supersedes``), holding text of its own: the rest is the realm's and tickets'.
        # Two lookups by the ``events_memory`` index, not a scan of every payload.
        rows = self._rows(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE realm = %s AND memory_id IN ({marks}) "
            f"UNION ALL SELECT {EVENT_COLUMNS} FROM events WHERE realm = %s "
            f"AND memory_id IS NULL AND ({quoted}) ORDER BY seq",
            (realm, *ids, realm, *(f'%"{i}"%' for i in ids)),
        )
        return [event_of(r) for r in rows]

    def vectors_of(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        marks = ", ".join(["%s"] * len(ids))
        row = self._one(
            "SELECT count(*) FROM memory_vectors v JOIN memories m ON m.num = v.memory_num "
            f"WHERE m.id IN ({marks})",
            tuple(ids),
        )
        return int(row[0])

    def holders(self, realm: str, values: Sequence[str]) -> set[str]:
        """Of ``values``, those a memory's text or an event's payload of ``realm`` holds."""
        if not values:
            return set()
        text = (
            "coalesce(name, '') || ' ' || description || ' ' || body || ' ' || source || ' ' "
            "|| CAST(tags AS TEXT) || ' ' || CAST(refs AS TEXT) || ' ' "
            "|| CAST(metadata AS TEXT)"
        )  # not ``context``: a neighbour's words, derived from the memories themselves
        matches = " OR ".join(["t LIKE %s ESCAPE '!'"] * len(values))
        found: set[str] = set()
        rows = self._rows(
            f"SELECT t FROM (SELECT {text} AS t FROM memories WHERE realm = %s) m WHERE {matches}",
            (realm, *(_like(v) for v in values)),
        )
        for (held,) in rows:
            found.update(v for v in values if v in held)
        quoted = {v: json.dumps(v, ensure_ascii=False)[1:-1] for v in values}  # as JSON has it
        rows = self._rows(
            f"SELECT payload FROM events WHERE realm = %s AND payload IS NOT NULL "
            f"AND ({matches.replace('t LIKE', 'payload LIKE')})",
            (realm, *(_like(q) for q in quoted.values())),
        )
        for (payload,) in rows:
            found.update(v for v, q in quoted.items() if q in payload)
        return found

    def get_event(self, realm: str, event_id: str) -> Event | None:
        self._flush()
        row = self._one(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE realm = %s AND event_id = %s",
            (realm, event_id),
        )
        return None if row is None else event_of(row)

    def rewrite_payload(self, seq: int, payload: str) -> None:
        self._execute("UPDATE events SET payload = %s WHERE seq = %s", (payload, seq))

    def erase_ticket(self, realm: str, ticket: Proposal) -> None:
        self._execute(
            "UPDATE proposals SET summary = %s, body = %s, evidence = %s "
            "WHERE realm = %s AND id = %s",
            (ticket.summary, ticket.body, ticket.evidence, realm, ticket.id),
        )

    def _flush(self) -> None:  # noqa: B027 (a hook: most engines hold nothing back)
        """Write what this transaction holds back (PostgreSQL's appended events)."""

    def sign_event(self, seq: int, key_id: str, signature: str) -> None:
        self._execute(
            "INSERT INTO event_signatures(seq, key_id, signature) VALUES (%s, %s, %s)",
            (seq, key_id, signature),
        )

    def iter_signatures(self) -> Iterator[tuple[int, str, str]]:
        after = 0
        while True:  # a page at a time, as the events are read
            rows = self._rows(
                "SELECT seq, key_id, signature FROM event_signatures WHERE seq > %s "
                "ORDER BY seq LIMIT 5000",
                (after,),
            )
            if not rows:
                return
            yield from ((int(r[0]), str(r[1]), str(r[2])) for r in rows)
            after = int(rows[-1][0])

    def chain_head(self) -> tuple[int, str]:
        if self._head is not None:
            return self._head
        row = self._one("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)
