"""The commands that move memories between stores: ``export`` a snapshot, ``import``
one, and ``migrate`` a whole store to another backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

import retain
from retain.doors.cli.output import emit_json, emit_rows, progress_bar, say
from retain.doors.cli.root import (
    HOME_DIRECTORY,
    PathParameter,
    cli,
    format_option,
    home_option,
    opened,
    project_option,
)

if TYPE_CHECKING:
    from pathlib import Path

    from retain.results import ImportReport

# a snapshot, or retain.formats.KINDS: spelt here, as `retain --help` loads no reader
IMPORT_FORMATS = ("snapshot", "mcp-memory", "mem0", "markdown")


@cli.command()
@click.option(
    "--directory",
    "-o",
    required=True,
    type=PathParameter(),
    help="A new or empty directory for the snapshot (with --format jsonl: a new file).",
)
@project_option("Export one project's tier only.")
@home_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "jsonl"]),
    default="table",
    show_default=True,
    help="table for people, json for programs; jsonl writes the event log instead, one "
    "JSON event a line, to the file -o names.",
)
def export(directory: Path, project: str | None, home: Path | None, fmt: str) -> None:
    """Write every memory as Markdown with YAML frontmatter (a snapshot), or, with
    --format jsonl, the whole event log as JSON lines (checked by tools/check_log.py)."""
    if fmt == "jsonl":
        if project is not None:
            raise click.UsageError("--project is for a snapshot: the log is exported whole")
        _export_log(directory, home)
        return
    with opened(home, fmt) as service:
        with progress_bar() as progress:
            result = service.export(directory, project=project, progress=progress)
        if fmt == "json":
            emit_json(
                {
                    "directory": str(directory),
                    "memories": result.memories,
                    "records": result.records,
                    "tickets": result.tickets,
                    "left_out": result.left_out,
                }
            )
        else:
            say(
                f"Exported {result.memories} memories, {result.records} records and "
                f"{result.tickets} tickets to {directory}."
            )
            if result.left_out:
                say(f"Left out {result.left_out} forgotten memories: no text is left to carry.")


def _export_log(path: Path, home: Path | None) -> None:
    with opened(home) as service:
        with progress_bar() as progress:
            done = service.export_log(path, progress=progress)
        head = f"event {done.head_seq}, hash {done.head_hash}"
        if done.head_signature is not None:
            head += f", signed by key {done.key_id}"
        say(f"Exported {done.events} events ({done.signed} signed) to {path}; head: {head}.")


@cli.command("import")
@click.argument("path", type=PathParameter())
@click.option(
    "--from",
    "kind",
    type=click.Choice(IMPORT_FORMATS),
    default="snapshot",
    show_default=True,
    help="The format: a retain snapshot, the MCP memory server's JSONL, a mem0 dump, "
    "or a folder of Markdown notes.",
)
@project_option("File another store's memories in this project's tier (default: global).")
@click.option(
    "--create",
    is_flag=True,
    help="Create what the import needs that the realm lacks: the project (--from), or a "
    "snapshot's agents, teams and projects.",
)
@click.option("--dry-run", is_flag=True, help="Say what would land and what not; write nothing.")
@click.option("--force", is_flag=True, help="Overwrite memories the store already holds.")
@home_option
@format_option
def import_(
    path: Path,
    kind: str,
    project: str | None,
    create: bool,
    dry_run: bool,
    force: bool,
    home: Path | None,
    fmt: str,
) -> None:
    """Restore a snapshot written by `retain export`, or import another store's
    memories, all or nothing."""
    if kind == "snapshot" and (project is not None or dry_run):
        raise click.UsageError("--project and --dry-run go with --from KIND")
    if kind != "snapshot" and create and project is None:
        raise click.UsageError("--create creates the --project the import files into")
    with opened(home, fmt) as service:
        if kind != "snapshot":
            with progress_bar() as progress:
                report = service.import_from(
                    kind, path, project=project, create=create, dry_run=dry_run,
                    force=force, progress=progress,
                )  # fmt: skip
            _reported(report, fmt)
            return
        with progress_bar() as progress:
            results = service.import_(path, force=force, create=create, progress=progress)
        created = sum(1 for r in results if r.created)
        if fmt == "json":
            emit_json(
                {"imported": len(results), "created": created, "updated": len(results) - created}
            )
        else:
            say(
                f"Imported {len(results)} memories ({created} new, "
                f"{len(results) - created} overwritten)."
            )


def _reported(report: ImportReport, fmt: str) -> None:
    """A foreign import's report: counts, then (on a dry run) each record that would
    land, then each record passed over and why."""
    if fmt == "json":
        emit_json(report.to_dict())
        return
    actions = [x.action for x in report.landed]
    new, over, taken, clash = (
        actions.count(a) for a in ("create", "overwrite", "exists", "conflict")
    )
    verb = "Would import" if report.dry_run else "Imported"
    noun = "memory" if new + over == 1 else "memories"
    said = f"{verb} {new + over} {noun} ({new} new, {over} overwritten)"
    if taken:
        names = "name is" if taken == 1 else "names are"
        said += f"; {taken} {names} taken already (--force overwrites)"
    if clash:
        said += f"; {clash} {'name is' if clash == 1 else 'names are'} another tier's (refused)"
    if report.project_created:
        said += f"; project {report.project_created!r} " + (
            "would be created" if report.dry_run else "created"
        )
    say(f"{said}; {len(report.skipped)} passed over.")
    if report.dry_run and report.landed:
        emit_rows(
            fmt, "landed", [x.to_dict() for x in report.landed],
            {"Source": "source", "Memory": "name", "Action": "action"},
        )  # fmt: skip
    if report.skipped:
        emit_rows(
            fmt, "skipped", [x.to_dict() for x in report.skipped],
            {"Passed over": "source", "Why": "reason"},
        )  # fmt: skip


@cli.command()
@click.option(
    "--from",
    "source",
    required=True,
    metavar="LOCATION",
    help="The store to copy: postgresql://…, sqlite:///path, or a SQLite file.",
)
@click.option(
    "--to", "target", required=True, metavar="LOCATION", help="An empty store to copy it into."
)
@click.option(
    "--home",
    type=HOME_DIRECTORY,
    envvar="RETAIN_HOME",
    help="Where settings (the embedder) are read from (default $RETAIN_HOME).",
)
@format_option
def migrate(source: str, target: str, home: Path | None, fmt: str) -> None:
    """Copy a whole store, its history included, into an empty one on any backend."""
    with opened(home, fmt, location=source) as service:
        destination = retain.open_backend(target, home=home, pool_size=service.settings.pool_size)
        try:
            with progress_bar() as progress:
                result = service.migrate_to(destination, progress=progress)
        finally:
            destination.close()
        if fmt == "json":
            emit_json(result.to_dict())
        else:
            say(
                f"Copied {result.memories} memories and {result.events} events of "
                f"{result.realms} realms from {result.source} to {result.target}; chain head "
                f"{result.chain_head[:12]} in both; {result.rekeyed} search keys made."
            )
