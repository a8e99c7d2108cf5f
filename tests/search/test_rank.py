"""Ranking: fusion with shared ranks, the phrase, subject and thread senses, and token budgets."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from tests.conftest import AxisEmbedder, ServiceFactory

from retain import errors
from retain.model import Load, Memory, Status, Trust
from retain.results import SearchHit, WriteRequest
from retain.search import rank
from retain.search.lexical import (
    PHRASE,
    PREFIX,
    SEMANTIC,
    STEM,
    SUBJECT,
    THREAD,
    SenseHits,
    analyze,
)
from retain.service import MemoryService
from retain.storage.base import LexicalHit


def names(service: MemoryService, *queries: str, **kw: object) -> list[str | None]:
    return [h.memory.name for h in service.search(list(queries), **kw).hits]  # type: ignore[arg-type]


def senses_at(service: MemoryService, query: str, limit: int) -> list[tuple[str | None, tuple]]:
    return [(h.memory.name, h.senses) for h in service.search(query, limit=limit).hits]


def senses(service: MemoryService, query: str) -> dict[str | None, tuple[str, ...]]:
    return {h.memory.name: h.senses for h in service.search(query).hits}


# -- fusion -----------------------------------------------------------------------------------


def test_fusion_weighs_each_sense_by_reciprocal_rank_and_equal_scores_share_a_rank() -> None:
    stem = SenseHits(STEM, (LexicalHit("a", 3.0), LexicalHit("b", 3.0), LexicalHit("c", 1.0)))
    semantic = SenseHits(SEMANTIC, (LexicalHit("c", 0.9),))
    phrase = SenseHits(PHRASE, (LexicalHit("a", 2.0),))
    fused = rank.fuse([("q", [stem, semantic, phrase])])
    k = rank.RRF_K
    assert fused["a"].score == pytest.approx(1 / (k + 1) + 0.25 / (k + 1))
    assert fused["b"].score == pytest.approx(1 / (k + 1))  # tied with a: rank 1, not 2
    assert fused["c"].score == pytest.approx(1 / (k + 3) + 0.5 / (k + 1))  # 3rd after a tie
    assert (fused["a"].senses, fused["c"].senses) == ([STEM, PHRASE], [STEM, SEMANTIC])


def test_fusion_adds_up_the_queries_of_a_list() -> None:
    first = SenseHits(STEM, (LexicalHit("a", 1.0),))
    second = SenseHits(STEM, (LexicalHit("b", 2.0), LexicalHit("a", 1.0)))
    fused = rank.fuse([("terse", [first]), ("brief", [second])])
    assert fused["a"].score == pytest.approx(1 / (rank.RRF_K + 1) + 1 / (rank.RRF_K + 2))
    assert fused["a"].queries == ["terse", "brief"]


# -- the phrase sense -------------------------------------------------------------------------


def test_analyze_pairs_neighbouring_words_but_not_across_stopwords() -> None:
    plan = analyze("What did the support group say to Caroline")
    assert plan.words == ("support", "group", "say", "Caroline")
    assert plan.pairs == ("support group", "group say")
    assert analyze("the of and").words == ("the", "of", "and")  # nothing but stopwords: kept


def test_words_said_together_outrank_the_same_words_apart(lexical_service: MemoryService) -> None:
    lexical_service.write("together", description="She joined a support group in May")
    lexical_service.write("apart", description="The group offered support in May")
    assert names(lexical_service, "support group") == ["together", "apart"]
    found = senses(lexical_service, "what support group")
    assert found == {"together": (STEM, PHRASE), "apart": (STEM,)}


def test_stopwords_do_not_decide_a_ranking(lexical_service: MemoryService) -> None:
    lexical_service.write("kestrel", description="A kestrel hovers over the field")
    lexical_service.write("chatter", description="What did you do and where did you go")
    assert names(lexical_service, "what did the kestrel do") == ["kestrel"]


# -- the subject sense ------------------------------------------------------------------------


@pytest.fixture
def hikers(lexical_service: MemoryService) -> MemoryService:
    lexical_service.write("c", description="Enjoys hiking in the hills", subject="Caroline")
    lexical_service.write("m", description="Enjoys hiking in the hills", subject="Melanie")
    return lexical_service


def test_a_query_naming_one_subject_lifts_that_subjects_memories(hikers: MemoryService) -> None:
    for query in ("Does Caroline enjoy hiking?", "does caroline's hiking"):
        found = senses(hikers, query)
        assert list(found) == ["c", "m"]
        assert SUBJECT in found["c"] and SUBJECT not in found["m"]


def test_a_query_naming_two_subjects_lifts_neither(hikers: MemoryService) -> None:
    found = senses(hikers, "Do Caroline and Melanie enjoy hiking?")
    assert set(found) == {"c", "m"}
    assert all(SUBJECT not in s for s in found.values())


def test_the_subject_lift_is_a_share_of_the_best_score() -> None:
    memories = {m.id: m for m in _memories(("a", "Ann"), ("b", "Bob"), ("c", None))}
    fused = {i: rank.Fused(score=s) for i, s in zip(memories, (0.1, 0.2, 0.05), strict=True)}
    rank.favour_subject(fused, memories, ["ann"])
    lifted = 0.1 + rank.SUBJECT_LIFT * 0.2
    assert [f.score for f in fused.values()] == pytest.approx([lifted, 0.2, 0.05])
    assert [f.senses for f in fused.values()] == [[SUBJECT], [], []]
    rank.favour_subject(fused, memories, ["Ann", "Bob"])  # two subjects named: no lift
    assert [f.senses for f in fused.values()] == [[SUBJECT], [], []]


def test_subject_phrases_are_runs_of_up_to_three_words_without_possessives() -> None:
    assert rank.subject_phrases(["Ann Lee's cat"]) == [
        "Ann", "Lee", "cat", "Ann Lee", "Lee cat", "Ann Lee cat",
    ]  # fmt: skip


def _memories(*spec: tuple[str, str | None], thread: str | None = None) -> list[Memory]:
    when = datetime(2026, 3, 1, tzinfo=UTC)
    return [
        Memory(
            id=f"id-{name}", realm="default", scope="global", name=name, description=name,
            body="", tags=(), priority=5, load=Load.INDEX, references=(), source="",
            subject=subject, predicate=None, trust=Trust.ATTESTED, status=Status.ACTIVE,
            ever_quarantined=False, supersedes=None, content_hash="", author="operator:test",
            created_at=when, updated_at=when, verified_at=when, expires_at=None,
            valid_from=None, valid_to=None, read_count=0, thread=thread,
        )
        for name, subject in spec
    ]  # fmt: skip


# -- the thread senses ------------------------------------------------------------------------


def test_a_memory_shares_the_mean_score_of_its_thread_neighbours() -> None:
    fused = {"a": rank.Fused(score=0.1), "b": rank.Fused(score=0.2), "c": rank.Fused(score=0.3)}
    rank.share_thread(fused, {"a": (None, "b"), "b": ("a", "c"), "c": ("b", "gone")})
    # each from the scores before sharing; the first turn has one neighbour and takes its
    # whole score; a neighbour that exists but did not match counts as 0
    assert fused["a"].score == pytest.approx(0.1 + 0.2 * 0.2)
    assert fused["b"].score == pytest.approx(0.2 + 0.2 * (0.1 + 0.3) / 2)
    assert fused["c"].score == pytest.approx(0.3 + 0.2 * (0.2 + 0) / 2)
    assert all(f.senses == [THREAD] for f in fused.values())


def test_every_memory_of_a_thread_is_lifted_by_its_best_match() -> None:
    threaded = _memories(("a", None), ("b", None), thread="t")
    alone = _memories(("c", None))
    memories = {m.id: m for m in (*threaded, *alone)}
    fused = {"id-a": rank.Fused(score=0.3), "id-b": rank.Fused(score=0.05)}
    fused["id-c"] = rank.Fused(score=0.1)
    rank.lift_threads(fused, memories)
    assert fused["id-a"].score == pytest.approx(0.3 + 0.3 * 0.3)
    assert fused["id-b"].score == pytest.approx(0.05 + 0.3 * 0.3)  # now above c
    # a memory outside any thread is a thread of its own: lifted by its own score, so
    # being in a thread is no advantage in itself
    assert fused["id-c"].score == pytest.approx(0.1 + 0.3 * 0.1)
    # only the memory lifted by another's match says "thread"
    assert (fused["id-a"].senses, fused["id-b"].senses, fused["id-c"].senses) == (
        [],
        [THREAD],
        [],
    )


def test_a_thread_of_one_ranks_as_no_thread(lexical_service: MemoryService) -> None:
    lexical_service.write("deploy-one", description="deploy on friday")
    lexical_service.write("deploy-two", description="deploy on friday", thread="solo")
    scores = {h.memory.name: h.score for h in lexical_service.search("deploy friday").hits}
    assert scores["deploy-one"] == pytest.approx(scores["deploy-two"])


def test_threads_never_cross_tiers(service: MemoryService) -> None:
    service.add_project("alpha")
    service.add_project("beta")
    service.write(
        "a-note", description="Launch codename is Kestrel", project="alpha", thread="standup"
    )
    service.write("b-note", description="Nothing to report", project="beta", thread="standup")
    assert service.search("kestrel codename", project="beta").hits == ()


def test_search_marks_the_turns_around_a_match_with_the_thread_sense(
    lexical_service: MemoryService,
) -> None:
    for i, text in enumerate(("We got a kitten", "Her name is Miso", "Vet on Friday"), start=1):
        lexical_service.write(f"t{i}", description=text, thread="chat")
    lexical_service.write("soup", description="Miso soup recipe")
    found = senses(lexical_service, "Miso")
    assert set(found) == {"t1", "t2", "t3", "soup"}
    assert all(THREAD in found[f"t{i}"] for i in (1, 2, 3))
    assert THREAD not in found["soup"]


# -- token budgets ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "body", "expected"),
    [("ab", "", 1), ("ab", "é" * 3, 2), ("ab", "é" * 4, 3), ("abcd", "efgh", 2)],  # é: 2 bytes
)
def test_a_results_tokens_are_a_quarter_of_its_text_bytes_rounded_up(
    description: str, body: str, expected: int
) -> None:
    (memory,) = _memories(("n", None))
    assert rank.tokens(replace(memory, description=description, body=body)) == expected


@pytest.fixture
def sized(lexical_service: MemoryService) -> MemoryService:
    """Four matches in a known order: one of 100 tokens, then three of 10."""
    service = lexical_service
    service.write("kestrel", description="kestrel guide", body="x" * 387)  # 400 bytes
    for name, priority in (("a", 0), ("b", 2), ("c", 4)):
        service.write(name, description="kestrel seen", body="y" * 28, priority=priority)
    assert names(service, "kestrel") == ["kestrel", "a", "b", "c"]
    return service


@pytest.mark.parametrize(
    ("budget", "limit", "expected"),
    [
        (130, 2, ["kestrel", "a", "b", "c"]),  # all fit: all of them, past the limit
        (129, 10, ["kestrel", "a", "b"]),  # the best that fit
        (25, 10, ["a", "b"]),  # the best is too large: skipped
        (35, 2, ["a", "b"]),  # c would fit, but the limit holds
        (9, 10, []),  # nothing fits
    ],
)
def test_a_token_budget_packs_the_best_results_that_fit(
    sized: MemoryService, budget: int, limit: int, expected: list[str]
) -> None:
    result = sized.search("kestrel", budget_tokens=budget, limit=limit)
    assert [h.memory.name for h in result.hits] == expected
    assert (
        result.summary
        == f"{len(expected)} of 4 matching memories, best first, within {budget} tokens"
    )


@pytest.mark.parametrize("budget", [0, -5, True, 1.5, "100"])
def test_a_token_budget_must_be_a_whole_number_of_tokens(
    sized: MemoryService, budget: object
) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        sized.search("kestrel", budget_tokens=budget)  # type: ignore[arg-type]
    assert caught.value.details["field"] == "budget_tokens"


def test_pack_without_a_budget_is_the_best_limit() -> None:
    hits = [SearchHit(m, 1.0, ()) for m in _memories(("a", None), ("b", None), ("c", None))]
    assert rank.pack(hits, 2, None, lambda h: rank.tokens(h.memory)) == hits[:2]


# -- asking for more --------------------------------------------------------------------------


def test_asking_for_more_results_keeps_the_first_ones_of_a_single_sense(
    lexical_service: MemoryService,
) -> None:
    lexical_service.write_many(
        [WriteRequest(f"n{i:02}", description="kestrel" + " pad" * (i % 7)) for i in range(45)]
    )
    every = names(lexical_service, "kestrel", limit=45)
    for limit in (1, 5, 10, 30, 31):
        assert names(lexical_service, "kestrel", limit=limit) == every[:limit]


@pytest.fixture
def fixed_semantic(monkeypatch: pytest.MonkeyPatch) -> None:
    """The semantic sense weighed 0.5 whatever the words hold: the depth tests below are
    about how deep each sense looks, not about how the weights move."""
    monkeypatch.setattr(rank, "SEMANTIC_LEAST", 0.5)
    monkeypatch.setattr(rank, "SEMANTIC_MOST", 0.5)


@pytest.fixture
def deep(make_service: ServiceFactory, fixed_semantic: None) -> MemoryService:
    """36 memories with the word "kitten": x is ranked last by its words but first by meaning."""
    service = make_service(
        embedder=AxisEmbedder({"kitten": (1, 0), "tabby": (1, 0), "rain": (0, 1)})
    )
    # 35 memories ranked by length for "kitten", far in meaning (cosine 0.11, below the floor)...
    service.write_many(
        [
            WriteRequest(f"s{i:02}", description="kitten" + " rain" * 9 + " pad" * i)
            for i in range(1, 36)
        ]
    )
    # ...and one ranked last by its words (36th) but first by its meaning (cosine 1).
    service.write("x", description="kitten tabby" + " pad" * 60)
    return service


def test_asking_for_up_to_30_results_keeps_the_first_ones_across_senses(
    deep: MemoryService,
) -> None:
    first = names(deep, "kitten", limit=10)
    level = rank.RRF_K + 2  # x's meaning (0.5 / (k + 1)) is worth the words of s(level)
    before, after = range(1, level + 1), range(level + 1, 10)
    assert first == [*(f"s{i:02}" for i in before), "x", *(f"s{i:02}" for i in after)]
    for limit in (20, 30):
        assert names(deep, "kitten", limit=limit)[:10] == first
    # x is found by meaning alone (0.5 / (k + 1)), level with s(k + 2) by its words
    scores = {h.memory.name: (h.score, h.senses) for h in deep.search("kitten", limit=30).hits}
    assert scores["x"][1] == (SEMANTIC,)
    assert scores["x"][0] == pytest.approx(scores[f"s{rank.RRF_K + 2:02}"][0])


def test_a_limit_past_what_stem_found_lets_the_prefix_retry_in(
    make_service: ServiceFactory, fixed_semantic: None
) -> None:
    # Documented: the prefix retry runs when stem found fewer memories than the limit.
    service = make_service(
        embedder=AxisEmbedder({"kestrel": (1, 0), "kestrelcam": (1, 0), "rain": (0, 1)})
    )
    # twelve memories found by the word "kestrel", far in meaning (cosine 0.11)...
    service.write_many(
        [
            WriteRequest(f"s{i:02}", description="kestrel" + " rain" * 9 + " pad" * i)
            for i in range(1, 13)
        ]
    )
    # ...and one found only by the prefix kestrel* (a word no stemmer makes "kestrel"),
    # and first by meaning
    service.write("p", description="kestrelcam nightly")
    assert dict(senses_at(service, "kestrel", 10))["p"] == (SEMANTIC,)
    assert dict(senses_at(service, "kestrel", 20))["p"] == (PREFIX, SEMANTIC)
    assert set(names(service, "kestrel", limit=20)[:2]) == {"s01", "p"}


def test_asking_for_more_than_30_results_widens_every_sense(deep: MemoryService) -> None:
    # Documented: the word sense now reaches x (36th): 0.5 / 4 + 1 / 39 lifts it past s04.
    assert rank.RRF_K == 3
    (x,) = (h for h in deep.search("kitten", limit=40).hits if h.memory.name == "x")
    assert x.senses == (STEM, SEMANTIC)
    assert names(deep, "kitten", limit=40)[:6] == ["s01", "s02", "s03", "x", "s04", "s05"]


def test_a_subject_with_a_period_in_its_name_is_lifted(lexical_service: MemoryService) -> None:
    lexical_service.write("a", description="likes tea", subject="Dr. Who")
    lexical_service.write("b", description="likes tea", subject="Rose")
    hits = lexical_service.search("What does Dr. Who like? tea").hits
    assert [(h.memory.name, SUBJECT in h.senses) for h in hits] == [("a", True), ("b", False)]


def test_subject_phrases_keep_and_drop_a_final_period() -> None:
    phrases = rank.subject_phrases(["Is Dr. Who Caroline's friend?"])
    assert {"Dr. Who", "Dr Who", "Caroline", "friend"} <= set(phrases)
    assert "Caroline's" not in phrases


def test_the_common_word_bonus_matches_a_word_start_in_any_case_or_script() -> None:
    from retain.storage.words import FIELD_WEIGHTS, bonus

    def by_pattern(word: str, text: str) -> bool:  # the rule, without the ASCII shortcut
        import re

        start = word[: max(4, len(word) - 2)]
        return re.search(r"(?<![^\W_])" + re.escape(start), text, re.IGNORECASE) is not None

    words = ["meeting", "Dash", "ſtart", "kelvin", "café", "über"]
    texts = [
        "MEETINGS at noon", "the dashboard", "a_dashboard", "undashed", "start here",
        "ſtarting", "\u212aelvin scale", "Kelvin", "CAFÉ au lait", "Übersicht", "", "x",
        "undashed, then dashes", "undashed 9dash", "x_meeting", "-meet", "MEETINGMEETING",
    ]  # fmt: skip
    for word in words:
        for text in texts:
            fields = (text, "", text.upper(), "filler " + text)
            expected = sum(
                w for w, f in zip(FIELD_WEIGHTS, fields, strict=True) if by_pattern(word, f)
            )
            assert bonus([(word, 1.0)], fields) == pytest.approx(expected), (word, text)
    assert bonus([("meeting", 2.0)], ("", "the meetings", "", "")) == 2.0 * FIELD_WEIGHTS[1]
