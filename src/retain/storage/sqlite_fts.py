"""Word search over SQLite's FTS5 index, planned so its cost stays bounded.

FTS5 spends time in proportion to the rows a query touches: iterating
matches costs about 0.3 µs a row, and ``bm25()`` first walks the whole
posting list of every phrase in the query to weigh it. A query with a word
that half the store holds would cost tens of milliseconds at 100k memories.
So each query is planned from how many rows each of its terms matches,
counted up to ``COMMON`` (a term reaching it is *common*, remembered for the
life of the process; a rare count is never cached, so a new word is always
seen):

* the rarest terms whose counts add up to at most ``COMMON`` **lead**: only
  rows holding one of them are candidates, ranked by BM25 over the lead terms
  (field weights name 10, description 5, body 1, context 0.4);
* the common terms then add a bounded bonus to each candidate that holds
  them, weighted by field and by an IDF estimate — a tie-breaker among rows
  that share the rare words, as BM25 would do with them;
* when every term is common, the memories named by the words (``deploy``,
  ``deploy-host``), then the newest ``WINDOW`` rows that pass the filters and
  hold them all — failing that, any of them — are ranked by that bonus alone:
  BM25 can say little about words most rows hold.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retain.storage.base import Described, LexicalHit
from retain.storage.rows import DESCRIBED_COLUMNS, NAMED, described_of
from retain.storage.words import (
    CANDIDATES,
    COMMON,
    DESCRIPTION_COMMON,
    FIELD_WEIGHTS,
    MIN_PREFIX,
    WINDOW,
    bonus,
    idf,
    rarest,
)

_BM25 = "bm25(memories_fts, " + ", ".join(map(str, FIELD_WEIGHTS)) + ")"


_TEXTS = "coalesce(m.name, ''), m.description, m.body, m.context"
NEWEST = "rowid DESC"
NARROW = 2000  # a filter's rows searched knowing them below this many (``_first``)
SPREAD = 1000  # rows of the store a filter's row may stand for, to be found by a scan (``_first``)
# the rows passing a search's filters (number → id) when a way they narrow holds few
# (``SqliteTransaction.passing``), else None
Passing = Callable[[], "Mapping[int, str] | None"]


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class FtsSearch:
    """Runs planned word searches on one connection."""

    def __init__(self, con: sqlite3.Connection, common: set[str]) -> None:
        self.con = con
        self.common = common  # phrases known to match at least COMMON rows

    # -- terms ------------------------------------------------------------------

    def tokens(self, text: str) -> list[str]:
        """``text`` as the index's tokenizer stores it (stemmed, folded)."""
        self.con.execute("DELETE FROM temp.retain_tokenizer")
        self.con.execute("INSERT INTO temp.retain_tokenizer(rowid, x) VALUES (1, ?)", (text,))
        rows = self.con.execute(
            "SELECT term FROM temp.retain_tokenizer_vocab ORDER BY offset"
        ).fetchall()
        return [r[0] for r in rows]

    def prefix_forms(self, word: str) -> list[str]:
        """What a word is retried as in the prefix sense, in forms the tokenizer keeps.

        FTS5 stems a prefix query too (``deploy*`` is searched as ``deploi*``),
        and Porter gives derived words different stems (deployment → deploy,
        deploys → deploi). So besides the word itself, its stem shortened by
        one and two letters is tried, down to four letters, where the tokenizer
        leaves the shortened stem as it is: ``deplo*`` finds both, and a
        misspelt ``kestrl`` finds *kestrel* through ``kestr*``. A word whose
        exact match is already common is not widened.
        """
        if quote(word) in self.common:
            return []
        forms = [word] if len(word) >= 3 else []
        stems = self.tokens(word)
        if len(stems) == 1:
            stem = stems[0]
            for cut in (1, 2):
                form = stem[:-cut]
                if len(form) >= MIN_PREFIX and self.tokens(form) == [form]:
                    forms.append(form)
        return forms

    def frequency(self, phrase: str) -> int:
        """Rows matching ``phrase``, counted up to ``COMMON``."""
        return self._counted(phrase, COMMON, phrase)

    def described(self, word: str) -> int:
        """Descriptions holding ``word``, counted up to ``DESCRIPTION_COMMON``."""
        return self._counted(
            f"{{description}} : {quote(word)}", DESCRIPTION_COMMON, f"description\0{word}"
        )

    def _counted(self, phrase: str, bound: int, key: str) -> int:
        """Rows matching ``phrase``, counted up to ``bound``; one reaching it is remembered
        as common under ``key`` (a rarer count is never kept: a new row is always seen)."""
        if key in self.common:
            return bound
        row = self.con.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
            (phrase, bound),
        ).fetchone()
        count = int(row[0])
        if count >= bound:
            self.common.add(key)
        return count

    # -- the search -------------------------------------------------------------

    def match(
        self,
        filter_sql: str,
        filter_args: list[Any],
        terms: Sequence[str],
        *,
        prefix: bool,
        limit: int,
        passing: Passing | None = None,
    ) -> list[LexicalHit]:
        """The ``limit`` best rows holding ``terms`` that pass the filters (``passing``:
        their rows when few pass, or None; asked only when the first matches taken hold
        too few of them)."""
        words = [f for t in terms for f in self.prefix_forms(t)] if prefix else list(terms)
        suffix = "*" if prefix else ""
        stats: list[tuple[int, str, str]] = []
        for word in dict.fromkeys(words):
            phrase = quote(word) + suffix
            count = self.frequency(phrase)
            if count:
                stats.append((count, phrase, word))
        if not stats:
            return []
        passing = functools.cache(passing) if passing is not None else None  # asked once
        stats.sort()
        lead: list[str] = []
        running = 0
        for count, phrase, _ in stats:
            if count >= COMMON or running + count > COMMON:
                break
            lead.append(phrase)
            running += count
        rest = [(word, count) for count, phrase, word in stats if phrase not in lead]
        if lead:
            expression = " OR ".join(lead)
            rows = self._ranked(
                expression, running, filter_sql, filter_args, limit, bool(rest), passing
            )
        else:
            matched = {word for *_, word in stats}
            typed = [word for word in dict.fromkeys(words) if word in matched]
            rows = self._newest(stats, typed, filter_sql, filter_args, limit, passing)
        if not rest:
            return [LexicalHit(r[0], r[1]) for r in rows[:limit]]
        total = self._rows()
        weighted = [(word, idf(count, total)) for word, count in rest]
        hits = [LexicalHit(r[0], r[1] + bonus(weighted, r[2:])) for r in rows]
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]

    def lookup(
        self,
        filter_sql: str,
        filter_args: list[Any],
        asked: Sequence[Sequence[str]],
        *,
        limit: int,
        fewest: int,
    ) -> list[list[Described]]:
        """For each word list of ``asked``, the newest rows whose descriptions hold its
        two rarest words of those ``fewest`` descriptions or more hold (``words.rarest``),
        that pass the filters.

        A cheap candidate list for "does something say nearly this already":
        text sharing most of the words shares the rarest ones.
        """
        counts: dict[str, int] = {}
        found: list[list[Described]] = []
        for words in asked:
            for word in words:
                if word.strip() and word not in counts:
                    counts[word] = self.described(word)
            two = rarest(words, counts, fewest)
            if not two:
                found.append([])
                continue
            rows = self.con.execute(
                f"SELECT {DESCRIBED_COLUMNS} FROM (SELECT rowid FROM memories_fts WHERE "
                "memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?) f "
                f"JOIN memories m ON m.num = f.rowid WHERE {filter_sql} ORDER BY f.rowid DESC",
                [f"{{description}} : ({' AND '.join(map(quote, two))})", limit, *filter_args],
            ).fetchall()
            found.append([described_of(r) for r in rows])
        return found

    def _ranked(
        self,
        expression: str,
        matches: int,
        filter_sql: str,
        filter_args: list[Any],
        limit: int,
        texts: bool,
        passing: Passing | None,
    ) -> list[tuple[Any, ...]]:
        """Lead rows by BM25, best first (``matches``: at most how many rows hold the lead)."""
        columns = "m.id, -f.s" + (f", {_TEXTS}" if texts else "")
        cap = max(limit * CANDIDATES, 16)
        key = f"{_BM25} AS s"
        return self._first(
            columns, key, "s", expression, cap, filter_sql, filter_args, limit, matches, passing
        )

    def _first(
        self,
        columns: str,
        key: str,
        order: str,
        expression: str,
        cap: int,
        filter_sql: str,
        filter_args: list[Any],
        wanted: int,
        matches: int | None = None,
        passing: Passing | None = None,
    ) -> list[tuple[Any, ...]]:
        """The first ``cap`` matches by ``order`` that pass the filters.

        They are taken from the index first and filtered after, which is cheap; when
        the filters leave fewer than ``wanted`` (a small tier among many other rows),
        the first that pass are looked for through every match instead — unless no more
        than ``cap`` rows match (``matches``, when known), all of which were looked at.
        Each of those matches is read from the table to be filtered: 0.5 µs a match, 50
        ms for a word most of 100k rows hold. ``passing`` gives the rows that pass when
        the search's scopes, its tag, the records it references, its trusts, its expired
        or its long unverified hold fewer than ``NARROW`` (through their index); then a
        match is kept by its number alone (about 0.12 µs) and only those kept are read.
        Newest first, the passing rows are found from their side (``_newest_passing``).
        """
        inner = f"SELECT rowid, {key} FROM memories_fts WHERE memories_fts MATCH ?"
        outer = f"JOIN memories m ON m.num = f.rowid WHERE {filter_sql} ORDER BY f.{order}"
        rows = self.con.execute(
            f"SELECT {columns} FROM ({inner} ORDER BY {order} LIMIT ?) f {outer}",
            [expression, cap, *filter_args],
        ).fetchall()
        if len(rows) >= min(wanted, cap) or (matches is not None and matches <= cap):
            return rows
        nums = passing() if passing is not None else None
        if nums is None:
            return self.con.execute(
                f"SELECT {columns} FROM ({inner}) f {outer} LIMIT ?",
                [expression, *filter_args, cap],
            ).fetchall()
        if order == NEWEST:
            return self._newest_passing(columns, expression, sorted(nums, reverse=True), cap)
        return self.con.execute(  # (``+``: checked on each match, not a lookup for each row)
            f"SELECT {columns} FROM ({inner}) f JOIN memories m ON m.num = f.rowid "
            f"WHERE +f.rowid IN (SELECT value FROM json_each(?)) ORDER BY f.{order} LIMIT ?",
            [expression, json.dumps(list(nums)), cap],
        ).fetchall()

    def _newest_passing(
        self, columns: str, expression: str, nums: list[int], cap: int
    ) -> list[tuple[Any, ...]]:
        """The newest ``cap`` of ``nums`` (the rows passing a search's filters, newest
        first) that match ``expression``, their ``columns`` (of ``m``).

        Reading a word's rows costs about 0.1 µs a row that holds it, and testing one
        row against the expression 20–60 µs a word (each a seek in every word's list).
        So where the rows stand for no more than ``SPREAD`` rows of the store each, the
        matches are read in the ranges the rows span, newest first, the next range
        twice as many rows as the last, until ``cap`` are found (at a million memories,
        a filter of 1,000 and three words most rows hold: 15–22 ms, where testing each
        row took 37–137); rows further apart are each tested, newest first."""
        if self._rows() > SPREAD * len(nums):
            return self.con.execute(  # newest first, each tested against the expression
                f"SELECT {columns} FROM memories m "
                "WHERE m.num IN (SELECT value FROM json_each(?)) AND EXISTS (SELECT 1 "
                "FROM memories_fts WHERE memories_fts MATCH ? AND rowid = m.num) "
                "ORDER BY m.num DESC LIMIT ?",
                [json.dumps(nums), expression, cap],
            ).fetchall()
        found: list[int] = []
        start, size = 0, cap
        while start < len(nums) and len(found) < cap:
            part = nums[start : start + size]
            # its range: from its oldest row up to the range before (newer), exclusive
            below, bound = ("AND rowid < ? ", [nums[start - 1]]) if start else ("", [])
            rows = self.con.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid >= ? "
                f"{below}AND +rowid IN (SELECT value FROM json_each(?)) "
                "ORDER BY rowid DESC LIMIT ?",
                [expression, part[-1], *bound, json.dumps(part), cap - len(found)],
            )
            found += (num for (num,) in rows)
            start, size = start + size, size * 2
        return self.con.execute(
            f"SELECT {columns} FROM memories m WHERE m.num IN (SELECT value FROM json_each(?)) "
            "ORDER BY m.num DESC",
            [json.dumps(found)],
        ).fetchall()

    def _newest(
        self,
        stats: list[tuple[int, str, str]],
        typed: list[str],
        filter_sql: str,
        filter_args: list[Any],
        limit: int,
        passing: Passing | None,
    ) -> list[tuple[Any, ...]]:
        """Memories the words name (``typed``, in the query's order), then the newest
        rows holding them all (else any).

        The window is taken as ``_first`` takes ranked rows. Scored later by the bonus.
        """
        phrases = [phrase for _, phrase, _ in stats]
        joined = "-".join(w for t in typed for w in t.split())  # a phrase names with hyphens too
        names = list(dict.fromkeys([*typed, joined, *(w.lower() for w in typed), joined.lower()]))
        texts = f"m.id, {_TEXTS}"
        named = self.con.execute(  # (NAMED: a held name, which the name index holds alone)
            f"SELECT {texts} FROM memories m WHERE m.name IN ({', '.join('?' * len(names))}) "
            f"AND m.{NAMED} AND {filter_sql}",
            [*names, *filter_args],
        ).fetchall()
        rows: list[tuple[Any, ...]] = []
        for joiner in (" AND ", " OR "):
            expression = joiner.join(phrases)
            rows = self._first(
                texts, "0", NEWEST, expression, WINDOW, filter_sql, filter_args, limit,
                passing=passing,
            )  # fmt: skip
            if len(rows) >= limit or len(phrases) == 1:
                break
        first: dict[str, tuple[Any, ...]] = {}
        for row in named + rows:
            first.setdefault(row[0], row)
        # Newer rows first among equal bonuses: a tiny decreasing score keeps that order.
        return [(r[0], -i * 1e-6, *r[1:]) for i, r in enumerate(first.values())]

    def _rows(self) -> int:
        """About how many rows the index holds (the highest row number: instant)."""
        row = self.con.execute("SELECT max(num) FROM memories").fetchone()
        return int(row[0] or 0)
