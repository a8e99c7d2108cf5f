"""The reviewer's commands (``retain.doors.cli.review``): ``quarantine list`` shows what
waits, with the hash a review binds to; ``review`` releases or tombstones a record, and
its refusals write nothing."""

from __future__ import annotations

from tests.doors.cli_helpers import ACCESS_DENIED, REVIEW_REFUSED, USAGE, Retain


def held(retain: Retain) -> dict[str, object]:
    """An agent's memory, held for review under the posture config.toml sets."""
    retain.home.mkdir(parents=True, exist_ok=True)
    (retain.home / "config.toml").write_text('[memory]\nllm_writes = "quarantined"\n')
    retain.ok("agent", "add", "ada")
    written = retain.json("remember", "the deploy key rotates weekly", "--as", "agent:ada")
    assert written["status"] == "quarantined"
    (row,) = retain.json("quarantine", "list")["quarantine"]
    assert (row["id"], row["quarantine_reason"]) == (written["id"], ["llm_writes"])
    return dict(row)


def test_a_held_write_is_released_and_then_recalled(retain: Retain) -> None:
    row = held(retain)
    recalled = retain.json("recall", "deploy key", "--as", "agent:ada")["memories"]
    assert recalled == []
    text = retain.ok("quarantine", "list").stdout
    assert str(row["id"]) in text and str(row["content_hash"]) in text and "llm_writes" in text
    done = retain.json(
        "review", str(row["id"]), "--release", "--hash", str(row["content_hash"]),
        "--rationale", "checked with the team",
    )  # fmt: skip
    assert done["outcome"] == "released"
    assert done["decision"]["review"]["reviewer"] == "operator:local"
    assert done["successor"]["id"] == f"{row['id']}-released"
    (hit,) = retain.json("recall", "deploy key", "--as", "agent:ada")["memories"]
    assert (hit["id"], hit["trust"], hit["ever_quarantined"], hit["derived_from"]) == (
        f"{row['id']}-released",
        "observed",
        True,
        row["id"],
    )
    assert "Nothing waits for review." in retain.ok("quarantine", "list").stdout
    again = retain.ok("review", str(row["id"]), "--release", "--hash", "x").stdout
    assert "Already released" in again


def test_review_refusals_write_nothing(retain: Retain) -> None:
    row = held(retain)
    refused = retain.refused(
        "review", str(row["id"]), "--release", "--hash", "0" * 64,
        status=REVIEW_REFUSED, code="content_mismatch", remedy="read the record again",
    )  # fmt: skip
    assert "retain quarantine list" in refused.error["remedy"]
    retain.refused(
        "review", str(row["id"]), "--tombstone", "--hash", str(row["content_hash"]),
        "--as", "agent:ada",
        status=ACCESS_DENIED, code="access_denied", remedy="--as",
    )  # fmt: skip
    retain.refused(
        "quarantine", "list", "--as", "app:ci",
        status=ACCESS_DENIED, code="access_denied", remedy="--as",
    )  # fmt: skip
    neither = retain("review", str(row["id"]), "--hash", str(row["content_hash"]))
    assert neither.exit_code == USAGE and "--release or --tombstone" in neither.output
    done = retain.ok(
        "review", str(row["id"]), "--tombstone", "--hash", str(row["content_hash"]),
        "--as", "steward",
    ).stdout  # fmt: skip
    assert f"Tombstoned {row['id']} (now discarded)." in done
    retain.refused(
        "review", str(row["id"]), "--release", "--hash", str(row["content_hash"]),
        status=REVIEW_REFUSED, code="not_quarantined", remedy="not decided again",
    )  # fmt: skip


def test_a_held_write_says_so_in_text(retain: Retain) -> None:
    """Off --format json, a write held for review says it was held, and why; one that
    lands says nothing of review."""
    retain.home.mkdir(parents=True, exist_ok=True)
    (retain.home / "config.toml").write_text('[memory]\nllm_writes = "quarantined"\n')
    retain.ok("agent", "add", "ada")
    said = retain.ok("remember", "the deploy key rotates weekly", "--as", "agent:ada").stdout
    assert "Held for review (llm_writes)" in said and "retain quarantine list" in said
    landed = retain.ok("add", "plan", "-d", "the launch plan").stdout
    assert "Saved memory 'plan'" in landed and "Held" not in landed
