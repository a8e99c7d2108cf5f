"""The event log's hash chain.

Each event's hash covers the previous hash, its own header fields and the
SHA-256 digest of its payload — not the payload itself — so a later erasure
can blank a payload and the chain still verifies. The events' transaction times do
not decrease along the chain from the event a store began to hold that rule
(``ordered_from``: its first, or the first a writer of this version appended to a store
written before); earlier events stay as written, and their reversals are counted.

    hash = sha256(prev_hash | seq | event_id | realm | memory_id | kind |
                  tx_time | principal | reason | payload_digest)

``check_chain`` names the first broken link by its seq (``broken_at``). A payload that no
longer matches its digest passes only as an erased event's (the erased-event rule,
``docs/receipts.md``): a JSON object whose ``"erased"`` list names ``forget`` events
later in the log, each listing the event's seq in its ``"erased_events"``. The walk
checks each event's signature too when it is given a way to (``Signatures``: the
service's, over the store's key).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from retain.chrono import stamp
from retain.model import Event

GENESIS = "0" * 64


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(payload: Any) -> str:
    """The one JSON text a payload is hashed and stored as."""
    return _CANONICAL.encode(payload)


def digest(text: str) -> str:
    import hashlib  # on first use: a command that writes no event never loads OpenSSL

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def event_hash(
    *,
    prev_hash: str,
    seq: int,
    event_id: str,
    realm: str,
    memory_id: str | None,
    kind: str,
    tx_time: str,
    principal: str,
    reason: str,
    payload_digest: str,
) -> str:
    fields = (
        prev_hash,
        str(seq),
        event_id,
        realm,
        memory_id or "",
        kind,
        tx_time,
        principal,
        reason,
        payload_digest,
    )
    return digest("\x1f".join(fields))


def seal(
    *,
    prev_seq: int,
    prev_hash: str,
    event_id: str,
    realm: str,
    memory_id: str | None,
    kind: str,
    tx_time: datetime,
    principal: str,
    reason: str,
    payload: Any,
) -> Event:
    """The next event of the chain, hashed and ready to append."""
    text = canonical(payload)
    payload_digest = digest(text)
    seq = prev_seq + 1
    when = stamp(tx_time)
    return Event(
        seq=seq,
        event_id=event_id,
        realm=realm,
        memory_id=memory_id,
        kind=kind,
        tx_time=tx_time,
        principal=principal,
        reason=reason,
        payload=text,
        payload_digest=payload_digest,
        prev_hash=prev_hash,
        hash=event_hash(
            prev_hash=prev_hash,
            seq=seq,
            event_id=event_id,
            realm=realm,
            memory_id=memory_id,
            kind=kind,
            tx_time=when,
            principal=principal,
            reason=reason,
            payload_digest=payload_digest,
        ),
    )


@dataclass(frozen=True, slots=True)
class ChainCheck:
    ok: bool
    events: int
    head: str
    problem: str = ""
    # events before ``ordered_from`` stamped before their predecessor: written so by an
    # earlier version, kept as written, not a fault
    early_reversals: int = 0
    broken_at: int | None = None  # the seq of the first broken link (None: whole)
    head_seq: int = 0  # the seq of the last event that checked
    erased: int = 0  # events whose payload an erasure certificate accounts for
    signed: int = 0  # events whose signature checked


class Signatures(Protocol):
    """How a walk of the chain checks each event's signature (``retain.signing``)."""

    def check(self, event: Event) -> str | None:
        """Why ``event``'s signature does not hold (None: it holds, or none is owed)."""
        ...

    def signed(self, event: Event) -> bool:
        """Whether ``event`` carries a signature that checked."""
        ...


def erased_by(payload: str) -> list[str] | None:
    """The ``forget`` events an erased payload names (its ``"erased"`` list), or None when
    the payload is not an erased event's (``docs/receipts.md``, the erased-event rule)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    erased = data.get("erased")
    if not isinstance(erased, list) or not erased or not all(isinstance(e, str) for e in erased):
        return None
    return erased


def erased_seqs(payload: str | None) -> set[int]:
    """The seqs a ``forget`` event's certificate says it rewrote (``"erased_events"``)."""
    try:
        data = json.loads(payload or "")
    except ValueError:
        return set()
    listed = data.get("erased_events") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return set()
    return {n for n in listed if isinstance(n, int) and not isinstance(n, bool)}


class _Walk:
    """The state of one walk along the chain: what it has seen, and the erased events
    whose certificates are still to come."""

    def __init__(self) -> None:
        self.prev_hash = GENESIS
        self.head_seq = 0
        self.count = 0
        self.early = 0
        self.erased = 0
        self.signed = 0
        self.seen: set[str] = set()
        self.awaited: dict[str, list[int]] = {}  # certificate id -> erased seqs it must list

    def result(self, problem: str = "", at: int | None = None) -> ChainCheck:
        waiting = sorted(seq for seqs in self.awaited.values() for seq in seqs)
        if waiting and (at is None or waiting[0] < at):
            # an erased event earlier than the break whose certificate never came
            at = waiting[0]
            names = sorted(c for c, seqs in self.awaited.items() if at in seqs)
            problem = (
                f"event {at} payload does not match its digest: the erasure "
                f"{names[0]} it names is not a later forget event of the log"
            )
        return ChainCheck(
            at is None,
            self.count,
            self.prev_hash,
            problem,
            self.early,
            at,
            self.head_seq,
            self.erased,
            self.signed,
        )


def check_chain(
    events: Iterable[Event], *, ordered_from: int = 1, signatures: Signatures | None = None
) -> ChainCheck:
    """Walk the log in ``seq`` order and recompute every link; from event
    ``ordered_from`` on, the transaction times must not run backwards (a write reads the
    time once it holds the write lock, never before its predecessor's). Before it, an
    event stamped before its predecessor is counted, not refused. ``broken_at`` is the
    seq of the first link that does not hold.

    A payload that does not match its digest passes only as an erased event's: a JSON
    object whose ``"erased"`` list names ``forget`` events that come later in the log,
    each listing this event's seq in its ``"erased_events"``. With ``signatures``, each
    event's signature is checked too."""
    walk = _Walk()
    prev_time: datetime | None = None
    expected_seq = 1
    for event in events:
        walk.count += 1
        if prev_time is not None and event.tx_time < prev_time:
            if event.seq >= ordered_from:
                return walk.result(
                    f"event {event.seq} is stamped {stamp(event.tx_time)}, before event "
                    f"{event.seq - 1} ({stamp(prev_time)}): the log's times run backwards",
                    event.seq,
                )
            walk.early += 1
        prev_time = event.tx_time
        if event.seq != expected_seq:
            return walk.result(f"event seq {event.seq} follows a gap", expected_seq)
        if event.prev_hash != walk.prev_hash:
            return walk.result(f"event {event.seq} does not link to its predecessor", event.seq)
        if event.payload is not None and digest(event.payload) != event.payload_digest:
            named = erased_by(event.payload)
            if named is None or any(n in walk.seen for n in named):
                return walk.result(
                    f"event {event.seq} payload does not match its digest", event.seq
                )
            for name in named:
                walk.awaited.setdefault(name, []).append(event.seq)
            walk.erased += 1
        recomputed = event_hash(
            prev_hash=event.prev_hash,
            seq=event.seq,
            event_id=event.event_id,
            realm=event.realm,
            memory_id=event.memory_id,
            kind=event.kind,
            tx_time=stamp(event.tx_time),
            principal=event.principal,
            reason=event.reason,
            payload_digest=event.payload_digest,
        )
        if recomputed != event.hash:
            return walk.result(f"event {event.seq} hash does not match", event.seq)
        if signatures is not None:
            wrong = signatures.check(event)
            if wrong is not None:
                return walk.result(wrong, event.seq)
            walk.signed += signatures.signed(event)
        awaiting = walk.awaited.pop(event.event_id, None)
        if awaiting is not None:
            listed = erased_seqs(event.payload) if event.kind == "forget" else set()
            missing = [seq for seq in awaiting if seq not in listed]
            if missing:
                return walk.result(
                    f"event {missing[0]} payload does not match its digest: the erasure "
                    f"{event.event_id} it names does not list it",
                    missing[0],
                )
        walk.seen.add(event.event_id)
        walk.prev_hash = event.hash
        walk.head_seq = event.seq
        expected_seq += 1
    return walk.result()
