"""``retain add`` (``retain.doors.cli.memory``): every option stored, the tier a memory
goes to, ``--force`` updating only what it names, and every refusal of a write (a name
taken in the tier or another, invalid input, usage errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.doors.cli_helpers import (
    CONFLICT,
    INVALID,
    RECORD_FIELDS,
    USAGE,
    Retain,
    run_script,
)


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
