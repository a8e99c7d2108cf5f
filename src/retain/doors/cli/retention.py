"""Custody's commands: a legal hold on a memory (``hold``, ``release``, ``held``) and the
retention sweep that forgets what the store learned too long ago (``sweep``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import Table, add_row, emit_json, emit_said, out, progress_bar, say
from retain.doors.cli.root import acting_option, cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", required=True, help="Why it is held: the matter, the request.")
@acting_option
@home_option
@format_option
def hold(memory_id: str, reason: str, principal: str, home: Path | None, fmt: str) -> None:
    """Place a legal hold on memory ID (a fact's id too): nothing forgets or sweeps it
    until it is released. For operators and applications."""
    with opened(home, fmt, principal) as service:
        placed = service.hold(memory_id, reason=reason)
        emit_said(fmt, placed.to_dict(), f"Held {placed.target} ({placed.reason}).")


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--reason", required=True, help="Why the hold ends.")
@acting_option
@home_option
@format_option
def release(memory_id: str, reason: str, principal: str, home: Path | None, fmt: str) -> None:
    """Release the legal hold on memory ID: it may be forgotten and swept again."""
    with opened(home, fmt, principal) as service:
        released = service.release_hold(memory_id, reason=reason)
        emit_said(fmt, released.to_dict(), f"Released the hold on {released.target}.")


@cli.command()
@click.argument("memory_id", metavar="ID")
@acting_option
@home_option
@format_option
def held(memory_id: str, principal: str, home: Path | None, fmt: str) -> None:
    """Say whether a legal hold stands on memory ID, and since when and why."""
    with opened(home, fmt, principal) as service:
        state = service.held(memory_id)
        hold = state.hold
        said = (
            f"Not held: {state.target}."
            if hold is None
            else f"Held: {state.target}, since {state.to_dict()['hold']['held_at']} "
            f"by {hold.held_by} ({hold.reason})."
        )
        emit_said(fmt, state.to_dict(), said)


@cli.command()
@click.option(
    "--before",
    metavar="TIME",
    help="Forget what the store learned before this (RFC 3339 or YYYY-MM-DD); default: "
    "each scope's [retention] window decides.",
)
@click.option("--scope", metavar="SCOPE", help="Only this scope (global, project:NAME, ...).")
@click.option(
    "--digest/--no-digest",
    "keep_digest",
    default=True,
    show_default=True,
    help="Keep each forgotten value's digest.",
)
@click.option("--dry-run", is_flag=True, help="List what would be forgotten; change nothing.")
@click.option("--reason", required=True, help="Why: the retention policy, a request.")
@acting_option
@home_option
@format_option
def sweep(
    before: str | None,
    scope: str | None,
    keep_digest: bool,
    dry_run: bool,
    reason: str,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Forget every memory learned before --before (or past its scope's retention
    window), in one scope or every one; held memories are skipped and listed."""
    with opened(home, fmt, principal) as service:
        with progress_bar() as progress:
            result = service.sweep(
                reason=reason,
                before=before,
                scope=scope,
                keep_digest=keep_digest,
                dry_run=dry_run,
                progress=progress,
            )
        data = result.to_dict()
        if fmt == "json":
            emit_json(data)
            return
        if data["selected"]:
            table = Table()
            for header in ("id", "scope", "learned", "status"):
                table.add_column(header, no_wrap=header == "id", overflow="fold")
            for item in data["selected"]:
                add_row(table, item["id"], item["scope"], item["learned_at"], item["status"])
            out.print(table)
        count = len(data["selected"])
        if dry_run:
            say(f"Would forget {count} memories (a dry run: nothing was changed).")
        else:
            say(f"Forgot {len(data['forgotten'])} memories.")
        if data["held"]:
            say(f"Held, so kept: {', '.join(data['held'])}.")
