"""``retain edit`` and ``retain remove`` (``retain.doors.cli.memory`` and ``editor``),
and the inline budget every write is held to.

``edit`` with ``--old``/``--new`` and in ``$VISUAL``/``$EDITOR`` (byte-exact bodies, line
endings and byte order marks kept, a concurrent change refused), ``remove`` naming the
memories that still reference what it removed, and ``add``, ``edit`` and an editor's
edit refused past ``inline_max_bytes``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.doors.cli_helpers import (
    BUDGET,
    EDIT_FAILED,
    INLINE_REMEDY,
    INVALID,
    NOT_FOUND,
    RETAIN,
    STALE,
    USAGE,
    Retain,
    editor,
    inline_budget,
    on_a_terminal,
)

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
