"""Agents and teams: registered identities of a realm, refused when unknown."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory

from retain import errors
from retain.chrono import TICK, ManualClock
from retain.service import MemoryService


def test_agents_are_registered_once_and_listed_with_their_teams(
    service: MemoryService, clock: ManualClock
) -> None:
    planner = service.add_agent("planner")
    # A tick after the realm was made: the clock has not moved since.
    assert (planner.name, planner.created_at, planner.teams) == ("planner", clock.now() + TICK, ())
    service.add_agent("coder")
    with pytest.raises(errors.AgentExists) as caught:
        service.add_agent("planner")
    assert caught.value.details == {"agent": "planner"}
    service.add_team("ops")
    service.join_team("ops", "planner")
    assert [(a.name, a.teams) for a in service.list_agents()] == [
        ("coder", ()),
        ("planner", ("ops",)),
    ]


def test_an_agent_may_belong_to_several_teams_and_joins_once(service: MemoryService) -> None:
    service.add_agent("planner")
    service.add_agent("coder")
    for team in ("ops", "web"):
        service.add_team(team)
    team, joined = service.join_team("ops", "planner")
    assert (team.members, joined) == (("planner",), True)
    team, joined = service.join_team("ops", "planner")
    assert (team.members, joined) == (("planner",), False)
    service.join_team("ops", "coder")
    service.join_team("web", "planner")
    assert [(t.name, t.members) for t in service.list_teams()] == [
        ("ops", ("coder", "planner")),
        ("web", ("planner",)),
    ]
    with pytest.raises(errors.TeamExists):
        service.add_team("ops")


def test_unknown_names_are_refused_and_change_nothing(service: MemoryService) -> None:
    service.add_agent("planner")
    service.add_team("ops")
    before = service.status().events
    with pytest.raises(errors.TeamNotFound) as team:
        service.join_team("opz", "planner")
    with pytest.raises(errors.AgentNotFound) as agent:
        service.join_team("ops", "plannr")
    assert (team.value.code, agent.value.code) == ("team_not_found", "agent_not_found")
    assert (agent.value.details["fix"], agent.value.details["agent"]) == ("add_agent", "plannr")
    assert "retain" not in agent.value.remedy  # the service names no door's command
    with pytest.raises(errors.InvalidName):
        service.add_agent("not a name")
    with pytest.raises(errors.InvalidName):
        service.join_team("ops", "../etc")
    assert service.status().events == before
    assert service.list_teams()[0].members == ()


def test_each_registration_is_an_event(service: MemoryService) -> None:
    service.add_agent("planner")
    service.add_team("ops")
    service.join_team("ops", "planner")
    service.join_team("ops", "planner")  # nothing new: no event
    events = [(e.kind, e.payload) for e in service.backend.read(lambda tx: list(tx.iter_events()))]
    assert [kind for kind, _ in events][-3:] == ["agent_add", "team_add", "team_join"]
    assert events[-1][1] is not None and '"agent":"planner"' in events[-1][1]
    assert service.verify().chain_ok


def test_identities_belong_to_their_realm(make_service: ServiceFactory) -> None:
    home = make_service(realm="home")
    work = make_service(realm="work")
    home.add_agent("planner")
    assert work.list_agents() == []
    work.add_agent("planner")  # the same name in another realm is another identity
    work.add_team("ops")
    with pytest.raises(errors.TeamNotFound):
        home.join_team("ops", "planner")
