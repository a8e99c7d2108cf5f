"""The routes of access grants: listed, granted and revoked (tag ``access``); the grants
are checked under ``[access] control = true``, ``config.toml``'s listed but never revoked.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI

from retain import grants
from retain.doors.http.request import API, GrantBody, query_rule
from retain.service import MemoryService

_SUBJECT = Annotated[str, query_rule(pattern=grants.SUBJECT_PATTERN)]
_ACTION = Annotated[str, query_rule(enum=list(grants.ACTIONS))]
_ON = Annotated[str, query_rule(pattern=grants.ON_PATTERN)]
_EFFECT = Annotated[str, query_rule(enum=list(grants.EFFECTS))]


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the grants' routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.get(f"{API}/access/grants", tags=["access"])
    def list_grants(svc: MemoryService = acting) -> dict[str, Any]:
        """Every grant that counts in the realm: config.toml's, then the stored ones."""
        return {"grants": [g.to_dict() for g in svc.list_grants()]}

    @app.post(f"{API}/access/grants", tags=["access"], status_code=201)
    def grant(body: GrantBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Store a grant (a grant stored already is returned as it is)."""
        return svc.grant(body.subject, body.action, body.on, effect=body.effect).to_dict()

    @app.delete(f"{API}/access/grants", tags=["access"])
    def revoke(
        subject: _SUBJECT,
        action: _ACTION,
        on: _ON,
        effect: _EFFECT = "allow",
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """Remove the stored grant of these parts (config.toml's: ``grant_read_only``)."""
        return {"revoked": svc.revoke(subject, action, on, effect=effect).to_dict()}
