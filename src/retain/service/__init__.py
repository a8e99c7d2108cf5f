"""The session: one actor over one store, and every verb it may run.

``MemoryService`` is the door every caller goes through (Python, CLI, REST, MCP). Its
verbs are the capability modules' functions, listed in the class body below, each over
the session (``svc``): a write runs ``fn(work)`` in one backend transaction through
``_write`` (the unit of work, ``retain.service.work``), a read asks the actor's view
(``retain.service.view``). Every public verb passes the gate first: its arguments'
types (``fields.typed``), then the policy table's row for the actor's kind
(``policy.gated``), both before any I/O, then the admission of an agent principal
(``check_principal``: it must be registered). The capability modules are the session's
own: they reach the clock, the unit of work and the view through its underscored
helpers (``_now``, ``_read_now``, ``_write``, ``_reader``, ``_agent``,
``_require_project``, ``_require_team``), which no door calls; a door calls the
session's verbs, never a capability module's function (``tests/test_structure.py``).

Tiers and the ``project`` argument of the verbs that find a memory by name:

* ``None`` — every tier; a name held by several projects is refused until a
  project is named;
* ``""`` — the global tier alone;
* ``"webdev"`` — what a session on project webdev sees: its tier and global.

``list`` is the exception, as an operator listing is: a project name there
picks that one tier.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from retain import fields
from retain.chrono import TICK, Clock
from retain.config import Settings
from retain.errors import MemoryDisabled, RetainError
from retain.model import DEFAULT_REALM, Agent, Event, Injection, Project, Team
from retain.search.embed import LoadedEmbedder
from retain.service import actor, audit, lookup, mirror, policy, registry
from retain.service import search as finding
from retain.service.actor import LOCAL_OPERATOR, Actor, Kind
from retain.service.lookup import READ_PAGE_CHARS, Record
from retain.service.rows import content_hash
from retain.service.search import SEARCH_LIMIT_MAX
from retain.service.store import Store
from retain.service.view import View
from retain.service.work import Work
from retain.storage.base import Backend, Progress, Reads, Transaction

if TYPE_CHECKING:  # the verbs' modules, each imported as its first verb is looked up
    from retain import legacy
    from retain.service import (
        access,
        admin,
        agent,
        assertion,
        erasure,
        exchange,
        fact,
        ingest,
        panel,
        proposal,
        relation,
        similar,
        ticket,
        tier,
        trust,
    )
    from retain.service import context as section
    from retain.service import hold as holds
    from retain.service import hygiene as cleaning
    from retain.service import review as reviewing
    from retain.service import session as sessions
    from retain.service import sweep as sweeping

__all__ = [
    "READ_PAGE_CHARS",
    "SEARCH_LIMIT_MAX",
    "MemoryService",
    "Progress",
    "Record",
    "content_hash",
]

T = TypeVar("T")
HEAL_PAGE = 200  # memories whose lost vectors one write makes again, at most


def _verb(module: str, function: str | None = None) -> Any:
    """The verb ``function`` (None: the name the class binds it to) of the capability
    module ``retain.service.<module>``, imported when it is first looked up."""
    return fields.Verb(f"retain.service.{module}", function)


@fields.typed  # every public verb refuses an argument of the wrong type first,
@policy.gated  # then a principal whose kind the policy table does not grant it
class MemoryService:
    """The verbs over one store, as one actor (a principal in a realm): a session.

    Sessions are light: ``acting_as`` makes another over the same ``Store`` (backend,
    settings, clock, embedder, vector index). Every public verb passes the gate first:
    its argument types, then the policy table's row for the actor's kind, before any
    I/O. Most verbs are functions of the capability modules (the table at the end of
    the class), each taking the session as its first argument."""

    def __init__(
        self,
        backend: Backend | Store,
        *,
        settings: Settings | None = None,
        clock: Clock | None = None,
        realm: str = DEFAULT_REALM,
        principal: str = LOCAL_OPERATOR,
        session: str | None = None,
        legacy_dir: Path | None = None,
        embedder: LoadedEmbedder | None = None,
    ) -> None:
        if isinstance(backend, Store):
            self.store = backend
        else:
            self.store = Store(backend, settings=settings, clock=clock, embedder=embedder)
        key = None if session is None else fields.session(session)
        self.actor = Actor(principal, fields.name(realm, what="realm"), key)
        self._admitted = False  # whether the agent it names was found registered
        if not self.backend.read(lambda tx: tx.realm_exists(self.realm)):
            self._write(self._add_realm)
        self.legacy_import: legacy.Report | None = None
        if legacy_dir is not None and (legacy_dir / self.realm).is_dir():  # else none to do
            from retain.service.exchange import import_legacy

            self.legacy_import = import_legacy(self, legacy_dir / self.realm)

    def acting_as(
        self, principal: str, *, realm: str | None = None, session: str | None = None
    ) -> MemoryService:
        """A session of ``principal`` over this one's store (nothing is copied), in the
        agent context ``session`` (the host's key; None: none named). The same principal
        and realm in another context is this session with another key: no I/O."""
        actor.parse(principal)
        if principal == self.principal and (realm is None or realm == self.realm):
            other = copy.copy(self)
            other.actor = replace(
                self.actor, session=None if session is None else fields.session(session)
            )
            return other
        return MemoryService(
            self.store, principal=principal, realm=realm or self.realm, session=session
        )

    def close(self) -> None:
        self.store.close()

    @property
    def backend(self) -> Backend:
        return self.store.backend

    @property
    def settings(self) -> Settings:
        return self.store.settings

    @property
    def clock(self) -> Clock:
        return self.store.clock

    @property
    def embedder(self) -> LoadedEmbedder:
        """The store's embedder, and why it is degraded if it is."""
        return self.store.embedder

    @property
    def realm(self) -> str:
        return self.actor.realm

    @property
    def principal(self) -> str:
        return self.actor.principal

    @property
    def identity(self) -> str | None:
        """The agent this service acts as (its principal is ``agent:<name>``), if any."""
        return self.actor.identity

    @property
    def kind(self) -> Kind:
        """The kind of principal acting (the policy table grants by it)."""
        return self.actor.kind

    # -- the unit of work: every write runs through it -------------------------------------

    def _write(self, fn: Callable[[Work], T], *, redact: bool = False) -> T:
        """``fn`` over the unit of work of a write transaction (``Work``), whose instant
        (``_tx_now``) is taken inside the lock, so that a writer who waited for the lock
        never stamps a time before its predecessor's. ``redact``: the call asks for the
        secrets its rows hold to be written as markers (``admission``). If the write saw
        what an earlier writer left undone, it then heals it (``_heal``)."""
        stale = False

        marks: list[mirror.Mark] = []

        def run(tx: Transaction) -> T:
            nonlocal stale, marks
            work = self._work(tx, redact=redact)
            result = fn(work)
            work.finish()
            marks = work.marks
            stale = tx.saw_stale_vectors()  # learnt with the lock: no query of its own
            return result

        result = self.backend.write(run)
        # committed: the mirrors of what it changed, best effort as _heal is (the links
        # wait as pending or removing, and a retry sends them); the write stands
        with contextlib.suppress(RetainError):
            mirror.flush(self, marks)
        if stale and self.embedder.degraded is None:
            self._heal()
        return result

    def _work(self, tx: Transaction, *, redact: bool = False) -> Work:
        """The unit of work of a write transaction that holds the write lock."""
        return Work(tx, self._tx_now(tx), self.actor, self.store, redact=redact)

    def _tx_now(self, tx: Reads) -> datetime:
        """The instant of a write, read once its transaction holds the write lock: the
        clock, or, when the clock is not ahead of the log's last event (it was set back,
        stands still, or another host's runs behind), one tick (a microsecond, the finest
        step a stamp keeps) after that event's time, so that the log's times never run
        backwards and a write always comes after the one before it (a fact written next
        on a subject starts after the current one)."""
        now = self.clock.now()
        last = tx.last_tx_time()
        return last + TICK if last is not None and now <= last else now

    def _read_now(self, tx: Reads) -> datetime:
        """The instant a read answers "now" as: the clock, or the log's last event's time
        when the clock reads earlier (a write under a clock that stood still or was set
        back took the tick after it), so that a read as of now sees every write so far."""
        now = self.clock.now()
        last = tx.last_tx_time()
        return last if last is not None and last > now else now

    def _now(self) -> datetime:
        return self.clock.now()

    def _heal(self) -> None:
        """Make again, in a transaction of its own, the search keys of memories whose
        vectors a writer was to store after its commit and never did (PostgreSQL: it
        died, or failed, in between). Best effort, apart from the write that saw them:
        if it fails, the write stands and the next write tries again.

        A degraded embedder (the hash fallback) does not heal: the vectors owed are the
        configured model's, and a hash vector in their place would leave the memory with
        none of that model and nothing pending; they stay pending (``verify`` reports
        them) for a writer whose model loaded. With no embedder, healing makes the
        context words again and clears what was pending (``set_keys``): there is no
        vector to wait for."""

        def run(work: Work) -> None:
            for memory_id in work.reads.stale_vectors(HEAL_PAGE):  # read again, under the lock
                work.rekey.touch(memory_id)
            work.make_keys()

        with contextlib.suppress(RetainError):
            self.backend.write(lambda tx: run(self._work(tx)))

    def _add_realm(self, work: Work) -> None:
        """Create this service's realm, once, with its event."""
        if work.reads.realm_exists(self.realm):  # another process was first
            return
        work.add_realm()
        work.event("realm_add", {"realm": self.realm})

    # -- who is acting: the view, the agent, what must exist -------------------------------

    def _reader(self, tx: Reads, project: str | None = None) -> View:
        """The actor's view for a call on ``project`` (its tier checked to exist)."""
        if project:
            self._require_project(tx, project)
        registered = None if self.identity is None else self._agent(tx)
        return View(self.actor, registered, project)

    def _agent(self, tx: Reads) -> Agent:
        """The registered agent acting. Only an agent reaches the verbs that ask: the
        policy table refuses every other principal before the verb runs."""
        identity = self.identity
        assert identity is not None, "the policy table lets only agents reach this"
        return self._require_agent(tx, identity)

    def _require_project(self, tx: Reads, project: str) -> None:
        registry.require_project(tx, self.realm, project)

    def _require_agent(self, tx: Reads, agent: str) -> Agent:
        return registry.require_agent(tx, self.realm, agent)

    def _require_team(self, tx: Reads, team: str) -> None:
        registry.require_team(tx, self.realm, team)

    def check_principal(self) -> None:
        """Refuse a principal that names an agent not registered (``agent_not_found``):
        the gate asks before every verb, after the policy table, and the store is read
        until the agent is found (an agent, once registered, stays so)."""
        identity = self.identity
        if identity is None or self._admitted:
            return
        self.backend.read(lambda tx: self._require_agent(tx, identity))
        self._admitted = True

    def offered_verbs(self) -> tuple[str, ...]:
        """The verbs a model acting as this principal is offered (the policy table's
        ``offered`` rows its kind may run): none when the installation turns memory off
        (``[memory] enabled = false``); the verbs still answer every other door."""
        if not self.settings.memory_enabled:
            return ()
        return policy.offered(self.actor, self.settings)

    def offer(self, verb: str) -> None:
        """Refuse a verb asked for by a model while the installation turns memory off."""
        if not self.settings.memory_enabled:
            raise MemoryDisabled(
                f"memory is turned off for this installation, so {verb} is not offered",
                remedy="set enabled = true under [memory] in config.toml to offer it again; "
                "what is stored stays reachable by the operator",
                verb=verb,
            )

    # -- the verbs: the realm's registry (retain.service.registry) -------------------------

    def add_project(self, name: str) -> Project:
        fields.name(name, what="project")
        return self._write(lambda work: registry.add_project(work, name))

    def list_projects(self) -> list[Project]:
        return self.backend.read(lambda tx: tx.list_projects(self.realm))

    def rename_project(self, old: str, new: str) -> Project:
        fields.name(new, what="project")
        return self._write(lambda work: registry.rename_project(work, old, new))

    def remove_project(self, name: str) -> None:
        self._write(lambda work: registry.remove_project(work, name))

    def add_agent(self, name: str) -> Agent:
        """Register an agent identity in this realm (its scope is ``agent:<name>``)."""
        fields.name(name, what="agent")
        return self._write(lambda work: registry.add_agent(work, name))

    def list_agents(self) -> list[Agent]:
        return self.backend.read(lambda tx: tx.list_agents(self.realm))

    def add_team(self, name: str) -> Team:
        """Create a team: a group of agents that shares the scope ``team:<name>``."""
        fields.name(name, what="team")
        return self._write(lambda work: registry.add_team(work, name))

    def list_teams(self) -> list[Team]:
        return self.backend.read(lambda tx: tx.list_teams(self.realm))

    def join_team(self, team: str, agent: str) -> tuple[Team, bool]:
        """Put a registered agent in a team; (the team, whether it joined just now)."""
        fields.name(team, what="team")
        fields.name(agent, what="agent")
        return self._write(lambda work: registry.join_team(work, team, agent))

    # -- the verbs: the audit trail (retain.service.audit) ---------------------------------

    def events(
        self, *, after: int = 0, limit: int = 100, memory_id: str | None = None
    ) -> list[Event]:
        """The realm's event log from ``seq`` above ``after``, oldest first (a page of at
        most ``limit``); ``memory_id`` keeps one memory's history. Not an agent's verb: the
        log holds every scope's changes. An event about a memory outside the reader's
        view keeps its place (the chain stays whole) but not its payload (``withheld``)."""
        fields.whole(after, "after", 0)
        fields.page(limit)
        if memory_id is not None:
            fields.text(memory_id, "memory_id")

        return self.backend.read(
            lambda tx: audit.events(
                tx, self._reader(tx), after=after, limit=limit, memory_id=memory_id
            )
        )

    def list_injections(
        self,
        *,
        memory_id: str | None = None,
        session: str | None = None,
        identity: str | None = None,
        limit: int = 100,
    ) -> list[Injection]:
        """Injection ledger rows, newest first. Operators read every identity's; anyone
        else only the rows of what was rendered for them."""
        for value, what in ((memory_id, "memory_id"), (session, "session"),
                            (identity, "identity")):  # fmt: skip
            if value is not None:
                fields.text(value, what)
        finding.check_limit(limit)
        view = View(self.actor)
        identity = view.injections_of(identity)  # refused before any I/O
        return self.backend.read(
            lambda tx: audit.injections(
                tx, view, memory_id=memory_id, session=session, identity=identity, limit=limit
            )
        )

    # -- the verbs of the capability modules, each a function over the session -------------
    # (each takes the session first, as ``svc``: what ``self`` is here; the gate wraps it).
    # A verb's module is imported the first time the verb is looked up (``fields.Verb``),
    # so a command loads only the modules of what it runs; the type checker reads the
    # function itself.

    # tiers and edits
    write = tier.write if TYPE_CHECKING else _verb("tier")
    write_many = tier.write_many if TYPE_CHECKING else _verb("tier")
    ingest_conversation = ingest.ingest_conversation if TYPE_CHECKING else _verb("ingest")
    edit = tier.edit if TYPE_CHECKING else _verb("tier")
    delete = tier.delete if TYPE_CHECKING else _verb("tier")

    # lookups
    get = lookup.get if TYPE_CHECKING else _verb("lookup")
    read = lookup.read if TYPE_CHECKING else _verb("lookup")
    list_memories = lookup.list_memories if TYPE_CHECKING else _verb("lookup")

    # search
    search = finding.search if TYPE_CHECKING else _verb("search")

    # an agent's own memory
    remember = agent.remember if TYPE_CHECKING else _verb("agent")
    update = agent.update if TYPE_CHECKING else _verb("agent")
    recall = agent.recall if TYPE_CHECKING else _verb("agent")

    # proposals
    propose = proposal.propose if TYPE_CHECKING else _verb("proposal")
    list_proposals = proposal.list_proposals if TYPE_CHECKING else _verb("proposal")

    # agent sessions and their taint
    observe = sessions.observe if TYPE_CHECKING else _verb("session")
    reset_session = sessions.reset_session if TYPE_CHECKING else _verb("session")
    session_status = sessions.session_status if TYPE_CHECKING else _verb("session")
    # tickets: the curator's decisions and the policy gate
    list_tickets = ticket.list_tickets if TYPE_CHECKING else _verb("ticket")
    get_ticket = ticket.get_ticket if TYPE_CHECKING else _verb("ticket")
    approve = ticket.approve if TYPE_CHECKING else _verb("ticket")
    reject = ticket.reject if TYPE_CHECKING else _verb("ticket")
    expire_tickets = ticket.expire_tickets if TYPE_CHECKING else _verb("ticket")

    # facts
    fact_write = fact.fact_write if TYPE_CHECKING else _verb("fact")
    fact_read = fact.fact_read if TYPE_CHECKING else _verb("fact")
    fact_history = fact.fact_history if TYPE_CHECKING else _verb("fact")
    fact_retract = fact.fact_retract if TYPE_CHECKING else _verb("fact")
    fact_confirm = fact.fact_confirm if TYPE_CHECKING else _verb("fact")

    # the assertion ledger, its conflict signals, and the gate over them
    index = assertion.index if TYPE_CHECKING else _verb("assertion")
    query = assertion.query if TYPE_CHECKING else _verb("assertion")
    stores = assertion.stores if TYPE_CHECKING else _verb("assertion")
    gate = assertion.gate if TYPE_CHECKING else _verb("assertion")

    # trust, reviewed
    retier = trust.retier if TYPE_CHECKING else _verb("trust")

    # quarantine review
    list_quarantine = reviewing.list_quarantine if TYPE_CHECKING else _verb("review")
    review = reviewing.review if TYPE_CHECKING else _verb("review")

    # the memory section of a context
    context = section.context if TYPE_CHECKING else _verb("context")

    # snapshots
    export = exchange.export if TYPE_CHECKING else _verb("exchange")
    export_log = exchange.export_log if TYPE_CHECKING else _verb("exchange")
    import_ = exchange.import_ if TYPE_CHECKING else _verb("exchange")
    import_from = exchange.import_from if TYPE_CHECKING else _verb("exchange")

    # write-through mirrors
    mirror_status = mirror.status if TYPE_CHECKING else _verb("mirror", "status")
    mirror_retry = mirror.retry if TYPE_CHECKING else _verb("mirror", "retry")

    # access grants
    grant = access.grant if TYPE_CHECKING else _verb("access")
    revoke = access.revoke if TYPE_CHECKING else _verb("access")
    list_grants = access.list_grants if TYPE_CHECKING else _verb("access")

    # the relation graph and the hygiene pass
    graph = relation.graph_of if TYPE_CHECKING else _verb("relation", "graph_of")
    link = relation.link if TYPE_CHECKING else _verb("relation")
    decide = relation.decide if TYPE_CHECKING else _verb("relation")
    dedup = similar.dedup if TYPE_CHECKING else _verb("similar")
    hygiene = cleaning.hygiene_of if TYPE_CHECKING else _verb("hygiene", "hygiene_of")

    # legal holds and retention
    hold = holds.hold if TYPE_CHECKING else _verb("hold")
    release_hold = holds.release_hold if TYPE_CHECKING else _verb("hold")
    held = holds.held if TYPE_CHECKING else _verb("hold")
    sweep = sweeping.sweep if TYPE_CHECKING else _verb("sweep")

    # health and upkeep
    verify = admin.verify if TYPE_CHECKING else _verb("admin")
    # erasure: the one verb that takes a value out, its certificate, compaction
    forget = erasure.forget if TYPE_CHECKING else _verb("erasure")
    certificate = erasure.certificate if TYPE_CHECKING else _verb("erasure")
    compact = erasure.compact if TYPE_CHECKING else _verb("erasure")
    chain_head = admin.chain_head if TYPE_CHECKING else _verb("admin")
    migrate_to = admin.migrate_to if TYPE_CHECKING else _verb("admin")
    reindex = admin.reindex if TYPE_CHECKING else _verb("admin")
    index_vectors = admin.index_vectors if TYPE_CHECKING else _verb("admin")
    status = admin.status if TYPE_CHECKING else _verb("admin")

    # the console's panels (the others are the verbs above)
    records = panel.records if TYPE_CHECKING else _verb("panel")
    record = panel.record if TYPE_CHECKING else _verb("panel")
    overview = panel.overview if TYPE_CHECKING else _verb("panel")
    timeline = panel.timeline if TYPE_CHECKING else _verb("panel")

    caption = staticmethod(lookup.caption)
