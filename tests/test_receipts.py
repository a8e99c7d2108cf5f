"""Receipts (issue 17): every applied write returns the receipt of its event — event id,
seq, time, principal, the row's content hash, the chain hash — signed with the store's
Ed25519 key when one is configured, and verifiable with the public key alone."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory

from retain import receipt, signing
from retain.chrono import ManualClock
from retain.config import Settings, load_settings
from retain.errors import ConfigInvalid, KeyInvalid, KeyMissing, SignatureInvalid
from retain.model import Event
from retain.receipt import Receipt
from retain.service import MemoryService

HELD = Settings(llm_writes="quarantined")
ADA = "agent:ada"


@pytest.fixture
def key() -> signing.Signer:
    return signing.generate()


@pytest.fixture
def signed(
    make_service: ServiceFactory, key: signing.Signer, monkeypatch: pytest.MonkeyPatch
) -> ServiceFactory:
    """Services over a store whose signing key is ``key`` (``$RETAIN_SIGNING_KEY``)."""
    monkeypatch.setenv(signing.ENV, key.private_text)
    return make_service


def event_of(service: MemoryService, seq: int) -> Event:
    (event,) = service.backend.read(lambda tx: [e for e in tx.iter_events() if e.seq == seq])
    return event


def assert_receipt_of_its_event(service: MemoryService, made: Receipt | None) -> Receipt:
    """``made`` is the receipt of an event of the log: the same id, seq, time, principal
    and hash."""
    assert made is not None
    event = event_of(service, made.seq)
    assert (made.event_id, made.kind, made.principal, made.chain_hash) == (
        event.event_id,
        event.kind,
        event.principal,
        event.hash,
    )
    assert (made.prev_hash, made.payload_digest, made.memory_id) == (
        event.prev_hash,
        event.payload_digest,
        event.memory_id,
    )
    return made


def test_every_write_of_the_shared_tiers_returns_its_receipt(service: MemoryService) -> None:
    written = service.write("deploy", description="Deploy rules", body="ship on fridays")
    made = assert_receipt_of_its_event(service, written.receipt)
    assert (made.kind, made.content_hash, made.principal) == (
        "create",
        written.memory.content_hash,
        "operator:test",
    )
    assert made.memory_id == written.memory.id and made.signature is None
    assert written.to_dict(service.clock.now())["receipt"] == made.to_dict()

    edited = service.edit("deploy", "fridays", "mondays")
    assert assert_receipt_of_its_event(service, edited.receipt).kind == "edit"
    assert edited.receipt is not None and edited.receipt.content_hash == edited.memory.content_hash
    assert edited.receipt.prev_hash == made.chain_hash  # the next link of the chain

    deleted = service.delete("deploy")
    assert assert_receipt_of_its_event(service, deleted.receipt).kind == "delete"
    assert deleted.to_dict()["receipt"]["content_hash"] is None  # no row was written


def test_a_write_that_changes_nothing_has_no_receipt(service: MemoryService) -> None:
    service.write("n", description="A note", body="b")
    again = service.write("n", description="A note", body="b")
    assert (again.changed, again.receipt) == (False, None)
    assert again.to_dict(service.clock.now())["receipt"] is None


def test_a_batch_gives_each_write_the_receipt_of_its_own_event(service: MemoryService) -> None:
    from retain.results import WriteRequest

    results = service.write_many(
        [WriteRequest("a", description="A", body="1"), WriteRequest("b", description="B")]
    )
    seqs = [assert_receipt_of_its_event(service, r.receipt).seq for r in results]
    assert seqs[1] == seqs[0] + 1
    assert [r.receipt.memory_id for r in results if r.receipt] == [r.memory.id for r in results]


def test_an_agents_own_verbs_return_receipts(make_service: ServiceFactory) -> None:
    make_service().add_agent("ada")
    ada = make_service(principal=ADA)
    kept = ada.remember("the build needs node 20")
    made = assert_receipt_of_its_event(ada, kept.receipt)
    assert (made.kind, made.principal, made.content_hash) == ("create", ADA, kept.content_hash)
    assert kept.to_dict(ada.clock.now())["receipt"] == made.to_dict()
    assert "receipt" not in event_of(ada, made.seq).payload  # type: ignore[operator]

    newer = ada.update(kept.id, "the build needs node 22")
    assert assert_receipt_of_its_event(ada, newer.receipt).memory_id == newer.id
    assert newer.receipt is not None and newer.receipt.content_hash == newer.content_hash

    proposal = ada.propose("Node 22 for the build")
    assert assert_receipt_of_its_event(ada, proposal.receipt).kind == "propose"
    assert proposal.to_dict()["receipt"]["principal"] == ADA
    operator = make_service(principal="operator:ann")
    assert "receipt" not in operator.get_ticket(proposal.id).to_dict()  # a read: none
    approved = operator.approve(proposal.id, reason="fine")
    assert assert_receipt_of_its_event(operator, approved.receipt).kind == "ticket_approve"
    other = ada.propose("Tabs, not spaces")
    rejected = operator.reject(other.id, reason="no")
    assert assert_receipt_of_its_event(operator, rejected.receipt).kind == "ticket_reject"


def test_facts_sessions_reviews_trust_and_grants_return_receipts(
    make_service: ServiceFactory,
) -> None:
    operator = make_service()
    operator.add_agent("ada")
    wrote = operator.fact_write("acct:42", "plan", "enterprise")
    assert assert_receipt_of_its_event(operator, wrote.receipt).kind == "create"
    assert wrote.to_dict("write")["receipt"]["memory_id"] == wrote.fact.id
    retracted = operator.fact_retract("acct:42", "plan", reason="wrong")
    assert assert_receipt_of_its_event(operator, retracted.receipt).kind == "retract"

    tainted = operator.observe("web_fetch", identity=ADA, session="s1")
    assert assert_receipt_of_its_event(operator, tainted.receipt).kind == "taint"
    again = operator.observe("web_fetch", identity=ADA, session="s1")
    assert again.receipt is None  # tainted already: no event
    reset = operator.reset_session(ADA, "s1")
    assert assert_receipt_of_its_event(operator, reset.receipt).principal == "operator:test"

    held = make_service(principal=ADA, settings=HELD).remember("use node 20")
    reviewed = operator.review(held.id, "release", held.content_hash, rationale="ok")
    made = assert_receipt_of_its_event(operator, reviewed.receipt)
    assert (made.kind, made.content_hash) == ("review", held.content_hash)
    assert reviewed.to_dict()["receipt"] == made.to_dict()

    note = operator.write("n", description="A note", body="x").memory
    moved = operator.retier(note.id, "observed", reason="not checked")
    assert assert_receipt_of_its_event(operator, moved.receipt).kind == "retier"

    granted = operator.grant("agent:ada", "memory.read", "scope:global")
    assert assert_receipt_of_its_event(operator, granted.receipt).kind == "grant"
    assert granted.to_dict()["receipt"]["kind"] == "grant"
    assert "receipt" not in operator.list_grants()[0].to_dict()
    revoked = operator.revoke("agent:ada", "memory.read", "scope:global")
    assert assert_receipt_of_its_event(operator, revoked.receipt).kind == "revoke"


def test_with_a_signing_key_receipts_verify_with_the_public_key_alone(
    signed: ServiceFactory, key: signing.Signer
) -> None:
    service = signed()
    made = service.write("n", description="A note", body="x").receipt
    assert made is not None and made.key_id == key.key_id and made.signature
    text = json.dumps(made.to_dict())
    public = signing.public_key(key.public.text, "the test")
    assert receipt.verify(Receipt.from_dict(json.loads(text)), public) == made
    # the whole result, as a door prints it, holds the receipt that verifies
    result = service.write("m", description="Another", body="y").to_dict(service.clock.now())
    assert receipt.verify(Receipt.from_dict(result), public).seq == made.seq + 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"content_hash": "0" * 64}, "signature"),
        ({"principal": "operator:mallory"}, "chain_hash"),
        ({"signature": None}, "unsigned"),
        ({"key_id": "0123456789abcdef"}, "other_key"),
    ],
)
def test_a_changed_receipt_does_not_verify(
    signed: ServiceFactory, key: signing.Signer, change: dict[str, object], reason: str
) -> None:
    made = signed().write("n", description="A note", body="x").receipt
    assert made is not None
    forged = replace(made, **change)  # type: ignore[arg-type]
    with pytest.raises(SignatureInvalid) as caught:
        receipt.verify(forged, key.public)
    assert caught.value.details["reason"] == reason


def test_a_receipt_signed_by_another_key_does_not_verify(signed: ServiceFactory) -> None:
    made = signed().write("n", description="A note", body="x").receipt
    assert made is not None
    with pytest.raises(SignatureInvalid) as caught:
        receipt.verify(made, signing.generate().public)
    assert caught.value.details["reason"] == "other_key"


def test_a_malformed_receipt_is_refused_by_name() -> None:
    with pytest.raises(SignatureInvalid) as caught:
        Receipt.from_dict({"event_id": "x"})
    assert caught.value.details["reason"] == "malformed"
    with pytest.raises(SignatureInvalid):
        Receipt.from_dict([1, 2])


def test_verify_checks_every_signature_and_signs_the_head(
    signed: ServiceFactory, key: signing.Signer
) -> None:
    service = signed()
    service.write("n", description="A note", body="x")
    report = service.verify()
    assert report.signed_events == report.events == report.head_seq == 2  # realm_add, create
    assert report.key_id == key.key_id and report.head_signature is not None
    message = signing.head_message(report.head_seq, report.head_hash)
    assert key.public.verifies(message, report.head_signature)
    assert report.to_dict()["head"]["signature"] == report.head_signature


def test_a_store_without_a_key_signs_nothing_and_loads_no_signing_key(
    service: MemoryService,
) -> None:
    made = service.write("n", description="A note", body="x").receipt
    assert made is not None and (made.signature, made.key_id) == (None, None)
    report = service.verify()
    assert (report.signed_events, report.key_id, report.head_signature) == (0, None, None)
    assert service.backend.read(lambda tx: list(tx.iter_signatures())) == []
    with pytest.raises(KeyMissing):
        signing.require(service.store.signer)


def test_a_key_file_named_in_config_signs(tmp_path: Path, key: signing.Signer) -> None:
    (tmp_path / "signing.key").write_text(key.private_text + "\n")
    (tmp_path / "config.toml").write_text('[signing]\nkey_file = "signing.key"\n')
    settings = load_settings(tmp_path)
    assert settings.signing_key_file == str((tmp_path / "signing.key").resolve())
    loaded = signing.load(settings.signing_key_file, environ={})
    assert loaded is not None and loaded.key_id == key.key_id


def test_a_pem_key_is_read_too(key: signing.Signer) -> None:
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    private = signing.private_key(key.private_text, "k")._key
    pem = private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    assert signing.private_key(pem, "a file").key_id == key.key_id
    public_pem = private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    assert signing.public_key(public_pem.decode(), "a file").key_id == key.key_id


def test_a_key_that_is_not_one_is_refused_without_its_value(tmp_path: Path) -> None:
    secret = base64.b64encode(b"x" * 31).decode()
    with pytest.raises(KeyInvalid) as caught:
        signing.load("", environ={signing.ENV: secret})
    assert (
        secret not in str(caught.value) and caught.value.details["where"] == "$RETAIN_SIGNING_KEY"
    )
    with pytest.raises(KeyInvalid):
        signing.public_key("not a key", "--public-key")
    with pytest.raises(KeyInvalid):
        signing.load(str(tmp_path / "missing.key"), environ={})
    (tmp_path / "config.toml").write_text("[signing]\nkey_file = 3\n")
    with pytest.raises(ConfigInvalid):
        load_settings(tmp_path)
    (tmp_path / "config.toml").write_text('[signing]\nkeyfile = "k"\n')
    with pytest.raises(ConfigInvalid) as unknown:
        load_settings(tmp_path)
    assert unknown.value.details["did_you_mean"] == "key_file"


def test_a_key_that_cannot_be_read_refuses_every_write(
    make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import store_state

    before = make_service()
    state = store_state(before)
    monkeypatch.setenv(signing.ENV, "not a key")
    broken = make_service()
    with pytest.raises(KeyInvalid):
        broken.write("n", description="A note")
    assert store_state(broken) == state  # nothing written, not even unsigned


def test_each_expired_ticket_has_the_receipt_of_its_own_event(
    make_service: ServiceFactory, clock: ManualClock
) -> None:
    operator = make_service()
    operator.add_agent("ada")
    ada = make_service(principal=ADA)
    first, second = ada.propose("Tabs, not spaces"), ada.propose("Node 22 for the build")
    clock.advance(days=8)
    expired = operator.expire_tickets()
    assert [t.id for t in expired] == sorted([first.id, second.id])
    made = [assert_receipt_of_its_event(operator, t.receipt) for t in expired]
    assert [r.kind for r in made] == ["ticket_expire", "ticket_expire"]
    assert made[1].seq == made[0].seq + 1
