"""Legal holds: hold, release_hold, held, and the refusal of forgetting a held memory."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors
from retain.chrono import ManualClock, stamp
from retain.model import Status
from retain.service import MemoryService


@pytest.fixture
def world(make_service: ServiceFactory) -> dict[str, MemoryService]:
    """An operator, an application, a registered agent and the steward, on one store."""
    operator = make_service()
    operator.add_agent("ada")
    return {
        "operator": operator,
        "app": make_service(principal="app:records"),
        "ada": make_service(principal="agent:ada"),
        "steward": make_service(principal="steward"),
    }


def test_a_hold_is_an_event_and_a_row_and_held_says_so(
    world: dict[str, MemoryService], clock: ManualClock
) -> None:
    operator = world["operator"]
    plan = operator.write("plan", description="the launch plan", body="ship friday").memory
    assert operator.held(plan.id).to_dict() == {"target": plan.id, "held": False, "hold": None}
    clock.advance(minutes=1)

    placed = operator.hold(plan.id, reason="matter 42: litigation")

    assert (placed.kind, placed.target, placed.principal, placed.reason) == (
        "hold", plan.id, "operator:test", "matter 42: litigation",
    )  # fmt: skip
    assert placed.tx_time == clock.now()
    (event,) = [e for e in operator.events(memory_id=plan.id) if e.kind == "hold"]
    assert (event.event_id, event.seq, event.reason) == (placed.event_id, placed.seq, placed.reason)
    state = operator.held(plan.id)
    assert state.held and state.hold is not None
    assert state.to_dict()["hold"] == {
        "target": plan.id,
        "reason": "matter 42: litigation",
        "held_by": "operator:test",
        "held_at": stamp(clock.now()),
        "event_id": placed.event_id,
    }


def test_a_release_removes_the_hold_with_its_own_event(
    world: dict[str, MemoryService], clock: ManualClock
) -> None:
    operator, app = world["operator"], world["app"]
    plan = operator.write("plan", description="the launch plan").memory
    app.hold(plan.id, reason="audit")
    clock.advance(hours=1)

    released = operator.release_hold(plan.id, reason="audit closed")

    assert (released.kind, released.target, released.principal, released.reason) == (
        "release", plan.id, "operator:test", "audit closed",
    )  # fmt: skip
    assert not app.held(plan.id).held
    kinds = [e.kind for e in operator.events(memory_id=plan.id)]
    assert kinds[-2:] == ["hold", "release"]
    assert released.to_dict()["tx_time"] == stamp(clock.now())


def test_a_second_hold_is_refused_naming_the_one_that_stands(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    plan = operator.write("plan", description="the launch plan").memory
    operator.hold(plan.id, reason="matter 42")
    before = store_state(operator)
    with pytest.raises(errors.AlreadyHeld) as refused:
        operator.hold(plan.id, reason="matter 43")
    assert refused.value.code == "already_held"
    assert refused.value.details["reason"] == "matter 42"
    assert store_state(operator) == before
    assert operator.held(plan.id).hold.reason == "matter 42"  # type: ignore[union-attr]


def test_a_release_of_a_memory_not_held_is_refused(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    plan = operator.write("plan", description="the launch plan").memory
    before = store_state(operator)
    with pytest.raises(errors.NotHeld) as refused:
        operator.release_hold(plan.id, reason="done")
    assert refused.value.details == {"id": plan.id}
    assert store_state(operator) == before


def test_a_hold_needs_a_reason(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    plan = operator.write("plan", description="the launch plan").memory
    for verb in (operator.hold, operator.release_hold):
        with pytest.raises(errors.InvalidValue) as refused:
            verb(plan.id, reason="  ")
        assert refused.value.details["field"] == "reason"


def test_a_memory_outside_the_view_is_not_found(world: dict[str, MemoryService]) -> None:
    """An application sees the shared tiers only: an agent's own memory is no target."""
    operator, app, ada = world["operator"], world["app"], world["ada"]
    own = ada.remember("ada's locker code is 12")
    for call in (
        lambda: app.hold(own.id, reason="x"),
        lambda: app.held(own.id),
        lambda: app.release_hold(own.id, reason="x"),
        lambda: operator.hold("no-such-id", reason="x"),
    ):
        with pytest.raises(errors.NotFound):
            call()
    assert operator.hold(own.id, reason="the operator sees every scope").target == own.id


def test_a_fact_is_held_like_any_memory(world: dict[str, MemoryService]) -> None:
    operator = world["operator"]
    fact = operator.fact_write("bob", "employer", "acme").fact
    assert operator.hold(fact.id, reason="matter 7").target == fact.id
    assert operator.held(fact.id).held


@pytest.mark.parametrize("who", ["ada", "steward"])
def test_only_operators_and_applications_hold_and_release(
    world: dict[str, MemoryService], who: str
) -> None:
    plan = world["operator"].write("plan", description="the launch plan").memory
    for call in (world[who].hold, world[who].release_hold):
        with pytest.raises(errors.AccessDenied):
            call(plan.id, reason="x")


def test_held_is_a_read_for_anyone_but_an_agent(world: dict[str, MemoryService]) -> None:
    plan = world["operator"].write("plan", description="the launch plan").memory
    assert not world["steward"].held(plan.id).held
    with pytest.raises(errors.AccessDenied):
        world["ada"].held(plan.id)


def test_a_hold_refuses_forget_until_it_is_released(world: dict[str, MemoryService]) -> None:
    """The existing forget (an agent's own memory) asks ``require_released`` first."""
    operator, ada = world["operator"], world["ada"]
    own = ada.remember("the old locker code is 4711")
    operator.hold(own.id, reason="matter 42: keep ada's notes")
    before = store_state(operator)

    with pytest.raises(errors.HoldActive) as refused:
        ada.forget(own.id, reason="no longer needed", compact=False)

    error = refused.value
    assert error.code == "hold_active"
    assert "matter 42: keep ada's notes" in error.message
    assert error.details["reason"] == "matter 42: keep ada's notes"
    assert error.details["held_by"] == "operator:test"
    assert error.details["fix"] == "release_hold"
    assert store_state(operator) == before
    assert operator.get(own.id).memory.status is Status.ACTIVE

    operator.release_hold(own.id, reason="matter closed")
    assert ada.forget(own.id, reason="no longer needed", compact=False).target == own.id
    assert operator.get(own.id).memory.status is Status.FORGOTTEN


def test_an_operators_forget_is_refused_too_and_so_is_a_copys(
    world: dict[str, MemoryService],
) -> None:
    """The erasure refuses a held target whoever forgets it, and a target one of whose
    copies is held (a released successor of a quarantined record: forgetting the record
    would erase the held copy)."""
    operator = world["operator"]
    plan = operator.write("plan", description="the launch plan").memory
    operator.hold(plan.id, reason="matter 42")
    with pytest.raises(errors.HoldActive):
        operator.forget(plan.id, reason="tidy", compact=False)
    fact = operator.fact_write("bob", "employer", "acme").fact
    operator.hold(fact.id, reason="matter 7")
    with pytest.raises(errors.HoldActive):
        operator.forget(fact.id, reason="tidy", compact=False)


def test_a_held_copy_refuses_the_forget_of_its_origin(
    make_service: ServiceFactory,
) -> None:
    from retain.config import Settings

    operator = make_service()
    operator.add_agent("ada")
    record = make_service(
        settings=Settings(llm_writes="quarantined"), principal="agent:ada"
    ).remember("waits for review, then is released")
    released = operator.review(record.id, "release", record.content_hash).successor
    assert released is not None
    operator.hold(released.id, reason="matter 42")
    before = store_state(operator)
    with pytest.raises(errors.HoldActive) as refused:
        operator.forget(record.id, reason="tidy", compact=False)
    assert refused.value.details["id"] == released.id
    assert store_state(operator) == before


def test_a_hold_on_a_deleted_memory_is_released_by_an_operator(
    world: dict[str, MemoryService],
) -> None:
    operator = world["operator"]
    plan = operator.write("plan", description="the launch plan").memory
    operator.hold(plan.id, reason="matter 42")
    operator.delete("plan")
    with pytest.raises(errors.NotFound):
        world["app"].release_hold(plan.id, reason="gone")
    assert operator.release_hold(plan.id, reason="gone").kind == "release"


def test_holds_are_kept_per_realm(make_service: ServiceFactory) -> None:
    default = make_service()
    other = make_service(realm="other")
    plan = default.write("plan", description="the launch plan").memory
    default.hold(plan.id, reason="matter 42")
    with pytest.raises(errors.NotFound):  # another realm's memory is not in its view
        other.held(plan.id)
    assert default.held(plan.id).held
