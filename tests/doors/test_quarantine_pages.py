"""The quarantine queue's pages at the CLI, REST and MCP doors under access grants: a
reviewer granted one agent's records walks them in full pages, each once, and is given a
``next_cursor`` exactly when more of them follow (``retain quarantine list``,
``GET /v1/quarantine``, ``memory_list_quarantine``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import ServiceFactory
from tests.doors.cli_helpers import Retain
from tests.doors.test_mcp import call
from tests.test_quarantine_queue import ANN, restricted

from retain.chrono import ManualClock
from retain.config import Settings
from retain.doors import http, mcp
from retain.service import review

AGENTS = ("ada", "bea", "cy")
ROUNDS = 4  # each agent's held writes, the agents in turn
BEARER = {"Authorization": "Bearer t-ann"}
LIMIT = 2  # ada's four records: two full pages, the second with no cursor

Page = Callable[[str | None], dict[str, Any]]  # the page after a cursor (None: the first)


@pytest.fixture(autouse=True)
def small_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Store reads of the queue of three rows (a page and one), so a page spans several."""
    monkeypatch.setattr(review, "_QUEUE_READ", 2)


def walk(page: Page) -> list[dict[str, Any]]:
    """Every page, each from the ``next_cursor`` of the one before."""
    walked = [page(None)]
    while walked[-1]["next_cursor"] is not None:
        walked.append(page(walked[-1]["next_cursor"]))
    return walked


def assert_full_and_whole(walked: list[dict[str, Any]], ada: list[str]) -> None:
    assert [len(p["quarantine"]) for p in walked] == [LIMIT] * (ROUNDS // LIMIT)
    assert [r["id"] for p in walked for r in p["quarantine"]] == ada
    assert [p["next_cursor"] for p in walked] == [ada[1], None]  # more rows follow, not ada's


@pytest.fixture
def ada(make_service: ServiceFactory, clock: ManualClock) -> list[str]:
    """Three agents' held writes, interleaved: agent:ada's ids, oldest first."""
    setup = make_service()
    held = Settings(llm_writes="quarantined")
    for agent in AGENTS:
        setup.add_agent(agent)
    hers: list[str] = []
    for n in range(ROUNDS):
        for agent in AGENTS:
            kept = make_service(principal=f"agent:{agent}", settings=held).remember(f"note {n}")
            if agent == "ada":
                hers.append(kept.id)
            clock.advance(seconds=1)
    return hers


def test_rest_pages_are_full_and_the_cursor_comes_when_more_follow(
    ada: list[str], make_service: ServiceFactory
) -> None:
    ann = make_service(principal=ANN, settings=restricted())
    client = TestClient(http.create_app(ann, tokens={"t-ann": ANN}))

    def page(cursor: str | None) -> dict[str, Any]:
        params = {"limit": LIMIT} | ({"cursor": cursor} if cursor else {})
        answer = client.get(
            "/v1/quarantine", params=params, headers={"Authorization": "Bearer t-ann"}
        )
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    assert_full_and_whole(walk(page), ada)


def test_mcp_pages_are_full_and_the_cursor_comes_when_more_follow(
    ada: list[str], make_service: ServiceFactory
) -> None:
    ann = make_service(principal=ANN, settings=restricted())
    server = mcp.create_server(http.Services(ann).of, local_principal=ANN)

    def page(cursor: str | None) -> dict[str, Any]:
        arguments = {"limit": LIMIT} | ({"cursor": cursor} if cursor else {})
        found = call(server, "memory_list_quarantine", arguments).structured_content
        assert found is not None and "error" not in found, found
        return found

    assert_full_and_whole(walk(page), ada)


def test_cli_pages_are_full_and_the_cursor_comes_when_more_follow(retain: Retain) -> None:
    retain.home.mkdir(parents=True, exist_ok=True)
    config = retain.home / "config.toml"
    config.write_text('[memory]\nllm_writes = "quarantined"\n')
    for agent in AGENTS:
        retain.ok("agent", "add", agent)
    for n in range(ROUNDS):
        for agent in AGENTS:
            retain.ok("remember", f"note {n}", "--as", f"agent:{agent}")
    everyone = [r for p in walk(cli_pages(retain, "operator:local")) for r in p["quarantine"]]
    ada = [r["id"] for r in everyone if r["author"] == "agent:ada"]
    assert len(everyone) == ROUNDS * len(AGENTS) and len(ada) == ROUNDS
    grants = [
        ("operator:local", "realm.admin", "realm:default"),
        (ANN, "memory.quarantine.review", "identity:agent:ada"),
    ]
    lines = ["[access]", "control = true"]
    for subject, action, on in grants:
        lines += ["[[access.grant]]", f'subject = "{subject}"', f'action = "{action}"']
        lines += [f'on = "{on}"']
    config.write_text("\n".join(lines) + "\n")
    assert_full_and_whole(walk(cli_pages(retain, ANN)), ada)
    text = retain.ok("quarantine", "list", "--limit", str(LIMIT), "--as", ANN).stdout
    assert f"--cursor {ada[1]}" in text
    last = retain.ok(
        "quarantine", "list", "--limit", str(LIMIT), "--cursor", ada[1], "--as", ANN
    ).stdout
    assert ada[3] in last and "More after this page" not in last


def cli_pages(retain: Retain, principal: str) -> Page:
    def page(cursor: str | None) -> dict[str, Any]:
        after = ["--cursor", cursor] if cursor else []
        found: dict[str, Any] = retain.json(
            "quarantine", "list", "--limit", str(LIMIT), *after, "--as", principal
        )
        return found

    return page
