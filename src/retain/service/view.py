"""The view: what one actor may see, asked by every read of a memory or of its events.

An operator sees every scope of its realm. An agent sees the global tier, its teams'
scopes and its own, and a project's tier when the call names that project (a session
on the project). Any other principal (an application, the steward, an anonymous caller)
sees the shared tiers: the global one and every project's. A memory outside the view is
not disclosed: a lookup answers ``not_found`` as if it did not exist, and an event
about it keeps its place in the log (the chain stays whole) without its payload.

A row written quarantined (it has a ``quarantine_reason``) is **reviewer-only**, whatever
it became since (waiting, released, tombstoned): only a reviewer's view sees it (an
operator or the steward, in any scope of the realm, since reviewing is what they see it
for), and every other view is as blind to it as to a row outside its scopes, but for the
console's panels, which give it **withheld** where the view covers its scope (``shows``:
where it is and where it stands, never its content). A released successor is a new row,
written by the review, and ordinary memory. Listings and searches keep to active rows
(``MemoryFilter.statuses``), and no active row was written quarantined, so they need no
more; every read of a row by id, name or event asks ``sees``, and the panels' listing of
every status asks ``shows``.
Under ``[access] control = true`` the view also holds the call's grants (the gate makes
them current: ``retain.service.access``) and keeps, of what the rules above let it see,
only the rows they let the actor read; a listing or search that covers every scope
covers the realm's readable ones, so its pages are cut from readable rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from retain.errors import AccessDenied
from retain.grants import REVIEW
from retain.model import (
    GLOBAL_SCOPE,
    PROJECT_PREFIX,
    Agent,
    Event,
    Memory,
    Proposal,
    agent_scope,
    project_scope,
    team_scope,
)
from retain.service import access
from retain.service.actor import Actor, Kind
from retain.storage.base import Reads

# Who sees reviewer-only rows (and reviews them), until access grants refine it.
REVIEWERS = frozenset({Kind.OPERATOR, Kind.STEWARD})
WHOLE, WITHHELD = "whole", "withheld"  # how the console's panels give a row (``shows``)


@dataclass(frozen=True, slots=True)
class View:
    """One actor's view in one call: ``project`` is the project the call names (None:
    none; ``""``: the global tier alone), ``agent`` the registered agent acting."""

    actor: Actor
    agent: Agent | None = None
    project: str | None = None
    # the call's grants under [access] control = true (None: off); a row is then seen
    # only where they let the actor read it, too
    grants: access.Call | None = field(default_factory=access.current)

    @property
    def own(self) -> tuple[str, ...]:
        """An agent's teams' scopes and its own: what only it (and they) read."""
        if self.agent is None:
            return ()
        teams = (team_scope(team) for team in self.agent.teams)
        return (*teams, agent_scope(self.agent.name))

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scopes of a session in this view, in the order the memory section groups
        them: global, the project's, then an agent's teams' and its own."""
        project = (project_scope(self.project),) if self.project else ()
        scopes = (GLOBAL_SCOPE, *project, *self.own)
        return scopes if self.grants is None else self.grants.readable(scopes)

    def lookup_scopes(self) -> list[str] | None:
        """The scopes a lookup by name covers (None: every scope the reader sees)."""
        if self.project == "":
            return [GLOBAL_SCOPE]
        if self.project is None and self.actor.kind is not Kind.AGENT:
            return None
        return list(self.scopes)

    def narrow(
        self, selected: tuple[str, ...] | None, *, with_own: bool, reads: Reads | None = None
    ) -> tuple[tuple[str, ...] | None, bool]:
        """What a listing or search of the scopes ``selected`` (None: every one) covers
        in this view: (the scopes, or None for every one; whether only the shared tiers
        of those). An agent reads what it selects (global when it selects none) and,
        ``with_own``, its teams' and its own; an operator reads every scope; anyone else
        the shared tiers."""
        narrowed, tiers_only = self._narrow(selected, with_own=with_own)
        if self.grants is None:
            return narrowed, tiers_only
        if narrowed is None:  # every scope: the realm's (read in ``reads``), cut to the readable
            assert reads is not None, "a listing under access control names its transaction"
            self.grants.prime(reads)
            narrowed = tuple(
                s
                for s in self.grants.known
                if not tiers_only or s == GLOBAL_SCOPE or s.startswith(PROJECT_PREFIX)
            )
        return self.grants.readable(narrowed), False

    def _narrow(
        self, selected: tuple[str, ...] | None, *, with_own: bool
    ) -> tuple[tuple[str, ...] | None, bool]:
        if self.actor.kind is Kind.AGENT:
            scopes = selected or (GLOBAL_SCOPE,)
            return ((*scopes, *self.own) if with_own else scopes), False
        if selected is None and self.actor.kind is not Kind.OPERATOR:
            return None, True
        return selected, False

    @property
    def reviews(self) -> bool:
        """Whether this is a reviewer's view: it sees reviewer-only rows."""
        return self.actor.kind in REVIEWERS

    def sees(self, memory: Memory) -> bool:
        """Whether ``memory`` is in this view: its realm and scope are (``covers``),
        and it is no reviewer-only row hidden from this view (``hides``; under access
        control a reviewer also needs ``memory.quarantine.review`` on its scope)."""
        return self.sees_at(
            memory.realm, memory.scope, reviewer_only=bool(memory.quarantine_reason)
        )

    def sees_at(self, realm: str, scope: str, *, reviewer_only: bool) -> bool:
        """Whether a row of ``realm`` in ``scope`` is in this view; ``reviewer_only``:
        one written quarantined."""
        if reviewer_only:
            return (
                realm == self.actor.realm
                and self.reviews
                and (self.grants is None or self.grants.allows(REVIEW, scope))
            )
        return self.covers(realm, scope)

    def shows(self, realm: str, scope: str, *, reviewer_only: bool) -> str | None:
        """How the console's panels give a row of ``realm`` in ``scope``: ``WHOLE`` when
        it is in this view, ``WITHHELD`` when the view covers its scope but the row is
        reviewer-only and this view may not review it (where it is and where it stands,
        never its content), None when it is not given at all."""
        if self.sees_at(realm, scope, reviewer_only=reviewer_only):
            return WHOLE
        return WITHHELD if reviewer_only and self.covers(realm, scope) else None

    @property
    def reviews_all(self) -> bool:
        """Whether this view sees every reviewer-only row it covers (a reviewer's, with no
        grants to narrow it): only then may a text filter look into them."""
        return self.reviews and self.grants is None

    def get(self, tx: Reads, memory_id: str) -> Memory | None:
        """The memory of that id as this view sees it (None: none, or not in view)."""
        found = [m for m in tx.get_many([memory_id]) if self.sees(m)]
        return found[0] if found else None

    def hides(self, memory: Memory) -> bool:
        """Whether ``memory`` is reviewer-only and this view no reviewer's."""
        return bool(memory.quarantine_reason) and not self.sees(memory)

    def covers(self, realm: str, scope: str) -> bool:
        """Whether a memory of ``realm`` in ``scope`` is in this view's scopes (and, under
        access control, the call's grants let the actor read it)."""
        return self._covers(realm, scope) and (self.grants is None or self.grants.reads(scope))

    def _covers(self, realm: str, scope: str) -> bool:
        if realm != self.actor.realm:
            return False
        kind = self.actor.kind
        if kind is Kind.OPERATOR:
            return True
        if scope == GLOBAL_SCOPE:
            return True
        if kind is Kind.AGENT:
            return scope in self.own or (
                bool(self.project) and scope == project_scope(self.project or "")
            )
        return scope.startswith(PROJECT_PREFIX)

    def injections_of(self, identity: str | None) -> str | None:
        """Whose injection ledger rows this view reads when ``identity`` is asked for
        (None: everyone's): an operator any identity's, anyone else only its own."""
        if self.actor.kind is Kind.OPERATOR:
            return identity
        if identity not in (None, self.actor.principal):
            raise AccessDenied(
                f"{self.actor.principal!r} may read only its own injections",
                remedy="leave identity out, or ask an operator",
                identity=identity,
            )
        return self.actor.principal

    def sees_proposal(self, proposal: Proposal) -> bool:
        """An agent sees the proposals it made; the others see every proposal (under
        access control, only those whose target scope the grants let it read)."""
        if self.grants is not None and not self.grants.reads(proposal.target):
            return False
        return self.actor.kind is not Kind.AGENT or proposal.source == self.actor.principal

    def event(self, event: Event, memory: Memory | None) -> Event:
        """``event`` as this view shows it: whole, or, when it is about a memory the view
        does not see (``memory``: that memory as stored; None when it is no longer
        stored, which only an operator's view then sees), without its payload."""
        if event.memory_id is None:
            return event
        shown = self.sees(memory) if memory is not None else self.covers(event.realm, "")
        if shown:
            return event
        return replace(event, payload=None, withheld=True)
