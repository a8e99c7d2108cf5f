"""The store's upkeep (``retain.doors.cli.admin``): ``verify`` and ``--rebuild``,
``status``, ``reindex``, and the store-level refusals a command meets (a newer schema,
a file that is not a database, a locked store, a failing or degraded embedder)."""

from __future__ import annotations

import json
import re
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest
from tests.conftest import Endpoint
from tests.doors.cli_helpers import (
    BUSY,
    EMBEDDER,
    INTEGRITY,
    STORE,
    Retain,
    configure,
    drop_from_index,
    run_script,
)
from tests.test_ledger import EARLY, an_old_store

from retain.chrono import ManualClock
from retain.storage.sqlite_schema import latest_version

# -- verify, status, the store ------------------------------------------------------------


def test_verify_reports_a_sound_store(retain: Retain) -> None:
    retain.ok("add", "a", "-d", "Alpha note")
    retain.ok("add", "b", "-d", "Beta note")
    out = retain.ok("verify").stdout
    assert "2 memories, 2 indexed documents, 2 vectors, 3 events." in out  # realm_add, 2 creates
    assert "Index sound; event chain unbroken." in out
    data = retain.json("verify")
    head = data.pop("head")
    assert (head["seq"], len(head["hash"])) == (3, 64)
    assert (head["key_id"], head["signature"]) == (None, None)
    assert data == {
        "ok": True,
        "memories": 2,
        "index_documents": 2,
        "index_sound": True,
        "events": 3,
        "chain_ok": True,
        "vectors": 2,
        "pending_vectors": 0,
        "relations": {"similar_to": 0, "supersedes": 0, "contradicts": 0, "derived_from": 0},
        "early_reversals": 0,
        "broken_at": None,
        "signed_events": 0,
        "erased_events": 0,
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
    assert "event chain broken" in text.stdout and "broken_at: 1" in text.stdout
    assert retain("verify", "--rebuild").exit_code == INTEGRITY
    as_json = retain("verify", "--format", "json")
    assert as_json.exit_code == INTEGRITY
    assert json.loads(as_json.stdout)["chain_ok"] is False
    assert json.loads(as_json.stdout)["broken_at"] == 1


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
    assert (data["schema_version"], data["realm"]) == (latest_version(), "default")
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
