"""The realm's registry: projects, agents, teams and who is in them.

Plain functions over the unit of work (changes) or a transaction's reading half
(lookups). Who may call them is the policy table's: realm administration is for
operators and applications (``retain.service.policy``). Each change appends its event.
"""

from __future__ import annotations

from dataclasses import replace

from retain import fields
from retain.errors import (
    AgentExists,
    AgentNotFound,
    ProjectExists,
    ProjectNotEmpty,
    ProjectNotFound,
    TeamExists,
    TeamNotFound,
)
from retain.model import Agent, Project, Team, project_scope
from retain.service.work import Work
from retain.storage.base import Reads


def require_project(tx: Reads, realm: str, project: str) -> None:
    """Refuse a project the realm does not have (a name no project can have is not
    looked up)."""
    fields.name(project, what="project")
    if tx.get_project(realm, project) is None:
        raise ProjectNotFound(
            f"there is no project {project!r}",
            remedy="create the project first, or check the name",
            fix="add_project",
            project=project,
        )


def require_agent(tx: Reads, realm: str, agent: str) -> Agent:
    """The registered agent of that name, or the refusal."""
    found = tx.get_agent(realm, agent)
    if found is None:
        raise AgentNotFound(
            f"there is no agent {agent!r}",
            remedy="register the agent first, or check the name",
            fix="add_agent",
            agent=agent,
        )
    return found


def require_team(tx: Reads, realm: str, team: str) -> None:
    if tx.get_team(realm, team) is None:
        raise TeamNotFound(
            f"there is no team {team!r}",
            remedy="create the team first, or check the name",
            fix="add_team",
            team=team,
        )


def add_project(work: Work, name: str) -> Project:
    if work.reads.get_project(work.realm, name) is not None:
        raise ProjectExists(
            f"project {name!r} already exists",
            remedy="use it as it is, or pick another name",
            project=name,
        )
    work.add_project(name)
    work.event("project_add", {"project": name})
    return Project(name, work.now)


def rename_project(work: Work, old: str, new: str) -> Project:
    """Rename a project; its memories move with it."""
    tx = work.reads
    require_project(tx, work.realm, old)
    if tx.get_project(work.realm, new) is not None:
        raise ProjectExists(
            f"project {new!r} already exists",
            remedy="pick a name no project has",
            project=new,
        )
    moved = work.rename_project(old, new)
    work.event("project_rename", {"from": old, "to": new, "memories": moved})
    project = tx.get_project(work.realm, new)
    assert project is not None
    return replace(project, memories=moved)


def remove_project(work: Work, name: str) -> None:
    """Remove an empty project."""
    tx = work.reads
    require_project(tx, work.realm, name)
    remaining = tx.count_memories(work.realm, project_scope(name))
    if remaining:
        raise ProjectNotEmpty(
            f"project {name!r} still holds {remaining} memories",
            remedy="remove or move them first, and retract its facts (a listing of the "
            "project shows them)",
            fix="list_project",
            project=name,
            memories=remaining,
        )
    work.remove_project(name)
    work.event("project_remove", {"project": name})


def add_agent(work: Work, name: str) -> Agent:
    """Register an agent identity (its scope is ``agent:<name>``)."""
    if work.reads.get_agent(work.realm, name) is not None:
        raise AgentExists(
            f"agent {name!r} is already registered",
            remedy="use it as it is, or pick another name",
            agent=name,
        )
    work.add_agent(name)
    work.event("agent_add", {"agent": name})
    return Agent(name, work.now)


def add_team(work: Work, name: str) -> Team:
    """Create a team: a group of agents that shares the scope ``team:<name>``."""
    if work.reads.get_team(work.realm, name) is not None:
        raise TeamExists(
            f"team {name!r} already exists",
            remedy="use it as it is, or pick another name",
            team=name,
        )
    work.add_team(name)
    work.event("team_add", {"team": name})
    return Team(name, work.now)


def join_team(work: Work, team: str, agent: str) -> tuple[Team, bool]:
    """Put a registered agent in a team; (the team, whether it joined just now)."""
    tx = work.reads
    require_team(tx, work.realm, team)
    require_agent(tx, work.realm, agent)
    joined = work.add_member(team, agent)
    if joined:
        work.event("team_join", {"team": team, "agent": agent})
    found = tx.get_team(work.realm, team)
    assert found is not None
    return found, joined
