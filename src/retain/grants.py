"""Access grants as values: the actions a grant names, what it may be on, and matching.

A grant lets (or, with ``effect = "deny"``, forbids) a **subject** one **action** **on**
a part of the store:

* subject: a principal (``agent:ada``, ``operator:alice``, ``anonymous``, ...), a
  pattern ending in ``*`` (``agent:*``; ``*`` alone is everyone, anonymous included),
  or ``role:NAME`` (the principals ``[access.roles]`` names);
* action: one of ``ACTIONS``;
* on: ``realm:R`` (everything in realm R; ``realm:*`` every realm), ``scope:S`` (the
  memories of scope S: ``global``, ``project:web``, ``team:blue``, ``agent:ada``; a
  pattern ending in ``*`` such as ``scope:team:*``), or ``identity:agent:N`` (an
  agent's own memories: the same as ``scope:agent:N``, written as the seeds write it).

Nothing here decides a call: ``retain.service.access`` does, in the gate. This module
only parses and matches, so ``config.toml`` is checked with the same rules a stored
grant is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from retain.errors import InvalidValue

if TYPE_CHECKING:
    from retain.receipt import Receipt

REVIEW = "memory.quarantine.review"  # reading what was written quarantined, and deciding it

# Every action a grant may name, and what it lets its subject do.
ACTIONS: Mapping[str, str] = MappingProxyType(
    {
        "memory.read": "read the memories of the shared tiers and agents' own scopes",
        "memory.write": "write and change memories, facts and proposals",
        "memory.delete": "delete or forget memories",
        REVIEW: "read quarantined memories and decide them",
        "memory.retier": "raise or lower a memory's trust",
        "team.memory.read": "read the memories of team scopes",
        "operator.memory.read": "read the memories of the operator scope",
        "session.observe": "report what a session ingested, and reset it",
        "ticket.decide": "approve or reject tickets",
        "realm.admin": "administer the realm: its registry, grants and upkeep",
    }
)
READS = ("memory.read", "team.memory.read", "operator.memory.read")  # a row's read actions
REALM_ONLY = frozenset({"realm.admin"})  # granted on a realm, never on a part of one
EFFECTS = ("allow", "deny")
ON_KINDS = ("realm", "scope", "identity")
OPERATOR_SCOPE = "operator"  # DESIGN.md's operator scope: retain stores none yet
AGENT_PREFIX = "agent:"  # model's (not imported: config.toml is read before any model)

_WORD = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_PRINCIPAL = rf"(?:agent|app|operator):{_WORD}|steward|anonymous"
_PATTERN = rf"\*|(?:agent|app|operator):(?:{_WORD})?\*"
_ROLE = rf"role:{_WORD}"
_SCOPE = rf"global|operator|(?:project|team|agent):{_WORD}"
_SCOPE_PATTERN = rf"\*|(?:project|team|agent):(?:{_WORD})?\*"
_IDENTITY = rf"agent:{_WORD}|agent:(?:{_WORD})?\*"
_REALM = rf"{_WORD}|\*"
# The forms as whole-string patterns, for the doors' schemas (each part is also checked
# here: the patterns only state the rules).
SUBJECT_PATTERN = rf"^(?:{_ROLE}|{_PRINCIPAL}|{_PATTERN})$"
PRINCIPAL_PATTERN = rf"^(?:{_PRINCIPAL}|{_PATTERN})$"
ON_PATTERN = (
    rf"^(?:realm:(?:{_REALM})|scope:(?:{_SCOPE}|{_SCOPE_PATTERN})|identity:(?:{_IDENTITY}))$"
)


@dataclass(frozen=True, slots=True)
class Grant:
    """One grant: who, what, on what, allow or deny, and where it comes from
    (``config``: ``config.toml``, read-only; ``stored``: kept by ``grant``/``revoke``)."""

    subject: str
    action: str
    on: str
    effect: str = "allow"
    source: str = "config"
    id: str = ""  # a stored grant's id; a config grant's is config:N, its place in the file
    realm: str | None = None  # the realm a stored grant is kept in; None: a config grant's
    created_at: datetime | None = None
    created_by: str | None = None
    # the receipt of the grant or revoke that returned it: never stored
    receipt: Receipt | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.subject, self.action, self.on, self.effect)

    def applies_in(self, realm: str) -> bool:
        """Whether the grant counts in ``realm``: a stored one in its own, a config one
        in every realm (``realm:R`` then names the realm it covers)."""
        return self.realm is None or self.realm == realm

    def to_dict(self) -> dict[str, Any]:
        from retain.chrono import stamp

        return {
            "id": self.id,
            "subject": self.subject,
            "action": self.action,
            "on": self.on,
            "effect": self.effect,
            "source": self.source,
            "realm": self.realm,
            "created_at": stamp(self.created_at) if self.created_at else None,
            "created_by": self.created_by,
        } | ({} if self.receipt is None else {"receipt": self.receipt.to_dict()})


def matches(pattern: str, value: str) -> bool:
    """``value`` is ``pattern``, or starts with what ``pattern`` holds before its ``*``."""
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    return pattern == value


def covers(on: str, realm: str, scope: str | None) -> bool:
    """Whether a grant ``on`` covers ``scope`` of ``realm`` (``scope`` None: the realm
    itself, which only a realm grant covers)."""
    kind, _, target = on.partition(":")
    if kind == "realm":
        return matches(target, realm)
    if scope is None:
        return False
    if kind == "identity":
        return scope.startswith(AGENT_PREFIX) and matches(target, scope)
    return matches(target, scope)


def subject_holds(subject: str, principal: str, roles: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether ``principal`` is ``subject``: itself, a pattern it matches, or a role
    that names it (or a pattern it matches)."""
    if subject.startswith("role:"):
        return any(matches(p, principal) for p in roles.get(subject[len("role:") :], ()))
    return matches(subject, principal)


def read_action(scope: str) -> str:
    """The action reading a memory of ``scope`` needs."""
    if scope.startswith("team:"):
        return "team.memory.read"
    if scope == OPERATOR_SCOPE:
        return "operator.memory.read"
    return "memory.read"


# -- parsing: the same rules for config.toml and the grant verb --------------------------------


def _refused(what: str, value: object, remedy: str) -> InvalidValue:
    return InvalidValue(f"{value!r} is not {what}", remedy=remedy, field=what.split()[-1])


def check_principal_pattern(value: object, what: str = "a grant's subject") -> str:
    """A principal, or a pattern of principals ending in ``*``."""
    if isinstance(value, str) and re.fullmatch(PRINCIPAL_PATTERN, value):
        return value
    raise _refused(
        what,
        value,
        "name a principal (agent:NAME, app:NAME, operator:NAME, steward, anonymous) "
        "or a pattern such as agent:*",
    )


def check_subject(value: object) -> str:
    if isinstance(value, str) and re.fullmatch(rf"^{_ROLE}$", value):
        return value
    return check_principal_pattern(value, "a grant's subject")


def check_action(value: object) -> str:
    if isinstance(value, str) and value in ACTIONS:
        return value
    raise _refused("a grant's action", value, f"name one of {', '.join(ACTIONS)}")


def check_effect(value: object) -> str:
    if isinstance(value, str) and value in EFFECTS:
        return value
    raise _refused("a grant's effect", value, "say allow or deny")


def check_on(value: object, action: str) -> str:
    """``value`` as a grant's ``on`` for ``action`` (``identity:`` only names agents)."""
    remedy = (
        "write realm:NAME, scope:SCOPE (global, project:NAME, team:NAME, agent:NAME, "
        "or a pattern such as scope:team:*) or identity:agent:NAME"
    )
    if not isinstance(value, str) or not re.fullmatch(ON_PATTERN, value):
        raise _refused("a grant's on", value, remedy)
    kind = value.partition(":")[0]
    if action in REALM_ONLY and kind != "realm":
        raise InvalidValue(
            f"{action} is granted on a realm, not on {value!r}",
            remedy="write realm:NAME (or realm:*)",
            field="on",
        )
    return value


def parse(subject: object, action: object, on: object, effect: object = "allow") -> Grant:
    """A grant from its four parts, each checked (``invalid_value`` naming the part)."""
    checked = check_action(action)
    return Grant(check_subject(subject), checked, check_on(on, checked), check_effect(effect))
