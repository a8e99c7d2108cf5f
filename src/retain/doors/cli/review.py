"""The reviewer's commands: ``quarantine list`` shows the records waiting for review,
``review`` releases or tombstones one of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retain.doors.cli.output import Table, add_row, emit_json, moment, out, say
from retain.doors.cli.root import acting_option, cli, format_option, home_option, opened
from retain.doors.deferred import Deferred

if TYPE_CHECKING:
    from pathlib import Path

    from retain.doors.records import quarantine_of
else:  # imported on first use: `retain --help` loads neither rich nor the service
    quarantine_of = Deferred("retain.doors.records", "quarantine_of")

QUEUE_PAGE = 100


@cli.group()
def quarantine() -> None:
    """Records held for review (see docs/concepts.md, "Quarantine")."""


@quarantine.command("list")
@acting_option
@click.option(
    "--limit",
    "-n",
    type=int,
    default=QUEUE_PAGE,
    show_default=True,
    help="A page of at most this many.",
)
@click.option("--cursor", help="Continue after the page that gave this cursor (its next_cursor).")
@home_option
@format_option
def quarantine_list(
    principal: str, limit: int, cursor: str | None, home: Path | None, fmt: str
) -> None:
    """The records waiting for review, oldest first, with what a review binds to."""
    with opened(home, fmt, principal) as service:
        held = service.list_quarantine(limit=limit, after=cursor)
        page = quarantine_of(held, moment())
        if fmt == "json":
            emit_json(page)
            return
        if not held:
            say("Nothing waits for review.")
            return
        table = Table()
        table.add_column("Id", no_wrap=True, min_width=max(len(m.id) for m in held))
        for column in ("Tier", "Why", "Author", "Session", "Description"):
            table.add_column(column, overflow="fold")
        for m in held:
            cells = (
                m.id, m.scope, ", ".join(m.quarantine_reason), m.author, m.session or "",
                m.description,
            )  # fmt: skip
            add_row(table, *cells)
        out.print(table)
        for m in held:  # whole, to copy: the hash a decision is bound to
            say(f"retain review {m.id} --release|--tombstone --hash {m.content_hash}")
        if page["next_cursor"] is not None:
            say(f"More after this page: --cursor {page['next_cursor']}")


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--release", "verdict", flag_value="release", help="Release it into memory.")
@click.option("--tombstone", "verdict", flag_value="tombstone", help="Discard it for good.")
@click.option(
    "--hash",
    "expected_hash",
    required=True,
    help="The content_hash of the content read (`retain quarantine list` shows it).",
)
@click.option("--rationale", default="", help="Why, kept with the review.")
@acting_option
@home_option
@format_option
def review(
    memory_id: str,
    verdict: str | None,
    expected_hash: str,
    rationale: str,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Decide the quarantined record ID: --release or --tombstone, bound to --hash."""
    if verdict is None:
        raise click.UsageError("give --release or --tombstone")
    with opened(home, fmt, principal) as service:
        result = service.review(memory_id, verdict, expected_hash, rationale=rationale)
        if fmt == "json":
            emit_json(result.to_dict())
            return
        done = {
            "released": "Released",
            "tombstoned": "Tombstoned",
            "already_released": "Already released",
            "already_tombstoned": "Already tombstoned",
        }[result.outcome]
        say(f"{done} {result.origin.id} (now {result.origin.status}).")
        if result.successor is not None:
            successor = result.successor
            say(f"Successor: {successor.id} ({successor.status}, trust {successor.trust}).")
        review_ = result.decision.review
        say(f"Decided by {review_.get('reviewer')}, event {result.decision.event_id}.")
