"""The custody routes: erase an item with its certificate, fetch a certificate again,
and compact the store (tag ``custody``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from retain.doors.http.request import API, CompactBody, ForgetBody, Text
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the custody routes to ``app`` (``acting`` gives each request its principal's
    session)."""

    @app.post(f"{API}/forget", tags=["custody"])
    def forget(body: ForgetBody, svc: MemoryService = acting) -> dict[str, Any]:
        """Erase a memory, fact or ticket and every copy of it, history included,
        keeping a digest (an agent: only its own); the erasure certificate."""
        return svc.forget(
            body.id,
            project=body.project,
            reason=body.reason,
            keep_digest=body.keep_digest,
            compact=body.compact,
        ).to_dict()

    @app.get(f"{API}/certificates/{{target}}", tags=["custody"])
    def certificate(target: Text, svc: MemoryService = acting) -> dict[str, Any]:
        """The erasure certificate of a forgotten item (its id, or the certificate's)."""
        return svc.certificate(target).to_dict()

    @app.post(f"{API}/compact", tags=["custody"])
    def compact(body: CompactBody | None = None, svc: MemoryService = acting) -> dict[str, Any]:
        """Shed what erasures and deletes left in the store's files."""
        return svc.compact(full=body.full if body is not None else False)
