"""The routes between an agent and the shared tiers: a proposal for a curator (and the
list of them), an agent's context for a turn, and the ledger of what went into agents'
contexts (tag ``agents``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI

from retain.doors.http.request import API, ContextBody, ProposeBody, TextQuery, query_rule
from retain.service import SEARCH_LIMIT_MAX, MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the proposals', the context's and the ledger's routes to ``app`` (``acting``
    gives each request its principal's session)."""

    @app.post(f"{API}/proposals", tags=["agents"], status_code=201)
    def propose(body: ProposeBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Ask for a write beyond the agent's own scope, for a curator to decide."""
        return svc.propose(**body.model_dump()).to_dict()

    @app.get(f"{API}/proposals", tags=["agents"])
    def proposals(status: TextQuery = None, svc: MemoryService = acting) -> dict[str, Any]:
        """The proposals (tickets) the caller may see: an agent, the ones it made."""
        return {"proposals": [p.to_dict() for p in svc.list_proposals(status=status)]}

    @app.post(f"{API}/context", tags=["agents"])
    def context(body: ContextBody, svc: MemoryService = acting) -> dict[str, Any]:
        """The memory section of an agent's context for this turn."""
        return svc.context(**body.model_dump()).to_dict()

    @app.get(f"{API}/injections", tags=["agents"])
    def injections(
        memory_id: TextQuery = None,
        session: TextQuery = None,
        identity: TextQuery = None,
        limit: Annotated[int, query_rule(minimum=1, maximum=SEARCH_LIMIT_MAX)] = 100,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """The ledger of memories rendered into agents' contexts, newest first."""
        rows = svc.list_injections(
            memory_id=memory_id, session=session, identity=identity, limit=limit
        )
        return {"injections": [r.to_dict() for r in rows]}
