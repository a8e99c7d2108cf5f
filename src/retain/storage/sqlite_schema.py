"""The SQLite schema as an append-only list of migrations.

Each migration is a small function applied in its own transaction together
with the row that records it. Never edit a migration that has shipped; add
the next one.

It is one piece past the usual size on purpose: the migrations are one history, read
in order, and a store's schema is what all of them did.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


def run_script(con: sqlite3.Connection, script: str) -> None:
    """Execute each statement of ``script`` inside the caller's transaction.

    ``executescript`` would commit first, so statements are split with
    ``sqlite3.complete_statement`` (which understands trigger bodies).
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            con.execute(pending)
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in migration: {pending[:80]!r}")


def _m001_foundation(con: sqlite3.Connection) -> None:
    run_script(
        con,
        """
        CREATE TABLE realms (
            name TEXT PRIMARY KEY,
            created_at TEXT NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE projects (
            realm TEXT NOT NULL REFERENCES realms(name),
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (realm, name)
        ) WITHOUT ROWID;

        CREATE TABLE memories (
            num INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            realm TEXT NOT NULL REFERENCES realms(name),
            scope TEXT NOT NULL,
            name TEXT,
            description TEXT NOT NULL,
            body TEXT NOT NULL,
            body_bytes INTEGER NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            priority INTEGER NOT NULL,
            load TEXT NOT NULL CHECK (load IN ('inline', 'index', 'search')),
            refs TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL DEFAULT '',
            subject TEXT,
            predicate TEXT,
            trust TEXT NOT NULL
                CHECK (trust IN ('claimed', 'observed', 'attested', 'verified')),
            status TEXT NOT NULL CHECK (status IN
                ('active', 'quarantined', 'superseded', 'retracted', 'discarded', 'forgotten')),
            ever_quarantined INTEGER NOT NULL DEFAULT 0,
            supersedes TEXT,
            content_hash TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            verified_at TEXT NOT NULL,
            expires_at TEXT,
            valid_from TEXT,
            valid_to TEXT,
            read_count INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}'
        );
        -- One index for both uses: a name is unique within its scope, and found by name.
        CREATE UNIQUE INDEX memories_name ON memories(realm, name, scope)
            WHERE name IS NOT NULL;
        CREATE INDEX memories_index_order ON memories(realm, priority, created_at DESC);
        CREATE INDEX memories_inline ON memories(realm) WHERE load = 'inline';

        -- Derived lookups, kept in step with the JSON columns by triggers.
        CREATE TABLE memory_tags (
            tag TEXT NOT NULL,
            memory_num INTEGER NOT NULL REFERENCES memories(num) ON DELETE CASCADE,
            PRIMARY KEY (tag, memory_num)
        ) WITHOUT ROWID;
        CREATE INDEX memory_tags_memory ON memory_tags(memory_num);
        CREATE TABLE memory_refs (
            target TEXT NOT NULL,
            memory_num INTEGER NOT NULL REFERENCES memories(num) ON DELETE CASCADE,
            PRIMARY KEY (target, memory_num)
        ) WITHOUT ROWID;
        CREATE INDEX memory_refs_memory ON memory_refs(memory_num);

        CREATE TRIGGER memories_lists_ai AFTER INSERT ON memories BEGIN
            INSERT OR IGNORE INTO memory_tags(tag, memory_num)
                SELECT value, new.num FROM json_each(new.tags);
            INSERT OR IGNORE INTO memory_refs(target, memory_num)
                SELECT value, new.num FROM json_each(new.refs);
        END;
        CREATE TRIGGER memories_tags_au AFTER UPDATE OF tags ON memories BEGIN
            DELETE FROM memory_tags WHERE memory_num = old.num;
            INSERT OR IGNORE INTO memory_tags(tag, memory_num)
                SELECT value, new.num FROM json_each(new.tags);
        END;
        CREATE TRIGGER memories_refs_au AFTER UPDATE OF refs ON memories BEGIN
            DELETE FROM memory_refs WHERE memory_num = old.num;
            INSERT OR IGNORE INTO memory_refs(target, memory_num)
                SELECT value, new.num FROM json_each(new.refs);
        END;

        -- Full text: an external-content index over the memories table.
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            name, description, body,
            content='memories', content_rowid='num',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, name, description, body)
                VALUES (new.num, new.name, new.description, new.body);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, name, description, body)
                VALUES ('delete', old.num, old.name, old.description, old.body);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF name, description, body ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, name, description, body)
                VALUES ('delete', old.num, old.name, old.description, old.body);
            INSERT INTO memories_fts(rowid, name, description, body)
                VALUES (new.num, new.name, new.description, new.body);
        END;

        -- The event log: append-only and hash-chained. Only the payload may
        -- ever be blanked (erasure keeps its digest in the chain).
        CREATE TABLE events (
            seq INTEGER PRIMARY KEY,
            event_id TEXT NOT NULL UNIQUE,
            realm TEXT NOT NULL,
            memory_id TEXT,
            kind TEXT NOT NULL,
            tx_time TEXT NOT NULL,
            principal TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            payload TEXT,
            payload_digest TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE INDEX events_memory ON events(memory_id, seq);
        CREATE TRIGGER events_append_only_update
            BEFORE UPDATE OF seq, event_id, realm, memory_id, kind, tx_time, principal,
                             reason, payload_digest, prev_hash, hash ON events
        BEGIN
            SELECT RAISE(ABORT, 'events are append-only');
        END;
        CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events BEGIN
            SELECT RAISE(ABORT, 'events are append-only');
        END;
        """,
    )


def _m002_retrieval(con: sqlite3.Connection) -> None:
    """Threads, subjects and the derived search key: a context column and vectors.

    ``context`` is derived (a memory's date and its thread neighbours' words),
    so the full-text index is recreated with it as a fourth, lightly weighted
    column and rebuilt from the table.
    """
    run_script(
        con,
        """
        ALTER TABLE memories ADD COLUMN thread TEXT;
        ALTER TABLE memories ADD COLUMN context TEXT NOT NULL DEFAULT '';
        CREATE INDEX memories_thread ON memories(realm, scope, thread, num)
            WHERE thread IS NOT NULL;
        CREATE INDEX memories_subject ON memories(realm, subject COLLATE NOCASE)
            WHERE subject IS NOT NULL;

        DROP TRIGGER memories_fts_ai;
        DROP TRIGGER memories_fts_ad;
        DROP TRIGGER memories_fts_au;
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            name, description, body, context,
            content='memories', content_rowid='num',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, name, description, body, context)
                VALUES (new.num, new.name, new.description, new.body, new.context);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, name, description, body, context)
                VALUES ('delete', old.num, old.name, old.description, old.body, old.context);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF name, description, body, context
            ON memories
        BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, name, description, body, context)
                VALUES ('delete', old.num, old.name, old.description, old.body, old.context);
            INSERT INTO memories_fts(rowid, name, description, body, context)
                VALUES (new.num, new.name, new.description, new.body, new.context);
        END;
        INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');

        -- Vectors are derived: one per memory, tagged with the model that made it.
        -- ``vec`` only grows, so a reader refreshes its in-memory matrix from the
        -- rows above the last one it saw.
        CREATE TABLE memory_vectors (
            vec INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_num INTEGER NOT NULL UNIQUE REFERENCES memories(num) ON DELETE CASCADE,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL
        );
        CREATE INDEX memory_vectors_model ON memory_vectors(model);
        """,
    )


def _m003_identities(con: sqlite3.Connection) -> None:
    """Agents and teams: registered rows of a realm; an agent may belong to teams.
    And proposals: agents' requests for writes beyond their own scope."""
    run_script(
        con,
        """
        CREATE TABLE agents (
            realm TEXT NOT NULL REFERENCES realms(name),
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (realm, name)
        ) WITHOUT ROWID;
        CREATE TABLE teams (
            realm TEXT NOT NULL REFERENCES realms(name),
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (realm, name)
        ) WITHOUT ROWID;
        CREATE TABLE team_members (
            realm TEXT NOT NULL,
            team TEXT NOT NULL,
            agent TEXT NOT NULL,
            joined_at TEXT NOT NULL,
            PRIMARY KEY (realm, team, agent),
            FOREIGN KEY (realm, team) REFERENCES teams(realm, name),
            FOREIGN KEY (realm, agent) REFERENCES agents(realm, name)
        ) WITHOUT ROWID;
        CREATE INDEX team_members_agent ON team_members(realm, agent);

        -- Proposals: an agent's request for a wider write (a team's scope, the global
        -- tier), stored for a curator to decide.
        CREATE TABLE proposals (
            id TEXT PRIMARY KEY,
            realm TEXT NOT NULL REFERENCES realms(name),
            source TEXT NOT NULL,
            target TEXT NOT NULL,
            trust TEXT NOT NULL,
            summary TEXT NOT NULL,
            body TEXT NOT NULL,
            evidence TEXT NOT NULL,
            action TEXT NOT NULL,
            status TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX proposals_status ON proposals(realm, status);
        """,
    )


def _m004_context(con: sqlite3.Connection) -> None:
    """The injection ledger (a row for every memory rendered into an agent's context),
    what each context session was last shown, so the next turn renders only the changes,
    and the legacy markdown files imported."""
    run_script(
        con,
        """
        CREATE TABLE injections (
            seq INTEGER PRIMARY KEY,
            realm TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            identity TEXT NOT NULL,
            session TEXT NOT NULL,
            surface TEXT NOT NULL CHECK (surface IN ('inline', 'listed', 'index', 'recall')),
            injected_at TEXT NOT NULL
        );
        CREATE INDEX injections_memory ON injections(memory_id, seq);
        CREATE INDEX injections_realm ON injections(realm, seq);

        CREATE TABLE context_sessions (
            realm TEXT NOT NULL,
            identity TEXT NOT NULL,
            session TEXT NOT NULL,
            state TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (realm, identity, session)
        ) WITHOUT ROWID;

        -- Legacy per-identity markdown files imported, by content: a file seen again
        -- (an import killed between its commit and its rename) is not imported twice.
        CREATE TABLE legacy_imports (
            realm TEXT NOT NULL REFERENCES realms(name),
            identity TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            imported_at TEXT NOT NULL,
            PRIMARY KEY (realm, identity, sha256)
        ) WITHOUT ROWID;

        -- The memory section reads a realm's active memories by load in index order,
        -- and counts them by load and expiry; scope and expiry ride along so that the
        -- view and liveness are checked from the index alone (it covers the counts).
        -- It leads with load, which only the section's reads constrain, so that the
        -- planner never takes it to drive a search's joins.
        CREATE INDEX memories_load
            ON memories(load, realm, status, priority, created_at DESC, scope, expires_at);
        """,
    )


def _m005_successors(con: sqlite3.Connection) -> None:
    """What superseded a memory is read by its id in ``supersedes``."""
    run_script(
        con,
        """
        CREATE INDEX memories_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
        """,
    )


def _m006_ordered_times(con: sqlite3.Connection) -> None:
    """The event from which the log's transaction times do not run backwards.

    Writers before this version read the time before they held the write lock, so a
    store they wrote may hold events stamped before their predecessor; those stay as
    written (the chain covers their times). The rule holds from the next event on, and
    in a new store from its first.
    """
    run_script(
        con,
        """
        CREATE TABLE event_rules (
            rule TEXT PRIMARY KEY,
            from_seq INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO event_rules(rule, from_seq)
            SELECT 'tx_time_ordered', coalesce(max(seq), 0) + 1 FROM events;
        """,
    )


def _m007_changed_by(con: sqlite3.Connection) -> None:
    """Who last changed a memory, once someone has (the author stays who wrote it)."""
    run_script(con, "ALTER TABLE memories ADD COLUMN changed_by TEXT;")


def _m008_quarantine(con: sqlite3.Connection) -> None:
    """What a quarantined write keeps: why it was quarantined, the session it came from,
    and, on a row made from another (a review's release, a ticket's landing), that one.
    A quarantined or discarded row holds no name: a write waiting for review does not
    take a name from the memory it would replace, and a release takes it over."""
    run_script(
        con,
        """
        ALTER TABLE memories ADD COLUMN derived_from TEXT;
        ALTER TABLE memories ADD COLUMN quarantine_reason TEXT;
        ALTER TABLE memories ADD COLUMN session TEXT;
        CREATE INDEX memories_derived_from ON memories(derived_from)
            WHERE derived_from IS NOT NULL;
        DROP INDEX memories_name;
        CREATE UNIQUE INDEX memories_name ON memories(realm, name, scope)
            WHERE name IS NOT NULL AND status NOT IN ('quarantined', 'discarded');
        """,
    )


def _m009_sessions(con: sqlite3.Connection) -> None:
    """The durable sessions of agent contexts, each with its taint: whether it ingested
    untrusted content since its last fresh-context boundary, when, and why (``cause``,
    JSON). Apart from ``context_sessions``, which holds what a render last showed."""
    run_script(
        con,
        """
        CREATE TABLE sessions (
            realm TEXT NOT NULL,
            identity TEXT NOT NULL,
            key TEXT NOT NULL,
            tainted INTEGER NOT NULL DEFAULT 0 CHECK (tainted IN (0, 1)),
            tainted_at TEXT,
            cause TEXT,
            started_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (realm, identity, key)
        ) WITHOUT ROWID;
        CREATE INDEX sessions_latest ON sessions(realm, identity, updated_at);
        """,
    )


def _m010_tickets(con: sqlite3.Connection) -> None:
    """What deciding a proposal (a ticket) needs: the record it promotes, whether its
    proposer's session was tainted, its expiry, the approvals given, who decided it when
    and why, and the memory it landed. A review finds the pending promotions waiting on
    a record by ``proposals_record``."""
    run_script(
        con,
        """
        ALTER TABLE proposals ADD COLUMN record TEXT;
        ALTER TABLE proposals ADD COLUMN tainted INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE proposals ADD COLUMN expires_at TEXT;
        ALTER TABLE proposals ADD COLUMN approvals TEXT NOT NULL DEFAULT '[]';
        ALTER TABLE proposals ADD COLUMN decided_by TEXT;
        ALTER TABLE proposals ADD COLUMN decided_at TEXT;
        ALTER TABLE proposals ADD COLUMN decision_reason TEXT NOT NULL DEFAULT '';
        ALTER TABLE proposals ADD COLUMN landed TEXT;
        CREATE INDEX proposals_record ON proposals(realm, record, status)
            WHERE record IS NOT NULL;
        """,
    )


def _m011_grants(con: sqlite3.Connection) -> None:
    """The access grants kept by the ``grant`` and ``revoke`` verbs (config.toml's are
    read from the file): who may, or may not, do what on which part of a realm."""
    run_script(
        con,
        """
        CREATE TABLE grants (
            id TEXT PRIMARY KEY,
            realm TEXT NOT NULL REFERENCES realms(name),
            subject TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            effect TEXT NOT NULL CHECK (effect IN ('allow', 'deny')),
            created_at TEXT NOT NULL,
            created_by TEXT NOT NULL,
            UNIQUE (realm, subject, action, target, effect)
        ) WITHOUT ROWID;
        """,
    )


def _m012_quarantine_queue(con: sqlite3.Connection) -> None:
    """The quarantine queue read in its order: a realm's quarantined rows by creation,
    then id (``quarantined``), from an index that holds only those rows."""
    run_script(
        con,
        """
        CREATE INDEX memories_quarantined ON memories(realm, created_at, id)
            WHERE status = 'quarantined';
        """,
    )


def _m013_conflicts(con: sqlite3.Connection) -> None:
    """The assertion ledger's conflict signals: one per (realm, entity, topic, store),
    active until cleared, with its reason and when it last changed (each change is an
    event). The ledger's assertions are facts in ``memories``, read by
    ``memories_ledger``, which holds their rows alone."""
    run_script(
        con,
        """
        CREATE TABLE conflicts (
            realm TEXT NOT NULL REFERENCES realms(name),
            entity TEXT NOT NULL,
            topic TEXT NOT NULL,
            store TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
            updated_at TEXT NOT NULL,
            PRIMARY KEY (realm, entity, topic, store)
        ) WITHOUT ROWID;
        CREATE INDEX memories_ledger ON memories(realm, created_at)
            WHERE json_extract(metadata, '$.ledger.store') IS NOT NULL;
        """,
    )


def _m014_holds(con: sqlite3.Connection) -> None:
    """Legal holds: one row per held memory of a realm (``hold`` places it, ``release``
    removes it; each is an event too), and ``memories_learned``, a scope's memories in
    the order the store learned them, which a retention sweep reads."""
    run_script(
        con,
        """
        CREATE TABLE holds (
            realm TEXT NOT NULL REFERENCES realms(name),
            target TEXT NOT NULL,
            reason TEXT NOT NULL,
            held_by TEXT NOT NULL,
            held_at TEXT NOT NULL,
            event_id TEXT NOT NULL,
            PRIMARY KEY (realm, target)
        ) WITHOUT ROWID;
        CREATE INDEX memories_learned ON memories(realm, scope, created_at, id);
        """,
    )


def _m015_event_signatures(con: sqlite3.Connection) -> None:
    """The signing key's signature of each event appended while a key was configured
    (``retain.signing``): by ``seq``, append-only like the events they sign."""
    run_script(
        con,
        """
        CREATE TABLE event_signatures (
            seq INTEGER PRIMARY KEY,
            key_id TEXT NOT NULL,
            signature TEXT NOT NULL
        );
        CREATE TRIGGER event_signatures_append_only_update BEFORE UPDATE ON event_signatures
        BEGIN
            SELECT RAISE(ABORT, 'event signatures are append-only');
        END;
        CREATE TRIGGER event_signatures_append_only_delete BEFORE DELETE ON event_signatures
        BEGIN
            SELECT RAISE(ABORT, 'event signatures are append-only');
        END;
        """,
    )


def _m016_relations(con: sqlite3.Connection) -> None:
    """The relation graph (``retain.graph``): one row per (realm, source, target, type),
    a symmetric pair once with the lower id first, and a curator's decision on it; each
    change is an event too. Read by either end."""
    run_script(
        con,
        """
        CREATE TABLE relations (
            realm TEXT NOT NULL REFERENCES realms(name),
            id TEXT NOT NULL PRIMARY KEY,
            source TEXT NOT NULL,
            target TEXT NOT NULL,
            type TEXT NOT NULL,
            score REAL,
            reason TEXT NOT NULL DEFAULT '',
            principal TEXT NOT NULL,
            created_at TEXT NOT NULL,
            decision TEXT,
            decided_by TEXT,
            decided_at TEXT,
            UNIQUE (realm, source, target, type)
        );
        CREATE INDEX relations_target ON relations(realm, target);
        """,
    )


def _m017_mirror_links(con: sqlite3.Connection) -> None:
    """What each write-through mirror holds of each memory (``retain.mirrors``): its id
    there and where the store stands with it (pending, mirrored, failed, removing,
    removed, remove_failed), with the last error. Custody data: an erasure reaches the
    mirror by it."""
    run_script(
        con,
        """
        CREATE TABLE mirror_links (
            realm TEXT NOT NULL REFERENCES realms(name),
            memory_id TEXT NOT NULL,
            mirror TEXT NOT NULL,
            state TEXT NOT NULL,
            external_id TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT NOT NULL DEFAULT '',
            updated_at TEXT NOT NULL,
            PRIMARY KEY (realm, memory_id, mirror)
        );
        CREATE INDEX mirror_links_state ON mirror_links(realm, state, updated_at);
        """,
    )


def _m018_recent(con: sqlite3.Connection) -> None:
    """The console's listing, newest-updated first a keyset page at a time."""
    run_script(con, "CREATE INDEX memories_recent ON memories(realm, updated_at, id);")


def _m019_description_words(con: sqlite3.Connection) -> None:
    """Nothing here: PostgreSQL's 19th indexes its descriptions' words alone, which the
    full-text index here already does (a query names its column). Numbered alike, so a
    version means the same schema on either backend."""


def _m020_trust(con: sqlite3.Connection) -> None:
    """A search kept to trusted memories (``min_trust``) finds the few rows at those
    tiers through it, as a small tier's through its scope (``SqliteTransaction.passing``)."""
    run_script(con, "CREATE INDEX memories_trust ON memories(realm, trust);")


def _m021_expiry(con: sqlite3.Connection) -> None:
    """The expired (``--expired``) and the memories not verified for a while
    (``--unverified``) are found through these, as the trusts are through
    ``memories_trust``; only memories with an expiry are in the first."""
    run_script(
        con,
        """
        CREATE INDEX memories_expiry ON memories(realm, expires_at) WHERE expires_at IS NOT NULL;
        CREATE INDEX memories_verified ON memories(realm, verified_at);
        """,
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "foundation", _m001_foundation),
    Migration(2, "retrieval", _m002_retrieval),
    Migration(3, "identities", _m003_identities),
    Migration(4, "context", _m004_context),
    Migration(5, "successors", _m005_successors),
    Migration(6, "ordered times", _m006_ordered_times),
    Migration(7, "changed by", _m007_changed_by),
    Migration(8, "quarantine", _m008_quarantine),
    Migration(9, "sessions", _m009_sessions),
    Migration(10, "tickets", _m010_tickets),
    Migration(11, "grants", _m011_grants),
    Migration(12, "quarantine queue", _m012_quarantine_queue),
    Migration(13, "conflicts", _m013_conflicts),
    Migration(14, "holds", _m014_holds),
    Migration(15, "event signatures", _m015_event_signatures),
    Migration(16, "relations", _m016_relations),
    Migration(17, "mirror links", _m017_mirror_links),
    Migration(18, "recent", _m018_recent),
    Migration(19, "description words", _m019_description_words),
    Migration(20, "trust", _m020_trust),
    Migration(21, "expiry", _m021_expiry),
)


def latest_version() -> int:
    return MIGRATIONS[-1].version
