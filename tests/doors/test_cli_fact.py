"""The ``retain fact`` commands (``retain.doors.cli.fact``): facts written, read on
both time axes, retracted, and their refusals writing nothing."""

from __future__ import annotations

from tests.doors.cli_helpers import (
    INVALID,
    NOT_FOUND,
    Retain,
)


def test_facts_are_written_read_on_both_axes_and_retracted(retain: Retain) -> None:
    first = retain.json("fact", "write", "Ada", "Employer", "Acme", "--valid-from", "2020-01-01")
    assert first["fact"]["predicate"] == "employer" and first["superseded"] is None
    text = retain.ok(
        "fact", "write", "Ada", "employer", "Initech", "--valid-from", "2024-06-01"
    ).stdout
    assert "Recorded Ada employer = Initech (global)." in text and "Superseded: Acme." in text
    assert "Unchanged" in retain.ok("fact", "write", "ada", "employer", "Initech").stdout
    now = retain.json("fact", "read", "Ada")["facts"]
    assert [(f["value"], f["valid_to"]) for f in now] == [("Initech", None)]
    then = retain.json("fact", "read", "Ada", "employer", "--valid-at", "2022-03-01")["facts"]
    assert [f["value"] for f in then] == ["Acme"]
    table = retain.ok("fact", "history", "Ada", "employer").stdout
    assert "Acme" in table and "superseded" in table and "Initech" in table
    back = retain.json("fact", "retract", "Ada", "employer", "--reason", "wrong")
    assert back["fact"]["status"] == "retracted" and back["restored"]["value"] == "Acme"
    assert "No facts." in retain.ok("fact", "read", "Nobody").stdout
    retain.ok("fact", "write", "Eve", "motto", "[/] [bold]loud[/bold]")  # text, not markup
    assert "[/] [bold]loud[/bold]" in retain.ok("fact", "read", "Eve").stdout
    retain.ok("agent", "add", "planner")
    own = retain.json("fact", "write", "Bob", "mood", "calm", "--as", "agent:planner")
    assert own["fact"]["scope"] == "agent:planner"
    assert retain.json("fact", "read", "Bob")["facts"] == []  # the operator does not see it


def test_fact_refusals_write_nothing(retain: Retain) -> None:
    retain.ok("fact", "write", "Ada", "employer", "Acme", "--valid-from", "2024-01-01")
    retain.refused(
        "fact", "write", "Ada", "employer", "Initech", "--valid-from", "2023-01-01",
        status=INVALID, code="invalid_value", remedy="retract the current value first",
    )  # fmt: skip
    retain.refused(
        "fact", "retract", "Ada", "mood",
        status=NOT_FOUND, code="not_found", remedy="read the fact",
    )  # fmt: skip
    retain.refused(
        "fact", "read", "Ada", "--known-at", "someday",
        status=INVALID, code="invalid_time", remedy="",
    )  # fmt: skip
