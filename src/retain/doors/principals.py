"""Who acts at a serving door (REST, and MCP beside it or over stdio): each principal's
session over one store, opened once and shared (``Services``), and the principal a
bearer token stands for (``principal_of``)."""

from __future__ import annotations

import hmac
import threading
from collections.abc import Mapping

from retain.service import MemoryService


class Services:
    """The session of each principal over one store: every session shares the root's
    store (backend, settings, embedder, the one vector index); none is a copy."""

    def __init__(self, root: MemoryService) -> None:
        self.root = root
        self._by_principal = {root.principal: root}
        self._lock = threading.Lock()

    def held(self, principal: str) -> MemoryService | None:
        """The principal's session if it is open already (no I/O)."""
        return self._by_principal.get(principal)

    def of(self, principal: str) -> MemoryService:
        with self._lock:
            service = self._by_principal.get(principal)
            if service is None:
                service = self.root.acting_as(principal)
                self._by_principal[principal] = service
            return service


def bearer(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header's value (None: another
    scheme, or no token)."""
    scheme, _, token = authorization.partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def principal_of(tokens: Mapping[str, str], token: str) -> str | None:
    """The principal a bearer token from a request header stands for (None: no such
    token), compared in constant time as bytes: the header's own (ASGI servers read them
    as Latin-1) against the token's UTF-8, so a header holding any byte is only unknown.
    The REST door's check and the MCP server's."""
    given = token.encode("latin-1", "replace")
    for candidate, principal in tokens.items():
        if hmac.compare_digest(candidate.encode("utf-8"), given):
            return principal
    return None
