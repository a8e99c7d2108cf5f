"""Access grants in the gate: the action each verb needs, and whether a call holds it.

With ``[access] control = false`` (the default) nothing here runs and a call is judged by
the policy table's kinds alone. With ``control = true`` a call needs its policy row
**and** a grant (``retain.grants``): deny by default, a deny beats an allow, and an
anonymous caller is held to the same grants as anyone. The grants are checked in the
gate and nowhere else, at two levels:

* the **verb**: ``policy.gated`` binds the call (``bind``: the grants of ``config.toml``
  and the realm's stored ones that name the actor, read once, in one read) and asks
  ``require``: the actor must hold each action ``NEEDS`` names for the verb somewhere
  in its realm (a verb that reads holds it with any read action), and no deny may cover
  the whole realm;
* the **row**: the call is current while the verb runs (``calling``, ``current``), so
  the view (``retain.service.view``) keeps only the rows the actor may read (an
  ``agent:N`` row needs ``memory.read`` on that identity, a ``team:`` row
  ``team.memory.read``, the shared tiers ``memory.read`` on the scope or the realm),
  admission (the one row gate of writes) refuses a row written where the actor may
  not write or delete (``admits``), and a verb deciding one row asks ``decides``.

``realm.admin`` is granted in ``config.toml`` alone, so that no stored grant or revoke
can lock a store out; ``AccessSettings`` refuses ``control = true`` when no grant of the
file allows it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from retain import grants
from retain.errors import AccessDenied, GrantReadOnly, InvalidValue, NotFound
from retain.grants import READS, REALM_ONLY, Grant, covers, matches, read_action, subject_holds
from retain.model import AGENT_PREFIX, GLOBAL_SCOPE, agent_scope, project_scope, team_scope
from retain.service.actor import Actor
from retain.storage.base import Reads

if TYPE_CHECKING:
    from retain.service import MemoryService
    from retain.service.store import Store
    from retain.service.work import Work

_READ = ("memory.read",)
_WRITE = ("memory.write",)
_DELETE = ("memory.delete",)
_ADMIN = ("realm.admin",)
_REVIEW = (grants.REVIEW,)

# The actions each verb needs, one table for every row of the policy table (and the
# verbs issue 16 adds, so that each lands judged). A verb with no row here is refused
# whenever access control is on (``require``).
NEEDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        # reading, through the reader's view
        **dict.fromkeys(
            ("search", "read", "get", "list_memories", "context", "status", "export",
             "recall", "list_proposals", "list_injections", "fact_read", "fact_history",
             "list_projects", "list_agents", "list_teams", "events", "session_status",
             "list_tickets", "get_ticket", "certificate", "query", "stores", "gate",
             "chain_head", "graph", "hygiene", "records", "record", "overview", "timeline"),
            _READ,
        ),
        # writing and changing memories, facts and proposals
        **dict.fromkeys(
            ("write", "write_many", "ingest_conversation", "edit", "import_", "import_from",
             "remember",
             "update", "propose", "fact_write", "fact_retract", "index", "link", "decide",
             "dedup"),
            _WRITE,
        ),
        "delete": _DELETE,
        "forget": _DELETE,
        # custody: who may erase may hold and sweep (a hold keeps an erasure from it)
        **dict.fromkeys(("hold", "release_hold", "sweep"), _DELETE),
        "held": _READ,
        # the realm's registry, its grants and upkeep
        **dict.fromkeys(
            ("add_project", "rename_project", "remove_project", "add_agent", "add_team",
             "join_team", "verify", "reindex", "index_vectors", "migrate_to", "grant",
             "revoke", "list_grants", "compact", "export_log", "mirror_status",
             "mirror_retry"),
            _ADMIN,
        ),
        # review, trust, sessions and tickets (issue 16's other verbs)
        "review": _REVIEW,
        "fact_confirm": _REVIEW,
        "list_quarantine": _REVIEW,
        "retier": ("memory.retier",),
        "observe": ("session.observe",),
        "reset_session": ("session.observe",),
        "approve": ("ticket.decide",),
        "reject": ("ticket.decide",),
        "expire_tickets": ("ticket.decide",),
    }
)  # fmt: skip
ROW_WRITES = ("memory.write", "memory.delete")  # the actions a written row is judged by

# What a verb that decides one row (or one ticket) needs on that row's scope besides the
# actions it needs in the realm: a review's verdict asks the write it makes.
ON_THE_ROW: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "review": _REVIEW,
        "fact_confirm": _REVIEW,
        "retier": ("memory.retier",),
        "approve": ("ticket.decide",),
        "reject": ("ticket.decide",),
    }
)
VERDICT_NEEDS: Mapping[str, str] = MappingProxyType(
    {"release": "memory.write", "tombstone": "memory.delete"}
)


@dataclass(frozen=True, slots=True)
class Call:
    """One call as the grants judge it: the actor, the verb, the grants that name the
    actor in its realm (``config.toml``'s and the stored ones), and, read by the call's
    first view (``prime``), the realm's scopes (global, the projects', teams' and
    agents'), which a listing over every scope cuts to the readable ones."""

    actor: Actor
    verb: str
    grants: tuple[Grant, ...]
    _known: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def known(self) -> tuple[str, ...]:
        assert self._known, "the view that lists primed its call (MemoryService._reader)"
        return self._known[0]

    def prime(self, tx: Reads) -> None:
        """Read the realm's scopes in ``tx``, once a call (a listing over every scope
        cuts them to the readable ones)."""
        if self._known:
            return
        realm = self.actor.realm
        self._known.append(
            (
                GLOBAL_SCOPE,
                *(project_scope(p.name) for p in tx.list_projects(realm)),
                *(team_scope(t.name) for t in tx.list_teams(realm)),
                *(agent_scope(a.name) for a in tx.list_agents(realm)),
            )
        )

    def allows(self, action: str, scope: str | None) -> bool:
        """Whether a grant allows ``action`` on ``scope`` (None: the realm itself) and
        no deny covers it."""
        realm = self.actor.realm
        hits = [g for g in self.grants if g.action == action and covers(g.on, realm, scope)]
        return any(g.effect == "allow" for g in hits) and not any(g.effect == "deny" for g in hits)

    def holds(self, action: str) -> bool:
        """Whether the actor may run a verb needing ``action``: an allow of it somewhere
        in the realm (of any read action, for ``memory.read``), and no deny of the whole
        realm. A realm-only action needs its allow on the realm."""
        if action in REALM_ONLY:
            return self.allows(action, None)
        realm = self.actor.realm
        wanted = READS if action == "memory.read" else (action,)
        for one in wanted:
            mine = [g for g in self.grants if g.action == one]
            if any(g.effect == "deny" and covers(g.on, realm, None) for g in mine):
                continue
            if any(g.effect == "allow" and _in_realm(g.on, realm) for g in mine):
                return True
        return False

    def reads(self, scope: str) -> bool:
        """Whether the actor may read the memories of ``scope``."""
        return self.allows(read_action(scope), scope)

    def readable(self, scopes: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(s for s in scopes if self.reads(s))


def _in_realm(on: str, realm: str) -> bool:
    kind, _, target = on.partition(":")
    return kind != "realm" or matches(target, realm)


_CURRENT: ContextVar[Call | None] = ContextVar("retain_access_call", default=None)


def current() -> Call | None:
    """The call the gate bound for the verb running now (None: access control is off,
    or nothing runs as a verb)."""
    return _CURRENT.get()


@contextlib.contextmanager
def calling(call: Call) -> Iterator[None]:
    """Make ``call`` current while its verb runs."""
    token = _CURRENT.set(call)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def bind(store: Store, actor: Actor, verb: str) -> Call | None:
    """The call of ``verb`` by ``actor``, its grants read once (None while access
    control is off: nothing is read)."""
    settings = store.settings.access
    if not settings.control:
        return None
    realm = actor.realm

    stored = store.backend.read(lambda tx: tx.list_grants(realm))
    mine = tuple(
        g
        for g in (*settings.grants, *stored)
        if g.applies_in(realm) and subject_holds(g.subject, actor.principal, settings.roles)
    )
    return Call(actor, verb, mine)


def require(call: Call) -> None:
    """Refuse the call (``access_denied``, ``fix: grant``) unless its actor holds every
    action its verb needs; a verb with no row in ``NEEDS`` is refused."""
    for action in NEEDS.get(call.verb, ("realm.admin",)):
        if not call.holds(action):
            raise denied(call, action, f"realm:{call.actor.realm}")


def admits(call: Call | None, scope: str, *, removing: bool = False) -> None:
    """Refuse a row of ``scope`` the running verb writes (``removing``: deletes) where
    its actor may not: a verb needing ``memory.write`` or ``memory.delete`` needs it on
    the row's scope. Rows other verbs write (the registry's) pass."""
    if call is None:
        return
    needed = [a for a in NEEDS.get(call.verb, ()) if a in ROW_WRITES]
    if removing and needed:
        needed = ["memory.delete"]
    _require_on(call, needed, scope)


def decides(scope: str, *, verdict: str | None = None) -> None:
    """Refuse the running verb's decision on a row (or a ticket landing) in ``scope``
    unless its actor holds there what the verb needs (``ON_THE_ROW``) and, for a review,
    what its ``verdict`` writes (``VERDICT_NEEDS``): an allow somewhere in the realm lets
    the verb run, and this judges the one row it decides."""
    call = current()
    if call is None:
        return
    needed = ON_THE_ROW.get(call.verb, ())
    if verdict is not None:
        needed = (*needed, VERDICT_NEEDS[verdict])
    _require_on(call, needed, scope)


def _require_on(call: Call, actions: Iterable[str], scope: str) -> None:
    """Refuse the call unless its actor holds each of ``actions`` on ``scope``."""
    for action in actions:
        if not call.allows(action, scope):
            raise denied(call, action, f"scope:{scope}")


def denied(call: Call, action: str, on: str) -> AccessDenied:
    verb = call.verb.rstrip("_")
    principal = call.actor.principal
    on = _target_of(on)
    if action in REALM_ONLY:  # no verb grants it: the remedy is the file's
        remedy = (
            f"act as a principal config.toml grants {action}, or add an "
            f"[[access.grant]] of {action} on {on} for {principal} to config.toml"
        )
        fix = {}
    else:
        remedy, fix = f"ask an operator to grant {principal} {action} on {on}", {"fix": "grant"}
    return AccessDenied(
        f"{principal} may not {verb}: it is not granted {action} on {on}",
        remedy=remedy,
        principal=principal,
        verb=verb,
        action=action,
        on=on,
        **fix,
    )


def _target_of(on: str) -> str:
    """A refusal's target as a grant names it: an agent's scope is its identity."""
    scope = on.removeprefix("scope:")
    if on.startswith("scope:") and scope.startswith(AGENT_PREFIX):
        return f"identity:{scope}"
    return on


# -- the verbs: grant, revoke, list_grants ---------------------------------------------------


def grant(
    svc: MemoryService, subject: str, action: str, on: str, *, effect: str = "allow"
) -> Grant:
    """Store a grant in the session's realm (its ``grant`` event in the same
    transaction); a grant stored already is returned as it is, and nothing is written."""
    made = _stored(svc, subject, action, on, effect)

    def run(work: Work) -> Grant:
        for kept in work.reads.list_grants(svc.realm):
            if kept.key == made.key:
                return kept
        stored = replace(
            made,
            id=svc.store.ids.new(work.now),
            created_at=work.now,
            created_by=svc.principal,
        )
        work.add_grant(stored)
        event = work.event("grant", stored.to_dict(), reason=f"{stored.effect} {stored.action}")
        return replace(stored, receipt=work.receipt(event))

    return svc._write(run)


def revoke(
    svc: MemoryService, subject: str, action: str, on: str, *, effect: str = "allow"
) -> Grant:
    """Remove the stored grant of these four parts (its ``revoke`` event in the same
    transaction): the grant revoked. A grant of ``config.toml`` is the file's
    (``grant_read_only``); one that does not exist is ``not_found``."""
    asked = grants.parse(subject, action, on, effect)

    def run(work: Work) -> Grant:
        for kept in work.reads.list_grants(svc.realm):
            if kept.key == asked.key:
                work.remove_grant(kept)
                event = work.event("revoke", kept.to_dict(), reason=f"{kept.effect} {kept.action}")
                return replace(kept, receipt=work.receipt(event))
        for filed in svc.settings.access.grants:
            if filed.key == asked.key:
                raise GrantReadOnly(
                    f"the grant of {asked.action} on {asked.on} to {asked.subject} is "
                    f"config.toml's ({filed.id}), so no verb revokes it",
                    remedy="remove it from config.toml (or add a deny, which beats it)",
                    id=filed.id,
                    **_parts(asked),
                )
        raise NotFound(
            f"no stored grant of {asked.action} on {asked.on} to {asked.subject} ({asked.effect})",
            remedy="list the grants to see the ones stored",
            **_parts(asked),
        )

    return svc._write(run)


def list_grants(svc: MemoryService) -> list[Grant]:
    """Every grant that counts in the session's realm: ``config.toml``'s first (in the
    file's order), then the stored ones, oldest first; each says where it comes from."""
    filed = [g for g in svc.settings.access.grants if g.applies_in(svc.realm)]
    return [*filed, *svc.backend.read(lambda tx: tx.list_grants(svc.realm))]


def _parts(grant: Grant) -> dict[str, str]:
    return {"subject": grant.subject, "action": grant.action, "on": grant.on,
            "effect": grant.effect}  # fmt: skip


def _stored(svc: MemoryService, subject: str, action: str, on: str, effect: str) -> Grant:
    """A grant the verb may store in the session's realm, or ``invalid_value``."""
    made = grants.parse(subject, action, on, effect)
    if made.action in REALM_ONLY:
        raise InvalidValue(
            f"{made.action} is granted in config.toml alone, so that no stored grant or "
            "revoke can lock the store out",
            remedy="add it as an [[access.grant]] of config.toml",
            field="action",
        )
    kind, _, target = made.on.partition(":")
    if kind == "realm" and target not in (svc.realm, "*"):
        raise InvalidValue(
            f"a grant stored in realm {svc.realm!r} covers that realm alone, not {made.on!r}",
            remedy=f"write realm:{svc.realm}, or grant it from a session of the other realm",
            field="on",
        )
    return replace(made, source="stored", realm=svc.realm)
