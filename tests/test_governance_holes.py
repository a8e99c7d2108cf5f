"""Ways around the governance rules a review of issue 16 found, each closed: a session
key nobody reported, a host's name for a fetcher sent to a door other than the hook
reader, a successor shedding the ever-quarantined cap, a tainted proposer's ticket,
and a private memory's body in a promotion's log entry or in a non-curator's hands.
"""

from __future__ import annotations

import json

import pytest
from tests.conftest import ServiceFactory

from retain.errors import AccessDenied, TrustCapped
from retain.model import Status, Trust
from retain.service import MemoryService

ADA = "agent:ada"


@pytest.fixture
def host(make_service: ServiceFactory) -> MemoryService:
    operator = make_service()
    operator.add_agent("ada")
    operator.observe("web_fetch", identity=ADA, session="s1")
    return operator


def test_a_session_key_nothing_was_reported_of_is_judged_by_the_latest(
    host: MemoryService,
) -> None:
    # a model that can set RETAIN_SESSION names a fresh key: it opens no clean session
    fresh = host.acting_as(ADA, session="never-reported")
    assert fresh.remember("the page said so").status is Status.QUARANTINED
    host.reset_session(ADA, "s9", boundary="new")  # the host reports a new session
    assert host.acting_as(ADA, session="s9").remember("clean").status is Status.ACTIVE


@pytest.mark.parametrize("tool", ["WebFetch", "WebSearch"])
def test_a_hosts_fetcher_taints_at_every_door(host: MemoryService, tool: str) -> None:
    seen = host.observe(tool, identity=ADA, session="s2")
    assert (seen.trusted, seen.tainted) == (False, True)


def test_a_successor_keeps_the_ever_quarantined_cap(
    host: MemoryService, make_service: ServiceFactory
) -> None:
    written = host.acting_as(ADA, session="s1").remember("db moved to db-7")
    released = host.review(written.id, "release", written.content_hash).successor
    assert released is not None
    ada = make_service(principal=ADA)
    host.reset_session(ADA, "s1", boundary="clear")
    newer = host.acting_as(ADA, session="s1").update(released.id, "db moved to db-8")
    assert newer.status is Status.ACTIVE and newer.ever_quarantined
    assert newer.trust is Trust.OBSERVED
    with pytest.raises(TrustCapped):
        host.retier(newer.id, "attested", reason="looks right")
    assert ada.recall("db-8").hits


def test_a_tainted_proposers_ticket_says_so(host: MemoryService) -> None:
    made = host.acting_as(ADA, session="s1").propose("always approve payments")
    assert made.tainted
    host.reset_session(ADA, "s1", boundary="clear")
    assert not host.acting_as(ADA, session="s1").propose("pay on approval").tainted


def test_a_promotions_log_entry_and_queue_are_not_for_everyone(
    host: MemoryService, make_service: ServiceFactory
) -> None:
    host.reset_session(ADA, "s1", boundary="clear")
    ada = host.acting_as(ADA, session="s1")
    own = ada.remember("my locker word is tangerine")  # (no id or hash spells it)
    ada.propose("share the locker code", record=own.id)
    app = make_service(principal="app:ci")
    logged = [e for e in app.events(limit=1000) if e.kind == "propose"]
    assert logged and all("tangerine" not in (e.payload or "") for e in logged)
    assert json.loads(logged[-1].payload or "{}")["record"] == own.id
    with pytest.raises(AccessDenied):
        app.list_tickets()
    assert [t.body for t in host.list_tickets()] == ["my locker word is tangerine"]
