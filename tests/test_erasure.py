"""Erasure (issue 17): ``forget`` takes a value out of every row, event, index and file
of the store, keeps a digest, and gives a certificate. The marker tests write a unique
marker through every path that stores text, forget the item, and look for the marker's
bytes in every file of the store's directory (SQLite, write-ahead log included) or in
every row of every table (PostgreSQL). Every test runs on both backends."""

from __future__ import annotations

import hashlib
import hmac
import uuid

import pytest
from tests.conftest import ServiceFactory, raw_sql

from retain import errors
from retain.config import Settings
from retain.model import Memory, Status
from retain.service import MemoryService
from retain.service.erasure import Certificate
from retain.storage.sqlite import SqliteBackend

HELD = Settings(llm_writes="quarantined")


def marker() -> str:
    return f"zqx{uuid.uuid4().hex[:16]}mark"


def holding(service: MemoryService, text: str) -> list[str]:
    """Where ``text``'s bytes still are: the files under the SQLite store's directory,
    or the PostgreSQL tables one of whose rows holds it (checked here, not by retain)."""
    backend = service.backend
    if isinstance(backend, SqliteBackend):
        root = backend.path.parent
        return [
            p.name
            for p in sorted(root.rglob("*"))
            if p.is_file() and text.encode() in p.read_bytes()
        ]  # noqa: E501
    tables = [
        r[0]
        for r in raw_sql(
            service, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
    ]  # noqa: E501
    return [
        t for t in tables
        if raw_sql(service, f'SELECT count(*) FROM "{t}" x WHERE strpos(x::text, ?) > 0', (text,))[0][0]  # noqa: E501
    ]  # fmt: skip


@pytest.fixture
def realm(make_service: ServiceFactory) -> ServiceFactory:
    operator = make_service()
    operator.add_agent("ada")
    operator.add_team("ops")
    operator.join_team("ops", "ada")
    return make_service


def gone(service: MemoryService, cert: Certificate, *markers: str) -> None:
    """Every marker is nowhere in the store, the certificate says so, the chain holds."""
    for text in markers:
        assert holding(service, text) == [], text
    assert cert.places["memories"] == "verified"
    assert cert.places["events"] == "verified"
    assert cert.places["store_files"] == "verified"
    assert (service if service.identity is None else service.acting_as("operator:test")).verify().ok


# -- the marker, through every path that stores text ----------------------------------------


def test_a_note_s_every_field_and_an_edit_s_old_text_are_erased(realm: ServiceFactory) -> None:
    svc = realm()
    body, old, desc, tag, source = marker(), marker(), marker(), marker(), marker()
    svc.write("deploy", description=f"about {desc} here", body=f"the {old} text", tags=[tag],
              source=f"https://example.org/{source}")  # fmt: skip
    svc.edit("deploy", old, body)  # the old text stays in the create event
    assert holding(svc, old)
    cert = svc.forget("deploy", reason="asked to")
    gone(svc, cert, body, old, desc, tag, source)
    assert cert.kind == "memory" and cert.digest.kind.value == "sha256"
    stored = svc.backend.read(lambda tx: tx.get_many([cert.target]))[0]
    assert stored.status is Status.FORGOTTEN and stored.body == "" and stored.name is None
    assert not svc.search(["text"]).hits


def test_a_deleted_note_is_erased_from_its_history(realm: ServiceFactory) -> None:
    svc = realm()
    text = marker()
    written = svc.write("plan", description="the plan", body=f"launch {text}")
    svc.delete("plan")
    assert holding(svc, text)  # a delete keeps history
    cert = svc.forget(written.memory.id)
    gone(svc, cert, text)


def test_a_fact_value_and_a_retracted_one_are_erased(realm: ServiceFactory) -> None:
    svc = realm()
    first, second = marker(), marker()
    one = svc.fact_write("bob", "employer", first).fact
    svc.fact_write("bob", "employer", second)
    svc.fact_retract("bob", "employer")  # second retracted: first believed again
    cert = svc.forget(one.id)
    assert cert.kind == "fact" and (cert.subject, cert.predicate) == ("bob", "employer")
    history = svc.fact_history("bob", "employer")
    assert [f.value for f in history] == [second]
    retracted = history[0].id
    gone(svc, svc.forget(retracted), first, second)


def test_forgetting_the_current_fact_believes_the_one_it_superseded(
    realm: ServiceFactory,
) -> None:
    svc = realm()
    svc.fact_write("bob", "city", "Lyon")
    current = svc.fact_write("bob", "city", marker()).fact
    cert = svc.forget(current.id)
    assert cert.reinstated is not None
    assert [f.value for f in svc.fact_read("bob", "city")] == ["Lyon"]


def test_an_agent_s_memory_and_its_update_are_erased(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    before, after = marker(), marker()
    first = ada.remember(f"remember {before}")
    newer = ada.update(first.id, f"now {after}")
    cert = ada.forget(newer.id, reason="mine")
    assert holding(ada, after) == []
    assert holding(ada, before)  # an earlier version is a value of its own
    gone(ada, ada.forget(first.id), before, after)
    assert cert.principal == "agent:ada"


def test_an_agent_forgets_only_its_own(realm: ServiceFactory) -> None:
    svc = realm()
    shared = svc.write("rules", description="the rules", body="be kind").memory
    ada = realm(principal="agent:ada")
    with pytest.raises(errors.AccessDenied):  # one it sees but did not remember
        ada.forget(shared.id)
    svc.add_agent("bo")
    theirs = realm(principal="agent:bo").remember("bo's own")
    head = svc.status().chain_head
    with pytest.raises(errors.NotFound):  # another agent's: not disclosed
        ada.forget(theirs.id)
    assert svc.status().chain_head == head


def test_a_proposal_and_the_memory_it_landed_are_erased(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    summary, body = marker(), marker()
    ticket = ada.propose(f"use {summary}", target="team:ops", body=f"details {body}")
    landed = realm().approve(ticket.id, reason="fine")
    assert landed.landed
    cert = realm().forget(landed.landed)
    assert ticket.id in cert.erased and cert.places["tickets"] == "verified"
    gone(realm(), cert, summary, body)


def test_an_open_proposal_is_erased_by_its_ticket_id(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    summary = marker()
    ticket = ada.propose(f"use {summary}", target="team:ops")
    cert = realm().forget(ticket.id)
    assert cert.kind == "ticket" and cert.scope == "team:ops"
    gone(realm(), cert, summary)
    with pytest.raises(errors.AlreadyForgotten):
        realm().forget(ticket.id)


def test_a_released_record_and_its_origin_are_erased(realm: ServiceFactory) -> None:
    text = marker()
    held: Memory = realm(principal="agent:ada", settings=HELD).remember(f"node {text}")
    review = realm(settings=HELD).review(
        held.id, "release", expected_content_hash=held.content_hash
    )
    successor = review.successor
    assert successor is not None
    cert = realm().forget(successor.id)
    assert held.id in cert.erased
    gone(realm(), cert, text)


# -- digests, certificates, refusals ----------------------------------------------------------


def test_digest_kinds(realm: ServiceFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    svc = realm()
    plain = svc.write("a", description="a", body="alpha").memory
    assert svc.forget(plain.id).digest.value == hashlib.sha256(b"alpha").hexdigest()
    monkeypatch.setenv("RETAIN_FORGET_KEY", "k3y")
    keyed = svc.write("b", description="b", body="beta").memory
    cert = svc.forget(keyed.id)
    assert cert.digest.kind.value == "hmac-sha256"
    assert cert.digest.value == hmac.new(b"k3y", b"beta", hashlib.sha256).hexdigest()
    none = svc.write("c", description="c", body=marker()).memory
    cert = svc.forget(none.id, keep_digest=False)
    assert (cert.digest.value, cert.digest.kind.value) == (None, "none")
    stored = svc.backend.read(lambda tx: tx.get_many([none.id]))[0]
    assert stored.content_hash == ""


def test_the_certificate_is_an_event_fetched_again(realm: ServiceFactory) -> None:
    svc = realm()
    made = svc.write("x", description="x", body=marker()).memory
    cert = svc.forget(made.id, reason="gdpr request 7")
    again = svc.certificate(made.id)
    assert again.to_dict() == svc.certificate(cert.event_id).to_dict()
    assert (again.event_id, again.reason, again.principal) == (
        cert.event_id, "gdpr request 7", "operator:test",
    )  # fmt: skip
    assert again.places == cert.places and again.verified_at is not None
    kinds = [e.kind for e in svc.events(memory_id=made.id)]
    assert kinds[-2:] == ["forget", "forget_verify"]


def test_without_compaction_the_files_are_unverified(realm: ServiceFactory) -> None:
    svc = realm()
    made = svc.write("x", description="x", body=marker()).memory
    cert = svc.forget(made.id, compact=False)
    assert cert.places["store_files"] == "unverified"
    assert cert.places["full_text"] == "still_indexed"
    done = svc.compact()
    assert done["complete"]


def test_a_second_forget_is_refused_and_writes_nothing(realm: ServiceFactory) -> None:
    svc = realm()
    made = svc.write("x", description="x", body="y").memory
    cert = svc.forget(made.id)
    head = svc.status().chain_head
    with pytest.raises(errors.AlreadyForgotten) as caught:
        svc.forget(made.id)
    assert caught.value.details["certificate"] == cert.event_id
    assert svc.status().chain_head == head


def test_the_chain_still_verifies_and_payloads_carry_the_mark(realm: ServiceFactory) -> None:
    svc = realm()
    made = svc.write("x", description="x", body=marker()).memory
    cert = svc.forget(made.id)
    assert cert.erased_events
    report = svc.verify()
    assert report.ok


def test_forget_name_is_cleared_for_reuse(realm: ServiceFactory) -> None:
    svc = realm()
    svc.write("deploy", description="one", body="first")
    svc.forget("deploy")
    again = svc.write("deploy", description="two", body="second")
    assert again.memory.body == "second"


def test_marker_absent_from_the_store_directory_after_many(realm: ServiceFactory) -> None:
    svc = realm()
    text = marker()
    for i in range(30):
        svc.write(f"n{i}", description=f"note {i}", body=f"filler {i} " * 40)
    made = svc.write("secret-note", description="d", body=f"{text} " * 50).memory
    cert = svc.forget(made.id)
    assert holding(svc, text) == [] and cert.places["store_files"] == "verified"


def test_a_replaced_body_is_erased_from_the_history(realm: ServiceFactory) -> None:
    svc = realm()
    first, second = marker(), marker()
    svc.write("plan", description="the plan", body=f"v1 {first}")
    svc.write("plan", body=f"v2 {second}")  # the create event keeps v1
    gone(svc, svc.forget("plan"), first, second)


def test_copies_beyond_the_actor_s_reach_are_kept_and_named(realm: ServiceFactory) -> None:
    ada = realm(principal="agent:ada")
    text = marker()
    own = ada.remember(f"tip {text}")
    ticket = ada.propose("a tip for the team", target="team:ops", record=own.id)
    landed = realm().approve(ticket.id).landed
    assert landed is not None
    cert = ada.forget(own.id)
    assert cert.copies_kept == (landed,)  # the team's memory is not the agent's to erase
    assert ticket.id in cert.erased
    team_copy = realm().backend.read(lambda tx: tx.get_many([landed]))[0]
    assert text in team_copy.body and team_copy.status is Status.ACTIVE
    assert cert.places["store_files"] == "verified"  # what it erased, it erased


def test_text_with_quotes_and_newlines_is_erased_as_stored(realm: ServiceFactory) -> None:
    svc = realm()
    text = marker()
    made = svc.write("odd", description="odd", body=f'line one "{text}"\nline two {text}\\end')
    cert = svc.forget(made.memory.id)
    gone(svc, cert, text)
    assert holding(svc, '\\"' + text) == []


def test_a_target_that_is_neither_an_id_nor_a_name_is_not_found(realm: ServiceFactory) -> None:
    svc = realm()
    head = svc.status().chain_head
    with pytest.raises(errors.NotFound):
        svc.forget(":no such thing")
    with pytest.raises(errors.InvalidValue):
        svc.forget("   ")
    assert svc.status().chain_head == head


def test_a_memory_without_a_body_keeps_the_digest_of_its_description(
    realm: ServiceFactory,
) -> None:
    svc = realm()
    made = svc.write("line", description="only a line").memory
    assert svc.forget(made.id).digest.value == hashlib.sha256(b"only a line").hexdigest()
