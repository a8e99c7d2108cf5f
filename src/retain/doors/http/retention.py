"""The routes of custody (tag ``custody``): a legal hold on a memory, placed, read and
released, and the retention sweep."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI

from retain import fields
from retain.doors.http.request import API, HoldBody, SweepBody, query_rule
from retain.service import MemoryService

_REASON = Annotated[str, query_rule(pattern=fields.FILLED_PATTERN)]


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add custody's routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.get(f"{API}/memories/{{memory_id}}/hold", tags=["custody"])
    def held(memory_id: str, svc: MemoryService = acting) -> dict[str, Any]:
        """Whether a legal hold stands on the memory, and that hold."""
        return svc.held(memory_id).to_dict()

    @app.post(f"{API}/memories/{{memory_id}}/hold", tags=["custody"], status_code=201)
    def hold(memory_id: str, body: HoldBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Place a legal hold on the memory (a fact's id too): forgetting and sweeping it
        are refused ``hold_active`` until it is released. The hold event."""
        return svc.hold(memory_id, reason=body.reason).to_dict()

    @app.delete(f"{API}/memories/{{memory_id}}/hold", tags=["custody"])
    def release_hold(
        memory_id: str, reason: _REASON, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """Release the legal hold on the memory (``not_held`` when none stands). The
        release event."""
        return svc.release_hold(memory_id, reason=reason).to_dict()

    @app.post(f"{API}/sweep", tags=["custody"])
    def sweep(body: SweepBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Forget what the store learned before ``before`` (none: each scope's retention
        window decides), in ``scope`` or every scope in view; held memories are skipped
        and listed. ``dry_run`` lists what would go and changes nothing."""
        return svc.sweep(**body.model_dump()).to_dict()
