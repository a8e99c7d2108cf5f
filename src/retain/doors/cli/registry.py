"""The registry commands: ``retain agent``, ``retain team`` and ``retain project``
(add, list, and a team's join, a project's rename and remove)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import emit_created, emit_json, emit_rows, say
from retain.doors.cli.root import cli, format_option, home_option, opened
from retain.doors.deferred import Deferred

if TYPE_CHECKING:
    from pathlib import Path

    from retain.chrono import stamp
    from retain.doors.records import record_of
else:  # imported on first use: `retain --help` loads no service (nor the clock's module)
    stamp = Deferred("retain.chrono", "stamp")
    record_of = Deferred("retain.doors.records", "record_of")


@cli.group()
def agent() -> None:
    """Register and list agent identities (each has its own scope, agent:<name>)."""


@agent.command("add")
@click.argument("name")
@home_option
@format_option
def agent_add(name: str, home: Path | None, fmt: str) -> None:
    """Register agent NAME."""
    with opened(home, fmt) as service:
        created = service.add_agent(name)
        emit_created(fmt, created.name, created.created_at, f"Registered agent '{name}'.")


@agent.command("list")
@home_option
@format_option
def agent_list(home: Path | None, fmt: str) -> None:
    """List registered agents and the teams each belongs to."""
    with opened(home, fmt) as service:
        rows = [
            {"name": a.name, "created_at": stamp(a.created_at), "teams": list(a.teams)}
            for a in service.list_agents()
        ]
        emit_rows(
            fmt, "agents", rows, {"Agent": "name", "Teams": "teams", "Registered": "created_at"}
        )


@cli.group()
def team() -> None:
    """Create teams, list them, and put agents in them (a team shares team:<name>)."""


@team.command("add")
@click.argument("name")
@home_option
@format_option
def team_add(name: str, home: Path | None, fmt: str) -> None:
    """Create team NAME."""
    with opened(home, fmt) as service:
        created = service.add_team(name)
        emit_created(fmt, created.name, created.created_at, f"Created team '{name}'.")


@team.command("list")
@home_option
@format_option
def team_list(home: Path | None, fmt: str) -> None:
    """List teams and their members."""
    with opened(home, fmt) as service:
        rows = [
            {"name": t.name, "created_at": stamp(t.created_at), "members": list(t.members)}
            for t in service.list_teams()
        ]
        emit_rows(
            fmt, "teams", rows, {"Team": "name", "Members": "members", "Created": "created_at"}
        )


@team.command("join")
@click.argument("team_name", metavar="TEAM")
@click.argument("agent_name", metavar="AGENT")
@home_option
@format_option
def team_join(team_name: str, agent_name: str, home: Path | None, fmt: str) -> None:
    """Put registered agent AGENT in team TEAM (a member already stays one)."""
    with opened(home, fmt) as service:
        joined_team, joined = service.join_team(team_name, agent_name)
        if fmt == "json":
            emit_json(
                {
                    "team": joined_team.name,
                    "agent": agent_name,
                    "joined": joined,
                    "members": list(joined_team.members),
                }
            )
        elif joined:
            say(f"Agent '{agent_name}' joined team '{team_name}'.")
        else:
            say(f"Agent '{agent_name}' is already in team '{team_name}'.")


@cli.group()
def project() -> None:
    """Create, list, rename and remove projects (the project tiers)."""


@project.command("add")
@click.argument("name")
@home_option
@format_option
def project_add(name: str, home: Path | None, fmt: str) -> None:
    """Create project NAME."""
    with opened(home, fmt) as service:
        created = service.add_project(name)
        emit_created(fmt, created.name, created.created_at, f"Created project '{name}'.")


@project.command("list")
@home_option
@format_option
def project_list(home: Path | None, fmt: str) -> None:
    """List projects with how many memories each holds."""
    with opened(home, fmt) as service:
        rows = [
            {"name": p.name, "created_at": stamp(p.created_at), "memories": p.memories}
            for p in service.list_projects()
        ]
        columns = {"Project": "name", "Memories": "memories", "Created": "created_at"}
        emit_rows(fmt, "projects", rows, columns)


@project.command("rename")
@click.argument("old")
@click.argument("new")
@home_option
@format_option
def project_rename(old: str, new: str, home: Path | None, fmt: str) -> None:
    """Rename project OLD to NEW, moving its memories with it."""
    with opened(home, fmt) as service:
        renamed = service.rename_project(old, new)
        if fmt == "json":
            emit_json(record_of(renamed))
        else:
            say(f"Renamed project '{old}' to '{new}' ({renamed.memories} memories moved).")


@project.command("remove")
@click.argument("name")
@home_option
@format_option
def project_remove(name: str, home: Path | None, fmt: str) -> None:
    """Remove project NAME (refused while it holds memories)."""
    with opened(home, fmt) as service:
        service.remove_project(name)
        if fmt == "json":
            emit_json({"removed": name})
        else:
            say(f"Removed project '{name}'.")
