"""Ranking: fuse what each sense of each query found, then weigh salience.

Relevance is reciprocal-rank fusion (k = 60) over every ranked list: each
sense of each query in a ``queries`` list contributes ``weight / (60 + rank)``,
so a memory several lists agree on rises, and synonyms cost nothing. The
guessing senses (``prefix``, and the whole-query ``text`` scan) weigh half as
much as the exact ones (``stem``, ``scan``). Relevance is normalised to the
best hit (1.0).

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from retain.chrono import age_days
from retain.model import Memory
from retain.search.lexical import PREFIX, SCAN, STEM, TEXT, SenseHits

RRF_K = 60
RELEVANCE_WEIGHT = 0.85
SALIENCE_WEIGHT = 0.15
FRESHNESS_HALF_LIFE_DAYS = 365.0
READS_SATURATE = 50
STANDING_PRIORITY = 1
SENSE_WEIGHTS = {STEM: 1.0, SCAN: 1.0, PREFIX: 0.5, TEXT: 0.5}
MAX_PRIORITY = 9


@dataclass(slots=True)
class Fused:
    score: float = 0.0
    senses: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    scanned: list[str] = field(default_factory=list)


def fuse(per_query: Sequence[tuple[str, Sequence[SenseHits]]]) -> dict[str, Fused]:
    """Reciprocal-rank fusion of every sense list of every query."""
    fused: dict[str, Fused] = {}
    for query, senses in per_query:
        for sense in senses:
            weight = SENSE_WEIGHTS[sense.sense]
            for rank, hit in enumerate(sense.hits, start=1):
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


def salience(memory: Memory, now: datetime) -> float:
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


def final_score(relevance: float, best: float, memory: Memory, now: datetime) -> float:
    normalised = relevance / best if best > 0 else 0.0
    return RELEVANCE_WEIGHT * normalised + SALIENCE_WEIGHT * salience(memory, now)
