"""The assertion ledger's tools: ``memory_index`` (an operator's, an application's or the
steward's: the policy table offers it to no agent), ``memory_query``, ``memory_stores``
and ``memory_gate`` (reads, offered to every principal that may run them), with their
results typed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from retain.doors.mcp.schema import Project, WriteReceiptOut
from retain.doors.mcp.server import Server
from retain.service import MemoryService

Call = Callable[[Callable[[MemoryService], dict[str, Any]]], CallToolResult]

_READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# An index adds an assertion each call (assertions accumulate) and sets or clears a
# signal, whose every change the event log keeps: nothing is destroyed, and a repeat adds.
_ADDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
_STORES = "knowledge_graph, vector, document, timeline or key_value"
Entity = Annotated[str, Field(description="Who or what it is about, e.g. identity:ops.")]
Topic = Annotated[str, Field(description="What about it, e.g. deployment.")]


class AssertionOut(BaseModel):
    id: str
    entity: str
    topic: str
    store: str
    fact: str
    metadata: dict[str, Any]
    scope: str
    project: str | None
    author: str
    trust: str
    status: str
    recorded_at: str


class ConflictOut(BaseModel):
    entity: str
    topic: str
    store: str
    reason: str
    active: bool
    updated_at: str


class IndexOut(BaseModel):
    assertion: AssertionOut | None = Field(description="The assertion recorded, if any.")
    conflict: ConflictOut | None = Field(description="The key's signal, if the call named it.")
    conflict_changed: bool
    receipt: WriteReceiptOut | None = Field(
        description="The call's receipt (none: it wrote nothing)."
    )


class QueryOut(BaseModel):
    assertions: list[AssertionOut]
    conflicts: list[ConflictOut] = Field(description="The active conflict signals.")


class StoreOut(BaseModel):
    store: str
    record_count: int


class StoresOut(BaseModel):
    stores: list[StoreOut]


class GateFactOut(BaseModel):
    id: str
    scope: str
    subject: str | None
    predicate: str | None
    value: str
    store: str | None = Field(description="The store it was indexed in (none: a plain fact).")
    author: str
    trust: str
    recorded_at: str


class GateOut(BaseModel):
    subject: str
    predicate: str
    contested: bool
    conflicts: list[ConflictOut]
    facts: list[GateFactOut] = Field(description="The believed facts that disagree, if any.")


def add(server: Server, call: Call) -> None:
    """Register the ledger's tools on ``server`` (``call`` runs a verb for the principal
    acting and turns a refusal into its tool result)."""

    @server.verb_tool("index", title="Index an assertion", annotations=_ADDS)
    def memory_index(
        entity: Entity,
        topic: Topic,
        store: Annotated[str, Field(description=f"The store: {_STORES}.")],
        fact: Annotated[
            str | None, Field(description="The assertion; leave out for a conflict-only write.")
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="A JSON object kept with the assertion.")
        ] = None,
        conflict: Annotated[
            bool | None,
            Field(description="true: set (or update) the key's conflict signal; false: clear it."),
        ] = None,
        conflict_reason: Annotated[
            str | None, Field(description="Why there is a conflict (or why it is cleared).")
        ] = None,
        project: Annotated[
            str | None, Field(description="Record it in this project's tier.")
        ] = None,
    ) -> Annotated[CallToolResult, IndexOut]:
        """Index an operational assertion about an entity's topic in a store, and set or
        clear the key's conflict signal; assertions accumulate (none supersedes another)."""
        return call(
            lambda s: s.index(
                entity,
                topic,
                store,
                fact,
                metadata=metadata,
                conflict=conflict,
                conflict_reason=conflict_reason,
                project=project,
            ).to_dict()
        )

    @server.verb_tool("query", title="Query the assertion ledger", annotations=_READS)
    def memory_query(
        entity: Annotated[str | None, Field(description="Only this entity (exact).")] = None,
        topic: Annotated[str | None, Field(description="Only this topic (exact).")] = None,
        store: Annotated[str | None, Field(description=f"Only this store: {_STORES}.")] = None,
        query: Annotated[
            str | None, Field(description="Only what holds this text, in any case.")
        ] = None,
        project: Project = None,
    ) -> Annotated[CallToolResult, QueryOut]:
        """The assertions you see and the active conflict signals: exact filters on
        entity, topic and store (trimmed, ASCII-lowercased; an empty or unknown one is
        no filter), then a substring of entity, topic and fact (a signal's reason)."""
        return call(lambda s: s.query(entity, topic, store, query, project=project).to_dict())

    @server.verb_tool("stores", title="Count the ledger's stores", annotations=_READS)
    def memory_stores(project: Project = None) -> Annotated[CallToolResult, StoresOut]:
        """Each store's record count: its assertions you see plus its active signals."""
        return call(lambda s: {"stores": [i.to_dict() for i in s.stores(project=project)]})

    @server.verb_tool("gate", title="Is acting on it contested?", annotations=_READS)
    def memory_gate(
        subject: Entity, predicate: Topic, project: Project = None
    ) -> Annotated[CallToolResult, GateOut]:
        """Whether acting on a subject's predicate is contested: an active conflict
        signal on it, or two believed facts of it that disagree. Ask before acting on a
        value others may dispute."""
        return call(lambda s: s.gate(subject, predicate, project=project).to_dict())
