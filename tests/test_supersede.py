"""The supersede pointer at every door: a record shows the memory it ``supersedes`` and,
once retired, the one it is ``superseded_by``; a retired entry is read by its id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp.client import Client
from tests.conftest import ServiceFactory

from retain.doors import http, mcp
from retain.doors.cli import cli
from retain.errors import NotFound
from retain.model import Status
from retain.service import MemoryService


def _agent(make_service: ServiceFactory, service: MemoryService) -> MemoryService:
    service.add_agent("ada")
    return make_service(principal="agent:ada")


def _updated(make_service: ServiceFactory, service: MemoryService) -> tuple[str, str]:
    """An agent's memory and the one its update replaced it with: (old id, new id)."""
    ada = _agent(make_service, service)
    old = ada.remember("the build uses make")
    new = ada.update(old.id, "the build uses ninja")
    return old.id, new.id


def _mcp(service: MemoryService, principal: str, tool: str, arguments: dict[str, Any]) -> Any:
    server = mcp.create_server(http.Services(service).of, local_principal=principal)

    async def run() -> Any:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content
            return result.structured_content

    return anyio.run(run)


def _cli(store_url: str, *args: str) -> str:
    """``retain ARGS`` on the store of ``store_url``: its output."""
    where = (
        ["--database-url", store_url]
        if store_url.startswith("postgres")
        else ["--home", str(Path(store_url).parent)]
    )
    env = {"RETAIN_HOME": None, "RETAIN_DATABASE_URL": None, "COLUMNS": "200", "NO_COLOR": "1"}
    result = CliRunner().invoke(cli, [*args, *where], env=env)
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def _cli_json(service: MemoryService, store_url: str, *args: str) -> Any:
    return json.loads(_cli(store_url, *args, "--format", "json"))


def test_an_update_links_the_old_memory_and_the_new_both_ways(
    make_service: ServiceFactory, service: MemoryService
) -> None:
    old_id, new_id = _updated(make_service, service)
    ada = make_service(principal="agent:ada")
    for reader in (ada, service):  # the agent itself, and an operator
        old = reader.get(old_id)
        assert (old.memory.status, old.memory.superseded_by) == (Status.SUPERSEDED, new_id)
        assert old.memory.to_dict(service.clock.now())["superseded_by"] == new_id
        new = reader.get(new_id).memory
        assert (new.supersedes, new.superseded_by) == (old_id, None)
        assert new.to_dict(service.clock.now())["supersedes"] == old_id
    page = ada.read(old_id)
    assert page.to_dict(service.clock.now())["superseded_by"] == new_id


def test_the_supersede_event_names_the_memory_that_took_over(
    make_service: ServiceFactory, service: MemoryService
) -> None:
    old_id, new_id = _updated(make_service, service)
    retired = [e for e in service.events(memory_id=old_id) if e.kind == "supersede"]
    assert [json.loads(e.payload or "{}")["superseded_by"] for e in retired] == [new_id]


def test_a_chain_of_updates_points_each_entry_at_the_next(
    make_service: ServiceFactory, service: MemoryService
) -> None:
    ada = _agent(make_service, service)
    first = ada.remember("v1")
    second = ada.update(first.id, "v2")
    third = ada.update(second.id, "v3")
    assert [ada.get(m.id).memory.superseded_by for m in (first, second, third)] == [
        second.id,
        third.id,
        None,
    ]


def test_an_agents_retired_memory_is_hidden_from_another_agent_and_an_app(
    make_service: ServiceFactory, service: MemoryService
) -> None:
    old_id, _ = _updated(make_service, service)
    service.add_agent("bob")
    for principal in ("agent:bob", "app:web"):
        with pytest.raises(NotFound):
            make_service(principal=principal).get(old_id)


def test_a_fact_version_shows_what_took_over_from_it(service: MemoryService) -> None:
    first = service.fact_write("Bob", "employer", "Acme", valid_from="2025-01-01")
    second = service.fact_write("Bob", "employer", "Initech")
    assert second.other is not None and second.other.superseded_by == second.fact.id
    assert second.to_dict("write")["superseded"]["superseded_by"] == second.fact.id
    assert second.fact.supersedes == first.fact.id
    history = service.fact_history("Bob", "employer")
    assert [(f.supersedes, f.superseded_by) for f in history] == [
        (None, second.fact.id),
        (first.fact.id, None),
    ]
    assert service.get(first.fact.id).memory.superseded_by == second.fact.id


def test_a_retracted_version_no_longer_supersedes_the_one_it_ended(
    service: MemoryService,
) -> None:
    first = service.fact_write("Bob", "employer", "Acme", valid_from="2025-01-01")
    service.fact_write("Bob", "employer", "Initech")
    service.fact_retract("Bob", "employer")
    back = service.get(first.fact.id).memory
    assert (back.status, back.superseded_by) == (Status.ACTIVE, None)
    assert [f.superseded_by for f in service.fact_history("Bob", "employer")] == [None, None]
    third = service.fact_write("Bob", "employer", "Globex")
    assert service.get(first.fact.id).memory.superseded_by == third.fact.id


def test_rest_shows_both_pointers(make_service: ServiceFactory, service: MemoryService) -> None:
    old_id, new_id = _updated(make_service, service)
    client = TestClient(http.create_app(service))
    old = client.get(f"/v1/memories/{old_id}")
    assert old.status_code == 200, old.text
    assert (old.json()["status"], old.json()["superseded_by"]) == ("superseded", new_id)
    new = client.get(f"/v1/memories/{new_id}/read").json()
    assert (new["supersedes"], new["superseded_by"]) == (old_id, None)
    listed = client.get("/v1/memories").json()["memories"]
    assert all("supersedes" in m and "superseded_by" in m for m in listed) and listed
    service.fact_write("Bob", "employer", "Acme", valid_from="2025-01-01")
    written = client.post(
        "/v1/facts", json={"subject": "Bob", "predicate": "employer", "value": "Initech"}
    ).json()
    assert written["superseded"]["superseded_by"] == written["fact"]["id"]


def test_mcp_shows_both_pointers(make_service: ServiceFactory, service: MemoryService) -> None:
    service.add_agent("ada")
    kept = _mcp(service, "agent:ada", "memory_remember", {"text": "the build uses make"})
    new = _mcp(service, "agent:ada", "memory_update", {"id": kept["id"], "text": "ninja"})
    assert (new["supersedes"], new["superseded_by"]) == (kept["id"], None)
    old = _mcp(service, "agent:ada", "memory_read", {"name": kept["id"]})
    assert (old["status"], old["superseded_by"]) == ("superseded", new["id"])
    fact = {"subject": "Bob", "predicate": "p"}
    _mcp(service, "agent:ada", "fact_write", {**fact, "value": "a", "valid_from": "2025-01-01"})
    history = _mcp(service, "agent:ada", "fact_history", {"subject": "Bob", "predicate": "p"})
    assert history["facts"][0]["superseded_by"] is None
    later = _mcp(
        service, "agent:ada", "fact_write", {"subject": "Bob", "predicate": "p", "value": "b"}
    )
    assert later["superseded"]["superseded_by"] == later["fact"]["id"]


def test_cli_json_shows_both_pointers(
    make_service: ServiceFactory, service: MemoryService, store_url: str
) -> None:
    old_id, new_id = _updated(make_service, service)
    old = _cli_json(service, store_url, "get", old_id)
    assert (old["status"], old["superseded_by"], old["supersedes"]) == (
        "superseded",
        new_id,
        None,
    )
    table = _cli(store_url, "get", old_id).splitlines()
    assert any("superseded_by" in line and new_id in line for line in table)
    shown = _cli_json(service, store_url, "show", new_id)
    assert (shown["supersedes"], shown["superseded_by"]) == (old_id, None)
    listed = _cli_json(service, store_url, "list")["memories"]
    assert [(m["id"], m["supersedes"]) for m in listed if m["id"] == new_id] == [(new_id, old_id)]
    service.fact_write("Bob", "employer", "Acme", valid_from="2025-01-01")
    written = _cli_json(service, store_url, "fact", "write", "Bob", "employer", "Initech")
    assert written["superseded"]["superseded_by"] == written["fact"]["id"]
    retired = _cli_json(service, store_url, "get", written["superseded"]["id"])
    assert retired["superseded_by"] == written["fact"]["id"]
