"""Gated promotions against review (issue 16): the steward stages a promotion of a
quarantined record (a ticket naming it), which another curator decides; while it is
pending, a release of the record and the steward's tombstone are refused
``gate_pending``; an operator's tombstone invalidates it in the same transaction; a
review after its expiry expires it; and an approval first decides the record, so a later
review is ``not_quarantined``. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory, raw_sql, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.config import Settings
from retain.model import Memory, Status, Trust
from retain.service import MemoryService

HELD = Settings(llm_writes="quarantined")
GATED = Settings(llm_writes="quarantined", gate=(("team:*", "second_approver"),))


@pytest.fixture
def realm(make_service: ServiceFactory) -> ServiceFactory:
    operator = make_service()
    operator.add_agent("ada")
    operator.add_team("ops")
    operator.join_team("ops", "ada")
    return make_service


def held(realm: ServiceFactory, text: str = "the build needs node 20") -> Memory:
    made = realm(principal="agent:ada", settings=HELD).remember(text)
    assert made.status is Status.QUARANTINED
    return made


def steward(realm: ServiceFactory, settings: Settings = HELD) -> MemoryService:
    return realm(principal="steward", settings=settings)


def operator(realm: ServiceFactory, settings: Settings = HELD) -> MemoryService:
    return realm(principal="operator:ann", settings=settings)


def stored(service: MemoryService, memory_id: str) -> Memory:
    (memory,) = service.backend.read(lambda tx: tx.get_many([memory_id]))
    return memory


# -- staging ------------------------------------------------------------------------------


def test_the_steward_stages_a_promotion_of_a_quarantined_record(realm: ServiceFactory) -> None:
    origin = held(realm)
    staged = steward(realm).propose("Node 20 for the build", target="team:ops", record=origin.id)
    assert (staged.source, staged.action, staged.record, staged.status) == (
        "steward", "promote", origin.id, "open",
    )  # fmt: skip
    assert staged.body == origin.body and staged.trust is Trust.OBSERVED
    assert stored(operator(realm), origin.id).status is Status.QUARANTINED  # still held


def test_the_steward_promotes_only_what_waits_for_review(realm: ServiceFactory) -> None:
    keeper = steward(realm)
    plain = keeper.propose("Tabs, not spaces", target="team:ops")  # a curator's proposal
    assert (plain.action, plain.source, plain.trust) == ("add", "steward", Trust.ATTESTED)
    active = realm().write("g", description="a global note").memory
    for record in (active.id, "no-such-record"):
        with pytest.raises(errors.NotFound) as missing:
            keeper.propose("promote it", record=record)
        assert missing.value.details["fix"] == "quarantine"
    with pytest.raises(errors.InvalidValue):
        keeper.propose("promote it", target="agent:ada", record=held(realm).id)


def test_an_agent_still_names_no_held_record(realm: ServiceFactory) -> None:
    origin = held(realm)
    with pytest.raises(errors.NotFound):
        realm(principal="agent:ada", settings=HELD).propose("promote it", record=origin.id)


# -- the review meets the promotion -------------------------------------------------------


@pytest.mark.parametrize("settings", [HELD, GATED], ids=["open", "at_the_gate"])
def test_a_release_waits_on_a_pending_promotion(realm: ServiceFactory, settings: Settings) -> None:
    """Open, or with a first approval recorded at the gate, the promotion blocks a
    release (``gate_pending`` with the ticket and its expiry) and nothing is written."""
    origin = held(realm)
    staged = steward(realm, settings).propose("Node 20", target="team:ops", record=origin.id)
    ann = operator(realm, settings)
    if settings is GATED:
        with pytest.raises(errors.GatePending):
            ann.approve(staged.id)  # the first approval, recorded
        assert ann.get_ticket(staged.id).status == "pending_gate"
    before = store_state(ann)
    with pytest.raises(errors.GatePending) as caught:
        ann.review(origin.id, "release", origin.content_hash)
    details = caught.value.details
    assert (details["ticket"], details["fix"]) == (staged.id, "ticket")
    assert details["expires_at"] == ann.get_ticket(staged.id).to_dict()["expires_at"]
    assert store_state(ann) == before


def test_the_stewards_tombstone_waits_and_an_operators_invalidates(
    realm: ServiceFactory,
) -> None:
    origin = held(realm)
    keeper = steward(realm)
    staged = keeper.propose("Node 20", target="team:ops", record=origin.id)
    with pytest.raises(errors.GatePending):
        keeper.review(origin.id, "tombstone", origin.content_hash)
    ann = operator(realm)
    result = ann.review(origin.id, "tombstone", origin.content_hash, rationale="not so")
    assert result.outcome == "tombstoned"
    assert result.decision.review["invalidated_promotions"] == [staged.id]
    assert result.decision.review["expired_promotions"] == []
    closed = ann.get_ticket(staged.id)
    assert (closed.status, closed.decided_by) == ("invalidated", "operator:ann")
    with pytest.raises(errors.TicketClosed) as late:
        realm(principal="operator:bob", settings=HELD).approve(staged.id)
    assert late.value.details["status"] == "invalidated"
    assert [m for m in ann.list_memories() if m.scope == "team:ops"] == []
    kinds = [e.kind for e in ann.events(limit=1000)]
    assert kinds[-2:] == ["ticket_invalidate", "review"]  # one transaction, in order


def test_a_review_after_the_expiry_expires_the_promotion_itself(
    realm: ServiceFactory, clock: ManualClock
) -> None:
    origin = held(realm)
    staged = steward(realm).propose("Node 20", target="team:ops", record=origin.id)
    clock.advance(days=7, seconds=1)
    ann = operator(realm)
    result = ann.review(origin.id, "release", origin.content_hash)
    assert result.outcome == "released"
    assert result.decision.review["expired_promotions"] == [staged.id]
    assert ann.get_ticket(staged.id).status == "expired"
    replay = ann.review(origin.id, "release", origin.content_hash)
    assert replay.outcome == "already_released"
    assert replay.decision.review["expired_promotions"] == [staged.id]


# -- the approval decides first -----------------------------------------------------------


def test_an_approval_first_decides_the_record_and_the_review_is_refused(
    realm: ServiceFactory,
) -> None:
    origin = held(realm)
    staged = steward(realm).propose("Node 20", target="team:ops", record=origin.id)
    ann = operator(realm)
    approved = ann.approve(staged.id, reason="read it")
    assert approved.status == "approved"
    landed = stored(ann, approved.landed or "")
    assert (landed.scope, landed.status, landed.trust) == (
        "team:ops",
        Status.ACTIVE,
        Trust.OBSERVED,
    )
    assert landed.ever_quarantined and landed.author == "agent:ada"
    assert landed.body == origin.body and landed.metadata["promoted_from"] == origin.id
    assert stored(ann, origin.id).status is Status.DISCARDED
    (promote,) = [e for e in ann.events(limit=1000) if e.kind == "promote"]
    assert promote.memory_id == origin.id
    for verdict in ("tombstone", "release"):
        with pytest.raises(errors.NotQuarantined):
            ann.review(origin.id, verdict, origin.content_hash)
    with pytest.raises(errors.TrustCapped):
        ann.retier(landed.id, "attested", reason="checked")
    ada = realm(principal="agent:ada", settings=HELD)
    assert [h.memory.id for h in ada.recall(["build node"]).hits] == [landed.id]  # in ops


def test_a_promotion_of_a_record_no_longer_held_lands_nothing(realm: ServiceFactory) -> None:
    origin = held(realm)
    staged = steward(realm).propose("Node 20", target="team:ops", record=origin.id)
    ann = operator(realm)
    raw_sql(ann, "UPDATE memories SET status = 'forgotten' WHERE id = ?", (origin.id,))
    before = store_state(ann)
    with pytest.raises(errors.StaleUpdate) as caught:
        ann.approve(staged.id)
    assert caught.value.details == {"ticket": staged.id, "target": origin.id}
    assert store_state(ann) == before
    assert ann.reject(staged.id, reason="gone").status == "rejected"


def test_the_steward_does_not_decide_its_own_promotion(realm: ServiceFactory) -> None:
    origin = held(realm)
    keeper = steward(realm)
    staged = keeper.propose("Node 20", target="team:ops", record=origin.id)
    with pytest.raises(errors.AccessDenied):
        keeper.approve(staged.id)
