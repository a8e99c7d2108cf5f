"""The routes of the relation graph (tag ``graph``): a memory's edges, an explicit link,
a curator's decision on a pair, the dedup pass, and the hygiene report."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

from retain import fields
from retain.doors.http.request import (
    API,
    MAX_PAGE,
    DedupBody,
    LinkBody,
    PairDecisionBody,
    ProjectQuery,
    query_rule,
)
from retain.service import MemoryService

# A period such as 90d ("" is none, and a report needs one: the service refuses it).
_PERIOD = Annotated[str | None, query_rule(pattern=fields.DURATION_PATTERN, minLength=1)]
_LIMIT = Annotated[int | None, Query(ge=1, le=MAX_PAGE)]


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the graph's routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.get(f"{API}/memories/{{memory_id}}/graph", tags=["graph"])
    def graph(
        memory_id: str, project: ProjectQuery = None, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """The memory (its id, or a name) with its outgoing and incoming edges, stored
        and read from the memories; an edge to a memory the caller does not see is left
        out. An unknown memory is 404 ``not_found``, never an empty graph."""
        return svc.graph(memory_id, project=project).to_dict()

    @app.post(
        f"{API}/relations",
        tags=["graph"],
        status_code=201,
        responses={200: {"description": "unchanged: the relation stands already"}},
    )
    def link(body: LinkBody, svc: MemoryService = acting) -> JSONResponse:
        """Relate ``source`` to ``target`` as ``type`` (curators: operators and the
        steward). ``supersedes`` retires the target; ``contradicts`` raises a conflict
        signal; ``references`` is refused (it is read from the memory's references)."""
        given = body.model_dump()
        done = svc.link(given.pop("source"), given.pop("target"), given.pop("type"), **given)
        return JSONResponse(done.to_dict(), status_code=201 if done.changed else 200)

    @app.post(
        f"{API}/memories/{{memory_id}}/decide",
        tags=["graph"],
        status_code=201,
        responses={200: {"description": "unchanged: the decision stands already"}},
    )
    def decide(memory_id: str, body: PairDecisionBody, svc: MemoryService = acting) -> JSONResponse:
        """Decide the pair of the memory and ``target`` (curators): ``supersede`` (the
        target takes over; the memory is retired, still readable with ``superseded_by``),
        ``contradict`` (a conflict signal until decided) or ``keep`` (both stand)."""
        given = body.model_dump()
        done = svc.decide(memory_id, given.pop("action"), **given)
        return JSONResponse(done.to_dict(), status_code=201 if done.changed else 200)

    @app.post(f"{API}/dedup", tags=["graph"])
    def dedup(body: DedupBody | None = None, svc: MemoryService = acting) -> dict[str, Any]:
        """Link as ``similar_to`` the pairs of memories of one scope that score
        ``threshold``, and list every open pair, best first, for a curator to decide.
        Nothing is merged, retired or deleted."""
        given = body.model_dump() if body is not None else {}
        return svc.dedup(**given).to_dict()

    @app.get(f"{API}/hygiene", tags=["graph"])
    def hygiene(
        unverified: _PERIOD = None,
        expiring: _PERIOD = None,
        limit: _LIMIT = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """What needs a curator, a section each (``count`` and the first ``limit``
        ``items``): memories unverified for ``unverified`` (default 90d), expired ones,
        dangling references, inline bands near their budget, open contradictions, active
        conflict signals, tickets expiring within ``expiring`` (default 7d), clusters of
        near-duplicates. A read."""
        given: dict[str, Any] = {"unverified": unverified, "expiring": expiring, "limit": limit}
        return svc.hygiene(**{k: v for k, v in given.items() if v is not None}).to_dict()
