"""What the CLI prints of stored values: text, never markup or terminal control.

A description, body, tag or fact may hold ``[/]`` (rich markup), ``\\x1b[2J`` (clear the
screen), an OSC title sequence or a bidirectional override. Tables, lines and errors
show them as text with the control characters spelled out; ``show`` writes a body byte
for byte to a pipe, or with ``--raw``, and spelled out on a terminal (a real pty here).
"""

from __future__ import annotations

import io
import json
import re
import socket
from pathlib import Path

import pytest
from tests.conftest import as_changed
from tests.doors.cli_helpers import Retain, editor, on_a_terminal, run_script

from retain.doors.cli import output
from retain.doors.terminal import visible

MARKUP = "x [/] y [bold]b[/bold] :smile:"
CLEAR = "\x1b[2J"
TITLE = "\x1b]0;owned\x07"
CSI = "\x9b31m"  # the C1 form of ESC [
OVERRIDE = "\u202e"
HOSTILE = f"a{CLEAR}b{TITLE}c{CSI}d{OVERRIDE}e\rf\x7fg"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r", "\x7f")


def assert_no_raw_control(text: str) -> None:
    assert not [c for c in RAW if c in text], repr(text)


def test_visible_spells_out_control_characters_and_keeps_lines() -> None:
    assert visible(HOSTILE) == "a\\x1b[2Jb\\x1b]0;owned\\x07c\\x9b31md\\u202ee\\x0df\\x7fg"
    assert visible("one\n\ttwo") == "one\n\ttwo"
    assert visible("one\n\ttwo", line=True) == "one\\x0a\\x09two"
    assert visible(MARKUP) == MARKUP


@pytest.mark.parametrize("command", [["list"], ["search", "markup"], ["get", "m"]])
def test_markup_in_a_stored_value_is_printed_as_text(retain: Retain, command: list[str]) -> None:
    retain.ok("add", "m", "-d", f"markup {MARKUP}", "-b", f"body {MARKUP}", "--tag", "t")
    printed = retain.ok(*command).stdout
    assert MARKUP in printed


def test_markup_in_an_agents_memory_is_printed_as_text_by_recall(retain: Retain) -> None:
    retain.ok("agent", "add", "bot")
    retain.ok("remember", f"markup {MARKUP}", "--as", "agent:bot")
    printed = retain.ok("recall", "markup", "--as", "agent:bot").stdout
    assert MARKUP in printed


def test_markup_in_a_fact_and_in_read_and_context_is_printed_as_text(retain: Retain) -> None:
    retain.ok("add", "m", "-d", f"markup {MARKUP}", "-b", f"body {MARKUP}", "--load", "inline")
    retain.ok("fact", "write", "alice", "likes", MARKUP)
    assert MARKUP in retain.ok("fact", "read", "alice").stdout
    assert MARKUP in retain.ok("read", "m").stdout
    assert MARKUP in retain.ok("context").stdout


@pytest.mark.parametrize("command", [["list"], ["search", "hostile"], ["get", "h"], ["read", "h"]])
def test_control_characters_in_a_stored_value_are_spelled_out(
    retain: Retain, command: list[str]
) -> None:
    retain.ok("add", "h", "-d", f"hostile {HOSTILE}", "-b", f"body {HOSTILE}")
    printed = retain.ok(*command).stdout
    assert_no_raw_control(printed)
    assert "\\x1b[2J" in printed
    assert "\\u202e" in printed


def test_control_characters_in_an_agents_memory_are_spelled_out_by_recall(
    retain: Retain,
) -> None:
    retain.ok("agent", "add", "bot")
    retain.ok("remember", f"hostile {HOSTILE}", "--as", "agent:bot")
    printed = retain.ok("recall", "hostile", "--as", "agent:bot").stdout
    assert_no_raw_control(printed)
    assert "\\x1b]0;owned\\x07" in printed


def test_control_characters_in_a_fact_value_are_spelled_out(retain: Retain) -> None:
    written = retain.ok("fact", "write", "alice", "likes", HOSTILE).stdout
    read = retain.ok("fact", "read", "alice").stdout
    for printed in (written, read):
        assert_no_raw_control(printed)
        assert "\\x9b31m" in printed


def test_json_output_carries_no_raw_control_character_and_reads_back_the_same(
    retain: Retain,
) -> None:
    retain.ok("add", "h", "-d", f"hostile {HOSTILE}", "-b", f"body {HOSTILE}")
    result = retain.ok("show", "h", "--format", "json")
    assert_no_raw_control(result.stdout)
    assert json.loads(result.stdout)["body"] == f"body {HOSTILE}"


def test_an_error_naming_a_value_prints_it_as_text(retain: Retain, tmp_path: Path) -> None:
    where = tmp_path / f"snap [/] {CLEAR}"
    result = retain("import", str(where))
    assert result.exit_code == 8, result.output
    assert "[snapshot_invalid]" in result.stderr
    assert "snap [/] \\x1b[2J" in result.stderr
    assert_no_raw_control(result.stderr)
    assert "Traceback" not in result.stderr


def test_show_writes_the_body_byte_exact_to_a_pipe_and_with_raw(retain: Retain) -> None:
    body = f"line one\r\n{HOSTILE}\n[/] no final newline"
    retain.ok("add", "h", "-d", "hostile", "-b", body)
    assert retain.ok("show", "h").stdout_bytes == body.encode("utf-8")
    assert retain.ok("show", "h", "--raw").stdout_bytes == body.encode("utf-8")


def test_show_on_a_terminal_spells_out_control_characters_unless_raw(tmp_path: Path) -> None:
    home = tmp_path / "home"
    body = f"first\n{HOSTILE}"
    saved = run_script(home, "add", "h", "-d", "hostile", "-b", body)
    assert saved.returncode == 0, saved.stderr
    shown = on_a_terminal(home, "show", "h")
    assert b"\x1b" not in shown
    assert b"first" in shown
    assert visible(HOSTILE).encode("utf-8") in shown
    raw = on_a_terminal(home, "show", "h", "--raw")
    assert HOSTILE.replace("\r", "").encode("utf-8") in raw.replace(b"\r", b"")


# -- what a change did ------------------------------------------------------------------


def test_add_force_edit_and_remove_carry_the_text_before_and_after_in_json(
    retain: Retain, tmp_path: Path
) -> None:
    created = retain.json("add", "tz", "-d", "Alice is in UTC+8", "-b", "Perth\n")
    assert created["before"] is None
    retain.ok("export", "-o", str(tmp_path / "snap"))
    assert created["after"] == as_changed(tmp_path / "snap" / "tz.md")
    updated = retain.json("add", "tz", "--force", "-d", "Alice is in UTC+9")
    assert updated["before"] == created["after"]
    assert updated["after"] == created["after"].replace("UTC+8", "UTC+9")
    edited = retain.json("edit", "tz", "--old", "Perth", "--new", "Tokyo")
    assert edited["before"] == updated["after"]
    assert edited["after"] == updated["after"].replace("Perth", "Tokyo")
    removed = retain.json("remove", "tz")
    assert (removed["before"], removed["after"]) == (edited["after"], None)


def test_an_editor_edit_carries_the_text_before_and_after_in_json(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "notes", "-d", "Notes", "-b", "one\n")
    command = editor(tmp_path, "path.write_text('two\\n')")
    edited = retain.json("edit", "notes", "--editor", command)
    assert edited["before"].endswith("---\none\n")
    assert edited["after"] == edited["before"].replace("---\none\n", "---\ntwo\n")


def styles_removed(output: bytes) -> list[str]:
    """A terminal's output as lines, without its styles (bold, colours)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", output.decode("utf-8"))
    return text.replace("\r\n", "\n").splitlines()


def test_a_change_on_a_terminal_is_drawn_as_a_diff_of_the_exported_text(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    saved = run_script(home, "add", "tz", "-d", "Alice is in UTC+8", "-b", "Perth\n")
    assert saved.returncode == 0, saved.stderr
    shown = on_a_terminal(home, "add", "tz", "--force", "-d", "Alice is in UTC+9")
    lines = styles_removed(shown)
    assert "Updated memory 'tz' (priority 5, global)." in lines
    assert "--- a/tz.md" in lines
    assert "+++ b/tz.md" in lines
    assert "-description: Alice is in UTC+8" in lines
    assert "+description: Alice is in UTC+9" in lines
    assert not [line for line in lines if line.startswith(("+Perth", "-Perth"))]
    body = on_a_terminal(home, "add", "tz", "--force", "-b", f"Perth {CLEAR}\n")
    assert "+Perth \\x1b[2J" in styles_removed(body)
    assert b"\x1b[2J" not in body
    removed = on_a_terminal(home, "remove", "tz")
    lines = styles_removed(removed)
    assert "+++ /dev/null" in lines
    assert "-Perth \\x1b[2J" in lines


def test_a_change_off_a_terminal_prints_no_diff(retain: Retain) -> None:
    retain.ok("add", "tz", "-d", "Alice is in UTC+8")
    printed = retain.ok("add", "tz", "--force", "-d", "Alice is in UTC+9").stdout
    assert printed == "Updated memory 'tz' (priority 5, global).\n"


# -- listing pages, agents' memories, expiry, edit and serve refusals -------------------


def test_list_pages_with_limit_and_cursor(retain: Retain) -> None:
    for name, priority in (("a", "5"), ("b", "2"), ("c", "5"), ("d", "0"), ("e", "9")):
        retain.ok("add", name, "-d", f"Note {name}", "--priority", priority)
    seen: list[str] = []
    cursor: list[str] = []
    while True:
        page = retain.json("list", "--limit", "2", *cursor)
        seen += [m["name"] for m in page["memories"]]
        if page["next_cursor"] is None:
            break
        cursor = ["--cursor", page["next_cursor"]]
    assert seen == ["d", "b", "c", "a", "e"]
    assert retain.json("list")["next_cursor"] is None
    table = retain.ok("list", "--limit", "2").stdout
    assert "More after this page: --cursor " in table
    assert " a " not in table


@pytest.mark.parametrize(
    ("args", "code"), [(["--limit", "0"], "invalid_value"), (["--cursor", "x!"], "invalid_value")]
)
def test_list_refuses_a_bad_limit_or_cursor(retain: Retain, args: list[str], code: str) -> None:
    retain.refused("list", *args, status=9, code=code, remedy="")


def test_list_shows_an_agents_memory_by_id_and_scope_and_get_reads_it(retain: Retain) -> None:
    retain.ok("agent", "add", "bot")
    made = retain.json("remember", "the cache is in /var/cache/b", "--as", "agent:bot")
    row = next(line for line in retain.ok("list").stdout.splitlines() if made["id"] in line)
    assert "agent:bot" in row
    assert retain.json("get", made["id"])["scope"] == "agent:bot"
    assert retain.ok("show", made["id"]).stdout == "the cache is in /var/cache/b"
    assert retain.ok("read", made["id"]).stdout.startswith(f"{made['id']}: ")


def test_add_with_an_expiry_already_past_says_so(retain: Retain) -> None:
    printed = retain.ok("add", "old", "-d", "Old news", "--expires", "2020-01-01").stdout
    assert "'old' is already expired" in printed
    assert retain.json("get", "old")["expired"] is True


@pytest.mark.parametrize("port", ["0", "-1", "65536", "99999999999999999999", "http", "８０"])
def test_serve_refuses_an_invalid_port(retain: Retain, port: str) -> None:
    result = retain("serve", "--port", port)
    assert result.exit_code == 18, result.output
    assert "[invalid_port]" in result.stderr
    assert "a number from 1 to 65535" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_refuses_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        result = run_script(tmp_path / "home", "serve", "--port", port)
    assert result.returncode == 18, result.stderr
    assert f"[port_in_use] cannot listen on 127.0.0.1:{port}".encode() in result.stderr
    assert b"stop what listens there" in result.stderr
    assert b"Traceback" not in result.stderr
    assert b"retain: serving" not in result.stderr


@pytest.mark.parametrize(
    "text",
    [MARKUP, HOSTILE, "Saved memory 'tz' (priority 5, global).", "two\nlines", "日本語 👩\u200d👧"]
    + ["a\tb", "", "trailing  "],
)
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_plain_line_is_printed_as_rich_prints_it(
    text: str, stream: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``say`` and ``warn`` write most lines without rich: the same characters."""
    import io

    from rich.console import Console

    from retain.doors.cli import output
    from retain.doors.terminal import cell

    expected = io.StringIO()
    console = Console(file=expected, highlight=False, soft_wrap=True, markup=False, emoji=False)
    console.print(cell(text))
    (output.say if stream == "stdout" else output.warn)(text)
    captured = capsys.readouterr()
    assert getattr(captured, stream[3:]) == expected.getvalue()
    assert getattr(captured, "err" if stream == "stdout" else "out") == ""


def test_a_bar_goes_when_its_phases_are_done_and_one_inside_another_is_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command's bar is open while it runs (the store it opened reports to it), and a
    verb's own bar inside it is the same one: rich draws one at a time. The bar goes
    (the cursor shown again) once every phase it shows is done, or when a verb's own
    ends, and comes back for the next report of work left."""
    from rich.console import Console

    screen = io.StringIO()
    monkeypatch.setattr(output, "err", Console(file=screen, force_terminal=True, width=80))
    monkeypatch.setenv("FORCE_COLOR", "1")
    hidden, shown = "\x1b[?25l", "\x1b[?25h"  # the cursor, while a bar is drawn and after
    with output.progress_bar() as outer:
        assert outer is not None
        outer("schema", 2, 2)  # done already: nothing to draw
        assert screen.getvalue() == ""
        with output.progress_bar() as inner:
            assert inner == outer
            inner("embed", 0, 4)
            inner("vector index", 0, 3)
            inner("embed", 4, 4)
            assert screen.getvalue().count(shown) == 0  # a phase left: still drawn
            inner("vector index", 3, 3)
            assert screen.getvalue().count(shown) == 1
        with output.progress_bar() as inner:
            assert inner is not None
            inner("check", 1, 3)  # (a phase that ends short of its count)
        assert (screen.getvalue().count(hidden), screen.getvalue().count(shown)) == (2, 2)
        outer("vector index", 1, 3)
        assert screen.getvalue().count(hidden) == 3
    assert screen.getvalue().count(shown) == 3  # gone when the command ends
