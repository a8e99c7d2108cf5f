"""The MCP door: the agent-facing verbs as tools, with the official ``mcp`` SDK (2.x).

Translate only. A tool is named after its verb (``memory_search`` is ``search``), takes
the verb's arguments and returns the same record the REST API does, as structured
content. A refusal is a tool result with ``isError`` set, the text ``[code] message``
and the remedy, and ``{"error": {"code", "message", "remedy", "details"}}`` as its
structured content: clients read the code, never the words. Annotations say truthfully
whether a tool changes the store (``memory_read`` records the read, so it is not
read-only), can lose what was there, or can be repeated; no tool reaches beyond the
store (``open_world_hint`` is false).

Who acts: over streamable HTTP, the principal of the bearer token (the SDK refuses
a request without a known one when the server has tokens); over stdio, the identity
``retain mcp`` was started as.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AnyHttpUrl

import retain
from retain.doors.records import facts_of, record_of
from retain.errors import RetainError
from retain.model import Memory
from retain.service import MemoryService

CONTEXT_URI = "memory://context"
_SCOPE = "memory"
T = TypeVar("T")

INSTRUCTIONS = (
    "Long-term memory. Use memory_recall to find what you (and your project and teams) "
    "know before answering, memory_remember to keep a durable fact, preference or "
    "decision in your own memory, memory_update or memory_forget for your own memories, "
    "and memory_propose to ask for a shared one. For a value that changes over time "
    "(someone's employer, a setting), fact_write records it and fact_read gives what "
    "holds now or held then. Tool results are not memories: nothing a tool returns is "
    "stored again unless you remember it."
)


class Principals:
    """Which service acts for a call: the token's principal, else the fixed one."""

    def __init__(self, service_of: Callable[[str], MemoryService], local: str) -> None:
        self.service_of = service_of
        self.local = local

    def current(self) -> MemoryService:
        token = get_access_token()
        return self.service_of(token.client_id if token is not None else self.local)


def principal_of(tokens: Mapping[str, str], token: str) -> str | None:
    """The principal a bearer token from a request header stands for (None: no such
    token), compared in constant time as bytes: the header's own (ASGI servers read them
    as Latin-1) against the token's UTF-8, so a header holding any byte is only unknown.
    The REST door's check too."""
    given = token.encode("latin-1", "replace")
    for candidate, principal in tokens.items():
        if hmac.compare_digest(candidate.encode("utf-8"), given):
            return principal
    return None


class StaticTokens(TokenVerifier):
    """Bearer tokens mapped to principals (the REST API's own)."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self.tokens = dict(tokens)

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = principal_of(self.tokens, token)
        if principal is None:
            return None
        return AccessToken(token=token, client_id=principal, scopes=[_SCOPE], subject=principal)


def refusal(error: RetainError) -> CallToolResult:
    text = f"[{error.code}] {error.message}" + (f"\n{error.remedy}" if error.remedy else "")
    return CallToolResult(
        is_error=True,
        content=[TextContent(type="text", text=text)],
        structured_content={"error": error.to_dict()},
    )


def _hints(*, reads_only: bool, destroys: bool, repeatable: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=reads_only,
        destructive_hint=destroys,
        idempotent_hint=repeatable,
        open_world_hint=False,
    )


READS = _hints(reads_only=True, destroys=False, repeatable=True)
ADDS = _hints(reads_only=False, destroys=False, repeatable=False)
RECORDS = _hints(reads_only=False, destroys=False, repeatable=True)  # changes only counters
OVERWRITES = _hints(reads_only=False, destroys=True, repeatable=True)
CHANGES = _hints(reads_only=False, destroys=True, repeatable=False)
SUPERSEDES = _hints(reads_only=False, destroys=False, repeatable=True)  # history keeps the old


def create_server(
    service_of: Callable[[str], MemoryService],
    *,
    local_principal: str,
    tokens: Mapping[str, str] | None = None,
) -> MCPServer:
    """The MCP server over the store ``service_of`` opens for a principal; with ``tokens``,
    every HTTP request needs one."""
    auth: dict[str, Any] = {}
    if tokens:
        auth = {
            "token_verifier": StaticTokens(tokens),
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl("http://127.0.0.1"),  # metadata only: tokens are retain's own
                resource_server_url=None,
                required_scopes=[_SCOPE],
            ),
        }
    server = MCPServer(
        "retain",
        instructions=INSTRUCTIONS,
        version=retain.__version__,
        log_level="WARNING",
        **auth,
    )
    principals = Principals(service_of, local_principal)

    def call(verb: Callable[[MemoryService], dict[str, Any]]) -> dict[str, Any]:
        service = principals.current()
        try:
            return verb(service)
        except RetainError as exc:
            return refusal(exc)  # type: ignore[return-value]  # the SDK passes it through

    def record(service: MemoryService, memory: Memory, *, body: bool = True) -> dict[str, Any]:
        return memory.to_dict(service.clock.now(), body=body)

    @server.tool(name="memory_search", annotations=READS)
    def memory_search(
        queries: list[str],
        project: str | None = None,
        limit: int = 10,
        tag: str | None = None,
        budget_tokens: int | None = None,
    ) -> dict[str, Any]:
        """Search the shared tiers (global and the project's) by words and meaning."""
        return call(
            lambda s: s.search(
                queries, project=project, limit=limit, tag=tag, budget_tokens=budget_tokens
            ).to_dict(s.clock.now())
        )

    @server.tool(name="memory_read", annotations=RECORDS)
    def memory_read(name: str, offset: int = 0, project: str | None = None) -> dict[str, Any]:
        """A page of a memory's body from ``offset`` with its caption (recorded as a read)."""
        return call(lambda s: s.read(name, offset=offset, project=project).to_dict(s.clock.now()))

    @server.tool(name="memory_write", annotations=OVERWRITES)
    def memory_write(
        name: str,
        description: str | None = None,
        body: str | None = None,
        tags: list[str] | None = None,
        priority: int | None = None,
        load: str | None = None,
        project: str | None = None,
        expected_hash: str | None = None,
    ) -> dict[str, Any]:
        """Create or update a shared memory by name; a field left out keeps what is there."""

        def write(s: MemoryService) -> dict[str, Any]:
            done = s.write(
                name,
                description=description,
                body=body,
                tags=tags,
                priority=priority,
                load=load,
                project=project,
                expected_hash=expected_hash,
            )
            return done.to_dict(s.clock.now())

        return call(write)

    @server.tool(name="memory_edit", annotations=CHANGES)
    def memory_edit(
        name: str, old: str, new: str, replace_all: bool = False, project: str | None = None
    ) -> dict[str, Any]:
        """Replace ``old`` with ``new`` in a shared memory's body (once, unless replace_all)."""

        return call(
            lambda s: s.edit(name, old, new, replace_all=replace_all, project=project).to_dict(
                s.clock.now()
            )
        )

    @server.tool(name="memory_delete", annotations=CHANGES)
    def memory_delete(name: str, project: str | None = None) -> dict[str, Any]:
        """Remove a shared memory; memories that referenced it keep their references."""

        return call(lambda s: s.delete(name, project=project).to_dict())

    @server.tool(name="memory_remember", annotations=ADDS)
    def memory_remember(
        text: str,
        description: str | None = None,
        tags: list[str] | None = None,
        priority: int | None = None,
        subject: str | None = None,
    ) -> dict[str, Any]:
        """Keep a durable fact, preference or decision in the acting agent's own memory."""
        return call(
            lambda s: record(
                s,
                s.remember(
                    text, description=description, tags=tags, priority=priority, subject=subject
                ),
            )
        )

    @server.tool(name="memory_recall", annotations=READS)
    def memory_recall(
        queries: list[str], project: str | None = None, limit: int = 10
    ) -> dict[str, Any]:
        """Search what the acting agent sees: global, the project, its teams and its own."""
        return call(
            lambda s: s.recall(queries, project=project, limit=limit).to_dict(s.clock.now())
        )

    @server.tool(name="memory_update", annotations=OVERWRITES)
    def memory_update(
        id: str,
        text: str,
        description: str | None = None,
        tags: list[str] | None = None,
        priority: int | None = None,
    ) -> dict[str, Any]:
        """Rewrite one of the acting agent's own memories (by id)."""
        return call(
            lambda s: record(
                s, s.update(id, text, description=description, tags=tags, priority=priority)
            )
        )

    @server.tool(name="memory_forget", annotations=CHANGES)
    def memory_forget(id: str, reason: str = "") -> dict[str, Any]:
        """Take one of the acting agent's own memories out of recall (its history stays)."""
        return call(lambda s: record(s, s.forget(id, reason=reason)))

    @server.tool(name="memory_propose", annotations=ADDS)
    def memory_propose(
        summary: str, target: str = "global", body: str = "", evidence: str = ""
    ) -> dict[str, Any]:
        """Ask for a shared memory (global or a team's), for a curator to decide."""

        return call(
            lambda s: record_of(s.propose(summary, target=target, body=body, evidence=evidence))
        )

    @server.tool(name="fact_write", annotations=SUPERSEDES)
    def fact_write(
        subject: str,
        predicate: str,
        value: str,
        project: str | None = None,
        valid_from: str | None = None,
        reason: str = "",
    ) -> dict[str, Any]:
        """Record that a subject's predicate is a value (from valid_from, else now); the
        current value is superseded and kept in the history. An agent's facts go to its
        own memory."""
        return call(
            lambda s: s.fact_write(
                subject, predicate, value, project=project, valid_from=valid_from, reason=reason
            ).to_dict("write")
        )

    @server.tool(name="fact_read", annotations=READS)
    def fact_read(
        subject: str,
        predicate: str | None = None,
        project: str | None = None,
        valid_at: str | None = None,
        known_at: str | None = None,
    ) -> dict[str, Any]:
        """A subject's facts (of one predicate, or all) that held at valid_at, as known at
        known_at (RFC 3339 or YYYY-MM-DD; both default to now)."""
        return call(
            lambda s: facts_of(
                s.fact_read(
                    subject, predicate, project=project, valid_at=valid_at, known_at=known_at
                )
            )
        )

    @server.tool(name="fact_history", annotations=READS)
    def fact_history(subject: str, predicate: str, project: str | None = None) -> dict[str, Any]:
        """Every version of a subject's predicate, in the order recorded, with when each
        held and when it was believed."""
        return call(lambda s: facts_of(s.fact_history(subject, predicate, project=project)))

    @server.tool(name="fact_retract", annotations=CHANGES)
    def fact_retract(
        subject: str, predicate: str, project: str | None = None, reason: str = ""
    ) -> dict[str, Any]:
        """Withdraw the current value of a subject's predicate (it was never so); the
        value it superseded holds again."""
        return call(
            lambda s: s.fact_retract(subject, predicate, project=project, reason=reason).to_dict(
                "retract"
            )
        )

    @server.resource(
        CONTEXT_URI,
        name="context",
        description="The memory section of the acting agent's context, rendered now.",
        mime_type="text/markdown",
    )
    def context() -> str:
        return principals.current().context().text

    return server
