"""The relation graph's pure rules and values: the five edge types, a relation as the
store keeps it, and the pair finder that proposes ``similar_to`` edges.

A relation is a typed edge from one memory to another. ``similar_to`` is the only type
the machine infers (``retain dedup``, from the cosine of two memories' vectors); the
others are a principal's explicit act: ``supersedes`` (newer to older: the older stays
readable, pointing at what replaced it), ``contradicts`` (two claims a curator must
settle: it raises a conflict signal), ``derived_from``. ``references`` edges are not
stored: they are read from the memories' own references, so they cannot disagree with
them.

**The pair finder.** No cosine threshold alone separates a reworded copy from a note on
the same topic that states a different fact: a static embedding averages its words, so
"Alice is in UTC+8" and "Alice is in UTC+9", or the same sentence about two teams, sit
closer than most rewordings. So a pair's score is its cosine, lowered by
``DETAIL_PENALTY`` when each side names a detail the other lacks: a number or a word
holding one, a count or frequency in words, a lower-case identifier, a weekday or
month, a name (a word the batch writes with a capital inside a sentence, wherever it
stands). A detail added on one side only (a copy with more to say) is no conflict,
but the words that stand where one side names a detail, at the subject's place or
swapped one for one inside a shared sentence, are taken as the other's (``_stand_ins``).
The threshold and the penalty are chosen on ``bench/dedup.py`` (``bench/RESULTS.md``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain.chrono import stamp

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


SIMILAR_TO = "similar_to"
SUPERSEDES = "supersedes"
CONTRADICTS = "contradicts"
REFERENCES = "references"
DERIVED_FROM = "derived_from"
TYPES = (SIMILAR_TO, SUPERSEDES, CONTRADICTS, REFERENCES, DERIVED_FROM)
LINKED = (SIMILAR_TO, SUPERSEDES, CONTRADICTS, DERIVED_FROM)  # what ``link`` may create
SYMMETRIC = frozenset({SIMILAR_TO, CONTRADICTS})  # kept once a pair, the lower id first
DECISIONS = ("supersede", "contradict", "keep")  # what a curator makes of a pair

THRESHOLD = 0.6  # the default score a pair needs to be linked, centred (bench/dedup.py)
NOTE_THRESHOLD = 0.72  # the score a write's note needs: of raw cosines, not centred
DETAIL_PENALTY = 0.5  # taken off a pair whose sides conflict (``pair_score``): a veto
NEIGHBOURS = 8  # the most similar_to pairs one memory takes part in, per pass
WEIGHED = 4  # of a row's pairs above the threshold, the nearest WEIGHED × NEIGHBOURS scored
BLOCK = 1024  # rows of the pairwise cosine computed at a time
REASON_MAX_CHARS = 1000

_NUMBER = r"[+\-−]?\d+(?:[.,:/\-]\d+)*(?:st|nd|rd|th|%|[a-z]{1,3}\b)?"
_CALENDAR = (
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|"
    r"april|may|june|july|august|september|october|november|december|"
    r"mon|tue|tues|wed|thu|thurs|fri|sat|sun|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|"
    r"nov|dec|yesterday|today|tomorrow|tonight|morning|afternoon|evening|noon|midnight"
)
# a word, an identifier kept whole ("eu-west-1", "report-builder", "pyproject.toml")
_TOKEN = r"[^\W_]+(?:[-_./:+][^\W_]+)*"
# a capital inside a sentence (after a word, or a word and a comma or semicolon), two
# letters or more
_NAME = r"(?:(?<=[^\W\d_] )|(?<=[^\W\d_][,;] ))[A-Z][\w\-]+"
# a value spelled in words: a count, an ordinal, a frequency ("twice", "daily", "every")
_SPELLED = (
    r"once|twice|daily|weekly|monthly|yearly|hourly|nightly|quarterly|annually|fortnightly|"
    r"biweekly|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozen|hundred|"
    r"thousand|first|second|third|fourth|fifth|half|quarter|every"
)
_DETAIL = (
    rf"(?i:{_NUMBER})|\b(?i:{_CALENDAR})s?\b|\b(?i:{_SPELLED})\b|{_NAME}|"
    rf"\b[^\W\d_]+(?:[-_./:][^\W_]+)*\d[\w\-.]*|\b[a-z]+(?:[-_./][a-z0-9]+)+\b"
)
_POSSESSIVE = r"['’]s$"
_POSSESSIVE_WORD = r"(?<=\w)['’]s\b"
# words a batch may capitalise ("US states") that are no name where they stand lower case
# fmt: off
_FUNCTION_WORDS = frozenset((
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it",
    "its", "me", "my", "no", "not", "now", "of", "on", "or", "our", "out", "she", "so",
    "some", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "too", "up", "us", "was", "we", "were", "what", "when", "where", "which",
    "who", "why", "will", "with", "would", "you", "your",
))
# fmt: on


@dataclass(frozen=True, slots=True)
class Relation:
    """One stored edge: ``source`` → ``target`` of ``type``, who made it and why, and a
    curator's decision on it (None: open, for a ``similar_to`` or ``contradicts`` pair)."""

    id: str
    realm: str
    source: str
    target: str
    type: str
    score: float | None
    reason: str
    principal: str
    created_at: datetime
    decision: str | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None

    @property
    def open(self) -> bool:
        """Whether it waits for a curator: a pair no decision has settled."""
        return self.type in SYMMETRIC and self.decision is None

    def other(self, memory_id: str) -> str:
        return self.target if self.source == memory_id else self.source

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "target": self.target,
            "type": self.type,
            "score": None if self.score is None else round(self.score, 4),
            "reason": self.reason,
            "principal": self.principal,
            "created_at": stamp(self.created_at),
            "decision": self.decision,
            "decided_by": self.decided_by,
            "decided_at": None if self.decided_at is None else stamp(self.decided_at),
            "open": self.open,
        }


def ordered(source: str, target: str, type_: str) -> tuple[str, str]:
    """The ends as stored: a symmetric pair once, the lower id first."""
    if type_ in SYMMETRIC and target < source:
        return target, source
    return source, target


def details(text: str, names: frozenset[str] = frozenset()) -> frozenset[str]:
    """The details a text names that a copy would keep and a different fact would change:
    numbers (with their unit or suffix) and words holding one ("eu-west-1"), counts and
    frequencies in words ("twice", "daily"), lower-case identifiers ("report-builder"),
    weekdays and months (a plural as the singular),
    names written with a capital inside a sentence, and the words of ``names`` wherever
    they stand (a name that opens a sentence); folded to lower case, possessives
    dropped."""
    found = set()
    for match in _compiled(_DETAIL).finditer(text):
        found.add(_folded(match.group(0)))
    if names:
        found.update(w for w in map(_folded, _compiled(_TOKEN).findall(text)) if w in names)
    return frozenset(found)


@functools.lru_cache(maxsize=1 << 16)
def _details_of(text: str, names: frozenset[str]) -> frozenset[str]:
    """``details``, remembered: a pass asks it of each text once for every pair it is in."""
    return details(text, names)


def names_in(texts: Sequence[str]) -> frozenset[str]:
    """The words that ``texts`` write with a capital inside a sentence, folded: the names
    a batch uses, a detail wherever one of its texts names them."""
    found = {_folded(m.group(0)) for text in texts for m in _compiled(_NAME).finditer(text)}
    return frozenset(
        w
        for w in found
        if len(w) > 1 and w not in _FUNCTION_WORDS and not re.fullmatch(_CALENDAR, w)
    )


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """A pattern compiled at its first use (the graph is imported by every command)."""
    return re.compile(pattern)


def _folded(detail: str) -> str:
    """A detail folded: lower case without accents ("Tomás" is "tomas"), a possessive
    dropped, a plural weekday or month made singular."""
    detail = unicodedata.normalize("NFKD", detail.casefold().replace("−", "-"))
    detail = _compiled(_POSSESSIVE).sub(
        "", "".join(c for c in detail if not unicodedata.combining(c))
    )
    if detail.endswith("s") and re.fullmatch(_CALENDAR, detail[:-1]):
        detail = detail[:-1]
    return detail


def differing(
    a: str, b: str, names: frozenset[str] = frozenset()
) -> tuple[frozenset[str], frozenset[str]]:
    """The details only ``a`` names and those only ``b`` names, when each has one the
    other lacks (a conflict); else two empty sets (the same details, or one side adds)."""
    mine, theirs = _details_of(a, names), _details_of(b, names)
    only_a, only_b = mine - theirs, theirs - mine
    if only_a and not only_b:
        only_b = _stand_ins(a, b, only_a)
    elif only_b and not only_a:
        only_a = _stand_ins(b, a, only_b)
    if only_a and only_b:
        return only_a, only_b
    return frozenset(), frozenset()


def _stand_ins(a: str, b: str, only_a: frozenset[str]) -> frozenset[str]:
    """The words of ``b`` that stand where ``a`` names a detail ``b`` lacks: where the
    two texts word a span differently and go on alike after it, and ``a``'s span holds
    such a detail, the words of ``b``'s span that are no function word and not in
    ``a``; at the opening (the subject's place) a span of any length, elsewhere one
    word for one, unless the word before it is a name with a capital (the surname of
    "Priya Nair" against "Priya"). "Lena's hours are UTC-8" against "Yuki's hours are UTC-8" is one
    sentence about two people even where only "Yuki" is known as a name (a name that
    opens a sentence shows no capital of its own), as "the team uses npm for builds"
    against "the team uses Poetry for builds" gives two values of one attribute. Other
    details one side adds, or says otherwise, are no conflict: a copy may say more."""
    from difflib import SequenceMatcher

    written = _written(a)
    ours, theirs = [_folded(w) for w in written], _words_of(b)
    spans = SequenceMatcher(None, ours, theirs, autojunk=False).get_opcodes()
    known = set(ours)
    found: set[str] = set()
    for k, (tag, i1, i2, j1, j2) in enumerate(spans[:-1]):  # the last has nothing after
        if tag != "replace" or not only_a.intersection(ours[i1:i2]):
            continue
        before = written[i1 - 1]
        named = before[0].isupper() and ours[i1 - 1] not in _FUNCTION_WORDS  # a surname
        swapped = i2 - i1 == 1 and j2 - j1 == 1 and not named
        if k == 0 or swapped:
            found.update(w for w in theirs[j1:j2] if w not in known and w not in _FUNCTION_WORDS)
    return frozenset(found)


def _written(text: str) -> list[str]:
    """A text's words in order, as written (a possessive dropped)."""
    return _compiled(_TOKEN).findall(_compiled(_POSSESSIVE_WORD).sub("", text))


def _words_of(text: str) -> list[str]:
    """A text's words in order, folded as details are."""
    return [_folded(w) for w in _written(text)]


def pair_score(cosine: float, a: str, b: str, names: frozenset[str] = frozenset()) -> float:
    """A pair's score: its cosine, less ``DETAIL_PENALTY`` when each side names a detail
    the other lacks (``names``: the batch's, which count wherever they stand)."""
    only_a, only_b = differing(a, b, names)
    return cosine - DETAIL_PENALTY if only_a and only_b else cosine


def words(text: str) -> set[str]:
    return {w for w in _compiled(_TOKEN).findall(text.casefold()) if len(w) > 1}


@dataclass(frozen=True, slots=True)
class Pair:
    """Two rows (by place) the pair finder proposes, with their cosine and score."""

    first: int
    second: int
    cosine: float
    score: float


def centred(
    vectors: npt.NDArray[np.float32], reference: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``vectors`` (unit rows) less the mean of them and the ``reference`` rows together,
    made unit again. A static model gives every text a share of one direction (long
    texts most), so raw cosines of unrelated notes can pass any threshold; the mean
    takes it away, and the reference (the relevance gate's unrelated sentences) keeps
    the mean of a store of three memories from being theirs alone."""
    from retain.search.embed import normalised

    mean = (vectors.sum(axis=0) + reference.sum(axis=0)) / (len(vectors) + len(reference))
    return normalised(vectors - mean)


def similar_pairs(
    vectors: npt.NDArray[np.float32],
    texts: Sequence[str],
    threshold: float,
    *,
    groups: Sequence[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Pair]:
    """The pairs of rows whose score (``pair_score``, with the names of all ``texts``)
    reaches ``threshold``, best first, each row in at most ``NEIGHBOURS`` of them (of a
    row's later rows above the threshold, only its ``WEIGHED`` × ``NEIGHBOURS`` nearest
    are scored); rows of different ``groups`` (scopes) never pair. ``vectors`` are one
    row per text, unit length (``centred`` ones, for a dedup pass); computed a block of
    rows at a time, reporting rows done to ``progress``."""
    import numpy as np

    count = len(texts)
    names = names_in(texts)
    group = np.asarray(groups if groups is not None else [""] * count, dtype=object)
    floor = threshold  # a cosine below the threshold cannot score above it
    found: list[Pair] = []
    for start in range(0, count, BLOCK):
        stop = min(start + BLOCK, count)
        cosines = vectors[start:stop] @ vectors[start:].T  # each pair once: j > i
        for i in range(start, stop):
            row = cosines[i - start, i - start + 1 :]
            near = np.flatnonzero(row >= floor)
            if len(near) > WEIGHED * NEIGHBOURS:  # a crowd alike: its nearest are enough
                near = near[
                    np.argpartition(-row[near], WEIGHED * NEIGHBOURS)[: WEIGHED * NEIGHBOURS]
                ]
            for offset in near[np.argsort(-row[near], kind="stable")]:
                j = i + 1 + int(offset)
                if group[i] != group[j]:
                    continue
                cosine = float(row[offset])
                score = pair_score(cosine, texts[i], texts[j], names)
                if score >= threshold:
                    found.append(Pair(i, j, cosine, score))
        if progress is not None:
            progress(stop, count)
    found.sort(key=lambda p: (-p.score, p.first, p.second))
    taken = [0] * count
    kept = []
    for pair in found:
        if taken[pair.first] < NEIGHBOURS and taken[pair.second] < NEIGHBOURS:
            taken[pair.first] += 1
            taken[pair.second] += 1
            kept.append(pair)
    return kept
