"""The ``retain mirrors`` commands: the write-through mirrors' backlog (``status``) and
sending it again (``retry``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import Table, add_row, emit_json, out, progress_bar, say
from retain.doors.cli.root import cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path


@cli.group()
def mirrors() -> None:
    """The write-through mirrors of config.toml's [[mirrors]]: what each holds and what
    it has yet to take."""


@mirrors.command("status")
@click.option("--limit", "-n", type=int, default=100, show_default=True, help="At most this many.")
@home_option
@format_option
def mirrors_status(limit: int, home: Path | None, fmt: str) -> None:
    """Show each mirror's links by state, and the backlog: what a mirror has yet to take
    or give up (oldest first), with its last error."""
    with opened(home, fmt) as service:
        shown = service.mirror_status(limit=limit)
    if fmt == "json":
        emit_json(shown.to_dict())
        return
    names = sorted({*shown.mirrors, *shown.counts})
    if not names:
        say("No mirror is configured, and none holds anything of this store.")
        return
    for name in names:
        states = shown.counts.get(name, {})
        counted = ", ".join(f"{n} {state}" for state, n in sorted(states.items())) or "nothing yet"
        gone = "" if name in shown.mirrors else " (no longer configured)"
        say(f"{name}{gone}: {counted}")
    if not shown.backlog:
        say("The backlog is empty.")
        return
    table = Table()
    for column in ("Memory", "Mirror", "State", "Attempts", "Last error"):
        table.add_column(column, overflow="fold")
    for link in shown.backlog:
        add_row(table, link.memory_id, link.mirror, link.state, str(link.attempts), link.error)
    out.print(table)


@mirrors.command("retry")
@home_option
@format_option
def mirrors_retry(home: Path | None, fmt: str) -> None:
    """Send the backlog again: each memory as it is now to the mirrors that lack it, and
    each removal to the mirrors that still hold it."""
    with opened(home, fmt) as service, progress_bar() as progress:
        done = service.mirror_retry(progress=progress)
    if fmt == "json":
        emit_json(done.to_dict())
        return
    said = (
        f"Sent {done.tried} again: {done.mirrored} mirrored, {done.removed} removed, "
        f"{done.failed} still failing."
    )
    if done.unknown:
        said += f" Not configured, so left as they were: {', '.join(done.unknown)}."
    say(said)
