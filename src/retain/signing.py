"""Ed25519 keys: the signing key a store signs its events, receipts and chain head with,
and the public key that checks them with nothing else.

The signing key comes from ``$RETAIN_SIGNING_KEY`` or the file ``[signing] key_file``
of config.toml names (the environment wins): the 32 raw bytes of the private key in
base64, or a PEM (PKCS #8) private key. A public key is given the same ways: base64 of
its 32 raw bytes, or a PEM public key. A key's id is the first 16 hex digits of the
SHA-256 of its raw public key.

What is signed is a short text with a domain line first, so that a signature of one
kind never passes for another (``tools/check_log.py`` builds the same texts):

    event    "retain-event/1\\n" + hash
    receipt  "retain-receipt/1\\n" + canonical JSON of the receipt without its signature
    head     "retain-head/1\\n" + seq + "\\n" + hash

``cryptography`` is imported here only, when a key is read or made: a store with no
key configured never loads it.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retain.errors import KeyInvalid, KeyMissing

ENV = "RETAIN_SIGNING_KEY"
EVENT = "retain-event/1\n"
RECEIPT = "retain-receipt/1\n"
HEAD = "retain-head/1\n"


def key_id(raw_public: bytes) -> str:
    import hashlib

    return hashlib.sha256(raw_public).hexdigest()[:16]


def event_message(chain_hash: str) -> bytes:
    return (EVENT + chain_hash).encode("utf-8")


def head_message(seq: int, chain_hash: str) -> bytes:
    return f"{HEAD}{seq}\n{chain_hash}".encode()


def receipt_message(body: Mapping[str, Any]) -> bytes:
    """What a receipt's signature covers: every field but the signature itself."""
    from retain.ledger import canonical

    return (RECEIPT + canonical({k: v for k, v in body.items() if k != "signature"})).encode()


@dataclass(frozen=True, slots=True)
class PublicKey:
    """A public key that checks signatures offline."""

    raw: bytes

    @property
    def key_id(self) -> str:
        return key_id(self.raw)

    @property
    def text(self) -> str:
        """The key as base64 of its 32 raw bytes (what ``--public-key`` takes)."""
        return base64.b64encode(self.raw).decode("ascii")

    def verifies(self, message: bytes, signature: str) -> bool:
        """Whether ``signature`` (base64) is this key's over ``message``."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            sig = base64.b64decode(signature, validate=True)
            Ed25519PublicKey.from_public_bytes(self.raw).verify(sig, message)
        except (InvalidSignature, ValueError, binascii.Error):
            return False
        return True


class Signer:
    """A signing key, loaded once per store."""

    __slots__ = ("_key", "public")

    def __init__(self, key: Any) -> None:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        self._key = key
        self.public = PublicKey(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))

    @property
    def key_id(self) -> str:
        return self.public.key_id

    def sign(self, message: bytes) -> str:
        """The base64 Ed25519 signature of ``message``."""
        return base64.b64encode(self._key.sign(message)).decode("ascii")

    @property
    def private_text(self) -> str:
        """The private key as base64 of its 32 raw bytes (what ``$RETAIN_SIGNING_KEY``
        takes): for ``keygen`` to hand over once, never to print otherwise."""
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
        )

        raw = self._key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        return base64.b64encode(raw).decode("ascii")


def generate() -> Signer:
    """A new signing key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Signer(Ed25519PrivateKey.generate())


def _raw(text: str) -> bytes | None:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


def private_key(text: str, where: str) -> Signer:
    """The signing key ``text`` holds (base64 of 32 raw bytes, or PEM); ``where`` names
    its origin for the refusal (never its value)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        if "-----BEGIN" in text:
            key = load_pem_private_key(text.encode("utf-8"), password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ValueError("not an Ed25519 key")
            return Signer(key)
        raw = _raw(text)
        if raw is None or len(raw) != 32:
            raise ValueError("not 32 bytes in base64")
        return Signer(Ed25519PrivateKey.from_private_bytes(raw))
    except (ValueError, TypeError) as exc:
        raise KeyInvalid(
            f"the signing key in {where} is not an Ed25519 private key ({exc})",
            remedy="give the base64 of the key's 32 raw bytes, or a PEM private key; "
            "a new one can be generated",
            where=where,
        ) from exc


def public_key(text: str, where: str) -> PublicKey:
    """The public key ``text`` holds (base64 of 32 raw bytes, or PEM)."""
    if "-----BEGIN" in text:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            PublicFormat,
            load_pem_public_key,
        )

        try:
            key = load_pem_public_key(text.encode("utf-8"))
        except ValueError as exc:
            raise _bad_public(where, str(exc)) from exc
        if not isinstance(key, Ed25519PublicKey):
            raise _bad_public(where, "not an Ed25519 key")
        return PublicKey(key.public_bytes(Encoding.Raw, PublicFormat.Raw))
    raw = _raw(text)
    if raw is None or len(raw) != 32:
        raise _bad_public(where, "not 32 bytes in base64")
    return PublicKey(raw)


def _bad_public(where: str, why: str) -> KeyInvalid:
    return KeyInvalid(
        f"the public key in {where} is not an Ed25519 public key ({why})",
        remedy="give the base64 of the key's 32 raw bytes (as the store prints its public "
        "key), or a PEM public key",
        where=where,
    )


def read_key_file(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyInvalid(
            f"cannot read the {what} file {path}: {exc}",
            remedy="point at a readable file holding the key",
            where=str(path),
        ) from exc


def configured(key_file: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Where the signing key comes from (``$RETAIN_SIGNING_KEY`` or the key file), if
    anywhere: known without reading the key or loading ``cryptography``."""
    env = os.environ if environ is None else environ
    if env.get(ENV):
        return f"${ENV}"
    return key_file or None


def load(key_file: str, environ: Mapping[str, str] | None = None) -> Signer | None:
    """The configured signing key (None: none is configured)."""
    env = os.environ if environ is None else environ
    text = env.get(ENV)
    if text:
        return private_key(text, f"${ENV}")
    if key_file:
        return private_key(read_key_file(Path(key_file), "signing key"), key_file)
    return None


def require(signer: Signer | None) -> Signer:
    if signer is None:
        raise KeyMissing(
            "no signing key is configured, so there is nothing to sign with",
            remedy=f"set ${ENV} to a key, or name a key file as key_file under [signing] "
            "in config.toml; a new key can be generated",
            fix="keygen",
        )
    return signer
