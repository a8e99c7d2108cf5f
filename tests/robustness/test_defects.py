"""Inputs the robustness properties found breaking retain (issue 14), kept as
regressions: each refused or answered, never a crash, and nothing written when refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from tests.robustness.strategies import agent_of, attempt, fresh, refused

from retain.errors import InvalidInput
from retain.service import MemoryService

Call = Callable[[MemoryService, MemoryService], Any]  # (operator, a registered agent)


def write(**options: Any) -> Call:
    return lambda s, _: s.write("note", description="a note", **options)


def remember(**options: Any) -> Call:
    return lambda _, agent: agent.remember("a note", **options)


@pytest.mark.parametrize(
    ("call", "code"),
    [
        pytest.param(write(tags=5), "invalid_value", id="write-tags-int"),
        pytest.param(write(references=5), "invalid_value", id="write-references-int"),
        pytest.param(remember(tags=False), "invalid_value", id="remember-tags-bool"),
    ],
)
def test_a_known_defect_answers_or_refuses(
    service: MemoryService, call: Call, code: str | None
) -> None:
    """It answers, or refuses with ``code`` (any ``RetainError`` when None), writing
    nothing."""
    svc = fresh(service)
    agent = agent_of(svc)  # registered before the call: its refusal must write nothing
    result = attempt(svc, lambda: call(svc, agent))
    if code is not None:
        assert refused(result) and result.code == code


def test_a_query_of_long_dotted_tokens_is_answered_or_refused_by_a_limit(
    service: MemoryService,
) -> None:
    # It was SQLite's "LIKE or GLOB pattern too complex", a store_error (defect 7).
    svc = fresh(service)
    svc.write("kept", description="a kept note")
    query = "a.b" * 22_000  # one dotted token of 66 KB
    result = attempt(svc, lambda: svc.search(query))
    assert not refused(result) or result.code != "store_error", result


wrong_types = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.binary(max_size=8),
    st.lists(st.integers(), min_size=1, max_size=3),
)
# (verb, the argument given a wrong type)
VERB_FIELDS: list[tuple[str, str]] = [
    *[("write", f) for f in ("name", "description", "body", "tags", "priority", "load",
                             "references", "source", "expires", "subject", "thread",
                             "valid_from", "project")],
    *[("remember", f) for f in ("text", "description", "tags", "priority", "subject",
                                "thread", "valid_from")],
    *[("search", f) for f in ("queries", "limit", "tag", "project", "budget_tokens")],
    ("get", "name"), ("read", "offset"), ("delete", "name"), ("edit", "old"), ("edit", "new"),
    *[("fact_write", f) for f in ("subject", "predicate", "value", "valid_from")],
    ("add_project", "name"), ("add_agent", "name"), ("add_team", "name"),
]  # fmt: skip


INT_FIELDS = {"priority", "limit", "budget_tokens", "offset"}  # where an int is no wrong type


BASE_ARGUMENTS: dict[str, dict[str, object]] = {
    "write": {"name": "note", "description": "a note"},
    "remember": {"text": "a note"},
    "search": {"queries": "note"},
    "get": {"name": "note"},
    "read": {"name": "note"},
    "delete": {"name": "note"},
    "edit": {"name": "note", "old": "body", "new": "text"},
    "fact_write": {"subject": "host", "predicate": "os", "value": "linux"},
    "add_project": {"name": "web"},
    "add_agent": {"name": "coder"},
    "add_team": {"name": "ops"},
}


@example(verb_field=("write", "tags"), value=5)
@example(verb_field=("write", "references"), value=5)
@example(verb_field=("remember", "tags"), value=False)
@given(verb_field=st.sampled_from(VERB_FIELDS), value=wrong_types)
def test_a_value_of_the_wrong_type_is_refused_naming_its_field(
    service: MemoryService, verb_field: tuple[str, str], value: object
) -> None:
    verb, field = verb_field
    assume(field not in INT_FIELDS or not isinstance(value, int) or isinstance(value, bool))
    svc = fresh(service)
    svc.write("note", description="a note", body="some body")
    actor = agent_of(svc, "writer") if verb == "remember" else svc
    arguments = {**BASE_ARGUMENTS[verb], field: value}
    result = attempt(actor, lambda: getattr(actor, verb)(**arguments))
    assert isinstance(result, InvalidInput), (verb, field, value, result)
    assert result.details.get("field") == field or field in result.message, result
