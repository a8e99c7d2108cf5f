"""The relation graph's tools: ``memory_graph`` (a memory's edges: a read, offered to
every principal), ``memory_link`` and ``memory_decide`` (a curator's: operators and the
steward), ``memory_dedup`` (upkeep: operators, applications, the steward) and
``memory_hygiene`` (the curators' worklist: a read). The policy table decides who is
offered which; their results' types are here, beside them, as the tools are the graph's
alone.

The hints, truthfully: a supersede retires a memory (it leaves searches and the
context, and no verb brings it back), so ``memory_link`` (type ``supersedes``) and
``memory_decide`` (``supersede``) are destructive; neither is idempotent (a
contradiction is signalled again each time). A dedup pass only adds ``similar_to``
pairs, and a second one adds none of the same: additive and idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Generic, Literal, TypeVar

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from retain import graph
from retain.doors.mcp.assertions import ConflictOut
from retain.doors.mcp.schema import MemoryRecord, Project, WriteReceiptOut
from retain.doors.mcp.server import Server
from retain.fields import PAGE_MAX
from retain.service import MemoryService

Call = Callable[[Callable[[MemoryService], dict[str, Any]]], CallToolResult]
Ref = Annotated[str, Field(description="A memory's id, or its name.")]
Why = Annotated[
    str, Field(description="Why, in a sentence or two (kept on the relation and in the log).")
]
Period = Annotated[str | None, Field(description="A period such as 90d, 12h or 2w.")]

_READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_DECIDES = ToolAnnotations(  # a supersede retires a memory for good
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
_PROPOSES = ToolAnnotations(  # similar_to pairs only, each once
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


class RelationOut(BaseModel):
    id: str
    source: str
    target: str
    type: str = Field(description="similar_to, supersedes, contradicts or derived_from.")
    score: float | None = Field(description="A similar_to pair's score, when a pass found it.")
    reason: str
    principal: str = Field(description="Who made it.")
    created_at: str
    decision: str | None = Field(description="A curator's decision on the pair, if any.")
    decided_by: str | None
    decided_at: str | None
    open: bool = Field(description="Whether the pair waits for a curator's decision.")


class EdgeOut(BaseModel):
    type: str = Field(
        description="similar_to, supersedes, contradicts, derived_from or references."
    )
    direction: Literal["out", "in"]
    id: str | None = Field(description="The memory at the other end (none: none found).")
    name: str | None
    scope: str | None
    description: str | None
    status: str | None
    expired: bool | None
    reference: str | None = Field(description="The reference as written, for references.")
    relation: RelationOut | None = Field(description="The stored relation, if it is one.")
    stored: bool = Field(description="false: read from the memories themselves.")


class GraphOut(BaseModel):
    memory: MemoryRecord
    outgoing: list[EdgeOut]
    incoming: list[EdgeOut]


class LinkOut(BaseModel):
    relation: RelationOut
    source: MemoryRecord = Field(description="The relation's source, as it now is.")
    target: MemoryRecord = Field(description="Its target, as it now is (superseded, say).")
    changed: bool
    conflict: ConflictOut | None = Field(
        description="The conflict signal a contradiction raised or a decision cleared."
    )
    receipt: WriteReceiptOut | None = Field(
        description="The receipt of the write (none when nothing was written)."
    )


class CandidateOut(BaseModel):
    first: MemoryRecord
    second: MemoryRecord
    cosine: float
    score: float = Field(description="The cosine, less a penalty when details conflict.")
    relation: RelationOut
    new: bool = Field(description="Whether this pass linked it.")
    differs: list[list[str]] = Field(
        description="The details only the first names, and only the second: a possible "
        "contradiction when both are given."
    )


class DedupOut(BaseModel):
    threshold: float
    compared: int = Field(description="How many memories were compared.")
    linked: int = Field(description="How many pairs this pass linked.")
    pairs: list[CandidateOut] = Field(description="Every open pair, best first.")
    receipt: WriteReceiptOut | None = Field(
        description="The receipt of the pass's last write (none when it linked nothing)."
    )


class ListedMemoryOut(BaseModel):
    id: str
    name: str | None
    scope: str
    description: str
    verified_at: str
    expires_at: str | None
    expired: bool


class DanglingOut(ListedMemoryOut):
    reference: str = Field(description="The reference that names no memory.")


class PressureOut(BaseModel):
    project: str | None
    bytes: int
    budget: int
    share: float
    memories: int


class ContradictionOut(BaseModel):
    relation: RelationOut
    first: ListedMemoryOut
    second: ListedMemoryOut
    key: list[str] = Field(description="The entity and topic of its conflict signal.")


class ExpiringTicketOut(BaseModel):
    id: str
    source: str
    target: str
    summary: str
    expires_at: str | None


class ClusterOut(BaseModel):
    size: int
    memories: list[ListedMemoryOut]
    pairs: int


T = TypeVar("T")


class SectionOut(BaseModel, Generic[T]):
    count: int = Field(description="How many there are.")
    items: list[T] = Field(description="The first of them (at most limit).")


class SectionsOut(BaseModel):
    unverified: SectionOut[ListedMemoryOut]
    expired: SectionOut[ListedMemoryOut]
    dangling_references: SectionOut[DanglingOut]
    inline_pressure: SectionOut[PressureOut]
    contradictions: SectionOut[ContradictionOut]
    conflicts: SectionOut[ConflictOut]
    tickets_expiring: SectionOut[ExpiringTicketOut]
    near_duplicates: SectionOut[ClusterOut]


class HygieneOut(BaseModel):
    read_at: str
    unverified_for: str
    expiring_within: str
    clean: bool = Field(description="Whether every section is empty.")
    sections: SectionsOut


def add(server: Server, call: Call) -> None:
    """Register the graph's tools on ``server`` (``call`` runs a verb for the principal
    acting and turns a refusal into its tool result)."""

    @server.verb_tool("graph", title="A memory's relations", annotations=_READS)
    def memory_graph(memory: Ref, project: Project = None) -> Annotated[CallToolResult, GraphOut]:
        """A memory with its outgoing and incoming edges: what it supersedes or was
        superseded by, what contradicts it, its near-copies, what it derives from and
        what it references."""
        return call(lambda s: s.graph(memory, project=project).to_dict())

    @server.verb_tool("link", title="Relate two memories", annotations=_DECIDES)
    def memory_link(
        source: Ref,
        target: Ref,
        type: Annotated[  # noqa: A002 - the relation's type, as the verb names it
            str,
            Field(
                description="similar_to, supersedes (source takes over: target is "
                "retired), contradicts (raises a conflict signal) or derived_from.",
                json_schema_extra={"enum": list(graph.LINKED)},
            ),
        ],
        reason: Why = "",
        project: Project = None,
    ) -> Annotated[CallToolResult, LinkOut]:
        """Record that source relates to target as type; one that stands changes nothing
        but its reason."""
        return call(
            lambda s: s.link(source, target, type, reason=reason, project=project).to_dict()
        )

    @server.verb_tool("decide", title="Decide a pair of memories", annotations=_DECIDES)
    def memory_decide(
        memory: Ref,
        action: Annotated[
            str,
            Field(
                description="supersede (target takes over: memory is retired, still "
                "readable), contradict (a conflict signal until decided) or keep (both "
                "stand).",
                json_schema_extra={"enum": list(graph.DECISIONS)},
            ),
        ],
        target: Annotated[
            str,
            Field(description="The other memory (id or name); for supersede, the newer one."),
        ],
        reason: Why = "",
        project: Project = None,
    ) -> Annotated[CallToolResult, LinkOut]:
        """Decide a pair a dedup pass proposed, or any two memories: supersede,
        contradict or keep."""
        return call(
            lambda s: s.decide(
                memory, action, target=target, reason=reason, project=project
            ).to_dict()
        )

    @server.verb_tool("dedup", title="Find near-copies", annotations=_PROPOSES)
    def memory_dedup(
        threshold: Annotated[
            float | None,
            Field(gt=0, le=1, description=f"The score a pair needs; default {graph.THRESHOLD}."),
        ] = None,
        project: Annotated[
            str | None,
            Field(description='Only this project\'s tier ("" the global tier); default all.'),
        ] = None,
        scope: Annotated[
            str | None,
            Field(description="Only this scope: global, project:, team: or agent: a name."),
        ] = None,
    ) -> Annotated[CallToolResult, DedupOut]:
        """Link the pairs of memories of one scope that say nearly the same as similar_to,
        and list every open pair, best first, for a curator to decide (memory_decide).
        Nothing is merged, retired or deleted."""
        return call(lambda s: s.dedup(threshold=threshold, project=project, scope=scope).to_dict())

    @server.verb_tool("hygiene", title="What needs a curator", annotations=_READS)
    def memory_hygiene(
        unverified: Period = None,
        expiring: Period = None,
        limit: Annotated[
            int | None, Field(ge=1, le=PAGE_MAX, description="The most items a section lists.")
        ] = None,
    ) -> Annotated[CallToolResult, HygieneOut]:
        """Each section's count and first items: memories not verified for unverified
        (default 90d), expired ones, dangling references, inline bands near their budget,
        open contradictions, active conflict signals, tickets expiring within expiring
        (default 7d), clusters of near-duplicates."""
        given: dict[str, Any] = {"unverified": unverified, "expiring": expiring, "limit": limit}
        return call(
            lambda s: s.hygiene(**{k: v for k, v in given.items() if v is not None}).to_dict()
        )
