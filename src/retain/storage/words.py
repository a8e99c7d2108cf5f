"""How word search is planned and scored, whichever engine holds the index.

Both backends count how many rows each query term matches (up to ``COMMON``): the
rarest terms lead and rank their rows, common terms add a bounded ``bonus`` (field
weight × IDF) to rows holding them, and a query of common terms alone ranks the rows
the words name and then the newest ``WINDOW`` rows holding them. See
``sqlite_fts.py`` and ``postgres_words.py`` for each engine's side.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import Any

from retain.storage.base import LexicalHit

COMMON = 2000
WINDOW = 120
CANDIDATES = 4  # rows ranked per result asked for, before filters
# name, description, body, and the derived context (date, subject, thread neighbours)
FIELD_WEIGHTS = (10.0, 5.0, 1.0, 0.4)
MIN_PREFIX = 4
# The near-copy note's lookups (``lookup_descriptions``) count a description word up to
# this many descriptions: enough to tell a list's rarest two apart (among words held as
# often, the longer first). A word reaching it is remembered as common for the life of
# the backend and is not looked up alone: its newest rows would be any (no more of 300
# planted near-copies were noted for it, at three times the lookups' cost). Counting on
# reads more of the word's list at each write (on SQLite, where counts went on to
# ``COMMON``, a single write's lookups at 20,000 memories cost 0.6 ms of its 3).
DESCRIPTION_COMMON = 64


def rarest(words: Sequence[str], counts: dict[str, int], fewest: int) -> list[str]:
    """The two of ``words`` the fewest descriptions hold (``counts``: each word's, up to
    ``DESCRIPTION_COMMON``), of those ``fewest`` or more hold, the longer first among
    words held as often; none for one word that ``DESCRIPTION_COMMON`` hold, alone."""
    least = min(max(fewest, 1), DESCRIPTION_COMMON)
    ranked = sorted(
        (counts[w], -len(w), w) for w in dict.fromkeys(words) if w.strip() and counts[w] >= least
    )
    if len(ranked) == 1 and ranked[0][0] >= DESCRIPTION_COMMON:
        return []  # a common word alone
    return [w for _, _, w in ranked[:2]]


def idf(count: int, total: int) -> float:
    """BM25's IDF for a term in ``count`` of ``total`` rows (a count may be a floor), ≥ 0.1."""
    total = max(total, count)
    return max(0.1, math.log((total - count + 0.5) / (count + 0.5)))


def bonus(words: Sequence[tuple[str, float]], texts: Sequence[str]) -> float:
    """Field weight × IDF for each (word, idf) a row holds (matched at a word's start);
    a name's words are the parts between its hyphens, dots and underscores, so the
    phrase "retain docs" is held by the name ``retain-docs``."""
    score = 0.0
    texts = [_NAME_PARTS.sub(" ", texts[0]), *texts[1:]] if texts else texts
    # Where text and word are ASCII, the word start is looked for in the lowered text
    # with str.find, several times quicker than the pattern (which the others need).
    lowered = [text.lower() if text.isascii() else None for text in texts]
    for word, idf in words:
        starts, needle = _word_start(word)
        for weight, text, low in zip(FIELD_WEIGHTS, texts, lowered, strict=True):
            if needle is not None and low is not None:
                found = _starts_a_word(low, needle)
            else:
                found = starts.search(text) is not None
            if found:
                score += weight * idf
    return score


_NAME_PARTS = re.compile(r"[-._]+")


def _starts_a_word(text: str, needle: str) -> bool:
    """Whether ASCII ``needle`` begins a word of ASCII ``text``: found where no letter or
    digit comes before it (the pattern's ``(?<![^\\W_])``, for ASCII)."""
    at = text.find(needle)
    while at >= 0:
        if at == 0 or not text[at - 1].isalnum():
            return True
        at = text.find(needle, at + 1)
    return False


@functools.lru_cache(maxsize=1024)
def _word_start(word: str) -> tuple[re.Pattern[str], str | None]:
    """A pattern finding a word that starts like ``word`` (its last letters may differ),
    and that start lowered if it is ASCII."""
    start = word[: max(MIN_PREFIX, len(word) - 2)]
    pattern = re.compile(r"(?<![^\W_])" + re.escape(start), re.IGNORECASE)
    return pattern, start.lower() if start.isascii() else None


def scan_hits(needles: Sequence[str], rows: Sequence[Any], limit: int) -> list[LexicalHit]:
    """Rows a plain-text scan fetched — (id, name, description, body) holding a needle,
    as the engine's case folding saw it — checked with Python's folding and scored by
    field (name 10, description 5, body 1 for each needle), best first."""
    hits = []
    folded = [n.casefold() for n in needles]
    for memory_id, name, description, body in rows:
        fields = (name.casefold(), description.casefold(), body.casefold())
        matched = tuple(
            n for n, f in zip(needles, folded, strict=True) if any(f in x for x in fields)
        )
        if not matched:
            continue
        score = 0.0
        for f in folded:
            score += 10.0 * (f in fields[0]) + 5.0 * (f in fields[1]) + 1.0 * (f in fields[2])
        hits.append(LexicalHit(memory_id, score, matched))
    hits.sort(key=lambda h: (-h.score, h.memory_id))
    return hits[:limit]
