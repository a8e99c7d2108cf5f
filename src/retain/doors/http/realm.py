"""The routes of the realm's registry: its projects, agents and teams (tag ``realm``)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from retain.doors.http.request import API, NameBody, NamePath
from retain.doors.records import plain, record_of
from retain.service import MemoryService


def add(app: FastAPI, root: MemoryService, acting: Any) -> None:
    """Add the registry's routes to ``app`` (``acting`` gives each request its
    principal's session)."""

    @app.get(f"{API}/projects", tags=["realm"])
    def projects(svc: MemoryService = acting) -> dict[str, Any]:
        return {"projects": plain(svc.list_projects())}

    @app.post(f"{API}/projects", tags=["realm"], status_code=201)
    def add_project(body: NameBody, svc: MemoryService = acting) -> dict[str, Any]:
        return record_of(svc.add_project(body.name))

    @app.post(f"{API}/projects/{{name}}/rename", tags=["realm"])
    def rename_project(
        name: NamePath, body: NameBody, svc: MemoryService = acting
    ) -> dict[str, Any]:
        return record_of(svc.rename_project(name, body.name))

    @app.delete(f"{API}/projects/{{name}}", tags=["realm"])
    def remove_project(name: NamePath, svc: MemoryService = acting) -> dict[str, Any]:
        svc.remove_project(name)
        return {"removed": name}

    @app.get(f"{API}/agents", tags=["realm"])
    def agents(svc: MemoryService = acting) -> dict[str, Any]:
        return {"agents": plain(svc.list_agents())}

    @app.post(f"{API}/agents", tags=["realm"], status_code=201)
    def add_agent(body: NameBody, svc: MemoryService = acting) -> dict[str, Any]:
        return record_of(svc.add_agent(body.name))

    @app.get(f"{API}/teams", tags=["realm"])
    def teams(svc: MemoryService = acting) -> dict[str, Any]:
        return {"teams": plain(svc.list_teams())}

    @app.post(f"{API}/teams", tags=["realm"], status_code=201)
    def add_team(body: NameBody, svc: MemoryService = acting) -> dict[str, Any]:
        return record_of(svc.add_team(body.name))

    @app.put(f"{API}/teams/{{team}}/members/{{agent}}", tags=["realm"])
    def join_team(team: NamePath, agent: NamePath, svc: MemoryService = acting) -> dict[str, Any]:
        joined_team, joined = svc.join_team(team, agent)
        return {**plain(joined_team), "joined": joined}
