"""Proposals: an agent asks for a memory to be added to a shared scope (a team it
is in, or the global tier), or for one of its own memories to be promoted there; the
steward stages a promotion of a quarantined record there (a *gated promotion*, which
another curator decides, and which a review of the record waits on). The proposal is a
ticket a curator decides (``retain.service.ticket``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from retain import fields
from retain.errors import AccessDenied, InvalidValue, NotFound
from retain.governance import secrets
from retain.model import (
    GLOBAL_SCOPE,
    TEAM_PREFIX,
    Agent,
    Proposal,
    Status,
    agent_scope,
    lower_trust,
)
from retain.service import session, ticket
from retain.service.actor import Kind
from retain.service.view import View
from retain.service.work import Work

if TYPE_CHECKING:
    from retain.model import Memory
    from retain.service import MemoryService
    from retain.storage.base import Reads


def propose(
    svc: MemoryService,
    summary: str,
    *,
    target: str = GLOBAL_SCOPE,
    body: str = "",
    evidence: str = "",
    record: str | None = None,
    redact: bool = False,
) -> Proposal:
    """Ask for a memory to be added to a shared scope — a team the agent belongs to, or
    the global tier — or, with ``record``, for one of the agent's own memories to be
    promoted there (its body is the record's unless one is given). The steward proposes
    to any team or the global tier, and its ``record`` is a quarantined one it stages
    for promotion, decided by another curator while a review of that record waits
    (``gate_pending``). The proposal is a ticket, stored ``open`` for a curator to
    decide until it expires (``[tickets] expire_after``); nothing is written to the
    target until it is approved. A proposal
    that looks like it holds a credential is refused (it is no memory row to hold for
    review), unless ``redact`` writes each secret as its marker."""
    line = fields.description(summary)
    if not line:
        raise InvalidValue(
            "a proposal needs a summary", remedy="say in one line what to add", field="summary"
        )
    fields.text(body, "body")
    fields.text(evidence, "evidence")
    line, body, evidence = _screened(svc, line, body, evidence, redact)
    if record is not None:
        fields.text(record, "record")
    if not isinstance(target, str):
        raise InvalidValue("target must be text", remedy="pass global or team:NAME")

    def run(work: Work) -> Proposal:
        tx, now = work.reads, work.now
        team = target.removeprefix(TEAM_PREFIX) if target.startswith(TEAM_PREFIX) else None
        if target != GLOBAL_SCOPE and team is None:
            raise InvalidValue(
                f"a proposal targets the global tier or a team, not {target!r}",
                remedy="pass target global or team:NAME",
                field="target",
            )
        if team is not None:
            svc._require_team(tx, team)
        if svc.actor.kind is Kind.STEWARD:
            promoted = None if record is None else _held_record(svc, tx, record)
        else:
            agent = svc._agent(tx)
            if team is not None and team not in agent.teams:
                raise AccessDenied(
                    f"agent {agent.name!r} is not in team {team!r}",
                    remedy="propose to a team the agent belongs to, or to global",
                    team=team,
                )
            promoted = None if record is None else _own_record(svc, tx, agent, record)
        judged = session.judged(tx, svc.realm, svc.principal, svc.actor.session)
        proposal = Proposal(
            id=svc.store.ids.new(now),
            source=svc.principal,
            target=target,
            trust=lower_trust(svc.actor.trust, promoted.trust if promoted else svc.actor.trust),
            summary=line,
            body=body or (promoted.body if promoted else ""),
            evidence=evidence,
            action="add" if promoted is None else "promote",
            status="open",
            created_at=now,
            record=record,
            tainted=judged is not None and judged.tainted,
            expires_at=now + svc.settings.ticket_expire_after,
        )
        work.add_proposal(proposal)
        work.event("propose",
            # a promotion's body is its record's, private to the agent: the log names
            # the record, and the ticket (the curators') holds the body
            {"id": proposal.id, "target": target, "summary": line,
             "body": proposal.body if record is None else None,
             "evidence": evidence, "record": record, "tainted": proposal.tainted,
             "expires_at": proposal.to_dict()["expires_at"]},
        )  # fmt: skip
        return replace(proposal, receipt=work.last_receipt())

    return svc._write(run)


def _screened(
    svc: MemoryService, summary: str, body: str, evidence: str, redact: bool
) -> tuple[str, str, str]:
    """A proposal's texts with no secret left in them: redacted, or refused."""
    texts = {"summary": summary, "body": body, "evidence": evidence}
    found = secrets.scan_fields(texts.items(), svc.settings.secrets)
    if not found:
        return summary, body, evidence
    if not redact:
        raise secrets.refusal(found, what="the proposal")
    clean = {
        name: secrets.redact(text, [f for f in found if f.field == name])
        for name, text in texts.items()
    }
    return clean["summary"], clean["body"], clean["evidence"]


def list_proposals(svc: MemoryService, *, status: str | None = None) -> list[Proposal]:
    """The realm's proposals (tickets), oldest first; ``status`` keeps one status
    ("open"; one past its expiry reads as "expired"). An agent sees only the proposals
    it made."""
    ticket.check_status(status)
    listed = svc.backend.read(lambda tx: ticket.read_tickets(svc, tx, svc._read_now(tx), status))
    view = View(svc.actor)
    return [p for p in listed if view.sees_proposal(p)]


def _held_record(svc: MemoryService, tx: Reads, record: str) -> Memory:
    """The quarantined record the steward stages a promotion of, as its view finds it,
    else ``not_found``: what the steward promotes is what waits for review."""
    held = svc._reader(tx).get(tx, record)
    if held is None or held.status is not Status.QUARANTINED:
        raise NotFound(
            f"no quarantined record {record!r} to promote",
            remedy="take the id from the quarantine queue",
            fix="quarantine",
            id=record,
        )
    return held


def _own_record(svc: MemoryService, tx: Reads, agent: Agent, record: str) -> Memory:
    """The agent's own active memory a promotion names, else ``not_found`` (another's
    is not disclosed; a shared memory is not the agent's to promote)."""
    own = View(svc.actor, agent).get(tx, record)
    if own is None or own.scope != agent_scope(agent.name) or own.status is not Status.ACTIVE:
        raise NotFound(
            f"no memory {record!r} of the agent's own to promote",
            remedy="recall it first to find its id",
            id=record,
        )
    return own
