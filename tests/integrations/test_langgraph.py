"""``RetainStore``: LangGraph's ``BaseStore`` over a retain session, checked against the
behaviours LangGraph's own store suites check (``langgraph/libs/checkpoint*/tests``),
on both backends, with the store's real embedder and search."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from tests.conftest import ServiceFactory

from retain import errors
from retain.chrono import ManualClock
from retain.integrations.langgraph import RetainStore, name_of
from retain.service import MemoryService


@pytest.fixture
def app(make_service: ServiceFactory) -> MemoryService:
    operator = make_service()
    operator.add_project("bot")
    operator.add_agent("ada")
    return make_service(principal="app:bot")


@pytest.fixture
def store(app: MemoryService) -> RetainStore:
    return RetainStore(app, project="bot")


def keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


# put / get / delete


def test_put_get_replace_and_delete(store: RetainStore) -> None:
    store.put(("test", "docs"), "k", {"a": 1, "b": {"c": [1, 2]}})
    item = store.get(("test", "docs"), "k")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        ("test", "docs"),
        "k",
        {"a": 1, "b": {"c": [1, 2]}},
    )
    store.put(("test", "docs"), "k", {"z": True})
    assert store.get(("test", "docs"), "k").value == {"z": True}  # the whole value replaced
    assert store.get(("test", "other"), "k") is None
    assert store.get(("test", "docs"), "missing") is None
    store.delete(("test", "docs"), "k")
    assert store.get(("test", "docs"), "k") is None
    assert store.search(("test",)) == []
    store.delete(("test", "docs"), "k")  # deleting what is gone is no error


def test_a_key_is_text_and_a_namespace_may_be_a_list(store: RetainStore) -> None:
    store.put(("n",), 5, {"v": 1})  # type: ignore[arg-type]
    assert store.get(("n",), "5").key == "5"
    assert keys(store.search(["n"])) == ["5"]  # type: ignore[arg-type]


def test_created_at_is_kept_and_updated_at_moves(store: RetainStore, clock: ManualClock) -> None:
    store.put(("t",), "k", {"v": 1})
    first = store.get(("t",), "k")
    clock.advance(minutes=3)
    store.put(("t",), "k", {"v": 2})
    second = store.get(("t",), "k")
    assert second.created_at == first.created_at < clock.now()
    assert second.updated_at > first.updated_at
    assert second.updated_at >= clock.now()


# batches


def test_a_batch_answers_in_order_and_its_reads_see_the_store_before_its_puts(
    store: RetainStore,
) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "baz"), "key3", {"data": "value3"}),
            SearchOp(("test",), filter={"data": "value1"}),
            ListNamespacesOp(),
            GetOp(("test", "baz"), "key3"),
        ]
    )
    assert results[0].key == "key1"
    assert results[1] is None
    assert keys(results[2]) == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]  # not yet ("test", "baz")
    assert results[4] is None
    assert store.get(("test", "baz"), "key3").value == {"data": "value3"}


def test_the_last_put_of_a_key_in_a_batch_wins_and_none_deletes(store: RetainStore) -> None:
    store.put(("t",), "gone", {"v": 0})
    results = store.batch(
        [
            PutOp(("t",), "k", {"v": 1}),
            PutOp(("t",), "k", {"v": 2}),
            PutOp(("t",), "gone", None),
        ]
    )
    assert results == [None, None, None]
    assert store.get(("t",), "k").value == {"v": 2}
    assert store.get(("t",), "gone") is None
    assert keys(store.search(("t",))) == ["k"]


def test_the_async_verbs_do_what_the_sync_ones_do(store: RetainStore) -> None:
    async def run() -> list[Any]:
        await store.aput(("a", "b"), "k", {"text": "hello async"})
        got = await store.aget(("a", "b"), "k")
        found = await store.asearch(("a",), query="hello")
        spaces = await store.alist_namespaces(prefix=("a",))
        batched = await store.abatch([GetOp(("a", "b"), "k"), GetOp(("a", "b"), "x")])
        await store.adelete(("a", "b"), "k")
        return [got, found, spaces, batched, await store.aget(("a", "b"), "k")]

    got, found, spaces, batched, after = asyncio.run(run())
    assert got.value == {"text": "hello async"}
    assert keys(found) == ["k"] and found[0].score is not None
    assert spaces == [("a", "b")]
    assert batched[0].key == "k" and batched[1] is None
    assert after is None


# search


def test_a_prefix_matches_whole_labels_literally_and_case_sensitively(store: RetainStore) -> None:
    for namespace in [
        ("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",), ("foobar", "baz"),
        ("foo2",), ("user_1",), ("userX1",), ("a%b",), ("axxb",), ("star*",), ("starX",),
        ("Foo",), ("users", "alice\n"), ("users", "alice"),
    ]:  # fmt: skip
        store.put(namespace, "k", {"ns": list(namespace)})

    def found(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert found(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert found(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert found(("foo", "child")) == {("foo", "child"), ("foo", "child", "deep")}
    assert found(("fo",)) == set()
    assert found(("user_1",)) == {("user_1",)}
    assert found(("a%b",)) == {("a%b",)}
    assert found(("star*",)) == {("star*",)}
    assert found(("Foo",)) == {("Foo",)}
    assert found(("users", "alice")) == {("users", "alice")}
    assert len(found(())) == 15  # the empty prefix: everything


@pytest.fixture
def docs(store: RetainStore) -> RetainStore:
    for key, value in {
        "doc1": {"text": "red apple pie", "color": "red", "score": 4.5, "tags": ["draft"]},
        "doc2": {"text": "red sports car", "color": "red", "score": 3.0, "active": True},
        "doc3": {"text": "green apple tree", "color": "green", "score": 4, "active": False},
        "doc4": {"text": "blue ocean waves", "color": "blue", "score": 3.5, "active": 1},
        "doc5": {"text": "missing score", "user": {"profile": {"id": 7}}, "name": "banana"},
    }.items():
        store.put(("docs",), key, value)
    return store


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ({"color": "red"}, {"doc1", "doc2"}),
        ({"score": {"$gt": 3.2}}, {"doc1", "doc3", "doc4"}),
        ({"score": {"$gte": 4.0}, "color": "green"}, {"doc3"}),
        ({"score": {"$lt": 4}}, {"doc2", "doc4"}),
        ({"score": {"$lte": 3.5}}, {"doc2", "doc4"}),
        ({"score": {"$eq": 4.5}}, {"doc1"}),
        ({"color": {"$ne": "red"}}, {"doc3", "doc4", "doc5"}),
        ({"score": {"$gt": float("-inf")}}, {"doc1", "doc2", "doc3", "doc4"}),
        ({"score": {"$eq": float("nan")}}, set()),
        ({"active": True}, {"doc2"}),  # a boolean is not 1
        ({"active": False}, {"doc3"}),
        ({"tags": ["draft"]}, {"doc1"}),  # a list equals a list
        ({"user": {"profile": {"id": 7}}}, {"doc5"}),
        ({"user.profile.id": 7}, {"doc5"}),  # a dotted key reaches in
        ({"user.profile.id": {"$gte": 7}}, {"doc5"}),
        ({"name": {"$gt": "apple"}}, {"doc5"}),  # text against text, in order
        ({"name": {"$gt": 1}}, set()),  # text is not in order with a number
    ],
)
def test_filters_pick_by_value(
    docs: RetainStore, wanted: dict[str, Any], expected: set[str]
) -> None:
    assert set(keys(docs.search(("docs",), filter=wanted))) == expected


def test_an_unknown_filter_operator_is_refused(docs: RetainStore) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        docs.search(("docs",), filter={"score": {"$near": 3}})
    assert caught.value.code == "invalid_value" and "$near" in caught.value.message


def test_pages_of_a_listing_are_disjoint_and_newest_first(
    store: RetainStore, clock: ManualClock
) -> None:
    for i in range(5):
        store.put(("p",), f"k{i}", {"i": i})
        clock.advance(seconds=1)
    first, second = store.search(("p",), limit=2), store.search(("p",), limit=2, offset=2)
    assert keys(first) == ["k4", "k3"] and keys(second) == ["k2", "k1"]
    assert keys(store.search(("p",), offset=4)) == ["k0"]
    assert len(store.search(("p",))) == 5
    assert all(item.score is None for item in first)


def test_a_query_finds_by_meaning_and_scores_in_order(docs: RetainStore) -> None:
    found = docs.search(("docs",), query="apple")
    assert keys(found)[:2] in (["doc1", "doc3"], ["doc3", "doc1"])
    scores = [item.score for item in found if item.score is not None]
    assert scores == sorted(scores, reverse=True)
    assert keys(docs.search(("docs",), query="apple", filter={"color": "red"}))[0] == "doc1"
    assert keys(docs.search(("docs",), query="ocean", filter={"score": {"$gt": 3.2}}))[0] == "doc4"
    page = docs.search(("docs",), query="apple", limit=1, offset=1)
    assert len(page) == 1 and page[0].key == keys(found)[1]


def test_non_ascii_text_is_found_by_itself(store: RetainStore) -> None:
    texts = {"zh": "这是中文", "ru": "это русский текст", "hi": "यह हिंदी है"}
    for key, text in texts.items():
        store.put(("i18n",), key, {"text": text})
    for key, text in texts.items():
        assert keys(store.search(("i18n",), query=text))[0] == key


def test_only_the_index_fields_are_searched(app: MemoryService) -> None:
    store = RetainStore(app, project="bot", index={"fields": ["title", "notes[*].text"]})
    store.put(("k",), "a", {"title": "quarterly budget", "secret_word": "zebra"})
    store.put(("k",), "b", {"title": "team offsite", "notes": [{"text": "kayaking trip"}]})
    store.put(("k",), "c", {"title": "release plan"}, index=["other"])  # per put
    assert keys(store.search(("k",), query="budget"))[0] == "a"
    assert keys(store.search(("k",), query="kayaking"))[0] == "b"
    assert all(item.score is None for item in store.search(("k",), query="zebra"))
    assert "c" not in [i.key for i in store.search(("k",), query="release") if i.score]


def test_an_item_kept_without_an_index_follows_unscored(store: RetainStore) -> None:
    store.put(("x",), "indexed", {"text": "hiking boots"})
    store.put(("x",), "plain", {"text": "hiking boots"}, index=False)
    found = store.search(("x",), query="hiking boots")
    assert keys(found) == ["indexed", "plain"]
    assert found[0].score is not None and found[1].score is None
    assert keys(store.search(("x",), query="hiking boots", limit=1)) == ["indexed"]


def test_an_index_config_that_would_embed_elsewhere_is_refused(app: MemoryService) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        RetainStore(app, index={"dims": 1536, "embed": "openai:text-embedding-3-small"})
    assert "'dims', 'embed'" in caught.value.message


# list_namespaces


@pytest.fixture
def spaces(store: RetainStore) -> RetainStore:
    for namespace in [
        ("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
        ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]:  # fmt: skip
        store.put(namespace, "k", {"v": 1})
    return store


def test_namespaces_by_prefix_suffix_and_wildcard(spaces: RetainStore) -> None:
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert spaces.list_namespaces(prefix=("a", "b")) == ab
    assert set(spaces.list_namespaces(suffix=("f",))) == {
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    }
    assert spaces.list_namespaces(prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert spaces.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert len(spaces.list_namespaces(suffix=("*", "f"))) == 3
    assert spaces.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert spaces.list_namespaces(prefix=("nonexistent",)) == []
    assert spaces.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]


def test_namespaces_cut_to_a_depth_are_unique_and_sorted_then_paged(spaces: RetainStore) -> None:
    assert spaces.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f"),
    ]  # fmt: skip
    assert spaces.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert spaces.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert spaces.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    both = spaces.batch([ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("f",)),))])
    assert len(both[0]) == 3


# namespaces refused


@pytest.mark.parametrize(
    "namespace", [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]
)
def test_a_namespace_langgraph_refuses_is_refused(
    store: RetainStore, namespace: tuple[str, ...]
) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"v": 1})
    assert store.search(()) == []


def test_langgraph_is_an_ordinary_label_below_the_root(store: RetainStore) -> None:
    store.put(("foo", "langgraph", "foo"), "k", {"text": "bar"})
    assert store.get(("foo", "langgraph", "foo"), "k").value == {"text": "bar"}
    assert keys(store.search(("foo", "langgraph"), query="bar")) == ["k"]


# TTL


def test_an_item_past_its_ttl_is_gone_to_every_read(store: RetainStore, clock: ManualClock) -> None:
    store.put(("t",), "short", {"v": 1}, ttl=1)
    store.put(("t",), "kept", {"v": 2})
    clock.advance(seconds=61)
    assert store.get(("t",), "short") is None
    assert keys(store.search(("t",))) == ["kept"]
    assert [i.value for i in store.search(("t",), query="v 1")] == [{"v": 2}]
    store.put(("only",), "x", {"v": 3}, ttl=1)
    clock.advance(seconds=61)
    assert ("only",) not in store.list_namespaces()


def test_a_read_refreshes_the_ttl_unless_told_not_to(
    store: RetainStore, clock: ManualClock
) -> None:
    store.put(("t",), "read", {"text": "refresh me"}, ttl=2)
    store.put(("t",), "searched", {"text": "refresh me too"}, ttl=2)
    store.put(("t",), "unrefreshed", {"text": "left alone"}, ttl=2)
    clock.advance(seconds=90)
    store.get(("t",), "read")
    store.search(("t",), filter={"text": "refresh me too"})
    store.get(("t",), "unrefreshed", refresh_ttl=False)
    clock.advance(seconds=60)  # 150 s after the puts: past their first expiry
    assert store.get(("t",), "read") is not None
    assert store.get(("t",), "searched") is not None
    assert store.get(("t",), "unrefreshed") is None


def test_a_default_ttl_applies_unless_a_put_says_none(
    app: MemoryService, clock: ManualClock
) -> None:
    store = RetainStore(app, project="bot", ttl={"default_ttl": 1, "refresh_on_read": False})
    store.put(("t",), "default", {"v": 1})
    store.put(("t",), "forever", {"v": 2}, ttl=None)
    store.get(("t",), "default")  # refresh_on_read off: no refresh
    clock.advance(minutes=5)
    assert store.get(("t",), "default") is None
    assert store.get(("t",), "forever") is not None


# the gate, governance and the rest of retain


def test_an_item_is_a_memory_of_the_stores_tier(store: RetainStore, app: MemoryService) -> None:
    store.put(("memories", "u1"), "pref", {"content": "prefers dark mode"})
    memory = app.get(name_of(("memories", "u1"), "pref", "bot"), project="bot").memory
    assert (memory.scope, memory.author, memory.trust.value) == (
        "project:bot",
        "app:bot",
        "attested",
    )
    assert memory.description == "memories/u1/pref"
    assert memory.body == "content: prefers dark mode"
    assert memory.to_dict(memory.created_at)["metadata"]["langgraph"]["value"] == {
        "content": "prefers dark mode"
    }
    assert [hit.memory.id for hit in app.search("dark mode", project="bot").hits] == [memory.id]


def test_the_global_tier_and_a_projects_are_separate_stores(app: MemoryService) -> None:
    here, there = RetainStore(app, project="bot"), RetainStore(app)
    here.put(("n",), "k", {"v": "project"})
    there.put(("n",), "k", {"v": "global"})
    assert here.get(("n",), "k").value == {"v": "project"}
    assert there.get(("n",), "k").value == {"v": "global"}
    assert [i.value for i in here.search(("n",))] == [{"v": "project"}]


def test_an_agent_may_not_write_the_shared_tiers_through_the_store(
    store: RetainStore, make_service: ServiceFactory
) -> None:
    store.put(("n",), "k", {"v": 1})
    store.put(("n",), "lives", {"v": 3}, ttl=5)
    agent = RetainStore(make_service(principal="agent:ada"), project="bot")
    with pytest.raises(errors.AccessDenied):
        agent.put(("n",), "k2", {"v": 2})
    assert agent.get(("n",), "k").value == {"v": 1}
    assert agent.get(("n",), "lives").value == {"v": 3}  # read, not refreshed: it may not write
    assert store.get(("n",), "k2") is None


def test_a_secret_in_a_value_is_refused_and_nothing_is_written(store: RetainStore) -> None:
    with pytest.raises(errors.SecretDetected):
        store.batch(
            [
                PutOp(("n",), "ok", {"v": "fine"}),
                PutOp(("n",), "bad", {"token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}),
            ]
        )
    assert store.search(("n",)) == []


def test_a_forgotten_item_is_gone_and_its_value_erased(
    store: RetainStore, app: MemoryService
) -> None:
    store.put(("n",), "k", {"content": "my address is 1 Main St"})
    memory = app.get(name_of(("n",), "k", "bot"), project="bot").memory
    app.forget(memory.id)
    assert store.get(("n",), "k") is None
    assert store.search(("n",)) == [] and store.list_namespaces() == []
    assert "1 Main St" not in str([e.to_dict() for e in app.events(limit=1000)])


def test_sweep_ttl_deletes_the_expired_items_and_counts_them(
    store: RetainStore, clock: ManualClock
) -> None:
    store.put(("t",), "short", {"v": 1}, ttl=1)
    store.put(("t",), "long", {"v": 2}, ttl=10)
    assert store.sweep_ttl() == 0
    clock.advance(minutes=2)
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0
    assert keys(store.search(("t",))) == ["long"]


def test_a_refused_write_leaves_the_batchs_deletes_undone(store: RetainStore) -> None:
    store.put(("n",), "old", {"v": 1})
    with pytest.raises(errors.SecretDetected):
        store.batch(
            [
                PutOp(("n",), "old", None),
                PutOp(("n",), "bad", {"token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}),
            ]
        )
    assert store.get(("n",), "old").value == {"v": 1}


def test_expired_items_take_no_place_in_a_search(store: RetainStore, clock: ManualClock) -> None:
    for i in range(5):
        store.put(("f",), f"live{i}", {"text": f"apple pie recipe with cinnamon {i}"})
    for i in range(5):
        store.put(("f",), f"old{i}", {"text": "apple pie recipe"}, ttl=1)
    clock.advance(minutes=2)
    assert sorted(keys(store.search(("f",), query="apple pie recipe", limit=5))) == [
        f"live{i}" for i in range(5)
    ]


def test_a_query_search_answers_its_best_200(store: RetainStore) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        store.search(("f",), query="anything", offset=195, limit=10)
    assert caught.value.details["field"] == "limit"
    assert store.search(("f",), offset=195, limit=10) == []  # a listing pages on


def test_an_unknown_operator_is_refused_before_anything_is_read(store: RetainStore) -> None:
    with pytest.raises(errors.InvalidValue):
        store.search(("nothing",), filter={"x": {"$near": 1}})
    with pytest.raises(errors.InvalidValue):
        store.search(("nothing",), filter={"a": {"b": {"$near": 1}}})


@pytest.mark.parametrize("ttl", [0, -1, float("inf"), float("nan"), "5", True, 10**12])
def test_a_ttl_that_is_no_number_of_minutes_is_refused(store: RetainStore, ttl: Any) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        store.put(("t",), "k", {"v": 1}, ttl=ttl)
    assert caught.value.details["field"] == "ttl"
    assert store.get(("t",), "k") is None


def test_a_value_that_is_not_json_is_refused(store: RetainStore) -> None:
    from datetime import UTC, datetime

    for bad in ({"when": datetime.now(UTC)}, {"s": {1, 2}}, {"n": {1: "int key"}}):
        with pytest.raises(errors.InvalidValue) as caught:
            store.put(("t",), "k", bad)
        assert "value" in caught.value.message or "key" in caught.value.message
    assert store.get(("t",), "k") is None


def test_sweep_ttl_leaves_memories_that_are_not_items(
    store: RetainStore, app: MemoryService, clock: ManualClock
) -> None:
    app.write(
        "runbook", description="notes on LangGraph", tags=["langgraph"],
        expires="2026-03-01T12:01:00Z", project="bot",
    )  # fmt: skip
    store.put(("t",), "short", {"v": 1}, ttl=1)
    clock.advance(minutes=2)
    assert store.sweep_ttl() == 1
    assert app.get("runbook", project="bot").memory.name == "runbook"


def test_a_project_the_realm_lacks_is_refused_when_the_store_is_made(app: MemoryService) -> None:
    with pytest.raises(errors.ProjectNotFound):
        RetainStore(app, project="nope")


def test_forget_erases_an_item_and_answers_its_certificate(
    store: RetainStore, app: MemoryService
) -> None:
    # (a word no hash, id or time in the log could spell by chance, as digits could)
    store.put(("n",), "k", {"content": "the vault word is tangerine"})
    certificate = store.forget(("n",), "k", reason="asked")
    assert certificate.kind == "memory" and certificate.reason == "asked"
    assert store.get(("n",), "k") is None
    assert "tangerine" not in str([e.to_dict() for e in app.events(limit=1000)])
