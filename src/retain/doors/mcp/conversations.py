"""The tool that writes a conversation's turns as memories, ``ingest_conversation``: a
host's verb over the shared tiers, offered where the policy table lets the principal
write them (operators and applications; never a model acting as an agent)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from retain.doors.mcp.schema import Reason, Redact, WriteReceiptOut
from retain.doors.mcp.server import Server
from retain.service import MemoryService

Call = Callable[[Callable[[MemoryService], dict[str, Any]]], CallToolResult]

# A turn stored as given is left as it is, and a changed one replaces what was stored.
_OVERWRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


class TurnArg(BaseModel):
    """One turn of the conversation."""

    model_config = ConfigDict(extra="forbid")

    speaker: str = Field(description="Who spoke, in one line.")
    text: str = Field(description="What was said.")
    at: str | None = Field(default=None, description="When: RFC 3339, or YYYY-MM-DD.")
    id: str | None = Field(default=None, description="The host's id of the turn.")
    caption: str | None = Field(
        default=None, description="The description of an image or file shared in the turn."
    )


class IngestedOut(BaseModel):
    id: str
    name: str
    created: bool
    changed: bool
    status: str
    receipt: WriteReceiptOut | None = Field(
        default=None, description="The receipt of the turn's write (none: it was unchanged)."
    )


class IngestOut(BaseModel):
    thread: str
    project: str | None
    turns: int
    written: int = Field(description="Turns created or updated.")
    created: int
    updated: int
    unchanged: int
    memories: list[IngestedOut] = Field(description="One a turn, in the turns' order.")


def add(server: Server, call: Call) -> None:
    """Register the conversation tool on ``server`` (``call`` runs a verb for the principal
    acting and turns a refusal into its tool result)."""

    @server.verb_tool(
        "ingest_conversation",
        name="ingest_conversation",
        title="Ingest a conversation",
        annotations=_OVERWRITES,
    )
    def ingest_conversation(
        thread: Annotated[str, Field(description="The conversation the turns belong to.")],
        turns: Annotated[list[TurnArg], Field(description="The turns, in the order said.")],
        project: Annotated[
            str | None, Field(description="File them in this project's tier (else global).")
        ] = None,
        at: Annotated[
            str | None, Field(description="The time of a turn that gives none: RFC 3339.")
        ] = None,
        reason: Reason = "",
        redact: Redact = False,
    ) -> Annotated[CallToolResult, IngestOut]:
        """Write a conversation's turns as shared memories, one a turn, all or none: each
        named <thread>-<id> (or its place), its speaker the subject, its time the valid
        time. Turns already stored as given change nothing."""
        given = [t.model_dump(exclude_none=True) for t in turns]
        return call(
            lambda s: s.ingest_conversation(
                given, thread=thread, project=project, at=at, reason=reason, redact=redact
            ).to_dict(s.clock.now())
        )
