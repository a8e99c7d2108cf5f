"""The semantic sense: a store's rows held in memory, the gate, and vectors in step with the
store."""

from __future__ import annotations

import re
import sys
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from tests.conftest import AxisEmbedder, ServiceFactory, failed_verify, store_state

from retain import errors
from retain.results import WriteRequest
from retain.search import lexical, plain
from retain.search.lexical import SEMANTIC
from retain.search.rank import BACKGROUND, gate_of
from retain.service import MemoryService
from retain.storage import sqlite_ann
from retain.storage.base import StoredVector, VectorRows
from retain.storage.sqlite_ann import Tail

# -- the rows in memory, against a stand-in for the store's vector table ----------------------


class VectorTable:
    """The reads ``Tail.refresh`` makes, over rows held in a list.

    Every row is of realm "r" unless it is put in another."""

    def __init__(self) -> None:
        self.rows: list[StoredVector] = []
        self.asked_after: list[int] = []
        self._vec = 0

    def put(
        self,
        num: int,
        vector: Sequence[float],
        model: str = "m",
        dim: int | None = None,
        realm: str = "r",
    ) -> None:
        self.rows = [r for r in self.rows if r.num != num]
        self._vec += 1
        array = np.asarray(vector, dtype=np.float32)
        self.rows.append(StoredVector(self._vec, num, model, dim or len(array), array, realm))

    def drop(self, num: int) -> None:
        self.rows = [r for r in self.rows if r.num != num]

    def last_vector(self) -> int:
        return max((r.vec for r in self.rows), default=0)

    def vectors_after(self, model: str, vec: int, limit: int) -> VectorRows:
        rows = [r for r in self.rows if r.model == model and r.vec > vec][:limit]
        if rows:
            self.asked_after.append(vec)
        return VectorRows(
            rows[-1].vec if rows else vec,
            [r.num for r in rows],
            [r.dim for r in rows],
            [r.realm for r in rows],
            [r.vector.astype("<f4").tobytes() for r in rows],
        )

    def vector_count(self, model: str) -> int:
        return sum(r.model == model for r in self.rows)


def held(dim: int = 2) -> Tail:
    """Every row of model "m" held in memory, as a store below ``ann_from`` holds them."""
    return Tail("m", dim, 0, whole=True)


def scores_by_num(tail: Tail, query: Sequence[float], realm: str = "r") -> dict[int, float]:
    """The cosine of each row of ``realm`` with ``query``, by memory number."""
    (parts,), nums = tail.scored([array("f", query)], realm)
    scores = [x for part in parts for x in plain.view(part).tolist()]
    return {nums[place]: score for place, score in enumerate(scores)}


def test_rows_in_memory_read_only_the_vectors_written_since_their_last_refresh() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0])
    table.put(2, [0, 1])
    tail.refresh(table)  # type: ignore[arg-type]
    table.put(3, [1, 0])
    tail.refresh(table)  # type: ignore[arg-type]
    tail.refresh(table)  # type: ignore[arg-type]  nothing new: nothing read
    assert table.asked_after == [0, 2]
    assert scores_by_num(tail, [1, 0]) == {1: 1.0, 2: 0.0, 3: 1.0}


def test_rows_in_memory_are_only_their_own_models() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0])
    table.put(2, [0, 1, 0], model="other")
    tail.refresh(table)  # type: ignore[arg-type]
    assert len(tail) == 1
    assert scores_by_num(tail, [1, 0]) == {1: 1.0}


def test_a_vector_written_again_replaces_its_row() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0])
    table.put(2, [1, 0])
    tail.refresh(table)  # type: ignore[arg-type]
    table.put(1, [0, 1])
    tail.refresh(table)  # type: ignore[arg-type]
    assert len(tail) == 2
    assert scores_by_num(tail, [0, 1]) == {1: 1.0, 2: 0.0}


def test_rows_of_deleted_memories_leave_when_new_vectors_arrive() -> None:
    table, tail = VectorTable(), held()
    for num in (1, 2, 3):
        table.put(num, [1, 0])
    tail.refresh(table)  # type: ignore[arg-type]
    table.drop(2)
    table.put(4, [0, 1])
    tail.refresh(table)  # type: ignore[arg-type]
    assert len(tail) == 3
    assert scores_by_num(tail, [1, 0]) == {1: 1.0, 3: 1.0, 4: 0.0}


def test_rows_past_a_chunk_are_held_in_more_and_rewritten_where_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sqlite_ann, "CHUNK", 4)  # chunks of four rows, read four at a time
    table, tail = VectorTable(), held()
    for num in range(1, 11):
        table.put(num, [1, 0] if num % 2 else [0, 1])
    tail.refresh(table)  # type: ignore[arg-type]
    first = tail._state["r"]
    assert [len(c) // 8 for c in first.chunks] == [4, 4, 2]
    table.put(2, [1, 0])  # in the first chunk
    table.put(11, [1, 0])  # onto the last
    tail.refresh(table)  # type: ignore[arg-type]
    state = tail._state["r"]
    assert [len(c) // 8 for c in state.chunks] == [4, 4, 3]
    assert state.chunks[1] is first.chunks[1]  # a chunk nothing changed is shared
    assert [len(c) // 8 for c in first.chunks] == [4, 4, 2]  # an earlier state stays whole
    scores = scores_by_num(tail, [1, 0])
    assert sorted(n for n, s in scores.items() if s == 1.0) == [1, 2, 3, 5, 7, 9, 11]
    assert tail.realm_sum("r")[0].tolist() == [7.0, 4.0]  # type: ignore[union-attr]
    assert tail.realm_sum("r")[1] == 11


def test_rows_in_memory_refuse_a_stored_vector_of_another_dimension() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0])
    tail.refresh(table)  # type: ignore[arg-type]
    table.put(2, [0, 1])
    table.put(7, [1, 0, 0])
    for _ in range(2):  # refused every time, and what was held before stays whole
        with pytest.raises(errors.DimensionMismatch, match="memory #7 has a 3-dimensional"):
            tail.refresh(table)  # type: ignore[arg-type]
        assert scores_by_num(tail, [1, 0]) == {1: 1.0} and tail._state["r"].nums == [1]
    table.drop(7)
    table.put(8, [0, 1])
    tail.refresh(table)  # type: ignore[arg-type]
    assert scores_by_num(tail, [1, 0]) == {1: 1.0, 2: 0.0, 8: 0.0}


def test_a_reader_of_an_older_snapshot_takes_in_nothing() -> None:
    table, tail = VectorTable(), held()
    for num in (1, 2, 3):
        table.put(num, [1, 0])
    tail.refresh(table)  # type: ignore[arg-type]
    older = VectorTable()  # a snapshot from before the third row
    older.rows = table.rows[:2]
    tail.refresh(older)  # type: ignore[arg-type]
    assert older.asked_after == [] and len(tail) == 3
    assert scores_by_num(tail, [1, 0]) == {1: 1.0, 2: 1.0, 3: 1.0}


def test_only_the_realms_own_rows_are_scored() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0], realm="home")
    table.put(2, [1, 0], realm="work")
    tail.refresh(table)  # type: ignore[arg-type]
    assert scores_by_num(tail, [1, 0], "home") == {1: 1.0}
    assert scores_by_num(tail, [1, 0], "work") == {2: 1.0}
    assert scores_by_num(tail, [1, 0], "empty") == {}  # no vectors


def test_rows_keep_their_realm_when_deleted_memories_leave() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0], realm="home")
    table.put(2, [1, 0], realm="work")
    table.put(3, [1, 0], realm="home")
    tail.refresh(table)  # type: ignore[arg-type]
    table.drop(1)
    table.put(4, [1, 0], realm="work")
    tail.refresh(table)  # type: ignore[arg-type]
    assert scores_by_num(tail, [1, 0], "home") == {3: 1.0}
    assert scores_by_num(tail, [1, 0], "work") == {2: 1.0, 4: 1.0}


def test_a_number_taken_by_another_realms_memory_has_the_rows_read_afresh() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0], realm="home")
    table.put(2, [0, 1], realm="home")
    tail.refresh(table)  # type: ignore[arg-type]
    table.put(1, [1, 0], realm="work")  # memory 1 deleted, its number taken in "work"
    tail.refresh(table)  # type: ignore[arg-type]
    assert scores_by_num(tail, [1, 0], "work") == {1: 1.0}
    assert scores_by_num(tail, [1, 0], "home") == {2: 0.0}
    assert tail.realm_sum("home")[0].tolist() == [0.0, 1.0]  # type: ignore[union-attr]
    assert (tail.realm_sum("home")[1], tail.realm_sum("work")[1]) == (1, 1)
    table.put(1, [-1, 0], realm="home")  # and back: one place for it, where it is now
    tail.refresh(table)  # type: ignore[arg-type]
    assert scores_by_num(tail, [1, 0], "home") == {2: 0.0, 1: -1.0}
    assert scores_by_num(tail, [1, 0], "work") == {}


# -- the gate ---------------------------------------------------------------------------------


def cosines(*values: float) -> npt.NDArray[np.float32]:
    return np.asarray(values, dtype=np.float32)


def semantic_gate(store: npt.NDArray[np.float32], background: npt.NDArray[np.float32]) -> float:
    return gate_of(float(store.sum()), store.size, background)


def test_the_gate_is_the_floor_or_the_mean_plus_the_margin() -> None:
    assert semantic_gate(cosines(), cosines()) == 0.2
    assert semantic_gate(cosines(0.0, 0.1, 0.0), cosines()) == 0.2  # 0.033 + 0.15 < the floor
    assert semantic_gate(cosines(0.5, 0.5), cosines()) == pytest.approx(0.65)
    assert semantic_gate(cosines(1.0, 0.0, 0.0, 0.0), cosines()) == pytest.approx(0.4)


def test_the_gates_mean_takes_in_the_background_and_leaves_out_other_realms() -> None:
    # one memory at 1.0 and three background sentences at 0: mean 0.25 + 0.15
    assert semantic_gate(cosines(1.0), cosines(0.0, 0.0, 0.0)) == pytest.approx(0.4)
    # the background alone, for a realm with no vectors: mean 0.4 + 0.15
    assert semantic_gate(cosines(), cosines(0.4, 0.4)) == pytest.approx(0.55)


def test_the_gates_sum_is_the_realms_own() -> None:
    table, tail = VectorTable(), held()
    table.put(1, [1, 0], realm="home")
    table.put(2, [0, 1], realm="work")
    table.put(3, [0.6, 0.8], realm="home")
    tail.refresh(table)  # type: ignore[arg-type]
    total, count = tail.realm_sum("home")
    assert total is not None and (total.tolist(), count) == (pytest.approx([1.6, 0.8]), 2)
    assert tail.realm_sum("empty") == (None, 0)


def test_the_gate_sits_three_deviations_above_the_unrelated_sentences() -> None:
    # background 0.1 and 0.5: mean 0.3, deviation 0.2, so 0.3 + 3 × 0.2 = 0.9, above
    # the mean of everything (store 0.9 among them) plus the margin
    assert semantic_gate(cosines(0.9), cosines(0.1, 0.5)) == pytest.approx(0.9)
    # one topical sentence among many unrelated ones moves it only so far
    background = cosines(1.0, *[0.0] * 39)
    spread = float(np.std(np.array([1.0] + [0.0] * 39)))
    assert semantic_gate(cosines(), background) == pytest.approx(0.025 + 3 * spread)


# -- the semantic sense in search, with exact vectors -----------------------------------------


@pytest.fixture
def axes(make_service: ServiceFactory) -> MemoryService:
    """A service embedding with ``AxisEmbedder``: one memory on each of three topics."""
    service = make_service(embedder=AxisEmbedder())
    service.write("pet", description="our tabby sleeps all day")
    service.write("walks", description="the hound wants walks")
    service.write("ride", description="the truck needs new tyres")
    return service


def names(service: MemoryService, *queries: str, **kw: object) -> list[str | None]:
    return [h.memory.name for h in service.search(list(queries), **kw).hits]  # type: ignore[arg-type]


def test_a_query_finds_a_memory_by_meaning_alone(axes: MemoryService) -> None:
    (hit,) = axes.search("kitten").hits  # no stored word says kitten
    assert (hit.memory.name, hit.senses) == ("pet", (SEMANTIC,))
    # relevance 1 (the only hit); salience of a fresh priority-5 memory 19/30
    assert hit.score == pytest.approx(0.85 + 0.15 * 19 / 30)


def test_a_query_about_nothing_stored_finds_nothing_by_meaning(axes: MemoryService) -> None:
    assert axes.search("snow").hits == ()  # orthogonal to every memory
    assert axes.search("zebra").hits == ()  # no vector at all


def test_a_store_of_one_memory_finds_it_by_meaning(make_service: ServiceFactory) -> None:
    service = make_service(embedder=AxisEmbedder())
    service.write("pet", description="our tabby sleeps all day")
    # Cosine 1, against a mean of 2/41 over it and the background (whose one cat sentence
    # scores 1, the rest 0): the gate is the floor, 0.2, not 1 + 0.15 as the store alone.
    (hit,) = service.search("kitten").hits
    assert (hit.memory.name, hit.senses) == ("pet", (SEMANTIC,))


def test_a_query_near_everything_returns_no_least_bad_rows(make_service: ServiceFactory) -> None:
    service = make_service(embedder=AxisEmbedder())
    topics = ("tabby", "hound", "truck", "storm")
    service.write_many(
        [WriteRequest(f"m{i:03}", description=f"a {topics[i % 4]}") for i in range(100)]
    )
    # Cosine 0.5 with each memory and with the cat and storm sentences of the background,
    # 0 with the other 38: the gate is (100 × 0.5 + 2 × 0.5) / 140 + 0.15 = 0.514.
    assert service.search("kitten puppy car rain").hits == ()
    assert len(service.search("kitten", limit=30).hits) == 25  # the 25 that stand out


def test_a_weak_match_below_the_floor_is_not_a_semantic_hit(make_service: ServiceFactory) -> None:
    words = {"kitten": (1.0, 0.0), "misty": (0.19, 0.98), "hazy": (0.21, 0.978), "rain": (0, 1)}
    service = make_service(embedder=AxisEmbedder(words))
    service.write("low", description="misty")
    service.write("high", description="hazy")
    for i in range(8):
        service.write(f"r{i}", description="rain")
    # cosines 0.19 and 0.21 against a mean of 0.4 / 50 (the background scores 0): only the
    # floor (0.2) decides
    assert names(service, "kitten") == ["high"]


def test_a_memory_must_stand_out_against_the_background(make_service: ServiceFactory) -> None:
    words = {"the": (1.0, 0.0), "kitten": (0.0, 1.0), "tabby": (0.0, 1.0)}
    assert sum("the" in re.findall(r"[a-z]+", s.lower()) for s in BACKGROUND) == 37
    service = make_service(embedder=AxisEmbedder(words))
    service.write("plain", description="our tabby")  # cosine 0.71 with "the kitten"
    service.write("echo", description="the tabby")  # cosine 1
    # 37 background sentences hold "the" (0.71), 3 nothing (0): unrelated text scores
    # 0.66 ± 0.23, so nothing stands three deviations above it.
    assert service.search("the kitten").hits == ()
    assert set(names(service, "kitten")) == {"plain", "echo"}  # the background scores 0


def test_the_background_is_embedded_once_per_embedder(make_service: ServiceFactory) -> None:
    embedder = AxisEmbedder()
    service = make_service(embedder=embedder)
    service.write("pet", description="our tabby sleeps all day")
    service.search("kitten")
    service.search("hound")
    assert embedder.calls.count(list(BACKGROUND)) == 1
    other = AxisEmbedder(model_id="fake:other")
    make_service(embedder=other).search("kitten")
    assert other.calls.count(list(BACKGROUND)) == 1


def test_semantic_hits_obey_scopes_and_keep_expired_memories_marked(
    make_service: ServiceFactory,
) -> None:
    service = make_service(embedder=AxisEmbedder())
    service.add_project("a")
    service.add_project("b")
    service.write("pet-a", description="a tabby named Tom", project="a")
    service.write("ride", description="the truck needs new tyres")
    service.write("walks", description="the hound wants walks")
    service.write("old-pet", description="a feline long gone", expires="2026-03-01T12:00:00Z")
    found = service.search("kitten", project="a").hits
    assert [(h.memory.name, h.expired) for h in found] == [("pet-a", False), ("old-pet", True)]
    assert names(service, "kitten", project="b") == ["old-pet"]  # global, expired
    assert names(service, "kitten", expired=True) == ["old-pet"]


def test_memories_written_after_a_search_are_found_by_the_next(
    make_service: ServiceFactory,
) -> None:
    service = make_service(embedder=AxisEmbedder())
    service.write("ride", description="the truck needs new tyres")
    service.write("walks", description="the hound wants walks")
    assert names(service, "kitten") == []
    service.write("pet", description="our tabby sleeps all day")
    assert names(service, "kitten") == ["pet"]


def test_a_deleted_memory_is_not_found_by_meaning(axes: MemoryService) -> None:
    assert names(axes, "kitten") == ["pet"]
    axes.delete("pet")
    assert names(axes, "kitten") == []
    axes.write("pet", description="a new tabby arrived")
    assert names(axes, "kitten") == ["pet"]


def test_a_changed_text_moves_its_vector(axes: MemoryService) -> None:
    assert names(axes, "kitten") == ["pet"]
    axes.write("pet", description="our puppy sleeps all day")
    assert names(axes, "kitten") == []
    assert set(names(axes, "canine")) == {"walks", "pet"}


def test_another_service_on_the_store_sees_new_vectors(make_service: ServiceFactory) -> None:
    reader = make_service(embedder=AxisEmbedder())
    writer = make_service(embedder=AxisEmbedder())
    writer.write("ride", description="the truck needs new tyres")
    writer.write("walks", description="the hound wants walks")
    assert names(reader, "kitten") == []
    writer.write("pet", description="our tabby sleeps all day")
    assert names(reader, "kitten") == ["pet"]
    writer.delete("pet")
    assert names(reader, "kitten") == []


# -- vectors and the embedder in use ----------------------------------------------------------


def test_an_embedder_returning_another_dimension_is_refused_and_nothing_lands(
    make_service: ServiceFactory,
) -> None:
    service = make_service(embedder=AxisEmbedder(dim=5))  # declares 5, makes 4
    before = store_state(service)
    with pytest.raises(errors.DimensionMismatch) as caught:
        service.write("pet", description="our tabby sleeps all day")
    assert caught.value.code == "dimension_mismatch"
    assert caught.value.details == {
        "model": "fake:axes",
        "expected_dim": 5,
        "actual_dim": 4,
        "fix": "reindex",
    }
    assert store_state(service) == before
    with pytest.raises(errors.DimensionMismatch):
        service.search("kitten")


def test_vectors_of_one_model_id_in_another_dimension_are_refused_until_reindexed(
    make_service: ServiceFactory,
) -> None:
    narrow = make_service(embedder=AxisEmbedder())
    narrow.write("pet", description="our tabby sleeps all day")
    narrow.write("walks", description="the hound wants walks")
    wider = {word: (*vector, 0.0) for word, vector in AxisEmbedder().words.items()}
    wide = make_service(embedder=AxisEmbedder(wider))  # the same model id, five dimensions
    for _ in range(3):  # refused every time, not once per stored row
        with pytest.raises(errors.DimensionMismatch, match="reindex the store"):
            wide.search("kitten")
    assert wide.reindex() == 2
    assert names(wide, "kitten") == ["pet"]


def test_a_model_change_is_seen_and_reindex_repairs_it(make_service: ServiceFactory) -> None:
    first = make_service(embedder=AxisEmbedder(model_id="fake:a"))
    first.write("pet", description="our tabby sleeps all day")
    first.write("walks", description="the hound wants walks")
    assert (first.status().vectors, first.verify().ok) == (2, True)

    second = make_service(embedder=AxisEmbedder(model_id="fake:b"))
    status = second.status()
    assert (status.embedder, status.vectors) == ("fake:b", 0)
    report = failed_verify(second)
    assert report.vectors == 0
    assert report.problems == ("2 of the store's 2 memories have no vector of fake:b",)
    assert names(second, "kitten") == []  # no vectors of its model yet: no semantic hits

    seen: list[tuple[str, int, int]] = []
    assert second.reindex(progress=lambda *a: seen.append(a)) == 2
    assert seen == [("reindex", 0, 2), ("reindex", 2, 2)]
    report = second.verify()
    assert (report.ok, report.vectors, report.problems) == (True, 2, ())
    assert second.status().vectors == 2
    assert names(second, "kitten") == ["pet"]


def test_reindex_covers_every_realm(make_service: ServiceFactory) -> None:
    home = make_service(embedder=AxisEmbedder(model_id="fake:a"))
    home.write("pet", description="our tabby sleeps all day")
    other = make_service(embedder=AxisEmbedder(model_id="fake:a"), realm="work")
    other.write("walks", description="the hound wants walks")
    switched = make_service(embedder=AxisEmbedder(model_id="fake:b"))
    assert switched.reindex() == 2
    assert switched.verify().problems == ()
    assert other.backend.read(lambda tx: tx.vector_counts()) == {"fake:b": 2}


@pytest.mark.parametrize(
    "realms",
    [
        {"home": 2},
        {"home": 2, "aa": 3},
        {"home": 3, "zz": 2},
        {"home": 4, "aa": 1, "zz": 1},
        {"home": 1, "aa": 2, "zz": 2},
        {"home": 2, "mm": 0},
    ],
)
def test_a_realms_vectors_are_counted_alone(
    make_service: ServiceFactory, realms: dict[str, int]
) -> None:
    """``status().vectors`` counts the realm's vectors of the model in use, whether the
    store holds other realms (before and after it in order, more memories or fewer)
    or none, and whether the realm holds any."""
    services = {
        realm: make_service(embedder=AxisEmbedder(model_id="fake:a"), realm=realm)
        for realm in realms
    }
    for realm, service in services.items():
        for n in range(realms[realm]):
            service.write(f"n{n}", description=f"note {n} of {realm}")
    assert {r: s.status().vectors for r, s in services.items()} == realms
    counted = services["home"].backend.read(lambda tx: tx.vector_counts())
    assert counted == {"fake:a": sum(realms.values())}


def test_a_realms_vectors_of_each_model_are_counted_alone(make_service: ServiceFactory) -> None:
    """Vectors of a model only other realms hold, or of one the realm alone holds, are
    counted where they are (the realm holding most of the store's memories, or few)."""
    many = make_service(embedder=AxisEmbedder(model_id="fake:a"), realm="many")
    for n in range(4):
        many.write(f"n{n}", description=f"note {n} of many")
    few = make_service(embedder=AxisEmbedder(model_id="fake:b"), realm="few")
    few.write("n0", description="the only note of few")
    few_too = make_service(embedder=AxisEmbedder(model_id="fake:b"), realm="zz")
    few_too.write("n0", description="the only note of zz")
    counts = {
        realm: service.backend.read(lambda tx, r=realm: tx.vector_counts(r))
        for realm, service in (("many", many), ("few", few), ("zz", few_too), ("none", few))
    }
    assert counts == {"many": {"fake:a": 4}, "few": {"fake:b": 1}, "zz": {"fake:b": 1}, "none": {}}


def test_another_realms_memories_do_not_change_what_a_realm_finds(
    make_service: ServiceFactory,
) -> None:
    work = make_service(embedder=AxisEmbedder(), realm="work")
    work.write("pet", description="our tabby sleeps in the rain")  # cosine 0.71 with "kitten"
    work.write("ride", description="the truck needs new tyres")
    work.write("walks", description="the hound wants walks")
    assert names(work, "kitten") == ["pet"]
    home = make_service(embedder=AxisEmbedder(), realm="home")
    home.write_many([WriteRequest(f"c{i}", description="a kitten") for i in range(60)])
    # in the mean, sixty memories at cosine 1 would lift the gate to 61.71 / 103 + 0.15 = 0.75
    assert names(work, "kitten") == ["pet"]
    assert len(names(home, "kitten", limit=100)) == 60


class FailingEmbedder(AxisEmbedder):
    """An embedder whose model fails at run time, as a model out of memory does."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise RuntimeError("out of memory")


def test_an_embedder_failing_in_use_is_embedder_failed_and_nothing_lands(
    make_service: ServiceFactory,
) -> None:
    service = make_service(embedder=FailingEmbedder())
    with pytest.raises(errors.EmbedderFailed, match="RuntimeError: out of memory"):
        service.write("pet", description="our tabby sleeps all day")
    assert service.list_memories() == []
    with pytest.raises(errors.EmbedderFailed):
        service.search("kitten")


def test_a_query_at_the_limits_is_searched_and_a_longer_one_refused(
    service: MemoryService,
) -> None:
    service.write("pet", description="our tabby sleeps all day", subject="Tom")
    query = " ".join(["tabby"] + [f"word{i}" for i in range(lexical.MAX_WORDS - 1)])
    assert [h.memory.name for h in service.search(query).hits] == ["pet"]
    with pytest.raises(errors.QueryTooLong):
        service.search(" ".join(["tabby"] + [f"word{i}" for i in range(3000)]))


def test_scanning_codes_leaves_every_reference_as_it_was() -> None:
    # SimSIMD's cdist(out=...) returned None without a reference: a store of a million
    # aborted the interpreter ("deallocating None") after some hundred searches.
    rng = np.random.default_rng(3)
    asked = rng.integers(-127, 128, size=(2, 32), dtype=np.int8)
    codes = rng.integers(-127, 128, size=(50, 32), dtype=np.int8)
    step = rng.uniform(0.01, 1.0, size=50).astype(np.float32)
    steps = array("f", step.tobytes())
    rows, coded = plain.int8_rows(asked.tobytes(), 32), plain.int8_rows(codes.tobytes(), 32)
    before = sys.getrefcount(None)
    for _ in range(2000):
        found = sqlite_ann.scan(rows, coded, steps)
    assert abs(sys.getrefcount(None) - before) < 100
    out = np.array([np.frombuffer(part, dtype=np.float32) for part in found])
    truth = (asked.astype(np.float64) @ codes.T.astype(np.float64)) * step.astype(np.float64)
    assert np.allclose(out, truth, rtol=1e-6, atol=1e-3)  # products of up to 32 × 127²


@pytest.mark.parametrize(("realm", "looked_up"), [("few", "mine"), ("many", "theirs")])
def test_a_sqlite_realms_vectors_are_found_from_the_side_of_fewer_memories(
    make_service: ServiceFactory, realm: str, looked_up: str
) -> None:
    """Each vector looked up is a seek: a small realm beside a larger one looks up its
    own, a large one the others' (taken away from every vector's count), never both."""
    services = {
        name: make_service(embedder=AxisEmbedder(model_id="fake:a"), realm=name)
        for name in ("many", "few")
    }
    for name, count in (("many", 5), ("few", 2)):
        for n in range(count):
            services[name].write(f"n{n}", description=f"note {n} of {name}")
    backend = services[realm].backend
    if type(backend).__name__ != "SqliteBackend":
        pytest.skip("SQLite's count")
    sent: list[str] = []

    def counted(tx: Any) -> dict[str, int]:
        tx.con.set_trace_callback(sent.append)
        try:
            return dict(tx.vector_counts(realm))
        finally:
            tx.con.set_trace_callback(None)

    assert backend.read(counted) == {"fake:a": 5 if realm == "many" else 2}
    joins = [s for s in sent if "CROSS JOIN memory_vectors" in s]
    assert len(joins) == 1
    assert ("UNION ALL" in joins[0]) == (looked_up == "theirs")
