"""``retain.integrations.mem0.Memory``: mem0's calls, both its 1.0 shape and its 2.0
shape, answered with mem0's result shapes (as mem0's own tests and documented examples
give them), over a retain session on both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.integrations.mem0 import Memory
from retain.service import MemoryService

TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
ITEM_KEYS = ["id", "memory", "hash", "metadata", "created_at", "updated_at"]


@pytest.fixture
def app(make_service: ServiceFactory) -> MemoryService:
    make_service().add_project("assistant")
    return make_service(principal="app:assistant")


@pytest.fixture
def m(app: MemoryService) -> Memory:
    return Memory(app, project="assistant")


@pytest.fixture
def filled(m: Memory, clock: ManualClock) -> Memory:
    m.add("I am vegetarian", user_id="alice", metadata={"category": "diet", "level": 3})
    clock.advance(seconds=1)
    m.add("I play tennis on Sundays", user_id="alice", metadata={"category": "sport", "level": 1})
    clock.advance(seconds=1)
    m.add("I am vegan", user_id="bob", agent_id="chef", metadata={"category": "diet"})
    clock.advance(seconds=1)
    return m


def texts(result: dict[str, Any]) -> list[str]:
    return [item["memory"] for item in result["results"]]


# add


def test_add_keeps_each_message_verbatim_and_passes_system_ones_over(m: Memory) -> None:
    added = m.add(
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "I'm allergic to peanuts", "name": "alice"},
            {"role": "assistant", "content": "Noted: no peanuts."},
            {"role": "user", "content": "   "},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        ],
        user_id="alice",
        run_id="chat-1",
    )
    results = added["results"]
    assert [(r["memory"], r["event"], r["role"], r["actor_id"]) for r in results] == [
        ("I'm allergic to peanuts", "ADD", "user", "alice"),
        ("Noted: no peanuts.", "ADD", "assistant", None),
    ]
    assert all(list(r) == ["id", "memory", "event", "actor_id", "role"] for r in results)
    item = m.get(results[0]["id"])
    assert item is not None
    assert list(item) == [
        *ITEM_KEYS[:4],
        "score",
        *ITEM_KEYS[4:],
        "user_id",
        "run_id",
        "actor_id",
        "role",
    ]
    assert (item["score"], item["user_id"], item["run_id"], item["metadata"]) == (
        None,
        "alice",
        "chat-1",
        None,
    )


def test_a_text_or_one_message_is_the_users(m: Memory) -> None:
    one = m.add("I live in Porto", user_id="alice", infer=True)["results"]
    two = m.add({"role": "assistant", "content": "ok"}, agent_id="helper")["results"]
    assert (one[0]["role"], two[0]["role"]) == ("user", "assistant")
    assert m.get(two[0]["id"])["agent_id"] == "helper"


def test_a_memory_is_a_retain_memory_of_the_tier(m: Memory, app: MemoryService) -> None:
    added = m.add("Alice prefers email", user_id="alice", agent_id="crm", run_id="r1")
    name = added["results"][0]["id"]
    memory = app.get(name, project="assistant").memory
    assert (memory.scope, memory.author, memory.subject, memory.thread) == (
        "project:assistant", "app:assistant", "alice", "r1",
    )  # fmt: skip
    assert set(memory.tags) == {"mem0", "user:alice", "agent:crm", "run:r1"}
    assert memory.body == "Alice prefers email"


@pytest.mark.parametrize(
    ("options", "field", "message"),
    [
        ({}, "user_id", "At least one of 'user_id', 'agent_id', or 'run_id' must be provided."),
        ({"user_id": "  "}, "user_id", "not an id"),
        ({"user_id": "al ice"}, "user_id", "not an id"),
        ({"run_id": "r" * 61}, "run_id", "not an id"),
        ({"user_id": "a", "memory_type": "procedural_memory"}, "memory_type", "language model"),
        ({"user_id": "a", "prompt": "extract facts"}, "prompt", "language model"),
        ({"user_id": "a", "metadata": {"user_id": "b"}}, "metadata", "through metadata"),
        ({"user_id": "a", "metadata": [1]}, "metadata", "object"),
        ({"user_id": "a", "messages": ["ok", 3]}, "messages", "message 0 is not an object"),
        (
            {"user_id": "a", "messages": [{"content": "no role"}]},
            "messages",
            "lacks a role or a text",
        ),
        ({"user_id": "a", "messages": 42}, "messages", "must be text"),
        (
            {"user_id": "a", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "messages",
            "no text part",
        ),
    ],
)
def test_add_refuses_what_it_cannot_keep_and_writes_nothing(
    m: Memory, options: dict[str, Any], field: str, message: str
) -> None:
    options = dict(options)  # the parameters are shared by both backends' runs
    messages = options.pop("messages", "something")
    before = store_state(m.service)
    with pytest.raises(errors.InvalidValue) as caught:
        m.add(messages, **options)
    assert caught.value.details["field"] == field and message in caught.value.message
    assert store_state(m.service) == before


def test_a_secret_in_any_message_refuses_the_whole_add(m: Memory) -> None:
    before = store_state(m.service)
    with pytest.raises(errors.SecretDetected):
        m.add([{"role": "user", "content": c} for c in ("fine", f"token {TOKEN}")], user_id="a")
    assert store_state(m.service) == before


# search and get_all


def test_search_takes_both_call_shapes(filled: Memory) -> None:
    old = filled.search("vegetarian", user_id="alice", limit=5)
    new = filled.search("vegetarian", filters={"user_id": "alice"}, top_k=5)
    assert texts(old) == texts(new) and texts(old)[0] == "I am vegetarian"
    item = new["results"][0]
    assert list(item) == [*ITEM_KEYS[:4], "score", *ITEM_KEYS[4:], "user_id", "role"]
    assert 0 < item["score"] <= 1 and item["metadata"] == {"category": "diet", "level": 3}
    assert texts(filled.search("tennis", filters={"user_id": "bob"})) == []  # alice's only
    assert texts(filled.search("vegan", user_id="bob", agent_id="chef")) == ["I am vegan"]
    assert filled.search("vegetarian", user_id="alice", top_k=0) == {"results": []}


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ({"category": "diet"}, ["I am vegetarian"]),
        ({"category": {"ne": "diet"}}, ["I play tennis on Sundays"]),
        ({"category": {"in": ["sport", "music"]}}, ["I play tennis on Sundays"]),
        ({"category": {"nin": ["sport"]}}, ["I am vegetarian"]),
        ({"level": {"gte": 2}}, ["I am vegetarian"]),
        ({"level": {"lt": 2}}, ["I play tennis on Sundays"]),
        ({"category": {"contains": "po"}}, ["I play tennis on Sundays"]),
        ({"category": {"icontains": "DIE"}}, ["I am vegetarian"]),
        ({"category": "*"}, ["I play tennis on Sundays", "I am vegetarian"]),
        ({"missing": "*"}, []),
        (
            {"OR": [{"level": 3}, {"category": "sport"}]},
            ["I play tennis on Sundays", "I am vegetarian"],
        ),
        ({"AND": [{"level": {"gt": 0}}, {"category": "sport"}]}, ["I play tennis on Sundays"]),
        ({"NOT": [{"category": "sport"}]}, ["I am vegetarian"]),
        ({"role": "user", "level": 1}, ["I play tennis on Sundays"]),
    ],
)
def test_get_all_filters_by_metadata_newest_first(
    filled: Memory, wanted: dict[str, Any], expected: list[str]
) -> None:
    assert texts(filled.get_all(filters={"user_id": "alice", **wanted})) == expected


def test_get_all_items_have_no_score_and_a_limit(filled: Memory) -> None:
    items = filled.get_all(user_id="alice")["results"]
    assert len(items) == 2 and all("score" not in item for item in items)
    assert texts(filled.get_all(user_id="alice", limit=1)) == ["I play tennis on Sundays"]
    assert texts(filled.get_all(filters={"user_id": "alice"}, top_k=1)) == [
        "I play tennis on Sundays"
    ]


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.search("x"), "filters"),
        (lambda m: m.get_all(filters={"category": "diet"}), "filters"),
        (lambda m: m.search("x", user_id="a", filters={"user_id": "b"}), "user_id"),
        (lambda m: m.search("x", user_id="a", filters={"level": {"near": 1}}), "filters"),
        (lambda m: m.search("x", user_id="a", filters={"OR": []}), "filters"),
        (lambda m: m.search("x", user_id="a", threshold=1.5), "threshold"),
        (lambda m: m.search("x", user_id="a", top_k=-1), "top_k"),
        (lambda m: m.search("   ", user_id="a"), "query"),
    ],
)
def test_bad_search_arguments_are_refused(filled: Memory, call: Any, field: str) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        call(filled)
    assert caught.value.details["field"] == field


# get, update, delete, history


def test_get_answers_none_for_an_unknown_or_foreign_id(m: Memory, app: MemoryService) -> None:
    assert m.get("no-such-id") is None and m.get("not a name!") is None
    elsewhere = Memory(app).add("global memory", user_id="alice")["results"][0]["id"]
    assert m.get(elsewhere) is None  # another tier's
    app.write("plain", description="not a mem0 memory", project="assistant")
    assert m.get("plain") is None


def test_update_changes_the_text_merges_metadata_and_keeps_created_at(
    filled: Memory, clock: ManualClock
) -> None:
    item = filled.get_all(user_id="alice")["results"][-1]
    clock.advance(minutes=1)
    said = filled.update(item["id"], "I am vegan now", metadata={"level": 4, "since": "2026"})
    assert said == {"message": "Memory updated successfully!"}
    after = filled.get(item["id"])
    assert after["memory"] == "I am vegan now"
    assert after["metadata"] == {"category": "diet", "level": 4, "since": "2026"}
    assert after["created_at"] == item["created_at"] and after["updated_at"] > item["updated_at"]
    assert after["hash"] != item["hash"]
    filled.update(item["id"], data="I am vegan")  # mem0's older keyword
    assert filled.get(item["id"])["memory"] == "I am vegan"
    filled.update(item["id"], metadata={"extra": True})
    assert filled.get(item["id"])["memory"] == "I am vegan"


def test_update_refuses_nothing_to_do_an_unknown_id_and_identity_metadata(filled: Memory) -> None:
    some = filled.get_all(user_id="alice")["results"][0]["id"]
    with pytest.raises(errors.InvalidValue):
        filled.update(some)
    with pytest.raises(errors.NotFound):
        filled.update("no-such-id", "text")
    with pytest.raises(errors.InvalidValue):
        filled.update(some, metadata={"agent_id": "x"})


def test_delete_keeps_the_history_as_mem0_does(make_service: ServiceFactory) -> None:
    make_service().add_project("assistant")
    filled = Memory(make_service(), project="assistant")  # an operator: it reads the whole log
    filled.add("I play tennis on Sundays", user_id="alice")
    item = filled.get_all(user_id="alice")["results"][0]
    filled.update(item["id"], "I play tennis on Saturdays")
    assert filled.delete(item["id"]) == {"message": "Memory deleted successfully!"}
    assert filled.get(item["id"]) is None
    rows = filled.history(item["id"])
    assert [(r["event"], r["old_memory"], r["new_memory"], r["is_deleted"]) for r in rows] == [
        ("ADD", None, "I play tennis on Sundays", False),
        ("UPDATE", "I play tennis on Sundays", "I play tennis on Saturdays", False),
        ("DELETE", "I play tennis on Saturdays", None, True),
    ]
    assert list(rows[0]) == [
        "id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at",
        "is_deleted", "actor_id", "role",
    ]  # fmt: skip
    assert {r["memory_id"] for r in rows} == {item["id"]} and rows[0]["role"] == "user"
    with pytest.raises(errors.NotFound):
        filled.delete(item["id"])


def test_an_application_reads_the_history_of_what_it_still_holds(filled: Memory) -> None:
    item = filled.get_all(user_id="alice")["results"][0]
    filled.update(item["id"], "I play tennis on Saturdays")
    assert [r["event"] for r in filled.history(item["id"])] == ["ADD", "UPDATE"]
    filled.delete(item["id"])
    assert filled.history(item["id"]) == []  # the log shows a removed memory to operators


def test_delete_with_erasure_leaves_no_copy_of_the_text(filled: Memory, app: MemoryService) -> None:
    item = filled.get_all(user_id="alice")["results"][0]
    filled.update(item["id"], "I play tennis on Saturdays")
    filled.delete(item["id"], erase=True)
    assert filled.get(item["id"]) is None and filled.history(item["id"]) == []
    log = json.dumps([e.to_dict() for e in app.events(limit=1000)])
    assert "tennis" not in log and "vegetarian" in log
    assert [hit.memory.body for hit in app.search("tennis", project="assistant").hits] == []


def test_delete_all_removes_one_ids_memories_and_refuses_no_id(filled: Memory) -> None:
    with pytest.raises(errors.InvalidValue):
        filled.delete_all()
    assert filled.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert filled.get_all(user_id="alice")["results"] == []
    assert texts(filled.get_all(user_id="bob")) == ["I am vegan"]
    filled.delete_all(agent_id="chef", erase=True)
    assert filled.get_all(user_id="bob")["results"] == []


def test_reset_is_refused(filled: Memory) -> None:
    with pytest.raises(errors.InvalidValue):
        filled.reset()
    assert len(filled.get_all(user_id="alice")["results"]) == 2


def test_an_agent_principal_may_not_write_the_shared_tiers(make_service: ServiceFactory) -> None:
    make_service().add_agent("ada")
    with pytest.raises(errors.AccessDenied):
        Memory(make_service(principal="agent:ada")).add("x", user_id="alice")


def test_history_shows_no_other_tier_and_no_other_kind_of_memory(
    filled: Memory, app: MemoryService, make_service: ServiceFactory
) -> None:
    operator = make_service()
    operator.write("plain", description="a note", body="the vault code", project="assistant")
    Memory(operator).add("global text", user_id="alice")
    gone = Memory(operator).add("removed global text", user_id="zed")["results"][0]["id"]
    Memory(operator).delete(gone)
    assert filled.history("plain") == []
    assert all(
        filled.history(item["id"]) == []
        for item in Memory(operator).get_all(user_id="alice")["results"]
    )
    assert Memory(operator, project="assistant").history(gone) == []  # removed, in another tier
    assert [r["event"] for r in Memory(operator).history(gone)] == ["ADD", "DELETE"]


def test_a_hold_refuses_delete_all_with_erasure_before_anything_is_erased(
    filled: Memory, make_service: ServiceFactory
) -> None:
    operator = make_service()
    (item,) = [i for i in filled.get_all(user_id="alice")["results"] if "tennis" in i["memory"]]
    memory = operator.get(item["id"], project="assistant").memory
    operator.hold(memory.id, reason="matter 7")
    before = store_state(filled.service)
    with pytest.raises(errors.HoldActive):
        filled.delete_all(user_id="alice", erase=True)
    assert store_state(filled.service) == before


def test_a_search_answers_at_most_200(filled: Memory) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        filled.search("x", user_id="alice", top_k=201)
    assert caught.value.details["field"] == "top_k"
    with pytest.raises(errors.InvalidValue) as caught:
        filled.search("x", user_id="alice", limit=True)
    assert caught.value.details["field"] == "limit"


def test_a_project_the_realm_lacks_is_refused_when_the_memory_is_made(app: MemoryService) -> None:
    with pytest.raises(errors.ProjectNotFound):
        Memory(app, project="nope")
