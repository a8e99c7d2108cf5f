"""Every public verb refuses an argument of the wrong type with ``invalid_value`` naming
it, before anything is written (``fields.typed``), on both backends."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import ServiceFactory, store_state

from retain import errors, fields
from retain.chrono import ManualClock, parse_duration, parse_valid_from
from retain.conversation import turn_of
from retain.results import WriteRequest
from retain.service import MemoryService

# A wrong value of every kind; each argument is given those its annotation refuses.
WRONG: tuple[object, ...] = (True, 5, 1.5, "x", [5], None, {"a": 1}, b"x")


def _progress(phase: str, done: int, total: int) -> None:
    return None


# verb: (acts as an agent, positional arguments, keyword arguments) — a valid call, so the
# wrong-typed argument is the only thing wrong with it.
CALLS: dict[str, tuple[bool, tuple[Any, ...], dict[str, Any]]] = {
    "offer": (False, ("search",), {}),
    "add_project": (False, ("ops",), {}),
    "add_agent": (False, ("bob",), {}),
    "add_team": (False, ("crew",), {}),
    "join_team": (False, ("crew", "ada"), {}),
    "remember": (
        True,
        ("the staging host moved",),
        {
            "description": "d",
            "tags": ["infra"],
            "priority": 3,
            "subject": "staging",
            "thread": "t1",
            "valid_from": "2020-01-01",
        },
    ),  # fmt: skip
    "update": (
        True,
        ("01ID", "the staging host moved again"),
        {
            "description": "d",
            "tags": ["infra"],
            "priority": 3,
            "subject": "staging",
            "thread": "t1",
            "valid_from": "2020-01-01",
        },
    ),  # fmt: skip
    "recall": (
        True,
        ("staging",),
        {"project": "web", "limit": 5, "budget_tokens": 100, "min_trust": "observed"},
    ),
    "retier": (
        False,
        ("01ID", "verified"),
        {"reason": "checked", "evidence": {"ref": "01EV", "path": "a"}},
    ),
    "forget": (
        True,
        ("01ID",),
        {"project": "web", "reason": "wrong", "keep_digest": False, "compact": False},
    ),  # noqa: E501
    "certificate": (False, ("01ID",), {}),
    "fact_confirm": (False, ("01ID",), {"reason": "checked"}),
    "compact": (False, (), {"full": True}),
    "propose": (True, ("Add a rule",), {"target": "global", "body": "b", "evidence": "e"}),
    "list_proposals": (False, (), {"status": "open"}),
    "observe": (
        False,
        ("get_issue",),
        {
            "identity": "agent:ada",
            "session": "s1",
            "server": "gh",
            "provenance": "mcp",
            "native": False,
        },
    ),  # fmt: skip
    "reset_session": (False, ("agent:ada", "s1"), {"boundary": "clear"}),
    "session_status": (False, ("agent:ada", "s1"), {}),
    "list_tickets": (False, (), {"status": "open", "target": "global", "record": "01ID"}),
    "list_quarantine": (False, (), {"limit": 5, "after": "01ID"}),
    "review": (False, ("01ID", "release", "abc"), {"rationale": "read it"}),
    "grant": (False, ("app:ci", "memory.read", "realm:default"), {"effect": "allow"}),
    "revoke": (False, ("app:ci", "memory.read", "realm:default"), {"effect": "allow"}),
    "get_ticket": (False, ("01T",), {}),
    "approve": (False, ("01T",), {"reason": "agreed"}),
    "reject": (False, ("01T",), {"reason": "not so"}),
    "fact_write": (
        False,
        ("ada", "employer", "Acme"),
        {"project": "web", "valid_from": "2020-01-01", "reason": "hired"},
    ),
    "fact_read": (
        False,
        ("ada", "employer"),
        {"project": "web", "valid_at": "2020-01-01", "known_at": "2020-01-01"},
    ),
    "fact_history": (False, ("ada", "employer"), {"project": "web", "min_trust": "observed"}),
    "fact_retract": (False, ("ada", "employer"), {"project": "web", "reason": "wrong"}),
    "index": (
        False,
        ("ops", "deployment", "vector", "needs approval"),
        {"metadata": {"a": 1}, "conflict": True, "conflict_reason": "r", "project": "web"},
    ),
    "query": (False, ("ops", "deployment", "vector", "approval"), {"project": "web"}),
    "stores": (False, (), {"project": "web"}),
    "gate": (False, ("ops", "deployment"), {"project": "web"}),
    "context": (
        True,
        (),
        {
            "project": "web",
            "turn": "deploys",
            "session": "s1",
            "restate": False,
            "recall_timeout_ms": 10,
            "recall_failure_policy": "skip",
        },
    ),  # fmt: skip
    "list_injections": (
        False,
        (),
        {"memory_id": "01ID", "session": "s1", "identity": "agent:ada", "limit": 5},
    ),
    "rename_project": (False, ("web", "site"), {}),
    "remove_project": (False, ("web",), {}),
    "write_many": (
        False,
        ([WriteRequest("fresh", description="A fresh memory")],),
        {"notes": True, "reason": "batch", "progress": _progress},
    ),
    "ingest_conversation": (
        False,
        ([{"speaker": "Ada", "text": "hello"}],),
        {
            "thread": "chat-1",
            "project": "web",
            "at": "2023-05-08",
            "reason": "import",
            "redact": False,
            "progress": _progress,
        },
    ),
    "edit": (
        False,
        ("deploy-rule", "Fridays", "Mondays"),
        {"replace_all": False, "verified": True, "project": "web"},
    ),
    "get": (False, ("deploy-rule",), {"project": "web"}),
    "read": (False, ("deploy-rule",), {"offset": 0, "project": "web"}),
    "list_memories": (
        False,
        (),
        {
            "project": "web",
            "tag": "ops",
            "referencing": "x",
            "unverified": "90d",
            "expired": False,
            "limit": 5,
            "after": None,
        },
    ),  # fmt: skip
    "search": (
        False,
        ("deploy",),
        {
            "project": "web",
            "tier": "global",
            "limit": 5,
            "tag": "ops",
            "referencing": "x",
            "unverified": "90d",
            "expired": False,
            "budget_tokens": 100,
        },
    ),  # fmt: skip
    "delete": (False, ("deploy-rule",), {"project": "web"}),
    "export": (False, ("SNAPSHOT",), {"project": "web", "progress": _progress}),
    "export_log": (False, ("SNAPSHOT",), {"progress": _progress}),
    "import_": (False, ("SNAPSHOT",), {"force": False, "create": False, "progress": _progress}),
    "import_from": (
        False,
        ("mcp-memory", "FILE"),
        {
            "project": "web",
            "create": False,
            "dry_run": False,
            "force": False,
            "progress": _progress,
        },
    ),
    "events": (False, (), {"after": 0, "limit": 5, "memory_id": "01ID"}),
    "verify": (False, (), {"rebuild": False, "progress": _progress}),
    "migrate_to": (False, ("BACKEND",), {"progress": _progress}),
    "reindex": (False, (), {"progress": _progress}),
    "index_vectors": (False, (), {"progress": _progress}),
    "hold": (False, ("01ID",), {"reason": "matter 42"}),
    "release_hold": (False, ("01ID",), {"reason": "closed"}),
    "held": (False, ("01ID",), {}),
    "mirror_status": (False, (), {"limit": 5}),
    "mirror_retry": (False, (), {"progress": _progress}),
    "sweep": (
        False,
        (),
        {
            "reason": "retention",
            "before": "2020-01-01",
            "scope": "global",
            "keep_digest": False,
            "dry_run": True,
            "progress": _progress,
        },
    ),  # fmt: skip
    "acting_as": (False, ("agent:ada",), {"realm": "default"}),
    "graph": (False, ("deploy-rule",), {"project": "web"}),
    "link": (
        False,
        ("deploy-rule", "01ID", "similar_to"),
        {"reason": "alike", "project": "web"},
    ),
    "decide": (
        False,
        ("deploy-rule", "keep"),
        {"target": "01ID", "reason": "both hold", "project": "web"},
    ),
    "dedup": (False, (), {"threshold": 0.7, "project": "web", "progress": _progress}),
    "hygiene": (False, (), {"unverified": "90d", "expiring": "7d", "limit": 5}),
    "records": (
        False,
        (),
        {
            "scope": "global",
            "identity": None,
            "status": "active",
            "trust": "attested",
            "tag": "ops",
            "text": "deploy",
            "limit": 5,
            "cursor": None,
        },
    ),
    "record": (False, ("01ID",), {}),
    "overview": (False, (), {"days": 7}),
    "timeline": (False, (), {"kinds": ("create",), "before": 10, "limit": 5}),
}
# Verbs without an argument to get wrong.
NO_ARGUMENTS = {
    "close", "list_agents", "list_teams", "list_projects", "status", "offered_verbs",
    "check_principal", "expire_tickets", "list_grants", "chain_head",
}  # fmt: skip
# An argument whose type is structural (a ``Backend`` is a Protocol): its methods tell.
UNCHECKED = {("migrate_to", "target")}


def _verbs() -> set[str]:
    return {
        name
        for name, member in vars(MemoryService).items()
        if not name.startswith("_") and fields.is_method(member)
    }


def test_the_table_names_every_public_verb() -> None:
    assert set(CALLS) | NO_ARGUMENTS | {"write"} == _verbs()


def _wrong_for(hint: object) -> list[object]:
    return [value for value in WRONG if not fields.fits(hint)(value)]


def _refused(service: MemoryService, call: Callable[[], object], field: str) -> None:
    before = store_state(service)
    with pytest.raises(errors.InvalidValue) as caught:
        call()
    assert caught.value.code == "invalid_value"
    assert caught.value.details["field"] == field, caught.value
    assert field in caught.value.message
    assert store_state(service) == before


@pytest.fixture
def stocked(make_service: ServiceFactory) -> tuple[MemoryService, MemoryService]:
    operator = make_service()
    operator.add_project("web")
    operator.add_agent("ada")
    operator.write("deploy-rule", description="Deploys need a green CI run", body="Not Fridays.")
    return operator, make_service(principal="agent:ada")


@pytest.mark.parametrize("verb", sorted(CALLS))
def test_every_verb_refuses_an_argument_of_the_wrong_type(
    stocked: tuple[MemoryService, MemoryService], verb: str, tmp_path: Path
) -> None:
    operator, agent = stocked
    as_agent, args, kwargs = CALLS[verb]
    service = agent if as_agent else operator
    replacements = {"SNAPSHOT": tmp_path / "snapshot", "BACKEND": operator.backend}
    args = tuple(replacements.get(a, a) if isinstance(a, str) else a for a in args)
    method = getattr(service, verb)
    signature = inspect.signature(method)
    # A verb is a capability module's function over the session: its first parameter
    # names the session's class, which that module imports for the type checker only.
    hints = fields.argument_hints(getattr(MemoryService, verb), {"MemoryService": MemoryService})
    checked = 0
    for parameter in signature.parameters:
        if (verb, parameter) in UNCHECKED:
            continue
        for wrong in _wrong_for(hints[parameter]):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            bound.arguments[parameter] = wrong
            _refused(service, lambda b=bound: method(*b.args, **b.kwargs), parameter)
            checked += 1
    assert checked >= len(signature.parameters) - len(UNCHECKED)


def test_write_refuses_an_option_of_the_wrong_type_or_an_unknown_one(
    service: MemoryService,
) -> None:
    service.write("deploy-rule", description="Deploys need a green CI run")
    hints = typing.get_type_hints(WriteRequest)
    for option, hint in hints.items():
        for wrong in _wrong_for(hint):
            given = {"description": "A description", option: wrong}
            name = given.pop("name", "deploy-rule")
            _refused(service, lambda n=name, g=given: service.write(n, **g), option)
    _refused(service, lambda: service.write("deploy-rule", colour="red"), "colour")
    _refused(service, lambda: service.write_many([WriteRequest("x", tags=5)]), "tags")  # type: ignore[arg-type]


def test_an_unknown_argument_is_refused_naming_the_verbs_own(service: MemoryService) -> None:
    with pytest.raises(errors.InvalidValue) as caught:
        service.get("x", bogus=1)  # type: ignore[call-arg]
    assert caught.value.message == "get takes no argument 'bogus'"
    assert caught.value.remedy == "pass get's arguments once each: name, project, min_trust"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s: s.write("a", description="d", tags=5), "tags"),
        (lambda s: s.write("a", description="d", references=5), "references"),
        (lambda s: s.write("a", description="d", priority=True), "priority"),
        (lambda s: s.search("deploy", limit=True), "limit"),
        (lambda s: s.list_memories(limit=True), "limit"),
        (lambda s: s.events(after=False), "after"),
    ],
    ids=["tags", "references", "priority-bool", "limit-bool", "list-limit-bool", "after-bool"],
)
def test_the_reported_cases_are_refused(
    service: MemoryService, call: Callable[[MemoryService], object], field: str
) -> None:
    _refused(service, lambda: call(service), field)


def test_an_agent_remembering_with_tags_false_is_refused(make_service: ServiceFactory) -> None:
    make_service().add_agent("ada")
    agent = make_service(principal="agent:ada")
    _refused(agent, lambda: agent.remember("hello", tags=False), "tags")  # type: ignore[arg-type]


# -- the patterns the doors publish say what the checks say ---------------------------------

_TRICKY = " \t\n\r\x00\x0b\x1c\x85\xa0\u2028\u3000,.-_aZ09:+TzZé"


def _accepts(check: Callable[[str], object], value: str) -> bool:
    try:
        check(value)
    except errors.InvalidInput:
        return False
    return True


def _fact_subject(value: str) -> str:
    if not fields.subject(value):
        raise errors.InvalidValue("empty", field="subject")
    return value


def _filled(value: str) -> str:
    if not fields.text(value, "text").strip():
        raise errors.InvalidValue("blank", field="text")
    return value


def _project(value: str) -> str:
    return fields.name(value, what="project") if value else value


def _time(value: str) -> str:
    """The time parser, but a day the calendar lacks (30 February) or one past the years
    it holds passes: the parser checks those, the pattern states the form."""
    if not value:
        return value
    try:
        date.fromisoformat(value[:10])
    except ValueError:
        if re.match("[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
            return value
    try:
        parse_valid_from(value, ManualClock())
    except errors.InvalidTime as exc:
        if "outside the years" in exc.message:
            return value
        raise
    return value


def _conversation_thread(value: str) -> str:
    if not fields.thread(value):  # ingest_conversation's own check: a thread is named
        raise errors.InvalidValue("no thread", field="thread")
    return value


PATTERNS: dict[str, tuple[str, Callable[[str], object], int]] = {
    "text": (fields.TEXT_PATTERN, lambda v: fields.text(v, "body"), 50),
    "filled": (fields.FILLED_PATTERN, _filled, 50),
    "name": (fields.NAME_PATTERN, fields.name, fields.NAME_MAX),
    "project": (fields.PROJECT_PATTERN, _project, fields.NAME_MAX),
    "tag": (fields.TAG_PATTERN, lambda v: fields.tags([v]), 80),
    "reference": (fields.REFERENCE_PATTERN, lambda v: fields.references([v]), 1100),
    "source": (fields.SOURCE_PATTERN, fields.source, 50),
    "subject": (fields.SUBJECT_PATTERN, fields.subject, 250),
    "fact subject": (fields.FACT_SUBJECT_PATTERN, _fact_subject, 250),
    "thread": (fields.THREAD_PATTERN, fields.thread, 250),
    "conversation thread": (fields.NAMED_THREAD_PATTERN, _conversation_thread, 250),
    "speaker": (
        fields.FACT_SUBJECT_PATTERN,
        lambda v: turn_of({"speaker": v, "text": "x"}, 1),
        250,
    ),
    "turn id": (
        fields.SUBJECT_PATTERN,
        lambda v: turn_of({"speaker": "a", "text": "x", "id": v}, 1),
        250,
    ),
    "predicate": (fields.PREDICATE_PATTERN, fields.predicate, 150),
    "tool": (fields.TOOL_PATTERN, fields.tool_name, 250),
    "duration": (fields.DURATION_PATTERN, lambda v: parse_duration(v) if v else v, 20),
    "time": (fields.TIME_PATTERN, _time, 40),
}


@pytest.mark.parametrize("what", sorted(PATTERNS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_published_pattern_matches_exactly_what_its_check_accepts(
    what: str, data: st.DataObject
) -> None:
    pattern, check, longest = PATTERNS[what]
    value = data.draw(
        st.one_of(
            st.from_regex(pattern, fullmatch=True).filter(lambda v: len(v) <= longest),
            st.text(alphabet=_TRICKY, max_size=12),
            st.text(max_size=12),
            st.text(alphabet="a ", min_size=longest - 2, max_size=longest + 2),
        )
    )
    matched = re.fullmatch(pattern, value) is not None and (
        what not in ("name", "project") or len(value) <= fields.NAME_MAX
    )
    assert matched == _accepts(check, value), repr(value)


def test_a_recall_timeout_past_a_day_is_refused_not_an_overflow(service: MemoryService) -> None:
    service.write("deploy-rule", description="Deploys need a green CI run")
    _refused(
        service,
        lambda: service.context(turn="deploys", recall_timeout_ms=2**62),
        "recall_timeout_ms",
    )
    assert service.context(turn="deploys", recall_timeout_ms=fields.RECALL_TIMEOUT_MAX_MS).text


def test_references_are_counted_as_given_so_a_schema_can_state_the_limit(
    service: MemoryService,
) -> None:
    before = store_state(service)
    with pytest.raises(errors.TooManyReferences):
        service.write("a", description="d", references=["same"] * (fields.MAX_REFERENCES + 1))
    assert store_state(service) == before
    written = service.write("a", description="d", references=["same"] * fields.MAX_REFERENCES)
    assert written.memory.references == ("same",)
