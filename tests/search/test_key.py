"""Search keys: a memory's context words (day, subject, thread neighbours) and its vector."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from tests.conftest import AxisEmbedder, ServiceFactory, store_state

from retain import WriteRequest, errors
from retain.search import key
from retain.search.embed import Matrix
from retain.search.lexical import STEM
from retain.service import MemoryService
from retain.storage.base import Transaction

TURNS = (
    "We adopted a kitten last week",
    "She is called Miso",
    "The vet said she is healthy",
    "Next visit is booked",
    "Bring the blue carrier",
)


def context(service: MemoryService, name: str) -> str:
    memory_id = service.get(name).memory.id
    (source,) = service.backend.read(lambda tx: tx.key_sources([memory_id]))
    return source.context


def vectors(service: MemoryService) -> dict[str, list[float]]:
    """Each memory's stored vector, by name."""

    ids = [m.id for m in service.list_memories()]

    def run(tx: Transaction) -> dict[str, list[float]]:
        model = service.embedder.model_id
        rows = tx.vectors_after(model, 0, 10_000)
        by_num = {
            num: np.frombuffer(blob, dtype="<f4").tolist()
            for num, blob in zip(rows.nums, rows.blobs, strict=True)
        }
        return {s.name or "": by_num[s.num] for s in tx.key_sources(ids) if s.num in by_num}

    return service.backend.read(run)


def write_turns(service: MemoryService, thread: str = "chat-1") -> None:
    for i, text in enumerate(TURNS, start=1):
        service.write(f"t{i}", description=text, thread=thread)


def test_a_turn_is_keyed_with_up_to_two_neighbours_each_side_in_write_order(
    lexical_service: MemoryService,
) -> None:
    write_turns(lexical_service)
    one, two, three, four, five = TURNS
    assert context(lexical_service, "t1") == f"{two} {three}"
    assert context(lexical_service, "t2") == f"{one} {three} {four}"
    assert context(lexical_service, "t3") == f"{one} {two} {four} {five}"
    assert context(lexical_service, "t5") == f"{three} {four}"


def test_a_word_only_a_neighbour_says_finds_the_turn_too(lexical_service: MemoryService) -> None:
    write_turns(lexical_service)
    lexical_service.write("elsewhere", description="Miso soup recipe")
    hits = {h.memory.name: h for h in lexical_service.search("kitten").hits}
    assert set(hits) == {"t1", "t2", "t3"}  # t1 says it; t2 and t3 have it within two turns
    assert all(STEM in h.senses for h in hits.values())


def test_a_neighbour_is_keyed_by_its_body_when_it_has_one(lexical_service: MemoryService) -> None:
    lexical_service.write("a", description="Kitten", body="We adopted a kitten", thread="t")
    lexical_service.write("b", description="Name", thread="t")
    assert context(lexical_service, "b") == "We adopted a kitten"


def test_context_holds_the_times_and_the_subject(lexical_service: MemoryService) -> None:
    lexical_service.write(
        "miso",
        description="She is called Miso",
        body="We got her last Friday",
        subject="Caroline",
        valid_from="2023-05-08",
    )
    held = "dd20230508 md0508 ww202319 mm202305 mo05 yy2023"
    friday = "dd20230505 md0505 ww202318"  # its month and year are the day's own
    assert context(lexical_service, "miso") == f"{held} {friday} Caroline"
    lexical_service.write("miso", subject="", valid_from="")
    assert context(lexical_service, "miso") == ""  # "last Friday" of no day is no time


def test_writing_into_a_thread_rekeys_the_turns_before_it(lexical_service: MemoryService) -> None:
    lexical_service.write("t1", description=TURNS[0], thread="chat-1")
    assert context(lexical_service, "t1") == ""
    lexical_service.write("t2", description=TURNS[1], thread="chat-1")
    assert context(lexical_service, "t1") == TURNS[1]


def test_deleting_a_turn_rekeys_the_neighbours_it_leaves(lexical_service: MemoryService) -> None:
    write_turns(lexical_service)
    lexical_service.delete("t3")
    one, two, _, four, five = TURNS
    assert context(lexical_service, "t1") == f"{two} {four}"
    assert context(lexical_service, "t2") == f"{one} {four} {five}"
    assert context(lexical_service, "t4") == f"{one} {two} {five}"
    assert context(lexical_service, "t5") == f"{two} {four}"


def test_moving_a_turn_to_another_thread_rekeys_both_threads(
    lexical_service: MemoryService,
) -> None:
    write_turns(lexical_service)
    lexical_service.write("other", description="Different chat", thread="chat-2")
    lexical_service.write("t3", thread="chat-2")
    one, two, three, four, five = TURNS
    assert context(lexical_service, "t2") == f"{one} {four} {five}"
    assert context(lexical_service, "t4") == f"{one} {two} {five}"
    assert context(lexical_service, "t3") == "Different chat"
    assert context(lexical_service, "other") == three
    lexical_service.write("t3", thread="")  # out of every thread
    assert context(lexical_service, "t3") == ""
    assert context(lexical_service, "other") == ""


def test_a_change_that_is_not_text_keeps_the_key(lexical_service: MemoryService) -> None:
    write_turns(lexical_service)
    before = [context(lexical_service, f"t{i}") for i in range(1, 6)]
    lexical_service.write("t3", tags=["vet"], priority=2)
    assert [context(lexical_service, f"t{i}") for i in range(1, 6)] == before


def test_threads_and_subjects_are_one_line(lexical_service: MemoryService) -> None:
    for field in ("thread", "subject"):
        with pytest.raises(errors.InvalidValue):
            lexical_service.write("n", description="A note", **{field: "two\nlines"})
        with pytest.raises(errors.InvalidValue):
            lexical_service.write("n", description="A note", **{field: "x" * 201})


def test_a_memory_vector_is_its_own_text_nudged_toward_its_neighbours(
    make_service: ServiceFactory,
) -> None:
    service = make_service(embedder=AxisEmbedder())
    service.write("a", description="a hound barked", thread="t")
    service.write("b", description="the tabby hid", thread="t")
    service.write("c", description="then the truck left", thread="t")
    service.write("solo", description="the tabby again")
    keyed = vectors(service)
    # b: e(own) = cat axis; e(neighbours' text) = (dog + car) / sqrt 2
    x, y = 1.0, 0.8 / math.sqrt(2)
    norm = math.sqrt(x * x + 2 * y * y)
    assert keyed["b"] == pytest.approx([x / norm, y / norm, y / norm, 0.0])
    # a: its neighbours b and c (cat + car) / sqrt 2 nudge the dog axis
    assert keyed["a"] == pytest.approx([y / norm, x / norm, y / norm, 0.0])
    assert keyed["solo"] == [1.0, 0.0, 0.0, 0.0]


def test_a_memory_vector_reads_its_name_and_subject(make_service: ServiceFactory) -> None:
    embedder = AxisEmbedder()
    service = make_service(embedder=embedder)
    service.write("truck-notes", description="Tyres are due", subject="hound", body="rain")
    assert embedder.calls[-1] == ["truck notes. hound: Tyres are due\nrain"]
    vector = np.asarray(vectors(service)["truck-notes"])
    assert vector == pytest.approx(np.array([0.0, 1.0, 1.0, 1.0]) / math.sqrt(3))


def test_a_write_embeds_without_numpy_only_a_few_texts_in_a_process_without_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from retain.search.key import few, FEW_TEXTS, FEW_CHARS\n"
        "assert 'numpy' not in sys.modules\n"
        "print(few(['a note'] * FEW_TEXTS), few(['a note'] * (FEW_TEXTS + 1)),\n"
        "      few(['x' * FEW_CHARS]), few(['x' * (FEW_CHARS + 1)]))\n"
        "import numpy\n"
        "print(few(['a note']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "True", "False", "False"]


# -- a batch's own texts, embedded ahead while its rows are stored ------------------------

WORDS = ("tabby", "hound", "truck", "storm", "kitten", "puppy", "engine", "snow")


def _batch(count: int) -> list[WriteRequest]:
    """Turns of two threads and lone notes, each a different mix of the axes' words."""
    return [
        WriteRequest(
            f"m{i}",
            description=f"{WORDS[i % 8]} and {WORDS[i * 3 % 8]} then {WORDS[i * 5 % 7]}",
            thread=("one", "two", None)[i % 3],
        )
        for i in range(count)
    ]


class FailingAhead(AxisEmbedder):
    """Fails on the worker thread alone: a write that swallowed the worker's failure
    and embedded again itself would succeed."""

    def embed(self, texts: Sequence[str]) -> Matrix:
        if threading.current_thread().name.startswith("retain-embed-ahead"):
            raise RuntimeError("out of memory")
        return super().embed(texts)


def test_a_batch_embedded_ahead_is_keyed_as_a_batch_embedded_in_the_write(
    make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = _batch(key.AHEAD_FROM + 7)
    embedder = AxisEmbedder()
    ahead = make_service(embedder=embedder, realm="ahead")
    ahead.write_many(requests)
    # the batch's own texts went to the worker in one call; the write embedded only
    # the threaded turns' neighbours' texts, and no own text again
    own, around = embedder.calls
    assert len(own) == len(requests)
    assert len(around) == sum(r.thread is not None for r in requests)
    assert not set(own) & set(around)
    monkeypatch.setattr(key, "AHEAD_FROM", len(requests) + 1)
    inline = make_service(embedder=AxisEmbedder(), realm="inline")
    inline.write_many(requests)
    assert vectors(ahead) == vectors(inline)
    assert len(vectors(ahead)) == len(requests)


def test_a_batch_larger_than_a_call_has_its_first_call_embedded_ahead(
    make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(key, "BATCH", key.AHEAD_FROM + 2)  # the most texts of one call
    requests = _batch(key.AHEAD_FROM * 2 + 9)
    embedder = AxisEmbedder()
    service = make_service(embedder=embedder)
    service.write_many(requests)
    assert len(embedder.calls[0]) == key.BATCH  # ahead: one call's texts, no more
    assert all(len(call) <= key.BATCH for call in embedder.calls)
    monkeypatch.setattr(key, "AHEAD_FROM", len(requests) + 1)
    inline = make_service(embedder=AxisEmbedder(), realm="inline")
    inline.write_many(requests)
    assert vectors(service) == vectors(inline)


def test_texts_not_embedded_ahead_are_embedded_by_the_write_in_their_places() -> None:
    embedder = AxisEmbedder()
    ahead = key.Ahead(embedder, ["the tabby", "a hound"])
    ahead.settle()
    texts = ["a hound", "one truck", "the tabby", "rain"]
    assert ahead.take(embedder, texts).tolist() == embedder.embed(texts).tolist()
    # the store's embedder changed meanwhile: the texts are embedded by the new one
    other = AxisEmbedder({"tabby": (0.0, 1.0), "hound": (1.0, 0.0)}, model_id="fake:other")
    assert ahead.take(other, texts).tolist() == [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    assert other.calls == [texts]


def test_a_batch_the_worker_has_not_begun_is_embedded_by_the_write_itself() -> None:
    release = threading.Event()
    busy = key._worker().submit(release.wait)  # another write's batch holds the worker
    embedder = AxisEmbedder()
    try:
        ahead = key.Ahead(embedder, ["the tabby"])
        ahead.settle()  # withdraws the texts instead of waiting for the other batch
        assert ahead.future.cancelled()
        assert ahead.take(embedder, ["the tabby"]).tolist() == [[1.0, 0.0, 0.0, 0.0]]
        assert embedder.calls == [["the tabby"]]
    finally:
        release.set()
        busy.result()


def test_an_embedder_failing_ahead_refuses_the_batch_and_writes_nothing(
    make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the write waits for the worker instead of withdrawing a batch it has not begun (on
    # a busy machine the insert can end first): the worker then always embeds, and fails
    monkeypatch.setattr(key.Ahead, "settle", lambda ahead: ahead.future.exception())
    service = make_service(embedder=FailingAhead())
    before = store_state(service)
    with pytest.raises(errors.EmbedderFailed) as caught:
        service.write_many(_batch(key.AHEAD_FROM))
    assert "out of memory" in caught.value.message
    assert store_state(service) == before
