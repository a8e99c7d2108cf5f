"""``retain ingest FILE``: a transcript's turns written as memories, one
``ingest_conversation`` call a thread (JSONL, or LoCoMo samples: ``retain.conversation``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from retain.doors.cli.output import Table, add_row, emit_json, out, progress_bar, say
from retain.doors.cli.root import (
    PathParameter,
    acting_option,
    cli,
    format_option,
    home_option,
    opened,
    project_option,
)

if TYPE_CHECKING:
    from pathlib import Path

    from retain.results import IngestResult
    from retain.service import Progress


@cli.command()
@click.argument("file", type=PathParameter(dir_okay=False))
@project_option(
    "The project whose tier holds the turns (default: the global tier). A file of several "
    "LoCoMo samples goes into one project a sample, named after its sample_id."
)
@click.option(
    "--thread",
    "-t",
    default=None,
    help="The thread of JSONL lines that name none (default: the file's name without its suffix).",
)
@click.option("--at", default=None, help="The time of a turn that gives none: RFC 3339.")
@click.option("--reason", default="", help="Why, for the event log.")
@click.option("--redact", is_flag=True, help="Write each secret found as [redacted:KIND].")
@acting_option
@home_option
@format_option
def ingest(
    file: Path,
    project: str | None,
    thread: str | None,
    at: str | None,
    reason: str,
    redact: bool,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Write a conversation transcript's turns as memories, one a turn: JSONL (one
    {speaker, text, at?, id?, caption?, thread?} a line) or LoCoMo (a sample, or a list).
    Each thread is written all or nothing; ingesting the same file again changes nothing."""
    with opened(home, fmt, principal) as service:
        from retain.conversation import read_transcript, sample_project

        threads = read_transcript(file, thread=thread)
        samples = {t.sample for t in threads if t.sample is not None}
        if len(samples) > 1 and project is not None:
            raise click.UsageError(
                "a file of several LoCoMo samples goes into one project a sample: "
                "leave out --project"
            )
        total = sum(len(t.turns) for t in threads)
        results: list[IngestResult] = []
        with progress_bar() as progress:
            done = 0
            for conversation in threads:
                into = sample_project(conversation.sample or "") if len(samples) > 1 else project
                results.append(
                    service.ingest_conversation(
                        list(conversation.turns),
                        thread=conversation.thread,
                        project=into,
                        at=at,
                        reason=reason,
                        redact=redact,
                        progress=_overall(progress, done, total),
                    )
                )
                done += len(conversation.turns)
        _emit(fmt, results, service.clock.now())


def _overall(progress: Progress | None, before: int, total: int) -> Progress | None:
    """A thread's progress as the file's: its turns written after the ones before it."""
    if progress is None:
        return None

    def report(phase: str, done: int, of: int) -> None:
        if phase == "write":
            progress("write", before + done, total)
        else:
            progress(phase, done, of)

    return report


def _emit(fmt: str, results: list[IngestResult], now: Any) -> None:
    totals = {
        key: sum(getattr(r, key) for r in results)
        for key in ("written", "created", "updated", "unchanged")
    }
    if fmt == "json":
        turns = sum(len(r.results) for r in results)
        emit_json({"threads": [r.to_dict(now) for r in results], "turns": turns, **totals})
        return
    table = Table()
    for header in ("Thread", "Project", "Turns", "New", "Updated", "Unchanged"):
        table.add_column(header, overflow="fold")
    for r in results:
        add_row(
            table, r.thread, r.project or "(global)", len(r.results), r.created, r.updated,
            r.unchanged,
        )  # fmt: skip
    out.print(table)
    turns = sum(len(r.results) for r in results)
    say(
        f"Ingested {turns} turns in {len(results)} "
        f"{'thread' if len(results) == 1 else 'threads'}: {totals['created']} new, "
        f"{totals['updated']} updated, {totals['unchanged']} unchanged."
    )
