"""LangMem's memory tools over ``RetainStore``: an agent run by a scripted chat model (no
network) saves a memory with ``manage_memory`` and, in a later conversation, finds it with
``search_memory``; the memory is a retain memory of the store's tier throughout."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langmem import create_manage_memory_tool, create_search_memory_tool
from tests.conftest import ServiceFactory

from retain.integrations.langgraph import RetainStore
from retain.service import MemoryService

NAMESPACE = ("memories", "{langgraph_user_id}")


class ScriptedModel(GenericFakeChatModel):
    """A chat model that answers from a script, tool calls included, and binds tools by
    keeping its script (what a real model would decide is the script's)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def call(tool: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id}])


def agent(store: RetainStore, script: Iterator[AIMessage]) -> Any:
    tools = [create_manage_memory_tool(NAMESPACE), create_search_memory_tool(NAMESPACE)]
    return create_agent(ScriptedModel(messages=script), tools=tools, store=store)


@pytest.fixture
def store(make_service: ServiceFactory) -> RetainStore:
    make_service().add_project("assistant")
    return RetainStore(make_service(principal="app:assistant"), project="assistant")


def test_a_memory_saved_by_one_run_is_found_by_the_next(store: RetainStore) -> None:
    user = {"configurable": {"langgraph_user_id": "alice"}}
    first = agent(
        store,
        iter(
            [
                call("manage_memory", {"content": "Alice is allergic to peanuts"}, "c1"),
                AIMessage(content="Noted."),
            ]
        ),
    )
    first.invoke({"messages": [("user", "Remember: I'm allergic to peanuts")]}, user)

    saved = store.search(("memories", "alice"))
    assert [item.value for item in saved] == [{"content": "Alice is allergic to peanuts"}]
    service: MemoryService = store.memory
    memory = service.search("peanuts", project="assistant").hits[0].memory
    assert (memory.author, memory.scope) == ("app:assistant", "project:assistant")

    second = agent(
        store,
        iter(
            [
                call("search_memory", {"query": "food allergies"}, "c2"),
                AIMessage(content="You are allergic to peanuts."),
            ]
        ),
    )
    out = second.invoke({"messages": [("user", "What can't I eat?")]}, user)
    found = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(found) == 1
    results = json.loads(found[0].content)
    assert [r["value"]["content"] for r in results] == ["Alice is allergic to peanuts"]
    assert results[0]["namespace"] == ["memories", "alice"] and results[0]["score"] is not None

    other = {"configurable": {"langgraph_user_id": "bob"}}
    third = agent(store, iter([call("search_memory", {"query": "allergies"}, "c3"), AIMessage("")]))
    out = third.invoke({"messages": [("user", "What can't I eat?")]}, other)
    assert json.loads([m for m in out["messages"] if isinstance(m, ToolMessage)][0].content) == []


def test_the_tool_updates_and_deletes_the_memory_it_made(store: RetainStore) -> None:
    user = {"configurable": {"langgraph_user_id": "alice"}}
    run = agent(
        store,
        iter([call("manage_memory", {"content": "Alice lives in Porto"}, "c1"), AIMessage("ok")]),
    )
    run.invoke({"messages": [("user", "I live in Porto")]}, user)
    (item,) = store.search(("memories", "alice"))

    update = {"action": "update", "id": item.key, "content": "Alice lives in Lisbon"}
    run = agent(store, iter([call("manage_memory", update, "c2"), AIMessage("ok")]))
    run.invoke({"messages": [("user", "I moved to Lisbon")]}, user)
    (moved,) = store.search(("memories", "alice"))
    assert (moved.key, moved.value) == (item.key, {"content": "Alice lives in Lisbon"})
    assert moved.created_at == item.created_at

    run = agent(
        store,
        iter([call("manage_memory", {"action": "delete", "id": item.key}, "c3"), AIMessage("ok")]),
    )
    run.invoke({"messages": [("user", "Forget where I live")]}, user)
    assert store.search(("memories", "alice")) == []
