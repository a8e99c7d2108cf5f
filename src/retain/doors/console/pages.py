"""The console's routes: each page calls the service's verbs as the signed-in principal
and renders what they answer. A section a verb refuses (``access_denied``, or
``not_found`` for what the view does not cover) is shown as withheld by access, with
the refusal's words; nothing here decides what anyone may see. The one change a page
makes is a review's verdict, through ``review``, bound to the ``content_hash`` of the
record the reviewer read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from retain import errors
from retain.doors.console import render, session
from retain.doors.console.session import PATH, SignInNeeded
from retain.doors.http.error import HINTS as API_HINTS
from retain.doors.http.error import http_status
from retain.doors.principals import Services, principal_of
from retain.errors import RetainError
from retain.model import Status, TicketStatus, Trust
from retain.service import MemoryService

PAGE = 50  # the rows a listing page shows
STATUSES = tuple(s.value for s in Status)  # the filters' and the bars' orders
TRUSTS = tuple(t.value for t in Trust)
HISTORY = 200  # the events a record's history shows
# The audit timeline's kinds: memory events worth a person's eye first.
AUDIT_KINDS = {
    "governance": ("quarantine", "review", "promote", "taint", "forget", "retier", "hold",
                   "release", "confirm", "ticket_approve", "ticket_reject", "ticket_expire"),
    "writes": ("create", "edit", "supersede", "delete", "retract", "reinstate"),
    "everything": (),
}  # fmt: skip
# What a page says after a review sent it there (``?done=``); any other value says nothing.
NOTICES = {
    "released": "Released: the content is ordinary memory now, at observed.",
    "tombstoned": "Discarded: the record will never be recalled.",
    "already_released": "It was released already; nothing changed.",
    "already_tombstoned": "It was discarded already; nothing changed.",
}
NAV = (
    ("", "Overview"),
    ("/records", "Records"),
    ("/quarantine", "Quarantine"),
    ("/tickets", "Tickets"),
    ("/injections", "Injections"),
    ("/audit", "Audit"),
    ("/access", "Access"),
)


def _act_as(details: Mapping[str, Any]) -> str:
    kinds = [k for k in details.get("allowed") or () if k != "anonymous"]  # no token is one
    return f"sign in with the token of a principal of kind {' or '.join(kinds)}" if kinds else ""


# A refusal's fix as a person at the console does it; the API's words for the rest.
HINTS: Mapping[str, errors.Hint] = {
    **API_HINTS,
    "act_as": _act_as,
    "find": f"look it up under Records ({PATH}/records)",
    "quarantine": f"the Quarantine page ({PATH}/quarantine) shows it with its content",
}


@dataclass(frozen=True, slots=True)
class Shown:
    """A section's answer, or the refusal that withheld it."""

    value: Any = None
    refused: RetainError | None = None


def shown(call: Callable[[], Any]) -> Shown:
    """``call``'s answer, or its refusal when access withholds it (denied, or outside
    the view); any other refusal is the page's."""
    try:
        return Shown(call())
    except (errors.AccessDenied, errors.NotFound) as exc:
        return Shown(refused=exc.hinted(HINTS))


def _number(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.InvalidValue(
            f"{name} {raw!r} is not a whole number", remedy=f"give {name} as digits", field=name
        ) from None


def _text(request: Request, name: str) -> str | None:
    return request.query_params.get(name) or None


def add(app: FastAPI, services: Services, known: Mapping[str, str], host: str) -> None:
    """Serve the console at ``/console`` on ``app``: its pages, its files, sign-in."""
    router = APIRouter(prefix=PATH, include_in_schema=False)
    static = files("retain.doors.console") / "static"
    app.mount(f"{PATH}/static", StaticFiles(directory=str(static)), name="console")

    def respond(
        request: Request,
        template: str,
        build: Callable[[MemoryService], dict[str, Any]],
        *,
        status: int = 200,
    ) -> Response:
        """The page ``template`` with what ``build`` reads as the request's principal; a
        request that must sign in first goes to the sign-in page."""
        csrf = session.csrf_of(request)
        try:
            svc = session.acting(request, services, known, host)
        except SignInNeeded as needed:
            if request.method == "GET" and not needed.given:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(
                    f"{PATH}/sign-in?{urlencode({'next': target})}", status_code=303
                )
            return _sign_in_page(request, csrf, _unknown_token())
        except RetainError as exc:
            return _error_page(request, None, csrf, exc)
        try:
            values = build(svc)
        except RetainError as exc:
            return _error_page(request, svc, csrf, exc)
        return _html(request, csrf, template, _common(request, svc, csrf) | values, status)

    def _common(request: Request, svc: MemoryService | None, csrf: str) -> dict[str, Any]:
        return {
            "base": PATH,
            "nav": NAV,
            "here": request.url.path,
            "principal": svc.principal if svc else None,
            "realm": svc.realm if svc else None,
            "tokens": bool(known),
            "csrf": csrf,
            "notice": NOTICES.get(request.query_params.get("done") or ""),
        }

    def _html(
        request: Request, csrf: str, template: str, values: dict[str, Any], status: int = 200
    ) -> Response:
        response = HTMLResponse(render.page(template, **values), status)
        session.keep_csrf(request, response, csrf)
        response.headers["Cache-Control"] = "no-store"  # pages hold memory: never cached
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"
        )
        return response

    def _error_page(
        request: Request, svc: MemoryService | None, csrf: str, exc: RetainError
    ) -> Response:
        error = exc.hinted(HINTS)
        values = _common(request, svc, csrf) | {"error": error}
        return _html(request, csrf, "error.html", values, http_status(error))

    def _sign_in_page(request: Request, csrf: str, error: RetainError | None) -> Response:
        values = _common(request, None, csrf) | {
            "error": error,
            "next": session.safe_next(request.query_params.get("next")),
        }
        status = 200 if error is None else http_status(error)
        return _html(request, csrf, "sign_in.html", values, status)

    # -- signing in and out ---------------------------------------------------------------

    @router.get("/sign-in")
    def sign_in_form(request: Request) -> Response:
        return _sign_in_page(request, session.csrf_of(request), None)

    def _unknown_token() -> RetainError:
        if not known:
            return errors.Unauthenticated(
                "this server has no tokens: the console is open on loopback",
                remedy=f"open {PATH} without signing in",
            )
        return errors.Unauthenticated(
            "the console does not know that token",
            remedy="sign in with a token of this server's tokens file or $RETAIN_TOKENS",
        )

    async def checked(request: Request) -> Any:
        """The request's form once it passes the anti-forgery check, else the refusal's
        page (a ``Response``)."""
        form = await request.form()
        try:
            session.check_form(request, form)
        except RetainError as exc:
            return _error_page(request, None, session.csrf_of(request), exc)
        return form

    @router.post("/sign-in")
    async def sign_in(request: Request) -> Response:
        form = await checked(request)
        if isinstance(form, Response):
            return form
        token = form.get("token")
        principal = principal_of(known, token) if isinstance(token, str) and token else None
        if principal is None:
            return _sign_in_page(request, session.csrf_of(request), _unknown_token())
        target = form.get("next")
        response = RedirectResponse(
            session.safe_next(target if isinstance(target, str) else None), status_code=303
        )
        session.sign_in(request, response, str(token))
        return response

    @router.post("/sign-out")
    async def sign_out(request: Request) -> Response:
        form = await checked(request)
        if isinstance(form, Response):
            return form
        response = RedirectResponse(f"{PATH}/sign-in", status_code=303)
        session.sign_out(response)
        return response

    # -- the pages ----------------------------------------------------------------------------

    @router.get("")
    def overview(request: Request) -> Response:
        def build(svc: MemoryService) -> dict[str, Any]:
            days = _number(request, "days") or 30
            status = shown(svc.status)
            panel = shown(lambda: svc.overview(days=days))
            chart = render.activity(panel.value.days) if panel.value is not None else None
            return {
                "title": "Overview",
                "status": status,
                "panel": panel,
                "chart": chart,
                "statuses": STATUSES,
                "trusts": TRUSTS,
            }

        return respond(request, "overview.html", build)

    @router.get("/records")
    def records(request: Request) -> Response:
        filters = {
            name: _text(request, name)
            for name in ("scope", "identity", "status", "trust", "tag", "text")
        }
        cursor = _text(request, "cursor")

        def build(svc: MemoryService) -> dict[str, Any]:
            form = {"title": "Records", "filters": filters, "statuses": STATUSES,
                    "trusts": TRUSTS}  # fmt: skip
            try:
                page = svc.records(
                    **filters, limit=_number(request, "limit") or PAGE, cursor=cursor
                )
            except errors.InvalidInput as exc:  # the form again, with what was wrong
                return form | {"refused": exc.hinted(HINTS), "page": None, "paged": False,
                               "first": f"{PATH}/records", "next": None}  # fmt: skip
            kept = {k: v for k, v in filters.items() if v}
            return form | {
                "refused": None,
                "page": page,
                "first": f"{PATH}/records?{urlencode(kept)}",
                "next": (
                    f"{PATH}/records?{urlencode(kept | {'cursor': page.next_cursor})}"
                    if page.next_cursor
                    else None
                ),
                "paged": cursor is not None,
            }

        return respond(request, "records.html", build)

    def record_values(
        svc: MemoryService, memory_id: str, refusal: RetainError | None = None
    ) -> dict[str, Any]:
        view = svc.record(memory_id)
        memory = view.memory
        whole = not view.record.withheld
        forgotten = memory.status is Status.FORGOTTEN
        return {
            "title": f"Record {memory.id}",
            "missing": None,
            "view": view,
            "memory": memory,
            "whole": whole,
            "reviewable": whole and memory.status is Status.QUARANTINED,
            "history": shown(lambda: svc.events(memory_id=memory.id, limit=HISTORY)),
            "graph": shown(lambda: svc.graph(memory.id)) if whole and not forgotten else None,
            "injections": shown(lambda: svc.list_injections(memory_id=memory.id, limit=100)),
            "hold": shown(lambda: svc.held(memory.id)) if whole else None,
            "certificate": shown(lambda: svc.certificate(memory.id)) if forgotten else None,
            "review_refused": refusal.hinted(HINTS) if refusal else None,
        }

    @router.get("/records/{memory_id}")
    def record(request: Request, memory_id: str) -> Response:
        def build(svc: MemoryService) -> dict[str, Any]:
            try:
                return record_values(svc, memory_id)
            except errors.NotFound as missing:
                # a deleted record's history stays in the log, for whoever may read it
                history = shown(lambda: svc.events(memory_id=memory_id, limit=HISTORY))
                if not any(e.kind == "delete" for e in history.value or ()):
                    raise
                return {"title": f"Record {memory_id}", "missing": memory_id,
                        "error": missing.hinted(HINTS), "history": history}  # fmt: skip

        return respond(request, "record.html", build)

    @router.post("/records/{memory_id}/review")
    async def review(request: Request, memory_id: str) -> Response:
        form = await checked(request)
        if isinstance(form, Response):
            return form
        given = {k: form.get(k) for k in ("verdict", "content_hash", "rationale")}
        said = {k: v if isinstance(v, str) else "" for k, v in given.items()}
        return await run_in_threadpool(decide, request, memory_id, said)

    def decide(request: Request, memory_id: str, said: dict[str, str]) -> Response:
        """A review's verdict as the signed-in reviewer; its record again, with the
        refusal and its reason, when the service refuses it."""
        try:
            svc = session.acting(request, services, known, host)
        except SignInNeeded:
            return RedirectResponse(f"{PATH}/sign-in", status_code=303)
        except RetainError as exc:
            return _error_page(request, None, session.csrf_of(request), exc)
        try:
            result = svc.review(
                memory_id, said["verdict"], said["content_hash"], rationale=said["rationale"]
            )
        except RetainError as exc:
            refused: RetainError = exc
            return respond(
                request,
                "record.html",
                lambda svc: record_values(svc, memory_id, refused),
                status=http_status(refused),
            )
        landed = result.successor.id if result.successor else result.origin.id
        return RedirectResponse(
            f"{PATH}/records/{landed}?{urlencode({'done': result.outcome})}", status_code=303
        )

    @router.get("/quarantine")
    def quarantine(request: Request) -> Response:
        cursor = _text(request, "cursor")

        def build(svc: MemoryService) -> dict[str, Any]:
            queue = shown(lambda: svc.list_quarantine(limit=PAGE, after=cursor))
            return {
                "title": "Quarantine",
                "queue": queue,
                "paged": cursor is not None,
                "next": (
                    f"{PATH}/quarantine?{urlencode({'cursor': queue.value.next_cursor})}"
                    if queue.value is not None and queue.value.next_cursor
                    else None
                ),
                "open": shown(lambda: svc.list_tickets(status=TicketStatus.OPEN.value)),
                "gated": shown(lambda: svc.list_tickets(status=TicketStatus.PENDING_GATE.value)),
            }

        return respond(request, "quarantine.html", build)

    @router.get("/tickets")
    def tickets(request: Request) -> Response:
        status = _text(request, "status")

        def build(svc: MemoryService) -> dict[str, Any]:
            return {
                "title": "Tickets",
                "status": status,
                "statuses": [s.value for s in TicketStatus],
                "tickets": shown(lambda: svc.list_tickets(status=status)),
            }

        return respond(request, "tickets.html", build)

    @router.get("/injections")
    def injections(request: Request) -> Response:
        identity, key = _text(request, "identity"), _text(request, "session")

        def build(svc: MemoryService) -> dict[str, Any]:
            rows = shown(lambda: svc.list_injections(identity=identity, session=key, limit=PAGE))
            return {"title": "Injections", "identity": identity, "session": key, "rows": rows}

        return respond(request, "injections.html", build)

    @router.get("/audit")
    def audit(request: Request) -> Response:
        group = _text(request, "kinds") or "governance"
        if group not in AUDIT_KINDS:
            group = "governance"

        def build(svc: MemoryService) -> dict[str, Any]:
            before = _number(request, "before")
            events = shown(lambda: svc.timeline(kinds=AUDIT_KINDS[group], before=before))
            after = events.value.next_cursor if events.value is not None else None
            return {
                "title": "Audit",
                "group": group,
                "groups": tuple(AUDIT_KINDS),
                "events": events,
                "paged": before is not None,
                "next": (
                    f"{PATH}/audit?{urlencode({'kinds': group, 'before': after})}"
                    if after
                    else None
                ),
            }

        return respond(request, "audit.html", build)

    @router.get("/certificates/{target}")
    def certificate(request: Request, target: str) -> Response:
        def build(svc: MemoryService) -> dict[str, Any]:
            return {"title": "Erasure certificate", "certificate": svc.certificate(target)}

        return respond(request, "certificate.html", build)

    @router.get("/access")
    def access(request: Request) -> Response:
        def build(svc: MemoryService) -> dict[str, Any]:
            return {
                "title": "Access",
                "kind": svc.kind.value,
                "control": svc.settings.access.control,
                "grants": shown(svc.list_grants),
            }

        return respond(request, "access.html", build)

    @router.get("/{rest:path}")
    def unknown(request: Request, rest: str) -> Response:
        if not rest:  # /console/
            return RedirectResponse(PATH, status_code=308)

        def build(svc: MemoryService) -> dict[str, Any]:
            raise errors.NotFound(
                f"the console has no page {request.url.path}",
                remedy=f"start from {PATH}",
            )

        return respond(request, "error.html", build)

    app.include_router(router)
