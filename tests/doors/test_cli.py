"""The ``retain`` command line, driven through its real entry points.

Most tests run ``retain.doors.cli.cli`` under click's ``CliRunner`` against a
fresh ``--home``; a few run the installed console script in a subprocess to
prove the real entry point, its exit statuses and its stderr. Every refusal is
checked for its documented exit status, its error code and remedy (as text and
as ``--format json``), and for leaving the store exactly as it was.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shlex
import sqlite3
import stat
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from tests.conftest import Endpoint
from tests.test_ledger import EARLY, an_old_store

import retain as retain_pkg
from retain import errors
from retain.chrono import ManualClock
from retain.doors.cli import EXIT_BUG, EXIT_CODES, cli

RETAIN = Path(sys.executable).parent / "retain"

NOT_FOUND = 3
CONFLICT = 4
BUDGET = 5
EDIT_FAILED = 6
STALE = 7
TRANSFER = 8
INVALID = 9
INTEGRITY = 10
BUSY = 11
STORE = 12
CONFIG = 13
EMBEDDER = 14
ACCESS_DENIED = 15
RECALL_FAILED = 16
EXTRA_MISSING = 17
LISTEN_FAILED = 18
USAGE = 2
BUG = 70

RECORD_FIELDS = (
    "name",
    "project",
    "description",
    "priority",
    "load",
    "tags",
    "references",
    "source",
    "created_at",
    "updated_at",
    "verified_at",
    "expires_at",
    "read_count",
)
INLINE_REMEDY = "or set load: index on one that is not a standing rule"


# -- helpers --------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    """What a refused command printed: the text stderr and the JSON error."""

    stderr: str
    error: dict[str, Any]


class Retain:
    """``retain ... --home HOME`` under click's CliRunner."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.runner = CliRunner()

    def __call__(self, *args: str, env: Mapping[str, str | None] | None = None) -> Result:
        environment: dict[str, str | None] = {
            "COLUMNS": "200",
            "NO_COLOR": "1",
            "VISUAL": None,
            "EDITOR": None,
            "RETAIN_HOME": None,
            "RETAIN_DATABASE_URL": None,
        }
        environment.update(env or {})
        return self.runner.invoke(cli, [*args, "--home", str(self.home)], env=environment)

    def ok(self, *args: str, env: Mapping[str, str | None] | None = None) -> Result:
        result = self(*args, env=env)
        assert result.exit_code == 0, (result.output, result.exception)
        return result

    def json(self, *args: str, env: Mapping[str, str | None] | None = None) -> Any:
        return json.loads(self.ok(*args, "--format", "json", env=env).stdout)

    def get(self, name: str, project: str | None = None) -> dict[str, Any]:
        extra = ["--project", project] if project is not None else []
        data: dict[str, Any] = self.json("get", name, *extra)
        return data

    def body(self, name: str, project: str | None = None) -> str:
        extra = ["--project", project] if project is not None else []
        return str(self.json("show", name, *extra)["body"])

    def names(self, *args: str) -> list[str]:
        return [m["name"] for m in self.json("list", *args)["memories"]]

    def state(self) -> tuple[Any, ...]:
        """Everything a refused command must leave as it was."""
        status = self.json("status")
        return (
            self.json("list")["memories"],
            self.json("project", "list")["projects"],
            status["events"],
            status["chain_head"],
        )

    def refused(
        self,
        *args: str,
        status: int,
        code: str,
        remedy: str,
        env: Mapping[str, str | None] | None = None,
    ) -> Refusal:
        """Run ``args`` as text and as JSON: both refused, and nothing written."""
        before = self.state()
        text = self(*args, env=env)
        assert text.exit_code == status, (text.output, text.exception)
        assert text.stdout == ""
        assert f"[{code}]" in text.stderr
        assert remedy in text.stderr
        assert "Traceback" not in text.stderr
        as_json = self(*args, "--format", "json", env=env)
        assert as_json.exit_code == status, (as_json.output, as_json.exception)
        assert as_json.stdout == ""
        error: dict[str, Any] = json.loads(as_json.stderr)["error"]
        assert error["code"] == code
        assert remedy in error["remedy"]
        assert error["message"]
        assert self.state() == before
        return Refusal(text.stderr, error)


def run_script(
    home: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The installed console script, with RETAIN_HOME pointing at ``home``."""
    environment = {k: v for k, v in os.environ.items() if k not in ("VISUAL", "EDITOR")}
    environment.update({"RETAIN_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"})
    environment.update(env or {})
    return subprocess.run(
        [str(RETAIN), *args], capture_output=True, env=environment, timeout=120, check=False
    )


def on_a_terminal(home: Path, *args: str, env: Mapping[str, str] | None = None) -> bytes:
    """What the console script writes to a real terminal (a pty as its stdin and stdout)."""
    leader, follower = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("VISUAL", "EDITOR")}
    environment.update({"RETAIN_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"})
    environment.update(env or {})
    try:
        process = subprocess.run(
            [str(RETAIN), *args],
            stdin=follower,
            stdout=follower,
            stderr=subprocess.PIPE,
            env=environment,
            timeout=120,
            check=False,
        )
    finally:
        os.close(follower)
    assert process.returncode == 0, process.stderr
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return b"".join(chunks)


def configure(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def inline_budget(home: Path, limit: int) -> None:
    configure(home, f"[memory]\ninline_max_bytes = {limit}\n")


def editor(tmp_path: Path, code: str, name: str = "editor.py") -> str:
    """An $EDITOR command: a Python script in which ``path`` is the file to edit."""
    script = tmp_path / name
    script.write_text(
        "import pathlib, sys\npath = pathlib.Path(sys.argv[1])\n" + code + "\n", encoding="utf-8"
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def write_snapshot(directory: Path, files: Mapping[str, str], version: int = 1) -> Path:
    """A snapshot directory as `retain export` lays one out."""
    directory.mkdir(parents=True)
    (directory / "export.toml").write_text(f"format_version = {version}\n", encoding="utf-8")
    for relative, text in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return directory


def frontmatter(raw: bytes) -> dict[str, Any]:
    assert raw.startswith(b"---\n")
    end = raw.index(b"\n---\n")
    data: dict[str, Any] = yaml.safe_load(raw[4 : end + 1].decode("utf-8"))
    return data


def drop_from_index(home: Path, name: str) -> None:
    """Remove one memory from the full-text index behind retain's back."""
    with closing(sqlite3.connect(home / "retain.db")) as con:
        row = con.execute(
            "SELECT num, name, description, body FROM memories WHERE name = ?", (name,)
        ).fetchone()
        con.execute(
            "INSERT INTO memories_fts(memories_fts, rowid, name, description, body) "
            "VALUES ('delete', ?, ?, ?, ?)",
            row,
        )
        con.commit()


@pytest.fixture
def retain(tmp_path: Path) -> Retain:
    return Retain(tmp_path / "home")


@pytest.fixture
def webdev(retain: Retain) -> Retain:
    """A store with project webdev."""
    retain.ok("project", "add", "webdev")
    return retain


# -- the real entry point ----------------------------------------------------------------


def test_exit_statuses_are_the_documented_ones() -> None:
    documented = {
        errors.NotFound: NOT_FOUND,
        errors.Conflict: CONFLICT,
        errors.BudgetExceeded: BUDGET,
        errors.EditFailed: EDIT_FAILED,
        errors.StaleUpdate: STALE,
        errors.TransferError: TRANSFER,
        errors.InvalidInput: INVALID,
        errors.IntegrityFailed: INTEGRITY,
        errors.StoreBusy: BUSY,
        errors.StoreError: STORE,
        errors.ConfigInvalid: CONFIG,
        errors.EmbedderError: EMBEDDER,
        errors.AccessDenied: ACCESS_DENIED,
        errors.RecallFailed: RECALL_FAILED,
        errors.ExtraMissing: EXTRA_MISSING,
        errors.ListenFailed: LISTEN_FAILED,
    }
    assert documented == EXIT_CODES
    assert EXIT_BUG == BUG


def test_console_script_saves_and_shows_a_body_byte_exact(tmp_path: Path) -> None:
    home = tmp_path / "home"
    body = b"\r\n\xe2\x80\x8dfirst line\r\nsecond\tline\r\n\r\n"
    source = tmp_path / "notes.md"
    source.write_bytes(body)
    saved = run_script(home, "add", "notes", "-d", "Meeting notes", "--from-file", str(source))
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.startswith(b"Saved memory 'notes' (priority 5, global).")
    shown = run_script(home, "show", "notes")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == body
    assert shown.stderr == b""


def test_console_script_refusal_exits_with_its_status_code_and_remedy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_script(home, "add", "tz", "-d", "Alice is in UTC+8").returncode == 0
    again = run_script(home, "add", "tz", "-d", "Alice is in UTC+9")
    assert again.returncode == CONFLICT
    assert again.stdout == b""
    stderr = again.stderr.decode()
    assert "[memory_exists]" in stderr
    assert "retain add --force" in stderr
    assert "Traceback" not in stderr
    as_json = run_script(home, "get", "ghost", "--format", "json")
    assert as_json.returncode == NOT_FOUND
    assert as_json.stdout == b""
    error = json.loads(as_json.stderr)["error"]
    assert error["code"] == "not_found"
    assert "retain list" in error["remedy"]
    listed = json.loads(run_script(home, "list", "--format", "json").stdout)
    assert [m["description"] for m in listed["memories"]] == ["Alice is in UTC+8"]


def test_console_script_finds_the_store_through_retain_home_or_home(tmp_path: Path) -> None:
    home = tmp_path / "from-env"
    assert run_script(home, "project", "add", "webdev").returncode == 0
    status = json.loads(run_script(home, "status", "--format", "json").stdout)
    assert status["location"] == str(home / "retain.db")
    assert status["projects"] == 1
    flag = tmp_path / "from-flag"
    other = run_script(home, "status", "--format", "json", "--home", str(flag))
    assert json.loads(other.stdout)["location"] == str(flag / "retain.db")
    assert json.loads(other.stdout)["projects"] == 0


def test_console_script_turns_an_unexpected_exception_into_exit_70(tmp_path: Path) -> None:
    code = (
        "import sys, retain, retain.doors.cli as door\n"
        "def broken(*args, **kw): raise RuntimeError('boom')\n"
        "retain.open = broken\n"
        "sys.argv = ['retain', 'status']\n"
        "door.main()\n"
    )
    env = dict(os.environ, RETAIN_HOME=str(tmp_path / "home"))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, timeout=120, check=False
    )
    assert result.returncode == BUG
    stderr = result.stderr.decode()
    assert "internal error (a bug in retain; please report it)" in stderr
    assert "RuntimeError: boom" in stderr


def test_console_script_prints_its_version(tmp_path: Path) -> None:
    result = run_script(tmp_path / "home", "--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"retain, version {retain_pkg.__version__}"


def test_add_refuses_body_and_from_file_together_as_a_usage_error(
    retain: Retain, tmp_path: Path
) -> None:
    source = tmp_path / "body.md"
    source.write_text("from the file", encoding="utf-8")
    result = retain("add", "n", "-d", "d", "--body", "inline", "--from-file", str(source))
    assert result.exit_code == USAGE
    assert "give --body or --from-file, not both" in result.stderr
    assert retain.names() == []


def test_add_refuses_an_unknown_load_as_a_usage_error(retain: Retain) -> None:
    result = retain("add", "n", "-d", "d", "--load", "always")
    assert result.exit_code == USAGE
    assert "--load" in result.stderr
    assert retain.names() == []


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


# -- add ----------------------------------------------------------------------------------------

FREEZE = (
    "freeze",
    "--description",
    "No deploys this week",
    "--body",
    "Until the freeze ends on the 25th.",
    "--priority",
    "2",
    "--tag",
    "ops",
    "--tag",
    "deploy",
    "--load",
    "inline",
    "--source",
    "ops, in chat",
    "--expires",
    "2030-10-25T18:00:00+02:00",
    "--reference",
    "deploy-host",
    "--reference",
    "https://wiki.example/ops",
)


def test_add_stores_every_option_given(webdev: Retain) -> None:
    result = webdev.ok("add", *FREEZE, "--project", "webdev")
    assert result.stdout.startswith("Saved memory 'freeze' (priority 2, project webdev).")
    memory = webdev.get("freeze")
    assert {k: memory[k] for k in RECORD_FIELDS if not k.endswith("_at") or k == "expires_at"} == {
        "name": "freeze",
        "project": "webdev",
        "description": "No deploys this week",
        "priority": 2,
        "load": "inline",
        "tags": ["ops", "deploy"],
        "references": ["deploy-host", "https://wiki.example/ops"],
        "source": "ops, in chat",
        "expires_at": "2030-10-25T16:00:00.000000Z",
        "read_count": 0,
    }
    assert memory["expired"] is False
    assert memory["created_at"] == memory["updated_at"] == memory["verified_at"]
    assert webdev.body("freeze") == "Until the freeze ends on the 25th."


def test_add_json_reports_the_memory_and_that_it_was_created(retain: Retain) -> None:
    data = retain.json("add", "tz", "-d", "K4YT3X is in UTC+8", "--priority", "2")
    assert data["name"] == "tz"
    assert data["priority"] == 2
    assert (data["created"], data["changed"], data["notes"]) == (True, True, [])


def test_add_without_a_project_files_the_memory_globally(webdev: Retain) -> None:
    assert "(priority 5, global)." in webdev.ok("add", "a", "-d", "Alpha").stdout
    webdev.ok("add", "b", "-d", "Beta", "--project", "")
    assert sorted(webdev.names("--project", "")) == ["a", "b"]
    assert webdev.names("--project", "webdev") == []


def test_add_collapses_the_description_to_one_line(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "  first line\n  second\tline  ")
    assert retain.get("n")["description"] == "first line second line"


def test_add_notes_a_description_longer_than_200_characters(retain: Retain) -> None:
    result = retain.ok("add", "n", "-d", "word " * 50)
    assert "The description is 249 characters long" in result.stdout
    assert retain.names() == ["n"]


def test_add_names_a_memory_whose_description_says_nearly_the_same(retain: Retain) -> None:
    retain.ok("add", "alice-timezone", "-d", "Alice is in the UTC+8 timezone")
    result = retain.ok("add", "alice-tz", "-d", "Alice is in the UTC+8 timezone zone")
    assert "Note: 'alice-timezone' already says something very similar" in result.stdout
    assert sorted(retain.names()) == ["alice-timezone", "alice-tz"]


@pytest.mark.parametrize(
    "body",
    [
        b"one\r\ntwo\r\n",
        b"\n\nleading and trailing blank lines\n\n\n",
        b"zero\xe2\x80\x8dwidth\xe2\x80\x8djoiners\n",
        b"\xef\xbb\xbfstarts with a byte order mark\n",
        b"no final newline",
        b"",
    ],
    ids=["crlf", "blank-lines", "zwj", "bom", "no-final-newline", "empty"],
)
def test_add_from_file_keeps_the_body_byte_exact(
    retain: Retain, tmp_path: Path, body: bytes
) -> None:
    source = tmp_path / "body.md"
    source.write_bytes(body)
    retain.ok("add", "n", "-d", "A note", "--from-file", str(source))
    assert retain.body("n").encode("utf-8") == body


def test_add_expires_date_means_the_whole_of_that_local_day(tmp_path: Path) -> None:
    result = run_script(
        tmp_path / "home",
        "add",
        "freeze",
        "-d",
        "No deploys",
        "--expires",
        "2026-10-25",
        "--format",
        "json",
        env={"TZ": "SGT-8"},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["expires_at"] == "2026-10-25T16:00:00.000000Z"


def test_add_expires_date_uses_the_offset_in_force_on_that_day(tmp_path: Path) -> None:
    berlin = "CET-1CEST,M3.5.0,M10.5.0/3"
    expected = {
        "2027-01-15": "2027-01-15T23:00:00.000000Z",  # ends at 2027-01-16 00:00 CET
        "2027-07-15": "2027-07-15T22:00:00.000000Z",  # ends at 2027-07-16 00:00 CEST
    }
    got = {}
    for day in expected:
        result = run_script(
            tmp_path / "home",
            "add",
            f"freeze-{day}",
            "-d",
            f"No deploys on {day}",
            "--expires",
            day,
            "--format",
            "json",
            env={"TZ": berlin},
        )
        assert result.returncode == 0, result.stderr
        got[day] = json.loads(result.stdout)["expires_at"]
    assert got == expected


def test_add_records_subject_thread_and_valid_from_and_clears_them(retain: Retain) -> None:
    retain.ok(
        "add",
        *("miso", "-d", "She is called Miso", "--subject", "Caroline", "--thread", "chat-1"),
        *("--valid-from", "2023-05-08T13:56:00+02:00"),
    )
    memory = retain.get("miso")
    assert (memory["subject"], memory["thread"], memory["valid_from"]) == (
        "Caroline",
        "chat-1",
        "2023-05-08T11:56:00.000000Z",
    )
    retain.ok("add", "miso", "--force", "--priority", "3")  # kept when not mentioned
    assert retain.get("miso")["thread"] == "chat-1"
    retain.ok("add", "miso", "--force", "--subject", "", "--thread", "", "--valid-from", "")
    memory = retain.get("miso")
    assert (memory["subject"], memory["thread"], memory["valid_from"]) == (None, None, None)


def test_add_valid_from_date_means_the_start_of_that_local_day(tmp_path: Path) -> None:
    result = run_script(
        tmp_path / "home",
        *("add", "miso", "-d", "She is called Miso", "--valid-from", "2023-05-08"),
        *("--format", "json"),
        env={"TZ": "SGT-8"},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["valid_from"] == "2023-05-07T16:00:00.000000Z"


def test_add_force_keeps_every_field_it_does_not_mention(retain: Retain) -> None:
    retain.ok("add", *FREEZE)
    before = retain.get("freeze")
    result = retain.ok("add", "freeze", "--force", "-d", "No deploys until the freeze ends")
    assert result.stdout.startswith("Updated memory 'freeze' (priority 2, global).")
    after = retain.get("freeze")
    assert after["description"] == "No deploys until the freeze ends"
    kept = [k for k in RECORD_FIELDS if k not in ("description", "updated_at")] + ["id"]
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    assert after["updated_at"] > before["updated_at"]
    assert retain.body("freeze") == "Until the freeze ends on the 25th."


def test_add_force_updates_a_project_memory_named_with_its_project(webdev: Retain) -> None:
    webdev.ok("add", *FREEZE, "--project", "webdev")
    webdev.ok("add", "freeze", "--force", "-p", "webdev", "--priority", "1")
    memory = webdev.get("freeze")
    assert (memory["project"], memory["priority"]) == ("webdev", 1)
    assert memory["tags"] == ["ops", "deploy"]


def test_add_force_verified_moves_only_the_verified_stamp(retain: Retain) -> None:
    retain.ok("add", "tz", "-d", "K4YT3X is in UTC+8", "--priority", "2", "--tag", "people")
    before = retain.get("tz")
    assert retain.json("read", "tz")["caption"].startswith("Recorded today, not verified since.")
    retain.ok("add", "tz", "--force", "--verified")
    after = retain.get("tz")
    assert after["verified_at"] > before["verified_at"]
    assert after["created_at"] == before["created_at"]
    same = ("description", "priority", "tags", "load", "references", "source", "expires_at")
    assert {k: after[k] for k in same} == {k: before[k] for k in same}
    assert retain.json("read", "tz")["caption"].startswith("Recorded today, verified today.")


def test_add_force_with_nothing_new_leaves_the_memory_unchanged(retain: Retain) -> None:
    retain.ok("add", "tz", "-d", "K4YT3X is in UTC+8", "--tag", "people")
    before = retain.state()
    result = retain.ok("add", "tz", "--force", "-d", "K4YT3X is in UTC+8", "--tag", "people")
    assert result.stdout.startswith("Unchanged: memory 'tz' (priority 5, global).")
    assert retain.state() == before
    data = retain.json("add", "tz", "--force")
    assert (data["created"], data["changed"]) == (False, False)
    assert retain.state() == before


def test_add_force_clears_body_expiry_tags_and_references_when_asked(retain: Retain) -> None:
    retain.ok(
        "add",
        "n",
        "-d",
        "A note",
        "--body",
        "text",
        "--expires",
        "2030-01-01",
        "--tag",
        "infra",
        "--reference",
        "deploy-host",
        "--source",
        "chat",
    )
    retain.ok(
        "add",
        "n",
        "--force",
        "--body",
        "",
        "--expires",
        "",
        "--no-tags",
        "--no-references",
        "--source",
        "",
    )
    memory = retain.get("n")
    assert memory["expires_at"] is None
    assert memory["tags"] == []
    assert memory["references"] == []
    assert memory["source"] == "chat"  # a blank source is the field omitted
    assert retain.body("n") == ""


def test_add_force_on_an_expired_memory_keeps_it_expired_and_says_so(retain: Retain) -> None:
    retain.ok("add", "old", "-d", "An old fact", "--expires", "2020-01-01T00:00:00Z")
    result = retain.ok("add", "old", "--force", "-d", "An old fact, reworded")
    assert "'old' stays expired (since 2020-01-01T00:00:00.000000Z)" in result.stdout
    assert retain.get("old")["expired"] is True
    retain.ok("add", "old", "--force", "--expires", "")
    assert retain.get("old")["expired"] is False


def test_add_force_creates_a_memory_that_does_not_exist(retain: Retain) -> None:
    assert retain.json("add", "new", "--force", "-d", "A new note")["created"] is True
    assert retain.names() == ["new"]


def test_add_tier_moves_a_memory_between_the_global_tier_and_a_project(webdev: Retain) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm")
    moved = webdev.ok("add", "stack", "--force", "-p", "webdev", "--tier", "project")
    assert "(priority 5, project webdev)." in moved.stdout
    assert "Moved 'stack' from the global tier to webdev." in moved.stdout
    assert webdev.names("-p", "webdev") == ["stack"]
    assert webdev.names("-p", "") == []
    back = webdev.ok("add", "stack", "--force", "-p", "webdev", "--tier", "global")
    assert "(priority 5, global)." in back.stdout
    assert "Moved 'stack' from the webdev tier to global." in back.stdout
    assert webdev.names("-p", "") == ["stack"]


def test_add_force_from_a_project_keeps_a_global_memory_global(webdev: Retain) -> None:
    webdev.ok("add", "tone", "-d", "Answer in kind")
    result = webdev.ok("add", "tone", "--force", "-p", "webdev", "-d", "Answer in their language")
    assert "(priority 5, global)." in result.stdout
    assert webdev.get("tone")["project"] is None


def test_add_refused_when_the_name_exists_in_the_tier(retain: Retain) -> None:
    retain.ok("add", "tz", "-d", "Alice is in UTC+8")
    retain.refused(
        "add",
        "tz",
        "-d",
        "Alice is in UTC+9",
        status=CONFLICT,
        code="memory_exists",
        remedy="retain add --force",
    )


def test_add_to_a_project_refused_when_the_name_is_global(webdev: Retain) -> None:
    webdev.ok("add", "tz", "-d", "Alice is in UTC+8")
    webdev.refused(
        "add",
        "tz",
        "-d",
        "Alice is in UTC+9",
        "-p",
        "webdev",
        status=CONFLICT,
        code="memory_exists",
        remedy="choose another name",
    )


def test_add_refused_when_name_is_a_projects_and_the_write_is_global(webdev: Retain) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    refusal = webdev.refused(
        "add",
        "stack",
        "-d",
        "A global stack",
        status=CONFLICT,
        code="name_conflict",
        remedy="choose another name",
    )
    assert refusal.error["details"]["tiers"] == ["webdev"]
    webdev.refused(
        "add",
        "stack",
        "--force",
        "-d",
        "A global stack",
        status=CONFLICT,
        code="name_conflict",
        remedy="choose another name",
    )


def test_move_to_global_refused_when_another_project_holds_the_name(webdev: Retain) -> None:
    webdev.ok("project", "add", "movie")
    webdev.ok("add", "notes", "-d", "Webdev notes", "-p", "webdev")
    webdev.ok("add", "notes", "-d", "Movie notes", "-p", "movie")
    webdev.refused(
        "add",
        "notes",
        "--force",
        "-p",
        "webdev",
        "--tier",
        "global",
        status=CONFLICT,
        code="name_conflict",
        remedy="choose another name",
    )


def test_two_projects_may_hold_the_same_name(webdev: Retain) -> None:
    webdev.ok("project", "add", "movie")
    webdev.ok("add", "notes", "-d", "Webdev notes", "-p", "webdev")
    webdev.ok("add", "notes", "-d", "Movie notes", "-p", "movie")
    records = webdev.json("list")["memories"]
    assert sorted((m["name"], m["project"]) for m in records) == [
        ("notes", "movie"),
        ("notes", "webdev"),
    ]
    assert webdev.get("notes", project="movie")["description"] == "Movie notes"


@pytest.mark.parametrize(
    ("args", "code", "remedy"),
    [
        (["bad name", "-d", "d"], "invalid_name", "letters, digits"),
        (["n"], "description_required", "describe it in one line"),
        (["n", "-d", "   "], "description_required", "describe it in one line"),
        (["n", "-d", "d", "--priority", "10"], "invalid_value", "from 0 (most important) to 9"),
        (["n", "-d", "d", "--priority=-1"], "invalid_value", "from 0 (most important) to 9"),
        (["n", "-d", "d", "--tag", "two words"], "invalid_value", "without spaces or commas"),
        (["n", "-d", "d", "--tag", "a,b"], "invalid_value", "without spaces or commas"),
        (["n", "-d", "d", "--source", "one\ntwo"], "invalid_value", "in one line"),
        (["n", "-d", "d", "--reference", "one\ntwo"], "invalid_value", "as one line"),
        (
            ["n", "-d", "d", *[f"--reference=ref-{i}" for i in range(21)]],
            "too_many_references",
            "truly depends on",
        ),
        (["n", "-d", "d", "--expires", "next week"], "invalid_time", "2026-10-25T18:00:00Z"),
        (["n", "-d", "d", "--expires", "2026-02-30"], "invalid_time", "a real date"),
        (["n", "-d", "d", "--expires", "2026-10-25T18:00:00"], "invalid_time", "add an offset"),
        (["n", "-d", "d", "--tier", "project"], "no_project", "pass a project"),
        (["n", "-d", "d", "--subject", "one\ntwo"], "invalid_value", "in one line"),
        (["n", "-d", "d", "--thread", "one\ntwo"], "invalid_value", "in one line"),
        (["n", "-d", "d", "--valid-from", "last spring"], "invalid_time", "2026-10-25T18:00:00Z"),
    ],
    ids=[
        "name",
        "no-description",
        "blank-description",
        "priority-high",
        "priority-negative",
        "tag-space",
        "tag-comma",
        "source-lines",
        "reference-lines",
        "21-references",
        "expires-garbage",
        "expires-no-such-date",
        "expires-no-zone",
        "project-tier-without-project",
        "subject-lines",
        "thread-lines",
        "valid-from-garbage",
    ],
)
def test_add_refused_for_invalid_input(
    retain: Retain, args: list[str], code: str, remedy: str
) -> None:
    retain.refused("add", *args, status=INVALID, code=code, remedy=remedy)


def test_add_from_a_file_that_is_not_utf8_is_refused_not_crashed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = tmp_path / "latin1.txt"
    source.write_bytes(b"caf\xe9 \xff\xfe")
    result = run_script(home, "add", "n", "-d", "d", "--from-file", str(source))
    assert "Traceback" not in result.stderr.decode()
    assert result.returncode in (USAGE, INVALID)
    assert json.loads(run_script(home, "list", "--format", "json").stdout)["memories"] == []


# -- the inline budget ------------------------------------------------------------------------


def test_add_refused_past_the_inline_budget(retain: Retain) -> None:
    inline_budget(retain.home, 100)
    retain.ok("add", "r1", "-d", "Rule one", "--load", "inline", "--body", "é" * 30)  # 60 bytes
    refusal = retain.refused(
        "add",
        "r2",
        "-d",
        "Rule two",
        "--load",
        "inline",
        "--body",
        "b" * 41,
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )
    assert "[memory] inline_max_bytes" in refusal.stderr
    assert "shorten 'r1'" in refusal.stderr
    assert "'r2'" in refusal.stderr
    details = refusal.error["details"]
    assert (details["total_bytes"], details["budget_bytes"]) == (101, 100)
    assert [m["name"] for m in details["largest"]] == ["r1", "r2"]
    assert retain.names() == ["r1"]
    retain.ok("add", "r2", "-d", "Rule two", "--load", "inline", "--body", "b" * 40)
    assert retain.json("status")["inline_bytes"] == 100


def test_budget_refusal_states_a_total_above_the_budget(retain: Retain) -> None:
    inline_budget(retain.home, 100)
    retain.ok("add", "r1", "-d", "Rule one", "--load", "inline", "--body", "a" * 60)
    result = retain("add", "r2", "-d", "Rule two", "--load", "inline", "--body", "b" * 50)
    assert result.exit_code == BUDGET
    match = re.search(r"would total (.+?) against the (.+?) inline budget", result.stderr)
    assert match is not None
    assert match.group(1) != match.group(2)


def test_inline_budget_counts_only_inline_bodies_in_force(retain: Retain) -> None:
    inline_budget(retain.home, 100)
    retain.ok("add", "manual", "-d", "Listed by description", "--body", "x" * 500)
    retain.ok(
        "add",
        "gone",
        "-d",
        "An expired rule",
        "--load",
        "inline",
        "--expires",
        "2020-01-01T00:00:00Z",
        "--body",
        "y" * 500,
    )
    retain.ok("add", "empty", "-d", "An empty rule", "--load", "inline")
    retain.ok("add", "rule", "-d", "The standing rule", "--load", "inline", "--body", "z" * 100)
    status = retain.json("status")
    assert (status["inline_bytes"], status["inline_max_bytes"]) == (100, 100)


def test_inline_budget_is_measured_per_band_of_global_and_project(webdev: Retain) -> None:
    inline_budget(webdev.home, 100)
    webdev.ok("project", "add", "movie")
    webdev.ok("add", "g", "-d", "Global rule", "--load", "inline", "--body", "g" * 60)
    webdev.ok("add", "w", "-d", "Web rule", "-p", "webdev", "--load", "inline", "--body", "w" * 30)
    webdev.ok("add", "m", "-d", "Movie rule", "-p", "movie", "--load", "inline", "--body", "m" * 30)
    # A project write counts the global bodies and the project's.
    webdev.refused(
        "add",
        *("w2", "-d", "Second webdev rule", "-p", "webdev", "--load", "inline", "--body", "v" * 20),
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )
    # A global write counts the global bodies and the fullest project's.
    webdev.refused(
        "add",
        *("g2", "-d", "Second global rule", "--load", "inline", "--body", "h" * 20),
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )
    webdev.ok("add", "g3", "-d", "Small global rule", "--load", "inline", "--body", "h" * 10)
    assert webdev.json("status")["inline_bytes"] == 100


def test_write_that_shrinks_an_over_budget_store_goes_through(retain: Retain) -> None:
    inline_budget(retain.home, 1000)
    retain.ok("add", "r1", "-d", "Rule one", "--load", "inline", "--body", "a" * 60)
    retain.ok("add", "r2", "-d", "Rule two", "--load", "inline", "--body", "b" * 50)
    inline_budget(retain.home, 80)
    retain.ok("add", "r1", "--force", "--body", "a" * 40)  # 90 bytes: over, but smaller
    retain.refused(
        "add",
        "r1",
        "--force",
        "--body",
        "a" * 45,
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )
    retain.ok("add", "r2", "--force", "--load", "index")
    assert retain.json("status")["inline_bytes"] == 40


def test_add_force_setting_load_inline_refused_past_the_budget(retain: Retain) -> None:
    inline_budget(retain.home, 100)
    retain.ok("add", "r1", "-d", "Rule one", "--load", "inline", "--body", "a" * 60)
    retain.ok("add", "long", "-d", "A long note", "--body", "b" * 50)
    retain.refused(
        "add",
        "long",
        "--force",
        "--load",
        "inline",
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )


def test_edit_refused_past_the_inline_budget(retain: Retain) -> None:
    inline_budget(retain.home, 100)
    retain.ok("add", "r1", "-d", "Rule one", "--load", "inline", "--body", "a" * 60)
    retain.refused(
        "edit",
        "r1",
        "--old",
        "a",
        "--new",
        "aa",
        "--replace-all",
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )


# -- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "remedy"),
    [
        ("[memory\n", "fix the file's TOML"),
        ('[memory]\ninline_max_bytes = "lots"\n', "inline_max_bytes = 32768"),
        ("[memory]\ninline_max_bytes = -1\n", "inline_max_bytes = 32768"),
        ("[memory]\ninline_max_bytes = true\n", "inline_max_bytes = 32768"),
        ("memory = 3\n", "write it as a [memory] section"),
    ],
    ids=["not-toml", "string", "negative", "boolean", "not-a-table"],
)
def test_invalid_config_is_refused_with_exit_13(retain: Retain, config: str, remedy: str) -> None:
    configure(retain.home, config)
    for args in (["list"], ["add", "n", "-d", "A note"], ["status"]):
        text = retain(*args)
        assert text.exit_code == CONFIG, text.output
        assert "[config_invalid]" in text.stderr
        assert remedy in text.stderr
        assert "config.toml" in text.stderr
        as_json = retain(*args, "--format", "json")
        assert as_json.exit_code == CONFIG
        assert json.loads(as_json.stderr)["error"]["code"] == "config_invalid"
    (retain.home / "config.toml").unlink()
    assert retain.names() == []


@pytest.mark.parametrize(
    ("config", "remedy"),
    [
        ('[search]\nembedder = "bogus"\n', "set embedder = 'static' (the default)"),
        ("[search]\nembedder = 3\n", 'write it in quotes, like embedder = "..."'),
        ('[search]\nembedder = "model2vec"\n', "set model = a local path"),
        ('[search]\nembedder = "http"\nmodel = "m"\n', "set url = 'http://host:port/v1'"),
        ("search = 3\n", "write it as a [search] section"),
    ],
    ids=["unknown-embedder", "not-text", "no-model", "http-without-url", "not-a-table"],
)
def test_invalid_search_config_is_refused_with_exit_13(
    retain: Retain, config: str, remedy: str
) -> None:
    configure(retain.home, config)
    for args in (["search", "kestrel"], ["add", "n", "-d", "A note"], ["status"]):
        text = retain(*args)
        assert text.exit_code == CONFIG, text.output
        assert "[config_invalid]" in text.stderr
        assert remedy in text.stderr
        as_json = retain(*args, "--format", "json")
        assert as_json.exit_code == CONFIG
        assert json.loads(as_json.stderr)["error"]["code"] == "config_invalid"


def test_config_sets_the_inline_budget_status_reports(retain: Retain) -> None:
    inline_budget(retain.home, 4096)
    assert retain.json("status")["inline_max_bytes"] == 4096


# -- get, show, read --------------------------------------------------------------------------


def test_get_prints_every_stored_field_and_what_references_it(webdev: Retain) -> None:
    webdev.ok("add", "deploy-host", "-d", "Where deploys go", "--source", "ops wiki")
    webdev.ok("add", "runbook", "-d", "Runbook", "-p", "webdev", "--reference", "deploy-host")
    data = webdev.get("deploy-host")
    assert set(RECORD_FIELDS) | {"referenced_by"} <= set(data)
    assert "body" not in data
    assert data["referenced_by"] == ["webdev/runbook"]
    assert data["source"] == "ops wiki"
    for key in ("created_at", "updated_at", "verified_at"):
        assert datetime.fromisoformat(data[key]).utcoffset() is not None
    table = webdev.ok("get", "deploy-host").stdout
    for shown in ("referenced_by", "webdev/runbook", "ops wiki", "Where deploys go"):
        assert shown in table


def test_get_with_a_project_also_sees_the_global_tier(webdev: Retain) -> None:
    webdev.ok("add", "tone", "-d", "Answer in kind")
    assert webdev.get("tone", project="webdev")["project"] is None


def test_show_prints_the_body_byte_exact(retain: Retain, tmp_path: Path) -> None:
    body = b"line one\r\n\xe2\x80\x8d\r\n\r\n"
    source = tmp_path / "body.md"
    source.write_bytes(body)
    retain.ok("add", "n", "-d", "A note", "--from-file", str(source))
    assert retain.ok("show", "n").stdout_bytes == body


def test_show_of_an_empty_body_prints_nothing(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note")
    assert retain.ok("show", "n").stdout_bytes == b""


def test_show_prints_a_body_without_final_newline_byte_exact(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run_script(home, "add", "n", "-d", "A note", "--body", "one\r\ntwo").returncode == 0
    assert run_script(home, "show", "n").stdout == b"one\r\ntwo"


def test_show_json_carries_the_body_as_stored(webdev: Retain) -> None:
    webdev.ok("add", "n", "-d", "A note", "-p", "webdev", "--body", "one\r\ntwo")
    data = webdev.json("show", "n")
    assert data["body"] == "one\r\ntwo"
    assert data["project"] == "webdev"
    assert "referenced_by" not in data


def test_read_pages_a_long_body_by_character_offset(retain: Retain, tmp_path: Path) -> None:
    source = tmp_path / "long.md"
    source.write_text("é" * 16_000 + "tail", encoding="utf-8")
    retain.ok("add", "long", "-d", "A long note", "--from-file", str(source))
    first = retain.json("read", "long")
    assert first["text"] == "é" * 16_000
    assert (first["offset"], first["next_offset"], first["total_chars"]) == (0, 16_000, 16_004)
    assert first["read_count"] == 1
    assert first["caption"].endswith("A point-in-time note, not live state.")
    second = retain.json("read", "long", "--offset", "16000")
    assert (second["text"], second["next_offset"]) == ("tail", None)
    assert second["description"] == "A long note"
    assert second["caption"] == first["caption"]
    assert second["read_count"] == 1  # only the first page counts as a read
    page = retain.ok("read", "long").stdout
    assert page.startswith("long: A long note\nRecorded today, not verified since.")
    assert "[4 more characters: --offset 16000]" in page
    rest = retain.ok("read", "long", "--offset", "16000").stdout
    assert rest.startswith("long: A long note\n")
    assert "tail" in rest
    assert "more characters" not in rest
    assert retain.get("long")["read_count"] == 2


@pytest.mark.parametrize("offset", ["--offset=6", "--offset=-1"], ids=["past-end", "negative"])
def test_read_refused_for_an_offset_outside_the_body(retain: Retain, offset: str) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "short")
    retain.refused(
        "read",
        "n",
        offset,
        status=INVALID,
        code="invalid_value",
        remedy="pass 0 or a continuation offset",
    )


def test_read_shows_references_with_their_descriptions_and_backlinks(retain: Retain) -> None:
    retain.ok("add", "deploy-host", "-d", "Where deploys go")
    retain.ok(
        "add",
        *("runbook", "-d", "Deploy runbook", "--body", "Step one."),
        *("--reference", "deploy-host", "--reference", "https://wiki.example/ops"),
    )
    retain.ok("add", "checklist", "-d", "Release checklist", "--reference", "runbook")
    data = retain.json("read", "runbook")
    assert data["references"] == [
        {"target": "deploy-host", "description": "Where deploys go"},
        {"target": "https://wiki.example/ops", "description": None},
    ]
    assert data["referenced_by"] == ["checklist"]
    text = retain.ok("read", "runbook").stdout
    assert "Step one." in text
    assert "References: deploy-host — Where deploys go" in text
    assert "References: https://wiki.example/ops\n" in text
    assert "Referenced by: checklist" in text


def test_only_read_counts_as_a_read(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note about deploys", "--body", "text")
    retain.ok("get", "n")
    retain.ok("show", "n")
    retain.ok("search", "deploys")
    retain.ok("list")
    assert retain.get("n")["read_count"] == 0
    retain.ok("read", "n")
    assert retain.get("n")["read_count"] == 1


LOOKUPS = [
    ["get"],
    ["show"],
    ["read"],
    ["remove"],
    ["edit", "--old", "body", "--new", "text"],
]


@pytest.mark.parametrize("command", LOOKUPS, ids=lambda c: c[0])
def test_lookup_refused_when_the_name_is_in_several_projects(
    webdev: Retain, command: list[str]
) -> None:
    webdev.ok("project", "add", "movie")
    webdev.ok("add", "notes", "-d", "Webdev notes", "--body", "body", "-p", "webdev")
    webdev.ok("add", "notes", "-d", "Movie notes", "--body", "body", "-p", "movie")
    refusal = webdev.refused(
        command[0],
        "notes",
        *command[1:],
        status=CONFLICT,
        code="ambiguous_name",
        remedy="name the project the call means (`--project`)",
    )
    assert refusal.error["details"]["projects"] == ["movie", "webdev"]
    webdev.ok(command[0], "notes", *command[1:], "--project", "movie")


@pytest.mark.parametrize("command", LOOKUPS, ids=lambda c: c[0])
def test_lookup_refused_for_a_name_no_memory_has(retain: Retain, command: list[str]) -> None:
    retain.ok("add", "notes", "-d", "Notes", "--body", "body")
    retain.refused(
        command[0], "ghost", *command[1:], status=NOT_FOUND, code="not_found", remedy="retain list"
    )


def test_empty_project_looks_in_the_global_tier_alone(webdev: Retain) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    webdev.refused(
        "show", "stack", "--project", "", status=NOT_FOUND, code="not_found", remedy="retain list"
    )
    assert webdev.get("stack", project="webdev")["project"] == "webdev"


UNKNOWN_PROJECT = [
    ["add", "fresh", "-d", "A fresh note", "--project", "nope"],
    ["list", "--project", "nope"],
    ["search", "kind", "--project", "nope"],
    ["get", "tone", "--project", "nope"],
    ["show", "tone", "--project", "nope"],
    ["read", "tone", "--project", "nope"],
    ["edit", "tone", "--old", "kind", "--new", "type", "--project", "nope"],
    ["remove", "tone", "--project", "nope"],
    ["project", "remove", "nope"],
    ["project", "rename", "nope", "other"],
]


@pytest.mark.parametrize("args", UNKNOWN_PROJECT, ids=lambda a: "-".join(a[:2]))
def test_unknown_project_is_refused(retain: Retain, args: list[str]) -> None:
    retain.ok("add", "tone", "-d", "Answer in kind", "--body", "kind")
    refusal = retain.refused(
        *args,
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add nope",
    )
    assert refusal.error["details"]["project"] == "nope"


# -- list ---------------------------------------------------------------------------------------


def test_list_is_in_index_order_priority_then_newest_first(retain: Retain) -> None:
    for name, priority in (("a", "5"), ("b", "2"), ("c", "5"), ("d", "0")):
        retain.ok("add", name, "-d", f"Note {name}", "--priority", priority)
    assert retain.names() == ["d", "b", "c", "a"]


def test_list_table_shows_a_scope_column(webdev: Retain) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    webdev.ok("add", "tone", "-d", "Answer in kind", "--priority", "1")
    lines = webdev.ok("list").stdout.splitlines()
    header = next(line for line in lines if "Name" in line)
    assert "Scope" in header
    assert "Pri" in header
    stack = next(line for line in lines if "stack" in line)
    assert "project:webdev" in stack
    tone = next(line for line in lines if "tone" in line)
    assert "webdev" not in tone
    assert "global" in tone
    assert lines.index(tone) < lines.index(stack)


def test_list_project_picks_one_tier_and_empty_picks_global(webdev: Retain) -> None:
    webdev.ok("project", "add", "movie")
    webdev.ok("add", "tone", "-d", "Answer in kind")
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    webdev.ok("add", "plot", "-d", "The trailer plan", "-p", "movie")
    assert sorted(webdev.names()) == ["plot", "stack", "tone"]
    assert webdev.names("--project", "webdev") == ["stack"]
    assert webdev.names("--project", "movie") == ["plot"]
    assert webdev.names("--project", "") == ["tone"]


def test_list_tag_keeps_the_memories_with_that_tag(retain: Retain) -> None:
    retain.ok("add", "a", "-d", "Note a", "--tag", "infra", "--tag", "people")
    retain.ok("add", "b", "-d", "Note b", "--tag", "people")
    retain.ok("add", "c", "-d", "Note c")
    assert retain.names("--tag", "infra") == ["a"]
    assert sorted(retain.names("--tag", "people")) == ["a", "b"]
    assert retain.names("--tag", "nothing") == []


def test_list_referencing_finds_what_cites_a_memory_or_a_path(webdev: Retain) -> None:
    webdev.ok("add", "deploy-host", "-d", "Where deploys go")
    webdev.ok("add", "runbook", "-d", "Deploy runbook", "--reference", "deploy-host")
    webdev.ok(
        "add",
        *("cfg", "-d", "Config lives here", "-p", "webdev"),
        *("--reference", "/etc/retain/config.toml"),
    )
    webdev.ok("add", "other", "-d", "Unrelated")
    assert webdev.names("--referencing", "deploy-host") == ["runbook"]
    assert webdev.names("--referencing", "/etc/retain/config.toml") == ["cfg"]


def test_list_unverified_lists_what_was_not_checked_within_the_period(
    retain: Retain, tmp_path: Path
) -> None:
    snapshot = write_snapshot(
        tmp_path / "snap",
        {"old.md": "---\ndescription: An old fact\ncreated: '2020-01-01T00:00:00Z'\n---\nbody"},
    )
    retain.ok("import", str(snapshot))
    retain.ok("add", "fresh", "-d", "A fresh fact")
    assert retain.names("--unverified", "90d") == ["old"]
    assert sorted(retain.names("--unverified", "0s")) == ["fresh", "old"]
    retain.ok("add", "old", "--force", "--verified")
    assert retain.names("--unverified", "90d") == []


def test_list_expired_lists_what_is_past_its_expiry(retain: Retain) -> None:
    retain.ok("add", "gone", "-d", "Freeze is over", "--expires", "2020-01-01T00:00:00Z")
    retain.ok("add", "later", "-d", "Freeze to come", "--expires", "2999-01-01")
    retain.ok("add", "always", "-d", "Standing rule")
    assert retain.names("--expired") == ["gone"]
    gone = next(line for line in retain.ok("list").stdout.splitlines() if "gone" in line)
    assert "expired" in gone


def test_list_json_is_an_object_of_memories_without_body_or_backlinks(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "text")
    data = retain.json("list")
    assert list(data) == ["memories", "next_cursor"]
    (record,) = data["memories"]
    assert set(RECORD_FIELDS) <= set(record)
    assert "body" not in record
    assert "referenced_by" not in record


@pytest.mark.parametrize(
    ("args", "code", "remedy"),
    [
        (["--unverified", "ninety days"], "invalid_time", "such as 90d"),
        (["--tag", "two words"], "invalid_value", "without spaces or commas"),
    ],
    ids=["duration", "tag"],
)
def test_list_refused_for_a_bad_filter(
    retain: Retain, args: list[str], code: str, remedy: str
) -> None:
    retain.refused("list", *args, status=INVALID, code=code, remedy=remedy)


# -- search -------------------------------------------------------------------------------------


@pytest.fixture
def corpus(webdev: Retain) -> Retain:
    webdev.ok("project", "add", "movie")
    webdev.ok("add", "deploy", "-d", "How the service ships", "--body", "Deploys run nightly")
    webdev.ok("add", "zh", "-d", "Meeting times", "--body", "我们使用北京时间安排会议")
    webdev.ok("add", "terse", "-d", "Prefers terse replies", "--priority", "1")
    webdev.ok("add", "brief", "-d", "Wants brevity in summaries")
    webdev.ok("add", "stack", "-d", "Deploys with pnpm", "-p", "webdev")
    webdev.ok("add", "plot", "-d", "Deploys the trailer", "-p", "movie")
    webdev.ok("add", "marker", "-d", "Section break", "--body", "end of part ~~")
    return webdev


def hit_names(data: dict[str, Any]) -> set[str]:
    return {m["name"] for m in data["memories"]}


def test_search_fuses_several_queries_as_synonyms(corpus: Retain) -> None:
    configure(corpus.home, '[search]\nembedder = "none"\n')  # the words alone
    assert hit_names(corpus.json("search", "terse")) == {"terse"}
    assert hit_names(corpus.json("search", "brevity")) == {"brief"}
    data = corpus.json("search", "terse", "brevity", "verbosity")
    assert data["listing"] is False
    assert hit_names(data) == {"terse", "brief"}
    assert data["summary"] == "2 of 2 matching memories, best first"


def test_search_finds_by_meaning_by_default(retain: Retain) -> None:
    retain.ok("add", "pet", "--description", "Our cat sleeps on the sofa all afternoon")
    retain.ok("add", "car", "--description", "The truck needs new tyres before winter")
    data = retain.json("search", "kitten")
    found = [(m["name"], m["senses"]) for m in data["memories"]]
    assert found == [("pet", ["semantic"])]
    assert (data["embedder"], data["degraded"]) == ("static:minilm-l6-static-256", None)


@pytest.mark.parametrize(
    ("query", "name", "sense"),
    [
        ("deploying", "deploy", "stem"),
        ("deployment", "deploy", "prefix"),
        ("北京时间", "zh", "scan"),
        ("~~", "marker", "text"),
    ],
)
def test_search_says_which_sense_answered(
    corpus: Retain, query: str, name: str, sense: str
) -> None:
    hits = {m["name"]: m for m in corpus.json("search", query)["memories"]}
    assert sense in hits[name]["senses"]


def test_search_names_the_terms_a_plain_text_scan_answered(corpus: Retain) -> None:
    (hit,) = corpus.json("search", "北京时间")["memories"]
    assert hit["scanned"] == ["北京时间"]
    row = next(line for line in corpus.ok("search", "北京时间").stdout.splitlines() if "zh" in line)
    # The senses that answered, then the terms the scan matched: "scan, semantic (北京时间)".
    assert re.search(r"\bscan\b[^│]*\(北京时间\)", row), row


def test_search_on_a_project_sees_its_tier_and_the_global_one(corpus: Retain) -> None:
    assert hit_names(corpus.json("search", "deploys")) == {"deploy", "stack", "plot"}
    assert hit_names(corpus.json("search", "deploys", "--project", "webdev")) == {
        "deploy",
        "stack",
    }
    assert hit_names(corpus.json("search", "deploys", "--tier", "global")) == {"deploy"}
    tier = corpus.json("search", "deploys", "--project", "webdev", "--tier", "project")
    assert hit_names(tier) == {"stack"}
    table = corpus.ok("search", "deploys", "--project", "webdev").stdout
    assert "2 of 2 matching memories, best first" in table
    stack = next(line for line in table.splitlines() if "stack" in line)
    assert "webdev" in stack
    assert "stem" in stack


def test_search_limit_caps_the_hits(corpus: Retain) -> None:
    data = corpus.json("search", "deploys", "--limit", "1")
    assert len(data["memories"]) == 1
    assert data["summary"] == "1 of 3 matching memories, best first"


@pytest.mark.parametrize("limit", ["0", "201"])
def test_search_refused_for_a_limit_out_of_range(corpus: Retain, limit: str) -> None:
    corpus.refused(
        "search",
        "deploys",
        "--limit",
        limit,
        status=INVALID,
        code="invalid_value",
        remedy="ask for 1 to 200 results",
    )


def test_search_of_the_project_tier_refused_without_a_project(corpus: Retain) -> None:
    corpus.refused(
        "search",
        "deploys",
        "--tier",
        "project",
        status=INVALID,
        code="no_project",
        remedy="pass a project",
    )


def test_search_results_carry_enough_to_act_on(retain: Retain) -> None:
    retain.ok(
        "add",
        *("freeze", "-d", "Deploy freeze", "--body", "No deploys", "--priority", "2"),
        *("--expires", "2020-01-01T00:00:00Z"),
    )
    retain.ok("add", "handbook", "-d", "Deploy handbook", "--body", "deploy " * 100)
    retain.ok("add", "handbook", "--force", "--verified")
    hits = {m["name"]: m for m in retain.json("search", "deploy")["memories"]}
    assert set(hits) == {"handbook", "freeze"}  # an expired memory is found, marked
    assert (hits["freeze"]["expired"], hits["handbook"]["expired"]) == (True, False)
    (freeze,) = retain.json("search", "deploy", "--expired")["memories"]
    assert freeze["body"] == "No deploys"
    assert (freeze["expired"], freeze["verified"]) == (True, False)
    assert (freeze["priority"], freeze["read_count"], freeze["age"]) == (2, 0, "today")
    assert freeze["description"] == "Deploy freeze"
    assert isinstance(freeze["score"], float)
    handbook = hits["handbook"]
    assert "body" not in handbook  # too long to carry
    assert handbook["verified"] is True
    rows = retain.ok("search", "deploy").stdout.splitlines()
    assert "verified" in next(line for line in rows if "handbook" in line)
    for flags in ((), ("--expired",)):
        rows = retain.ok("search", "deploy", *flags).stdout.splitlines()
        assert "expired" in next(line for line in rows if "freeze" in line)


def test_search_without_queries_is_a_filtered_listing(retain: Retain) -> None:
    retain.ok("add", "deploy-host", "-d", "Where deploys go")
    retain.ok("add", "checklist", "-d", "Release checklist", "--reference", "deploy-host")
    retain.ok("add", "runbook", "-d", "Runbook", "--reference", "deploy-host", "--priority", "2")
    data = retain.json("search", "--referencing", "deploy-host")
    assert data["listing"] is True
    assert data["summary"] == "2 memories referencing 'deploy-host', most important first"
    assert [m["name"] for m in data["memories"]] == ["runbook", "checklist"]


def test_search_packs_results_into_a_token_budget(retain: Retain) -> None:
    retain.ok("add", "big", "-d", "kestrel guide", "--body", "x" * 387)  # 100 tokens
    retain.ok("add", "small", "-d", "kestrel seen", "--body", "y" * 28)  # 10 tokens
    data = retain.json("search", "kestrel", "--budget", "50")
    assert [m["name"] for m in data["memories"]] == ["small"]
    assert data["summary"] == "1 of 2 matching memories, best first, within 50 tokens"
    data = retain.json("search", "kestrel", "--budget", "110", "--limit", "1")
    assert [m["name"] for m in data["memories"]] == ["big", "small"]  # all fit: all of them


def test_search_refused_for_a_budget_below_one_token(retain: Retain) -> None:
    retain.ok("add", "small", "-d", "kestrel seen")
    retain.refused(
        "search", "kestrel", "--budget", "0", status=INVALID, code="invalid_value", remedy="2000"
    )


def test_search_reports_the_embedder_it_used(retain: Retain) -> None:
    retain.ok("add", "tz", "-d", "Alice is in UTC+8")
    data = retain.json("search", "alice")
    assert (data["embedder"], data["degraded"]) == ("static:minilm-l6-static-256", None)
    configure(retain.home, '[search]\nembedder = "none"\n')
    data = retain.json("search", "alice")
    assert (data["embedder"], data["degraded"]) == ("none", None)
    assert [m["name"] for m in data["memories"]] == ["tz"]


# -- edit -----------------------------------------------------------------------------------------


def test_edit_replaces_the_text_once_and_shows_the_lines_around_it(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\ntwo\nthree\nfour\nfive\nsix\nseven\n")
    result = retain.ok("edit", "n", "--old", "four", "--new", "FOUR")
    assert result.stdout.startswith("Edited 'n' (1 replacement):\n")
    assert "two\nthree\nFOUR\nfive\nsix\n" in result.stdout
    assert "one" not in result.stdout
    assert "seven" not in result.stdout
    assert retain.body("n") == "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n"
    data = retain.json("edit", "n", "--old", "FOUR", "--new", "4")
    assert data["replacements"] == 1
    assert "4\n" in data["excerpt"]


def test_edit_replace_all_replaces_every_occurrence(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "foo bar foo")
    result = retain.ok("edit", "n", "--old", "foo", "--new", "baz", "--replace-all")
    assert result.stdout.startswith("Edited 'n' (2 replacements):")
    assert retain.body("n") == "baz bar baz"


def test_edit_without_new_deletes_the_text(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "keep this, drop this")
    retain.ok("edit", "n", "--old", ", drop this")
    assert retain.body("n") == "keep this"


def test_edit_keeps_the_line_endings_of_untouched_lines(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "a\r\nb\r\nc\r\n")
    retain.ok("edit", "n", "--old", "b", "--new", "B")
    assert retain.body("n") == "a\r\nB\r\nc\r\n"


def test_edit_moves_the_verified_stamp_only_when_asked(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one two")
    created = retain.get("n")
    retain.ok("edit", "n", "--old", "one", "--new", "1")
    edited = retain.get("n")
    assert edited["verified_at"] == created["verified_at"]
    assert edited["updated_at"] > created["updated_at"]
    retain.ok("edit", "n", "--old", "two", "--new", "2", "--verified")
    assert retain.get("n")["verified_at"] > created["verified_at"]


@pytest.mark.parametrize(
    ("args", "status", "code", "remedy"),
    [
        (["--old", "absent", "--new", "x"], EDIT_FAILED, "edit_no_match", "copy the text exactly"),
        (["--old", "foo", "--new", "x"], EDIT_FAILED, "edit_ambiguous", "replace_all"),
        (["--old", "", "--new", "x"], INVALID, "invalid_value", "give the exact text"),
    ],
    ids=["no-match", "ambiguous", "empty-old"],
)
def test_edit_refused_when_the_text_cannot_be_replaced(
    retain: Retain, args: list[str], status: int, code: str, remedy: str
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "foo bar foo")
    retain.refused("edit", "n", *args, status=status, code=code, remedy=remedy)


def test_interactive_edit_saves_what_the_editor_wrote(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\ntwo\n")
    before = retain.get("n")
    command = editor(tmp_path, "path.write_text(path.read_text().replace('two', 'TWO'))")
    result = retain.ok("edit", "n", "--editor", command)
    assert "Updated the body of 'n'." in result.stdout
    assert retain.body("n") == "one\nTWO\n"
    assert retain.get("n")["verified_at"] == before["verified_at"]
    command = editor(tmp_path, "path.write_text(path.read_text().replace('one', 'ONE'))")
    data = retain.json("edit", "n", "--verified", "--editor", command)
    assert data["verified_at"] > before["verified_at"]
    assert retain.body("n") == "ONE\nTWO\n"


def test_interactive_edit_on_a_terminal_prefers_visual_over_editor(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\ntwo\n")
    visual = editor(tmp_path, "path.write_text('from visual\\n')", "visual.py")
    plain = editor(tmp_path, "path.write_text('from editor\\n')", "editor.py")
    printed = on_a_terminal(retain.home, "edit", "n", env={"VISUAL": visual, "EDITOR": plain})
    assert b"Updated the body of 'n'." in printed
    assert retain.body("n") == "from visual\n"
    on_a_terminal(retain.home, "edit", "n", env={"EDITOR": plain})
    assert retain.body("n") == "from editor\n"


def test_edit_without_a_terminal_refuses_to_start_an_editor(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\n")
    marker = tmp_path / "opened"
    command = editor(tmp_path, f"pathlib.Path({str(marker)!r}).touch()")
    retain.refused(
        "edit",
        "n",
        env={"VISUAL": command, "EDITOR": command},
        status=INVALID,
        code="no_terminal",
        remedy="give the change with --old and --new",
    )
    assert not marker.exists()
    assert retain.body("n") == "one\n"


def test_edit_refuses_old_and_editor_together_as_a_usage_error(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\n")
    result = retain("edit", "n", "--old", "one", "--new", "two", "--editor", "true")
    assert result.exit_code == USAGE
    assert retain.body("n") == "one\n"


@pytest.mark.parametrize(
    "code", ["pass", "path.write_bytes(path.read_bytes())"], ids=["not-saved", "saved-as-is"]
)
def test_interactive_edit_with_no_change_leaves_the_memory_unchanged(
    retain: Retain, tmp_path: Path, code: str
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\ntwo\n")
    before = retain.state()
    result = retain.ok("edit", "n", "--editor", editor(tmp_path, code))
    assert "No change to 'n'." in result.stdout
    assert retain.state() == before


def test_interactive_edit_saving_no_change_keeps_a_body_without_final_newline(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\ntwo")
    command = editor(tmp_path, "path.write_bytes(path.read_bytes())")
    result = retain.ok("edit", "n", "--editor", command)
    assert "No change to 'n'." in result.stdout
    assert retain.body("n") == "one\ntwo"


def test_interactive_edit_keeps_crlf_line_endings(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\r\ntwo\r\nthree\r\n")
    command = editor(tmp_path, "path.write_bytes(path.read_bytes().replace(b'two', b'TWO'))")
    retain.ok("edit", "n", "--editor", command)
    assert retain.body("n") == "one\r\nTWO\r\nthree\r\n"


def test_interactive_edit_keeps_a_leading_byte_order_mark(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "\ufeffone two\n")
    command = editor(tmp_path, "path.write_bytes(path.read_bytes().replace(b'two', b'TWO'))")
    retain.ok("edit", "n", "--editor", command)
    assert retain.body("n") == "\ufeffone TWO\n"


def test_interactive_edit_refused_when_the_memory_changed_meanwhile(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "original\n")
    meanwhile = [str(RETAIN), "add", "n", "--force", "--body", "changed meanwhile"]
    meanwhile += ["--home", str(retain.home)]
    code = (
        f"import subprocess\nsubprocess.run({meanwhile!r}, check=True, capture_output=True)\n"
        "path.write_text(path.read_text() + 'mine\\n')"
    )
    result = retain("edit", "n", "--editor", editor(tmp_path, code))
    assert result.exit_code == STALE, result.output
    assert "[stale_update]" in result.stderr
    assert "read it again and redo the change" in result.stderr
    assert retain.body("n") == "changed meanwhile"


def test_interactive_edit_refused_past_the_inline_budget(retain: Retain, tmp_path: Path) -> None:
    inline_budget(retain.home, 100)
    retain.ok("add", "r", "-d", "A rule", "--load", "inline", "--body", "a" * 60)
    retain.refused(
        "edit",
        "r",
        "--editor",
        editor(tmp_path, "path.write_text(path.read_text() + 'b' * 50)"),
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )
    assert retain.body("r") == "a" * 60


def test_interactive_edit_of_an_unknown_memory_never_opens_the_editor(
    retain: Retain, tmp_path: Path
) -> None:
    marker = tmp_path / "opened"
    command = editor(tmp_path, f"pathlib.Path({str(marker)!r}).touch()")
    retain.refused(
        "edit",
        "ghost",
        "--editor",
        command,
        status=NOT_FOUND,
        code="not_found",
        remedy="retain list",
    )
    assert not marker.exists()


def test_interactive_edit_whose_editor_fails_leaves_the_memory_unchanged(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\n")
    before = retain.state()
    command = editor(tmp_path, "path.write_text('clobbered')\nsys.exit(1)")
    result = retain("edit", "n", "--editor", command)
    assert result.exit_code == 1
    assert "Editing failed" in result.stderr
    assert retain.state() == before


# -- remove ---------------------------------------------------------------------------------


def test_remove_names_the_memories_that_still_reference_it(webdev: Retain) -> None:
    webdev.ok("add", "deploy-host", "-d", "Where deploys go")
    webdev.ok("add", "runbook", "-d", "Deploy runbook", "--reference", "deploy-host")
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev", "--reference", "deploy-host")
    result = webdev.ok("remove", "deploy-host")
    assert "Removed memory 'deploy-host'." in result.stdout
    still = next(line for line in result.stdout.splitlines() if "Still referenced by" in line)
    assert "runbook" in still
    assert "webdev/stack" in still
    assert "kept as markers to revisit" in still
    assert sorted(webdev.names()) == ["runbook", "stack"]
    assert webdev.get("runbook")["references"] == ["deploy-host"]
    assert sorted(webdev.names("--referencing", "deploy-host")) == ["runbook", "stack"]


def test_remove_json_reports_the_backlinks(webdev: Retain) -> None:
    webdev.ok("add", "wiki", "-d", "The wiki")
    webdev.ok("add", "runbook", "-d", "Deploy runbook", "--reference", "wiki")
    wiki = webdev.json("remove", "wiki")
    assert (wiki["removed"], wiki["referenced_by"]) == ("wiki", ["runbook"])
    runbook = webdev.json("remove", "runbook")
    assert (runbook["removed"], runbook["referenced_by"]) == ("runbook", [])
    assert webdev.names() == []


# -- export and import ------------------------------------------------------------------------


def test_export_writes_one_markdown_file_per_memory_byte_exact(
    webdev: Retain, tmp_path: Path
) -> None:
    body = b"\r\n\xe2\x80\x8dfirst\r\nlast\r\n\r\n"
    source = tmp_path / "notes.md"
    source.write_bytes(body)
    webdev.ok("project", "add", "movie")
    webdev.ok(
        "add",
        *("notes", "-d", "Meeting notes", "--from-file", str(source), "--priority", "2"),
        *("--load", "inline", "--tag", "meetings", "--reference", "deploy-host"),
        *("--source", "chat", "--expires", "2030-01-01T00:00:00Z"),
    )
    webdev.ok("add", "plan", "-d", "Webdev plan", "-p", "webdev")
    webdev.ok("add", "plan", "-d", "Movie plan", "-p", "movie")
    target = tmp_path / "backup"
    result = webdev.ok("export", "--directory", str(target))
    assert f"Exported 3 memories to {target}." in result.stdout

    raw = (target / "notes.md").read_bytes()
    assert raw.endswith(b"\n---\n" + body)
    head = frontmatter(raw)
    assert head == {
        "description": "Meeting notes",
        "priority": 2,
        "load": "inline",
        "created": webdev.get("notes")["created_at"],
        "expires": "2030-01-01T00:00:00.000000Z",
        "source": "chat",
        "read_count": 0,
        "references": ["deploy-host"],
        "tags": ["meetings"],
    }
    plan = frontmatter((target / "webdev" / "plan.md").read_bytes())
    assert (plan["project"], plan["description"]) == ("webdev", "Webdev plan")
    assert "priority" not in plan
    assert "load" not in plan
    assert frontmatter((target / "movie" / "plan.md").read_bytes())["project"] == "movie"
    manifest = tomllib.loads((target / "export.toml").read_text(encoding="utf-8"))
    assert manifest["format_version"] == 1

    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    for path in target.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_export_tightens_an_existing_empty_directory_to_0700(
    retain: Retain, tmp_path: Path
) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    target.chmod(0o755)
    retain.ok("add", "n", "-d", "A note")
    retain.ok("export", "-o", str(target))
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    assert sorted(p.name for p in target.iterdir()) == ["export.toml", "n.md"]


def test_export_refused_for_a_directory_that_is_not_empty(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "A note")
    target = tmp_path / "backup"
    target.mkdir()
    (target / "stale.md").write_text("old", encoding="utf-8")
    retain.refused(
        "export",
        "--directory",
        str(target),
        status=TRANSFER,
        code="export_target_not_empty",
        remedy="a snapshot is never merged",
    )
    assert [p.name for p in target.iterdir()] == ["stale.md"]


def test_export_refused_for_an_unknown_project_writes_nothing(
    retain: Retain, tmp_path: Path
) -> None:
    target = tmp_path / "backup"
    retain.refused(
        "export",
        "--directory",
        str(target),
        "--project",
        "nope",
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add nope",
    )
    assert not target.exists()


def test_export_project_writes_that_tier_alone(webdev: Retain, tmp_path: Path) -> None:
    webdev.ok("add", "tone", "-d", "Answer in kind")
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    target = tmp_path / "backup"
    data = webdev.json("export", "--directory", str(target), "--project", "webdev")
    assert data == {"directory": str(target), "memories": 1, "left_out": 0}
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert files == ["export.toml", "webdev/stack.md"]


def test_export_leaves_out_agents_memories_and_says_so(retain: Retain, tmp_path: Path) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("remember", "a private note", "--as", "agent:planner")
    retain.ok("add", "tone", "-d", "Answer in kind")
    text = retain.ok("export", "--directory", str(tmp_path / "snap")).stdout
    assert "Exported 1 memories" in text
    assert "Left out 1 agent memories" in text
    files = sorted(p.name for p in (tmp_path / "snap").rglob("*.md"))
    assert files == ["tone.md"]


def test_import_restores_a_snapshot_with_its_dates_and_read_counts(
    webdev: Retain, tmp_path: Path
) -> None:
    source = tmp_path / "notes.md"
    source.write_bytes(b"first\r\n\r\nlast\xe2\x80\x8d\r\n")
    webdev.ok(
        "add",
        *("notes", "-d", "Meeting notes", "--from-file", str(source), "--tag", "meetings"),
        *("--source", "chat", "--expires", "2030-01-01T00:00:00Z", "--reference", "plan"),
    )
    webdev.ok("add", "plan", "-d", "Webdev plan", "-p", "webdev", "--priority", "1")
    webdev.ok("read", "notes")
    webdev.ok("read", "notes")
    webdev.ok("add", "notes", "--force", "--verified")
    snapshot = tmp_path / "snap"
    webdev.ok("export", "--directory", str(snapshot))

    other = Retain(tmp_path / "other")
    other.refused(
        "import",
        str(snapshot),
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add webdev",
    )
    other.ok("project", "add", "webdev")
    result = other.ok("import", str(snapshot))
    assert "Imported 2 memories (2 new, 0 overwritten)." in result.stdout
    restored = [k for k in RECORD_FIELDS if k != "updated_at"]
    for name in ("notes", "plan"):
        mine, theirs = webdev.get(name), other.get(name)
        assert {k: theirs[k] for k in restored} == {k: mine[k] for k in restored}
        assert other.body(name) == webdev.body(name)
    assert other.get("notes")["read_count"] == 2
    assert other.get("notes")["verified_at"] > other.get("notes")["created_at"]


def test_import_refused_for_a_memory_the_store_holds_until_force(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "Original", "--body", "mine")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {
            "n.md": "---\ndescription: From the file\ncreated: '2024-01-01T00:00:00Z'\n---\ntheirs",
            "fresh.md": "---\ndescription: Fresh\ncreated: '2024-01-01T00:00:00Z'\n---\nnew",
        },
    )
    refusal = retain.refused(
        "import", str(snapshot), status=CONFLICT, code="memory_exists", remedy="--force"
    )
    assert refusal.error["details"]["name"] == "n"
    assert retain.names() == ["n"]  # fresh.md did not land either
    data = retain.json("import", str(snapshot), "--force")
    assert data == {"imported": 2, "created": 1, "updated": 1}
    assert retain.body("n") == "theirs"
    assert retain.get("n")["description"] == "From the file"


def test_import_force_restores_the_created_date_of_the_file(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "Original", "--body", "mine")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {"n.md": "---\ndescription: From the file\ncreated: '2024-01-01T00:00:00Z'\n---\nx"},
    )
    retain.ok("import", str(snapshot), "--force")
    memory = retain.get("n")
    assert memory["verified_at"] == "2024-01-01T00:00:00.000000Z"
    assert memory["created_at"] == "2024-01-01T00:00:00.000000Z"


def test_import_refusal_remedy_names_import_force(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "Original")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {"n.md": "---\ndescription: From the file\ncreated: '2024-01-01T00:00:00Z'\n---\n"},
    )
    result = retain("import", str(snapshot))
    assert result.exit_code == CONFLICT
    assert "import --force" in result.stderr


def test_import_refused_outright_when_a_name_would_be_global_and_a_projects(
    webdev: Retain, tmp_path: Path
) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {
            "stack.md": "---\ndescription: Global stack\ncreated: '2024-01-01T00:00:00Z'\n---\n",
            "fresh.md": "---\ndescription: Fresh\ncreated: '2024-01-01T00:00:00Z'\n---\n",
        },
    )
    for extra in ([], ["--force"]):
        webdev.refused(
            "import",
            str(snapshot),
            *extra,
            status=CONFLICT,
            code="name_conflict",
            remedy="choose another name",
        )


def test_import_refused_past_the_inline_budget(retain: Retain, tmp_path: Path) -> None:
    inline_budget(retain.home, 100)
    head = "---\ndescription: Rule {0}\nload: inline\ncreated: '2024-01-01T00:00:00Z'\n---\n"
    snapshot = write_snapshot(
        tmp_path / "snap",
        {"a.md": head.format("a") + "a" * 60, "b.md": head.format("b") + "b" * 60},
    )
    retain.refused(
        "import",
        str(snapshot),
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )
    assert retain.names() == []


@pytest.mark.parametrize(
    ("case", "code", "remedy"),
    [
        ("missing", "snapshot_invalid", "point import at a directory"),
        ("no-manifest", "snapshot_invalid", "point import at a directory"),
        ("newer-format", "unknown_format_version", "the retain version that wrote it"),
        ("no-frontmatter", "snapshot_invalid", "open it with ---"),
        ("wrong-folder", "snapshot_invalid", "move the file to its project's folder"),
        ("no-created", "snapshot_invalid", "add it"),
    ],
)
def test_import_refused_for_a_directory_that_is_not_a_snapshot(
    retain: Retain, tmp_path: Path, case: str, code: str, remedy: str
) -> None:
    snapshot = tmp_path / "snap"
    good = "---\ndescription: Fine\ncreated: '2024-01-01T00:00:00Z'\n---\n"
    if case == "no-manifest":
        snapshot.mkdir()
        (snapshot / "n.md").write_text(good, encoding="utf-8")
    elif case == "newer-format":
        write_snapshot(snapshot, {"n.md": good}, version=2)
    elif case == "no-frontmatter":
        write_snapshot(snapshot, {"n.md": "just text"})
    elif case == "wrong-folder":
        write_snapshot(snapshot, {"webdev/n.md": good})
    elif case == "no-created":
        write_snapshot(snapshot, {"n.md": "---\ndescription: Undated\n---\n"})
    retain.refused("import", str(snapshot), status=TRANSFER, code=code, remedy=remedy)


# -- verify, status, the store ------------------------------------------------------------


def test_verify_reports_a_sound_store(retain: Retain) -> None:
    retain.ok("add", "a", "-d", "Alpha note")
    retain.ok("add", "b", "-d", "Beta note")
    out = retain.ok("verify").stdout
    assert "2 memories, 2 indexed documents, 2 vectors, 3 events." in out  # realm_add, 2 creates
    assert "Index sound; event chain unbroken." in out
    data = retain.json("verify")
    assert data == {
        "ok": True,
        "memories": 2,
        "index_documents": 2,
        "index_sound": True,
        "events": 3,
        "chain_ok": True,
        "vectors": 2,
        "pending_vectors": 0,
        "early_reversals": 0,
        "problems": [],
        "notes": [],
        "rebuilt": False,
    }


def test_verify_notes_the_reversals_of_a_store_written_before_times_were_kept_in_order(
    retain: Retain, clock: ManualClock
) -> None:
    retain.home.mkdir(parents=True)
    an_old_store(str(retain.home / "retain.db"), clock)
    out = retain.ok("verify").stdout
    assert f"note: {EARLY}" in out and "Index sound; event chain unbroken." in out
    data = retain.json("verify")
    assert (data["ok"], data["early_reversals"], data["notes"]) == (True, 2, [EARLY])


def test_verify_fails_with_exit_10_when_the_index_lost_a_memory_and_rebuild_repairs_it(
    retain: Retain,
) -> None:
    retain.ok("add", "alpha", "-d", "Alpha note", "--body", "alpha body")
    retain.ok("add", "beta", "-d", "Beta note")
    drop_from_index(retain.home, "alpha")
    text = retain("verify")
    assert text.exit_code == INTEGRITY
    assert "problem: full-text index holds 1 documents for 2 memories" in text.stdout
    assert "Index sound" not in text.stdout
    as_json = retain("verify", "--format", "json")
    assert as_json.exit_code == INTEGRITY
    report = json.loads(as_json.stdout)
    assert (report["ok"], report["index_documents"], report["memories"]) == (False, 1, 2)
    rebuilt = retain.ok("verify", "--rebuild").stdout
    assert "Rebuilt the search index and every search key." in rebuilt
    assert "Index sound; event chain unbroken." in rebuilt
    # "alpha" is found by its words again, first; "beta" follows by meaning alone (the
    # bundled model reads the two names as close)
    best, *others = retain.json("search", "alpha")["memories"]
    assert (best["name"], "stem" in best["senses"]) == ("alpha", True)
    assert [(m["name"], m["senses"]) for m in others] == [("beta", ["semantic"])]


def test_verify_fails_with_exit_10_when_the_event_log_was_altered(retain: Retain) -> None:
    retain.ok("add", "n", "-d", "A note")
    with closing(sqlite3.connect(retain.home / "retain.db")) as con:
        con.execute("UPDATE events SET payload = '{}' WHERE seq = 1")
        con.commit()
    text = retain("verify")
    assert text.exit_code == INTEGRITY
    assert "event chain broken" in text.stdout
    assert retain("verify", "--rebuild").exit_code == INTEGRITY
    as_json = retain("verify", "--format", "json")
    assert as_json.exit_code == INTEGRITY
    assert json.loads(as_json.stdout)["chain_ok"] is False


def test_failing_verify_prints_its_code_and_remedy(retain: Retain) -> None:
    retain.ok("add", "alpha", "-d", "Alpha note")
    drop_from_index(retain.home, "alpha")
    result = retain("verify")
    assert result.exit_code == INTEGRITY
    assert "[integrity_failed]" in result.stderr
    assert "retain verify --rebuild" in result.stderr


def test_status_reports_where_the_store_is_and_what_it_holds(webdev: Retain) -> None:
    webdev.ok("add", "rule", "-d", "A rule", "--load", "inline", "--body", "r" * 10)
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    data = webdev.json("status")
    assert data["location"] == str(webdev.home / "retain.db")
    assert (data["schema_version"], data["realm"]) == (7, "default")
    assert (data["memories"], data["projects"], data["events"]) == (2, 1, 4)  # realm_add first
    assert re.fullmatch(r"[0-9a-f]{64}", data["chain_head"])
    assert (data["inline_bytes"], data["inline_max_bytes"]) == (10, 32 * 1024)
    assert data["size_bytes"] > 0
    assert (data["embedder"], data["embedder_configured"], data["degraded"], data["vectors"]) == (
        "static:minilm-l6-static-256",
        "static:minilm-l6-static-256",
        None,
        2,
    )
    table = webdev.ok("status").stdout
    assert "location" in table
    assert "inline_max_bytes" in table


def test_a_new_store_is_private_to_its_owner(retain: Retain) -> None:
    retain.ok("status")
    assert stat.S_IMODE(retain.home.stat().st_mode) == 0o700
    assert stat.S_IMODE((retain.home / "retain.db").stat().st_mode) == 0o600


def test_a_store_of_a_newer_schema_is_refused_with_exit_12(retain: Retain) -> None:
    retain.ok("status")
    with closing(sqlite3.connect(retain.home / "retain.db")) as con:
        con.execute("INSERT INTO schema_migrations VALUES (99, 'future', '2030-01-01')")
        con.commit()
    for args in (["list"], ["add", "n", "-d", "A note"]):
        text = retain(*args)
        assert text.exit_code == STORE, text.output
        assert "[schema_too_new]" in text.stderr
        assert "upgrade retain" in text.stderr
        as_json = retain(*args, "--format", "json")
        assert as_json.exit_code == STORE
        assert json.loads(as_json.stderr)["error"]["code"] == "schema_too_new"


def test_a_store_file_that_is_not_a_database_is_refused_with_exit_12(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "retain.db").write_bytes(b"this is not a database, " * 100)
    result = run_script(home, "list")
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    assert result.returncode == STORE
    assert "[store_error]" in stderr


def test_a_store_locked_by_another_writer_is_refused_with_exit_11(
    retain: Retain, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Give up at once rather than after retain's retries, so the test does not wait.
    monkeypatch.setattr("retain.storage.sqlite._RETRIES", 1)
    monkeypatch.setattr("retain.storage.sqlite._BUSY_TIMEOUT_MS", 0)
    retain.ok("add", "n", "-d", "A note")
    with closing(sqlite3.connect(retain.home / "retain.db", isolation_level=None)) as con:
        con.execute("BEGIN IMMEDIATE")
        try:
            text = retain("add", "m", "-d", "Another note")
            as_json = retain("add", "m", "-d", "Another note", "--format", "json")
        finally:
            con.execute("ROLLBACK")
    assert text.exit_code == BUSY, text.output
    assert "[store_busy]" in text.stderr
    assert "retry once the other process has finished writing" in text.stderr
    assert as_json.exit_code == BUSY
    assert json.loads(as_json.stderr)["error"]["code"] == "store_busy"
    assert retain.names() == ["n"]


def test_reindex_embeds_every_memory_again_and_says_with_what(retain: Retain) -> None:
    retain.ok("add", "a", "-d", "Alpha note")
    retain.ok("add", "b", "-d", "Beta note")
    assert retain.json("reindex") == {
        "reindexed": 2,
        "embedder": "static:minilm-l6-static-256",
        "degraded": None,
    }
    result = retain.ok("reindex")
    assert result.stdout == "Re-indexed 2 memories with static:minilm-l6-static-256.\n"
    assert "degraded" not in result.stderr


def test_a_model_change_fails_verify_until_reindex(retain: Retain) -> None:
    retain.ok("add", "a", "-d", "Alpha note")
    retain.ok("add", "b", "-d", "Beta note")
    configure(retain.home, '[search]\nembedder = "hash"\n')
    assert retain.json("status")["vectors"] == 0
    text = retain("verify")
    assert text.exit_code == INTEGRITY
    assert "problem: 2 of the store's 2 memories have no vector of hash-v1-256" in text.stdout
    assert retain.json("reindex")["reindexed"] == 2
    assert retain.json("verify")["vectors"] == 2


def test_a_degraded_embedder_is_named_on_stderr_and_in_json(retain: Retain, tmp_path: Path) -> None:
    missing = tmp_path / "no-model"
    configure(retain.home, f'[search]\nembedder = "static"\nmodel = "{missing}"\n')
    reason = f"no static model '{missing}' (looked in {missing})"
    retain.ok("add", "tz", "-d", "Alice is in UTC+8")
    status = retain.json("status")
    assert (status["embedder"], status["embedder_configured"], status["degraded"]) == (
        "hash-v1-256",
        f"static:{missing}",
        reason,
    )
    warning = f"degraded: {reason} (searching with hash-v1-256)\n"
    assert retain.ok("status").stderr == warning
    search = retain.ok("search", "alice")
    assert search.stderr == warning
    assert "tz" in search.stdout
    assert retain.json("search", "alice")["degraded"] == reason
    assert retain.json("reindex") == {"reindexed": 1, "embedder": "hash-v1-256", "degraded": reason}


def test_an_embedder_failing_in_use_is_refused_with_exit_14(
    retain: Retain, endpoint: Endpoint
) -> None:
    configure(retain.home, '[search]\nembedder = "http"\nmodel = "m"\nurl = "http://embed.test"\n')
    retain.ok("add", "pet", "-d", "Our cat sleeps")
    assert retain.json("status")["embedder"] == "http:m@http://embed.test/embeddings"
    endpoint.down = True
    retain.refused(
        *("add", "walks", "-d", "The dog wants walks"),
        status=EMBEDDER,
        code="embedder_failed",
        remedy="check that the endpoint is up",
    )


# -- --format json on every read ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["list", "--project", "webdev"],
        ["get", "tz"],
        ["show", "tz"],
        ["read", "tz"],
        ["search", "alice"],
        ["search"],
        ["status"],
        ["verify"],
        ["project", "list"],
    ],
    ids=lambda a: "-".join(a),
)
def test_every_read_prints_parseable_json(webdev: Retain, args: list[str]) -> None:
    webdev.ok("add", "tz", "-d", "Alice is in UTC+8", "--body", "She lives in Singapore")
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    data = webdev.json(*args)
    assert isinstance(data, dict)
    if args[0] in ("list", "search"):
        assert isinstance(data["memories"], list)
        assert data["memories"]


def test_interactive_edit_verified_without_a_change_still_verifies(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\n")
    retain.ok("edit", "n", "--verified", "--editor", editor(tmp_path, "pass"))
    data = retain.json("get", "n")
    assert data["verified_at"] > data["created_at"]


@pytest.mark.parametrize("command", ["/nonexistent/editor", 'vi "'])
def test_interactive_edit_with_an_editor_that_cannot_run_fails_cleanly(
    retain: Retain, command: str
) -> None:
    retain.ok("add", "n", "-d", "A note", "--body", "one\n")
    before = retain.state()
    result = retain("edit", "n", "--editor", command)
    assert result.exit_code == 1
    assert "Editing failed" in result.stderr
    assert retain.state() == before


def test_an_agent_remembers_recalls_and_forgets_its_own(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    saved = retain.json(
        "remember", "Alice prefers terse answers in code reviews", "--as", "agent:planner"
    )
    assert (saved["scope"], saved["author"], saved["trust"], saved["load"]) == (
        "agent:planner",
        "agent:planner",
        "observed",
        "search",
    )
    found = retain.json("recall", "code reviews", "--as", "agent:planner")["memories"]
    assert [m["id"] for m in found] == [saved["id"]]
    assert "Forgot" in retain.ok("forget", saved["id"], "--as", "agent:planner").stdout
    assert retain.json("recall", "code reviews", "--as", "agent:planner")["memories"] == []


def test_facts_are_written_read_on_both_axes_and_retracted(retain: Retain) -> None:
    first = retain.json("fact", "write", "Ada", "Employer", "Acme", "--valid-from", "2020-01-01")
    assert first["fact"]["predicate"] == "employer" and first["superseded"] is None
    text = retain.ok(
        "fact", "write", "Ada", "employer", "Initech", "--valid-from", "2024-06-01"
    ).stdout
    assert "Recorded Ada employer = Initech (global)." in text and "Superseded: Acme." in text
    assert "Unchanged" in retain.ok("fact", "write", "ada", "employer", "Initech").stdout
    now = retain.json("fact", "read", "Ada")["facts"]
    assert [(f["value"], f["valid_to"]) for f in now] == [("Initech", None)]
    then = retain.json("fact", "read", "Ada", "employer", "--valid-at", "2022-03-01")["facts"]
    assert [f["value"] for f in then] == ["Acme"]
    table = retain.ok("fact", "history", "Ada", "employer").stdout
    assert "Acme" in table and "superseded" in table and "Initech" in table
    back = retain.json("fact", "retract", "Ada", "employer", "--reason", "wrong")
    assert back["fact"]["status"] == "retracted" and back["restored"]["value"] == "Acme"
    assert "No facts." in retain.ok("fact", "read", "Nobody").stdout
    retain.ok("fact", "write", "Eve", "motto", "[/] [bold]loud[/bold]")  # text, not markup
    assert "[/] [bold]loud[/bold]" in retain.ok("fact", "read", "Eve").stdout
    retain.ok("agent", "add", "planner")
    own = retain.json("fact", "write", "Bob", "mood", "calm", "--as", "agent:planner")
    assert own["fact"]["scope"] == "agent:planner"
    assert retain.json("fact", "read", "Bob")["facts"] == []  # the operator does not see it


def test_fact_refusals_write_nothing(retain: Retain) -> None:
    retain.ok("fact", "write", "Ada", "employer", "Acme", "--valid-from", "2024-01-01")
    retain.refused(
        "fact", "write", "Ada", "employer", "Initech", "--valid-from", "2023-01-01",
        status=INVALID, code="invalid_value", remedy="retract the current value first",
    )  # fmt: skip
    retain.refused(
        "fact", "retract", "Ada", "mood",
        status=NOT_FOUND, code="not_found", remedy="read the fact",
    )  # fmt: skip
    retain.refused(
        "fact", "read", "Ada", "--known-at", "someday",
        status=INVALID, code="invalid_time", remedy="",
    )  # fmt: skip


def test_agent_verbs_are_refused_to_others(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("agent", "add", "coder")
    saved = retain.json("remember", "the build is flaky on Fridays", "--as", "agent:planner")
    retain.refused(
        "remember",
        "x",
        "--as",
        "operator:me",
        status=ACCESS_DENIED,
        code="access_denied",
        remedy="--as agent:NAME",
    )
    retain.refused(  # another agent's memory: its existence is not told
        "forget",
        saved["id"],
        "--as",
        "agent:coder",
        status=NOT_FOUND,
        code="not_found",
        remedy="recall it first",
    )
    retain.refused(
        "recall",
        "build",
        "--as",
        "agent:nobody",
        status=NOT_FOUND,
        code="agent_not_found",
        remedy="retain agent add nobody",
    )


# -- the memory section and the injection ledger ------------------------------------------


def test_context_prints_the_section_and_then_only_what_changed(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("project", "add", "webdev")
    retain.ok("add", "tone", "-d", "How to answer", "--body", "Answer tersely.", "--load", "inline")
    retain.ok("add", "deploy", "-d", "How webdev deploys", "--body", "Tuesdays.", "-p", "webdev")
    first = retain.ok("context", "--as", "agent:planner", "-p", "webdev", "--session", "s1")
    assert first.stdout.startswith("# Memory\nWhat memory holds for agent planner on project")
    assert "### tone (global)\nAnswer tersely.\n" in first.stdout
    assert "### Project webdev\n- deploy: How webdev deploys (today)\n" in first.stdout
    again = retain.json("context", "--as", "agent:planner", "-p", "webdev", "--session", "s1")
    assert (again["text"], again["full"], again["injected"]) == ("", False, [])
    retain.ok("add", "naming", "-d", "How we name services", "--body", "kebab-case")
    delta = retain.json("context", "--as", "agent:planner", "-p", "webdev", "--session", "s1")
    assert delta["changes"] == ["added"]
    assert "Added to the index: naming (global): How we name services (today)" in delta["text"]
    rows = retain.json("injections", "--session", "s1")["injections"]
    assert [r["surface"] for r in rows] == ["index", "index", "inline"]
    assert {r["identity"] for r in rows} == {"agent:planner"}


def test_context_quotes_turn_recall_and_reports_a_skipped_one(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("remember", "The staging database is rebuilt every Sunday.", "--as", "agent:planner")
    shown = retain.ok("context", "--as", "agent:planner", "--turn", "when is staging rebuilt?")
    assert "# Recalled from memory\n" in shown.stdout
    assert "> The staging database is rebuilt every Sunday.\n" in shown.stdout
    late = retain(
        "context",
        "--as",
        "agent:planner",
        "--turn",
        "when is staging rebuilt?",
        "--recall-timeout-ms",
        "0",
    )
    assert late.exit_code == 0, late.output
    assert "Recalled" not in late.stdout
    assert "note: recall took longer than 0 ms; rendered without recall" in late.stderr


def test_context_refuses_bad_input_and_unknown_names(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.refused(
        "context",
        "--as",
        "agent:planner",
        "--turn",
        "anything",
        "--recall-timeout-ms",
        "0",
        "--recall-failure",
        "fail",
        status=RECALL_FAILED,
        code="recall_failed",
        remedy="raise recall_timeout_ms",
    )
    retain.refused(
        "context",
        "--as",
        "agent:planner",
        "--session",
        "",
        status=INVALID,
        code="invalid_value",
        remedy="the key your agent runtime gives",
    )
    retain.refused(
        "context",
        "--as",
        "agent:nobody",
        status=NOT_FOUND,
        code="agent_not_found",
        remedy="retain agent add nobody",
    )
    retain.refused(
        "context",
        "-p",
        "nowhere",
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add nowhere",
    )
    retain.refused(
        "injections",
        "--as",
        "agent:planner",
        "--identity",
        "agent:other",
        status=ACCESS_DENIED,
        code="access_denied",
        remedy="ask an operator",
    )


def test_legacy_markdown_is_imported_when_the_store_is_opened(retain: Retain) -> None:
    legacy_dir = retain.home / "agent-memory" / "default"
    legacy_dir.mkdir(parents=True)
    (legacy_dir / "scout.md").write_text("# Scout\n\n- Likes tea.\n-\n", encoding="utf-8")
    opened = retain.ok("agent", "list")
    assert "Imported 1 legacy agent memories from 1 files" in opened.stderr
    assert "registered agents: scout" in opened.stderr
    assert "skipped scout.md:4: an empty list item" in opened.stderr
    assert (legacy_dir / "scout.md.imported").exists()
    assert not (legacy_dir / "scout.md").exists()
    found = retain.json("recall", "tea", "--as", "agent:scout")["memories"]
    assert [m["body"] for m in found] == ["Likes tea."]
    assert retain.ok("agent", "list").stderr == ""


def test_every_command_reaches_a_postgres_store_by_url(tmp_path: Path, postgres_url: str) -> None:
    from tests.conftest import fresh_schema

    retain = Retain(tmp_path / "home")
    url = fresh_schema(postgres_url)
    retain.ok("add", "deploy", "--description", "How we deploy", "--database-url", url)
    found = retain.json("search", "deploy", "--database-url", url)["memories"]
    assert [m["name"] for m in found] == ["deploy"]
    assert retain.json("list")["memories"] == []  # the home's own SQLite store is apart
    by_env = retain("status", "--format", "json", env={"RETAIN_DATABASE_URL": url})
    assert by_env.exit_code == 0, by_env.output
    status = json.loads(by_env.stdout)
    assert status["memories"] == 1 and status["location"].startswith("postgresql://")


def test_a_database_url_that_is_not_postgres_is_a_usage_error(retain: Retain) -> None:
    typo = retain("list", "--database-url", "postgress://ada:secret@db/memory")
    assert typo.exit_code == 2
    assert "postgres:// or postgresql:// URL" in typo.stderr
    assert not any(retain.home.parent.glob("postgress*"))  # no SQLite file made of it


def test_migrate_copies_a_store_to_postgres_with_its_chain(
    tmp_path: Path, postgres_url: str
) -> None:
    from tests.conftest import fresh_schema

    retain = Retain(tmp_path / "home")
    retain.ok("add", "deploy", "--description", "How we deploy", "--body", "Tuesdays")
    url = fresh_schema(postgres_url)
    source = str(tmp_path / "home" / "retain.db")
    done = retain.json("migrate", "--from", f"sqlite://{source}", "--to", url)
    assert "verified" not in done and (done["memories"], done["events"]) == (1, 2)
    assert done["chain_head"] == retain.json("status")["chain_head"]
    assert retain.json("show", "deploy", "--database-url", url)["body"] == "Tuesdays"
    again = retain("migrate", "--from", source, "--to", url)
    assert again.exit_code == TRANSFER and "[migrate_target_not_empty]" in again.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("fact", "write", "Ada", "employer", "Acme", "--valid-from", "0001-01-01"),
        ("fact", "read", "Ada", "--valid-at", "0001-01-01"),
        ("fact", "read", "Ada", "--known-at", "0001-01-01"),
        ("add", "edge", "-d", "At the edge", "--valid-from", "0001-01-01"),
    ],
)
def test_a_date_before_the_calendar_in_local_time_is_refused(
    retain: Retain, args: tuple[str, ...]
) -> None:
    retain.refused(*args, status=INVALID, code="invalid_time", remedy="0001-01-02")
