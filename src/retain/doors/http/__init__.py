"""The REST door: the service's verbs under ``/v1`` with FastAPI.

Translate only: a request's fields become a verb's arguments and its result a JSON
object; every rule, refusal and default is the service's. A refusal is
``{"error": {"code", "message", "remedy", "details"}}`` with the HTTP status of its
class in ``HTTP_STATUS`` — the same code the CLI and the Python API raise.

Who acts comes from the request's bearer token (``load_tokens``), never from a field of
the request. A server without tokens acts as ``operator:local``, as the CLI does, and
``retain serve`` binds it to a loopback address only.

Its modules: ``app`` (the app factory, the body limit, the MCP mount and the API pages),
``access`` (tokens, the binding check, who a request acts as), ``error`` (error
responses and the status of each error class), ``request`` (the parameters and bodies a
request may hold) and the routes of each capability: ``memories``, ``agents``, ``facts``,
``context``, ``sessions`` and ``realm``.
"""

from __future__ import annotations

from retain.doors.http.access import (
    LOCAL_PRINCIPAL,
    TOKENS_ENV,
    check_binding,
    load_tokens,
    parse_tokens,
)
from retain.doors.http.app import (
    DOCS_ASSETS,
    MAX_BODY_BYTES,
    MCP_PATH,
    SERVE_ENV,
    BodyLimit,
    Tools,
    app_from_environment,
    create_app,
    offline_docs,
    one_blas_thread,
)
from retain.doors.http.error import (
    ERROR_RESPONSES,
    HINTS,
    HTTP_STATUS,
    ErrorBody,
    ErrorDetail,
    error_response,
    http_status,
    invalid_request,
)
from retain.doors.http.request import API, MAX_PAGE, PAGE
from retain.doors.principals import Services

__all__ = [
    "API",
    "DOCS_ASSETS",
    "ERROR_RESPONSES",
    "HINTS",
    "HTTP_STATUS",
    "LOCAL_PRINCIPAL",
    "MAX_BODY_BYTES",
    "MAX_PAGE",
    "MCP_PATH",
    "PAGE",
    "SERVE_ENV",
    "TOKENS_ENV",
    "BodyLimit",
    "ErrorBody",
    "ErrorDetail",
    "Tools",
    "Services",
    "app_from_environment",
    "check_binding",
    "create_app",
    "error_response",
    "http_status",
    "invalid_request",
    "load_tokens",
    "offline_docs",
    "one_blas_thread",
    "parse_tokens",
]
