"""The assertion ledger's pure rules and values: the five stores, how an entity, a topic
and a store are normalised, the substring filter of a query, and what the ledger's verbs
give back (an assertion, a conflict signal, a store's count, the gate's answer).

An assertion is a fact of the store (``retain.service.assertion`` writes it): a memory
whose subject is the entity, whose predicate is the topic, whose body is the fact, and
whose metadata holds, under ``ledger``, the store it was indexed in, the topic as the
ledger spells it and the caller's own metadata. A conflict signal is a row of its own,
one per (realm, entity, topic, store). Nothing here reads or writes a store.

The tokens are folded as the seed folds them: whitespace around them trimmed and the
ASCII capitals ``A``-``Z`` lowered, nothing else (``É`` stays ``É``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from retain import fields
from retain.chrono import stamp
from retain.errors import InvalidValue
from retain.model import Memory, Status, Trust, scope_project
from retain.receipt import Receipt

# The stores an assertion is indexed in. The seed (Meta's ``meta/memory/*``) speaks of
# "five supported store names" and names only ``knowledge_graph``; the other four are
# the kinds of store its memory hub roadmap names (vector and document retrieval, a
# timeline, a key-value store).
STORES = ("knowledge_graph", "vector", "document", "timeline", "key_value")
LEDGER = "ledger"  # the metadata key an assertion's ledger fields are kept under
# ``store_of``'s rule as a schema's pattern: a store's name in any ASCII case, whitespace
# around it (what ``str.strip`` strips) allowed.
STORE_PATTERN = "^{blank}*(?:{names}){blank}*$".format(
    blank=fields.BLANK,
    names="|".join(
        "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in name) for name in STORES
    ),
)
METADATA_MAX_CHARS = 10_000  # the most an assertion's metadata may take, as JSON
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold(value: str) -> str:
    """``value`` trimmed and its ASCII capitals lowered (the seed's normal form)."""
    return value.strip().translate(_ASCII_LOWER)


ENTITY_MAX_CHARS = 200  # a fact's subject's bound
TOPIC_MAX_CHARS = 100  # a fact's predicate's bound


def token(value: str, what: str, limit: int) -> str:
    """An entity or topic as the ledger keeps it: one line of at most ``limit``
    characters once folded, not empty, else ``invalid_value``."""
    folded = fold(value)
    remedy = f"name the {what} in a word or a few, on one line"
    if not folded:
        raise InvalidValue(f"an assertion needs a {what}", remedy=remedy, field=what)
    if "\n" in folded or "\r" in folded:
        raise InvalidValue(f"the {what} must be one line", remedy=remedy, field=what)
    if len(folded) > limit:
        raise InvalidValue(
            f"the {what} is {len(folded)} characters long; at most {limit} are allowed",
            remedy=remedy,
            field=what,
        )
    return folded


def store_of(value: str) -> str:
    """A store's name as the ledger keeps it, or ``invalid_value`` naming the five."""
    folded = fold(value)
    if folded not in STORES:
        raise InvalidValue(
            f"{value!r} is not a store of the ledger",
            remedy=f"name one of {', '.join(STORES)}",
            field="store",
            stores=list(STORES),
        )
    return folded


def filter_token(value: str | None) -> str | None:
    """An exact filter of a query: folded, and None (no filter) when nothing is left."""
    if value is None:
        return None
    return fold(value) or None


def filter_store(value: str | None) -> str | None:
    """A store filter of a query: folded, and None (no filter) when empty or no store's
    name: the seed treats an unsupported store filter as absent, not as an error."""
    folded = filter_token(value)
    return folded if folded in STORES else None


def contains(needle: str | None, *haystack: str) -> bool:
    """Whether ``needle`` (None or empty: anything) is in one of ``haystack``, ignoring
    case."""
    if not needle:
        return True
    folded = needle.casefold()
    return any(folded in text.casefold() for text in haystack)


def fields_of(memory: Memory) -> Mapping[str, Any] | None:
    """The ledger fields of an assertion's row (None: the row is no assertion)."""
    kept = memory.metadata.get(LEDGER)
    if isinstance(kept, dict) and kept.get("store") in STORES:
        return kept
    return None


@dataclass(frozen=True, slots=True)
class Assertion:
    """One assertion: a fact of the store, indexed in one of the ledger's stores."""

    id: str
    entity: str
    topic: str
    store: str
    fact: str
    metadata: dict[str, Any]
    scope: str
    author: str
    trust: Trust
    status: Status
    recorded_at: datetime

    @classmethod
    def of(cls, memory: Memory) -> Assertion:
        kept = fields_of(memory)
        assert kept is not None, "an assertion's row holds its ledger fields"
        return cls(
            id=memory.id,
            entity=memory.subject or "",
            topic=str(kept.get("topic") or memory.predicate or ""),
            store=str(kept["store"]),
            fact=memory.body,
            metadata=dict(kept.get("metadata") or {}),
            scope=memory.scope,
            author=memory.author,
            trust=memory.trust,
            status=memory.status,
            recorded_at=memory.created_at,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "entity": self.entity,
            "topic": self.topic,
            "store": self.store,
            "fact": self.fact,
            "metadata": self.metadata,
            "scope": self.scope,
            "project": scope_project(self.scope),
            "author": self.author,
            "trust": self.trust.value,
            "status": self.status.value,
            "recorded_at": stamp(self.recorded_at),
        }


@dataclass(frozen=True, slots=True)
class ConflictSignal:
    """The conflict signal of one (realm, entity, topic, store): whether it is active,
    why (free text, possibly empty), and when it last changed."""

    realm: str
    entity: str
    topic: str
    store: str
    reason: str
    active: bool
    updated_at: datetime

    @property
    def key(self) -> tuple[str, str, str]:
        return self.entity, self.topic, self.store

    def to_dict(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "topic": self.topic,
            "store": self.store,
            "reason": self.reason,
            "active": self.active,
            "updated_at": stamp(self.updated_at),
        }


@dataclass(frozen=True, slots=True)
class IndexResult:
    """What an ``index`` call did: the assertion it recorded (None: a conflict-only or
    clearing call), the signal as it now stands (None: the call left signals alone), and
    whether the signal changed (a clear of no active signal changes nothing)."""

    assertion: Assertion | None
    conflict: ConflictSignal | None
    conflict_changed: bool = False
    receipt: Receipt | None = None  # the last event the call appended (None: it wrote none)

    def to_dict(self) -> dict[str, Any]:
        return {
            "assertion": None if self.assertion is None else self.assertion.to_dict(),
            "conflict": None if self.conflict is None else self.conflict.to_dict(),
            "conflict_changed": self.conflict_changed,
            "receipt": None if self.receipt is None else self.receipt.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class LedgerResult:
    """What a ledger query found: the assertions, oldest first, and the active conflict
    signals, by key."""

    assertions: list[Assertion] = field(default_factory=list)
    conflicts: list[ConflictSignal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "assertions": [a.to_dict() for a in self.assertions],
            "conflicts": [c.to_dict() for c in self.conflicts],
        }


@dataclass(frozen=True, slots=True)
class StoreInfo:
    """One store's count: its assertions the reader sees plus its active signals."""

    store: str
    record_count: int

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "record_count": self.record_count}


def store_counts(
    assertions: Iterable[Assertion], conflicts: Iterable[ConflictSignal]
) -> list[StoreInfo]:
    """One entry per store, in ``STORES`` order."""
    counts = dict.fromkeys(STORES, 0)
    for store in (*(a.store for a in assertions), *(c.store for c in conflicts)):
        counts[store] += 1
    return [StoreInfo(store, n) for store, n in counts.items()]


@dataclass(frozen=True, slots=True)
class GateAnswer:
    """Whether acting on (subject, predicate) is contested, and what contests it: the
    active conflict signals on that key (any store) and, when two believed facts of it
    disagree, those facts (each as an assertion when it is one, else as a fact id and
    value)."""

    subject: str
    predicate: str
    contested: bool
    conflicts: list[ConflictSignal]
    facts: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "predicate": self.predicate,
            "contested": self.contested,
            "conflicts": [c.to_dict() for c in self.conflicts],
            "facts": self.facts,
        }


def contradicting(believed: Iterable[Memory]) -> list[Memory]:
    """Of the believed versions of one key, those that make it contested: every one,
    when they hold two values or more (a value compared as written, trimmed); none
    otherwise."""
    versions = list(believed)
    return versions if len({v.body.strip() for v in versions}) > 1 else []


def fact_entry(memory: Memory) -> dict[str, Any]:
    """A believed fact as the gate names it."""
    kept = fields_of(memory)
    return {
        "id": memory.id,
        "scope": memory.scope,
        "subject": memory.subject,
        "predicate": memory.predicate,
        "value": memory.body,
        "store": None if kept is None else kept["store"],
        "author": memory.author,
        "trust": memory.trust.value,
        "recorded_at": stamp(memory.created_at),
    }
