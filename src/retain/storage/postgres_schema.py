"""The PostgreSQL schema as an append-only list of migrations.

The same tables as the SQLite schema (``sqlite_schema.py``) where the engines agree,
PostgreSQL's own where they differ: tags, references and metadata are ``jsonb``; the
full-text index is a generated, weighted ``tsvector`` (A name, B description, C body,
D the derived context) under a GIN index; the event log's append-only rule is a
trigger function. Timestamps stay in retain's stored text form, which sorts as time.

Migrations run on open under an advisory lock, all pending ones in one transaction
with the rows that record them. Never edit a migration that has shipped; add the next
one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


_INITIAL = """
CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
-- English stemming without the stop-word list: like SQLite's index, every word is
-- kept, so a query of common words alone still finds the rows holding them.
CREATE TEXT SEARCH DICTIONARY retain_stem (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION retain_english (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION retain_english
    ALTER MAPPING REPLACE english_stem WITH retain_stem;
CREATE TABLE realms (
    name TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
CREATE TABLE projects (
    realm TEXT NOT NULL REFERENCES realms(name),
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (realm, name)
);
CREATE TABLE memories (
    num BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    realm TEXT NOT NULL REFERENCES realms(name),
    scope TEXT NOT NULL,
    name TEXT,
    description TEXT NOT NULL,
    body TEXT NOT NULL,
    body_bytes INTEGER NOT NULL,
    tags JSONB NOT NULL DEFAULT '[]',
    priority INTEGER NOT NULL,
    load TEXT NOT NULL CHECK (load IN ('inline', 'index', 'search')),
    refs JSONB NOT NULL DEFAULT '[]',
    source TEXT NOT NULL DEFAULT '',
    subject TEXT,
    predicate TEXT,
    trust TEXT NOT NULL CHECK (trust IN ('claimed', 'observed', 'attested', 'verified')),
    status TEXT NOT NULL CHECK (status IN
        ('active', 'quarantined', 'superseded', 'retracted', 'discarded', 'forgotten')),
    ever_quarantined BOOLEAN NOT NULL DEFAULT FALSE,
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
    metadata JSONB NOT NULL DEFAULT '{}',
    thread TEXT,
    context TEXT NOT NULL DEFAULT '',
    fts TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('retain_english', coalesce(name, '')), 'A')
        || setweight(to_tsvector('retain_english', description), 'B')
        || setweight(to_tsvector('retain_english', body), 'C')
        || setweight(to_tsvector('retain_english', context), 'D')
    ) STORED
);
CREATE UNIQUE INDEX memories_name ON memories(realm, name, scope) WHERE name IS NOT NULL;
CREATE INDEX memories_index_order ON memories(realm, priority, created_at DESC);
CREATE INDEX memories_load
    ON memories(load, realm, status, priority, created_at DESC, scope, expires_at);
CREATE INDEX memories_thread ON memories(realm, scope, thread, num) WHERE thread IS NOT NULL;
CREATE INDEX memories_subject ON memories(realm, lower(subject)) WHERE subject IS NOT NULL;
CREATE INDEX memories_tags ON memories USING GIN (tags);
CREATE INDEX memories_refs ON memories USING GIN (refs);
CREATE INDEX memories_fts ON memories USING GIN (fts);

-- Vectors in pgvector's type, of any size: each model's get an HNSW index of their own
-- size when the first is written (PostgresTransaction.set_keys). ``vector_sums`` keeps
-- each realm's sum and count by model, which the semantic gate's mean needs.
CREATE TABLE memory_vectors (
    vec BIGSERIAL PRIMARY KEY,
    memory_num BIGINT NOT NULL UNIQUE REFERENCES memories(num) ON DELETE CASCADE,
    realm TEXT NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    embedding vector NOT NULL
);
CREATE INDEX memory_vectors_model ON memory_vectors(model, vec);
CREATE TABLE vector_sums (
    realm TEXT NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    total vector NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (realm, model, dim)
);
-- Once per statement, from its transition table: a batch updates each sum once (a row
-- trigger would rewrite, and bloat, the sum's row for every vector).
CREATE FUNCTION retain_vector_sums_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vector_sums(realm, model, dim, total, n)
        SELECT realm, model, dim, sum(embedding), count(*) FROM changed
        GROUP BY realm, model, dim
        ON CONFLICT (realm, model, dim) DO UPDATE
        SET total = vector_sums.total + excluded.total, n = vector_sums.n + excluded.n;
    RETURN NULL;
END;
$$;
CREATE FUNCTION retain_vector_sums_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE vector_sums s SET total = s.total - g.total, n = s.n - g.n
        FROM (SELECT realm, model, dim, sum(embedding) AS total, count(*) AS n FROM changed
              GROUP BY realm, model, dim) g
        WHERE s.realm = g.realm AND s.model = g.model AND s.dim = g.dim;
    RETURN NULL;
END;
$$;
CREATE TRIGGER memory_vectors_sums_add AFTER INSERT ON memory_vectors
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION retain_vector_sums_add();
CREATE TRIGGER memory_vectors_sums_remove AFTER DELETE ON memory_vectors
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION retain_vector_sums_remove();

CREATE TABLE agents (
    realm TEXT NOT NULL REFERENCES realms(name),
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (realm, name)
);
CREATE TABLE teams (
    realm TEXT NOT NULL REFERENCES realms(name),
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (realm, name)
);
CREATE TABLE team_members (
    realm TEXT NOT NULL,
    team TEXT NOT NULL,
    agent TEXT NOT NULL,
    joined_at TEXT NOT NULL,
    PRIMARY KEY (realm, team, agent),
    FOREIGN KEY (realm, team) REFERENCES teams(realm, name),
    FOREIGN KEY (realm, agent) REFERENCES agents(realm, name)
);
CREATE TABLE proposals (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
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

CREATE TABLE injections (
    seq BIGSERIAL PRIMARY KEY,
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
);
CREATE TABLE legacy_imports (
    realm TEXT NOT NULL REFERENCES realms(name),
    identity TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    PRIMARY KEY (realm, identity, sha256)
);

-- The event log: append-only and hash-chained. Only the payload may ever be blanked
-- (erasure keeps its digest in the chain). Writers hold one advisory lock, so ``seq``
-- (set by the service, the chain head's plus one) stays a single line.
CREATE TABLE events (
    seq BIGINT PRIMARY KEY,
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
CREATE FUNCTION retain_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        RAISE EXCEPTION 'events are append-only';
    END IF;
    IF (NEW.seq, NEW.event_id, NEW.realm, NEW.memory_id, NEW.kind, NEW.tx_time,
        NEW.principal, NEW.reason, NEW.payload_digest, NEW.prev_hash, NEW.hash)
        IS DISTINCT FROM
       (OLD.seq, OLD.event_id, OLD.realm, OLD.memory_id, OLD.kind, OLD.tx_time,
        OLD.principal, OLD.reason, OLD.payload_digest, OLD.prev_hash, OLD.hash) THEN
        RAISE EXCEPTION 'events are append-only';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION retain_events_append_only();
CREATE TRIGGER events_not_truncated BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION retain_events_append_only();
"""

# Vectors are stored after the write that made them commits, outside the store's write
# lock (``PostgresBackend``): pgvector's HNSW insert is most of a write's server time and
# takes concurrent inserts. Each write's vectors carry a version taken under the lock, so
# that when two writes of one memory store their vectors out of order the later write's
# vector stays; a replaced vector is an UPDATE, whose old and new sums the third trigger
# moves.
_DEFERRED_VECTORS = """
CREATE SEQUENCE vector_versions;
ALTER TABLE memory_vectors ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
CREATE FUNCTION retain_vector_sums_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE vector_sums s SET total = s.total - g.total, n = s.n - g.n
        FROM (SELECT realm, model, dim, sum(embedding) AS total, count(*) AS n FROM old_rows
              GROUP BY realm, model, dim) g
        WHERE s.realm = g.realm AND s.model = g.model AND s.dim = g.dim;
    INSERT INTO vector_sums(realm, model, dim, total, n)
        SELECT realm, model, dim, sum(embedding), count(*) FROM new_rows
        GROUP BY realm, model, dim
        ON CONFLICT (realm, model, dim) DO UPDATE
        SET total = vector_sums.total + excluded.total, n = vector_sums.n + excluded.n;
    RETURN NULL;
END;
$$;
CREATE TRIGGER memory_vectors_sums_move AFTER UPDATE ON memory_vectors
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retain_vector_sums_move();
"""

# The vectors a write left to store after its commit, recorded in the write's own
# transaction and cleared by the one that stores them: a row that stays is a writer that
# died (its connection, ``pid``, is gone) or failed between the two (``since`` is old),
# and the next write makes those vectors again (``MemoryService._heal``).
_PENDING_VECTORS = """
CREATE TABLE vectors_pending (
    memory_num BIGINT PRIMARY KEY REFERENCES memories(num) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    pid INTEGER NOT NULL DEFAULT pg_backend_pid(),
    since TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
"""

# What superseded a memory is read by its id in ``supersedes``.
_SUCCESSORS = """
CREATE INDEX memories_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL;
"""

# The event from which the log's transaction times do not run backwards. Writers before
# this version read the time before they held the write lock, so a store they wrote may
# hold events stamped before their predecessor; those stay as written (the chain covers
# their times). The rule holds from the next event on, and in a new store from its first.
_ORDERED_TIMES = """
CREATE TABLE event_rules (
    rule TEXT PRIMARY KEY,
    from_seq BIGINT NOT NULL
);
INSERT INTO event_rules(rule, from_seq)
    SELECT 'tx_time_ordered', coalesce(max(seq), 0) + 1 FROM events;
"""

# The plain-text scan (``scan_rows``) tests each row's text lowered: lowering every row
# the filters keep, at each search, was most of a scan's cost (50 of 60 ms at 10,000
# memories), so a row's lowered text is stored with it. Rows up to a page stay
# uncompressed (``toast_tuple_target``), so the added column does not make the word
# index's documents compressed, which every ranking would then decompress.
_SCAN_TEXT = """
ALTER TABLE memories SET (toast_tuple_target = 8160);
ALTER TABLE memories ADD COLUMN lowered TEXT GENERATED ALWAYS AS (
    lower(coalesce(name, '') || chr(10) || description || chr(10) || body)
) STORED;
"""

# Who last changed a memory, once someone has (the author stays who wrote it).
_CHANGED_BY = """
ALTER TABLE memories ADD COLUMN changed_by TEXT;
"""

# What a quarantined write keeps: why it was quarantined, the session it came from, and,
# on a row made from another (a review's release, a ticket's landing), that one. A
# quarantined or discarded row holds no name: a write waiting for review does not take a
# name from the memory it would replace, and a release takes it over.
_QUARANTINE = """
ALTER TABLE memories ADD COLUMN derived_from TEXT;
ALTER TABLE memories ADD COLUMN quarantine_reason TEXT;
ALTER TABLE memories ADD COLUMN session TEXT;
CREATE INDEX memories_derived_from ON memories(derived_from) WHERE derived_from IS NOT NULL;
DROP INDEX memories_name;
CREATE UNIQUE INDEX memories_name ON memories(realm, name, scope)
    WHERE name IS NOT NULL AND status NOT IN ('quarantined', 'discarded');
"""

# The durable sessions of agent contexts, each with its taint: whether it ingested
# untrusted content since its last fresh-context boundary, when, and why (``cause``,
# JSON text, as SQLite keeps it). Apart from ``context_sessions`` (what a render showed).
_SESSIONS = """
CREATE TABLE sessions (
    realm TEXT NOT NULL,
    identity TEXT NOT NULL,
    key TEXT NOT NULL,
    tainted BOOLEAN NOT NULL DEFAULT false,
    tainted_at TEXT,
    cause TEXT,
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (realm, identity, key)
);
CREATE INDEX sessions_latest ON sessions(realm, identity, updated_at);
"""

# What deciding a proposal (a ticket) needs: the record it promotes, whether its
# proposer's session was tainted, its expiry, the approvals given (JSON text, as the
# SQLite store keeps them), who decided it when and why, and the memory it landed. A
# review finds the pending promotions waiting on a record by ``proposals_record``.
_TICKETS = """
ALTER TABLE proposals ADD COLUMN record TEXT;
ALTER TABLE proposals ADD COLUMN tainted BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE proposals ADD COLUMN expires_at TEXT;
ALTER TABLE proposals ADD COLUMN approvals TEXT NOT NULL DEFAULT '[]';
ALTER TABLE proposals ADD COLUMN decided_by TEXT;
ALTER TABLE proposals ADD COLUMN decided_at TEXT;
ALTER TABLE proposals ADD COLUMN decision_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE proposals ADD COLUMN landed TEXT;
CREATE INDEX proposals_record ON proposals(realm, record, status) WHERE record IS NOT NULL;
"""

# The access grants kept by the ``grant`` and ``revoke`` verbs (config.toml's are read
# from the file): who may, or may not, do what on which part of a realm.
_GRANTS = """
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
);
"""

# The quarantine queue read in its order: a realm's quarantined rows by creation, then
# id (``quarantined``), from an index that holds only those rows.
_QUARANTINE_QUEUE = """
CREATE INDEX memories_quarantined ON memories(realm, created_at, id)
    WHERE status = 'quarantined';
"""

# The assertion ledger's conflict signals: one per (realm, entity, topic, store), active
# until cleared, with its reason and when it last changed (each change is an event). The
# ledger's assertions are facts in ``memories``.
_CONFLICTS = """
CREATE TABLE conflicts (
    realm TEXT NOT NULL REFERENCES realms(name),
    entity TEXT NOT NULL,
    topic TEXT NOT NULL,
    store TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    active BOOLEAN NOT NULL DEFAULT true,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (realm, entity, topic, store)
);
CREATE INDEX memories_ledger ON memories(realm, created_at)
    WHERE (metadata #>> '{ledger,store}') IS NOT NULL;
"""

# Legal holds: one row per held memory of a realm (``hold`` places it, ``release``
# removes it; each is an event too), and ``memories_learned``, a scope's memories in the
# order the store learned them, which a retention sweep reads.
_HOLDS = """
CREATE TABLE holds (
    realm TEXT NOT NULL REFERENCES realms(name),
    target TEXT NOT NULL,
    reason TEXT NOT NULL,
    held_by TEXT NOT NULL,
    held_at TEXT NOT NULL,
    event_id TEXT NOT NULL,
    PRIMARY KEY (realm, target)
);
CREATE INDEX memories_learned ON memories(realm, scope, created_at, id);
"""

# The signing key's signature of each event appended while a key was configured
# (``retain.signing``): by ``seq``, append-only like the events they sign.
_EVENT_SIGNATURES = """
CREATE TABLE event_signatures (
    seq BIGINT PRIMARY KEY,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL
);
CREATE FUNCTION retain_event_signatures_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'event signatures are append-only';
END;
$$;
CREATE TRIGGER event_signatures_append_only BEFORE UPDATE OR DELETE ON event_signatures
    FOR EACH ROW EXECUTE FUNCTION retain_event_signatures_append_only();
CREATE TRIGGER event_signatures_not_truncated BEFORE TRUNCATE ON event_signatures
    FOR EACH STATEMENT EXECUTE FUNCTION retain_event_signatures_append_only();
"""

# The relation graph (``retain.graph``): one row per (realm, source, target, type), a
# symmetric pair once with the lower id first, and a curator's decision on it; each change
# is an event too. Read by either end.
_RELATIONS = """
CREATE TABLE relations (
    realm TEXT NOT NULL REFERENCES realms(name),
    id TEXT NOT NULL PRIMARY KEY,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    type TEXT NOT NULL,
    score DOUBLE PRECISION,
    reason TEXT NOT NULL DEFAULT '',
    principal TEXT NOT NULL,
    created_at TEXT NOT NULL,
    decision TEXT,
    decided_by TEXT,
    decided_at TEXT,
    UNIQUE (realm, source, target, type)
);
CREATE INDEX relations_target ON relations(realm, target);
"""

# What each write-through mirror holds of each memory (``retain.mirrors``): its id there
# and where the store stands with it, with the last error. An erasure reaches it by it.
_MIRROR_LINKS = """
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
"""

# The console's listing, newest-updated first a keyset page at a time.
_RECENT = "CREATE INDEX memories_recent ON memories(realm, updated_at, id);"

# The near-copy note's lookups (``PostgresWords.lookup_descriptions``): the words of each
# description alone. Without GIN's pending list (``fastupdate``), which every lookup reads
# whole until it is merged: a batch's lookups took 0.5–0.8 s behind a few thousand writes,
# 20–170 ms without one. A description's few words cost its write little.
_DESCRIPTION_WORDS = (
    "CREATE INDEX memories_description_words ON memories "
    "USING GIN (to_tsvector('retain_english', description)) WITH (fastupdate = off);"
)

# A search kept to trusted memories (``min_trust``): the planner can find the few rows at
# those tiers through it rather than walk the vector index past the rest.
_TRUST = "CREATE INDEX memories_trust ON memories(realm, trust);"

# The expired (``--expired``) and the memories not verified for a while (``--unverified``),
# found as the trusts are; only memories with an expiry are in the first.
_EXPIRY = """
CREATE INDEX memories_expiry ON memories(realm, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX memories_verified ON memories(realm, verified_at);
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", _INITIAL),
    Migration(2, "deferred vectors", _DEFERRED_VECTORS),
    Migration(3, "pending vectors", _PENDING_VECTORS),
    Migration(4, "successors", _SUCCESSORS),
    Migration(5, "ordered times", _ORDERED_TIMES),
    Migration(6, "changed by", _CHANGED_BY),
    Migration(7, "scan text", _SCAN_TEXT),
    Migration(8, "quarantine", _QUARANTINE),
    Migration(9, "sessions", _SESSIONS),
    Migration(10, "tickets", _TICKETS),
    Migration(11, "grants", _GRANTS),
    Migration(12, "quarantine queue", _QUARANTINE_QUEUE),
    Migration(13, "conflicts", _CONFLICTS),
    Migration(14, "holds", _HOLDS),
    Migration(15, "event signatures", _EVENT_SIGNATURES),
    Migration(16, "relations", _RELATIONS),
    Migration(17, "mirror links", _MIRROR_LINKS),
    Migration(18, "recent", _RECENT),
    Migration(19, "description words", _DESCRIPTION_WORDS),
    Migration(20, "trust", _TRUST),
    Migration(21, "expiry", _EXPIRY),
)


def latest_version() -> int:
    return MIGRATIONS[-1].version
