"""Word search in PostgreSQL: the transaction's part that asks the ``tsvector`` index.

Words are searched with a weighted ``tsvector`` (name A, description B, body C, context
D; ``ts_rank_cd``), prefixes with ``:*``, plain text with ``strpos`` over each row's
text lowered when written (``lowered``). Each query is planned as the SQLite backend
plans it (``sqlite_fts``, ``words``): every term's rows counted up to ``COMMON`` first,
in one statement (``_FREQUENCIES``), then the rarest terms lead. ``PostgresWords`` is a
mixin of ``PostgresTransaction`` (``postgres_transaction``), which supplies the
connection and the filters.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from retain.storage import words as plan
from retain.storage.base import Described, LexicalHit, MemoryFilter, ScannedRow
from retain.storage.rows import DESCRIBED_COLUMNS, described_of
from retain.storage.words import DESCRIPTION_COMMON, scan_hits

# name A, description B, body C, context D as ts_rank_cd weighs them ({D, C, B, A})
_WEIGHTS = "'{0.04, 0.1, 0.5, 1.0}'"
_TEXTS = "coalesce(m.name, ''), m.description, m.body, m.context"
_CONFIG = "'retain_english'"  # the store's text search configuration (no stop words)
_LONG_NEEDLE = 64  # bytes: a scanned term longer is sought by its first letters first
_NEEDLE_PIECE = 8  # characters

# Each term's rows counted up to a bound, and the highest row number, for terms given as
# arrays of tsquery function names and arguments: one text whatever the terms, which
# psycopg prepares once it recurs (planning a statement cost as much as running it).
_FREQUENCIES = (
    "SELECT CASE WHEN numnode(x.q) = 0 THEN 0 ELSE (SELECT count(*) FROM "
    "(SELECT 1 FROM memories WHERE fts @@ x.q LIMIT %s) c) END, "
    "(SELECT coalesce(max(num), 0) FROM memories) "
    "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(kind, value, i), "
    f"LATERAL (SELECT CASE t.kind WHEN 'plainto_tsquery' THEN plainto_tsquery({_CONFIG}, t.value) "
    f"WHEN 'phraseto_tsquery' THEN phraseto_tsquery({_CONFIG}, t.value) "
    f"ELSE to_tsquery({_CONFIG}, t.value) END AS q) x ORDER BY t.i"
)


# A description's words, as ``memories_description_words`` (migration 19) indexes them.
# The weighted document holds them too, but its index cannot tell a description's words
# from a body's: every row holding them anywhere was read to check (a batch's note at
# 20,000 memories: 600 ms, against 40 by this index).
_WORDS = f"to_tsvector({_CONFIG}, d.description)"
# Each word's rows counted by it, up to ``DESCRIPTION_COMMON``; but a word whose lexeme the
# index's statistics put at ``FREQUENT`` rows or more is common without a count. GIN
# cannot stop a count early: counting a word most descriptions hold read its whole list
# (at 200,000 memories "the" took 20 ms, "of" 15, every common word 1 ms or more), which
# every new process paid for each common word it met before it had learnt them.
_DESCRIPTION_COUNTS = (
    "SELECT CASE WHEN numnode(x.q) = 0 THEN 0 "
    "WHEN btrim(x.q::text, '''') = ANY(%(frequent)s::text[]) THEN %(common)s "
    "ELSE (SELECT count(*) FROM "
    f"(SELECT 1 FROM memories d WHERE {_WORDS} @@ x.q LIMIT %(common)s) c) END "
    "FROM unnest(%(words)s::text[]) WITH ORDINALITY AS t(value, i), "
    f"LATERAL (SELECT to_tsquery({_CONFIG}, t.value) AS q) x ORDER BY t.i"
)
# The lexemes ``ANALYZE`` found in ``FREQUENT`` descriptions or more (the most common
# elements of the index's expression, each with the share of rows holding it).
_FREQUENT = (
    "SELECT m.lexeme FROM pg_stats p CROSS JOIN LATERAL unnest("
    "p.most_common_elems::text::text[], p.most_common_elem_freqs) AS m(lexeme, share) "
    "WHERE p.schemaname = current_schema() AND p.tablename = 'memories_description_words' "
    "AND m.lexeme IS NOT NULL "
    "AND m.share * (SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass) >= %s"
)
FREQUENT = 2 * DESCRIPTION_COMMON  # an estimate's margin: a word near the line is counted
FREQUENT_TTL_S = 600.0  # how long a backend goes by the frequent lexemes it read
# ... by none: the store not analyzed yet, which autovacuum does within a minute or so of
# its first writes (a store holding no frequent word is read again this often too)
FREQUENT_RETRY_S = 30.0


class Frequent:
    """The description lexemes the statistics put at ``FREQUENT`` rows or more, as a
    backend last read them (every transaction of the backend shares it)."""

    def __init__(self) -> None:
        self.lexemes: list[str] = []
        self.read_at: float | None = None  # ``time.monotonic()``; None: never read


def _lexeme(word: str) -> str:
    """``word`` as one quoted tsquery lexeme (its quotes and backslashes escaped)."""
    return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _term_queries(terms: Sequence[str]) -> list[tuple[str, str]]:
    """The tsquery expression and argument of each distinct term: a phrase for a term of
    two words, else the term's words."""
    queries = []
    for term in dict.fromkeys(t for t in terms if t.strip()):
        kind = "phraseto_tsquery" if " " in term.strip() else "plainto_tsquery"
        queries.append((f"{kind}({_CONFIG}, %s)", term))
    return queries


def _idf(count: int, total: int) -> float:
    """BM25's inverse document frequency of a term ``count`` of ``total`` rows hold."""
    return math.log((total - count + 0.5) / (count + 0.5) + 1.0)


class PostgresWords(ABC):
    """A transaction's word searches: ranked terms, prefixes, words in a field, and the
    plain-text scan."""

    _common: set[str]  # terms known to be common, kept by the backend
    _frequent: Frequent  # the statistics' frequent description lexemes, kept by the backend
    _counted: dict[str, int]  # terms' row counts counted ahead in this read
    _highest: int | None  # the highest row number, counted ahead with them

    @abstractmethod
    def _rows(
        self, sql: str, args: Sequence[Any] | dict[str, Any] = (), *, prepare: bool | None = None
    ) -> list[Any]:
        """Every row ``sql`` selects."""

    @abstractmethod
    def _planned(self, sql: str, args: Sequence[Any]) -> list[Any]:
        """Every row ``sql`` selects, planned with its arguments."""

    @abstractmethod
    def _one(self, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """The first row ``sql`` selects, or None."""

    @abstractmethod
    def _filter_sql(self, where: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
        """``where`` as a clause over ``alias`` and its arguments."""

    def _prefix_forms(self, words: Sequence[str]) -> list[str]:
        """What words are retried as in the prefix sense, in order, each once: each word
        itself and its stem shortened by one and two letters, down to four (``deplo:*``
        finds deploys and deployment; a misspelt ``kestrl`` finds kestrel through
        ``kestr:*``). Every word's stem in one statement."""
        if not words:
            return []
        rows = self._rows(
            "SELECT ts_lexize('retain_stem', w) FROM unnest(%s::text[]) WITH ORDINALITY "
            "AS t(w, i) ORDER BY i",
            (list(words),),
        )
        forms: list[str] = []
        for word, (stems,) in zip(words, rows, strict=True):
            if len(word) >= 3:
                forms.append(word)
            if stems is not None and len(stems) == 1:
                for cut in (1, 2):
                    form = stems[0][:-cut]
                    if len(form) >= plan.MIN_PREFIX:
                        forms.append(form)
        return list(dict.fromkeys(forms))

    def match_terms(
        self, where: MemoryFilter, terms: Sequence[str], *, prefix: bool, limit: int
    ) -> list[LexicalHit]:
        """Rows holding the terms, planned as the SQLite backend plans them (see
        ``sqlite_fts``): the rarest terms lead and rank their rows — each term's
        cover-density rank (fields weighted, longer documents lower) times its IDF — and
        common terms add a bounded bonus; when every term is common, the rows the words
        name come first, then the newest rows holding them all (else any)."""
        queries: list[tuple[str, str]] = []  # (tsquery expression, its argument)
        if prefix:
            for form in self._prefix_forms([t for t in terms if t]):
                queries.append((f"to_tsquery({_CONFIG}, %s)", _lexeme(form) + ":*"))
        else:
            queries = _term_queries(terms)
        counts, total = self._frequencies(queries)
        stats = sorted((n, q, v) for (q, v), n in zip(queries, counts, strict=True) if n)
        if not stats:
            return []
        lead: list[tuple[int, str, str]] = []
        running = 0
        for n, q, v in stats:
            if n >= plan.COMMON or running + n > plan.COMMON:
                break
            lead.append((n, q, v))
            running += n
        rest = [(v, n) for n, q, v in stats if (n, q, v) not in lead]
        total = max(total, 1)
        clause, args = self._filter_sql(where)
        if lead:
            # A term's rank is asked of the rows holding it alone: ``ts_rank_cd`` of a row
            # without the term is 0, and costs more than testing (32 words: 55 → 19 ms).
            rank = " + ".join(
                f"%s::float8 * CASE WHEN m.fts @@ {q} "
                f"THEN ts_rank_cd({_WEIGHTS}, m.fts, {q}, 1) ELSE 0 END"
                for _, q, _ in lead
            )
            ranked: list[Any] = [x for n, _, v in lead for x in (_idf(n, total), v, v)]
            values = [v for _, _, v in lead]
            texts = f", {_TEXTS}" if rest else ""  # the bonus reads them; else not sent
            rows = self._planned(
                f"SELECT m.id, {rank} AS s{texts} FROM memories m "
                f"WHERE m.fts @@ ({' || '.join(q for _, q, _ in lead)}) AND {clause} "
                "ORDER BY s DESC, m.num ASC LIMIT %s",
                [*ranked, *values, *args, max(limit * plan.CANDIDATES, 16)],
            )
        else:
            typed = [t for t in dict.fromkeys(terms) if any(v == t for _, _, v in stats)]
            rows = self._newest([(q, v) for _, q, v in stats], typed, clause, args, limit)
        if not rest:
            return [LexicalHit(r[0], float(r[1])) for r in rows[:limit]]
        weighted = [(word, plan.idf(count, total)) for word, count in rest]
        hits = [LexicalHit(r[0], float(r[1]) + plan.bonus(weighted, r[2:])) for r in rows]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    def count_ahead(self, terms: Sequence[str]) -> None:
        """Count the rows of a search's words and phrases in one statement, before its
        queries' senses ask for them one query at a time (``CountsAhead``)."""
        self._frequencies(_term_queries(terms), keep=True)

    def _newest(
        self,
        queries: list[tuple[str, str]],
        typed: list[str],
        clause: str,
        args: list[Any],
        limit: int,
    ) -> list[tuple[Any, ...]]:
        """Memories the words name (``typed``, in the query's order), then the newest
        rows holding them all (else any): what ranks a query of common words alone."""
        joined = "-".join(w for t in typed for w in t.split())  # a phrase names with hyphens too
        names = list(dict.fromkeys([*typed, joined, *(w.lower() for w in typed), joined.lower()]))
        named = self._rows(
            f"SELECT m.id, 0, {_TEXTS} FROM memories m WHERE m.name = ANY(%s) AND {clause}",
            [names, *args],
        )
        rows: list[Any] = []
        for joiner in (" && ", " || "):
            rows = self._planned(
                f"SELECT m.id, 0, {_TEXTS} FROM memories m "
                f"WHERE m.fts @@ ({joiner.join(q for q, _ in queries)}) AND {clause} "
                "ORDER BY m.num DESC LIMIT %s",
                [*(v for _, v in queries), *args, plan.WINDOW],
            )
            if len(rows) >= limit or len(queries) == 1:
                break
        first: dict[str, tuple[Any, ...]] = {}
        for row in named + rows:
            first.setdefault(row[0], tuple(row))
        # Newer rows first among equal bonuses: a tiny decreasing score keeps that order.
        return [(r[0], -i * 1e-6, *r[2:]) for i, r in enumerate(first.values())]

    def _total(self) -> int:
        """About how many rows the store holds (the highest row number: instant)."""
        return int(self._one("SELECT coalesce(max(num), 0) FROM memories")[0])

    def _frequencies(
        self, queries: Sequence[tuple[str, str]], *, keep: bool = False
    ) -> tuple[list[int], int]:
        """Rows matching each term's query (a tsquery expression and its argument),
        counted up to ``COMMON`` (0 for a query that holds no word), and about how many
        rows the store holds (the highest row number: instant), in one statement: a
        statement a term made a search's words cost a round trip each. A term found
        common is remembered for the life of the backend, as SQLite's planner remembers
        it: counting it means reading ``COMMON`` rows; a rare count is never kept, so a
        new row is always seen, except by the rest of the read that counted it ahead
        (``keep``, ``count_ahead``), whose snapshot stays."""
        terms = [f"{q}\0{v}" for q, v in queries]
        counts = [plan.COMMON if t in self._common else self._counted.get(t, -1) for t in terms]
        asked = [i for i, n in enumerate(counts) if n < 0]
        if not asked:
            return counts, self._highest if self._highest is not None else self._total()
        rows = self._rows(_FREQUENCIES, [
            plan.COMMON,
            [queries[i][0].split("(", 1)[0] for i in asked],
            [queries[i][1] for i in asked],
        ])  # fmt: skip
        for i, (count, _) in zip(asked, rows, strict=True):
            counts[i] = int(count)
            if keep:
                self._counted[terms[i]] = counts[i]
            if counts[i] >= plan.COMMON:
                self._common.add(terms[i])
        highest = int(rows[0][1])
        if keep:
            self._highest = highest
        return counts, highest

    def lookup_descriptions(
        self, where: MemoryFilter, asked: Sequence[Sequence[str]], *, limit: int, fewest: int
    ) -> list[list[Described]]:
        lists = [[w for w in dict.fromkeys(words) if w.strip()] for words in asked]
        distinct = list(dict.fromkeys(w for words in lists for w in words))
        if not distinct:
            return [[] for _ in lists]
        held = {w: DESCRIPTION_COMMON for w in distinct if f"description\0{w}" in self._common}
        counting = [w for w in distinct if w not in held]
        lexemes = [_lexeme(w) for w in counting]
        counted = []
        if counting:
            known = {"common": DESCRIPTION_COMMON, "words": lexemes, "frequent": self._frequents()}
            counted = self._rows(_DESCRIPTION_COUNTS, known)
        for word, row in zip(counting, counted, strict=True):
            held[word] = int(row[0])
            if held[word] >= DESCRIPTION_COMMON:
                self._common.add(f"description\0{word}")
        queries = [" & ".join(map(_lexeme, plan.rarest(words, held, fewest))) for words in lists]
        found: list[list[Described]] = [[] for _ in lists]
        places = [i for i, query in enumerate(queries) if query]
        if not places:
            return found
        clause, args = self._filter_sql(where)
        # Every list's lookup in one statement (a round trip each cost a batch's note more
        # than its write). The rows holding its words are found first, by the index, and the
        # filter tested on those rows alone: the subquery fenced by ``OFFSET 0`` is planned
        # by itself, so no plan can walk the filter's index testing each row's words, look
        # the words up again for each row it passes (in a new store without statistics, 16
        # lists took 340 ms, 130 lists 1.4 s), or reach the filter's rows by their
        # (realm, scope) index and test each against the words' rows (with statistics taken
        # when the tiers were near empty: every lookup read the whole tier, 0.8 ms of the
        # server's CPU a write with eight writers).
        rows = self._rows(
            "SELECT q.i, n.* FROM unnest(%s::text[]) WITH ORDINALITY AS q(query, i) "
            f"CROSS JOIN LATERAL (SELECT {DESCRIBED_COLUMNS}, m.num FROM (SELECT d.* FROM "
            f"memories d WHERE {_WORDS} @@ to_tsquery({_CONFIG}, q.query) OFFSET 0) m "
            f"WHERE {clause} ORDER BY m.num DESC LIMIT %s) n ORDER BY q.i, n.num DESC",
            [[queries[i] for i in places], *args, limit],
        )
        for row in rows:
            found[places[int(row[0]) - 1]].append(described_of(row[1:]))
        return found

    def _frequents(self) -> list[str]:
        """The description lexemes the statistics put at ``FREQUENT`` rows or more, read
        again once ``FREQUENT_TTL_S`` has passed, or ``FREQUENT_RETRY_S`` when there were
        none (before the store is analyzed)."""
        known = self._frequent
        now = time.monotonic()
        ttl = FREQUENT_TTL_S if known.lexemes else FREQUENT_RETRY_S
        if known.read_at is None or now - known.read_at > ttl:
            known.lexemes = [row[0] for row in self._rows(_FREQUENT, [FREQUENT])]
            known.read_at = now
        return known.lexemes

    def scan_text(
        self, where: MemoryFilter, needles: Sequence[str], *, limit: int
    ) -> list[LexicalHit]:
        return scan_hits(needles, self.scan_rows(where, needles), limit)

    def scan_rows(self, where: MemoryFilter, needles: Sequence[str]) -> list[ScannedRow]:
        """The rows whose lowered text holds a needle lowered: each row's text is lowered
        when it is written (``lowered``, migration 7), not at each search (lowering the
        rows the filters keep was most of a scan: 50 of 60 ms at 10,000 memories);
        ``scan_hits`` checks each field alone afterwards."""
        if not needles:
            return []
        clause, args = self._filter_sql(where)
        # ``strpos`` prepares a table of its needle at every call, a cost in the needle's
        # length: a long needle is sought only in a text as long, and by its first
        # letters first (which a row holding the needle holds too), so most rows cost a
        # short needle's table (four runs of 100 Chinese characters: 26 ms, 16 ms).
        tests: list[str] = []
        values: list[str] = []
        for needle in needles:
            if len(needle.encode("utf-8")) > _LONG_NEEDLE:
                tests.append(
                    "(octet_length(m.lowered) >= octet_length(lower(%s)) "
                    f"AND strpos(m.lowered, left(lower(%s), {_NEEDLE_PIECE})) > 0 "
                    "AND strpos(m.lowered, lower(%s)) > 0)"
                )
                values.extend((needle, needle, needle))
            else:
                tests.append("strpos(m.lowered, lower(%s)) > 0")
                values.append(needle)
        rows = self._planned(
            f"SELECT m.id, coalesce(m.name, ''), m.description, m.body FROM memories m "
            f"WHERE {clause} AND ({' OR '.join(tests)})",
            [*args, *values],
        )
        return [tuple(row) for row in rows]
