"""The unit of work: one per verb call that writes, and the only way to change the store.

A verb that writes runs as ``fn(work)`` inside one backend transaction. The work holds
that transaction, ``now`` (read once the write lock is held, never before the last
event's), the actor, and what the call touched; it is the only object that creates,
changes or removes memories, counts reads, changes the registry, and appends events
(a test holds every other module to that). A verb reads through ``work.reads``, which
is typed as the transaction's reading half, so a verb cannot change a row past it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain import ledger
from retain.chrono import stamp
from retain.grants import Grant
from retain.model import AgentSession, Event, Injection, Memory, Proposal
from retain.search import key
from retain.service import admission, mirror
from retain.service.actor import Actor
from retain.storage.base import Reads, SearchKey, Transaction

if TYPE_CHECKING:
    from retain.assertions import ConflictSignal
    from retain.governance.retention import Hold
    from retain.graph import Relation
    from retain.mirrors import MirrorLink
    from retain.receipt import Receipt
    from retain.service.store import Store


class Work:
    """One writing call's transaction, instant, actor and touched memories."""

    def __init__(
        self, tx: Transaction, now: datetime, actor: Actor, store: Store, *, redact: bool = False
    ) -> None:
        self._tx = tx
        self.now = now
        self.actor = actor
        self.store = store
        self.redact = redact  # the call asks for secrets to be written as their markers
        self.rekey = key.Rekey()  # the memories whose search keys are made again
        self._admitted: dict[str, Memory] = {}  # the new rows admission has answered for
        self.held: tuple[str, ...] | None = None  # why its rows are held (admission's)
        self._latest: dict[str | None, Event] = {}  # the last event appended, by memory id
        # rows changed in mirrored scopes: id → (row, whether it left), for their mirrors
        self.mirroring: dict[str, tuple[Memory, bool]] = {}
        self.marks: list[mirror.Mark] = []  # what the mirrors are sent once it commits

    @property
    def reads(self) -> Reads:
        """The transaction, to read from (its changing methods are the work's alone)."""
        return self._tx

    @property
    def realm(self) -> str:
        return self.actor.realm

    # -- memories --------------------------------------------------------------------

    def admit(self, memory: Memory, *, redact: bool | None = None) -> Memory:
        """A new row as admission lets it into the store (``retain.service.admission``):
        as it is, redacted, quarantined, or refused. A verb that needs the outcome before
        it creates the row asks here; ``create`` admits any row not asked for. ``redact``
        is the row's own request's (a batch's), else the call's."""
        redacting = self.redact if redact is None else redact
        admitted = admission.admit(self, memory, redact=redacting)
        self._admitted[admitted.id] = admitted
        return admitted

    def create(self, memories: Sequence[Memory]) -> list[Memory]:
        """Insert new memories, each as admission lets it in (the rows stored, in
        order); their search keys are made when the work finishes."""
        rows = [m if self._admitted.get(m.id) is m else self.admit(m) for m in memories]
        self._tx.insert_memories(rows)
        for memory in rows:
            self.rekey.touch(memory.id)
            mirror.mark(self, memory)
        return rows

    def change(
        self,
        memory: Memory,
        current: Memory,
        *,
        restore: bool = False,
        redact: bool | None = None,
    ) -> Memory | None:
        """Replace ``current`` with ``memory`` if it is still what is stored: the row
        stored (a change of content passes admission first), or None when another write
        changed it first. A change of what a key holds (text, thread) touches ``rekey``
        itself."""
        redacting = self.redact if redact is None else redact
        memory = admission.admit_change(self, memory, current, redact=redacting)
        if not self._tx.update_memory(memory, current, restore=restore):
            return None
        mirror.mark(self, memory)
        return memory

    def remove(self, memory: Memory) -> None:
        """Delete ``memory``, the row the caller read (if the grants let this writer
        delete in its scope and admission lets it remove); the neighbours whose context
        it was are re-keyed."""
        admission.admit_removal(self, memory)
        self.rekey.leave(self._tx, memory.id)
        self._tx.delete_memory(memory.id)
        mirror.mark(self, memory, removed=True)
        self._tx.delete_relations(memory.realm, memory.id)  # its edges go with it

    def erase(self, erased: Memory, current: Memory) -> bool:
        """Store ``erased`` (``current`` with its text taken out, by ``forget``) if the row
        is still what was read (else False); its search key goes with its text (context
        and vector), and the neighbours whose context held its words are re-keyed.
        Admission judges it by the grants to delete in its scope."""
        admission.admit_erasure(self, current)
        self.rekey.leave(self._tx, current.id)
        keyed = self._tx.key_sources([current.id])  # a forgotten row has no key source
        if not self._tx.update_memory(erased, current):
            return False
        self._tx.set_keys([SearchKey(s.num, "", None) for s in keyed])
        self._tx.erase_relation_reasons(erased.realm, erased.id)  # a reason may quote it
        self.rekey.ids.discard(erased.id)
        return True

    def erase_ticket(self, ticket: Proposal) -> None:
        """Store a ticket with its text taken out (``forget``)."""
        self._tx.erase_ticket(self.realm, ticket)

    def erase_event(self, event: Event, payload: Any) -> None:
        """Rewrite a past event's payload with erased values taken out: its digest and
        hash stay, so the chain still holds (``ledger``'s erased-payload rule)."""
        self._tx.rewrite_payload(event.seq, ledger.canonical(payload))

    def count_read(self, memory_id: str) -> int:
        return self._tx.increment_read_count(memory_id)

    # -- the registry ------------------------------------------------------------------

    def add_realm(self) -> None:
        self._tx.ensure_realm(self.realm, stamp(self.now))

    def add_project(self, name: str) -> None:
        self._tx.insert_project(self.realm, name, stamp(self.now))

    def rename_project(self, old: str, new: str) -> int:
        return self._tx.rename_project(self.realm, old, new)

    def remove_project(self, name: str) -> None:
        self._tx.delete_project(self.realm, name)

    def add_agent(self, name: str, when: datetime | None = None) -> None:
        self._tx.insert_agent(self.realm, name, stamp(when or self.now))

    def add_team(self, name: str) -> None:
        self._tx.insert_team(self.realm, name, stamp(self.now))

    def add_member(self, team: str, agent: str) -> bool:
        return self._tx.add_member(self.realm, team, agent, stamp(self.now))

    def add_proposal(self, proposal: Proposal) -> None:
        self._tx.insert_proposal(self.realm, proposal)

    def decide_proposal(self, proposal: Proposal, status_was: str) -> bool:
        """Store a ticket's decision if it still stands at ``status_was`` (else False)."""
        return self._tx.update_proposal(self.realm, proposal, status_was)

    def add_grant(self, grant: Grant) -> None:
        self._tx.insert_grant(grant)

    def remove_grant(self, grant: Grant) -> None:
        self._tx.delete_grant(grant.id)

    def put_conflict(self, signal: ConflictSignal) -> None:
        """Store the assertion ledger's conflict signal of one key (its change is an event)."""
        self._tx.put_conflict(signal)

    def put_mirror_link(self, link: MirrorLink) -> None:
        self._tx.put_mirror_link(link)

    def put_relation(self, relation: Relation) -> None:
        """Store an edge of the relation graph, or a decision on it (each is an event)."""
        self._tx.put_relation(relation)

    def add_hold(self, hold: Hold) -> None:
        self._tx.insert_hold(hold)

    def remove_hold(self, target: str) -> bool:
        """Remove the hold on ``target``; False when none stood."""
        return self._tx.delete_hold(self.realm, target)

    # -- what the doors rendered, and legacy imports ---------------------------------------

    def record_injections(self, rows: Sequence[Injection]) -> None:
        self._tx.insert_injections(self.realm, rows)

    def put_context_state(self, identity: str, session: str, state: str) -> None:
        self._tx.put_context_state(self.realm, identity, session, state, stamp(self.now))

    def put_session(self, session: AgentSession) -> None:
        """Store an agent session's taint and bookkeeping (its taint's changes are events)."""
        self._tx.put_session(self.realm, session)

    def record_legacy_import(self, identity: str, sha256: str) -> None:
        self._tx.record_legacy_import(self.realm, identity, sha256, stamp(self.now))

    # -- the log and the search keys ---------------------------------------------------------

    def event(
        self,
        kind: str,
        payload: Any,
        *,
        memory_id: str | None = None,
        reason: str = "",
        principal: str | None = None,
        event_id: str | None = None,
    ) -> Event:
        """Append the event of a change, stamped with the work's instant, by its actor
        unless the change is the system's own (``principal``); the event appended.
        ``event_id``: one made beforehand, for a payload that must name its own event
        (an erasure's marks name its certificate)."""
        seq, head = self._tx.chain_head()
        sealed = ledger.seal(
            prev_seq=seq,
            prev_hash=head,
            event_id=event_id or self.store.ids.new(self.now),
            realm=self.realm,
            memory_id=memory_id,
            kind=kind,
            tx_time=self.now,
            principal=principal or self.actor.principal,
            reason=reason,
            payload=payload,
        )
        self._tx.append_event(sealed)
        self._latest[memory_id] = self._latest[None] = sealed
        signer = self.store.signer
        if signer is not None:  # each event signed as it is appended
            from retain.signing import event_message

            self._tx.sign_event(sealed.seq, signer.key_id, signer.sign(event_message(sealed.hash)))
        return sealed

    def receipt(self, event: Event, content_hash: str | None = None) -> Receipt:
        """The receipt of ``event`` (one this work appended), for the result a verb
        returns: ``content_hash`` is the row's it wrote, where there is one; signed
        when the store has a signing key."""
        from retain.receipt import Receipt

        return Receipt.of(event, content_hash, self.store.signer)

    def receipt_for(self, memory: Memory) -> Receipt:
        """The receipt of the last event this work appended about ``memory`` (its
        creation, change or removal), with the row's content hash."""
        return self.receipt(self._latest[memory.id], memory.content_hash)

    def latest(self, memory_id: str) -> str | None:
        """The id of the last event this work appended about ``memory_id``, if any."""
        event = self._latest.get(memory_id)
        return None if event is None else event.event_id

    def last_receipt(self, content_hash: str | None = None) -> Receipt:
        """The receipt of the last event this work appended."""
        return self.receipt(self._latest[None], content_hash)

    def finish(self) -> None:
        """What every write does before it commits: the search keys of what it touched,
        and the links of what its mirrors are to receive (``mirror.staged``)."""
        self.make_keys()
        self.marks = mirror.staged(self)

    def embed_ahead(self, memories: Sequence[Memory]) -> None:
        """Begin embedding the own texts of ``memories`` (a batch's new rows, about to be
        inserted) in a worker thread, for ``make_keys`` to take (``key.Ahead``): from
        ``key.AHEAD_FROM`` rows and up to ``key.BATCH``, when the store embeds. Not while
        the interpreter shuts down, when a thread pool takes no more work."""
        embedder = self.store.embedder.embedder
        if embedder is None or len(memories) < key.AHEAD_FROM:
            return
        texts = [key.own_text(m) for m in memories[: key.BATCH]]
        try:
            self.rekey.ahead = key.Ahead(embedder, texts)
        except RuntimeError:  # "cannot schedule new futures after interpreter shutdown"
            return

    def withdraw_ahead(self) -> None:
        """Withdraw what ``embed_ahead`` began, the write having failed (what the worker
        has begun it finishes, and nobody takes)."""
        if self.rekey.ahead is not None:
            self.rekey.ahead.future.cancel()

    def make_keys(
        self, *, everything: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Make the search keys of what the work touched (and their neighbours'), inside
        its transaction; how many were made."""
        if not self.rekey.ids:
            return 0
        embedder = self.store.embedder.embedder
        zone = self.store.clock.local_tz()
        made = self.rekey.apply(self._tx, embedder, zone, everything=everything, progress=progress)
        self.rekey = key.Rekey()  # made: a later call makes only what is touched after
        return made
