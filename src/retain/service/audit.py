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
    the view (a reviewer-only one included) keeps its place (the chain stays whole)
    without its payload; a memory no longer stored (deleted) has no scope, so only an
    operator sees its events whole."""
    return as_seen(tx, view, tx.list_events(view.actor.realm, after, limit, memory_id))


def as_seen(tx: Reads, view: View, listed: list[Event]) -> list[Event]:
    """``listed`` as ``view`` shows each event (``View.event``)."""
    about = {e.memory_id for e in listed if e.memory_id is not None}
    stored = {m.id: m for m in tx.get_many(sorted(about))}
    return [view.event(e, stored.get(e.memory_id or "")) for e in listed]


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
    (``View.injections_of``: an operator's any identity, anyone else's its own), less
    those of a reviewer-only memory the view does not see (none is ever injected: the
    ledger is held to it all the same). Under access control a row is kept only when the
    reader may read both its memory and the agent it went into (``limit`` counts the rows
    before that cut)."""
    listed = tx.list_injections(
        view.actor.realm, memory_id=memory_id, identity=identity, session=session, limit=limit
    )
    grants = view.grants
    if not listed or (grants is None and view.reviews):
        return listed
    stored = {m.id: m for m in tx.get_many(sorted({i.memory_id for i in listed}))}

    def shown(row: Injection) -> bool:
        memory = stored.get(row.memory_id)
        if grants is None:
            return memory is None or not view.hides(memory)
        agent = not row.identity.startswith(AGENT_PREFIX) or grants.reads(row.identity)
        return memory is not None and view.sees(memory) and agent

    return [i for i in listed if shown(i)]
