"""MemoryService: every verb, and every rule behind it.

Doors (Python, CLI, HTTP, MCP) translate arguments and results; the rules
live here, once. Each verb runs in one backend transaction: its change and
its event land together or not at all.

Tiers and the ``project`` argument of the verbs that find a memory by name:

* ``None`` — every tier; a name held by several projects is refused until a
  project is named;
* ``""`` — the global tier alone;
* ``"webdev"`` — what a session on project webdev sees: its tier and global.

``list`` is the exception, as an operator listing is: a project name there
picks that one tier.

This module is one piece because the verbs share the lookup, merge and
event helpers below; the field checks, the budget, search planning and
ranking, and export/import live in their own modules.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from retain import budget, fields, ledger
from retain.chrono import (
    TICK,
    Clock,
    age_phrase,
    before,
    parse_duration,
    parse_expires,
    parse_moment,
    parse_optional_stamp,
    parse_stamp,
    parse_valid_from,
    stamp,
)
from retain.config import RECALL_POLICIES, Settings
from retain.errors import (
    AccessDenied,
    AmbiguousName,
    DescriptionRequired,
    DimensionMismatch,
    EditAmbiguous,
    EditNoMatch,
    IntegrityFailed,
    InvalidInput,
    InvalidValue,
    MemoryDisabled,
    MemoryExists,
    NameConflict,
    NoProject,
    NotFound,
    RecallFailed,
    RetainError,
    StaleUpdate,
)
from retain.model import (
    DEFAULT_PRIORITY,
    DEFAULT_REALM,
    GLOBAL_SCOPE,
    TEAM_PREFIX,
    Agent,
    ContextResult,
    DeleteResult,
    EditResult,
    Event,
    ExportResult,
    Fact,
    FactChange,
    Injection,
    Load,
    Memory,
    MigrateResult,
    Project,
    Proposal,
    ReadResult,
    Reference,
    SearchHit,
    SearchResult,
    Status,
    StoreStatus,
    Team,
    VerifyReport,
    WriteRequest,
    WriteResult,
    agent_scope,
    lower_trust,
    project_scope,
)
from retain.search import key
from retain.search.embed import Embedder, LoadedEmbedder
from retain.service import actor, audit, policy, registry
from retain.service.actor import LOCAL_OPERATOR, Actor, Kind
from retain.service.store import Store
from retain.service.view import View
from retain.service.work import Work
from retain.storage.base import (
    Backend,
    InlineEntry,
    LoadCounts,
    MemoryFilter,
    NativeVectors,
    Reads,
    ReadsBeside,
    Transaction,
)

if TYPE_CHECKING:  # numpy's: imported by the verbs that make or search vectors
    from concurrent.futures import Future  # (and logging's, by concurrent.futures)

    from retain import context, facts, legacy, migrate
    from retain.context import Scene
    from retain.search import lexical, rank
    from retain.search.embed import Matrix
    from retain.search.vectors import VectorIndex


class _OnUse:
    """A module of retain's imported the first time a verb uses it (``get`` needs neither
    the context renderer nor the search ranking): the first attribute read imports it
    (Python's import lock makes that thread-safe) and puts the module itself in this
    module's globals, so every later use is a plain module attribute."""

    __slots__ = ("_alias", "_module")

    def __init__(self, module: str, alias: str) -> None:
        self._module = module
        self._alias = alias

    def __getattr__(self, attribute: str) -> Any:
        module = importlib.import_module(self._module)
        globals()[self._alias] = module
        return getattr(module, attribute)


if not TYPE_CHECKING:
    context = _OnUse("retain.context", "context")
    facts = _OnUse("retain.facts", "facts")
    legacy = _OnUse("retain.legacy", "legacy")
    migrate = _OnUse("retain.migrate", "migrate")
    lexical = _OnUse("retain.search.lexical", "lexical")
    rank = _OnUse("retain.search.rank", "rank")

T = TypeVar("T")
_Draft = Callable[[Agent, datetime, Memory | None], Memory]  # an agent's memory, made later
Progress = Callable[[str, int, int], None]
"""A long operation reports ``(phase, done, total)`` through one of these."""

READ_PAGE_CHARS = 16_000
HEAL_PAGE = 200  # memories whose lost vectors one write makes again, at most
TALLIES_KEPT = 64  # views whose counts a service remembers
INDEX_FIRST_PAGE = 100  # index memories read first; the rest only when all of them fit
RECALL_SLACK = 8  # turn recall asks for this many more than it quotes (inline ones are skipped)
SIMILAR_DESCRIPTION = 0.6
SEARCH_LIMIT_MAX = 200
REINDEX_PAGE = 2000
_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Record:
    """A memory with what cites it: the answer to ``get``."""

    memory: Memory
    referenced_by: tuple[str, ...]


def content_hash(body: str) -> str:
    """The compare-and-swap token of a body."""
    import hashlib  # on first use: a read that compares no body never loads OpenSSL

    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.casefold()) if len(w) > 1}


def _label(memory: Memory) -> str:
    name = memory.name or memory.id
    return f"{memory.project}/{name}" if memory.project else name


class _Inline:
    """The inline entries of a realm as a transaction changes them."""

    def __init__(self, entries: list[InlineEntry]) -> None:
        self.start = list(entries)
        self.current = {e.memory_id: e for e in entries}
        self.touched: set[str] = set()

    def apply(self, before: Memory | None, after: Memory | None, now: str) -> None:
        was = before is not None and budget.counts(before, now)
        will = after is not None and budget.counts(after, now)
        if not was and not will:
            return
        if before is not None:
            self.current.pop(before.id, None)
            self.touched.add(before.scope)
        if after is not None and will:
            self.current[after.id] = budget.entry(after)
            self.touched.add(after.scope)

    def check(self, limit: int) -> None:
        budget.check(self.start, self.current.values(), budget=limit, touched=self.touched)


class _Staged:
    """The memories a batch creates, held back to be inserted in one statement.

    FTS5 flushes its pending index data at the end of every statement, so a
    thousand single-row inserts write a thousand tiny segments where one
    multi-row insert writes one (several times faster at 100k memories).
    Later writes of the same batch find staged memories by name.
    """

    def __init__(self) -> None:
        self.rows: dict[str, Memory] = {}
        self._by_name: dict[str | None, list[str]] = {}

    def named(self, name: str) -> list[Memory]:
        return [self.rows[i] for i in self._by_name.get(name, ())]

    def holds(self, memory_id: str) -> bool:
        return memory_id in self.rows

    def put(self, memory: Memory) -> None:
        if memory.id not in self.rows:
            self._by_name.setdefault(memory.name, []).append(memory.id)
        self.rows[memory.id] = memory


@fields.typed  # every public verb refuses an argument of the wrong type first,
@policy.gated  # then a principal whose kind the policy table does not grant it
class MemoryService:
    """The verbs over one store, as one actor (a principal in a realm): a session.

    Sessions are light: ``acting_as`` makes another over the same ``Store`` (backend,
    settings, clock, embedder, vector index). Every public verb passes the gate first
    (``_gated``): its argument types, then the policy table's row for the actor's kind,
    before any I/O."""

    def __init__(
        self,
        backend: Backend | Store,
        *,
        settings: Settings | None = None,
        clock: Clock | None = None,
        realm: str = DEFAULT_REALM,
        principal: str = LOCAL_OPERATOR,
        legacy_dir: Path | None = None,
        embedder: LoadedEmbedder | None = None,
    ) -> None:
        if isinstance(backend, Store):
            self.store = backend
        else:
            self.store = Store(backend, settings=settings, clock=clock, embedder=embedder)
        self.actor = Actor(principal, fields.name(realm, what="realm"))
        if not self.backend.read(lambda tx: tx.realm_exists(self.realm)):
            self._write(self._add_realm)
        self.legacy_import: legacy.Report | None = None
        if legacy_dir is not None and (legacy_dir / self.realm).is_dir():  # else none to do
            self.legacy_import = self._import_legacy(legacy_dir / self.realm)

    def acting_as(self, principal: str, *, realm: str | None = None) -> MemoryService:
        """A session of ``principal`` over this one's store (nothing is copied)."""
        return MemoryService(
            self.store, principal=actor.parse(principal), realm=realm or self.realm
        )

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
    def realm(self) -> str:
        return self.actor.realm

    @property
    def principal(self) -> str:
        return self.actor.principal

    def _add_realm(self, work: Work) -> None:
        """Create this service's realm, once, with its event."""
        if work.reads.realm_exists(self.realm):  # another process was first
            return
        work.add_realm()
        work.event("realm_add", {"realm": self.realm})

    def _import_legacy(self, directory: Path) -> legacy.Report | None:
        """Import the realm's legacy per-identity markdown files (see ``retain.legacy``).

        Every record goes through the validator of ``remember``; a malformed one is
        skipped and reported, never half-imported. The good records of every file land
        in one transaction, an unregistered identity is registered with them, and each
        file read is renamed ``<identity>.md.imported`` once they have. A file whose
        content (by SHA-256) was imported before is only renamed. A store that refuses
        the import leaves the files as they were and the report says why.
        """
        import hashlib

        claimed = [c for f in legacy.pending(directory) if (c := legacy.claim(f)) is not None]
        if not claimed:
            return None
        files: list[tuple[Path, str, list[_Draft]]] = []  # claimed file, its digest, records
        problems: list[legacy.Problem] = []
        for path in claimed:
            name = legacy.identity_of(path)
            file = legacy.source_name(path)
            try:
                fields.name(name, what="agent")
                raw = path.read_bytes()
                records, bad = legacy.parse(raw.decode("utf-8-sig"))
            except (RetainError, UnicodeDecodeError) as exc:
                reason = exc.message if isinstance(exc, RetainError) else "not UTF-8 text"
                problems.append(legacy.Problem(file, 0, f"{reason}; the file was left as it is"))
                legacy.finish(path, imported=False)
                continue
            problems += [legacy.Problem(file, line, reason) for line, reason in bad]
            drafts = []
            for record in records:
                try:
                    drafts.append(self._draft(record.text, None, None, None, None, None, None))
                except RetainError as exc:
                    problems.append(legacy.Problem(file, record.line, exc.message))
            files.append((path, hashlib.sha256(raw).hexdigest(), drafts))

        by = legacy.PRINCIPAL  # the import is the system's act, whoever opened the store

        def run(work: Work) -> legacy.Report:
            tx, now = work.reads, work.now
            added: list[str] = []
            imported = 0
            again: list[legacy.Problem] = []
            for path, digest, drafts in files:
                name = legacy.identity_of(path)
                author = agent_scope(name)
                trust = Actor(author).trust
                memories = [
                    replace(make(Agent(name, now), now, None), author=author, trust=trust)
                    for make in drafts
                ]
                if tx.legacy_imported(self.realm, name, digest):
                    again.append(legacy.Problem(legacy.source_name(path), 0, legacy.ALREADY))
                    continue
                if memories and tx.get_agent(self.realm, name) is None:
                    work.add_agent(name)
                    work.event("agent_add", {"agent": name}, principal=by)
                    added.append(name)
                for memory in memories:
                    self._record(work, memory, principal=by)
                work.record_legacy_import(name, digest)
                imported += len(memories)
            report = legacy.Report(
                files=tuple(legacy.source_name(p) for p, _, _ in files),
                imported=imported,
                agents_added=tuple(added),
                problems=(*problems, *again),
            )
            work.event("legacy_import", report.to_dict(), principal=by)
            return report

        try:
            report = self._write(run) if files else None
        except RetainError as exc:  # the store refused: nothing landed, the files stay
            for path, _, _ in files:
                legacy.finish(path, imported=False)
                problems.append(
                    legacy.Problem(
                        legacy.source_name(path), 0, f"not imported: {exc.message}; left as it is"
                    )
                )
            report = None
        except BaseException:
            for path, _, _ in files:
                legacy.finish(path, imported=False)
            raise
        if report is None:
            return legacy.Report(files=(), imported=0, agents_added=(), problems=tuple(problems))
        for path, _, _ in files:
            legacy.finish(path, imported=True)
        return report

    def close(self) -> None:
        self.store.close()

    # -- shared helpers -------------------------------------------------------------

    def _now(self) -> datetime:
        return self.clock.now()

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

    def _write(self, fn: Callable[[Work], T]) -> T:
        """``fn`` over the unit of work of a write transaction (``Work``), whose instant
        (``_tx_now``) is taken inside the lock, so that a writer who waited for the lock
        never stamps a time before its predecessor's. If the write saw what an earlier
        writer left undone, it then heals it (``_heal``)."""
        stale = False

        def run(tx: Transaction) -> T:
            nonlocal stale
            work = self._work(tx)
            result = fn(work)
            work.finish()
            stale = tx.saw_stale_vectors()  # learnt with the lock: no query of its own
            return result

        result = self.backend.write(run)
        if stale and self.embedder.degraded is None:
            self._heal()
        return result

    def _work(self, tx: Transaction) -> Work:
        """The unit of work of a write transaction that holds the write lock."""
        return Work(tx, self._tx_now(tx), self.actor, self.store)

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

    @property
    def embedder(self) -> LoadedEmbedder:
        """The store's embedder, and why it is degraded if it is."""
        return self.store.embedder

    @staticmethod
    def _payload(memory: Memory, now: datetime) -> dict[str, Any]:
        return memory.to_dict(now, body=True)

    def _require_project(self, tx: Reads, project: str) -> None:
        registry.require_project(tx, self.realm, project)

    def _reader(self, tx: Reads, project: str | None = None) -> View:
        """The actor's view for a call on ``project`` (its tier checked to exist)."""
        if project:
            self._require_project(tx, project)
        agent = None if self.identity is None else self._agent(tx)
        return View(self.actor, agent, project)

    def _locate(
        self, tx: Reads, name: str, project: str | None, *, unnamed: bool = False
    ) -> Memory:
        """The memory ``name`` names in the tiers ``project`` picks, as the actor's view
        sees them; with ``unnamed``, an id names a memory without a name (an agent's own,
        a fact's version) in the view. Outside the view is ``not_found``."""
        fields.name(name)
        view = self._reader(tx, project)
        found = [
            m
            for m in tx.find_by_name(self.realm, name, view.lookup_scopes())
            if view.sees(m.realm, m.scope)
        ]
        if not found and unnamed and project is None:
            found = [
                m for m in tx.get_many([name]) if m.name is None and view.sees(m.realm, m.scope)
            ]
        if not found:
            where = (
                "any tier"
                if project is None
                else ("the global tier" if project == "" else f"project {project!r} or global")
            )
            raise NotFound(
                f"no memory named {name!r} in {where}",
                remedy="check the name by listing or searching the memories",
                fix="find",
                name=name,
                project=project,
            )
        if len(found) > 1:
            tiers = [m.tier for m in found]
            raise AmbiguousName(
                f"{name!r} is in several projects: {', '.join(tiers)}",
                remedy="name the project the call means",
                fix="name_project",
                name=name,
                projects=tiers,
            )
        return found[0]

    @staticmethod
    def _linked(tx: Reads, memories: Sequence[Memory]) -> list[Memory]:
        """``memories``, each superseded one with ``superseded_by``: the latest memory
        that took over from it and was not retracted (a retracted version was never
        so; the one it ended is active again)."""
        retired = [m.id for m in memories if m.status is Status.SUPERSEDED]
        if not retired:
            return list(memories)
        latest: dict[str, str] = {}
        for old, new, status in tx.successors(retired):
            if status != Status.RETRACTED.value and new > latest.get(old, ""):
                latest[old] = new  # ids sort by creation
        return [replace(m, superseded_by=latest[m.id]) if m.id in latest else m for m in memories]

    # -- projects --------------------------------------------------------------------

    def add_project(self, name: str) -> Project:
        fields.name(name, what="project")
        return self._write(lambda work: registry.add_project(work, name))

    # -- agents and teams ---------------------------------------------------------------

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

    def _require_agent(self, tx: Reads, agent: str) -> Agent:
        return registry.require_agent(tx, self.realm, agent)

    def _require_team(self, tx: Reads, team: str) -> None:
        registry.require_team(tx, self.realm, team)

    # -- an agent's own memory ------------------------------------------------------------

    @property
    def identity(self) -> str | None:
        """The agent this service acts as (its principal is ``agent:<name>``), if any."""
        return self.actor.identity

    @property
    def kind(self) -> Kind:
        """The kind of principal acting (the policy table grants by it)."""
        return self.actor.kind

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

    def check_principal(self) -> None:
        """Refuse, before any verb, a principal that names an agent not registered."""
        identity = self.identity
        if identity is not None:
            self.backend.read(lambda tx: self._require_agent(tx, identity))

    def _agent(self, tx: Reads) -> Agent:
        """The registered agent acting. Only an agent reaches the verbs that ask: the
        policy table refuses every other principal before the verb runs."""
        identity = self.identity
        assert identity is not None, "the policy table lets only agents reach this"
        return self._require_agent(tx, identity)

    def remember(
        self,
        text: str,
        *,
        description: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        subject: str | None = None,
        thread: str | None = None,
        valid_from: str | None = None,
    ) -> Memory:
        """Write a memory into the acting agent's own scope (``agent:<name>``).

        The agent is its author; it enters at ``observed`` trust, search-only (it
        reaches the agent through recall). Without a description, the text's first
        line stands for one.
        """
        draft = self._draft(text, description, tags, priority, subject, thread, valid_from)

        def run(work: Work) -> Memory:
            tx, now = work.reads, work.now
            agent = self._agent(tx)
            return self._record(work, draft(agent, now, None))

        return self._write(run)

    def update(
        self,
        memory_id: str,
        text: str,
        *,
        description: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        subject: str | None = None,
        thread: str | None = None,
        valid_from: str | None = None,
    ) -> Memory:
        """Supersede one of the acting agent's own memories with a new one.

        The new memory says what the old one should now say and names it in
        ``supersedes``; the old one becomes ``superseded`` (out of recall, kept in
        history); tags, priority, subject, thread and valid_from not given are
        carried over from it. Only the agent's own lineage can be updated: another
        identity's memory, or one of a shared scope, is refused.
        """
        fields.text(memory_id, "id")
        draft = self._draft(text, description, tags, priority, subject, thread, valid_from)

        def run(work: Work) -> Memory:
            tx, now = work.reads, work.now
            agent = self._agent(tx)
            old = self._own(tx, agent, memory_id, "update")
            new = draft(agent, now, old)
            retired = replace(old, status=Status.SUPERSEDED, updated_at=now, superseded_by=new.id)
            self._replace(work, retired, old, "updated", remedy="recall it again and retry")
            self._record(work, new)
            work.event("supersede", self._payload(retired, now), memory_id=old.id)
            return new

        return self._write(run)

    def _draft(
        self,
        text: str,
        description: str | None,
        tags: Sequence[str] | None,
        priority: int | None,
        subject: str | None,
        thread: str | None,
        valid_from: str | None,
    ) -> Callable[[Agent, datetime, Memory | None], Memory]:
        """An agent's memory, every field checked before any I/O; made in the transaction."""
        body = fields.text(text, "text")
        if not body.strip():
            raise InvalidValue(
                "there is nothing to remember", remedy="give the text to remember", field="text"
            )
        first = description if description else body.strip().splitlines()[0]
        summary = fields.description(first)[: fields.DESCRIPTION_NOTE_AT]
        chosen_tags = tuple(fields.tags(tags)) if tags is not None else ()
        chosen_priority = DEFAULT_PRIORITY if priority is None else fields.priority(priority)
        chosen_subject = fields.subject(subject) if subject else None
        chosen_thread = fields.thread(thread) if thread else None
        when = parse_valid_from(valid_from, self.clock) if valid_from else None

        def make(agent: Agent, now: datetime, old: Memory | None) -> Memory:
            """The memory, taking what was not given from ``old`` (the one it supersedes)."""
            if old is not None:
                return replace(
                    fresh(agent, now, old.id),
                    tags=chosen_tags if tags is not None else old.tags,
                    priority=chosen_priority if priority is not None else old.priority,
                    subject=chosen_subject if subject is not None else old.subject,
                    thread=chosen_thread if thread is not None else old.thread,
                    valid_from=parse_optional_stamp(when) if valid_from else old.valid_from,
                )
            return fresh(agent, now, None)

        def fresh(agent: Agent, now: datetime, supersedes: str | None) -> Memory:
            return self._authored(
                now,
                agent_scope(agent.name),
                summary,
                body,
                tags=chosen_tags,
                priority=chosen_priority,
                subject=chosen_subject,
                thread=chosen_thread,
                supersedes=supersedes,
                valid_from=parse_optional_stamp(when),
            )

        return make

    def _authored(
        self,
        now: datetime,
        scope: str,
        description: str,
        body: str,
        *,
        tags: tuple[str, ...] = (),
        priority: int = DEFAULT_PRIORITY,
        subject: str | None = None,
        predicate: str | None = None,
        thread: str | None = None,
        supersedes: str | None,
        valid_from: datetime | None,
    ) -> Memory:
        """A new memory found by search alone, by this principal and at its trust: an
        agent's own, or a fact's version."""
        return Memory(
            id=self.store.ids.new(now),
            realm=self.realm,
            scope=scope,
            name=None,
            description=description,
            body=body,
            tags=tags,
            priority=priority,
            load=Load.SEARCH,
            references=(),
            source="",
            subject=subject,
            predicate=predicate,
            trust=self.actor.trust,
            status=Status.ACTIVE,
            ever_quarantined=False,
            supersedes=supersedes,
            content_hash=content_hash(body),
            author=self.principal,
            created_at=now,
            updated_at=now,
            verified_at=now,
            expires_at=None,
            valid_from=valid_from,
            valid_to=None,
            read_count=0,
            thread=thread,
        )

    def _record(
        self, work: Work, memory: Memory, *, principal: str | None = None, reason: str = ""
    ) -> Memory:
        """Insert a new memory (an agent's, a fact's) with its event; its search key is
        made when the work finishes."""
        work.create([memory])
        payload = self._payload(memory, work.now)
        work.event("create", payload, memory_id=memory.id, principal=principal, reason=reason)
        return memory

    def _own(self, tx: Reads, agent: Agent, memory_id: str, verb: str) -> Memory:
        """The agent's own active memory of that id, or the refusal: ``not_found`` for
        one outside its view (another agent's is not disclosed), ``access_denied`` for
        one it sees but did not remember (a global or a team memory)."""
        view = View(self.actor, agent)
        found = [m for m in tx.get_many([memory_id]) if view.sees(m.realm, m.scope)]
        if not found or found[0].status is not Status.ACTIVE:
            raise NotFound(
                f"no memory {memory_id!r} to {verb}",
                remedy="recall it first to find its id",
                id=memory_id,
            )
        memory = found[0]
        if memory.predicate is not None:  # its line changes by its own verbs only
            raise InvalidValue(
                f"memory {memory_id!r} is a fact ({memory.subject} {memory.predicate})",
                remedy="write its new value with fact_write, or withdraw it with fact_retract",
                field="id",
            )
        if memory.scope != agent_scope(agent.name):
            raise AccessDenied(
                f"memory {memory_id!r} is not agent {agent.name!r}'s own (it is in {memory.scope})",
                remedy=f"an agent can {verb} only what it remembered itself",
                id=memory_id,
                scope=memory.scope,
            )
        return memory

    def recall(
        self,
        queries: str | Sequence[str],
        *,
        project: str | None = None,
        limit: int = 10,
        budget_tokens: int | None = None,
    ) -> SearchResult:
        """Search what the acting agent may see: global, the project (if one is given),
        its teams' scopes and its own — nothing else."""
        if isinstance(queries, str):
            queries = [queries]
        queries = [fields.text(q, "query") for q in _as_list(queries, "queries")]
        _check_limit(limit)
        _check_budget(budget_tokens)
        now = self._now()

        if project:
            fields.name(project, what="project")

        def where_of(tx: Reads) -> MemoryFilter:
            return MemoryFilter(realm=self.realm, scopes=self._view(tx, project).scopes)

        return self._search(
            queries,
            now,
            where_of,
            limit=limit,
            budget_tokens=budget_tokens,
            listing_summary=lambda n: f"{n} memories the agent can see, most important first",
        )

    def forget(self, memory_id: str, *, reason: str = "") -> Memory:
        """Take one of the acting agent's own memories out of recall (status ``forgotten``).

        The row and the history stay: the event log keeps what it said. Another
        identity's memory, or one of a shared scope, is refused.
        """
        fields.text(memory_id, "id")
        fields.text(reason, "reason")

        def run(work: Work) -> Memory:
            tx, now = work.reads, work.now
            agent = self._agent(tx)
            memory = self._own(tx, agent, memory_id, "forget")
            forgotten = replace(memory, status=Status.FORGOTTEN, updated_at=now)
            self._replace(work, forgotten, memory, "forgotten", remedy="recall it again and retry")
            work.event(
                "forget",
                self._payload(forgotten, now),
                memory_id=memory.id,
                reason=reason,
            )
            return forgotten

        return self._write(run)

    def propose(
        self,
        summary: str,
        *,
        target: str = GLOBAL_SCOPE,
        body: str = "",
        evidence: str = "",
    ) -> Proposal:
        """Ask for a memory to be added to a shared scope — a team the agent belongs to, or
        the global tier. The proposal is stored ``open`` for a curator to decide; nothing
        is written to the target until then."""
        line = fields.description(summary)
        if not line:
            raise InvalidValue(
                "a proposal needs a summary", remedy="say in one line what to add", field="summary"
            )
        fields.text(body, "body")
        fields.text(evidence, "evidence")
        if not isinstance(target, str):
            raise InvalidValue("target must be text", remedy="pass global or team:NAME")

        def run(work: Work) -> Proposal:
            tx, now = work.reads, work.now
            agent = self._agent(tx)
            team = target.removeprefix(TEAM_PREFIX) if target.startswith(TEAM_PREFIX) else None
            if target != GLOBAL_SCOPE and team is None:
                raise InvalidValue(
                    f"a proposal targets the global tier or a team, not {target!r}",
                    remedy="pass target global or team:NAME",
                    field="target",
                )
            if team is not None:
                self._require_team(tx, team)
                if team not in agent.teams:
                    raise AccessDenied(
                        f"agent {agent.name!r} is not in team {team!r}",
                        remedy="propose to a team the agent belongs to, or to global",
                        team=team,
                    )
            proposal = Proposal(
                id=self.store.ids.new(now),
                source=self.principal,
                target=target,
                trust=self.actor.trust,
                summary=line,
                body=body,
                evidence=evidence,
                action="add",
                status="open",
                created_at=now,
            )
            work.add_proposal(proposal)
            work.event("propose",
                {"id": proposal.id, "target": target, "summary": line, "body": body,
                 "evidence": evidence},
            )  # fmt: skip
            return proposal

        return self._write(run)

    def list_proposals(self, *, status: str | None = None) -> list[Proposal]:
        """The realm's proposals, oldest first; ``status`` keeps one status ("open"). An
        agent sees only the proposals it made."""
        if status is not None:
            fields.text(status, "status")
        listed = self.backend.read(lambda tx: tx.list_proposals(self.realm, status))
        view = View(self.actor)
        return [p for p in listed if view.sees_proposal(p)]

    # -- facts ------------------------------------------------------------------------

    def fact_write(
        self,
        subject: str,
        predicate: str,
        value: str,
        *,
        project: str | None = None,
        valid_from: str | None = None,
        reason: str = "",
    ) -> FactChange:
        """Record that ``subject``'s ``predicate`` is ``value`` (from ``valid_from``, else
        from now), in the project's tier, the global one, or, for an agent, its own.

        The version current in that tier is superseded: it stays in the history, holding
        until the new one starts. Writing the value already current (with no
        ``valid_from``, or its own) writes nothing. A new version must start after the
        current one, and no later than now: a fact records what holds.
        """
        subject, predicate = _fact_subject(subject), fields.predicate(predicate)
        value = fields.text(value, "value").strip()
        if not value:
            raise InvalidValue("a fact needs a value", remedy="give the value", field="value")
        fields.text(reason, "reason")
        when = (
            parse_optional_stamp(parse_valid_from(valid_from, self.clock)) if valid_from else None
        )
        if when is not None and when > self._now():
            raise InvalidValue(
                f"a fact records what holds, and {stamp(when)} is still to come",
                remedy="write the value when it starts to hold (a plan can be a note until then)",
                field="valid_from",
            )

        def run(work: Work) -> FactChange:
            tx, now = work.reads, work.now
            scope = self._fact_scope(tx, project, "write")
            current = self._current_fact(tx, scope, subject, predicate)
            if current is not None and current.body == value and when in (None, current.valid_from):
                return FactChange(facts.as_known([current], now)[0], None, changed=False)
            began = when or now
            if current is not None and began <= facts.start(current):
                raise InvalidValue(
                    f"the new value of {subject!r} {predicate!r} would start at {stamp(began)}, "
                    f"not after the current one ({stamp(facts.start(current))})",
                    remedy="give a later valid_from, or retract the current value first",
                    field="valid_from",
                )
            fact = self._authored(
                now,
                scope,
                fields.description(f"{subject} {predicate}"[: fields.DESCRIPTION_NOTE_AT]),
                value,
                subject=subject,
                predicate=predicate,
                supersedes=current.id if current is not None else None,
                valid_from=when,
            )
            ended = None
            if current is not None:
                ended = replace(
                    current,
                    status=Status.SUPERSEDED,
                    valid_to=began,
                    updated_at=now,
                    superseded_by=fact.id,
                )
                self._replace(work, ended, current, "written")
            self._record(work, fact, reason=reason)
            if ended is not None:
                work.event("supersede", self._payload(ended, now), memory_id=ended.id,
                    reason=reason,
                )  # fmt: skip
            return _change(fact, ended, now)

        return self._write(run)

    def fact_read(
        self,
        subject: str,
        predicate: str | None = None,
        *,
        project: str | None = None,
        valid_at: str | None = None,
        known_at: str | None = None,
    ) -> list[Fact]:
        """The values of ``subject``'s facts (of one ``predicate``, or all) that held at
        ``valid_at`` as the store knew at ``known_at`` (both default to now), in the tiers
        the reader sees: global, the project's, and an agent's teams' and its own."""
        subject = _fact_subject(subject)
        chosen = fields.predicate(predicate) if predicate is not None else None
        valid_given = (
            parse_stamp(parse_moment(valid_at, self.clock, "valid_at")) if valid_at else None
        )
        known_given = (
            parse_stamp(parse_moment(known_at, self.clock, "known_at")) if known_at else None
        )

        def run(tx: Reads) -> list[Fact]:
            now = self._read_now(tx)
            valid, known = valid_given or now, known_given or now
            scopes = self._view(tx, project).scopes
            versions = self._fact_versions(tx, scopes, subject, chosen)
            found = [f for f in facts.as_known(versions, known) if facts.holds(f, valid, known)]
            return sorted(found, key=lambda f: (f.predicate, scopes.index(f.scope)))

        return self.backend.read(run)

    def fact_history(
        self, subject: str, predicate: str, *, project: str | None = None
    ) -> list[Fact]:
        """Every version of ``subject``'s ``predicate`` in the tiers the reader sees, in
        the order they were recorded, each with when it held and when it was believed."""
        subject, chosen = _fact_subject(subject), fields.predicate(predicate)

        def run(tx: Reads) -> list[Fact]:
            scopes = self._view(tx, project).scopes
            versions = self._fact_versions(tx, scopes, subject, chosen)
            return facts.as_known(versions, self._read_now(tx))

        return self.backend.read(run)

    def fact_retract(
        self, subject: str, predicate: str, *, project: str | None = None, reason: str = ""
    ) -> FactChange:
        """Withdraw the current value of ``subject``'s ``predicate`` in one tier (as
        ``fact_write`` chooses it): it was never so. The value it superseded holds again.

        The retracted version stays in the history, believed until now.
        """
        subject, predicate = _fact_subject(subject), fields.predicate(predicate)
        fields.text(reason, "reason")

        def run(work: Work) -> FactChange:
            tx, now = work.reads, work.now
            scope = self._fact_scope(tx, project, "retract")
            current = self._current_fact(tx, scope, subject, predicate)
            if current is None:
                raise NotFound(
                    f"no current value of {subject!r} {predicate!r} in {scope}",
                    remedy="read the fact, or its history, to see what there is",
                    subject=subject,
                    predicate=predicate,
                    scope=scope,
                )
            retracted = replace(current, status=Status.RETRACTED, updated_at=now)
            self._replace(work, retracted, current, "retracted")
            work.event("retract", self._payload(retracted, now), memory_id=current.id,
                reason=reason,
            )  # fmt: skip
            restored = None
            previous = tx.get_many([current.supersedes]) if current.supersedes else []
            if previous and previous[0].status is Status.SUPERSEDED:
                restored = replace(previous[0], status=Status.ACTIVE, valid_to=None, updated_at=now)
                self._replace(work, restored, previous[0], "reinstated")
                payload = self._payload(restored, now)
                work.event("reinstate", payload, memory_id=restored.id, reason=reason)
            return _change(retracted, restored, now)

        return self._write(run)

    def _fact_scope(self, tx: Reads, project: str | None, verb: str) -> str:
        """The tier a fact is written to or retracted from: an agent's own (an agent
        writes no shared tier), else the project's, else the global one."""
        if self.identity is not None:
            agent = self._agent(tx)
            if project:
                raise AccessDenied(
                    f"an agent may not {verb} facts of a project's tier",
                    remedy="write the fact without a project (it goes to the agent's own "
                    "scope), or propose it for a curator to decide",
                    principal=self.principal,
                )
            return agent_scope(agent.name)
        if project:
            self._require_project(tx, project)
            return project_scope(project)
        return GLOBAL_SCOPE

    def _fact_versions(
        self, tx: Reads, scopes: Sequence[str], subject: str, predicate: str | None
    ) -> list[Memory]:
        versions = tx.fact_versions(self.realm, scopes, subject, predicate)
        return [v for v in versions if v.status in facts.SHOWN]

    def _current_fact(self, tx: Reads, scope: str, subject: str, predicate: str) -> Memory | None:
        """The version of a fact that is current in one tier (the one active row)."""
        versions = tx.fact_versions(self.realm, [scope], subject, predicate)
        return next((v for v in versions if v.status is Status.ACTIVE), None)

    @staticmethod
    def _replace(
        work: Work,
        new: Memory,
        old: Memory,
        verb: str,
        *,
        remedy: str = "read it again and retry",
    ) -> None:
        """Swap a row for its changed self, refused if another write changed it first."""
        if not work.change(new, old):
            raise StaleUpdate(
                f"memory {old.id!r} changed while it was being {verb}", remedy=remedy, id=old.id
            )

    # -- the memory section of an agent's context ---------------------------------

    def _view(self, tx: Reads, project: str | None) -> _View:
        """Who is reading: the scopes they see (global, the project, an agent's teams and
        its own scope, in that order), how the section names them, and their search verb."""
        view = self._reader(tx, project)
        if view.agent is None:
            who, pointer = self.principal, "search"
        else:
            who, pointer = f"agent {view.agent.name}", "recall"
        on = f" on project {project}" if project else ""
        return _View(view.scopes, who + on, pointer)

    def context(
        self,
        *,
        project: str | None = None,
        turn: str | None = None,
        session: str | None = None,
        restate: bool = False,
        recall_timeout_ms: int | None = None,
        recall_failure_policy: str | None = None,
    ) -> ContextResult:
        """The memory section to place in front of the acting identity.

        The first render of a ``session`` states the whole section; later ones render
        what changed since that session's last render, until ``restate`` (after a
        compaction) or a move to another project states it whole again. Without a
        session every render is whole. With ``turn`` text, memories matching it are
        recalled (the hybrid search) and quoted as observations, bounded by
        ``recall_timeout_ms``; past it, policy ``skip`` renders without them and says
        so in the result, ``fail`` raises ``recall_failed``. Every memory rendered is
        written to the injection ledger. With memory turned off for the installation
        (``[memory] enabled = false``) the section is empty and nothing is recorded.
        """
        if project:
            fields.name(project, what="project")
        project = project or None
        if turn is not None:
            fields.text(turn, "turn")
        if session is not None:
            fields.text(session, "session")
            if not session.strip() or len(session) > fields.SESSION_MAX_CHARS:
                raise InvalidValue(
                    "a session key is 1 to 200 characters",
                    remedy="pass the key your agent runtime gives the session",
                    field="session",
                )
        settings = self.settings.context
        timeout_ms = _whole(
            settings.recall_timeout_ms if recall_timeout_ms is None else recall_timeout_ms,
            "recall_timeout_ms",
            fields.RECALL_TIMEOUT_MAX_MS,
        )
        policy = (
            settings.recall_failure_policy
            if recall_failure_policy is None
            else recall_failure_policy
        )
        if policy not in RECALL_POLICIES:
            raise InvalidValue(
                f"recall failure policy {policy!r} is not skip or fail",
                remedy="pass skip (render without recall) or fail (raise)",
                field="recall_failure_policy",
            )
        key = session or ""
        if not self.settings.memory_enabled:  # the installation keeps no memory section
            return ContextResult(
                text="",
                full=True,
                session=key,
                project=project,
                changes=(),
                injected=(),
                inline_bytes=0,
                inline_budget=self.settings.inline_max_bytes,
                index_left_out=0,
                search_only=0,
                expired=0,
                recall="off",
            )
        now = self._now()

        def look(
            tx: Reads,
        ) -> tuple[Scene, str | None, context.Shown | None, dict[str, Memory]]:
            """The scene, the session's last state (stored and read), and the rows of what
            left the section."""
            scene = self._scene(tx, project, now)
            raw = tx.get_context_state(self.realm, self.principal, key) if session else None
            gone: dict[str, Memory] = {}
            shown = context.Shown.loads(raw)
            if shown is not None:
                current = scene.surfaces()
                left = [i for i in shown.memories if i not in current]
                gone = {m.id: m for m in tx.get_many(left) if m.realm == self.realm}
            return scene, raw, shown, gone

        scene, raw, before, gone = self.backend.read(look)
        turn_text = turn or ""
        wanted = bool(turn_text.strip())
        started = time.monotonic()
        pending = (
            _in_background(lambda: self._turn_recall(turn_text, project, now))
            if wanted and timeout_ms > 0
            else None
        )
        recalled, recall, note = self._recalled(wanted, pending, started, timeout_ms, policy)
        quoted, unquoted = context.pick_recalled(
            recalled,
            {m.id for m in scene.band},
            max_entries=settings.recall_max_entries,
            max_bytes=settings.recall_max_bytes,
        )
        moved = before is not None and before.project != project
        rendered: list[tuple[str, Memory]]
        kinds: tuple[str, ...] = ()
        if before is None or restate or moved:
            text = context.render(scene, now, moved_to=(project or "") if moved else None)
            rendered = list(scene.surfaces().values())
        else:
            items = context.changes(before, scene, now, gone)
            text = context.render_changes(items)
            rendered = [(c.surface, c.memory) for c in items if c.memory is not None]
            kinds = tuple(c.kind for c in items)
        rendered += [(context.RECALL, m) for m in quoted]
        recalled_text = context.render_recall(quoted, now, unquoted, scene.pointer)
        rows = tuple(Injection(m.id, self.principal, key, surface, now) for surface, m in rendered)
        state = context.Shown.of(scene, project).dumps() if session else None

        def record(work: Work) -> None:
            work.record_injections(rows)
            if state is not None and state != raw:
                work.put_context_state(self.principal, key, state)

        if rows or state != raw:  # a turn where nothing changed writes nothing
            self._write(record)
        return ContextResult(
            text="\n".join(t for t in (text, recalled_text) if t),
            full=before is None or restate or moved,
            session=key,
            project=project,
            changes=kinds,
            injected=rows,
            inline_bytes=scene.inline_total,
            inline_budget=scene.inline_budget,
            index_left_out=scene.index_left.count,
            search_only=scene.search_only,
            expired=scene.expired,
            recall=recall,
            recall_note=note,
        )

    def _scene(self, tx: Reads, project: str | None, now: datetime) -> Scene:
        """What the view holds now, bounded by the inline budget and the index ceilings."""
        view = self._view(tx, project)
        limits = self.settings.context
        budget_bytes = self.settings.inline_max_bytes
        where = MemoryFilter(realm=self.realm, scopes=view.scopes)
        live = replace(where, live_at=stamp(now))
        inline = tx.list_memories(replace(live, loads=(Load.INLINE.value,)))
        band, over = context.choose_band(inline, budget_bytes)

        def fit(memories: Sequence[Memory], scoped: bool) -> list[Memory]:
            """The leading memories within the index's ceilings."""
            return context.cap(
                memories,
                now,
                max_bytes=limits.index_max_bytes,
                max_entries=limits.index_max_entries,
                scoped=scoped,
            )

        listed = fit(over, scoped=True)
        indexed = replace(live, loads=(Load.INDEX.value,))
        index: list[Memory] = []
        for page in (INDEX_FIRST_PAGE, limits.index_max_entries):  # most sections fit the first
            rows = tx.list_memories(indexed, min(page, limits.index_max_entries))
            index = fit(rows, scoped=False)
            if len(index) < len(rows) or len(rows) < page:
                break
        tally = self._tally(tx, where, stamp(now))
        left_out = tally.counts.index - len(index)
        tags: tuple[tuple[str, int], ...] = ()
        if left_out:
            if tally.tags is None:
                tally = replace(tally, tags=tx.tag_counts(indexed))
                self.store.tallies[where.realm, where.scopes] = tally
            assert tally.tags is not None
            shown = context.tag_histogram(index)
            every = tally.tags
            tags = context.top_tags({t: n - shown.get(t, 0) for t, n in every.items()})
        return context.Scene(
            heading=view.heading,
            scopes=view.scopes,
            pointer=view.pointer,
            band=tuple(band),
            listed=tuple(listed),
            listed_left=context.Overflow(
                len(over) - len(listed),
                context.top_tags(context.tag_histogram(over[len(listed) :])),
            ),
            inline_total=sum(m.body_bytes for m in inline),
            inline_budget=budget_bytes,
            index=tuple(index),
            index_left=context.Overflow(left_out, tags),
            search_only=tally.counts.search,
            expired=tally.counts.expired,
        )

    def _tally(self, tx: Reads, where: MemoryFilter, now: str) -> _Tally:
        """The view's counts: those of an earlier render while they still hold, else
        counted again (they are the part of a render that grows with the store)."""
        head = tx.chain_head()[0]
        found: _Tally | None = self.store.tallies.get((where.realm, where.scopes))
        if found is not None and found.holds(head, now):
            return found
        if len(self.store.tallies) >= TALLIES_KEPT:
            self.store.tallies.clear()
        tally = _Tally(head, now, tx.load_counts(where, now))
        self.store.tallies[where.realm, where.scopes] = tally
        return tally

    def _turn_recall(self, turn: str, project: str | None, now: datetime) -> list[Memory]:
        """The view's live memories that match a turn's content words, best first (the
        hybrid search); none for a turn without content words."""
        query = lexical.turn_query(turn)
        if not query:
            return []
        limit = self.settings.context.recall_max_entries + RECALL_SLACK
        result = self._search(
            [query],
            now,
            lambda tx: MemoryFilter(realm=self.realm, scopes=self._view(tx, project).scopes),
            limit=limit,
            budget_tokens=None,
            live_only=True,
            listing_summary=str,
        )
        return [hit.memory for hit in result.hits]

    @staticmethod
    def _recalled(
        wanted: bool,
        pending: Future[list[Memory]] | None,
        started: float,
        timeout_ms: int,
        policy: str,
    ) -> tuple[list[Memory], str, str | None]:
        """Turn recall's memories, and ``off`` (not wanted), ``ok``, or ``skipped`` with
        the reason (policy ``skip``); under ``fail`` a recall that timed out or failed
        raises. A timeout of 0 leaves no time at all: recall is not even started."""
        if not wanted:
            return [], "off", None
        code = "timeout"
        reason = f"recall took longer than {timeout_ms} ms"
        if pending is not None:
            remaining = max(0.0, timeout_ms / 1000 - (time.monotonic() - started))
            try:
                return pending.result(timeout=remaining), "ok", None
            except TimeoutError:
                pending.cancel()
            except RetainError as exc:
                reason = f"recall failed: {exc.message}"
                code = exc.code
        if policy == "fail":
            raise RecallFailed(
                reason,
                remedy="retry, raise recall_timeout_ms, or use the skip policy",
                cause=code,
                timeout_ms=timeout_ms,
            )
        return [], "skipped", reason

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
        _check_limit(limit)
        view = View(self.actor)
        identity = view.injections_of(identity)  # refused before any I/O
        return self.backend.read(
            lambda tx: audit.injections(
                tx, view, memory_id=memory_id, session=session, identity=identity, limit=limit
            )
        )

    # -- projects -------------------------------------------------------------------

    def list_projects(self) -> list[Project]:
        return self.backend.read(lambda tx: tx.list_projects(self.realm))

    def rename_project(self, old: str, new: str) -> Project:
        fields.name(new, what="project")
        return self._write(lambda work: registry.rename_project(work, old, new))

    def remove_project(self, name: str) -> None:
        self._write(lambda work: registry.remove_project(work, name))

    # -- writing ------------------------------------------------------------------

    def write(self, name: str, **options: Any) -> WriteResult:
        """Create or update one memory by name (see ``WriteRequest`` for the options)."""
        request = fields.made(WriteRequest, {"name": name, **options})
        return self.write_many([request], notes=True)[0]

    def write_many(
        self,
        requests: Sequence[WriteRequest],
        *,
        notes: bool = False,
        reason: str = "",
        progress: Progress | None = None,
    ) -> list[WriteResult]:
        """Apply every write in one transaction: all land or none does.

        The inline budget is measured once, over the batch as a whole.
        """
        normalized = [self._normalized(request) for request in requests]
        return self._write_normalized(normalized, notes=notes, reason=reason, progress=progress)

    def _write_normalized(
        self,
        requests: Sequence[WriteRequest],
        *,
        notes: bool = False,
        reason: str = "",
        progress: Progress | None = None,
    ) -> list[WriteResult]:
        """``write_many`` of requests ``_normalized`` already checked and put in stored form."""

        def run(work: Work) -> list[WriteResult]:
            tx, now = work.reads, work.now
            now_stamp = stamp(now)
            inline = _Inline(tx.inline_entries(self.realm, now_stamp))
            staged = _Staged()
            results = []
            for done, request in enumerate(requests, start=1):
                results.append(self._apply(work, request, inline, staged, notes, reason))
                if progress is not None:
                    progress("write", done, len(requests))
            inline.check(self.settings.inline_max_bytes)
            work.create(list(staged.rows.values()))
            reporter = None if progress is None else (lambda d, t: progress("embed", d, t))
            work.make_keys(progress=reporter)
            return results

        return self._write(run)

    def _normalized(self, r: WriteRequest) -> WriteRequest:
        """The request checked field by field, in stored form (refused before any I/O).

        ``expires`` comes back as a stored timestamp, ``""`` (clear) or None (keep).
        """
        fields.dataclass_fields(r)
        fields.name(r.name)
        if r.expected_hash is not None:
            fields.text(r.expected_hash, "expected_hash")
        if r.project:
            fields.name(r.project, what="project")
        if r.tier not in (None, "global", "project"):
            raise InvalidValue(
                f"tier {r.tier!r} is not global or project",
                remedy="pass tier global or project, or leave it out",
                field="tier",
            )
        if r.tier == "project" and not r.project:
            raise NoProject(
                "a write to the project tier needs a project",
                remedy="pass a project, or write to the global tier",
                name=r.name,
            )
        return replace(
            r,
            description=None if r.description is None else fields.description(r.description),
            body=None if r.body is None else fields.text(r.body, "body"),
            priority=None if r.priority is None else fields.priority(r.priority),
            load=None if r.load is None else fields.load(r.load),
            tags=None if r.tags is None else fields.tags(r.tags),
            references=None if r.references is None else fields.references(r.references),
            source=None if r.source is None else fields.source(r.source),
            expires=parse_expires(r.expires, self.clock) if r.expires else r.expires,
            subject=_unless_kept(r.subject, fields.subject),
            thread=_unless_kept(r.thread, fields.thread),
            valid_from=_unless_kept(r.valid_from, lambda v: parse_valid_from(v, self.clock)),
        )

    def _apply(
        self,
        work: Work,
        r: WriteRequest,
        inline: _Inline,
        staged: _Staged,
        notes: bool,
        reason: str,
    ) -> WriteResult:
        tx, now, rekey = work.reads, work.now, work.rekey
        project = r.project or None
        if project:
            self._require_project(tx, project)
        if r.exact_tier:
            visible = [project_scope(project) if project else GLOBAL_SCOPE]
        else:
            visible = [GLOBAL_SCOPE] + ([project_scope(project)] if project else [])
        named = tx.find_by_name(self.realm, r.name, None) + staged.named(r.name)
        existing = next((m for m in named if m.scope in visible), None)
        if existing is not None and r.create_only:
            raise MemoryExists(
                f"a memory named {r.name!r} already exists in the {existing.tier} tier",
                remedy=(
                    "overwrite it with the snapshot's version: import again, forced"
                    if r.restore is not None
                    else "update it instead, or choose another name"
                ),
                fix="force_import" if r.restore is not None else "update",
                name=r.name,
                tier=existing.tier,
            )
        if r.expected_hash is not None and (
            existing is None or existing.content_hash != r.expected_hash
        ):
            raise StaleUpdate(
                f"memory {r.name!r} changed after it was read",
                remedy="read it again and redo the change on the current body",
                name=r.name,
            )
        if r.tier == "global":
            scope = GLOBAL_SCOPE
        elif r.tier == "project" and project:
            scope = project_scope(project)
        elif existing is not None:
            scope = existing.scope
        else:
            scope = project_scope(project) if project else GLOBAL_SCOPE
        self._check_name_free(named, r.name, scope, existing)

        merged = self._merge(r, existing, scope, now)
        out_notes: list[str] = []
        if len(merged.description) > fields.DESCRIPTION_NOTE_AT:
            out_notes.append(
                f"The description is {len(merged.description)} characters long; the index "
                "lists it every turn, so keep the fact there short and the detail in the body."
            )
        if merged.is_expired(now) and (existing is None or r.expires):
            out_notes.append(
                f"'{r.name}' is already expired: its expiry "
                f"{stamp(merged.expires_at or now)} is past, so it stays out of the index "
                "and the memory section; pass a later expiry, or an empty one to clear it."
            )
        elif existing is not None and merged.is_expired(now):
            out_notes.append(
                f"'{r.name}' stays expired (since {stamp(merged.expires_at or now)}); "
                "pass a new expiry, or an empty one to clear it."
            )
        if existing is not None and existing.scope != merged.scope:
            out_notes.append(f"Moved '{r.name}' from the {existing.tier} tier to {merged.tier}.")
        if notes and (existing is None or existing.description != merged.description):
            similar = self._similar(tx, merged)
            if similar is not None:
                out_notes.append(
                    f"Note: '{similar.name}' already says something very similar. If this is "
                    f"the same fact, write to '{similar.name}' instead and remove "
                    f"'{r.name}'. Two near-copies both stay in the index and neither "
                    "supersedes the other."
                )

        if existing is not None and self._same(existing, merged):
            return WriteResult(
                existing, created=False, changed=False, notes=tuple(out_notes), previous=existing
            )
        if existing is None:
            staged.put(merged)
            kind = "create"
        elif staged.holds(existing.id):
            staged.put(merged)
            kind = "restore" if r.restore is not None else "update"
        else:
            # A restore takes the snapshot's version, created date included, in place.
            if existing.thread != merged.thread:
                rekey.leave(tx, existing.id)
            if not work.change(merged, existing, restore=r.restore is not None):
                raise StaleUpdate(
                    f"memory {r.name!r} changed while this write was being made",
                    remedy="read it again and retry the write",
                    name=r.name,
                )
            kind = "restore" if r.restore is not None else "update"
        if existing is None or key.source_changed(existing, merged):
            rekey.touch(merged.id)
        inline.apply(existing, merged, stamp(now))
        work.event(kind, self._payload(merged, now), memory_id=merged.id, reason=reason)
        return WriteResult(
            merged,
            created=existing is None,
            changed=True,
            notes=tuple(out_notes),
            previous=existing,
        )

    @staticmethod
    def _check_name_free(
        named: Sequence[Memory], name: str, scope: str, existing: Memory | None
    ) -> None:
        """Refuse ``scope`` for ``name`` when another memory of the realm holds it there."""
        others = [m for m in named if existing is None or m.id != existing.id]
        if scope == GLOBAL_SCOPE:
            clash = others
        else:
            clash = [m for m in others if m.scope in (GLOBAL_SCOPE, scope)]
        if clash:
            tiers = sorted({m.tier for m in clash})
            raise NameConflict(
                f"{name!r} is already a memory of the {', '.join(tiers)} tier, and a global "
                "name may not also be a project's",
                remedy="choose another name",
                name=name,
                tiers=tiers,
            )

    def _merge(self, r: WriteRequest, existing: Memory | None, scope: str, now: datetime) -> Memory:
        description = r.description or ""
        if existing is None:
            if not description:
                raise DescriptionRequired(
                    f"new memory {r.name!r} has no description",
                    remedy="describe it in one line: the index lists it by this",
                    name=r.name,
                )
            body = r.body or ""
            expires = r.expires or None
            created = r.restore.created_at if r.restore else now
            verified = r.restore.verified_at if r.restore else created
            return Memory(
                id=self.store.ids.new(now),
                realm=self.realm,
                scope=scope,
                name=r.name,
                description=description,
                body=body,
                tags=tuple(r.tags or ()),
                priority=r.priority if r.priority is not None else DEFAULT_PRIORITY,
                load=Load(r.load) if r.load is not None else Load.INDEX,
                references=tuple(r.references or ()),
                source=r.source or "",
                subject=r.subject or None,
                predicate=None,
                trust=self.actor.trust,
                status=Status.ACTIVE,
                ever_quarantined=False,
                supersedes=None,
                content_hash=content_hash(body),
                author=self.principal,
                created_at=created,
                updated_at=now,
                verified_at=verified,
                expires_at=parse_optional_stamp(expires),
                valid_from=parse_optional_stamp(r.valid_from or None),
                valid_to=None,
                read_count=r.restore.read_count if r.restore else 0,
                thread=r.thread or None,
            )
        body = existing.body if r.body is None else r.body
        if r.expires is None:
            expires_at = existing.expires_at
        elif r.expires == "":
            expires_at = None
        else:
            expires_at = parse_optional_stamp(r.expires)
        merged = replace(
            existing,
            scope=scope,
            description=description or existing.description,
            body=body,
            tags=existing.tags if r.tags is None else tuple(r.tags),
            priority=existing.priority if r.priority is None else r.priority,
            load=existing.load if r.load is None else Load(r.load),
            references=(existing.references if r.references is None else tuple(r.references)),
            source=r.source or existing.source,
            content_hash=content_hash(body),
            expires_at=expires_at,
            subject=existing.subject if r.subject is None else (r.subject or None),
            thread=existing.thread if r.thread is None else (r.thread or None),
            valid_from=(
                existing.valid_from
                if r.valid_from is None
                else parse_optional_stamp(r.valid_from or None)
            ),
        )
        if r.restore is not None:
            merged = replace(
                merged,
                created_at=r.restore.created_at,
                verified_at=r.restore.verified_at,
                read_count=r.restore.read_count,
            )
        elif r.verified:
            merged = replace(merged, verified_at=now)
        if not self._same(existing, merged):
            merged = self._changed(merged, now)
        return merged

    def _changed(self, memory: Memory, now: datetime) -> Memory:
        """A change of ``memory``'s content by the actor: stamped, its last writer
        recorded (the author stays who wrote it), and its trust the lower of its own and
        the writer's. Trust never rises by a change: raising it is a review."""
        return replace(
            memory,
            updated_at=now,
            changed_by=self.principal,
            trust=lower_trust(memory.trust, self.actor.trust),
        )

    @staticmethod
    def _same(a: Memory, b: Memory) -> bool:
        return replace(a, updated_at=b.updated_at) == b

    def _similar(self, tx: Reads, memory: Memory) -> Memory | None:
        """A visible memory whose description says nearly the same thing."""
        mine = _words(memory.description)
        if not mine:
            return None
        scopes = None if memory.scope == GLOBAL_SCOPE else (GLOBAL_SCOPE, memory.scope)
        where = MemoryFilter(realm=self.realm, scopes=scopes, tiers_only=True)
        ids = tx.lookup_words(where, sorted(mine), field="description", limit=8)
        candidates = tx.get_many(ids)
        best: tuple[float, Memory] | None = None
        for other in candidates:
            if other.id == memory.id or other.name == memory.name:
                continue
            theirs = _words(other.description)
            similarity = len(mine & theirs) / len(mine | theirs) if theirs else 0.0
            if similarity >= SIMILAR_DESCRIPTION and (best is None or similarity > best[0]):
                best = (similarity, other)
        return best[1] if best else None

    # -- edit -------------------------------------------------------------------------

    def edit(
        self,
        name: str,
        old: str,
        new: str,
        *,
        replace_all: bool = False,
        verified: bool = False,
        project: str | None = None,
    ) -> EditResult:
        """Replace ``old`` with ``new`` in a body; ``new`` empty deletes the text."""
        fields.text(old, "old text")
        fields.text(new, "new text")
        if old == "":
            raise InvalidValue(
                "the text to replace is empty",
                remedy="give the exact text to find in the body",
                field="old",
            )

        def run(work: Work) -> EditResult:
            tx, now = work.reads, work.now
            now_stamp = stamp(now)
            current = self._locate(tx, name, project)
            found = current.body.count(old)
            if found == 0:
                raise EditNoMatch(
                    f"the text to replace does not occur in {name!r}",
                    remedy="read the memory and copy the text exactly, whitespace included",
                    name=name,
                )
            if found > 1 and not replace_all:
                raise EditAmbiguous(
                    f"the text to replace occurs {found} times in {name!r}",
                    remedy="give more surrounding text to pick one, or pass replace_all",
                    name=name,
                    occurrences=found,
                )
            body = current.body.replace(old, new, -1 if replace_all else 1)
            start = current.body.find(old)
            if body == current.body and not verified:  # nothing to change: nothing recorded
                excerpt = _excerpt(body, start, len(new))
                return EditResult(current, replacements=0, excerpt=excerpt, previous=current)
            changed = replace(
                current,
                body=body,
                content_hash=content_hash(body),
                updated_at=now,
                verified_at=now if verified else current.verified_at,
            )
            if body != current.body:
                changed = self._changed(changed, now)
            inline = _Inline(tx.inline_entries(self.realm, now_stamp))
            inline.apply(current, changed, now_stamp)
            inline.check(self.settings.inline_max_bytes)
            if not work.change(changed, current):
                raise StaleUpdate(
                    f"memory {name!r} changed while the edit was being made",
                    remedy="read it again and redo the edit",
                    name=name,
                )
            work.rekey.touch(changed.id)
            work.event("edit", self._payload(changed, now), memory_id=changed.id)
            return EditResult(
                changed,
                replacements=found if replace_all else 1,
                excerpt=_excerpt(body, start, len(new)),
                previous=current,
            )

        return self._write(run)

    # -- reading ------------------------------------------------------------------------

    def get(self, name: str, *, project: str | None = None) -> Record:
        """Every field of a memory and what references it; counts as no read."""

        def run(tx: Reads) -> Record:
            memory = self._locate(tx, name, project, unnamed=True)
            return Record(self._linked(tx, [memory])[0], self._referenced_by(tx, memory))

        return self.backend.read(run)

    def _referenced_by(self, tx: Reads, memory: Memory) -> tuple[str, ...]:
        """What cites ``memory``: by its id from anywhere, by its name from where that
        name resolves to it (its own tier, or anywhere for a global memory)."""
        targets = [memory.id] + ([memory.name] if memory.name else [])
        return tuple(
            _label(m)
            for m in tx.referencing(self.realm, targets)
            if m.id != memory.id
            and (
                memory.id in m.references or memory.scope == GLOBAL_SCOPE or m.scope == memory.scope
            )
        )

    def read(self, name: str, *, offset: int = 0, project: str | None = None) -> ReadResult:
        """A page of a memory's body with its caption; the first page counts as a read."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidValue(
                f"offset {offset!r} is not a whole number of characters ≥ 0",
                remedy="pass 0 or a continuation offset a read returned",
                field="offset",
            )

        def run(work: Work) -> ReadResult:
            tx, now = work.reads, work.now
            memory = self._linked(tx, [self._locate(tx, name, project, unnamed=True)])[0]
            if offset > len(memory.body):
                raise InvalidValue(
                    f"offset {offset} is past the end of {name!r} ({len(memory.body)} characters)",
                    remedy="pass 0 or a continuation offset a read returned",
                    field="offset",
                )
            if offset == 0:
                count = work.count_read(memory.id)
                memory = replace(memory, read_count=count)
                work.event("read", {"read_count": count}, memory_id=memory.id)
            end = offset + READ_PAGE_CHARS
            references = []
            for target in memory.references:
                named = (
                    tx.find_by_name(self.realm, target, [GLOBAL_SCOPE, memory.scope])
                    if fields.is_name(target)
                    else []
                )
                references.append(Reference(target, named[0].description if named else None))
            return ReadResult(
                memory=memory,
                text=memory.body[offset:end],
                offset=offset,
                next_offset=end if end < len(memory.body) else None,
                total_chars=len(memory.body),
                caption=self.caption(memory, now),
                references=tuple(references),
                referenced_by=self._referenced_by(tx, memory),
            )

        return self._write(run)

    @staticmethod
    def caption(memory: Memory, now: datetime) -> str:
        """ "Recorded 47 days ago, verified yesterday" and the expiry, when there is one."""
        recorded = f"Recorded {age_phrase(memory.created_at, now)}"
        if memory.was_verified:
            checked = f"verified {age_phrase(memory.verified_at, now)}"
        else:
            checked = "not verified since"
        text = f"{recorded}, {checked}."
        if memory.is_expired(now):
            text += f" Expired {age_phrase(memory.expires_at or now, now)}."
        return text + " A point-in-time note, not live state."

    def list_memories(
        self,
        *,
        project: str | None = None,
        tag: str | None = None,
        referencing: str | None = None,
        unverified: str | None = None,
        expired: bool = False,
        limit: int | None = None,
        after: str | None = None,
    ) -> list[Memory]:
        """Memories in index order (priority, then newest first); ``after`` is a cursor
        (``fields.cursor_of`` of the last memory of a page) to continue from."""
        position = fields.cursor(after) if after is not None else None
        if limit is not None:
            fields.whole(limit, "limit", 1)
        now = self._now()

        def run(tx: Reads) -> list[Memory]:
            where = self._filter(
                tx, now, project, tag, referencing, unverified, expired, listing=True
            )
            return self._linked(tx, tx.list_memories(where, limit, position))

        return self.backend.read(run)

    def _filter(
        self,
        tx: Reads,
        now: datetime,
        project: str | None,
        tag: str | None,
        referencing: str | None,
        unverified: str | None,
        expired: bool,
        *,
        listing: bool,
        tier: str | None = None,
    ) -> MemoryFilter:
        scopes: tuple[str, ...] | None
        if project is None:
            scopes = None if tier != "global" else (GLOBAL_SCOPE,)
        elif project == "":
            scopes = (GLOBAL_SCOPE,)
        else:
            self._require_project(tx, project)
            if listing or tier == "project":
                scopes = (project_scope(project),)
            elif tier == "global":
                scopes = (GLOBAL_SCOPE,)
            else:
                scopes = (GLOBAL_SCOPE, project_scope(project))
        with_own = tier is None and (not listing or project is None)
        scopes, tiers_only = self._reader(tx).narrow(scopes, with_own=with_own)
        for value, field in ((referencing, "referencing"), (unverified, "unverified")):
            if value is not None:
                fields.text(value, field)
        targets: tuple[str, ...] = ()
        if referencing:
            targets = (referencing,)
            named = (
                tx.find_by_name(self.realm, referencing, None)
                if fields.is_name(referencing)
                else []
            )
            targets += tuple(m.id for m in named)
        verified_before = stamp(before(now, parse_duration(unverified))) if unverified else None
        if tag is not None:
            fields.tags([tag])
        return MemoryFilter(
            realm=self.realm,
            scopes=scopes,
            tiers_only=tiers_only,
            tag=tag,
            referencing=targets,
            verified_before=verified_before,
            expired_at=stamp(now) if expired else None,
        )

    def search(
        self,
        queries: str | Sequence[str] = (),
        *,
        project: str | None = None,
        tier: str | None = None,
        limit: int = 10,
        tag: str | None = None,
        referencing: str | None = None,
        unverified: str | None = None,
        expired: bool = False,
        budget_tokens: int | None = None,
    ) -> SearchResult:
        """Search by one query or a list of synonyms; without queries, a filtered listing.

        Expired memories are found like any other, ranked with the freshness they have
        and marked (``SearchHit.expired``); ``expired`` keeps only them. With
        ``budget_tokens``, every relevant result is returned when all of them fit;
        otherwise the best that fit, at most ``limit``. A search takes at most
        ``lexical.MAX_QUERIES`` queries of ``lexical.MAX_QUERY_CHARS`` characters,
        ``lexical.MAX_WORDS`` words and ``lexical.MAX_SCANNED`` scanned terms
        (``query_too_long`` otherwise).
        """
        if isinstance(queries, str):
            queries = [queries]
        queries = [fields.text(q, "query") for q in _as_list(queries, "queries")]
        _check_limit(limit)
        if tier not in (None, "global", "project"):
            raise InvalidValue(
                f"tier {tier!r} is not global or project",
                remedy="pass tier global or project, or leave it out",
                field="tier",
            )
        if tier == "project" and not project:
            raise NoProject(
                "a search of the project tier needs a project",
                remedy="pass a project, or search without a tier",
            )
        _check_budget(budget_tokens)
        now = self._now()

        def where_of(tx: Reads) -> MemoryFilter:
            return self._filter(
                tx, now, project, tag, referencing, unverified, expired, listing=False, tier=tier
            )

        return self._search(
            queries,
            now,
            where_of,
            limit=limit,
            budget_tokens=budget_tokens,
            listing_summary=lambda n: _listing_summary(n, tag, referencing, unverified, expired),
        )

    def _search(
        self,
        queries: Sequence[str],
        now: datetime,
        where_of: Callable[[Reads], MemoryFilter],
        *,
        limit: int,
        budget_tokens: int | None,
        listing_summary: Callable[[int], str],
        live_only: bool = False,
    ) -> SearchResult:
        """The ranked search every door's search and an agent's recall share; with
        ``live_only`` (what a turn recalls into a context) expired memories are left out."""
        from retain.search import vectors  # numpy: loaded by the first search, not on open

        plans = lexical.plan_queries(queries)
        loaded = self.embedder if plans else None
        embedder = loaded.embedder if loaded is not None else None
        asked = key.embed(embedder, [p.text for p in plans]) if embedder is not None else None
        depth = max(limit, rank.DEPTH)

        def searched(tx: Reads) -> MemoryFilter:
            where = where_of(tx)
            return replace(where, live_at=stamp(now)) if live_only else where

        semantic_of: Callable[[Reads, MemoryFilter], list[lexical.SenseHits]] | None = None
        beside: Future[list[lexical.SenseHits]] | None = None
        if embedder is not None and asked is not None:
            model, query = embedder, asked
            background = self._background(model) @ query.T

            def semantic_of(tx: Reads, where: MemoryFilter) -> list[lexical.SenseHits]:
                if isinstance(tx, NativeVectors):  # the database searches its vectors
                    return self._native_semantic(tx, model, query, background, where, depth)
                cosines = self._vector_index(tx, model).scores(query, self.realm)
                found = []
                for i, total in enumerate(cosines.totals):
                    gate = rank.gate_of(float(total), cosines.count, background[:, i])
                    found.append(
                        vectors.search(
                            tx, cosines.nums, where, cosines.exact(i, gate), depth=depth, gate=gate
                        )
                    )
                return found

            if isinstance(self.backend, ReadsBeside):  # the word senses meanwhile
                sense = semantic_of  # (a closure does not keep the narrowing from None)
                beside = self.backend.read_beside(lambda tx: sense(tx, searched(tx)))

        def run(tx: Reads) -> SearchResult:
            if not plans:
                listed = tx.list_memories(where_of(tx), limit)
                hits = tuple(SearchHit(m, 0.0, ()) for m in listed)
                return SearchResult(
                    hits,
                    listing_summary(len(hits)),
                    listing=True,
                )
            where = searched(tx)
            scans = lexical.Scans.of(plans)
            rows = lexical.scan_pass(tx, where, plans)
            lexical.count_ahead(tx, plans)
            per_query = [
                (
                    p.text,
                    lexical.search_query(
                        tx, where, p, depth=depth, wanted=limit, scans=scans, scanned=rows
                    ),
                )
                for p in plans
            ]
            if semantic_of is not None:
                found = beside.result() if beside is not None else semantic_of(tx, where)
                for (_, senses), semantic in zip(per_query, found, strict=True):
                    if semantic.hits:
                        senses.append(semantic)
            fused = rank.fuse(per_query)
            # Every candidate is weighed by its standing; only the results are fetched whole.
            standing = {s.id: s for s in tx.standings(list(fused))}
            named = tx.subjects_named(self.realm, rank.subject_phrases(queries))
            rank.favour_subject(fused, standing, named)
            rank.share_thread(fused, tx.thread_adjacent(list(fused)))
            rank.lift_threads(fused, standing)
            best = max((f.score for f in fused.values()), default=0.0)
            scored = [
                (rank.final_score(fused[s.id].score, best, s, now), s) for s in standing.values()
            ]
            scored.sort(key=lambda c: (-c[0], c[1].priority, c[1].id))
            chosen = rank.pack(scored, limit, budget_tokens, lambda c: rank.tokens(c[1]))
            memories = {m.id: m for m in tx.get_many([s.id for _, s in chosen])}
            top = []
            for score, s in chosen:
                entry = fused[s.id]
                memory = memories[s.id]
                top.append(
                    SearchHit(
                        memory,
                        score,
                        tuple(entry.senses),
                        tuple(entry.scanned),
                        tuple(entry.queries),
                        expired=memory.is_expired(now),
                    )
                )
            summary = f"{len(top)} of {len(scored)} matching memories, best first"
            if budget_tokens is not None:
                summary += f", within {budget_tokens} tokens"
            if gone := sum(hit.expired for hit in top):
                summary += f"; {gone} expired"
            return SearchResult(
                tuple(top),
                summary,
                listing=False,
                embedder=loaded.model_id if loaded is not None else "",
                degraded=loaded.degraded if loaded is not None else None,
            )

        return self.backend.read(run)

    def _native_semantic(
        self,
        tx: NativeVectors,
        embedder: Embedder,
        asked: Matrix,
        background: Matrix,
        where: MemoryFilter,
        depth: int,
    ) -> list[lexical.SenseHits]:
        """The semantic sense where the database searches vectors: its nearest rows
        that pass the filters, held to the same gate (its mean from the realm's sum)."""
        sums = tx.vector_sums(embedder.model_id, self.realm)
        for dim, _, count in sums:
            if dim != embedder.dim:
                raise DimensionMismatch(
                    f"{count} memories have {dim}-dimensional vectors of {embedder.model_id}, "
                    f"which makes {embedder.dim}-dimensional ones",
                    remedy="reindex the store to embed every memory again with one model",
                    fix="reindex",
                    model=embedder.model_id,
                    expected_dim=embedder.dim,
                    actual_dim=dim,
                )
        total = next((vector for _, vector, _ in sums), None)
        size = sum(count for _, _, count in sums)
        nearest = tx.nearest(embedder.model_id, asked, where, depth) if size else []
        found = []
        for i, query in enumerate(asked):
            store_total = float(total @ query) if total is not None else 0.0
            gate = rank.gate_of(store_total, size, background[:, i])
            near = nearest[i] if size else []
            found.append(
                lexical.SenseHits(lexical.SEMANTIC, tuple(h for h in near if h.score >= gate))
            )
        return found

    def _background(self, embedder: Embedder) -> Matrix:
        """The gate's reference sentences, embedded once per embedder and store."""
        return self.store.background(embedder)

    def _vector_index(self, tx: Reads, embedder: Embedder) -> VectorIndex:
        """The store's in-memory vectors of the model in use, brought up to date."""
        return self.store.vectors(tx, embedder)

    # -- delete -------------------------------------------------------------------------

    def delete(self, name: str, *, project: str | None = None) -> DeleteResult:
        """Remove a memory; memories that referenced it keep their references."""

        def run(work: Work) -> DeleteResult:
            tx, now = work.reads, work.now
            memory = self._locate(tx, name, project)
            cited = self._referenced_by(tx, memory)
            work.remove(memory.id)
            work.event("delete", self._payload(memory, now), memory_id=memory.id)
            return DeleteResult(memory, cited)

        return self._write(run)

    # -- export / import ---------------------------------------------------------------

    def export(
        self,
        directory: str | Path,
        *,
        project: str | None = None,
        progress: Progress | None = None,
    ) -> ExportResult:
        """Write a snapshot of the active memories of the global and project tiers.

        Agents' own memories and facts are left out, and counted: the snapshot format
        has no place for them yet (a file at the root would come back as a global memory,
        a fact as a plain one without its history).
        """
        now = self._now()

        def run(tx: Reads) -> tuple[list[Memory], int, dict[str, int]]:
            where = self._filter(tx, now, project, None, None, None, False, listing=True)
            listed = tx.list_memories(where)
            memories = [
                m for m in listed if (m.scope == GLOBAL_SCOPE or m.project) and m.predicate is None
            ]
            positions = tx.thread_positions([m.id for m in memories if m.thread])
            return memories, len(listed) - len(memories), positions

        from retain import transfer  # YAML: loaded by an export or import only

        memories, left_out, positions = self.backend.read(run)
        count = transfer.export_snapshot(Path(directory), memories, now, progress, positions)
        return ExportResult(count, left_out)

    def import_(
        self, directory: str | Path, *, force: bool = False, progress: Progress | None = None
    ) -> list[WriteResult]:
        """Restore a snapshot in one transaction; nothing lands unless everything does."""
        from retain import transfer

        snapshot = transfer.read_snapshot(Path(directory), progress)
        requests = []
        for path, item in snapshot:  # a refused field names its file
            try:
                normalized = self._normalized(item)
            except InvalidInput as exc:
                raise transfer.refused(path, exc) from exc
            requests.append(replace(normalized, create_only=not force, exact_tier=True))
        if not requests:
            return []
        return self._write_normalized(requests, reason="import", progress=progress)

    def events(
        self, *, after: int = 0, limit: int = 100, memory_id: str | None = None
    ) -> list[Event]:
        """The realm's event log from ``seq`` above ``after``, oldest first (a page of at
        most ``limit``); ``memory_id`` keeps one memory's history. Not an agent's verb: the
        log holds every scope's changes. An event about a memory outside the reader's
        view keeps its place (the chain stays whole) but not its payload (``withheld``)."""
        fields.whole(after, "after", 0)
        fields.whole(limit, "limit", 1)
        if memory_id is not None:
            fields.text(memory_id, "memory_id")

        return self.backend.read(
            lambda tx: audit.events(
                tx, self._reader(tx), after=after, limit=limit, memory_id=memory_id
            )
        )

    # -- health -----------------------------------------------------------------------

    def verify(self, *, rebuild: bool = False, progress: Progress | None = None) -> VerifyReport:
        """Check the search index, the vectors and the event chain; ``rebuild`` regenerates
        the derived data first (the full-text index, then every search key)."""
        if rebuild:
            if progress is not None:
                progress("rebuild", 0, 1)
            self.backend.rebuild_index()
            if progress is not None:
                progress("rebuild", 1, 1)
            self.reindex(progress=progress)
        sound, documents, problems = self.backend.check_index()
        model = self.embedder.model_id if self.embedder.embedder is not None else None
        # Vectors are counted over the whole store (a reindex covers every realm); with no
        # embedder configured there are none to expect.

        def chain(tx: Reads) -> tuple[int, int, int, int, int, ledger.ChainCheck]:
            total = tx.count_events()
            events = tx.iter_events()
            if progress is not None:
                events = _reporting(events, "chain", total, progress)
            everywhere = tx.count_memories(None)
            vectored = tx.vector_count(model) if model is not None else 0
            pending = tx.pending_vectors(model) if model is not None else 0
            return (
                tx.count_memories(self.realm),
                everywhere,
                vectored,
                pending,
                total,
                ledger.check_chain(events, ordered_from=tx.ordered_from()),
            )

        memories, everywhere, vectored, pending, total, check = self.backend.read(chain)
        all_problems = list(problems)
        # A vector a committed write has yet to store (or a later write to make again) is
        # work under way, not damage.
        missing = everywhere - vectored - pending
        if model is not None and missing > 0:
            all_problems.append(
                f"{missing} of the store's {everywhere} memories have no vector of {model}"
            )
        if not check.ok:
            all_problems.append(f"event chain broken: {check.problem}")
        notes = []
        if check.early_reversals:  # written so by an earlier version: kept as written
            one = check.early_reversals == 1
            notes.append(
                f"{check.early_reversals} {'event' if one else 'events'} written before this "
                "store kept its transaction times in order "
                f"{'is' if one else 'are'} stamped before the event "
                f"{'it follows; it stays' if one else 'they follow; they stay'} as written"
            )
        return VerifyReport(
            ok=not all_problems,
            memories=memories,
            index_documents=documents,
            index_sound=sound,
            events=total,
            chain_ok=check.ok,
            problems=tuple(all_problems),
            rebuilt=rebuild,
            vectors=vectored,
            pending_vectors=min(pending, everywhere - vectored),
            early_reversals=check.early_reversals,
            notes=tuple(notes),
        )

    def migrate_to(self, target: Backend, *, progress: Progress | None = None) -> MigrateResult:
        """Copy this whole store — every realm, its history included — into the empty
        store ``target``, then make the copy's search keys with the embedder in use and
        verify it. The copy lands whole or not at all; its chain head is the source's."""
        copied = migrate.copy_store(self.backend, target, progress=progress)
        other = MemoryService(
            target, settings=self.settings, clock=self.clock, realm=self.realm,
            principal=self.principal,
        )  # fmt: skip
        rekeyed = other.reindex(progress=progress)
        report = other.verify(progress=progress)
        return MigrateResult(
            source=self.backend.location,
            target=target.location,
            realms=copied.realms,
            memories=copied.memories,
            events=copied.events,
            chain_head=copied.chain_head,
            rekeyed=rekeyed,
            verified=report.ok,
            problems=report.problems,
        )

    def reindex(self, *, progress: Progress | None = None) -> int:
        """Make every memory's search key again — context words and vector — with the
        embedder in use, in every realm of the store; returns how many were re-keyed.

        Runs a page of memories per transaction: the keys are derived data, and
        writers are not held up for the whole run.
        """
        total = self.backend.read(lambda tx: tx.count_memories(None))
        state = {"after": 0, "done": 0}

        def page(work: Work) -> int:
            sources = work.reads.iter_key_sources(state["after"], REINDEX_PAGE)
            if not sources:
                return 0
            for source in sources:
                work.rekey.touch(source.memory_id)
            work.make_keys(everything=True)
            state["after"] = sources[-1].num
            return len(sources)

        if progress is not None:
            progress("reindex", 0, total)
        while count := self._write(page):
            state["done"] += count
            if progress is not None:
                progress("reindex", min(state["done"], total), total)
        return state["done"]

    def status(self) -> StoreStatus:
        now_stamp = stamp(self._now())
        loaded = self.embedder

        def run(tx: Reads) -> StoreStatus:
            entries = tx.inline_entries(self.realm, now_stamp)
            projects = tx.list_projects(self.realm)
            fullest = max(
                budget.bands(entries, [p.name for p in projects]).values(), key=lambda b: b.total
            )
            seq, head = tx.chain_head()
            return StoreStatus(
                location=self.backend.location,
                schema_version=self.backend.schema_version(),
                realm=self.realm,
                memories=tx.count_memories(self.realm),
                projects=len(projects),
                events=seq,
                chain_head=head,
                inline_bytes=fullest.total,
                inline_max_bytes=self.settings.inline_max_bytes,
                size_bytes=self.backend.size_bytes(),
                embedder=loaded.model_id,
                embedder_configured=loaded.configured,
                degraded=loaded.degraded,
                vectors=tx.vector_counts(self.realm).get(loaded.model_id, 0),
            )

        return self.backend.read(run)


def integrity_error(report: VerifyReport) -> IntegrityFailed:
    """The refusal a failed ``verify`` stands for."""
    return IntegrityFailed(
        "; ".join(report.problems),
        fix="rebuild",
        remedy="verify the store, rebuilding its index; a broken event chain "
        "means the log was altered outside retain: restore it from a backup",
        problems=list(report.problems),
    )


def _reporting(
    items: Iterator[T], phase: str, total: int, progress: Progress, every: int = 1000
) -> Iterator[T]:
    """Pass ``items`` through, reporting every ``every`` of them and the last."""
    for done, item in enumerate(items, start=1):
        yield item
        if done % every == 0 or done == total:
            progress(phase, done, total)


def _in_background(fn: Callable[[], T]) -> Future[T]:
    """Run ``fn`` on a daemon thread: a caller that stops waiting for it (a late turn
    recall) is not held up by it, nor is the process's exit."""
    from concurrent.futures import Future

    future: Future[T] = Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to whoever waits for the result
                future.set_exception(exc)

    threading.Thread(target=run, name="retain-recall", daemon=True).start()
    return future


@dataclass(frozen=True, slots=True)
class _Tally:
    """A view's counts, and the tags of its live index memories once asked for. They hold
    while no event has been appended (every change to a memory appends one) and no memory
    of the view has reached its expiry since they were counted."""

    head: int  # the event log's last seq when counted
    at: str  # when counted (stored form)
    counts: LoadCounts
    tags: dict[str, int] | None = None

    def holds(self, head: int, now: str) -> bool:
        due = self.counts.next_expiry
        return head == self.head and self.at <= now and (due is None or now < due)


@dataclass(frozen=True, slots=True)
class _View:
    scopes: tuple[str, ...]
    heading: str  # how the memory section names the reader: "agent ada on project webdev"
    pointer: str  # the verb that reaches what the section does not show


def _fact_subject(subject: str) -> str:
    checked = fields.subject(subject)
    if not checked:
        raise InvalidValue(
            "a fact needs a subject", remedy="name who or what it is about", field="subject"
        )
    return checked


def _change(version: Memory, other: Memory | None, now: datetime) -> FactChange:
    """A fact change's two versions, each as known now (the one may end the other)."""
    known = {f.id: f for f in facts.as_known([v for v in (version, other) if v], now)}
    return FactChange(known[version.id], known[other.id] if other else None, changed=True)


def _whole(value: object, field: str, most: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise InvalidValue(
            f"{field} must be a whole number from 0 to {most}, not {value!r}",
            remedy=f"pass {field} as milliseconds, at most {most}",
            field=field,
        )
    return value


def _check_limit(limit: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidValue(
            f"limit {limit!r} is not a whole number",
            remedy=f"ask for 1 to {SEARCH_LIMIT_MAX} results",
            field="limit",
        )
    if not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise InvalidValue(
            f"limit {limit} is outside 1–{SEARCH_LIMIT_MAX}",
            remedy=f"ask for 1 to {SEARCH_LIMIT_MAX} results",
            field="limit",
        )


def _check_budget(budget_tokens: object) -> None:
    if budget_tokens is not None and (
        isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1
    ):
        raise InvalidValue(
            f"token budget {budget_tokens!r} is not a whole number of tokens ≥ 1",
            remedy="give the tokens the results may fill, like 2000",
            field="budget_tokens",
        )


def _unless_kept(value: Any, check: Callable[[Any], str]) -> str | None:
    """``value`` checked, unless it is None (keep) or "" (clear)."""
    return value if value is None or value == "" else check(value)


def _as_list(values: object, field: str) -> list[Any]:
    """A list argument, refused when it is None or not a list."""
    if not isinstance(values, list | tuple):
        raise InvalidValue(
            f"{field} must be a list, not {type(values).__name__}",
            remedy=f"pass {field} as a list of strings",
            field=field,
        )
    return list(values)


def _excerpt(body: str, start: int, length: int, context: int = 2) -> str:
    """The lines around a change, for showing what an edit did."""
    lines = body.splitlines(keepends=True)
    first = body.count("\n", 0, start)
    last = body.count("\n", 0, start + length)
    return "".join(lines[max(0, first - context) : last + context + 1])


def _listing_summary(
    count: int, tag: str | None, referencing: str | None, unverified: str | None, expired: bool
) -> str:
    what = "memory" if count == 1 else "memories"
    parts = []
    if tag:
        parts.append(f"tagged {tag!r}")
    if referencing:
        parts.append(f"referencing {referencing!r}")
    if unverified:
        parts.append(f"not verified in {unverified}")
    if expired:
        parts.append("past their expiry")
    qualifier = (" " + ", ".join(parts)) if parts else ""
    return f"{count} {what}{qualifier}, most important first"
