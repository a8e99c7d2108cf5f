"""The transfer commands (``retain.doors.cli.transfer``): ``export`` a snapshot byte
for byte, ``import`` it with its dates and read counts (and its refusals), and
``migrate`` a store to PostgreSQL with its chain."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest
from tests.doors.cli_helpers import (
    BUDGET,
    CONFLICT,
    INLINE_REMEDY,
    NOT_FOUND,
    RECORD_FIELDS,
    TRANSFER,
    Retain,
    frontmatter,
    inline_budget,
    write_snapshot,
)

# -- export and import ------------------------------------------------------------------------


def test_export_writes_one_markdown_file_per_memory_byte_exact(
    webdev: Retain, tmp_path: Path
) -> None:
    body = b"\r\n\xe2\x80\x8dfirst\r\nlast\r\n\r\n"
    source = tmp_path / "notes.md"
    source.write_bytes(body)
    webdev.ok("project", "add", "movie")
    webdev.ok(
        "add",
        *("notes", "-d", "Meeting notes", "--from-file", str(source), "--priority", "2"),
        *("--load", "inline", "--tag", "meetings", "--reference", "deploy-host"),
        *("--source", "chat", "--expires", "2030-01-01T00:00:00Z"),
    )
    webdev.ok("add", "plan", "-d", "Webdev plan", "-p", "webdev")
    webdev.ok("add", "plan", "-d", "Movie plan", "-p", "movie")
    target = tmp_path / "backup"
    result = webdev.ok("export", "--directory", str(target))
    assert f"Exported 3 memories, 0 records and 0 tickets to {target}." in result.stdout

    raw = (target / "notes.md").read_bytes()
    assert raw.endswith(b"\n---\n" + body)
    head = frontmatter(raw)
    assert head == {
        "description": "Meeting notes",
        "priority": 2,
        "load": "inline",
        "created": webdev.get("notes")["created_at"],
        "expires": "2030-01-01T00:00:00.000000Z",
        "source": "chat",
        "read_count": 0,
        "references": ["deploy-host"],
        "tags": ["meetings"],
        "author": "operator:local",
        "trust": "attested",
        "id": webdev.get("notes")["id"],
        "updated": webdev.get("notes")["updated_at"],
    }
    plan = frontmatter((target / "webdev" / "plan.md").read_bytes())
    assert (plan["project"], plan["description"]) == ("webdev", "Webdev plan")
    assert "priority" not in plan
    assert "load" not in plan
    assert frontmatter((target / "movie" / "plan.md").read_bytes())["project"] == "movie"
    manifest = tomllib.loads((target / "export.toml").read_text(encoding="utf-8"))
    assert manifest["format_version"] == 2

    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    for path in target.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_export_tightens_an_existing_empty_directory_to_0700(
    retain: Retain, tmp_path: Path
) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    target.chmod(0o755)
    retain.ok("add", "n", "-d", "A note")
    retain.ok("export", "-o", str(target))
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    assert sorted(p.name for p in target.iterdir()) == ["export.toml", "n.md"]


def test_export_refused_for_a_directory_that_is_not_empty(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "A note")
    target = tmp_path / "backup"
    target.mkdir()
    (target / "stale.md").write_text("old", encoding="utf-8")
    retain.refused(
        "export",
        "--directory",
        str(target),
        status=TRANSFER,
        code="export_target_not_empty",
        remedy="a snapshot is never merged",
    )
    assert [p.name for p in target.iterdir()] == ["stale.md"]


def test_export_refused_for_an_unknown_project_writes_nothing(
    retain: Retain, tmp_path: Path
) -> None:
    target = tmp_path / "backup"
    retain.refused(
        "export",
        "--directory",
        str(target),
        "--project",
        "nope",
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add nope",
    )
    assert not target.exists()


def test_export_project_writes_that_tier_alone(webdev: Retain, tmp_path: Path) -> None:
    webdev.ok("add", "tone", "-d", "Answer in kind")
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    target = tmp_path / "backup"
    data = webdev.json("export", "--directory", str(target), "--project", "webdev")
    assert data == {
        "directory": str(target), "memories": 1, "records": 0, "tickets": 0, "left_out": 0,
    }  # fmt: skip
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert files == ["export.toml", "webdev/stack.md"]


def test_export_carries_agents_memories_as_records(retain: Retain, tmp_path: Path) -> None:
    retain.ok("agent", "add", "planner")
    note = retain.json("remember", "a private note", "--as", "agent:planner")["id"]
    retain.ok("add", "tone", "-d", "Answer in kind")
    forgotten = retain.json("remember", "to forget", "--as", "agent:planner")["id"]
    retain.ok("forget", forgotten, "--as", "agent:planner")
    text = retain.ok("export", "--directory", str(tmp_path / "snap")).stdout
    assert "Exported 1 memories, 1 records and 0 tickets" in text
    assert "Left out 1 forgotten memories" in text
    files = sorted(str(p.relative_to(tmp_path / "snap")) for p in (tmp_path / "snap").rglob("*.md"))
    assert files == [f"_records/agent/planner/{note}.md", "tone.md"]


def test_import_restores_a_snapshot_with_its_dates_and_read_counts(
    webdev: Retain, tmp_path: Path
) -> None:
    source = tmp_path / "notes.md"
    source.write_bytes(b"first\r\n\r\nlast\xe2\x80\x8d\r\n")
    webdev.ok(
        "add",
        *("notes", "-d", "Meeting notes", "--from-file", str(source), "--tag", "meetings"),
        *("--source", "chat", "--expires", "2030-01-01T00:00:00Z", "--reference", "plan"),
    )
    webdev.ok("add", "plan", "-d", "Webdev plan", "-p", "webdev", "--priority", "1")
    webdev.ok("read", "notes")
    webdev.ok("read", "notes")
    webdev.ok("add", "notes", "--force", "--verified")
    snapshot = tmp_path / "snap"
    webdev.ok("export", "--directory", str(snapshot))

    other = Retain(tmp_path / "other")
    other.refused(
        "import",
        str(snapshot),
        status=NOT_FOUND,
        code="project_not_found",
        remedy="retain project add webdev",
    )
    other.ok("project", "add", "webdev")
    result = other.ok("import", str(snapshot))
    assert "Imported 2 memories (2 new, 0 overwritten)." in result.stdout
    restored = [k for k in RECORD_FIELDS if k != "updated_at"]
    for name in ("notes", "plan"):
        mine, theirs = webdev.get(name), other.get(name)
        assert {k: theirs[k] for k in restored} == {k: mine[k] for k in restored}
        assert other.body(name) == webdev.body(name)
    assert other.get("notes")["read_count"] == 2
    assert other.get("notes")["verified_at"] > other.get("notes")["created_at"]


def test_import_refused_for_a_memory_the_store_holds_until_force(
    retain: Retain, tmp_path: Path
) -> None:
    retain.ok("add", "n", "-d", "Original", "--body", "mine")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {
            "n.md": "---\ndescription: From the file\ncreated: '2024-01-01T00:00:00Z'\n---\ntheirs",
            "fresh.md": "---\ndescription: Fresh\ncreated: '2024-01-01T00:00:00Z'\n---\nnew",
        },
    )
    refusal = retain.refused(
        "import", str(snapshot), status=CONFLICT, code="memory_exists", remedy="--force"
    )
    assert refusal.error["details"]["name"] == "n"
    assert retain.names() == ["n"]  # fresh.md did not land either
    data = retain.json("import", str(snapshot), "--force")
    assert data == {"imported": 2, "created": 1, "updated": 1}
    assert retain.body("n") == "theirs"
    assert retain.get("n")["description"] == "From the file"


def test_import_force_restores_the_created_date_of_the_file(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "Original", "--body", "mine")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {"n.md": "---\ndescription: From the file\ncreated: '2024-01-01T00:00:00Z'\n---\nx"},
    )
    retain.ok("import", str(snapshot), "--force")
    memory = retain.get("n")
    assert memory["verified_at"] == "2024-01-01T00:00:00.000000Z"
    assert memory["created_at"] == "2024-01-01T00:00:00.000000Z"


def test_import_refusal_remedy_names_import_force(retain: Retain, tmp_path: Path) -> None:
    retain.ok("add", "n", "-d", "Original")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {"n.md": "---\ndescription: From the file\ncreated: '2024-01-01T00:00:00Z'\n---\n"},
    )
    result = retain("import", str(snapshot))
    assert result.exit_code == CONFLICT
    assert "import --force" in result.stderr


def test_import_refused_outright_when_a_name_would_be_global_and_a_projects(
    webdev: Retain, tmp_path: Path
) -> None:
    webdev.ok("add", "stack", "-d", "Uses pnpm", "-p", "webdev")
    snapshot = write_snapshot(
        tmp_path / "snap",
        {
            "stack.md": "---\ndescription: Global stack\ncreated: '2024-01-01T00:00:00Z'\n---\n",
            "fresh.md": "---\ndescription: Fresh\ncreated: '2024-01-01T00:00:00Z'\n---\n",
        },
    )
    for extra in ([], ["--force"]):
        webdev.refused(
            "import",
            str(snapshot),
            *extra,
            status=CONFLICT,
            code="name_conflict",
            remedy="choose another name",
        )


def test_import_refused_past_the_inline_budget(retain: Retain, tmp_path: Path) -> None:
    inline_budget(retain.home, 100)
    head = "---\ndescription: Rule {0}\nload: inline\ncreated: '2024-01-01T00:00:00Z'\n---\n"
    snapshot = write_snapshot(
        tmp_path / "snap",
        {"a.md": head.format("a") + "a" * 60, "b.md": head.format("b") + "b" * 60},
    )
    retain.refused(
        "import",
        str(snapshot),
        status=BUDGET,
        code="inline_budget_exceeded",
        remedy=INLINE_REMEDY,
    )
    assert retain.names() == []


@pytest.mark.parametrize(
    ("case", "code", "remedy"),
    [
        ("missing", "snapshot_invalid", "point import at a directory"),
        ("no-manifest", "snapshot_invalid", "point import at a directory"),
        ("newer-format", "unknown_format_version", "the retain version that wrote it"),
        ("no-frontmatter", "snapshot_invalid", "open it with ---"),
        ("wrong-folder", "snapshot_invalid", "move the file to its project's folder"),
        ("no-created", "snapshot_invalid", "add it"),
    ],
)
def test_import_refused_for_a_directory_that_is_not_a_snapshot(
    retain: Retain, tmp_path: Path, case: str, code: str, remedy: str
) -> None:
    snapshot = tmp_path / "snap"
    good = "---\ndescription: Fine\ncreated: '2024-01-01T00:00:00Z'\n---\n"
    if case == "no-manifest":
        snapshot.mkdir()
        (snapshot / "n.md").write_text(good, encoding="utf-8")
    elif case == "newer-format":
        write_snapshot(snapshot, {"n.md": good}, version=3)
    elif case == "no-frontmatter":
        write_snapshot(snapshot, {"n.md": "just text"})
    elif case == "wrong-folder":
        write_snapshot(snapshot, {"webdev/n.md": good})
    elif case == "no-created":
        write_snapshot(snapshot, {"n.md": "---\ndescription: Undated\n---\n"})
    retain.refused("import", str(snapshot), status=TRANSFER, code=code, remedy=remedy)


def test_migrate_copies_a_store_to_postgres_with_its_chain(
    tmp_path: Path, postgres_url: str
) -> None:
    from tests.conftest import fresh_schema

    retain = Retain(tmp_path / "home")
    retain.ok("add", "deploy", "--description", "How we deploy", "--body", "Tuesdays")
    url = fresh_schema(postgres_url)
    source = str(tmp_path / "home" / "retain.db")
    done = retain.json("migrate", "--from", f"sqlite://{source}", "--to", url)
    assert "verified" not in done and (done["memories"], done["events"]) == (1, 2)
    assert done["chain_head"] == retain.json("status")["chain_head"]
    assert retain.json("show", "deploy", "--database-url", url)["body"] == "Tuesdays"
    again = retain("migrate", "--from", source, "--to", url)
    assert again.exit_code == TRANSFER and "[migrate_target_not_empty]" in again.stderr


# -- import from another store's format ---------------------------------------------------------


def mcp_file(tmp_path: Path) -> Path:
    path = tmp_path / "memory.jsonl"
    path.write_text(
        '{"type":"entity","name":"John Smith","entityType":"person","observations":["Spanish"]}\n'
        '{"type":"entity","name":"Anthropic","entityType":"organization","observations":[]}\n'
        '{"type":"relation","from":"John Smith","to":"Anthropic","relationType":"works_at"}\n'
        '{"type":"relation","from":"John Smith","to":"Nobody","relationType":"knows"}\n'
    )
    return path


def test_import_from_says_what_would_land_then_lands_it(retain: Retain, tmp_path: Path) -> None:
    path = mcp_file(tmp_path)
    before = retain.state()
    planned = retain.ok(
        "import", "--from", "mcp-memory", str(path), "-p", "kg", "--create", "--dry-run"
    )
    assert (
        "Would import 2 memories (2 new, 0 overwritten); project 'kg' would be created; "
        in planned.stdout
    )
    assert "memory.jsonl:1 │ John-Smith │ create" in planned.stdout
    assert "memory.jsonl:4 │ no entity named 'Nobody'" in planned.stdout
    assert retain.state() == before
    retain.refused(
        "import", "--from", "mcp-memory", str(path), "-p", "kg",
        status=NOT_FOUND, code="project_not_found", remedy="create the project first",
    )  # fmt: skip
    report = retain.json("import", "--from", "mcp-memory", str(path), "-p", "kg", "--create")
    assert report["project_created"] == "kg" and not report["dry_run"]
    assert [x["name"] for x in report["landed"]] == ["John-Smith", "Anthropic"]
    assert report["skipped"] == [{"source": "memory.jsonl:4", "reason": "no entity named 'Nobody'"}]
    assert retain.get("John-Smith", "kg")["references"] == ["Anthropic"]
    again = retain.ok("import", "--from", "mcp-memory", str(path), "-p", "kg", "--dry-run")
    assert (
        "Would import 0 memories (0 new, 0 overwritten); 2 names are taken already" in again.stdout
    )


def test_a_snapshot_import_takes_no_foreign_options(retain: Retain, tmp_path: Path) -> None:
    result = retain("import", str(tmp_path), "--dry-run")
    assert result.exit_code == 2 and "--from KIND" in result.stderr


def test_create_needs_the_project_it_creates(retain: Retain, tmp_path: Path) -> None:
    result = retain("import", "--from", "mcp-memory", str(mcp_file(tmp_path)), "--create")
    assert result.exit_code == 2 and "--create creates the --project" in result.stderr
