"""The curator's routes over the tickets agents propose (tag ``tickets``): the queue,
one ticket, its approval and its rejection, and the sweep of expired ones."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from retain.doors.http.request import API, DecideBody, TextQuery
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the tickets' routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.get(f"{API}/tickets", tags=["tickets"])
    def tickets(
        status: TextQuery = None,
        target: TextQuery = None,
        record: TextQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """The tickets, oldest first (an open one past its expiry reads as expired)."""
        found = svc.list_tickets(status=status, target=target, record=record)
        return {"tickets": [t.to_dict() for t in found]}

    @app.post(f"{API}/tickets/expire", tags=["tickets"])
    def expire(svc: MemoryService = acting) -> dict[str, Any]:
        """Store every undecided ticket past its expiry as expired."""
        return {"tickets": [t.to_dict() for t in svc.expire_tickets()]}

    @app.get(f"{API}/tickets/{{ticket_id}}", tags=["tickets"])
    def ticket(ticket_id: str, svc: MemoryService = acting) -> dict[str, Any]:
        """One ticket."""
        return svc.get_ticket(ticket_id).to_dict()

    @app.post(f"{API}/tickets/{{ticket_id}}/approve", tags=["tickets"])
    def approve(
        ticket_id: str, body: DecideBody | None = None, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """Approve a ticket: its memory lands in the target scope. Where the policy gate
        asks a second approver, the first approval is recorded and answered 409
        ``gate_pending``."""
        reason = body.reason if body is not None else ""
        return svc.approve(ticket_id, reason=reason).to_dict()

    @app.post(f"{API}/tickets/{{ticket_id}}/reject", tags=["tickets"])
    def reject(
        ticket_id: str, body: DecideBody | None = None, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """Reject a ticket: nothing lands."""
        reason = body.reason if body is not None else ""
        return svc.reject(ticket_id, reason=reason).to_dict()
