"""Who a request acts as: the bearer tokens a server knows (``load_tokens``, from
``$RETAIN_TOKENS`` and a tokens file), the refusal to serve beyond this machine without
them (``check_binding``), and the dependency that gives each request the session of its
token's principal (``acting``). Never a field of the request: a server without tokens
acts as ``operator:local``, as the CLI does.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from retain import errors
from retain.doors.principals import Services, bearer, principal_of
from retain.service import MemoryService, actor

TOKENS_ENV = "RETAIN_TOKENS"
SESSION_HEADER = "Retain-Session"  # the key of the agent context a request acts in
LOCAL_PRINCIPAL = actor.LOCAL_OPERATOR


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


def acting_of(
    services: Services, known: Mapping[str, str]
) -> Callable[[Request], Awaitable[MemoryService]]:
    """The dependency giving a request the session of its bearer token's principal (the
    root's, when the server has no tokens), in the agent context its ``Retain-Session``
    header names (the host's key: no field of a body names it)."""

    async def acting(request: Request) -> MemoryService:
        service = await _principal(request)
        key = request.headers.get(SESSION_HEADER)
        # the same principal in another context: no I/O
        return service if key is None else service.acting_as(service.principal, session=key)

    async def _principal(request: Request) -> MemoryService:
        # async, on the event loop (a sync dependency costs a thread hop)
        if not known:
            return services.root
        token = bearer(request.headers.get("authorization", ""))
        principal = principal_of(known, token) if token is not None else None
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

    return acting
