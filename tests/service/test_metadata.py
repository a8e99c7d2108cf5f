"""A writer's own metadata on a memory (``write(..., metadata={...})``): kept beside the
store's own keys, checked before any I/O, screened for secrets, carried by a snapshot,
and erased by ``forget``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import store_state

from retain import errors
from retain.chrono import ManualClock
from retain.doors import http
from retain.fields import CALLER_METADATA_MAX_CHARS
from retain.service import MemoryService
from retain.storage.sqlite import SqliteBackend

TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_metadata_is_kept_kept_again_and_cleared(service: MemoryService) -> None:
    meta = {"source": {"app": "crm", "ids": [1, 2]}, "score": 0.5, "ok": True, "none": None}
    first = service.write("m", description="d", metadata=meta).memory
    assert first.to_dict(first.created_at)["metadata"] == meta
    kept = service.write("m", body="changed").memory
    assert service.get("m").memory.to_dict(kept.updated_at)["metadata"] == meta
    replaced = service.write("m", metadata={"score": 1}).memory
    assert replaced.to_dict(replaced.updated_at)["metadata"] == {"score": 1}
    cleared = service.write("m", metadata={}).memory
    assert (
        cleared.to_dict(cleared.updated_at)["metadata"] == {} and "caller" not in cleared.metadata
    )


def test_the_stores_own_keys_stay_beside_it(service: MemoryService) -> None:
    written = service.write("m", description="d", body=TOKEN, redact=True, metadata={"a": 1})
    assert written.memory.metadata == {"caller": {"a": 1}, "redacted": ["github_token"]}
    again = service.write("m", metadata={}).memory
    assert again.metadata == {"redacted": ["github_token"]}


@pytest.mark.parametrize(
    "bad",
    [
        ["not", "an", "object"],
        {1: "a key that is not text"},
        {"a set": {1, 2}},
        {"nan": float("nan")},
        {"nul": "a\x00b"},
        {"a\x00": "a NUL in a key"},
        {"deep": [{"lone": "\ud800"}]},
        {"big": "x" * CALLER_METADATA_MAX_CHARS},
    ],
)
def test_metadata_that_is_not_a_json_object_is_refused_before_any_write(
    service: MemoryService, bad: Any
) -> None:
    before = store_state(service)
    with pytest.raises(errors.InvalidValue) as caught:
        service.write("m", description="d", metadata=bad)
    assert caught.value.details["field"] == "metadata"
    assert store_state(service) == before


def test_a_secret_in_metadata_is_refused_or_redacted(service: MemoryService) -> None:
    with pytest.raises(errors.SecretDetected) as caught:
        service.write("m", description="d", metadata={"auth": {"token": TOKEN}})
    assert TOKEN not in caught.value.message
    written = service.write("m", description="d", metadata={"auth": {"token": TOKEN}}, redact=True)
    assert written.memory.metadata["caller"] == {"auth": {"token": "[redacted:github_token]"}}


def test_a_snapshot_carries_metadata(
    service: MemoryService, clock: ManualClock, tmp_path: Path
) -> None:
    service.write("m", description="d", metadata={"k": ["v", 1, {"deep": None}]})
    service.write("plain", description="nothing more")
    service.export(tmp_path / "snap")
    assert "metadata:" in (tmp_path / "snap" / "m.md").read_text()
    assert "metadata" not in (tmp_path / "snap" / "plain.md").read_text()
    fresh = MemoryService(SqliteBackend(tmp_path / "fresh" / "retain.db"), clock=clock)
    fresh.import_(tmp_path / "snap")
    assert fresh.get("m").memory.metadata == {"caller": {"k": ["v", 1, {"deep": None}]}}
    assert fresh.get("plain").memory.metadata == {}
    fresh.close()


def test_a_snapshot_whose_metadata_is_not_a_mapping_is_refused(
    service: MemoryService, tmp_path: Path
) -> None:
    service.write("m", description="d", metadata={"k": 1})
    service.export(tmp_path / "snap")
    path = tmp_path / "snap" / "m.md"
    path.write_text(path.read_text().replace("metadata:\n  k: 1", "metadata: [1]"))
    service.delete("m")
    with pytest.raises(errors.SnapshotInvalid) as caught:
        service.import_(tmp_path / "snap")
    assert "metadata must be a mapping" in caught.value.message


def test_forget_erases_metadata(service: MemoryService) -> None:
    memory = service.write("m", description="d", metadata={"address": "1 Main St"}).memory
    service.forget(memory.id)
    for event in service.events(limit=100):
        assert "1 Main St" not in str(event.to_dict())


def test_the_rest_door_takes_and_gives_metadata(service: MemoryService) -> None:
    client = TestClient(http.create_app(service))
    created = client.put("/v1/memories/m", json={"description": "d", "metadata": {"a": [1]}})
    assert created.status_code == 201 and created.json()["metadata"] == {"a": [1]}
    refused = client.put("/v1/memories/m", json={"metadata": {"big": "x" * 70_000}})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_value"


def test_a_secret_in_a_metadata_key_is_refused_and_never_spelt(service: MemoryService) -> None:
    for meta in ({TOKEN: True}, {"a": {TOKEN: TOKEN}}):
        for redact in (False, True):
            with pytest.raises(errors.SecretDetected) as caught:
                service.write("m", description="d", metadata=meta, redact=redact)
            assert TOKEN not in str(caught.value.to_dict())
    with pytest.raises(errors.NotFound):
        service.get("m")


def test_redaction_marks_only_the_entry_that_holds_the_secret(service: MemoryService) -> None:
    text = "hello there my friend, a long text indeed"
    meta = {"a.b": TOKEN, "a": {"b": text}}
    written = service.write("m", description="d", metadata=meta, redact=True).memory
    assert written.metadata["caller"] == {"a.b": "[redacted:github_token]", "a": {"b": text}}
