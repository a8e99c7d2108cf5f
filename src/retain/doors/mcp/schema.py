"""What the MCP tools take and give: every argument described and bounded where the
service bounds it, and the results typed as the records of the REST API (each tool's
output schema)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from retain.fields import MAX_PRIORITY, MIN_PRIORITY
from retain.service import SEARCH_LIMIT_MAX
from retain.service.trust import PATH_MAX_CHARS, PATH_PATTERN

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
Redact = Annotated[
    bool,
    Field(
        description="Write each secret found (a key, a token, a password) as "
        "[redacted:KIND] instead of being refused; store where a credential lives, not it."
    ),
]
MemoryId = Annotated[str, Field(description="The memory's id, as recall returned it.")]
FactSubject = Annotated[str, Field(description="Who or what the fact is about, e.g. Bob.")]
TrustName = Literal["claimed", "observed", "attested", "verified"]  # model.Trust's values
MinTrust = Annotated[
    TrustName | None,
    Field(
        description="Only what is trusted at least this: claimed < observed < attested < "
        "verified; default every tier."
    ),
]


class EvidenceArg(BaseModel):
    """What bears a value out: a memory or fact you can read, trusted attested or above,
    whose body (or the field at path in its JSON body) equals it exactly."""

    ref: str = Field(description="The id (or name) of the memory or fact.")
    path: str | None = Field(
        default=None,
        pattern=PATH_PATTERN,
        max_length=PATH_MAX_CHARS,
        description="The dotted path of the field in its JSON body, e.g. plan.tier.",
    )


Evidence = Annotated[
    EvidenceArg | None,
    Field(
        description="Evidence the store checks; a mismatch is refused. An agent's checked "
        "claim is recorded in provenance; it does not raise the agent's trust."
    ),
]
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
    provenance: dict[str, Any] | None = Field(
        default=None,
        description="The evidence the store checked for it (epistemic verified, or an "
        "agent's verified_claim), if any.",
    )
    redacted: list[str] | None = Field(
        default=None,
        description="The kinds of secret written as [redacted:KIND] markers, if any.",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="The writer's own JSON object kept with it."
    )
    status: str
    ever_quarantined: bool = Field(
        description="Whether it was ever held for review (its trust stays at most observed)."
    )
    supersedes: str | None = Field(description="The id of the memory this one replaced.")
    superseded_by: str | None = Field(
        description="On a superseded memory: the id of the memory that replaced it."
    )
    derived_from: str | None = Field(
        description="The record it was made from: a reviewed original, or a ticket."
    )
    author: str
    changed_by: str = Field(description="Who last changed it (its author until someone else does).")
    created_at: str
    updated_at: str
    verified_at: str
    expires_at: str | None
    expired: bool
    read_count: int


class WriteReceiptOut(BaseModel):
    """The receipt of the write: its event and place in the hash chain, signed when the
    store has a signing key (check it offline: `retain receipt verify`)."""

    event_id: str
    seq: int
    tx_time: str
    principal: str
    realm: str
    kind: str
    memory_id: str | None
    reason: str
    content_hash: str | None = Field(description="The hash of the row written, if one was.")
    payload_digest: str
    prev_hash: str
    chain_hash: str = Field(description="The event's hash: its link in the chain.")
    key_id: str | None = Field(description="The signing key's id, when signed.")
    signature: str | None = Field(description="Base64 Ed25519 signature, when signed.")
    version: int


_RECEIPT = "The receipt of the write (none when nothing was written)."


class MemoryWithBody(MemoryRecord):
    body: str
    receipt: WriteReceiptOut | None = Field(default=None, description=_RECEIPT)


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
    receipt: WriteReceiptOut | None = Field(default=None, description=_RECEIPT)


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


class ApprovalOut(BaseModel):
    by: str
    at: str
    reason: str


class ProposalOut(BaseModel):
    """A ticket: the seed's fields (id, timestamp, source agent, scope, trust label,
    summary, evidence, action, status) and where its decision stands."""

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
    record: str | None = Field(description="The memory it promotes, if any.")
    tainted: bool = Field(description="Whether the proposer's session was tainted.")
    expires_at: str | None
    approvals: list[ApprovalOut]
    decided_by: str | None
    decided_at: str | None
    decision_reason: str
    landed: str | None = Field(description="The memory an approval landed.")
    receipt: WriteReceiptOut | None = Field(default=None, description=_RECEIPT)


class TicketsOut(BaseModel):
    tickets: list[ProposalOut]


class FactOut(BaseModel):
    id: str
    scope: str
    project: str | None
    subject: str
    predicate: str
    value: str
    provenance: Literal["claimed", "attested", "verified"] = Field(
        description="claimed: an unauthenticated writer said so; attested: an authenticated "
        "principal wrote it, or a reviewer confirmed it; verified: it equals checked evidence."
    )
    valid_from: str | None
    valid_to: str | None
    recorded_at: str
    retracted_at: str | None
    author: str
    trust: str
    status: str
    ever_quarantined: bool = Field(
        default=False, description="It was quarantined once: trusted at most observed, for good."
    )
    supersedes: str | None = Field(description="The id of the version this one took over from.")
    superseded_by: str | None = Field(description="The id of the version that took over from it.")


class FactWriteOut(BaseModel):
    fact: FactOut
    superseded: FactOut | None
    changed: bool
    receipt: WriteReceiptOut | None = Field(default=None, description=_RECEIPT)


class FactRetractOut(BaseModel):
    fact: FactOut
    restored: FactOut | None
    changed: bool
    receipt: WriteReceiptOut | None = Field(default=None, description=_RECEIPT)


class FactsOut(BaseModel):
    facts: list[FactOut]


class HeldOut(MemoryWithBody):
    """A quarantined record as a reviewer reads it."""

    quarantine_reason: list[str] = Field(description="Why it waits for review.")
    session: str | None = Field(description="The session it was written in.")
    content_hash: str = Field(description="What a review binds its decision to.")


class QuarantineOut(BaseModel):
    quarantine: list[HeldOut]
    next_cursor: str | None = Field(description="Pass as cursor for the next page.")


class ReceiptOut(BaseModel):
    id: str
    status: str
    trust: str
    ever_quarantined: bool
    content_hash: str
    supersedes: str | None
    derived_from: str | None


class DecisionOut(BaseModel):
    event_id: str
    at: str
    review: dict[str, Any] = Field(
        description="verdict, reviewer, origin, successor, bound_hash, quarantine_reason, "
        "expired_promotions, invalidated_promotions, rationale."
    )


class ReviewOut(BaseModel):
    outcome: Literal["released", "tombstoned", "already_released", "already_tombstoned"]
    origin: ReceiptOut
    successor: ReceiptOut | None
    decision: DecisionOut
    receipt: WriteReceiptOut | None = Field(default=None, description=_RECEIPT)


class GrantOut(BaseModel):
    id: str
    subject: str
    action: str
    on: str
    effect: str
    source: str = Field(description="config (config.toml's, read-only) or stored.")
    realm: str | None
    created_at: str | None
    created_by: str | None
    receipt: WriteReceiptOut | None = Field(default=None, description=_RECEIPT)


class GrantsOut(BaseModel):
    grants: list[GrantOut]


class RevokeOut(BaseModel):
    revoked: GrantOut


class CertificateOut(BaseModel):
    """An erasure certificate (``forget``): what was erased, the digest kept, and each
    place the value was removed from with its verification."""

    certificate: str = Field(description="The forget event's id: fetch it again by this.")
    seq: int
    target: str
    kind: Literal["memory", "fact", "ticket"]
    scope: str
    subject: str | None
    predicate: str | None
    digest: str | None
    digest_kind: Literal["sha256", "hmac-sha256", "none"]
    forgotten_at: str
    principal: str
    reason: str
    erased_from_store: bool
    erased: list[str] = Field(description="The ids of every row and ticket that held it.")
    erased_events: list[int] = Field(description="The seqs of the events rewritten.")
    places: dict[str, str] = Field(
        description="Each place → verified, still_indexed, unverified or failed."
    )
    mirrors: dict[str, str]
    reinstated: str | None = Field(description="The fact version believed again, if any.")
    copies_kept: list[str] = Field(description="Copies beyond the actor's reach, left as is.")
    verified_at: str | None
    receipt: WriteReceiptOut | None = Field(description="The forget event's receipt.")
