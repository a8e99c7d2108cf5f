"""The route of conversation ingestion (tag ``conversations``): a thread's turns
written as memories, one a turn, all or none (``ingest_conversation``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from retain.doors.http.request import API, ConversationBody
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the conversations' route to ``app`` (``acting`` gives each request its
    principal's session)."""

    @app.post(
        f"{API}/conversations",
        tags=["conversations"],
        status_code=200,
        responses={201: {"description": "written: a turn was created or updated"}},
    )
    def ingest_conversation(body: ConversationBody, svc: MemoryService = acting) -> JSONResponse:
        """Write a thread's turns as memories, one a turn, in order: subject the speaker,
        valid from the turn's time, named ``<thread>-<id>`` (or its place). Turns stored
        as given already change nothing (200)."""
        turns = [t.model_dump(exclude_none=True) for t in body.turns]
        result = svc.ingest_conversation(
            turns,
            thread=body.thread,
            project=body.project,
            at=body.at,
            reason=body.reason,
            redact=body.redact,
        )
        return JSONResponse(
            result.to_dict(root.clock.now()), status_code=201 if result.written else 200
        )
