"""The MCP door: the verbs a model is offered as tools, with the official ``mcp`` SDK (2.x).

Translate only. A tool is named after its verb (``memory_search`` is ``search``), takes
the verb's arguments and returns the same record the REST API does, as structured
content typed by the tool's output schema. A refusal is a tool result with ``isError``
set, the text ``[code] message`` and the remedy, and ``{"error": {"code", "message",
"remedy", "details"}}`` as its structured content: clients read the code, never the
words. An argument the input schema refuses (a wrong type, a value out of bounds or
not one of a set, an argument the tool does not take) is refused the same way, as
``invalid_value`` naming the argument. Annotations say truthfully whether a tool
changes the store (``memory_read`` records the read, so it is not read-only), can lose
what was there, or can be repeated; no tool reaches beyond the store
(``open_world_hint`` is false).

Who acts: over streamable HTTP, the principal of the bearer token (the SDK refuses
a request without a known one when the server has tokens); over stdio, the identity
``retain mcp`` was started as. What a principal is offered is the service's
(``MemoryService.offered_verbs``, from ``service.VERB_KINDS``): ``tools/list`` lists
those tools only, per request, and the server's instructions are written for that
kind of principal. With memory turned off for the installation no tool is listed and
a call is refused with ``memory_disabled``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import AnyHttpUrl, BaseModel, Field, ValidationError

import retain
from retain.doors.principals import principal_of
from retain.doors.records import facts_of, record_of
from retain.errors import Hint, InvalidValue, RetainError
from retain.fields import MAX_PRIORITY, MIN_PRIORITY
from retain.model import Memory
from retain.service import SEARCH_LIMIT_MAX, MemoryService
from retain.service.actor import FORM_OF, Kind

CONTEXT_URI = "memory://context"
_SCOPE = "memory"

# -- what each kind of principal is told ----------------------------------------------

AGENT_KIND = "agent"  # an agent keeps its own memory
TIERS_KIND = "tiers"  # any other principal keeps the shared tiers
_NOT_STORED = (
    "Tool results are not memories: nothing a tool returns is stored again unless you remember it."
)
INSTRUCTIONS: Mapping[str, str] = {
    AGENT_KIND: (
        "Long-term memory of {principal}. Use memory_recall to find what you (and your "
        "project and teams) know before answering, memory_remember to keep a durable "
        "fact, preference or decision in your own memory, memory_update or memory_forget "
        "(by the id recall gave) for your own memories, and memory_propose to ask for a "
        "shared one. memory_search and memory_read look in the shared tiers. For a value "
        "that changes over time (someone's employer, a setting), fact_write records it in "
        "your own memory and fact_read gives what holds now or held then; fact_history and "
        "fact_retract show and withdraw versions. " + _NOT_STORED
    ),
    TIERS_KIND: (
        "Shared long-term memory (the global tier and the projects' tiers), acting as "
        "{principal}. Use memory_search to find memories by words and meaning, memory_read "
        "to page through a body, memory_write to create or update one by name, memory_edit "
        "to replace text in a body and memory_delete to remove one. For a value that "
        "changes over time, fact_write records it, fact_read gives what holds now or held "
        "then, fact_history every version and fact_retract withdraws the current one. "
        "Agents' own memories are theirs: an agent connects as agent:NAME. " + _NOT_STORED
    ),
}
MEMORY_OFF = (
    "Memory is turned off for this installation ([memory] enabled = false in its "
    "config.toml): no memory tools are offered and the memory section is empty."
)


def instructions_for(service: MemoryService) -> str:
    """The server instructions for the principal a service acts as."""
    if not service.offered_verbs():
        return MEMORY_OFF
    told = AGENT_KIND if service.kind is Kind.AGENT else TIERS_KIND
    return INSTRUCTIONS[told].format(principal=service.principal)


# -- arguments: every one described, bounded where the service bounds it ---------------

Name = Annotated[str, Field(description="The memory's name, e.g. deploy-rules.")]
Project = Annotated[
    str | None,
    Field(description='A project\'s name: its tier and the global one; "" the global tier alone.'),
]
Queries = Annotated[
    list[str] | str,
    Field(description="What to look for: one phrasing, or a list of synonyms searched together."),
]
Limit = Annotated[int, Field(ge=1, le=SEARCH_LIMIT_MAX, description="The most memories to return.")]
Budget = Annotated[
    Annotated[int, Field(ge=1)] | None,
    Field(description="Tokens the results may fill: every relevant hit if all fit."),
]
Priority = Annotated[
    Annotated[int, Field(ge=MIN_PRIORITY, le=MAX_PRIORITY)] | None,
    Field(description=f"{MIN_PRIORITY} (most important) to {MAX_PRIORITY}; default 5."),
]
Tags = Annotated[list[str] | None, Field(description="Tags (lowercase words); [] clears them.")]
LoadName = Literal["inline", "index", "search"]  # model.Load's values (a test holds them equal)
TierName = Literal["global", "project"]
Description = Annotated[
    str | None, Field(description="One line: what the memory is, as the index lists it.")
]
Subject = Annotated[str | None, Field(description="Who or what it is about (a person, a service).")]
Reason = Annotated[str, Field(description="Why, in a line (kept in the history).")]
MemoryId = Annotated[str, Field(description="The memory's id, as recall returned it.")]
FactSubject = Annotated[str, Field(description="Who or what the fact is about, e.g. Bob.")]
Predicate = Annotated[str, Field(description="Which of its properties, e.g. employer.")]


# -- results: the records of the REST API, typed ---------------------------------------


class MemoryRecord(BaseModel):
    """A memory's public record (the REST API's)."""

    id: str
    name: str | None = Field(description="Its name; none for an agent's own memory.")
    scope: str = Field(description="global, project:NAME, team:NAME or agent:NAME.")
    project: str | None
    description: str
    priority: int
    load: LoadName
    tags: list[str]
    references: list[str]
    source: str
    subject: str | None
    thread: str | None
    valid_from: str | None
    trust: str
    status: str
    supersedes: str | None = Field(description="The id of the memory this one replaced.")
    superseded_by: str | None = Field(
        description="On a superseded memory: the id of the memory that replaced it."
    )
    author: str
    changed_by: str = Field(description="Who last changed it (its author until someone else does).")
    created_at: str
    updated_at: str
    verified_at: str
    expires_at: str | None
    expired: bool
    read_count: int


class MemoryWithBody(MemoryRecord):
    body: str


_BEFORE = "The memory's text as an export writes it, before the change (none: it was new)."
_AFTER = "The memory's text as an export writes it, after the change (none: it was removed)."


class WriteOut(MemoryWithBody):
    created: bool
    changed: bool
    notes: list[str]
    before: str | None = Field(description=_BEFORE)
    after: str = Field(description=_AFTER)


class EditOut(MemoryWithBody):
    replacements: int
    excerpt: str
    before: str | None = Field(description=_BEFORE)
    after: str = Field(description=_AFTER)


class DeleteOut(BaseModel):
    removed: str | None
    referenced_by: list[str]
    before: str = Field(description=_BEFORE)
    after: None = Field(description=_AFTER)


class ReferenceOut(BaseModel):
    target: str
    description: str | None


class ReadOut(MemoryRecord):
    references: list[ReferenceOut]  # type: ignore[assignment]  # resolved, unlike a record's
    text: str
    offset: int
    next_offset: int | None
    total_chars: int
    caption: str
    referenced_by: list[str]


class Hit(MemoryRecord):
    score: float
    senses: list[str]
    scanned: list[str]
    verified: bool
    age: str
    body: str | None = Field(default=None, description="A short body, whole.")


class SearchOut(BaseModel):
    summary: str
    listing: bool
    embedder: str
    degraded: str | None
    memories: list[Hit]


class ProposalOut(BaseModel):
    id: str
    source: str
    target: str
    trust: str
    summary: str
    body: str
    evidence: str
    action: str
    status: str
    created_at: str


class FactOut(BaseModel):
    id: str
    scope: str
    project: str | None
    subject: str
    predicate: str
    value: str
    valid_from: str | None
    valid_to: str | None
    recorded_at: str
    retracted_at: str | None
    author: str
    trust: str
    status: str
    supersedes: str | None = Field(description="The id of the version this one took over from.")
    superseded_by: str | None = Field(description="The id of the version that took over from it.")


class FactWriteOut(BaseModel):
    fact: FactOut
    superseded: FactOut | None
    changed: bool


class FactRetractOut(BaseModel):
    fact: FactOut
    restored: FactOut | None
    changed: bool


class FactsOut(BaseModel):
    facts: list[FactOut]


# -- refusals ----------------------------------------------------------------------------


def _act_as(details: Mapping[str, Any]) -> str:
    named = [FORM_OF.get(kind, kind) for kind in details.get("allowed") or ()]
    return f"connect the server as {' or '.join(named)}" if named else ""


# How this door does the fix a refusal names (``RetainError.hinted``): what a model can
# do itself names a tool or an argument; the rest is the operator's.
HINTS: Mapping[str, Hint] = {
    "act_as": _act_as,
    "add_project": "an operator creates it: `retain project add {project}`",
    "add_agent": "an operator registers it: `retain agent add {agent}`",
    "add_team": "an operator creates it: `retain team add {team}`",
    "find": "memory_search",
    "list_project": "memory_search with the project argument finds them",
    "name_project": "the project argument",
    "update": "memory_write updates a memory of that name",
    "reindex": "an operator runs `retain reindex`",
    "verify": "an operator runs `retain verify`",
    "rebuild": "an operator runs `retain verify --rebuild`",
}


def refusal(error: RetainError) -> CallToolResult:
    error = error.hinted(HINTS)
    text = f"[{error.code}] {error.message}" + (f"\n{error.remedy}" if error.remedy else "")
    return CallToolResult(
        is_error=True,
        content=[TextContent(type="text", text=text)],
        structured_content={"error": error.to_dict()},
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _problem(error: Mapping[str, Any]) -> tuple[str, str]:
    """One argument the input schema refused: its name, and what is wrong, in words."""
    where = [str(part) for part in error["loc"]]
    field = where[0] if where else "arguments"
    path = field + "".join(f"[{part}]" for part in where[1:])
    given = _shown(error.get("input"))
    context = error.get("ctx") or {}
    kind = str(error["type"])
    if kind == "missing":
        return field, f"{path} is required"
    if kind in ("greater_than_equal", "greater_than"):
        return field, f"{path} {given} is below {context.get('ge', context.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return field, f"{path} {given} is above {context.get('le', context.get('lt'))}"
    if kind == "literal_error":
        return field, f"{path} {given} is not one of {context.get('expected')}"
    words = {
        "int": "a whole number",
        "string": "text",
        "list": "a list",
        "bool": "true or false",
        "dict": "an object",
    }
    for prefix, what in words.items():
        if kind.startswith(prefix):
            return field, f"{path} {given} is not {what}"
    return field, f"{path} {given} is not valid ({error.get('msg', kind)})"


def invalid_arguments(tool: str, exc: ValidationError) -> InvalidValue:
    """The refusal of arguments the tool's input schema does not accept."""
    problems = [_problem(e) for e in exc.errors()]
    return InvalidValue(
        f"{tool}: " + "; ".join(text for _, text in problems),
        remedy="give the arguments the tool's input schema describes",
        field=problems[0][0] if problems else "arguments",
        fields=sorted({field for field, _ in problems}),
        tool=tool,
    )


def unknown_arguments(tool: str, given: list[str], known: list[str]) -> InvalidValue:
    hints = []
    for name in given:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return InvalidValue(
        f"{tool} takes no argument {', '.join(hints)}",
        remedy=f"{tool} takes {', '.join(known) or 'no arguments'}",
        field=given[0],
        fields=given,
        tool=tool,
    )


def _answer(data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


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
        return AccessToken(token=token, client_id=principal, scopes=[_SCOPE], subject=principal)


class Server(MCPServer):
    """The SDK's server, answering each request for the principal acting: the tools it
    is offered, its instructions, and arguments refused with retain's codes."""

    def __init__(self, principals: Principals, **options: Any) -> None:
        super().__init__(**options)
        self.principals = principals
        self.verbs: dict[str, str] = {}  # tool name → the service verb it calls
        self.middleware.append(self._instruct)

    def verb_tool(
        self, verb: str, *, title: str, annotations: ToolAnnotations
    ) -> Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]:
        """Register a tool calling ``verb``, named after it."""
        name = verb if verb.startswith("fact_") else f"memory_{verb}"
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
) -> Server:
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
    principals = Principals(service_of, local_principal)
    server = Server(
        principals,
        name="retain",
        instructions=INSTRUCTIONS[TIERS_KIND],  # replaced per principal at initialize
        version=retain.__version__,
        log_level="WARNING",
        **auth,
    )

    def call(verb: Callable[[MemoryService], dict[str, Any]]) -> CallToolResult:
        service = principals.current()
        try:
            return _answer(verb(service))
        except RetainError as exc:
            return refusal(exc)

    def record(service: MemoryService, memory: Memory) -> dict[str, Any]:
        return memory.to_dict(service.clock.now(), body=True)

    @server.verb_tool("search", title="Search shared memory", annotations=READS)
    def memory_search(
        queries: Queries,
        project: Project = None,
        tier: Annotated[
            TierName | None, Field(description="Only this tier (project needs a project).")
        ] = None,
        limit: Limit = 10,
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
        budget_tokens: Budget = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        """Search the shared tiers (global and the project's) by words and meaning; an
        agent's search also covers its teams and its own memories."""
        return call(
            lambda s: s.search(
                queries,
                project=project,
                tier=tier,
                limit=limit,
                tag=tag,
                budget_tokens=budget_tokens,
            ).to_dict(s.clock.now())
        )

    @server.verb_tool("read", title="Read a memory", annotations=RECORDS)
    def memory_read(
        name: Name,
        offset: Annotated[
            int, Field(ge=0, description="Where the page starts: 0, or a next_offset given.")
        ] = 0,
        project: Project = None,
    ) -> Annotated[CallToolResult, ReadOut]:
        """A page of a memory's body from ``offset`` with its caption (recorded as a read)."""
        return call(lambda s: s.read(name, offset=offset, project=project).to_dict(s.clock.now()))

    @server.verb_tool("write", title="Write a shared memory", annotations=OVERWRITES)
    def memory_write(
        name: Name,
        description: Description = None,
        body: Annotated[str | None, Field(description='The body; "" clears it.')] = None,
        tags: Tags = None,
        priority: Priority = None,
        load: Annotated[
            LoadName | None,
            Field(description="inline: body in every context; index: listed; search: found."),
        ] = None,
        project: Annotated[str | None, Field(description="File it in this project's tier.")] = None,
        tier: Annotated[
            TierName | None, Field(description="Move it to this tier (project needs a project).")
        ] = None,
        expected_hash: Annotated[
            str | None,
            Field(description="Write only if the body's content_hash is still this one."),
        ] = None,
    ) -> Annotated[CallToolResult, WriteOut]:
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
                tier=tier,
                expected_hash=expected_hash,
            )
            return done.to_dict(s.clock.now())

        return call(write)

    @server.verb_tool("edit", title="Edit a shared memory's body", annotations=CHANGES)
    def memory_edit(
        name: Name,
        old: Annotated[str, Field(description="Text of the body to replace, exactly.")],
        new: Annotated[str, Field(description='The replacement; "" deletes old.')],
        replace_all: Annotated[
            bool, Field(description="Replace every occurrence (else old must occur once).")
        ] = False,
        project: Project = None,
    ) -> Annotated[CallToolResult, EditOut]:
        """Replace ``old`` with ``new`` in a shared memory's body (once, unless replace_all)."""

        return call(
            lambda s: s.edit(name, old, new, replace_all=replace_all, project=project).to_dict(
                s.clock.now()
            )
        )

    @server.verb_tool("delete", title="Delete a shared memory", annotations=CHANGES)
    def memory_delete(name: Name, project: Project = None) -> Annotated[CallToolResult, DeleteOut]:
        """Remove a shared memory; memories that referenced it keep their references."""

        return call(lambda s: s.delete(name, project=project).to_dict())

    @server.verb_tool("remember", title="Remember", annotations=ADDS)
    def memory_remember(
        text: Annotated[str, Field(description="What to keep: a fact, preference or decision.")],
        description: Description = None,
        tags: Tags = None,
        priority: Priority = None,
        subject: Subject = None,
    ) -> Annotated[CallToolResult, MemoryWithBody]:
        """Keep a durable fact, preference or decision in the acting agent's own memory."""
        return call(
            lambda s: record(
                s,
                s.remember(
                    text, description=description, tags=tags, priority=priority, subject=subject
                ),
            )
        )

    @server.verb_tool("recall", title="Recall", annotations=READS)
    def memory_recall(
        queries: Queries, project: Project = None, limit: Limit = 10, budget_tokens: Budget = None
    ) -> Annotated[CallToolResult, SearchOut]:
        """Search what the acting agent sees: global, the project, its teams and its own."""
        return call(
            lambda s: s.recall(
                queries, project=project, limit=limit, budget_tokens=budget_tokens
            ).to_dict(s.clock.now())
        )

    @server.verb_tool("update", title="Update an own memory", annotations=OVERWRITES)
    def memory_update(
        id: MemoryId,
        text: Annotated[str, Field(description="The memory's new text.")],
        description: Description = None,
        tags: Tags = None,
        priority: Priority = None,
    ) -> Annotated[CallToolResult, MemoryWithBody]:
        """Rewrite one of the acting agent's own memories (by id): the new version
        supersedes it and gets its own id."""
        return call(
            lambda s: record(
                s, s.update(id, text, description=description, tags=tags, priority=priority)
            )
        )

    @server.verb_tool("forget", title="Forget an own memory", annotations=CHANGES)
    def memory_forget(
        id: MemoryId, reason: Reason = ""
    ) -> Annotated[CallToolResult, MemoryWithBody]:
        """Take one of the acting agent's own memories out of recall (its history stays)."""
        return call(lambda s: record(s, s.forget(id, reason=reason)))

    @server.verb_tool("propose", title="Propose a shared memory", annotations=ADDS)
    def memory_propose(
        summary: Annotated[str, Field(description="One line: the memory proposed.")],
        target: Annotated[
            str, Field(description="global, or team:NAME of a team the agent is in.")
        ] = "global",
        body: Annotated[str, Field(description="The proposed memory's body.")] = "",
        evidence: Annotated[str, Field(description="Why it holds: where it was seen.")] = "",
    ) -> Annotated[CallToolResult, ProposalOut]:
        """Ask for a shared memory (global or a team's), for a curator to decide."""

        return call(
            lambda s: record_of(s.propose(summary, target=target, body=body, evidence=evidence))
        )

    @server.verb_tool("fact_write", title="Write a fact", annotations=SUPERSEDES)
    def fact_write(
        subject: FactSubject,
        predicate: Predicate,
        value: Annotated[str, Field(description="What it is now, e.g. Acme.")],
        project: Annotated[
            str | None, Field(description="Record it in this project's tier (not an agent).")
        ] = None,
        valid_from: Annotated[
            str | None, Field(description="When it began to hold: RFC 3339 or YYYY-MM-DD.")
        ] = None,
        reason: Reason = "",
    ) -> Annotated[CallToolResult, FactWriteOut]:
        """Record that a subject's predicate is a value (from valid_from, else now); the
        current value is superseded and kept in the history. An agent's facts go to its
        own memory."""
        return call(
            lambda s: s.fact_write(
                subject, predicate, value, project=project, valid_from=valid_from, reason=reason
            ).to_dict("write")
        )

    @server.verb_tool("fact_read", title="Read facts", annotations=READS)
    def fact_read(
        subject: FactSubject,
        predicate: Annotated[
            str | None, Field(description="One of its properties; default every one.")
        ] = None,
        project: Project = None,
        valid_at: Annotated[
            str | None, Field(description="What held then: RFC 3339 or YYYY-MM-DD; default now.")
        ] = None,
        known_at: Annotated[
            str | None, Field(description="As known then: RFC 3339 or YYYY-MM-DD; default now.")
        ] = None,
    ) -> Annotated[CallToolResult, FactsOut]:
        """A subject's facts (of one predicate, or all) that held at valid_at, as known at
        known_at (RFC 3339 or YYYY-MM-DD; both default to now)."""
        return call(
            lambda s: facts_of(
                s.fact_read(
                    subject, predicate, project=project, valid_at=valid_at, known_at=known_at
                )
            )
        )

    @server.verb_tool("fact_history", title="A fact's history", annotations=READS)
    def fact_history(
        subject: FactSubject, predicate: Predicate, project: Project = None
    ) -> Annotated[CallToolResult, FactsOut]:
        """Every version of a subject's predicate, in the order recorded, with when each
        held and when it was believed."""
        return call(lambda s: facts_of(s.fact_history(subject, predicate, project=project)))

    @server.verb_tool("fact_retract", title="Retract a fact", annotations=CHANGES)
    def fact_retract(
        subject: FactSubject, predicate: Predicate, project: Project = None, reason: Reason = ""
    ) -> Annotated[CallToolResult, FactRetractOut]:
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
