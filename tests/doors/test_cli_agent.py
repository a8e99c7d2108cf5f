"""The agent-facing commands (``retain.doors.cli.agent``): ``remember``, ``recall``
and ``forget`` of an agent's own memory, refused to others, and ``context`` with its
injection ledger."""

from __future__ import annotations

from tests.doors.cli_helpers import (
    ACCESS_DENIED,
    INVALID,
    NOT_FOUND,
    RECALL_FAILED,
    Retain,
)


def test_an_agent_remembers_recalls_and_forgets_its_own(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    saved = retain.json(
        "remember", "Alice prefers terse answers in code reviews", "--as", "agent:planner"
    )
    assert (saved["scope"], saved["author"], saved["trust"], saved["load"]) == (
        "agent:planner",
        "agent:planner",
        "observed",
        "search",
    )
    found = retain.json("recall", "code reviews", "--as", "agent:planner")["memories"]
    assert [m["id"] for m in found] == [saved["id"]]
    assert "Forgot" in retain.ok("forget", saved["id"], "--as", "agent:planner").stdout
    assert retain.json("recall", "code reviews", "--as", "agent:planner")["memories"] == []


def test_agent_verbs_are_refused_to_others(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("agent", "add", "coder")
    saved = retain.json("remember", "the build is flaky on Fridays", "--as", "agent:planner")
    retain.refused(
        "remember",
        "x",
        "--as",
        "operator:me",
        status=ACCESS_DENIED,
        code="access_denied",
        remedy="--as agent:NAME",
    )
    retain.refused(  # another agent's memory: its existence is not told
        "forget",
        saved["id"],
        "--as",
        "agent:coder",
        status=NOT_FOUND,
        code="not_found",
        remedy="recall it first",
    )
    retain.refused(
        "recall",
        "build",
        "--as",
        "agent:nobody",
        status=NOT_FOUND,
        code="agent_not_found",
        remedy="retain agent add nobody",
    )


# -- the memory section and the injection ledger ------------------------------------------


def test_context_prints_the_section_and_then_only_what_changed(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("project", "add", "webdev")
    retain.ok("add", "tone", "-d", "How to answer", "--body", "Answer tersely.", "--load", "inline")
    retain.ok("add", "deploy", "-d", "How webdev deploys", "--body", "Tuesdays.", "-p", "webdev")
    first = retain.ok("context", "--as", "agent:planner", "-p", "webdev", "--session", "s1")
    assert first.stdout.startswith("# Memory\nWhat memory holds for agent planner on project")
    assert "### tone (global)\nAnswer tersely.\n" in first.stdout
    assert "### Project webdev\n- deploy: How webdev deploys (today)\n" in first.stdout
    again = retain.json("context", "--as", "agent:planner", "-p", "webdev", "--session", "s1")
    assert (again["text"], again["full"], again["injected"]) == ("", False, [])
    retain.ok("add", "naming", "-d", "How we name services", "--body", "kebab-case")
    delta = retain.json("context", "--as", "agent:planner", "-p", "webdev", "--session", "s1")
    assert delta["changes"] == ["added"]
    assert "Added to the index: naming (global): How we name services (today)" in delta["text"]
    rows = retain.json("injections", "--session", "s1")["injections"]
    assert [r["surface"] for r in rows] == ["index", "index", "inline"]
    assert {r["identity"] for r in rows} == {"agent:planner"}


def test_context_quotes_turn_recall_and_reports_a_skipped_one(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.ok("remember", "The staging database is rebuilt every Sunday.", "--as", "agent:planner")
    shown = retain.ok("context", "--as", "agent:planner", "--turn", "when is staging rebuilt?")
    assert "# Recalled from memory\n" in shown.stdout
    assert "> The staging database is rebuilt every Sunday.\n" in shown.stdout
    late = retain(
        "context",
        "--as",
        "agent:planner",
        "--turn",
        "when is staging rebuilt?",
        "--recall-timeout-ms",
        "0",
    )
    assert late.exit_code == 0, late.output
    assert "Recalled" not in late.stdout
    assert "note: recall took longer than 0 ms; rendered without recall" in late.stderr


def test_context_refuses_bad_input_and_unknown_names(retain: Retain) -> None:
    retain.ok("agent", "add", "planner")
    retain.refused(
        "context",
        "--as",
        "agent:planner",
        "--turn",
        "anything",
        "--recall-timeout-ms",
        "0",
        "--recall-failure",
        "fail",
        status=RECALL_FAILED,
        code="recall_failed",
        remedy="raise recall_timeout_ms",
    )
    retain.refused(
        "context",
        "--as",
        "agent:planner",
        "--session",
        "",
        status=INVALID,
        code="invalid_value",
        remedy="the key your agent runtime gives",
    )
    retain.refused(
        "context",
        "--as",
        "agent:nobody",
        status=NOT_FOUND,
        code="agent_not_found",
        remedy="retain agent add nobody",
    )
    retain.refused(
        "context",
        "-p",
        "nowhere",
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add nowhere",
    )
    retain.refused(
        "injections",
        "--as",
        "agent:planner",
        "--identity",
        "agent:other",
        status=ACCESS_DENIED,
        code="access_denied",
        remedy="ask an operator",
    )
