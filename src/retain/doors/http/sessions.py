"""The routes of agent sessions, for an agent's host (tag ``sessions``): what a session
ingested, its fresh-context boundaries, and its taint. The key is the path's; the
session a request itself acts in is its ``Retain-Session`` header's (``access``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from retain.doors.http.request import API, IdentityQuery, ObserveBody, ResetBody, SessionPath
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the sessions' routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.post(f"{API}/sessions/{{key}}/observations", tags=["sessions"])
    def observe(key: SessionPath, body: ObserveBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Report that the session ingested a tool's result: untrusted content taints it."""
        return svc.observe(session=key, **body.model_dump()).to_dict()

    @app.post(f"{API}/sessions/{{key}}/reset", tags=["sessions"])
    def reset(key: SessionPath, body: ResetBody, svc: MemoryService = acting) -> dict[str, Any]:
        """A fresh-context boundary of the session: every one but compact clears its taint."""
        return svc.reset_session(body.identity, key, boundary=body.boundary).to_dict()

    @app.get(f"{API}/sessions/{{key}}", tags=["sessions"])
    def show(
        key: SessionPath, identity: IdentityQuery, svc: MemoryService = acting
    ) -> dict[str, Any]:
        """The session's taint: since when, and why."""
        return svc.session_status(identity, key).to_dict()
