"""The optional reranker: its fused order, the search it reorders, and its refusals."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory

from retain import errors
from retain.config import Settings, load_settings
from retain.search import rerank
from retain.search.embed import EmbedderSettings

LEXICAL = Settings(embedder=EmbedderSettings(provider="none"))


@pytest.fixture(autouse=True)
def fresh_reranker_cache() -> Iterator[None]:
    load = rerank.load_reranker  # the cached loader itself, whatever a test patches in
    load.cache_clear()
    yield
    load.cache_clear()


class Judge:
    """A reranker that scores a text by how many of its favourite words it holds."""

    name = "fake:judge"

    def __init__(self, *favourites: str) -> None:
        self.favourites = favourites
        self.asked: list[tuple[str, list[str]]] = []

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        self.asked.append((query, list(texts)))
        return [float(sum(w in text for w in self.favourites)) for text in texts]


def test_fused_order_is_the_reciprocal_rank_fusion_of_both_orders() -> None:
    # hybrid order 0,1,2,3, the reranker's 3,2,1,0: the ends, first of one list each,
    # beat the middle (1/61 + 1/64 > 1/62 + 1/63); between equals the hybrid's order
    assert rerank.fused_order(4, [0.0, 1.0, 2.0, 3.0]) == [0, 3, 1, 2]
    # the reranker's order 2,0,1 (its top pick climbs one place past a hybrid 2nd)
    assert rerank.fused_order(3, [0.5, 0.1, 0.9]) == [0, 2, 1]
    # agreement keeps the order; a reranker's equal scores leave the hybrid's
    assert rerank.fused_order(3, [3.0, 2.0, 1.0]) == [0, 1, 2]
    assert rerank.fused_order(3, [1.0, 1.0, 1.0]) == [0, 1, 2]


def test_without_a_reranker_a_search_is_not_reordered(make_service: ServiceFactory) -> None:
    service = make_service(settings=LEXICAL)
    assert service.store.reranker is None
    service.write("a", description="garden tools", body="garden garden garden")
    service.write("b", description="garden shed", body="the shed")
    assert [h.memory.name for h in service.search("garden").hits] == ["a", "b"]


def test_a_configured_reranker_reorders_the_best_candidates(
    make_service: ServiceFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = Judge("shed", "roof", "door")
    monkeypatch.setattr(rerank, "load_reranker", lambda path: judge)
    plain = make_service(settings=LEXICAL)
    for name, body in [
        ("a", "garden garden garden, rows of beans"),
        ("b", "garden, garden and the hose"),
        ("c", "garden by the shed with its roof and door"),
    ]:
        plain.write(name, description=f"note {name}", body=body)
    before = plain.search("garden")
    assert [h.memory.name for h in before.hits] == ["a", "b", "c"]

    judged = make_service(settings=Settings(embedder=LEXICAL.embedder, reranker=str(tmp_path)))
    after = judged.search("garden")
    # hybrid places a0 b1 c2, the reranker's c0 a1 b2 (ties: the hybrid's): fused a, c, b
    assert [h.memory.name for h in after.hits] == ["a", "c", "b"]
    assert [h.score for h in after.hits] == [h.score for h in before.hits]  # still falling
    ((query, texts),) = judge.asked
    assert query == "garden"
    assert texts[2] == "note c\ngarden by the shed with its roof and door"  # description, body


def test_a_search_of_several_queries_judges_each_candidate_by_its_best(
    make_service: ServiceFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = Judge("shed")
    monkeypatch.setattr(rerank, "load_reranker", lambda path: judge)
    service = make_service(settings=Settings(embedder=LEXICAL.embedder, reranker=str(tmp_path)))
    service.write("a", description="garden", body="garden garden garden")
    service.write("b", description="garden", body="garden shed")
    service.search(["garden", "beans"])
    assert [query for query, _ in judge.asked] == ["garden", "beans"]


def test_a_reranker_that_cannot_load_refuses_the_search(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    service = make_service(settings=Settings(embedder=LEXICAL.embedder, reranker=str(tmp_path)))
    service.write("a", description="garden", body="garden tools")
    with pytest.raises(errors.EmbedderFailed, match="the reranker in .* cannot load") as caught:
        service.search("garden")
    assert caught.value.code == "embedder_failed"
    assert "[search] reranker" in caught.value.remedy


def test_the_reranker_setting_is_read_from_config(tmp_path: Path) -> None:
    assert load_settings(tmp_path).reranker == ""
    model = tmp_path / "model"
    model.mkdir()
    (tmp_path / "config.toml").write_text(f'[search]\nreranker = "{model}"\n')
    assert load_settings(tmp_path).reranker == str(model)


@pytest.mark.parametrize(
    ("value", "message"),
    [('"/no/such/model"', "is not a directory"), ("3", "must be text")],
)
def test_a_reranker_setting_that_is_no_directory_is_refused(
    tmp_path: Path, value: str, message: str
) -> None:
    (tmp_path / "config.toml").write_text(f"[search]\nreranker = {value}\n")
    with pytest.raises(errors.ConfigInvalid, match=message) as caught:
        load_settings(tmp_path)
    assert caught.value.code == "config_invalid"
    assert str(tmp_path / "config.toml") in caught.value.message
