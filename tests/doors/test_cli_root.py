"""The ``retain`` command as a whole (``retain.doors.cli.root`` and ``refusal``).

The installed console script (its exit statuses, stderr, ``--version`` and the store it
finds), the documented exit status of every error, the configuration a command reads
(``config.toml``, refused with exit 13), the store it opens (``--database-url``, the
legacy markdown imported on opening), ``--format json`` on every read, and the dates
every command's options parse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.doors.cli_helpers import (
    ACCESS_DENIED,
    BUDGET,
    BUG,
    BUSY,
    CONFIG,
    CONFLICT,
    EDIT_FAILED,
    EMBEDDER,
    EXTRA_MISSING,
    HOLD_ACTIVE,
    INTEGRITY,
    INVALID,
    LISTEN_FAILED,
    NOT_FOUND,
    RECALL_FAILED,
    REVIEW_REFUSED,
    SECRET_DETECTED,
    SIGNATURE_INVALID,
    STALE,
    STORE,
    TRANSFER,
    Retain,
    configure,
    inline_budget,
    on_a_terminal,
    run_script,
)

import retain as retain_pkg
from retain import errors
from retain.doors.cli import EXIT_BUG, EXIT_CODES

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
        errors.SecretDetected: SECRET_DETECTED,
        errors.ReviewRefused: REVIEW_REFUSED,
        errors.HoldActive: HOLD_ACTIVE,
        errors.SignatureInvalid: SIGNATURE_INVALID,
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


def test_a_command_draws_an_older_stores_schema_upgrade_as_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opening the store draws its pending migrations as the bar every long command draws
    on a terminal's stderr, and nothing once the store is current."""
    from retain.storage import sqlite
    from retain.storage.sqlite_schema import latest_version

    with monkeypatch.context() as patched:
        patched.setattr(sqlite, "MIGRATIONS", sqlite.MIGRATIONS[:19])
        sqlite.SqliteBackend(tmp_path / "retain.db").close()  # a store of version 19
    ahead = latest_version() - 19
    upgraded = on_a_terminal(tmp_path, "list", stderr=True)
    assert b"schema" in upgraded and f"{ahead}/{ahead}".encode() in upgraded
    assert b"schema" not in on_a_terminal(tmp_path, "list", stderr=True)


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
