"""What the robustness properties feed retain, and how they judge its answer.

Every value a user could type or store: any Unicode (NUL, lone surrogates, bidi
controls, joiners, line and paragraph separators, terminal escapes, markup), values of
megabytes, lists nested deep, dates and durations well and badly formed, odd names.
``attempt`` runs one call: it answers or raises a ``RetainError``, and a refusal leaves
the store as it was.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from hypothesis import strategies as st

from retain.errors import RetainError
from retain.service import MemoryService
from retain.storage.postgres import PostgresBackend

T = TypeVar("T")

SPECIALS = [
    "\x00", "\ud800", "\udfff", "\ud83d", "\u202e", "\u202d", "\u2066", "\u200f", "\u200d",
    "\u200b", "\u2028", "\u2029", "\x85", "\r\n", "\r", "\t", "\x0b", "\x0c", "\x1b[2J",
    "\x1b]0;title\x07", "\x7f", "\ufeff", "\ufffe", "\uffff", "e\u0301", "👩\u200d👩\u200d👧",
    "[/]", "[bold]x[/bold]", "%s", "{0}", "'; DROP TABLE memories; --", "\\", "'", '"',
    "*", "?", ":*", "&", "|", "!", "(", ")", "NEAR", "AND", "OR", "NOT", "東京", "مرحبا",
    "\U0010ffff", "\U0001f600", " ", "  ", "---", "..", "/", "a" * 300,
]  # fmt: skip

# Any code point, surrogates and controls included.
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
texts = st.one_of(
    st.text(max_size=40),
    st.text(any_char, max_size=40),
    st.lists(st.one_of(st.sampled_from(SPECIALS), st.text(max_size=6)), max_size=6).map("".join),
)
good_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)
names = st.one_of(good_names, texts, st.sampled_from(["", ".", "-a", "a" * 129, "a b", "ä"]))
DATES = [
    "0001-01-01", "0001-01-01T00:00:00Z", "9999-12-31", "9999-12-31T23:59:59Z", "0000-01-01",
    "10000-01-01", "2026-02-30", "2026-13-01", "2026-00-10", "2026-03-01T25:00",
    "2026-03-01T12:00+25:00", "2026-03-01T12:00:00.123456789Z", "now", "today", "yesterday",
    "1d", "0d", "-1d", "7", "1e9d", "999999999999d", "P1Y", "1y", "1h", "1 d", "d", "",
    "2026-03-01", "2026-03-01T12:00:00Z", "2026-03-01T12:00:00+01:00",
]  # fmt: skip
moments = st.one_of(
    st.sampled_from(DATES),
    texts,
    st.datetimes().map(lambda d: d.isoformat()),
    st.integers(-(10**6), 10**6).map(lambda n: f"{n}d"),
)
priorities = st.one_of(st.integers(-3, 12), st.integers(-(2**70), 2**70))
loads = st.one_of(st.sampled_from(["inline", "index", "search"]), texts)
string_lists = st.lists(texts, max_size=5)
# Lists nested deep: not a list of strings, so to be refused.
deep_lists = st.recursive(st.text(max_size=3), lambda inner: st.lists(inner, max_size=3))


def fresh(service: MemoryService, principal: str = "operator:test") -> MemoryService:
    """A service over ``service``'s store in a realm no other example uses."""
    return MemoryService(
        service.backend,
        settings=service.settings,
        clock=service.clock,
        realm=f"r{uuid.uuid4().hex[:16]}",
        principal=principal,
    )


def agent_of(operator: MemoryService, name: str = "coder") -> MemoryService:
    """A registered agent of ``operator``'s realm, acting."""
    operator.add_agent(name)
    return MemoryService(
        operator.backend,
        settings=operator.settings,
        clock=operator.clock,
        realm=operator.realm,
        principal=f"agent:{name}",
    )


SNAPSHOT = (
    "SELECT count(*), max(seq) FROM events",
    "SELECT id, scope, name, description, body, tags, refs, priority, load, status, "
    "content_hash, updated_at, expires_at, valid_from, subject, thread, read_count "
    "FROM memories WHERE realm = ? ORDER BY id",
    "SELECT name FROM projects WHERE realm = ? ORDER BY name",
    "SELECT name FROM agents WHERE realm = ? ORDER BY name",
    "SELECT name FROM teams WHERE realm = ? ORDER BY name",
    "SELECT id, status FROM proposals WHERE realm = ? ORDER BY id",
)


def snapshot(service: MemoryService) -> tuple[object, ...]:
    """What a refused call must leave as it was: the log's length and head, and every
    row of the realm's memories, projects, agents, teams and proposals (read past
    retain, on a connection of its own)."""
    backend = service.backend
    params = [() if "?" not in q else (service.realm,) for q in SNAPSHOT]
    if isinstance(backend, PostgresBackend):
        with psycopg.connect(backend.conninfo, autocommit=True) as con:
            con.execute(f"SET search_path TO {backend.schema}")
            return tuple(
                con.execute(q.replace("?", "%s"), p).fetchall()  # type: ignore[arg-type]
                for q, p in zip(SNAPSHOT, params, strict=True)
            )
    con = sqlite3.connect(backend.location, isolation_level=None)
    try:
        return tuple(con.execute(q, p).fetchall() for q, p in zip(SNAPSHOT, params, strict=True))
    finally:
        con.close()


def attempt(service: MemoryService, call: Callable[[], T]) -> T | RetainError:
    """``call``'s answer, or the ``RetainError`` it raised having changed nothing. Any
    other exception propagates: it is the defect the property is looking for."""
    before = snapshot(service)
    try:
        return call()
    except RetainError as exc:
        after = snapshot(service)
        assert after == before, f"refused with {exc.code} but the store changed"
        assert exc.code and exc.message, exc
        return exc


def refused(result: Any) -> bool:
    return isinstance(result, RetainError)
