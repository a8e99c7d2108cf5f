"""Agent sessions and their taint (SPEC16 1.3): what a host observes, the boundaries that
clear it, who may do which, and the session an agent's write is judged by."""

from __future__ import annotations

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors
from retain.chrono import ManualClock
from retain.config import Settings
from retain.governance.content_trust import ContentTrustSettings
from retain.service import MemoryService
from retain.service.session import judged

ADA = "agent:ada"
RULES = Settings(
    content_trust=ContentTrustSettings(
        trusted_mcp_servers=("github",), untrusted_tools=("WebFetch",)
    )
)


@pytest.fixture
def operator(make_service: ServiceFactory) -> MemoryService:
    svc = make_service(settings=RULES)
    svc.add_agent("ada")
    svc.add_agent("bea")
    return svc


def taint_events(svc: MemoryService) -> list[dict[str, object]]:
    import json

    return [json.loads(e.payload or "null") for e in svc.events() if e.kind == "taint"]


def test_an_untrusted_result_taints_the_session_and_the_taint_sticks(
    operator: MemoryService,
) -> None:
    clean = operator.observe("mcp__github__get_issue", identity=ADA, session="s1")
    assert (clean.trusted, clean.step, clean.tainted, clean.changed) == (
        True, "mcp_name", False, False)  # fmt: skip
    assert taint_events(operator) == []
    first = operator.observe("web_fetch", identity=ADA, session="s1")
    assert (first.trusted, first.step, first.tainted, first.changed) == (
        False, "always_untrusted", True, True)  # fmt: skip
    again = operator.observe("WebFetch", identity=ADA, session="s1")
    later = operator.observe("calculator", identity=ADA, session="s1")
    assert (again.tainted, again.changed, later.tainted, later.changed) == (
        True, False, True, False)  # fmt: skip
    assert taint_events(operator) == [  # one transition: tainting again appends nothing
        {
            "identity": ADA,
            "session": "s1",
            "from": "clean",
            "to": "tainted",
            "cause": {"tool": "web_fetch", "server": None, "step": "always_untrusted"},
        }
    ]
    status = operator.session_status(ADA, "s1")
    assert status.tainted and status.cause == {
        "tool": "web_fetch", "server": None, "step": "always_untrusted"}  # fmt: skip
    assert status.tainted_at is not None and status.to_dict()["session"] == "s1"


def test_typed_provenance_names_the_server(operator: MemoryService) -> None:
    trusted = operator.observe("get_issue", identity=ADA, session="s1", server="github")
    stranger = operator.observe("lookup", identity=ADA, session="s1", provenance="mcp",
                                server="stranger")  # fmt: skip
    assert (trusted.step, trusted.trusted, trusted.server) == ("mcp_server", True, "github")
    assert (stranger.step, stranger.trusted, stranger.tainted) == ("mcp_server", False, True)
    native = operator.observe("search", identity=ADA, session="s2", native=True)
    assert (native.step, native.tainted) == ("native", True)


def test_compaction_does_not_clear_the_taint_and_a_reset_does(operator: MemoryService) -> None:
    operator.observe("web_search", identity=ADA, session="s1")
    compacted = operator.reset_session(ADA, "s1", boundary="compact")
    assert (compacted.cleared, compacted.tainted) == (False, True)
    assert operator.session_status(ADA, "s1").tainted
    assert len(taint_events(operator)) == 1
    reset = operator.reset_session(ADA, "s1", boundary="clear")
    assert (reset.cleared, reset.tainted) == (True, False)
    assert not operator.session_status(ADA, "s1").tainted
    assert taint_events(operator)[-1] == {
        "identity": ADA, "session": "s1", "from": "tainted", "to": "clean",
        "cause": {"boundary": "clear"}}  # fmt: skip
    again = operator.reset_session(ADA, "s1", boundary="respawn")  # clean: no transition
    assert (again.cleared, len(taint_events(operator))) == (False, 2)
    operator.observe("fetch", identity=ADA, session="s1")  # tainted again after the boundary
    assert operator.session_status(ADA, "s1").tainted


@pytest.mark.parametrize("boundary", ["reset", "respawn", "clear", "new"])
def test_every_fresh_context_boundary_clears(operator: MemoryService, boundary: str) -> None:
    operator.observe("http_request", identity=ADA, session="s1")
    assert operator.reset_session(ADA, "s1", boundary=boundary).cleared


def test_a_new_session_key_is_clean_and_sessions_are_per_agent(operator: MemoryService) -> None:
    operator.observe("web_fetch", identity=ADA, session="s1")
    with pytest.raises(errors.SessionNotFound) as caught:
        operator.session_status(ADA, "s2")
    assert caught.value.details == {"identity": ADA, "session": "s2"}
    assert not operator.observe("calculator", identity=ADA, session="s2").tainted
    assert not operator.observe("calculator", identity="agent:bea", session="s1").tainted


def test_an_agent_observes_its_own_session_and_no_other(operator: MemoryService) -> None:
    ada = operator.acting_as(ADA, session="host-1")
    seen = ada.observe("web_fetch")
    assert (seen.identity, seen.session, seen.tainted) == (ADA, "host-1", True)
    assert operator.session_status(ADA, "host-1").tainted
    before = store_state(operator)
    with pytest.raises(errors.AccessDenied):
        ada.observe("web_fetch", identity="agent:bea", session="s1")
    with pytest.raises(errors.InvalidValue):  # no key from its door, none named
        operator.acting_as(ADA).observe("web_fetch")
    assert store_state(operator) == before


def test_an_agent_cannot_clear_or_read_its_own_taint(operator: MemoryService) -> None:
    ada = operator.acting_as(ADA, session="host-1")
    ada.observe("web_fetch")
    before = store_state(operator)
    with pytest.raises(errors.AccessDenied) as caught:
        ada.reset_session(ADA, "host-1")
    assert caught.value.details["allowed"] == ["app", "operator"]
    with pytest.raises(errors.AccessDenied):
        ada.session_status(ADA, "host-1")
    assert store_state(operator) == before
    assert operator.session_status(ADA, "host-1").tainted
    app = operator.acting_as("app:host")
    assert app.reset_session(ADA, "host-1", boundary="new").cleared


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda s: s.observe("web_fetch", session="s1"), "invalid_value"),  # no identity
        (lambda s: s.observe("web_fetch", identity=ADA), "invalid_value"),  # no key
        (lambda s: s.observe("web_fetch", identity="app:x", session="s1"), "invalid_value"),
        (lambda s: s.observe("web_fetch", identity="agent:eve", session="s1"),
         "agent_not_found"),
        (lambda s: s.observe("", identity=ADA, session="s1"), "invalid_value"),
        (lambda s: s.observe("x", identity=ADA, session="s1", provenance="mcp"),
         "invalid_value"),
        (lambda s: s.observe("x", identity=ADA, session="s1", provenance="builtin",
                             server="gh"), "invalid_value"),
        (lambda s: s.observe("a\nb", identity=ADA, session="s1"), "invalid_value"),
        (lambda s: s.observe("x", identity=ADA, session="k" * 201), "invalid_value"),
        (lambda s: s.reset_session(ADA, "s1", boundary="reboot"), "invalid_value"),
        (lambda s: s.session_status("agent:eve", "s1"), "agent_not_found"),
        (lambda s: s.observe("x", identity=ADA, session="s1", native="yes"), "invalid_value"),
    ],
)  # fmt: skip
def test_a_bad_call_is_refused_and_writes_nothing(
    operator: MemoryService, call: object, code: str
) -> None:
    before = store_state(operator)
    with pytest.raises(errors.RetainError) as caught:
        call(operator)  # type: ignore[operator]
    assert caught.value.code == code
    assert store_state(operator) == before


def test_a_keyless_write_is_judged_by_the_latest_session(
    operator: MemoryService, clock: ManualClock
) -> None:
    def judge(key: str | None) -> bool:
        found = operator.backend.read(lambda tx: judged(tx, operator.realm, ADA, key))
        return found is not None and found.tainted

    assert not judge(None)  # nothing observed: nothing taints
    operator.observe("web_fetch", identity=ADA, session="old")
    # a key nothing was reported of opens no clean session: the latest judges it too
    assert judge(None) and judge("old") and judge("new")
    clock.advance(minutes=1)
    operator.observe("calculator", identity=ADA, session="new")
    assert not judge(None)  # the latest observed session is clean
    clock.advance(minutes=1)
    operator.observe("calculator", identity=ADA, session="old")
    assert judge(None)  # "old" was observed last, and it is still tainted


def test_sessions_observed_at_one_instant_fail_closed(operator: MemoryService) -> None:
    # the clock stands still and a trusted observation appends no event: one instant
    clean = operator.observe("calculator", identity=ADA, session="a")
    operator.observe("web_fetch", identity=ADA, session="b")
    a, b = (operator.session_status(ADA, key) for key in ("a", "b"))
    assert a.updated_at == b.updated_at and clean.session == "a"
    found = operator.backend.read(lambda tx: judged(tx, operator.realm, ADA, None))
    assert found is not None and found.key == "b" and found.tainted
