"""Search: senses, fusion, weighting, filters and flags."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from tests.conftest import ServiceFactory

from retain import errors
from retain.chrono import ManualClock
from retain.results import SearchHit
from retain.search import lexical
from retain.search.lexical import SEMANTIC, SUBJECT, THREAD, analyze
from retain.service import MemoryService
from retain.service import search as search_service


def names(service: MemoryService, *queries: str, **kw: object) -> list[str | None]:
    return [h.memory.name for h in service.search(list(queries), **kw).hits]  # type: ignore[arg-type]


def lexical_senses(hit: SearchHit) -> tuple[str, ...]:
    """The word senses that answered, leaving out the vector and thread/subject ones."""
    return tuple(s for s in hit.senses if s not in (SEMANTIC, SUBJECT, THREAD))


def test_stemming_matches_inflections(service: MemoryService) -> None:
    service.write("ship", description="Deploys happen on Tuesdays")
    hit = service.search("deploying").hits[0]
    assert hit.memory.name == "ship"
    assert lexical_senses(hit) == ("stem",)


def test_prefix_retry_matches_the_start_of_a_stored_word(service: MemoryService) -> None:
    service.write("ship", description="The deployment checklist")
    hit = service.search("deploym").hits[0]
    assert (hit.memory.name, lexical_senses(hit)) == ("ship", ("prefix",))


def test_prefix_retry_shortens_the_query_word(service: MemoryService) -> None:
    # Both stemmers keep "catalogu" for the query word and "catalog" for the stored one:
    # no stem matches, and the stem shortened by a letter finds it.
    service.write("ship", description="The parts catalog")
    hit = service.search("catalogues").hits[0]
    assert (hit.memory.name, lexical_senses(hit)) == ("ship", ("prefix",))


def test_name_outweighs_description_outweighs_body(service: MemoryService) -> None:
    service.write("in-body", description="something", body="the kestrel flies")
    service.write("in-description", description="a kestrel note")
    service.write("kestrel", description="bird")
    assert names(service, "kestrel") == ["kestrel", "in-description", "in-body"]


def test_unspaced_script_terms_are_scanned_as_plain_text(service: MemoryService) -> None:
    service.write("jp", description="東京の会議は火曜日", body="meeting notes")
    service.write("other", description="meeting in Paris")
    hit = service.search("会議 meeting").hits[0]
    assert hit.memory.name == "jp"
    assert "scan" in hit.senses and "stem" in hit.senses
    assert hit.scanned_terms == ("会議",)


def test_long_identifiers_and_urls_are_scanned(service: MemoryService) -> None:
    service.write("cfg", description="config", body="see /etc/retain/deploy_host.conf for it")
    hit = service.search("/etc/retain/deploy_host.conf").hits[0]
    assert hit.memory.name == "cfg"
    assert "scan" in hit.senses


def test_whole_query_plain_text_fallback_when_nothing_else_answers(
    service: MemoryService,
) -> None:
    service.write("odd", description="token", body="the value is +-+ here")
    hit = service.search("+-+").hits[0]
    assert (hit.memory.name, lexical_senses(hit)) == ("odd", ("text",))


def test_a_query_about_nothing_stored_returns_nothing(service: MemoryService) -> None:
    service.write("tz", description="Alice is in UTC+8")
    assert service.search("zebra").hits == ()
    assert service.search("lic").hits == ()  # plain words are never matched mid-word


def test_queries_list_fuses_synonyms(lexical_service: MemoryService) -> None:
    service = lexical_service  # the words alone: the semantic sense would add more
    service.write("terse", description="Prefers terse replies")
    service.write("brief", description="Keep brevity in mind")
    service.write("other", description="Unrelated note")
    assert set(names(service, "terse", "brevity", "verbosity")) == {"terse", "brief"}
    both = service.search(["terse", "prefers"]).hits[0]
    assert both.memory.name == "terse"
    assert set(both.queries) == {"terse", "prefers"}


def test_a_memory_is_found_by_meaning_when_no_word_matches(service: MemoryService) -> None:
    service.write("pet", description="Our cat sleeps on the sofa all afternoon")
    service.write("car", description="The truck needs new tyres before winter")
    service.write("food", description="Alice is allergic to peanuts")
    for query, name in (("kitten", "pet"), ("automobile repair", "car"), ("feline", "pet")):
        found = [(h.memory.name, h.senses) for h in service.search(query).hits]
        assert found == [(name, (SEMANTIC,))]


def test_a_query_about_nothing_stored_finds_nothing(service: MemoryService) -> None:
    service.write("pet", description="Our cat sleeps on the sofa all afternoon")
    service.write("car", description="The truck needs new tyres before winter")
    service.write("food", description="Alice is allergic to peanuts")
    assert service.search("How do I configure a Kubernetes ingress?").hits == ()


def _found(service: MemoryService, queries: Sequence[str]) -> list[list[tuple[str | None, float]]]:
    return [[(h.memory.name, h.score) for h in service.search(q).hits] for q in queries]


def test_the_semantic_sense_read_beside_the_word_senses_finds_what_one_read_finds(
    service: MemoryService, backend_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.write("pet", description="Our cat sleeps on the sofa all afternoon")
    service.write("car", description="The truck needs new tyres before winter")
    service.write("food", description="Alice is allergic to peanuts", body="and to cats")
    queries = ["kitten", "automobile repair", "cat allergy", "sofa", "nothing stored here"]
    backend = service.backend
    real = backend.read_beside  # type: ignore[attr-defined]
    lent: list[object] = []

    def spied(fn: Any) -> Any:
        lent.append(pending := real(fn))
        return pending

    monkeypatch.setattr(backend, "read_beside", lambda fn: None)
    alone = _found(service, queries)
    read_on: list[str] = []  # the thread each semantic sense was read on
    semantic = search_service._semantic

    def counted(*args: Any) -> Any:
        read_on.append(threading.current_thread().name)
        return semantic(*args)

    monkeypatch.setattr(search_service, "_semantic", counted)
    monkeypatch.setattr(backend, "read_beside", spied)
    assert _found(service, queries) == alone
    assert len(lent) == len(queries)
    beside = [p is not None for p in lent]
    # read once a search, beside when lent a connection (and used: nothing changed)
    assert [name.startswith("retain-beside") for name in read_on] == beside
    if backend_name == "sqlite":  # (a pool may have no idle connection to lend)
        assert all(beside)


def test_a_search_whose_read_beside_failed_reads_its_semantic_sense_itself(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.write("pet", description="Our cat sleeps on the sofa all afternoon")
    service.write("car", description="The truck needs new tyres before winter")

    class Failed:
        def result(self) -> Any:
            raise errors.StoreError("the spare connection broke", remedy="verify the store")

    monkeypatch.setattr(service.backend, "read_beside", lambda fn: Failed())
    found = service.search("kitten").hits
    assert [(h.memory.name, h.senses) for h in found] == [("pet", (SEMANTIC,))]


def test_a_memory_forgotten_while_the_semantic_sense_was_read_beside_is_not_found(
    make_service: ServiceFactory, backend_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, other = make_service(), make_service()
    service.write("pet", description="Our cat sleeps on the sofa all afternoon")
    service.write("car", description="The truck needs new tyres before winter")
    assert names(service, "kitten") == ["pet"]
    backend = service.backend
    real = backend.read_beside  # type: ignore[attr-defined]

    lent: list[bool] = []

    def then_forgotten(fn: Any) -> Any:
        pending = real(fn)
        lent.append(pending is not None)
        if pending is not None:
            assert [h.memory_id for h in pending.result()[1][0].hits]  # it found the cat
        other.forget("pet", compact=False)  # logged before the search's own read
        return pending

    monkeypatch.setattr(backend, "read_beside", then_forgotten)
    assert names(service, "kitten") == []
    assert lent == [True] or backend_name != "sqlite"  # (a pool may lend nothing)


def test_importance_breaks_ties_between_equal_matches(service: MemoryService) -> None:
    service.write("minor", description="kestrel note", priority=8)
    service.write("major", description="kestrel note", priority=0)
    assert names(service, "kestrel") == ["major", "minor"]


def test_read_count_counters_priority_drift(lexical_service: MemoryService) -> None:
    # Equal matches: names of one word each, so neither row is longer for BM25, and no
    # vectors, whose reading of the names would tell the two apart.
    service = lexical_service
    service.write("unread", description="kestrel note", priority=5)
    service.write("reread", description="kestrel note", priority=5)
    for _ in range(40):
        service.read("reread")
    assert names(service, "kestrel") == ["reread", "unread"]


def test_freshness_decays_on_verified_but_not_for_standing_rules(
    lexical_service: MemoryService, clock: ManualClock
) -> None:
    service = lexical_service  # no vectors, whose reading of the names would tell them apart
    service.write("old", description="kestrel note", priority=5)
    service.write("old-rule", description="kestrel rule", priority=1)
    clock.advance(days=730)
    service.write("new", description="kestrel note", priority=5)
    order = names(service, "kestrel")
    assert order.index("new") < order.index("old")
    service.write("old", verified=True)
    order = names(service, "kestrel")
    assert order[0] == "old-rule" or order.index("old") < order.index("new") + 1


def test_an_expired_memory_stays_in_ranked_search_marked_and_ranked_as_it_stands(
    service: MemoryService, clock: ManualClock
) -> None:
    service.write("freeze", description="deploy freeze", expires="2026-03-02")
    service.write("thaw", description="deploy freeze lifted")
    clock.advance(days=5)
    result = service.search("freeze")
    # Its shorter description matches better, and expiry takes nothing off its rank.
    assert [(h.memory.name, h.expired) for h in result.hits] == [
        ("freeze", True),
        ("thaw", False),
    ]
    assert result.summary == "2 of 2 matching memories, best first; 1 expired"
    records = result.to_dict(clock.now())["memories"]
    assert [(r["name"], r["expired"]) for r in records] == [("freeze", True), ("thaw", False)]
    (hit,) = service.search("freeze", expired=True).hits
    assert (hit.memory.name, hit.expired) == ("freeze", True)
    listed = service.search(expired=True)
    assert [h.memory.name for h in listed.hits] == ["freeze"]
    assert listed.summary == "1 memory past their expiry, most important first"


def test_an_agents_recall_finds_its_expired_memory_marked(
    service: MemoryService, make_service: ServiceFactory, clock: ManualClock
) -> None:
    service.add_agent("ada")
    ada = make_service(principal="agent:ada")
    service.write("freeze", description="deploy freeze", expires="2026-03-02")
    clock.advance(days=5)
    assert [(h.memory.name, h.expired) for h in ada.recall("freeze").hits] == [("freeze", True)]


def test_a_query_at_the_limits_is_served(service: MemoryService) -> None:
    service.write("freeze", description="deploy freeze", body="部署 " + "x" * 10)
    words = " ".join(f"w{i}" for i in range(lexical.MAX_WORDS - 2))
    long = (words + " deploy freeze ").ljust(lexical.MAX_QUERY_CHARS, "!")
    assert len(long) == lexical.MAX_QUERY_CHARS
    assert names(service, long) == ["freeze"]
    synonyms = ["freeze", *(f"s{i}" for i in range(lexical.MAX_QUERIES - 1))]
    assert names(service, *synonyms) == ["freeze"]
    scanned = " ".join(["部署", *(f"部{chr(0x4E00 + i)}" for i in range(lexical.MAX_SCANNED - 1))])
    assert analyze(scanned).needles[0] == "部署"
    assert len(analyze(scanned).needles) == lexical.MAX_SCANNED
    assert names(service, scanned) == ["freeze"]


@pytest.mark.parametrize(
    ("queries", "measure", "limit"),
    [
        (["x" * (lexical.MAX_QUERY_CHARS + 1)], "characters", lexical.MAX_QUERY_CHARS),
        (["x" * 600, "y" * 600], "characters", lexical.MAX_QUERY_CHARS),  # in all
        ([f"q{i}" for i in range(lexical.MAX_QUERIES + 1)], "queries", lexical.MAX_QUERIES),
        ([" ".join(f"w{i}" for i in range(lexical.MAX_WORDS + 1))], "words", lexical.MAX_WORDS),
        (
            [" ".join(f"w{i}" for i in range(20)), " ".join(f"v{i}" for i in range(20))],
            "words",
            lexical.MAX_WORDS,
        ),
        (  # each query looks its words up: the same words twice count twice
            [" ".join(f"w{i}" for i in range(20)), " ".join(f"w{i}" for i in range(20)) + " x"],
            "words",
            lexical.MAX_WORDS,
        ),
        (["部署 部一", "部一 部署", "部丁"], "scanned_terms", lexical.MAX_SCANNED),
        (
            [" ".join(f"部{chr(0x4E00 + i)}" for i in range(lexical.MAX_SCANNED + 1))],
            "scanned_terms",
            lexical.MAX_SCANNED,
        ),
    ],
)
def test_a_search_past_a_limit_is_refused_with_query_too_long(
    service: MemoryService, queries: list[str], measure: str, limit: int
) -> None:
    service.write("freeze", description="deploy freeze")
    with pytest.raises(errors.QueryTooLong) as refused:
        service.search(queries)
    details = refused.value.details
    assert (details["field"], details["measure"], details["limit"]) == ("queries", measure, limit)
    assert details["actual"] > limit


@pytest.mark.parametrize(
    "query",
    [
        " ".join("alpha.beta.gamma.delta" for _ in range(3000)),  # 68 KB of dotted tokens
        "部署服务器" * 13_000,  # 65,000 characters of Chinese
        "a.b " * 262_144,  # 1 MiB
    ],
)
def test_a_query_of_64_kb_is_refused_without_touching_the_store(
    service: MemoryService, query: str
) -> None:
    service.write("freeze", description="alpha.beta.gamma.delta freeze")
    with pytest.raises(errors.QueryTooLong) as refused:
        service.search(query)
    assert refused.value.details["measure"] == "characters"
    with pytest.raises(errors.QueryTooLong):
        service.search(["freeze", query])


def test_a_long_dotted_query_within_the_limit_is_served(service: MemoryService) -> None:
    service.write("freeze", description="alpha.beta.gamma.delta freeze")
    query = " ".join(["alpha.beta.gamma.delta"] * 40)[: lexical.MAX_QUERY_CHARS]
    assert names(service, query) == ["freeze"]


def test_search_scopes_follow_the_session(service: MemoryService) -> None:
    service.add_project("web")
    service.add_project("api")
    service.write("g", description="kestrel global")
    service.write("w", description="kestrel web", project="web")
    service.write("a", description="kestrel api", project="api")
    assert set(names(service, "kestrel")) == {"g", "w", "a"}
    assert set(names(service, "kestrel", project="web")) == {"g", "w"}
    assert set(names(service, "kestrel", project="web", tier="project")) == {"w"}
    assert set(names(service, "kestrel", project="web", tier="global")) == {"g"}
    assert set(names(service, "kestrel", project="")) == {"g"}
    with pytest.raises(errors.NoProject):
        service.search("kestrel", tier="project")


def test_search_filters_narrow_and_without_queries_it_lists(service: MemoryService) -> None:
    service.write("a", description="kestrel", tags=["birds"], references=["deploy-host"])
    service.write("b", description="kestrel too", priority=1)
    assert names(service, "kestrel", tag="birds") == ["a"]
    listing = service.search([], referencing="deploy-host")
    assert listing.listing
    assert [h.memory.name for h in listing.hits] == ["a"]
    assert listing.summary == "1 memory referencing 'deploy-host', most important first"


def test_search_limit_is_bounded(service: MemoryService) -> None:
    for i in range(15):
        service.write(f"n{i}", description=f"kestrel {i}")
    assert len(service.search("kestrel", limit=5).hits) == 5
    with pytest.raises(errors.InvalidValue):
        service.search("kestrel", limit=0)


def test_search_finds_every_match_past_the_common_word_window(service: MemoryService) -> None:
    from retain.results import WriteRequest

    batch = [WriteRequest(f"n{i}", description=f"common words here {i}") for i in range(7000)]
    batch.append(WriteRequest("rare", description="common words with a falcon"))
    service.write_many(batch)
    hits = service.search("common falcon").hits
    assert hits[0].memory.name == "rare"


def test_analyze_splits_words_needles_and_scripts() -> None:
    plan = analyze("deploy 東京会議 https://example.org/a/b x")
    assert "deploy" in plan.words and "x" in plan.words
    assert "東京会議" in plan.needles
    assert "https://example.org/a/b" in plan.needles


def test_identifiers_and_runs_of_unspaced_script_are_scanned_and_read_once() -> None:
    plan = analyze("see src/retain/search.py and 部署服务器.配置 or x_y, not ab.c")
    assert plan.needles == ("src/retain/search.py", "部署服务器.配置", "部署服务器", "配置")
    assert analyze("部署" * 3000).needles == ("部署" * 3000,)  # one run, read once


def test_a_turn_is_searched_for_its_content_words_within_the_limits() -> None:
    assert lexical.turn_query("what is the") == ""
    assert lexical.turn_query("Is it, then?!") == ""
    turn = "What is the plan for deploy-host.example.com and 東京会議 today?"
    assert lexical.turn_query(turn) == "deploy-host.example.com 東京会議 plan today"
    many = " ".join(f"w{i}" for i in range(100))
    query = lexical.turn_query(many)
    assert query == " ".join(f"w{i}" for i in range(lexical.MAX_WORDS))
    assert len(lexical.plan_queries([query])[0].words) == lexical.MAX_WORDS


def test_a_misspelt_word_is_found_by_prefix(service: MemoryService) -> None:
    service.write("bird", description="A kestrel hovers")
    hit = service.search("kestrl").hits[0]
    assert (hit.memory.name, lexical_senses(hit)) == ("bird", ("prefix",))


def test_prefix_hits_rank_below_stem_hits(service: MemoryService) -> None:
    service.write("fuzzy", description="deployment", priority=0)
    service.write("exact", description="deploym", priority=9)
    assert names(service, "deploym") == ["exact", "fuzzy"]


def test_a_derived_word_finds_relatives_whose_stems_differ(service: MemoryService) -> None:
    service.write("ship", description="Deploys happen on Tuesdays")
    service.write("doc", description="The deployment checklist")
    # Porter: deployment -> deploy, deploys/deploying -> deploi
    assert set(names(service, "deployment")) == {"ship", "doc"}
    assert set(names(service, "deploying")) == {"ship", "doc"}


def test_scan_folds_case_beyond_ascii(service: MemoryService) -> None:
    service.write("apples", description="fruit", body="Die ÄPFEL-sorte /usr/share/Äpfel.txt")
    assert names(service, "/usr/share/äpfel.txt") == ["apples"]
    assert names(service, "ÄPFEL-SORTE") == ["apples"]


@pytest.mark.parametrize(
    "queries",
    [
        ["alpha.beta.gamma-delta"],
        ["DEPLOY.HOST-PRIMARY"],
        ["部署服务器"],
        ["/usr/share/äpfel.txt", "東京"],
        ["部署服务器 会議 alpha.beta.gamma-delta deploy.host-primary"],  # four terms, one pass
        ["部署服务器", "会議", "ÄPFEL-SORTE", "gamma-delta.epsilon"],  # four queries, one pass
    ],
)
def test_a_scan_finds_every_memory_holding_a_term_and_only_those(
    lexical_service: MemoryService, queries: list[str]
) -> None:
    # Whatever prepares the scan (the stored lowered text on PostgreSQL), a memory is
    # scanned as its text stands now: edits that take a term out or put one in count.
    service = lexical_service
    stored = {
        "cfg-a": ("deploy config", "see Alpha.Beta.Gamma-Delta.Epsilon for it"),
        "cfg-b": ("ALPHA.BETA.GAMMA-DELTA mirror", "x"),
        "deploy.host-primary": ("a host", "y"),
        "jp": ("東京の会議", "部署服务器 の 設定"),
        "jp-edited": ("会議 notes", "部署服务器 then"),
        "apples": ("fruit", "Die ÄPFEL-sorte /usr/share/Äpfel.txt"),
        "later": ("plain", "nothing"),
        "near": ("alpha beta", "alpha.beta.gamma delta, Deploy host primary, 部署 服务器"),
    }
    for name, (description, body) in stored.items():
        service.write(name, description=description, body=body)
    service.edit("jp-edited", "部署服务器", "it was moved")
    service.edit("later", "nothing", "now alpha.beta.GAMMA-delta")
    texts = {h.memory.name: h.memory for h in service.search([], limit=50).hits}
    terms = [n.casefold() for q in queries for n in analyze(q).needles]
    holding = {
        name
        for name, m in texts.items()
        if any(t in f.casefold() for t in terms for f in (name or "", m.description, m.body))
    }
    assert 0 < len(holding) < len(stored)
    scanned = {h.memory.name for h in service.search(queries, limit=50).hits if "scan" in h.senses}
    assert scanned == holding


def test_common_words_add_to_the_rank_of_rows_holding_the_rare_ones(
    lexical_service: MemoryService,
) -> None:
    from retain.results import WriteRequest
    from retain.storage.words import COMMON

    service = lexical_service  # the planner's order, which the semantic sense would add to

    team = [WriteRequest(f"f{i}", description=f"the team met {i}") for i in range(COMMON + 10)]
    other = [WriteRequest(f"o{i}", description=f"a crew ate {i}") for i in range(2 * COMMON)]
    service.write_many(team + other)
    service.write("plain", description="falcon sighted near river")
    service.write("both", description="falcon sighted near team")
    assert names(service, "falcon team")[:2] == ["both", "plain"]
    # Every word common: the newest rows holding them all come first.
    assert names(service, "team met", limit=3) == [
        f"f{COMMON + 9}",
        f"f{COMMON + 8}",
        f"f{COMMON + 7}",
    ]


def test_a_small_store_with_several_frequent_words_still_ranks(
    lexical_service: MemoryService,
) -> None:
    from retain.results import WriteRequest

    service = lexical_service  # the planner's ranking, without the semantic sense
    # Two words in 1,200 rows each: together past the lead budget in a store of 1,201.
    # (Written "beta alpha", so that no row holds the query's pair "alpha beta" as a phrase.)
    batch = [WriteRequest(f"n{i}", description=f"beta alpha {i}") for i in range(1200)]
    batch.append(WriteRequest("odd", description="alpha gamma"))
    service.write_many(batch)
    hits = service.search("alpha beta gamma").hits
    assert hits[0].memory.name == "odd"


def test_filters_apply_inside_the_common_word_window(service: MemoryService) -> None:
    from retain.results import WriteRequest
    from retain.storage.words import COMMON

    service.add_project("a")
    service.add_project("b")
    service.write("b-deploy", description="we deploy on fridays", project="b")
    service.write("deploy", description="how releases go out")
    crowd = [
        WriteRequest(f"a{i}", description=f"deploy step {i}", project="a") for i in range(COMMON)
    ]
    service.write_many(crowd)
    assert names(service, "deploy", project="b", tier="project") == ["b-deploy"]
    assert "b-deploy" in names(service, "deploy", project="b")
    assert "deploy" in names(service, "deploy")  # a name holding the words is always a candidate


def test_common_words_find_the_memory_they_name_in_typed_order(service: MemoryService) -> None:
    from retain.results import WriteRequest
    from retain.storage.words import COMMON

    service.write("retain-docs", description="where the manual lives")
    service.write_many(
        [WriteRequest(f"n{i}", description=f"retain docs page {i}") for i in range(COMMON)]
    )
    assert names(service, "retain docs")[0] == "retain-docs"


def test_a_query_of_common_words_alone_finds_the_rows_holding_them(
    lexical_service: MemoryService,
) -> None:
    lexical_service.write("art", description="the state of the art")
    lexical_service.write("other", description="kestrel nesting season")
    assert [h.memory.name for h in lexical_service.search("of the").hits] == ["art"]
