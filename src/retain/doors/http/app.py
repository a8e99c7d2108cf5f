"""The REST app: ``create_app`` builds the FastAPI app over one opened service, with its
middleware (a body's size limit), its refusal handlers, the offline API pages, the MCP
server mounted at ``/mcp`` and the routes of each capability; ``app_from_environment``
is the app one process of ``retain serve --workers N`` serves.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import fastapi_offline
import threadpoolctl
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import retain
from retain import errors
from retain.doors import console
from retain.doors.http import (
    agents,
    assertions,
    context,
    conversations,
    custody,
    facts,
    grants,
    graph,
    memories,
    panels,
    realm,
    retention,
    review,
    sessions,
    tickets,
)
from retain.doors.http.access import acting_of, load_tokens
from retain.doors.http.error import ERROR_RESPONSES, error_response, invalid_request
from retain.doors.principals import Services
from retain.errors import RetainError
from retain.extras import needed
from retain.service import MemoryService

if TYPE_CHECKING:
    from retain.doors.mcp import Server

MCP_PATH = "/mcp"  # the MCP server over streamable HTTP
DOCS_ASSETS = "/docs-assets"  # Swagger UI's and ReDoc's files, served by the app itself
MAX_BODY_BYTES = 1024 * 1024  # a request's body; larger ones are refused whole
SERVE_ENV = "RETAIN_SERVE"  # what each process of `retain serve --workers N` opens


# What the BLAS libraries read, as they load, for their threads: OpenBLAS (numpy's
# wheels for Linux and Windows), MKL, BLIS and Accelerate (macOS's). (OpenMP's own,
# which an OpenBLAS built with it reads, would hold every OpenMP library of the server.)
BLAS_THREADS = (
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def one_blas_thread() -> None:
    """Keep numpy's BLAS to one thread in a serving process: requests are the server's
    parallelism, and BLAS threads spinning beside them (and beside the other workers)
    cost more than a search's small products gain (247 against 198 searches/s measured
    with one worker; bench/RESULTS.md).

    The limit reaches only the libraries loaded when it is set, and a server loads numpy
    when it first needs it (a batched write), so the BLAS libraries are told too, by
    the settings they read as they load (a server that loaded numpy later ran two BLAS
    threads). numpy is not loaded at start for this: a warm search would be about a
    millisecond quicker at 100,000 memories (its candidates chosen by numpy's
    partition), the server 37 MiB larger (bench/RESULTS.md)."""
    for name in BLAS_THREADS:
        os.environ[name] = "1"
    threadpoolctl.threadpool_limits(1, user_api="blas")


def app_from_environment() -> FastAPI:
    """The app one process of ``retain serve --workers N`` serves (uvicorn's factory): the
    store, tokens and host the command was given, passed in ``$RETAIN_SERVE``."""
    one_blas_thread()
    given = json.loads(os.environ[SERVE_ENV])
    service = retain.open(given["location"], home=given["home"])
    tokens = load_tokens(Path(given["tokens"]) if given["tokens"] else None)
    return create_app(service, tokens=tokens, host=given["host"])


class Tools:
    """The MCP server's ASGI app at ``/mcp``, made at its first request and run until the
    REST app stops: the MCP SDK costs a server about 30 MiB and 0.4 s to import, which a
    server only REST clients and the console reach never pays (bench/RESULTS.md).

    The app's lifespan gives it a task group (``started``); the first request starts the
    server's session manager in a task of that group, so that the manager is entered and
    left in one task, and every request waits until it runs (the SDK is imported on a
    thread meanwhile, while the loop answers other requests)."""

    def __init__(self, make: Callable[[], Server], host: str) -> None:
        self.make = make
        self.host = host
        self.app: ASGIApp | None = None
        self.failed: Exception | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._ready: anyio.Event | None = None

    def started(self, group: anyio.abc.TaskGroup | None) -> None:
        """Run the MCP server in ``group`` when asked (None: the app stopped)."""
        self._group, self._ready, self.app, self.failed = group, None, None, None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._group is not None and self._ready is None:
            self._ready = anyio.Event()
            self._group.start_soon(self._run, self._ready)
        if self._ready is not None:
            await self._ready.wait()
        if self.app is not None:
            await self.app(scope, receive, send)
            return
        if self.failed is not None and not isinstance(self.failed, RetainError):
            raise RuntimeError("the MCP server could not start") from self.failed
        error = self.failed or errors.StoreBusy(  # (a RetainError: the extra missing)
            "the MCP server is not running: the app was not started",
            remedy="serve the app with its lifespan (retain serve does)",
        )
        await error_response(error)(scope, receive, send)

    async def _run(self, ready: anyio.Event) -> None:
        """Make the MCP server and run its sessions until the group is cancelled (each
        start of the app makes its own: a session manager runs once)."""
        try:
            server = await anyio.to_thread.run_sync(self.make)  # (the loop answers meanwhile)
            # Stateless: every request stands alone (and is authenticated), so any worker
            # process answers it.
            app = server.streamable_http_app(
                streamable_http_path="/", host=self.host, stateless_http=True
            )
            async with server.session_manager.run():
                self.app = app
                ready.set()
                await anyio.sleep_forever()
        except Exception as exc:  # told to every request, which fails with it
            self.failed = exc
        finally:
            self.app = None
            ready.set()


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
    """The REST API over ``service``'s store, the MCP server at ``/mcp`` and the console
    at ``/console``; with
    ``tokens``, every request needs one. ``host`` is where it is served: on a loopback
    address the MCP endpoint refuses other Host headers (DNS rebinding)."""
    services = Services(service)
    known = dict(tokens or {})

    def tools_server() -> Server:
        with needed("server", "the MCP server at /mcp"):
            from retain.doors import mcp

        return mcp.create_server(services.of, local_principal=service.principal, tokens=known)

    tools = Tools(tools_server, host)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # (A mounted app's lifespan is not run: the MCP server's runs in this one's group.)
        async with anyio.create_task_group() as group:
            tools.started(group)
            try:
                yield
            finally:
                tools.started(None)
                group.cancel_scope.cancel()

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
    app.mount(MCP_PATH, tools)

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

    # In this order: the OpenAPI document lists the paths as they are added.
    acting = Depends(acting_of(services, known))
    memories.add(app, service, acting)
    agents.add(app, service, acting)
    facts.add(app, service, acting)
    conversations.add(app, service, acting)
    assertions.add(app, service, acting)
    context.add(app, service, acting)
    sessions.add(app, service, acting)
    tickets.add(app, service, acting)
    realm.add(app, service, acting)
    review.add(app, service, acting)
    grants.add(app, service, acting)
    custody.add(app, service, acting)
    retention.add(app, service, acting)
    graph.add(app, service, acting)
    panels.add(app, service, acting)
    console.add(app, services, known, host)
    return app
