"""Who acts: the principals retain knows, their kinds, and the trust each may write at.

A principal comes from authentication at the door (a token, ``--as``), never from a
caller-supplied field; so does the session key an actor writes in (``--session``, the
``Retain-Session`` header, ``retain.open(session=)``), which a model never chooses: a
tainted agent would pick a clean one. This module is the one registry of their forms that every door
parses with: ``agent:NAME`` (an LLM agent), ``app:NAME`` and ``operator:NAME`` (programs
and people), ``steward`` (the automated reviewer) and ``anonymous``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from retain.errors import InvalidValue
from retain.model import AGENT_PREFIX, DEFAULT_REALM, OPERATOR_PREFIX, Trust

APP_PREFIX = "app:"
STEWARD = "steward"
ANONYMOUS = "anonymous"
LOCAL_OPERATOR = "operator:local"  # who acts on this machine when no one is named
FORMS = "agent:NAME, app:NAME, operator:NAME, steward or anonymous"
# How a principal of each kind is written, for a door telling how to act as one.
FORM_OF = {"agent": "agent:NAME", "app": "app:NAME", "operator": "operator:NAME"}


class Kind(StrEnum):
    """The kind of a principal: what the policy table grants by."""

    AGENT = "agent"
    APP = "app"
    OPERATOR = "operator"
    STEWARD = "steward"
    ANONYMOUS = "anonymous"


_PREFIXES = {AGENT_PREFIX: Kind.AGENT, APP_PREFIX: Kind.APP, OPERATOR_PREFIX: Kind.OPERATOR}
_BARE = {STEWARD: Kind.STEWARD, ANONYMOUS: Kind.ANONYMOUS}
# The most a principal's own write is trusted: an LLM agent's observation, a program's or
# person's attestation, an anonymous caller's claim. Higher is a review's to grant.
_CEILING = {
    Kind.AGENT: Trust.OBSERVED,
    Kind.APP: Trust.ATTESTED,
    Kind.OPERATOR: Trust.ATTESTED,
    Kind.STEWARD: Trust.ATTESTED,
    Kind.ANONYMOUS: Trust.CLAIMED,
}


def kind_of(principal: str) -> Kind | None:
    """The kind of a principal of one of the known forms, else None."""
    if principal in _BARE:
        return _BARE[principal]
    for prefix, kind in _PREFIXES.items():
        if principal.startswith(prefix) and len(principal) > len(prefix):
            return kind
    return None


def parse(principal: str) -> str:
    """``principal`` if it has one of the known forms, else ``invalid_value``."""
    if not isinstance(principal, str) or kind_of(principal) is None:
        raise InvalidValue(
            f"{principal!r} is not a principal",
            remedy=f"name one of the forms {FORMS}",
            field="principal",
        )
    return principal


@dataclass(frozen=True, slots=True)
class Actor:
    """A principal acting in a realm: passed to every verb, not a reason for a service."""

    principal: str
    realm: str = DEFAULT_REALM
    session: str | None = None  # the session key the door names (a host's, never a model's)

    @property
    def kind(self) -> Kind:
        kind = kind_of(self.principal)
        # an unknown form is no operator's: it gets what an anonymous caller gets
        return Kind.ANONYMOUS if kind is None else kind

    @property
    def identity(self) -> str | None:
        """The agent it acts as (``agent:NAME``), if any."""
        return self.principal.removeprefix(AGENT_PREFIX) if self.kind is Kind.AGENT else None

    @property
    def trust(self) -> Trust:
        """The most this actor's own writes are trusted (a change takes the lower)."""
        return _CEILING[self.kind]
