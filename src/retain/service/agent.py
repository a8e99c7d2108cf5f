"""An agent's own memory: what it remembers into its own scope, the updates that
supersede one of its memories, recall over what it may see, and forgetting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from retain import fields
from retain.chrono import parse_optional_stamp, parse_valid_from
from retain.errors import AccessDenied, InvalidValue, NotFound
from retain.model import DEFAULT_PRIORITY, Agent, Memory, Status, agent_scope
from retain.read_results import SearchResult
from retain.service import rows, search, trust
from retain.service.view import View
from retain.service.work import Work
from retain.storage.base import MemoryFilter, Reads

if TYPE_CHECKING:
    from retain.service import MemoryService


Draft = Callable[[Agent, datetime, Memory | None], Memory]
"""An agent's memory, its fields checked: made in the transaction, from the agent, the
instant and the memory it supersedes (or None)."""


def remember(
    svc: MemoryService,
    text: str,
    *,
    description: str | None = None,
    tags: Sequence[str] | None = None,
    priority: int | None = None,
    subject: str | None = None,
    thread: str | None = None,
    valid_from: str | None = None,
    redact: bool = False,
    evidence: Mapping[str, str] | None = None,
) -> Memory:
    """Write a memory into the acting agent's own scope (``agent:<name>``).

    The agent is its author; it enters at ``observed`` trust, search-only (it
    reaches the agent through recall). Without a description, the text's first
    line stands for one. Text that looks like a credential lands quarantined for
    review, unless ``redact`` writes each secret as its marker. ``evidence`` is checked
    against the text and recorded as the agent's claim (``trust``); it never raises the
    memory above ``observed``.
    """
    draft = draft_of(svc, text, description, tags, priority, subject, thread, valid_from)
    proof = trust.evidence_of(evidence)

    def run(work: Work) -> Memory:
        tx, now = work.reads, work.now
        agent = svc._agent(tx)
        stored = rows.record(work, _claimed(svc, tx, draft(agent, now, None), proof, now))
        return replace(stored, receipt=work.receipt_for(stored))

    return svc._write(run, redact=redact)


def update(
    svc: MemoryService,
    memory_id: str,
    text: str,
    *,
    description: str | None = None,
    tags: Sequence[str] | None = None,
    priority: int | None = None,
    subject: str | None = None,
    thread: str | None = None,
    valid_from: str | None = None,
    redact: bool = False,
    evidence: Mapping[str, str] | None = None,
) -> Memory:
    """Supersede one of the acting agent's own memories with a new one (``evidence`` as
    for ``remember``).

    The new memory says what the old one should now say and names it in
    ``supersedes``; the old one becomes ``superseded`` (out of recall, kept in
    history); tags, priority, subject, thread and valid_from not given are
    carried over from it. Only the agent's own lineage can be updated: another
    identity's memory, or one of a shared scope, is refused.
    """
    fields.text(memory_id, "id")
    draft = draft_of(svc, text, description, tags, priority, subject, thread, valid_from)
    proof = trust.evidence_of(evidence)

    def run(work: Work) -> Memory:
        tx, now = work.reads, work.now
        agent = svc._agent(tx)
        old = _own(svc, tx, agent, memory_id, "update")
        new = _claimed(svc, tx, draft(agent, now, old), proof, now)
        retired = replace(old, status=Status.SUPERSEDED, updated_at=now, superseded_by=new.id)
        stored = rows.supersede(
            work, new, old, retired, "updated", remedy="recall it again and retry"
        )
        return replace(stored, receipt=work.receipt_for(stored))

    return svc._write(run, redact=redact)


def _claimed(
    svc: MemoryService, tx: Reads, memory: Memory, proof: trust.Evidence | None, now: datetime
) -> Memory:
    """``memory`` with the agent's checked evidence recorded as its claim (if any)."""
    if proof is None:
        return memory
    record = trust.checked(svc, tx, proof, memory.body, claimant=memory.id)
    return trust.evidenced(svc, memory, record, now)


def draft_of(
    svc: MemoryService,
    text: str,
    description: str | None,
    tags: Sequence[str] | None,
    priority: int | None,
    subject: str | None,
    thread: str | None,
    valid_from: str | None,
) -> Draft:
    """An agent's memory, every field checked before any I/O; made in the transaction."""
    body = fields.text(text, "text")
    if not body.strip():
        raise InvalidValue(
            "there is nothing to remember", remedy="give the text to remember", field="text"
        )
    first = description if description else body.strip().splitlines()[0]
    summary = fields.description(first)[: fields.DESCRIPTION_NOTE_AT]
    chosen_tags = tuple(fields.tags(tags)) if tags is not None else ()
    chosen_priority = DEFAULT_PRIORITY if priority is None else fields.priority(priority)
    chosen_subject = fields.subject(subject) if subject else None
    chosen_thread = fields.thread(thread) if thread else None
    when = parse_valid_from(valid_from, svc.clock) if valid_from else None

    def make(agent: Agent, now: datetime, old: Memory | None) -> Memory:
        """The memory, taking what was not given from ``old`` (the one it supersedes)."""
        if old is not None:
            return replace(
                fresh(agent, now, old.id),
                tags=chosen_tags if tags is not None else old.tags,
                priority=chosen_priority if priority is not None else old.priority,
                subject=chosen_subject if subject is not None else old.subject,
                thread=chosen_thread if thread is not None else old.thread,
                valid_from=parse_optional_stamp(when) if valid_from else old.valid_from,
            )
        return fresh(agent, now, None)

    def fresh(agent: Agent, now: datetime, supersedes: str | None) -> Memory:
        return rows.authored(
            svc,
            now,
            agent_scope(agent.name),
            summary,
            body,
            tags=chosen_tags,
            priority=chosen_priority,
            subject=chosen_subject,
            thread=chosen_thread,
            supersedes=supersedes,
            valid_from=parse_optional_stamp(when),
        )

    return make


def _own(svc: MemoryService, tx: Reads, agent: Agent, memory_id: str, verb: str) -> Memory:
    """The agent's own active memory of that id, or the refusal: ``not_found`` for
    one outside its view (another agent's is not disclosed), ``access_denied`` for
    one it sees but did not remember (a global or a team memory)."""
    view = View(svc.actor, agent)
    memory = view.get(tx, memory_id)
    if memory is None or memory.status is not Status.ACTIVE:
        raise NotFound(
            f"no memory {memory_id!r} to {verb}",
            remedy="recall it first to find its id",
            id=memory_id,
        )
    if memory.predicate is not None:  # its line changes by its own verbs only
        raise InvalidValue(
            f"memory {memory_id!r} is a fact ({memory.subject} {memory.predicate})",
            remedy="write its new value with fact_write, or withdraw it with fact_retract",
            field="id",
        )
    if memory.scope != agent_scope(agent.name):
        raise AccessDenied(
            f"memory {memory_id!r} is not agent {agent.name!r}'s own (it is in {memory.scope})",
            remedy=f"an agent can {verb} only what it remembered itself",
            id=memory_id,
            scope=memory.scope,
        )
    return memory


def recall(
    svc: MemoryService,
    queries: str | Sequence[str],
    *,
    project: str | None = None,
    limit: int = 10,
    budget_tokens: int | None = None,
    min_trust: str | None = None,
) -> SearchResult:
    """Search what the acting agent may see: global, the project (if one is given),
    its teams' scopes and its own — nothing else; with ``min_trust``, only what is
    trusted at least that."""
    queries = search.query_list(queries)
    search.check_limit(limit)
    search.check_budget(budget_tokens)
    least = trust.minimum(min_trust)
    now = svc._now()

    if project:
        fields.name(project, what="project")

    def where_of(tx: Reads) -> MemoryFilter:
        where = MemoryFilter(realm=svc.realm, scopes=svc._reader(tx, project).scopes)
        return trust.narrowed(where, least)

    return search.ranked(
        svc,
        queries,
        now,
        where_of,
        limit=limit,
        budget_tokens=budget_tokens,
        listing_summary=lambda n: f"{n} memories the agent can see, most important first",
    )
