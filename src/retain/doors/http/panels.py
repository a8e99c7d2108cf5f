"""The console's reads as routes (tag ``panels``): the records newest-updated first, one
record with its supersede chain, the overview and the timeline. The console's pages
call the same verbs (``retain.doors.console``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Query

from retain import fields
from retain.doors.http.request import (
    API,
    PageQuery,
    TagQuery,
    TrustQuery,
    query_rule,
)
from retain.model import Status
from retain.service import MemoryService
from retain.service.panel import DAYS_MAX, RECORDS_PAGE

ScopeQuery = Annotated[
    str | None,
    query_rule(pattern=f"^(?:global|(?:project|team|agent):{fields.NAME_PATTERN[1:-1]})$"),
]
FilterQuery = Annotated[str | None, query_rule(pattern=fields.TEXT_PATTERN, minLength=1)]
CursorQuery = Annotated[str | None, query_rule(pattern=fields.CURSOR_PATTERN)]
KindsQuery = Annotated[
    list[str] | None,
    Query(json_schema_extra={"items": {"type": "string", "pattern": fields.TEXT_PATTERN}}),
]
StatusQuery = Annotated[str | None, query_rule(enum=[s.value for s in Status])]
AgentQuery = Annotated[str | None, query_rule(pattern=f"^agent:{fields.NAME_PATTERN[1:-1]}$")]


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the panels' routes to ``app``."""

    @app.get(f"{API}/records", tags=["panels"])
    def records(
        scope: ScopeQuery = None,
        identity: AgentQuery = None,
        status: StatusQuery = None,
        trust: TrustQuery = None,
        tag: TagQuery = None,
        text: FilterQuery = None,
        limit: PageQuery = RECORDS_PAGE,
        cursor: CursorQuery = None,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """The realm's records of every status, newest-updated first, without bodies
        (``body_bytes`` stands in); a row the reader may not read is ``withheld``.
        ``next_cursor`` continues after the page's last row, exactly when more follow."""
        return svc.records(
            scope=scope, identity=identity, status=status, trust=trust, tag=tag,
            text=text, limit=limit, cursor=cursor,
        ).to_dict()  # fmt: skip

    @app.get(f"{API}/records/{{id}}", tags=["panels"])
    def record(id: str, svc: MemoryService = acting) -> dict[str, Any]:
        """One record with its body (or withheld), its supersede chain, and the records
        copied from it."""
        return svc.record(id).to_dict()

    @app.get(f"{API}/overview", tags=["panels"])
    def overview(
        days: Annotated[int, Query(ge=1, le=DAYS_MAX)] = 30,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """Each scope's counts by status and trust with its body bytes, each inline
        band's use of the budget, and the writes and quarantines of the last days."""
        return svc.overview(days=days).to_dict()

    @app.get(f"{API}/timeline", tags=["panels"])
    def timeline(
        kinds: KindsQuery = None,
        before: Annotated[int | None, Query(ge=1, le=fields.WHOLE_MAX)] = None,
        limit: PageQuery = 100,
        svc: MemoryService = acting,
    ) -> dict[str, Any]:
        """The realm's event log newest first, below ``seq`` ``before``, of ``kinds``
        only when named; ``next_cursor`` (the ``before`` of the next page) is set exactly
        when more events follow."""
        page = svc.timeline(kinds=tuple(kinds or ()), before=before, limit=limit)
        return {"events": [e.to_dict() for e in page], "next_cursor": page.next_cursor}
