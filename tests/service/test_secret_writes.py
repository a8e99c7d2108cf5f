"""Secrets at admission (issue 16): a write holding a credential is refused with nothing
written, written redacted when it asks, or, an agent's, held for review; a proposal and
an import are refused whole. The value is never said: not in the refusal, the log of
events, nor anything logged."""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory, open_backend, raw_sql, store_state

from retain.config import Settings
from retain.errors import SecretDetected
from retain.governance import secrets
from retain.model import Status, Trust
from retain.results import WriteRequest
from retain.service import MemoryService, content_hash

TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
KEY_ID = "AKIAIOSFODNN7EXAMPLE"
DSN = "postgres://app:s3cr3tPw@db.internal/main"
OPEN_DOOR = Settings(anonymous_writes=True)


@pytest.fixture
def realm(make_service: ServiceFactory) -> ServiceFactory:
    operator = make_service()
    operator.add_agent("ada")
    return make_service


def refused(call: object) -> SecretDetected:
    assert callable(call)
    with pytest.raises(SecretDetected) as caught:
        call()
    error = caught.value
    said = json.dumps(error.to_dict()) + str(error)
    for value in (TOKEN, KEY_ID, "s3cr3tPw"):
        assert value not in said
    return error


def said_nowhere(service: MemoryService, *values: str) -> None:
    """No event of the log holds any of ``values``."""
    for event in service.events(limit=1000):
        for value in values:
            assert value not in (event.payload or ""), event.kind


def test_a_write_with_a_secret_is_refused_naming_it_and_writes_nothing(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    before = store_state(service)
    with caplog.at_level(logging.DEBUG):
        error = refused(
            lambda: service.write("ci", description="the CI token", body=f"token: {TOKEN}")
        )
    assert error.details["findings"] == [
        {"kind": "github_token", "field": "body", "start": 7, "end": 7 + len(TOKEN)}
    ]
    assert "github_token in body at 7-47" in error.message
    assert store_state(service) == before
    assert TOKEN not in caplog.text


def test_a_batch_with_one_secret_writes_none_of_it(service: MemoryService) -> None:
    before = store_state(service)
    requests = [
        WriteRequest("plain", description="a plain note", body="nothing to hide"),
        WriteRequest("db", description="the database", references=[DSN]),
        WriteRequest("more", description="another plain note"),
    ]
    error = refused(lambda: service.write_many(requests))
    assert error.details["findings"][0]["field"] == "references[0]"
    assert error.details["kinds"] == ["url_password"]
    assert store_state(service) == before


def test_a_change_of_a_stored_memory_with_a_secret_is_refused(service: MemoryService) -> None:
    service.write("ci", description="the CI token", body="it lives in $CI_TOKEN")
    before = store_state(service)
    refused(lambda: service.write("ci", tags=["ci", TOKEN]))
    refused(lambda: service.edit("ci", "$CI_TOKEN", TOKEN))
    assert store_state(service) == before


def test_redact_writes_the_marker_and_records_the_kinds(service: MemoryService) -> None:
    written = service.write(
        "ci", description=f"key {KEY_ID}", body=f"token: {TOKEN}", source=DSN, redact=True
    )
    memory = written.memory
    assert memory.description == "key [redacted:aws_access_key]"
    assert memory.body == "token: [redacted:github_token]"
    assert memory.source == "postgres://app:[redacted:url_password]@db.internal/main"
    assert memory.metadata["redacted"] == ["aws_access_key", "github_token", "url_password"]
    assert memory.content_hash == content_hash(memory.body)
    assert written.after is not None and TOKEN not in written.after
    stored = service.get("ci").memory
    assert (stored.body, stored.metadata) == (memory.body, memory.metadata)
    said_nowhere(service, TOKEN, KEY_ID, "s3cr3tPw")


def test_redact_is_per_request_in_a_batch(service: MemoryService) -> None:
    requests = [
        WriteRequest("a", description="one", body=TOKEN, redact=True),
        WriteRequest("b", description="two", body=TOKEN),
    ]
    refused(lambda: service.write_many(requests))
    requests[1] = WriteRequest("b", description="two", body="plain")
    results = service.write_many(requests)
    assert [r.memory.body for r in results] == ["[redacted:github_token]", "plain"]


def test_a_batch_that_creates_then_changes_a_memory_redacts_both(service: MemoryService) -> None:
    results = service.write_many(
        [
            WriteRequest("a", description="one", body="plain"),
            WriteRequest("a", body=f"now {TOKEN}", redact=True),
        ]
    )
    assert results[1].memory.body == "now [redacted:github_token]"
    assert service.get("a").memory.body == "now [redacted:github_token]"
    said_nowhere(service, TOKEN)


def test_an_edit_redacts_and_its_excerpt_shows_the_stored_body(service: MemoryService) -> None:
    service.write("ci", description="the CI token", body="it lives in $CI_TOKEN")
    result = service.edit("ci", "$CI_TOKEN", TOKEN, redact=True)
    assert result.memory.body == "it lives in [redacted:github_token]"
    assert TOKEN not in result.excerpt
    said_nowhere(service, TOKEN)


def test_a_name_holding_a_secret_is_refused_even_redacted(service: MemoryService) -> None:
    before = store_state(service)
    for redacting in (False, True):
        error = refused(
            functools.partial(service.write, KEY_ID, description="a key", redact=redacting)
        )
        assert error.details["findings"][0]["field"] == "name"
    assert store_state(service) == before


@pytest.mark.parametrize("principal", ["app:ci", "operator:ann"])
def test_no_writer_but_an_agent_is_held_instead_of_refused(
    realm: ServiceFactory, principal: str
) -> None:
    writer = realm(principal=principal)
    refused(lambda: writer.write("ci", description="token", body=TOKEN))
    refused(lambda: writer.fact_write("ci", "token", TOKEN))


def test_an_anonymous_write_with_a_secret_is_refused(realm: ServiceFactory) -> None:
    anonymous = realm(principal="anonymous", settings=OPEN_DOOR)
    refused(lambda: anonymous.write("tip", description="a tip", body=TOKEN))
    assert raw_sql(realm(), "SELECT count(*) FROM memories") == [(0,)]


def test_an_agents_secret_lands_quarantined_for_review(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    memory = ada.remember(f"the deploy token is {TOKEN}")
    assert memory.status is Status.QUARANTINED
    assert memory.quarantine_reason == ("secret_detected",)
    assert memory.ever_quarantined and memory.trust is Trust.OBSERVED
    (event,) = realm().events(memory_id=memory.id)
    assert event.kind == "quarantine"
    assert json.loads(event.payload or "")["reasons"] == ["secret_detected"]
    # what a review asks before it releases: the content still holds the secret
    (stored,) = realm().backend.read(lambda tx: tx.get_many([memory.id]))
    found = secrets.findings_of(stored, realm().settings.secrets)
    assert [(f.kind, f.field) for f in found] == [
        ("github_token", "description"),  # its first line stands for one
        ("github_token", "body"),
    ]


def test_every_reason_an_agents_write_is_held_is_recorded(realm: ServiceFactory) -> None:
    held = realm(principal="agent:ada", settings=Settings(llm_writes="quarantined"))
    memory = held.remember(f"the deploy token is {TOKEN}")
    assert memory.quarantine_reason == ("llm_writes", "secret_detected")


def test_an_agents_redacted_write_is_admitted_as_any_other(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    memory = ada.remember(f"the deploy token is {TOKEN}", redact=True)
    assert memory.status is Status.ACTIVE
    assert memory.body == "the deploy token is [redacted:github_token]"
    assert memory.metadata["redacted"] == ["github_token"]
    said_nowhere(realm(), TOKEN)


def test_an_agents_update_with_a_secret_is_held_and_leaves_the_old_in_force(
    realm: ServiceFactory,
) -> None:
    ada = realm(principal="agent:ada")
    old = ada.remember("the token lives in $DEPLOY_TOKEN")
    new = ada.update(old.id, f"the token is {TOKEN}")
    assert new.status is Status.QUARANTINED and new.quarantine_reason == ("secret_detected",)
    (kept,) = realm().backend.read(lambda tx: tx.get_many([old.id]))
    assert kept.status is Status.ACTIVE
    redacted = ada.update(old.id, f"the token is {TOKEN}", redact=True)
    assert redacted.status is Status.ACTIVE and TOKEN not in redacted.body


def test_an_agents_fact_with_a_secret_is_held_and_redact_writes_the_marker(
    realm: ServiceFactory,
) -> None:
    ada = realm(principal="agent:ada")
    change = ada.fact_write("ci", "token", TOKEN)
    assert change.fact.status is Status.QUARANTINED
    assert ada.fact_read("ci", "token") == []
    written = realm(principal="app:ci").fact_write("ci", "token", f"is {TOKEN}", redact=True)
    assert written.fact.value == "is [redacted:github_token]"


def test_a_proposal_with_a_secret_is_refused_for_anyone(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    before = store_state(realm())
    error = refused(lambda: ada.propose("use the CI token", evidence=f"seen: {TOKEN}"))
    assert error.details["findings"][0]["field"] == "evidence"
    assert "the proposal holds" in error.message
    assert store_state(realm()) == before and ada.list_proposals() == []
    proposal = ada.propose("use the CI token", body=TOKEN, evidence=KEY_ID, redact=True)
    assert (proposal.body, proposal.evidence) == (
        "[redacted:github_token]",
        "[redacted:aws_access_key]",
    )
    said_nowhere(realm(), TOKEN, KEY_ID)


def test_an_import_with_a_secret_is_refused_whole_naming_the_file(
    service: MemoryService, tmp_path: Path
) -> None:
    service.write("plain", description="a plain note", body="nothing to hide")
    service.write("ci", description="the CI token", body="it lives in $CI_TOKEN")
    service.export(tmp_path / "snap")
    path = tmp_path / "snap" / "ci.md"
    path.write_text(path.read_text().replace("$CI_TOKEN", TOKEN))
    fresh = service.acting_as("operator:other", realm="other")
    error = refused(lambda: fresh.import_(tmp_path / "snap"))
    assert error.details["file"] == str(path)
    assert error.details["findings"][0]["kind"] == "github_token"
    assert str(path) in error.message
    assert fresh.list_memories() == []


def test_a_configured_kind_is_refused_and_a_disabled_one_is_not(
    make_service: ServiceFactory,
) -> None:
    settings, problems = secrets.configured({"acme": "acme_[0-9a-f]{8}"}, ["github_token"])
    assert problems == []
    service = make_service(settings=Settings(secrets=settings))
    error = refused(lambda: service.write("x", description="acme id acme_0123abcd"))
    assert error.details["kinds"] == ["acme"]
    assert service.write("y", description="token", body=TOKEN).memory.body == TOKEN


def test_a_legacy_record_with_a_secret_is_skipped_and_reported(
    make_service: ServiceFactory, tmp_path: Path, store_url: str
) -> None:
    legacy = tmp_path / "legacy" / "default"
    legacy.mkdir(parents=True)
    (legacy / "ada.md").write_text(
        f"# Memory\n\n- the build needs node 20\n- the token is {TOKEN}\n", encoding="utf-8"
    )
    service = MemoryService(open_backend(store_url), legacy_dir=tmp_path / "legacy")
    try:
        report = service.legacy_import
        assert report is not None and report.imported == 1
        (problem,) = report.problems
        assert "github_token" in problem.reason and TOKEN not in problem.reason
        said_nowhere(service, TOKEN)
    finally:
        service.close()
