"""The routes of an agent's own memory: remember and recall (tag ``agents``); its
``forget`` is the custody routes'."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from retain.doors.http.request import API, RecallBody, RememberBody
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the routes of an agent's own memory to ``app`` (``acting`` gives each request
    its principal's session)."""

    now = root.clock.now

    @app.post(f"{API}/remember", tags=["agents"], status_code=201)
    def remember(body: RememberBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Keep a memory in the acting agent's own scope."""
        memory = svc.remember(**body.model_dump())
        return memory.to_dict(now(), body=True)

    @app.post(f"{API}/recall", tags=["agents"])
    def recall(body: RecallBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Search what the acting agent sees: global, the project, its teams and its own."""
        result = svc.recall(
            body.queries,
            project=body.project,
            limit=body.limit,
            budget_tokens=body.budget_tokens,
            min_trust=body.min_trust,
        )
        return result.to_dict(now())
