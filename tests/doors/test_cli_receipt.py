"""The CLI's receipts (``retain.doors.cli.receipt``, ``export --format jsonl``): a
write's JSON carries its receipt, ``receipt verify`` checks it with the public key and
no store, ``receipt keygen`` and ``public-key``, and the exported log that
``tools/check_log.py`` checks."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.doors.cli_helpers import CONFIG, INVALID, SIGNATURE_INVALID, TRANSFER, USAGE, Retain

from retain import signing
from retain.doors.cli import cli

CHECKER = Path(__file__).parent.parent.parent / "tools" / "check_log.py"


def bare(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``retain ARGS`` with no home: (exit status, stdout, stderr)."""
    result = CliRunner().invoke(
        cli, list(args), input=stdin, env={"RETAIN_HOME": None, "RETAIN_SIGNING_KEY": None}
    )
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def keyed(retain: Retain, tmp_path: Path) -> tuple[Retain, str]:
    """A home whose config names a key file made by ``receipt keygen``; its public key."""
    key_file = tmp_path / "signing.key"
    status, out, err = bare("receipt", "keygen", "--out", str(key_file), "--format", "json")
    assert status == 0, err
    made = json.loads(out)
    retain.home.mkdir(parents=True, exist_ok=True)
    (retain.home / "config.toml").write_text(f'[signing]\nkey_file = "{key_file}"\n')
    return retain, made["public_key"]


def test_keygen_writes_a_private_file_and_prints_only_the_public_key(tmp_path: Path) -> None:
    key_file = tmp_path / "k"
    status, out, _ = bare("receipt", "keygen", "--out", str(key_file))
    assert status == 0
    private = key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    made = signing.private_key(private, "k")
    assert f"Public key: {made.public.text}" in out and private not in out
    assert f"(key {made.key_id})" in out
    again, _, err = bare("receipt", "keygen", "--out", str(key_file))
    assert again == INVALID and "key_invalid" in err
    assert key_file.read_text().strip() == private  # never overwritten


def test_a_writes_receipt_verifies_with_the_public_key_and_no_store(
    keyed: tuple[Retain, str], tmp_path: Path
) -> None:
    retain, public = keyed
    assert retain.ok("receipt", "public-key").stdout.strip() == public
    written = retain.ok("add", "plan", "-d", "The launch plan", "--format", "json").stdout
    assert json.loads(written)["receipt"]["kind"] == "create"
    status, out, err = bare("receipt", "verify", "-", "--public-key", public, stdin=written)
    assert status == 0, err
    assert "verifies: event 2 (create) by operator:local" in out
    key_file = tmp_path / "public.txt"
    key_file.write_text(public + "\n")
    status, out, _ = bare(
        "receipt", "verify", "-", "--public-key", str(key_file), "--format", "json", stdin=written
    )
    assert status == 0 and json.loads(out)["verified"] is True
    forged = written.replace('"operator:local"', '"operator:mallory"')
    status, _, err = bare("receipt", "verify", "-", "--public-key", public, stdin=forged)
    assert status == SIGNATURE_INVALID and "signature_invalid" in err
    status, _, err = bare("receipt", "verify", "-", "--public-key", "nope", stdin=written)
    assert status == INVALID and "key_invalid" in err
    status, _, err = bare("receipt", "verify", "-", "--public-key", public, stdin="not json")
    assert status == SIGNATURE_INVALID


def test_each_writing_command_prints_its_receipt(keyed: tuple[Retain, str]) -> None:
    retain, _ = keyed
    retain.ok("add", "plan", "-d", "The launch plan", "--body", "ship on friday")
    edited = retain.json("edit", "plan", "--old", "friday", "--new", "monday")
    assert edited["receipt"]["kind"] == "edit" and edited["receipt"]["signature"]
    removed = retain.json("remove", "plan")
    assert removed["receipt"]["kind"] == "delete"
    retain.ok("agent", "add", "ada")
    kept = retain.json("remember", "use node 20", "--as", "agent:ada")
    assert kept["receipt"]["principal"] == "agent:ada"


def test_public_key_without_a_key_is_refused_key_missing(retain: Retain) -> None:
    result = retain("receipt", "public-key")
    assert result.exit_code == CONFIG and "key_missing" in result.stderr


def test_export_jsonl_writes_the_log_the_checker_accepts_and_verify_names_a_break(
    keyed: tuple[Retain, str], tmp_path: Path
) -> None:
    retain, public = keyed
    retain.ok("add", "a", "-d", "Alpha", "--body", "alpha plan")
    retain.ok("add", "b", "-d", "Beta", "--body", "beta plan")
    log = tmp_path / "log.jsonl"
    out = retain.ok("export", "--format", "jsonl", "-o", str(log)).stdout
    assert f"Exported 3 events (3 signed) to {log}" in out and "signed by key" in out
    checked = subprocess.run(
        [sys.executable, str(CHECKER), str(log), "--public-key", public],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("ok: 3 events") and "3 signatures checked" in checked.stdout
    assert retain("export", "--format", "jsonl", "-o", str(log)).exit_code == TRANSFER
    usage = retain("export", "--format", "jsonl", "-o", str(tmp_path / "x"), "--project", "p")
    assert usage.exit_code == USAGE
    text = retain.ok("verify").stdout
    assert "head: event 3" in text and "signed by key" in text


def test_verify_text_names_the_broken_seq(retain: Retain) -> None:
    import sqlite3
    from contextlib import closing

    retain.ok("add", "a", "-d", "Alpha")
    retain.ok("add", "b", "-d", "Beta")
    with closing(sqlite3.connect(retain.home / "retain.db")) as con:
        con.execute("UPDATE events SET payload = '{}' WHERE seq = 3")
        con.commit()
    text = retain("verify").stdout
    assert "broken_at: 3" in text and "head: event 2" in text
