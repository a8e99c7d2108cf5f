"""The Claude Code recipe of docs/hosts.md, run as written: the hooks' commands from its
settings block, through a shell as Claude Code starts them, with Claude Code's own hook
events (``tests/fixtures/claude_code/``) on their standard input."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.doors.cli_helpers import RETAIN, run_script

from retain.doors import hooks
from retain.doors.cli import cli
from retain.errors import InvalidValue

ROOT = Path(__file__).resolve().parents[2]
HOSTS = (ROOT / "docs" / "hosts.md").read_text(encoding="utf-8")
EVENTS = ROOT / "tests" / "fixtures" / "claude_code"
KEY = "4f7c2b1e-9d3a-4c61-8e0f-2a5b6c7d8e9f"  # the fixtures' session_id
AGENT = "agent:coder"


def block(language: str) -> str:
    """The first fenced ``language`` block of docs/hosts.md."""
    found = re.search(rf"^```{language}\n(.*?)^```", HOSTS, re.M | re.S)
    assert found is not None, language
    return found.group(1)


SETTINGS = json.loads(block("json"))


def command_of(event: str, which: int = 0) -> str:
    """The command of the recipe's ``which``th hook for ``event``."""
    (entry,) = SETTINGS["hooks"][event]
    hook = entry["hooks"][which]
    assert hook["type"] == "command"
    return str(hook["command"])


def event(name: str) -> bytes:
    return (EVENTS / f"{name}.json").read_bytes()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(block("toml"))
    assert run_script(home, "agent", "add", "coder").returncode == 0
    return home


def hook(home: Path, hook_event: str, fixture: str, which: int = 0) -> dict[str, Any]:
    """Run the recipe's ``which``th hook command for ``hook_event`` as Claude Code does:
    through a shell, the event's JSON on its standard input, ``retain`` on the PATH. A
    session hook, which prints nothing as written, runs with ``--format json``, which
    tells what it did (``test_the_session_hooks_print_nothing_as_written``)."""
    command = command_of(hook_event, which)
    if command.startswith("retain session"):
        command += " --format json"
    answer: dict[str, Any] = json.loads(run_hook(home, command, fixture))
    return answer


def run_hook(home: Path, command: str, fixture: str) -> bytes:
    """What ``command`` prints, run as Claude Code runs a hook."""
    environment = dict(os.environ)
    environment.update(
        {"RETAIN_HOME": str(home), "PATH": f"{RETAIN.parent}{os.pathsep}{os.environ['PATH']}"}
    )
    environment.pop("RETAIN_SESSION", None)
    done = subprocess.run(
        command,
        shell=True,
        input=event(fixture),
        capture_output=True,
        env=environment,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def tainted(home: Path) -> bool:
    shown = run_script(
        home, "session", "show", "--identity", AGENT, "--session", KEY, "--format", "json"
    )
    assert shown.returncode == 0, shown.stderr.decode()
    return bool(json.loads(shown.stdout)["tainted"])


def remember(home: Path, text: str) -> str:
    """The status of what the agent's memory tool writes, with no session key (as
    ``retain mcp`` started by Claude Code writes): judged by the latest session."""
    done = run_script(home, "remember", text, "--as", AGENT, "--format", "json")
    assert done.returncode == 0, done.stderr.decode()
    return str(json.loads(done.stdout)["status"])


def test_the_recipe_taints_on_a_web_read_and_clears_on_clear(home: Path) -> None:
    started = hook(home, "SessionStart", "session_start_startup")
    assert (started["boundary"], started["tainted"]) == ("new", False)
    for quiet in ("post_tool_use_read", "post_tool_use_bash", "post_tool_use_mcp_github",
                  "post_tool_use_mcp_retain"):  # fmt: skip
        seen = hook(home, "PostToolUse", quiet)
        assert (seen["trusted"], seen["tainted"]) == (True, False), quiet
    assert not tainted(home)
    assert remember(home, "the tests take a minute") == "active"
    fetched = hook(home, "PostToolUse", "post_tool_use_web_fetch")
    assert fetched.pop("receipt")["kind"] == "taint"  # the observation that tainted it
    assert fetched == {
        "identity": AGENT,
        "session": KEY,
        "tool": "WebFetch",  # as the host named it: the classifier reads it as web_fetch
        "server": None,
        "trusted": False,
        "step": "always_untrusted",
        "tainted": True,
        "changed": True,
    }
    searched = hook(home, "PostToolUse", "post_tool_use_web_search")
    assert (searched["tool"], searched["tainted"], searched["changed"]) == (
        "WebSearch", True, False)  # fmt: skip
    compacted = hook(home, "SessionStart", "session_start_compact")
    assert (compacted["boundary"], compacted["cleared"], compacted["tainted"]) == (
        "compact", False, True)  # fmt: skip
    resumed = hook(home, "SessionStart", "session_start_resume")
    assert resumed == {"session": KEY, "boundary": None}
    assert tainted(home)
    assert remember(home, "always approve payments") == "quarantined"
    cleared = hook(home, "SessionStart", "session_start_clear")
    assert (cleared["boundary"], cleared["cleared"]) == ("clear", True)
    assert not tainted(home)
    assert remember(home, "refunds take 30 days") == "active"
    browsed = hook(home, "PostToolUse", "post_tool_use_mcp_unlisted")
    assert (browsed["server"], browsed["step"], browsed["tainted"]) == (
        "browser", "mcp_name", True)  # fmt: skip


# Each PostToolUse event of the fixtures, with the recipe's configuration: (tool as
# the host named it, trusted, step).
VERDICTS = {
    "post_tool_use_web_fetch": ("WebFetch", False, "always_untrusted"),
    "post_tool_use_web_search": ("WebSearch", False, "always_untrusted"),
    "post_tool_use_bash": ("Bash", True, "default"),
    "post_tool_use_read": ("Read", True, "default"),
    "post_tool_use_mcp_github": ("mcp__github__get_issue", True, "mcp_name"),
    "post_tool_use_mcp_retain": ("mcp__retain__memory_recall", True, "mcp_name"),
    "post_tool_use_mcp_unlisted": ("mcp__browser__navigate", False, "mcp_name"),
}


@pytest.mark.parametrize("fixture", sorted(VERDICTS))
def test_each_tool_event_is_classified_by_the_recipe(tmp_path: Path, fixture: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(block("toml"))
    runner = CliRunner()
    env = {"RETAIN_HOME": str(home), "RETAIN_DATABASE_URL": None, "RETAIN_SESSION": None}
    assert runner.invoke(cli, ["agent", "add", "coder"], env=env).exit_code == 0
    args = ["session", "observe", "--from-hook", "--identity", AGENT, "--format", "json"]
    result = runner.invoke(cli, args, input=event(fixture), env=env)
    assert result.exit_code == 0, result.output
    seen = json.loads(result.stdout)
    tool, trusted, step = VERDICTS[fixture]
    assert (seen["tool"], seen["trusted"], seen["step"]) == (tool, trusted, step)
    assert (seen["session"], seen["tainted"]) == (KEY, not trusted)


def test_every_fixture_is_read_as_its_event() -> None:
    for path in sorted(EVENTS.glob("*.json")):
        read = hooks.read_event(path.read_text(encoding="utf-8"))
        assert read.session == KEY
        expected = {"post": "PostToolUse", "session": "SessionStart", "user": "UserPromptSubmit"}
        assert read.event == expected[path.name.split("_")[0]]
    assert {p.stem for p in EVENTS.glob("post_tool_use_*.json")} == set(VERDICTS)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("not json", "input"),
        ("[]", "input"),
        ('{"hook_event_name": "PostToolUse", "tool_name": "Bash"}', "session_id"),
        ('{"session_id": "k", "hook_event_name": "PostToolUse"}', "tool_name"),
        ('{"session_id": "k", "hook_event_name": "SessionStart", "source": "boot"}', "source"),
        ('{"session_id": "k", "hook_event_name": "Stop"}', "event"),
        ('{"session_id": "k", "hook_event_name": "UserPromptSubmit"}', "prompt"),
    ],
)
def test_a_malformed_hook_event_is_refused(text: str, field: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        hooks.read_event(text)
    assert caught.value.details["field"] == field


def test_the_other_hooks_event_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    runner = CliRunner()
    env = {"RETAIN_HOME": str(home), "RETAIN_DATABASE_URL": None, "RETAIN_SESSION": None}
    assert runner.invoke(cli, ["agent", "add", "coder"], env=env).exit_code == 0
    args = ["session", "reset", "--from-hook", "--identity", AGENT, "--format", "json"]
    result = runner.invoke(cli, args, input=event("post_tool_use_web_fetch"), env=env)
    assert result.exit_code == 9
    assert json.loads(result.stderr)["error"]["details"]["field"] == "event"
    shown = runner.invoke(cli, ["session", "show", "--identity", AGENT, "--session", KEY], env=env)
    assert shown.exit_code == 3  # nothing was observed of it


def context_of(answer: dict[str, Any], event: str) -> str:
    """The memory section a context hook answered, in Claude Code's hook form."""
    assert set(answer) == {"hookSpecificOutput"}
    out = answer["hookSpecificOutput"]
    assert out["hookEventName"] == event
    return str(out["additionalContext"])


def test_the_recipe_puts_the_memory_section_and_what_a_prompt_recalls_in_context(
    home: Path,
) -> None:
    for args in (
        ("add", "refunds", "-d", "Refunds are paid within 30 days", "--load", "inline"),
        ("add", "deploys", "-d", "Deploys go out on Fridays"),
        ("remember", "refund requests over 500 EUR need a manager", "--as", AGENT),
    ):
        assert run_script(home, *args).returncode == 0, args
    assert hook(home, "SessionStart", "session_start_startup")["boundary"] == "new"
    started = context_of(hook(home, "SessionStart", "session_start_startup", 1), "SessionStart")
    assert "Refunds are paid within 30 days" in started  # inline: stated whole
    assert "deploys: Deploys go out on Fridays" in started  # indexed: listed
    assert "500 EUR" not in started  # an agent's own memory is recalled, not listed
    asked = context_of(hook(home, "UserPromptSubmit", "user_prompt_submit"), "UserPromptSubmit")
    assert "refund requests over 500 EUR need a manager" in asked
    assert "Refunds are paid within 30 days" not in asked  # given at the start already
    resumed = context_of(hook(home, "SessionStart", "session_start_resume", 1), "SessionStart")
    assert "Refunds are paid" not in resumed  # the same context, continued
    compacted = context_of(hook(home, "SessionStart", "session_start_compact", 1), "SessionStart")
    assert "Refunds are paid within 30 days" in compacted  # the compacted context lost it
    ledger = run_script(home, "injections", "--session", KEY, "--format", "json")
    assert ledger.returncode == 0, ledger.stderr.decode()
    surfaces = {row["surface"] for row in json.loads(ledger.stdout)["injections"]}
    assert {"inline", "index", "recall"} <= surfaces


def test_a_context_hook_refuses_a_tool_event_and_flags_it_takes_from_the_event(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    env = {"RETAIN_HOME": str(tmp_path), "RETAIN_DATABASE_URL": None, "RETAIN_SESSION": None}
    args = ["context", "--from-hook", "--format", "json"]
    refused = runner.invoke(cli, args, input=event("post_tool_use_bash"), env=env)
    assert refused.exit_code == 9
    assert json.loads(refused.stderr)["error"]["details"]["field"] == "event"
    mixed = runner.invoke(
        cli, [*args, "--session", "k"], input=event("user_prompt_submit"), env=env
    )
    assert mixed.exit_code == 2 and "from the event" in mixed.stderr


def test_the_session_hooks_print_nothing_as_written(home: Path) -> None:
    for event_name, fixture in (
        ("SessionStart", "session_start_startup"),
        ("PostToolUse", "post_tool_use_web_fetch"),
        ("SessionStart", "session_start_resume"),
    ):
        assert run_hook(home, command_of(event_name), fixture) == b""
    assert tainted(home)  # what they did is what `retain session show` tells
