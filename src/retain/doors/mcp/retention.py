"""Custody's tools: ``memory_hold``, ``memory_release``, ``memory_held`` and
``memory_sweep``. The policy table offers them to operators and applications (``held``
to every principal but an agent), never to a model acting as an agent. Their results'
types are here, beside them, as the tools are custody's alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from retain.doors.mcp.schema import WriteReceiptOut
from retain.doors.mcp.server import Server
from retain.service import MemoryService

Call = Callable[[Callable[[MemoryService], dict[str, Any]]], CallToolResult]
Target = Annotated[str, Field(description="The memory's (or fact's) id.")]
Why = Annotated[
    str, Field(description="Why, in a line: the matter, the request (kept in the log).")
]

_READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_HOLDS = ToolAnnotations(  # a second hold (or release) is refused: not idempotent
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
_ERASES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


class HoldEventOut(BaseModel):
    event_id: str
    seq: int
    kind: str = Field(description="hold or release.")
    tx_time: str
    target: str
    principal: str
    reason: str
    receipt: WriteReceiptOut | None = Field(description="The event's receipt.")


class HoldOut(BaseModel):
    target: str
    reason: str
    held_by: str
    held_at: str
    event_id: str = Field(description="The hold event that placed it.")


class HoldStateOut(BaseModel):
    target: str
    held: bool
    hold: HoldOut | None


class CutoffOut(BaseModel):
    scope: str
    before: str = Field(description="What the scope's memories were learned before, to go.")
    pattern: str | None = Field(default=None, description="The retention pattern that set it.")
    window: str | None = Field(default=None, description="Its ISO 8601 duration.")


class SweptOut(BaseModel):
    id: str
    scope: str
    learned_at: str
    status: str


class SweepOut(BaseModel):
    before: str | None
    scope: str | None
    retention: list[CutoffOut]
    dry_run: bool
    selected: list[SweptOut] = Field(description="What goes (in a dry run: would go).")
    forgotten: list[dict[str, Any]] = Field(description="Each forgotten memory's certificate.")
    held: list[str] = Field(description="The held memories it kept.")


def add(server: Server, call: Call) -> None:
    """Register custody's tools on ``server`` (``call`` runs a verb for the principal
    acting and turns a refusal into its tool result)."""

    @server.verb_tool("hold", title="Place a legal hold", annotations=_HOLDS)
    def memory_hold(id: Target, reason: Why) -> Annotated[CallToolResult, HoldEventOut]:
        """Hold a memory: forgetting and sweeping it are refused until it is released."""
        return call(lambda s: s.hold(id, reason=reason).to_dict())

    @server.verb_tool(
        "release_hold", name="memory_release", title="Release a legal hold", annotations=_HOLDS
    )
    def memory_release(id: Target, reason: Why) -> Annotated[CallToolResult, HoldEventOut]:
        """Release the legal hold on a memory: it may be forgotten and swept again."""
        return call(lambda s: s.release_hold(id, reason=reason).to_dict())

    @server.verb_tool("held", title="Is a memory held", annotations=_READS)
    def memory_held(id: Target) -> Annotated[CallToolResult, HoldStateOut]:
        """Whether a legal hold stands on a memory, and that hold."""
        return call(lambda s: s.held(id).to_dict())

    @server.verb_tool("sweep", title="Sweep by retention", annotations=_ERASES)
    def memory_sweep(
        reason: Why,
        before: Annotated[
            str | None,
            Field(
                description="Forget what was learned before this (RFC 3339 or YYYY-MM-DD); "
                "default: each scope's retention window decides."
            ),
        ] = None,
        scope: Annotated[
            str | None, Field(description="Only this scope: global, project:NAME, team:NAME, ...")
        ] = None,
        keep_digest: Annotated[bool, Field(description="Keep each value's digest.")] = True,
        dry_run: Annotated[bool, Field(description="List what would go; change nothing.")] = False,
    ) -> Annotated[CallToolResult, SweepOut]:
        """Forget every memory learned before an instant (or past its scope's retention
        window); held memories are skipped and listed."""
        return call(
            lambda s: s.sweep(
                reason=reason, before=before, scope=scope, keep_digest=keep_digest,
                dry_run=dry_run,
            ).to_dict()
        )  # fmt: skip
