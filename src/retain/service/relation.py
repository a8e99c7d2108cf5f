"""The relation graph's verbs: a memory's graph, an explicit link and a curator's decision
on a pair (``retain.graph``; the pass that proposes similar pairs is
``retain.service.similar``).

**What is stored and what is read.** ``relations`` holds the edges someone made: the
``similar_to`` pairs a dedup pass found, and every ``link`` and ``decide``. A memory's
``references``, a fact version's ``supersedes`` and a successor's ``derived_from`` are
edges too, read from the memories themselves by ``graph`` (never copied, so they cannot
disagree). Every change of a stored edge is a ``relate`` event in the same
transaction; what it does to a memory (a supersede) is that memory's event as well.

**Who may do what.** Only an explicit act makes ``supersedes`` or ``contradicts``:
``link`` and ``decide``, by curators (the policy table). A dedup pass makes
``similar_to`` alone, between two active memories of the same scope that the caller
sees (an agent's own scope is its identity's, so no automatic edge crosses an agent or a
scope), and never merges, retires or deletes anything: a curator decides each pair.

**Supersede.** ``decide OLD supersede --target NEW`` retires OLD (status
``superseded``, its ``supersede`` event) and records NEW ``supersedes`` OLD: OLD stays
readable (``get``, ``graph``), pointing at NEW (``superseded_by``), and leaves searches
and the context. **Contradict** records the pair open and raises the conflict signal of
its key (``conflict_key``), which the gate reports until a decision settles every open
contradiction of that key. **Keep** settles a pair as two memories that both stand.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from retain import fields, graph
from retain.errors import InvalidInput, InvalidValue, NotActive, NotFound
from retain.graph import CONTRADICTS, DERIVED_FROM, REFERENCES, SIMILAR_TO, SUPERSEDES, Relation
from retain.model import GLOBAL_SCOPE, Memory, Status
from retain.receipt import Receipt
from retain.service import access, lookup, rows
from retain.service.view import View
from retain.service.work import Work
from retain.storage.base import Reads

if TYPE_CHECKING:
    from datetime import datetime

    from retain.assertions import ConflictSignal  # a contradiction's: imported where made
    from retain.graph_results import Edge, GraphResult, LinkResult
    from retain.service import MemoryService

SIGNAL_STORE = "knowledge_graph"  # the ledger store a contradiction's signal is kept in


def found(svc: MemoryService, tx: Reads, ref: str, project: str | None = None) -> Memory:
    """The memory ``ref`` names, by id or by name, as the actor's view sees it; else
    ``not_found`` (a memory outside the view is not disclosed)."""
    fields.text(ref, "memory")
    view = svc._reader(tx, project)
    by_id = [m for m in tx.get_many([ref]) if m.realm == svc.realm and view.sees(m)]
    if by_id:
        return by_id[0]
    unknown = NotFound(
        f"no memory has the id or name {ref!r}",
        remedy="check it by listing or searching the memories",
        fix="find",
        id=ref,
        project=project,
    )
    try:
        fields.name(ref)
    except InvalidInput:
        raise unknown from None
    try:
        return lookup.locate(svc, tx, ref, project, unnamed=True)
    except NotFound as missing:
        if missing.code != NotFound.code:  # the project named is none: say so
            raise
        raise unknown from None


def _type(value: str) -> str:
    kind = fields.text(value, "type").strip().casefold().replace("-", "_")
    if kind == REFERENCES:
        raise InvalidValue(
            "a references edge is read from the memory's own references",
            remedy="add the target to the memory's references (write it with references)",
            field="type",
        )
    if kind not in graph.LINKED:
        raise InvalidValue(
            f"{value!r} is not a relation type",
            remedy=f"name one of {', '.join(graph.LINKED)}",
            field="type",
            types=list(graph.LINKED),
        )
    return kind


def _reason(value: str) -> str:
    reason = fields.text(value, "reason").strip()
    if len(reason) > graph.REASON_MAX_CHARS:
        raise InvalidValue(
            f"the reason is {len(reason)} characters long; at most "
            f"{graph.REASON_MAX_CHARS} are allowed",
            remedy="say why in a sentence or two",
            field="reason",
        )
    return reason


# -- reading a memory's graph -----------------------------------------------------------


def graph_of(svc: MemoryService, memory: str, *, project: str | None = None) -> GraphResult:
    """A memory (by id or name) with its outgoing and incoming edges, the stored ones and
    those read from the memories; an edge to a memory the reader does not see is left
    out. An unknown id is ``not_found``, never an empty graph."""
    from retain.graph_results import GraphResult

    now = svc._now()

    def run(tx: Reads) -> GraphResult:
        subject = found(svc, tx, memory, project)
        view = svc._reader(tx, project)
        edges = _edges(svc, tx, view, subject)
        return GraphResult(rows.linked(tx, [subject])[0], tuple(edges), now)

    return svc.backend.read(run)


def _edges(svc: MemoryService, tx: Reads, view: View, memory: Memory) -> list[Edge]:
    from retain.graph_results import Edge

    stored = tx.relations(svc.realm, [memory.id])
    successors = tx.successors([memory.id])
    derived = tx.derived_from(svc.realm, memory.id)
    wanted = {r.other(memory.id) for r in stored} | {new for _, new, _ in successors}
    wanted |= {m for m in (memory.supersedes, memory.derived_from) if m}
    wanted |= set(memory.references)
    held = tx.get_many(sorted(wanted))
    others = {m.id: m for m in held if view.sees(m)}
    hidden = {m.id for m in held} - set(others)  # not disclosed, not even by its id
    edges = [
        Edge(r.type, r.source == memory.id, others[r.other(memory.id)], r)
        for r in stored
        if r.other(memory.id) in others
    ]
    if memory.supersedes in others:
        edges.append(Edge(SUPERSEDES, True, others[memory.supersedes]))
    edges += [Edge(SUPERSEDES, False, others[new]) for _, new, _ in successors if new in others]
    if memory.derived_from is not None and memory.derived_from not in hidden:
        origin = others.get(memory.derived_from)  # None: a ticket's id, or one now gone
        reference = memory.derived_from
        if origin is None and tx.get_proposal(svc.realm, reference) is not None:
            reference = f"ticket:{reference}"  # the ticket whose approval landed it
        edges.append(Edge(DERIVED_FROM, True, origin, reference=reference))
    edges += [Edge(DERIVED_FROM, False, m) for m in derived if view.sees(m)]
    for reference in memory.references:
        if reference in hidden:
            continue
        target = others.get(reference) or _named(svc, tx, view, memory, reference)
        edges.append(Edge(REFERENCES, True, target, reference=reference))
    citing = tx.referencing(svc.realm, [memory.id] + ([memory.name] if memory.name else []))
    edges += [
        Edge(REFERENCES, False, m)
        for m in citing
        if m.id != memory.id and view.sees(m) and lookup.cites(m, memory)
    ]
    return edges


def _named(svc: MemoryService, tx: Reads, view: View, memory: Memory, name: str) -> Memory | None:
    """The memory a reference names from where ``memory`` is: its own tier's, or a global
    one (None: it names none the reader sees)."""
    if not fields.is_name(name):
        return None
    near = [
        m
        for m in tx.find_by_name(svc.realm, name, None)
        if view.sees(m) and m.scope in (GLOBAL_SCOPE, memory.scope)
    ]
    return min(near, key=lambda m: m.scope != memory.scope) if near else None


# -- links and decisions ----------------------------------------------------------------


def link(
    svc: MemoryService,
    source: str,
    target: str,
    type: str,  # noqa: A002 - the relation's type, as the doors name it
    *,
    reason: str = "",
    project: str | None = None,
) -> LinkResult:
    """Record ``source`` → ``target`` of ``type`` (one of ``graph.LINKED``): a
    ``supersedes`` link retires ``target`` as ``decide`` does, a ``contradicts`` link
    raises its key's conflict signal. Linking an edge that stands changes nothing but
    its reason."""
    from retain.graph_results import LinkResult

    kind, why = _type(type), _reason(reason)

    def run(work: Work) -> LinkResult:
        first, second = _pair(svc, work.reads, source, target, project)
        if kind == SUPERSEDES:
            return _supersede(svc, work, newer=first, older=second, reason=why)
        if kind == CONTRADICTS:
            return _contradict(svc, work, first, second, why)
        relation, changed = _put(svc, work, first, second, kind, why)
        return LinkResult(relation, first, second, changed, work.now, _receipt(work, changed))

    return svc._write(run)


def decide(
    svc: MemoryService,
    memory: str,
    action: str,
    *,
    target: str,
    reason: str = "",
    project: str | None = None,
) -> LinkResult:
    """A curator's decision on ``memory`` and ``target``: ``supersede`` (``target`` is
    the newer memory and takes over: ``memory`` is retired, pointing at it),
    ``contradict`` (the two conflict: the pair stays open and its key's conflict signal
    is raised) or ``keep`` (both stand: an open pair between them is settled, and a dedup
    pass will not propose them again)."""
    verb = fields.text(action, "action").strip().casefold()
    if verb not in graph.DECISIONS:
        raise InvalidValue(
            f"{action!r} is not a decision",
            remedy=f"decide one of {', '.join(graph.DECISIONS)}",
            field="action",
            actions=list(graph.DECISIONS),
        )
    why = _reason(reason)

    def run(work: Work) -> LinkResult:
        older, other = _pair(svc, work.reads, memory, target, project)
        if verb == "supersede":
            return _supersede(svc, work, newer=other, older=older, reason=why)
        if verb == "contradict":
            return _contradict(svc, work, older, other, why)
        return _keep(svc, work, older, other, why)

    return svc._write(run)


def _pair(
    svc: MemoryService, tx: Reads, source: str, target: str, project: str | None
) -> tuple[Memory, Memory]:
    """The two memories a link or decision names, each one the caller may change."""
    if not fields.text(target, "target").strip():
        raise InvalidValue(
            "a decision on a pair needs the other memory",
            remedy="name it with target (an id or a name)",
            field="target",
        )
    first, second = found(svc, tx, source, project), found(svc, tx, target, project)
    if first.id == second.id:
        raise InvalidValue(
            f"{rows.label(first)!r} cannot be related to itself",
            remedy="name two different memories",
            field="target",
        )
    for memory in (first, second):  # an edge is written as its ends are (grants)
        access.admits(access.current(), memory.scope)
    return first, second


def _active(memory: Memory, what: str) -> None:
    if memory.status is not Status.ACTIVE:
        raise NotActive(
            f"{rows.label(memory)!r} is {memory.status.value}, so it cannot be {what}",
            remedy="read its graph to see what is in force, and decide on that memory",
            fix="graph",
            id=memory.id,
            status=memory.status.value,
        )


def _supersede(
    svc: MemoryService, work: Work, *, newer: Memory, older: Memory, reason: str
) -> LinkResult:
    from retain.graph_results import LinkResult

    _active(older, "superseded")
    _active(newer, "the memory that supersedes another")
    retired = replace(
        older, status=Status.SUPERSEDED, updated_at=work.now, changed_by=svc.principal
    )
    stored = rows.swap(work, retired, older, "superseded")
    work.event("supersede", rows.payload_of(stored, work.now), memory_id=older.id, reason=reason)
    relation, _ = _put(svc, work, newer, older, SUPERSEDES, reason)
    # a retired memory claims nothing: its open pairs, with any other memory, are settled
    _, signal = _decided(svc, work, _open_of(svc, work.reads, older), "supersede")
    ends = rows.linked(work.reads, [stored])[0]
    return LinkResult(relation, newer, ends, True, work.now, work.last_receipt(), signal)


def _contradict(
    svc: MemoryService, work: Work, first: Memory, second: Memory, reason: str
) -> LinkResult:
    from retain.assertions import ConflictSignal
    from retain.graph_results import LinkResult

    for memory in (first, second):
        _active(memory, "contradicted")
    ends = {first.id, second.id}
    similar = [
        r
        for r in _open_of(svc, work.reads, first)
        if r.type == SIMILAR_TO and {r.source, r.target} == ends
    ]
    _decided(svc, work, similar, "contradict")
    relation, changed = _put(svc, work, first, second, CONTRADICTS, reason, reopen=True)
    entity, topic = _key_of(relation, first, second)
    why = reason or f"{rows.label(first)} contradicts {rows.label(second)}"
    signal = ConflictSignal(work.realm, entity, topic, SIGNAL_STORE, why, True, work.now)
    work.put_conflict(signal)
    work.event("conflict", signal.to_dict(), memory_id=first.id, reason=why)
    return LinkResult(relation, first, second, True, work.now, work.last_receipt(), signal)


def _keep(svc: MemoryService, work: Work, first: Memory, second: Memory, reason: str) -> LinkResult:
    from retain.graph_results import LinkResult

    for memory in (first, second):
        _active(memory, "kept")
    decided, signal = _settle(svc, work, first, second, "keep")
    if decided:
        relation, changed = decided[0], True
    elif (kept := _kept(svc, work.reads, first, second)) is not None:
        relation, changed = kept, False  # kept already (a pair of any type)
    else:  # no open pair: recorded kept, so that no dedup pass proposes it
        relation, changed = _put(svc, work, first, second, SIMILAR_TO, reason, decision="keep")
    receipt = _receipt(work, changed)
    return LinkResult(relation, first, second, changed, work.now, receipt, signal)


def _kept(svc: MemoryService, tx: Reads, first: Memory, second: Memory) -> Relation | None:
    """A relation between the two a curator decided to keep, if one stands."""
    ends = {first.id, second.id}
    between = tx.relations(svc.realm, [first.id])
    return next((r for r in between if {r.source, r.target} == ends and r.decision == "keep"), None)


def conflict_key(first: Memory, second: Memory) -> tuple[str, str]:
    """The (entity, topic) a contradiction's signal is kept under: the facts' shared
    subject and predicate (so that the gate on that fact reports it); else the first
    memory's name (or id) and ``contradicts``. The first is the pair's in stored order:
    the lower id, so the older memory, whichever a curator named first."""
    from retain.assertions import fold

    if first.subject and first.predicate and second.subject and second.predicate:
        same = (first.subject.casefold(), first.predicate) == (
            second.subject.casefold(),
            second.predicate,
        )
        if same:
            return fold(first.subject), first.predicate
    return fold(first.name or first.id), CONTRADICTS


def _settle(
    svc: MemoryService, work: Work, first: Memory, second: Memory, decision: str
) -> tuple[list[Relation], ConflictSignal | None]:
    """Record ``decision`` on the open pairs between the two, and clear the signal of a
    contradiction among them once no open contradiction of its key is left: the pairs
    decided, and the signal as it then stands (None: none was settled)."""
    ends = {first.id, second.id}
    between = [r for r in _open_of(svc, work.reads, first) if {r.source, r.target} == ends]
    return _decided(svc, work, between, decision)


def _open_of(svc: MemoryService, tx: Reads, memory: Memory) -> list[Relation]:
    return [r for r in tx.relations(svc.realm, [memory.id]) if r.open]


def _decided(
    svc: MemoryService, work: Work, relations: list[Relation], decision: str
) -> tuple[list[Relation], ConflictSignal | None]:
    """Record ``decision`` on each open pair of ``relations`` (each a ``relate`` event),
    then clear the signal of each contradiction's key that no open contradiction holds
    any more: the pairs decided, and the last signal cleared (None: none)."""
    decided = []
    for relation in relations:
        done = replace(relation, decision=decision, decided_by=svc.principal, decided_at=work.now)
        work.put_relation(done)
        work.event("relate", done.to_dict(), memory_id=done.source, reason=decision)
        decided.append(done)
    settled = [r for r in decided if r.type == CONTRADICTS]
    ids = sorted({r.source for r in settled} | {r.target for r in settled})
    ends = {m.id: m for m in work.reads.get_many(ids)}
    signal = None
    for relation in settled:
        if relation.source not in ends or relation.target not in ends:
            continue
        a, b = ends[relation.source], ends[relation.target]
        key = conflict_key(a, b)
        if _still_open(svc, work.reads, key, a, b):
            continue
        current = work.reads.conflicts(work.realm, *key, SIGNAL_STORE)
        if current and current[0].active:
            signal = replace(current[0], active=False, updated_at=work.now)
            work.put_conflict(signal)
            work.event("conflict_clear", signal.to_dict(), memory_id=a.id, reason=decision)
    return decided, signal


def _key_of(relation: Relation, first: Memory, second: Memory) -> tuple[str, str]:
    """The conflict key of a contradiction between the two, its ends in stored order."""
    ends = {first.id: first, second.id: second}
    return conflict_key(ends[relation.source], ends[relation.target])


def _still_open(svc: MemoryService, tx: Reads, key: tuple[str, str], a: Memory, b: Memory) -> bool:
    """Whether another open contradiction of either memory falls under ``key``."""
    others = [r for r in tx.relations(svc.realm, [a.id, b.id]) if r.type == CONTRADICTS]
    others = [r for r in others if r.open]
    ids = sorted({r.source for r in others} | {r.target for r in others})
    ends = {m.id: m for m in tx.get_many(ids)}
    return any(
        conflict_key(ends[r.source], ends[r.target]) == key
        for r in others
        if r.source in ends and r.target in ends
    )


def _put(
    svc: MemoryService,
    work: Work,
    first: Memory,
    second: Memory,
    kind: str,
    reason: str,
    *,
    score: float | None = None,
    decision: str | None = None,
    reopen: bool = False,
) -> tuple[Relation, bool]:
    """Store the edge ``first`` → ``second`` of ``kind`` (a symmetric one in its stored
    order), with its ``relate`` event; the edge, and whether anything changed. One that
    stands keeps its id and creation, takes a new reason and ``decision`` (when it had
    another), and with ``reopen`` is open again."""
    source, target = graph.ordered(first.id, second.id, kind)
    standing = _standing(svc, work.reads, source, target, kind)
    if standing is None:
        made = created(svc, work, first, second, kind, reason, score=score, decision=decision)
        return made, True
    decided: tuple[str | None, str | None, datetime | None] = (
        standing.decision, standing.decided_by, standing.decided_at
    )  # fmt: skip
    if decision is not None and decision != standing.decision:
        decided = (decision, svc.principal, work.now)
    elif reopen:
        decided = (None, None, None)
    changed = replace(
        standing,
        reason=reason or standing.reason,
        decision=decided[0],
        decided_by=decided[1],
        decided_at=decided[2],
    )
    if changed == standing:
        return standing, False
    work.put_relation(changed)
    work.event("relate", changed.to_dict(), memory_id=source, reason=reason)
    return changed, True


def created(
    svc: MemoryService,
    work: Work,
    first: Memory,
    second: Memory,
    kind: str,
    reason: str,
    *,
    score: float | None = None,
    decision: str | None = None,
) -> Relation:
    """Store a new edge ``first`` → ``second`` (none stands between them of ``kind``),
    with its ``relate`` event."""
    source, target = graph.ordered(first.id, second.id, kind)
    made = Relation(
        id=svc.store.ids.new(work.now), realm=work.realm, source=source, target=target,
        type=kind, score=score, reason=reason, principal=svc.principal, created_at=work.now,
        decision=decision, decided_by=svc.principal if decision else None,
        decided_at=work.now if decision else None,
    )  # fmt: skip
    work.put_relation(made)
    work.event("relate", made.to_dict(), memory_id=source, reason=reason)
    return made


def _standing(
    svc: MemoryService, tx: Reads, source: str, target: str, kind: str
) -> Relation | None:
    return next(
        (
            r
            for r in tx.relations(svc.realm, [source])
            if (r.source, r.target, r.type) == (source, target, kind)
        ),
        None,
    )


def _receipt(work: Work, changed: bool) -> Receipt | None:
    return work.last_receipt() if changed else None
