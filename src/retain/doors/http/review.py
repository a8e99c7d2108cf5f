"""The reviewer's routes: the quarantine queue, and a review's decision on one of its
records (tag ``review``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from retain.doors.http.request import API, PAGE, PageQuery, ReviewBody, TextQuery
from retain.doors.records import quarantine_of
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the review's routes to ``app`` (``acting`` gives each request its principal's
    session: the reviewer)."""

    @app.get(f"{API}/quarantine", tags=["review"])
    def list_quarantine(
        limit: PageQuery = PAGE,
        cursor: TextQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """A page of the records waiting for review, oldest first, each with its body,
        reasons, author, session and ``content_hash``; ``next_cursor`` (when more records
        follow) continues after its last record."""
        return quarantine_of(svc.list_quarantine(limit=limit, after=cursor), root.clock.now())

    @app.post(f"{API}/memories/{{id}}/review", tags=["review"])
    def review(
        id: str,
        body: ReviewBody,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """Release or tombstone a quarantined record, bound to the ``content_hash`` read;
        a repeated decision answers ``already_released`` / ``already_tombstoned``."""
        return svc.review(
            id, body.verdict, body.expected_content_hash, rationale=body.rationale
        ).to_dict()
