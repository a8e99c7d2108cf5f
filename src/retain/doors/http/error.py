"""How the REST door answers a refusal: ``{"error": {"code", "message", "remedy",
"details"}}`` with the HTTP status of the error's class (``HTTP_STATUS``), the door's
hint for the fix a refusal names (``HINTS``), and a request FastAPI could not read
turned into the service's own refusal naming the field (``invalid_request``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from retain import errors
from retain.doors.http.request import API
from retain.errors import RetainError

# An error's HTTP status: its nearest class here (anything unmapped is a bug: 500).
HTTP_STATUS: dict[type[RetainError], int] = {
    errors.InvalidInput: 400,
    errors.RequestTooLarge: 413,
    errors.Unauthenticated: 401,
    errors.AccessDenied: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.StaleUpdate: 412,
    errors.ReviewRefused: 409,
    errors.BudgetExceeded: 422,
    errors.EditFailed: 422,
    errors.TransferError: 422,
    errors.SecretDetected: 422,
    errors.SignatureInvalid: 422,
    errors.StoreBusy: 503,
    errors.EmbedderError: 503,
    errors.RecallFailed: 504,
    errors.StoreError: 500,
    errors.IntegrityFailed: 500,
    errors.ConfigInvalid: 500,
    errors.ExtraMissing: 500,
    errors.ListenFailed: 500,  # the server itself could not listen: never an answer
}


def http_status(error: RetainError) -> int:
    for cls in type(error).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 500


def _act_as(details: Mapping[str, Any]) -> str:
    kinds = " or ".join(details.get("allowed") or ())
    return f"send the bearer token of {kinds} principal" if kinds else ""


# How this door does the fix a refusal names (``RetainError.hinted``).
HINTS: Mapping[str, errors.Hint] = {
    "act_as": _act_as,
    "grant": f"an operator's POST {API}/access/grants",
    "add_project": f"POST {API}/projects",
    "add_agent": f"POST {API}/agents",
    "add_team": f"POST {API}/teams",
    "find": f"GET {API}/memories or POST {API}/memories/search",
    "list_project": f"GET {API}/memories?project={{project}} lists them",
    "name_project": "the project query parameter",
    "update": "PUT it without create_only",
    "rename_project": f"POST {API}/projects/NAME/rename",
    "reindex": "`retain reindex` where the store is",
    "verify": "`retain verify` where the store is",
    "rebuild": "`retain verify --rebuild` where the store is",
    "redact": "the body field redact: true writes each secret as its marker",
    "quarantine": f"GET {API}/quarantine shows it with its content_hash",
    "ticket": f"GET {API}/tickets/{{ticket}} shows the ticket it waits on",
    "release_hold": f"an operator's or application's DELETE {API}/memories/{{id}}/hold",
    "keygen": "`retain receipt keygen` where the store is, then key_file under [signing]",
    "graph": f"GET {API}/memories/{{id}}/graph shows what replaced it",
}


def error_response(error: RetainError) -> JSONResponse:
    error = error.hinted(HINTS)
    headers = {"Retry-After": "1"} if isinstance(error, errors.StoreBusy) else None
    if isinstance(error, errors.Unauthenticated):
        headers = {"WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": error.to_dict()}, http_status(error), headers=headers)


# What a request's field broke, in the words the service uses (pydantic's error types).
_PROBLEMS = {
    "missing": "is required",
    "extra_forbidden": "is not a field of this request",
    "string_type": "must be text",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "json_invalid": "is not valid JSON",
    "json_type": "is not valid JSON",
    "greater_than_equal": "must be at least {ge}",
    "less_than_equal": "must be at most {le}",
    "string_too_short": "must be at least {min_length} characters",
    "string_too_long": "must be at most {max_length} characters",
    "string_pattern_mismatch": "is not in the form the service takes",
    "too_short": "must hold at least {min_length} items",
    "too_long": "must hold at most {max_length} items",
    "literal_error": "must be one of {expected}",
    "enum": "must be one of {expected}",
}
_PLACES = ("body", "query", "path", "header", "cookie")
# A field whose value is out of its form is refused with the code the service gives it.
_SHAPES = ("string_pattern_mismatch", "string_too_long", "string_too_short", "too_long")
_FIELD_ERRORS: dict[str, type[errors.InvalidInput]] = {
    **dict.fromkeys(("name", "team", "agent", "project"), errors.InvalidName),
    **dict.fromkeys(("expires", "valid_from", "valid_at", "known_at"), errors.InvalidTime),
    "unverified": errors.InvalidTime,
    "references": errors.TooManyReferences,  # only its count has a maximum
}


def invalid_request(problems: Sequence[Mapping[str, Any]]) -> errors.InvalidInput:
    """A request FastAPI could not read into a verb's arguments, as the service's own
    refusal naming the field (the body's, or the query's, parameter): ``invalid_value``,
    or the code the service gives a field out of its form (``invalid_name``,
    ``invalid_time``, ``too_many_references``)."""
    listed = []
    for problem in problems:
        loc = [str(part) for part in problem.get("loc", ())]
        named = loc[1:] if len(loc) > 1 and loc[0] in _PLACES else loc
        field = named[0] if named else "body"
        words = _PROBLEMS.get(str(problem.get("type", "")))
        try:
            said = words.format(**problem.get("ctx", {})) if words else None
        except (KeyError, IndexError):
            said = None
        listed.append({"field": field, "at": ".".join(named), "problem": said or "is malformed"})
    first = listed[0] if listed else {"field": "body", "at": "body", "problem": "is malformed"}
    shape = bool(problems) and str(problems[0].get("type", "")) in _SHAPES
    kind = _FIELD_ERRORS.get(first["field"], errors.InvalidValue) if shape else errors.InvalidValue
    if kind is errors.TooManyReferences and first["at"] != "references":
        kind = errors.InvalidValue  # one reference out of its form, not too many of them
    return kind(
        f"{first['at']} {first['problem']}",
        remedy="see /openapi.json for the request's fields",
        field=first["field"],
        problems=listed,
    )


class ErrorDetail(BaseModel):
    code: str
    message: str
    remedy: str
    details: dict[str, Any]


class ErrorBody(BaseModel):
    """Every refusal: the error's stable code, what would have happened, what to do."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": "refused: see the error's code"}
    for status in sorted({*HTTP_STATUS.values(), 405})
}
