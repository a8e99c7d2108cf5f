"""A write's receipt: which event recorded it, when, by whom, the hash of the row it
wrote and the event's place in the hash chain, signed when the store has a key; and the
other evidence of the log: its signed head (``ChainHead``) and what an export of it
wrote (``LogExport``).

A receipt carries every field the event's chain hash covers, so that whoever holds it
can recompute that hash, and (signed) check with the store's public key alone that the
store issued it (``verify``): no store is opened. Made by the unit of work
(``Work.receipt``) for the event a verb appended; each write result carries one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from retain import ledger
from retain.chrono import stamp
from retain.errors import SignatureInvalid
from retain.model import Event

if TYPE_CHECKING:
    from retain.signing import PublicKey, Signer

VERSION = 1


@dataclass(frozen=True, slots=True)
class Receipt:
    """The evidence of one applied write (see the module docstring)."""

    event_id: str
    seq: int
    tx_time: str  # stored form (``chrono.stamp``)
    principal: str
    realm: str
    kind: str
    memory_id: str | None
    reason: str
    content_hash: str | None  # the hash of the row written, where there is one
    payload_digest: str
    prev_hash: str
    chain_hash: str  # the event's hash
    key_id: str | None = None  # the signing key's id, when signed
    signature: str | None = None  # base64 Ed25519 over ``signing.receipt_message``
    version: int = VERSION

    @classmethod
    def of(
        cls, event: Event, content_hash: str | None = None, signer: Signer | None = None
    ) -> Receipt:
        """The receipt of ``event``, signed by ``signer`` if there is one."""
        made = cls(
            event_id=event.event_id,
            seq=event.seq,
            tx_time=stamp(event.tx_time),
            principal=event.principal,
            realm=event.realm,
            kind=event.kind,
            memory_id=event.memory_id,
            reason=event.reason,
            content_hash=content_hash,
            payload_digest=event.payload_digest,
            prev_hash=event.prev_hash,
            chain_hash=event.hash,
            key_id=None if signer is None else signer.key_id,
        )
        if signer is None:
            return made
        from retain.signing import receipt_message

        return replace(made, signature=signer.sign(receipt_message(made.to_dict())))

    @property
    def signed(self) -> bool:
        return self.signature is not None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Any) -> Receipt:
        """The receipt a JSON object holds (a door's result, or the ``receipt`` in one),
        or ``signature_invalid`` naming what is wrong with it."""
        if isinstance(data, Mapping) and isinstance(data.get("receipt"), Mapping):
            data = data["receipt"]
        if not isinstance(data, Mapping):
            raise _refused("not_a_receipt", "the text is not a receipt (a JSON object)")
        names = {f.name: f for f in fields(cls)}
        missing = sorted(n for n in names if n not in data and n not in _OPTIONAL)
        unknown = sorted(k for k in data if k not in names)
        if missing or unknown:
            raise _refused(
                "malformed",
                "the receipt "
                + (f"lacks {', '.join(missing)}" if missing else f"has {', '.join(unknown)}"),
            )
        values = {n: data[n] for n in names if n in data}
        for name in ("seq", "version"):
            if name in values and (
                not isinstance(values[name], int) or isinstance(values[name], bool)
            ):
                raise _refused("malformed", f"the receipt's {name} is not a whole number")
        for name, value in values.items():
            if name not in ("seq", "version") and value is not None and not isinstance(value, str):
                raise _refused("malformed", f"the receipt's {name} is not text")
        return cls(**values)


_OPTIONAL = frozenset({"key_id", "signature", "version"})


def _refused(reason: str, said: str, **more: Any) -> SignatureInvalid:
    return SignatureInvalid(
        f"{said}, so it does not verify",
        remedy="check the receipt against the store's public key as the store issued it; "
        "a receipt changed after it was issued does not verify",
        reason=reason,
        **more,
    )


def verify(receipt: Receipt, public: PublicKey) -> Receipt:
    """Check ``receipt`` with only the store's public key: its chain hash is the hash of
    the event it describes, it was signed by that key, and the signature holds. The
    receipt, or ``signature_invalid`` (``details['reason']``: ``chain_hash``,
    ``unsigned``, ``other_key``, ``signature``)."""
    from retain.signing import receipt_message

    recomputed = ledger.event_hash(
        prev_hash=receipt.prev_hash,
        seq=receipt.seq,
        event_id=receipt.event_id,
        realm=receipt.realm,
        memory_id=receipt.memory_id,
        kind=receipt.kind,
        tx_time=receipt.tx_time,
        principal=receipt.principal,
        reason=receipt.reason,
        payload_digest=receipt.payload_digest,
    )
    if recomputed != receipt.chain_hash:
        raise _refused(
            "chain_hash", f"receipt {receipt.event_id}'s chain hash is not its event's hash"
        )
    if receipt.signature is None:
        raise _refused("unsigned", f"receipt {receipt.event_id} is not signed")
    if receipt.key_id != public.key_id:
        raise _refused(
            "other_key",
            f"receipt {receipt.event_id} was signed by key {receipt.key_id}, not by "
            f"{public.key_id}",
            key_id=receipt.key_id,
            expected_key_id=public.key_id,
        )
    if not public.verifies(receipt_message(receipt.to_dict()), receipt.signature):
        raise _refused("signature", f"receipt {receipt.event_id}'s signature does not hold")
    return receipt


@dataclass(frozen=True, slots=True)
class ChainHead:
    """The last event of the log (seq, hash), signed when the store has a signing key:
    the head a checker of an exported log expects to end at (``retain.signing``)."""

    seq: int
    hash: str
    key_id: str | None = None
    signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "hash": self.hash,
            "key_id": self.key_id,
            "signature": self.signature,
        }


@dataclass(frozen=True, slots=True)
class LogExport:
    """What an export of the event log wrote (``retain.eventlog``): the file, how many
    events (how many of them signed), the chain head it ends at, and the head's
    signature when the store has a signing key."""

    path: str
    events: int
    signed: int
    head_seq: int
    head_hash: str
    key_id: str | None = None
    head_signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "events": self.events,
            "signed": self.signed,
            "head": {
                "seq": self.head_seq,
                "hash": self.head_hash,
                "key_id": self.key_id,
                "signature": self.head_signature,
            },
        }
