"""The routes of the store and of its memories by name: the store's status and event log,
and the listing, search, get, write, delete, edit and read of the shared tiers' memories,
and a memory's retier (tags ``store`` and ``memories``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI
from fastapi import Path as InPath
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from retain import fields
from retain.doors.http.request import (
    API,
    PAGE,
    DurationQuery,
    EditBody,
    MemoryWrite,
    NamePath,
    PageQuery,
    ProjectQuery,
    RetierBody,
    SearchBody,
    TagQuery,
    TextQuery,
    TrustQuery,
    query_rule,
)
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the store's and the memories' routes to ``app`` (``acting`` gives each
    request its principal's session)."""

    now = root.clock.now

    @app.get(f"{API}/status", tags=["store"])
    def status(svc: MemoryService = acting) -> dict[str, Any]:
        """Where the store is, what it holds, the embedder in use and whether it is degraded."""
        return {**svc.status().to_dict(), "principal": svc.principal}

    @app.get(f"{API}/chain/head", tags=["store"])
    def chain_head(svc: MemoryService = acting) -> dict[str, Any]:
        """The event log's last event (seq, hash), signed with the store's Ed25519 key
        when it has one (key_id, signature: over "retain-head/1", seq and hash, a line
        each)."""
        return svc.chain_head().to_dict()

    @app.get(f"{API}/memories", tags=["memories"])
    def list_memories(
        project: ProjectQuery = None,
        tag: TagQuery = None,
        referencing: TextQuery = None,
        unverified: DurationQuery = None,
        expired: bool = False,
        limit: PageQuery = PAGE,
        cursor: Annotated[str | None, query_rule(pattern=fields.CURSOR_PATTERN)] = None,
        min_trust: TrustQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """A page of the memories of the global tier and the project's, in index order;
        ``next_cursor`` (when the page is full) continues after its last memory."""
        memories = svc.list_memories(
            project=project,
            tag=tag,
            referencing=referencing,
            unverified=unverified,
            expired=expired,
            limit=limit,
            after=cursor,
            min_trust=min_trust,
        )
        moment = now()
        full = len(memories) == limit
        return {
            "memories": [m.to_dict(moment) for m in memories],
            "next_cursor": fields.cursor_of(memories[-1].position) if full else None,
        }

    @app.get(f"{API}/events", tags=["store"])
    def events(
        after: Annotated[int, query_rule(minimum=0, maximum=fields.WHOLE_MAX)] = 0,
        limit: PageQuery = PAGE,
        memory_id: TextQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """A page of the realm's event log after ``seq`` ``after``, oldest first."""
        rows = svc.events(after=after, limit=limit, memory_id=memory_id)
        return {
            "events": [e.to_dict() for e in rows],
            "next_cursor": rows[-1].seq if len(rows) == limit else None,
        }

    @app.post(f"{API}/memories/search", tags=["memories"])
    async def search(body: SearchBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Hybrid search; no queries lists what the filters pass."""
        if root.backend.reads_wait:
            return await run_in_threadpool(searched, body, svc)
        # A read that cannot wait is this process's CPU work: done here on the event
        # loop, it saves the pool's two thread switches (bench/RESULTS.md).
        return searched(body, svc)

    def searched(body: SearchBody, svc: MemoryService) -> dict[str, Any]:
        result = svc.search(
            body.queries,
            project=body.project,
            tier=body.tier,
            limit=body.limit,
            tag=body.tag,
            referencing=body.referencing,
            unverified=body.unverified,
            expired=body.expired,
            budget_tokens=body.budget_tokens,
            min_trust=body.min_trust,
        )
        return result.to_dict(now())

    @app.get(f"{API}/memories/{{name}}", tags=["memories"])
    def get(
        name: NamePath,
        project: ProjectQuery = None,
        min_trust: TrustQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """Every field of a memory, its body whole, and what references it (not a read);
        with ``min_trust``, a memory trusted less is not found."""
        record = svc.get(name, project=project, min_trust=min_trust)
        return {
            **record.memory.to_dict(now(), body=True),
            "referenced_by": list(record.referenced_by),
        }

    @app.put(
        f"{API}/memories/{{name}}",
        tags=["memories"],
        status_code=200,
        responses={201: {"description": "created: the memory did not exist"}},
    )
    def put(
        name: NamePath,
        body: MemoryWrite,
        project: ProjectQuery = None,
        svc: MemoryService = acting,
    ) -> JSONResponse:
        """Create or update a memory by name: a field left out keeps what is there."""
        written = svc.write(name, project=project, **body.model_dump(exclude_unset=True))
        return JSONResponse(written.to_dict(now()), status_code=201 if written.created else 200)

    @app.delete(f"{API}/memories/{{name}}", tags=["memories"])
    def delete(
        name: NamePath, project: ProjectQuery = None, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """Remove a memory; memories that referenced it keep their references."""
        return svc.delete(name, project=project).to_dict()

    @app.post(f"{API}/memories/{{name}}/edit", tags=["memories"])
    def edit(
        name: NamePath, body: EditBody, project: ProjectQuery = None, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """Replace ``old`` with ``new`` in the body (once, unless ``replace_all``)."""
        result = svc.edit(
            name,
            body.old,
            body.new,
            replace_all=body.replace_all,
            verified=body.verified,
            project=project,
            redact=body.redact,
        )
        return result.to_dict(now())

    @app.get(f"{API}/memories/{{name}}/read", tags=["memories"])
    def read(
        name: NamePath,
        offset: Annotated[int, query_rule(minimum=0, maximum=fields.WHOLE_MAX)] = 0,
        project: ProjectQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """A page of the body from ``offset``, with its caption; the first page is a read."""
        return svc.read(name, offset=offset, project=project).to_dict(now())

    @app.post(f"{API}/memories/{{memory_id}}/retier", tags=["memories"])
    def retier(
        memory_id: Annotated[str, InPath(json_schema_extra={"pattern": fields.FILLED_PATTERN})],
        body: RetierBody,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """Set a memory's trust (a review, for operators and the steward): ``verified``
        needs evidence; a memory that was ever quarantined stays at observed or below."""
        evidence = body.evidence.model_dump() if body.evidence is not None else None
        result = svc.retier(memory_id, body.trust, reason=body.reason, evidence=evidence)
        return result.to_dict(now())
