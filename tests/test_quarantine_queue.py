"""The quarantine queue's pages (``list_quarantine``), on every backend: under access
grants a page is cut from the records the reviewer may review, read past the store's
pages of rows it may not, and its ``next_cursor`` is set exactly when more follow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.conftest import ServiceFactory

from retain.chrono import ManualClock
from retain.config import AccessSettings, Settings
from retain.grants import Grant
from retain.model import Memory
from retain.results import QueuePage
from retain.service import MemoryService, review
from retain.storage.statements import SqlStatements

SETUP = "operator:set-up"
ANN = "operator:ann"  # an operator granted review of agent:ada's memory alone
AGENTS = ("ada", "bea", "cy")
ROUNDS = 6  # each agent writes this many, the agents in turn: ada, bea, cy, ada, ...


def restricted(*extra: Grant) -> Settings:
    """Access control on: the set-up operator administers the realm, ann may review
    agent:ada's records (and no other)."""
    made = (
        Grant(SETUP, "realm.admin", "realm:default"),
        Grant(ANN, "memory.quarantine.review", "identity:agent:ada"),
        *extra,
    )
    grants = tuple(
        Grant(g.subject, g.action, g.on, g.effect, id=f"config:{n}")
        for n, g in enumerate(made, start=1)
    )
    return Settings(access=AccessSettings(control=True, grants=grants))


@pytest.fixture
def queue(make_service: ServiceFactory, clock: ManualClock) -> dict[str, list[str]]:
    """The queue of three agents' held writes, interleaved (access control off while it
    is written): each agent's record ids, oldest first."""
    setup = make_service(principal=SETUP)
    held = Settings(llm_writes="quarantined")
    written: dict[str, list[str]] = {agent: [] for agent in AGENTS}
    for agent in AGENTS:
        setup.add_agent(agent)
    for n in range(ROUNDS):
        for agent in AGENTS:
            writer = make_service(principal=f"agent:{agent}", settings=held)
            written[agent].append(writer.remember(f"{agent} noted thing {n}").id)
            clock.advance(seconds=1)
    return written


@pytest.fixture
def store_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Store reads of the queue three rows at a time at most (for a page of two), each
    read's row count kept."""
    monkeypatch.setattr(review, "_QUEUE_READ", 2)
    counts: list[int] = []
    original: Callable[..., list[Memory]] = SqlStatements.quarantined

    def counted(self: Any, realm: str, after: str | None, limit: int) -> list[Memory]:
        rows = original(self, realm, after, limit)
        counts.append(len(rows))
        return rows

    monkeypatch.setattr(SqlStatements, "quarantined", counted)
    return counts


def pages(reviewer: MemoryService, limit: int) -> list[QueuePage]:
    """Every page of the queue, each from the cursor of the one before."""
    walked = [reviewer.list_quarantine(limit=limit)]
    while walked[-1].next_cursor is not None:
        assert walked[-1].next_cursor == walked[-1][-1].id  # the cursor is its last record
        walked.append(reviewer.list_quarantine(limit=limit, after=walked[-1].next_cursor))
    return walked


@pytest.mark.parametrize("limit", [2, 4, 6, 7])
def test_a_restricted_reviewers_pages_are_full_and_whole(
    queue: dict[str, list[str]],
    make_service: ServiceFactory,
    store_reads: list[int],
    limit: int,
) -> None:
    ann = make_service(principal=ANN, settings=restricted())
    walked = pages(ann, limit)
    # every page but the last is full, and the last holds what is left (none is empty)
    sizes = [len(p) for p in walked]
    left = ROUNDS % limit or min(limit, ROUNDS)
    assert sizes == [limit] * (len(walked) - 1) + [left]
    # ada's records, each once, oldest first: no other agent's, none missing
    assert [m.id for p in walked for m in p] == queue["ada"]
    assert len(store_reads) > len(walked)  # the pages were read past rows ann may not review


def test_the_last_full_page_gives_no_cursor(
    queue: dict[str, list[str]], make_service: ServiceFactory, store_reads: list[int]
) -> None:
    ann = make_service(principal=ANN, settings=restricted())
    (first, second, third) = pages(ann, 2)
    assert [first.next_cursor, second.next_cursor, third.next_cursor] == [
        queue["ada"][1],
        queue["ada"][3],
        None,  # more rows follow ada's last, but none ann may review
    ]
    after_last = ann.list_quarantine(limit=2, after=queue["ada"][-1])
    assert after_last == [] and after_last.next_cursor is None


def test_an_unrestricted_reviewer_pages_the_whole_queue(
    queue: dict[str, list[str]], make_service: ServiceFactory, store_reads: list[int]
) -> None:
    everyone = [queue[agent][n] for n in range(ROUNDS) for agent in AGENTS]
    for principal in (SETUP, "steward"):
        store_reads.clear()
        walked = pages(make_service(principal=principal), 5)
        assert [len(p) for p in walked] == [5, 5, 5, 3]
        assert [m.id for p in walked for m in p] == everyone
        assert store_reads == [6, 6, 6, 3]  # a page and one more, in one read a page
    exact = pages(make_service(), len(everyone))
    assert len(exact) == 1 and exact[0].next_cursor is None


def test_a_grant_of_two_identities_interleaves_them(
    queue: dict[str, list[str]], make_service: ServiceFactory, store_reads: list[int]
) -> None:
    also_cy = Grant(ANN, "memory.quarantine.review", "identity:agent:cy")
    ann = make_service(principal=ANN, settings=restricted(also_cy))
    walked = pages(ann, 4)
    assert [len(p) for p in walked] == [4, 4, 4]
    assert [m.id for p in walked for m in p] == [
        queue[agent][n] for n in range(ROUNDS) for agent in ("ada", "cy")
    ]
    denied_cy = Grant(ANN, "memory.quarantine.review", "identity:agent:cy", "deny")
    ann = make_service(principal=ANN, settings=restricted(also_cy, denied_cy))
    assert [m.id for p in pages(ann, 4) for m in p] == queue["ada"]  # a deny beats an allow
