"""The registry commands (``retain.doors.cli.registry``): ``retain agent``,
``retain team`` and ``retain project``: add, list, join, rename and remove, and their
refusals."""

from __future__ import annotations

from datetime import datetime

from tests.doors.cli_helpers import (
    CONFLICT,
    INVALID,
    NOT_FOUND,
    Retain,
)

# -- projects ---------------------------------------------------------------------------------


def test_agents_and_teams_are_registered_listed_and_joined(retain: Retain) -> None:
    assert "Registered agent 'planner'." in retain.ok("agent", "add", "planner").stdout
    assert retain.json("agent", "add", "coder")["name"] == "coder"
    assert "Created team 'ops'." in retain.ok("team", "add", "ops").stdout
    joined = retain.ok("team", "join", "ops", "planner").stdout
    assert "Agent 'planner' joined team 'ops'." in joined
    again = retain.json("team", "join", "ops", "planner")
    assert (again["joined"], again["members"]) == (False, ["planner"])
    agents = retain.json("agent", "list")["agents"]
    assert [(a["name"], a["teams"]) for a in agents] == [("coder", []), ("planner", ["ops"])]
    teams = retain.json("team", "list")["teams"]
    assert [(t["name"], t["members"]) for t in teams] == [("ops", ["planner"])]
    table = retain.ok("agent", "list").stdout
    assert "planner" in table and "ops" in table


def test_unknown_or_taken_identities_are_refused(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("team", "add", "ops")
    retain.refused(
        "agent", "add", "planner", status=CONFLICT, code="agent_exists", remedy="another name"
    )
    retain.refused("team", "add", "ops", status=CONFLICT, code="team_exists", remedy="another")
    retain.refused(
        "team",
        "join",
        "opz",
        "planner",
        status=NOT_FOUND,
        code="team_not_found",
        remedy="retain team add opz",
    )
    retain.refused(
        "team",
        "join",
        "ops",
        "plannr",
        status=NOT_FOUND,
        code="agent_not_found",
        remedy="retain agent add plannr",
    )


def test_project_add_then_list_shows_it_with_its_memory_count(retain: Retain) -> None:
    assert "Created project 'webdev'." in retain.ok("project", "add", "webdev").stdout
    assert retain.json("project", "add", "movie")["name"] == "movie"
    retain.ok("add", "stack", "-d", "Uses pnpm", "--project", "webdev")
    projects = retain.json("project", "list")["projects"]
    assert sorted((p["name"], p["memories"]) for p in projects) == [("movie", 0), ("webdev", 1)]
    assert all(datetime.fromisoformat(p["created_at"]).tzinfo for p in projects)
    table = retain.ok("project", "list").stdout
    assert "Project" in table
    assert "webdev" in table
    assert "movie" in table


def test_project_add_refused_when_the_project_exists(webdev: Retain) -> None:
    webdev.refused(
        "project", "add", "webdev", status=CONFLICT, code="project_exists", remedy="another name"
    )


def test_project_add_refused_for_an_invalid_name(retain: Retain) -> None:
    retain.refused(
        "project", "add", "web dev", status=INVALID, code="invalid_name", remedy="letters, digits"
    )


def test_project_rename_moves_its_memories_with_it(webdev: Retain) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    result = webdev.ok("project", "rename", "webdev", "frontend")
    assert "Renamed project 'webdev' to 'frontend' (1 memories moved)." in result.stdout
    assert webdev.names("--project", "frontend") == ["stack"]
    assert webdev.get("stack")["project"] == "frontend"
    assert [p["name"] for p in webdev.json("project", "list")["projects"]] == ["frontend"]
    webdev.refused(
        "list",
        "--project",
        "webdev",
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add webdev",
    )


def test_project_rename_json_reports_the_memories_moved(webdev: Retain) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    assert webdev.json("project", "rename", "webdev", "web") == {
        "name": "web",
        "created_at": webdev.json("project", "list")["projects"][0]["created_at"],
        "memories": 1,
    }


def test_project_rename_refused_onto_an_existing_project(webdev: Retain) -> None:
    webdev.ok("project", "add", "movie")
    webdev.refused(
        "project",
        "rename",
        "webdev",
        "movie",
        status=CONFLICT,
        code="project_exists",
        remedy="pick a name no project has",
    )


def test_project_rename_refused_for_an_invalid_new_name(webdev: Retain) -> None:
    webdev.refused(
        "project", "rename", "webdev", "web/dev", status=INVALID, code="invalid_name", remedy="'-'"
    )


def test_project_remove_refused_while_it_holds_memories(webdev: Retain) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    webdev.refused(
        "project",
        "remove",
        "webdev",
        status=CONFLICT,
        code="project_not_empty",
        remedy="retain list --project webdev",
    )
    webdev.ok("remove", "stack", "-p", "webdev")
    assert "Removed project 'webdev'." in webdev.ok("project", "remove", "webdev").stdout
    assert webdev.json("project", "list") == {"projects": []}


def test_project_remove_json_names_the_removed_project(webdev: Retain) -> None:
    assert webdev.json("project", "remove", "webdev") == {"removed": "webdev"}
