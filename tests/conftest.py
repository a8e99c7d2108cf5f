"""Shared fixtures: a manual clock, and a store on every backend.

Every storage-touching test takes ``service`` (or ``make_service``), which is
parametrized over the backends, so one test runs on each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retain.chrono import Clock, ManualClock
from retain.config import Settings
from retain.service import MemoryService
from retain.storage.sqlite import SqliteBackend

BACKENDS = ["sqlite"]

ServiceFactory = Callable[..., MemoryService]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_service(backend_name: str, tmp_path: Path, clock: ManualClock) -> Iterator[ServiceFactory]:
    """Open services on one fresh store; settings, principal and clock may vary per call."""
    manual = clock
    opened: list[MemoryService] = []
    path = tmp_path / "store" / "retain.db"

    def make(
        *,
        settings: Settings | None = None,
        principal: str = "operator:test",
        clock: Clock | None = None,
    ) -> MemoryService:
        assert backend_name == "sqlite"
        service = MemoryService(
            SqliteBackend(path),
            settings=settings or Settings(),
            clock=clock or manual,
            principal=principal,
        )
        opened.append(service)
        return service

    yield make
    for service in opened:
        service.close()


@pytest.fixture
def service(make_service: ServiceFactory) -> MemoryService:
    return make_service()


def store_state(service: MemoryService) -> tuple[object, ...]:
    """Everything a refused call must leave as it was: memories, projects, the log head."""
    memories = tuple(
        (m.id, m.scope, m.name, m.description, m.body, m.tags, m.priority, m.load,
         m.references, m.source, m.expires_at, m.verified_at, m.updated_at, m.read_count)
        for m in service.list_memories()
    )  # fmt: skip
    projects = tuple((p.name, p.memory_count) for p in service.list_projects())
    status = service.status()
    return memories, projects, status.events, status.chain_head
