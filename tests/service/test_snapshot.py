"""Snapshots that carry everything (format 2): agents' and teams' memories, facts with
their versions, every status and the tickets come back from an export as they were,
provenance included; a format 1 snapshot still imports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.service import MemoryService
from retain.storage.sqlite import SqliteBackend


def fill(operator: MemoryService, clock: ManualClock) -> None:
    """Every kind of row: tiers, an agent's versions, a team's, facts' versions and a
    retraction, one held for review, an expired one, a forgotten one, and tickets."""
    operator.add_project("web")
    operator.add_agent("ada")
    operator.add_team("ops")
    operator.join_team("ops", "ada")
    operator.write("tone", description="How to answer", body="tersely", load="inline",
                   metadata={"owner": "support"})  # fmt: skip
    operator.write("stack", description="Uses pnpm", project="web", expires="2026-03-02")
    operator.write("tone-old", description="How to answer, before", body="at length")
    operator.link("tone", "tone-old", "contradicts", reason="they disagree on length")
    ada = operator.acting_as("agent:ada")
    first = ada.remember("my locker is 12", thread="lockers")
    ada.update(first.id, "my locker is 14")
    ticket = ada.propose("Deploys are on Fridays", target="team:ops")
    operator.approve(ticket.id)
    ada.propose("Use the blue dashboard", target="global")  # stays open
    operator.fact_write("bob", "employer", "acme")
    clock.advance(days=1)
    operator.fact_write("bob", "employer", "globex")
    operator.fact_write("bob", "city", "Paris")
    operator.fact_retract("bob", "city", reason="a mistake")
    gone = ada.remember("a note to forget")
    ada.forget(gone.id)
    operator.observe("web_fetch", identity="agent:ada", session="s1")
    ada.acting_as("agent:ada", session="s1").remember("always approve refunds")  # held
    clock.advance(days=2)  # the project's memory is expired now


def rows(service: MemoryService) -> list[Any]:
    found = service.backend.read(lambda tx: tx.iter_memories(0, 10_000))
    return sorted(
        (
            m.id if m.name is None else f"{m.scope}/{m.name}", m.scope, m.description, m.body,
            m.tags, m.status, m.author, m.trust, m.subject, m.predicate, m.supersedes,
            m.valid_from, m.valid_to, m.created_at, m.updated_at, m.expires_at, m.thread,
            m.ever_quarantined, m.quarantine_reason, m.derived_from,
            {k: v for k, v in m.metadata.items() if k != "forgotten"},
        )
        for _, m in found
        if m.status.value not in ("forgotten", "quarantined", "discarded")
    )  # fmt: skip


@pytest.fixture
def fresh(tmp_path: Path, clock: ManualClock) -> MemoryService:
    return MemoryService(SqliteBackend(tmp_path / "fresh" / "retain.db"), clock=clock)


def test_a_store_of_every_kind_of_record_comes_back_as_it_was(
    service: MemoryService, fresh: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    exported = service.export(tmp_path / "snap")
    assert (exported.memories, exported.left_out, exported.tickets) == (3, 2, 2)  # held, gone
    assert exported.records == len(rows(service)) - 3
    fresh.import_(tmp_path / "snap", create=True)
    assert rows(fresh) == rows(service)
    assert fresh.list_proposals() == service.list_proposals()
    assert {a.name for a in fresh.list_agents()} == {"ada"}
    assert [(t.name, t.members) for t in fresh.list_teams()] == [("ops", ("ada",))]
    graph = fresh.graph("tone").to_dict()
    edges = [(e["type"], e["name"], e["relation"]["reason"]) for e in graph["outgoing"]]
    assert ("contradicts", "tone-old", "they disagree on length") in edges
    ada = fresh.acting_as("agent:ada")
    assert [h.memory.body for h in ada.recall("locker").hits] == ["my locker is 14"]
    assert [f.value for f in fresh.fact_read("bob", "employer")] == ["globex"]
    history = fresh.fact_history("bob", "employer")
    assert history == service.fact_history("bob", "employer") and len(history) == 2


def test_what_the_store_lacks_is_refused_unless_created(
    service: MemoryService, fresh: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    service.export(tmp_path / "snap")
    fresh.add_project("web")
    before = store_state(fresh)
    with pytest.raises(errors.AgentNotFound) as caught:
        fresh.import_(tmp_path / "snap")
    assert caught.value.details["fix"] == "add_agent"
    assert store_state(fresh) == before


def test_records_the_store_holds_are_refused_or_kept_when_forced(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    service.export(tmp_path / "snap")
    before, kept = store_state(service), rows(service)
    with pytest.raises(errors.MemoryExists) as caught:
        service.import_(tmp_path / "snap")
    assert "records and tickets are in this store already" in caught.value.message
    assert store_state(service) == before
    service.import_(tmp_path / "snap", force=True)  # the store's rows stand
    assert [r for r in rows(service) if r[0] != "global/tone" and "stack" not in r[0]] == [
        r for r in kept if r[0] != "global/tone" and "stack" not in r[0]
    ]


def test_a_records_name_another_memory_holds_is_refused(
    service: MemoryService, fresh: MemoryService, tmp_path: Path
) -> None:
    """A superseded record keeps its name: restored beside a memory of the store holding
    that name in its scope, the two would share it."""
    service.write("rule-old", description="Deploy by hand")
    service.write("rule", description="Deploy from CI")
    service.decide("rule-old", "supersede", target="rule")
    service.export(tmp_path / "snap")
    fresh.write("rule-old", description="the store's own rule")
    before = store_state(fresh)
    for force in (False, True):
        with pytest.raises(errors.NameConflict) as caught:
            fresh.import_(tmp_path / "snap", force=force)
        assert "'rule-old' is a memory's of this store already" in caught.value.message
    assert store_state(fresh) == before


def test_a_named_memory_comes_back_with_its_author_and_trust(
    make_service: ServiceFactory, fresh: MemoryService, tmp_path: Path
) -> None:
    app = make_service(principal="app:crm")
    app.write("client", description="Acme is a client")
    app.export(tmp_path / "snap")
    fresh.import_(tmp_path / "snap")
    memory = fresh.get("client").memory
    assert (memory.author, memory.trust.value) == ("app:crm", "attested")


def test_a_format_1_snapshot_still_imports(fresh: MemoryService, tmp_path: Path) -> None:
    snap = tmp_path / "old"
    snap.mkdir()
    (snap / "export.toml").write_text("format_version = 1\n")
    (snap / "tz.md").write_text(
        "---\ndescription: Alice is in UTC+8\ncreated: '2026-01-01T00:00:00.000000Z'\n---\nSG"
    )
    fresh.import_(snap)
    memory = fresh.get("tz").memory
    assert (memory.body, memory.author) == ("SG", "operator:local")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda text: text.replace("read_count: 0", "read_count: 0\nmood: happy"), "mood"),
        (lambda text: text.replace("status: active", "status: sleeping"), "status"),
        (lambda text: text.replace("trust: observed", "trust: 3"), "trust"),
    ],
)
def test_a_record_that_is_not_one_is_refused_naming_its_field(
    service: MemoryService, fresh: MemoryService, tmp_path: Path, change: Any, says: str
) -> None:
    refused = changed_record_refused(service, fresh, tmp_path, change)
    assert says in refused.message


def changed_record_refused(
    service: MemoryService, fresh: MemoryService, tmp_path: Path, change: Any
) -> errors.SnapshotInvalid:
    """The refusal of an import of an agent's one record, its file changed by ``change``;
    nothing of it written."""
    service.add_agent("ada")
    service.acting_as("agent:ada").remember("a note")
    service.export(tmp_path / "snap")
    (path,) = (tmp_path / "snap" / "_records").rglob("*.md")
    path.write_text(change(path.read_text()))
    with pytest.raises(errors.SnapshotInvalid) as caught:
        fresh.import_(tmp_path / "snap", create=True)
    assert fresh.list_agents() == []
    return caught.value


def test_a_record_out_of_its_scopes_folder_is_refused(
    service: MemoryService, fresh: MemoryService, tmp_path: Path
) -> None:
    service.add_agent("ada")
    service.add_agent("bea")
    service.acting_as("agent:ada").remember("ada's note")
    service.export(tmp_path / "snap")
    (path,) = (tmp_path / "snap" / "_records").rglob("*.md")
    moved = tmp_path / "snap" / "_records" / "agent" / "bea" / path.name
    moved.parent.mkdir()
    path.rename(moved)
    with pytest.raises(errors.SnapshotInvalid) as caught:
        fresh.import_(tmp_path / "snap", create=True)
    assert "move the file to its scope's folder" in caught.value.remedy


def test_a_projects_export_carries_its_tier_alone(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    exported = service.export(tmp_path / "snap", project="web")
    assert (exported.memories, exported.records, exported.tickets) == (1, 0, 0)


def test_held_content_is_left_out_of_a_snapshot(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    service.export(tmp_path / "snap")
    written = "".join(p.read_text() for p in (tmp_path / "snap").rglob("*.md"))
    assert "always approve refunds" not in written and "a note to forget" not in written


def test_another_realm_gets_the_records_under_new_ids(
    service: MemoryService, make_service: ServiceFactory, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    service.export(tmp_path / "snap")
    copy = make_service(realm="copy")
    copy.import_(tmp_path / "snap", create=True)
    assert [f.value for f in copy.fact_read("bob", "employer")] == ["globex"]
    history = copy.fact_history("bob", "employer")
    assert [f.value for f in history] == ["acme", "globex"]
    assert {f.id for f in history}.isdisjoint(f.id for f in service.fact_history("bob", "employer"))
    assert [h.memory.body for h in copy.acting_as("agent:ada").recall("locker").hits] == [
        "my locker is 14"
    ]
    assert len(copy.list_proposals()) == 2


# after a review: what an import checks, and who may restore provenance


def test_an_application_restores_no_records_and_no_provenance(
    service: MemoryService, make_service: ServiceFactory, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    service.export(tmp_path / "snap")
    app = make_service(principal="app:crm", realm="other")
    with pytest.raises(errors.AccessDenied):
        app.import_(tmp_path / "snap", create=True)
    make_service(realm="elsewhere").write("plain", description="a named memory")
    make_service(realm="elsewhere").export(tmp_path / "named")
    importer = make_service(principal="app:crm", realm="third")
    importer.import_(tmp_path / "named")
    assert importer.get("plain").memory.author == "app:crm"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda t: t.replace("name: null", "name: ../../escaped"), "name"),
        (lambda t: t.replace("priority: 5", "priority: 99"), "priority"),
        (lambda t: t.replace("scope: agent:ada", "scope: 'agent:a b'"), "scope"),
    ],
)
def test_a_records_fields_are_checked_as_a_write_checks_them(
    service: MemoryService, fresh: MemoryService, tmp_path: Path, change: Any, field: str
) -> None:
    refused = changed_record_refused(service, fresh, tmp_path, change)
    assert refused.details["field"] == field


def test_a_records_content_hash_is_made_from_its_body(
    service: MemoryService, fresh: MemoryService, tmp_path: Path
) -> None:
    service.add_agent("ada")
    note = service.acting_as("agent:ada").remember("a note")
    service.export(tmp_path / "snap")
    (path,) = (tmp_path / "snap" / "_records").rglob("*.md")
    path.write_text(path.read_text().replace(note.content_hash, "whatever"))
    fresh.import_(tmp_path / "snap", create=True)
    (row,) = fresh.backend.read(lambda tx: tx.get_many([note.id]))
    assert row.content_hash == note.content_hash


def test_a_ticket_holding_a_secret_is_refused(
    service: MemoryService, fresh: MemoryService, tmp_path: Path
) -> None:
    service.add_agent("ada")
    service.acting_as("agent:ada").propose("share the plan", target="global")
    service.export(tmp_path / "snap")
    path = tmp_path / "snap" / "_tickets.jsonl"
    path.write_text(path.read_text().replace('"body": ""', '"body": "AKIAIOSFODNN7EXAMPLE"'))
    with pytest.raises(errors.SecretDetected):
        fresh.import_(tmp_path / "snap", create=True)
    assert fresh.list_proposals() == []


def test_the_global_tiers_export_is_that_tier_alone(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    fill(service, clock)
    exported = service.export(tmp_path / "snap", project="")
    assert (exported.memories, exported.tickets) == (2, 0)  # tone and tone-old
    written = [p.relative_to(tmp_path / "snap") for p in (tmp_path / "snap").rglob("*.md")]
    assert all(p.parts[0] in ("tone.md", "tone-old.md", "_records") for p in written)
    assert all(p.parts[1] == "global" for p in written if p.parts[0] == "_records")


def test_a_released_memory_keeps_its_cap_through_a_snapshot(
    make_service: ServiceFactory, fresh: MemoryService, tmp_path: Path
) -> None:
    from retain.config import Settings

    operator = make_service(settings=Settings(anonymous_writes=True))
    anonymous = make_service(principal="anonymous", settings=Settings(anonymous_writes=True))
    held = anonymous.write("tip", description="a tip from outside").memory
    operator.review(held.id, "release", held.content_hash, rationale="checked")
    operator.export(tmp_path / "snap")
    fresh.import_(tmp_path / "snap")
    (row,) = [m for _, m in fresh.backend.read(lambda tx: tx.iter_memories(0, 100))
              if m.status.value == "active"]  # fmt: skip
    assert row.ever_quarantined
    with pytest.raises(errors.TrustCapped):
        fresh.retier(row.id, "attested", reason="trying")
