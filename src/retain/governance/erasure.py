"""Erasure's pure rules: which values a forgotten row held, the digest kept of it, and a
stored payload with those values taken out.

``forget`` (``retain.service.erasure``) erases a value from every row and event that
carried it. What it keeps is a digest of the value (the body: a note's text, a fact's
value, a ticket's content), of one of three kinds:

* ``sha256`` — the plain SHA-256 of the value (anyone holding a candidate value can
  check it, which is the point, and the risk for a guessable one);
* ``hmac-sha256`` — keyed by a secret held outside the store (``RETAIN_FORGET_KEY``):
  only the key's holder can check a candidate;
* ``none`` — nothing kept.

An erased event's payload keeps its shape: the text fields of the rows it names are
blanked, any longer erased text quoted elsewhere in it is cut out, the plain digests of
the erased values are replaced by the kept one, and the key ``erased`` lists the
certificates (the ``forget`` events) that rewrote it. The chain still holds, as it
covers each payload's digest, not the payload.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from retain.model import Memory, Proposal

FORGET_KEY = "RETAIN_FORGET_KEY"  # the environment variable of the digests' key

# The keys of a record (a memory's, a ticket's, a change's) whose values are its text.
# A payload's rows named by id have each of these blanked; ``subject`` and ``predicate``
# stay, as a fact's key (what it was about) is not its value.
TEXT_KEYS = frozenset(
    {
        "name",
        "description",
        "body",
        "tags",
        "references",
        "source",
        "summary",
        "evidence",
        "provenance",
        "metadata",
        "before",
        "after",
        "excerpt",
        "value",
        "content",
    }
)
# An erased value is cut out of any other string of an erased payload only from this
# length on: a shorter one (a tag, say) would match words that are not it.
QUOTED_MIN = 8


class DigestKind(StrEnum):
    SHA256 = "sha256"
    HMAC_SHA256 = "hmac-sha256"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Digest:
    """What is kept of an erased value: its digest (None for ``none``) and the kind."""

    value: str | None
    kind: DigestKind

    def to_dict(self) -> dict[str, Any]:
        return {"digest": self.value, "digest_kind": self.kind.value}


def digest_of(text: str, *, keep: bool, key: bytes | None) -> Digest:
    """The digest kept of ``text``: keyed when there is a key, none when not kept."""
    if not keep:
        return Digest(None, DigestKind.NONE)
    import hashlib  # on first use: a command that erases nothing never loads OpenSSL
    import hmac

    data = text.encode("utf-8")
    if key:
        return Digest(hmac.new(key, data, hashlib.sha256).hexdigest(), DigestKind.HMAC_SHA256)
    return Digest(hashlib.sha256(data).hexdigest(), DigestKind.SHA256)


def sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Metadata the store itself writes (a landed ticket's id, the kinds redacted, a checked
# claim's provenance): the row loses it with the rest, but it is no text of the writer's
# to look for elsewhere.
SYSTEM_METADATA = frozenset({"ticket", "redacted", "proposer_tainted", "provenance", "forgotten"})


def memory_values(memory: Memory) -> set[str]:
    """Every text a memory's row holds: what its erasure takes out."""
    values = {memory.body, memory.description, memory.source, *memory.tags, *memory.references}
    if memory.name:
        values.add(memory.name)
    for key, value in memory.metadata.items():
        if key not in SYSTEM_METADATA:
            values.update(strings(value))
    return {v for v in values if v}


def ticket_values(ticket: Proposal) -> set[str]:
    return {v for v in (ticket.summary, ticket.body, ticket.evidence) if v}


def strings(value: Any) -> Iterable[str]:
    """Every text ``value`` holds, however deep in its lists and objects."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


@dataclass(frozen=True, slots=True)
class Scrub:
    """What one erasure takes out of the payloads it rewrites."""

    ids: frozenset[str]  # the rows (memories, tickets) whose records are blanked
    values: frozenset[str]  # their texts, cut out where quoted
    hashes: dict[str, str | None]  # a plain digest of an erased value → what replaces it
    certificate: str  # the event id of the erasure's ``forget`` event

    def payload(self, payload: Any, *, about: bool) -> tuple[Any, bool]:
        """``payload`` with the erased values taken out, marked with the certificate;
        and whether anything was taken out (an untouched payload is left as it was).
        ``about``: the event is about an erased row, so its own record is blanked."""
        quoted = sorted((v for v in self.values if len(v) >= QUOTED_MIN), key=len, reverse=True)
        changed = [False]

        def clean(value: Any, blank: bool) -> Any:
            if isinstance(value, dict):
                named = blank or value.get("id") in self.ids
                out: dict[str, Any] = {}
                for k, v in value.items():
                    if named and k in TEXT_KEYS and v not in (None, "", [], {}):
                        out[k] = _blank(v)
                        changed[0] = True
                    else:
                        out[k] = clean(v, False)
                return out
            if isinstance(value, list):
                return [clean(v, False) for v in value]
            if isinstance(value, str):
                if value in self.hashes:
                    changed[0] = True
                    return self.hashes[value]
                cut = value
                for v in quoted:
                    cut = cut.replace(v, "")
                if cut != value or value in self.values:
                    changed[0] = True
                    return "" if value in self.values else cut
            return value

        cleaned = clean(payload, about)
        if not changed[0]:
            return payload, False
        if isinstance(cleaned, dict):
            cleaned["erased"] = [*cleaned.get("erased", ()), self.certificate]
        else:  # a payload that is not a record (none is, today) keeps the marker beside it
            cleaned = {"value": cleaned, "erased": [self.certificate]}
        return cleaned, True


def _blank(value: Any) -> Any:
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return []
    return None
