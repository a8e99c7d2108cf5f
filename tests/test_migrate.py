"""Copying a whole store between SQLite and PostgreSQL, its history included."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import fresh_schema, raw_sql

from retain import errors
from retain.chrono import ManualClock
from retain.config import Settings
from retain.mirrors import JsonlMirror
from retain.results import MigrateResult, WriteRequest
from retain.search.embed import EmbedderSettings
from retain.service import MemoryService
from retain.storage.base import Backend
from retain.storage.postgres import PostgresBackend
from retain.storage.sqlite import SqliteBackend

HASHED = Settings(embedder=EmbedderSettings(provider="hash"))


def fill(service: MemoryService, clock: ManualClock, mirrored: Path) -> None:
    """A store with something of everything: tiers, threads, identities, history, and
    what a mirror (a JSON lines file at ``mirrored``) holds."""
    service.add_project("web")
    service.add_agent("ada")
    service.add_team("ops")
    service.join_team("ops", "ada")
    service.write("tone", description="How to answer", body="Answer tersely.", load="inline")
    service.write_many(
        [
            WriteRequest(f"turn-{i}", description=f"turn {i}", body=f"we said {i}", thread="chat")
            for i in (3, 1, 2)
        ]
    )
    service.write("deploy", description="How web deploys", body="Tuesdays", project="web")
    service.edit("deploy", old="Tuesdays", new="Tuesdays at noon")
    service.write("gone", description="to delete")
    service.delete("gone")
    clock.advance(hours=1)
    agent = MemoryService(service.backend, settings=HASHED, clock=clock, principal="agent:ada")
    kept = agent.remember("Ada prefers the blue dashboard")
    dropped = agent.remember("Ada's old note")
    agent.forget(dropped.id)
    agent.update(kept.id, "Ada prefers the green dashboard")
    agent.propose("Share the dashboard colour", target="team:ops")
    agent.context(project="web", session="s1", turn="dashboard")
    service.observe("web_fetch", identity="agent:ada", session="s1")
    service.observe("calculator", identity="agent:ada", session="s2")
    service.store.add_mirror(JsonlMirror(mirrored), scopes=["global"])
    service.write("mirrored", description="a memory a mirror holds")


def snapshot(service: MemoryService) -> tuple[object, ...]:
    """What a copy must keep: rows (every status), identities, proposals, the ledger."""
    memories = service.backend.read(lambda tx: tx.iter_memories(0, 10_000))
    return (
        [
            (m.id, m.scope, m.name, m.body, m.status, m.tags, m.created_at, m.thread)
            for _, m in memories
        ],  # fmt: skip
        service.list_projects(),
        service.list_agents(),
        service.list_teams(),
        service.list_proposals(),
        [
            (i.memory_id, i.identity, i.session, i.surface, i.injected_at)
            for i in service.list_injections()
        ],  # fmt: skip
        service.backend.read(lambda tx: tx.list_context_states(service.realm)),
        service.backend.read(lambda tx: tx.list_sessions(service.realm)),
        service.backend.read(lambda tx: list(tx.iter_events())),
        service.backend.read(lambda tx: tx.list_mirror_links(service.realm)),
    )


@pytest.fixture
def stores(tmp_path: Path, postgres_url: str) -> dict[str, Backend]:
    opened: dict[str, Backend] = {
        "sqlite": SqliteBackend(tmp_path / "a" / "retain.db"),
        "postgres": PostgresBackend(fresh_schema(postgres_url)),
        "sqlite-back": SqliteBackend(tmp_path / "b" / "retain.db"),
    }
    yield opened  # type: ignore[misc]
    for backend in opened.values():
        backend.close()


def test_a_store_goes_to_postgres_and_back_with_its_history(
    stores: dict[str, Backend], clock: ManualClock, tmp_path: Path
) -> None:
    source = MemoryService(stores["sqlite"], settings=HASHED, clock=clock)
    fill(source, clock, tmp_path / "mirror.jsonl")
    phases: list[str] = []
    there = source.migrate_to(stores["postgres"], progress=lambda p, d, t: phases.append(p))
    assert isinstance(there, MigrateResult)  # a copy that did not verify would raise
    assert {"copy", "events", "reindex", "chain"} <= set(phases)
    copy = MemoryService(stores["postgres"], settings=HASHED, clock=clock)
    assert snapshot(copy) == snapshot(source)
    assert [k.state for k in snapshot(copy)[-1]] == ["mirrored"]  # the copy can reach it
    assert copy.status().chain_head == source.status().chain_head == there.chain_head
    assert (there.realms, there.memories) == (1, source.status().memories)
    assert there.rekeyed == there.memories - 1  # every key made again, but the forgotten one's
    thread = [h.memory.name for h in copy.search("we said", limit=3).hits]
    assert sorted(thread) == ["turn-1", "turn-2", "turn-3"]
    assert [h.memory.name for h in copy.search("tersely").hits] == ["tone"]

    back = copy.migrate_to(stores["sqlite-back"])
    assert back.chain_head == there.chain_head
    again = MemoryService(stores["sqlite-back"], settings=HASHED, clock=clock)
    assert snapshot(again) == snapshot(source)
    order = raw_sql(again, "SELECT name FROM memories WHERE thread = 'chat' ORDER BY num")
    assert [r[0] for r in order] == ["turn-3", "turn-1", "turn-2"]  # as they were made


def test_a_store_is_copied_only_into_an_empty_one(
    stores: dict[str, Backend], clock: ManualClock
) -> None:
    source = MemoryService(stores["sqlite"], settings=HASHED, clock=clock)
    source.write("a", description="a")
    target = MemoryService(stores["postgres"], settings=HASHED, clock=clock)
    target.write("b", description="b")
    before = snapshot(target)
    with pytest.raises(errors.MigrateTargetNotEmpty) as caught:
        source.migrate_to(stores["postgres"])
    assert caught.value.code == "migrate_target_not_empty"
    assert snapshot(target) == before


def test_a_copy_that_does_not_verify_raises_and_is_left_to_be_looked_at(
    stores: dict[str, Backend], clock: ManualClock
) -> None:
    source = MemoryService(stores["sqlite"], settings=HASHED, clock=clock)
    source.write("plan", description="the plan", body="secret plan")
    raw_sql(source, "UPDATE events SET payload = replace(payload, 'secret', 'public')")
    with pytest.raises(errors.IntegrityFailed) as caught:
        source.migrate_to(stores["postgres"])
    assert caught.value.code == "integrity_failed"
    assert caught.value.details["fix"] == "verify"
    [problem] = caught.value.details["problems"]
    assert problem.startswith("event chain broken") and "payload does not match" in problem
    assert "did not verify" in caught.value.message
    copy = MemoryService(stores["postgres"], settings=HASHED, clock=clock)
    assert [m.name for m in copy.list_memories()] == ["plan"]  # the copy stays


def test_a_signed_store_is_copied_with_its_signatures(
    stores: dict[str, Backend], clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from retain import signing

    monkeypatch.setenv(signing.ENV, signing.generate().private_text)
    source = MemoryService(stores["sqlite"], settings=HASHED, clock=clock)
    source.write("n", description="A note", body="x")
    source.migrate_to(stores["postgres"])  # verifies the copy, its signatures too
    copy = MemoryService(stores["postgres"], settings=HASHED, clock=clock)
    signatures = copy.backend.read(lambda tx: list(tx.iter_signatures()))
    assert signatures == source.backend.read(lambda tx: list(tx.iter_signatures()))
    assert copy.verify().signed_events == len(signatures) == copy.status().events
