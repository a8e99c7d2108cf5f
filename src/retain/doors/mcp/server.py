"""The MCP server, answering each request for the principal acting: who acts (the
bearer token's principal over HTTP, else the fixed one), the tools it is offered, the
instructions written for its kind, and arguments refused with retain's codes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

from retain.doors.mcp.error import invalid_arguments, refusal, unknown_arguments
from retain.doors.principals import principal_of
from retain.errors import RetainError
from retain.service import MemoryService
from retain.service.actor import Kind

SCOPE = "memory"  # the scope a known token is granted, and the one the server requires


# -- what each kind of principal is told ----------------------------------------------

AGENT_KIND = "agent"  # an agent keeps its own memory
TIERS_KIND = "tiers"  # any other principal keeps (or reads, or curates) the shared tiers
_NOT_STORED = (
    "Tool results are not memories: nothing a tool returns is stored again unless you remember it."
)
_AGENT = (
    "Long-term memory of {principal}. Use memory_recall to find what you (and your "
    "project and teams) know before answering, memory_remember to keep a durable "
    "fact, preference or decision in your own memory, memory_update or memory_forget "
    "(by the id recall gave) for your own memories, and memory_propose to ask for a "
    "shared one. memory_search and memory_read look in the shared tiers. For a value "
    "that changes over time (someone's employer, a setting), fact_write records it in "
    "your own memory and fact_read gives what holds now or held then; fact_history and "
    "fact_retract show and withdraw versions. " + _NOT_STORED
)
# The shared tiers' text, a sentence for the verbs it names: a principal is told those
# of the verbs it is offered (an operator all; the steward and an anonymous caller read).
_TIERS: tuple[tuple[tuple[str, ...], str], ...] = (
    ((), "Shared long-term memory (the global tier and the projects' tiers), acting as "
     "{principal}."),
    (("search", "read"), "Use memory_search to find memories by words and meaning and "
     "memory_read to page through a body."),
    (("write",), "memory_write creates or updates a memory by name."),
    (("ingest_conversation",), "ingest_conversation writes a conversation's turns, one "
     "memory a turn, in the order said."),
    (("edit", "delete"), "memory_edit replaces text in a body and memory_delete removes one."),
    (("fact_read", "fact_history"), "For a value that changes over time, fact_read gives "
     "what holds now or held then and fact_history every version."),
    (("fact_write",), "fact_write records a value's new version."),
    (("fact_retract",), "fact_retract withdraws a value's current version."),
    ((), "Agents' own memories are theirs: an agent connects as agent:NAME. " + _NOT_STORED),
)  # fmt: skip
INSTRUCTIONS: Mapping[str, str] = {
    AGENT_KIND: _AGENT,
    TIERS_KIND: " ".join(text for _, text in _TIERS),  # as an operator is told it
}
REVIEWING = (  # told to a reviewer (an operator, the steward) besides its kind's text
    "As a reviewer, memory_list_quarantine shows the records held for review, with the "
    "content_hash of each, and memory_review releases one into memory (at observed trust) "
    "or tombstones it, bound to the content_hash of what you read."
)
STAGING = (  # told to the steward, which stages promotions of held records
    "Instead of releasing a held record, memory_propose with its id as record stages it "
    "as a promotion ticket for a shared tier, which another curator decides; while the "
    "ticket waits, so does the record's review."
)
# Told to a principal offered the decisions (an operator, the steward).
CURATOR = (
    "What agents propose for the shared tiers is a ticket: ticket_list and ticket_show "
    "show them, ticket_approve lands one (or records a first approval where the policy "
    "gate asks a second approver) and ticket_reject declines one."
)
SWEEPING = "ticket_expire stores every undecided ticket past its expiry as expired."
GATING = (  # told to whoever may ask the gate and read the assertion ledger
    "Before acting on a value others may dispute, memory_gate says whether its subject's "
    "predicate is contested (a conflict signal, or two believed facts that disagree); "
    "memory_query and memory_stores read the assertion ledger."
)
INDEXING = (  # told to whoever keeps the ledger (operators, applications, the steward)
    "memory_index records an assertion in one of the ledger's stores, and sets or clears "
    "a key's conflict signal."
)
GRAPHING = (  # told to every principal: the graph is read through the reader's view
    "memory_graph shows a memory's relations: what it supersedes or was superseded by, "
    "what contradicts it, its near-copies, what it derives from and references."
)
CURATING = (  # told to a curator (an operator, the steward)
    "memory_hygiene lists what needs a curator (unverified and expired memories, dangling "
    "references, open contradictions, near-duplicates); memory_decide settles a pair "
    "(supersede, contradict or keep) and memory_link relates two memories explicitly."
)
DEDUPING = (  # told to whoever runs the dedup pass (operators, applications, the steward)
    "memory_dedup links near-copies as similar_to pairs for a curator to decide; it "
    "merges and retires nothing."
)
# What else a principal is told, when it is offered every verb named first.
_TOLD_MORE: tuple[tuple[tuple[str, ...], str], ...] = (
    (("list_quarantine", "review"), REVIEWING),
    (("list_quarantine", "propose"), STAGING),
    (("list_tickets", "get_ticket", "approve", "reject"), CURATOR),
    (("expire_tickets",), SWEEPING),
    (("gate", "query", "stores"), GATING),
    (("index",), INDEXING),
    (("graph",), GRAPHING),
    (("hygiene", "decide", "link"), CURATING),
    (("dedup",), DEDUPING),
)
MEMORY_OFF = (
    "Memory is turned off for this installation ([memory] enabled = false in its "
    "config.toml): no memory tools are offered and the memory section is empty."
)


def instructions_for(service: MemoryService) -> str:
    """The server instructions for the principal a service acts as: its kind's text
    (of the shared tiers, the sentences of the verbs it is offered), then a line for
    each more part it is offered (a reviewer's, the steward's staging, a curator's,
    the sweep)."""
    offered = set(service.offered_verbs())
    if not offered:
        return MEMORY_OFF
    if service.kind is Kind.AGENT:
        kind = _AGENT
    else:
        kind = " ".join(text for verbs, text in _TIERS if offered.issuperset(verbs))
    more = [text for verbs, text in _TOLD_MORE if offered.issuperset(verbs)]
    return "\n".join([kind.format(principal=service.principal), *more])


# -- who acts ------------------------------------------------------------------------------


class Principals:
    """Which service acts for a call: the token's principal, else the fixed one."""

    def __init__(self, service_of: Callable[[str], MemoryService], local: str) -> None:
        self.service_of = service_of
        self.local = local

    def current(self) -> MemoryService:
        token = get_access_token()
        return self.service_of(token.client_id if token is not None else self.local)


class StaticTokens(TokenVerifier):
    """Bearer tokens mapped to principals (the REST API's own)."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self.tokens = dict(tokens)

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = principal_of(self.tokens, token)
        if principal is None:
            return None
        return AccessToken(token=token, client_id=principal, scopes=[SCOPE], subject=principal)


class Server(MCPServer):
    """The SDK's server, answering each request for the principal acting: the tools it
    is offered, its instructions, and arguments refused with retain's codes."""

    def __init__(self, principals: Principals, **options: Any) -> None:
        super().__init__(**options)
        self.principals = principals
        self.verbs: dict[str, str] = {}  # tool name → the service verb it calls
        self.middleware.append(self._instruct)

    def verb_tool(
        self, verb: str, *, title: str, annotations: ToolAnnotations, name: str | None = None
    ) -> Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]:
        """Register a tool calling ``verb``, named after it unless ``name`` is given."""
        name = name or (verb if verb.startswith("fact_") else f"memory_{verb}")
        self.verbs[name] = verb
        return self.tool(name=name, title=title, annotations=annotations)

    async def _instruct(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            result = {**result, "instructions": instructions_for(self.principals.current())}
        return result

    async def list_tools(self) -> list[MCPTool]:
        offered = set(self.principals.current().offered_verbs())
        return [t for t in await super().list_tools() if self.verbs.get(t.name) in offered]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is not None and name in self.verbs:
            try:
                self.principals.current().offer(self.verbs[name])
            except RetainError as exc:
                return refusal(exc)
            known = list(tool.parameters.get("properties", {}))
            unknown = [a for a in arguments if a not in known]
            if unknown:
                return refusal(unknown_arguments(name, unknown, known))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return refusal(invalid_arguments(name, exc.__cause__))
            raise
