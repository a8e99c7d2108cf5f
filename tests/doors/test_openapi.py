"""Schemathesis against the published OpenAPI document: requests generated from it
never make the server fail, and every answer is one the document declares."""

from __future__ import annotations

import atexit
import shutil
import tempfile

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
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


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_generated_requests_get_declared_answers(case: schemathesis.Case) -> None:
    case.call_and_validate(
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ]
    )
