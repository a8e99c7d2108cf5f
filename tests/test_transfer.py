"""Export and import: byte-exact snapshots, all or nothing."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory, raw_sql, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.config import Settings
from retain.service import MemoryService
from retain.storage.sqlite import SqliteBackend

AWKWARD_BODIES = {
    "crlf": "line one\r\nline two\r\n",
    "zwj": "family: 👨\u200d👩\u200d👧 and a\u200dzero-width joiner",
    "blank-edges": "\n\n  indented start\n\nend with blanks\n\n\n",
    "dashes": "---\nnot frontmatter\n---\n",
    "empty": "",
    "no-final-newline": "last line without newline",
}


def _fill(service: MemoryService, clock: ManualClock) -> None:
    service.add_project("web")
    service.add_project("api")
    for name, body in AWKWARD_BODIES.items():
        service.write(name, description=f"Body case {name}", body=body)
    service.write(
        "rule",
        description="Answer in kind: match the user's language",
        body="Match it.",
        priority=0,
        load="inline",
        tags=["style", "people"],
        references=["crlf", "https://example.org/x"],
        source="operator, in chat",
        expires="2027-06-30",
    )
    service.write("stack", description="Uses pnpm", project="web", tags=["infra"])
    service.write("stack", description="Uses cargo", project="api", load="search")
    clock.advance(days=3)
    service.write("rule", verified=True)
    for _ in range(3):
        service.read("rule")


def _fields(service: MemoryService) -> list[tuple[object, ...]]:
    return sorted(
        (
            m.scope, m.name, m.description, m.body, m.tags, m.priority, m.load, m.references,
            m.source, m.created_at, m.verified_at, m.expires_at, m.read_count,
        )
        for m in service.list_memories()
    )  # fmt: skip


def test_export_import_round_trip_is_exact(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    _fill(service, clock)
    target = tmp_path / "snapshot"
    assert service.export(target).memories == len(AWKWARD_BODIES) + 3
    fresh = MemoryService(SqliteBackend(tmp_path / "fresh" / "retain.db"), clock=clock)
    fresh.add_project("web")
    fresh.add_project("api")
    clock.advance(days=10)
    fresh.import_(target)
    assert _fields(fresh) == _fields(service)
    for name, body in AWKWARD_BODIES.items():
        raw = (target / f"{name}.md").read_bytes()
        assert raw.endswith(body.encode("utf-8"))
    fresh.close()


def test_export_layout_and_permissions(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    _fill(service, clock)
    target = tmp_path / "snapshot"
    service.export(target)
    assert (target / "web" / "stack.md").exists()
    assert (target / "api" / "stack.md").exists()
    assert (target / "export.toml").read_text().startswith("format_version = 2\n")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700
    for path in target.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(os.stat(path).st_mode) == expected, path


def test_export_frontmatter_carries_only_what_is_set(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    _fill(service, clock)
    service.export(tmp_path / "s")
    plain = (tmp_path / "s" / "empty.md").read_text()
    assert "priority" not in plain and "load" not in plain and "verified" not in plain
    assert "tags" not in plain and "project" not in plain and "read_count: 0" in plain
    rule = (tmp_path / "s" / "rule.md").read_text()
    for key in ("priority: 0", "load: inline", "verified:", "expires:", "source:", "tags:"):
        assert key in rule
    assert "read_count: 3" in rule
    assert "project: web" in (tmp_path / "s" / "web" / "stack.md").read_text()


def test_export_of_one_project(service: MemoryService, clock: ManualClock, tmp_path: Path) -> None:
    _fill(service, clock)
    assert service.export(tmp_path / "s", project="web").memories == 1
    assert sorted(p.name for p in (tmp_path / "s").rglob("*.md")) == ["stack.md"]


def test_export_refuses_a_non_empty_directory(service: MemoryService, tmp_path: Path) -> None:
    service.write("a", description="a")
    target = tmp_path / "s"
    target.mkdir()
    (target / "stale.md").write_text("old")
    with pytest.raises(errors.ExportTargetNotEmpty):
        service.export(target)
    assert sorted(p.name for p in target.iterdir()) == ["stale.md"]


def test_export_tightens_an_existing_empty_directory(
    service: MemoryService, tmp_path: Path
) -> None:
    service.write("a", description="a")
    target = tmp_path / "s"
    target.mkdir(mode=0o755)
    service.export(target)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o700


def test_export_refuses_a_description_yaml_cannot_carry(
    service: MemoryService, tmp_path: Path
) -> None:
    service.write("fine", description="fine")
    service.write("bad", description="bad")
    # A row written past retain's doors: NEL survives nowhere in YAML.
    raw_sql(service, "UPDATE memories SET description = ? WHERE name = 'bad'", ["a\x85b"])
    with pytest.raises(errors.UnexportableDescription) as caught:
        service.export(tmp_path / "s")
    assert caught.value.details["name"] == "bad"
    assert not (tmp_path / "s").exists()


def test_failed_export_removes_what_it_wrote(
    service: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retain import transfer

    for i in range(5):
        service.write(f"n{i}", description=f"note {i}")
    calls = {"n": 0}
    real = transfer._write_private

    def failing(path: Path, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError("disk full")
        real(path, data)

    monkeypatch.setattr(transfer, "_write_private", failing)
    target = tmp_path / "existing"
    target.mkdir()
    with pytest.raises(errors.TransferError):
        service.export(target)
    assert list(target.iterdir()) == []
    calls["n"] = 0
    with pytest.raises(errors.TransferError):
        service.export(tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_write_refuses_text_that_is_not_unicode(service: MemoryService) -> None:
    before = store_state(service)
    for fields in ({"description": "\ud800"}, {"description": "d", "body": "a\udc80"}):
        with pytest.raises(errors.InvalidValue):
            service.write("x", **fields)
    assert store_state(service) == before


def test_import_is_all_or_nothing(
    make_service: ServiceFactory, clock: ManualClock, tmp_path: Path
) -> None:
    source = MemoryService(SqliteBackend(tmp_path / "src.db"), clock=clock)
    source.add_project("web")
    source.write("a", description="a")
    source.write("b", description="b", project="web")
    source.export(tmp_path / "s")
    source.close()
    target = make_service()
    before = store_state(target)
    with pytest.raises(errors.ProjectNotFound):
        target.import_(tmp_path / "s")
    assert store_state(target) == before


def test_import_refuses_an_existing_name_until_force(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    service.write("a", description="original", body="one")
    service.export(tmp_path / "s")
    service.write("a", body="changed")
    service.write("extra", description="x")
    before = store_state(service)
    with pytest.raises(errors.MemoryExists):
        service.import_(tmp_path / "s")
    assert store_state(service) == before
    service.import_(tmp_path / "s", force=True)
    assert service.get("a").memory.body == "one"


def test_import_refuses_a_name_global_and_project_would_share(
    make_service: ServiceFactory, clock: ManualClock, tmp_path: Path
) -> None:
    source = MemoryService(SqliteBackend(tmp_path / "src.db"), clock=clock)
    source.add_project("web")
    source.write("stack", description="web stack", project="web")
    source.export(tmp_path / "s")
    source.close()
    target = make_service()
    target.add_project("web")
    target.write("stack", description="global stack")
    before = store_state(target)
    for force in (False, True):
        with pytest.raises(errors.NameConflict):
            target.import_(tmp_path / "s", force=force)
    assert store_state(target) == before


def test_import_holds_the_inline_budget_over_the_whole_snapshot(
    make_service: ServiceFactory, clock: ManualClock, tmp_path: Path
) -> None:
    source = MemoryService(SqliteBackend(tmp_path / "src.db"), clock=clock)
    for i in range(3):
        source.write(f"r{i}", description=f"rule {i}", load="inline", body="x" * 40)
    source.export(tmp_path / "s")
    source.close()
    target = make_service(settings=Settings(inline_max_bytes=100))
    before = store_state(target)
    with pytest.raises(errors.InlineBudgetExceeded):
        target.import_(tmp_path / "s")
    assert store_state(target) == before


def test_import_refuses_an_unknown_format_version(service: MemoryService, tmp_path: Path) -> None:
    service.write("a", description="a")
    service.export(tmp_path / "s")
    manifest = tmp_path / "s" / "export.toml"
    manifest.write_text(manifest.read_text().replace("format_version = 2", "format_version = 99"))
    with pytest.raises(errors.UnknownFormatVersion):
        service.import_(tmp_path / "s")


@pytest.mark.parametrize(
    "content",
    [
        "no frontmatter",
        "---\ndescription: x\n",
        "---\n[not, a, mapping]\n---\n",
        "---\ndescription: x\ncreated: yesterday\n---\n",
        "---\ndescription: x\ncreated: '2026-01-01T00:00:00Z'\nread_count: -1\n---\n",
        "---\ndescription: x\ncreated: '2026-01-01T00:00:00Z'\ntags: notalist\n---\n",
        "---\ndescription: x\nproject: web\ncreated: '2026-01-01T00:00:00Z'\n---\n",
    ],
)
def test_import_refuses_a_malformed_file(
    service: MemoryService, tmp_path: Path, content: str
) -> None:
    target = tmp_path / "s"
    target.mkdir()
    (target / "export.toml").write_text("format_version = 1\n")
    (target / "good.md").write_text("---\ndescription: g\ncreated: '2026-01-01T00:00:00Z'\n---\n")
    (target / "bad.md").write_text(content)
    before = store_state(service)
    with pytest.raises(errors.SnapshotInvalid):
        service.import_(target)
    assert store_state(service) == before


def test_import_refuses_a_directory_without_manifest(
    service: MemoryService, tmp_path: Path
) -> None:
    with pytest.raises(errors.SnapshotInvalid):
        service.import_(tmp_path)
    with pytest.raises(errors.SnapshotInvalid):
        service.import_(tmp_path / "missing")


def test_long_operations_report_progress(service: MemoryService, tmp_path: Path) -> None:
    for i in range(3):
        service.write(f"n{i}", description=f"note {i}")
    seen: list[tuple[str, int, int]] = []
    service.export(tmp_path / "s", progress=lambda *a: seen.append(a))
    assert seen == [("export", 1, 3), ("export", 2, 3), ("export", 3, 3)]
    seen.clear()
    service.import_(tmp_path / "s", force=True, progress=lambda *a: seen.append(a))
    assert seen[:3] == [("read", 1, 3), ("read", 2, 3), ("read", 3, 3)]
    assert seen[3:] == [("write", 1, 3), ("write", 2, 3), ("write", 3, 3)]
    seen.clear()
    service.verify(rebuild=True, progress=lambda *a: seen.append(a))
    events = service.status().events
    assert seen == [
        ("rebuild", 0, 1),
        ("rebuild", 1, 1),
        ("reindex", 0, 3),
        ("reindex", 3, 3),
        ("chain", events, events),
    ]


def test_export_refuses_a_place_it_cannot_write(service: MemoryService, tmp_path: Path) -> None:
    service.write("a", description="a")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(errors.TransferError):
        service.export(blocker / "snapshot")


def test_export_refuses_a_project_named_like_the_manifest(
    service: MemoryService, tmp_path: Path
) -> None:
    service.add_project("export.toml")
    service.write("n", description="n", project="export.toml")
    with pytest.raises(errors.TransferError):
        service.export(tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_import_skips_dot_folders_and_refuses_unreadable_files(
    service: MemoryService, tmp_path: Path
) -> None:
    service.write("a", description="a")
    service.export(tmp_path / "s")
    (tmp_path / "s" / ".git" / "objects").mkdir(parents=True)
    (tmp_path / "s" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    service.import_(tmp_path / "s", force=True)
    (tmp_path / "s" / "gone.md").symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(errors.SnapshotInvalid):
        service.import_(tmp_path / "s", force=True)


def test_export_import_round_trip_keeps_subject_thread_and_valid_from(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    service.write("t1", description="We adopted a kitten", thread="chat-1", subject="Caroline")
    service.write("t2", description="She is called Miso", thread="chat-1", valid_from="2023-05-08")
    service.write("plain", description="No extras")
    service.export(tmp_path / "s")
    t2 = (tmp_path / "s" / "t2.md").read_text()
    assert "thread: chat-1\n" in t2 and "valid_from: '2023-05-08T00:00:00.000000Z'\n" in t2
    assert "subject: Caroline\n" in (tmp_path / "s" / "t1.md").read_text()
    plain = (tmp_path / "s" / "plain.md").read_text()
    assert "subject" not in plain and "thread" not in plain and "valid_from" not in plain

    fresh = MemoryService(SqliteBackend(tmp_path / "fresh" / "retain.db"), clock=clock)
    fresh.import_(tmp_path / "s")
    kept = {m.name: (m.subject, m.thread, m.valid_from) for m in fresh.list_memories()}
    assert kept == {m.name: (m.subject, m.thread, m.valid_from) for m in service.list_memories()}
    assert kept["t2"][2] == datetime(2023, 5, 8, tzinfo=UTC)
    # the thread's context is made again on import: a neighbour's word finds the turn
    assert {h.memory.name for h in fresh.search("kitten").hits} == {"t1", "t2"}
    assert fresh.verify().ok
    fresh.close()


@pytest.mark.parametrize(
    "extra",
    ["subject: 3\n", "thread: [a, b]\n", "valid_from: someday\n"],
)
def test_import_refuses_a_malformed_subject_thread_or_valid_from(
    service: MemoryService, tmp_path: Path, extra: str
) -> None:
    target = tmp_path / "s"
    target.mkdir()
    (target / "export.toml").write_text("format_version = 1\n")
    (target / "bad.md").write_text(
        f"---\ndescription: x\ncreated: '2026-01-01T00:00:00Z'\n{extra}---\n"
    )
    before = store_state(service)
    with pytest.raises(errors.SnapshotInvalid):
        service.import_(target)
    assert store_state(service) == before


def test_a_forced_import_keeps_every_memory_searchable(
    service: MemoryService, tmp_path: Path
) -> None:
    service.write("a", description="kestrel hovering")
    service.write("b", description="falcon diving", subject="Ann")
    service.export(tmp_path / "s")
    service.write("b", tags=["raptor"])  # not a change of its search key...
    service.import_(tmp_path / "s", force=True)  # ...but a restore makes the row anew
    report = service.verify()
    assert (report.ok, report.problems) == (True, ())
    assert [h.memory.name for h in service.search("Ann").hits] == ["b"]  # the subject, in context


def _thread_order(service: MemoryService, realm: str = "default") -> list[str]:
    """The thread's memories in the order the store keeps them (its row numbers)."""
    rows = raw_sql(
        service,
        "SELECT name FROM memories WHERE realm = ? AND thread = 'chat' ORDER BY num",
        [realm],
    )
    return [r[0] for r in rows]


TURNS = ("zz-first", "mm-second", "aa-third")


def test_import_keeps_each_threads_order_whatever_the_file_names(
    service: MemoryService, make_service: ServiceFactory, tmp_path: Path
) -> None:
    for name in TURNS:
        service.write(name, description=f"turn {name}", thread="chat")
    service.export(tmp_path / "snap")
    text = (tmp_path / "snap" / "mm-second.md").read_text(encoding="utf-8")
    assert "thread: chat\nthread_position: 2\n" in text
    other = make_service(realm="copy")  # a fresh realm of the same store
    other.import_(tmp_path / "snap")
    assert _thread_order(other, "copy") == list(TURNS)


def test_a_forced_import_restores_a_memory_in_its_place(
    service: MemoryService, tmp_path: Path
) -> None:
    for name in TURNS:
        service.write(name, description=f"turn {name}", thread="chat")
    service.export(tmp_path / "snap")
    service.write("mm-second", description="turn changed")
    service.import_(tmp_path / "snap", force=True)
    assert service.get("mm-second").memory.description == "turn mm-second"
    assert _thread_order(service) == list(TURNS)


def _snapshot(tmp_path: Path, files: dict[str, str]) -> Path:
    target = tmp_path / "s"
    target.mkdir()
    (target / "export.toml").write_text("format_version = 1\n")
    for name, content in files.items():
        (target / name).parent.mkdir(exist_ok=True)
        (target / name).write_text(content)
    return target


GOOD = "---\ndescription: g\ncreated: '2026-01-01T00:00:00Z'\n---\n"


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("read_count: 1000000000000000000000000000000", "read_count"),
        ("read_count: 2147483648", "read_count"),  # past a PostgreSQL INTEGER
        ("read_count: true", "read_count"),
        ("thread_position: 100000000000000000000000000000", "thread_position"),
        ("priority: 1000000000000000000000000000000", "priority"),
        ("priority: -1", "priority"),
        ("priority: true", "priority"),
        ("load: 7", "load"),
        ("source: [1, 2]", "source"),
        ("expires: '0001-01-01T00:00:00+01:00'", "expires"),
        ("verified: 9999-12-31T23:59:59-01:00", "verified"),
    ],
)
def test_import_refuses_an_out_of_range_field_whole_naming_the_file_and_field(
    service: MemoryService, tmp_path: Path, line: str, field: str
) -> None:
    bad = f"---\ndescription: x\ncreated: '2026-01-01T00:00:00Z'\n{line}\n---\n"
    target = _snapshot(tmp_path, {"good.md": GOOD, "bad.md": bad})
    before = store_state(service)
    with pytest.raises(errors.SnapshotInvalid) as caught:
        service.import_(target)
    assert caught.value.details["file"] == str(target / "bad.md")
    assert caught.value.details["field"] == field
    assert "bad.md" in caught.value.message
    assert store_state(service) == before


def test_import_takes_the_largest_read_count_a_store_holds(
    service: MemoryService, tmp_path: Path
) -> None:
    most = f"---\ndescription: x\ncreated: '2026-01-01T00:00:00Z'\nread_count: {2**31 - 1}\n---\n"
    service.import_(_snapshot(tmp_path, {"most.md": most}))
    assert service.get("most").memory.read_count == 2**31 - 1
    service.read("most")  # a read at the most a column holds leaves the count there
    assert service.get("most").memory.read_count == 2**31 - 1


@pytest.mark.parametrize("kind", ["file", "folder", "outside", "manifest"])
def test_import_refuses_a_symbolic_link_whole_naming_it(
    service: MemoryService, tmp_path: Path, kind: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.md").write_text(GOOD)
    target = _snapshot(tmp_path, {"good.md": GOOD, "web/ok.md": GOOD})
    link = {
        "file": target / "linked.md",
        "folder": target / "linked",
        "outside": target / "web" / "away.md",
        "manifest": target / "export.toml",
    }[kind]
    if kind == "manifest":
        real = elsewhere / "export.toml"
        link.rename(real)
        link.symlink_to(real)
    else:
        link.symlink_to(elsewhere if kind == "folder" else elsewhere / "secret.md")
    before = store_state(service)
    with pytest.raises(errors.SnapshotInvalid) as caught:
        service.import_(target)
    assert caught.value.details["file"] == str(link)
    assert "symbolic link" in caught.value.message
    assert store_state(service) == before
