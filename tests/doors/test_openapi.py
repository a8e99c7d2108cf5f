"""Schemathesis against the published OpenAPI document: requests generated from it
never make the server fail, every answer is one the document declares, a request the
document allows is not refused as malformed, and one it forbids is refused.

The document carries the service's own rules (``fields``' patterns and bounds), so the
two conformance checks hold exactly, but for the refusals no schema can state: they
depend on what the store holds or on two fields together (``BEYOND_SCHEMA``).

25 examples per operation, the same ones at every run (hypothesis derandomised: the test
command's verdict does not depend on its luck), or ``RETAIN_SCHEMATHESIS_EXAMPLES``, drawn
afresh at each run (``bench/reliability.py`` passes a larger count this way, to explore).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

import retain
from retain.doors import http

# Schemathesis reads the schema when the module is collected, so the store is made then
# (a SQLite store in a directory removed at exit; the door is the same on both backends).
_HOME = tempfile.mkdtemp(prefix="retain-openapi-")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
_SERVICE = retain.open(home=_HOME)
_SERVICE.add_project("web")
_SERVICE.write("deploy-rule", description="Deploys need a green CI run", body="Not Fridays.")
schema = schemathesis.openapi.from_asgi("/openapi.json", http.create_app(_SERVICE))

# Refusals of a well-formed request that answer the store's state, the clock, or two
# fields together: (code, field) of a 400, or a status. Nothing else may refuse one.
BEYOND_SCHEMA: set[tuple[str, str | None]] = {
    ("description_required", None),  # a new memory needs one; an existing one does not
    ("no_project", None),  # the project tier with no project named
    ("invalid_value", "offset"),  # past the end of this body
    ("invalid_value", "valid_from"),  # a fact's new value starts after the current one, by now
    ("invalid_value", "cursor"),  # a cursor is one a listing gave
    ("invalid_time", "expires"),  # the calendar itself: no 30 February, no day after 9999
    ("invalid_time", "valid_from"),
    ("invalid_time", "valid_at"),
    ("invalid_time", "known_at"),
    ("query_too_long", "queries"),  # queries not blank, their characters, each one's words
    ("invalid_value", "evidence"),  # a retier's evidence is for verified, and verified needs it
    ("invalid_value", "server"),  # a server is MCP provenance's: the two fields together
    ("invalid_value", "identity"),  # an operator names the agent; an agent's token need not
    ("invalid_value", "on"),  # a grant's on with its action (realm.admin), or another realm
    ("invalid_value", "fact"),  # an index needs a fact or a conflict: one of the two
    ("invalid_value", "metadata"),  # kept with a fact; and its size as JSON
    ("invalid_value", "conflict_reason"),  # a reason needs conflict
    ("invalid_value", "turns"),  # a turn says something (text or caption); one memory a turn
    ("invalid_time", "at"),  # a conversation's or a turn's time: the calendar itself
    ("invalid_time", "before"),  # a sweep's instant: the calendar itself (no 31 June)
    ("invalid_value", "scope"),  # a dedup pass's scope or project, not both
}
STATE_STATUSES = {412, 422}  # stale_update; budget, edit, transfer and secret refusals


def schema_valid_request_accepted(ctx: Any, response: Any, case: schemathesis.Case) -> None:
    """``positive_data_acceptance``, but for ``BEYOND_SCHEMA``."""
    if response.status_code in STATE_STATUSES:
        return
    if response.status_code == 400:
        error = response.json().get("error", {})
        if (error.get("code"), error.get("details", {}).get("field")) in BEYOND_SCHEMA:
            return
    positive_data_acceptance(ctx, response, case)


def schema_invalid_request_refused(ctx: Any, response: Any, case: schemathesis.Case) -> None:
    """``negative_data_rejection``, with a body past the door's limit refused as too
    large (413, ``request_too_large``: its size is checked before what it holds)."""
    if response.status_code == 413:
        assert response.json()["error"]["code"] == "request_too_large"
        return
    negative_data_rejection(ctx, response, case)


@schema.parametrize()
@settings(
    max_examples=int(os.environ.get("RETAIN_SCHEMATHESIS_EXAMPLES", "25")),
    derandomize="RETAIN_SCHEMATHESIS_EXAMPLES" not in os.environ,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_generated_requests_get_declared_answers(case: schemathesis.Case) -> None:
    case.call_and_validate(
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
            schema_valid_request_accepted,
            schema_invalid_request_refused,
        ]
    )
