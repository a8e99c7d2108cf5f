"""The memory reads (``retain.doors.cli.memory``): ``get``, ``show``, ``read`` and
``list``, with their filters, the tiers a lookup sees and its refusals (a name in several
projects, a name no memory has, an unknown project)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from tests.doors.cli_helpers import (
    CONFLICT,
    INVALID,
    NOT_FOUND,
    RECORD_FIELDS,
    Retain,
    run_script,
    write_snapshot,
)

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
