"""The session commands an agent's host runs: ``retain session observe`` (what a session
ingested), ``retain session reset`` (a fresh-context boundary) and ``retain session show``.

``--from-hook`` reads a host's hook event from standard input instead of the arguments
(``retain.doors.hooks``): Claude Code's ``PostToolUse`` for ``observe``, its
``SessionStart`` for ``reset``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from retain.doors.cli.output import emit_json, emit_said
from retain.doors.cli.refusal import refusals
from retain.doors.cli.root import (
    SESSION_META,
    acting_option,
    cli,
    format_option,
    home_option,
    opened,
)
from retain.errors import InvalidValue

if TYPE_CHECKING:
    from pathlib import Path

    from retain.doors.hooks import HookEvent

F = TypeVar("F", bound=Callable[..., Any])


@cli.group()
def session() -> None:
    """Report what an agent's session ingested, reset it, and show its taint."""


def _identity_option(*, required: bool) -> Callable[[F], F]:
    return click.option(
        "--identity",
        required=required,
        metavar="agent:NAME",
        help="The agent whose session it is"
        + ("." if required else " (an agent acting names only itself, its default)."),
    )


def _key_option(fn: F) -> F:
    return click.option(
        "--session",
        "key",
        metavar="KEY",
        help="The session's key, as the host names it (default: retain's --session, "
        "$RETAIN_SESSION).",
    )(fn)


# _HOOK_QUIET: with --from-hook and no --format json a command prints nothing on success.
# Claude Code places a SessionStart hook's plain output in the model's context, and reads
# JSON it does not know as a broken hook; `retain session show` tells the state.


def _key(key: str | None) -> str | None:
    """The session named: the command's ``--session``, else the group's."""
    return key or click.get_current_context().meta.get(SESSION_META)


def _hook(event: str) -> HookEvent:
    """The hook event on standard input, as ``retain.doors.hooks`` reads it."""
    from retain.doors.hooks import read_event  # a hook's command alone reads one

    read = read_event(sys.stdin.read())
    if read.event != event:
        raise InvalidValue(
            f"this command reads {event} events, not {read.event}",
            remedy=f"run it as the host's {event} hook",
            field="event",
        )
    return read


@session.command("observe")
@click.argument("tool", required=False)
@_identity_option(required=False)
@_key_option
@click.option("--server", help="The MCP server the tool came from (typed provenance).")
@click.option("--provenance", help="The tool's kind as the host's catalog says: mcp, builtin…")
@click.option("--native", is_flag=True, help="Provider-native server-tool content.")
@click.option(
    "--from-hook",
    is_flag=True,
    help="Read a PostToolUse hook event from standard input (its session_id and tool_name).",
)
@acting_option
@home_option
@format_option
def session_observe(
    tool: str | None,
    identity: str | None,
    key: str | None,
    server: str | None,
    provenance: str | None,
    native: bool,
    from_hook: bool,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Report that a session ingested TOOL's result: untrusted content taints it."""
    with refusals(fmt):
        if from_hook:
            read = _hook("PostToolUse")
            tool, key = read.tool, key or read.session
        if tool is None:
            raise click.UsageError("give the TOOL, or --from-hook")
    with opened(home, fmt, principal) as service:
        seen = service.observe(
            tool,
            identity=identity,
            session=_key(key),
            server=server,
            provenance=provenance,
            native=native,
        )
    if from_hook and fmt != "json":
        return  # a hook's output would reach the host: it needs none (see _HOOK_QUIET)
    verdict = "trusted" if seen.trusted else "untrusted"
    now = "tainted" if seen.tainted else "clean"
    emit_said(
        fmt,
        seen.to_dict(),
        f"{seen.tool}: {verdict} ({seen.step}); session {seen.session} of {seen.identity} "
        f"is {now}{' now' if seen.changed else ''}.",
    )


@session.command("reset")
@_identity_option(required=True)
@_key_option
@click.option(
    "--boundary",
    type=click.Choice(["reset", "respawn", "clear", "new", "compact"]),
    default="reset",
    show_default=True,
    help="What the host did: every boundary but compact starts a fresh context.",
)
@click.option(
    "--from-hook",
    is_flag=True,
    help="Read a SessionStart hook event from standard input (its session_id and source).",
)
@acting_option
@home_option
@format_option
def session_reset(
    identity: str,
    key: str | None,
    boundary: str,
    from_hook: bool,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Mark a fresh-context boundary of a session: its taint is cleared (not by compact)."""
    with refusals(fmt):
        if from_hook:
            read = _hook("SessionStart")
            if read.boundary is None:  # a resumed context crossed no boundary
                if fmt == "json":
                    emit_json({"session": read.session, "boundary": None})
                return
            key, boundary = key or read.session, read.boundary
    with opened(home, fmt, principal) as service:
        done = service.reset_session(identity, _key(key) or "", boundary=boundary)
    if from_hook and fmt != "json":
        return  # a hook's output would reach the host: it needs none (see _HOOK_QUIET)
    emit_said(
        fmt,
        done.to_dict(),
        f"Session {done.session} of {done.identity}: {done.boundary}; "
        + ("taint cleared." if done.cleared else "tainted." if done.tainted else "clean."),
    )


@session.command("show")
@_identity_option(required=True)
@_key_option
@acting_option
@home_option
@format_option
def session_show(
    identity: str, key: str | None, principal: str, home: Path | None, fmt: str
) -> None:
    """Show a session's taint: since when, and why."""
    with opened(home, fmt, principal) as service:
        found = service.session_status(identity, _key(key) or "")
    data = found.to_dict()
    cause = data["cause"] or {}
    why = ", ".join(f"{k} {v}" for k, v in cause.items() if v is not None)
    emit_said(
        fmt,
        data,
        f"Session {found.key} of {found.identity}: "
        + (f"tainted since {data['tainted_at']} ({why})." if found.tainted else "clean."),
    )
