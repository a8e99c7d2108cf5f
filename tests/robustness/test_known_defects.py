"""Inputs the robustness properties found breaking retain, whose fixes are on other
branches of issue 14. Each is ``xfail(strict=True)`` naming the defect and the branch:
once the fix is merged the test passes, strict turns that into a failure, and the mark
is to be removed (and the input folded into the properties' strategies).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.robustness.strategies import agent_of, attempt, fresh, refused

from retain.service import MemoryService

WRONG_TYPES = pytest.mark.xfail(
    strict=True, reason="issue 14 defect 3 (wrong types), fixed on branch validation"
)
Call = Callable[[MemoryService], Any]


def write(**options: Any) -> Call:
    return lambda s: s.write("note", description="a note", **options)


def remember(**options: Any) -> Call:
    return lambda s: agent_of(s).remember("a note", **options)


@pytest.mark.parametrize(
    ("call", "code"),
    [
        pytest.param(write(tags=5), "invalid_value", marks=WRONG_TYPES, id="write-tags-int"),
        pytest.param(
            write(references=5), "invalid_value", marks=WRONG_TYPES, id="write-references-int"
        ),
        pytest.param(
            remember(tags=False), "invalid_value", marks=WRONG_TYPES, id="remember-tags-bool"
        ),
    ],
)
def test_a_known_defect_answers_or_refuses(
    service: MemoryService, call: Call, code: str | None
) -> None:
    """It answers, or refuses with ``code`` (any ``RetainError`` when None), writing
    nothing."""
    svc = fresh(service)
    result = attempt(svc, lambda: call(svc))
    if code is not None:
        assert refused(result) and result.code == code


def test_a_query_of_long_dotted_tokens_is_answered_or_refused_by_a_limit(
    service: MemoryService, backend_name: str, request: pytest.FixtureRequest
) -> None:
    if backend_name == "sqlite":  # "LIKE or GLOB pattern too complex": store_error
        request.applymarker(
            pytest.mark.xfail(
                strict=True, reason="issue 14 defect 7 (long queries), fixed on branch query"
            )
        )
    svc = fresh(service)
    svc.write("kept", description="a kept note")
    query = " ".join(f"a{i}.b{i}.c{i}" for i in range(6000))  # ~ 80 KB of dotted tokens
    result = attempt(svc, lambda: svc.search(query))
    assert not refused(result) or result.code != "store_error", result
