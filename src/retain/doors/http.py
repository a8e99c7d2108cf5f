"""The REST door: the service's verbs under ``/v1`` with FastAPI.

Translate only: a request's fields become a verb's arguments and its result a JSON
object; every rule, refusal and default is the service's. A refusal is
``{"error": {"code", "message", "remedy", "details"}}`` with the HTTP status of its
class in ``HTTP_STATUS`` — the same code the CLI and the Python API raise.

Who acts comes from the request's bearer token (``load_tokens``), never from a field of
the request. A server without tokens acts as ``operator:local``, as the CLI does, and
``retain serve`` binds it to a loopback address only.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import fastapi_offline
import threadpoolctl
from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as InPath
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import retain
from retain import errors, fields
from retain.doors import mcp
from retain.doors.principals import Services as Services  # the sessions the CLI serves MCP with
from retain.doors.principals import principal_of
from retain.doors.records import facts_of, plain, record_of
from retain.errors import RetainError
from retain.service import SEARCH_LIMIT_MAX, MemoryService, actor

API = "/v1"
MCP_PATH = "/mcp"  # the MCP server over streamable HTTP
DOCS_ASSETS = "/docs-assets"  # Swagger UI's and ReDoc's files, served by the app itself
MAX_BODY_BYTES = 1024 * 1024  # a request's body; larger ones are refused whole
PAGE = 100  # a listing's page unless the request asks for another size
MAX_PAGE = 1000
TOKENS_ENV = "RETAIN_TOKENS"
LOCAL_PRINCIPAL = actor.LOCAL_OPERATOR

# An error's HTTP status: its nearest class here (anything unmapped is a bug: 500).
HTTP_STATUS: dict[type[RetainError], int] = {
    errors.InvalidInput: 400,
    errors.RequestTooLarge: 413,
    errors.Unauthenticated: 401,
    errors.AccessDenied: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.StaleUpdate: 412,
    errors.BudgetExceeded: 422,
    errors.EditFailed: 422,
    errors.TransferError: 422,
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


# -- tokens --------------------------------------------------------------------------------


def parse_tokens(text: str, source: str) -> dict[str, str]:
    """``TOKEN=PRINCIPAL`` pairs, one a line or separated by commas; ``#`` starts a comment."""
    tokens: dict[str, str] = {}
    for raw in text.replace(",", "\n").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        token, sep, principal = (part.strip() for part in line.partition("="))
        if not sep or not token or not principal:
            raise errors.ConfigInvalid(
                f"{source}: {line!r} is not TOKEN=PRINCIPAL",
                remedy="write each token as TOKEN=PRINCIPAL, e.g. s3cret=agent:coder",
            )
        if actor.kind_of(principal) is None:
            raise errors.ConfigInvalid(
                f"{source}: {principal!r} is not a principal",
                remedy=f"name one of {actor.FORMS}",
            )
        if token in tokens:
            raise errors.ConfigInvalid(
                f"{source}: a token is given twice", remedy="give every principal its own token"
            )
        tokens[token] = principal
    return tokens


def load_tokens(
    path: Path | None = None, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The tokens of ``$RETAIN_TOKENS`` and of the tokens file ``path``."""
    tokens = parse_tokens(environ.get(TOKENS_ENV, ""), f"${TOKENS_ENV}")
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise errors.ConfigInvalid(
                f"cannot read the tokens file {path}: {exc}",
                remedy="point --tokens at a readable UTF-8 file of TOKEN=PRINCIPAL lines",
            ) from exc
        for token, principal in parse_tokens(text, str(path)).items():
            if tokens.setdefault(token, principal) != principal:
                raise errors.ConfigInvalid(
                    f"a token of {path} names another principal in ${TOKENS_ENV}",
                    remedy="give every principal its own token",
                )
    return tokens


def check_binding(host: str, tokens: Mapping[str, str]) -> None:
    """Refuse to serve beyond this machine without tokens: every caller would be an operator."""
    if tokens or host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise errors.ConfigInvalid(
            f"serving on {host} without tokens would let anyone who reaches it act as "
            f"{LOCAL_PRINCIPAL}",
            remedy=f"serve on 127.0.0.1, or give tokens (${TOKENS_ENV} or --tokens FILE)",
            host=host,
        )


SERVE_ENV = "RETAIN_SERVE"  # what each process of `retain serve --workers N` opens


def one_blas_thread() -> None:
    """Keep numpy's BLAS to one thread in a serving process: requests are the server's
    parallelism, and BLAS threads spinning beside them (and beside the other workers)
    cost more than a search's small products gain (247 against 198 searches/s measured
    with one worker; bench/RESULTS.md)."""
    threadpoolctl.threadpool_limits(1, user_api="blas")


def app_from_environment() -> FastAPI:
    """The app one process of ``retain serve --workers N`` serves (uvicorn's factory): the
    store, tokens and host the command was given, passed in ``$RETAIN_SERVE``."""
    one_blas_thread()
    given = json.loads(os.environ[SERVE_ENV])
    service = retain.open(given["location"], home=given["home"])
    tokens = load_tokens(Path(given["tokens"]) if given["tokens"] else None)
    return create_app(service, tokens=tokens, host=given["host"])


class Running:
    """The ASGI app of the MCP server while the REST app runs (set by its lifespan)."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            error = errors.StoreBusy(
                "the MCP server is not running: the app was not started",
                remedy="serve the app with its lifespan (retain serve does)",
            )
            await error_response(error)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuse a request whose body is larger than ``limit`` bytes, before it is used."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await error_response(self._too_large())(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:  # a body sent without its length
                raise self._too_large()
            return message

        await self.app(scope, counted, send)

    def _too_large(self) -> errors.RequestTooLarge:
        return errors.RequestTooLarge(
            f"the request's body is larger than {self.limit} bytes",
            remedy="send less at a time (a large import goes through `retain import`)",
            limit=self.limit,
        )


# -- bodies ----------------------------------------------------------------------------------


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


# -- the service's rules, as the schema states them (fields.py's patterns and bounds) ------
#
# Stated, not enforced here: the service checks each one, so a value out of its form is
# refused with the very envelope Python and MCP give it. Only a value's JSON type is
# this door's to check.

F = fields


def _rule(**rule: Any) -> Any:
    """A body field's rule, stated in the schema (``minimum``, ``pattern``, ``enum``...)."""
    return Field(json_schema_extra=rule)


def _query(**rule: Any) -> Any:
    return Query(json_schema_extra=rule)


def _path(**rule: Any) -> Any:
    return InPath(json_schema_extra=rule)


def _integral(value: object) -> object:
    """JSON has one kind of number: ``76.0`` is the whole number 76, as JSON Schema reads
    it (``true`` and ``"76"`` stay refused)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Whole = BeforeValidator(_integral)
Text = Annotated[str, _rule(pattern=F.TEXT_PATTERN)]
Filled = Annotated[str, _rule(pattern=F.FILLED_PATTERN)]
Name = Annotated[str, _rule(pattern=F.NAME_PATTERN, maxLength=F.NAME_MAX)]
ProjectArg = Annotated[
    str, Field(json_schema_extra={"pattern": F.PROJECT_PATTERN, "maxLength": F.NAME_MAX})
]
Tag = Annotated[str, _rule(pattern=F.TAG_PATTERN)]
Reference = Annotated[str, _rule(pattern=F.REFERENCE_PATTERN)]
Subject = Annotated[str, _rule(pattern=F.SUBJECT_PATTERN)]
FactSubject = Annotated[str, _rule(pattern=F.FACT_SUBJECT_PATTERN)]
Predicate = Annotated[str, _rule(pattern=F.PREDICATE_PATTERN)]
Thread = Annotated[str, _rule(pattern=F.THREAD_PATTERN)]
Source = Annotated[str, _rule(pattern=F.SOURCE_PATTERN)]
Moment = Annotated[str, _rule(pattern=F.TIME_PATTERN)]
Duration = Annotated[str, _rule(pattern=F.DURATION_PATTERN)]
Priority = Annotated[int, _rule(minimum=F.MIN_PRIORITY, maximum=F.MAX_PRIORITY), Whole]
Limit = Annotated[int, _rule(minimum=1, maximum=SEARCH_LIMIT_MAX), Whole]
Budget = Annotated[int, _rule(minimum=1), Whole]
Session = Annotated[
    str, Field(json_schema_extra={"pattern": F.FILLED_PATTERN, "maxLength": F.SESSION_MAX_CHARS})
]
LoadName = Annotated[str, _rule(enum=["inline", "index", "search"])]
TierName = Annotated[str, _rule(enum=["global", "project"])]
Policy = Annotated[str, _rule(enum=["skip", "fail"])]
Target = Annotated[
    str, Field(json_schema_extra={"pattern": f"^(?:global|team:{F.NAME_PATTERN[1:-1]})$"})
]

# The same rules for a path's or a query's parameters.
NamePath = Annotated[
    str, InPath(json_schema_extra={"pattern": F.NAME_PATTERN, "maxLength": F.NAME_MAX})
]
ProjectQuery = Annotated[
    str | None, Query(json_schema_extra={"pattern": F.PROJECT_PATTERN, "maxLength": F.NAME_MAX})
]
TextQuery = Annotated[str | None, _query(pattern=F.TEXT_PATTERN)]
TagQuery = Annotated[str | None, _query(pattern=F.TAG_PATTERN)]
DurationQuery = Annotated[str | None, _query(pattern=F.DURATION_PATTERN)]
MomentQuery = Annotated[str | None, _query(pattern=F.TIME_PATTERN)]
PageQuery = Annotated[int, Query(ge=1, le=MAX_PAGE)]


class _Body(BaseModel):
    # strict: a JSON value of another type is refused, as the service refuses it (no "3"
    # for 3, no true for 1)
    model_config = ConfigDict(extra="forbid", strict=True)


class MemoryWrite(_Body):
    """A write: a field left out keeps what is there; ``""`` clears body or expiry."""

    description: Text | None = None
    body: Text | None = None
    tags: list[Tag] | None = None
    priority: Priority | None = None
    load: LoadName | None = None
    references: Annotated[list[Reference], _rule(maxItems=F.MAX_REFERENCES)] | None = None
    source: Source | None = None
    expires: Moment | None = None
    subject: Subject | None = None
    thread: Thread | None = None
    valid_from: Moment | None = None
    tier: TierName | None = None
    verified: bool = False
    create_only: bool = False
    expected_hash: Text | None = None


class EditBody(_Body):
    old: Annotated[str, _rule(pattern=F.TEXT_PATTERN, minLength=1)]
    new: Text
    replace_all: bool = False
    verified: bool = False


# One query, or synonyms. Their limits (how many are not blank, their characters together,
# each one's words and scanned terms) are for the service to check: no schema states them.
Queries = Text | list[Text]


class SearchBody(_Body):
    queries: Queries = Field(default_factory=list)
    project: ProjectArg | None = None
    tier: TierName | None = None
    limit: Limit = 10
    tag: Tag | None = None
    referencing: Text | None = None
    unverified: Duration | None = None
    expired: bool = False
    budget_tokens: Budget | None = None


class RecallBody(_Body):
    queries: Queries
    project: ProjectArg | None = None
    limit: Limit = 10
    budget_tokens: Budget | None = None


class RememberBody(_Body):
    text: Filled
    description: Text | None = None
    tags: list[Tag] | None = None
    priority: Priority | None = None
    subject: Subject | None = None
    thread: Thread | None = None
    valid_from: Moment | None = None


class FactWriteBody(_Body):
    subject: FactSubject
    predicate: Predicate
    value: Filled
    project: ProjectArg | None = None
    valid_from: Moment | None = None
    reason: Text = ""


class FactRetractBody(_Body):
    subject: FactSubject
    predicate: Predicate
    project: ProjectArg | None = None
    reason: Text = ""


class ForgetBody(_Body):
    id: Text
    reason: Text = ""


class ProposeBody(_Body):
    summary: Filled
    target: Target = "global"
    body: Text = ""
    evidence: Text = ""


class ContextBody(_Body):
    project: ProjectArg | None = None
    turn: Text | None = None
    session: Session | None = None
    restate: bool = False
    recall_timeout_ms: (
        Annotated[int, _rule(minimum=0, maximum=F.RECALL_TIMEOUT_MAX_MS), Whole] | None
    ) = None
    recall_failure_policy: Policy | None = None


class NameBody(_Body):
    name: Name


# -- the app ---------------------------------------------------------------------------------


def offline_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` with every script, style and icon served from
    ``DOCS_ASSETS``: the copies fastapi-offline installs (the ``server`` extra), so the
    pages work with no network."""
    from importlib.resources import files

    app.mount(
        DOCS_ASSETS, StaticFiles(directory=str(files(fastapi_offline) / "static")), name="docs"
    )

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            oauth2_redirect_url=None,
            swagger_ui_parameters={"validatorUrl": None},  # no badge from validator.swagger.io
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
            with_google_fonts=False,
        )


def create_app(
    service: MemoryService,
    *,
    tokens: Mapping[str, str] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    host: str = "127.0.0.1",
) -> FastAPI:
    """The REST API over ``service``'s store, and the MCP server at ``/mcp``; with
    ``tokens``, every request needs one. ``host`` is where it is served: on a loopback
    address the MCP endpoint refuses other Host headers (DNS rebinding)."""
    services = Services(service)
    known = dict(tokens or {})
    tools = mcp.create_server(services.of, local_principal=service.principal, tokens=known)
    tools_app = Running()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A session manager runs once: each start of the app makes its own. (A mounted
        # app's lifespan is not run, so the MCP sessions' is run here.) Stateless: every
        # request stands alone (and is authenticated), so any worker process answers it.
        tools_app.app = tools.streamable_http_app(
            streamable_http_path="/", host=host, stateless_http=True
        )
        try:
            async with tools.session_manager.run():
                yield
        finally:
            tools_app.app = None

    app = FastAPI(
        title="retain",
        version=retain.__version__,
        description="Governed long-term memory for AI agents.",
        openapi_url="/openapi.json",
        docs_url=None,  # FastAPI's pages load their scripts from a CDN: see offline_docs
        redoc_url=None,
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
    )
    offline_docs(app)
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    app.mount(MCP_PATH, tools_app)

    @app.exception_handler(RetainError)
    async def refused(request: Request, exc: RetainError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(invalid_request(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def routed(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, RetainError):  # refused while the body was read
            return error_response(exc.__cause__)
        if exc.status_code == 404:
            error: RetainError = errors.NotFound(
                f"no endpoint {request.method} {request.url.path}",
                remedy="see /openapi.json for the endpoints",
            )
        else:
            error = errors.InvalidInput(
                f"{request.method} {request.url.path}: {exc.detail}",
                remedy="see /openapi.json for the endpoints and their methods",
            )
        response = error_response(error)
        response.status_code = exc.status_code
        response.headers.update(exc.headers or {})  # a 405's Allow
        return response

    async def acting(request: Request) -> MemoryService:
        # async, on the event loop (a sync dependency costs a thread hop)
        if not known:
            return services.root
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        principal = principal_of(known, token.strip()) if scheme.lower() == "bearer" else None
        if principal is not None:
            held = services.held(principal)
            if held is not None:
                return held
            # a principal's first request opens its service, which reads the store
            opened: MemoryService = await run_in_threadpool(services.of, principal)
            return opened
        raise errors.Unauthenticated(
            "this server needs a bearer token it knows",
            remedy="send `Authorization: Bearer TOKEN` with a token of $RETAIN_TOKENS or the "
            "server's tokens file",
        )

    Acting = Depends(acting)
    now = service.clock.now

    @app.get(f"{API}/status", tags=["store"])
    def status(svc: MemoryService = Acting) -> dict[str, Any]:
        """Where the store is, what it holds, the embedder in use and whether it is degraded."""
        return {**svc.status().to_dict(), "principal": svc.principal}

    @app.get(f"{API}/memories", tags=["memories"])
    def list_memories(
        project: ProjectQuery = None,
        tag: TagQuery = None,
        referencing: TextQuery = None,
        unverified: DurationQuery = None,
        expired: bool = False,
        limit: PageQuery = PAGE,
        cursor: Annotated[
            str | None, Query(json_schema_extra={"pattern": F.CURSOR_PATTERN})
        ] = None,
        svc: MemoryService = Acting,
    ) -> dict[str, Any]:
        """A page of the memories of the global tier and the project's, in index order;
        ``next_cursor`` (when the page is full) continues after its last memory."""
        memories = svc.list_memories(
            project=project,
            tag=tag,
            referencing=referencing,
            unverified=unverified,
            expired=expired,
            limit=limit,
            after=cursor,
        )
        moment = now()
        full = len(memories) == limit
        return {
            "memories": [m.to_dict(moment) for m in memories],
            "next_cursor": fields.cursor_of(memories[-1].position) if full else None,
        }

    @app.get(f"{API}/events", tags=["store"])
    def events(
        after: Annotated[int, _query(minimum=0, maximum=F.WHOLE_MAX)] = 0,
        limit: PageQuery = PAGE,
        memory_id: TextQuery = None,
        svc: MemoryService = Acting,
    ) -> dict[str, Any]:
        """A page of the realm's event log after ``seq`` ``after``, oldest first."""
        rows = svc.events(after=after, limit=limit, memory_id=memory_id)
        return {
            "events": [e.to_dict() for e in rows],
            "next_cursor": rows[-1].seq if len(rows) == limit else None,
        }

    @app.post(f"{API}/memories/search", tags=["memories"])
    async def search(body: SearchBody, svc: MemoryService = Acting) -> dict[str, Any]:
        """Hybrid search; no queries lists what the filters pass."""
        if service.backend.reads_wait:
            return await run_in_threadpool(searched, body, svc)
        # A read that cannot wait is this process's CPU work: done here on the event
        # loop, it saves the pool's two thread switches (bench/RESULTS.md).
        return searched(body, svc)

    def searched(body: SearchBody, svc: MemoryService) -> dict[str, Any]:
        result = svc.search(
            body.queries,
            project=body.project,
            tier=body.tier,
            limit=body.limit,
            tag=body.tag,
            referencing=body.referencing,
            unverified=body.unverified,
            expired=body.expired,
            budget_tokens=body.budget_tokens,
        )
        return result.to_dict(now())

    @app.get(f"{API}/memories/{{name}}", tags=["memories"])
    def get(
        name: NamePath, project: ProjectQuery = None, svc: MemoryService = Acting
    ) -> dict[str, Any]:
        """Every field of a memory, its body whole, and what references it (not a read)."""
        record = svc.get(name, project=project)
        return {
            **record.memory.to_dict(now(), body=True),
            "referenced_by": list(record.referenced_by),
        }

    @app.put(
        f"{API}/memories/{{name}}",
        tags=["memories"],
        status_code=200,
        responses={201: {"description": "created: the memory did not exist"}},
    )
    def put(
        name: NamePath,
        body: MemoryWrite,
        project: ProjectQuery = None,
        svc: MemoryService = Acting,
    ) -> JSONResponse:
        """Create or update a memory by name: a field left out keeps what is there."""
        written = svc.write(name, project=project, **body.model_dump(exclude_unset=True))
        return JSONResponse(written.to_dict(now()), status_code=201 if written.created else 200)

    @app.delete(f"{API}/memories/{{name}}", tags=["memories"])
    def delete(
        name: NamePath, project: ProjectQuery = None, svc: MemoryService = Acting
    ) -> dict[str, Any]:
        """Remove a memory; memories that referenced it keep their references."""
        return svc.delete(name, project=project).to_dict()

    @app.post(f"{API}/memories/{{name}}/edit", tags=["memories"])
    def edit(
        name: NamePath, body: EditBody, project: ProjectQuery = None, svc: MemoryService = Acting
    ) -> dict[str, Any]:
        """Replace ``old`` with ``new`` in the body (once, unless ``replace_all``)."""
        result = svc.edit(
            name,
            body.old,
            body.new,
            replace_all=body.replace_all,
            verified=body.verified,
            project=project,
        )
        return result.to_dict(now())

    @app.get(f"{API}/memories/{{name}}/read", tags=["memories"])
    def read(
        name: NamePath,
        offset: Annotated[int, _query(minimum=0, maximum=F.WHOLE_MAX)] = 0,
        project: ProjectQuery = None,
        svc: MemoryService = Acting,
    ) -> dict[str, Any]:
        """A page of the body from ``offset``, with its caption; the first page is a read."""
        return svc.read(name, offset=offset, project=project).to_dict(now())

    # -- an agent's own memory -----------------------------------------------------------

    @app.post(f"{API}/remember", tags=["agents"], status_code=201)
    def remember(body: RememberBody, svc: MemoryService = Acting) -> dict[str, Any]:
        """Keep a memory in the acting agent's own scope."""
        memory = svc.remember(**body.model_dump())
        return memory.to_dict(now(), body=True)

    @app.post(f"{API}/recall", tags=["agents"])
    def recall(body: RecallBody, svc: MemoryService = Acting) -> dict[str, Any]:
        """Search what the acting agent sees: global, the project, its teams and its own."""
        result = svc.recall(
            body.queries, project=body.project, limit=body.limit, budget_tokens=body.budget_tokens
        )
        return result.to_dict(now())

    @app.post(f"{API}/forget", tags=["agents"])
    def forget(body: ForgetBody, svc: MemoryService = Acting) -> dict[str, Any]:
        """Take one of the acting agent's own memories out of recall."""
        return svc.forget(body.id, reason=body.reason).to_dict(now())

    # -- facts --------------------------------------------------------------------------

    @app.get(f"{API}/facts", tags=["facts"])
    def fact_read(
        subject: Annotated[str, _query(pattern=F.FACT_SUBJECT_PATTERN)],
        predicate: Annotated[
            str | None, Query(json_schema_extra={"pattern": F.PREDICATE_PATTERN})
        ] = None,
        project: ProjectQuery = None,
        valid_at: MomentQuery = None,
        known_at: MomentQuery = None,
        svc: MemoryService = Acting,
    ) -> dict[str, Any]:
        """The subject's facts (of one predicate, or all) that held at ``valid_at`` as the
        store knew at ``known_at`` (both default to now), in the tiers the caller sees."""
        return facts_of(
            svc.fact_read(subject, predicate, project=project, valid_at=valid_at, known_at=known_at)
        )

    @app.post(
        f"{API}/facts",
        tags=["facts"],
        status_code=201,
        responses={200: {"description": "unchanged: that value is already current"}},
    )
    def fact_write(body: FactWriteBody, svc: MemoryService = Acting) -> JSONResponse:
        """Record a value of a subject's predicate; the current one is superseded."""
        change = svc.fact_write(**body.model_dump())
        return JSONResponse(change.to_dict("write"), status_code=201 if change.changed else 200)

    @app.get(f"{API}/facts/history", tags=["facts"])
    def fact_history(
        subject: Annotated[str, _query(pattern=F.FACT_SUBJECT_PATTERN)],
        predicate: Annotated[str, _query(pattern=F.PREDICATE_PATTERN)],
        project: ProjectQuery = None,
        svc: MemoryService = Acting,
    ) -> dict[str, Any]:
        """Every version of a subject's predicate, in the order recorded."""
        return facts_of(svc.fact_history(subject, predicate, project=project))

    @app.post(f"{API}/facts/retract", tags=["facts"])
    def fact_retract(body: FactRetractBody, svc: MemoryService = Acting) -> dict[str, Any]:
        """Withdraw a predicate's current value; the one it superseded holds again."""
        return svc.fact_retract(**body.model_dump()).to_dict("retract")

    @app.post(f"{API}/proposals", tags=["agents"], status_code=201)
    def propose(body: ProposeBody, svc: MemoryService = Acting) -> dict[str, Any]:
        """Ask for a write beyond the agent's own scope, for a curator to decide."""
        return record_of(svc.propose(**body.model_dump()))

    @app.get(f"{API}/proposals", tags=["agents"])
    def proposals(status: TextQuery = None, svc: MemoryService = Acting) -> dict[str, Any]:
        return {"proposals": plain(svc.list_proposals(status=status))}

    @app.post(f"{API}/context", tags=["agents"])
    def context(body: ContextBody, svc: MemoryService = Acting) -> dict[str, Any]:
        """The memory section of an agent's context for this turn."""
        return svc.context(**body.model_dump()).to_dict()

    @app.get(f"{API}/injections", tags=["agents"])
    def injections(
        memory_id: TextQuery = None,
        session: TextQuery = None,
        identity: TextQuery = None,
        limit: Annotated[
            int, Query(json_schema_extra={"minimum": 1, "maximum": SEARCH_LIMIT_MAX})
        ] = 100,
        svc: MemoryService = Acting,
    ) -> dict[str, Any]:
        """The ledger of memories rendered into agents' contexts, newest first."""
        rows = svc.list_injections(
            memory_id=memory_id, session=session, identity=identity, limit=limit
        )
        return {"injections": [r.to_dict() for r in rows]}

    # -- projects, agents, teams ---------------------------------------------------------

    @app.get(f"{API}/projects", tags=["realm"])
    def projects(svc: MemoryService = Acting) -> dict[str, Any]:
        return {"projects": plain(svc.list_projects())}

    @app.post(f"{API}/projects", tags=["realm"], status_code=201)
    def add_project(body: NameBody, svc: MemoryService = Acting) -> dict[str, Any]:
        return record_of(svc.add_project(body.name))

    @app.post(f"{API}/projects/{{name}}/rename", tags=["realm"])
    def rename_project(
        name: NamePath, body: NameBody, svc: MemoryService = Acting
    ) -> dict[str, Any]:
        return record_of(svc.rename_project(name, body.name))

    @app.delete(f"{API}/projects/{{name}}", tags=["realm"])
    def remove_project(name: NamePath, svc: MemoryService = Acting) -> dict[str, Any]:
        svc.remove_project(name)
        return {"removed": name}

    @app.get(f"{API}/agents", tags=["realm"])
    def agents(svc: MemoryService = Acting) -> dict[str, Any]:
        return {"agents": plain(svc.list_agents())}

    @app.post(f"{API}/agents", tags=["realm"], status_code=201)
    def add_agent(body: NameBody, svc: MemoryService = Acting) -> dict[str, Any]:
        return record_of(svc.add_agent(body.name))

    @app.get(f"{API}/teams", tags=["realm"])
    def teams(svc: MemoryService = Acting) -> dict[str, Any]:
        return {"teams": plain(svc.list_teams())}

    @app.post(f"{API}/teams", tags=["realm"], status_code=201)
    def add_team(body: NameBody, svc: MemoryService = Acting) -> dict[str, Any]:
        return record_of(svc.add_team(body.name))

    @app.put(f"{API}/teams/{{team}}/members/{{agent}}", tags=["realm"])
    def join_team(team: NamePath, agent: NamePath, svc: MemoryService = Acting) -> dict[str, Any]:
        joined_team, joined = svc.join_team(team, agent)
        return {**plain(joined_team), "joined": joined}

    return app
