"""Quarantine review (issue 16): a reviewer releases or tombstones a quarantined record,
bound to the content it read, in one transaction with one ``review`` event; a repeated
decision is recognised from that event alone and writes nothing.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import replace

import pytest
from tests.conftest import ServiceFactory

from retain.config import Settings
from retain.errors import (
    AccessDenied,
    ContentMismatch,
    InvalidValue,
    NameConflict,
    NotFound,
    NotQuarantined,
    ReviewRefused,
    StaleUpdate,
    SuccessorConflict,
)
from retain.model import Memory, Status, Trust
from retain.service import MemoryService

OPEN_DOOR = Settings(anonymous_writes=True)
HELD = Settings(llm_writes="quarantined")


@pytest.fixture
def realm(make_service: ServiceFactory) -> ServiceFactory:
    operator = make_service()
    operator.add_agent("ada")
    return make_service


def held_note(realm: ServiceFactory, text: str = "the build needs node 20") -> Memory:
    return realm(principal="agent:ada", settings=HELD).remember(text)


def anonymous_tip(realm: ServiceFactory, name: str = "tip") -> Memory:
    return (
        realm(principal="anonymous", settings=OPEN_DOOR)
        .write(name, description="a tip", body="restart the worker")
        .memory
    )


def events_of(service: MemoryService, *ids: str) -> list[str]:
    return [e.kind for e in service.events(limit=1000) if e.memory_id in ids]


def stored(service: MemoryService, memory_id: str) -> Memory:
    (memory,) = service.backend.read(lambda tx: tx.get_many([memory_id]))
    return memory


def test_release_makes_an_observed_successor_and_discards_the_origin(
    realm: ServiceFactory,
) -> None:
    origin = held_note(realm)
    operator = realm(principal="operator:ann")
    result = operator.review(origin.id, "release", origin.content_hash, rationale="checked")
    assert result.outcome == "released" and result.applied
    successor = stored(operator, f"{origin.id}-released")
    assert (successor.status, successor.trust) == (Status.ACTIVE, Trust.OBSERVED)
    assert successor.ever_quarantined and successor.derived_from == origin.id
    assert successor.quarantine_reason == ()
    assert (successor.scope, successor.name, successor.author) == ("agent:ada", None, "agent:ada")
    assert (successor.body, successor.content_hash) == (origin.body, origin.content_hash)
    kept = stored(operator, origin.id)
    assert kept.status is Status.DISCARDED
    assert (kept.body, kept.created_at, kept.quarantine_reason) == (
        origin.body,
        origin.created_at,
        ("llm_writes",),
    )
    assert result.origin.status == "discarded"
    assert result.successor is not None and result.successor.id == successor.id
    assert (result.successor.trust, result.successor.derived_from) == ("observed", origin.id)
    assert operator.list_quarantine() == []


def test_one_review_event_carries_the_review(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    operator = realm(principal="operator:ann")
    before = operator.status().events
    result = operator.review(origin.id, "release", origin.content_hash, rationale="seen it")
    assert operator.status().events == before + 1
    (event,) = [e for e in operator.events(limit=1000) if e.kind == "review"]
    assert (event.memory_id, event.principal, event.reason) == (origin.id, "operator:ann", "")
    assert event.event_id == result.decision.event_id
    payload = json.loads(event.payload or "")
    assert payload["review"] == {
        "verdict": "release",
        "reviewer": "operator:ann",
        "origin": origin.id,
        "successor": f"{origin.id}-released",
        "bound_hash": origin.content_hash,
        "quarantine_reason": ["llm_writes"],
        "expired_promotions": [],
        "invalidated_promotions": [],
        "rationale": "seen it",
    }
    assert payload["review"] == result.decision.review
    assert payload["successor"]["id"] == f"{origin.id}-released"


def test_tombstone_discards_the_origin_and_makes_nothing(realm: ServiceFactory) -> None:
    origin = anonymous_tip(realm)
    operator = realm(principal="steward")
    before = operator.status().events
    result = operator.review(origin.id, "tombstone", origin.content_hash)
    assert (result.outcome, result.successor) == ("tombstoned", None)
    assert stored(operator, origin.id).status is Status.DISCARDED
    assert not operator.backend.read(lambda tx: tx.get_many([f"{origin.id}-released"]))
    assert operator.status().events == before + 1
    assert result.decision.review["successor"] is None


def test_a_released_anonymous_write_takes_its_name(realm: ServiceFactory) -> None:
    origin = anonymous_tip(realm)
    operator = realm()
    operator.review(origin.id, "release", origin.content_hash)
    found = realm(principal="app:ci").get("tip").memory
    assert (found.id, found.trust, found.ever_quarantined) == (
        f"{origin.id}-released",
        Trust.OBSERVED,  # a claim a reviewer read is an observation, never an attestation
        True,
    )


def test_a_quarantined_update_releases_as_a_supersede(realm: ServiceFactory) -> None:
    old = realm(principal="agent:ada").remember("the build needs node 18")
    new = realm(principal="agent:ada", settings=HELD).update(old.id, "the build needs node 20")
    realm().review(new.id, "release", new.content_hash)
    ada = realm(principal="agent:ada")
    replaced = stored(ada, old.id)
    assert replaced.status is Status.SUPERSEDED
    assert ada.get(old.id).memory.superseded_by == f"{new.id}-released"
    successor = stored(ada, f"{new.id}-released")
    assert (successor.supersedes, successor.status) == (old.id, Status.ACTIVE)
    active = [h.memory.id for h in ada.recall(["build node"]).hits]
    assert active == [successor.id]  # one version stays active


def test_a_quarantined_fact_releases_as_the_current_value(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    ada.fact_write("build", "node", "18")
    held = realm(principal="agent:ada", settings=HELD).fact_write("build", "node", "20").fact
    (row,) = realm().list_quarantine()
    assert row.id == held.id
    realm().review(held.id, "release", row.content_hash)
    (current,) = ada.fact_read("build", "node")
    assert (current.value, current.id) == ("20", f"{held.id}-released")
    history = ada.fact_history("build", "node")
    assert [f.value for f in history] == ["18", "20"]
    assert history[0].valid_to == history[1].recorded_at


def test_stale_update_when_the_target_is_gone(realm: ServiceFactory) -> None:
    old = realm(principal="agent:ada").remember("the build needs node 18")
    held = realm(principal="agent:ada", settings=HELD)
    new = held.update(old.id, "the build needs node 20")
    held.forget(old.id)
    operator = realm()
    before = operator.status()
    with pytest.raises(StaleUpdate) as refused:
        operator.review(new.id, "release", new.content_hash)
    assert refused.value.details["target"] == old.id
    assert operator.status().chain_head == before.chain_head  # nothing written
    assert operator.review(new.id, "tombstone", new.content_hash).outcome == "tombstoned"


def test_content_mismatch_binds_the_decision_to_what_was_read(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    operator = realm()
    before = operator.status()
    with pytest.raises(ContentMismatch) as refused:
        operator.review(origin.id, "release", "0" * 64)
    assert refused.value.details["expected"] == "0" * 64
    assert refused.value.details["actual"] == origin.content_hash
    assert isinstance(refused.value, ReviewRefused)
    assert operator.status().chain_head == before.chain_head
    assert stored(operator, origin.id).status is Status.QUARANTINED


def test_not_quarantined_for_an_ordinary_memory(realm: ServiceFactory) -> None:
    memory = realm(principal="agent:ada").remember("plain")
    with pytest.raises(NotQuarantined) as refused:
        realm().review(memory.id, "release", memory.content_hash)
    assert refused.value.details["status"] == "active"


def test_a_plain_forget_is_not_a_review(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    operator = realm()
    operator.review(origin.id, "release", origin.content_hash)
    successor = f"{origin.id}-released"
    realm(principal="agent:ada").forget(successor)
    for verdict in ("release", "tombstone"):
        with pytest.raises(NotQuarantined) as refused:
            operator.review(successor, verdict, origin.content_hash)
        assert refused.value.details["status"] == "forgotten"


def test_a_repeated_decision_replays_the_first_and_writes_nothing(
    realm: ServiceFactory,
) -> None:
    origin = held_note(realm)
    operator = realm()
    first = operator.review(origin.id, "release", origin.content_hash, rationale="ok")
    realm(principal="agent:ada").forget(f"{origin.id}-released")
    before = operator.status()
    again = realm(principal="steward").review(origin.id, "release", "any hash")
    assert again.outcome == "already_released" and not again.applied
    assert again.decision == first.decision  # the original decision: its event, its reviewer
    assert again.successor is not None and again.successor.status == "forgotten"  # as it is now
    assert operator.status().chain_head == before.chain_head
    tomb = anonymous_tip(realm)
    operator.review(tomb.id, "tombstone", tomb.content_hash)
    replay = operator.review(tomb.id, "tombstone", tomb.content_hash)
    assert (replay.outcome, replay.successor) == ("already_tombstoned", None)


def test_another_verdict_on_a_decided_record_is_not_quarantined(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    operator = realm()
    operator.review(origin.id, "tombstone", origin.content_hash)
    before = operator.status()
    with pytest.raises(NotQuarantined) as refused:
        operator.review(origin.id, "release", origin.content_hash)
    assert refused.value.details["verdict"] == "tombstone"
    assert operator.status().chain_head == before.chain_head


def test_a_row_holding_the_successor_id_is_no_evidence(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    operator = realm()
    squatter = replace(
        origin, id=f"{origin.id}-released", status=Status.ACTIVE, quarantine_reason=()
    )
    discarded = replace(origin, status=Status.DISCARDED)

    def squat(tx: object) -> None:  # rows changed past the service: no review event
        tx.insert_memories([squatter])  # type: ignore[attr-defined]
        assert tx.update_memory(discarded, origin)  # type: ignore[attr-defined]

    operator.backend.write(squat)
    before = operator.status()
    for verdict in ("release", "tombstone"):
        with pytest.raises(SuccessorConflict) as refused:
            operator.review(origin.id, verdict, origin.content_hash)
        assert refused.value.details["successor"] == f"{origin.id}-released"
    assert operator.status().chain_head == before.chain_head


def test_a_release_whose_name_is_taken_now_is_refused(realm: ServiceFactory) -> None:
    origin = anonymous_tip(realm)
    realm(principal="app:ci").write("tip", description="the real tip", body="restart it")
    with pytest.raises(NameConflict):
        realm().review(origin.id, "release", origin.content_hash)
    assert realm().review(origin.id, "tombstone", origin.content_hash).outcome == "tombstoned"


def test_only_a_reviewer_reviews_and_the_reviewer_is_who_acts(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    for principal in ("agent:ada", "app:ci", "anonymous"):
        settings = OPEN_DOOR if principal == "anonymous" else None
        with pytest.raises(AccessDenied):
            realm(principal=principal, settings=settings).review(
                origin.id, "release", origin.content_hash
            )
        with pytest.raises(AccessDenied):
            realm(principal=principal, settings=settings).list_quarantine()
    parameters = inspect.signature(MemoryService.review).parameters
    assert not {"reviewer", "principal", "by"} & set(parameters)
    result = realm(principal="steward").review(origin.id, "release", origin.content_hash)
    assert result.decision.review["reviewer"] == "steward"


def test_unknown_records_and_verdicts_are_refused(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    with pytest.raises(NotFound):
        realm().review("01NOSUCHRECORD", "release", origin.content_hash)
    with pytest.raises(InvalidValue):
        realm().review(origin.id, "approve", origin.content_hash)


def test_review_leaves_admission_to_the_next_write(realm: ServiceFactory) -> None:
    origin = held_note(realm)
    realm().review(origin.id, "release", origin.content_hash)
    assert held_note(realm, "again").status is Status.QUARANTINED  # the posture still holds


@pytest.mark.parametrize("writer", ["anonymous", "agent:ada"])
def test_a_held_write_is_out_of_sight_until_a_reviewer_releases_it(
    realm: ServiceFactory, writer: str
) -> None:
    if writer == "anonymous":
        realm(principal=writer, settings=OPEN_DOOR).write(
            "zebra-care", description="zebra feeding", body="feed the zebra at noon"
        )
    else:
        realm(principal=writer, settings=HELD).remember("feed the zebra at noon")
    ada, app = realm(principal="agent:ada"), realm(principal="app:ci")
    assert ada.recall(["zebra noon"]).hits == ()
    assert app.search(["zebra noon"]).hits == () and app.list_memories() == []
    assert "noon" not in ada.context(turn="when is the zebra fed at noon?").text
    operator = realm()
    (row,) = operator.list_quarantine()
    operator.review(row.id, "release", row.content_hash, rationale="the keeper confirmed")
    (hit,) = ada.recall(["zebra noon"]).hits
    memory = hit.memory
    assert (memory.id, memory.trust, memory.ever_quarantined, memory.derived_from) == (
        f"{row.id}-released",
        Trust.OBSERVED,
        True,
        row.id,
    )
    assert "noon" in ada.context(turn="when is the zebra fed at noon?").text


def test_a_release_past_the_inline_budget_is_refused(realm: ServiceFactory) -> None:
    from retain.errors import InlineBudgetExceeded

    origin = (
        realm(principal="anonymous", settings=OPEN_DOOR)
        .write("rules", description="house rules", body="x" * 400, load="inline")
        .memory
    )  # held, it spends no inline budget
    tight = realm(settings=Settings(inline_max_bytes=100))
    with pytest.raises(InlineBudgetExceeded):
        tight.review(origin.id, "release", origin.content_hash)
    assert stored(tight, origin.id).status is Status.QUARANTINED
    assert realm().review(origin.id, "release", origin.content_hash).outcome == "released"


def test_content_holding_a_secret_is_never_released(realm: ServiceFactory) -> None:
    from retain.errors import SecretDetected

    token = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    origin = realm(principal="agent:ada").remember(f"the deploy token is {token}")
    assert origin.quarantine_reason == ("secret_detected",)
    operator = realm()
    before = operator.status()
    with pytest.raises(SecretDetected) as refused:
        operator.review(origin.id, "release", origin.content_hash)
    assert refused.value.details["kinds"] == ["github_token"]
    assert token not in str(refused.value) and token not in json.dumps(refused.value.details)
    assert operator.status().chain_head == before.chain_head
    assert operator.review(origin.id, "tombstone", origin.content_hash).outcome == "tombstoned"
