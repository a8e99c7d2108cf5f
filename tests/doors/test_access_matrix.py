"""The access matrix: every verb, as every kind of principal, under every state of its
grants (``[access] control = true``), at the Python door and, for the refusals, at the
CLI and REST doors.

The grants a column's principal holds, on the whole realm, for every action a verb may
need (``memory.read``, ``memory.write``, ``memory.delete``, ``team.memory.read``,
``memory.retier``, ``session.observe``, ``realm.admin``), are one of ``STATES``: none,
an allow, a deny, or an allow and a deny.
The outcome is written from the rule, not read from the code: the policy table's kinds
answer first (``test_matrix.EXPECTED``, by hand); a call its kind may make then needs
the allow, and a deny beats it, so only ``allow`` gives the table's outcome and every
other state ``access_denied``, with nothing written. The store is set up as the main
matrix's (with control off), and the set-up operator holds every action after.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import BACKENDS, fresh_schema, open_backend, store_state
from tests.doors.test_matrix import (
    COLUMNS,
    DENIED,
    EXPECTED,
    OK,
    OPEN,
    PRINCIPALS,
    VERBS,
    Cell,
    door_of,
    reaches,
    set_up,
)

from retain.chrono import ManualClock
from retain.config import AccessSettings, Settings
from retain.grants import Grant
from retain.service import MemoryService

STATES = ("none", "allow", "deny", "allow+deny")
ACTIONS = (
    "memory.read", "memory.write", "memory.delete", "team.memory.read", "memory.retier",
    "session.observe", "memory.quarantine.review", "ticket.decide", "realm.admin",
)  # fmt: skip
SETUP = "operator:set-up"
LONG = timedelta(days=36500)  # a ticket's life here: none expires while the matrix runs
LOCAL = "operator:local"  # a CLI command without --as
# The doors each state runs at: Python every one; the CLI and REST an allow (the grant
# reaches through the door) and a deny beating it (the refusal does).
DOOR_STATES = {"python": STATES, "rest": ("allow", "allow+deny"), "cli": ("allow", "allow+deny")}


def grants_of(column: str, state: str) -> list[tuple[str, str, str]]:
    """(subject, action, effect) of the config grants for ``column`` in ``state``."""
    made = [(SETUP, action, "allow") for action in ACTIONS]
    effects = {"none": (), "allow": ("allow",), "deny": ("deny",),
               "allow+deny": ("allow", "deny")}[state]  # fmt: skip
    subjects = {PRINCIPALS[column]} | ({LOCAL} if column == "operator" else set())
    for subject in sorted(subjects):
        made += [(subject, action, effect) for action in ACTIONS for effect in effects]
    return made


def settings_of(column: str, state: str) -> Settings:
    grants = tuple(
        Grant(subject, action, "realm:default", effect, id=f"config:{n}")
        for n, (subject, action, effect) in enumerate(grants_of(column, state), start=1)
    )
    return Settings(
        anonymous_writes=column == OPEN,
        access=AccessSettings(control=True, grants=grants),
        ticket_expire_after=LONG,
    )


def config_toml(column: str, state: str) -> str:
    """The same settings as ``config.toml`` writes them (the CLI reads its home's)."""
    # the CLI runs on the system clock, later than the set-up's: tickets outlast both
    lines = ["[tickets]", f'expire_after = "{LONG.days}d"']
    lines += ["[access]", f"anonymous_writes = {str(column == OPEN).lower()}", "control = true"]
    for subject, action, effect in grants_of(column, state):
        lines += ["[[access.grant]]", f'subject = "{subject}"', f'action = "{action}"',
                  'on = "realm:default"', f'effect = "{effect}"']  # fmt: skip
    return "\n".join(lines) + "\n"


def expected(verb: str, column: str, state: str) -> str:
    kinds = EXPECTED[verb][column]
    if kinds != OK:
        return kinds  # the policy table answers first
    return OK if state == "allow" else DENIED


class Runs:
    """The cells of one backend, a (column, state, door) at a time on a fresh store."""

    def __init__(self, backend: str, base: Path, postgres: Callable[[], str]) -> None:
        self.backend = backend
        self.base = base
        self.postgres = postgres
        self._cells: dict[tuple[str, str, str], dict[str, Cell]] = {}

    def cell(self, column: str, state: str, door: str, verb: str) -> Cell:
        if (column, state, door) not in self._cells:
            self._cells[column, state, door] = self._run(column, state, door)
        return self._cells[column, state, door][verb]

    def _run(self, column: str, state: str, door: str) -> dict[str, Cell]:
        where = Path(tempfile.mkdtemp(prefix=f"{column}-{state}-{door}-", dir=self.base))
        home, scratch = where / "home", where / "scratch"
        scratch.mkdir()
        home.mkdir()
        (home / "config.toml").write_text(config_toml(column, state))
        location = (
            str(home / "retain.db") if self.backend == "sqlite" else fresh_schema(self.postgres())
        )
        clock = ManualClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
        # set up with control off (its agents hold no grant in every state), then judged
        before_control = MemoryService(
            open_backend(location),
            settings=Settings(anonymous_writes=column == OPEN, ticket_expire_after=LONG),
            clock=clock,
            principal=SETUP,
        )
        try:
            sample = set_up(before_control, location, home, scratch, PRINCIPALS[column])
        finally:
            before_control.close()
        operator = MemoryService(
            open_backend(location),
            settings=settings_of(column, state),
            clock=clock,
            principal=SETUP,
        )
        try:
            with door_of(door, operator, PRINCIPALS[column], sample) as call:
                cells = {}
                for verb in VERBS:
                    if not reaches(door, verb, column):
                        continue
                    refused = expected(verb, column, state) != OK
                    before = store_state(operator) if refused else None
                    outcome = call(verb)
                    wrote = refused and outcome != OK and store_state(operator) != before
                    cells[verb] = Cell(outcome, wrote)
                return cells
        finally:
            operator.close()


def _cells() -> Iterator[Any]:
    for door, states in DOOR_STATES.items():
        for state in states:
            for column in COLUMNS:
                for verb in VERBS:
                    if reaches(door, verb, column):
                        yield pytest.param(
                            verb, column, state, door, id=f"{door}-{state}-{verb}-{column}"
                        )


@pytest.fixture(scope="module", params=BACKENDS)
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    backend = str(request.param)
    base = tmp_path_factory.mktemp(f"access-matrix-{backend}")
    return Runs(backend, base, lambda: str(request.getfixturevalue("postgres_url")))


@pytest.mark.parametrize(("verb", "column", "state", "door"), list(_cells()))
def test_each_door_gives_the_grants_outcome(
    runs: Runs, verb: str, column: str, state: str, door: str
) -> None:
    cell = runs.cell(column, state, door, verb)
    assert cell.outcome == expected(verb, column, state), (verb, column, state, door)
    if cell.outcome != OK:
        assert not cell.wrote, f"a refused {verb} as {column} ({state}) through {door} wrote"


def test_the_states_cover_every_action_a_verb_needs() -> None:
    from retain.service import access

    needed = {a for verb in VERBS for a in access.NEEDS[verb]}
    assert needed <= set(ACTIONS)  # else a state's allow would not be the whole allow


def test_every_door_refuses_to_revoke_a_config_grant(tmp_path: Path) -> None:
    """A grant of config.toml is read-only at every door: ``grant_read_only``, the same
    code, nothing written."""
    import json

    import anyio
    from click.testing import CliRunner
    from fastapi.testclient import TestClient
    from mcp import Client

    from retain.config import load_settings
    from retain.doors import http, mcp
    from retain.doors.cli import cli
    from retain.storage.sqlite import SqliteBackend

    home = tmp_path / "home"
    home.mkdir()
    filed = (SETUP, "memory.read", "realm:default")
    (home / "config.toml").write_text(config_toml("operator", "allow"))
    service = MemoryService(
        SqliteBackend(home / "retain.db"), settings=load_settings(home), principal=SETUP
    )
    try:
        before = store_state(service)
        outcomes = {}
        result = CliRunner().invoke(
            cli,
            ["access", "revoke", *filed, "--home", str(home), "--format", "json"],
            env={"RETAIN_HOME": None, "RETAIN_DATABASE_URL": None},
        )
        outcomes["cli"] = (result.exit_code, json.loads(result.stderr)["error"]["code"])
        with TestClient(http.create_app(service)) as client:
            answer = client.delete(
                "/v1/access/grants",
                params=dict(zip(("subject", "action", "on"), filed, strict=True)),
            )
            outcomes["rest"] = (answer.status_code, answer.json()["error"]["code"])
        server = mcp.create_server(http.Services(service).of, local_principal=SETUP)

        async def run() -> tuple[bool, str]:
            async with Client(server, mode="legacy") as client:
                args = dict(zip(("subject", "action", "on"), filed, strict=True))
                called = await client.call_tool("access_revoke", args)
            return called.is_error, (called.structured_content or {})["error"]["code"]

        outcomes["mcp"] = anyio.run(run)
        assert outcomes == {
            "cli": (4, "grant_read_only"),
            "rest": (409, "grant_read_only"),
            "mcp": (True, "grant_read_only"),
        }
        assert store_state(service) == before
    finally:
        service.close()
