"""``import_from``: another store's memories (the MCP memory server's JSON lines, a mem0
dump, a folder of Markdown notes) into a tier, in one transaction, with what was passed
over and why; and the MCP round trip: import, export, import into a fresh store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.formats import slug
from retain.integrations.mem0 import Memory
from retain.service import MemoryService
from retain.storage.sqlite import SqliteBackend

TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

MCP_LINES = [
    {"type": "entity", "name": "John Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish", "Graduated in 2019"]},
    {"type": "entity", "name": "Anthropic", "entityType": "organization",
     "observations": ["AI safety company"]},
    {"type": "entity", "name": "Lisbon", "entityType": "city", "observations": []},
    {"type": "relation", "from": "John Smith", "to": "Anthropic", "relationType": "works_at"},
    {"type": "relation", "from": "John Smith", "to": "Lisbon", "relationType": "lives_in"},
]  # fmt: skip


def jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def fields_of(service: MemoryService) -> list[tuple[Any, ...]]:
    return sorted(
        (m.scope, m.name, m.description, m.body, m.tags, m.references, m.subject, m.metadata)
        for m in service.list_memories()
    )


# the MCP memory server


def test_an_mcp_memory_file_becomes_memories_that_reference_each_other(
    service: MemoryService, tmp_path: Path
) -> None:
    report = service.import_from("mcp-memory", jsonl(tmp_path / "m.jsonl", MCP_LINES))
    assert [(x.source, x.name, x.action) for x in report.landed] == [
        ("m.jsonl:1", "John-Smith", "create"),
        ("m.jsonl:2", "Anthropic", "create"),
        ("m.jsonl:3", "Lisbon", "create"),
    ]
    assert report.skipped == () and not report.dry_run
    john = service.get("John-Smith").memory
    assert john.description == "John Smith (person) — Speaks fluent Spanish"
    assert john.body == "Speaks fluent Spanish\nGraduated in 2019"
    assert (john.subject, john.references, john.scope) == (
        "John Smith",
        ("Anthropic", "Lisbon"),
        "global",
    )
    assert john.metadata["caller"] == {
        "mcp_memory": {
            "entity_type": "person",
            "relations": [
                {"to": "Anthropic", "type": "works_at"},
                {"to": "Lisbon", "type": "lives_in"},
            ],
        }
    }
    assert [m.name for m in service.list_memories(referencing="Anthropic")] == ["John-Smith"]


def test_what_an_mcp_file_cannot_give_is_passed_over_with_its_reason(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(MCP_LINES[0]),
                "not json",
                json.dumps({"type": "entity", "name": "???", "observations": []}),
                json.dumps(
                    {
                        "type": "relation",
                        "from": "John Smith",
                        "to": "Nobody",
                        "relationType": "knows",
                    }
                ),
                json.dumps({"type": "entity", "name": "John Smith", "observations": []}),
                json.dumps({"type": "entity", "name": "Key", "observations": [f"token {TOKEN}"]}),
                json.dumps({"type": "note"}),
                "",
            ]
        )
    )
    report = service.import_from("mcp-memory", path)
    assert [x.name for x in report.landed] == ["John-Smith", slug("???")]
    assert [(x.source, x.reason) for x in report.skipped] == [
        ("m.jsonl:2", "not a JSON object"),
        ("m.jsonl:4", "no entity named 'Nobody'"),
        ("m.jsonl:5", "entity 'John Smith' is named twice"),
        ("m.jsonl:7", "neither an entity nor a relation"),
        ("m.jsonl:6", "it holds what looks like a secret (github_token)"),
    ]
    assert TOKEN not in json.dumps(report.to_dict())
    assert sorted(m.name or "" for m in service.list_memories()) == ["John-Smith", slug("???")]


def test_an_mcp_import_exported_and_imported_again_comes_back_identical(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    service.import_from(
        "mcp-memory", jsonl(tmp_path / "m.jsonl", MCP_LINES), project="kg", create=True
    )
    service.export(tmp_path / "snapshot")
    fresh = MemoryService(SqliteBackend(tmp_path / "fresh" / "retain.db"), clock=clock)
    fresh.add_project("kg")
    fresh.import_(tmp_path / "snapshot")
    assert fields_of(fresh) == fields_of(service)
    assert len(fields_of(fresh)) == 3
    fresh.close()


# the tier, the project, dry runs and names taken


def test_a_missing_project_is_refused_unless_created_in_the_same_transaction(
    service: MemoryService, tmp_path: Path
) -> None:
    path = jsonl(tmp_path / "m.jsonl", MCP_LINES)
    before = store_state(service)
    with pytest.raises(errors.ProjectNotFound):
        service.import_from("mcp-memory", path, project="kg")
    assert store_state(service) == before
    planned = service.import_from("mcp-memory", path, project="kg", create=True, dry_run=True)
    assert planned.dry_run and planned.project_created == "kg" and len(planned.landed) == 3
    assert store_state(service) == before
    done = service.import_from("mcp-memory", path, project="kg", create=True)
    assert done.project_created == "kg"
    assert {m.scope for m in service.list_memories()} == {"project:kg"}
    assert [p.name for p in service.list_projects()] == ["kg"]


def test_a_taken_name_refuses_the_import_unless_forced(
    service: MemoryService, tmp_path: Path
) -> None:
    path = jsonl(tmp_path / "m.jsonl", MCP_LINES)
    service.write("Anthropic", description="already here", body="kept")
    planned = service.import_from("mcp-memory", path, dry_run=True)
    assert [x.action for x in planned.landed] == ["create", "exists", "create"]
    before = store_state(service)
    with pytest.raises(errors.MemoryExists):
        service.import_from("mcp-memory", path)
    assert store_state(service) == before
    forced = service.import_from("mcp-memory", path, force=True)
    assert [x.action for x in forced.landed] == ["create", "overwrite", "create"]
    assert service.get("Anthropic").memory.body == "AI safety company"


def test_an_unknown_format_or_an_unreadable_file_is_refused(
    service: MemoryService, tmp_path: Path
) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        service.import_from("zep", tmp_path)
    assert "mcp-memory, mem0, markdown" in caught.value.remedy
    with pytest.raises(errors.SnapshotInvalid):
        service.import_from("mcp-memory", tmp_path / "missing.jsonl")
    (tmp_path / "latin1.jsonl").write_bytes(b"\xe9t\xe9")
    with pytest.raises(errors.SnapshotInvalid):
        service.import_from("mcp-memory", tmp_path / "latin1.jsonl")


def test_an_agent_may_not_import(make_service: ServiceFactory, tmp_path: Path) -> None:
    make_service().add_agent("ada")
    with pytest.raises(errors.AccessDenied):
        make_service(principal="agent:ada").import_from("mcp-memory", tmp_path / "m.jsonl")


# mem0


def test_a_mem0_dump_comes_back_as_the_mem0_door_kept_it(
    make_service: ServiceFactory, clock: ManualClock, tmp_path: Path
) -> None:
    source = Memory(make_service(principal="app:old"))
    added = source.add(
        [{"role": "user", "content": "I'm vegetarian", "name": "alice"}],
        user_id="alice", run_id="r1", metadata={"category": "diet"},
    )  # fmt: skip
    source.add("Bob likes jazz", user_id="bob", agent_id="dj")
    dump = source.get_all(user_id="alice")["results"] + source.get_all(user_id="bob")["results"]
    dump.append({"id": "x", "memory": "", "user_id": "carol"})
    dump.append({"id": "y", "memory": "no owner"})
    dump.append({"id": "z", "memory": "tampered", "hash": "0" * 32, "user_id": "carol"})
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"results": dump}))

    target = MemoryService(SqliteBackend(tmp_path / "target" / "retain.db"), clock=clock)
    target.add_project("moved")
    report = target.import_from("mem0", path, project="moved")
    assert [(x.source, x.reason) for x in report.skipped] == [
        ("dump.json[2]", "no memory text"),
        ("dump.json[3]", "no user_id, agent_id or run_id"),
        ("dump.json[4]", "its hash does not match its text"),
    ]
    moved = Memory(target, project="moved")
    again = moved.get(added["results"][0]["id"])
    original = dump[0]
    assert again == {**original, "score": None} | {k: again[k] for k in ("updated_at",)}
    assert again["created_at"] == original["created_at"]
    assert [r["memory"] for r in moved.search("jazz", user_id="bob")["results"]] == [
        "Bob likes jazz"
    ]


def test_a_mem0_file_that_is_not_a_dump_is_refused(service: MemoryService, tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"memories": 3}')
    (tmp_path / "b.json").write_text("not json")
    for name in ("a.json", "b.json"):
        with pytest.raises(errors.SnapshotInvalid):
            service.import_from("mem0", tmp_path / name)


# Markdown notes


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_folder_of_notes_becomes_memories_with_tags_and_references(
    service: MemoryService, tmp_path: Path
) -> None:
    notes = tmp_path / "vault"
    write(
        notes / "Project Alpha.md",
        "---\ntitle: Project Alpha\ntags: [work, '#planning']\npermalink: project-alpha\n---\n"
        "# Alpha\n\nKick-off with [[Meeting Notes|the notes]] and [[Budget#Q3]].\n",
    )
    write(notes / "sub" / "Meeting Notes.md", "We ship in March. See [[project alpha]].\n")
    write(notes / "other" / "Meeting Notes.md", "# Second meeting\n\ntags: none here\n")
    write(notes / "plain.md", "\n\nJust a line\n")
    write(notes / "tags.md", "---\ntags: a, b c\n---\nbody\n")
    write(notes / ".obsidian" / "workspace.md", "tool state")
    write(notes / "empty.md", "---\ntags: [x]\n---\n   \n")
    write(notes / "bad.md", "---\n[unclosed\n---\nbody\n")
    write(notes / "list.md", "---\n- a\n---\nbody\n")
    write(notes / "image.png", "png")
    report = service.import_from("markdown", notes)
    assert sorted((x.source, x.name) for x in report.landed) == [
        ("Project Alpha.md", "project-alpha"),
        ("other/Meeting Notes.md", "Meeting-Notes"),
        ("plain.md", "plain"),
        ("sub/Meeting Notes.md", "Meeting-Notes-2"),
        ("tags.md", "tags"),
    ]
    assert sorted((x.source, x.reason) for x in report.skipped) == [
        (
            "Project Alpha.md",
            "its link to 'Budget' names no note of the folder (kept as a reference)",
        ),
        ("bad.md", "its frontmatter is not YAML"),
        ("empty.md", "an empty note (no text)"),
        ("image.png", "not a Markdown file"),
        ("list.md", "its frontmatter is not a mapping"),
    ]
    alpha = service.get("project-alpha").memory
    assert (alpha.description, alpha.tags) == ("Project Alpha", ("work", "planning"))
    assert alpha.references == ("Meeting-Notes", "Budget")  # the first note of that name
    assert alpha.body.startswith("# Alpha\n")
    assert service.get("Meeting-Notes-2").memory.references == ("project-alpha",)
    assert service.get("Meeting-Notes").memory.description == "Second meeting"
    assert service.get("plain").memory.description == "Just a line"
    assert service.get("tags").memory.tags == ("a", "b", "c")


def test_a_markdown_import_needs_a_folder(service: MemoryService, tmp_path: Path) -> None:
    write(tmp_path / "note.md", "x")
    with pytest.raises(errors.SnapshotInvalid):
        service.import_from("markdown", tmp_path / "note.md")


@pytest.mark.parametrize(
    ("foreign", "made"),
    [
        ("John Smith", "John-Smith"),
        ("  ._lead", "lead"),
        ("a/b\\c", "a-b-c"),
        ("José Álvarez", "Jose-Alvarez"),
        ("Café", "Cafe"),
        ("日本", "n-cf2abf0c"),
        ("x" * 200, "x" * 128),
        ("   ", ""),
    ],
)
def test_a_foreign_name_becomes_a_memory_name(foreign: str, made: str) -> None:
    assert slug(foreign) == made


def test_a_link_by_its_path_in_the_folder_finds_its_note(
    service: MemoryService, tmp_path: Path
) -> None:
    write(
        tmp_path / "v" / "Home.md", "See [[daily/2024-05-01|yesterday]], [[daily/2024-05-01.md]]."
    )
    write(tmp_path / "v" / "daily" / "2024-05-01.md", "Shipped the release.")
    report = service.import_from("markdown", tmp_path / "v")
    assert report.skipped == ()
    assert service.get("Home").memory.references == ("2024-05-01",)


def test_a_name_another_tier_holds_is_a_conflict_no_force_overwrites(
    service: MemoryService, tmp_path: Path
) -> None:
    path = jsonl(tmp_path / "m.jsonl", MCP_LINES)
    service.add_project("kg")
    service.write("Anthropic", description="a global memory")
    planned = service.import_from("mcp-memory", path, project="kg", dry_run=True)
    assert [x.action for x in planned.landed] == ["create", "conflict", "create"]
    before = store_state(service)
    for force in (False, True):
        with pytest.raises(errors.NameConflict) as caught:
            service.import_from("mcp-memory", path, project="kg", force=force)
        assert caught.value.details["names"] == ["Anthropic"]
    assert store_state(service) == before


def test_a_taken_name_is_refused_naming_how_many(service: MemoryService, tmp_path: Path) -> None:
    path = jsonl(tmp_path / "m.jsonl", MCP_LINES)
    service.import_from("mcp-memory", path)
    with pytest.raises(errors.MemoryExists) as caught:
        service.import_from("mcp-memory", path)
    assert caught.value.message.startswith("3 of the import's names are taken")
    assert caught.value.details["fix"] == "force_import"


def test_a_file_of_another_format_is_refused(service: MemoryService, tmp_path: Path) -> None:
    (tmp_path / "dump.json").write_text(json.dumps({"results": [{"memory": "x"}]}, indent=2))
    with pytest.raises(errors.SnapshotInvalid) as caught:
        service.import_from("mcp-memory", tmp_path / "dump.json")
    assert "holds nothing a mcp-memory import can use" in caught.value.message
