"""The write verb: create or update by name, tiers, names, fields, notes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.conftest import ServiceFactory, raw_sql, store_state

from retain import errors
from retain.chrono import TICK, ManualClock
from retain.model import Load, Trust
from retain.service import MemoryService


def test_write_creates_a_global_memory_with_defaults(service: MemoryService) -> None:
    result = service.write("tz", description="Alice is in UTC+8")
    m = result.memory
    assert result.created and result.changed
    assert (m.scope, m.priority, m.load, m.body, m.tags, m.references) == (
        "global", 5, Load.INDEX, "", (), ()
    )  # fmt: skip
    assert m.author == "operator:test"
    assert m.trust is Trust.ATTESTED
    assert m.created_at == m.updated_at == m.verified_at


def test_write_refused_without_description_for_a_new_memory(service: MemoryService) -> None:
    before = store_state(service)
    with pytest.raises(errors.DescriptionRequired) as caught:
        service.write("tz", body="text")
    assert caught.value.code == "description_required"
    assert store_state(service) == before


@pytest.mark.parametrize(
    "name", ["", "has space", "../up", ".hidden", "x" * 129, "a/b", "é", "x\n", "web\n"]
)
def test_write_refused_for_an_invalid_name(service: MemoryService, name: str) -> None:
    before = store_state(service)
    with pytest.raises(errors.InvalidName):
        service.write(name, description="d")
    assert store_state(service) == before


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("priority", 10, errors.InvalidValue),
        ("priority", -1, errors.InvalidValue),
        ("load", "always", errors.InvalidValue),
        ("tags", ["two words"], errors.InvalidValue),
        ("references", ["line\nbreak"], errors.InvalidValue),
        ("references", [f"r{i}" for i in range(21)], errors.TooManyReferences),
        ("source", "a\nb", errors.InvalidValue),
        ("expires", "next tuesday", errors.InvalidTime),
        ("expires", "2026-02-30", errors.InvalidTime),
        ("tier", "everywhere", errors.InvalidValue),
        ("tier", "project", errors.NoProject),
    ],
)
def test_write_refused_for_a_bad_field(
    service: MemoryService, option: str, value: object, error: type[errors.RetainError]
) -> None:
    service.write("keep", description="already here")
    before = store_state(service)
    with pytest.raises(error):
        service.write("tz", description="d", **{option: value})
    with pytest.raises(error):
        service.write("keep", **{option: value})
    assert store_state(service) == before


def test_omitting_a_field_keeps_what_is_there(service: MemoryService, clock: ManualClock) -> None:
    service.add_project("web")
    service.write(
        "tz",
        description="Alice is in UTC+8",
        body="body text",
        tags=["people"],
        priority=2,
        load="inline",
        references=["alice"],
        source="Alice, in chat",
        expires="2027-01-01T00:00:00Z",
    )
    clock.advance(hours=1)
    updated = service.write("tz", description="Alice is in UTC+9").memory
    assert updated.description == "Alice is in UTC+9"
    assert updated.body == "body text"
    assert updated.tags == ("people",)
    assert updated.priority == 2
    assert updated.load is Load.INLINE
    assert updated.references == ("alice",)
    assert updated.source == "Alice, in chat"
    assert updated.expires_at == datetime(2027, 1, 1, tzinfo=UTC)


def test_blank_description_and_source_are_omitted_not_cleared(service: MemoryService) -> None:
    service.write("tz", description="Alice", source="chat")
    m = service.write("tz", description="", source="").memory
    assert (m.description, m.source) == ("Alice", "chat")


def test_empty_string_clears_body_and_expiry_and_empty_list_clears_lists(
    service: MemoryService,
) -> None:
    service.write(
        "tz", description="d", body="b", tags=["t"], references=["r"], expires="2027-01-01"
    )
    m = service.write("tz", body="", expires="", tags=[], references=[]).memory
    assert (m.body, m.expires_at, m.tags, m.references) == ("", None, (), ())


def test_created_at_survives_every_write_path(
    service: MemoryService, clock: ManualClock, tmp_path: object
) -> None:
    created = service.write("tz", description="d", body="one").memory.created_at
    steps = [
        lambda: service.write("tz", description="d2"),
        lambda: service.write("tz", body="two", verified=True),
        lambda: service.write("tz", priority=1, load="inline", tags=["x"]),
        lambda: service.edit("tz", "two", "three"),
        lambda: service.read("tz"),
        lambda: service.write("tz", tier="global"),
    ]
    for step in steps:
        clock.advance(days=1)
        step()
        assert service.get("tz").memory.created_at == created


def test_updated_at_moves_on_every_change_and_verified_at_only_when_asked(
    service: MemoryService, clock: ManualClock
) -> None:
    first = service.write("tz", description="d").memory
    clock.advance(days=1)
    second = service.write("tz", description="d2").memory
    assert first.updated_at == clock.now() - timedelta(days=1) + TICK  # after the realm_add
    assert second.updated_at == clock.now()
    assert second.verified_at == first.verified_at
    clock.advance(days=1)
    third = service.write("tz", verified=True).memory
    assert third.verified_at == clock.now()
    clock.advance(days=1)
    fourth = service.write("tz", body="b").memory
    assert fourth.verified_at == third.verified_at


def test_a_write_that_changes_nothing_records_nothing(service: MemoryService) -> None:
    service.write("tz", description="d", body="b")
    before = store_state(service)
    result = service.write("tz", description="d", body="b")
    assert not result.changed
    assert store_state(service) == before


def test_description_is_collapsed_to_one_line(service: MemoryService) -> None:
    m = service.write("tz", description="  Alice\n is   in\tUTC+8 \n").memory
    assert m.description == "Alice is in UTC+8"


def test_long_description_is_saved_with_a_note(service: MemoryService) -> None:
    result = service.write("tz", description="word " * 60)
    assert result.created
    assert any("characters long" in note for note in result.notes)


def test_near_duplicate_description_is_noted_but_not_blocked(service: MemoryService) -> None:
    service.write("alice-timezone", description="Alice works in the UTC+8 timezone")
    result = service.write("alice-tz", description="Alice works in UTC+8 timezone")
    assert result.created
    assert any("'alice-timezone' already says something very similar" in n for n in result.notes)
    unrelated = service.write("deploy", description="Deploys go out on Tuesdays")
    assert not unrelated.notes


def test_expiry_date_means_the_end_of_that_local_day(service: MemoryService) -> None:
    m = service.write("freeze", description="No deploys", expires="2026-10-25").memory
    assert m.expires_at == datetime(2026, 10, 26, tzinfo=UTC)


def test_rewriting_an_expired_memory_keeps_it_expired_and_says_so(
    service: MemoryService, clock: ManualClock
) -> None:
    service.write("freeze", description="No deploys", expires="2026-03-02")
    clock.advance(days=5)
    result = service.write("freeze", body="still frozen")
    assert result.memory.is_expired(clock.now())
    assert any("stays expired" in n for n in result.notes)


# -- tiers and names ---------------------------------------------------------------


def test_a_project_write_files_in_the_project_tier(service: MemoryService) -> None:
    service.add_project("web")
    m = service.write("stack", description="Uses pnpm", project="web").memory
    assert (m.scope, m.project) == ("project:web", "web")


def test_a_project_session_write_can_target_the_global_tier(service: MemoryService) -> None:
    service.add_project("web")
    m = service.write("tone", description="Be terse", project="web", tier="global").memory
    assert m.scope == "global"


def test_writing_an_existing_memory_keeps_its_tier(service: MemoryService) -> None:
    service.add_project("web")
    service.write("tone", description="Be terse")
    m = service.write("tone", description="Be very terse", project="web").memory
    assert m.scope == "global"


def test_tier_moves_a_memory_between_global_and_its_project(service: MemoryService) -> None:
    service.add_project("web")
    service.write("stack", description="Uses pnpm", project="web")
    moved = service.write("stack", project="web", tier="global")
    assert moved.memory.scope == "global"
    assert any("Moved" in n for n in moved.notes)
    back = service.write("stack", project="web", tier="project").memory
    assert back.scope == "project:web"
    assert len(service.list_memories()) == 1


def test_two_projects_may_hold_one_name(service: MemoryService) -> None:
    service.add_project("web")
    service.add_project("api")
    service.write("stack", description="Uses pnpm", project="web")
    service.write("stack", description="Uses cargo", project="api")
    assert {m.project for m in service.list_memories()} == {"web", "api"}


def test_global_name_held_by_a_project_is_refused(service: MemoryService) -> None:
    service.add_project("web")
    service.write("stack", description="Uses pnpm", project="web")
    before = store_state(service)
    with pytest.raises(errors.NameConflict) as caught:
        service.write("stack", description="global stack")
    assert caught.value.remedy == "choose another name"
    assert store_state(service) == before


def test_moving_to_global_refused_when_another_project_has_the_name(
    service: MemoryService,
) -> None:
    service.add_project("web")
    service.add_project("api")
    service.write("stack", description="Uses pnpm", project="web")
    service.write("stack", description="Uses cargo", project="api")
    before = store_state(service)
    with pytest.raises(errors.NameConflict):
        service.write("stack", project="web", tier="global")
    assert store_state(service) == before


def test_create_only_refuses_an_existing_name(service: MemoryService) -> None:
    service.write("tz", description="d")
    before = store_state(service)
    with pytest.raises(errors.MemoryExists):
        service.write("tz", description="other", create_only=True)
    assert store_state(service) == before


def test_unknown_project_is_refused_everywhere(service: MemoryService) -> None:
    before = store_state(service)
    calls = [
        lambda: service.write("x", description="d", project="nope"),
        lambda: service.get("x", project="nope"),
        lambda: service.read("x", project="nope"),
        lambda: service.edit("x", "a", "b", project="nope"),
        lambda: service.delete("x", project="nope"),
        lambda: service.list_memories(project="nope"),
        lambda: service.search("x", project="nope"),
        lambda: service.rename_project("nope", "other"),
        lambda: service.remove_project("nope"),
        lambda: service.export("/nonexistent-dir-never-written", project="nope"),
    ]
    for call in calls:
        with pytest.raises(errors.ProjectNotFound):
            call()
    assert store_state(service) == before


def test_expected_hash_refuses_a_body_that_changed(service: MemoryService) -> None:
    original = service.write("tz", description="d", body="one").memory
    service.write("tz", body="two")
    before = store_state(service)
    with pytest.raises(errors.StaleUpdate):
        service.write("tz", body="three", expected_hash=original.content_hash)
    assert store_state(service) == before


def test_agent_principal_writes_enter_as_observed(make_service: ServiceFactory) -> None:
    make_service().add_agent("scout")
    agent = make_service(principal="agent:scout")
    m = agent.remember("The build is red")
    assert (m.author, m.trust) == ("agent:scout", Trust.OBSERVED)


def test_an_agent_may_not_write_edit_or_delete_the_shared_tiers(
    make_service: ServiceFactory,
) -> None:
    operator = make_service()
    operator.add_agent("scout")
    operator.write("rules", description="Be kind", body="Be kind to users.")
    agent = make_service(principal="agent:scout")
    for attempt in (
        lambda: agent.write("seen", description="The build is red"),
        lambda: agent.edit("rules", "kind", "mean"),
        lambda: agent.delete("rules"),
    ):
        with pytest.raises(errors.AccessDenied):
            attempt()
    assert operator.get("rules").memory.body == "Be kind to users."


# -- batches ----------------------------------------------------------------------------


def test_write_many_is_all_or_nothing(service: MemoryService) -> None:
    from retain.results import WriteRequest

    service.write("keep", description="kept")
    before = store_state(service)
    batch = [
        WriteRequest("a", description="first"),
        WriteRequest("b", description="second"),
        WriteRequest("keep", description="clash", create_only=True),
    ]
    with pytest.raises(errors.MemoryExists):
        service.write_many(batch)
    assert store_state(service) == before
    results = service.write_many(batch[:2])
    assert [r.memory.name for r in results] == ["a", "b"]


@pytest.mark.parametrize("field", ["tags", "references"])
def test_list_fields_refuse_a_bare_string(service: MemoryService, field: str) -> None:
    before = store_state(service)
    with pytest.raises(errors.InvalidValue):
        service.write("x", description="d", **{field: "people"})
    assert store_state(service) == before


def test_a_batch_sees_its_own_earlier_writes(service: MemoryService) -> None:
    from retain.results import WriteRequest

    service.add_project("web")
    results = service.write_many(
        [
            WriteRequest("a", description="first", body="one"),
            WriteRequest("a", body="two", tags=["x"]),
            WriteRequest("b", description="b", project="web"),
            WriteRequest("b", project="web", tier="global"),
        ]
    )
    assert [(r.created, r.changed) for r in results] == [
        (True, True), (False, True), (True, True), (False, True)
    ]  # fmt: skip
    a = service.get("a").memory
    assert (a.description, a.body, a.tags) == ("first", "two", ("x",))
    assert service.get("b").memory.scope == "global"
    assert len(service.list_memories()) == 2
    assert service.verify().ok


def test_a_batch_sees_its_own_earlier_changes_of_stored_memories(
    service: MemoryService,
) -> None:
    """A batch reads the names it writes ahead, once; a name's later writes must find
    what its earlier ones made of the stored memory, not what was read ahead."""
    from retain.results import WriteRequest
    from retain.service.rows import content_hash

    service.add_project("web")
    service.write("a", description="a", body="zero")
    service.write("b", description="b", project="web")
    results = service.write_many(
        [
            WriteRequest("a", body="one"),
            WriteRequest("a", body="two", expected_hash=content_hash("one")),
            WriteRequest("b", project="web", tier="global"),
            WriteRequest("b", description="b again", project="web"),  # global by now
            WriteRequest("c", description="c"),
        ]
    )
    assert [(r.created, r.changed) for r in results] == [
        (False, True), (False, True), (False, True), (False, True), (True, True)
    ]  # fmt: skip
    assert service.get("a").memory.body == "two"
    b = service.get("b").memory
    assert (b.scope, b.description) == ("global", "b again")
    assert len(service.list_memories()) == 3
    assert service.verify().ok


def test_names_read_together_are_read_as_one_at_a_time(service: MemoryService) -> None:
    """``find_by_names`` answers as ``find_by_name`` of each (a name none holds left
    out): more names than one SQLite statement takes, names no memory holds, one held in
    two scopes, and a quarantined memory's (which holds no name)."""
    from retain.results import WriteRequest

    service.write_many([WriteRequest(f"n{i}", description=f"memory {i}") for i in range(600)])
    for project in ("web", "api"):
        service.add_project(project)
        service.write("p", description=f"{project}'s own", project=project)
    service.write("q", description="held back")
    raw_sql(service, "UPDATE memories SET status = 'quarantined' WHERE name = 'q'")
    names = [f"n{i}" for i in range(700)] + ["q", "p", "absent", "n3"]
    together = service.backend.read(lambda tx: tx.find_by_names(service.realm, names))
    one_by_one = service.backend.read(
        lambda tx: {name: tx.find_by_name(service.realm, name, None) for name in names}
    )
    assert together == {name: held for name, held in one_by_one.items() if held}
    assert len(together) == 601 and together["n599"][0].description == "memory 599"
    assert [m.scope for m in together["p"]] == ["project:api", "project:web"]


@pytest.mark.parametrize(
    ("refusal", "writes"),
    [
        (errors.NameConflict, [("a", "in web", "web", None), ("a", "global", None, "global")]),
        (  # a project the batch found is looked up once; another is still looked up
            errors.ProjectNotFound,
            [("a", "a", "web", None), ("b", "b", "web", None), ("c", "c", "nope", None)],
        ),
    ],
)
def test_a_batch_refused_by_a_later_write_writes_nothing(
    service: MemoryService, refusal: type[errors.RetainError], writes: list[tuple[Any, ...]]
) -> None:
    from retain.results import WriteRequest

    service.add_project("web")
    before = store_state(service)
    with pytest.raises(refusal):
        service.write_many(
            [
                WriteRequest(name, description=description, project=project, tier=tier)
                for name, description, project, tier in writes
            ]
        )
    assert store_state(service) == before


@pytest.mark.parametrize(
    "options",
    [
        {"description": 5},
        {"description": "d", "body": 5},
        {"description": "d", "source": 5},
        {"description": "d", "expires": 20270101},
        {"description": "d", "expires": "9999-12-31"},
        {"description": "d", "expires": "0001-01-01T00:00:00+01:00"},
    ],
)
def test_write_refuses_values_of_the_wrong_type_or_range(
    service: MemoryService, options: dict[str, object]
) -> None:
    before = store_state(service)
    with pytest.raises(errors.InvalidInput):
        service.write("x", **options)
    assert store_state(service) == before


def test_reads_refuse_arguments_of_the_wrong_type(service: MemoryService) -> None:
    service.write("a", description="a", body="text")
    for call in (
        lambda: service.search(None),  # type: ignore[arg-type]
        lambda: service.search([1]),  # type: ignore[list-item]
        lambda: service.search("a", limit="5"),  # type: ignore[arg-type]
        lambda: service.read("a", offset="5"),  # type: ignore[arg-type]
        lambda: service.edit("a", 1, "x"),  # type: ignore[arg-type]
        lambda: service.list_memories(referencing=5),  # type: ignore[arg-type]
        lambda: service.list_memories(unverified="1000000000d"),
    ):
        with pytest.raises(errors.InvalidInput):
            call()
