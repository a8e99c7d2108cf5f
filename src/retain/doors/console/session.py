"""Who a console request acts as, and the guards of its forms.

* **Signing in.** A server with tokens needs one: the person gives it once on the
  sign-in page and the browser keeps it for the session in a cookie (``HttpOnly``,
  ``SameSite=Strict``, path ``/console``, ``Secure`` over HTTPS, no expiry: it ends
  with the browser session), sent back with every page; an ``Authorization: Bearer``
  header is taken too. Each request is judged by the token's principal, as the API's
  are. A server without tokens acts as its own operator (``operator:local``), as the
  API does; it serves on loopback only (``access.check_binding``), and its pages answer
  only loopback host names, so that a page of another site whose name resolves to
  127.0.0.1 (DNS rebinding) cannot read them.
* **Forms.** Every form that changes something (a review, signing in or out) carries
  the anti-forgery token of its page, a random value the browser also holds in a
  ``SameSite=Strict`` cookie; the two must match (``check_form``), and a form whose
  ``Origin`` is another site's is refused whatever it carries. Another site can
  neither read the cookie nor set it, so it cannot forge the field.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import Response

from retain import errors
from retain.doors.principals import Services, bearer, principal_of
from retain.service import MemoryService

TOKEN_COOKIE = "retain_console"  # the bearer token, for the browser session
CSRF_COOKIE = "retain_csrf"  # the anti-forgery token the page's forms carry
CSRF_FIELD = "csrf"
PATH = "/console"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


class SignInNeeded(Exception):
    """The server has tokens and the request carried none it knows (``given``: whether
    one was given at all)."""

    def __init__(self, given: bool) -> None:
        super().__init__("sign in")
        self.given = given


def token_of(request: Request) -> str | None:
    """The bearer token a request carries: its ``Authorization`` header's, else the
    console's cookie's."""
    return bearer(request.headers.get("authorization", "")) or request.cookies.get(TOKEN_COOKIE)


def check_host(request: Request, host: str) -> None:
    """Refuse a page asked for under a host name that is not loopback's (nor the one the
    server was told to serve on): a server without tokens answers only this machine."""
    given = request.headers.get("host", "")
    name = given[: given.find("]") + 1] if given.startswith("[") else given.rsplit(":", 1)[0]
    if name in LOOPBACK_NAMES or name == host:
        return
    try:
        if ipaddress.ip_address(name.strip("[]")).is_loopback:
            return
    except ValueError:
        pass
    raise errors.ForgedRequest(
        f"this console serves this machine only, not the host {name!r}",
        remedy="open it at http://127.0.0.1:PORT/console or http://localhost:PORT/console",
        host=name,
    )


def acting(
    request: Request, services: Services, known: Mapping[str, str], host: str
) -> MemoryService:
    """The session a console request acts in: its token's principal's, or the server's
    own operator's when the server has no tokens. ``SignInNeeded`` when it needs one."""
    if not known:
        check_host(request, host)
        return services.root
    token = token_of(request)
    principal = principal_of(known, token) if token else None
    if principal is None:
        raise SignInNeeded(token is not None)
    return services.of(principal)


def csrf_of(request: Request) -> str:
    """The anti-forgery token of this browser: its cookie's, or a new one (which the
    page's answer sets, ``keep_csrf``)."""
    held = request.cookies.get(CSRF_COOKIE, "")
    return held if len(held) >= 32 else secrets.token_urlsafe(32)


def keep_csrf(request: Request, response: Response, token: str) -> None:
    if request.cookies.get(CSRF_COOKIE) != token:
        response.set_cookie(
            CSRF_COOKIE, token, path=PATH, httponly=True, samesite="strict",
            secure=request.url.scheme == "https",
        )  # fmt: skip


def check_form(request: Request, form: Mapping[str, object]) -> None:
    """Refuse a form another site could have sent: one whose ``Origin`` is not this
    server's, or whose anti-forgery field does not match the browser's cookie."""
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    if origin is not None and origin != own:
        raise errors.ForgedRequest(
            f"a form was sent to this console from {origin}",
            remedy="use the console's own pages to change anything",
            origin=origin,
        )
    held = request.cookies.get(CSRF_COOKIE, "")
    given = form.get(CSRF_FIELD)
    if not held or not isinstance(given, str) or not hmac.compare_digest(held, given):
        raise errors.ForgedRequest(
            "the form did not carry this page's anti-forgery token",
            remedy="reload the page and submit its form again",
        )


def sign_in(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        TOKEN_COOKIE, token, path=PATH, httponly=True, samesite="strict",
        secure=request.url.scheme == "https",
    )  # fmt: skip


def sign_out(response: Response) -> None:
    response.delete_cookie(TOKEN_COOKIE, path=PATH)


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a console page of this server, never elsewhere."""
    if target and target.startswith(PATH) and not target.startswith("//"):
        return target
    return PATH
