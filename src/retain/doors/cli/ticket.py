"""The curator's commands: ``retain ticket list|show|approve|reject|expire`` over the
tickets agents propose (each one a service verb: ``list_tickets``, ``get_ticket``,
``approve``, ``reject``, ``expire_tickets``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from retain.doors.cli.output import emit_json, emit_rows, emit_said, say
from retain.doors.cli.root import cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path

    from retain.model import Proposal

F = TypeVar("F", bound=Callable[..., Any])

COLUMNS = {
    "Id": "id",
    "Status": "status",
    "Target": "target",
    "Source": "source",
    "Summary": "summary",
    "Expires": "expires_at",
}


def curator_option(fn: F) -> F:
    """``--as PRINCIPAL``, operator:local unless given: the curator acting."""
    return click.option(
        "--as",
        "principal",
        default="operator:local",
        show_default=True,
        metavar="PRINCIPAL",
        help="Who acts: an operator (operator:NAME) or the steward decides; a second "
        "approver, where the policy gate asks one, acts as another.",
    )(fn)


@cli.group()
def ticket() -> None:
    """List and decide the tickets agents propose (writes to a team or the global tier)."""


@ticket.command("list")
@click.option(
    "--status", help="Only tickets of this status: open, pending_gate, approved, rejected, ..."
)
@click.option("--target", help="Only tickets for this scope: global or team:NAME.")
@click.option("--record", help="Only the promotions of this memory (its id).")
@curator_option
@home_option
@format_option
def ticket_list(
    status: str | None,
    target: str | None,
    record: str | None,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """List the tickets, oldest first (an open one past its expiry shows as expired)."""
    with opened(home, fmt, principal) as service:
        found = service.list_tickets(status=status, target=target, record=record)
        emit_rows(fmt, "tickets", [t.to_dict() for t in found], COLUMNS)


@ticket.command("show")
@click.argument("ticket_id", metavar="ID")
@curator_option
@home_option
@format_option
def ticket_show(ticket_id: str, principal: str, home: Path | None, fmt: str) -> None:
    """Show ticket ID: what it asks, its evidence, and where it stands."""
    with opened(home, fmt, principal) as service:
        _show(service.get_ticket(ticket_id), fmt)


@ticket.command("approve")
@click.argument("ticket_id", metavar="ID")
@click.option("--reason", default="", help="Why, for the ticket and the event log.")
@curator_option
@home_option
@format_option
def ticket_approve(
    ticket_id: str, reason: str, principal: str, home: Path | None, fmt: str
) -> None:
    """Approve ticket ID: its memory lands in the target scope (where the policy gate
    asks a second approver, the first approval is recorded and the command answers
    gate_pending)."""
    with opened(home, fmt, principal) as service:
        decided = service.approve(ticket_id, reason=reason)
        said = f"Approved {decided.id}: memory {decided.landed} landed in {decided.target}."
        emit_said(fmt, decided.to_dict(), said)


@ticket.command("reject")
@click.argument("ticket_id", metavar="ID")
@click.option("--reason", default="", help="Why, for the ticket and the event log.")
@curator_option
@home_option
@format_option
def ticket_reject(ticket_id: str, reason: str, principal: str, home: Path | None, fmt: str) -> None:
    """Reject ticket ID: nothing lands."""
    with opened(home, fmt, principal) as service:
        decided = service.reject(ticket_id, reason=reason)
        emit_said(fmt, decided.to_dict(), f"Rejected {decided.id}.")


@ticket.command("expire")
@curator_option
@home_option
@format_option
def ticket_expire(principal: str, home: Path | None, fmt: str) -> None:
    """Store every undecided ticket past its expiry as expired ([tickets] expire_after)."""
    with opened(home, fmt, principal) as service:
        expired = service.expire_tickets()
        said = f"Expired {len(expired)} tickets."
        emit_said(fmt, {"tickets": [t.to_dict() for t in expired]}, said)


def _show(found: Proposal, fmt: str) -> None:
    record = found.to_dict()
    if fmt == "json":
        emit_json(record)
        return
    for key, value in record.items():
        if key == "approvals":
            value = ", ".join(f"{a['by']} at {a['at']}" for a in value)
        say(f"{key}: {'' if value is None else value}")
