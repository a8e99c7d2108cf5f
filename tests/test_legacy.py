"""Legacy per-identity markdown: parsed into records, imported once when a realm is opened."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import retain
from retain import errors, legacy
from retain.chrono import TICK, ManualClock
from retain.config import Settings
from retain.legacy import Problem, Record
from retain.model import Load, Memory, Status, Trust
from retain.search.embed import EmbedderSettings
from retain.service import MemoryService, rows
from retain.storage.sqlite import SqliteBackend

LEXICAL = Settings(embedder=EmbedderSettings(provider="none"))
Opener = Callable[..., MemoryService]


@pytest.fixture
def legacy_dir(tmp_path: Path) -> Path:
    """The legacy directory (``$RETAIN_HOME/agent-memory``) with the default realm's folder."""
    root = tmp_path / "agent-memory"
    (root / "default").mkdir(parents=True)
    return root


@pytest.fixture
def open_store(tmp_path: Path, clock: ManualClock, legacy_dir: Path) -> Iterator[Opener]:
    """Open services on one store, reading ``legacy_dir`` unless told otherwise."""
    opened: list[MemoryService] = []

    def make(
        *, principal: str = "operator:test", realm: str = "default", legacy: bool = True
    ) -> MemoryService:
        backend = SqliteBackend(tmp_path / "store" / "retain.db")
        try:
            service = MemoryService(
                backend,
                settings=LEXICAL,
                clock=clock,
                realm=realm,
                principal=principal,
                legacy_dir=legacy_dir if legacy else None,
            )
        except BaseException:
            backend.close()
            raise
        opened.append(service)
        return service

    yield make
    for service in opened:
        service.close()


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def bodies(service: MemoryService, scope: str) -> list[str]:
    return sorted(m.body for m in service.list_memories() if m.scope == scope)


# -- parse ------------------------------------------------------------------------------


def test_list_items_are_records_with_their_continuation_lines_and_headings_are_ignored() -> None:
    text = (
        "# Notes of ada\n"
        "\n"
        "- Alice prefers terse answers\n"
        "  in every review\n"
        "\n"
        "  even on Fridays\n"
        "- second item\n"
        "* a star item\n"
        "\tcontinued by a tab\n"
        "+ a plus item\n"
        "    - nested, two spaces kept\n"
        "## Later\n"
        "- after a heading\n"
    )
    assert legacy.parse(text) == (
        [
            Record(3, "Alice prefers terse answers\nin every review\n\neven on Fridays"),
            Record(7, "second item"),
            Record(8, "a star item\ncontinued by a tab"),
            Record(10, "a plus item\n  - nested, two spaces kept"),
            Record(13, "after a heading"),
        ],
        [],
    )


def test_empty_items_and_text_outside_items_are_skipped_with_their_lines() -> None:
    text = (
        "- \n"  # 1: empty
        "-\n"  # 2: empty
        "- kept\n"  # 3
        "stray one\n"  # 4: text outside an item (its paragraph is reported once)
        "stray two\n"  # 5
        "\n"  # 6
        "stray three\n"  # 7: a new paragraph
        "-no-space is not an item\n"  # 8: the same paragraph
        "- last\n"  # 9
        "-   \n"  # 10: empty
        "   \n"  # 11: blank, not a continuation
    )
    assert legacy.parse(text) == (
        [Record(3, "kept"), Record(9, "last")],
        [
            (1, "an empty list item"),
            (2, "an empty list item"),
            (4, "text outside a list item"),
            (7, "text outside a list item"),
            (10, "an empty list item"),
        ],
    )


def test_indented_text_after_a_heading_is_outside_any_item() -> None:
    assert legacy.parse("- one\n# Heading\n  indented\n- two\n") == (
        [Record(1, "one"), Record(4, "two")],
        [(3, "text outside a list item")],
    )


def test_a_file_without_list_items_is_one_record_less_its_leading_heading() -> None:
    assert legacy.parse("# Ada\nAlice prefers terse answers.\n\nShe is in UTC+8.\n") == (
        [Record(1, "Alice prefers terse answers.\n\nShe is in UTC+8.")],
        [],
    )
    assert legacy.parse("Plain notes\n# not leading, kept\n") == (
        [Record(1, "Plain notes\n# not leading, kept")],
        [],
    )
    assert legacy.parse("# Only a heading\n") == ([], [])
    assert legacy.parse("") == ([], [])
    assert legacy.parse("  \n\n") == ([], [])


def test_windows_line_endings_are_lines() -> None:
    assert legacy.parse("- one\r\n  more\r\n- two\r\n") == (
        [Record(1, "one\nmore"), Record(3, "two")],
        [],
    )


# -- import when a realm is opened ------------------------------------------------------


def test_each_identitys_file_becomes_its_own_memories_and_is_renamed_imported(
    open_store: Opener, legacy_dir: Path, clock: ManualClock
) -> None:
    setup = open_store(legacy=False)
    setup.add_agent("ada")
    realm = legacy_dir / "default"
    (realm / "ada.md").write_text(
        "# Ada\n- Alice prefers terse answers\n  in reviews\n- Deploys on Tuesdays\n"
    )
    (realm / "bob.md").write_text("# Bob\nThe kestrel nests on the north tower.\n")

    service = open_store()

    report = service.legacy_import
    assert report is not None
    assert (report.files, report.imported, report.agents_added, report.problems) == (
        ("ada.md", "bob.md"),
        3,
        ("bob",),
        (),
    )
    assert files(realm) == ["ada.md.imported", "bob.md.imported"]
    assert [a.name for a in service.list_agents()] == ["ada", "bob"]
    memories = [m for m in service.list_memories() if m.scope.startswith("agent:")]
    imported = clock.now() + 2 * TICK  # after the realm's and ada's events: the clock stood
    assert sorted(
        (
            m.scope,
            m.author,
            m.trust,
            m.load,
            m.name,
            m.status,
            m.description,
            m.body,
            m.created_at,
            m.supersedes,
        )
        for m in memories
    ) == [
        (
            "agent:ada",
            "agent:ada",
            Trust.OBSERVED,
            Load.SEARCH,
            None,
            Status.ACTIVE,
            "Alice prefers terse answers",
            "Alice prefers terse answers\nin reviews",
            imported,
            None,
        ),
        (
            "agent:ada",
            "agent:ada",
            Trust.OBSERVED,
            Load.SEARCH,
            None,
            Status.ACTIVE,
            "Deploys on Tuesdays",
            "Deploys on Tuesdays",
            imported,
            None,
        ),
        (
            "agent:bob",
            "agent:bob",
            Trust.OBSERVED,
            Load.SEARCH,
            None,
            Status.ACTIVE,
            "The kestrel nests on the north tower.",
            "The kestrel nests on the north tower.",
            imported,
            None,
        ),
    ]


def test_the_import_is_recorded_as_events_with_its_report(
    open_store: Opener, legacy_dir: Path
) -> None:
    (legacy_dir / "default" / "ada.md").write_text("- one\n- \n- two\n")
    service = open_store()
    events = service.backend.read(lambda tx: list(tx.iter_events()))
    kinds = [(e.kind, e.principal) for e in events if e.kind != "realm_add"]
    assert kinds == [  # the system's act, not the principal that happened to open the store
        ("agent_add", "operator:legacy-import"),
        ("create", "operator:legacy-import"),
        ("create", "operator:legacy-import"),
        ("legacy_import", "operator:legacy-import"),
    ]
    payload = json.loads(events[-1].payload or "{}")
    assert payload == {
        "files": ["ada.md"],
        "imported": 2,
        "agents_added": ["ada"],
        "problems": [{"file": "ada.md", "line": 2, "reason": "an empty list item"}],
    }
    assert service.verify().ok


def test_a_second_open_imports_nothing_more(open_store: Opener, legacy_dir: Path) -> None:
    realm = legacy_dir / "default"
    (realm / "ada.md").write_text("- one\n- two\n")
    first = open_store()
    assert first.legacy_import is not None and first.legacy_import.imported == 2
    second = open_store()
    assert second.legacy_import is None
    assert len(second.list_memories()) == 2
    assert files(realm) == ["ada.md.imported"]


def test_the_imported_memories_are_recalled_by_their_agent_only(
    open_store: Opener, legacy_dir: Path
) -> None:
    realm = legacy_dir / "default"
    (realm / "ada.md").write_text("- the kestrel nests on the north tower\n- deploys on Tuesdays\n")
    (realm / "bob.md").write_text("- the kestrel of bob\n")
    open_store()
    ada = open_store(principal="agent:ada")
    hits = ada.recall("kestrel").hits
    assert [(h.memory.scope, h.memory.body) for h in hits] == [
        ("agent:ada", "the kestrel nests on the north tower")
    ]
    assert [h.memory.body for h in open_store(principal="agent:bob").recall("kestrel").hits] == [
        "the kestrel of bob"
    ]


def test_malformed_records_are_skipped_and_reported_with_their_lines(
    open_store: Opener, legacy_dir: Path
) -> None:
    realm = legacy_dir / "default"
    (realm / "ada.md").write_text("- kept\n-\nnot in an item\n- also kept\n")
    service = open_store()
    report = service.legacy_import
    assert report is not None
    assert report.problems == (
        Problem("ada.md", 2, "an empty list item"),
        Problem("ada.md", 3, "text outside a list item"),
    )
    assert report.imported == 2
    assert bodies(service, "agent:ada") == ["also kept", "kept"]
    assert files(realm) == ["ada.md.imported"]
    assert report.to_dict()["problems"] == [
        {"file": "ada.md", "line": 2, "reason": "an empty list item"},
        {"file": "ada.md", "line": 3, "reason": "text outside a list item"},
    ]


def test_a_file_that_is_not_utf8_or_not_an_agent_name_is_left_as_it_is_and_reported(
    open_store: Opener, legacy_dir: Path
) -> None:
    realm = legacy_dir / "default"
    (realm / "ada.md").write_text("- fine\n")
    (realm / "carol.md").write_bytes(b"- caf\xe9 in latin-1\n")
    (realm / "not a name.md").write_text("- never read\n")
    service = open_store()
    report = service.legacy_import
    assert report is not None
    assert (report.files, report.imported, report.agents_added) == (("ada.md",), 1, ("ada",))
    assert report.problems == (
        Problem("carol.md", 0, "not UTF-8 text; the file was left as it is"),
        Problem(
            "not a name.md", 0, "'not a name' is not a valid agent name; the file was left as it is"
        ),
    )
    assert files(realm) == ["ada.md.imported", "carol.md", "not a name.md"]
    assert [a.name for a in service.list_agents()] == ["ada"]

    again = open_store()  # reported at every open until fixed or removed; nothing is written
    assert again.legacy_import is not None
    assert (again.legacy_import.files, again.legacy_import.imported) == ((), 0)
    assert [p.file for p in again.legacy_import.problems] == ["carol.md", "not a name.md"]
    assert files(realm) == ["ada.md.imported", "carol.md", "not a name.md"]
    assert len(again.list_memories()) == 1

    (realm / "carol.md").write_text("- café in UTF-8\n")
    fixed = open_store()
    assert fixed.legacy_import is not None and fixed.legacy_import.files == ("carol.md",)
    assert bodies(fixed, "agent:carol") == ["café in UTF-8"]


def test_a_long_first_line_is_cut_to_a_description_and_kept_whole_in_the_body(
    open_store: Opener, legacy_dir: Path
) -> None:
    line = "word " * 60
    (legacy_dir / "default" / "ada.md").write_text(f"- {line}\n")
    [memory] = open_store().list_memories()
    assert memory.body == line.strip()
    assert memory.description == line.strip()[:200]


def test_only_md_files_of_the_realms_folder_are_read(open_store: Opener, legacy_dir: Path) -> None:
    realm = legacy_dir / "default"
    (realm / "ada.md.imported").write_text("- imported before\n")
    (realm / "notes.txt").write_text("- not markdown\n")
    (realm / "dir.md").mkdir()
    (legacy_dir / "other").mkdir()
    (legacy_dir / "other" / "bob.md").write_text("- of realm other\n")
    (legacy_dir / "ada.md").write_text("- outside any realm\n")
    service = open_store()
    assert service.legacy_import is None
    assert service.list_memories() == []

    other = open_store(realm="other")
    assert other.legacy_import is not None and other.legacy_import.files == ("bob.md",)
    assert [(m.realm, m.body) for m in other.list_memories()] == [("other", "of realm other")]
    assert service.list_agents() == []


def test_a_missing_legacy_folder_imports_nothing(tmp_path: Path, clock: ManualClock) -> None:
    service = MemoryService(
        SqliteBackend(tmp_path / "retain.db"),
        settings=LEXICAL,
        clock=clock,
        legacy_dir=tmp_path / "nowhere",
    )
    assert service.legacy_import is None
    service.close()


def test_a_failed_import_leaves_the_files_to_be_retried_whole(
    open_store: Opener, legacy_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    realm = legacy_dir / "default"
    (realm / "ada.md").write_text("- one\n- two\n")
    (realm / "bob.md").write_text("- three\n")

    def broken(*args: object, **options: object) -> Memory:
        raise errors.StoreBusy("the store is busy", remedy="retry")

    with monkeypatch.context() as patch:
        patch.setattr(rows, "record", broken)
        refused = open_store()  # the store opens; the import is reported, not raised
    assert refused.legacy_import is not None and refused.legacy_import.imported == 0
    assert [(p.file, p.reason) for p in refused.legacy_import.problems] == [
        ("ada.md", "not imported: the store is busy; left as it is"),
        ("bob.md", "not imported: the store is busy; left as it is"),
    ]
    assert files(realm) == ["ada.md", "bob.md"]
    assert open_store(legacy=False).list_agents() == []  # nothing of it was written
    service = open_store()
    assert service.legacy_import is not None and service.legacy_import.imported == 3
    assert files(realm) == ["ada.md.imported", "bob.md.imported"]
    assert len(service.list_memories()) == 3


def test_a_byte_order_mark_does_not_hide_the_first_item(
    open_store: Opener, legacy_dir: Path
) -> None:
    (legacy_dir / "default" / "ada.md").write_text("\ufeff- first\n- second\n", encoding="utf-8")
    service = open_store()
    assert service.legacy_import is not None and service.legacy_import.problems == ()
    assert bodies(service, "agent:ada") == ["first", "second"]


def test_retain_open_reads_the_agent_memory_folder_of_its_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "agent-memory" / "default").mkdir(parents=True)
    (home / "config.toml").write_text('[search]\nembedder = "none"\n')
    (home / "agent-memory" / "default" / "ada.md").write_text("- from the home folder\n")
    service = retain.open(home=home)
    try:
        assert service.legacy_import is not None
        assert service.legacy_import.files == ("ada.md",)
        assert bodies(service, "agent:ada") == ["from the home folder"]
    finally:
        service.close()

    (home / "agent-memory" / "default" / "bob.md").write_text("- found through RETAIN_HOME\n")
    monkeypatch.setenv("RETAIN_HOME", str(home))
    again = retain.open()
    try:
        assert again.legacy_import is not None and again.legacy_import.files == ("bob.md",)
        assert bodies(again, "agent:bob") == ["found through RETAIN_HOME"]
    finally:
        again.close()


def test_a_file_without_a_list_drops_its_heading_after_leading_blank_lines() -> None:
    assert legacy.parse("\n\n# Ada\n\nAda owns the release.\n") == (
        [Record(1, "Ada owns the release.")],
        [],
    )


def test_a_claim_left_by_a_killed_importer_is_taken_back_when_it_is_old(
    open_store: Opener, legacy_dir: Path
) -> None:
    realm = legacy_dir / "default"
    (realm / "ada.md.importing").write_text("- Ada likes tea.\n", encoding="utf-8")
    fresh = legacy.pending(realm)
    assert fresh == [] and files(realm) == ["ada.md.importing"]  # maybe still being imported
    later = legacy.pending(realm, now=time.time() + legacy.STALE_CLAIM_S + 1)
    assert later == [realm / "ada.md"]
    service = open_store()
    assert bodies(service, "agent:ada") == ["Ada likes tea."]
    assert files(realm) == ["ada.md.imported"]


def test_a_file_imported_before_is_not_imported_again(open_store: Opener, legacy_dir: Path) -> None:
    """An importer killed after its commit but before its rename leaves the file behind;
    the same content is recognised and only renamed, and an earlier .imported file is
    never overwritten."""
    realm = legacy_dir / "default"
    (realm / "ada.md").write_text("- one\n- two\n")
    open_store()
    (realm / "ada.md").write_text("- one\n- two\n")  # as if the rename had not happened
    again = open_store()
    assert again.legacy_import is not None
    assert (again.legacy_import.imported, again.legacy_import.problems) == (
        0,
        (Problem("ada.md", 0, legacy.ALREADY),),
    )
    assert files(realm) == ["ada.md.imported", "ada.md.imported.2"]
    assert bodies(again, "agent:ada") == ["one", "two"]
    (realm / "ada.md").write_text("- three\n")  # new content under the same name is new
    third = open_store()
    assert third.legacy_import is not None and third.legacy_import.imported == 1
    assert files(realm) == ["ada.md.imported", "ada.md.imported.2", "ada.md.imported.3"]


def test_the_legacy_directory_is_the_one_beside_the_store_opened(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (home / "agent-memory" / "default").mkdir(parents=True)
    (home / "agent-memory" / "default" / "bob.md").write_text("- Bob is on call.\n")
    other = retain.open(elsewhere / "retain.db", home=home)
    try:
        assert other.legacy_import is None and other.list_memories() == []
    finally:
        other.close()
    assert (home / "agent-memory" / "default" / "bob.md").exists()
