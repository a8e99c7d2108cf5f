"""The memory commands: ``add``, ``edit`` and ``remove`` change a memory; ``get``,
``show``, ``read``, ``list`` and ``search`` read them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

import click

from retain import errors
from retain.doors.cli import editor
from retain.doors.cli.output import (
    Table,
    add_row,
    emit_json,
    moment,
    out,
    say,
    say_held,
    show_change,
    warn,
    write_stored,
)
from retain.doors.cli.root import (
    PathParameter,
    cli,
    evidence_of,
    evidence_options,
    filter_options,
    format_option,
    home_option,
    min_trust_option,
    opened,
    project_option,
)
from retain.doors.deferred import Deferred

if TYPE_CHECKING:
    from pathlib import Path

    from retain.chrono import age_phrase
    from retain.model import Memory
else:  # imported on first use: `retain --help` loads not even the clock's module
    age_phrase = Deferred("retain.chrono", "age_phrase")


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.InvalidValue(
            f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})",
            remedy="convert it to UTF-8 first",
            field="body",
        ) from exc


def _flags(memory: Memory, now: datetime) -> str:
    flags = []
    if memory.was_verified:
        flags.append("verified")
    if memory.is_expired(now):
        flags.append("expired")
    return ", ".join(flags)


def _memory_table(memories: list[Memory]) -> Table:
    now = moment()
    table = Table(show_lines=False)
    for column in ("Name", "Scope", "Pri", "Load", "Description", "Tags", "Age", "Reads", ""):
        table.add_column(column, overflow="fold")
    for m in memories:
        add_row(
            table,
            m.name or m.id,
            m.scope,
            str(m.priority),
            m.load.value,
            m.description,
            " ".join(m.tags),
            age_phrase(m.created_at, now),
            str(m.read_count),
            _flags(m, now),
        )
    return table


# -- writing ---------------------------------------------------------------------------------


@cli.command()
@click.argument("name")
@click.option("--description", "-d", help="One line: what the index lists.")
@click.option("--body", "-b", help='The body; "" clears it.')
@click.option(
    "--from-file",
    type=PathParameter(exists=True, dir_okay=False),
    help="Read the body from a file, byte for byte.",
)
@click.option("--priority", type=int, help="0 (most important) to 9; default 5.")
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--no-tags", is_flag=True, help="Clear the tags.")
@click.option(
    "--load", type=click.Choice(["inline", "index", "search"]), help="How it reaches context."
)
@project_option("File it in this project's tier.")
@click.option("--tier", type=click.Choice(["global", "project"]), help="Move it to this tier.")
@click.option("--source", help="One line: where the fact came from.")
@click.option("--expires", help='RFC 3339, or YYYY-MM-DD (end of that local day); "" clears.')
@click.option("--subject", help='Who or what it is about (a speaker, a person); "" clears.')
@click.option(
    "--thread", help='The conversation it belongs to: found with its neighbours; "" clears.'
)
@click.option("--valid-from", help='When it began to hold: RFC 3339, or YYYY-MM-DD; "" clears.')
@click.option("--reference", "references", multiple=True, help="A reference; repeat for more.")
@click.option("--no-references", is_flag=True, help="Clear the references.")
@click.option("--verified", is_flag=True, help="The fact was checked just now.")
@click.option(
    "--force", is_flag=True, help="Update the memory if NAME exists (keeps what is not given)."
)
@click.option("--redact", is_flag=True, help="Write each secret found as [redacted:KIND].")
@evidence_options
@home_option
@format_option
def add(
    name: str,
    description: str | None,
    body: str | None,
    from_file: Path | None,
    priority: int | None,
    tags: tuple[str, ...],
    no_tags: bool,
    load: str | None,
    project: str | None,
    tier: str | None,
    source: str | None,
    expires: str | None,
    subject: str | None,
    thread: str | None,
    valid_from: str | None,
    references: tuple[str, ...],
    no_references: bool,
    verified: bool,
    force: bool,
    redact: bool,
    evidence: str | None,
    evidence_path: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Save memory NAME; with --force, update it, keeping every field not given."""
    if body is not None and from_file is not None:
        raise click.UsageError("give --body or --from-file, not both")
    with opened(home, fmt) as service:
        if from_file is not None:
            body = _decode(from_file.read_bytes(), str(from_file))
        result = service.write(
            name,
            description=description,
            body=body,
            tags=[] if no_tags else (list(tags) if tags else None),
            priority=priority,
            load=load,
            references=[] if no_references else (list(references) if references else None),
            source=source,
            expires=expires,
            subject=subject,
            thread=thread,
            valid_from=valid_from,
            project=project,
            tier=tier,
            verified=verified,
            create_only=not force,
            redact=redact,
            evidence=evidence_of(evidence, evidence_path),
        )
        memory = result.memory
        if fmt == "json":
            from retain.write_results import receipted

            record = memory.to_dict(moment())
            record.update(
                created=result.created,
                changed=result.changed,
                notes=list(result.notes),
                before=result.before,
                after=result.after,
                receipt=receipted(result.receipt),
            )
            emit_json(record)
            return
        verb_done = "Saved" if result.created else ("Updated" if result.changed else "Unchanged:")
        where = f"project {memory.project}" if memory.project else "global"
        label = memory.name or memory.id  # a held write holds no name
        say(f"{verb_done} memory '{label}' (priority {memory.priority}, {where}).")
        say_held(memory.status.value, memory.quarantine_reason)
        for note in result.notes:
            say(note)
        show_change(result)


@cli.command()
@click.argument("name")
@click.option("--old", help="Text to replace, exactly once (non-interactive edit).")
@click.option("--new", default=None, help="Replacement text; empty deletes the old text.")
@click.option("--replace-all", is_flag=True, help="Replace every occurrence of --old.")
@click.option("--verified", is_flag=True, help="The fact was checked just now.")
@click.option(
    "--editor",
    "editor_command",
    metavar="COMMAND",
    help="The editor to run (default $VISUAL, else $EDITOR, else vi, which need a terminal).",
)
@click.option("--redact", is_flag=True, help="Write each secret found as [redacted:KIND].")
@project_option("The project whose memory to edit.")
@home_option
@format_option
def edit(
    name: str,
    old: str | None,
    new: str | None,
    replace_all: bool,
    verified: bool,
    editor_command: str | None,
    redact: bool,
    project: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Edit the body of NAME in $VISUAL or $EDITOR, or with --old/--new."""
    if old is None and (new is not None or replace_all):
        raise click.UsageError("--new and --replace-all need --old")
    if old is not None and editor_command is not None:
        raise click.UsageError("give --old (and --new) or --editor, not both")
    with opened(home, fmt) as service:
        if old is not None:
            result = service.edit(
                name,
                old,
                new or "",
                replace_all=replace_all,
                verified=verified,
                project=project,
                redact=redact,
            )
            if fmt == "json":
                from retain.write_results import receipted

                record = result.memory.to_dict(moment())
                record.update(
                    replacements=result.replacements,
                    excerpt=result.excerpt,
                    before=result.before,
                    after=result.after,
                    receipt=receipted(result.receipt),
                )
                emit_json(record)
            else:
                say(
                    f"Edited '{name}' ({result.replacements} replacement"
                    f"{'s' if result.replacements != 1 else ''}):"
                )
                say(result.excerpt)
                show_change(result)
            return
        command = editor.command_of(editor_command)
        current = service.get(name, project=project).memory
        edited = _decode(editor.run(current.body.encode("utf-8"), command), "the edited body")
        written = service.write(
            name,
            body=edited,
            project=current.project or "",
            verified=verified,
            expected_hash=current.content_hash,
            redact=redact,
        )
        if fmt == "json":
            from retain.write_results import receipted

            record = written.memory.to_dict(moment())
            record.update(
                changed=written.changed,
                before=written.before,
                after=written.after,
                receipt=receipted(written.receipt),
            )
            emit_json(record)
        elif written.changed:
            say(f"Updated the body of '{name}'.")
            show_change(written)
        else:
            say(f"No change to '{name}'.")


@cli.command()
@click.argument("name")
@project_option("The project whose memory to remove.")
@home_option
@format_option
def remove(name: str, project: str | None, home: Path | None, fmt: str) -> None:
    """Remove memory NAME; memories that reference it keep their references."""
    with opened(home, fmt) as service:
        result = service.delete(name, project=project)
        if fmt == "json":
            emit_json(result.to_dict())
            return
        say(f"Removed memory '{name}'.")
        show_change(result)
        if result.referenced_by:
            say(
                "Still referenced by: "
                + ", ".join(result.referenced_by)
                + " (their references are kept as markers to revisit)."
            )


# -- reading ---------------------------------------------------------------------------------


@cli.command()
@click.argument("name")
@project_option("The project whose memory to get.")
@min_trust_option
@home_option
@format_option
def get(name: str, project: str | None, min_trust: str | None, home: Path | None, fmt: str) -> None:
    """Every stored field of NAME, and what references it."""
    with opened(home, fmt) as service:
        record = service.get(name, project=project, min_trust=min_trust)
        data = record.memory.to_dict(moment())
        data["referenced_by"] = list(record.referenced_by)
        if fmt == "json":
            emit_json(data)
            return
        table = Table(show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        for key, value in data.items():
            shown = (
                ", ".join(value)
                if isinstance(value, list)
                else ("" if value is None else str(value))
            )
            add_row(table, key, shown)
        out.print(table)


@cli.command()
@click.argument("name")
@project_option("The project whose memory to show.")
@click.option(
    "--raw",
    is_flag=True,
    help="Write the body byte for byte even to a terminal (control characters included).",
)
@home_option
@format_option
def show(name: str, project: str | None, raw: bool, home: Path | None, fmt: str) -> None:
    """The body of NAME, exactly as stored (control characters spelled out on a terminal)."""
    with opened(home, fmt) as service:
        memory = service.get(name, project=project).memory
        if fmt == "json":
            emit_json(memory.to_dict(moment(), body=True))
            return
        write_stored(memory.body, raw)


@cli.command()
@click.argument("name")
@click.option("--offset", type=int, default=0, show_default=True, help="Continuation offset.")
@project_option("The project whose memory to read.")
@home_option
@format_option
def read(name: str, offset: int, project: str | None, home: Path | None, fmt: str) -> None:
    """Read NAME as an agent does: a captioned page of the body (counts as a read)."""
    with opened(home, fmt) as service:
        page = service.read(name, offset=offset, project=project)
        if fmt == "json":
            emit_json(page.to_dict(moment()))
            return
        say(f"{page.memory.name or page.memory.id}: {page.memory.description}")
        say(page.caption)
        say(page.text)
        if page.next_offset is not None:
            say(
                f"[{page.total_chars - page.next_offset} more characters: "
                f"--offset {page.next_offset}]"
            )
        for ref in page.references:
            say(f"References: {ref.target}" + (f" — {ref.description}" if ref.description else ""))
        if page.referenced_by:
            say("Referenced by: " + ", ".join(page.referenced_by))


@cli.command("list")
@project_option('One project\'s tier; "" for the global tier.')
@filter_options
@click.option("--limit", "-n", type=int, help="A page of at most this many (default: all).")
@click.option("--cursor", help="Continue after the page that gave this cursor (its next_cursor).")
@min_trust_option
@home_option
@format_option
def list_(
    project: str | None,
    tag: str | None,
    referencing: str | None,
    unverified: str | None,
    expired: bool,
    limit: int | None,
    cursor: str | None,
    min_trust: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Memories in index order: priority, then newest first."""
    with opened(home, fmt) as service:
        memories = service.list_memories(
            project=project,
            tag=tag,
            referencing=referencing,
            unverified=unverified,
            expired=expired,
            limit=limit,
            after=cursor,
            min_trust=min_trust,
        )
        full = limit is not None and len(memories) == limit
        from retain import fields  # here: it loads retain.model, which --help need not

        next_cursor = fields.cursor_of(memories[-1].position) if full else None
        if fmt == "json":
            now = moment()
            emit_json({"memories": [m.to_dict(now) for m in memories], "next_cursor": next_cursor})
            return
        out.print(_memory_table(memories))
        if next_cursor is not None:
            say(f"More after this page: --cursor {next_cursor}")


@cli.command()
@click.argument("queries", nargs=-1)
@project_option("Search as a session on this project sees (its tier and global).")
@click.option("--tier", type=click.Choice(["global", "project"]), help="Search one tier.")
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="At most this many.")
@click.option(
    "--budget",
    type=int,
    help="Tokens the results may fill: all relevant ones if they fit, else the best that fit.",
)
@filter_options
@min_trust_option
@home_option
@format_option
def search(
    queries: tuple[str, ...],
    project: str | None,
    tier: str | None,
    limit: int,
    budget: int | None,
    tag: str | None,
    referencing: str | None,
    unverified: str | None,
    expired: bool,
    min_trust: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Search memories; several QUERIES are synonyms whose hits are fused."""
    with opened(home, fmt) as service:
        result = service.search(
            list(queries),
            project=project,
            tier=tier,
            limit=limit,
            tag=tag,
            referencing=referencing,
            unverified=unverified,
            expired=expired,
            budget_tokens=budget,
            min_trust=min_trust,
        )
        now = moment()
        if fmt == "json":
            emit_json(result.to_dict(now))
            return
        say(result.summary)
        if result.degraded:
            warn(f"degraded: {result.degraded} (searching with {result.embedder})")
        table = Table()
        for column in ("Name", "Scope", "Pri", "Age", "Reads", "Description", "Match", ""):
            table.add_column(column, overflow="fold")
        for hit in result.hits:
            m = hit.memory
            match = ", ".join(hit.senses)
            if hit.scanned_terms:
                match += f" ({', '.join(hit.scanned_terms)})"
            description = m.description
            if m.short_body:
                description += "\n" + m.short_body
            add_row(
                table,
                m.name or m.id,
                m.scope,
                str(m.priority),
                age_phrase(m.created_at, now),
                str(m.read_count),
                description,
                match,
                _flags(m, now),
            )
        out.print(table)
