"""The relation graph's verbs: a memory's graph, an explicit link, a curator's decision
on a pair, and the ``dedup`` pass that proposes similar pairs (``retain.graph``).

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

from collections.abc import Callable, Sequence
from dataclasses import replace
from operator import mul
from typing import TYPE_CHECKING, Any

from retain import assertions, fields, graph
from retain.assertions import ConflictSignal
from retain.errors import InvalidInput, InvalidValue, NotActive, NotFound
from retain.graph import CONTRADICTS, DERIVED_FROM, REFERENCES, SIMILAR_TO, SUPERSEDES, Relation
from retain.model import GLOBAL_SCOPE, Memory, Status, project_scope
from retain.receipt import Receipt
from retain.results import WriteResult
from retain.service import access, lookup, rows
from retain.service.view import View
from retain.service.work import Work
from retain.storage.base import MemoryFilter, Progress, Reads

if TYPE_CHECKING:
    from retain.graph_results import Candidate, DedupResult, Edge, GraphResult, LinkResult
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

    decided, signal = _settle(svc, work, first, second, "keep")
    if decided:
        relation, changed = decided[0], True
    else:  # no open pair: recorded kept, so that no dedup pass proposes it
        relation, changed = _put(svc, work, first, second, SIMILAR_TO, reason, decision="keep")
    receipt = _receipt(work, changed)
    return LinkResult(relation, first, second, changed, work.now, receipt, signal)


def conflict_key(first: Memory, second: Memory) -> tuple[str, str]:
    """The (entity, topic) a contradiction's signal is kept under: the facts' shared
    subject and predicate (so that the gate on that fact reports it); else the first
    memory's name (or id) and ``contradicts``."""
    if first.subject and first.predicate and second.subject and second.predicate:
        same = (first.subject.casefold(), first.predicate) == (
            second.subject.casefold(),
            second.predicate,
        )
        if same:
            return assertions.fold(first.subject), first.predicate
    return assertions.fold(first.name or first.id), CONTRADICTS


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
    stands keeps its id and creation, takes a new reason, and with ``reopen`` is open
    again."""
    source, target = graph.ordered(first.id, second.id, kind)
    standing = _standing(svc, work.reads, source, target, kind)
    if standing is None:
        made = _created(svc, work, first, second, kind, reason, score=score, decision=decision)
        return made, True
    changed = replace(
        standing,
        reason=reason or standing.reason,
        decision=None if reopen else standing.decision,
        decided_by=None if reopen else standing.decided_by,
        decided_at=None if reopen else standing.decided_at,
    )
    if changed == standing:
        return standing, False
    work.put_relation(changed)
    work.event("relate", changed.to_dict(), memory_id=source, reason=reason)
    return changed, True


def _created(
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


# -- the dedup pass -----------------------------------------------------------------------


def text_of(memory: Memory) -> str:
    """What a dedup pass compares of a memory: its description and body."""
    return memory.description if not memory.body else f"{memory.description}\n{memory.body}"


def dedup(
    svc: MemoryService,
    *,
    threshold: float | None = None,
    project: str | None = None,
    scope: str | None = None,
    progress: Progress | None = None,
) -> DedupResult:
    """Link as ``similar_to`` the pairs of active memories, each pair of one scope, whose
    score (``graph.pair_score``) reaches ``threshold`` (default ``graph.THRESHOLD``), and
    list every such pair still open for a curator, best first. ``project``: that
    project's tier alone (``""``: the global tier), or ``scope``: that one scope (global,
    project:, team: or agent: a name); neither: every scope the caller sees. A pair a
    curator decided, or already related otherwise, is not proposed again."""
    from retain.graph_results import Candidate, DedupResult

    bar = _threshold(threshold)
    if scope is not None:
        lookup.check_scope(scope)
        if project is not None:
            raise InvalidValue(
                "a dedup pass takes a project or a scope, not both",
                remedy="name the one scope to compare, or the project's tier",
                field="scope",
            )
    embedder = svc.store.embedder.embedder
    if embedder is None:
        raise InvalidValue(
            "dedup compares memories by their vectors, and this store has no embedder",
            remedy="set an embedder under [search] in config.toml",
            field="embedder",
        )

    def scan(tx: Reads) -> tuple[list[Memory], list[graph.Pair]]:
        where = _scopes(svc, tx, project, scope)
        memories = tx.list_memories(where, None)
        memories.sort(key=lambda m: m.id)
        texts = [text_of(m) for m in memories]
        if progress is not None:
            progress("embed", 0, len(texts))
        if not texts:
            return memories, []
        vectors = _unit(svc, texts, few=False)
        report: Callable[[int, int], None] | None = None
        if progress is not None:
            progress("embed", len(texts), len(texts))
            report = lambda done, total: progress("compare", done, total)  # noqa: E731
        pairs = graph.similar_pairs(
            vectors, texts, bar, groups=[m.scope for m in memories], progress=report
        )
        return memories, pairs

    memories, pairs = svc.backend.read(scan)
    names = graph.names_in([text_of(m) for m in memories])

    def write(work: Work) -> DedupResult:
        paired = sorted({memories[i].id for p in pairs for i in (p.first, p.second)})
        current = {m.id: m for m in work.reads.get_many(paired)}
        between: dict[frozenset[str], list[Relation]] = {}
        for relation in work.reads.relations(svc.realm, paired):  # one read for them all
            between.setdefault(frozenset((relation.source, relation.target)), []).append(relation)
        listed: list[Candidate] = []
        linked = 0
        for pair in pairs:
            a = current.get(memories[pair.first].id)
            b = current.get(memories[pair.second].id)
            if a is None or b is None or {a.status, b.status} != {Status.ACTIVE}:
                continue  # changed since it was compared
            known = between.get(frozenset((a.id, b.id)), [])
            similar = next((r for r in known if r.type == SIMILAR_TO), None)
            if similar is None and known:
                continue  # already related otherwise: linked, contradicted, superseded
            if similar is not None and not similar.open:
                continue  # a curator decided it
            new = similar is None
            if similar is None:
                why = f"cosine {pair.cosine:.3f}"
                similar = _created(svc, work, a, b, SIMILAR_TO, why, score=pair.score)
                linked += 1
            only_a, only_b = graph.differing(text_of(a), text_of(b), names)
            differs = (tuple(sorted(only_a)), tuple(sorted(only_b)))
            listed.append(Candidate(a, b, pair.cosine, pair.score, similar, new, differs))
        receipt = work.last_receipt() if linked else None
        return DedupResult(tuple(listed), len(memories), bar, linked, work.now, receipt)

    return svc._write(write)


def _threshold(value: float | None) -> float:
    if value is None:
        return graph.THRESHOLD
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise InvalidValue(
            f"threshold {value!r} is not a number above 0 and at most 1",
            remedy=f"pass a cosine such as {graph.THRESHOLD}",
            field="threshold",
        )
    return float(value)


def _scopes(svc: MemoryService, tx: Reads, project: str | None, scope: str | None) -> MemoryFilter:
    """The memories a pass compares: active, in ``scope``, or in ``project``'s tier
    (``""``: the global tier; neither: every scope), of the scopes the caller's view
    reads."""
    scopes: tuple[str, ...] | None
    if scope is not None:
        scopes = (scope,)
    elif project is None:
        scopes = None
    elif project == "":
        scopes = (GLOBAL_SCOPE,)
    else:
        svc._require_project(tx, project)
        scopes = (project_scope(project),)
    own = project is None and scope is None
    narrowed, tiers_only = svc._reader(tx).narrow(scopes, with_own=own, reads=tx)
    return MemoryFilter(realm=svc.realm, scopes=narrowed, tiers_only=tiers_only)


# -- the near-copy note of a write ------------------------------------------------------

NOTED_BATCH = 100  # a larger batch (a bulk load) gets no near-copy notes: dedup it after
SIMILAR_DESCRIPTION = 0.6  # the share of description words a near-copy shares, at least
NEAR = 8  # the most memories a note weighs for each write (by their descriptions' words)
LONGEST = 2  # the description's longest words, each looked up alone


def noted(svc: MemoryService, results: Sequence[WriteResult]) -> list[WriteResult]:
    """``results`` of a committed batch of tier writes, each memory it created or
    redescribed given a note naming a memory that says nearly the same thing (an earlier
    one of the batch, or one the writer sees in its tiers), when there is one: two
    descriptions sharing ``SIMILAR_DESCRIPTION`` of their words, or whose vectors score
    ``graph.THRESHOLD`` under the detail rule. Read after the commit: a note never
    blocks a write, and the vectors compared are of the descriptions alone."""
    asked = [
        i for i, r in enumerate(results)
        if r.changed and (r.previous is None or r.previous.description != r.memory.description)
    ]  # fmt: skip
    if not asked or len(results) > NOTED_BATCH:
        return list(results)
    place = {r.memory.id: i for i, r in enumerate(results)}
    found = svc.backend.read(lambda tx: _near_copies(svc, tx, [results[i].memory for i in asked]))
    out = list(results)
    for i in asked:
        memory = results[i].memory
        other = found.get(memory.id)
        if other is not None:
            note = _note(memory, other, batch=other.id in place)
            out[i] = replace(out[i], notes=(*out[i].notes, note))
    return out


def _note(memory: Memory, other: Memory, *, batch: bool) -> str:
    """The note naming ``other``, which says nearly what ``memory`` says: the same fact
    (keep one), or the same with other details (one replaces the other, or they
    disagree: a curator's decision)."""
    names = graph.names_in([memory.description, other.description])
    mine, theirs = graph.differing(memory.description, other.description, names)
    label, where = rows.label(other), ", written in the same batch," if batch else ""
    if mine and theirs:
        return (
            f"Note: '{label}'{where} says nearly the same with other details "
            f"({', '.join(sorted(theirs))} against {', '.join(sorted(mine))}). If this "
            f"replaces it, decide that '{rows.label(memory)}' supersedes it; if they "
            "disagree, decide that they contradict each other."
        )
    if batch:
        return (
            f"Note: '{label}', written in the same batch, already says something very "
            "similar. If they are the same fact, keep one of them."
        )
    return (
        f"Note: '{label}' already says something very similar. If this is the same fact, "
        f"write to '{label}' instead and remove '{rows.label(memory)}'. Two near-copies "
        "both stay in the index and neither supersedes the other."
    )


def _near_copies(svc: MemoryService, tx: Reads, mine: list[Memory]) -> dict[str, Memory]:
    """For each of ``mine`` (in batch order), the memory most nearly saying the same, if
    one does: of those whose descriptions hold its rarest words, in the tiers its own is
    read with (an earlier one of ``mine`` among them), compared by their words and, with
    an embedder, by their vectors as a dedup pass compares them."""
    view = svc._reader(tx)
    order = {m.id: i for i, m in enumerate(mine)}
    candidates: list[list[str]] = []
    for memory in mine:
        words = sorted(graph.words(memory.description))
        where = _tiers_of(svc, memory)
        # those sharing its two rarest words (a near-copy by words), then those sharing
        # one of its longest (a rewording keeps a name or a term, and vectors judge it)
        asked = [words] + [[w] for w in sorted(words, key=lambda w: (-len(w), w))[:LONGEST]]
        found = [
            i
            for a in asked
            if a
            for i in tx.lookup_words(where, a, field="description", limit=NEAR)
        ]
        candidates.append(list(dict.fromkeys(found))[:NEAR])
    held = {m.id: m for m in tx.get_many(sorted({i for ids in candidates for i in ids}))}
    compared = list({m.id: m for m in [*mine, *held.values()]}.values())
    vectors = _noting_vectors(svc, [m.description for m in compared])
    row = {m.id: i for i, m in enumerate(compared)}
    best: dict[str, Memory] = {}
    for i, memory in enumerate(mine):
        scored = []
        for other in (held[c] for c in candidates[i] if c in held):
            if other.id == memory.id or other.status is not Status.ACTIVE:
                continue
            if other.id in order and order[other.id] > i:
                continue  # a later one of the batch: it is noted against this one
            if (other.name is not None and other.name == memory.name) or not view.sees(other):
                continue
            mine_words, theirs = graph.words(memory.description), graph.words(other.description)
            share = len(mine_words & theirs) / len(mine_words | theirs) if theirs else 0.0
            score = 0.0
            if vectors is not None:
                cosine = _dot(vectors, row[memory.id], row[other.id])
                names = graph.names_in([memory.description, other.description])
                score = graph.pair_score(cosine, memory.description, other.description, names)
            if share >= SIMILAR_DESCRIPTION or score >= graph.THRESHOLD:
                scored.append((max(share, score), other.id, other))
        if scored:
            best[memory.id] = max(scored, key=lambda s: (s[0], s[1]))[2]
    return best


def _tiers_of(svc: MemoryService, memory: Memory) -> MemoryFilter:
    """The tiers a near-copy of ``memory`` is looked for in: its own and the global one."""
    scopes = None if memory.scope == GLOBAL_SCOPE else (GLOBAL_SCOPE, memory.scope)
    return MemoryFilter(realm=svc.realm, scopes=scopes, tiers_only=True)


def _unit(svc: MemoryService, texts: Sequence[str], *, few: bool = True) -> Any:
    """``texts`` embedded, one unit row each (None: the store has no embedder). With
    ``few``, a few are embedded in plain Python, as a write's own vector is, so that a
    single ``retain add`` loads no numpy; else one numpy matrix."""
    embedder = svc.store.embedder.embedder
    if embedder is None:
        return None
    from retain.search import key
    from retain.search.static_model import StaticEmbedder

    if few and isinstance(embedder, StaticEmbedder) and key.few(texts):
        return embedder.embed_few(texts)
    import numpy as np

    vectors = key.embed(embedder, texts)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)


def _noting_vectors(svc: MemoryService, texts: Sequence[str]) -> Any:
    """``_unit``'s vectors for a note, from the bundled static model only (None with any
    other embedder): a note costs a write no call to a model it would wait on."""
    from retain.search.static_model import StaticEmbedder

    if not isinstance(svc.store.embedder.embedder, StaticEmbedder):
        return None
    return _unit(svc, texts)


def _dot(vectors: Any, i: int, j: int) -> float:
    """The cosine of two unit rows of ``_unit``'s answer."""
    if isinstance(vectors, list):
        return float(sum(map(mul, vectors[i], vectors[j])))
    return float(vectors[i] @ vectors[j])
