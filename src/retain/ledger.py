"""The event log's hash chain.

Each event's hash covers the previous hash, its own header fields and the
SHA-256 digest of its payload — not the payload itself — so a later erasure
can rewrite a payload and the chain still verifies: a payload that no longer matches its
digest passes only when it names the erasures that rewrote it (``"erased"``: their
``forget`` events' ids) and each of those later events lists its ``seq`` in
``"erased_events"``. The events' transaction times do
not decrease along the chain from the event a store began to hold that rule
(``ordered_from``: its first, or the first a writer of this version appended to a store
written before); earlier events stay as written, and their reversals are counted.

    hash = sha256(prev_hash | seq | event_id | realm | memory_id | kind |
                  tx_time | principal | reason | payload_digest)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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


def check_chain(events: Iterable[Event], *, ordered_from: int = 1) -> ChainCheck:
    """Walk the log in ``seq`` order and recompute every link; from event
    ``ordered_from`` on, the transaction times must not run backwards (a write reads the
    time once it holds the write lock, never before its predecessor's). Before it, an
    event stamped before its predecessor is counted, not refused."""
    prev_hash = GENESIS
    prev_time: datetime | None = None
    awaited: dict[int, set[str]] = {}  # an erased event's seq → certificates yet to list it
    expected_seq = 1
    count = 0
    early = 0
    for event in events:
        count += 1
        if prev_time is not None and event.tx_time < prev_time:
            if event.seq >= ordered_from:
                return ChainCheck(
                    False,
                    count,
                    prev_hash,
                    f"event {event.seq} is stamped {stamp(event.tx_time)}, before event "
                    f"{event.seq - 1} ({stamp(prev_time)}): the log's times run backwards",
                    early,
                )
            early += 1
        prev_time = event.tx_time
        if event.seq != expected_seq:
            return ChainCheck(
                False, count, prev_hash, f"event seq {event.seq} follows a gap", early
            )
        if event.prev_hash != prev_hash:
            return ChainCheck(
                False,
                count,
                prev_hash,
                f"event {event.seq} does not link to its predecessor",
                early,
            )
        if event.payload is not None and digest(event.payload) != event.payload_digest:
            marks = erased_by(event.payload)
            if not marks:
                return ChainCheck(
                    False,
                    count,
                    prev_hash,
                    f"event {event.seq} payload does not match its digest",
                    early,
                )
            awaited[event.seq] = set(marks)  # each certificate must come, and list it
        elif event.kind == "forget" and event.payload is not None:
            for seq in certified(event.payload):
                awaited.get(seq, set()).discard(event.event_id)
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
            return ChainCheck(
                False, count, prev_hash, f"event {event.seq} hash does not match", early
            )
        prev_hash = event.hash
        expected_seq += 1
    for seq in sorted(awaited):
        if awaited[seq]:
            return ChainCheck(
                False,
                count,
                prev_hash,
                f"event {seq} payload does not match its digest, and no erasure certifies it",
                early,
            )
    return ChainCheck(True, count, prev_hash, early_reversals=early)


def erased_by(payload: str) -> list[str]:
    """The certificates (``forget`` event ids) an erased payload names (none: not one)."""
    try:
        record = json.loads(payload)
    except ValueError:
        return []
    marks = record.get("erased") if isinstance(record, dict) else None
    if not isinstance(marks, list) or not all(isinstance(m, str) for m in marks):
        return []
    return marks


def certified(payload: str) -> list[int]:
    """The seqs a ``forget`` event's payload says it rewrote."""
    try:
        record = json.loads(payload)
    except ValueError:
        return []
    seqs = record.get("erased_events") if isinstance(record, dict) else None
    return [s for s in seqs if isinstance(s, int)] if isinstance(seqs, list) else []
