"""Tickets: the seed's fields, the curator's decisions, expiry by the clock (lazy and
swept), ``ticket_closed``, the landing (derived from the ticket, at its trust, by its
proposer), the policy gate's second approver, and who may decide. Every test runs on
SQLite and PostgreSQL through ``make_service``."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from tests.conftest import ServiceFactory, open_backend, raw_sql, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.config import Settings, load_settings
from retain.model import Proposal, Trust
from retain.service import MemoryService, ticket

GATED_GLOBAL = Settings(gate=(("global", "second_approver"),))


@pytest.fixture
def team(make_service: ServiceFactory) -> dict[str, MemoryService]:
    """An operator, agent ada in team ops, and agent bea in none."""
    operator = make_service()
    operator.add_agent("ada")
    operator.add_agent("bea")
    operator.add_team("ops")
    operator.join_team("ops", "ada")
    return {"operator": operator, "ada": make_service(principal="agent:ada")}


def gated(make_service: ServiceFactory, principal: str = "operator:test") -> MemoryService:
    return make_service(settings=GATED_GLOBAL, principal=principal)


def kinds(service: MemoryService) -> list[str]:
    return [e.kind for e in service.events(limit=1000)]


def payload(service: MemoryService, kind: str) -> dict[str, object]:
    (event,) = [e for e in service.events(limit=1000) if e.kind == kind]
    assert event.payload is not None
    loaded = json.loads(event.payload)
    assert isinstance(loaded, dict)
    return loaded


# -- the ticket -----------------------------------------------------------------------------


def test_a_proposal_is_a_ticket_with_the_seeds_fields(
    team: dict[str, MemoryService], clock: ManualClock
) -> None:
    made = team["ada"].propose(
        "Deploys freeze on Fridays", target="team:ops", body="No deploy after noon.",
        evidence="incident 42",
    )  # fmt: skip
    assert (made.source, made.target, made.trust, made.summary, made.evidence) == (
        "agent:ada", "team:ops", Trust.OBSERVED, "Deploys freeze on Fridays", "incident 42",
    )  # fmt: skip
    assert (made.action, made.status, made.record, made.tainted) == ("add", "open", None, False)
    assert made.expires_at == made.created_at + timedelta(days=7)
    assert (made.approvals, made.decided_by, made.decided_at, made.landed) == ((), None, None, None)
    assert team["operator"].get_ticket(made.id) == made
    assert team["operator"].list_tickets() == [made]
    assert made.created_at >= clock.now()


def test_the_expiry_is_configured(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("ada")
    hourly = make_service(settings=Settings(ticket_expire_after=timedelta(hours=1)))
    made = hourly.acting_as("agent:ada").propose("Tea at four")
    assert made.expires_at == made.created_at + timedelta(hours=1)


def test_a_ticket_not_in_the_realm_is_not_found(team: dict[str, MemoryService]) -> None:
    with pytest.raises(errors.NotFound) as caught:
        team["operator"].get_ticket("no-such-ticket")
    assert caught.value.details == {"ticket": "no-such-ticket"}
    with pytest.raises(errors.NotFound):
        team["operator"].approve("no-such-ticket")


def test_list_tickets_filters_by_status_target_and_record(
    team: dict[str, MemoryService],
) -> None:
    ada, operator = team["ada"], team["operator"]
    own = ada.remember("the build cache lives in /var/cache/ci")
    to_team = ada.propose("Cache location", target="team:ops", record=own.id)
    to_all = ada.propose("Use UTC in logs")
    operator.reject(to_all.id)
    assert [t.id for t in operator.list_tickets(status="open")] == [to_team.id]
    assert [t.id for t in operator.list_tickets(status="rejected")] == [to_all.id]
    assert [t.id for t in operator.list_tickets(target="global")] == [to_all.id]
    assert [t.id for t in operator.list_tickets(record=own.id)] == [to_team.id]
    assert operator.list_tickets(status="approved") == []


# -- landing ----------------------------------------------------------------------------


def test_an_approval_lands_one_memory_by_the_proposer_at_the_tickets_trust(
    team: dict[str, MemoryService],
) -> None:
    ada, operator = team["ada"], team["operator"]
    made = ada.propose("Freeze on Fridays", target="team:ops", body="No deploys on Fridays.")
    approved = operator.approve(made.id, reason="agreed at standup")
    assert (approved.status, approved.decided_by, approved.decision_reason) == (
        "approved", "operator:test", "agreed at standup",
    )  # fmt: skip
    assert [a.by for a in approved.approvals] == ["operator:test"]
    assert approved.decided_at is not None and approved.landed is not None
    (landed,) = operator.list_memories()
    assert landed.id == approved.landed
    assert (landed.scope, landed.author, landed.trust, landed.status.value) == (
        "team:ops", "agent:ada", Trust.OBSERVED, "active",
    )  # fmt: skip
    assert (landed.description, landed.body) == ("Freeze on Fridays", "No deploys on Fridays.")
    assert landed.derived_from == made.id
    assert landed.metadata == {"ticket": made.id, "proposer_tainted": False}
    assert operator.get_ticket(made.id) == approved
    assert kinds(operator)[-3:] == ["propose", "create", "ticket_approve"]
    assert payload(operator, "ticket_approve")["landed"] == landed.id
    # the agent recalls it from its team's scope
    assert [h.memory.id for h in ada.recall("Fridays").hits] == [landed.id]


def test_a_landing_carries_the_proposers_taint(team: dict[str, MemoryService]) -> None:
    """``tainted`` is filled from the proposer's session (the taint slice); the landing
    records it whatever it is."""
    operator = team["operator"]
    made = team["ada"].propose("Rotate keys monthly")
    raw_sql(operator, "UPDATE proposals SET tainted = ? WHERE id = ?", (True, made.id))
    assert operator.get_ticket(made.id).tainted is True
    landed = operator.approve(made.id).landed
    (memory,) = operator.list_memories()
    assert memory.id == landed and memory.metadata["proposer_tainted"] is True


def test_a_promotion_lands_the_record_and_never_above_its_trust(
    team: dict[str, MemoryService],
) -> None:
    ada, operator = team["ada"], team["operator"]
    own = ada.remember("the staging host is stg-3")
    made = ada.propose("Staging host", target="team:ops", record=own.id)
    assert (made.action, made.record, made.body) == ("promote", own.id, own.body)
    raw_sql(operator, "UPDATE memories SET trust = 'claimed' WHERE id = ?", (own.id,))
    operator.approve(made.id)
    (landed,) = [m for m in operator.list_memories() if m.scope == "team:ops"]
    assert landed.trust is Trust.CLAIMED  # the record's, lower than the ticket's label
    assert landed.metadata["promoted_from"] == own.id


def test_a_promotion_names_an_own_active_memory(team: dict[str, MemoryService]) -> None:
    ada = team["ada"]
    theirs = team["operator"].acting_as("agent:bea").remember("bea's own")
    shared = team["operator"].write("g", description="a global note").memory
    for record in (theirs.id, shared.id, "no-such-memory"):
        with pytest.raises(errors.NotFound):
            ada.propose("promote it", record=record)
    gone = ada.remember("soon forgotten")
    ada.forget(gone.id)
    with pytest.raises(errors.NotFound):
        ada.propose("promote it", record=gone.id)
    assert team["operator"].list_tickets() == []


def test_a_landing_passes_admission_and_a_refusal_leaves_the_ticket_to_reject(
    team: dict[str, MemoryService], make_service: ServiceFactory
) -> None:
    """Admission screens a landing as any row: a ticket whose text a detector added
    since it was proposed now finds is refused (``secret_detected``), the approval rolls
    back, and the ticket can then only be rejected."""
    from retain.governance import secrets

    made = team["ada"].propose("The vault key", body="the vault key is vk_live_0123456789abcdef")
    added, problems = secrets.configured({"vault_key": r"vk_live_[0-9a-f]{16}"}, [])
    assert not problems
    operator = make_service(settings=Settings(secrets=added))
    before = store_state(operator)
    with pytest.raises(errors.SecretDetected) as refused:
        operator.approve(made.id)
    assert [f["kind"] for f in refused.value.details["findings"]] == ["vault_key"]
    assert store_state(operator) == before
    assert operator.get_ticket(made.id).status == "open"
    assert operator.reject(made.id, reason="it holds a secret").status == "rejected"


def test_an_approved_landing_is_not_held_by_the_agents_write_posture(
    make_service: ServiceFactory,
) -> None:
    """Under ``llm_writes = "quarantined"`` an agent's own writes wait for review; the
    memory an operator's approval lands does not (the approval is that review), and a
    held record is no promotion's to name."""
    held = Settings(llm_writes="quarantined")
    operator = make_service(settings=held)
    operator.add_agent("ada")
    ada = make_service(settings=held, principal="agent:ada")
    own = ada.remember("the staging host is stg-3")
    assert own.status.value == "quarantined"
    with pytest.raises(errors.NotFound):
        ada.propose("Staging host", record=own.id)
    made = ada.propose("Staging host", body="stg-3")
    landed = operator.approve(made.id).landed
    (memory,) = [m for m in operator.list_memories() if m.id == landed]
    assert (memory.status.value, memory.ever_quarantined) == ("active", False)


# -- rejecting and closed tickets ----------------------------------------------------------


def test_a_rejection_lands_nothing(team: dict[str, MemoryService]) -> None:
    operator = team["operator"]
    made = team["ada"].propose("Use tabs")
    rejected = operator.reject(made.id, reason="we use spaces")
    assert (rejected.status, rejected.decided_by, rejected.decision_reason, rejected.landed) == (
        "rejected", "operator:test", "we use spaces", None,
    )  # fmt: skip
    assert operator.list_memories() == []
    assert kinds(operator)[-1] == "ticket_reject"
    (event,) = [e for e in operator.events() if e.kind == "ticket_reject"]
    assert event.reason == "we use spaces"


@pytest.mark.parametrize("first", ["approve", "reject"])
@pytest.mark.parametrize("then", ["approve", "reject"])
def test_a_decided_ticket_is_closed(team: dict[str, MemoryService], first: str, then: str) -> None:
    operator = team["operator"]
    made = team["ada"].propose("Use tabs")
    getattr(operator, first)(made.id)
    before = store_state(operator)
    with pytest.raises(errors.TicketClosed) as caught:
        getattr(operator.acting_as("steward"), then)(made.id)
    status = {"approve": "approved", "reject": "rejected"}[first]
    assert caught.value.code == "ticket_closed"
    assert caught.value.details == {"ticket": made.id, "status": status}
    assert store_state(operator) == before


# -- expiry -----------------------------------------------------------------------------


def test_a_ticket_past_its_expiry_reads_expired_and_takes_no_decision(
    team: dict[str, MemoryService], clock: ManualClock
) -> None:
    operator = team["operator"]
    made = team["ada"].propose("Use tabs")  # stamped a tick or so after the clock
    clock.advance(days=7, seconds=1)
    assert operator.get_ticket(made.id).status == "expired"
    assert [t.id for t in operator.list_tickets(status="expired")] == [made.id]
    assert operator.list_tickets(status="open") == []
    assert [p.status for p in team["ada"].list_proposals()] == ["expired"]
    before = store_state(operator)
    for verb in (operator.approve, operator.reject):
        with pytest.raises(errors.TicketClosed) as caught:
            verb(made.id)
        assert caught.value.details["status"] == "expired"
    assert store_state(operator) == before
    # read lazily: the store still holds it open until a sweep
    assert raw_sql(operator, "SELECT status FROM proposals WHERE id = ?", (made.id,)) == [("open",)]


def test_a_ticket_is_open_until_its_expiry(
    team: dict[str, MemoryService], clock: ManualClock
) -> None:
    made = team["ada"].propose("Use tabs")
    clock.advance(days=7, seconds=-1)
    assert team["operator"].get_ticket(made.id).status == "open"
    assert team["operator"].approve(made.id).status == "approved"


def test_the_sweep_stores_expiry_with_its_event(
    team: dict[str, MemoryService], clock: ManualClock
) -> None:
    operator, ada = team["operator"], team["ada"]
    old = ada.propose("Use tabs")
    clock.advance(days=3)
    young = ada.propose("Use spaces")
    decided = ada.propose("Use both")
    operator.reject(decided.id)
    clock.advance(days=4, seconds=1)
    (expired,) = operator.expire_tickets()
    assert (expired.id, expired.status) == (old.id, "expired")
    assert raw_sql(operator, "SELECT status FROM proposals WHERE id = ?", (old.id,)) == [
        ("expired",)
    ]
    assert payload(operator, "ticket_expire")["id"] == old.id
    assert operator.expire_tickets() == []  # nothing more to expire
    assert operator.get_ticket(young.id).status == "open"
    assert operator.get_ticket(decided.id).status == "rejected"


def test_a_ticket_from_before_expiry_expires_after_its_timestamp(
    team: dict[str, MemoryService], clock: ManualClock
) -> None:
    made = team["ada"].propose("Use tabs")
    raw_sql(team["operator"], "UPDATE proposals SET expires_at = NULL WHERE id = ?", (made.id,))
    assert team["operator"].get_ticket(made.id).expires_at == made.expires_at
    clock.advance(days=8)
    assert [t.id for t in team["operator"].expire_tickets()] == [made.id]


def test_a_store_from_before_tickets_keeps_its_proposals_open(
    store_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 10 on a store holding proposals: each reads as an open ticket with no
    record, untainted, undecided, expiring ``expire_after`` after its timestamp."""
    from retain.storage import postgres, postgres_schema, sqlite, sqlite_schema

    for module, schema in ((sqlite, sqlite_schema), (postgres, postgres_schema)):
        before = tuple(m for m in schema.MIGRATIONS if m.version < 10)
        monkeypatch.setattr(schema, "MIGRATIONS", before)
        monkeypatch.setattr(module, "MIGRATIONS", before)
    old = MemoryService(open_backend(store_url), clock=clock)
    raw_sql(
        old,
        "INSERT INTO proposals(id, realm, source, target, trust, summary, body, evidence, "
        "action, status, created_at) VALUES ('t-old', 'default', 'agent:ada', 'global', "
        "'observed', 'Use tabs', '', '', 'add', 'open', '2026-03-01T12:00:00.000000Z')",
    )
    old.close()
    monkeypatch.undo()
    service = MemoryService(open_backend(store_url), clock=clock)
    try:
        (kept,) = service.list_tickets()
        assert (kept.id, kept.status, kept.record, kept.tainted, kept.approvals) == (
            "t-old", "open", None, False, (),
        )  # fmt: skip
        assert kept.expires_at == kept.created_at + timedelta(days=7)
        assert service.acting_as("steward").reject("t-old").status == "rejected"
    finally:
        service.close()


# -- the policy gate ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "scope", "mode"),
    [
        ((), "global", "none"),
        ((("global", "second_approver"),), "global", "second_approver"),
        ((("global", "second_approver"),), "team:ops", "none"),
        ((("team:*", "second_approver"),), "team:ops", "second_approver"),
        ((("team:*", "second_approver"), ("team:ops", "none")), "team:ops", "none"),
        ((("team:ops", "none"), ("team:*", "second_approver")), "team:ops", "none"),
        ((("team:ops", "second_approver"),), "team:web", "none"),
    ],
)
def test_the_most_specific_gate_pattern_decides(
    rules: tuple[tuple[str, str], ...], scope: str, mode: str
) -> None:
    assert ticket.gate_mode(Settings(gate=rules), scope) == mode


def test_a_gated_scope_waits_for_a_second_distinct_approver(
    team: dict[str, MemoryService], make_service: ServiceFactory
) -> None:
    made = team["ada"].propose("Use UTC in logs")
    first = gated(make_service)
    with pytest.raises(errors.GatePending) as caught:
        first.approve(made.id, reason="looks right")
    assert caught.value.code == "gate_pending"
    assert caught.value.details == {
        "ticket": made.id,
        "expires_at": made.to_dict()["expires_at"],
        "approvals": ["operator:test"],
    }
    waiting = first.get_ticket(made.id)
    assert (waiting.status, [a.by for a in waiting.approvals], waiting.landed) == (
        "pending_gate", ["operator:test"], None,
    )  # fmt: skip
    assert first.list_memories() == []
    assert kinds(first)[-1] == "ticket_wait"
    # the same principal again is refused, and writes nothing
    before = store_state(first)
    with pytest.raises(errors.GatePending) as again:
        first.approve(made.id)
    assert again.value.details["approvals"] == ["operator:test"]
    assert store_state(first) == before
    # a second, distinct principal lands it
    approved = gated(make_service, "steward").approve(made.id)
    assert (approved.status, approved.decided_by) == ("approved", "steward")
    assert [a.by for a in approved.approvals] == ["operator:test", "steward"]
    (landed,) = first.list_memories()
    assert (landed.id, landed.scope) == (approved.landed, "global")


def test_a_ticket_at_the_gate_may_be_rejected_and_expires(
    team: dict[str, MemoryService], make_service: ServiceFactory, clock: ManualClock
) -> None:
    first, ada = gated(make_service), team["ada"]
    rejected, expiring = ada.propose("Use tabs"), ada.propose("Use spaces")
    for made in (rejected, expiring):
        with pytest.raises(errors.GatePending):
            first.approve(made.id)
    assert first.reject(rejected.id).status == "rejected"  # the first approver may reject
    clock.advance(days=7, seconds=1)
    with pytest.raises(errors.TicketClosed):
        gated(make_service, "steward").approve(expiring.id)
    assert [t.id for t in first.expire_tickets()] == [expiring.id]
    assert first.list_memories() == []


def test_an_ungated_scope_lands_at_the_first_approval(
    team: dict[str, MemoryService], make_service: ServiceFactory
) -> None:
    made = team["ada"].propose("Freeze on Fridays", target="team:ops")
    assert gated(make_service).approve(made.id).status == "approved"


# -- who decides ------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_the_proposer_may_not_decide_its_ticket(make_service: ServiceFactory, verb: str) -> None:
    """An agent may not decide at all (the policy table); a proposer of another kind is
    refused by the ticket itself."""
    operator = make_service()
    made = Proposal(
        id="t-1", source="operator:test", target="global", trust=Trust.ATTESTED,
        summary="a rule", body="", evidence="", action="add", status="open",
        created_at=operator.clock.now(), expires_at=operator.clock.now() + timedelta(days=7),
    )  # fmt: skip
    operator._write(lambda work: work.add_proposal(made))
    with pytest.raises(errors.AccessDenied) as caught:
        getattr(operator, verb)("t-1")
    assert caught.value.details == {"ticket": "t-1", "principal": "operator:test"}
    assert getattr(operator.acting_as("steward"), verb)("t-1").status != "open"


@pytest.mark.parametrize(
    "call",
    [
        lambda s, t: s.approve(t),
        lambda s, t: s.reject(t),
        lambda s, t: s.get_ticket(t),
        lambda s, t: s.list_tickets(),
        lambda s, t: s.expire_tickets(),
    ],
)
def test_an_agent_cannot_decide_or_read_the_queue(team: dict[str, MemoryService], call) -> None:  # type: ignore[no-untyped-def]
    made = team["ada"].propose("Use tabs")
    with pytest.raises(errors.AccessDenied):
        call(team["ada"], made.id)
    assert team["operator"].get_ticket(made.id).status == "open"


def test_an_app_sweeps_but_neither_reads_nor_decides(team: dict[str, MemoryService]) -> None:
    app = team["operator"].acting_as("app:ci")
    made = team["ada"].propose("Use tabs")
    assert app.expire_tickets() == []
    for refused in (
        app.list_tickets,
        lambda: app.get_ticket(made.id),
        lambda: app.approve(made.id),
    ):
        with pytest.raises(errors.AccessDenied):
            refused()


# -- what a review asks ---------------------------------------------------------------------


def test_a_review_finds_the_promotions_waiting_on_a_record_and_expires_the_old(
    team: dict[str, MemoryService], clock: ManualClock
) -> None:
    ada, operator = team["ada"], team["operator"]
    own = ada.remember("the staging host is stg-3")
    old = ada.propose("Staging host", record=own.id)
    clock.advance(days=6)
    young = ada.propose("Staging host, for the team", target="team:ops", record=own.id)
    ada.propose("unrelated")
    clock.advance(days=2)

    def run(work):  # type: ignore[no-untyped-def]
        return ticket.promotions_waiting_on(work, operator.settings, own.id)

    expired, waiting = operator._write(run)
    assert [(t.id, t.status) for t in expired] == [(old.id, "expired")]
    assert [(t.id, t.status) for t in waiting] == [(young.id, "open")]
    assert operator.get_ticket(old.id).status == "expired"
    assert kinds(operator)[-1] == "ticket_expire"

    def tombstone(work):  # type: ignore[no-untyped-def]
        return ticket.invalidate(work, waiting[0], reason="record tombstoned")

    assert operator._write(tombstone).status == "invalidated"
    with pytest.raises(errors.TicketClosed) as caught:
        operator.approve(young.id)
    assert caught.value.details["status"] == "invalidated"
    assert kinds(operator)[-1] == "ticket_invalidate"


# -- the settings -----------------------------------------------------------------------


def test_the_ticket_and_gate_settings_are_read_from_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[tickets]\nexpire_after = "48h"\n\n[gate]\nglobal = "second_approver"\n'
        '"team:*" = "none"\n"team:ops" = "second_approver"\n'
    )
    settings = load_settings(tmp_path)
    assert settings.ticket_expire_after == timedelta(hours=48)
    assert settings.gate == (
        ("global", "second_approver"), ("team:*", "none"), ("team:ops", "second_approver"),
    )  # fmt: skip
    assert replace(Settings(), gate=()) == Settings()  # no gate unless configured


@pytest.mark.parametrize(
    "text",
    [
        '[tickets]\nexpire_after = "soon"\n',
        "[tickets]\nexpire_after = 7\n",
        '[tickets]\nexpire_after = "0d"\n',
        '[tickets]\nexpires_after = "7d"\n',
        '[gate]\nglobal = "two"\n',
        '[gate]\n"project:web" = "none"\n',
        '[gate]\n"team:no good" = "none"\n',
        "[gate]\nglobal = true\n",
    ],
)
def test_a_bad_ticket_or_gate_setting_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(errors.ConfigInvalid):
        load_settings(tmp_path)
