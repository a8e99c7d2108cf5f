"""The assertion ledger and its conflict signals (the seed's ``meta/memory/*``), and the
gate that asks whether acting on a subject's predicate is contested.

``index`` records an assertion as a fact of the store: a memory whose subject is the
entity, whose predicate is the topic and whose body is the fact, made and recorded as a
fact's version is (``rows.authored``, ``rows.record``: admission, its ``create`` event),
in the tier ``fact_write`` would choose (``fact._scope``), with the store it was indexed
in under its metadata's ``ledger`` key (beside the topic as the ledger spells it and the
caller's own metadata, kept there so that no caller's key can pose as a record of the
store's own, such as ``provenance``). Assertions accumulate: a new one on the same key
supersedes nothing. A conflict signal is a row of ``conflicts``, one per (realm, entity,
topic, store); ``conflict=True`` sets it (or updates its reason and time), ``False``
clears it, each change a ``conflict`` or ``conflict_clear`` event in the same
transaction. A signal belongs to the realm, not to a tier: it is written and read as
the global tier is (under access control, ``memory.write`` / ``memory.read`` there).

``query`` and ``stores`` read through the actor's view (an assertion in a tier it does
not see is not returned, nor counted); ``gate`` answers from the active signals of the
key (in any store) and the believed facts of it the view sees (active, so current in
their tier): two that hold different values contest it. Resolving is an event of its
own: ``fact_retract`` of one of the facts, or ``index(..., conflict=False)``.

The normal forms and the values given back are ``retain.assertions``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from retain import assertions, fields
from retain.assertions import (
    ENTITY_MAX_CHARS,
    LEDGER,
    TOPIC_MAX_CHARS,
    Assertion,
    ConflictSignal,
    GateAnswer,
    IndexResult,
    LedgerResult,
    StoreInfo,
)
from retain.errors import InvalidValue
from retain.model import GLOBAL_SCOPE, Memory
from retain.service import access, rows
from retain.service import fact as facts
from retain.service.actor import Kind
from retain.service.view import View
from retain.service.work import Work
from retain.storage.base import Reads

if TYPE_CHECKING:
    from retain.service import MemoryService

REASON_MAX_CHARS = 1000  # the most a conflict signal's reason holds


def _metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The caller's metadata as it is kept (``fields.metadata``): at most
    ``METADATA_MAX_CHARS`` as JSON."""
    if metadata is None:
        return {}
    return fields.metadata(metadata, "an assertion's metadata", assertions.METADATA_MAX_CHARS)


def _reason(reason: str | None) -> str | None:
    if reason is None:
        return None
    kept = fields.text(reason, "conflict_reason").strip()
    if len(reason) > REASON_MAX_CHARS:  # as given: the bound a schema states
        raise InvalidValue(
            f"the conflict reason is {len(reason)} characters long; at most "
            f"{REASON_MAX_CHARS} are kept",
            remedy="say why in a few lines",
            field="conflict_reason",
        )
    return kept


def index(
    svc: MemoryService,
    entity: str,
    topic: str,
    store: str,
    fact: str | None = None,
    *,
    metadata: Mapping[str, Any] | None = None,
    conflict: bool | None = None,
    conflict_reason: str | None = None,
    project: str | None = None,
) -> IndexResult:
    """Record an assertion (``fact``) about ``entity``'s ``topic`` in ``store``,
    and, with ``conflict``, set (True) or clear (False) the key's conflict signal.

    Entity, topic and store are trimmed and their ASCII capitals lowered; the store must
    be one of ``assertions.STORES``. A conflict-only write (no fact, ``conflict=True``)
    records the signal alone; a call with neither a fact nor ``conflict`` is refused, as
    are ``metadata`` without a fact (a signal keeps none) and a ``conflict_reason``
    without ``conflict``. Clearing a key with no active signal changes nothing."""
    entity = fields.subject(assertions.token(entity, "entity", ENTITY_MAX_CHARS))
    topic = assertions.token(topic, "topic", TOPIC_MAX_CHARS)
    predicate = fields.predicate(topic)
    store = assertions.store_of(store)
    value = None
    if fact is not None:
        value = fields.text(fact, "fact").strip()
        if not value:
            raise InvalidValue(
                "an assertion's fact is empty",
                remedy="state the fact, or leave it out for a conflict-only write",
                field="fact",
            )
    kept = _metadata(metadata)
    if metadata is not None and value is None:
        raise InvalidValue(
            "metadata is kept with an assertion, and this call records none",
            remedy="give a fact to keep the metadata with, or leave the metadata out",
            field="metadata",
        )
    reason = _reason(conflict_reason)
    if reason is not None and conflict is None:
        raise InvalidValue(
            "a conflict reason needs conflict: true to set a signal, or false to clear one",
            remedy="say whether the call sets or clears the key's conflict signal",
            field="conflict_reason",
        )
    if value is None and conflict is None:
        raise InvalidValue(
            "an index call needs a fact, or a conflict signal to set or clear",
            remedy="give the fact, or conflict: true (a conflict-only write)",
            field="fact",
        )

    def run(work: Work) -> IndexResult:
        tx, now = work.reads, work.now
        scope = facts._scope(svc, tx, project, "index")
        recorded = None
        if value is not None:
            made = rows.authored(
                svc,
                now,
                scope,
                fields.description(f"{entity} {topic}"[: fields.DESCRIPTION_NOTE_AT]),
                value,
                subject=entity,
                predicate=predicate,
                supersedes=None,
                valid_from=None,
            )
            ledger = {"store": store, "topic": topic, "metadata": kept}
            made = replace(made, metadata={**made.metadata, LEDGER: ledger})
            recorded = Assertion.of(rows.record(work, made, reason=f"indexed in {store}"))
        if conflict is None:
            return IndexResult(recorded, None, receipt=work.last_receipt())
        access.admits(access.current(), GLOBAL_SCOPE)  # a signal is the realm's: global's
        signal, changed = _signal(work, entity, topic, store, conflict, reason)
        wrote = recorded is not None or changed
        return IndexResult(recorded, signal, changed, work.last_receipt() if wrote else None)

    return svc._write(run)


def _signal(
    work: Work, entity: str, topic: str, store: str, conflict: bool, reason: str | None
) -> tuple[ConflictSignal | None, bool]:
    """Set or clear the signal of a key, with its event: (the signal as it stands, whether
    it changed)."""
    found = work.reads.conflicts(work.realm, entity, topic, store, active_only=False)
    current = found[0] if found else None
    if conflict:
        signal = ConflictSignal(work.realm, entity, topic, store, reason or "", True, work.now)
        work.put_conflict(signal)
        work.event("conflict", signal.to_dict(), reason=reason or "")
        return signal, True
    if current is None or not current.active:
        return current, False
    cleared = replace(current, active=False, updated_at=work.now)
    work.put_conflict(cleared)
    work.event("conflict_clear", cleared.to_dict(), reason=reason or "")
    return cleared, True


def _visible(
    svc: MemoryService,
    tx: Reads,
    view: View,
    subject: str | None,
    predicate: str | None,
    *,
    indexed: bool,
) -> list[Memory]:
    """The active facts (``indexed``: the assertions) the view sees, oldest first: an
    agent's of its scopes, anyone else's of the realm, each asked of the view."""
    scopes = view.scopes if svc.kind is Kind.AGENT else None
    found = tx.ledger_facts(svc.realm, scopes, subject, predicate, indexed=indexed)
    return [m for m in found if view.sees(m)]


def active_signals(
    svc: MemoryService, tx: Reads, view: View, entity: str | None = None,
    topic: str | None = None, store: str | None = None,
) -> list[ConflictSignal]:  # fmt: skip
    """The active signals the view reads: a realm's signals are read as its global tier."""
    if not view.covers(svc.realm, GLOBAL_SCOPE):
        return []
    return tx.conflicts(svc.realm, entity, topic, store)


def _filter(value: str | None, what: str) -> str | None:
    return None if value is None else assertions.filter_token(fields.text(value, what))


def query(
    svc: MemoryService,
    entity: str | None = None,
    topic: str | None = None,
    store: str | None = None,
    query: str | None = None,
    *,
    project: str | None = None,
) -> LedgerResult:
    """The assertions the reader sees and the active conflict signals, filtered exactly
    by entity, topic and store (each folded as ``index`` folds it; one that folds to
    nothing, or a store that is none of the five, is no filter), then by ``query``: a
    substring, ignoring case, of the entity, topic or fact (a signal's reason)."""
    wanted_entity, wanted_topic = _filter(entity, "entity"), _filter(topic, "topic")
    wanted_store = assertions.filter_store(None if store is None else fields.text(store, "store"))
    needle = None if query is None else fields.text(query, "query").strip()
    try:
        predicate = None if wanted_topic is None else fields.predicate(wanted_topic)
    except InvalidValue:  # no fact's predicate: the topic filter matches no assertion
        predicate = None

    def kept(a: Assertion) -> bool:
        return (
            wanted_entity in (None, a.entity)
            and wanted_topic in (None, a.topic)
            and wanted_store in (None, a.store)
            and assertions.contains(needle, a.entity, a.topic, a.fact)
        )

    def run(tx: Reads) -> LedgerResult:
        view = svc._reader(tx, project)
        held = _visible(svc, tx, view, wanted_entity, predicate, indexed=True)
        found = [a for a in map(Assertion.of, held) if kept(a)]
        signals = [
            c
            for c in active_signals(svc, tx, view, wanted_entity, wanted_topic, wanted_store)
            if assertions.contains(needle, c.entity, c.topic, c.reason)
        ]
        return LedgerResult(found, signals)

    return svc.backend.read(run)


def stores(svc: MemoryService, *, project: str | None = None) -> list[StoreInfo]:
    """One entry per store of the ledger: how many of its assertions the reader sees,
    plus its active conflict signals."""

    def run(tx: Reads) -> list[StoreInfo]:
        view = svc._reader(tx, project)
        seen = map(Assertion.of, _visible(svc, tx, view, None, None, indexed=True))
        return assertions.store_counts(seen, active_signals(svc, tx, view))

    return svc.backend.read(run)


def gate(
    svc: MemoryService, subject: str, predicate: str, *, project: str | None = None
) -> GateAnswer:
    """Whether acting on ``subject``'s ``predicate`` is contested: an active conflict
    signal on that key (in any store), or two believed facts of it the reader sees (an
    assertion is one) that hold different values. The answer names the signals and, when
    they disagree, the facts."""
    entity = fields.subject(assertions.token(subject, "subject", ENTITY_MAX_CHARS))
    topic = assertions.token(predicate, "predicate", TOPIC_MAX_CHARS)
    folded = fields.predicate(topic)

    def run(tx: Reads) -> GateAnswer:
        view = svc._reader(tx, project)
        signals = active_signals(svc, tx, view, entity, topic)
        believed = _visible(svc, tx, view, entity, folded, indexed=False)
        disagree = assertions.contradicting(believed)
        facts = [assertions.fact_entry(m) for m in disagree]
        return GateAnswer(entity, topic, bool(signals or disagree), signals, facts)

    return svc.backend.read(run)
