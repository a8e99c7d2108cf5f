"""What a request may hold: the ``/v1`` prefix, a listing's page, the parameters of a
path or a query and the bodies of the REST API, with the service's own rules
(``fields``' patterns and bounds) stated in the OpenAPI document.

Stated, not enforced here: the service checks each one, so a value out of its form is
refused with the very envelope Python and MCP give it. Only a value's JSON type is this
door's to check.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path as InPath
from fastapi import Query
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from retain import fields, grants, graph
from retain.conversation import MAX_TURNS
from retain.service import SEARCH_LIMIT_MAX
from retain.service.trust import PATH_MAX_CHARS, PATH_PATTERN

API = "/v1"
PAGE = 100  # a listing's page unless the request asks for another size
MAX_PAGE = fields.PAGE_MAX  # the bound is the service's own (`fields.page`)

F = fields


def _rule(**rule: Any) -> Any:
    """A body field's rule, stated in the schema (``minimum``, ``pattern``, ``enum``...)."""
    return Field(json_schema_extra=rule)


def query_rule(**rule: Any) -> Any:
    """A query parameter's rule, stated in the schema."""
    return Query(json_schema_extra=rule)


def _integral(value: object) -> object:
    """JSON has one kind of number: ``76.0`` is the whole number 76, as JSON Schema reads
    it (``true`` and ``"76"`` stay refused)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Whole = BeforeValidator(_integral)
Text = Annotated[str, _rule(pattern=F.TEXT_PATTERN)]
Filled = Annotated[str, _rule(pattern=F.FILLED_PATTERN)]
Name = Annotated[str, _rule(pattern=F.NAME_PATTERN, maxLength=F.NAME_MAX)]
ProjectArg = Annotated[str, _rule(pattern=F.PROJECT_PATTERN, maxLength=F.NAME_MAX)]
Tag = Annotated[str, _rule(pattern=F.TAG_PATTERN)]
Reference = Annotated[str, _rule(pattern=F.REFERENCE_PATTERN)]
Subject = Annotated[str, _rule(pattern=F.SUBJECT_PATTERN)]
FactSubject = Annotated[str, _rule(pattern=F.FACT_SUBJECT_PATTERN)]
Predicate = Annotated[str, _rule(pattern=F.PREDICATE_PATTERN)]
Thread = Annotated[str, _rule(pattern=F.THREAD_PATTERN)]
Source = Annotated[str, _rule(pattern=F.SOURCE_PATTERN)]
Moment = Annotated[str, _rule(pattern=F.TIME_PATTERN)]
Duration = Annotated[str, _rule(pattern=F.DURATION_PATTERN)]
Priority = Annotated[int, _rule(minimum=F.MIN_PRIORITY, maximum=F.MAX_PRIORITY), Whole]
Limit = Annotated[int, _rule(minimum=1, maximum=SEARCH_LIMIT_MAX), Whole]
Budget = Annotated[int, _rule(minimum=1), Whole]
Session = Annotated[str, _rule(pattern=F.FILLED_PATTERN, maxLength=F.SESSION_MAX_CHARS)]
LoadName = Annotated[str, _rule(enum=["inline", "index", "search"])]
TierName = Annotated[str, _rule(enum=["global", "project"])]
Policy = Annotated[str, _rule(enum=["skip", "fail"])]
Target = Annotated[str, _rule(pattern=f"^(?:global|team:{F.NAME_PATTERN[1:-1]})$")]
TRUSTS = ["claimed", "observed", "attested", "verified"]  # model.Trust, lowest first
TrustName = Annotated[str, _rule(enum=TRUSTS)]
AgentIdentity = Annotated[str, _rule(pattern=f"^agent:{F.NAME_PATTERN[1:-1]}$")]
ToolName = Annotated[str, _rule(pattern=F.TOOL_PATTERN)]
Boundary = Annotated[str, _rule(enum=["reset", "respawn", "clear", "new", "compact"])]

# The same rules for a path's or a query's parameters.
NamePath = Annotated[
    str, InPath(json_schema_extra={"pattern": F.NAME_PATTERN, "maxLength": F.NAME_MAX})
]
SessionPath = Annotated[
    str,
    InPath(json_schema_extra={"pattern": F.FILLED_PATTERN, "maxLength": F.SESSION_MAX_CHARS}),
]
IdentityQuery = Annotated[str, query_rule(pattern=f"^agent:{F.NAME_PATTERN[1:-1]}$")]
ProjectQuery = Annotated[str | None, query_rule(pattern=F.PROJECT_PATTERN, maxLength=F.NAME_MAX)]
TextQuery = Annotated[str | None, query_rule(pattern=F.TEXT_PATTERN)]
TagQuery = Annotated[str | None, query_rule(pattern=F.TAG_PATTERN)]
DurationQuery = Annotated[str | None, query_rule(pattern=F.DURATION_PATTERN)]
MomentQuery = Annotated[str | None, query_rule(pattern=F.TIME_PATTERN)]
PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE)]
TrustQuery = Annotated[str | None, query_rule(enum=TRUSTS)]


class _Body(BaseModel):
    # strict: a JSON value of another type is refused, as the service refuses it (no "3"
    # for 3, no true for 1)
    model_config = ConfigDict(extra="forbid", strict=True)


class Evidence(_Body):
    """What bears a claim out: a memory or fact (its id, or a name) trusted attested or
    above, and the dotted path of the field in its JSON body (none: the body itself)."""

    ref: Filled
    path: Annotated[str, _rule(pattern=PATH_PATTERN, maxLength=PATH_MAX_CHARS)] | None = None


class MemoryWrite(_Body):
    """A write: a field left out keeps what is there; ``""`` clears body or expiry."""

    description: Text | None = None
    body: Text | None = None
    tags: list[Tag] | None = None
    priority: Priority | None = None
    load: LoadName | None = None
    references: Annotated[list[Reference], _rule(maxItems=F.MAX_REFERENCES)] | None = None
    source: Source | None = None
    expires: Moment | None = None
    subject: Subject | None = None
    thread: Thread | None = None
    valid_from: Moment | None = None
    tier: TierName | None = None
    verified: bool = False
    create_only: bool = False
    expected_hash: Text | None = None
    redact: bool = False  # each secret written as [redacted:KIND] instead of refused
    evidence: Evidence | None = None
    metadata: dict[str, Any] | None = None  # the caller's own JSON object; {} clears it


class TurnBody(_Body):
    """One turn of a conversation (``retain.conversation.Turn``)."""

    speaker: FactSubject  # one line, not blank
    text: Text
    at: Moment | None = None
    id: Subject | None = None
    caption: Text | None = None


class ConversationBody(_Body):
    """A thread's turns, in the order they were said, written one memory a turn."""

    thread: Annotated[str, _rule(pattern=F.NAMED_THREAD_PATTERN)]
    turns: Annotated[list[TurnBody], _rule(minItems=1, maxItems=MAX_TURNS)]
    project: ProjectArg | None = None
    at: Moment | None = None
    reason: Text = ""
    redact: bool = False


class EditBody(_Body):
    old: Annotated[str, _rule(pattern=F.TEXT_PATTERN, minLength=1)]
    new: Text
    replace_all: bool = False
    verified: bool = False
    redact: bool = False


# One query, or synonyms. Their limits (how many are not blank, their characters together,
# each one's words and scanned terms) are for the service to check: no schema states them.
Queries = Text | list[Text]


class SearchBody(_Body):
    queries: Queries = Field(default_factory=list)
    project: ProjectArg | None = None
    tier: TierName | None = None
    limit: Limit = 10
    tag: Tag | None = None
    referencing: Text | None = None
    unverified: Duration | None = None
    expired: bool = False
    budget_tokens: Budget | None = None
    min_trust: TrustName | None = None


class RecallBody(_Body):
    queries: Queries
    project: ProjectArg | None = None
    limit: Limit = 10
    budget_tokens: Budget | None = None
    min_trust: TrustName | None = None


class RememberBody(_Body):
    text: Filled
    description: Text | None = None
    tags: list[Tag] | None = None
    priority: Priority | None = None
    subject: Subject | None = None
    thread: Thread | None = None
    valid_from: Moment | None = None
    redact: bool = False
    evidence: Evidence | None = None


class FactWriteBody(_Body):
    subject: FactSubject
    predicate: Predicate
    value: Filled
    project: ProjectArg | None = None
    valid_from: Moment | None = None
    reason: Text = ""
    redact: bool = False
    evidence: Evidence | None = None
    supersedes: Text | None = None


class FactRetractBody(_Body):
    subject: FactSubject
    predicate: Predicate
    project: ProjectArg | None = None
    reason: Text = ""


class ConfirmBody(_Body):
    reason: Text = ""


class ReviewBody(_Body):
    """A review's decision, bound to the content read (its ``content_hash``)."""

    verdict: Annotated[str, _rule(enum=["release", "tombstone"])]
    expected_content_hash: Text
    rationale: Text = ""


class ForgetBody(_Body):
    id: Filled  # a memory's, a fact version's or a ticket's id, or a memory's name
    project: ProjectArg | None = None
    reason: Text = ""
    keep_digest: bool = True
    compact: bool = True


class CompactBody(_Body):
    full: bool = False


class ProposeBody(_Body):
    summary: Filled
    target: Target = "global"
    body: Text = ""
    evidence: Text = ""
    redact: bool = False
    record: Text | None = None


class DecideBody(_Body):
    reason: Text = ""


class ContextBody(_Body):
    project: ProjectArg | None = None
    turn: Text | None = None
    session: Session | None = None
    restate: bool = False
    recall_timeout_ms: (
        Annotated[int, _rule(minimum=0, maximum=F.RECALL_TIMEOUT_MAX_MS), Whole] | None
    ) = None
    recall_failure_policy: Policy | None = None
    min_trust: TrustName | None = None


class RetierBody(_Body):
    trust: TrustName
    reason: Filled
    evidence: Evidence | None = None


class NameBody(_Body):
    name: Name


class ObserveBody(_Body):
    """What a session ingested: the tool, and where it came from (an agent's token names
    no identity: its own)."""

    tool: ToolName
    identity: AgentIdentity | None = None
    server: ToolName | None = None
    provenance: ToolName | None = None
    native: bool = False


class ResetBody(_Body):
    identity: AgentIdentity
    boundary: Boundary = "reset"


Effect = Annotated[str, _rule(enum=list(grants.EFFECTS))]
GrantSubject = Annotated[str, _rule(pattern=grants.SUBJECT_PATTERN)]
GrantOn = Annotated[str, _rule(pattern=grants.ON_PATTERN)]
# realm.admin is granted in config.toml alone: no body may store it
StoredAction = Annotated[str, _rule(enum=[a for a in grants.ACTIONS if a not in grants.REALM_ONLY])]


class GrantBody(_Body):
    """A grant: a subject (a principal, a pattern such as agent:*, or role:NAME), one of
    the actions, what it is on (realm:R, scope:S, identity:agent:N), allow or deny."""

    subject: GrantSubject
    action: StoredAction
    on: GrantOn
    effect: Effect = "allow"


class HoldBody(_Body):
    """Why a memory is held (the matter, the request): required, and kept in the log."""

    reason: Filled


# One scope by name, as a sweep or a dedup pass takes it (``lookup.check_scope``).
ScopeArg = Annotated[
    str, _rule(pattern=f"^(?:global|(?:project|team|agent):{F.NAME_PATTERN[1:-1]})$")
]


class SweepBody(_Body):
    """A retention sweep: what was learned before ``before`` (none: each scope's
    ``[retention]`` window decides), in ``scope`` (none: every scope in view)."""

    reason: Filled
    before: Moment | None = None
    scope: ScopeArg | None = None
    keep_digest: bool = True
    dry_run: bool = False


# The relation graph: a relation's type and a decision on a pair, as the service names
# them (it also takes them in any case, with - for _), and a reason's length.
RelationType = Annotated[str, _rule(enum=list(graph.LINKED))]
Decision = Annotated[str, _rule(enum=list(graph.DECISIONS))]
RelationReason = Annotated[str, _rule(pattern=F.TEXT_PATTERN, maxLength=graph.REASON_MAX_CHARS)]
MemoryRef = Filled  # a memory's id, or a name one memory of the caller's view holds


class LinkBody(_Body):
    """An explicit relation ``source`` → ``target`` (ids or names) of ``type``."""

    source: MemoryRef
    target: MemoryRef
    type: RelationType
    reason: RelationReason = ""
    project: ProjectArg | None = None


class PairDecisionBody(_Body):
    """A curator's decision on the memory of the path and ``target``: for ``supersede``,
    ``target`` is the newer memory that takes over."""

    action: Decision
    target: MemoryRef
    reason: RelationReason = ""
    project: ProjectArg | None = None


class DedupBody(_Body):
    """A dedup pass: pairs scoring ``threshold`` (none: the store's default), in
    ``project``'s tier (``""``: the global tier) or in ``scope`` (none of the two: every
    scope in view)."""

    threshold: Annotated[float, _rule(exclusiveMinimum=0, maximum=1)] | None = None
    project: ProjectArg | None = None
    scope: ScopeArg | None = None  # not with a project: that refusal is the service's
