"""The view: what one actor may see, asked by every read of a memory or of its events.

An operator sees every scope of its realm. An agent sees the global tier, its teams'
scopes and its own, and a project's tier when the call names that project (a session
on the project). Any other principal (an application, the steward, an anonymous caller)
sees the shared tiers: the global one and every project's. A memory outside the view is
not disclosed: a lookup answers ``not_found`` as if it did not exist, and an event
about it keeps its place in the log (the chain stays whole) without its payload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from retain.model import (
    GLOBAL_SCOPE,
    PROJECT_PREFIX,
    Agent,
    Event,
    agent_scope,
    project_scope,
    team_scope,
)
from retain.service.actor import Actor, Kind


@dataclass(frozen=True, slots=True)
class View:
    """One actor's view in one call: ``project`` is the project the call names (None:
    none; ``""``: the global tier alone), ``agent`` the registered agent acting."""

    actor: Actor
    agent: Agent | None = None
    project: str | None = None

    @property
    def own(self) -> tuple[str, ...]:
        """An agent's teams' scopes and its own: what only it (and they) read."""
        if self.agent is None:
            return ()
        teams = (team_scope(team) for team in self.agent.teams)
        return (*teams, agent_scope(self.agent.name))

    def lookup_scopes(self) -> list[str] | None:
        """The scopes a lookup by name covers (None: every scope the reader sees)."""
        if self.project == "":
            return [GLOBAL_SCOPE]
        if self.project is not None:
            return [GLOBAL_SCOPE, project_scope(self.project), *self.own]
        if self.actor.kind is Kind.AGENT:
            return [GLOBAL_SCOPE, *self.own]
        return None

    def sees(self, realm: str, scope: str) -> bool:
        """Whether a memory of ``realm`` in ``scope`` is in this view."""
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

    def event(self, event: Event, scope: str | None) -> Event:
        """``event`` as this view shows it: whole, or, when it is about a memory the view
        does not see (``scope`` is that memory's), without its payload."""
        if event.memory_id is None or scope is None or self.sees(event.realm, scope):
            return event
        return replace(event, payload=None, withheld=True)
