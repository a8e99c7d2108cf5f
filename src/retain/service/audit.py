"""The realm's audit trail as a reader may see it: the event log and the injection
ledger (what was rendered into whose context).

Plain functions over a transaction's reading half and the reader's view; who may
read them at all is the policy table's (the event log is not an agent's).
"""

from __future__ import annotations

from retain.model import AGENT_PREFIX, Event, Injection
from retain.service.view import View
from retain.storage.base import Reads


def events(tx: Reads, view: View, *, after: int, limit: int, memory_id: str | None) -> list[Event]:
    """A page of the realm's log as ``view`` shows it: an event about a memory outside
    the view keeps its place (the chain stays whole) without its payload; a memory no
    longer stored (deleted) has no scope, so only an operator sees its events whole."""
    listed = tx.list_events(view.actor.realm, after, limit, memory_id)
    about = {e.memory_id for e in listed if e.memory_id is not None}
    scopes = {m.id: m.scope for m in tx.get_many(sorted(about))}
    return [
        view.event(e, None if e.memory_id is None else scopes.get(e.memory_id, "")) for e in listed
    ]


def injections(
    tx: Reads,
    view: View,
    *,
    memory_id: str | None,
    session: str | None,
    identity: str | None,
    limit: int,
) -> list[Injection]:
    """Injection ledger rows, newest first, of ``identity`` as the view resolved it
    (``View.injections_of``: an operator's any identity, anyone else's its own). Under
    access control a row is kept only when the reader may read both its memory and the
    agent it went into (``limit`` counts the rows before that cut)."""
    listed = tx.list_injections(
        view.actor.realm, memory_id=memory_id, identity=identity, session=session, limit=limit
    )
    grants = view.grants
    if grants is None:
        return listed
    about = sorted({i.memory_id for i in listed})
    seen = {m.id for m in tx.get_many(about) if view.sees(m.realm, m.scope)}
    return [
        i
        for i in listed
        if i.memory_id in seen
        and (not i.identity.startswith(AGENT_PREFIX) or grants.reads(i.identity))
    ]
