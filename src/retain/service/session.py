"""Agent sessions and their taint: what a host reports a session ingested, the
fresh-context boundaries that clear it, and the taint an agent's write is judged by.

A session is ``(realm, identity, key)``, durable in the ``sessions`` table. Its key is
the host's (``Actor.session``, set by the door, or named by the host's operator or app),
never a model's argument: a tainted agent would pick a clean one, so none of these verbs
is offered to a model.

* ``observe`` classifies a tool result (``retain.governance.content_trust``). Untrusted
  content taints the session, and the taint is sticky: it appends one ``taint`` event
  (``from`` clean ``to`` tainted, ``cause``: tool, server, step); tainting a tainted
  session again appends nothing. An agent observes for itself only (an observation can
  only taint); operators and applications for any agent they name.
* ``reset_session`` is a fresh-context boundary: ``reset``, ``respawn``, ``clear`` or
  ``new`` clears the taint (with its ``taint`` event, ``cause``: the boundary);
  ``compact`` is accepted and changes nothing, since a compacted context still holds
  what it read. Only operators and applications: an agent must not clear its own taint.
* ``session_status`` shows a session (not to agents).
* ``judged`` is the session an agent's write is judged by (admission): the write's own
  key's, or, with no key, the identity's most recently observed one. Ties at that
  instant fail closed: any tainted one taints the write.

A session's bookkeeping (``started_at``, ``updated_at``: which session was observed
last) is state, as a context's render state is, and appends no event; every change of
its taint does. An observation commits in its own transaction before the write it
governs returns to the host: a synchronous host hook orders them. That is an ordering
guarantee, not immunity from prompt injection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retain import fields
from retain.errors import AccessDenied, InvalidValue, SessionNotFound
from retain.governance import content_trust
from retain.model import AGENT_PREFIX, AgentSession
from retain.service.actor import Kind, kind_of
from retain.storage.base import Reads

if TYPE_CHECKING:  # the verbs' results: imported by them (every command loads this module)
    from retain.results import Observation, SessionReset
    from retain.service import MemoryService
    from retain.service.work import Work

CLEAN, TAINTED = "clean", "tainted"
COMPACT = "compact"
CLEARING = ("reset", "respawn", "clear", "new")  # the boundaries that start a fresh context
BOUNDARIES = (*CLEARING, COMPACT)
TAINT_EVENT = "taint"


def observe(
    svc: MemoryService,
    tool: str,
    *,
    identity: str | None = None,
    session: str | None = None,
    server: str | None = None,
    provenance: str | None = None,
    native: bool = False,
) -> Observation:
    """Record that ``identity``'s session ``session`` ingested the result of ``tool``;
    untrusted content taints it until a fresh-context boundary. ``provenance`` is the
    tool's kind as the host's catalog gives it (``"mcp"``, with ``server`` the MCP
    server's id; a ``server`` alone means ``"mcp"``), ``native`` marks provider-native
    server-tool content. An agent observes its own sessions (its actor's by default)."""
    from retain.results import Observation

    name = fields.tool_name(tool)
    if server is not None:
        server = fields.tool_name(server, "server")
        if provenance is None:
            provenance = content_trust.MCP
    if provenance is not None:
        provenance = fields.tool_name(provenance, "provenance")
        if provenance == content_trust.MCP and server is None:
            raise InvalidValue(
                "MCP provenance names the server the tool came from",
                remedy="give the MCP server's id with the provenance",
                field="server",
            )
        if provenance != content_trust.MCP and server is not None:
            raise InvalidValue(
                f"a server is an MCP server's id, and the provenance is {provenance!r}",
                remedy="leave the server out, or give the provenance mcp",
                field="server",
            )
    who, key = _target(svc, identity, session)
    verdict = content_trust.classify(
        name, svc.settings.content_trust, provenance=provenance, server=server, native=native
    )

    def run(work: Work) -> Observation:
        _require(svc, work.reads, who)
        was = work.reads.get_session(svc.realm, who, key)
        changed = not verdict.trusted and (was is None or not was.tainted)
        cause = {"tool": name, "server": verdict.server, "step": verdict.step.value}
        if was is None:
            now = AgentSession(who, key, False, None, None, work.now, work.now)
        else:
            now = AgentSession(
                who, key, was.tainted, was.tainted_at, was.cause, was.started_at, work.now
            )
        if changed:
            now = AgentSession(who, key, True, work.now, cause, now.started_at, work.now)
            _event(work, now, CLEAN, TAINTED, cause, reason=f"observed {name}")
        work.put_session(now)
        return Observation(
            identity=who,
            session=key,
            tool=name,
            server=verdict.server,
            trusted=verdict.trusted,
            step=verdict.step.value,
            tainted=now.tainted,
            changed=changed,
            receipt=work.last_receipt() if changed else None,  # no event: no receipt
        )

    return svc._write(run)


def reset_session(
    svc: MemoryService, identity: str, session: str, *, boundary: str = "reset"
) -> SessionReset:
    """A fresh-context boundary of ``identity``'s session ``session``: ``reset``,
    ``respawn``, ``clear`` or ``new`` clears its taint (and starts it again); ``compact``
    is accepted and changes nothing."""
    from retain.results import SessionReset

    if boundary not in BOUNDARIES:
        raise InvalidValue(
            f"{boundary!r} is not a boundary of a session",
            remedy=f"name one of {', '.join(BOUNDARIES)}",
            field="boundary",
            allowed=list(BOUNDARIES),
        )
    who, key = _target(svc, identity, session)

    def run(work: Work) -> SessionReset:
        _require(svc, work.reads, who)
        was = work.reads.get_session(svc.realm, who, key)
        tainted = was is not None and was.tainted
        if boundary == COMPACT:  # the context still holds what it read: nothing changes
            return SessionReset(who, key, boundary, cleared=False, tainted=tainted)
        if was is not None and tainted:
            _event(work, was, TAINTED, CLEAN, {"boundary": boundary}, reason=boundary)
        work.put_session(AgentSession(who, key, False, None, None, work.now, work.now))
        return SessionReset(
            who,
            key,
            boundary,
            cleared=tainted,
            tainted=False,
            receipt=work.last_receipt() if tainted else None,  # no event: no receipt
        )

    return svc._write(run)


def session_status(svc: MemoryService, identity: str, session: str) -> AgentSession:
    """The session as it stands: its taint, when and why, and its last boundary and
    observation (``session_not_found`` when nothing was observed of it)."""
    who, key = _target(svc, identity, session)

    def run(tx: Reads) -> AgentSession:
        _require(svc, tx, who)
        found = tx.get_session(svc.realm, who, key)
        if found is None:
            raise SessionNotFound(
                f"no session {key!r} of {who} was observed",
                remedy="check the key and the agent; a session nothing was observed of "
                "is not tainted",
                identity=who,
                session=key,
            )
        return found

    return svc.backend.read(run)


def judged(tx: Reads, realm: str, identity: str, key: str | None) -> AgentSession | None:
    """The session an agent's write in session ``key`` is judged by: that key's, or, with
    no key or a key nothing was reported of, the identity's most recently observed
    session (the first tainted one when several share that instant); None when there is
    none. A key alone opens no clean session (a model that can set its environment could
    name a fresh one): its host reports it first (a ``new`` boundary, or an observation)."""
    if key is not None:
        found = tx.get_session(realm, identity, key)
        if found is not None:
            return found
    latest = tx.latest_sessions(realm, identity)
    return next((s for s in latest if s.tainted), latest[0] if latest else None)


# -- what the verbs share ------------------------------------------------------------------


def _target(svc: MemoryService, identity: str | None, session: str | None) -> tuple[str, str]:
    """The (identity, key) a verb is about: an agent's own (it may name no other
    identity), or the one an operator or application names."""
    if identity is not None:
        fields.text(identity, "identity")
        if kind_of(identity) is not Kind.AGENT:
            raise InvalidValue(
                f"{identity!r} is not an agent: sessions are agents' contexts",
                remedy="name the agent as agent:NAME",
                field="identity",
            )
    own = svc.principal if svc.kind is Kind.AGENT else None
    if own is not None and identity not in (None, own):
        raise AccessDenied(
            f"{own} may observe only its own sessions",
            remedy="leave the identity out, or ask an operator or an application",
            principal=own,
            identity=identity,
        )
    who = identity or own
    if who is None:
        raise InvalidValue(
            "name the agent whose session it is",
            remedy="give the identity as agent:NAME",
            field="identity",
        )
    key = session if session is not None else svc.actor.session if own else None
    if key is None:
        raise InvalidValue(
            "no session key was given",
            remedy="give the key of the session, as the agent's host names it",
            field="session",
        )
    return who, fields.session(key)


def _require(svc: MemoryService, tx: Reads, identity: str) -> None:
    svc._require_agent(tx, identity.removeprefix(AGENT_PREFIX))


def _event(
    work: Work, session: AgentSession, was: str, now: str, cause: dict[str, Any], *, reason: str
) -> None:
    work.event(
        TAINT_EVENT,
        {
            "identity": session.identity,
            "session": session.key,
            "from": was,
            "to": now,
            "cause": cause,
        },
        reason=reason,
    )
