"""What the CLI tests (``tests/doors/test_cli_*.py``) share.

``Retain`` runs ``retain.doors.cli.cli`` under click's ``CliRunner`` against a fresh
``--home``, and ``Retain.refused`` checks a refusal for its documented exit status, its
error code and remedy (as text and as ``--format json``), and for leaving the store
exactly as it was; ``run_script`` and ``on_a_terminal`` run the installed console script
in a subprocess and on a real pty. Beside them: the exit statuses, the fields of a
record, and small builders (a config file, an ``$EDITOR`` script, a snapshot directory).
The fixtures ``retain`` and ``webdev`` are in ``tests/doors/conftest.py``.
"""

from __future__ import annotations

import json
import os
import pty
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from retain.doors.cli import cli

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
SECRET_DETECTED = 19
REVIEW_REFUSED = 20
HOLD_ACTIVE = 21
SIGNATURE_INVALID = 22
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


def on_a_terminal(
    home: Path, *args: str, env: Mapping[str, str] | None = None, stderr: bool = False
) -> bytes:
    """What the console script writes to a real terminal (a pty as its stdin and stdout,
    and its stderr too with ``stderr``)."""
    leader, follower = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("VISUAL", "EDITOR")}
    environment.update({"RETAIN_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"})
    environment.update(env or {})
    try:
        process = subprocess.run(
            [str(RETAIN), *args],
            stdin=follower,
            stdout=follower,
            stderr=follower if stderr else subprocess.PIPE,
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
