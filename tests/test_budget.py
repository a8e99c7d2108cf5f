"""The inline budget, with exact byte counts."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.config import Settings
from retain.service import MemoryService
from retain.storage.base import InlineEntry


@pytest.fixture
def small(make_service: ServiceFactory) -> MemoryService:
    return make_service(settings=Settings(inline_max_bytes=100))


def test_inline_write_up_to_the_budget_passes(small: MemoryService) -> None:
    small.write("a", description="a", load="inline", body="x" * 60)
    small.write("b", description="b", load="inline", body="y" * 40)
    assert small.status().inline_bytes == 100


def test_inline_write_past_the_budget_is_refused_with_totals_and_names(
    small: MemoryService,
) -> None:
    small.write("handbook", description="a", load="inline", body="x" * 60)
    small.write("tone", description="b", load="inline", body="y" * 30)
    before = store_state(small)
    with pytest.raises(errors.InlineBudgetExceeded) as caught:
        small.write("deploy", description="c", load="inline", body="é" * 6)  # 12 bytes
    error = caught.value
    assert error.details["total_bytes"] == 102
    assert error.details["budget_bytes"] == 100
    assert [e["name"] for e in error.details["largest"]] == ["handbook", "tone", "deploy"]
    assert "would total 102 bytes against the 100 bytes inline budget" in error.message
    assert error.remedy.startswith("shorten 'handbook' (60 bytes), 'tone' (30 bytes) or 'deploy'")
    assert error.remedy.endswith("or set load: index on one that is not a standing rule")
    assert store_state(small) == before


def test_budget_counts_only_inline_bodies_in_force(
    small: MemoryService, clock: ManualClock
) -> None:
    small.write("index-note", description="a", load="index", body="x" * 500)
    small.write("search-note", description="a", load="search", body="x" * 500)
    small.write("empty", description="a", load="inline")
    small.write("gone", description="a", load="inline", body="x" * 90, expires="2026-03-01")
    clock.advance(days=2)
    small.write("fits", description="b", load="inline", body="y" * 100)
    assert small.status().inline_bytes == 100


def test_edit_and_load_change_are_held_to_the_budget(small: MemoryService) -> None:
    small.write("a", description="a", load="inline", body="x" * 89 + "!")
    small.write("b", description="b", load="index", body="y" * 50)
    before = store_state(small)
    with pytest.raises(errors.InlineBudgetExceeded):
        small.edit("a", "!", "z" * 20)
    with pytest.raises(errors.InlineBudgetExceeded):
        small.write("b", load="inline")
    assert store_state(small) == before


def test_a_write_that_shrinks_or_keeps_an_over_budget_band_passes(
    make_service: ServiceFactory,
) -> None:
    big = make_service(settings=Settings(inline_max_bytes=1000))
    big.write("a", description="a", load="inline", body="x" * 150)
    big.write("b", description="b", load="inline", body="y" * 50)
    small = make_service(settings=Settings(inline_max_bytes=100))  # the key lowered
    small.write("a", description="still too big, unchanged size")
    small.write("a", body="x" * 120)  # shrinks, still over
    with pytest.raises(errors.InlineBudgetExceeded):
        small.write("a", body="x" * 121)
    small.write("b", load="index")
    small.write("a", body="x" * 100)
    assert small.status().inline_bytes == 100


def test_project_write_counts_global_plus_that_project(small: MemoryService) -> None:
    small.add_project("web")
    small.add_project("api")
    small.write("g", description="g", load="inline", body="g" * 50)
    small.write("w", description="w", load="inline", body="w" * 50, project="web")
    small.write("a", description="a", load="inline", body="a" * 50, project="api")
    with pytest.raises(errors.InlineBudgetExceeded) as caught:
        small.write("w2", description="w", load="inline", body="w", project="web")
    assert caught.value.details["project"] == "web"


def test_global_write_counts_global_plus_the_fullest_project(small: MemoryService) -> None:
    small.add_project("web")
    small.add_project("api")
    small.write("w", description="w", load="inline", body="w" * 80, project="web")
    small.write("a", description="a", load="inline", body="a" * 10, project="api")
    small.write("g", description="g", load="inline", body="g" * 20)
    with pytest.raises(errors.InlineBudgetExceeded) as caught:
        small.write("g2", description="g", load="inline", body="g")
    assert caught.value.details["project"] == "web"
    assert caught.value.details["total_bytes"] == 101


def test_a_batch_is_measured_as_a_whole(small: MemoryService) -> None:
    from retain.results import WriteRequest

    small.write("a", description="a", load="inline", body="x" * 90)
    # Alone the first would exceed; with the second shrinking 'a' the batch fits.
    small.write_many(
        [
            WriteRequest("b", description="b", load="inline", body="y" * 50),
            WriteRequest("a", body="x" * 40),
        ]
    )
    assert small.status().inline_bytes == 90


def test_the_inline_entries_are_read_only_by_a_write_that_spends_or_frees_budget(
    small: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retain.results import WriteRequest
    from retain.storage.statements import SqlStatements

    reads: list[str] = []
    entries = SqlStatements.inline_entries

    def counted(self: SqlStatements, realm: str, now: str) -> list[InlineEntry]:
        reads.append(realm)
        return entries(self, realm, now)

    monkeypatch.setattr(SqlStatements, "inline_entries", counted)
    small.write("a", description="a", load="inline", body="x" * 59 + "!")
    small.write_many([WriteRequest("n1", description="n"), WriteRequest("n2", description="n")])
    small.write("a", description="a, described again")  # its body and load as they were
    small.edit("a", "!", "?")  # one of its 60 bytes changed: spent again
    assert len(reads) == 3  # the first write, the redescription (it counts), the edit
    small.write("n1", description="n", load="search", body="z" * 500)
    assert len(reads) == 3
    small.write("a", description="a", load="search")  # frees its 60 bytes
    assert len(reads) == 4
    assert small.status().inline_bytes == 0


def test_sizes_read_in_bytes_then_kib() -> None:
    from retain.budget import kib

    assert (kib(1023), kib(1024), kib(34_202)) == ("1023 bytes", "1.0 KiB", "33.4 KiB")
