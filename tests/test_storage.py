"""The store itself: files, schema, transactions, the log, verify."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import (
    LEXICAL,
    AxisEmbedder,
    embedded_service,
    failed_verify,
    fresh_schema,
    open_backend,
    raw_sql,
    store_state,
)

import retain
from retain import errors, ledger
from retain.chrono import TICK, ManualClock, stamp
from retain.config import Settings
from retain.errors import StoreError
from retain.model import Load, Trust
from retain.results import Restore, WriteRequest
from retain.search import rank
from retain.search.embed import EmbedderSettings
from retain.service import MemoryService
from retain.service.work import Work
from retain.storage import postgres_schema as pg_schema
from retain.storage.postgres import PostgresBackend
from retain.storage.sqlite import SqliteBackend
from retain.storage.sqlite_schema import MIGRATIONS, latest_version

NOW = datetime(2026, 1, 1, tzinfo=UTC)  # when a restored write was made
YEAR_BEFORE = NOW - timedelta(days=365)  # when a long unverified one was


def _raw(service: MemoryService) -> sqlite3.Connection:
    return sqlite3.connect(service.backend.location, isolation_level=None)


@pytest.fixture
def sqlite_service(tmp_path: Path) -> Iterator[MemoryService]:
    """A service on SQLite, for what only SQLite's own mechanics show (locks, pages)."""
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), clock=ManualClock())
    yield service
    service.close()


def test_store_is_private_wal_with_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "home" / "retain.db"
    backend = SqliteBackend(path)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    con = backend._con
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    backend.close()


def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "retain.db"
    SqliteBackend(path).close()
    SqliteBackend(path).close()
    rows = sqlite3.connect(path).execute("SELECT version, name FROM schema_migrations").fetchall()
    assert rows == [(m.version, m.name) for m in MIGRATIONS]
    assert [m.version for m in MIGRATIONS] == list(range(1, latest_version() + 1))  # no gap
    assert [m.version for m in pg_schema.MIGRATIONS] == [m.version for m in MIGRATIONS]


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_an_older_stores_schema_upgrade_reports_each_migration_a_new_or_current_one_none(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    from retain.storage import postgres, postgres_schema, sqlite, sqlite_schema

    module, schema = (sqlite, sqlite_schema) if engine == "sqlite" else (postgres, postgres_schema)
    where = (
        str(tmp_path / "retain.db")
        if engine == "sqlite"
        else fresh_schema(request.getfixturevalue("postgres_url"))
    )
    heard: list[list[tuple[str, int, int]]] = []

    def opened() -> None:
        reports: list[tuple[str, int, int]] = []
        retain.open_backend(where, progress=lambda *r: reports.append(r)).close()
        heard.append(reports)

    older = tuple(m for m in schema.MIGRATIONS if m.version < 20)
    with monkeypatch.context() as patched:
        patched.setattr(module, "MIGRATIONS", older)
        opened()  # a new store, made at version 19
    opened()  # the older store, upgraded
    opened()  # a current one
    ahead = latest_version() - 19
    assert heard == [[], [("schema", done, ahead) for done in range(ahead + 1)], []]


def test_what_superseded_a_memory_is_found_by_index_not_by_a_scan(tmp_path: Path) -> None:
    path = tmp_path / "retain.db"
    SqliteBackend(path).close()
    plan = sqlite3.connect(path).execute(
        "EXPLAIN QUERY PLAN SELECT supersedes, id, status FROM memories WHERE supersedes IN (?)",
        ("01ABC",),
    )
    assert any("memories_supersedes" in row[-1] for row in plan.fetchall())


def test_the_memories_a_common_words_query_names_are_found_by_the_name_index(
    tmp_path: Path,
) -> None:
    """Not by a scan of the scope (``memories_learned``, which SQLite picks without
    statistics): 1.4 s a search at a million memories."""
    from retain.storage.base import MemoryFilter
    from retain.storage.sqlite_fts import FtsSearch
    from retain.storage.sqlite_transaction import SqliteTransaction

    path = tmp_path / "retain.db"
    SqliteBackend(path).close()
    con = sqlite3.connect(path)
    statements: list[str] = []
    con.set_trace_callback(statements.append)
    clause, args = SqliteTransaction(con, set())._filter_sql(
        MemoryFilter("default", scopes=("global",))
    )
    FtsSearch(con, set())._newest(
        [(9, '"deploy"', "deploy")], ["deploy"], clause, args, 10, passing=None
    )
    con.set_trace_callback(None)
    (named,) = [s for s in statements if "m.name IN" in s]
    plan = [row[-1] for row in con.execute(f"EXPLAIN QUERY PLAN {named}")]
    assert any("memories_name" in step for step in plan), plan


def _ways(service: MemoryService) -> list[str]:
    """How ``_newest_passing`` looked for a filter's rows, a statement each (traced):
    ``"scan"``, a range of the matches; ``"test"``, each row tested."""
    ways: list[str] = []

    def traced(statement: str) -> None:
        if "rowid >= " in statement:
            ways.append("scan")
        elif "EXISTS (SELECT 1 FROM memories_fts" in statement:
            ways.append("test")

    con = service.backend._con  # type: ignore[attr-defined]
    con.set_trace_callback(traced)
    return ways


def _bounds_asked(monkeypatch: pytest.MonkeyPatch, method: str) -> list[int]:
    """The ``below`` of each call of ``SqliteTransaction``'s ``method`` (``passing``, or
    ``_passing``, the read behind it), in order, from now on."""
    from retain.storage.sqlite_transaction import SqliteTransaction

    asked: list[int] = []
    called = getattr(SqliteTransaction, method)

    def recorded(self: SqliteTransaction, where: Any, below: int) -> dict[int, str] | None:
        asked.append(below)
        return called(self, where, below)  # type: ignore[no-any-return]

    monkeypatch.setattr(SqliteTransaction, method, recorded)
    return asked


@pytest.mark.parametrize(("spread", "way"), [(1, "test"), (10_000, "scan")])
def test_a_small_tier_is_searched_for_common_words_from_its_own_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spread: int, way: str
) -> None:
    """When the newest matches of a common word hold too few of a tier's rows, its rows
    are looked for from their side: the matches read in the ranges its rows span (where
    the store holds no more than ``SPREAD`` rows for each of them), or each row tested
    against the words: the same rows, newest first."""
    from retain.storage import sqlite_fts
    from retain.storage.base import MemoryFilter

    monkeypatch.setattr(sqlite_fts, "COMMON", 50)  # a word in 50 rows is common
    monkeypatch.setattr(sqlite_fts, "WINDOW", 10)  # the newest 10 matches looked at first
    monkeypatch.setattr(sqlite_fts, "SPREAD", spread)
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.add_project("b")
    service.write("b-old", description="we deploy on fridays", project="b")
    service.write("b-other", description="nothing to see", project="b")
    service.write("b-new", description="deploy the docs first", project="b")
    service.write_many([WriteRequest(f"g{i}", description=f"deploy step {i}") for i in range(100)])
    ways = _ways(service)
    hits = service.search("deploy", project="b", tier="project").hits
    assert [h.memory.name for h in hits] == ["b-new", "b-old"]
    assert ways == [way]  # 103 rows, 3 of the tier: 34 each, more than 1, fewer than 10,000
    # No row of the tier holds both words, so any of them: its rows are listed once.
    listed = _bounds_asked(monkeypatch, "passing")
    ways.clear()
    tier = MemoryFilter("default", scopes=("project:b",))
    both = service.backend.read(
        lambda tx: tx.match_terms(tier, ["deploy", "step"], prefix=False, limit=10)
    )
    assert {h.memory_id for h in both} == {h.memory.id for h in hits}
    assert listed == [sqlite_fts.NARROW] and ways == [way] * 2  # all, then any
    service.close()


def test_a_tiers_rows_found_by_ranges_of_the_matches_are_those_each_rows_test_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The matches read range by range (the first of ``cap`` rows, the next of twice as
    many, ...) give the newest ``cap`` rows of a tier that hold the words, as testing
    each row does: whether the tier's matching rows are its newest, its oldest or
    spread, and whether a range holds more of them than are still wanted."""
    import random

    from retain.storage import sqlite_fts
    from retain.storage.base import MemoryFilter

    rng = random.Random(7)
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.add_project("b")
    words = ["alpha", "beta", "gamma"]
    requests = []
    for i in range(300):
        held = " ".join(w for w in words if rng.random() < (0.9 if i > 250 else 0.15))
        project = "b" if i % 3 == 0 else None
        requests.append(WriteRequest(f"r{i}", description=f"row {i} {held}", project=project))
    service.write_many(requests)
    tier = MemoryFilter("default", scopes=("project:b",))

    def found(expression: str, cap: int) -> list[str]:
        def run(tx: Any) -> list[str]:
            nums = sorted(tx.passing(tier, sqlite_fts.NARROW), reverse=True)
            return [r[0] for r in tx.fts._newest_passing("m.id", expression, nums, cap)]

        return service.backend.read(run)

    ways = _ways(service)
    for expression in ["alpha", "alpha AND beta", "alpha AND beta AND gamma", "beta OR gamma"]:
        for cap in (1, 3, 7, 40, 200):
            monkeypatch.setattr(sqlite_fts, "SPREAD", 10_000)
            scanned = found(expression, cap)
            monkeypatch.setattr(sqlite_fts, "SPREAD", 1)
            tested = found(expression, cap)
            assert scanned == tested, (expression, cap)
            assert 0 < len(tested) <= cap
    assert "scan" in ways and "test" in ways
    service.close()


def test_a_read_transaction_reads_a_small_filters_rows_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search's senses each ask for a small filter's rows (the stem, then the prefix
    retry, and so on): a read transaction reads them once, its snapshot unchanged; a
    write transaction each time, since its own writes may change them."""
    from retain.storage import sqlite_fts
    from retain.storage.base import MemoryFilter

    monkeypatch.setattr(sqlite_fts, "COMMON", 50)  # a word in 50 rows is common
    monkeypatch.setattr(sqlite_fts, "WINDOW", 10)  # the newest 10 matches looked at first
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.add_project("b")
    service.write("b-old", description="we deploy on fridays", project="b")
    service.write("b-new", description="deploy the docs first", project="b")
    service.write_many([WriteRequest(f"g{i}", description=f"deploy step {i}") for i in range(100)])
    reads = _bounds_asked(monkeypatch, "_passing")
    tier = MemoryFilter("default", scopes=("project:b",))

    def thrice(tx: Any) -> list[Any]:
        return [tx.passing(tier, 10), tx.passing(tier, 10), tx.passing(tier, 20)]

    first, again, wider = service.backend.read(thrice)
    assert first == again == wider and len(first) == 2 and reads == [10, 20]
    reads.clear()
    assert service.backend.write(thrice) == [first, first, first] and reads == [10, 10, 20]
    reads.clear()
    # the stem finds two of the ten asked, so the prefix retry asks for the rows again
    hits = service.search("deploy", project="b", tier="project").hits
    assert [h.memory.name for h in hits] == ["b-new", "b-old"]
    assert reads == [sqlite_fts.NARROW]
    service.close()


def test_the_rows_passing_are_given_when_any_way_a_filter_narrows_holds_fewer_than_the_bound(
    tmp_path: Path,
) -> None:
    from retain.storage.base import MemoryFilter
    from retain.storage.sqlite_transaction import SqliteTransaction

    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.add_project("b")
    service.write_many(
        [
            WriteRequest(
                f"b{i}",
                description=f"note {i}",
                project="b",
                tags=["x"] if i % 2 else [],
                references=["https://wiki/x"] if i in (0, 2) else [],
            )
            for i in range(6)
        ]
    )
    service.write_many(
        [
            WriteRequest(f"g{i}", description=f"other {i}", tags=["x"] if i == 0 else [])
            for i in range(4)
        ]
    )
    verified = Restore(NOW, NOW, 0, trust=Trust.VERIFIED)  # the others: attested
    service.retier("b1", "observed", reason="unchecked")
    service.write("v", description="checked", restore=verified, references=["https://wiki/x"])
    service.write("v2", description="checked", restore=verified, tags=["x"])
    service.write("e", description="gone", expires="2020-01-01")
    service.write("e2", description="not yet gone", expires="2999-01-01")
    service.write("s", description="long unchecked", restore=Restore(YEAR_BEFORE, YEAR_BEFORE, 0))
    tier = MemoryFilter("default", scopes=("project:b",), tag="x")  # 6 rows; "x" holds 5
    tagged = MemoryFilter("default", tag="x")  # the realm holds 12
    everyone = MemoryFilter("default")
    trusted = MemoryFilter("default", trusts=("verified",))  # 2 rows
    observed = MemoryFilter("default", tag="x", trusts=("observed", "verified"))  # 3; "x" 5
    cited = MemoryFilter("default", referencing=("https://wiki/x", "b9"))  # 3 rows
    cited_verified = replace(cited, trusts=("verified",))
    expired = MemoryFilter("default", expired_at=stamp(datetime.now(UTC)))  # 1 row; 2 expire
    stale = MemoryFilter("default", verified_before=stamp(NOW))  # 1 row
    asked = [
        (tier, 7), (tier, 6), (tier, 5), (tagged, 6), (tagged, 5), (everyone, 16), (everyone, 15),
        (trusted, 3), (trusted, 2), (observed, 4), (observed, 3),
        (cited, 4), (cited, 3), (cited_verified, 3),
        (expired, 2), (expired, 1), (stale, 2), (stale, 1),
    ]  # fmt: skip

    def run(tx: Any) -> list[dict[int, str] | None]:
        assert isinstance(tx, SqliteTransaction)
        return [tx.passing(where, below) for where, below in asked]

    named = {
        service.get(n).memory.id: n
        for n in [*(f"b{i}" for i in range(6)), *(f"g{i}" for i in range(4)), "v", "v2", "e"]
        + ["e2", "s"]
    }
    got = [None if f is None else {named[i] for i in f.values()} for f in service.backend.read(run)]
    assert got == [
        {"b1", "b3", "b5"},  # the tier's six rows, read
        {"b1", "b3", "b5"},  # the tag's five
        None,  # neither holds fewer than five
        {"b1", "b3", "b5", "g0", "v2"},
        None,
        {f"b{i}" for i in range(6)} | {f"g{i}" for i in range(4)} | {"v", "v2", "e", "e2", "s"},
        None,
        {"v", "v2"},  # the two verified, read through the trust's index
        None,
        {"b1", "v2"},  # the tag's five are too many; the three observed or verified are not
        None,
        {"b0", "b2", "v"},  # the three referencing either, read through their index
        None,
        {"v"},  # the references' three are too many; of the two verified, the one citing
        {"e"},  # the expired, read through the expiry's index (which holds "e2" as well)
        None,
        {"s"},  # the one last verified before NOW
        None,
    ]
    service.close()


def kept_as(kept_by: str) -> dict[str, Any]:
    """A write's options putting it in the project ``b``, the tag ``b``, among those
    referencing ``https://wiki/b``, among the verified (the others are attested), the
    expired or those last verified a year before ``NOW``."""
    return {
        "project": {"project": "b"},
        "tag": {"tags": ["b"]},
        "reference": {"references": ["https://wiki/b"]},
        "trust": {"restore": Restore(NOW, NOW, 0, trust=Trust.VERIFIED)},
        "expiry": {"expires": "2020-01-01"},
        "staleness": {"restore": Restore(YEAR_BEFORE, YEAR_BEFORE, 0)},
    }[kept_by]


KEPT_BY = ["project", "tag", "reference", "trust", "expiry", "staleness"]


@pytest.mark.parametrize("kept_by", KEPT_BY)
def test_a_small_tier_is_ranked_among_a_rarer_words_matches_by_their_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept_by: str
) -> None:
    """When the best matches of the rarer words hold too few of a tier's (or a tag's) rows,
    every match is kept or not by its number among those rows, and the first of those by
    BM25 are taken: the tier's best, though it is its newest row."""
    from retain.storage import sqlite_transaction
    from retain.storage.base import MemoryFilter
    from retain.storage.sqlite_transaction import SqliteTransaction

    asked: list[object] = []
    listed = SqliteTransaction.passing

    def spied(self: SqliteTransaction, where: Any, below: int) -> dict[int, str] | None:
        asked.append(listed(self, where, below))
        return listed(self, where, below)

    monkeypatch.setattr(SqliteTransaction, "passing", spied)
    monkeypatch.setattr(sqlite_transaction, "NARROW", 40)  # fewer than the realm's 81
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.add_project("b")
    kept = kept_as(kept_by)
    tier = [
        WriteRequest(f"b{i}", description=f"note {i}", body="a kestrel hovered", **kept)
        for i in range(20)
    ]
    tier.append(WriteRequest("b-best", description="kestrel kestrel kestrel", **kept))
    service.write_many(tier)
    service.write_many([WriteRequest(f"kestrel-{i}", description="kestrel") for i in range(60)])
    where = {
        "project": MemoryFilter("default", scopes=("project:b",)),
        "tag": MemoryFilter("default", tag="b"),
        "reference": MemoryFilter("default", referencing=("https://wiki/b",)),
        "trust": MemoryFilter("default", trusts=("verified",)),
        "expiry": MemoryFilter("default", expired_at=stamp(datetime.now(UTC))),
        "staleness": MemoryFilter("default", verified_before=stamp(NOW)),
    }[kept_by]

    def run(tx: Any) -> list[str]:  # 4 asked: the 16 best matches first, none the tier's
        hits = tx.match_terms(where, ["kestrel"], prefix=False, limit=4)
        return [h.memory_id for h in hits]

    found = service.backend.read(run)
    assert found[0] == service.get("b-best").memory.id and len(found) == 4
    ids = {service.get(r.name).memory.id for r in tier}
    assert [set(a.values()) if isinstance(a, dict) else a for a in asked] == [ids]
    service.close()


@pytest.mark.parametrize("kept_by", KEPT_BY)
def test_a_listing_of_few_rows_reads_them_through_their_index_in_the_listings_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept_by: str
) -> None:
    from retain import fields
    from retain.storage import sqlite_transaction
    from retain.storage.base import MemoryFilter
    from retain.storage.sqlite_transaction import SqliteTransaction

    monkeypatch.setattr(sqlite_transaction, "LISTED_FEW", 20)  # fewer than the realm's 39
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.add_project("b")
    kept = kept_as(kept_by)
    service.write_many(
        [WriteRequest(f"b{i}", description=f"note {i}", priority=i % 3, **kept) for i in range(9)]
    )
    service.write_many(
        [WriteRequest(f"g{i}", description=f"other {i}", priority=i % 3) for i in range(30)]
    )
    asked: dict[str, Any] = {
        "project": {"project": "b"},
        "tag": {"tag": "b"},
        "reference": {"referencing": "https://wiki/b"},
        "trust": {"min_trust": "verified"},
        "expiry": {"expired": True},
        "staleness": {"unverified": "30d"},
    }[kept_by]
    read: list[list[int] | None] = []  # the rows of each way a listing took
    few = SqliteTransaction._few

    def spied(self: SqliteTransaction, where: Any, below: int) -> tuple[str, list[Any]] | None:
        way = few(self, where, below)
        read.append(None if way is None else [n for (n,) in self.con.execute(
            f"SELECT m.num FROM {way[0]}", way[1])])  # fmt: skip
        return way

    monkeypatch.setattr(SqliteTransaction, "_few", spied)

    def pages() -> list[list[str | None]]:
        first = service.list_memories(limit=4, **asked)
        rest = service.list_memories(after=fields.cursor_of(first[-1]), **asked)
        return [[m.name for m in first], [m.name for m in rest]]

    through_index = pages()
    assert read and all(r is not None and len(set(r)) == len(r) == 9 for r in read)  # each once
    assert read[0] is not None
    two = read[0][:2]
    chosen = ("(SELECT * FROM memories WHERE num IN (?, ?)) AS m", two)
    monkeypatch.setattr(SqliteTransaction, "_few", lambda self, where, below: chosen)
    listed = service.backend.read(lambda tx: tx.con.execute(
        f"SELECT id FROM memories WHERE num IN ({two[0]}, {two[1]})").fetchall())  # fmt: skip
    assert {m.id for m in service.list_memories(**asked)} == {i for (i,) in listed}  # its rows
    every_load = tuple(load.value for load in Load)  # a context's listing: memories_load's walk
    by_load = MemoryFilter("default", scopes=("global", "project:b"), loads=every_load)
    assert len(service.backend.read(lambda tx: tx.list_memories(by_load, 5))) == 5  # not two
    monkeypatch.setattr(sqlite_transaction, "_narrow", lambda where: False)  # the order's walk
    assert through_index == pages()
    assert [len(p) for p in through_index] == [4, 5]
    assert sorted(sum(through_index, [])) == [f"b{i}" for i in range(9)]
    service.close()


def test_a_listing_through_the_records_referenced_lists_a_memory_citing_several_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retain.storage import sqlite_transaction
    from retain.storage.base import MemoryFilter

    monkeypatch.setattr(sqlite_transaction, "LISTED_FEW", 3)  # fewer than the realm's 6
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.write("both", description="cites two", references=["https://a", "https://b"])
    service.write_many([WriteRequest(f"m{i}", description=f"note {i}") for i in range(5)])
    cited = MemoryFilter("default", referencing=("https://a", "https://b"))
    way = service.backend.read(lambda tx: tx._few(cited, tx._listed_few(None)))
    assert way is not None and "memory_refs" in way[0]  # its two rows, not the realm's six
    listed = service.backend.read(lambda tx: tx.list_memories(cited))
    assert [m.name for m in listed] == ["both"]
    service.close()


def test_a_listing_reads_more_rows_through_their_index_as_the_store_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to √(page × rows) of them, or half the rows for a whole listing; never fewer
    than ``LISTED_FEW`` nor more than ``NARROW``."""
    from retain.storage import sqlite_transaction

    monkeypatch.setattr(sqlite_transaction, "LISTED_FEW", 5)
    monkeypatch.setattr(sqlite_transaction, "NARROW", 50)
    service = MemoryService(SqliteBackend(tmp_path / "retain.db"), settings=LEXICAL)
    service.write_many([WriteRequest(f"m{i}", description=f"note {i}") for i in range(39)])
    pages = [-1, 1, 4, 100, None]  # a negative limit (never from a door): the least bound
    bounds = service.backend.read(lambda tx: [tx._listed_few(page) for page in pages])
    assert bounds == [5, 6, 12, 50, 19]  # the least, √39, √156, √3900 (past 50), 39 ÷ 2
    monkeypatch.setattr(sqlite_transaction, "LISTED_FEW", 20)
    assert service.backend.read(lambda tx: tx._listed_few(1)) == 20
    service.close()


def test_the_names_a_batch_writes_are_read_by_the_name_index(tmp_path: Path) -> None:
    from retain.storage.sqlite_transaction import SqliteTransaction

    path = tmp_path / "retain.db"
    SqliteBackend(path).close()
    con = sqlite3.connect(path)
    statements: list[str] = []
    con.set_trace_callback(statements.append)
    SqliteTransaction(con, set()).find_by_names("default", ["a", "b"])
    con.set_trace_callback(None)
    (named,) = [s for s in statements if "name IN" in s]
    plan = [row[-1] for row in con.execute(f"EXPLAIN QUERY PLAN {named}")]
    assert any("memories_name" in step for step in plan), plan


def test_the_quarantine_queue_is_read_in_order_from_its_index(tmp_path: Path) -> None:
    path = tmp_path / "retain.db"
    SqliteBackend(path).close()
    queue = (
        "SELECT id FROM memories WHERE realm = ? AND status = 'quarantined' "
        "AND (created_at, id) > (SELECT created_at, id FROM memories WHERE id = ?) "
        "ORDER BY created_at, id LIMIT ?"
    )
    plan = [
        row[-1]
        for row in sqlite3.connect(path).execute(
            f"EXPLAIN QUERY PLAN {queue}", ("default", "01ABC", 3)
        )
    ]
    assert any("memories_quarantined" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan  # no sort: the index's order


def test_a_store_from_a_newer_retain_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "retain.db"
    SqliteBackend(path).close()
    con = sqlite3.connect(path)
    con.execute("INSERT INTO schema_migrations VALUES (999, 'future', 'now')")
    con.commit()
    con.close()
    with pytest.raises(errors.SchemaTooNew):
        SqliteBackend(path)


def test_every_change_appends_a_chained_event(service: MemoryService) -> None:
    service.add_project("web")
    service.write("a", description="a", body="x")
    service.edit("a", "x", "y")
    service.read("a")
    service.delete("a")
    events = service.backend.read(lambda tx: list(tx.iter_events()))
    assert [e.kind for e in events] == [
        "realm_add", "project_add", "create", "edit", "read", "delete"
    ]  # fmt: skip
    assert all(e.principal == "operator:test" for e in events)
    check = ledger.check_chain(events)
    assert check.ok and check.events == 6 and check.head == events[-1].hash


def test_standings_are_what_ranking_reads_of_a_memory_in_the_order_asked(
    service: MemoryService,
) -> None:
    a = service.write("a", description="é one", body="xyz", priority=2).memory
    b = service.write("b", description="two", subject="Ann").memory
    service.read("a")
    got = service.backend.read(lambda tx: tx.standings([b.id, "missing", a.id]))
    assert [s.id for s in got] == [b.id, a.id]
    ann, first = got
    assert (first.scope, first.priority, first.read_count, first.body_bytes) == ("global", 2, 1, 3)
    assert (first.description, first.verified_at) == ("é one", a.verified_at)
    assert (ann.subject, ann.thread, rank.tokens(ann)) == ("Ann", None, 1)
    whole = service.backend.read(lambda tx: tx.get_many([a.id, "missing", b.id]))
    assert [m.id for m in whole] == [a.id, b.id]


def test_events_cannot_be_updated_or_deleted(service: MemoryService) -> None:
    service.write("a", description="a")
    with pytest.raises(Exception, match="append-only"):
        raw_sql(service, "UPDATE events SET kind = 'forged'")
    with pytest.raises(Exception, match="append-only"):
        raw_sql(service, "DELETE FROM events")
    assert service.verify().ok


def test_verify_detects_a_tampered_payload(service: MemoryService) -> None:
    service.write("a", description="a", body="secret plan")
    assert service.verify().ok
    raw_sql(service, "UPDATE events SET payload = replace(payload, 'secret', 'public')")
    report = failed_verify(service)
    assert not report.ok and not report.chain_ok
    assert "payload does not match" in report.problems[0]


def test_a_blanked_payload_still_verifies(service: MemoryService) -> None:
    service.write("a", description="a", body="to be erased")
    raw_sql(service, "UPDATE events SET payload = NULL")
    assert service.verify().chain_ok


def test_verify_detects_an_index_out_of_step_and_rebuild_mends_it(
    sqlite_service: MemoryService,
) -> None:
    service = sqlite_service  # rows the FTS table misses: the PostgreSQL kind is below
    service.write("a", description="kestrel")
    service.write("b", description="falcon")
    con = _raw(service)
    con.execute("DROP TRIGGER memories_fts_ai")
    con.execute(
        "INSERT INTO memories(id, realm, scope, name, description, body, body_bytes, priority, "
        "load, trust, status, content_hash, author, created_at, updated_at, verified_at) "
        "SELECT 'X', realm, scope, 'c', 'osprey', '', 0, 5, 'index', trust, status, "
        "content_hash, author, created_at, updated_at, verified_at FROM memories LIMIT 1"
    )
    report = failed_verify(service)
    assert not report.ok and report.index_documents == 2 and report.memories == 3
    assert service.search("osprey").hits == ()
    rebuilt = service.verify(rebuild=True)
    assert rebuilt.ok and rebuilt.rebuilt
    assert [h.memory.name for h in service.search("osprey").hits] == ["c"]


def test_postgres_verify_detects_documents_out_of_step_and_rebuild_mends_them(
    postgres_service: MemoryService,
) -> None:
    # A generated tsvector is computed once, on write: when the text search configuration
    # (or its stemmer, in a PostgreSQL upgrade) changes, the stored documents fall behind.
    service = postgres_service
    service.write("1", description="kestrel")  # a word: its document changes below
    service.write("2", description="12345")  # numbers only: its document does not
    holding = "SELECT name FROM memories WHERE fts @@ 'kestrel'::tsquery"
    assert raw_sql(service, holding) == [("1",)]
    raw_sql(service, "ALTER TEXT SEARCH CONFIGURATION retain_english DROP MAPPING FOR asciiword")
    report = failed_verify(service)
    assert not report.ok and report.memories == 2 and report.index_documents == 1
    assert any("1 of 2 memories' documents" in p for p in report.problems)
    rebuilt = service.verify(rebuild=True)
    assert rebuilt.ok and rebuilt.index_documents == 2
    assert raw_sql(service, holding) == []  # computed again, by the configuration as it is


@pytest.mark.parametrize("index", ["memories_fts", "memories_description_words"])
def test_postgres_verify_detects_a_full_text_index_not_valid(
    postgres_service: MemoryService, index: str
) -> None:
    service = postgres_service
    service.write("a", description="kestrel")
    raw_sql(
        service, f"UPDATE pg_index SET indisvalid = false WHERE indexrelid = '{index}'::regclass"
    )
    report = failed_verify(service)
    assert not report.ok and "full-text index is missing or not valid" in report.problems
    assert service.verify(rebuild=True).ok


def test_postgres_description_lookups_read_the_rows_holding_their_words(
    postgres_service: MemoryService,
) -> None:
    # Statistics taken while a store held another project's rows alone: the planner
    # reached the tiers' rows by their (realm, scope) index and tested each against the
    # words' rows, so every lookup of a near-copy note read the whole tier.
    from retain.storage.base import MemoryFilter

    service = postgres_service
    service.add_project("web")
    service.add_project("infra")
    seeds = [WriteRequest(f"s{i}", description=f"seed {i}", project="web") for i in range(20)]
    service.write_many(seeds, notes=False)
    raw_sql(service, "ANALYZE memories")
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    for start in range(0, 2000, 500):
        service.write_many(
            [
                WriteRequest(
                    f"b{i}", description=f"{words[i % 8]} {words[i // 8 % 8]}", project="infra"
                )
                for i in range(start, start + 500)
            ],
            notes=False,
        )
    tiers = MemoryFilter(realm=service.realm, scopes=("global", "project:infra"), tiers_only=True)
    asked = [["alpha", "bravo"], ["charlie", "delta"], ["echo", "golf"]]
    fetched = (
        "SELECT idx_tup_fetch + seq_tup_read FROM pg_stat_xact_user_tables "
        "WHERE relid = 'memories'::regclass"
    )

    def lookups(tx: Any) -> tuple[list[list[str]], int]:
        before = tx._one(fetched)[0]
        found = tx.lookup_descriptions(tiers, asked, limit=3, fewest=2)
        return [[d.id for d in rows] for rows in found], tx._one(fetched)[0] - before

    found, read = service.backend.read(lookups)
    for pair, ids in zip(asked, found, strict=True):
        holding = [i for i in range(2000) if {words[i % 8], words[i // 8 % 8]} == set(pair)]
        assert ids == [service.get(f"b{i}").memory.id for i in holding[::-1][:3]]
    # the words counted (up to 64 rows each) and each pair's rows: 572 (6,572 with the tier's)
    assert read < 2000, read


def test_postgres_counts_no_word_the_statistics_know_as_frequent(
    postgres_url: str, clock: ManualClock
) -> None:
    # GIN cannot stop a count early: counting "tern" to DESCRIPTION_COMMON read every row
    # holding it. Once the store is analyzed, its statistics tell such a word apart.
    import time

    from retain.storage.base import MemoryFilter
    from retain.storage.postgres_words import FREQUENT, FREQUENT_RETRY_S

    url = fresh_schema(postgres_url)
    service = MemoryService(PostgresBackend(url), clock=clock)
    service.write_many(
        [WriteRequest(f"t{i}", description=f"tern sighting {i}") for i in range(FREQUENT * 2)],
        notes=False,
    )
    rare = service.write_many([WriteRequest("rare", description="A tern and a skua")], notes=False)
    everywhere = MemoryFilter(realm=service.realm)
    entries = "SELECT pg_stat_get_xact_tuples_returned('memories_description_words'::regclass)"

    def lookups(tx: Any) -> tuple[list[list[str]], int]:
        before = tx._one(entries)[0]
        found = tx.lookup_descriptions(everywhere, [["tern"], ["tern", "skua"]], limit=2, fewest=1)
        return [[d.id for d in rows] for rows in found], tx._one(entries)[0] - before

    raw_sql(service, "ANALYZE memories")
    try:
        found, read = service.backend.read(lookups)
    finally:
        service.close()
    assert found == [[], [rare[0].memory.id]]  # "tern" alone is common; "skua" is not
    assert read <= 2, read  # the index's entries: "skua" counted, "tern skua" looked up
    # A backend that read the statistics before the store was analyzed counts the word,
    # until it reads them again: soon, as it found none.
    for ago, counts in ((0.0, True), (FREQUENT_RETRY_S + 1, False)):
        unaware = PostgresBackend(url)
        unaware._frequent.read_at = time.monotonic() - ago
        try:
            counted, read = unaware.read(lookups)
        finally:
            unaware.close()
        assert counted == found and (read > FREQUENT) is counts, read  # counted: every "tern" row


def test_a_failed_transaction_leaves_nothing(service: MemoryService) -> None:
    service.write("a", description="a")
    before = store_state(service)

    def half(work: Work) -> None:
        work.event("create", {"x": 1})
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        service._write(half)
    assert store_state(service) == before


def test_a_locked_store_is_retried_then_reported_busy(
    sqlite_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = sqlite_service
    from retain.storage import sqlite as module

    monkeypatch.setattr(module, "_RETRIES", 3)
    con = _raw(service)
    con.execute("PRAGMA busy_timeout = 0")
    con.execute("BEGIN IMMEDIATE")
    service.backend._con.execute("PRAGMA busy_timeout = 0")
    with pytest.raises(errors.StoreBusy):
        service.write("a", description="a")
    con.execute("ROLLBACK")
    assert service.write("a", description="a").created


def test_sqlite_writers_wait_their_turn_rather_than_meet_sqlites_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retain.storage import sqlite as module
    from retain.storage import sqlite_queue

    path = tmp_path / "retain.db"
    first, second = SqliteBackend(path), SqliteBackend(path)
    # A writer that met SQLite's lock would give up at once: no busy handler, no retry.
    monkeypatch.setattr(module, "_BUSY_TIMEOUT_MS", 0)
    monkeypatch.setattr(module, "_RETRIES", 1)
    inside, release, queued = threading.Event(), threading.Event(), threading.Event()
    waited = sqlite_queue.WriterQueue._waited

    def observed(self: sqlite_queue.WriterQueue) -> Any:
        queued.set()  # the second writer found the first one's turn held
        return waited(self)

    monkeypatch.setattr(sqlite_queue.WriterQueue, "_waited", observed)

    def hold(tx: Any) -> None:
        tx.con.execute("CREATE TABLE held (x)")
        inside.set()
        assert release.wait(60)

    found: list[Any] = []

    def count(tx: Any) -> int:
        return int(tx.con.execute("SELECT count(*) FROM held").fetchone()[0])

    holder = threading.Thread(target=first.write, args=(hold,))
    waiter = threading.Thread(target=lambda: found.append(second.write(count)))
    holder.start()
    try:
        assert inside.wait(60)
        waiter.start()
        assert queued.wait(60)
    finally:
        release.set()
        holder.join()
    waiter.join()
    assert found == [0]  # it wrote after the first committed, never meeting its lock
    first.close()
    second.close()


def test_a_writer_kept_waiting_for_its_turn_is_told_the_store_is_busy(
    sqlite_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from retain.storage import sqlite_queue

    service = sqlite_service
    with open(service.backend.location + ".lock", "rb") as other:  # another process's turn
        fcntl.flock(other, fcntl.LOCK_EX)
        monkeypatch.setattr(sqlite_queue, "WAIT_S", 0.01)
        with pytest.raises(errors.StoreBusy, match="stayed locked by another writer"):
            service.write("a", description="a")
        monkeypatch.setattr(sqlite_queue, "WAIT_S", 60.0)
    # let go: the writer that gave up took nothing with it
    assert service.write("a", description="a").created
    assert service.get("a").memory.description == "a"


def test_residue_finds_what_the_files_hold_and_skips_one_gone(
    sqlite_service: MemoryService, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    service = sqlite_service
    backend = service.backend
    assert isinstance(backend, SqliteBackend)
    needle = f"residue-{os.getpid()}-marker"
    service.write("a", description="a", body=f"the body holds {needle}")
    found = backend.residue([needle, "never-stored-anywhere"])
    assert list(found) == [needle] and found[needle]
    # A file gone since it was listed (a segment of the codes replaced by another
    # process, a log deleted on closing) holds nothing; it is no error.
    listed = backend.files()
    monkeypatch.setattr(backend, "files", lambda: [tmp_path / "gone.codes.npy", *listed])
    assert backend.residue([needle]) == found


def test_residue_reads_a_file_a_piece_at_a_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from retain.storage import residue

    path = tmp_path / "file"
    path.write_bytes(b"x" * 20 + "needle é".encode() + b"y" * 20)
    monkeypatch.setattr(residue, "READ_BYTES", 3)  # each text spans several pieces
    assert residue.scan([str(path)], ["needle é", "nowhere", ""]) == {"needle é": ["file"]}
    assert residue.scan([str(tmp_path / "gone")], ["needle é"]) == {}


def test_residue_that_cannot_be_searched_is_a_store_error(
    sqlite_service: MemoryService, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python-here"))
    with pytest.raises(StoreError, match="cannot search .* files for erased text") as caught:
        sqlite_service.backend.residue(["anything"])
    assert caught.value.code == "store_error"


def test_residue_leaves_this_processs_sqlite_locks_held(sqlite_service: MemoryService) -> None:
    import subprocess
    import sys

    service = sqlite_service
    service.write("a", description="a", body="a body still in the log")
    location = service.backend.location
    reader = sqlite3.connect(location, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM memories").fetchone()  # reads from the log
        service.backend.residue(["a body still in the log"])
        # Another process's checkpoint must still find the read under way: had this
        # process closed a file of the store, its POSIX locks on it would be gone, and
        # the log reset under the read.
        checkpoint = (
            "import sqlite3, sys; con = sqlite3.connect(sys.argv[1], timeout=0); "
            "print(con.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchone()[0])"
        )
        done = subprocess.run(
            [sys.executable, "-c", checkpoint, location], capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == "1"  # busy: the reader holds its place in the log
    finally:
        reader.close()


def _writer(url: str, worker: int, count: int) -> None:
    service = MemoryService(open_backend(url), principal=f"app:w{worker}")
    for i in range(count):
        name = f"w{worker}-{i}"
        service.write(name, description=f"note {i} of worker {worker}", body=f"draft {i}")
        service.write(f"shared-{i % 3}", description=f"shared note {i % 3}", body=f"{worker}")
        service.edit(name, old="draft", new="final")
    service.close()


def _claimer(url: str, worker: int, results: Any) -> None:
    """Try to take the global name "leader" while every other process tries too."""
    service = MemoryService(open_backend(url), principal=f"app:c{worker}")
    try:
        service.write("leader", description=f"worker {worker}", create_only=True)
        results.put(worker)
    except errors.MemoryExists:
        results.put(-1)
    finally:
        service.close()


def test_concurrent_processes_lose_nothing_and_keep_the_chain(store_url: str) -> None:
    MemoryService(open_backend(store_url)).close()  # the store, migrated once
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_writer, args=(store_url, w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
        assert p.exitcode == 0
    service = MemoryService(open_backend(store_url), clock=ManualClock())
    memories = {m.name: m for m in service.list_memories()}
    assert {f"w{w}-{i}" for w in range(4) for i in range(25)} <= set(memories)
    assert len(memories) == 100 + 3
    assert all(memories[f"w{w}-{i}"].body == f"final {i}" for w in range(4) for i in range(25))
    report = service.verify()
    assert report.ok, report.problems
    service.close()


def test_racing_processes_cannot_both_take_one_name(store_url: str) -> None:
    MemoryService(open_backend(store_url)).close()
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    procs = [context.Process(target=_claimer, args=(store_url, w, results)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
        assert p.exitcode == 0
    outcomes = sorted(results.get(timeout=5) for _ in procs)
    assert outcomes[:3] == [-1, -1, -1] and outcomes[3] >= 0  # exactly one took it
    service = MemoryService(open_backend(store_url), clock=ManualClock())
    assert service.get("leader").memory.description == f"worker {outcomes[3]}"
    assert service.verify().ok
    service.close()


def test_a_forked_child_gets_its_own_connection(sqlite_service: MemoryService) -> None:
    service = sqlite_service
    service.write("a", description="a")
    parent_con = service.backend._con
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            ok = service.backend._con is not parent_con and service.get("a").memory.name == "a"
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"


def _sqlite(service: MemoryService) -> SqliteBackend:
    backend = service.backend
    assert isinstance(backend, SqliteBackend)
    return backend


def _started(started: threading.Event, pending: Any) -> None:
    """Return once the read beside has ``started``; raise what it raised if it ended
    first (so that a failure is a failure, not a wait without end)."""
    while not started.wait(0.01):
        if pending.done.acquire(blocking=False):  # ended
            pending.done.release()
            pending.result()
            raise AssertionError("the read beside ended without starting")


def test_a_read_beside_runs_on_a_spare_connection_lent_to_one_read_at_a_time(
    sqlite_service: MemoryService,
) -> None:
    backend = _sqlite(sqlite_service)
    sqlite_service.write("a", description="a")
    started, release = threading.Event(), threading.Event()
    seen: list[tuple[int, sqlite3.Connection]] = []

    def held(tx: Any) -> str | None:
        seen.append((threading.get_ident(), tx.con))
        started.set()
        release.wait()
        return tx.con.execute("SELECT name FROM memories").fetchone()[0]

    pending = backend.read_beside(held)
    assert pending is not None
    try:
        _started(started, pending)
        assert backend.read_beside(held) is None  # lent: the caller runs its read itself
    finally:
        release.set()
    assert pending.result() == "a"
    ((thread, con),) = seen
    assert thread != threading.get_ident() and con is not backend._con
    again = backend.read_beside(lambda tx: tx.con)
    assert again is not None and again.result() is con  # kept for the next read


def test_a_read_beside_raises_to_its_caller_and_gives_its_connection_back(
    sqlite_service: MemoryService,
) -> None:
    backend = _sqlite(sqlite_service)

    def broken(tx: Any) -> None:
        raise LookupError("boom")

    pending = backend.read_beside(broken)
    assert pending is not None
    with pytest.raises(LookupError, match="boom"):
        pending.result()
    with pytest.raises(LookupError):  # asked again, the same
        pending.result()
    failed = backend.read_beside(lambda tx: tx.con.execute("SELECT no_such_column"))
    assert failed is not None
    with pytest.raises(StoreError):  # a sqlite3 error comes out as the store's
        failed.result()
    after = backend.read_beside(lambda tx: tx.con.in_transaction)
    assert after is not None and after.result() is True


def test_a_spare_connection_a_failure_left_in_a_transaction_is_closed_not_lent_again(
    sqlite_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _sqlite(sqlite_service)
    first = backend.read_beside(lambda tx: tx.con)
    assert first is not None
    stuck = first.result()

    def broken(tx: Any) -> None:
        raise LookupError("boom")

    with monkeypatch.context() as patch:  # a rollback that does not happen
        patch.setattr(SqliteBackend, "_rollback", staticmethod(lambda con: None))
        failed = backend.read_beside(broken)
        assert failed is not None
        with pytest.raises(LookupError):
            failed.result()
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        stuck.execute("SELECT 1")
    after = backend.read_beside(lambda tx: tx.con)
    assert after is not None and after.result() is not stuck


def test_a_read_beside_with_no_thread_to_be_had_is_left_to_the_caller(
    sqlite_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _sqlite(sqlite_service)

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patch:
        patch.setattr(threading.Thread, "start", refused)
        assert backend.read_beside(lambda tx: 1) is None
    pending = backend.read_beside(lambda tx: 2)  # the connection was not kept lent
    assert pending is not None and pending.result() == 2


def test_closing_a_store_closes_its_spare_connection_lent_or_not(
    sqlite_service: MemoryService,
) -> None:
    backend = _sqlite(sqlite_service)
    first = backend.read_beside(lambda tx: tx.con)
    assert first is not None
    idle = first.result()
    backend.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        idle.execute("SELECT 1")
    started, release = threading.Event(), threading.Event()

    def held(tx: Any) -> sqlite3.Connection:
        started.set()
        release.wait()
        return tx.con

    pending = backend.read_beside(held)
    assert pending is not None
    try:
        _started(started, pending)
        backend.close()  # while it is lent: closed when it comes back
    finally:
        release.set()
    lent = pending.result()
    with pytest.raises(sqlite3.ProgrammingError):
        lent.execute("SELECT 1")
    fresh = backend.read_beside(lambda tx: tx.con)
    assert fresh is not None and fresh.result() is not lent


def test_a_forked_child_reads_beside_on_a_connection_of_its_own(
    sqlite_service: MemoryService,
) -> None:
    backend = _sqlite(sqlite_service)
    sqlite_service.write("a", description="a")
    first = backend.read_beside(lambda tx: tx.con)
    assert first is not None
    parents = first.result()
    for thread in threading.enumerate():  # none left holding a lock across the fork
        if thread.name == "retain-beside":
            thread.join()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        ok = False
        try:
            pending = backend.read_beside(
                lambda tx: (tx.con, tx.con.execute("SELECT name FROM memories").fetchone()[0])
            )
            con, name = pending.result() if pending is not None else (parents, None)
            ok = con is not parents and name == "a"
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0 if ok else 1)
    os.close(write)
    answer = os.read(read, 1)  # b"" when the child ended without a word
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert answer == b"1" and os.waitstatus_to_exitcode(status) == 0
    again = backend.read_beside(lambda tx: tx.con)
    assert again is not None and again.result() is parents


def test_opening_an_existing_store_takes_no_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "retain.db"
    MemoryService(SqliteBackend(path)).close()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    service = MemoryService(SqliteBackend(path))  # would block or fail if it wrote
    assert service.list_memories() == []
    other.execute("ROLLBACK")
    service.close()


def test_events_carry_the_instant_of_the_change(make_service: object) -> None:
    from datetime import UTC, datetime, timedelta

    class Ticking:
        def __init__(self) -> None:
            self.t = datetime(2026, 1, 1, tzinfo=UTC)

        def now(self) -> datetime:
            self.t += timedelta(milliseconds=1)
            return self.t

        def local_tz(self) -> None:
            return None

    service = make_service(clock=Ticking())  # type: ignore[operator]
    memory = service.write("a", description="a").memory
    event = service.backend.read(lambda tx: list(tx.iter_events()))[-1]
    assert event.tx_time == memory.updated_at


def test_a_full_disk_is_a_store_error_and_writes_nothing(sqlite_service: MemoryService) -> None:
    service = sqlite_service
    service.write("a", description="a")
    before = store_state(service)
    con = service.backend._con
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.execute(f"PRAGMA max_page_count = {pages + 2}")
    with pytest.raises(errors.StoreError):
        service.write("big", description="big", body="z" * 200_000)
    con.execute("PRAGMA max_page_count = 1073741823")
    assert store_state(service) == before


def test_verify_on_a_locked_store_reports_busy_not_broken(
    sqlite_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = sqlite_service
    from retain.storage import sqlite as module

    monkeypatch.setattr(module, "_RETRIES", 2)
    other = _raw(service)
    other.execute("PRAGMA busy_timeout = 0")
    service.backend._con.execute("PRAGMA busy_timeout = 0")
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(errors.StoreBusy):
        service.verify()
    other.execute("ROLLBACK")
    assert service.verify().ok


def test_a_store_in_an_impossible_place_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(errors.StoreError):
        SqliteBackend(blocker / "home" / "retain.db")


# -- PostgreSQL's own mechanics ------------------------------------------------------------


@pytest.fixture
def postgres_service(postgres_url: str, clock: ManualClock) -> Iterator[MemoryService]:
    """A service on PostgreSQL, for what only its own mechanics show."""
    service = MemoryService(PostgresBackend(fresh_schema(postgres_url)), clock=clock)
    yield service
    service.close()


def test_postgres_writers_wait_for_the_write_lock_then_report_busy(
    postgres_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from retain.storage import postgres as module

    backend = postgres_service.backend
    assert isinstance(backend, module.PostgresBackend)
    holder = psycopg.connect(backend.conninfo)
    holder.execute(
        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (module._WRITE_LOCK, backend.schema)
    )
    backend.close()
    monkeypatch.setattr(module, "LOCK_TIMEOUT_MS", 50)
    with pytest.raises(errors.StoreBusy):
        postgres_service.write("a", description="a")
    holder.rollback()
    holder.close()
    assert postgres_service.write("a", description="a").created


def test_a_forked_child_gets_its_own_postgres_pool(postgres_service: MemoryService) -> None:
    postgres_service.write("a", description="a")
    parent_pool = postgres_service.backend.pool  # type: ignore[attr-defined]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            backend = postgres_service.backend
            ok = backend.pool is not parent_pool and postgres_service.get("a").memory.name == "a"  # type: ignore[attr-defined]
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert postgres_service.get("a").memory.name == "a"


def test_postgres_stores_in_one_database_do_not_share_a_write_lock(
    postgres_url: str, postgres_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from retain.storage import postgres as module

    other = MemoryService(PostgresBackend(fresh_schema(postgres_url)), clock=ManualClock())
    backend = postgres_service.backend
    assert isinstance(backend, PostgresBackend)
    holder = psycopg.connect(backend.conninfo)
    holder.execute(
        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (module._WRITE_LOCK, backend.schema)
    )
    try:
        assert other.write("free", description="another store's writer").created
    finally:
        holder.rollback()
        holder.close()
        other.close()


def test_a_postgres_store_written_before_the_lowered_text_is_scanned_after_it(
    postgres_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Migration 7 stores each row's lowered text for the plain-text scan: a store made
    # before it gets it, filled for the memories it already holds.
    from retain.storage import postgres, postgres_schema

    url = fresh_schema(postgres_url)
    before = tuple(m for m in postgres_schema.MIGRATIONS if m.version < 7)
    monkeypatch.setattr(postgres_schema, "MIGRATIONS", before)
    monkeypatch.setattr(postgres, "MIGRATIONS", before)
    old = MemoryService(PostgresBackend(url), settings=LEXICAL, clock=clock)
    # Today's code writes the columns of later migrations: they stand in for the write,
    # and go again, so that the store is version 6's when it is opened.
    later = ("derived_from", "quarantine_reason", "session")
    old.backend.write(  # type: ignore[attr-defined]
        lambda tx: tx._execute(
            "ALTER TABLE memories " + ", ".join(f"ADD COLUMN {c} TEXT" for c in later)
        )
    )
    old.write("cfg", description="東京の会議", body="see Deploy.Host-Primary/Äpfel")
    old.backend.write(  # type: ignore[attr-defined]
        lambda tx: tx._execute(
            "ALTER TABLE memories " + ", ".join(f"DROP COLUMN {c}" for c in later)
        )
    )
    assert old.backend.schema_version() == before[-1].version
    old.close()
    monkeypatch.undo()
    service = MemoryService(PostgresBackend(url), settings=LEXICAL, clock=clock)
    try:
        assert service.backend.schema_version() == postgres_schema.latest_version()
        for query in ("deploy.host-primary/äpfel", "会議"):
            hits = service.search(query).hits
            assert [(h.memory.name, "scan" in h.senses) for h in hits] == [("cfg", True)]
    finally:
        service.close()


def test_postgres_keeps_the_quarantine_queue_in_a_partial_index(
    postgres_service: MemoryService,
) -> None:
    import psycopg

    backend = postgres_service.backend
    assert isinstance(backend, PostgresBackend)
    with psycopg.connect(backend.conninfo) as con:
        (definition,) = con.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
            (backend.schema, "memories_quarantined"),
        ).fetchone() or ("",)
    assert "(realm, created_at, id)" in definition
    assert "WHERE (status = 'quarantined'::text)" in definition


def test_postgres_schema_names_are_plain_and_quoted(postgres_url: str) -> None:
    joiner = "&" if "?" in postgres_url else "?"
    with pytest.raises(errors.StoreError, match="plain lower-case identifier"):
        PostgresBackend(f"{postgres_url}{joiner}schema=TeamA")
    service = MemoryService(PostgresBackend(f"{postgres_url}{joiner}schema=user"))
    try:  # a reserved word is still a name: it is always quoted
        service.write("a", description="a")
        assert service.verify().ok
    finally:
        service.close()


def test_a_postgres_url_is_shown_without_its_password(postgres_url: str) -> None:
    from retain.storage.postgres import _shown, split_url

    conninfo, schema = split_url(
        "postgresql://ada:hunter2@db.example:5433/memory?password=other&schema=s1"
    )
    shown = _shown(conninfo, schema)
    assert shown == "postgresql://ada@db.example:5433/memory?schema=s1"
    assert "hunter2" not in shown and "other" not in shown


def test_a_postgres_url_keeps_its_parameters_as_libpq_reads_them() -> None:
    from psycopg.conninfo import conninfo_to_dict

    from retain.storage.postgres import split_url

    conninfo, schema = split_url(
        "postgresql://ada@db/memory?options=-c%20statement_timeout%3D5s&schema=s%5F1"
        "&password=a+b%26c&application_name="
    )
    assert schema == "s_1"
    params = conninfo_to_dict(conninfo)
    assert params["options"] == "-c statement_timeout=5s"  # a space, not a "+"
    assert params["password"] == "a+b&c"  # a "+", not a space
    assert params["application_name"] == "" and "schema" not in params
    assert split_url("postgresql://db/memory?schema=first&schema=second")[1] == "first"
    assert split_url("postgresql://db/memory")[1] == "retain"


def test_postgres_events_cannot_be_truncated(postgres_service: MemoryService) -> None:
    postgres_service.write("a", description="a")
    with pytest.raises(Exception, match="append-only"):
        raw_sql(postgres_service, "TRUNCATE events")
    assert postgres_service.verify().ok


def test_a_batch_stores_its_events_and_vectors_as_written_whatever_they_hold(
    service: MemoryService,
) -> None:
    awkward = [
        'say "hi", {braces} and \\back\\slashes',
        "NULL",
        "",
        "tab\tnew\nline, 日本語 and 👩\u200d👧",
        "'single' \\\"both\\\"",
    ]
    requests = [  # a thread: each one's context words hold its neighbours' text
        WriteRequest(f"w{i}", description=f"item {i}", body=awkward[i % len(awkward)], thread="t")
        for i in range(12)
    ]
    service.write_many(requests, reason='a "quoted" reason, \\ and all')
    (context,) = raw_sql(service, "SELECT context FROM memories WHERE name = ?", ["w1"])[0]
    neighbours = (requests[0], requests[2], requests[3])  # each one's body, else description
    assert context == " ".join(r.body or r.description or "" for r in neighbours)
    events = service.backend.read(lambda tx: list(tx.iter_events()))
    created = [e for e in events if e.kind == "create"]
    assert [json.loads(e.payload)["body"] for e in created] == [r.body for r in requests]
    assert {e.reason for e in created} == {'a "quoted" reason, \\ and all'}
    assert {e.memory_id for e in events if e.kind == "realm_add"} == {None}
    assert ledger.check_chain(events).ok
    assert service.verify().ok  # every vector stored, and stored whole


def test_a_batch_of_turns_then_changes_leave_the_word_index_whole(
    service: MemoryService,
) -> None:
    words = ("otter", "heron", "badger", "marten", "stoat")
    turns = [
        WriteRequest(
            f"t{i}",
            description=f"turn {i}",
            body=f"we talked about the {words[i % 5]}",
            thread="chat",
            subject=("Ann", "Bob")[i % 2],
        )
        for i in range(70)  # a batch large enough to be embedded ahead, too
    ]
    service.write_many(turns)
    service.write("lone", description="a lone note on the heron")
    service.write_many([WriteRequest("t71", description="turn 71", thread="chat")])
    service.edit("t5", "otter", "weasel")
    service.delete("t6")
    service.forget("t7", reason="asked to")
    assert service.verify().ok  # every row in the word index, as its text now is
    # t4 says "badger"; its neighbours' keys hold its words, and t5 its own new word
    assert {h.memory.name for h in service.search("badger", limit=50).hits} >= {"t4", "t2"}
    assert [h.memory.name for h in service.search("weasel").hits][:1] == ["t5"]


def test_words_with_quotes_and_backslashes_are_searched_as_words(
    service: MemoryService,
) -> None:
    service.write("q", description="it's the b\\ path", body="O'Brien's note")
    for query in ("it's", "b\\", "O'Brien", "'", "\\", "a:b & c | !d (e)"):
        service.search(query)  # nothing raises
    assert [h.memory.name for h in service.search("O'Brien").hits] == ["q"]


def test_text_with_a_nul_character_is_refused(service: MemoryService) -> None:
    with pytest.raises(errors.InvalidValue, match="NUL"):
        service.write("n", description="fine", body="bad\x00byte")
    with pytest.raises(errors.InvalidValue, match="NUL"):
        service.search("zz\x00qq")
    assert service.list_memories() == []


def test_postgres_searches_its_vectors_with_an_hnsw_index_of_the_model(
    postgres_service: MemoryService,
) -> None:
    postgres_service.write("cat", description="the cat sleeps on the warm windowsill")
    postgres_service.write("car", description="the car needs new tyres before winter")
    indexes = raw_sql(
        postgres_service,
        "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_vectors' "
        "AND schemaname = current_schema() AND starts_with(indexname, 'memory_vectors_hnsw_')",
    )
    (definition,) = [r[0] for r in indexes]
    assert "hnsw" in definition and "vector(256)" in definition
    hits = postgres_service.search("kitten napping in the sun").hits
    assert [h.memory.name for h in hits][:1] == ["cat"] and "semantic" in hits[0].senses
    sums = postgres_service.backend.read(
        lambda tx: tx.vector_sums(postgres_service.embedder.model_id, "default")  # type: ignore[attr-defined]
    )
    assert [(dim, count) for dim, _, count in sums] == [(256, 2)]


@pytest.mark.parametrize(("setting", "walked"), [(None, 100), (400, 400), (5, rank.DEPTH)])
def test_postgres_walks_its_hnsw_index_as_deep_as_the_config_says(
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    setting: int | None,
    walked: int,
) -> None:
    """``[postgres] ef_search`` reaches the walk of a store opened by ``retain.open``;
    a walk keeps at least the rows the search ranks."""
    from retain.storage import postgres as module

    if setting is not None:
        (tmp_path / "config.toml").write_text(f"[postgres]\nef_search = {setting}\n")
    depths: list[int] = []
    original = module.PostgresTransaction.nearest

    def spied(tx: module.PostgresTransaction, *args: Any, **kwargs: Any) -> Any:
        found = original(tx, *args, **kwargs)
        depths.append(int(tx._one("SHOW hnsw.ef_search")[0]))  # set for its transaction
        return found

    monkeypatch.setattr(module.PostgresTransaction, "nearest", spied)
    service = retain.open(fresh_schema(postgres_url), home=tmp_path)
    service.write("cat", description="the cat sleeps on the warm windowsill")
    hits = service.search("kitten napping in the sun").hits
    service.close()
    assert [h.memory.name for h in hits] == ["cat"]
    assert depths and set(depths) == {walked}


@pytest.mark.parametrize("depth", [0, 1001, True, 2.5, "100"])
def test_a_postgres_search_depth_out_of_range_is_refused_before_connecting(depth: Any) -> None:
    with pytest.raises(errors.InvalidValue, match="from 1 to 1000") as refused:
        PostgresBackend("postgresql://nobody@127.0.0.1:1/none", ef_search=depth)
    assert refused.value.details["field"] == "ef_search"


@pytest.mark.parametrize("pool_size", [8, 1])
def test_postgres_searches_vectors_beside_the_words_when_a_connection_is_idle(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, pool_size: int
) -> None:
    import threading

    from retain.storage import postgres as module

    backend = PostgresBackend(fresh_schema(postgres_url), pool_size=pool_size)
    service = embedded_service(backend, embedder=AxisEmbedder())
    service.write("pet", description="our tabby sleeps all day")
    service.write("walks", description="the hound wants walks")
    seen: dict[str, tuple[str, int]] = {}

    def spy(verb: str) -> Any:
        original = getattr(module.PostgresTransaction, verb)

        def spied(tx: module.PostgresTransaction, *args: Any, **kwargs: Any) -> Any:
            pid = tx._one("SELECT pg_backend_pid()")[0]
            seen.setdefault(verb, (threading.current_thread().name, pid))
            return original(tx, *args, **kwargs)

        monkeypatch.setattr(module.PostgresTransaction, verb, spied)

    spy("nearest")
    spy("match_terms")
    hits = service.search("kitten napping").hits
    assert [h.memory.name for h in hits] == ["pet"] and hits[0].senses == ("semantic",)
    (vector_thread, vector_pid), (word_thread, word_pid) = seen["nearest"], seen["match_terms"]
    assert word_thread == threading.current_thread().name
    if pool_size > 1:  # on a connection of its own, at the same time
        assert vector_thread.startswith("retain-beside") and vector_pid != word_pid
    else:  # no connection to spare: in the search's own read
        assert (vector_thread, vector_pid) == (word_thread, word_pid)
    backend.close()


def _statements_sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement sent from now on, in order (``psycopg.Cursor.execute``, which each
    goes through; not a transaction's ``BEGIN`` or ``COMMIT``)."""
    import psycopg

    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def record(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return execute(cursor, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", record)
    return sent


@pytest.mark.parametrize("pool_size", [1, 2])
def test_postgres_reads_are_snapshots_and_writes_read_what_committed(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, pool_size: int
) -> None:
    """Each transaction's level is said by its ``BEGIN``, whatever the server's default
    (here serializable) and whatever ran on the pooled connection before: a read's, a
    read's beside it, a write's and the write's vectors'."""
    import psycopg

    from retain.storage import postgres as module

    serializable = "options=-c%20default_transaction_isolation%3Dserializable"
    backend = PostgresBackend(f"{fresh_schema(postgres_url)}&{serializable}", pool_size=pool_size)
    service = MemoryService(backend)

    def level_of(con: psycopg.Connection[Any]) -> str:
        row = con.execute("SHOW transaction_isolation").fetchone()
        return str(row[0]) if row else ""

    def level(tx: Any) -> str:
        return level_of(tx.con)

    stored = module.store_vectors
    vectors_at: list[str] = []

    def storing(con: psycopg.Connection[Any], pending: Any) -> None:
        vectors_at.append(level_of(con))
        stored(con, pending)

    monkeypatch.setattr(module, "store_vectors", storing)
    monkeypatch.setattr(module, "_IDLE_WAIT_S", 10.0)  # an idle connection is there at once
    sent = _statements_sent(monkeypatch)
    try:
        assert backend.read(level) == "repeatable read"
        assert backend._attempt(level_of) == "read committed"  # as the vectors' are
        service.write("a", description="a note about the garden")  # after a read, then its note's
        assert vectors_at == ["read committed"]
        assert backend.write(level) == "read committed"
        assert backend.read(level) == "repeatable read"
        beside = backend.read_beside(level)
        assert (beside is None) is (pool_size == 1)  # no connection to spare, or one
        assert beside is None or beside.result() == "repeatable read"
        assert not [q for q in sent if "SET TRANSACTION" in q]  # no statement of its own
    finally:
        backend.close()


@pytest.mark.parametrize("pool_size", [1, 3])
def test_postgres_connections_the_server_dropped_are_replaced(
    postgres_url: str, pool_size: int
) -> None:
    """A write, a search and a compaction after the server dropped every pooled
    connection (a restart, an idle timeout) run on new ones: the transaction a dropped
    connection failed had not committed, so it runs again whole."""
    import uuid

    import psycopg

    name = f"retain_test_{uuid.uuid4().hex[:12]}"
    backend = PostgresBackend(
        f"{fresh_schema(postgres_url)}&application_name={name}", pool_size=pool_size
    )
    service = MemoryService(backend)

    def drop_every_connection() -> int:
        with psycopg.connect(backend.conninfo, autocommit=True) as admin:
            row = admin.execute(  # each waited for until it has ended
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) "
                "FROM pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid()",
                (name,),
            ).fetchone()
        return int(row[0]) if row else 0

    try:
        service.write("a", description="a note about the garden")
        assert drop_every_connection() >= min(pool_size, 2)
        assert service.write("b", description="a note about the kitchen").created
        assert [h.memory.name for h in service.search("garden").hits] == ["a"]
        assert sorted(m.name for m in service.list_memories()) == ["a", "b"]
        assert drop_every_connection() >= 1
        assert backend.compact().complete
        assert service.verify().ok
        # A transaction whose own statement ends its connection is tried twice, no more.
        tries: list[int] = []

        def fatal(con: psycopg.Connection[Any]) -> None:
            tries.append(1)
            con.execute("SELECT pg_terminate_backend(pg_backend_pid())")

        with pytest.raises(StoreError):
            backend._attempt(fatal)
        assert len(tries) == 2
        assert service.write("c", description="a note about the cellar").created
    finally:
        backend.close()


def test_postgres_an_hnsw_index_a_failed_write_made_is_made_again(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index a write makes with its first vector of a model is the backend's to skip
    only once that write commits: one rolled back took its index with it."""
    from retain.storage import postgres_transaction as module

    backend = PostgresBackend(fresh_schema(postgres_url))
    service = MemoryService(backend)
    finish = module.PostgresTransaction.finish

    def failing(tx: module.PostgresTransaction) -> None:
        raise RuntimeError("the write fails after its vectors' keys")

    monkeypatch.setattr(module.PostgresTransaction, "finish", failing)
    try:
        with pytest.raises(RuntimeError):
            service.write("a", description="a note about the garden")
        monkeypatch.setattr(module.PostgresTransaction, "finish", finish)
        service.write("b", description="a note about the kitchen")
        indexes = backend.read(
            lambda tx: tx._rows(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                "AND indexname LIKE 'memory_vectors_hnsw_%%'"
            )
        )
        assert len(indexes) == 1
    finally:
        backend.close()


def test_postgres_nearest_for_many_queries_in_one_statement_is_each_query_alone(
    postgres_service: MemoryService,
) -> None:
    """A search's synonyms walk the HNSW index in one statement: each query gets the rows
    it gets alone, in the same order with the same cosines, under the filters."""
    from retain.search import key
    from retain.storage.base import MemoryFilter

    topics = ["garden roses", "deploy the kestrel service", "rain and storms", "tabby cat"]
    even = set()
    for i in range(40):
        topic = topics[i % len(topics)]
        tags = ["even"] if i % 2 == 0 else []
        written = postgres_service.write(f"n{i}", description=f"{topic} note {i}", tags=tags)
        if tags:
            even.add(written.memory.id)
    embedder = postgres_service.embedder.embedder
    assert embedder is not None
    queries = key.embed(embedder, ["roses in bloom", "service deploys", "a storm", "kittens"])
    where = MemoryFilter(realm="default", tag="even")

    def both(tx: Any) -> tuple[list[list[Any]], list[list[Any]]]:
        together = tx.nearest(embedder.model_id, queries, where, 6)
        alone = [tx.nearest(embedder.model_id, queries[i : i + 1], where, 6)[0] for i in range(4)]
        return together, alone

    together, alone = postgres_service.backend.read(both)
    assert together == alone
    assert all(len(hits) == 6 for hits in together)
    assert len({tuple(h.memory_id for h in hits) for hits in together}) == 4  # each its own
    assert {h.memory_id for hits in together for h in hits} <= even


def test_postgres_ranking_scores_each_row_by_every_term_it_holds(
    postgres_service: MemoryService,
) -> None:
    """The ranking asks a term's rank only of the rows holding it: every row's score is
    still the sum over the terms of IDF times ``ts_rank_cd``, asked of every term."""
    from retain.storage import postgres_words as module
    from retain.storage.base import MemoryFilter

    words = ["kestrel", "harbor", "lamp", "window"]
    for i in range(24):
        held = [w for j, w in enumerate(words) if (i >> j) & 1] or ["nothing"]
        body = " ".join(held * (1 + i % 3))
        postgres_service.write(f"r{i}", description=f"note {i}: {held[0]}", body=body)
    terms = ["kestrel", "harbor window", "lamp"]  # a phrase among them

    def both(tx: Any) -> tuple[list[Any], dict[str, float]]:
        hits = tx.match_terms(MemoryFilter(realm="default"), terms, prefix=False, limit=40)
        total = int(tx._one("SELECT max(num) FROM memories")[0])
        expected: dict[str, float] = {}
        for expression, value in module._term_queries(terms):
            (count,) = tx._one(f"SELECT count(*) FROM memories WHERE fts @@ {expression}", [value])
            idf = module._idf(count, total)
            for memory_id, ranked in tx._rows(
                f"SELECT id, ts_rank_cd({module._WEIGHTS}, fts, {expression}, 1) FROM memories",
                [value],
            ):
                expected[memory_id] = expected.get(memory_id, 0.0) + idf * ranked
        return hits, {k: v for k, v in expected.items() if v > 0}

    hits, expected = postgres_service.backend.read(both)
    assert len(hits) == len(expected) > 10
    # ts_rank_cd is a float4, read here as its text: equal to its precision
    assert {h.memory_id: h.score for h in hits} == pytest.approx(expected, rel=1e-6)


def test_postgres_vector_sums_follow_inserts_deletes_and_reindex(
    postgres_service: MemoryService,
) -> None:
    import numpy as np

    for name in ("a", "b", "c"):
        postgres_service.write(name, description=f"note {name} about the garden")
    postgres_service.delete("b")
    postgres_service.reindex()
    model = postgres_service.embedder.model_id
    ((dim, total, count),) = postgres_service.backend.read(
        lambda tx: tx.vector_sums(model, "default")  # type: ignore[attr-defined]
    )
    rows = raw_sql(postgres_service, "SELECT embedding::text FROM memory_vectors")
    exact = np.sum([np.array(json.loads(r[0]), dtype=np.float32) for r in rows], axis=0)
    assert (dim, count) == (256, 2) == (256, len(rows))
    assert np.allclose(total, exact, atol=1e-4)


def _vector_rows(service: MemoryService) -> dict[int, tuple[int, int, str]]:
    rows = raw_sql(service, "SELECT memory_num, vec, version, embedding::text FROM memory_vectors")
    return {num: (vec, version, text) for num, vec, version, text in rows}


def _sums_match_the_vectors(service: MemoryService) -> bool:
    import numpy as np

    model = service.embedder.model_id
    ((_, total, count),) = service.backend.read(
        lambda tx: tx.vector_sums(model, "default")  # type: ignore[attr-defined]
    )
    rows = raw_sql(service, "SELECT embedding::text FROM memory_vectors")
    exact = np.sum([np.array(json.loads(r[0]), dtype=np.float32) for r in rows], axis=0)
    return count == len(rows) and bool(np.allclose(total, exact, atol=1e-4))


def test_postgres_a_vector_is_stored_bit_for_bit(postgres_service: MemoryService) -> None:
    """Vectors go in pgvector's binary form: what is read back is the float32 sent."""
    import numpy as np
    import psycopg

    from retain.storage import postgres as module
    from retain.storage.base import StoredVector

    postgres_service.write("a", description="a note about the garden")
    ((num,),) = raw_sql(postgres_service, "SELECT num FROM memories WHERE name = 'a'")
    backend = postgres_service.backend
    assert isinstance(backend, module.PostgresBackend)
    vector = np.concatenate(
        [
            np.array([1e-38, -3.4e38, 1 / 3, 5e-8, 0.1, 2**-20], dtype=np.float32),
            np.arange(1, 251, dtype=np.float32) / np.float32(-7),
        ]
    )
    model = postgres_service.embedder.model_id
    pending = module.PendingVectors(10**9, {num: StoredVector(0, num, model, 256, vector)})
    with psycopg.connect(backend.conninfo) as con:
        backend._configure(con)  # as the pool configures its connections
        module.store_vectors(con, pending)
    stored = np.array(json.loads(_vector_rows(postgres_service)[num][2]), dtype=np.float32)
    assert stored.tobytes() == vector.tobytes()


def test_postgres_vectors_stored_out_of_order_keep_the_later_writes(
    postgres_service: MemoryService,
) -> None:
    import numpy as np
    import psycopg

    from retain.storage import postgres as module
    from retain.storage.base import StoredVector

    postgres_service.write("a", description="the first note about the garden")
    postgres_service.write("b", description="the second note about the kitchen")
    postgres_service.write("a", description="the first note, now about the orchard")
    before = _vector_rows(postgres_service)
    assert len(before) == 2 and len({version for _, version, _ in before.values()}) == 2
    ((num_a,),) = raw_sql(postgres_service, "SELECT num FROM memories WHERE name = 'a'")
    model = postgres_service.embedder.model_id
    backend = postgres_service.backend
    assert isinstance(backend, module.PostgresBackend)

    def store(version: int, num: int) -> None:
        vector = np.full(256, 1 / 16, dtype=np.float32)
        pending = module.PendingVectors(version, {num: StoredVector(0, num, model, 256, vector)})
        with psycopg.connect(backend.conninfo) as con:
            backend._configure(con)  # as the pool configures its connections
            module.store_vectors(con, pending)

    store(before[num_a][1] - 1, num_a)  # an earlier write of "a", storing its vectors late
    assert _vector_rows(postgres_service) == before
    store(10**9, num_a)  # a later one replaces the vector, which takes a new vec
    after = _vector_rows(postgres_service)
    assert after[num_a][1] == 10**9 and after[num_a][0] > max(vec for vec, _, _ in before.values())
    assert _sums_match_the_vectors(postgres_service)
    store(10**9 + 1, 999_999)  # a memory deleted before its vectors were stored
    assert len(_vector_rows(postgres_service)) == 2
    assert postgres_service.verify().ok


def test_postgres_write_whose_vectors_fail_to_store_says_it_landed(
    postgres_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from retain.storage import postgres as module

    def refuse(con: object, pending: object) -> None:
        raise psycopg.OperationalError("the server went away")

    monkeypatch.setattr(module, "store_vectors", refuse)
    with pytest.raises(StoreError, match="the write landed, but storing its vectors failed"):
        postgres_service.write("a", description="a note about the garden")
    assert [m.name for m in postgres_service.list_memories()] == ["a"]
    report = postgres_service.verify()  # work under way, not damage
    assert report.ok and report.vectors == 0 and report.pending_vectors == 1
    monkeypatch.undo()
    assert postgres_service.verify(rebuild=True).ok


@pytest.mark.parametrize(
    "writer_gone",
    [
        "UPDATE vectors_pending SET pid = 0",  # its connection closed: the process died
        "UPDATE vectors_pending SET since = since - interval '1 hour'",  # it failed, long ago
    ],
)
def test_postgres_vectors_a_writer_never_stored_are_made_by_the_next_write(
    postgres_service: MemoryService, monkeypatch: pytest.MonkeyPatch, writer_gone: str
) -> None:
    import psycopg

    from retain.storage import postgres as module

    service = postgres_service
    stored = module.store_vectors

    def die(con: object, pending: object) -> None:  # between the commit and the vectors
        raise psycopg.OperationalError("the writer died")

    monkeypatch.setattr(module, "store_vectors", die)
    with pytest.raises(StoreError):
        service.write("a", description="a note about the garden")
    monkeypatch.setattr(module, "store_vectors", stored)
    service.write("b", description="a note about the kitchen")  # the writer may yet store
    report = service.verify()
    assert report.ok and (report.vectors, report.pending_vectors) == (1, 1)
    raw_sql(service, writer_gone)
    service.write("c", description="a note about the cellar")
    report = service.verify()
    assert report.ok and (report.vectors, report.pending_vectors) == (3, 0)
    assert raw_sql(service, "SELECT count(*) FROM vectors_pending") == [(0,)]
    assert [h.memory.name for h in service.search("garden").hits][:1] == ["a"]


def _dies_before_its_vectors(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, name: str, description: str
) -> None:
    """``service`` writes ``name``, and its process dies between the commit and the
    vectors: the write landed, its vectors are pending, and its connection is gone."""
    import psycopg

    from retain.storage import postgres as module

    def die(con: object, pending: object) -> None:
        raise psycopg.OperationalError("the writer died")

    with monkeypatch.context() as patch:
        patch.setattr(module, "store_vectors", die)
        with pytest.raises(StoreError):
            service.write(name, description=description)
    raw_sql(service, "UPDATE vectors_pending SET pid = 0")


def _pending(service: MemoryService) -> list[tuple[str, int]]:
    return raw_sql(
        service,
        "SELECT m.name, p.version FROM vectors_pending p JOIN memories m ON m.num = p.memory_num "
        "ORDER BY m.name",
    )


def _vector_models(service: MemoryService) -> list[tuple[str, str]]:
    return raw_sql(
        service,
        "SELECT m.name, v.model FROM memory_vectors v JOIN memories m ON m.num = v.memory_num "
        "ORDER BY m.name",
    )


def test_postgres_a_write_that_ran_long_is_not_stale_when_it_commits(
    postgres_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from retain.storage import postgres as module

    service = postgres_service
    backend = service.backend
    assert isinstance(backend, module.PostgresBackend)
    held: list[module.PendingVectors] = []
    store = module.store_vectors
    monkeypatch.setattr(module, "store_vectors", lambda con, pending: held.append(pending))
    set_keys = module.PostgresTransaction.set_keys

    def then_an_hour(tx: module.PostgresTransaction, keys: Any) -> None:
        set_keys(tx, keys)  # the vectors are made; the rest of the write takes an hour
        tx._execute("UPDATE vectors_pending SET since = since - interval '1 hour'")

    monkeypatch.setattr(module.PostgresTransaction, "set_keys", then_an_hour)
    service.write("a", description="a note about the garden")
    monkeypatch.setattr(module.PostgresTransaction, "set_keys", set_keys)
    # Just committed, its writer about to store its vectors: pending, not stale.
    assert service.backend.read(lambda tx: tx.stale_vectors(10)) == []
    service.write("b", description="a note about the kitchen")  # does not make a's again
    (a, a_version), (b, b_version) = _pending(service)
    assert (a, b) == ("a", "b") and a_version < b_version == held[-1].version
    for pending in held:  # the writer stores them after all
        with psycopg.connect(backend.conninfo) as con:
            backend._configure(con)
            store(con, pending)
    report = service.verify()
    assert report.ok and (report.vectors, report.pending_vectors) == (2, 0)


def test_postgres_a_store_with_no_embedder_clears_what_a_dead_writer_left_pending(
    postgres_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = fresh_schema(postgres_url)
    embedded = MemoryService(PostgresBackend(url), clock=clock)
    lexical = MemoryService(PostgresBackend(url), clock=clock, settings=LEXICAL)
    try:
        _dies_before_its_vectors(embedded, monkeypatch, "a", "a note about the garden")
        heals: list[MemoryService] = []
        heal = MemoryService._heal
        monkeypatch.setattr(MemoryService, "_heal", lambda self: heal(heals.append(self) or self))
        lexical.write("b", description="a note about the kitchen")  # heals: no vector to wait for
        lexical.write("c", description="a note about the cellar")  # nothing left to heal
        assert (len(heals), _pending(lexical), _vector_models(lexical)) == (1, [], [])
        report = lexical.verify()
        assert report.ok and (report.vectors, report.pending_vectors) == (0, 0)
        assert [h.memory.name for h in lexical.search("garden").hits] == ["a"]
    finally:
        embedded.close()
        lexical.close()


def test_postgres_a_degraded_embedder_leaves_a_dead_writers_vectors_pending(
    postgres_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = fresh_schema(postgres_url)
    healthy = MemoryService(PostgresBackend(url), clock=clock)
    missing = EmbedderSettings(provider="static", model=str(tmp_path / "gone"))
    degraded = MemoryService(PostgresBackend(url), clock=clock, settings=Settings(embedder=missing))
    try:
        model, fallback = healthy.embedder.model_id, degraded.embedder.model_id
        assert degraded.embedder.degraded is not None and model != fallback
        _dies_before_its_vectors(healthy, monkeypatch, "a", "a note about the garden")
        degraded.write("b", description="a note about the kitchen")
        # a's vector is the configured model's to make: no fallback vector stands in for
        # it, and it stays pending (reported so) for a writer whose model loaded.
        assert _vector_models(degraded) == [("b", fallback)]
        assert [name for name, _ in _pending(degraded)] == ["a"]
        report = degraded.verify()
        assert report.ok and (report.vectors, report.pending_vectors) == (1, 1)
        healthy.write("c", description="a note about the cellar")
        assert _vector_models(healthy) == [("a", model), ("b", fallback), ("c", model)]
        assert _pending(healthy) == []
    finally:
        healthy.close()
        degraded.close()


def test_postgres_a_write_looks_for_stale_vectors_with_its_lock(
    postgres_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:

    service = postgres_service
    service.write("a", description="a note about the garden")  # the store's first write
    sent = _statements_sent(monkeypatch)
    service.write("b", description="a note about the kitchen")
    pending = [query for query in sent if "vectors_pending" in query]
    assert len(pending) == 3, pending  # no statement of their own, but their clearing
    assert "pg_advisory_xact_lock" in pending[0]  # looked for stale ones, with the lock
    assert "INSERT INTO events" in pending[1]  # recorded, with the events
    # cleared by the statement that stores them
    assert pending[2].startswith("WITH unpended AS (DELETE FROM vectors_pending")
    assert "INSERT INTO memory_vectors" in pending[2]


def test_postgres_a_vector_missing_with_no_write_pending_is_a_problem(
    postgres_service: MemoryService,
) -> None:
    postgres_service.write("a", description="a note about the garden")
    postgres_service.backend.write(lambda tx: tx._execute("DELETE FROM memory_vectors"))
    report = failed_verify(postgres_service)
    assert not report.ok and report.pending_vectors == 0
    assert any("1 of the store's 1 memories have no vector" in p for p in report.problems)


def test_postgres_a_large_write_stores_its_vectors_in_its_own_transaction(
    postgres_service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retain.storage import postgres_vectors as module

    monkeypatch.setattr(module, "DEFERRED_VECTORS_MAX", 2)
    postgres_service.write_many(
        [WriteRequest(name=f"n{i}", description=f"note {i} about the garden") for i in range(5)]
    )
    rows = _vector_rows(postgres_service)
    assert len(rows) == 5 and len({version for _, version, _ in rows.values()}) == 1
    assert _sums_match_the_vectors(postgres_service) and postgres_service.verify().ok


class _SharedTicks:
    """One clock for several threads: each reading is a millisecond after the last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._t = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        with self._lock:
            self._t += timedelta(milliseconds=1)
            return self._t

    def local_tz(self) -> tzinfo:
        return UTC


def _tx_times(service: MemoryService) -> list[datetime]:
    return [e.tx_time for e in service.backend.read(lambda tx: list(tx.iter_events()))]


def test_concurrent_fact_writes_on_one_subject_all_land_in_time_order(
    make_service: Any,
) -> None:
    clock = _SharedTicks()
    writers, count = 4, 15
    services = [make_service(clock=clock, principal=f"app:f{w}") for w in range(writers)]
    start = threading.Barrier(writers)
    refused: list[BaseException] = []

    def write(w: int) -> None:
        start.wait()
        for i in range(count):
            try:
                services[w].fact_write("Ada", "city", f"city {w}-{i}")
                services[w].write(f"n{w}-{i}", description=f"note {i} of writer {w}")
            except errors.RetainError as exc:
                refused.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert refused == []
    history = services[0].fact_history("Ada", "city")
    assert len(history) == writers * count
    times = _tx_times(services[0])
    assert times == sorted(times)
    assert services[0].verify().ok


def test_a_clock_set_back_never_stamps_an_event_before_the_last(
    service: MemoryService, clock: ManualClock
) -> None:
    first = service.write("a", description="a").memory
    clock.current -= timedelta(hours=1)
    second = service.write("b", description="b").memory
    assert second.created_at == first.created_at + TICK  # after the log's last, not the clock
    times = _tx_times(service)
    assert times == sorted(times) and times[-1] == second.created_at
    assert service.verify().ok


def test_verify_detects_transaction_times_that_run_backwards(
    service: MemoryService, clock: ManualClock
) -> None:
    service.write("a", description="a")
    assert service.verify().ok
    seq, head = service.backend.read(lambda tx: tx.chain_head())
    last = service.backend.read(lambda tx: tx.last_tx_time())
    assert last is not None
    forged = ledger.seal(
        prev_seq=seq, prev_hash=head, event_id="forged", realm=service.realm, memory_id=None,
        kind="project_add", tx_time=clock.now() - timedelta(minutes=5), principal="app:x",
        reason="", payload={"project": "p"},
    )  # fmt: skip
    raw_sql(
        service,
        "INSERT INTO events(seq, event_id, realm, memory_id, kind, tx_time, principal, reason, "
        "payload, payload_digest, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (forged.seq, forged.event_id, forged.realm, None, forged.kind, stamp(forged.tx_time),
         forged.principal, "", forged.payload, forged.payload_digest, forged.prev_hash,
         forged.hash),
    )  # fmt: skip
    report = failed_verify(service)
    assert not report.ok and not report.chain_ok
    assert report.problems == (
        f"event chain broken: event {seq + 1} is stamped {stamp(forged.tx_time)}, before event "
        f"{seq} ({stamp(last)}): the log's times run backwards",
    )
