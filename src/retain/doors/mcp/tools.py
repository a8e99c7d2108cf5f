"""The tools a model is offered, one a verb, with annotations that say truthfully what
each does to the store, and the ``memory://context`` resource (``create_server``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from mcp.server.auth.settings import AuthSettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AnyHttpUrl, Field

import retain
from retain.doors.mcp import assertions, conversations, graph, retention, tickets
from retain.doors.mcp.error import refusal
from retain.doors.mcp.schema import (
    Budget,
    CertificateOut,
    DeleteOut,
    Description,
    EditOut,
    Evidence,
    EvidenceArg,
    FactRetractOut,
    FactsOut,
    FactSubject,
    FactWriteOut,
    GrantOut,
    GrantsOut,
    Limit,
    LoadName,
    MemoryId,
    MemoryWithBody,
    MinTrust,
    Name,
    Predicate,
    Priority,
    Project,
    ProposalOut,
    QuarantineOut,
    Queries,
    ReadOut,
    Reason,
    Redact,
    ReviewOut,
    RevokeOut,
    SearchOut,
    Subject,
    Tags,
    TierName,
    WriteOut,
)
from retain.doors.mcp.server import (
    INSTRUCTIONS,
    SCOPE,
    TIERS_KIND,
    Principals,
    Server,
    StaticTokens,
)
from retain.doors.records import facts_of, quarantine_of
from retain.errors import RetainError
from retain.fields import PAGE_MAX
from retain.model import Memory
from retain.service import MemoryService

CONTEXT_URI = "memory://context"

GrantSubject = Annotated[
    str, Field(description="A principal, a pattern such as agent:*, or role:NAME.")
]
GrantAction = Annotated[str, Field(description="An action, e.g. memory.read.")]
GrantOn = Annotated[
    str, Field(description="realm:R, scope:S (or a pattern: scope:team:*), identity:agent:N.")
]
GrantEffect = Annotated[
    Literal["allow", "deny"], Field(description="allow, or deny (a deny beats an allow).")
]


def _answer(data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
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


def _evidence(evidence: EvidenceArg | None) -> dict[str, str] | None:
    """A tool's evidence as the service takes it."""
    if evidence is None:
        return None
    return {"ref": evidence.ref} | ({"path": evidence.path} if evidence.path is not None else {})


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
                required_scopes=[SCOPE],
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
        min_trust: MinTrust = None,
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
                min_trust=min_trust,
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
        redact: Redact = False,
        evidence: Evidence = None,
        metadata: Annotated[
            dict[str, Any] | None,
            Field(description="The caller's own JSON object, kept with it; {} clears it."),
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
                redact=redact,
                evidence=_evidence(evidence),
                metadata=metadata,
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
        redact: Redact = False,
    ) -> Annotated[CallToolResult, EditOut]:
        """Replace ``old`` with ``new`` in a shared memory's body (once, unless replace_all)."""

        return call(
            lambda s: s.edit(
                name, old, new, replace_all=replace_all, project=project, redact=redact
            ).to_dict(s.clock.now())
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
        redact: Redact = False,
        evidence: Evidence = None,
    ) -> Annotated[CallToolResult, MemoryWithBody]:
        """Keep a durable fact, preference or decision in the acting agent's own memory."""
        return call(
            lambda s: record(
                s,
                s.remember(
                    text,
                    description=description,
                    tags=tags,
                    priority=priority,
                    subject=subject,
                    redact=redact,
                    evidence=_evidence(evidence),
                ),
            )
        )

    @server.verb_tool("recall", title="Recall", annotations=READS)
    def memory_recall(
        queries: Queries,
        project: Project = None,
        limit: Limit = 10,
        budget_tokens: Budget = None,
        min_trust: MinTrust = None,
    ) -> Annotated[CallToolResult, SearchOut]:
        """Search what the acting agent sees: global, the project, its teams and its own."""
        return call(
            lambda s: s.recall(
                queries,
                project=project,
                limit=limit,
                budget_tokens=budget_tokens,
                min_trust=min_trust,
            ).to_dict(s.clock.now())
        )

    @server.verb_tool("update", title="Update an own memory", annotations=OVERWRITES)
    def memory_update(
        id: MemoryId,
        text: Annotated[str, Field(description="The memory's new text.")],
        description: Description = None,
        tags: Tags = None,
        priority: Priority = None,
        redact: Redact = False,
        evidence: Evidence = None,
    ) -> Annotated[CallToolResult, MemoryWithBody]:
        """Rewrite one of the acting agent's own memories (by id): the new version
        supersedes it and gets its own id."""
        return call(
            lambda s: record(
                s,
                s.update(
                    id,
                    text,
                    description=description,
                    tags=tags,
                    priority=priority,
                    redact=redact,
                    evidence=_evidence(evidence),
                ),
            )
        )

    @server.verb_tool("forget", title="Erase a memory", annotations=CHANGES)
    def memory_forget(
        id: MemoryId,
        reason: Reason = "",
        keep_digest: Annotated[
            bool, Field(description="Keep a digest of the value (false: keep nothing).")
        ] = True,
    ) -> Annotated[CallToolResult, CertificateOut]:
        """Erase a memory (an agent: one of its own) and every copy of it from the store,
        history included, keeping a digest; returns the erasure certificate."""
        return call(lambda s: s.forget(id, reason=reason, keep_digest=keep_digest).to_dict())

    @server.verb_tool("propose", title="Propose a shared memory", annotations=ADDS)
    def memory_propose(
        summary: Annotated[str, Field(description="One line: the memory proposed.")],
        target: Annotated[
            str, Field(description="global, or team:NAME of a team the agent is in.")
        ] = "global",
        body: Annotated[str, Field(description="The proposed memory's body.")] = "",
        evidence: Annotated[str, Field(description="Why it holds: where it was seen.")] = "",
        redact: Redact = False,
        record: Annotated[
            str | None,
            Field(
                description="The id of one of your own memories to promote (its body); "
                "for the steward, a quarantined record's id from the queue."
            ),
        ] = None,
    ) -> Annotated[CallToolResult, ProposalOut]:
        """Ask for a shared memory (global or a team's), or for one of your own to be
        promoted there, for a curator to decide; the steward stages a promotion of a
        quarantined record (record), which another curator decides."""

        return call(
            lambda s: s.propose(
                summary, target=target, body=body, evidence=evidence, record=record, redact=redact
            ).to_dict()
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
        redact: Redact = False,
        evidence: Evidence = None,
        supersedes: Annotated[
            str | None,
            Field(description="The version this replaces: refused unless still current."),
        ] = None,
    ) -> Annotated[CallToolResult, FactWriteOut]:
        """Record that a subject's predicate is a value (from valid_from, else now); the
        current value is superseded and kept in the history. An agent's facts go to its
        own memory."""
        return call(
            lambda s: s.fact_write(
                subject,
                predicate,
                value,
                project=project,
                valid_from=valid_from,
                reason=reason,
                redact=redact,
                evidence=_evidence(evidence),
                supersedes=supersedes,
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
        min_trust: MinTrust = None,
    ) -> Annotated[CallToolResult, FactsOut]:
        """A subject's facts (of one predicate, or all) that held at valid_at, as known at
        known_at (RFC 3339 or YYYY-MM-DD; both default to now)."""
        return call(
            lambda s: facts_of(
                s.fact_read(
                    subject,
                    predicate,
                    project=project,
                    valid_at=valid_at,
                    known_at=known_at,
                    min_trust=min_trust,
                )
            )
        )

    @server.verb_tool("fact_history", title="A fact's history", annotations=READS)
    def fact_history(
        subject: FactSubject,
        predicate: Predicate,
        project: Project = None,
        min_trust: MinTrust = None,
    ) -> Annotated[CallToolResult, FactsOut]:
        """Every version of a subject's predicate, in the order recorded, with when each
        held and when it was believed."""
        return call(
            lambda s: facts_of(
                s.fact_history(subject, predicate, project=project, min_trust=min_trust)
            )
        )

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

    @server.verb_tool("fact_confirm", title="Confirm a claimed fact", annotations=SUPERSEDES)
    def fact_confirm(
        id: Annotated[str, Field(description="The claimed fact version's id.")],
        reason: Reason = "",
    ) -> Annotated[CallToolResult, FactWriteOut]:
        """Confirm a claimed fact held for review (an unauthenticated writer's): it becomes
        attested and its tier's current value."""
        return call(lambda s: s.fact_confirm(id, reason=reason).to_dict("write"))

    assertions.add(server, call)
    tickets.add(server, call)
    conversations.add(server, call)

    @server.verb_tool("list_quarantine", title="List the quarantine queue", annotations=READS)
    def memory_list_quarantine(
        limit: Annotated[int, Field(ge=1, le=PAGE_MAX, description="The most records.")] = 100,
        cursor: Annotated[
            str | None, Field(description="The next_cursor of the page before.")
        ] = None,
    ) -> Annotated[CallToolResult, QuarantineOut]:
        """The records waiting for review, oldest first, each with its body, reasons and
        the content_hash a review is bound to."""
        return call(
            lambda s: quarantine_of(s.list_quarantine(limit=limit, after=cursor), s.clock.now())
        )

    @server.verb_tool("review", title="Review a quarantined record", annotations=CHANGES)
    def memory_review(
        id: Annotated[str, Field(description="The quarantined record's id.")],
        verdict: Annotated[
            Literal["release", "tombstone"],
            Field(description="release: into memory, at observed; tombstone: discard it."),
        ],
        expected_content_hash: Annotated[
            str, Field(description="The content_hash of the record as it was read.")
        ],
        rationale: Annotated[str, Field(description="Why, kept with the review.")] = "",
    ) -> Annotated[CallToolResult, ReviewOut]:
        """Release or tombstone a quarantined record, bound to the content read; a repeated
        decision answers already_released or already_tombstoned and changes nothing."""
        return call(
            lambda s: s.review(id, verdict, expected_content_hash, rationale=rationale).to_dict()
        )

    # access grants: an operator's tools (never offered to an agent: the policy table)
    @server.verb_tool("list_grants", title="List access grants", annotations=READS,
                      name="access_list")  # fmt: skip
    def access_list() -> Annotated[CallToolResult, GrantsOut]:
        """Every grant that counts in the realm: config.toml's, then the stored ones."""
        return call(lambda s: {"grants": [g.to_dict() for g in s.list_grants()]})

    @server.verb_tool("grant", title="Grant access", annotations=RECORDS, name="access_grant")
    def access_grant(
        subject: GrantSubject, action: GrantAction, on: GrantOn, effect: GrantEffect = "allow"
    ) -> Annotated[CallToolResult, GrantOut]:
        """Store a grant (a grant stored already is returned as it is)."""
        return call(lambda s: s.grant(subject, action, on, effect=effect).to_dict())

    @server.verb_tool("revoke", title="Revoke access", annotations=CHANGES, name="access_revoke")
    def access_revoke(
        subject: GrantSubject, action: GrantAction, on: GrantOn, effect: GrantEffect = "allow"
    ) -> Annotated[CallToolResult, RevokeOut]:
        """Remove a stored grant (config.toml's are read-only)."""
        return call(lambda s: {"revoked": s.revoke(subject, action, on, effect=effect).to_dict()})

    retention.add(server, call)
    graph.add(server, call)

    @server.resource(
        CONTEXT_URI,
        name="context",
        description="The memory section of the acting agent's context, rendered now.",
        mime_type="text/markdown",
    )
    def context() -> str:
        return principals.current().context().text

    return server
