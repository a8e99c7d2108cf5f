"""Near-copies: the ``dedup`` pass that proposes ``similar_to`` pairs, and the note a
write gets when another memory already says nearly the same (``retain.graph``'s pair
finder for both).

**A dedup pass** embeds each active memory's description and body (``text_of``) with
the store's embedder, compares every pair of one scope (``graph.similar_pairs``, in
a read), then links the pairs at or above the threshold in one write: a pair a curator
decided, or two memories related otherwise, is not proposed again, and one still open
is listed again without a second edge. It never merges, retires or deletes.

**The note** is read after a write commits (it never blocks one): for each memory the
write created or redescribed, the memories whose descriptions hold its rarest words,
in the tiers it is read with, an earlier write of the same batch among them, compared
by their words and by the static model's vectors of their descriptions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from operator import mul
from typing import TYPE_CHECKING, Any

from retain import graph
from retain.errors import InvalidValue
from retain.graph import SIMILAR_TO, Relation
from retain.model import GLOBAL_SCOPE, Memory, Status, project_scope
from retain.service import lookup, rows
from retain.service.relation import created
from retain.service.work import Work
from retain.storage.base import Described, MemoryFilter, Progress, Reads
from retain.write_results import WriteResult

if TYPE_CHECKING:
    from retain.graph_results import DedupResult
    from retain.service import MemoryService


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
    score (``graph.pair_score`` of their vectors ``graph.centred`` on the pass's mean and
    the gate's unrelated sentences) reaches ``threshold`` (default ``graph.THRESHOLD``), and
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
        import numpy as np

        from retain.search.embed import normalised

        background = np.frombuffer(svc.store.background(embedder), dtype=np.float32)
        reference = normalised(background.reshape(-1, embedder.dim).copy())  # once a model
        vectors = graph.centred(_unit(svc, texts, few=False), reference)
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
                similar = created(svc, work, a, b, SIMILAR_TO, why, score=pair.score)
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
    ``graph.NOTE_THRESHOLD`` under the detail rule (raw cosines: a single write has no
    store's mean at hand, and descriptions are short). Read after the commit: a note never
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
    the bundled static model, by their vectors as a dedup pass compares them."""
    view = svc._reader(tx)
    order = {m.id: i for i, m in enumerate(mine)}
    candidates = _by_words(svc, tx, mine)
    held = {d.id: d for found in candidates for d in found if d.id not in order}
    last = {m.id: m for m in mine}  # a memory the batch wrote twice, as it left it
    compared: list[Memory | Described] = [*last.values(), *(held[k] for k in sorted(held))]
    vectors = _noting_vectors(svc, [m.description for m in compared])
    row = {m.id: i for i, m in enumerate(compared)}
    said = {m.id: graph.words(m.description) for m in compared}
    best: dict[str, Described] = {}
    for i, memory in enumerate(mine):
        top: tuple[float, str] = (-1.0, "")  # the best pair's (score, id) yet
        chosen: Described | None = None  # its other memory
        weighed = []  # pairs the detail rule may lower: (score at most, id, it, share, cosine)
        for other in candidates[i]:
            if other.id == memory.id or other.status is not Status.ACTIVE:
                continue
            if other.id in order and order[other.id] > i:
                continue  # a later one of the batch: it is noted against this one
            if other.name is not None and other.name == memory.name:
                continue
            if not view.sees_at(other.realm, other.scope, reviewer_only=other.reviewer_only):
                continue
            mine_words, theirs = said[memory.id], said[other.id]
            share = len(mine_words & theirs) / len(mine_words | theirs) if theirs else 0.0
            if vectors is not None:
                cosine = _dot(vectors, row[memory.id], row[other.id])
                # the detail rule only lowers a cosine: below the threshold, and no higher
                # than the words' share, the pair's score changes nothing
                if cosine >= graph.NOTE_THRESHOLD or (
                    share >= SIMILAR_DESCRIPTION and cosine > share
                ):
                    weighed.append((max(share, cosine), other.id, other, share, cosine))
                    continue
            if share >= SIMILAR_DESCRIPTION and (share, other.id) > top:
                top, chosen = (share, other.id), other
        # The detail rule (the costly part) is asked of the likeliest pairs first, and of
        # none that could not beat the best already scored even were it not lowered.
        for most, other_id, other, share, cosine in sorted(weighed, reverse=True):
            if (most, other_id) < top:
                break
            names = graph.names_in([memory.description, other.description])
            score = graph.pair_score(cosine, memory.description, other.description, names)
            kept = share >= SIMILAR_DESCRIPTION or score >= graph.NOTE_THRESHOLD
            if kept and (max(share, score), other_id) > top:
                top, chosen = (max(share, score), other_id), other
        if chosen is not None:
            best[memory.id] = chosen
    # Only the memories named are read whole: as stored, so a batch's own is named where
    # its last write of the batch left it.
    whole = {m.id: m for m in tx.get_many(sorted({d.id for d in best.values()}))}
    return {memory_id: whole[d.id] for memory_id, d in best.items()}


def _by_words(svc: MemoryService, tx: Reads, mine: list[Memory]) -> list[list[Described]]:
    """For each of ``mine``, the memories of its tiers whose descriptions share its two
    rarest words (a near-copy by words), then one of its longest (a rewording keeps a
    name or a term, and vectors judge it): at most ``NEAR``. One lookup a tier for the
    whole batch (on PostgreSQL a statement, where one a word list cost the server more
    than the batch's write)."""
    tiers: dict[MemoryFilter, list[int]] = {}
    for i, memory in enumerate(mine):
        tiers.setdefault(_tiers_of(svc, memory), []).append(i)
    found: list[list[Described]] = [[] for _ in mine]
    for where, places in tiers.items():
        asked, owner = [], []
        for i in places:
            words = sorted(graph.words(mine[i].description))
            longest = sorted(words, key=lambda w: (-len(w), w))[:LONGEST]
            for some in [words, *([w] for w in longest)]:
                if some:
                    asked.append(some)
                    owner.append(i)
        # The memory itself was written before this read: a word only it holds finds no
        # other, and among the newest it takes a place of its own.
        lists = tx.lookup_descriptions(where, asked, limit=NEAR + 1, fewest=2)
        for i, listed in zip(owner, lists, strict=True):
            found[i] += listed
    return [
        list({d.id: d for d in rows_of if d.id != m.id}.values())[:NEAR]  # first found first
        for m, rows_of in zip(mine, found, strict=True)
    ]


def _tiers_of(svc: MemoryService, memory: Memory) -> MemoryFilter:
    """The tiers a near-copy of ``memory`` is looked for in: its own and the global one."""
    scopes = None if memory.scope == GLOBAL_SCOPE else (GLOBAL_SCOPE, memory.scope)
    return MemoryFilter(realm=svc.realm, scopes=scopes, tiers_only=True)


def _unit(svc: MemoryService, texts: Sequence[str], *, few: bool = True) -> Any:
    """``texts`` embedded, one unit row each (None: the store has no embedder). With
    ``few``, a few are embedded without numpy, as a write's own vector is, so that a
    single ``retain add`` loads no numpy; else one numpy matrix."""
    embedder = svc.store.embedder.embedder
    if embedder is None:
        return None
    from retain.search import key
    from retain.search.static_model import StaticEmbedder

    if few and isinstance(embedder, StaticEmbedder) and key.few(texts):
        return embedder.embed_few(texts)
    from retain.search.embed import normalised

    return normalised(key.embed(embedder, texts))


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
