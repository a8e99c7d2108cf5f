"""A fact's provenance (issue 17): ``claimed`` when an unauthenticated writer said so
(held for review), ``attested`` when an authenticated principal wrote it or a reviewer
confirmed it, ``verified`` when its value equals evidence the store checked. ``confirm``
lifts a claimed fact to attested; ``supersedes`` on a write names the version it
replaces. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory

from retain import errors
from retain.config import Settings
from retain.model import Status, Trust
from retain.service import MemoryService

OPEN_DOOR = Settings(anonymous_writes=True)


@pytest.fixture
def realm(make_service: ServiceFactory) -> ServiceFactory:
    make_service(settings=OPEN_DOOR).add_agent("ada")
    return make_service


def operator(realm: ServiceFactory) -> MemoryService:
    return realm(settings=OPEN_DOOR)


def claimed(realm: ServiceFactory, value: str = "acme") -> str:
    written = realm(principal="anonymous", settings=OPEN_DOOR).fact_write("bob", "employer", value)
    assert written.fact.status is Status.QUARANTINED and written.fact.provenance == "claimed"
    return written.fact.id


def test_each_writer_gives_its_provenance(realm: ServiceFactory) -> None:
    op = operator(realm)
    assert op.fact_write("bob", "city", "Lyon").fact.provenance == "attested"
    agent = realm(principal="agent:ada", settings=OPEN_DOOR)
    mine = agent.fact_write("bob", "mood", "calm").fact
    assert (mine.provenance, mine.trust) == ("attested", Trust.OBSERVED)
    source = op.fact_write("acme", "ceo", "Ann").fact
    checked = op.fact_write("bob", "boss", "Ann", evidence={"ref": source.id}).fact
    assert (checked.provenance, checked.trust) == ("verified", Trust.VERIFIED)
    with pytest.raises(errors.EvidenceMismatch):
        op.fact_write("bob", "boss", "Bea", evidence={"ref": source.id})
    claimed(realm)
    history = op.fact_history("bob", "boss")
    assert [f.provenance for f in history] == ["verified"]


def test_confirm_lifts_a_claimed_fact_to_attested_and_current(realm: ServiceFactory) -> None:
    op = operator(realm)
    op.fact_write("bob", "employer", "initech")
    held = claimed(realm, "acme")
    assert [f.value for f in op.fact_read("bob", "employer")] == ["initech"]
    change = op.fact_confirm(held, reason="checked with bob")
    assert (change.fact.value, change.fact.provenance, change.fact.status) == (
        "acme", "attested", Status.ACTIVE,
    )  # fmt: skip
    assert change.fact.trust is Trust.OBSERVED  # once held for review: capped for good
    assert change.other is not None and change.other.value == "initech"
    assert [f.value for f in op.fact_read("bob", "employer")] == ["acme"]
    kinds = [e.kind for e in op.events(memory_id=held)]
    assert kinds == ["quarantine", "confirm"]


def test_confirm_refuses_what_is_not_a_held_claim(realm: ServiceFactory) -> None:
    op = operator(realm)
    plain = op.fact_write("bob", "city", "Lyon").fact
    tainted = realm(principal="agent:ada", settings=Settings(llm_writes="quarantined"))
    held = tainted.fact_write("bob", "team", "infra").fact
    assert held.status is Status.QUARANTINED
    head = op.status().chain_head
    with pytest.raises(errors.NotQuarantined):
        op.fact_confirm(plain.id)
    with pytest.raises(errors.NotFound):
        op.fact_confirm("01NOSUCHFACT0000000000000")
    with pytest.raises(errors.InvalidValue) as caught:  # an agent's hold is a review's
        op.fact_confirm(held.id)
    assert caught.value.details["reasons"] == ["llm_writes"]
    assert op.status().chain_head == head  # nothing written
    held_claim = claimed(realm)
    with pytest.raises(errors.AccessDenied):  # an agent never confirms
        realm(principal="agent:ada").fact_confirm(held_claim)
    op.fact_confirm(held_claim)
    with pytest.raises(errors.NotQuarantined):
        op.fact_confirm(held_claim)


def test_supersedes_names_the_version_a_write_replaces(realm: ServiceFactory) -> None:
    op = operator(realm)
    first = op.fact_write("bob", "city", "Lyon").fact
    second = op.fact_write("bob", "city", "Paris", supersedes=first.id)
    assert second.other is not None and second.other.id == first.id
    head = op.status().chain_head
    with pytest.raises(errors.StaleUpdate) as caught:  # another writer replaced it first
        op.fact_write("bob", "city", "Nice", supersedes=first.id)
    assert caught.value.details["current"] == second.fact.id
    assert op.status().chain_head == head
    back = op.fact_retract("bob", "city")
    assert back.other is not None and back.other.id == first.id  # retract brings it back
