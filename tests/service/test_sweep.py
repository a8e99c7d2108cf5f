"""Retention sweeps: what a sweep selects (learned before an instant, or before each
scope's window), what it skips (held memories, what the view does not see), and the dry
run that writes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.conftest import ServiceFactory, store_state

from retain import errors
from retain.chrono import ManualClock, parse_period, stamp
from retain.config import Settings
from retain.governance.retention import Window, window_for
from retain.model import Memory
from retain.service import MemoryService

WINDOWS = (
    Window("global", parse_period("P60D")),
    Window("agent:*", parse_period("P90D")),
    Window("agent:ada", parse_period("P10D")),
)


@pytest.fixture
def timeline(
    make_service: ServiceFactory, clock: ManualClock
) -> tuple[MemoryService, dict[str, str]]:
    """Memories learned at day 0 and day 50, in global, a project and two agents' own
    scopes; the clock then stands at day 100."""
    operator = make_service(settings=Settings(retention=WINDOWS))
    operator.add_project("web")
    operator.add_agent("ada")
    operator.add_agent("bea")
    ada = operator.acting_as("agent:ada")
    bea = operator.acting_as("agent:bea")
    ids: dict[str, str] = {}
    for day in (0, 50):
        ids[f"global-{day}"] = operator.write(f"g{day}", description=f"global note {day}").memory.id
        ids[f"web-{day}"] = operator.write(
            f"w{day}", description=f"web note {day}", project="web"
        ).memory.id
        ids[f"ada-{day}"] = ada.remember(f"ada's note of day {day}").id
        ids[f"bea-{day}"] = bea.remember(f"bea's note of day {day}").id
        clock.advance(days=50)
    return operator, ids


def stored(service: MemoryService, memory_id: str) -> Memory:
    """The row as the store holds it, whatever its status (a lookup passes over a
    forgotten one)."""
    (row,) = service.backend.read(lambda tx: tx.get_many([memory_id]))
    return row


def selected(result: object) -> set[str]:
    return {s.id for s in result.selected}  # type: ignore[attr-defined]


def test_a_dry_run_lists_what_was_learned_before_the_instant_and_writes_nothing(
    timeline: tuple[MemoryService, dict[str, str]], clock: ManualClock
) -> None:
    operator, ids = timeline
    before = store_state(operator)
    day_25 = stamp(clock.now() - timedelta(days=75))

    result = operator.sweep(reason="tidy up", before=day_25, dry_run=True)

    assert selected(result) == {ids["global-0"], ids["web-0"], ids["ada-0"], ids["bea-0"]}
    assert result.dry_run and result.forgotten == () and result.held == ()
    assert {c.scope for c in result.retention} == {
        "global",
        "project:web",
        "agent:ada",
        "agent:bea",
    }
    assert all(c.window is None and stamp(c.before) == day_25 for c in result.retention)
    assert store_state(operator) == before
    shown = result.to_dict()
    assert shown["before"] == day_25 and shown["scope"] is None and shown["dry_run"] is True
    assert {s["id"] for s in shown["selected"]} == selected(result)
    day_0 = stamp(clock.now() - timedelta(days=100))[:20]  # to the second (writes tick on)
    assert {s["learned_at"][:20] for s in shown["selected"]} == {day_0}


def test_a_sweep_of_one_scope_selects_only_there(
    timeline: tuple[MemoryService, dict[str, str]],
) -> None:
    operator, ids = timeline
    result = operator.sweep(reason="tidy", before="2099-01-01", scope="project:web", dry_run=True)
    assert selected(result) == {ids["web-0"], ids["web-50"]}
    assert [c.scope for c in result.retention] == ["project:web"]


def test_without_an_instant_each_scopes_most_specific_window_decides(
    timeline: tuple[MemoryService, dict[str, str]],
) -> None:
    """global keeps 60 days (day 0 goes), agent:ada 10 (both go), agent:bea falls under
    agent:* and keeps 90 (day 0 goes); no pattern names a project, so web is kept."""
    operator, ids = timeline
    result = operator.sweep(reason="retention", dry_run=True)
    assert selected(result) == {ids["global-0"], ids["ada-0"], ids["ada-50"], ids["bea-0"]}
    assert result.before is None
    windows = {c.scope: (c.window.pattern if c.window else None) for c in result.retention}
    assert windows == {"global": "global", "agent:ada": "agent:ada", "agent:bea": "agent:*"}
    by_scope = {c["scope"]: c for c in result.to_dict()["retention"]}
    assert by_scope["agent:bea"]["window"] == "P90D"


def test_a_scope_no_window_covers_is_kept(make_service: ServiceFactory) -> None:
    operator = make_service()  # no [retention] at all
    operator.write("old", description="an old note")
    result = operator.sweep(reason="retention", dry_run=True)
    assert result.selected == () and result.retention == ()


def test_a_sweep_skips_held_memories_and_lists_them(
    timeline: tuple[MemoryService, dict[str, str]],
) -> None:
    operator, ids = timeline
    operator.hold(ids["global-0"], reason="matter 42")
    operator.hold(ids["web-50"], reason="matter 43")  # learned after the instant: not listed
    result = operator.sweep(reason="tidy", before="2026-04-01", dry_run=True)
    assert result.held == (ids["global-0"],)
    assert ids["global-0"] not in selected(result)
    assert result.to_dict()["held"] == [ids["global-0"]]


def test_every_status_but_forgotten_is_swept(
    timeline: tuple[MemoryService, dict[str, str]],
) -> None:
    operator, ids = timeline
    ada = operator.acting_as("agent:ada")
    ada.forget(ids["ada-0"])  # forgotten already
    newer = ada.update(ids["ada-50"], "ada's note, rewritten")  # day 50's is superseded
    result = operator.sweep(reason="tidy", before="2099-01-01", scope="agent:ada", dry_run=True)
    statuses = {s.id: s.status for s in result.selected}
    assert statuses == {ids["ada-50"]: "superseded", newer.id: "active"}


def test_an_application_sweeps_the_shared_tiers_it_sees(
    timeline: tuple[MemoryService, dict[str, str]],
) -> None:
    operator, ids = timeline
    app = operator.acting_as("app:records")
    result = app.sweep(reason="tidy", before="2099-01-01", dry_run=True)
    assert selected(result) == {ids[k] for k in ("global-0", "global-50", "web-0", "web-50")}
    with pytest.raises(errors.NotFound):  # an agent's own scope is not in its view
        app.sweep(reason="tidy", before="2099-01-01", scope="agent:ada", dry_run=True)


def test_a_quarantined_row_is_swept_only_by_a_reviewers_view(
    make_service: ServiceFactory,
) -> None:
    operator = make_service()
    operator.add_agent("ada")
    held = make_service(
        settings=Settings(llm_writes="quarantined"), principal="agent:ada"
    ).remember("waits for review")
    app = operator.acting_as("app:records")
    everything = operator.sweep(reason="tidy", before="2099-01-01", dry_run=True)
    assert held.id in selected(everything)
    assert held.id not in selected(app.sweep(reason="t", before="2099-01-01", dry_run=True))


def test_a_sweep_reports_its_progress(timeline: tuple[MemoryService, dict[str, str]]) -> None:
    operator, _ = timeline
    told: list[tuple[str, int, int]] = []
    operator.sweep(
        reason="tidy", before="2099-01-01", dry_run=True,
        progress=lambda phase, done, total: told.append((phase, done, total)),
    )  # fmt: skip
    assert told[0] == ("select", 0, 4) and told[-1] == ("select", 4, 4)


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"reason": " "}, "invalid_value"),
        ({"reason": "x", "scope": "team"}, "invalid_value"),
        ({"reason": "x", "scope": "project:no such"}, "invalid_value"),
        ({"reason": "x", "before": "last tuesday"}, "invalid_time"),
        ({"reason": "x", "scope": "agent:nobody"}, None),  # a scope with nothing in it
    ],
)
def test_a_sweeps_arguments_are_checked(
    service: MemoryService, options: dict[str, str], code: str | None
) -> None:
    if code is None:
        assert service.sweep(dry_run=True, **options).selected == ()
        return
    with pytest.raises(errors.RetainError) as refused:
        service.sweep(dry_run=True, **options)
    assert refused.value.code == code


@pytest.mark.parametrize("who", ["agent:ada", "steward", "anonymous"])
def test_only_operators_and_applications_sweep(make_service: ServiceFactory, who: str) -> None:
    make_service().add_agent("ada")
    with pytest.raises(errors.AccessDenied):
        make_service(principal=who).sweep(reason="tidy", dry_run=True)


# -- the windows themselves (no store) ------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "pattern"),
    [
        ("team:blue", "team:blue"),  # the scope itself first
        ("team:red", "team:*"),  # then its kind
        ("project:web", "*"),  # then every scope
        ("global", "global"),
        ("agent:ada", "*"),
    ],
)
def test_the_most_specific_pattern_wins(scope: str, pattern: str) -> None:
    windows = tuple(
        Window(p, parse_period(d))
        for p, d in (("*", "P2Y"), ("team:*", "P90D"), ("team:blue", "P7D"), ("global", "P1Y"))
    )
    found = window_for(windows, scope)
    assert found is not None and found.pattern == pattern


def test_no_pattern_no_window() -> None:
    assert window_for((Window("team:*", parse_period("P1D")),), "project:web") is None


# -- the forgetting (through the erasure forget runs) ---------------------------------------


def test_a_sweep_forgets_what_it_selected_each_with_its_certificate(
    timeline: tuple[MemoryService, dict[str, str]],
) -> None:
    operator, ids = timeline
    operator.hold(ids["global-0"], reason="matter 42")
    told: list[tuple[str, int, int]] = []
    result = operator.sweep(
        reason="retention policy", before="2026-04-01", keep_digest=False,
        progress=lambda phase, done, total: told.append((phase, done, total)),
    )  # fmt: skip
    gone = {ids[k] for k in ("web-0", "ada-0", "bea-0")}
    assert selected(result) == gone and result.held == (ids["global-0"],)
    assert not result.dry_run
    certificates = {c["target"]: c for c in result.forgotten}
    assert set(certificates) == gone
    for target, certificate in certificates.items():
        assert certificate["reason"] == "retention policy"
        assert certificate["principal"] == "operator:test"
        assert certificate["digest_kind"] == "none" and certificate["erased"] == [target]
        assert certificate["places"]["store_files"] in ("verified", "unverified")
        row = stored(operator, target)
        assert (row.status.value, row.body, row.description) == ("forgotten", "", "")
    assert stored(operator, ids["global-0"]).status.value == "active"  # held, kept
    assert stored(operator, ids["web-50"]).status.value == "active"  # learned later
    assert ("forget", 3, 3) in told
    again = operator.sweep(reason="retention policy", before="2026-04-01", dry_run=True)
    assert selected(again) == set() and again.held == (ids["global-0"],)  # forgotten: gone


def test_a_sweep_keeps_a_memory_whose_copy_is_held(make_service: ServiceFactory) -> None:
    """A quarantined record and its released successor: the held successor is skipped
    at the selection, the record at its erasure (erasing it would erase the held copy)."""
    operator = make_service()
    operator.add_agent("ada")
    record = make_service(
        settings=Settings(llm_writes="quarantined"), principal="agent:ada"
    ).remember("waits for review, then is released")
    successor = operator.review(record.id, "release", record.content_hash).successor
    assert successor is not None
    operator.hold(successor.id, reason="matter 42")
    result = operator.sweep(reason="tidy", before="2099-01-01")
    assert set(result.held) == {record.id, successor.id}
    assert result.forgotten == () and selected(result) == set()
    assert stored(operator, record.id).status.value != "forgotten"


def test_a_copy_erased_with_an_earlier_memory_has_that_ones_certificate(
    make_service: ServiceFactory,
) -> None:
    operator = make_service()
    operator.add_agent("ada")
    record = make_service(
        settings=Settings(llm_writes="quarantined"), principal="agent:ada"
    ).remember("waits for review, then is released")
    successor = operator.review(record.id, "release", record.content_hash).successor
    assert successor is not None
    result = operator.sweep(reason="tidy", before="2099-01-01")
    assert selected(result) == {record.id, successor.id}
    (certificate,) = result.forgotten
    assert set(certificate["erased"]) == {record.id, successor.id}


def test_an_applications_sweep_forgets_the_shared_tiers_only(
    timeline: tuple[MemoryService, dict[str, str]],
) -> None:
    operator, ids = timeline
    app = operator.acting_as("app:records")
    result = app.sweep(reason="tidy", before="2026-04-01")
    assert {c["target"] for c in result.forgotten} == {ids["global-0"], ids["web-0"]}
    assert stored(operator, ids["ada-0"]).status.value == "active"
