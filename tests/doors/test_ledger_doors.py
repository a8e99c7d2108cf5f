"""The assertion ledger and the gate through every door: each refusal gives the same code
at the Python API, the CLI, REST and MCP and writes nothing, and the answers the doors
give are the service's (the rules themselves: ``tests/test_assertion_ledger.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client
from tests.conftest import ServiceFactory, store_state
from tests.doors.test_matrix import (
    DOOR_NAMES,
    OK,
    PRINCIPALS,
    Doors,
    door_of,
    mcp_server,
    reaches,
    set_up,
)

from retain.doors import http
from retain.doors.cli import cli
from retain.service import MemoryService

INVALID = "invalid_value"
DENIED = "access_denied"


def _index(**given: Any) -> Doors:
    """An index call at every door, with ``given`` (entity, topic, store, fact, ...)."""
    args = {"entity": "identity:ops", "topic": "deployment", "store": "vector", **given}
    words = [args["entity"], args["topic"], args["store"]]
    if args.get("fact") is not None:
        words += ["--fact", args["fact"]]
    if args.get("metadata") is not None:
        words += ["--metadata", json.dumps(args["metadata"])]
    if args.get("conflict") is not None:
        words += ["--conflict" if args["conflict"] else "--clear-conflict"]
    if args.get("conflict_reason") is not None:
        words += ["--reason", args["conflict_reason"]]
    rest = {k: v for k, v in args.items() if v is not None}
    python = {k: v for k, v in rest.items() if k not in ("entity", "topic", "store")}
    return Doors(
        lambda svc, s: svc.index(args["entity"], args["topic"], args["store"], **python),
        ("ledger", "index"), lambda s: words, cli_as=True,
        rest=("post", "/v1/ledger"), rest_args=lambda s: {"json": rest},
        mcp="memory_index", mcp_args=lambda s: dict(rest),
    )  # fmt: skip


# (column, the call at each door, the outcome every door gives)
CASES: dict[str, tuple[str, Doors, str]] = {
    "a store that is none of the five": ("operator", _index(store="graph", fact="x"), INVALID),
    "an entity of whitespace": ("app", _index(entity="  ", fact="x"), INVALID),
    "an empty fact": ("operator", _index(fact="  "), INVALID),
    "neither a fact nor a conflict": ("operator", _index(), INVALID),
    "metadata with no fact": ("steward", _index(conflict=True, metadata={"a": 1}), INVALID),
    "a reason with no conflict": ("operator", _index(fact="x", conflict_reason="r"), INVALID),
    "an agent indexing": ("agent", _index(fact="x"), DENIED),
    "a conflict-only write": ("steward", _index(conflict=True, conflict_reason="r"), OK),
    "the gate with no subject": ("agent", Doors(
        lambda svc, s: svc.gate(" ", "employer"),
        ("gate",), lambda s: [" ", "employer"], cli_as=True,
        rest=("get", "/v1/gate"),
        rest_args=lambda s: {"params": {"subject": " ", "predicate": "employer"}},
        mcp="memory_gate", mcp_args=lambda s: {"subject": " ", "predicate": "employer"},
    ), INVALID),
    "a query of an unsupported store": ("agent", Doors(
        lambda svc, s: svc.query(store="graph"),
        ("ledger", "query"), lambda s: ["--store", "graph"], cli_as=True,
        rest=("get", "/v1/ledger"), rest_args=lambda s: {"params": {"store": "graph"}},
        mcp="memory_query", mcp_args=lambda s: {"store": "graph"},
    ), OK),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_every_door_gives_the_same_outcome_and_a_refusal_writes_nothing(
    make_service: ServiceFactory, store_url: str, tmp_path: Path, case: str
) -> None:
    column, doors, expected = CASES[case]
    home = Path(store_url).parent if not store_url.startswith("postgres") else tmp_path / "home"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    operator = make_service()
    sample = set_up(operator, store_url, home, scratch)
    outcomes = {}
    for door in DOOR_NAMES:
        if not reaches(door, "index", column, doors):
            continue
        before = store_state(operator), operator.query()
        with door_of(door, operator, PRINCIPALS[column], sample) as call:
            outcomes[door] = call("index", doors)
        if expected != OK:
            assert (store_state(operator), operator.query()) == before, door
    assert set(outcomes) == set(DOOR_NAMES)
    assert outcomes == dict.fromkeys(outcomes, expected)


def _ledger(service: MemoryService) -> None:
    service.index("bob", "employer", "knowledge_graph", "acme", metadata={"source": "hr"})
    service.index("bob", "employer", "vector", "globex", conflict=True, conflict_reason="two")


def test_each_door_answers_as_the_service(service: MemoryService, tmp_path: Path) -> None:
    _ledger(service)
    expected_query = service.query(query="GLOBEX").to_dict()
    expected_gate = service.gate("Bob", "employer").to_dict()
    expected_stores = {"stores": [i.to_dict() for i in service.stores()]}
    assert expected_gate["contested"] and len(expected_gate["facts"]) == 2
    # REST
    client = TestClient(http.create_app(service))
    assert client.get("/v1/ledger", params={"query": "GLOBEX"}).json() == expected_query
    assert client.get("/v1/gate", params={"subject": "Bob", "predicate": "employer"}).json() == (
        expected_gate
    )
    assert client.get("/v1/ledger/stores").json() == expected_stores

    # MCP
    async def tools() -> list[Any]:
        async with Client(mcp_server(service, "operator:alice"), mode="legacy") as c:
            return [
                (await c.call_tool("memory_query", {"query": "GLOBEX"})).structured_content,
                (
                    await c.call_tool("memory_gate", {"subject": "Bob", "predicate": "employer"})
                ).structured_content,
                (await c.call_tool("memory_stores", {})).structured_content,
            ]

    assert anyio.run(tools) == [expected_query, expected_gate, expected_stores]
    # REST says whether an index wrote: 201, or 200 for a clear with nothing to clear
    clear = {"entity": "nobody", "topic": "t", "store": "vector", "conflict": False}
    assert client.post("/v1/ledger", json=clear).status_code == 200
    clear |= {"entity": "bob", "topic": "employer"}
    assert client.post("/v1/ledger", json=clear).status_code == 201
    assert client.get("/v1/ledger").json()["conflicts"] == []


def test_the_cli_indexes_queries_counts_and_gates(tmp_path: Path) -> None:
    home = ["--home", str(tmp_path / "home")]
    env = {"RETAIN_HOME": None, "RETAIN_DATABASE_URL": None, "COLUMNS": "200"}
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(cli, [*args, *home, "--format", "json"], env=env)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    done = run("ledger", "index", " Bob ", "Employer", "Vector", "--fact", "acme",
               "--metadata", '{"source": "hr"}')  # fmt: skip
    assert done["assertion"]["entity"] == "bob" and done["assertion"]["store"] == "vector"
    assert done["assertion"]["metadata"] == {"source": "hr"}
    assert not run("gate", "bob", "employer")["contested"]
    run("ledger", "index", "bob", "employer", "document", "--conflict", "--reason", "disputed")
    gate = run("gate", "bob", "employer")
    assert gate["contested"] and [c["store"] for c in gate["conflicts"]] == ["document"]
    found = run("ledger", "query", "--store", "nope", "-q", "DISPUTED")
    assert found["assertions"] == [] and len(found["conflicts"]) == 1
    stores = {s["store"]: s["record_count"] for s in run("ledger", "stores")["stores"]}
    assert (stores["vector"], stores["document"]) == (1, 1)
    run("ledger", "index", "bob", "employer", "document", "--clear-conflict")
    assert not run("gate", "bob", "employer")["contested"]
    # a refusal: the service's code, its exit status
    refused = runner.invoke(
        cli, ["ledger", "index", "bob", "employer", "graph", "--fact", "x", *home, "--format",
              "json"], env=env,
    )  # fmt: skip
    assert refused.exit_code != 0
    assert json.loads(refused.stderr)["error"]["code"] == INVALID
    bad_json = runner.invoke(
        cli, ["ledger", "index", "bob", "employer", "vector", "--fact", "x", "--metadata", "{",
              *home, "--format", "json"], env=env,
    )  # fmt: skip
    assert json.loads(bad_json.stderr)["error"]["code"] == INVALID
    table = runner.invoke(cli, ["gate", "bob", "employer", *home], env=env)
    assert table.exit_code == 0 and "Not contested: bob employer." in table.stdout
