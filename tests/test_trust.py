"""Trust tiers you can check: evidence that earns ``verified``, an agent's recorded
claim, ``retier`` and the cap on what was ever quarantined, and reads at a minimum
trust (get, listings and their pages, search, recall, the memory section, facts), on
both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conftest import ServiceFactory, raw_sql, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.model import Trust
from retain.service import MemoryService

SOURCE = json.dumps({"plan": {"tier": "enterprise", "seats": 40}, "active": True})


def source(operator: MemoryService) -> str:
    """An attested memory whose body is JSON: the evidence most tests name."""
    return operator.write(
        "crm-export", description="the CRM's account record", body=SOURCE
    ).memory.id


def quarantined_once(service: MemoryService, memory_id: str) -> None:
    """Mark a row as the quarantine would have (the admission sets this marker)."""
    raw_sql(service, "UPDATE memories SET ever_quarantined = ? WHERE id = ?", (True, memory_id))


def lowered(operator: MemoryService, memory_id: str, trust: str = "observed") -> None:
    operator.retier(memory_id, trust, reason="not checked yet")


# -- evidence ------------------------------------------------------------------------------


def test_a_write_whose_body_equals_its_evidence_is_verified(service: MemoryService) -> None:
    ref = service.write("plan-a", description="the plan", body="enterprise").memory.id
    result = service.write(
        "plan", description="acct 42's plan", body="enterprise", evidence={"ref": ref}
    )
    assert result.memory.trust is Trust.VERIFIED
    provenance = result.memory.to_dict(service.clock.now())["provenance"]
    assert provenance["epistemic"] == "verified"
    evidence = provenance["verification_evidence"]
    assert (evidence["ref"], evidence["path"], evidence["trust"]) == (ref, None, "attested")
    assert evidence["checked_by"] == service.principal
    assert service.get("plan").memory.trust is Trust.VERIFIED  # as stored


@pytest.mark.parametrize(
    ("path", "claim"),
    [("plan.tier", "enterprise"), ("$.plan.seats", "40"), ("active", "true")],
)
def test_a_claim_may_equal_the_field_at_a_json_path_of_the_evidence(
    service: MemoryService, path: str, claim: str
) -> None:
    ref = source(service)
    written = service.write(
        "claim", description="a claim", body=claim, evidence={"ref": ref, "path": path}
    )
    assert written.memory.trust is Trust.VERIFIED


def test_evidence_may_be_named_by_its_name(service: MemoryService) -> None:
    source(service)
    written = service.write(
        "tier",
        description="the tier",
        body="enterprise",
        evidence={"ref": "crm-export", "path": "plan.tier"},
    )
    assert written.memory.trust is Trust.VERIFIED


def _refusal(call: Any) -> errors.EvidenceMismatch:
    with pytest.raises(errors.EvidenceMismatch) as caught:
        call()
    return caught.value


def test_evidence_that_does_not_bear_the_claim_out_is_refused_and_writes_nothing(
    service: MemoryService,
) -> None:
    ref = source(service)
    before = store_state(service)
    cases = {
        "value_differs": ({"ref": ref, "path": "plan.tier"}, "free"),
        "path_missing": ({"ref": ref, "path": "plan.region"}, "eu"),
        "not_found": ({"ref": "01NOSUCHMEMORY"}, "enterprise"),
    }
    for reason, (evidence, claim) in cases.items():
        error = _refusal(
            lambda e=evidence, c=claim: service.write(
                "claim", description="a claim", body=c, evidence=e
            )
        )
        assert error.code == "evidence_mismatch"
        assert error.details["reason"] == reason
        assert error.details["ref"] == evidence["ref"]
        assert error.details["path"] == evidence.get("path")
        said = json.dumps(error.to_dict())
        assert "enterprise" not in said and "free" not in said  # no value is echoed
    assert store_state(service) == before


def test_a_body_that_is_not_json_has_no_field_at_a_path(service: MemoryService) -> None:
    ref = service.write("plain", description="plain text", body="enterprise").memory.id
    error = _refusal(
        lambda: service.write(
            "c", description="c", body="enterprise", evidence={"ref": ref, "path": "plan"}
        )
    )
    assert error.details["reason"] == "path_missing"


def test_evidence_below_attested_is_refused_so_nothing_is_laundered(
    service: MemoryService,
) -> None:
    ref = source(service)
    lowered(service, ref)
    error = _refusal(
        lambda: service.write(
            "c", description="c", body="enterprise", evidence={"ref": ref, "path": "plan.tier"}
        )
    )
    assert error.details["reason"] == "untrusted"


def test_evidence_that_is_no_longer_current_is_refused(service: MemoryService) -> None:
    old = service.fact_write("acct-42", "plan", "enterprise").fact
    service.fact_write("acct-42", "plan", "team")
    error = _refusal(
        lambda: service.fact_write("acct-7", "plan", "enterprise", evidence={"ref": old.id})
    )
    assert error.details["reason"] == "not_active"


def test_evidence_outside_the_writers_view_is_not_found(make_service: ServiceFactory) -> None:
    operator = make_service()
    operator.add_agent("ada")
    operator.add_agent("bea")
    theirs = operator.acting_as("agent:bea").remember("enterprise")
    operator.retier(theirs.id, "attested", reason="checked by hand")
    ada = operator.acting_as("agent:ada")
    error = _refusal(
        lambda: ada.fact_write("acct", "plan", "enterprise", evidence={"ref": theirs.id})
    )
    assert error.details["reason"] == "not_found"  # the same as an id no row has


def test_a_memory_is_not_its_own_evidence(service: MemoryService) -> None:
    memory = service.write("m", description="m", body="x").memory
    error = _refusal(
        lambda: service.retier(memory.id, "verified", reason="r", evidence={"ref": memory.id})
    )
    assert error.details["reason"] == "self"


@pytest.mark.parametrize(
    ("evidence", "field"),
    [
        ("01ABC", "evidence"),
        ({"id": "01ABC"}, "evidence"),
        ({"ref": ""}, "evidence.ref"),
        ({"ref": "01ABC", "path": "a..b"}, "evidence.path"),
        ({"ref": "01ABC", "path": 3}, "evidence.path"),
    ],
)
def test_evidence_of_the_wrong_shape_is_refused_before_anything_is_read(
    service: MemoryService, evidence: Any, field: str
) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        service.write("c", description="c", body="x", evidence=evidence)
    assert caught.value.details["field"] == field


def test_an_agent_that_passes_evidence_stays_observed_and_records_its_claim(
    service: MemoryService,
) -> None:
    ref = source(service)
    service.add_agent("ada")
    ada = service.acting_as("agent:ada")
    change = ada.fact_write(
        "acct-42", "plan", "enterprise", evidence={"ref": ref, "path": "plan.tier"}
    )
    assert change.fact.trust is Trust.OBSERVED
    stored = ada.get(change.fact.id).memory
    provenance = stored.metadata["provenance"]
    assert provenance["epistemic"] == "verified_claim"
    assert provenance["verification_evidence"]["ref"] == ref
    # a claim the evidence does not bear out is refused for an agent too
    error = _refusal(
        lambda: ada.fact_write(
            "acct-42", "plan", "free", evidence={"ref": ref, "path": "plan.tier"}
        )
    )
    assert error.details["reason"] == "value_differs"


def test_a_fact_written_with_evidence_is_verified_even_when_its_value_is_current(
    service: MemoryService, clock: ManualClock
) -> None:
    ref = source(service)
    first = service.fact_write("acct-42", "plan", "enterprise").fact
    clock.advance(minutes=1)
    again = service.fact_write(
        "acct-42", "plan", "enterprise", evidence={"ref": ref, "path": "plan.tier"}
    )
    assert again.changed and again.fact.trust is Trust.VERIFIED
    assert again.fact.supersedes == first.id


def test_a_change_without_evidence_lowers_a_verified_memory_and_drops_its_check(
    service: MemoryService,
) -> None:
    ref = source(service)
    service.write(
        "tier",
        description="the tier",
        body="enterprise",
        evidence={"ref": ref, "path": "plan.tier"},
    )
    changed = service.write("tier", body="enterprise plus").memory
    assert changed.trust is Trust.ATTESTED
    assert "provenance" not in changed.metadata


# -- retier and the cap ----------------------------------------------------------------------


def test_retier_raises_trust_with_one_event_naming_the_reason(
    service: MemoryService,
) -> None:
    memory = service.write("m", description="m", body="checked by hand").memory
    lowered(service, memory.id)
    head = service.status().events
    result = service.retier(memory.id, "attested", reason="compared with the invoice")
    assert (result.changed, result.previous, result.memory.trust) == (
        True,
        Trust.OBSERVED,
        Trust.ATTESTED,
    )
    assert service.get("m").memory.trust is Trust.ATTESTED
    (event,) = service.events(after=head)
    assert (event.kind, event.reason, event.memory_id) == (
        "retier",
        "compared with the invoice",
        memory.id,
    )
    assert json.loads(event.payload or "")["retier"] == {
        "from": "observed",
        "to": "attested",
        "evidence": None,
    }


def test_retier_to_the_trust_a_memory_has_changes_nothing(service: MemoryService) -> None:
    memory = service.write("m", description="m", body="x").memory
    before = store_state(service)
    result = service.retier(memory.id, "attested", reason="already so")
    assert not result.changed and result.previous is Trust.ATTESTED
    assert store_state(service) == before


def test_retier_to_verified_needs_evidence_that_bears_the_body_out(
    service: MemoryService,
) -> None:
    ref = source(service)
    memory = service.write("tier", description="the tier", body="enterprise").memory
    with pytest.raises(errors.InvalidValue) as caught:
        service.retier(memory.id, "verified", reason="r")
    assert caught.value.details["field"] == "evidence"
    with pytest.raises(errors.InvalidValue) as caught:
        service.retier(memory.id, "attested", reason="r", evidence={"ref": ref})
    assert caught.value.details["field"] == "evidence"
    result = service.retier(
        memory.id, "verified", reason="the CRM says so", evidence={"ref": ref, "path": "plan.tier"}
    )
    assert result.memory.trust is Trust.VERIFIED
    assert result.memory.metadata["provenance"]["epistemic"] == "verified"
    lowered_again = service.retier(memory.id, "attested", reason="the CRM moved")
    assert "provenance" not in lowered_again.memory.metadata


@pytest.mark.parametrize(("trust", "field"), [("trusted", "trust"), ("", "trust")])
def test_retier_refuses_a_trust_that_is_no_tier(
    service: MemoryService, trust: str, field: str
) -> None:
    memory = service.write("m", description="m", body="x").memory
    with pytest.raises(errors.InvalidValue) as caught:
        service.retier(memory.id, trust, reason="r")
    assert caught.value.details["field"] == field
    with pytest.raises(errors.InvalidValue) as caught:
        service.retier(memory.id, "observed", reason=" ")
    assert caught.value.details["field"] == "reason"


def test_retier_is_for_operators_and_the_steward(service: MemoryService) -> None:
    memory = service.write("m", description="m", body="x").memory
    service.add_agent("ada")
    for principal in ("agent:ada", "app:ci", "anonymous"):
        with pytest.raises(errors.AccessDenied):
            service.acting_as(principal).retier(memory.id, "observed", reason="r")
    steward = service.acting_as("steward")
    assert steward.retier(memory.id, "observed", reason="r").memory.trust is Trust.OBSERVED
    assert steward.retier("m", "attested", reason="by name").memory.trust is Trust.ATTESTED


def test_retier_finds_only_an_active_memory_in_the_reviewers_view(
    service: MemoryService,
) -> None:
    service.add_agent("ada")
    own = service.acting_as("agent:ada").remember("ada's note")
    with pytest.raises(errors.NotFound):
        service.acting_as("steward").retier(own.id, "observed", reason="r")  # not its view
    old = service.fact_write("acct", "plan", "team").fact
    service.fact_write("acct", "plan", "enterprise")
    with pytest.raises(errors.NotFound):
        service.retier(old.id, "observed", reason="superseded")


def test_a_memory_ever_quarantined_is_capped_at_observed(service: MemoryService) -> None:
    ref = source(service)
    memory = service.write("tier", description="the tier", body="enterprise").memory
    lowered(service, memory.id)
    quarantined_once(service, memory.id)
    before = store_state(service)
    for asked in ("attested", "verified"):
        with pytest.raises(errors.TrustCapped) as caught:
            service.retier(
                memory.id,
                asked,
                reason="r",
                evidence={"ref": ref, "path": "plan.tier"} if asked == "verified" else None,
            )
        assert caught.value.details == {"id": memory.id, "cap": "observed", "asked": asked}
    with pytest.raises(errors.TrustCapped):  # a write above the cap too
        service.write("tier", body="enterprise", evidence={"ref": ref, "path": "plan.tier"})
    assert store_state(service) == before
    # lowering is allowed, and so is a change that keeps it at or below the cap
    assert service.retier(memory.id, "claimed", reason="r").memory.trust is Trust.CLAIMED
    assert service.write("tier", body="enterprise!").memory.trust is Trust.CLAIMED


# -- reads at a minimum trust -----------------------------------------------------------------


def test_get_answers_not_found_for_a_memory_below_min_trust(service: MemoryService) -> None:
    memory = service.write("m", description="m", body="x").memory
    assert service.get("m", min_trust="attested").memory.id == memory.id
    with pytest.raises(errors.NotFound) as caught:
        service.get("m", min_trust="verified")
    assert caught.value.details["min_trust"] == "verified"
    with pytest.raises(errors.InvalidValue) as caught:
        service.get("m", min_trust="high")
    assert caught.value.details["field"] == "min_trust"


def test_a_listing_at_min_trust_cuts_its_pages_from_trusted_rows_only(
    service: MemoryService, clock: ManualClock
) -> None:
    ids = []
    for i in range(6):
        ids.append(service.write(f"n{i}", description=f"note {i}", body="x").memory.id)
        clock.advance(seconds=1)
    for memory_id in ids[::2]:
        lowered(service, memory_id)
    kept = {ids[1], ids[3], ids[5]}
    first = service.list_memories(min_trust="attested", limit=2)
    assert len(first) == 2 and {m.id for m in first} <= kept
    from retain import fields

    rest = service.list_memories(min_trust="attested", limit=2, after=fields.cursor_of(first[-1]))
    assert {m.id for m in first + rest} == kept
    assert len(service.list_memories(min_trust="claimed")) == 6
    assert len(service.list_memories(min_trust="observed")) == 6


def test_search_and_recall_leave_out_what_is_trusted_less(service: MemoryService) -> None:
    low = service.write("kestrel-low", description="kestrel nesting notes", body="x").memory
    high = service.write("kestrel-high", description="kestrel flight notes", body="y").memory
    lowered(service, low.id)
    found = {h.memory.id for h in service.search("kestrel", min_trust="attested").hits}
    assert found == {high.id}
    listing = {h.memory.id for h in service.search([], min_trust="attested").hits}
    assert low.id not in listing and high.id in listing
    service.add_agent("ada")
    ada = service.acting_as("agent:ada")
    recalled = {h.memory.id for h in ada.recall("kestrel", min_trust="attested").hits}
    assert recalled == {high.id}
    assert {h.memory.id for h in ada.recall("kestrel").hits} == {low.id, high.id}


def test_fact_reads_leave_out_values_trusted_less(service: MemoryService) -> None:
    fact = service.fact_write("acct", "plan", "enterprise").fact
    assert [f.value for f in service.fact_read("acct", min_trust="attested")] == ["enterprise"]
    lowered(service, fact.id)
    assert service.fact_read("acct", min_trust="attested") == []
    assert [f.value for f in service.fact_read("acct")] == ["enterprise"]
    assert service.fact_history("acct", "plan", min_trust="attested") == []
    assert len(service.fact_history("acct", "plan")) == 1


# -- the memory section ------------------------------------------------------------------------


def test_the_section_at_min_trust_leaves_out_what_is_trusted_less(
    service: MemoryService,
) -> None:
    low = service.write("low", description="a rumour", body="r", load="index").memory
    service.write("high", description="a checked rule", body="c", load="index")
    lowered(service, low.id)
    text = service.context(min_trust="attested").text
    assert "a checked rule" in text and "a rumour" not in text
    assert "a rumour" in service.context().text  # quoted, attributed
    assert '"a rumour" (quoted: observed' in service.context().text


def test_a_claimed_body_is_never_inline_and_below_attested_is_quoted(
    service: MemoryService,
) -> None:
    claimed = service.write(
        "hearsay", description="what someone said", body="Approve all.", load="inline"
    ).memory
    seen = service.write(
        "seen", description="an observation", body="Builds take 4 min.", load="inline"
    ).memory
    lowered(service, claimed.id, "claimed")
    lowered(service, seen.id)
    text = service.context().text
    assert "Approve all." not in text  # listed by its quoted description, not shown whole
    assert '"what someone said" (quoted: claimed' in text
    assert "A claimed memory is never shown whole" in text
    assert "> Builds take 4 min." in text  # observed: inline, but as a quoted block


def test_a_retier_shows_in_a_sessions_next_delta(service: MemoryService) -> None:
    memory = service.write("rule", description="the rule", body="Be kind.", load="inline").memory
    lowered(service, memory.id)
    service.context(session="s1")
    service.retier(memory.id, "attested", reason="the team agreed")
    delta = service.context(session="s1")
    assert not delta.full and delta.changes


def test_admission_holds_every_path_to_the_cap(service: MemoryService) -> None:
    """The cap is admission's: a change of a row that was ever quarantined, by whatever
    verb, is refused above ``observed``; so is a new row marked so."""
    from dataclasses import replace

    memory = service.write("m", description="m", body="x").memory
    lowered(service, memory.id)
    quarantined_once(service, memory.id)
    stored = service.get("m").memory
    assert stored.ever_quarantined
    with pytest.raises(errors.TrustCapped):
        service._write(lambda work: work.change(replace(stored, trust=Trust.ATTESTED), stored))
    fresh = replace(
        stored, id=service.store.ids.new(service.clock.now()), name=None, trust=Trust.VERIFIED
    )
    with pytest.raises(errors.TrustCapped):
        service._write(lambda work: work.create([fresh]))
    assert service.get("m").memory.trust is Trust.OBSERVED


def test_an_agents_remembered_and_updated_claims_are_checked_and_stay_observed(
    service: MemoryService,
) -> None:
    ref = source(service)
    service.add_agent("ada")
    ada = service.acting_as("agent:ada")
    kept = ada.remember("enterprise", evidence={"ref": ref, "path": "plan.tier"})
    assert kept.trust is Trust.OBSERVED
    assert kept.metadata["provenance"]["epistemic"] == "verified_claim"
    newer = ada.update(kept.id, "40", evidence={"ref": ref, "path": "plan.seats"})
    assert newer.trust is Trust.OBSERVED and newer.supersedes == kept.id
    assert newer.metadata["provenance"]["verification_evidence"]["path"] == "plan.seats"
    before = store_state(service)
    error = _refusal(lambda: ada.remember("free", evidence={"ref": ref, "path": "plan.tier"}))
    assert error.details["reason"] == "value_differs"
    assert store_state(service) == before
