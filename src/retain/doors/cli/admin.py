"""The store's upkeep: ``verify`` (and ``--rebuild``), ``reindex`` and ``status``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retain import errors
from retain.doors.cli.output import Table, add_row, emit_json, out, progress_bar, say, warn
from retain.doors.cli.root import cli, format_option, home_option, opened

if TYPE_CHECKING:
    from pathlib import Path


@cli.command()
@click.option(
    "--rebuild", is_flag=True, help="Regenerate the search index and vectors from the table first."
)
@home_option
@format_option
def verify(rebuild: bool, home: Path | None, fmt: str) -> None:
    """Check the search index, the vectors and the event chain."""
    with opened(home, fmt) as service:
        failed: errors.IntegrityFailed | None = None
        with progress_bar() as progress:
            try:
                report = service.verify(rebuild=rebuild, progress=progress)
            except errors.IntegrityFailed as error:  # shown, then raised
                if error.report is None:
                    raise
                report, failed = error.report, error
        if fmt == "json":
            emit_json(report.to_dict())
        else:
            if report.rebuilt:
                say("Rebuilt the search index and every search key.")
            say(
                f"{report.memories} memories, {report.index_documents} indexed documents, "
                f"{report.vectors} vectors, {report.events} events."
            )
            if any(report.relations.values()):
                kinds = ", ".join(f"{n} {kind}" for kind, n in report.relations.items() if n)
                say(f"Relations: {kinds}.")
            if report.pending_vectors:
                say(
                    f"{report.pending_vectors} vectors pending: a write that landed is storing "
                    "them, or the next write makes them."
                )
            for problem in report.problems:
                say(f"problem: {problem}")
            if report.broken_at is not None:
                say(f"broken_at: {report.broken_at}")
            head = f"head: event {report.head_seq}, hash {report.head_hash}"
            if report.head_signature is not None:
                head += f", signed by key {report.key_id}: {report.head_signature}"
            say(head)
            for note in report.notes:
                say(f"note: {note}")
            if report.ok:
                say("Index sound; event chain unbroken.")
        if failed is not None:
            raise failed


@cli.command()
@home_option
@format_option
def reindex(home: Path | None, fmt: str) -> None:
    """Embed every memory again with the embedder in use (after a model change)."""
    with opened(home, fmt) as service:
        with progress_bar() as progress:
            count = service.reindex(progress=progress)
        loaded = service.embedder
        if fmt == "json":
            emit_json(
                {"reindexed": count, "embedder": loaded.model_id, "degraded": loaded.degraded}
            )
            return
        say(f"Re-indexed {count} memories with {loaded.model_id}.")
        if loaded.degraded:
            warn(f"degraded: {loaded.degraded}")


@cli.command()
@home_option
@format_option
def status(home: Path | None, fmt: str) -> None:
    """Where the store is and what it holds."""
    with opened(home, fmt) as service:
        s = service.status()
        data = s.to_dict()
        if fmt == "json":
            emit_json(data)
            return
        if s.degraded:
            warn(f"degraded: {s.degraded} (searching with {s.embedder})")
        table = Table(show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value")
        for key, value in data.items():
            add_row(table, key, value)
        out.print(table)
