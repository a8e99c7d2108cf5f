"""Erasure: ``forget``, the one verb that takes a value out of the store, its
certificate, and the compaction that sheds what the files still hold.

It is one piece past the usual size on purpose: the erasure, its certificate, its
settling and the compaction it waits for are one custody act, checked as a whole.

``delete`` and a retraction keep history; ``forget`` does not keep the value. It finds
every copy of the item (``lineage``: the rows a review's release, a promotion or a
ticket's landing copied it to or from, and the tickets that carried it), then, in one
transaction, for each of them:

* the row keeps its id, scope, author, times and a fact's subject and predicate, and
  loses its text (name, description, body, tags, references, source, metadata): status
  ``forgotten``, ``content_hash`` the kept digest (or empty), ``metadata.forgotten`` the
  digest, its kind, when, and the certificate;
* its search key goes (context words and vector), and its thread neighbours, whose
  context held its words, are keyed again; the full-text index drops it as the row
  changes;
* a ticket loses its summary, body and evidence;
* every event about one of them, or naming one, has the erased values taken out of its
  payload (``governance.erasure.Scrub``), marked with the certificate's event id;
* a context session's memory of having shown it goes.

A current fact that is forgotten stops being believed, and the version it superseded
holds again, as after a retraction. The ``forget`` event is the **certificate**: the
target, the digest and its kind, the time, principal and reason, the ids erased, the
events rewritten, and each place with its verification. The rows, the events, the
tickets and the vectors are checked in the same transaction. What the files still hold
(the full-text index's old segments, freed pages, the write-ahead log) goes when the
store compacts (``compact``): ``forget`` compacts unless asked not to, then looks for the
erased values' bytes in every file of the store (PostgreSQL: in every row of every
table), and records the answer as a ``forget_verify`` event. ``certificate`` fetches a
certificate again, with its latest verification.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain import fields, mirrors
from retain.chrono import stamp
from retain.errors import AccessDenied, AlreadyForgotten, InvalidValue, NotFound, StaleUpdate
from retain.governance.erasure import (
    FORGET_KEY,
    QUOTED_MIN,
    TEXT_KEYS,
    Digest,
    Scrub,
    digest_of,
    memory_values,
    sha256,
    strings,
    ticket_values,
)
from retain.mirrors import Mirrored
from retain.model import Event, Memory, Proposal, Status, agent_scope
from retain.receipt import Receipt
from retain.service import lookup, mirror
from retain.service.hold import require_released
from retain.service.work import Work
from retain.storage.base import Progress, Reads
from retain.write_results import receipted

if TYPE_CHECKING:
    from retain.service import MemoryService

FORGET = "forget"
VERIFY = "forget_verify"
COMPACT = "compact"

# How a place an erased value was held in stands: checked and clear, still in the index
# until the store compacts, not checked, or checked and still there.
VERIFIED = "verified"
STILL_INDEXED = "still_indexed"
UNVERIFIED = "unverified"
FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Certificate:
    """What one erasure did, as its ``forget`` event records it (and its latest
    ``forget_verify`` completes it): the proof an item was forgotten."""

    event_id: str
    seq: int
    target: str
    kind: str  # memory, fact or ticket
    scope: str
    subject: str | None
    predicate: str | None
    digest: Digest
    at: datetime
    principal: str
    reason: str
    erased: tuple[str, ...]  # the ids of every row and ticket that held the value
    erased_events: tuple[int, ...]  # the seqs of the events whose payloads were rewritten
    places: dict[str, str]  # each place the value was removed from → its verification
    mirrors: dict[str, str] = field(default_factory=dict)  # each write-through mirror → its answer
    reinstated: str | None = None  # the fact version believed again, if any
    copies_kept: tuple[str, ...] = ()  # copies beyond the actor's reach, left as they are
    verified_at: datetime | None = None  # when the files were last checked
    receipt: Receipt | None = None  # the forget event's: the certificate as a receipt

    def record(self) -> dict[str, Any]:
        """The certificate's content as its event's payload holds it."""
        return {
            "certificate": self.event_id,
            "target": self.target,
            "kind": self.kind,
            "scope": self.scope,
            "subject": self.subject,
            "predicate": self.predicate,
            **self.digest.to_dict(),
            "forgotten_at": stamp(self.at),
            "principal": self.principal,
            "reason": self.reason,
            "erased_from_store": True,
            "erased": list(self.erased),
            "erased_events": list(self.erased_events),
            "places": dict(self.places),
            "mirrors": dict(self.mirrors),
            "reinstated": self.reinstated,
            "copies_kept": list(self.copies_kept),
        }

    def to_dict(self) -> dict[str, Any]:
        return self.record() | {
            "seq": self.seq,
            "verified_at": stamp(self.verified_at) if self.verified_at else None,
            "receipt": receipted(self.receipt),
        }


@dataclass(frozen=True, slots=True)
class Deleted:
    """A memory deleted (its row gone) whose history still holds its text: what its
    events say of it."""

    id: str
    scope: str
    body: str
    subject: str | None
    predicate: str | None
    values: frozenset[str]


Item = Memory | Proposal | Deleted


@dataclass(frozen=True, slots=True)
class Erasure:
    """An erasure committed, and the texts it took out, as stored (kept in memory only,
    to look for their bytes in the store's files once it has compacted; text other
    memories or events hold is theirs, and is not looked for)."""

    certificate: Certificate
    values: frozenset[str]
    mirrored: tuple[Mirrored, ...] = ()  # its rows as mirrors held them, to remove there


def forget(
    svc: MemoryService,
    target: str,
    *,
    project: str | None = None,
    reason: str = "",
    keep_digest: bool = True,
    compact: bool = True,
) -> Certificate:
    """Erase ``target`` (a memory's or a fact version's id, a ticket's id, or a memory's
    name in the tiers ``project`` picks) and every copy of it, keeping a digest of its
    value (``keep_digest``: keyed by ``RETAIN_FORGET_KEY`` when set; otherwise none);
    then, unless ``compact`` is False, compact the store and check its files. An agent
    forgets only what it remembered itself. The certificate."""
    if not fields.text(target, "target").strip():
        raise InvalidValue(
            "forget needs the id or name of what to erase",
            remedy="give a memory's id or name, a fact version's id, or a ticket's id",
            field="target",
        )
    fields.text(reason, "reason")

    def run(work: Work) -> Erasure:
        found = _target(svc, work.reads, target, project)
        return erase(
            work, found, reason=reason, keep_digest=keep_digest, reach=_reach(svc, work.reads)
        )

    erasure = svc._write(run)
    certificate = reached(svc, erasure)
    if not compact:
        return certificate
    return replace(settle(svc, [erasure])[0], mirrors=certificate.mirrors)


def reached(svc: MemoryService, erasure: Erasure) -> Certificate:
    """An erasure committed, taken to the mirrors that held its rows: each told to remove
    them and asked whether they are gone, the answers recorded (a ``forget_mirrors``
    event) as the certificate's ``mirrors``."""
    answers = mirror.erased(svc, erasure.mirrored)
    cert = erasure.certificate
    if not answers:
        return cert

    def run(work: Work) -> None:
        payload = {"certificate": cert.event_id, "mirrors": answers}
        work.event(mirror.MIRRORS_EVENT, payload, memory_id=_memory_of(cert), reason=cert.reason)

    svc._write(run)
    return replace(cert, mirrors=answers)


def _target(svc: MemoryService, tx: Reads, target: str, project: str | None) -> Item:
    """The item ``target`` names, as the actor's view finds it."""
    view = svc._reader(tx, project)
    if svc.identity is not None:  # an agent: its own memories (and facts), by id
        agent = svc._agent(tx)
        memory = view.get(tx, target)
        if memory is None:  # another identity's is not disclosed
            raise NotFound(
                f"no memory {target!r} to forget",
                remedy="recall it first to find its id",
                id=target,
            )
        if memory.scope != agent_scope(agent.name):
            raise AccessDenied(
                f"memory {target!r} is not agent {agent.name!r}'s own (it is in {memory.scope})",
                remedy="an agent can forget only what it remembered itself",
                id=target,
                scope=memory.scope,
            )
        return _unforgotten(memory)
    memory = view.get(tx, target) if project is None else None
    if memory is not None:
        return _unforgotten(memory)
    ticket = tx.get_proposal(svc.realm, target)
    if ticket is not None and view.sees_proposal(ticket):
        erased = _certificate_event(tx, svc.realm, ticket.id)
        if erased is not None:
            raise AlreadyForgotten(
                f"ticket {target!r} was forgotten already",
                remedy="fetch its certificate",
                id=target,
                certificate=erased.event_id,
            )
        return ticket
    deleted = _deleted(tx, svc.realm, target) if project is None else None
    if deleted is not None and view.covers(svc.realm, deleted.scope):
        return deleted
    if not fields.is_name(target):  # no id the store holds, and no name either
        raise NotFound(
            f"no memory, fact version or ticket {target!r} to forget",
            remedy="check the id: list, search or recall to find it",
            id=target,
        )
    return _unforgotten(lookup.locate(svc, tx, target, project))


def _reach(svc: MemoryService, tx: Reads) -> Reach:
    """What the actor may erase of an item's copies: what its view sees; an agent, what
    it wrote in its own scope (a record it wrote that waited for review too) and the
    tickets it proposed."""
    view = svc._reader(tx)
    own = agent_scope(svc.identity) if svc.identity is not None else None

    def reaches(item: Memory | Proposal) -> bool:
        if isinstance(item, Proposal):
            return view.sees_proposal(item)
        return item.scope == own if own is not None else view.sees(item)

    return reaches


def _deleted(tx: Reads, realm: str, target: str) -> Deleted | None:
    """The memory ``target`` as its events last recorded it, when its row was deleted."""
    if tx.get_many([target]):
        return None
    records = []
    for event in tx.events_naming(realm, [target]):
        if event.memory_id == target and event.payload is not None:
            if event.kind == FORGET:
                raise AlreadyForgotten(
                    f"memory {target!r} was forgotten already",
                    remedy="fetch its certificate",
                    id=target,
                    certificate=event.event_id,
                )
            record = json.loads(event.payload)
            if isinstance(record, dict) and record.get("id") == target:
                records.append(record)
    if not records:
        return None
    last = records[-1]
    values: set[str] = set()
    for record in records:
        for key in TEXT_KEYS:
            values.update(strings(record.get(key)))
    return Deleted(
        id=target,
        scope=str(last.get("scope", "")),
        body=str(last.get("body") or ""),
        subject=last.get("subject"),
        predicate=last.get("predicate"),
        values=frozenset(v for v in values if v),
    )


def _unforgotten(memory: Memory) -> Memory:
    if memory.status is Status.FORGOTTEN:
        forgotten = memory.metadata.get("forgotten") or {}
        raise AlreadyForgotten(
            f"memory {memory.id!r} was forgotten already",
            remedy="fetch its certificate",
            id=memory.id,
            certificate=forgotten.get("certificate"),
        )
    return memory


Reach = Callable[[Memory | Proposal], bool]


def lineage(
    tx: Reads, realm: str, start: Item, reach: Reach | None = None
) -> tuple[list[Memory], list[Proposal], list[str]]:
    """``start`` and every copy of it: the rows derived from one another (a release's
    successor and its record, a promoted record and the memory a ticket landed), and the
    tickets that carried the content (proposed, promoted, landed); and the ids of the
    copies beyond ``reach`` (what the actor may not erase), which stay, and past which
    the search does not go."""
    memories: dict[str, Memory] = {}
    tickets: dict[str, Proposal] = {}
    kept: dict[str, None] = {}
    pending: list[Memory | Proposal] = [] if isinstance(start, Deleted) else [start]
    while pending:
        item = pending.pop()
        if item.id in memories or item.id in tickets or item.id in kept:
            continue
        if reach is not None and item is not start and not reach(item):
            kept[item.id] = None
            continue
        if isinstance(item, Proposal):
            tickets[item.id] = item
            pending.extend(tx.get_many([i for i in (item.record, item.landed) if i]))
            pending.extend(tx.derived_of(realm, [item.id]))
            continue
        memories[item.id] = item
        pending.extend(tx.derived_of(realm, [item.id]))
        pending.extend(tx.tickets_of(realm, [item.id]))
        if item.derived_from:
            pending.extend(tx.get_many([item.derived_from]))
            source = tx.get_proposal(realm, item.derived_from)
            if source is not None:
                pending.append(source)
    return list(memories.values()), list(tickets.values()), list(kept)


def erase(
    work: Work, item: Item, *, reason: str, keep_digest: bool, reach: Reach | None = None
) -> Erasure:
    """Erase ``item`` and its copies within ``reach`` inside ``work`` (the rows, the
    tickets, the events, the search keys, the context sessions' memory of them), append
    the certificate, and check what the transaction can check. ``sweep`` erases its items
    through here too."""
    tx, now, realm = work.reads, work.now, work.realm
    key = os.environ.get(FORGET_KEY, "").encode("utf-8") or None
    memories, tickets, beyond = lineage(tx, realm, item, reach)
    for copy in (item.id, *(m.id for m in memories)):  # a legal hold on any copy refuses
        require_released(work, copy)
    # the value a digest is kept of: the body (a note's text, a fact's value, a ticket's
    # content), or, for a memory or ticket without one, its one line
    value = item.body
    if not value and isinstance(item, Memory):
        value = item.description
    elif not value and isinstance(item, Proposal):
        value = item.summary
    kept = digest_of(value, keep=keep_digest, key=key)
    certificate_id = work.store.ids.new(now)
    values: set[str] = set()
    plain: dict[str, str | None] = {}
    for m in memories:
        values |= memory_values(m)
        plain[m.content_hash] = kept.value
    for t in tickets:
        values |= ticket_values(t)
    if isinstance(item, Deleted):
        values |= item.values
    values -= {item.id, *(m.id for m in memories), *(t.id for t in tickets)}
    for v in list(values):
        plain[sha256(v)] = kept.value
    mark = {"digest": kept.value, "digest_kind": kept.kind.value, "at": stamp(now)}
    mark["certificate"] = certificate_id

    reinstated = None
    rows: dict[str, Memory] = {}
    held = {k.memory_id for k in tx.mirror_links(realm, sorted(m.id for m in memories))}
    sent = tuple(
        mirrors.mirrored(m, None) for m in memories if m.id in held
    )  # as the mirrors hold them: what a removal there is checked against
    for memory in memories:
        erased = replace(
            memory,
            name=None,
            description="",
            body="",
            tags=(),
            references=(),
            source="",
            metadata={"forgotten": mark},
            status=Status.FORGOTTEN,
            content_hash=kept.value or "",
            thread=None,
            updated_at=now,
            changed_by=work.actor.principal,
        )
        rows[memory.id] = erased
        if not work.erase(erased, memory):
            raise StaleUpdate(
                f"memory {memory.id!r} changed while it was being forgotten",
                remedy="retry the forget",
                id=memory.id,
            )
        if memory.id == item.id and memory.predicate is not None:
            reinstated = _reinstate(work, memory, reason)
    for ticket in tickets:
        work.erase_ticket(replace(ticket, summary="", body="", evidence=""))

    ids = frozenset([item.id, *(m.id for m in memories), *(t.id for t in tickets)])
    scrub = Scrub(ids, frozenset(values), plain, certificate_id)
    rewritten = []
    for event in tx.events_naming(realm, sorted(ids)):
        if event.payload is None:
            continue
        cleaned, changed = scrub.payload(json.loads(event.payload), about=event.memory_id in ids)
        if changed:
            work.erase_event(event, cleaned)
            rewritten.append(event.seq)
    _forget_shown(work, rows)

    long_values = frozenset(v for v in values if len(v) >= QUOTED_MIN)
    places = _checked(tx, realm, memories, tickets, ids, values, long_values)
    about = None if isinstance(item, Proposal) else item
    certificate = Certificate(
        event_id=certificate_id,
        seq=0,
        target=item.id,
        kind="ticket" if about is None else ("fact" if about.predicate else "memory"),
        scope=item.target if isinstance(item, Proposal) else item.scope,
        subject=about.subject if about else None,
        predicate=about.predicate if about else None,
        digest=kept,
        at=now,
        principal=work.actor.principal,
        reason=reason,
        erased=tuple(sorted(ids)),
        erased_events=tuple(rewritten),
        places=places,
        reinstated=reinstated,
        copies_kept=tuple(beyond),
    )
    event = work.event(
        FORGET,
        certificate.record(),
        memory_id=about.id if about else None,
        reason=reason,
        event_id=certificate_id,
    )
    receipt = work.receipt(event, kept.value)
    if sent:  # their links wait for the removal, which runs once this commits
        mirror.leaving(work, [m.id for m in sent])
    return Erasure(replace(certificate, seq=event.seq, receipt=receipt), long_values, sent)


def _reinstate(work: Work, fact: Memory, reason: str) -> str | None:
    """A forgotten current fact stops being believed: the version it superseded holds
    again, as after a retraction."""
    from retain.service import rows

    if fact.status is not Status.ACTIVE or not fact.supersedes:
        return None
    previous = work.reads.get_many([fact.supersedes])
    if not previous or previous[0].status is not Status.SUPERSEDED:
        return None
    restored = replace(previous[0], status=Status.ACTIVE, valid_to=None, updated_at=work.now)
    rows.swap(work, restored, previous[0], "reinstated")
    work.event(
        "reinstate", rows.payload_of(restored, work.now), memory_id=restored.id, reason=reason
    )
    return restored.id


def _forget_shown(work: Work, erased: dict[str, Memory]) -> None:
    """What each context session remembers showing of an erased memory names it by its id
    now (the entry held its name, and a fingerprint of its text): the next render still
    says it left."""
    from retain.context import fingerprint, named

    for identity, session, state, _ in work.reads.list_context_states(work.realm):
        shown = json.loads(state)
        memories = shown.get("memories") or {}
        if not erased.keys() & memories.keys():
            continue
        for memory_id in erased.keys() & memories.keys():
            surface = memories[memory_id][0]
            row = erased[memory_id]
            memories[memory_id] = [surface, fingerprint(surface, row), named(row)]
        work.put_context_state(
            identity, session, json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
        )


def _checked(
    tx: Reads,
    realm: str,
    memories: Sequence[Memory],
    tickets: Sequence[Proposal],
    ids: frozenset[str],
    values: set[str],
    long_values: frozenset[str],
) -> dict[str, str]:
    """Each place the value was held in, checked as the transaction now holds it; the
    full-text index and the files wait for compaction (``settle``)."""
    stored = tx.get_many([m.id for m in memories])
    rows_clear = all(not memory_values(m) & values for m in stored)
    kept = [t for t in tx.tickets_of(realm, [t.id for t in tickets]) if t.id in ids]
    tickets_clear = all(not ticket_values(t) & values for t in kept)
    events_clear = all(
        not _quotes(e.payload, long_values)
        for e in tx.events_naming(realm, sorted(ids))
        if e.payload is not None
    )
    places = {
        "memories": VERIFIED if rows_clear else FAILED,
        "events": VERIFIED if events_clear else FAILED,
        "vectors": VERIFIED if tx.vectors_of([m.id for m in memories]) == 0 else FAILED,
        "full_text": STILL_INDEXED,
        "store_files": UNVERIFIED,
    }
    if tickets:
        places["tickets"] = VERIFIED if tickets_clear else FAILED
    return places


def _quotes(payload: str, values: frozenset[str]) -> bool:
    """Whether a stored payload still holds one of ``values`` (escaped as its JSON is)."""
    return any(form in payload for v in values for form in _as_stored(v))


def settle(svc: MemoryService, erasures: Sequence[Erasure]) -> list[Certificate]:
    """Compact the store, look for the erased values' bytes in it, and record each
    certificate's verification (a ``forget_verify`` event each); the certificates."""
    if not erasures:
        return []
    compaction = svc.backend.compact()
    values = sorted({v for e in erasures for v in e.values})
    stored = {form: v for v in values for form in _as_stored(v)}
    found = svc.backend.residue(sorted(stored)) if values else {}
    if found:  # text the store still holds in a memory or an event is theirs: it stays
        left = sorted({stored[form] for form in found})
        shared = svc.backend.read(lambda tx: tx.holders(svc.realm, left))
        found = {form: places for form, places in found.items() if stored[form] not in shared}
    holding = sorted({place for places in found.values() for place in places})
    if holding:
        files = FAILED
    elif not compaction.complete:
        files = UNVERIFIED
    else:
        files = VERIFIED
    index = VERIFIED if compaction.complete and not holding else STILL_INDEXED

    def run(work: Work) -> list[Certificate]:
        settled = []
        for erasure in erasures:
            cert = erasure.certificate
            places = cert.places | {"full_text": index, "store_files": files}
            payload = {
                "certificate": cert.event_id,
                "places": places,
                "compaction": compaction.to_dict(),
                "holding": holding,
            }
            work.event(VERIFY, payload, memory_id=_memory_of(cert), reason=cert.reason)
            settled.append(replace(cert, places=places, verified_at=work.now))
        return settled

    return svc._write(run)


def _as_stored(value: str) -> set[str]:
    """``value`` as a store's bytes hold it: raw in a row, escaped in a payload's JSON."""
    return {value, json.dumps(value, ensure_ascii=False)[1:-1]}


def _memory_of(cert: Certificate) -> str | None:
    return None if cert.kind == "ticket" else cert.target


def certificate(svc: MemoryService, target: str) -> Certificate:
    """The certificate of an erasure, by its event id or the id of the item it erased,
    with its latest verification, as the actor's view sees the event log."""
    fields.text(target, "target")

    def run(tx: Reads) -> Certificate:
        found = _certificate_event(tx, svc.realm, target)
        stored = tx.get_many([found.memory_id]) if found and found.memory_id else []
        if found is None or svc._reader(tx).event(found, stored[0] if stored else None).withheld:
            raise NotFound(
                f"no erasure certificate for {target!r}",
                remedy="name the id of the forgotten item or of its forget event",
                id=target,
            )
        cert = _certificate_of(found)
        cert = replace(cert, receipt=Receipt.of(found, cert.digest.value, svc.store.signer))
        for check in tx.events_naming(svc.realm, [found.memory_id or found.event_id]):
            if check.kind == VERIFY and check.payload is not None:
                record = json.loads(check.payload)
                if record.get("certificate") == found.event_id:
                    cert = replace(cert, places=record["places"], verified_at=check.tx_time)
            if check.kind == mirror.MIRRORS_EVENT and check.payload is not None:
                record = json.loads(check.payload)
                if record.get("certificate") == found.event_id:
                    cert = replace(cert, mirrors=record["mirrors"])
        return cert

    return svc.backend.read(run)


def _certificate_event(tx: Reads, realm: str, target: str) -> Event | None:
    """The ``forget`` event whose id is ``target``, or that erased the item ``target``."""
    event = tx.get_event(realm, target)
    if event is not None:
        return event if event.kind == FORGET else None
    found = None
    for event in tx.events_naming(realm, [target]):
        erased = json.loads(event.payload).get("erased", ()) if event.payload else ()
        if event.kind == FORGET and target in erased:
            found = event
    return found


def _certificate_of(event: Event) -> Certificate:
    from retain.governance.erasure import DigestKind

    record = json.loads(event.payload or "{}")
    return Certificate(
        event_id=event.event_id,
        seq=event.seq,
        target=record["target"],
        kind=record["kind"],
        scope=record["scope"],
        subject=record.get("subject"),
        predicate=record.get("predicate"),
        digest=Digest(record.get("digest"), DigestKind(record["digest_kind"])),
        at=event.tx_time,
        principal=event.principal,
        reason=event.reason,
        erased=tuple(record.get("erased", ())),
        erased_events=tuple(record.get("erased_events", ())),
        places=dict(record.get("places", {})),
        mirrors=dict(record.get("mirrors", {})),
        reinstated=record.get("reinstated"),
        copies_kept=tuple(record.get("copies_kept", ())),
    )


def compact(
    svc: MemoryService, *, full: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Shed what erasures and deletes left in the store's files (``Backend.compact``,
    reporting to ``progress``), with a ``compact`` event; what it did."""
    compaction = svc.backend.compact(full=full, progress=progress)

    def run(work: Work) -> dict[str, Any]:
        event = work.event(COMPACT, compaction.to_dict())
        return compaction.to_dict() | {
            "location": svc.backend.location,
            "receipt": receipted(work.receipt(event)),
        }

    return svc._write(run)
