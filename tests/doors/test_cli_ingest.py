"""``retain ingest FILE`` (``retain.doors.cli.conversation``): a transcript's threads,
one ingest_conversation call each, with a summary for people and JSON for programs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.doors.cli_helpers import (
    ACCESS_DENIED,
    CONFLICT,
    INVALID,
    NOT_FOUND,
    SECRET_DETECTED,
    USAGE,
    Retain,
)

LINES = [
    {"speaker": "Ada", "text": "I adopted a dog last week", "id": "m1", "at": "2024-03-01"},
    {"speaker": "Bob", "text": "Which breed?", "id": "m2", "at": "2024-03-01"},
    {"speaker": "Ada", "text": "Side note", "thread": "aside", "at": "2024-03-02"},
]


def jsonl(tmp_path: Path, lines: list[dict[str, Any]], name: str = "chat.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def locomo(sample_id: str) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"}],
        },
    }


def test_ingest_writes_each_thread_of_a_jsonl_file(retain: Retain, tmp_path: Path) -> None:
    path = jsonl(tmp_path, LINES)
    text = retain.ok("ingest", path).stdout
    assert "Ingested 3 turns in 2 threads: 3 new, 0 updated, 0 unchanged." in text
    first = retain.get("chat-m1")
    assert (first["subject"], first["thread"], first["load"]) == ("Ada", "chat", "search")
    assert retain.get("aside-1")["thread"] == "aside"
    again = retain.json("ingest", path)
    assert (again["turns"], again["unchanged"], again["written"]) == (3, 3, 0)
    assert [t["thread"] for t in again["threads"]] == ["chat", "aside"]
    assert again["threads"][0]["memories"][0]["name"] == "chat-m1"


def test_ingest_names_the_thread_and_the_project(webdev: Retain, tmp_path: Path) -> None:
    path = jsonl(tmp_path, LINES[:2])
    done = webdev.json("ingest", path, "--thread", "daily", "--project", "webdev")
    assert done["threads"][0]["project"] == "webdev"
    assert webdev.get("daily-m2", project="webdev")["project"] == "webdev"


def test_a_file_of_several_locomo_samples_goes_one_project_a_sample(
    retain: Retain, tmp_path: Path
) -> None:
    path = tmp_path / "many.json"
    path.write_text(json.dumps([locomo("conv-1"), locomo("Conv 2")]), encoding="utf-8")
    retain.refused("ingest", str(path), status=NOT_FOUND, code="project_not_found",
                   remedy="retain project add conv-1")  # fmt: skip
    retain.ok("project", "add", "conv-1")
    retain.ok("project", "add", "conv-2")
    done = retain.json("ingest", str(path))
    assert [(t["project"], t["thread"]) for t in done["threads"]] == [
        ("conv-1", "session-1"), ("conv-2", "session-1")
    ]  # fmt: skip
    assert retain.get("session-1-d1-1", project="conv-2")["subject"] == "Caroline"
    used = retain(*("ingest", str(path), "--project", "conv-1"))
    assert used.exit_code == USAGE


def test_a_malformed_file_is_refused_naming_its_line(retain: Retain, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"speaker": "Ada", "text": "ok"}\n{"text": "who?"}\n', encoding="utf-8")
    refusal = retain.refused("ingest", str(path), status=INVALID, code="transcript_invalid",
                             remedy="one JSON turn")  # fmt: skip
    assert refusal.error["details"]["line"] == 2
    assert "line 2" in refusal.error["message"]


def test_a_refused_turn_writes_nothing_of_its_thread(retain: Retain, tmp_path: Path) -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    path = jsonl(tmp_path, [LINES[0], {"speaker": "Bob", "text": f"key {secret}"}])
    refusal = retain.refused("ingest", path, status=SECRET_DETECTED, code="secret_detected",
                             remedy="--redact")  # fmt: skip
    assert refusal.error["details"]["turn"] == 2
    assert secret not in refusal.stderr
    retain.ok("ingest", path, "--redact")
    timeless = jsonl(tmp_path, [{"speaker": "Ada", "text": "x"}], "t.jsonl")
    retain.refused("ingest", timeless, "--at", "soon", status=INVALID, code="invalid_time",
                   remedy="")  # fmt: skip


def test_an_agent_may_not_ingest_and_a_clash_is_a_conflict(retain: Retain, tmp_path: Path) -> None:
    retain.ok("agent", "add", "ada")
    path = jsonl(tmp_path, LINES[:1])
    retain.refused("ingest", path, "--as", "agent:ada", status=ACCESS_DENIED,
                   code="access_denied", remedy="")  # fmt: skip
    retain.ok("ingest", jsonl(tmp_path, [{"speaker": "A", "text": "x", "id": "1-m1"}], "s.jsonl"))
    clash = jsonl(tmp_path, [{"speaker": "A", "text": "y", "id": "m1"}], "s-1.jsonl")
    retain.refused("ingest", clash, status=CONFLICT, code="name_conflict", remedy="")
