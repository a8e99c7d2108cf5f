"""The policy table: which kinds of principal may run each verb, checked once a call.

Every public verb of the service has a row here, and the gate (``check``) reads it
before the verb does any I/O: a principal of another kind is refused ``access_denied``
with the row's reason, whatever door it came through. What a permitted principal then
sees and changes inside the verb is the view's to decide (``retain.service.view``).

A row's kinds are the principals that may run the verb; a writing verb run by an
anonymous caller needs the installation to allow it too (``[access]
anonymous_writes``). Realm administration (projects, agents, teams, membership) is for
operators and applications; an agent keeps its own memory through its own verbs and
joins a team only when an operator or an application adds it.

Under ``[access] control = true`` a permitted kind is not enough: the call needs a
grant as well (``retain.service.access``), checked by the same gate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from retain import fields
from retain.config import Settings
from retain.errors import AccessDenied
from retain.service import access
from retain.service.actor import Actor, Kind
from retain.service.view import REVIEWERS  # who decides quarantined records

AGENT = frozenset({Kind.AGENT})
ADMINS = frozenset({Kind.OPERATOR, Kind.APP})
AUTHORS = frozenset({Kind.OPERATOR, Kind.APP, Kind.ANONYMOUS})  # the shared tiers' writers
OPERATOR = frozenset({Kind.OPERATOR})
EVERYONE = frozenset(Kind)
NOT_AGENTS = EVERYONE - AGENT
KEEPERS = frozenset({Kind.OPERATOR, Kind.APP, Kind.STEWARD})
CURATORS = REVIEWERS  # who decides tickets and raises trust: who reviews


@dataclass(frozen=True, slots=True)
class Rule:
    """Who may run a verb, whether it changes the store, and why others may not."""

    kinds: frozenset[Kind]
    writes: bool
    why: str  # completes "<principal> may not <verb>: ..."
    offered: bool = False  # a tool a model is offered (MCP lists them by this table)


def _read(kinds: frozenset[Kind], why: str = "", *, offered: bool = False) -> Rule:
    return Rule(kinds, False, why, offered)


def _write(kinds: frozenset[Kind], why: str, *, offered: bool = False) -> Rule:
    return Rule(kinds, True, why, offered)


_TIERS = "the shared tiers are written by operators and applications; an agent keeps its own memory and proposes additions"  # noqa: E501
_CHANGES = "the shared tiers are changed by operators and applications; an anonymous caller's writes wait for review, so it only adds"  # noqa: E501
_OWN = "it is an agent's verb over its own memory"
_FORGET = "an agent erases its own memories; operators and applications erase any they may delete"  # noqa: E501
_PROPOSE = "an agent proposes from its own memory, and the steward stages promotions of quarantined records; operators write the shared tiers"  # noqa: E501
_ADMIN = "realm administration is for operators and applications"
_LOG = "the event log holds every scope's changes; an agent recalls what it sees instead"
_UPKEEP = "it rebuilds or moves the whole store, which is an operator's work"
_FACTS = "facts are written by agents, applications and operators"
_REVIEW = "raising trust is a review, for operators and the steward"
_OBSERVE = (
    "a session's host reports what it ingested: the agent itself, an operator or an application"  # noqa: E501
)
_RESET = (
    "an agent must not clear its own session's taint; its host's operator or application resets it"  # noqa: E501
)
_STATUS = "a session's taint is for its host and reviewers to read, not the agent's"
_QUEUE = "the ticket queue is the curators'; an agent lists the proposals it made"
_DECIDE = "tickets are decided by operators and the steward, never by an agent"
_SWEEP = "expiring tickets is upkeep for operators, applications and the steward"
_QUARANTINE = "quarantined records are reviewed by an operator or the steward"
_GRANTS = "grants are kept by operators"
_WHO = "who may do what is the realm's administration, not an agent's"
_LEDGER = "the assertion ledger is written by operators, applications and the steward (which bridges conflict signals); an agent asks the gate"  # noqa: E501
_HOLDS = "legal holds are placed and released by operators and applications"
_HELD = "legal holds are the realm's custody, not an agent's to read"
_RETAIN = "retention sweeps are upkeep for operators and applications"
_MIRRORS = "write-through mirrors are the store's custody, kept by operators and applications"
_CURATE = "only a curator (an operator or the steward) relates memories explicitly: supersedes and contradicts are decisions"  # noqa: E501
_DEDUP = (
    "a dedup pass is upkeep for operators, applications and the steward; it only proposes pairs"  # noqa: E501
)
_HYGIENE = "the hygiene listing is the curators' worklist"

POLICY: Mapping[str, Rule] = MappingProxyType(
    {
        # the shared tiers
        "write": _write(AUTHORS, _TIERS, offered=True),
        "write_many": _write(AUTHORS, _TIERS),
        "ingest_conversation": _write(AUTHORS, _TIERS, offered=True),
        "edit": _write(ADMINS, _CHANGES, offered=True),
        "delete": _write(ADMINS, _CHANGES, offered=True),
        "import_": _write(ADMINS, _CHANGES),
        "import_from": _write(ADMINS, _CHANGES),
        "mirror_status": _read(ADMINS, _MIRRORS),
        "mirror_retry": _write(ADMINS, _MIRRORS),
        # reading, through the reader's view
        "search": _read(EVERYONE, offered=True),
        "read": _read(EVERYONE, offered=True),
        "get": _read(EVERYONE),
        "list_memories": _read(EVERYONE),
        "context": _read(EVERYONE),
        "export": _read(NOT_AGENTS, "an export holds the shared tiers; an agent recalls instead"),
        "export_log": _read(OPERATOR, "the event log holds every realm's changes"),
        "status": _read(EVERYONE),
        # an agent's own memory
        "remember": _write(AGENT, _OWN, offered=True),
        "update": _write(AGENT, _OWN, offered=True),
        "forget": _write(AGENT | ADMINS, _FORGET, offered=True),
        "propose": _write(AGENT | {Kind.STEWARD}, _PROPOSE, offered=True),
        "recall": _read(AGENT, _OWN, offered=True),
        "list_proposals": _read(EVERYONE),
        # tickets: the curator's queue and decisions (never a model acting as an agent)
        "list_tickets": _read(CURATORS, _QUEUE, offered=True),
        "get_ticket": _read(CURATORS, _QUEUE, offered=True),
        "approve": _write(CURATORS, _DECIDE, offered=True),
        "reject": _write(CURATORS, _DECIDE, offered=True),
        "expire_tickets": _write(KEEPERS, _SWEEP, offered=True),
        "list_injections": _read(EVERYONE),
        # agent sessions and their taint: the host's verbs, never offered to a model
        "observe": _write(AGENT | ADMINS, _OBSERVE),
        "reset_session": _write(ADMINS, _RESET),
        "session_status": _read(NOT_AGENTS, _STATUS),
        # facts on two time axes
        "fact_write": _write(AGENT | AUTHORS, _FACTS, offered=True),
        "fact_retract": _write(AGENT | ADMINS, _FACTS, offered=True),
        "fact_read": _read(EVERYONE, offered=True),
        "fact_history": _read(EVERYONE, offered=True),
        "fact_confirm": _write(REVIEWERS, _QUARANTINE, offered=True),
        # trust, reviewed
        "retier": _write(REVIEWERS, _REVIEW),
        # the realm's registry
        "add_project": _write(ADMINS, _ADMIN),
        "rename_project": _write(ADMINS, _ADMIN),
        "remove_project": _write(ADMINS, _ADMIN),
        "add_agent": _write(ADMINS, _ADMIN),
        "add_team": _write(ADMINS, _ADMIN),
        "join_team": _write(ADMINS, _ADMIN),
        "list_projects": _read(EVERYONE),
        "list_agents": _read(EVERYONE),
        "list_teams": _read(EVERYONE),
        # quarantine review (offered to a reviewer's model session, never an agent's)
        "list_quarantine": _read(REVIEWERS, _QUARANTINE, offered=True),
        "review": _write(REVIEWERS, _QUARANTINE, offered=True),
        # audit and upkeep
        "events": _read(NOT_AGENTS, _LOG),
        "certificate": _read(EVERYONE),
        "compact": _write(ADMINS, _UPKEEP),
        "verify": _read(KEEPERS, "verifying reads every scope's rows"),
        "chain_head": _read(EVERYONE),
        "reindex": _write(OPERATOR, _UPKEEP),
        "index_vectors": _read(OPERATOR, _UPKEEP),
        "migrate_to": _write(OPERATOR, _UPKEEP),
        # the assertion ledger and its conflict signals; the gate reads them
        "index": _write(KEEPERS, _LEDGER, offered=True),
        "query": _read(EVERYONE, offered=True),
        "stores": _read(EVERYONE, offered=True),
        "gate": _read(EVERYONE, offered=True),
        # access grants (checked only under [access] control = true)
        "grant": _write(OPERATOR, _GRANTS, offered=True),
        "revoke": _write(OPERATOR, _GRANTS, offered=True),
        "list_grants": _read(NOT_AGENTS, _WHO, offered=True),
        # legal holds and retention (a model acting as an agent is never offered them)
        "hold": _write(ADMINS, _HOLDS, offered=True),
        "release_hold": _write(ADMINS, _HOLDS, offered=True),
        "held": _read(NOT_AGENTS, _HELD, offered=True),
        "sweep": _write(ADMINS, _RETAIN, offered=True),
        # the relation graph: reading it, a curator's links and decisions, the passes
        "graph": _read(EVERYONE, offered=True),
        "link": _write(CURATORS, _CURATE, offered=True),
        "decide": _write(CURATORS, _CURATE, offered=True),
        "dedup": _write(KEEPERS, _DEDUP, offered=True),
        "hygiene": _read(CURATORS, _HYGIENE, offered=True),
        # the console's panels: records and a record through the view, the overview
        # and the timeline over the log
        "records": _read(EVERYONE),
        "record": _read(EVERYONE),
        "overview": _read(NOT_AGENTS, _LOG),
        "timeline": _read(NOT_AGENTS, _LOG),
    }
)

# Public methods that are not verbs over the store: they read no row a policy guards.
NOT_VERBS = frozenset(
    {"close", "acting_as", "offered_verbs", "offer", "check_principal", "caption"}
)


def allows(rule: Rule, actor: Actor, settings: Settings) -> bool:
    if actor.kind not in rule.kinds:
        return False
    return not (rule.writes and actor.kind is Kind.ANONYMOUS and not settings.anonymous_writes)


R = TypeVar("R")


def check(actor: Actor, verb: str, settings: Settings) -> Rule:
    """The verb's row, once ``actor`` may run it; else ``access_denied``, before any I/O."""
    rule = POLICY[verb]
    if allows(rule, actor, settings):
        return rule
    may = sorted(kind.value for kind in rule.kinds)
    if actor.kind in rule.kinds:  # an anonymous caller, writing where writes are closed
        why = "anonymous callers read only in this installation"
        remedy = "act as an authenticated principal, or allow anonymous writes under [access]"
        may.remove(Kind.ANONYMOUS.value)
    else:
        why = rule.why
        remedy = f"act as {' or '.join(f'an {k}' if k[0] in 'aeiou' else f'a {k}' for k in may)}"
    raise AccessDenied(
        f"{actor.principal} may not {verb.rstrip('_')}: {why}",
        remedy=remedy,
        principal=actor.principal,
        verb=verb.rstrip("_"),
        allowed=may,  # the kinds that may: each door says how to act as one
        fix="act_as" if may else None,
    )


def offered(actor: Actor, settings: Settings) -> tuple[str, ...]:
    """The verbs a model acting as ``actor`` is offered (MCP's tools), in table order."""
    return tuple(
        verb for verb, rule in POLICY.items() if rule.offered and allows(rule, actor, settings)
    )


C = TypeVar("C", bound=type)


def gated(cls: C) -> C:
    """Pass every public verb of ``cls`` (a session: it has ``actor``, ``settings`` and
    ``check_principal``) through ``check`` before it runs, then the session's admission
    of its principal (an agent must be registered). A public method with no row in
    ``POLICY`` and not in ``NOT_VERBS`` is a class that cannot be built: no verb skips
    the table."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or not fields.is_method(member) or name in NOT_VERBS:
            continue
        if name not in POLICY:
            raise TypeError(f"{cls.__name__}.{name} is a public verb with no row in POLICY")
        fields.wrap_method(cls, name, member, functools.partial(_guarded, verb=name))
    return cls


def _guarded(method: Callable[..., R], verb: str) -> Callable[..., R]:
    """``method`` behind the gate: the policy row, the principal's admission, then,
    under ``[access] control = true``, the grants (``retain.service.access``), read once
    and current while the verb runs so that its view and its writes are judged by them."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> R:
        check(self.actor, verb, self.settings)
        self.check_principal()
        call = access.bind(self.store, self.actor, verb)  # None (no I/O) with control off
        if call is None:
            return method(self, *args, **kwargs)
        access.require(call)
        with access.calling(call):
            return method(self, *args, **kwargs)

    return guarded
