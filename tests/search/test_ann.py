"""The persisted vector codes of a large embedded store (storage.sqlite_ann).

Each test writes a store of a few hundred memories with the bundled static model,
sets ``[search] ann_from`` below its size, and checks the index's searches against
the exact scan of the same file (``ann_from = 0``): the same memories, the same
order, through every way a store changes after the index was written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import random
import shutil
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retain import WriteRequest
from retain.config import Settings, load_settings
from retain.errors import ConfigInvalid, StoreBusy, StoreError
from retain.model import Trust
from retain.search import key, plain
from retain.search.embed import EmbedderSettings
from retain.service import MemoryService
from retain.storage import sqlite_ann, sqlite_ann_build
from retain.storage.base import LexicalHit, MemoryFilter, Reads
from retain.storage.sqlite import SqliteBackend, SqliteTransaction
from retain.write_results import Restore

ADJECTIVES = ("red", "quiet", "ancient", "modern", "tiny", "huge", "bright", "dark", "frozen")
NOUNS = ("river", "castle", "garden", "server", "kitten", "guitar", "bridge", "rocket", "library")
VERBS = ("sleeps", "shines", "collapses", "sings", "waits", "grows", "burns", "floats", "hums")
QUERIES = ("a sleeping cat", "music instrument", "fire and smoke", "an old fortress", "boats")
SIZE = 400
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def sentences(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [
        f"the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.choice(VERBS)} "
        f"near the {rng.choice(NOUNS)}"
        for _ in range(count)
    ]


class Opened:
    """Services on one store file: each ``open`` a new one, as a new process would."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.services: list[MemoryService] = []

    def open(self, ann_from: int = 100, realm: str = "default") -> MemoryService:
        service = MemoryService(
            SqliteBackend(self.path), settings=Settings(ann_from=ann_from), realm=realm
        )
        self.services.append(service)
        return service


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Opened]:
    opened = Opened(tmp_path / "retain.db")
    writer = opened.open(ann_from=0)
    writer.write_many(
        [WriteRequest(f"m{i:03}", description=text) for i, text in enumerate(sentences(SIZE))]
    )
    yield opened
    for service in opened.services:
        service.close()


def found(service: MemoryService, query: str, **options: object) -> list[str | None]:
    return [h.memory.name for h in service.search(query, limit=10, **options).hits]  # type: ignore[arg-type]


def semantic(service: MemoryService, query: str, **options: object) -> list[str | None]:
    """The memories found by meaning (whatever else found them too)."""
    hits = service.search(query, limit=50, **options).hits  # type: ignore[arg-type]
    return [h.memory.name for h in hits if "semantic" in h.senses]


def index_of(service: MemoryService) -> sqlite_ann.Approximate:
    (ann,) = indexes_of(service)._open.values()
    return ann


def indexes_of(service: MemoryService) -> sqlite_ann.Indexes:
    backend = service.backend
    assert isinstance(backend, SqliteBackend)
    return backend.vector_indexes()


def agree(exact: MemoryService, ann: MemoryService, **options: object) -> None:
    for query in QUERIES:
        assert found(ann, query, **options) == found(exact, query, **options), query


def test_a_store_past_ann_from_searches_through_an_index_and_finds_what_the_scan_finds(
    store: Opened,
) -> None:
    exact, ann = store.open(ann_from=0), store.open()
    assert any(semantic(exact, q) for q in QUERIES)  # the sense under test answers
    agree(exact, ann)
    # the scan holds every row in memory, the index its codes and no more
    (whole,) = indexes_of(exact)._whole.values()
    assert (len(whole.tail), whole.segments, indexes_of(exact)._open) == (SIZE, [], {})
    assert not indexes_of(ann)._whole
    names = sorted(p.name for p in sqlite_ann.folder_of(store.path).iterdir())
    (segment,) = index_of(ann).meta.segments
    (json_name,) = (n for n in names if n.endswith(".json"))
    assert names == sorted([json_name, "lock", *segment_files(index_of(ann).meta, segment)])
    assert index_of(ann).meta.rows == SIZE
    folder = sqlite_ann.folder_of(store.path)
    assert folder.stat().st_mode & 0o777 == 0o700  # as the store's: codes of what it holds
    assert {p.stat().st_mode & 0o777 for p in folder.iterdir()} == {0o600}


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_codes_keep_each_centred_row_within_half_a_step(
    store: Opened, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    monkeypatch.setattr(sqlite_ann, "THREADS", threads)  # the scan split in parts, or not
    monkeypatch.setattr(sqlite_ann, "SPLIT_FROM", 0)  # (however few the rows)
    ann = store.open()
    found(ann, "boats")
    opened = index_of(ann)
    (segment,) = opened.meta.segments
    codes = sqlite_ann_build.Codes.mapped(opened.folder, opened.meta.stem(segment), opened.meta.dim)
    everyone = MemoryFilter("default")
    model = ann.embedder.model_id
    nums, _, blobs = ann.backend.read(lambda tx: tx.vectors_where(model, everyone, 0, 10_000))
    rows = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
    natural = rows[np.argsort(nums)] - np.asarray(opened.meta.mean, dtype=np.float32)
    dims = np.asarray(opened.meta.order)  # the codes' dimensions, most varied first
    assert sorted(dims.tolist()) == list(range(natural.shape[1]))
    variance = natural.var(axis=0)
    assert np.all(np.diff(variance[dims]) <= 1e-6)
    head = variance[dims[: opened.meta.head]].sum() / variance.sum()
    assert opened.meta.share == pytest.approx(head, rel=1e-3)
    centred = natural[:, dims]
    order = np.argsort(codes.rows["key"])
    decoded = codes.decoded(order)
    step = np.asarray(codes.rows["step"], dtype=np.float32)[order]
    assert np.all(np.abs(decoded - centred) <= step[:, None] / 2 + 1e-6)
    assert np.all(np.abs(codes.codes).max(axis=1) == 127)  # each row's whole range used
    # The search reads the same rows, numbers and steps without numpy
    assert [opened.segments[0].key(i) for i in range(SIZE)] == codes.rows["key"].tolist()
    assert opened.keys(list(range(SIZE))) == codes.rows["key"].tolist()
    assert opened.segments[0].steps().tolist() == codes.rows["step"].tolist()
    asked_as = natural[:3] / np.linalg.norm(natural[:3], axis=1, keepdims=True)
    rough = np.array([np.concatenate(r.parts) for r in opened.scored(list(asked_as))])
    queries = np.ascontiguousarray(asked_as[:, dims])
    # The queries are taken to int8 codes too: the products are the codes' exactly...
    asked = np.array([plain.codes(q) for q in queries], dtype=np.float32)
    assert np.abs(asked).max(axis=1).tolist() == [127, 127, 127]
    assert np.allclose(rough[:, order], asked @ decoded.T, rtol=1e-5, atol=1e-4)
    # ...each within its query's rounding (half a step a term) of the float query's
    scale = np.abs(queries).max(axis=1) / 127
    coded = asked * scale[:, None]
    slack = np.linalg.norm(queries - coded, axis=1)[:, None] * np.linalg.norm(decoded, axis=1)
    assert np.all(np.abs(rough[:, order] * scale[:, None] - queries @ decoded.T) <= slack + 1e-5)


def test_a_store_below_ann_from_keeps_no_index(store: Opened) -> None:
    service = store.open(ann_from=SIZE + 1)
    found(service, "a sleeping cat")
    (whole,) = indexes_of(service)._whole.values()
    assert (len(whole.tail), whole.segments, indexes_of(service)._open) == (SIZE, [], {})
    assert not sqlite_ann.folder_of(store.path).exists()


def test_a_new_process_opens_the_written_index_and_reads_no_vector_into_memory(
    store: Opened,
) -> None:
    found(store.open(), "a sleeping cat")  # writes it
    meta = json.loads(next(sqlite_ann.folder_of(store.path).glob("*.json")).read_text())
    later = store.open()
    agree(store.open(ann_from=0), later)
    ann = index_of(later)
    assert (ann.meta.upto, len(ann.tail)) == (meta["segments"][-1]["hi"], 0)
    assert not indexes_of(later)._whole


def test_memories_written_after_the_index_are_searched_exactly_from_its_tail(
    store: Opened,
) -> None:
    ann = store.open()
    found(ann, "boats")
    upto = index_of(ann).meta.upto
    ann.write("late", description="a ferry crosses the harbour at dawn")
    assert "late" in semantic(ann, "boats")
    assert (index_of(ann).meta.upto, len(index_of(ann).tail)) == (upto, 1)
    assert "late" in semantic(store.open(), "boats")  # another process's tail too
    agree(store.open(ann_from=0), ann)


def test_a_rewritten_memory_is_found_by_its_new_meaning_and_a_deleted_one_not_at_all(
    store: Opened,
) -> None:
    ann = store.open()
    target = semantic(ann, "a sleeping cat")[0]
    assert target is not None
    ann.write(target, description="a ferry crosses the harbour at dawn")
    assert target not in semantic(ann, "a sleeping cat")
    assert target in semantic(ann, "boats")
    ann.delete(target)
    assert target not in semantic(ann, "boats")
    agree(store.open(ann_from=0), ann)


def test_the_nearest_rows_are_the_exact_nearest_each_once(store: Opened) -> None:
    ann = store.open()
    found(ann, "boats")
    ann.write("m000", description="a ferry crosses the harbour at dawn")  # old row indexed
    embedder = ann.embedder.embedder
    asked = key.embed(embedder, ["boats"])
    everyone = MemoryFilter("default")

    def run(tx: Reads) -> tuple[list[LexicalHit], list[tuple[float, str]]]:
        assert isinstance(tx, SqliteTransaction)
        tx.open_vectors(embedder.model_id, embedder.dim, 100)
        (near,) = tx.nearest(embedder.model_id, asked, everyone, 50)
        _, ids, blobs = tx.vectors_where(embedder.model_id, everyone, 0, 10_000)
        rows = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), embedder.dim)
        scores = rows @ asked[0]
        return near, sorted(zip(scores.tolist(), ids, strict=True), key=lambda s: -s[0])

    near, exact = ann.backend.read(run)
    ids = [h.memory_id for h in near]
    assert len(ids) == len(set(ids)) == 50
    assert ids[:10] == [i for _, i in exact[:10]]
    assert ids[0] == ann.get("m000").memory.id
    assert [h.score for h in near[:10]] == pytest.approx([s for s, _ in exact[:10]], abs=1e-5)


def files_of(store: Opened) -> set[str]:
    return {p.name for p in sqlite_ann.folder_of(store.path).iterdir()}


def segment_files(meta: sqlite_ann.Meta, segment: sqlite_ann.Segment) -> list[str]:
    return [f"{meta.stem(segment)}.{part}.npy" for part in sqlite_ann.PARTS]


def churn(service: MemoryService) -> None:
    """Eight memories more, one rewritten (its old row stays in its segment), one gone."""
    service.write_many(
        [WriteRequest(f"n{i}", description=t) for i, t in enumerate(sentences(8, 2))]
    )
    service.write("m000", description="a ferry crosses the harbour at dawn")
    service.delete("m001")


def test_a_tail_past_its_limit_is_added_to_the_last_segment(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "TAIL_MAX", 5)
    ann = store.open()
    found(ann, "boats")
    (first,) = index_of(ann).meta.segments
    gone = stored_vector(ann, "m001")
    churn(ann)
    agree(store.open(ann_from=0), ann)
    assert len(index_of(ann).tail) == 0
    (grown,) = index_of(ann).meta.segments
    assert (grown.lo, grown.rows) == (0, SIZE + 8)  # m000 replaced in it; m001's key stays
    assert grown.hi > first.hi
    assert {n for n in files_of(store) if n.endswith(".npy")} == set(
        segment_files(index_of(ann).meta, grown)
    )
    agree(store.open(ann_from=0), store.open())  # the new version, from a new process
    everyone, model = MemoryFilter("default"), ann.embedder.model_id
    _, _, blobs = ann.backend.read(lambda tx: tx.vectors_where(model, everyone, 0, 10_000))
    stored = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
    want, count = stored.sum(axis=0, dtype=np.float64), len(blobs)
    total, held = index_of(ann).sums("default")
    assert held == count + 1 and grown.counts == {"default": count + 1}  # m001 still counts
    # m000's old codes taken away (as the codes kept it: within half a step a number)
    assert np.allclose(total, want + gone, atol=5e-3)


def stored_vector(service: MemoryService, name: str) -> np.ndarray:
    """The vector the store holds for memory ``name``."""
    memory_id = service.get(name).memory.id
    model = service.embedder.model_id
    within = MemoryFilter("default", within=(memory_id,))
    _, _, (blob,) = service.backend.read(lambda tx: tx.vectors_where(model, within, 0, 1))
    return np.frombuffer(blob, dtype="<f4")


def test_a_full_segment_leaves_the_tail_to_a_new_one(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "TAIL_MAX", 5)
    monkeypatch.setattr(sqlite_ann, "SEGMENT_ROWS", SIZE)
    ann = store.open()
    found(ann, "boats")
    (first,) = index_of(ann).meta.segments
    churn(ann)
    # room for the tail's nine rows alone: the full segment is not written again
    monkeypatch.setattr(sqlite_ann_build, "free_bytes", lambda folder: 9 * 1000)
    agree(store.open(ann_from=0), ann)
    meta = index_of(ann).meta
    assert meta.segments[0] == first
    assert (meta.segments[1].lo, meta.segments[1].rows) == (first.hi, 9)  # m000's new row too
    assert {n for s in meta.segments for n in segment_files(meta, s)} <= files_of(store)
    agree(store.open(ann_from=0), store.open())


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """Few candidates first (``FIRST`` 8, ``WIDEST`` 32), and a record of how many rows
    each ``_exactly`` scored and of each ``_scanned`` (its limit)."""
    monkeypatch.setattr(sqlite_ann, "FIRST", 8)
    monkeypatch.setattr(sqlite_ann, "WIDEST", 32)  # past it: the filter's rows, scanned
    scored: list[int] = []
    scanned: list[int] = []
    exactly, scan = sqlite_ann._exactly, sqlite_ann._scanned

    def counted(*args: Any) -> list[LexicalHit]:
        scored.append(len(args[4]))
        return exactly(*args)

    def spied(*args: Any) -> list[LexicalHit]:
        scanned.append(args[-1])
        return scan(*args)

    monkeypatch.setattr(sqlite_ann, "_exactly", counted)
    monkeypatch.setattr(sqlite_ann, "_scanned", spied)
    return scored, scanned


@pytest.fixture
def candidates_read(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The memory numbers each ``vectors_passing`` was asked for (a round of candidates
    read back), in order."""
    asked_for: list[list[int]] = []
    passing_of = SqliteTransaction.vectors_passing

    def spied(self: SqliteTransaction, model: str, where: MemoryFilter, nums: Any) -> Any:
        asked_for.append(list(nums))
        return passing_of(self, model, where, nums)

    monkeypatch.setattr(SqliteTransaction, "vectors_passing", spied)
    return asked_for


@pytest.mark.parametrize("way", ["its rows", "scanned"])
def test_a_small_scope_of_a_large_store_loses_nothing_to_candidates_elsewhere(
    store: Opened,
    monkeypatch: pytest.MonkeyPatch,
    narrow: tuple[list[int], list[int]],
    way: str,
) -> None:
    scored, scanned = narrow
    if way == "scanned":  # as if the scope held more rows than are cheaper to score whole
        monkeypatch.setattr(SqliteTransaction, "passing", lambda self, where, below: None)
    ann = store.open()
    ann.add_project("tiny")
    small = [
        WriteRequest(f"s{i}", description=t, project="tiny") for i, t in enumerate(sentences(6, 4))
    ]
    ann.write_many(small)
    exact = store.open(ann_from=0)
    for query in QUERIES:
        want = semantic(exact, query, project="tiny", tier="project")
        assert semantic(ann, query, project="tiny", tier="project") == want
    assert any(semantic(exact, q, project="tiny", tier="project") for q in QUERIES)
    # The scope's six rows are scored whole once the first candidates hold too few of them.
    assert set(scored) == ({6} if way == "its rows" else set())
    assert bool(scanned) == (way == "scanned")
    embedder = ann.embedder.embedder
    assert embedder is not None
    asked = key.embed(embedder, list(QUERIES))
    tiny = MemoryFilter("default", scopes=("project:tiny",))

    def run(tx: Reads) -> tuple[list[list[LexicalHit]], list[list[str]]]:
        assert isinstance(tx, SqliteTransaction)
        tx.open_vectors(embedder.model_id, embedder.dim, 100)
        near = tx.nearest(embedder.model_id, asked, tiny, 3)
        _, ids, blobs = tx.vectors_where(embedder.model_id, tiny, 0, 100)
        rows = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), embedder.dim)
        best = [np.argsort(-(rows @ query), kind="stable")[:3] for query in asked]
        return near, [[ids[j] for j in b] for b in best]

    near, want = ann.backend.read(run)
    assert [[h.memory_id for h in n] for n in near] == want  # the three nearest, in order


def test_realms_share_one_index_and_nothing_crosses_them(store: Opened) -> None:
    other = store.open(ann_from=0, realm="other")
    other.write("theirs", description="a ferry crosses the harbour at dawn")
    mine, theirs = store.open(), store.open(realm="other")
    assert "theirs" not in semantic(mine, "boats")
    assert semantic(theirs, "boats") == ["theirs"]
    assert index_of(mine).sums("other")[1] == 1
    assert index_of(mine).sums("default")[1] == SIZE


def test_verify_rebuild_and_reindex_build_the_index_again_from_the_new_vectors(
    store: Opened,
) -> None:
    ann = store.open()
    found(ann, "boats")
    first = index_of(ann).meta
    ann.verify(rebuild=True)  # every vector made again, with a higher number: a new build
    meta = index_of(ann).meta
    (segment,) = meta.segments
    assert segment.lo == 0 and segment.hi > first.upto and segment.rows == SIZE
    assert len(index_of(ann).tail) == 0
    assert {n for n in files_of(store) if n.endswith(".npy")} == set(segment_files(meta, segment))
    agree(store.open(ann_from=0), store.open())


def test_an_erasure_rebuilds_the_index_without_the_erased_vector(store: Opened) -> None:
    ann = store.open()
    target = semantic(ann, "a sleeping cat")[0]
    assert target is not None
    before = set(index_of(ann).keys(list(range(index_of(ann).size))))
    ann.forget(target, reason="asked to")
    after = index_of(ann)
    assert [s.rows for s in after.meta.segments] == [SIZE - 1]
    assert len(before - set(after.keys(list(range(after.size))))) == 1
    agree(store.open(ann_from=0), ann)


def test_ann_from_is_a_whole_number_of_vectors(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[search]\nann_from = 5000\n", encoding="utf-8")
    assert load_settings(tmp_path).ann_from == 5000
    for bad in ("-1", '"many"', "true", "1.5"):
        (tmp_path / "config.toml").write_text(f"[search]\nann_from = {bad}\n", encoding="utf-8")
        with pytest.raises(ConfigInvalid, match="ann_from"):
            load_settings(tmp_path)


def test_a_bulk_write_adds_its_rows_to_the_index_and_shows_it(store: Opened) -> None:
    ann = store.open()
    found(ann, "boats")
    phases: list[str] = []
    requests = [WriteRequest(f"b{i}", description=t) for i, t in enumerate(sentences(5, 5))]
    ann.write_many(requests, progress=lambda phase, done, total: phases.append(phase))
    assert "vector index" in phases
    assert (len(index_of(ann).tail), index_of(ann).meta.rows) == (0, SIZE + 5)


def test_a_version_another_process_wrote_is_read_at_the_next_search(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "TAIL_MAX", 5)
    mine, theirs = store.open(), store.open()
    found(mine, "boats")
    found(theirs, "boats")
    churn(theirs)
    found(theirs, "boats")  # adds the tail: a new version
    assert index_of(mine).meta != index_of(theirs).meta
    agree(store.open(ann_from=0), mine)
    assert index_of(mine).meta == index_of(theirs).meta
    assert len(index_of(mine).tail) == 0


def test_a_tail_row_whose_vector_is_gone_is_not_found_by_its_old_one(store: Opened) -> None:
    ann = store.open()
    found(ann, "boats")
    ann.write("late", description="a ferry crosses the harbour at dawn")
    assert "late" in semantic(ann, "boats")
    lexical = MemoryService(
        SqliteBackend(store.path),
        settings=Settings(embedder=EmbedderSettings(provider="none"), ann_from=100),
    )
    store.services.append(lexical)
    lexical.write("late", description="a ferry crosses the harbour at noon")  # no vector now
    assert "late" not in semantic(ann, "boats")
    agree(store.open(ann_from=0), ann)


def test_compaction_shows_the_index_built_again_without_a_deleted_rows_codes(
    store: Opened,
) -> None:
    ann = store.open()
    found(ann, "boats")
    ann.delete("m001")
    phases: list[str] = []
    done = ann.compact(progress=lambda phase, done, total: phases.append(phase))
    assert "vector_index_rebuilt" in done["steps"] and "vector index" in phases
    assert [s.rows for s in index_of(ann).meta.segments] == [SIZE - 1]
    assert "vector_index_rebuilt" not in ann.compact()["steps"]  # nothing left to shed
    agree(store.open(ann_from=0), ann)


def test_segments_that_each_ran_out_are_read_whole_before_the_search_gives_up(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "SEGMENT_ROWS", 100)
    monkeypatch.setattr(sqlite_ann, "CHUNK", 100)
    ann = store.open()
    found(ann, "boats")
    assert [s.rows for s in index_of(ann).meta.segments] == [100, 100, 100, 100]
    embedder = ann.embedder.embedder
    assert embedder is not None
    asked = key.embed(embedder, ["a sleeping cat"])
    some = MemoryFilter(
        "default", within=tuple(sorted(ann.get(f"m{i:03}").memory.id for i in range(0, SIZE, 7)))
    )

    def run(tx: Reads) -> list[LexicalHit]:
        assert isinstance(tx, SqliteTransaction)
        tx.open_vectors(embedder.model_id, embedder.dim, 100)
        (near,) = tx.nearest(embedder.model_id, asked, some, 70)
        return near

    near = ann.backend.read(run)
    assert sorted(h.memory_id for h in near) == sorted(some.within or ())  # all 58


@pytest.mark.parametrize("kept_by", ["tag", "reference", "trust", "expiry", "staleness"])
def test_a_rare_tag_reference_trust_expiry_or_staleness_is_searched_from_its_own_rows(
    store: Opened, narrow: tuple[list[int], list[int]], kept_by: str
) -> None:
    scored, scanned = narrow
    ann = store.open()
    rare: dict[str, Any] = {
        "tag": {"tags": ["rare"]},
        "reference": {"references": ["https://wiki/rare"]},
        "trust": {"restore": Restore(NOW, NOW, 0, trust=Trust.VERIFIED)},  # the others: attested
        "expiry": {"expires": "2020-01-01"},
        "staleness": {"restore": Restore(NOW, NOW, 0)},  # the others: verified when written
    }[kept_by]
    ann.write_many(
        [WriteRequest(f"r{i}", description=t, **rare) for i, t in enumerate(sentences(6, 5))]
    )
    kept: dict[str, Any] = {
        "tag": {"tag": "rare"},
        "reference": {"referencing": "https://wiki/rare"},
        "trust": {"min_trust": "verified"},
        "expiry": {"expired": True},
        "staleness": {"unverified": "30d"},
    }[kept_by]
    exact = store.open(ann_from=0)
    for query in QUERIES:
        assert semantic(ann, query, **kept) == semantic(exact, query, **kept), query
    assert any(semantic(exact, q, **kept) for q in QUERIES)
    assert set(scored) == {6} and not scanned  # its six rows, scored whole


@pytest.mark.parametrize("limit", [1, 5, 20])
def test_a_filter_few_pass_reads_each_candidate_once_and_finds_the_exact_nearest(
    store: Opened, monkeypatch: pytest.MonkeyPatch, limit: int, candidates_read: list[list[int]]
) -> None:
    monkeypatch.setattr(sqlite_ann, "FIRST", 4)  # several rounds of candidates
    monkeypatch.setattr(SqliteTransaction, "passing", lambda self, where, below: None)
    ann = store.open()
    ann.write_many(
        [
            WriteRequest(f"t{i:03}", description=text, tags=["kept"] if i % 7 == 0 else [])
            for i, text in enumerate(sentences(SIZE, 6))
        ]
    )
    found(ann, "boats")
    asked_for = candidates_read
    embedder = ann.embedder.embedder
    assert embedder is not None
    asked = key.embed(embedder, list(QUERIES))
    kept = MemoryFilter("default", tag="kept")

    def run(tx: Reads) -> tuple[list[list[LexicalHit]], list[list[str]]]:
        assert isinstance(tx, SqliteTransaction)
        tx.open_vectors(embedder.model_id, embedder.dim, 100)
        rounds = []
        near = []
        for query in asked:
            asked_for.clear()
            (hits,) = tx.nearest(embedder.model_id, query[None, :], kept, limit)
            near.append(hits)
            every = [num for nums in asked_for for num in nums]
            assert len(every) == len(set(every))  # no candidate read twice
            rounds.append(len(asked_for))
        assert max(rounds) > 1  # the first candidates held too few of the kept
        _, ids, blobs = tx.vectors_where(embedder.model_id, kept, 0, 1000)
        rows = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), embedder.dim)
        best = [np.argsort(-(rows @ query), kind="stable")[:limit] for query in asked]
        return near, [[ids[j] for j in b] for b in best]

    near, want = ann.backend.read(run)
    assert [[h.memory_id for h in n] for n in near] == want


def test_an_erasure_takes_the_mean_afresh_too(store: Opened) -> None:
    ann = store.open()
    target = semantic(ann, "a sleeping cat")[0]
    assert target is not None
    ann.forget(target, reason="asked to")
    everyone = MemoryFilter("default")
    model = ann.embedder.model_id
    _, _, blobs = ann.backend.read(lambda tx: tx.vectors_where(model, everyone, 0, 10_000))
    rows = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
    assert np.allclose(index_of(ann).meta.mean, rows.mean(axis=0), atol=1e-6)


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), max_size=200),
    st.floats(-1e6, 1e6, allow_nan=False, width=32),
)
def test_the_places_at_a_threshold_or_above_are_found_by_their_signs(
    scores: list[float], threshold: float
) -> None:
    values = np.asarray(scores, dtype=np.float32)
    assert plain.at_least(values, threshold) == np.flatnonzero(values >= threshold).tolist()
    if len(values):
        assert plain.at_least(values, float(values[0])).count(0) == 1  # a tie passes


def test_the_rows_record_is_the_one_the_build_writes() -> None:
    assert str(sqlite_ann_build.ROW.descr) == sqlite_ann.ROW_DESCR
    assert sqlite_ann_build.ROW.itemsize == sqlite_ann.ROW_BYTES


def test_a_query_of_no_direction_finds_nothing_and_reads_no_candidate(
    store: Opened, candidates_read: list[list[int]]
) -> None:
    ann = store.open()
    found(ann, "boats")
    candidates_read.clear()  # (the search's own)
    embedder = ann.embedder.embedder
    assert embedder is not None
    zero = np.zeros((1, embedder.dim), dtype=np.float32)  # every cosine with it is 0

    def run(tx: Reads) -> list[list[LexicalHit]]:
        assert isinstance(tx, SqliteTransaction)
        tx.open_vectors(embedder.model_id, embedder.dim, 100)
        return tx.nearest(
            embedder.model_id,
            [zero[0], *key.embed(embedder, ["boats"])],
            MemoryFilter("default"),
            5,
        )

    none, boats = ann.backend.read(run)
    assert none == [] and len(boats) == 5
    assert len(candidates_read) == 1  # the second query's candidates alone


def test_codes_of_fewer_rows_than_split_from_are_scanned_on_the_callers_thread(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = store.open()
    found(ann, "boats")
    opened = index_of(ann)
    query = [np.ones(opened.meta.dim, dtype=np.float32)]
    monkeypatch.setattr(sqlite_ann, "THREADS", 2)
    whole = opened.scored(query)
    started: list[threading.Thread] = []
    real = threading.Thread.start

    def counted(self: threading.Thread) -> None:
        started.append(self)
        real(self)

    monkeypatch.setattr(threading.Thread, "start", counted)
    assert opened.size < sqlite_ann.SPLIT_FROM
    assert [b"".join(p.tobytes() for p in s.parts) for s in opened.scored(query)] == [
        b"".join(p.tobytes() for p in s.parts) for s in whole
    ]
    assert started == []
    monkeypatch.setattr(sqlite_ann, "SPLIT_FROM", opened.size)  # from here, in two parts
    (split,) = opened.scored(query)
    assert len(started) == 1 and len(split.parts) == 2 * len(whole[0].parts)
    assert b"".join(p.tobytes() for p in split.parts) == b"".join(
        p.tobytes() for p in whole[0].parts
    )


def test_a_part_that_fails_on_another_thread_fails_the_search(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = store.open()
    found(ann, "boats")
    monkeypatch.setattr(sqlite_ann, "THREADS", 2)
    monkeypatch.setattr(sqlite_ann, "SPLIT_FROM", 0)
    scan = sqlite_ann.scan

    def broken(*args: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():  # the helper's part
            raise OSError("the codes could not be read")
        return scan(*args)

    monkeypatch.setattr(sqlite_ann, "scan", broken)
    with pytest.raises(OSError, match="could not be read"):
        index_of(ann).scored([np.ones(index_of(ann).meta.dim, dtype=np.float32)])


def shaped(size: int, seed: int, shape: str) -> tuple[np.ndarray, list[memoryview[float]]]:
    """``size`` float32 scores of a ``shape``, and the same in three parts, as the segments
    give them."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(size).astype(np.float32)
    if shape == "ties":
        scores = np.round(scores * 3).astype(np.float32)  # a few values, each many times
    elif shape != "normal":
        scores = np.sort(scores)[:: 1 if shape == "sorted" else -1].copy()
    cuts = sorted(rng.integers(0, size, 2).tolist())
    pieces = (scores[: cuts[0]], scores[cuts[0] : cuts[1]], scores[cuts[1] :])
    return scores, [plain.view(p) for p in pieces]


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.integers(1, 50_000),
    st.integers(1, 300),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["normal", "ties", "sorted", "reversed"]),
    st.sampled_from([plain._best_plain, plain._best_numpy]),
)
def test_the_best_places_hold_the_highest_scores(
    size: int, count: int, seed: int, shape: str, way: Any
) -> None:
    scores, parts = shaped(size, seed, shape)
    count = min(count, size - 1) or 1
    if count >= size:
        return
    best = way(parts, size, count, sqlite_ann.SAMPLED)
    assert len(best) == len(set(best)) == count
    assert sorted(scores[best].tolist()) == sorted(scores.tolist())[size - count :]


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.integers(1, 50_000),
    st.integers(1, 3000),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["normal", "ties", "sorted", "reversed"]),
    st.booleans(),
)
def test_about_the_best_places_are_every_score_above_a_sampled_threshold(
    size: int, count: int, seed: int, shape: str, numpy_loaded: bool
) -> None:
    scores, parts = shaped(size, seed, shape)
    stride = max(1, count // 32)
    kept = count // stride
    if count >= size or size // stride <= kept:
        assert plain.about(parts, count) == list(range(size))
        return
    way = plain._about_numpy if numpy_loaded else plain._about_plain
    places = way(parts, stride, kept)
    assert places == sorted(set(places))  # in order, each once
    # every score at or above the lowest taken is taken: a threshold's
    assert np.sum(scores >= scores[places].min()) == len(places)
    # and the sample (numpy's of the scores joined, else each part's) has ``kept`` above it
    by_part = np.concatenate([np.asarray(p)[::stride] for p in parts])
    sample = scores[::stride] if numpy_loaded else by_part
    assert np.sum(sample >= scores[places].min()) >= kept
    if shape != "ties" and stride == 1:
        assert len(places) == count
    if shape == "normal" and count >= 64 and size >= 20 * count:
        # About ``count``: the threshold is the ``kept``-th (32 to 47) best of the sample,
        # so the scores above it number ``count`` times a Gamma(kept) / kept, whose
        # relative spread is 1/sqrt(kept), 18% at most (0.43 × count was seen). Outside a
        # fifth to three times it has a chance under 1e-11 an example (Chernoff's bound).
        assert 0.2 * count <= len(places) <= 3 * count


def test_codes_that_cannot_be_read_are_built_again_by_a_compaction_and_a_search(
    store: Opened,
) -> None:
    found(store.open(), "boats")
    folder = sqlite_ann.folder_of(store.path)
    for codes in folder.glob("*.codes.npy"):  # a damaged file
        codes.unlink()
    ann = store.open()
    assert "vector_index_rebuilt" in ann.compact()["steps"]
    assert [s.rows for s in index_of(ann).meta.segments] == [SIZE]
    for plane in folder.glob("*.head.npy"):
        plane.write_bytes(b"not an array")
    agree(store.open(ann_from=0), store.open())
    for plane in folder.glob("*.rest.npy"):  # a plane gone: found by a compaction too
        plane.unlink()
    ann = store.open()
    assert "vector_index_rebuilt" in ann.compact()["steps"]
    assert len(list(folder.glob("*.rest.npy"))) == 1
    agree(store.open(ann_from=0), ann)


def small_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's sizes set small for the test store: pools of fewer than 100 of its 400
    rows, read through the head past 80 (``POOL × GATHERED``)."""
    monkeypatch.setattr(sqlite_ann, "POOL", 20)
    monkeypatch.setattr(sqlite_ann, "GATHERED", 4)


def test_a_large_index_chooses_a_pool_by_the_head_and_scores_it_by_every_code(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = store.open()
    found(ann, "boats")
    opened = index_of(ann)
    assert not opened.narrow  # (an index this small reads every code)
    small_pools(monkeypatch)
    opened.meta = replace(opened.meta, share=sqlite_ann.HEAD_SHARE - 0.01)
    assert not opened.narrow  # a head holding too little of the variance chooses nothing
    opened.meta = replace(opened.meta, share=sqlite_ann.HEAD_SHARE)
    assert opened.narrow
    (segment,) = opened.meta.segments
    codes = sqlite_ann_build.Codes.mapped(opened.folder, opened.meta.stem(segment), opened.meta.dim)
    step = np.asarray(codes.rows["step"], dtype=np.float64)
    head, dims = opened.meta.head, np.asarray(opened.meta.order)
    queries = key.embed(ann.embedder.embedder, list(QUERIES))
    for query, rough in zip(queries, opened.scored(list(queries)), strict=True):
        asked = np.asarray(plain.codes(np.ascontiguousarray(query[dims])), dtype=np.float64)
        by_head = (codes.codes[:, :head] @ asked[:head]) * step
        by_all = (codes.codes.astype(np.float64) @ asked) * step
        assert rough.narrow
        assert np.allclose(np.concatenate(rough.parts), by_head, rtol=1e-5, atol=1e-3)
        for count in (3, 10):  # pools of about 24, 80
            chosen = rough.best(count)
            assert len(set(chosen)) == count
            # Every row the head put as high as the lowest chosen was in the pool, and
            # none of them scores better by every code than a chosen one
            pooled = np.flatnonzero(by_head >= by_head[chosen].min() - 1e-4)
            others = np.setdiff1d(pooled, chosen)
            assert by_all[others].max(initial=-np.inf) <= by_all[chosen].min() + 1e-3
            assert rough.narrow
        # A threshold many tie at (or a sample that misled) pools the best exactly
        with monkeypatch.context() as patched:
            patched.setattr(plain, "about", lambda parts, count: list(range(400)))
            pools: list[int] = []
            rescored = sqlite_ann.Rough._rescored
            patched.setattr(
                sqlite_ann.Rough,
                "_rescored",
                lambda self, rows, rest, seen=pools, real=rescored: (
                    seen.append(len(rows)) or real(self, rows, rest)
                ),
            )
            chosen = rough.best(10)
            assert pools == [80]  # the best 80 by the head, as ``plain.best`` ranks them
            pooled = np.argsort(-by_head, kind="stable")[:80]
            wanted = pooled[np.argsort(-by_all[pooled], kind="stable")[:10]]
            assert np.allclose(sorted(by_all[chosen]), sorted(by_all[wanted]), rtol=1e-5)
        # A pool of more than the rows ÷ GATHERED: every row's rest is read, once
        assert np.allclose(
            sorted(by_all[rough.best(20)]), sorted(by_all)[-20:], rtol=1e-5, atol=1e-3
        )
        assert not rough.narrow
        assert np.allclose(np.concatenate(rough.parts), by_all, rtol=1e-5, atol=1e-3)


def test_a_pool_is_scored_again_alike_with_numpy_and_without(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = store.open()
    found(ann, "boats")
    opened = index_of(ann)
    opened.meta = replace(opened.meta, share=1.0)
    small_pools(monkeypatch)
    monkeypatch.setattr(sqlite_ann, "THREADS", 3)
    monkeypatch.setattr(sqlite_ann, "SPLIT_FROM", 0)  # the rows in three pieces
    queries = key.embed(ann.embedder.embedder, list(QUERIES))
    rng = random.Random(7)
    for rough in opened.scored(list(queries)):
        assert rough.narrow and len(rough.parts) == 3 and rough.rest is not None
        for size in (1, 2, 50, 133, 400):  # a piece or two with none of them, or every row
            rows = sorted(rng.sample(range(400), size))
            plain_way = rough._rescored_plain(rows, rough.rest)
            assert plain_way.tobytes() == rough._rescored_numpy(rows, rough.rest).tobytes()


def test_a_search_through_a_pool_finds_the_exact_nearest_of_these_rows(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = store.open()
    found(ann, "boats")
    small_pools(monkeypatch)
    monkeypatch.setattr(sqlite_ann, "FIRST", 4)  # candidates 10, a pool of about 80
    index_of(ann).meta = replace(index_of(ann).meta, share=1.0)
    embedder = ann.embedder.embedder
    everyone = MemoryFilter("default")
    chosen: list[bool] = []
    best = sqlite_ann.Rough.best

    def seen(rough: sqlite_ann.Rough, count: int) -> list[int]:
        chosen.append(rough.narrow)
        return best(rough, count)

    monkeypatch.setattr(sqlite_ann.Rough, "best", seen)

    def run(tx: Reads) -> list[tuple[list[str], list[str]]]:
        assert isinstance(tx, SqliteTransaction)
        tx.open_vectors(embedder.model_id, embedder.dim, 100)
        _, ids, blobs = tx.vectors_where(embedder.model_id, everyone, 0, 10_000)
        rows = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), embedder.dim)
        pairs = []
        for query in key.embed(embedder, list(QUERIES)):
            (near,) = tx.nearest(embedder.model_id, query[None, :], everyone, 5)
            exact = np.argsort(-(rows @ query), kind="stable")[:5]
            pairs.append(([h.memory_id for h in near], [ids[i] for i in exact]))
        return pairs

    for near, exact in ann.backend.read(run):
        assert near == exact
    assert chosen and all(chosen)  # each through a pool


def test_codes_of_an_earlier_format_are_built_again_by_the_next_search(store: Opened) -> None:
    found(store.open(), "boats")
    folder = sqlite_ann.folder_of(store.path)
    (path,) = folder.glob("*.json")
    earlier = json.loads(path.read_text())
    del earlier["order"], earlier["share"]  # as the codes of whole rows were described
    path.write_text(json.dumps(earlier))
    for plane in [*folder.glob("*.head.npy"), *folder.glob("*.rest.npy")]:
        plane.unlink()
    ann = store.open()
    agree(store.open(ann_from=0), ann)
    meta = index_of(ann).meta
    assert sorted(meta.order) == list(range(meta.dim)) and 0 < meta.share <= 1
    (segment,) = meta.segments
    assert files_of(store) == {path.name, "lock", *segment_files(meta, segment)}


def test_a_search_that_builds_the_codes_reports_it_to_the_stores_progress(
    store: Opened,
) -> None:
    """The codes' folder gone, the next search builds them whole: every row read twice
    (the mean first), reported as it goes to the ``progress`` the store was opened with,
    the last report its whole; the search after it builds nothing."""
    found(store.open(), "boats")
    shutil.rmtree(sqlite_ann.folder_of(store.path))
    heard: list[tuple[str, int, int]] = []
    ann = MemoryService(
        SqliteBackend(store.path, progress=lambda *report: heard.append(report)),
        settings=Settings(ann_from=100),
    )
    store.services.append(ann)
    agree(store.open(ann_from=0), ann)
    assert {phase for phase, _, _ in heard} == {"vector index"}
    assert (
        heard[0] == ("vector index", 0, 2 * SIZE)
        and heard[-1] == ("vector index",) + (2 * SIZE,) * 2
    )
    assert [done for _, done, _ in heard] == sorted(done for _, done, _ in heard)
    assert all(done <= total for _, done, total in heard)
    reported = len(heard)
    found(ann, "boats")
    assert len(heard) == reported


# -- another process holding the codes' writer lock ---------------------------------


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The bound of each wait for the codes' writer lock, a short one: the lock held
    in these tests is never let go within it."""
    monkeypatch.setattr(sqlite_ann, "LOCK_WAIT_S", 0.05)
    asked: list[float] = []
    real = sqlite_ann.locked

    def locked(folder: Path, *, wait: float, progress: Any = None) -> Any:
        asked.append(wait)
        return real(folder, wait=wait, progress=progress)

    monkeypatch.setattr(sqlite_ann, "locked", locked)
    return asked


@contextlib.contextmanager
def held_elsewhere(store: Opened) -> Iterator[IO[str]]:
    """The codes' writer lock held as another process holds it (a ``flock`` of the lock
    file opened apart), say one stopped by Ctrl-Z while it writes them; the file."""
    folder = sqlite_ann.folder_of(store.path)
    folder.mkdir(mode=0o700, exist_ok=True)
    with open(folder / "lock", "a") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield other


def with_progress(store: Opened, heard: list[tuple[str, int, int]]) -> MemoryService:
    service = MemoryService(
        SqliteBackend(store.path, progress=lambda *report: heard.append(report)),
        settings=Settings(ann_from=100),
    )
    store.services.append(service)
    return service


def test_a_search_that_must_build_the_codes_another_process_holds_scores_every_row(
    store: Opened, waits: list[float]
) -> None:
    """It waits as long as it may (too short a wait to show), then searches every row
    exactly; the process's searches after it only try the lock until it is free, and the
    first that takes it builds the codes."""
    heard: list[tuple[str, int, int]] = []
    ann = with_progress(store, heard)
    exact = store.open(ann_from=0)
    with held_elsewhere(store):
        agree(exact, ann)
        assert waits == [0.05] + [0.0] * (len(QUERIES) - 1)
        assert heard == []
        assert indexes_of(ann)._open == {} and len(indexes_of(ann)._whole) == 1
        assert not list(sqlite_ann.folder_of(store.path).glob("*.json"))
    agree(exact, ann)
    assert waits[len(QUERIES) :] == [0.0] and not indexes_of(ann)._stuck  # took it: waits again
    assert index_of(ann).meta.rows == SIZE and indexes_of(ann)._whole == {}
    assert "vector index" in {phase for phase, _, _ in heard}


def test_a_wait_shows_from_its_first_second_and_ends_when_the_other_holder_lets_go(
    store: Opened,
) -> None:
    """With the whole bound to wait: the other holder lets go once the wait is shown."""
    folder = sqlite_ann.folder_of(store.path)
    heard: list[tuple[str, int, int]] = []
    with held_elsewhere(store) as other:

        def shown(phase: str, done: int, total: int) -> None:
            heard.append((phase, done, total))
            fcntl.flock(other, fcntl.LOCK_UN)

        with sqlite_ann.locked(folder, wait=sqlite_ann.LOCK_WAIT_S, progress=shown) as mine:
            assert mine
            with pytest.raises(BlockingIOError):  # held by this waiter now
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    whole = int(sqlite_ann.LOCK_WAIT_S)
    assert heard == [(sqlite_ann.WAITING, 1, whole), (sqlite_ann.WAITING, whole, whole)]


def test_a_bulk_writes_fold_waits_for_the_lock_and_leaves_the_tail_to_later(
    store: Opened, waits: list[float]
) -> None:
    ann = store.open()
    found(ann, "boats")
    ann.write("late", description="a ferry crosses the harbour at dawn")
    with held_elsewhere(store):
        assert ann.index_vectors() == SIZE
        assert len(index_of(ann).tail) == 1 and "late" in semantic(ann, "boats")
    assert ann.index_vectors() == SIZE + 1 and len(index_of(ann).tail) == 0
    assert waits == [0.05, 0.05, 0.0]  # the build; the wait that ran out; a try that took it


def test_a_compaction_another_process_keeps_from_the_codes_is_incomplete(
    store: Opened, waits: list[float]
) -> None:
    """A deleted memory's codes stay in the segment: the compaction says so, and an
    erasure's certificate leaves the store's files unverified."""
    ann = store.open()
    target = semantic(ann, "a sleeping cat")[0]
    assert target is not None
    ann.delete("m001" if target != "m001" else "m002")
    with held_elsewhere(store):
        done = ann.compact()
        assert "vector_index_rebuilt" not in done["steps"] and done["complete"] is False
        cert = ann.forget(target, reason="asked to")
        assert cert.places["store_files"] == "unverified"
        assert [s.rows for s in index_of(ann).meta.segments] == [SIZE]
    done = ann.compact()
    assert "vector_index_rebuilt" in done["steps"] and done["complete"] is True
    assert [s.rows for s in index_of(ann).meta.segments] == [SIZE - 2]
    agree(store.open(ann_from=0), ann)


def test_verify_rebuild_while_another_process_holds_the_codes_is_refused_unchanged(
    store: Opened, waits: list[float]
) -> None:
    ann = store.open()
    found(ann, "boats")
    before = (ann.backend.read(lambda tx: tx.last_vector()), files_of(store))
    events = len(ann.events())
    with held_elsewhere(store), pytest.raises(StoreBusy, match="stayed locked") as refused:
        ann.verify(rebuild=True)
    assert refused.value.code == "store_busy" and "retry" in refused.value.remedy
    assert (ann.backend.read(lambda tx: tx.last_vector()), files_of(store)) == before
    assert len(ann.events()) == events
    ann.verify(rebuild=True)
    assert ann.backend.read(lambda tx: tx.last_vector()) > before[0]


# -- codes that cannot be written (a full disk, a read-only one) ---------------------


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return full_disk(monkeypatch)


def test_a_search_whose_codes_cannot_be_written_scores_every_row_and_tries_again_later(
    store: Opened, disk_full: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ann, exact = store.open(), store.open(ann_from=0)
    agree(exact, ann)
    assert len(disk_full) == 1  # the first search tried; the others read without codes
    assert files_of(store) == {"lock"}  # what the failed save wrote is gone
    assert indexes_of(ann)._open == {} and len(indexes_of(ann)._whole) == 1
    assert ann.index_vectors() == 0 and len(disk_full) == 1
    monkeypatch.setattr(sqlite_ann_build.Codes, "save", SAVE)  # space again,
    monkeypatch.setattr(sqlite_ann, "RETRY_WRITE_S", 0.0)  # and the retry's time come
    agree(exact, ann)
    assert index_of(ann).meta.rows == SIZE and indexes_of(ann)._whole == {}


def test_a_tail_that_cannot_be_added_to_the_codes_stays_and_is_searched(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "TAIL_MAX", 5)
    ann = store.open()
    found(ann, "boats")
    before = index_of(ann).meta
    churn(ann)
    failed = full_disk(monkeypatch)
    agree(store.open(ann_from=0), ann)
    assert failed and index_of(ann).meta == before and len(index_of(ann).tail) > 5
    assert ann.index_vectors() == before.rows and len(failed) == 1


SAVE = sqlite_ann_build.Codes.save


def read_only(folder: Path, *, wait: float, progress: Any = None) -> Any:
    """``sqlite_ann.locked`` on a read-only disk: its lock file cannot be opened."""
    raise OSError(errno.EROFS, "Read-only file system")


def full_disk(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on every save of a segment fails with ENOSPC after writing part of it;
    the stems it was asked to save."""
    asked: list[str] = []

    def save(codes: object, folder: Path, stem: str, head: int) -> None:
        asked.append(stem)
        (folder / f"{stem}.codes.npy.new").write_bytes(b"part of a segment")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sqlite_ann_build.Codes, "save", save)
    return asked


def test_a_compaction_that_cannot_write_the_codes_removes_them(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deleted memory's codes do not outlive it for want of space: the index goes,
    and searches read every row until the codes can be written again."""
    ann = store.open()
    found(ann, "boats")
    ann.delete("m001")
    failed = full_disk(monkeypatch)
    done = ann.compact()
    assert failed and "vector_index_removed" in done["steps"] and done["complete"] is True
    assert files_of(store) == {"lock"}
    agree(store.open(ann_from=0), ann)
    assert len(failed) == 1 and indexes_of(ann)._open == {}
    assert ann.compact()["steps"] == ["full_text_optimized", "log_truncated"]


def test_verify_rebuild_that_cannot_remove_the_codes_is_refused_unchanged(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    ann = store.open()
    found(ann, "boats")
    before = (ann.backend.read(lambda tx: tx.last_vector()), files_of(store), len(ann.events()))

    monkeypatch.setattr(sqlite_ann, "locked", read_only)
    with pytest.raises(StoreError, match="cannot remove the vector index") as refused:
        ann.verify(rebuild=True)
    assert refused.value.code == "store_error" and "Read-only" in refused.value.message
    after = (ann.backend.read(lambda tx: tx.last_vector()), files_of(store), len(ann.events()))
    assert after == before


def test_a_build_that_would_not_fit_reads_no_vector(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The free space is looked at first: a new process on a full disk does not read
    every vector to build codes it cannot save."""
    saved = full_disk(monkeypatch)
    measured: list[int] = []
    monkeypatch.setattr(sqlite_ann_build, "_measured", lambda *a: measured.append(1))
    ann, exact = store.open(), store.open(ann_from=0)
    assert sqlite_ann_build.free_bytes(sqlite_ann.folder_of(store.path).parent) > 0
    monkeypatch.setattr(sqlite_ann_build, "free_bytes", lambda folder: 1000)
    agree(exact, ann)
    assert (saved, measured, files_of(store)) == ([], [], {"lock"})


def test_a_search_on_a_read_only_disk_scores_every_row(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_ann, "locked", read_only)
    ann = store.open()
    agree(store.open(ann_from=0), ann)
    assert indexes_of(ann)._open == {} and not sqlite_ann.folder_of(store.path).exists()


def raced(
    store: Opened, monkeypatch: pytest.MonkeyPatch, deleted: list[str], *, disk_full: bool
) -> tuple[dict[str, Any], list[int], list[int]]:
    """A compaction by one process after ``deleted`` are deleted, with another process,
    reading a snapshot from before the deletes, bringing the codes up to date from it
    (a bulk write's ``index_vectors``) between the compaction's look at the codes and
    its checkpoint: the compaction's answer, the deleted rows' numbers and the keys the
    other process's codes held."""
    mine, theirs = store.open(), store.open()
    found(mine, "boats")
    meta = index_of(mine).meta
    nums = [
        mine.backend.read(
            lambda tx, n=name: tx.con.execute(
                "SELECT num FROM memories WHERE name = ?", (n,)
            ).fetchone()[0]
        )
        for name in deleted
    ]
    pinned, looked, built = threading.Event(), threading.Event(), threading.Event()
    keys: list[int] = []

    def older(tx: SqliteTransaction) -> None:
        tx.last_vector()  # the snapshot, from before the deletes
        pinned.set()
        assert looked.wait(60)
        ann = indexes_of(theirs).kept(tx, meta.model, meta.dim, 100, folded=True)
        assert ann is not None
        keys.extend(ann.keys(list(range(ann.size))))

    def reading() -> None:
        try:
            theirs.backend.read(older)
        finally:
            built.set()

    compacted = indexes_of(mine).compacted

    def compacting(tx: SqliteTransaction, progress: Any = None) -> Any:
        with monkeypatch.context() as disk:
            if disk_full:
                full_disk(disk)
            done = compacted(tx, progress)
        looked.set()
        assert built.wait(60)
        return done

    monkeypatch.setattr(indexes_of(mine), "compacted", compacting)
    reader = threading.Thread(target=reading)
    reader.start()
    try:
        assert pinned.wait(60)
        for name in deleted:
            mine.delete(name)
        done = mine.compact()
    finally:
        looked.set()
        reader.join()
    return done, nums, keys


def test_a_compaction_is_incomplete_when_an_older_reader_built_the_removed_codes_again(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The codes removed for want of space, the other process builds them afresh from
    its snapshot, the deleted row among them."""
    done, (deleted,), keys = raced(store, monkeypatch, ["m001"], disk_full=True)
    assert deleted in keys
    assert "vector_index_removed" in done["steps"] and "log_truncated" in done["steps"]
    assert done["complete"] is False


def test_a_compaction_is_incomplete_when_an_older_reader_added_a_deleted_row_again(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The codes built again without m001, the other process adds its tail to them:
    the newest memory, deleted too, is past the new codes' range."""
    store.open().write("late", description="a ferry crosses the harbour at dawn")
    done, (_, late), keys = raced(store, monkeypatch, ["m001", "late"], disk_full=False)
    assert late in keys
    assert "vector_index_rebuilt" in done["steps"] and "log_truncated" in done["steps"]
    assert done["complete"] is False


def test_a_models_files_are_told_from_those_of_a_model_whose_name_begins_alike(
    tmp_path: Path,
) -> None:
    mine = ["m-384-0-5000-0a1b2c3d.codes.npy", "m-384-0-5000.rows.npy", "m-384-5-9.head.npy.new"]
    theirs = ["m-384-5-10-0-5000-0a1b2c3d.codes.npy", "m-384-x-10-0-9.rest.npy", "m-384.json"]
    theirs += ["m-384-5.json", "m-384-5-0-12345678.codes.npy"]  # an untagged one's 8 digits
    for name in mine + theirs:
        (tmp_path / name).write_bytes(b"")
    assert sorted(p.name for p in sqlite_ann._segment_files(tmp_path, "m-384")) == sorted(mine)


# -- the process's other threads, while one writes the codes or waits to ----------


def held_build(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[threading.Event, threading.Event, list[bool]]:
    """Each build of the codes (``sqlite_ann_build.extended``) held until ``go`` is set:
    ``building`` is set once one is under way, and ``released`` says for each whether it
    went on because ``go`` was set (not because the wait for it ran out)."""
    building, go = threading.Event(), threading.Event()
    released: list[bool] = []
    real = sqlite_ann_build.extended

    def extended(*args: Any) -> Any:
        building.set()
        released.append(go.wait(60))
        return real(*args)

    monkeypatch.setattr(sqlite_ann_build, "extended", extended)
    return building, go, released


def test_a_search_goes_on_while_another_thread_builds_the_codes_again(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An erasure's compaction in a server: its build (12 s at a million) lets the
    server's searches read the version open meanwhile, and they find no deleted row."""
    ann = store.open()
    target = semantic(ann, "a sleeping cat")[0]
    assert target is not None
    ann.delete(target)
    building, searched, released = held_build(monkeypatch)
    done: list[dict[str, Any]] = []
    compaction = threading.Thread(target=lambda: done.append(ann.compact()))
    compaction.start()
    try:
        assert building.wait(60)
        hits = semantic(ann, "a sleeping cat")
    finally:
        searched.set()
        compaction.join()
    assert released == [True] and done, "the compaction failed"
    assert target not in hits and hits == semantic(store.open(ann_from=0), "a sleeping cat")
    assert "vector_index_rebuilt" in done[0]["steps"] and done[0]["complete"]


def test_a_search_goes_on_while_another_thread_waits_for_the_codes_lock(store: Opened) -> None:
    """A bulk write's fold in a server waits for another process's writer; the server's
    searches read the version open and its tail meanwhile, and the fold is made once
    the other process lets go."""
    ann = store.open()
    found(ann, "boats")
    ann.write("late", description="a ferry crosses the harbour at dawn")
    waiting = threading.Event()
    folded: list[int] = []

    def heard(phase: str, done: int, total: int) -> None:
        if phase == sqlite_ann.WAITING:
            waiting.set()

    fold = threading.Thread(target=lambda: folded.append(ann.index_vectors(progress=heard)))
    with held_elsewhere(store):
        fold.start()
        shown = waiting.wait(60)
        hits = semantic(ann, "boats") if shown else []
    fold.join()
    assert shown and "late" in hits
    assert folded == [SIZE + 1] and len(index_of(ann).tail) == 0


class Watched:
    """A process's writer lock (``Indexes._writing``) that tells when a thread finds it
    held."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.found_held = threading.Event()

    def acquire(self, blocking: bool = True) -> bool:
        if self.lock.acquire(blocking=False):
            return True
        self.found_held.set()
        return self.lock.acquire(blocking=blocking)

    def release(self) -> None:
        self.lock.release()


def test_a_thread_waits_for_another_threads_writing_of_the_codes_however_long(
    store: Opened, monkeypatch: pytest.MonkeyPatch, waits: list[float]
) -> None:
    """A process's writers of the codes take turns, each waiting for the other (a thread
    of the process is running, unlike a process stopped by Ctrl-Z) past ``LOCK_WAIT_S``
    (here none: the folder's lock is only tried) and then finding the rows added; a
    search meanwhile that would add its tail only tries, and reads the tail."""
    monkeypatch.setattr(sqlite_ann, "LOCK_WAIT_S", 0.0)
    monkeypatch.setattr(sqlite_ann, "TAIL_MAX", 0)
    ann = store.open()
    found(ann, "boats")
    ann.write("late", description="a ferry crosses the harbour at dawn")
    watched = Watched()
    monkeypatch.setattr(indexes_of(ann), "_writing", watched)
    building, go, released = held_build(monkeypatch)
    first: list[int] = []
    second: list[int] = []
    one = threading.Thread(target=lambda: first.append(ann.index_vectors()))
    two = threading.Thread(target=lambda: second.append(ann.index_vectors()))
    one.start()
    try:
        assert building.wait(60)
        two.start()
        assert watched.found_held.wait(60)
        hits = semantic(ann, "boats")
    finally:
        go.set()
        one.join()
        if two.ident is not None:
            two.join()
    assert released == [True] and first == second == [SIZE + 1] and "late" in hits
    assert waits == [0.0, 0.0, 0.0] and not indexes_of(ann)._stuck  # the build; two folds


def test_removed_codes_are_let_go_of_even_if_a_search_opened_them_meanwhile(
    store: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction that removes the codes (a full disk) lets go of the version open only
    once its files are gone: a search on another thread just before cannot keep the
    removed version, deleted row and all, open after it."""
    ann = store.open()
    found(ann, "boats")
    ann.delete("m001")
    full_disk(monkeypatch)
    indexes = indexes_of(ann)
    remove = indexes._remove

    def searched_first(model: str, dim: int) -> None:
        other = threading.Thread(target=lambda: found(ann, "boats"))
        other.start()
        other.join()
        remove(model, dim)

    monkeypatch.setattr(indexes, "_remove", searched_first)
    done = ann.compact()
    assert "vector_index_removed" in done["steps"] and done["complete"] is True
    assert files_of(store) == {"lock"} and indexes._open == {}
