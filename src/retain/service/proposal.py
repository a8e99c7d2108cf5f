"""Proposals: an agent asks for a memory to be added to a shared scope (a team it
is in, or the global tier); a curator decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retain import fields
from retain.errors import AccessDenied, InvalidValue
from retain.governance import secrets
from retain.model import GLOBAL_SCOPE, TEAM_PREFIX, Proposal
from retain.service.view import View
from retain.service.work import Work

if TYPE_CHECKING:
    from retain.service import MemoryService


def propose(
    svc: MemoryService,
    summary: str,
    *,
    target: str = GLOBAL_SCOPE,
    body: str = "",
    evidence: str = "",
    redact: bool = False,
) -> Proposal:
    """Ask for a memory to be added to a shared scope — a team the agent belongs to, or
    the global tier. The proposal is stored ``open`` for a curator to decide; nothing
    is written to the target until then. A proposal that looks like it holds a
    credential is refused (it is no memory row to hold for review), unless ``redact``
    writes each secret as its marker."""
    line = fields.description(summary)
    if not line:
        raise InvalidValue(
            "a proposal needs a summary", remedy="say in one line what to add", field="summary"
        )
    fields.text(body, "body")
    fields.text(evidence, "evidence")
    line, body, evidence = _screened(svc, line, body, evidence, redact)
    if not isinstance(target, str):
        raise InvalidValue("target must be text", remedy="pass global or team:NAME")

    def run(work: Work) -> Proposal:
        tx, now = work.reads, work.now
        agent = svc._agent(tx)
        team = target.removeprefix(TEAM_PREFIX) if target.startswith(TEAM_PREFIX) else None
        if target != GLOBAL_SCOPE and team is None:
            raise InvalidValue(
                f"a proposal targets the global tier or a team, not {target!r}",
                remedy="pass target global or team:NAME",
                field="target",
            )
        if team is not None:
            svc._require_team(tx, team)
            if team not in agent.teams:
                raise AccessDenied(
                    f"agent {agent.name!r} is not in team {team!r}",
                    remedy="propose to a team the agent belongs to, or to global",
                    team=team,
                )
        proposal = Proposal(
            id=svc.store.ids.new(now),
            source=svc.principal,
            target=target,
            trust=svc.actor.trust,
            summary=line,
            body=body,
            evidence=evidence,
            action="add",
            status="open",
            created_at=now,
        )
        work.add_proposal(proposal)
        work.event("propose",
            {"id": proposal.id, "target": target, "summary": line, "body": body,
             "evidence": evidence},
        )  # fmt: skip
        return proposal

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
    """The realm's proposals, oldest first; ``status`` keeps one status ("open"). An
    agent sees only the proposals it made."""
    if status is not None:
        fields.text(status, "status")
    listed = svc.backend.read(lambda tx: tx.list_proposals(svc.realm, status))
    view = View(svc.actor)
    return [p for p in listed if view.sees_proposal(p)]
