"""The routes of the assertion ledger (tag ``ledger``): index an assertion or a conflict
signal, query them, each store's count, and the gate over a subject's predicate."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import Field

from retain import fields
from retain.assertions import METADATA_MAX_CHARS, STORE_PATTERN
from retain.doors.http.request import (
    API,
    Filled,
    ProjectArg,
    ProjectQuery,
    _Body,
    query_rule,
)
from retain.service import MemoryService
from retain.service.assertion import REASON_MAX_CHARS

TextQuery = Annotated[str | None, query_rule(pattern=fields.TEXT_PATTERN)]
Entity = Annotated[str, Field(json_schema_extra={"pattern": fields.FACT_SUBJECT_PATTERN})]
Topic = Annotated[str, Field(json_schema_extra={"pattern": fields.PREDICATE_PATTERN})]
Store = Annotated[str, Field(json_schema_extra={"pattern": STORE_PATTERN})]
Reason = Annotated[
    str, Field(json_schema_extra={"pattern": fields.TEXT_PATTERN, "maxLength": REASON_MAX_CHARS})
]


class IndexBody(_Body):
    """An assertion (``fact``) about an entity's topic in one store, and, with
    ``conflict``, the key's conflict signal set (true) or cleared (false)."""

    entity: Entity
    topic: Topic
    store: Store
    fact: Filled | None = None
    metadata: Annotated[
        dict[str, Any] | None,
        Field(description=f"A JSON object, at most {METADATA_MAX_CHARS} characters as JSON."),
    ] = None
    conflict: bool | None = None
    conflict_reason: Reason | None = None
    project: ProjectArg | None = None


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the ledger's routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.post(
        f"{API}/ledger",
        tags=["ledger"],
        status_code=201,
        responses={200: {"description": "unchanged: there was no active signal to clear"}},
    )
    def index(body: IndexBody, svc: MemoryService = acting) -> JSONResponse:
        """Index an assertion, or set or clear a key's conflict signal (a conflict-only
        write gives no fact). Entity, topic and store are trimmed and ASCII-lowercased."""
        given = body.model_dump()
        done = svc.index(given.pop("entity"), given.pop("topic"), given.pop("store"), **given)
        wrote = done.assertion is not None or done.conflict_changed
        return JSONResponse(done.to_dict(), status_code=201 if wrote else 200)

    @app.get(f"{API}/ledger", tags=["ledger"])
    def query(
        entity: TextQuery = None,
        topic: TextQuery = None,
        store: TextQuery = None,
        query: TextQuery = None,
        project: ProjectQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """The assertions the caller sees and the active conflict signals, by exact
        entity, topic and store (an empty or unknown one is no filter) and a substring
        ``query`` of entity, topic and fact (a signal's reason), ignoring case."""
        return svc.query(entity, topic, store, query, project=project).to_dict()

    @app.get(f"{API}/ledger/stores", tags=["ledger"])
    def stores(project: ProjectQuery = None, svc: MemoryService = acting) -> dict[str, Any]:
        """Each store's record count: the assertions the caller sees plus its active
        conflict signals."""
        return {"stores": [s.to_dict() for s in svc.stores(project=project)]}

    @app.get(f"{API}/gate", tags=["ledger"])
    def gate(
        subject: Annotated[str, query_rule(pattern=fields.FACT_SUBJECT_PATTERN)],
        predicate: Annotated[str, query_rule(pattern=fields.PREDICATE_PATTERN)],
        project: ProjectQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """Whether acting on a subject's predicate is contested: an active conflict
        signal on it, or two believed facts of it that disagree (both named)."""
        return svc.gate(subject, predicate, project=project).to_dict()
