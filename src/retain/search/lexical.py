"""Lexical search: how a query becomes word matches and plain-text scans.

A query answers in these word senses, and every hit says which answered it:

``stem``
    the words of the query, matched after Porter stemming (deploys, deploying).
``prefix``
    a retry when stemming found too little: a query word matches the start of
    a stored word (``deploy`` finds *deployment*), and so does the query word's
    stem shortened by a letter or two, so a derived word finds its relatives
    whose stems differ (``deployment`` finds *deploys*) and a misspelling finds
    its word (``kestrl`` finds *kestrel*). The backend decides the shortened
    forms, since they depend on its stemmer. Prefix hits weigh half as much as
    stem hits in the ranking.
``scan``
    a term the tokenizer cannot split into words: text in a script written
    without spaces (Chinese, Japanese, Thai, …) and long identifiers, paths and
    URLs, matched as plain text beside the word matches.
``phrase``
    each two neighbouring words of the query (stopwords aside), matched as a
    phrase: a memory saying "support group" outranks one saying "support"
    and "group" apart. It weighs a quarter of ``stem``.
``text``
    when nothing else answered and the query holds characters the word index
    drops (punctuation, symbols), the whole query matched as plain text. A
    query of plain words that nothing matches costs no scan.

English function words ("what", "did", "the") are dropped from a query that
has other words: they match most memories and say nothing of which. A query
of nothing but function words keeps them. (The semantic sense, in
``vectors.py``, reads the whole query.) A turn of an agent's conversation is
recalled by its content words alone (``turn_query``): a turn of function words
recalls nothing.

A search's cost grows with what it asks for, and each query of a list runs on
its own, so a search takes at most ``MAX_QUERIES`` query strings of at most
``MAX_QUERY_CHARS`` characters in all, handing the word index at most ``MAX_WORDS``
words and scanning at most ``MAX_SCANNED`` terms as plain text (each a pass over the
rows the filters keep), every query's counted (a word two queries hold counts
twice); more is refused with ``query_too_long``, before anything is searched
(``plan_queries``). The ``text`` sense's whole-query scan runs only while the search
has scans left (``Scans``).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date

from retain.errors import QueryTooLong
from retain.search import when
from retain.storage.base import CountsAhead, LexicalHit, MemoryFilter, Reads, ScannedRow
from retain.storage.words import scan_hits

STEM = "stem"
PREFIX = "prefix"
SCAN = "scan"
TEXT = "text"
PHRASE = "phrase"
SEMANTIC = "semantic"  # not lexical: the cosine scan of vectors.py
SUBJECT = "subject"  # not lexical: the query names the memory's subject
THREAD = "thread"  # not lexical: the memories around it in its thread matched
TIME = "time"  # not lexical: it holds or mentions a time the query names

# fmt: off
STOPWORDS = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each",
    "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here",
    "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it",
    "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now",
    "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out",
    "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were",
    "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
    "you", "your", "yours", "yourself", "yourselves",
))
# fmt: on

MAX_QUERY_CHARS = 1000  # characters of a search's queries, blanks around each aside
MAX_QUERIES = 8  # distinct query strings (synonyms) of one search
MAX_WORDS = 32  # words a search's queries hand to the word index, each query's counted
MAX_SCANNED = 4  # terms a search's queries scan as plain text (each a pass over the rows)
TIME_DEPTH = 500  # memories of a time a query names, among which its words are looked up
TURN_CHARS = 4 * MAX_QUERY_CHARS  # how much of a turn recall reads for its words

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Anchored at a word's start, possessive: a long run of letters is read once, not
# once from each of its letters (which made a 16 KB run of Chinese take seconds).
_IDENTIFIER = re.compile(r"(?<![^\W_])[^\W_]++(?:[./:_\-@#\\]++[^\W_]++)+")
_LONG_IDENTIFIER = 8


def _unspaced(char: str) -> bool:
    """A character of a script written without spaces between words."""
    if not char.isalpha():
        return False
    name = unicodedata.name(char, "")
    return name.startswith(
        ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")
    )


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What one query string asks for."""

    text: str
    words: tuple[str, ...]
    needles: tuple[str, ...]
    pairs: tuple[str, ...] = ()
    times: tuple[str, ...] = ()  # the time tokens of the times it names (search/when.py)


def analyze(query: str) -> QueryPlan:
    """Split a query into words for the index and needles for the plain-text scan."""
    words: list[str] = []
    needles: list[str] = []
    pairs: list[str] = []
    previous: str | None = None
    for identifier in _IDENTIFIER.findall(query):
        if len(identifier) >= _LONG_IDENTIFIER:
            needles.append(identifier)
    for word in _WORD.findall(query):
        # Runs of an unspaced script are scanned; the rest of the word is a word.
        for unspaced, run in itertools.groupby(word, key=_unspaced):
            part = "".join(run)
            (needles if unspaced else words).append(part)
            pairable = not unspaced and part.casefold() not in STOPWORDS
            if pairable and previous is not None:
                pairs.append(f"{previous} {part}")
            previous = part if pairable else None
    telling = [w for w in words if w.casefold() not in STOPWORDS]
    return QueryPlan(
        text=query.strip(),
        words=tuple(dict.fromkeys(telling or words)),
        needles=tuple(dict.fromkeys(needles)),
        pairs=tuple(dict.fromkeys(pairs)),
    )


@dataclass(frozen=True, slots=True)
class SenseHits:
    """The ranked hits of one sense for one query."""

    sense: str
    hits: tuple[LexicalHit, ...]


@dataclass(slots=True)
class Scans:
    """The plain-text scans a search has left for the ``text`` sense (not frozen: the
    search's queries draw on it in turn)."""

    left: int

    @classmethod
    def of(cls, plans: Sequence[QueryPlan]) -> Scans:
        return cls(MAX_SCANNED - sum(len(p.needles) for p in plans))

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def search_query(
    tx: Reads,
    where: MemoryFilter,
    plan: QueryPlan,
    *,
    depth: int,
    wanted: int,
    scans: Scans,
    scanned: Sequence[ScannedRow],
    held: Sequence[str] = (),
) -> list[SenseHits]:
    """Every sense that answered ``plan``, at most ``depth`` hits each, best first.

    ``held``: the memories holding a time the query names (``times_held``), among
    which its words are looked up again (the ``time`` sense): a memory of the day
    asked about is found even where the words are common elsewhere.

    The prefix retry runs when stemming found fewer than the ``wanted`` results; the
    whole-query scan, when nothing answered and ``scans`` has one left. ``scanned``: the
    rows one pass for every query's needles found (``scan_pass``), of which this query's
    are taken.
    """
    answered: list[SenseHits] = []
    found: set[str] = set()
    if plan.words:
        stem = tx.match_terms(where, plan.words, prefix=False, limit=depth)
        if stem:
            answered.append(SenseHits(STEM, tuple(stem)))
            found.update(h.memory_id for h in stem)
        if len(stem) < wanted:
            more = tx.match_terms(where, plan.words, prefix=True, limit=depth)
            fresh = tuple(h for h in more if h.memory_id not in found)
            if fresh:
                answered.append(SenseHits(PREFIX, fresh))
                found.update(h.memory_id for h in fresh)
    if held and plan.words:
        inside = replace(where, within=tuple(held))
        timed = tx.match_terms(inside, plan.words, prefix=False, limit=depth)
        if timed:
            answered.append(SenseHits(TIME, tuple(timed)))
    if plan.pairs and answered:
        phrases = tx.match_terms(where, plan.pairs, prefix=False, limit=depth)
        if phrases:
            answered.append(SenseHits(PHRASE, tuple(phrases)))
    if plan.needles:
        hits = scan_hits(plan.needles, scanned, depth)
        if hits:
            answered.append(SenseHits(SCAN, tuple(hits)))
    if not answered and plan.text and _WORD.sub("", plan.text).strip() and scans.take():
        whole = tx.scan_text(where, [plan.text], limit=depth)
        if whole:
            answered.append(SenseHits(TEXT, tuple(whole)))
    return answered


COVERAGE_OF = 3  # the best word matches whose words ``coverage`` counts


def coverage(plan: QueryPlan, texts: Sequence[str]) -> float:
    """The largest share of ``plan``'s words that one of ``texts`` holds (words compared
    casefolded, by their first ``_STEM_CHARS`` letters after a plural's s): how well the
    words answered."""
    if not plan.words:
        return 0.0
    asked = {_stem(w) for w in plan.words}
    best = 0
    for text in texts:
        held = {_stem(w) for w in _WORD.findall(text)}
        best = max(best, len(asked & held))
    return best / len(asked)


_STEM_CHARS = 5


def _stem(word: str) -> str:
    folded = word.casefold()
    if len(folded) > 3 and folded.endswith("s"):
        folded = folded[:-1]
    return folded[:_STEM_CHARS]


def without_names(plan: QueryPlan, names: Sequence[str]) -> QueryPlan:
    """``plan`` without the words of the subjects it names: who a memory is about lifts
    the memories the other words found (``rank.favour_subject``), it finds none alone."""
    named = {w.casefold() for n in names for w in _WORD.findall(n)}
    words = tuple(w for w in plan.words if w.casefold() not in named)
    if words == plan.words:
        return plan
    pairs = tuple(p for p in plan.pairs if not set(p.casefold().split()) & named)
    return replace(plan, words=words, pairs=pairs)


def times_held(tx: Reads, where: MemoryFilter, plan: QueryPlan) -> list[str]:
    """The memories holding a time ``plan`` names; none when more than ``TIME_DEPTH`` do
    (a time most memories hold tells nothing apart)."""
    if not plan.times:
        return []
    held = tx.match_terms(where, plan.times, prefix=False, limit=TIME_DEPTH + 1)
    return [h.memory_id for h in held] if len(held) <= TIME_DEPTH else []


def scan_pass(tx: Reads, where: MemoryFilter, plans: Sequence[QueryPlan]) -> list[ScannedRow]:
    """The rows holding any needle of any of ``plans``, in one pass over the rows (a
    pass costs more than its tests: one for the whole search, not one per query)."""
    needles = list(dict.fromkeys(n for p in plans for n in p.needles))
    return tx.scan_rows(where, needles) if needles else []


def count_ahead(tx: Reads, plans: Sequence[QueryPlan]) -> None:
    """On a backend where each lookup is a round trip, every query's words and phrases
    counted at once, before ``search_query`` asks for them query by query."""
    if isinstance(tx, CountsAhead):
        tx.count_ahead([t for p in plans for t in (*p.words, *p.pairs)])


def plan_queries(queries: Sequence[str], today: date | None = None) -> list[QueryPlan]:
    """Plans for the non-blank queries of a list, duplicates dropped; a list asking
    for more than a search takes is refused (``query_too_long``).

    The times a query names ("in May 2023", "last week" from ``today``) are taken out
    of its words: they are asked of the memories' times instead (``QueryPlan.times``),
    so a memory is never found by a date alone.
    """
    texts = [q for q in dict.fromkeys(q.strip() for q in queries) if q]
    _within("queries", len(texts), MAX_QUERIES, "query strings")
    _within("characters", sum(map(len, texts)), MAX_QUERY_CHARS, "characters of queries")
    plans = [_timed(text, today) for text in texts]
    _within("words", sum(len(p.words) for p in plans), MAX_WORDS, "words to look up")
    scanned = sum(len(p.needles) for p in plans)
    _within("scanned_terms", scanned, MAX_SCANNED, "terms to scan as plain text")
    return plans


def _timed(text: str, today: date | None) -> QueryPlan:
    named = when.spans(text, today)
    if not named:
        return analyze(text)
    times = tuple(dict.fromkeys(t for span in named for t in when.query_tokens(span)))
    return replace(analyze(when.strip(text, named)), text=text, times=times)


def _within(measure: str, actual: int, limit: int, what: str) -> None:
    if actual > limit:
        raise QueryTooLong(
            f"the search asks for {actual} {what}; a search takes at most {limit}",
            remedy="search with fewer, shorter queries: the words that tell the memory apart",
            field="queries",
            measure=measure,
            limit=limit,
            actual=actual,
        )


def turn_query(turn: str) -> str:
    """What recall searches for a turn of conversation: its content words and scanned
    terms (identifiers, runs of unspaced scripts), in order, as many as one query
    takes, from its first ``TURN_CHARS`` characters; empty when the turn has none (a
    turn of function words, punctuation or blanks recalls nothing)."""
    plan = analyze(turn[:TURN_CHARS])
    words: set[str] = set()
    needles: set[str] = set()
    taken: list[str] = []
    length = -1
    content = [w for w in plan.words if w.casefold() not in STOPWORDS]
    for term in [*plan.needles, *content]:
        term = term[:MAX_QUERY_CHARS]
        part = analyze(term)  # what the term adds to the query it joins
        more_words = words | {w.casefold() for w in part.words}
        more_needles = needles | {n.casefold() for n in part.needles}
        if (
            len(more_words) > MAX_WORDS
            or len(more_needles) > MAX_SCANNED
            or length + 1 + len(term) > MAX_QUERY_CHARS
        ):
            continue
        if more_words != words or more_needles != needles:
            words, needles = more_words, more_needles
            taken.append(term)
            length += 1 + len(term)
    return " ".join(taken)
