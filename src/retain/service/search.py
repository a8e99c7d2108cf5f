"""Search: one query or a list of synonyms over what the actor sees, ranked by the
hybrid of its word senses and its semantic sense, or a filtered listing without
queries. An agent's recall and a context's turn recall share the ranked search here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from retain import fields
from retain.chrono import in_zone, stamp
from retain.errors import InvalidValue, NoProject
from retain.read_results import SearchHit, SearchResult
from retain.search import key
from retain.search.embed import Embedder, stored_mismatch
from retain.service import lookup, trust
from retain.storage.base import MemoryFilter, Reads, ReadsBeside

if TYPE_CHECKING:
    from retain.search import lexical
    from retain.service import MemoryService
    from retain.storage.base import Pending, Vector


SEARCH_LIMIT_MAX = 200


def check_limit(limit: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidValue(
            f"limit {limit!r} is not a whole number",
            remedy=f"ask for 1 to {SEARCH_LIMIT_MAX} results",
            field="limit",
        )
    if not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise InvalidValue(
            f"limit {limit} is outside 1–{SEARCH_LIMIT_MAX}",
            remedy=f"ask for 1 to {SEARCH_LIMIT_MAX} results",
            field="limit",
        )


def check_budget(budget_tokens: object) -> None:
    if budget_tokens is not None and (
        isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1
    ):
        raise InvalidValue(
            f"token budget {budget_tokens!r} is not a whole number of tokens ≥ 1",
            remedy="give the tokens the results may fill, like 2000",
            field="budget_tokens",
        )


def query_list(queries: object) -> list[str]:
    """The queries of a search or a recall: one string, or a list of them (synonyms),
    each checked as text; refused when it is neither."""
    if isinstance(queries, str):
        return [fields.text(queries, "query")]
    if not isinstance(queries, list | tuple):
        raise InvalidValue(
            f"queries must be a list, not {type(queries).__name__}",
            remedy="pass queries as a list of strings",
            field="queries",
        )
    return [fields.text(q, "query") for q in queries]


def _listing_summary(
    count: int, tag: str | None, referencing: str | None, unverified: str | None, expired: bool
) -> str:
    what = "memory" if count == 1 else "memories"
    parts = []
    if tag:
        parts.append(f"tagged {tag!r}")
    if referencing:
        parts.append(f"referencing {referencing!r}")
    if unverified:
        parts.append(f"not verified in {unverified}")
    if expired:
        parts.append("past their expiry")
    qualifier = (" " + ", ".join(parts)) if parts else ""
    return f"{count} {what}{qualifier}, most important first"


def search(
    svc: MemoryService,
    queries: str | Sequence[str] = (),
    *,
    project: str | None = None,
    tier: str | None = None,
    limit: int = 10,
    tag: str | None = None,
    referencing: str | None = None,
    unverified: str | None = None,
    expired: bool = False,
    budget_tokens: int | None = None,
    min_trust: str | None = None,
) -> SearchResult:
    """Search by one query or a list of synonyms; without queries, a filtered listing.
    With ``min_trust``, only memories trusted at least that are found.

    Expired memories are found like any other, ranked with the freshness they have
    and marked (``SearchHit.expired``); ``expired`` keeps only them. With
    ``budget_tokens``, every relevant result is returned when all of them fit;
    otherwise the best that fit, at most ``limit``. A search takes at most
    ``lexical.MAX_QUERIES`` queries of ``lexical.MAX_QUERY_CHARS`` characters,
    ``lexical.MAX_WORDS`` words and ``lexical.MAX_SCANNED`` scanned terms
    (``query_too_long`` otherwise).
    """
    queries = query_list(queries)
    check_limit(limit)
    if tier not in (None, "global", "project"):
        raise InvalidValue(
            f"tier {tier!r} is not global or project",
            remedy="pass tier global or project, or leave it out",
            field="tier",
        )
    if tier == "project" and not project:
        raise NoProject(
            "a search of the project tier needs a project",
            remedy="pass a project, or search without a tier",
        )
    check_budget(budget_tokens)
    least = trust.minimum(min_trust)
    now = svc._now()

    def where_of(tx: Reads) -> MemoryFilter:
        return lookup.filter_of(
            svc, tx, now, project, tag, referencing, unverified, expired, listing=False,
            tier=tier, min_trust=least,
        )  # fmt: skip

    return ranked(
        svc,
        queries,
        now,
        where_of,
        limit=limit,
        budget_tokens=budget_tokens,
        listing_summary=lambda n: _listing_summary(n, tag, referencing, unverified, expired),
    )


def ranked(
    svc: MemoryService,
    queries: Sequence[str],
    now: datetime,
    where_of: Callable[[Reads], MemoryFilter],
    *,
    limit: int,
    budget_tokens: int | None,
    listing_summary: Callable[[int], str],
    live_only: bool = False,
) -> SearchResult:
    """The ranked search every door's search and an agent's recall share; with
    ``live_only`` (what a turn recalls into a context) expired memories are left out."""
    from retain.search import lexical, plain, rank, rerank

    plans = lexical.plan_queries(queries, today=in_zone(now, svc.store.clock.local_tz()).date())
    loaded = svc.embedder if plans else None
    embedder = loaded.embedder if loaded is not None else None
    # Without numpy where it is not loaded: no search of a SQLite store needs it
    # (``search.plain``).
    asked = key.queries(embedder, [p.text for p in plans]) if embedder is not None else None
    depth = max(limit, rank.DEPTH)

    def searched(tx: Reads) -> MemoryFilter:
        where = where_of(tx)
        return replace(where, live_at=stamp(now)) if live_only else where

    semantic_of: Callable[[Reads, MemoryFilter], list[lexical.SenseHits]] | None = None
    # the semantic sense read beside, with the event log's head where it was read
    beside: Pending[tuple[tuple[int, str], list[lexical.SenseHits]]] | None = None
    if embedder is not None and asked is not None:
        model, query = embedder, asked
        unrelated = _background(svc, model)
        background = [plain.cosines(q, unrelated, model.dim) for q in query]

        def semantic_of(tx: Reads, where: MemoryFilter) -> list[lexical.SenseHits]:
            tx.open_vectors(model.model_id, model.dim, svc.store.settings.ann_from)
            return _semantic(svc, tx, model, query, background, where, depth)

        if isinstance(svc.backend, ReadsBeside):  # the word senses meanwhile
            sense = semantic_of  # (a closure does not keep the narrowing from None)
            beside = svc.backend.read_beside(lambda tx: (tx.chain_head(), sense(tx, searched(tx))))

    def run(tx: Reads) -> SearchResult:
        if not plans:
            listed = tx.list_memories(where_of(tx), limit)
            hits = tuple(SearchHit(m, 0.0, ()) for m in listed)
            return SearchResult(hits, listing_summary(len(hits)), listing=True)
        where = searched(tx)
        named = tx.subjects_named(svc.realm, rank.subject_phrases(queries))
        words = [lexical.without_names(p, named) for p in plans]
        scans = lexical.Scans.of(words)
        rows = lexical.scan_pass(tx, where, words)
        lexical.count_ahead(tx, words)
        held = {p.text: lexical.times_held(tx, where, p) for p in words}
        per_query = [
            (
                p.text,
                lexical.search_query(
                    tx, where, p, depth=depth, wanted=limit, scans=scans, scanned=rows,
                    held=held[p.text],
                ),
            )
            for p in words
        ]  # fmt: skip
        weights = None
        if semantic_of is not None:
            found = None
            if beside is not None:
                # Read in a snapshot of its own: kept only when no change was logged
                # between the two (a memory quarantined, forgotten or moved meanwhile
                # is then as this read sees it), else read again here; so too when it
                # failed (its snapshot's, or its connection's: this read decides).
                try:
                    head, seen = beside.result()
                except Exception:  # noqa: BLE001 - read again here, where it is raised
                    pass
                else:
                    if head == tx.chain_head():
                        found = seen
            if found is None:
                found = semantic_of(tx, where)
            for (_, senses), semantic in zip(per_query, found, strict=True):
                if semantic.hits:
                    senses.append(semantic)
            weights = _semantic_weights(tx, words, per_query)
        fused = rank.fuse(per_query, weights)
        rank.favour_times(fused, {i for ids in held.values() for i in ids})
        # Every candidate is weighed by its standing; only the results are fetched whole.
        standing = {s.id: s for s in tx.standings(list(fused))}
        rank.favour_subject(fused, standing, named)
        rank.share_thread(fused, tx.thread_adjacent(list(fused)))
        rank.lift_threads(fused, standing)
        best = max((f.score for f in fused.values()), default=0.0)
        scored = [(rank.final_score(fused[s.id].score, best, s, now), s) for s in standing.values()]
        scored.sort(key=lambda c: (-c[0], c[1].priority, c[1].id))
        scored = rerank.rerank(svc.store.reranker, queries, scored, tx)
        chosen = rank.pack(scored, limit, budget_tokens, lambda c: rank.tokens(c[1]))
        memories = {m.id: m for m in tx.get_many([s.id for _, s in chosen])}
        top = []
        for score, s in chosen:
            entry = fused[s.id]
            memory = memories[s.id]
            top.append(
                SearchHit(
                    memory,
                    score,
                    tuple(entry.senses),
                    tuple(entry.scanned),
                    tuple(entry.queries),
                    expired=memory.is_expired(now),
                )
            )
        summary = f"{len(top)} of {len(scored)} matching memories, best first"
        if budget_tokens is not None:
            summary += f", within {budget_tokens} tokens"
        if gone := sum(hit.expired for hit in top):
            summary += f"; {gone} expired"
        return SearchResult(
            tuple(top),
            summary,
            listing=False,
            embedder=loaded.model_id if loaded is not None else "",
            degraded=loaded.degraded if loaded is not None else None,
        )

    return svc.backend.read(run)


def _semantic_weights(
    tx: Reads,
    plans: Sequence[lexical.QueryPlan],
    per_query: Sequence[tuple[str, Sequence[lexical.SenseHits]]],
) -> dict[str, float]:
    """Each query's semantic weight, from how much of it its best word matches hold."""
    from retain.search import lexical, rank

    best = {
        text: [h.memory_id for s in senses if s.sense != lexical.SEMANTIC for h in s.hits]
        for text, senses in per_query
    }
    best = {text: list(dict.fromkeys(ids))[: lexical.COVERAGE_OF] for text, ids in best.items()}
    texts = {
        m.id: f"{m.name or ''} {m.description} {m.body}"
        for m in tx.get_many(list({i for ids in best.values() for i in ids}))
    }
    return {
        p.text: rank.semantic_weight(
            lexical.coverage(p, [texts[i] for i in best[p.text] if i in texts])
        )
        for p in plans
    }


def _semantic(
    svc: MemoryService,
    tx: Reads,
    embedder: Embedder,
    asked: Sequence[Vector],
    background: list[list[float]],
    where: MemoryFilter,
    depth: int,
) -> list[lexical.SenseHits]:
    """The semantic sense: the database's nearest rows that pass the filters, held to
    the relevance gate (its mean from the realm's sum)."""
    from retain.search import lexical, plain, rank

    sums = tx.vector_sums(embedder.model_id, svc.realm)
    for dim, _, count in sums:
        if dim != embedder.dim:
            what = f"{count} memories have {dim}-dimensional vectors"
            raise stored_mismatch(what, embedder.model_id, embedder.dim, dim)
    total = next((vector for _, vector, _ in sums), None)
    size = sum(count for _, _, count in sums)
    nearest = tx.nearest(embedder.model_id, asked, where, depth) if size else []
    found = []
    for i, query in enumerate(asked):
        store_total = plain.dot(total, query) if total is not None else 0.0
        gate = rank.gate_of(store_total, size, background[i])
        near = nearest[i] if size else []
        found.append(lexical.SenseHits(lexical.SEMANTIC, tuple(h for h in near if h.score >= gate)))
    return found


def _background(svc: MemoryService, embedder: Embedder) -> bytes:
    """The gate's reference sentences, embedded once per embedder and store."""
    return svc.store.background(embedder)
