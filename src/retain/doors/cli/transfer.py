"""The commands that move memories between stores: ``export`` a snapshot, ``import``
one, and ``migrate`` a whole store to another backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

import retain
from retain.doors.cli.output import emit_json, progress_bar, say
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
                    "left_out": result.left_out,
                }
            )
        else:
            say(f"Exported {result.memories} memories to {directory}.")
            if result.left_out:
                say(
                    f"Left out {result.left_out} agent memories and facts: snapshots do "
                    "not carry agents' own memories or facts yet."
                )


def _export_log(path: Path, home: Path | None) -> None:
    with opened(home) as service:
        with progress_bar() as progress:
            done = service.export_log(path, progress=progress)
        head = f"event {done.head_seq}, hash {done.head_hash}"
        if done.head_signature is not None:
            head += f", signed by key {done.key_id}"
        say(f"Exported {done.events} events ({done.signed} signed) to {path}; head: {head}.")


@cli.command("import")
@click.argument("directory", type=PathParameter())
@click.option("--force", is_flag=True, help="Overwrite memories the store already holds.")
@home_option
@format_option
def import_(directory: Path, force: bool, home: Path | None, fmt: str) -> None:
    """Restore a snapshot written by `retain export`, all or nothing."""
    with opened(home, fmt) as service:
        with progress_bar() as progress:
            results = service.import_(directory, force=force, progress=progress)
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
