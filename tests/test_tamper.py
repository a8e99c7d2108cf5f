"""Tamper evidence (issue 17): ``verify`` re-walks the chain and the signatures and names
the first broken link by its seq, when an event's payload, hash or signature is changed
in the database behind retain's back; and an erased event (``docs/receipts.md``) passes
only with a later ``forget`` certificate that lists it."""

from __future__ import annotations

import json

import pytest
from tests.conftest import ServiceFactory, failed_verify, raw_sql

from retain import ledger, signing
from retain.errors import IntegrityFailed
from retain.model import Event
from retain.service import MemoryService
from retain.storage.base import Transaction
from retain.storage.postgres import PostgresBackend


def events(service: MemoryService) -> list[Event]:
    return service.backend.read(lambda tx: list(tx.iter_events()))


def a_log(service: MemoryService) -> list[Event]:
    """A store of a few writes: realm_add (1), then a create, an edit and two creates."""
    service.write("a", description="Alpha", body="the alpha plan")
    service.edit("a", "alpha plan", "alpha plan, revised")
    service.write("b", description="Beta", body="the beta plan")
    service.write("c", description="Gamma", body="the gamma plan")
    return events(service)


def unguard(service: MemoryService, table: str = "events") -> None:
    """Drop the triggers that refuse changing ``table``'s rows (as a tamperer would)."""
    if isinstance(service.backend, PostgresBackend):
        raw_sql(service, f"ALTER TABLE {table} DISABLE TRIGGER USER")
        return
    names = raw_sql(
        service, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", [table]
    )
    for (name,) in names:
        raw_sql(service, f"DROP TRIGGER {name}")


def broken_at(service: MemoryService) -> int | None:
    with pytest.raises(IntegrityFailed) as caught:
        service.verify()
    report = caught.value.report
    assert report is not None and report.to_dict()["broken_at"] == report.broken_at
    assert caught.value.details["broken_at"] == report.broken_at
    return report.broken_at


def test_a_payload_edited_in_the_database_breaks_the_chain_at_its_seq(
    service: MemoryService,
) -> None:
    log = a_log(service)
    assert service.verify().broken_at is None
    raw_sql(service, "UPDATE events SET payload = replace(payload, 'beta', 'omega') WHERE seq = 4")
    assert broken_at(service) == 4 == log[3].seq
    report = failed_verify(service)
    assert report.problems == ("event chain broken: event 4 payload does not match its digest",)
    assert report.head_seq == 3  # the last event that checked


def test_a_hash_edited_in_the_database_breaks_the_chain_at_its_seq(
    service: MemoryService,
) -> None:
    a_log(service)
    unguard(service)
    raw_sql(service, "UPDATE events SET hash = ? WHERE seq = 3", ["f" * 64])
    assert broken_at(service) == 3
    assert failed_verify(service).problems == ("event chain broken: event 3 hash does not match",)


def test_a_rewritten_tail_with_hashes_made_again_is_caught_by_its_signatures(
    make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone who can write the database but holds no key recomputes every hash after
    the event they changed: the chain links, and the signature of that event fails."""
    key = signing.generate()
    monkeypatch.setenv(signing.ENV, key.private_text)
    service = make_service()
    log = a_log(service)
    assert service.verify().signed_events == len(log)
    unguard(service)
    prev = log[2].hash
    for event in log[3:]:  # event 4 on: a new payload, every hash after made again
        payload = event.payload if event.seq != 4 else event.payload.replace("beta", "omega")  # type: ignore[union-attr]
        digest = ledger.digest(payload or "")
        forged = ledger.event_hash(
            prev_hash=prev, seq=event.seq, event_id=event.event_id, realm=event.realm,
            memory_id=event.memory_id, kind=event.kind,
            tx_time=event.to_dict()["tx_time"], principal=event.principal,
            reason=event.reason, payload_digest=digest,
        )  # fmt: skip
        raw_sql(
            service,
            "UPDATE events SET payload = ?, payload_digest = ?, prev_hash = ?, hash = ? "
            "WHERE seq = ?",
            [payload, digest, prev, forged, event.seq],
        )
        prev = forged
    assert ledger.check_chain(events(service)).ok  # the chain alone is fooled
    assert broken_at(service) == 4
    assert "event 4 signature does not hold" in failed_verify(service).problems[0]


def test_a_signature_removed_after_signing_began_breaks_the_chain_at_its_seq(
    make_service: ServiceFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(signing.ENV, signing.generate().private_text)
    service = make_service()
    a_log(service)
    unguard(service, "event_signatures")
    raw_sql(service, "DELETE FROM event_signatures WHERE seq = 5")
    assert broken_at(service) == 5
    assert (
        "event 5 is not signed, though event 1 before it is" in failed_verify(service).problems[0]
    )


# -- erased events: the contract the erasure slice writes to -----------------------------


def certify(service: MemoryService, erased: list[int], *, kind: str = "forget") -> Event:
    """Append a ``forget`` certificate listing ``erased`` through the storage layer."""

    def run(tx: Transaction) -> Event:
        seq, head = tx.chain_head()
        last = tx.last_tx_time()
        assert last is not None
        sealed = ledger.seal(
            prev_seq=seq, prev_hash=head, event_id=f"cert-{seq + 1}", realm="default",
            memory_id=None, kind=kind, tx_time=last, principal="operator:test",
            reason="asked to", payload={"erased_events": erased, "digest_kind": "sha256"},
        )  # fmt: skip
        tx.append_event(sealed)
        return sealed

    return service.backend.write(run)


def erase(service: MemoryService, seq: int, by: list[str]) -> None:
    """Rewrite event ``seq``'s payload as an erasure does: its values blanked, and the
    certificates that rewrote it in ``"erased"``."""
    (event,) = [e for e in events(service) if e.seq == seq]
    payload = json.loads(event.payload or "{}")
    payload["body"] = ""
    payload["erased"] = by
    raw_sql(
        service, "UPDATE events SET payload = ? WHERE seq = ?", [ledger.canonical(payload), seq]
    )


def test_an_erased_payload_with_its_certificate_still_verifies(service: MemoryService) -> None:
    a_log(service)
    cert = certify(service, [2, 3])
    erase(service, 2, [cert.event_id])
    erase(service, 3, [cert.event_id])
    report = service.verify()
    assert (report.ok, report.erased_events, report.broken_at) == (True, 2, None)
    # a second erasure that touched it again: both certificates listed, in order
    second = certify(service, [3])
    erase(service, 3, [cert.event_id, second.event_id])
    assert service.verify().erased_events == 2


def test_an_erased_marker_without_a_certificate_fails_at_its_seq(service: MemoryService) -> None:
    a_log(service)
    erase(service, 4, ["no-such-event"])
    assert broken_at(service) == 4
    assert (
        "the erasure no-such-event it names is not a later forget event"
        in (failed_verify(service).problems[0])
    )


def test_a_certificate_that_does_not_list_the_seq_fails_at_the_erased_seq(
    service: MemoryService,
) -> None:
    a_log(service)
    cert = certify(service, [2])
    erase(service, 4, [cert.event_id])
    assert broken_at(service) == 4
    assert (
        f"the erasure {cert.event_id} it names does not list it"
        in (failed_verify(service).problems[0])
    )


def test_an_erasure_must_name_a_later_forget_event(service: MemoryService) -> None:
    log = a_log(service)
    erase(service, 4, [log[1].event_id])  # an event before it: never a certificate
    assert broken_at(service) == 4
    other = certify(service, [3], kind="hold")  # a later event, of another kind
    erase(service, 3, [other.event_id])
    assert broken_at(service) == 3  # the first broken link, whichever is found first


def test_an_erased_event_whose_certificate_never_comes_fails_before_a_later_break(
    service: MemoryService,
) -> None:
    a_log(service)
    erase(service, 2, ["cert-later"])
    unguard(service)
    raw_sql(service, "UPDATE events SET hash = ? WHERE seq = 4", ["0" * 64])
    assert broken_at(service) == 2
