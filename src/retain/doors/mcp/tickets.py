"""The curator's tools over the tickets agents propose: ``ticket_list``,
``ticket_show``, ``ticket_approve``, ``ticket_reject`` and ``ticket_expire``. The policy
table offers them to operators and the steward (the sweep to applications too), never
to a model acting as an agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from retain.doors.mcp.schema import ProposalOut, Reason, TicketsOut
from retain.doors.mcp.server import Server
from retain.service import MemoryService

Call = Callable[[Callable[[MemoryService], dict[str, Any]]], CallToolResult]
TicketId = Annotated[str, Field(description="The ticket's id, as ticket_list gives it.")]

_READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_DECIDES = ToolAnnotations(  # a decision closes the ticket: a second one is refused
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
_SWEEPS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


def add(server: Server, call: Call) -> None:
    """Register the tickets' tools on ``server`` (``call`` runs a verb for the principal
    acting and turns a refusal into its tool result)."""

    @server.verb_tool("list_tickets", name="ticket_list", title="List tickets", annotations=_READS)
    def ticket_list(
        status: Annotated[
            str | None, Field(description="Only this status: open, pending_gate, approved, ...")
        ] = None,
        target: Annotated[
            str | None, Field(description="Only tickets for this scope: global or team:NAME.")
        ] = None,
        record: Annotated[
            str | None, Field(description="Only the promotions of this memory (its id).")
        ] = None,
    ) -> Annotated[CallToolResult, TicketsOut]:
        """The tickets agents proposed, oldest first (one past its expiry reads expired)."""
        return call(
            lambda s: {
                "tickets": [
                    t.to_dict() for t in s.list_tickets(status=status, target=target, record=record)
                ]
            }
        )

    @server.verb_tool("get_ticket", name="ticket_show", title="Show a ticket", annotations=_READS)
    def ticket_show(ticket_id: TicketId) -> Annotated[CallToolResult, ProposalOut]:
        """One ticket: what it asks, its evidence, and where it stands."""
        return call(lambda s: s.get_ticket(ticket_id).to_dict())

    @server.verb_tool(
        "approve", name="ticket_approve", title="Approve a ticket", annotations=_DECIDES
    )
    def ticket_approve(
        ticket_id: TicketId, reason: Reason = ""
    ) -> Annotated[CallToolResult, ProposalOut]:
        """Approve a ticket: its memory lands in the target scope. Where the policy gate
        asks a second approver, the first approval is recorded and answered gate_pending."""
        return call(lambda s: s.approve(ticket_id, reason=reason).to_dict())

    @server.verb_tool("reject", name="ticket_reject", title="Reject a ticket", annotations=_DECIDES)
    def ticket_reject(
        ticket_id: TicketId, reason: Reason = ""
    ) -> Annotated[CallToolResult, ProposalOut]:
        """Reject a ticket: nothing lands."""
        return call(lambda s: s.reject(ticket_id, reason=reason).to_dict())

    @server.verb_tool(
        "expire_tickets", name="ticket_expire", title="Expire old tickets", annotations=_SWEEPS
    )
    def ticket_expire() -> Annotated[CallToolResult, TicketsOut]:
        """Store every undecided ticket past its expiry as expired."""
        return call(lambda s: {"tickets": [t.to_dict() for t in s.expire_tickets()]})
