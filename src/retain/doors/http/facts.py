"""The routes of facts: a subject's predicates over time, read, written, their history and
a retraction (tag ``facts``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from retain import fields
from retain.doors.http.request import (
    API,
    ConfirmBody,
    FactRetractBody,
    FactWriteBody,
    MomentQuery,
    ProjectQuery,
    Text,
    TrustQuery,
    query_rule,
)
from retain.doors.records import facts_of
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the facts' routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.get(f"{API}/facts", tags=["facts"])
    def fact_read(
        subject: Annotated[str, query_rule(pattern=fields.FACT_SUBJECT_PATTERN)],
        predicate: Annotated[str | None, query_rule(pattern=fields.PREDICATE_PATTERN)] = None,
        project: ProjectQuery = None,
        valid_at: MomentQuery = None,
        known_at: MomentQuery = None,
        min_trust: TrustQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """The subject's facts (of one predicate, or all) that held at ``valid_at`` as the
        store knew at ``known_at`` (both default to now), in the tiers the caller sees."""
        return facts_of(
            svc.fact_read(
                subject,
                predicate,
                project=project,
                valid_at=valid_at,
                known_at=known_at,
                min_trust=min_trust,
            )
        )

    @app.post(
        f"{API}/facts",
        tags=["facts"],
        status_code=201,
        responses={200: {"description": "unchanged: that value is already current"}},
    )
    def fact_write(body: FactWriteBody, svc: MemoryService = acting) -> JSONResponse:
        """Record a value of a subject's predicate; the current one is superseded."""
        change = svc.fact_write(**body.model_dump())
        return JSONResponse(change.to_dict("write"), status_code=201 if change.changed else 200)

    @app.get(f"{API}/facts/history", tags=["facts"])
    def fact_history(
        subject: Annotated[str, query_rule(pattern=fields.FACT_SUBJECT_PATTERN)],
        predicate: Annotated[str, query_rule(pattern=fields.PREDICATE_PATTERN)],
        project: ProjectQuery = None,
        min_trust: TrustQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """Every version of a subject's predicate, in the order recorded."""
        return facts_of(svc.fact_history(subject, predicate, project=project, min_trust=min_trust))

    @app.post(f"{API}/facts/{{fact_id}}/confirm", tags=["facts"])
    def fact_confirm(
        fact_id: Text, body: ConfirmBody | None = None, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """Confirm a claimed fact held for review: it becomes attested and current."""
        reason = body.reason if body is not None else ""
        return svc.fact_confirm(fact_id, reason=reason).to_dict("write")

    @app.post(f"{API}/facts/retract", tags=["facts"])
    def fact_retract(body: FactRetractBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Withdraw a predicate's current value; the one it superseded holds again."""
        return svc.fact_retract(**body.model_dump()).to_dict("retract")
