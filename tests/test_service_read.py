"""Reading, editing, deleting, listing and projects."""

from __future__ import annotations

import pytest
from tests.conftest import store_state

from retain import errors, fields
from retain.chrono import TICK, ManualClock
from retain.service import READ_PAGE_CHARS, MemoryService

# -- projects ----------------------------------------------------------------------


def test_project_add_list_and_duplicate_refused(service: MemoryService) -> None:
    service.add_project("web")
    service.write("stack", description="Uses pnpm", project="web")
    assert [(p.name, p.memories) for p in service.list_projects()] == [("web", 1)]
    before = store_state(service)
    with pytest.raises(errors.ProjectExists):
        service.add_project("web")
    with pytest.raises(errors.InvalidName):
        service.add_project("no spaces")
    assert store_state(service) == before


def test_project_rename_moves_its_memories(service: MemoryService) -> None:
    service.add_project("web")
    service.add_project("api")
    service.write("stack", description="Uses pnpm", project="web")
    renamed = service.rename_project("web", "site")
    assert renamed.memories == 1
    assert service.get("stack", project="site").memory.scope == "project:site"
    before = store_state(service)
    with pytest.raises(errors.ProjectExists):
        service.rename_project("site", "api")
    assert store_state(service) == before


def test_project_remove_refused_while_memories_remain(service: MemoryService) -> None:
    service.add_project("web")
    service.write("stack", description="Uses pnpm", project="web")
    before = store_state(service)
    with pytest.raises(errors.ProjectNotEmpty) as caught:
        service.remove_project("web")
    assert caught.value.details["memories"] == 1
    assert store_state(service) == before
    service.delete("stack", project="web")
    service.remove_project("web")
    assert service.list_projects() == []


# -- lookups by name --------------------------------------------------------------


def test_a_name_in_several_projects_is_refused_until_a_project_is_named(
    service: MemoryService,
) -> None:
    service.add_project("web")
    service.add_project("api")
    service.write("stack", description="Uses pnpm", project="web")
    service.write("stack", description="Uses cargo", project="api")
    before = store_state(service)
    for call in (
        lambda: service.get("stack"),
        lambda: service.read("stack"),
        lambda: service.edit("stack", "x", "y"),
        lambda: service.delete("stack"),
    ):
        with pytest.raises(errors.AmbiguousName) as caught:
            call()
        assert sorted(caught.value.details["projects"]) == ["api", "web"]
    assert store_state(service) == before
    assert service.get("stack", project="api").memory.description == "Uses cargo"


def test_project_lookup_sees_its_tier_and_global_only(service: MemoryService) -> None:
    service.add_project("web")
    service.add_project("api")
    service.write("tone", description="Be terse")
    service.write("stack", description="Uses cargo", project="api")
    assert service.get("tone", project="web").memory.name == "tone"
    with pytest.raises(errors.NotFound):
        service.get("stack", project="web")
    with pytest.raises(errors.NotFound):
        service.get("stack", project="")


# -- read -------------------------------------------------------------------------


def test_read_pages_long_bodies_by_characters(service: MemoryService) -> None:
    body = "é" * (READ_PAGE_CHARS + 10)
    service.write("long", description="A long note", body=body)
    first = service.read("long")
    assert first.text == body[:READ_PAGE_CHARS]
    assert first.next_offset == READ_PAGE_CHARS
    second = service.read("long", offset=first.next_offset)
    assert second.text == body[READ_PAGE_CHARS:]
    assert second.next_offset is None
    assert second.total_chars == len(body)
    with pytest.raises(errors.InvalidValue):
        service.read("long", offset=len(body) + 1)


def test_only_read_increments_the_read_count(service: MemoryService) -> None:
    service.write("tz", description="Alice is in UTC+8", body="b")
    service.get("tz")
    service.search("Alice")
    service.list_memories()
    assert service.get("tz").memory.read_count == 0
    assert service.read("tz").memory.read_count == 1
    assert service.read("tz").memory.read_count == 2
    assert service.get("tz").memory.read_count == 2


def test_read_caption_says_when_recorded_and_verified(
    service: MemoryService, clock: ManualClock
) -> None:
    service.write("tz", description="d")
    clock.advance(days=47)
    assert service.read("tz").caption.startswith("Recorded 47 days ago, not verified since.")
    service.write("tz", verified=True)  # the log's times never run back: verified after
    clock.advance(days=1)
    assert service.read("tz").caption.startswith("Recorded 48 days ago, verified yesterday.")


def test_read_resolves_references_and_backlinks(service: MemoryService) -> None:
    service.write("host", description="The deploy host is db1")
    service.write(
        "deploy", description="How to deploy", references=["host", "https://wiki/ops", "later"]
    )
    page = service.read("deploy")
    assert [(r.target, r.description) for r in page.references] == [
        ("host", "The deploy host is db1"),
        ("https://wiki/ops", None),
        ("later", None),
    ]
    assert service.read("host").referenced_by == ("deploy",)
    assert service.get("host").referenced_by == ("deploy",)


# -- edit -------------------------------------------------------------------------


def test_edit_replaces_exactly_once(service: MemoryService) -> None:
    service.write("n", description="d", body="one\ntwo\nthree\nfour\nfive\nsix\n")
    result = service.edit("n", "three", "3")
    assert result.memory.body == "one\ntwo\n3\nfour\nfive\nsix\n"
    assert result.replacements == 1
    assert result.excerpt == "one\ntwo\n3\nfour\nfive\n"


def test_edit_refuses_no_match_and_ambiguous_match(service: MemoryService) -> None:
    service.write("n", description="d", body="a b a")
    before = store_state(service)
    with pytest.raises(errors.EditNoMatch):
        service.edit("n", "zzz", "y")
    with pytest.raises(errors.EditAmbiguous) as caught:
        service.edit("n", "a", "y")
    assert caught.value.details["occurrences"] == 2
    with pytest.raises(errors.InvalidValue):
        service.edit("n", "", "y")
    assert store_state(service) == before
    assert service.edit("n", "a", "y", replace_all=True).memory.body == "y b y"


def test_edit_with_empty_new_deletes_the_text(service: MemoryService) -> None:
    service.write("n", description="d", body="keep drop keep")
    assert service.edit("n", " drop", "").memory.body == "keep keep"


def test_edit_verified_moves_verified_at(service: MemoryService, clock: ManualClock) -> None:
    first = service.write("n", description="d", body="x").memory
    clock.advance(days=3)
    plain = service.edit("n", "x", "y").memory
    assert plain.verified_at == first.verified_at
    checked = service.edit("n", "y", "z", verified=True).memory
    # The edit's instant: a tick after the plain edit, the clock not having moved since.
    assert checked.verified_at == checked.updated_at == plain.updated_at + TICK


# -- delete -----------------------------------------------------------------------


def test_delete_names_what_still_references_it_and_keeps_those_references(
    service: MemoryService,
) -> None:
    service.write("host", description="The deploy host")
    service.write("deploy", description="How to deploy", references=["host"])
    result = service.delete("host")
    assert result.referenced_by == ("deploy",)
    assert service.get("deploy").memory.references == ("host",)
    with pytest.raises(errors.NotFound):
        service.get("host")


# -- list -------------------------------------------------------------------------


def test_list_is_in_index_order(service: MemoryService, clock: ManualClock) -> None:
    service.write("old-rule", description="a", priority=1)
    clock.advance(days=1)
    service.write("new-note", description="b", priority=5)
    clock.advance(days=1)
    service.write("newest-rule", description="c", priority=1)
    names = [m.name for m in service.list_memories()]
    assert names == ["newest-rule", "old-rule", "new-note"]


def test_list_filters(service: MemoryService, clock: ManualClock) -> None:
    service.add_project("web")
    service.write("a", description="a", tags=["infra"], references=["deploy-host"])
    service.write("b", description="b", project="web", expires="2026-03-02")
    clock.advance(days=100)
    service.write("c", description="c", tags=["people"], verified=True)
    assert [m.name for m in service.list_memories(project="web")] == ["b"]
    assert [m.name for m in service.list_memories(project="")] == ["c", "a"]
    assert [m.name for m in service.list_memories(tag="infra")] == ["a"]
    assert [m.name for m in service.list_memories(referencing="deploy-host")] == ["a"]
    assert {m.name for m in service.list_memories(unverified="90d")} == {"a", "b"}
    assert [m.name for m in service.list_memories(expired=True)] == ["b"]
    with pytest.raises(errors.InvalidTime):
        service.list_memories(unverified="ninety days")


def test_list_referencing_a_memory_matches_by_name_or_id(service: MemoryService) -> None:
    host = service.write("host", description="h").memory
    service.write("by-name", description="x", references=["host"])
    service.write("by-id", description="y", references=[host.id])
    assert {m.name for m in service.list_memories(referencing="host")} == {"by-name", "by-id"}


def test_backlinks_by_name_stay_within_the_tier_the_name_resolves_in(
    service: MemoryService,
) -> None:
    service.add_project("a")
    service.add_project("b")
    service.write("notes", description="a's notes", project="a")
    service.write("notes", description="b's notes", project="b")
    service.write("user-b", description="uses notes", project="b", references=["notes"])
    assert service.get("notes", project="a").referenced_by == ()
    assert service.get("notes", project="b").referenced_by == ("b/user-b",)
    a_notes = service.get("notes", project="a").memory
    service.write("by-id", description="cites a's by id", project="b", references=[a_notes.id])
    assert service.get("notes", project="a").referenced_by == ("b/by-id",)


def test_an_edit_that_changes_nothing_records_nothing(service: MemoryService) -> None:
    service.write("n", description="d", body="hello")
    before = store_state(service)
    result = service.edit("n", "hello", "hello")
    assert result.replacements == 0
    assert store_state(service) == before


def test_a_page_of_memories_or_events_holds_at_most_page_max(service: MemoryService) -> None:
    service.write("a", description="a")
    for verb, held in ((service.list_memories, 1), (service.events, 2)):  # realm_add, create
        assert len(verb(limit=fields.PAGE_MAX)) == held
        with pytest.raises(errors.InvalidValue) as caught:
            verb(limit=fields.PAGE_MAX + 1)
        assert caught.value.details == {"field": "limit"}
        assert f"at most {fields.PAGE_MAX}" in caught.value.message
    assert len(service.list_memories()) == 1  # no limit: every memory, unpaged
