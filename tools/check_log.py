#!/usr/bin/env python3
"""Check an event log exported by ``retain export --format jsonl``, with the file and the
store's public key alone: no retain, no store.

    python3 tools/check_log.py LOG.jsonl --public-key KEY [--public-key OLD_KEY ...]

It walks the log in order and checks, for every event: that its seq follows the one
before; that it links to its predecessor's hash; that its payload matches its digest,
or is an erased event's payload accounted for by a later ``forget`` certificate (the
erased-event rule below); that its hash is the hash of its fields; and, with a public
key, that its signature holds (once an event is signed, every later one must be). A
last line ``{"head": ...}`` is the chain head the export saw, signed: it must be the
last event's seq and hash, and its signature must hold. It prints the first broken seq
and exits 1, or prints what it checked and exits 0 (2: the file cannot be read).

The hash of an event is the SHA-256 (hex) of its fields joined by the unit separator
(0x1f): prev_hash, seq, event_id, realm, memory_id (or empty), kind, tx_time,
principal, reason, payload_digest; the payload digest is the SHA-256 of the payload's
UTF-8 text. Signatures are Ed25519 over "retain-event/1\\n" + hash (an event) and
"retain-head/1\\n" + seq + "\\n" + hash (the head); a key is the base64 of its 32 raw
bytes, or a PEM public key, given as text or as a file holding it; a key's id is the
first 16 hex digits of the SHA-256 of its raw bytes.

The erased-event rule: an event whose payload does not match its digest passes only if
the payload is a JSON object whose "erased" list names ``forget`` events that come later
in the log, each listing this event's seq in its payload's "erased_events".

Only the standard library and ``cryptography`` (for the signatures) are used.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

GENESIS = "0" * 64
HASHED = (
    "prev_hash", "seq", "event_id", "realm", "memory_id", "kind", "tx_time", "principal",
    "reason", "payload_digest",
)  # fmt: skip
FIELDS = (*HASHED, "payload", "hash")


class Broken(Exception):
    """The first link that does not hold: its seq and why."""

    def __init__(self, seq: int, why: str) -> None:
        super().__init__(why)
        self.seq = seq
        self.why = why


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def event_hash(event: dict[str, Any]) -> str:
    parts = ["" if event[name] is None else str(event[name]) for name in HASHED]
    return sha256("\x1f".join(parts))


def public_key(text: str) -> tuple[str, Any]:
    """(key id, the Ed25519 public key) from base64 of 32 raw bytes, PEM, or a file."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_public_key,
    )

    path = Path(text)
    if "-----BEGIN" not in text and len(text) < 4096 and path.is_file():
        text = path.read_text(encoding="utf-8")
    if "-----BEGIN" in text:
        key = load_pem_public_key(text.encode("utf-8"))
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError("not an Ed25519 public key")
        raw = key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    else:
        raw = base64.b64decode(text.strip(), validate=True)
        if len(raw) != 32:
            raise ValueError("not 32 bytes in base64")
    return hashlib.sha256(raw).hexdigest()[:16], Ed25519PublicKey.from_public_bytes(raw)


def signature_holds(key: Any, message: str, signature: Any) -> bool:
    from cryptography.exceptions import InvalidSignature

    if not isinstance(signature, str):
        return False
    try:
        key.verify(base64.b64decode(signature, validate=True), message.encode("utf-8"))
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True


def erased_by(payload: str) -> list[str] | None:
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    erased = data.get("erased") if isinstance(data, dict) else None
    if not isinstance(erased, list) or not erased or not all(isinstance(e, str) for e in erased):
        return None
    return erased


def erased_seqs(payload: Any) -> set[int]:
    try:
        data = json.loads(payload) if isinstance(payload, str) else None
    except ValueError:
        return set()
    listed = data.get("erased_events") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return set()
    return {n for n in listed if isinstance(n, int) and not isinstance(n, bool)}


class Walk:
    """One pass over the log (see the module docstring)."""

    def __init__(self, keys: dict[str, Any]) -> None:
        self.keys = keys
        self.prev_hash = GENESIS
        self.seq = 0
        self.events = 0
        self.signed = 0
        self.erased = 0
        self.first_signed: int | None = None
        self.seen: set[str] = set()
        self.awaited: dict[str, list[int]] = {}
        self.head: dict[str, Any] | None = None

    def fail(self, seq: int, why: str) -> Broken:
        """The break at ``seq``, unless an erased event before it never got its
        certificate: that one is the first broken link."""
        waiting = sorted(s for seqs in self.awaited.values() for s in seqs)
        if waiting and waiting[0] < seq:
            return self.unaccounted(waiting[0])
        return Broken(seq, why)

    def unaccounted(self, seq: int) -> Broken:
        name = sorted(c for c, seqs in self.awaited.items() if seq in seqs)[0]
        return Broken(
            seq,
            f"event {seq} payload does not match its digest: the erasure {name} it names "
            "is not a later forget event of the log",
        )

    def event(self, event: dict[str, Any], line: int) -> None:
        if self.head is not None:
            raise Broken(self.seq + 1, f"line {line} follows the head line")
        if not all(name in event for name in FIELDS):
            missing = [name for name in FIELDS if name not in event]
            raise self.fail(self.seq + 1, f"line {line} lacks {', '.join(missing)}")
        seq = event["seq"]
        if not isinstance(seq, int) or seq != self.seq + 1:
            raise self.fail(self.seq + 1, f"event seq {seq} follows a gap")
        if event["prev_hash"] != self.prev_hash:
            raise self.fail(seq, f"event {seq} does not link to its predecessor")
        payload = event["payload"]
        if payload is not None and sha256(payload) != event["payload_digest"]:
            named = erased_by(payload)
            if named is None or any(n in self.seen for n in named):
                raise self.fail(seq, f"event {seq} payload does not match its digest")
            for name in named:
                self.awaited.setdefault(name, []).append(seq)
            self.erased += 1
        if event_hash(event) != event["hash"]:
            raise self.fail(seq, f"event {seq} hash does not match")
        self.check_signature(event)
        awaiting = self.awaited.pop(event["event_id"], None)
        if awaiting is not None:
            listed = erased_seqs(payload) if event["kind"] == "forget" else set()
            unlisted = [s for s in awaiting if s not in listed]
            if unlisted:
                raise self.fail(
                    unlisted[0],
                    f"event {unlisted[0]} payload does not match its digest: the erasure "
                    f"{event['event_id']} it names does not list it",
                )
        self.seen.add(event["event_id"])
        self.prev_hash = event["hash"]
        self.seq = seq
        self.events += 1

    def check_signature(self, event: dict[str, Any]) -> None:
        seq, key_id = event["seq"], event.get("key_id")
        if key_id is None:
            if self.first_signed is not None and self.keys:
                raise self.fail(
                    seq, f"event {seq} is not signed, though event {self.first_signed} before it is"
                )
            return
        if self.first_signed is None:
            self.first_signed = seq
        if not self.keys:
            return
        if key_id not in self.keys:
            raise self.fail(seq, f"event {seq} is signed by key {key_id}, which was not given")
        message = "retain-event/1\n" + event["hash"]
        if not signature_holds(self.keys[key_id], message, event.get("signature")):
            raise self.fail(seq, f"event {seq} signature does not hold for key {key_id}")
        self.signed += 1

    def head_line(self, head: Any) -> None:
        if not isinstance(head, dict) or (head.get("seq"), head.get("hash")) != (
            self.seq,
            self.prev_hash,
        ):
            raise self.fail(self.seq, f"the head line is not the last event ({self.seq})")
        self.head = head
        if not self.keys:
            return
        key_id = head.get("key_id")
        if key_id not in self.keys:
            raise self.fail(self.seq, f"the head is signed by key {key_id}, which was not given")
        message = f"retain-head/1\n{self.seq}\n{self.prev_hash}"
        if not signature_holds(self.keys[key_id], message, head.get("signature")):
            raise self.fail(self.seq, "the head's signature does not hold")

    def end(self) -> None:
        if self.awaited:
            raise self.unaccounted(min(s for seqs in self.awaited.values() for s in seqs))


def check(path: Path, keys: dict[str, Any]) -> Walk:
    """Walk the log at ``path``; the walk, or ``Broken`` at the first broken link."""
    walk = Walk(keys)
    with path.open(encoding="utf-8") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except ValueError as exc:
                raise walk.fail(walk.seq + 1, f"line {number} is not JSON") from exc
            if isinstance(record, dict) and set(record) == {"head"}:
                walk.head_line(record["head"])
            elif isinstance(record, dict):
                walk.event(record, number)
            else:
                raise walk.fail(walk.seq + 1, f"line {number} is not a JSON object")
    walk.end()
    return walk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Check an event log exported by `retain export --format jsonl`."
    )
    parser.add_argument("log", type=Path, help="the exported log (JSON lines)")
    parser.add_argument(
        "--public-key",
        action="append",
        default=[],
        metavar="KEY",
        help="the store's public key (base64 or PEM, or a file holding it); once per key",
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    args = parser.parse_args(argv)
    try:
        keys = dict(public_key(text) for text in args.public_key)
    except (ValueError, binascii.Error, OSError) as exc:
        print(f"error: a public key cannot be read: {exc}", file=sys.stderr)
        return 2
    try:
        walk = check(args.log, keys)
    except OSError as exc:
        print(f"error: cannot read {args.log}: {exc}", file=sys.stderr)
        return 2
    except Broken as broken:
        if args.json:
            print(json.dumps({"ok": False, "broken_at": broken.seq, "problem": broken.why}))
        else:
            print(f"broken_at: {broken.seq}\nproblem: {broken.why}")
        return 1
    outcome = {
        "ok": True,
        "broken_at": None,
        "events": walk.events,
        "head": {"seq": walk.seq, "hash": walk.prev_hash, "signed": walk.head is not None},
        "signed_events": walk.signed,
        "erased_events": walk.erased,
        "keys": sorted(keys),
    }
    if args.json:
        print(json.dumps(outcome))
    else:
        said = f"ok: {walk.events} events, head {walk.seq} {walk.prev_hash}"
        said += f"; {walk.signed} signatures checked" if keys else "; signatures not checked"
        said += f"; {walk.erased} erased events accounted for" if walk.erased else ""
        print(said)
    return 0


if __name__ == "__main__":
    sys.exit(main())
