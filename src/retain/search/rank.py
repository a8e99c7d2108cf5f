"""Ranking: fuse what each sense of each query found, then weigh salience.

Relevance is reciprocal-rank fusion (k = 10) over every ranked list: each
sense of each query in a ``queries`` list contributes ``weight / (10 + rank)``,
so a memory several lists agree on rises, and synonyms cost nothing. The
guessing senses (``prefix``, and the whole-query ``text`` scan) and the
``semantic`` sense (cosine of vectors, gated by ``gate_of``) weigh half as much as
the exact ones (``stem``, ``scan``). A query that names the subject of
memories (a speaker, a person, a system: ``subject`` as written) lifts those
memories by ``SUBJECT_LIFT`` of the best fused score — the ``subject`` sense.
Relevance is normalised to the best hit (1.0). The constants were tuned on
the LoCoMo development conversations (``bench/recall.py``, ``bench/RESULTS.md``).

Salience is the bounded prior that turns "what matched" into "what you
probably meant":

* importance — the declared priority (0 best, 9 worst) blended with how often
  the memory was actually read (log-scaled, saturating at 50 reads): the
  counterweight to priorities drifting downward over a long-lived store;
* freshness — exponential decay on ``verified_at`` with a one-year half-life,
  switched off for priority 0–1, whose standing rules do not age.

The final score is ``0.85 × relevance + 0.15 × salience``; with relevance
normalised, salience can reorder close matches but never lift a weak match
over a clearly better one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from retain.chrono import age_days
from retain.search.lexical import (
    PHRASE,
    PREFIX,
    SCAN,
    SEMANTIC,
    STEM,
    SUBJECT,
    TEXT,
    THREAD,
    TIME,
    SenseHits,
)
from retain.storage.base import LexicalHit

RRF_K = 3
RELEVANCE_WEIGHT = 0.85
SALIENCE_WEIGHT = 0.15
FRESHNESS_HALF_LIFE_DAYS = 365.0
READS_SATURATE = 50
STANDING_PRIORITY = 1
T = TypeVar("T")


class Ranked(Protocol):
    """What ranking reads of a memory: a ``Memory``, or its ``Standing`` (no body)."""

    @property
    def scope(self) -> str: ...
    @property
    def thread(self) -> str | None: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def priority(self) -> int: ...
    @property
    def read_count(self) -> int: ...
    @property
    def verified_at(self) -> datetime: ...
    @property
    def description(self) -> str: ...
    @property
    def body_bytes(self) -> int: ...


SENSE_WEIGHTS = {
    STEM: 1.0, SCAN: 1.0, TIME: 1.0, PREFIX: 0.5, TEXT: 0.5, SEMANTIC: 0.5, PHRASE: 0.25,
}  # fmt: skip
DEPTH = 30  # hits each sense ranks; more only when more results are asked for
SEMANTIC_LEAST = 0.1  # the semantic sense's weight when the best word match holds every word
SEMANTIC_MOST = 2.0  # and when it holds none of them (or nothing matched)
GATE = 0.2  # least cosine for a semantic hit, whatever the query
GATE_MARGIN = 0.15  # and this far above the query's mean cosine (store and background)
BACKGROUND_SPREAD = 3.0  # and this many deviations above the unrelated sentences' mean
SUBJECT_LIFT = 0.5
THREAD_SHARE = 0.2  # of the mean relevance of a memory's thread neighbours (one or two)
THREAD_LIFT = 0.3  # of the best relevance in a memory's thread
TIME_LIFT = 1.0  # a memory holding or mentioning a time the query names: relevance × (1 + this)
TOKEN_BYTES = 4  # about how many bytes of text one token stands for
_NAME_WORD = re.compile(r"[^\W_][\w'’.-]*")
MAX_PRIORITY = 9


@dataclass(slots=True)
class Fused:
    score: float = 0.0
    senses: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    scanned: list[str] = field(default_factory=list)


def fuse(
    per_query: Sequence[tuple[str, Sequence[SenseHits]]],
    semantic: Mapping[str, float] | None = None,
) -> dict[str, Fused]:
    """Reciprocal-rank fusion of every sense list of every query; ``semantic``: the
    weight of each query's semantic sense, when not ``SENSE_WEIGHTS``' (``semantic_weight``)."""
    fused: dict[str, Fused] = {}
    for query, senses in per_query:
        for sense in senses:
            weight = SENSE_WEIGHTS[sense.sense]
            if sense.sense == SEMANTIC and semantic is not None and query in semantic:
                weight = semantic[query]
            for rank, hit in _tied_ranks(sense.hits):
                entry = fused.setdefault(hit.memory_id, Fused())
                entry.score += weight / (RRF_K + rank)
                if sense.sense not in entry.senses:
                    entry.senses.append(sense.sense)
                if query not in entry.queries:
                    entry.queries.append(query)
                for needle in hit.matched:
                    if needle not in entry.scanned:
                        entry.scanned.append(needle)
    return fused


def semantic_weight(coverage: float) -> float:
    """The weight of a query's semantic sense from how much of the query its best word
    matches hold (``lexical.coverage``), falling with the square of it: where the words
    find what the query says, the meaning only breaks ties; where they find little of it,
    the meaning leads."""
    return SEMANTIC_LEAST + (SEMANTIC_MOST - SEMANTIC_LEAST) * (1.0 - coverage) ** 2


def _tied_ranks(hits: Sequence[LexicalHit]) -> Iterator[tuple[int, LexicalHit]]:
    """Each hit with its rank, equal scores sharing the better rank (1, 2, 2, 4):
    equal evidence must not be split by the order a backend happened to return."""
    rank = 0
    previous: float | None = None
    for position, hit in enumerate(hits, start=1):
        if hit.score != previous:
            rank, previous = position, hit.score
        yield rank, hit


def salience(memory: Ranked, now: datetime) -> float:
    """The importance and freshness prior of one memory, in [0, 1]."""
    priority = min(max(memory.priority, 0), MAX_PRIORITY)
    declared = 1.0 - priority / MAX_PRIORITY
    reads = min(1.0, math.log1p(memory.read_count) / math.log1p(READS_SATURATE))
    importance = 0.6 * declared + 0.4 * reads
    if memory.priority <= STANDING_PRIORITY:
        freshness = 1.0
    else:
        age = age_days(memory.verified_at, now)
        freshness = 0.5 ** (age / FRESHNESS_HALF_LIFE_DAYS)
    return 0.5 * importance + 0.5 * freshness


def final_score(relevance: float, best: float, memory: Ranked, now: datetime) -> float:
    normalised = relevance / best if best > 0 else 0.0
    return RELEVANCE_WEIGHT * normalised + SALIENCE_WEIGHT * salience(memory, now)


def share_thread(
    fused: dict[str, Fused], adjacent: dict[str, tuple[str | None, str | None]]
) -> None:
    """Add to each memory ``THREAD_SHARE`` of the mean relevance of the memories just
    before and after it in its thread: the answer to a question is often the turn
    after the one that matched (the ``thread`` sense)."""
    base = {memory_id: entry.score for memory_id, entry in fused.items()}
    for memory_id, (before, after) in adjacent.items():
        entry = fused.get(memory_id)
        if entry is None:
            continue
        around = [base.get(other, 0.0) for other in (before, after) if other is not None]
        shared = sum(around) / len(around) if around else 0.0
        if shared > 0:
            entry.score += THREAD_SHARE * shared
            if THREAD not in entry.senses:
                entry.senses.append(THREAD)


# A reference population for the semantic gate: what unrelated text scores against
# a query. It joins the store's own memories when the gate's mean is taken, so a
# store of three memories has a baseline as well as a store of a million.
BACKGROUND = (
    "The meeting was moved to Thursday afternoon.",
    "She bought fresh bread and cheese at the market.",
    "The server restarted after the kernel update.",
    "We hiked to the lake and camped overnight.",
    "The invoice is due at the end of the month.",
    "He has been learning to play the guitar.",
    "The recipe needs two eggs and a cup of flour.",
    "Traffic on the bridge was slow this morning.",
    "The library closes early on public holidays.",
    "Our team shipped the new release yesterday.",
    "The cat sleeps on the windowsill all day.",
    "Interest rates rose for the third time this year.",
    "The museum opened an exhibition of old maps.",
    "Remember to water the plants on the balcony.",
    "The flight to Berlin was delayed by two hours.",
    "My sister started a new job at the hospital.",
    "The database backup runs every night at two.",
    "They painted the kitchen a pale shade of green.",
    "The football match ended in a draw.",
    "Use the staging environment before deploying.",
    "The children built a sandcastle on the beach.",
    "The committee approved the annual budget.",
    "Our neighbour plays the piano in the evenings.",
    "The password must be at least twelve characters.",
    "We watched a documentary about deep sea fish.",
    "The bakery on the corner sells great croissants.",
    "The report summarises last quarter's sales.",
    "It rained all weekend, so we stayed inside.",
    "The doctor recommended more sleep and exercise.",
    "The train station is a short walk from the hotel.",
    "Please send the slides before the presentation.",
    "The garden is full of tomatoes this summer.",
    "He fixed the bicycle's flat tyre himself.",
    "The concert tickets sold out in an hour.",
    "The API returns a list of users as JSON.",
    "Grandma told stories about her childhood farm.",
    "The new policy applies from the first of May.",
    "I prefer tea to coffee in the afternoon.",
    "The river flooded the fields after the storm.",
    "She is writing a novel set in the nineteenth century.",
)


def gate_of(store_total: float, store_size: int, background: Sequence[float]) -> float:
    """The least cosine a semantic hit needs for one query, from the sum and number of
    its cosines over the realm's memories (the query · the realm's vector sum: the mean
    of dot products is the dot product with the mean) and its cosines with the
    background sentences.

    Every embedder gives unrelated text some similarity (static models give
    common words a shared direction), so a hit must beat two baselines: the
    query's mean cosine over the realm's memories and a fixed set of unrelated
    sentences (``BACKGROUND``) plus ``GATE_MARGIN``; and what those unrelated
    sentences score, ``BACKGROUND_SPREAD`` standard deviations above their mean (one
    sentence that happens to share the query's topic moves that little). The
    background gives a small store a baseline too: a query about nothing stored finds
    nothing, rather than the least-bad rows. Other realms' memories do not count.
    """
    size = len(background)
    unrelated_total = math.fsum(background)
    total = store_total + unrelated_total
    count = store_size + size
    mean = total / count if count else 0.0
    unrelated = GATE
    if size:
        middle = unrelated_total / size
        spread = math.sqrt(math.fsum((x - middle) ** 2 for x in background) / size)
        unrelated = middle + BACKGROUND_SPREAD * spread
    return max(GATE, mean + GATE_MARGIN, unrelated)


def lift_threads(fused: dict[str, Fused], memories: Mapping[str, Ranked]) -> None:
    """Add to each memory ``THREAD_LIFT`` of the best relevance in its thread: the
    conversation that answers a question best is where the rest of the answer is.

    A memory outside any thread is a thread of its own (it gains ``THREAD_LIFT`` of its
    own relevance), so being in a thread lifts nothing by itself; only the company of a
    better match does, and then the ``thread`` sense says so.
    """
    best: dict[tuple[str, str], tuple[float, str]] = {}
    for memory_id, entry in fused.items():
        group = _thread_of(memory_id, memories)
        if group not in best or entry.score > best[group][0]:
            best[group] = (entry.score, memory_id)
    for memory_id, entry in fused.items():
        score, holder = best[_thread_of(memory_id, memories)]
        entry.score += THREAD_LIFT * score
        if holder != memory_id and THREAD not in entry.senses:
            entry.senses.append(THREAD)


def _thread_of(memory_id: str, memories: Mapping[str, Ranked]) -> tuple[str, str]:
    memory = memories.get(memory_id)
    if memory is None or not memory.thread:
        return ("", memory_id)
    return (memory.scope, memory.thread)


def favour_times(fused: dict[str, Fused], held: set[str]) -> None:
    """Multiply by ``1 + TIME_LIFT`` the relevance of each memory that holds or mentions
    a time the query names (``held``). A product, not a sum: the time alone finds
    nothing, it only prefers among the memories the query's words and meaning found."""
    for memory_id, entry in fused.items():
        if memory_id in held:
            entry.score *= 1 + TIME_LIFT
            if TIME not in entry.senses:
                entry.senses.append(TIME)


def subject_phrases(queries: Sequence[str]) -> list[str]:
    """Runs of one to three words of the queries: what a subject could be named by.

    A word is taken with and without a final period ("Dr. Who" and "Dr Who", but
    "Melanie" from "Melanie?"), and without a possessive ("Caroline's" → "Caroline").
    """
    phrases: list[str] = []
    for query in queries:
        raw = [w.rstrip("'’") for w in _NAME_WORD.findall(query)]
        raw = [w[:-2] if w.lower().endswith(("'s", "’s")) else w for w in raw]
        bare = [w.rstrip(".") for w in raw]
        for words in (bare, raw) if bare != raw else (bare,):
            for size in (1, 2, 3):
                for start in range(len(words) - size + 1):
                    phrases.append(" ".join(words[start : start + size]))
    return list(dict.fromkeys(p for p in phrases if p))


def favour_subject(
    fused: dict[str, Fused], memories: Mapping[str, Ranked], named: Sequence[str]
) -> None:
    """Lift the memories about the one subject the query names (none if it names several)."""
    subjects = {n.casefold() for n in named}
    if len(subjects) != 1 or not fused:
        return
    lift = SUBJECT_LIFT * max(f.score for f in fused.values())
    for memory_id, entry in fused.items():
        memory = memories.get(memory_id)
        if memory is not None and memory.subject and memory.subject.casefold() in subjects:
            entry.score += lift
            entry.senses.append(SUBJECT)


def tokens(memory: Ranked) -> int:
    """About how many tokens a result costs in a context: its description and body."""
    size = len(memory.description.encode()) + memory.body_bytes
    return -(-size // TOKEN_BYTES)


def pack(ranked: Sequence[T], limit: int, budget: int | None, cost: Callable[[T], int]) -> list[T]:
    """The results to return: the best ``limit``, or, with a token budget, every result
    when all fit, else the best that fit (skipping any too large), at most ``limit``
    (``cost``: a result's tokens)."""
    if budget is None:
        return list(ranked[:limit])
    costs = [cost(r) for r in ranked]
    if sum(costs) <= budget:
        return list(ranked)
    chosen: list[T] = []
    spent = 0
    for result, spend in zip(ranked, costs, strict=True):
        if spent + spend <= budget:
            chosen.append(result)
            spent += spend
            if len(chosen) == limit:
                break
    return chosen
