"""An agent's own memory: remember, recall within its view, forget."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory

from retain import errors
from retain.model import Status, Trust
from retain.service import MemoryService


@pytest.fixture
def world(make_service: ServiceFactory) -> dict[str, MemoryService]:
    """An operator, two agents (planner in team ops) and a project."""
    operator = make_service()
    operator.add_agent("planner")
    operator.add_agent("coder")
    operator.add_team("ops")
    operator.join_team("ops", "planner")
    operator.add_project("web")
    return {
        "operator": operator,
        "planner": make_service(principal="agent:planner"),
        "coder": make_service(principal="agent:coder"),
    }


def ids(service: MemoryService, query: str, **options: object) -> list[str]:
    return [h.memory.id for h in service.recall(query, **options).hits]  # type: ignore[arg-type]


def test_remember_writes_into_the_agents_own_scope(world: dict[str, MemoryService]) -> None:
    memory = world["planner"].remember("Alice prefers terse answers\nin every review")
    assert (memory.scope, memory.author, memory.trust, memory.name) == (
        "agent:planner",
        "agent:planner",
        Trust.OBSERVED,
        None,
    )
    assert memory.description == "Alice prefers terse answers"
    assert memory.body == "Alice prefers terse answers\nin every review"


def test_recall_sees_global_project_team_and_own_scopes_only(
    world: dict[str, MemoryService],
) -> None:
    operator, planner, coder = world["operator"], world["planner"], world["coder"]
    operator.write("g", description="kestrel rules for everyone")
    operator.write("w", description="kestrel rules for web", project="web")
    mine = planner.remember("kestrel notes of the planner")
    theirs = coder.remember("kestrel notes of the coder")
    assert set(ids(planner, "kestrel")) == {operator.get("g").memory.id, mine.id}
    seen = set(ids(planner, "kestrel", project="web"))
    assert operator.get("w", project="web").memory.id in seen
    assert theirs.id not in seen and mine.id in seen
    assert theirs.id not in set(ids(planner, "kestrel notes coder"))


def test_forget_erases_an_own_memory_with_a_certificate(
    world: dict[str, MemoryService],
) -> None:
    planner = world["planner"]
    memory = planner.remember("the build is flaky on Fridays")
    assert ids(planner, "flaky build") == [memory.id]
    certificate = planner.forget(memory.id, reason="fixed")
    assert (certificate.target, certificate.principal) == (memory.id, "agent:planner")
    assert ids(planner, "flaky build") == []
    (stored,) = planner.backend.read(lambda tx: tx.get_many([memory.id]))
    assert (stored.status, stored.body) == (Status.FORGOTTEN, "")
    kinds = [
        (e.kind, e.principal, e.reason)
        for e in planner.backend.read(lambda tx: list(tx.iter_events()))
        if e.memory_id == memory.id
    ]
    assert kinds == [
        ("create", "agent:planner", ""),
        ("forget", "agent:planner", "fixed"),
        ("forget_verify", "agent:planner", "fixed"),
    ]
    with pytest.raises(errors.AlreadyForgotten):
        planner.forget(memory.id)


def test_an_agent_may_not_forget_what_is_not_its_own(world: dict[str, MemoryService]) -> None:
    theirs = world["coder"].remember("coder's private note")
    world["operator"].write("g", description="a global rule")
    with pytest.raises(errors.NotFound) as caught:  # another agent's: not disclosed
        world["planner"].forget(theirs.id)
    assert "coder" not in str(caught.value) and "scope" not in caught.value.details
    with pytest.raises(errors.AccessDenied):  # a global one it sees, but did not remember
        world["planner"].forget(world["operator"].get("g").memory.id)
    assert world["coder"].recall("private note").hits[0].memory.id == theirs.id


def test_agent_verbs_need_a_registered_agent(
    world: dict[str, MemoryService], make_service: ServiceFactory
) -> None:
    with pytest.raises(errors.AccessDenied):
        world["operator"].remember("an operator is not an agent")
    with pytest.raises(errors.AgentNotFound):
        make_service(principal="agent:ghost").recall("anything")
    with pytest.raises(errors.InvalidValue):
        world["planner"].remember("   ")
    assert world["operator"].list_memories() == []


def test_update_supersedes_an_own_memory_in_its_lineage(world: dict[str, MemoryService]) -> None:
    planner = world["planner"]
    old = planner.remember("Alice is in UTC+8")
    new = planner.update(old.id, "Alice is in UTC+9 since she moved")
    assert (new.supersedes, new.scope, new.body) == (
        old.id,
        "agent:planner",
        "Alice is in UTC+9 since she moved",
    )
    assert ids(planner, "Alice UTC") == [new.id]
    events = [
        (e.kind, e.memory_id)
        for e in planner.backend.read(lambda tx: list(tx.iter_events()))
        if e.memory_id in (old.id, new.id)
    ]
    assert events == [("create", old.id), ("create", new.id), ("supersede", old.id)]
    with pytest.raises(errors.NotFound):
        planner.update(old.id, "a superseded memory is not updated again")


def test_an_agent_may_not_update_another_identitys_memory(
    world: dict[str, MemoryService],
) -> None:
    theirs = world["coder"].remember("the coder's note")
    with pytest.raises(errors.NotFound) as caught:  # another agent's: not disclosed
        world["planner"].update(theirs.id, "overwritten?")
    assert caught.value.details == {"id": theirs.id}
    assert [h.memory.body for h in world["coder"].recall("coder note").hits] == ["the coder's note"]


def test_proposals_are_stored_open_for_a_team_or_global_and_write_nothing(
    world: dict[str, MemoryService],
) -> None:
    planner = world["planner"]
    to_team = planner.propose(
        "Deploys freeze on Fridays", target="team:ops", evidence="incident 42"
    )
    to_all = planner.propose("Use UTC in every log line", body="All services log in UTC.")
    assert (to_team.target, to_team.status, to_team.source, to_team.trust) == (
        "team:ops",
        "open",
        "agent:planner",
        Trust.OBSERVED,
    )
    assert [p.id for p in world["operator"].list_proposals(status="open")] == [
        to_team.id,
        to_all.id,
    ]
    assert world["operator"].list_memories() == []
    assert world["operator"].list_proposals(status="decided") == []


def test_a_proposal_must_target_a_team_of_the_agent_or_global(
    world: dict[str, MemoryService],
) -> None:
    world["operator"].add_team("web-team")
    with pytest.raises(errors.AccessDenied):
        world["planner"].propose("not my team", target="team:web-team")
    with pytest.raises(errors.TeamNotFound):
        world["planner"].propose("no such team", target="team:nope")
    with pytest.raises(errors.InvalidValue):
        world["planner"].propose("into someone's own scope", target="agent:coder")
    with pytest.raises(errors.InvalidValue):
        world["planner"].propose("   ")
    with pytest.raises(errors.AccessDenied):
        world["operator"].propose("an operator writes directly")
    assert world["operator"].list_proposals() == []


def test_search_and_list_follow_the_readers_view(
    world: dict[str, MemoryService], make_service: ServiceFactory
) -> None:
    operator, planner, coder = world["operator"], world["planner"], world["coder"]
    operator.write("g", description="kestrel for everyone")
    operator.write("w", description="kestrel for web", project="web")
    mine = planner.remember("kestrel notes of the planner")
    theirs = coder.remember("kestrel notes of the coder")

    def scopes(service: MemoryService, **options: object) -> set[str]:
        found = {h.memory.scope for h in service.search("kestrel", **options).hits}  # type: ignore[arg-type]
        listed = {m.scope for m in service.list_memories(**options)}  # type: ignore[arg-type]
        return found | listed

    assert scopes(planner) == {"global", "agent:planner"}
    assert scopes(planner, project="web") >= {"project:web", "agent:planner"}
    assert "agent:coder" not in scopes(planner, project="web")
    assert scopes(make_service(principal="app:bot")) == {"global", "project:web"}
    assert scopes(operator) == {"global", "project:web", "agent:planner", "agent:coder"}
    assert mine.id != theirs.id


def test_an_agent_lists_only_its_own_proposals(world: dict[str, MemoryService]) -> None:
    world["operator"].join_team("ops", "coder")
    mine = world["planner"].propose("Freeze deploys on Fridays", target="team:ops")
    theirs = world["coder"].propose("Rotate keys monthly")
    assert [p.id for p in world["planner"].list_proposals()] == [mine.id]
    assert [p.id for p in world["operator"].list_proposals()] == [mine.id, theirs.id]


def test_a_near_duplicate_note_never_names_an_agents_memory(
    world: dict[str, MemoryService],
) -> None:
    world["planner"].remember("bob keeps the deploy credentials in the vault")
    result = world["operator"].write(
        "creds", description="bob keeps the deploy credentials in the vault"
    )
    assert not any("already says something very similar" in n for n in result.notes)


def test_update_carries_over_what_it_is_not_given(world: dict[str, MemoryService]) -> None:
    planner = world["planner"]
    old = planner.remember("Alice is in UTC+8", tags=["people"], priority=2, subject="Alice")
    new = planner.update(old.id, "Alice is in UTC+9")
    assert (new.tags, new.priority, new.subject) == (("people",), 2, "Alice")
    newer = planner.update(new.id, "Alice is in UTC+10", tags=[])
    assert newer.tags == ()
