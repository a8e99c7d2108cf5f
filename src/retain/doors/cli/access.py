"""The access commands: ``retain access list``, ``grant`` and ``revoke`` (the grants
checked under ``[access] control = true``; ``config.toml``'s are listed, never revoked)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from retain.doors.cli.output import emit_rows, emit_said
from retain.doors.cli.root import acting_option, cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path

_COLUMNS = {
    "Subject": "subject",
    "Action": "action",
    "On": "on",
    "Effect": "effect",
    "Source": "source",
    "Id": "id",
}


def _grant_parts(command: Callable[..., Any]) -> Callable[..., Any]:
    """A grant's three parts and its effect, as grant and revoke both take them."""
    for option in reversed((
        click.argument("subject"),
        click.argument("action"),
        click.argument("on"),
        click.option("--deny", is_flag=True, help="A deny (it beats every allow)."),
        acting_option,
        home_option,
        format_option,
    )):  # fmt: skip
        command = option(command)
    return command


@cli.group()
def access() -> None:
    """List, grant and revoke access grants (checked when [access] control = true)."""


@access.command("list")
@acting_option
@home_option
@format_option
def access_list(principal: str, home: Path | None, fmt: str) -> None:
    """List the grants that count in the realm: config.toml's, then the stored ones."""
    with opened(home, fmt, principal) as service:
        rows = [g.to_dict() for g in service.list_grants()]
        emit_rows(fmt, "grants", rows, _COLUMNS)


@access.command("grant")
@_grant_parts
def access_grant(
    subject: str, action: str, on: str, deny: bool, principal: str, home: Path | None, fmt: str
) -> None:
    """Let SUBJECT (a principal, a pattern such as agent:*, or role:NAME) do ACTION on ON
    (realm:R, scope:S, identity:agent:N); with --deny, forbid it."""
    with opened(home, fmt, principal) as service:
        made = service.grant(subject, action, on, effect="deny" if deny else "allow")
        said = f"Granted: {made.effect} {made.subject} {made.action} on {made.on} ({made.id})."
        emit_said(fmt, made.to_dict(), said)


@access.command("revoke")
@_grant_parts
def access_revoke(
    subject: str, action: str, on: str, deny: bool, principal: str, home: Path | None, fmt: str
) -> None:
    """Remove the stored grant of SUBJECT, ACTION and ON (with --deny, the deny)."""
    with opened(home, fmt, principal) as service:
        gone = service.revoke(subject, action, on, effect="deny" if deny else "allow")
        said = f"Revoked: {gone.effect} {gone.subject} {gone.action} on {gone.on} ({gone.id})."
        emit_said(fmt, {"revoked": gone.to_dict()}, said)
