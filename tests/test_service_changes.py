"""What a write, an edit and a delete changed: the memory's exported text before and
after (``before``/``after``), the text ``export`` writes for it, at every door; a write
already past its expiry says so; an operator reads an agent's memory by its id."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory, as_changed

from retain import errors
from retain.chrono import ManualClock
from retain.service import MemoryService


def changed_lines(before: str | None, after: str | None) -> tuple[list[str], list[str]]:
    """The lines a unified diff of the two texts removes and adds."""
    rows = list(
        difflib.unified_diff(
            (before or "").splitlines(), (after or "").splitlines(), lineterm="", n=0
        )
    )[2:]
    removed = [r[1:] for r in rows if r.startswith("-")]
    added = [r[1:] for r in rows if r.startswith("+")]
    return removed, added


def test_a_new_memory_has_no_before_and_its_export_text_after(
    service: MemoryService, tmp_path: Path
) -> None:
    result = service.write("tz", description="Alice is in UTC+8", body="She is in Perth.\n")
    assert result.before is None
    service.export(tmp_path / "snap")
    assert result.after == as_changed(tmp_path / "snap" / "tz.md")
    assert result.to_dict(service.clock.now())["before"] is None


def test_a_reworded_description_is_one_changed_frontmatter_line(
    service: MemoryService, clock: ManualClock
) -> None:
    service.write("tz", description="Alice is in UTC+8", body="She is in Perth.\n")
    clock.advance(seconds=60)
    result = service.write("tz", description="Alice is in UTC+9")
    assert changed_lines(result.before, result.after) == (
        ["description: Alice is in UTC+8"],
        ["description: Alice is in UTC+9"],
    )
    record = result.to_dict(clock.now())
    assert (record["before"], record["after"]) == (result.before, result.after)


def test_a_rewritten_body_shows_line_by_line(service: MemoryService) -> None:
    service.write("notes", description="Notes", body="one\ntwo\nthree\n")
    result = service.write("notes", body="one\n2\nthree\nfour\n")
    assert changed_lines(result.before, result.after) == (["two"], ["2", "four"])
    assert result.after.endswith("---\none\n2\nthree\nfour\n")


def test_an_unchanged_write_has_the_same_text_before_and_after(service: MemoryService) -> None:
    service.write("tz", description="Alice is in UTC+8")
    result = service.write("tz", description="Alice is in UTC+8")
    assert not result.changed
    assert result.before == result.after


def test_an_edit_carries_the_text_before_and_after(service: MemoryService) -> None:
    service.write("notes", description="Notes", body="deploy to app01\n")
    result = service.edit("notes", "app01", "app02")
    assert changed_lines(result.before, result.after) == (["deploy to app01"], ["deploy to app02"])
    record = result.to_dict(service.clock.now())
    assert (record["before"], record["after"]) == (result.before, result.after)


def test_a_delete_carries_the_text_before_and_none_after(
    service: MemoryService, tmp_path: Path
) -> None:
    service.write("tz", description="Alice is in UTC+8", body="Perth\n", tags=["people"])
    service.export(tmp_path / "snap")
    exported = as_changed(tmp_path / "snap" / "tz.md")
    result = service.delete("tz")
    assert (result.before, result.after) == (exported, None)
    assert result.receipt is not None and result.receipt.kind == "delete"
    assert result.to_dict() == {
        "removed": "tz",
        "referenced_by": [],
        "before": exported,
        "after": None,
        "receipt": result.receipt.to_dict(),
    }


def test_a_write_whose_expiry_is_already_past_says_so(
    service: MemoryService, clock: ManualClock
) -> None:
    created = service.write("freeze", description="No deploys", expires="2026-02-01")
    assert created.memory.is_expired(clock.now())
    assert created.to_dict(clock.now())["expired"] is True
    assert [n for n in created.notes if "'freeze' is already expired" in n]
    service.write("live", description="Deploys are fine")
    moved = service.write("live", expires="2026-02-01")
    assert [n for n in moved.notes if "'live' is already expired" in n]
    later = service.write("soon", description="Soon", expires="2026-04-01")
    assert not [n for n in later.notes if "expired" in n]


def test_an_operator_reads_an_agents_memory_by_its_id(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("bot")
    agent = make_service(principal="agent:bot")
    mine = agent.remember("the build cache lives in /var/cache/b")
    record = operator.get(mine.id)
    assert (record.memory.id, record.memory.scope) == (mine.id, "agent:bot")
    assert operator.read(mine.id).text == "the build cache lives in /var/cache/b"
    assert agent.get(mine.id).memory.id == mine.id
    operator.add_agent("other")
    other = make_service(principal="agent:other")
    with pytest.raises(errors.NotFound):
        other.get(mine.id)
    with pytest.raises(errors.NotFound):
        make_service(principal="app:ci").get(mine.id)
    with pytest.raises(errors.NotFound):
        operator.delete(mine.id)  # by id for the reads only
