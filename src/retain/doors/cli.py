"""The ``retain`` command: parse, call one service verb, render.

No rule lives here. Errors are printed with their code and remedy and mapped
to an exit status through ``EXIT_CODES``; anything unmapped is a bug (70).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

import retain
from retain import errors
from retain.chrono import age_phrase, stamp
from retain.config import RECALL_POLICIES
from retain.doors.deferred import Deferred, real
from retain.doors.terminal import cell, diff, is_terminal, json_text, visible
from retain.extras import needed

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TaskID,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as RichProgress
    from rich.table import Table
    from rich.text import Text

    from retain.doors.records import facts_of, record_of
    from retain.legacy import Report as LegacyReport
    from retain.model import DeleteResult, EditResult, Fact, FactChange, Memory, WriteResult
    from retain.service import MemoryService, Progress, integrity_error
else:  # imported on first use: `retain --help` loads neither rich nor the service
    BarColumn = Deferred("rich.progress", "BarColumn")
    MofNCompleteColumn = Deferred("rich.progress", "MofNCompleteColumn")
    TextColumn = Deferred("rich.progress", "TextColumn")
    TimeRemainingColumn = Deferred("rich.progress", "TimeRemainingColumn")
    RichProgress = Deferred("rich.progress", "Progress")
    Table = Deferred("rich.table", "Table")
    Text = Deferred("rich.text", "Text")
    facts_of = Deferred("retain.doors.records", "facts_of")
    record_of = Deferred("retain.doors.records", "record_of")
    integrity_error = Deferred("retain.service", "integrity_error")

F = TypeVar("F", bound=Callable[..., Any])

EXIT_CODES: dict[type[errors.RetainError], int] = {
    errors.NotFound: 3,
    errors.Conflict: 4,
    errors.BudgetExceeded: 5,
    errors.EditFailed: 6,
    errors.StaleUpdate: 7,
    errors.TransferError: 8,
    errors.InvalidInput: 9,
    errors.IntegrityFailed: 10,
    errors.StoreBusy: 11,
    errors.StoreError: 12,
    errors.ConfigInvalid: 13,
    errors.EmbedderError: 14,
    errors.AccessDenied: 15,
    errors.RecallFailed: 16,
    errors.ExtraMissing: 17,
    errors.ListenFailed: 18,
}
EXIT_BUG = 70

# Nothing printed is read as markup or emoji codes: stored text is shown as it is
# (made visible by ``terminal``), and styles are given as ``Text`` styles.
out = cast(
    "Console",
    Deferred("rich.console", "Console", highlight=False, soft_wrap=True, markup=False, emoji=False),
)
err = cast(
    "Console",
    Deferred(
        "rich.console",
        "Console",
        stderr=True,
        highlight=False,
        soft_wrap=True,
        markup=False,
        emoji=False,
    ),
)


def _say(text: str) -> None:
    """A line on stdout; what it carries is shown as text, control characters spelled out."""
    _line(text, out, err=False)


def _warn(text: str) -> None:
    """A line on stderr, shown as ``_say`` shows it."""
    _line(text, err, err=True)


def _line(text: str, console: Console, *, err: bool) -> None:
    """``text`` as ``console`` prints it unstyled: the visible text and a newline. Written
    without rich (whose import costs a short command ~25 ms) unless it holds a tab, which
    rich expands to its columns."""
    shown = visible(text)
    if "\t" in shown:
        console.print(cell(text))
    else:
        click.echo(shown, err=err)


def exit_code(error: errors.RetainError) -> int:
    """The exit status of an error: its nearest class in ``EXIT_CODES``."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return EXIT_BUG


def _emit_json(data: Any) -> None:
    click.echo(json_text(data))


# -- shared options ---------------------------------------------------------------------


def home_option(fn: F) -> F:
    """``--home``, and ``--database-url`` beside it: where the store is."""
    fn = click.option(
        "--database-url",
        envvar="RETAIN_DATABASE_URL",
        expose_value=False,
        callback=_remember_url,
        help="A postgres:// URL: the store is there, not in the home directory "
        "(default $RETAIN_DATABASE_URL).",
    )(fn)
    return click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="RETAIN_HOME",
        help="Directory of the store (default $RETAIN_HOME or ~/.local/share/retain).",
    )(fn)


def _remember_url(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value and not value.startswith(retain.POSTGRES_SCHEMES):
        raise click.BadParameter("give a postgres:// or postgresql:// URL", ctx, param)
    ctx.meta["retain.database_url"] = value or None


def format_option(fn: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["table", "json"]),
        default="table",
        show_default=True,
        help="table for people, json for programs.",
    )(fn)


def filter_options(fn: F) -> F:
    """The hygiene filters `list` and `search` share."""
    for option in reversed(
        [
            click.option("--tag", help="Only memories with this tag."),
            click.option(
                "--referencing", help="Only memories referencing this memory, path, URL or id."
            ),
            click.option(
                "--unverified", help="Only memories not verified within this period, e.g. 90d."
            ),
            click.option("--expired", is_flag=True, help="Only memories past their expiry."),
        ]
    ):
        fn = option(fn)
    return fn


def project_option(help_text: str) -> Callable[[F], F]:
    return click.option("--project", "-p", default=None, help=help_text)


@contextmanager
def _refusals(fmt: str = "table") -> Iterator[None]:
    """Turn a refusal inside the block into its message on stderr and its exit status."""
    try:
        yield
    except errors.RetainError as exc:
        exc = exc.hinted(HINTS)
        if fmt == "json":
            click.echo(json_text({"error": exc.to_dict()}), err=True)
        else:
            said = cell(f"[{exc.code}] {exc.message}")
            err.print(Text.assemble(("error", "bold red"), " ", said))
            if exc.remedy:
                _warn(f"  {exc.remedy}")
        sys.exit(exit_code(exc))


def _act_as(details: Mapping[str, Any]) -> str:
    from retain.service import actor  # loaded already: the refusal is the service's

    kinds = details.get("allowed") or ()
    return " or ".join(f"`--as {actor.FORM_OF.get(kind, kind)}`" for kind in kinds)


# How this door does the fix a refusal names (``RetainError.hinted``).
HINTS: Mapping[str, errors.Hint] = {
    "act_as": _act_as,
    "add_project": "`retain project add {project}`",
    "add_agent": "`retain agent add {agent}`",
    "add_team": "`retain team add {team}`",
    "find": "`retain list` or `retain search`",
    "list_project": "`retain list --project {project}` shows them",
    "name_project": "`--project`",
    "rename_project": "`retain project rename`",
    "reindex": "`retain reindex`",
    "verify": "`retain verify`",
    "rebuild": "`retain verify --rebuild`",
    "export": "a directory `retain export` wrote",
    "update": "`retain add --force`",
    "force_import": "`retain import --force`",
    "home": "`--home` or `$RETAIN_HOME`",
}


@contextmanager
def _service(
    home: Path | None,
    fmt: str = "table",
    principal: str = "operator:local",
    location: str | None = None,
) -> Iterator[MemoryService]:
    """Open the store, run the verb, and turn a refusal into its exit status."""
    service: MemoryService | None = None
    try:
        with _refusals(fmt):
            from retain.service import actor  # the one registry of principals' forms

            url = location or click.get_current_context().meta.get("retain.database_url")
            service = retain.open(url, home=home, principal=actor.parse(principal))
            if service.legacy_import is not None:
                _report_legacy(service.legacy_import)
            yield service
    finally:
        if service is not None:
            service.close()


def _report_legacy(report: LegacyReport) -> None:
    """Say on stderr what importing the realm's legacy markdown did."""
    if report.files:
        _warn(
            f"Imported {report.imported} legacy agent memories from {len(report.files)} "
            "files (each renamed .md.imported)."
        )
    if report.agents_added:
        _warn(f"  registered agents: {', '.join(report.agents_added)}")
    for problem in report.problems:
        where = f"{problem.file}:{problem.line}" if problem.line else problem.file
        _warn(f"  skipped {where}: {problem.reason}")


@contextmanager
def _progress() -> Iterator[Progress | None]:
    """A progress bar on stderr for a long operation, when stderr is a terminal."""
    if not err.is_terminal:
        yield None
        return
    with RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=real(err),
        transient=True,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def report(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield report


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.InvalidValue(
            f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})",
            remedy="convert it to UTF-8 first",
            field="body",
        ) from exc


def _editor_command(given: str | None) -> str:
    """The editor to run: ``given`` (``--editor``), which may run without a terminal;
    else $VISUAL, $EDITOR or vi, which need one (``no_terminal`` when stdin or stdout
    is not a terminal: an editor there cannot be used and may wait for ever)."""
    if given is not None:
        return given
    if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
        raise errors.NoTerminal(
            "retain edit would start an editor, but stdin or stdout is not a terminal",
            remedy="give the change with --old and --new, run it in a terminal, or name "
            "an editor that needs no terminal with --editor",
        )
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def _run_editor(data: bytes, command: str) -> bytes:
    """Open ``data`` in the editor ``command``; return the file's bytes as saved.

    The bytes go to the editor and come back untouched: line endings, a final
    newline (or none) and a byte-order mark survive.
    """
    import shlex
    import subprocess
    import tempfile

    fd, path = tempfile.mkstemp(prefix="retain-", suffix=".md")  # created 0600
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        try:
            status = subprocess.call([*shlex.split(command), path])
        except (OSError, ValueError) as exc:
            raise click.ClickException(
                f"Editing failed: cannot run {command!r} ({exc}); set $VISUAL or $EDITOR"
            ) from exc
        if status != 0:
            raise click.ClickException(
                f"Editing failed: {command!r} exited with status {status}; nothing was saved"
            )
        return Path(path).read_bytes()
    finally:
        with suppress(OSError):
            os.unlink(path)


# -- rendering ---------------------------------------------------------------------------


def _now() -> datetime:
    return retain.SystemClock().now()


def _flags(memory: Memory, now: datetime) -> str:
    flags = []
    if memory.was_verified:
        flags.append("verified")
    if memory.is_expired(now):
        flags.append("expired")
    return ", ".join(flags)


def _row(table: Table, *values: object) -> None:
    """A table row: each value shown as text (``terminal.cell``), never as markup."""
    table.add_row(*(cell(value) for value in values))


def _memory_table(memories: list[Memory]) -> Table:
    now = _now()
    table = Table(show_lines=False)
    for column in ("Name", "Scope", "Pri", "Load", "Description", "Tags", "Age", "Reads", ""):
        table.add_column(column, overflow="fold")
    for m in memories:
        _row(
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


def _emit_created(fmt: str, name: str, created_at: datetime, sentence: str) -> None:
    """What adding a project, agent or team prints."""
    if fmt == "json":
        _emit_json({"name": name, "created_at": stamp(created_at)})
    else:
        _say(sentence)


def _emit_rows(fmt: str, key: str, rows: list[dict[str, Any]], columns: dict[str, str]) -> None:
    """A listing: ``{key: rows}`` as JSON, else a table whose ``columns`` map each header
    to a row field (a list shown comma-joined)."""
    if fmt == "json":
        _emit_json({key: rows})
        return
    table = Table()
    for header in columns:
        table.add_column(header)
    for row in rows:
        _row(
            table,
            *(", ".join(v) if isinstance(v := row[f], list) else v for f in columns.values()),
        )
    out.print(table)


def _show_change(result: WriteResult | EditResult | DeleteResult) -> None:
    """On a terminal, what a change did as a unified diff of the memory's exported text
    (as ``retain export`` writes its file); nothing when the text is the same. The texts
    are rendered only here, on a terminal: off one, a write loads no renderer."""
    if not is_terminal(sys.stdout):
        return
    memory, before, after = result.memory, result.before, result.after
    if before == after:
        return
    path = f"{memory.name or memory.id}.md"
    for line in diff(before, after, f"{memory.project}/{path}" if memory.project else path):
        out.print(line)


def _print_notes(notes: tuple[str, ...]) -> None:
    for note in notes:
        _say(note)


# -- the command group -----------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(retain.__version__, prog_name="retain")
def cli() -> None:
    """retain: governed long-term memory for AI agents.

    Memories live in one SQLite file under $RETAIN_HOME
    (default ~/.local/share/retain/).
    """


# -- projects ------------------------------------------------------------------------------


@cli.group()
def agent() -> None:
    """Register and list agent identities (each has its own scope, agent:<name>)."""


@agent.command("add")
@click.argument("name")
@home_option
@format_option
def agent_add(name: str, home: Path | None, fmt: str) -> None:
    """Register agent NAME."""
    with _service(home, fmt) as service:
        created = service.add_agent(name)
        _emit_created(fmt, created.name, created.created_at, f"Registered agent '{name}'.")


@agent.command("list")
@home_option
@format_option
def agent_list(home: Path | None, fmt: str) -> None:
    """List registered agents and the teams each belongs to."""
    with _service(home, fmt) as service:
        rows = [
            {"name": a.name, "created_at": stamp(a.created_at), "teams": list(a.teams)}
            for a in service.list_agents()
        ]
        _emit_rows(
            fmt, "agents", rows, {"Agent": "name", "Teams": "teams", "Registered": "created_at"}
        )


@cli.group()
def team() -> None:
    """Create teams, list them, and put agents in them (a team shares team:<name>)."""


@team.command("add")
@click.argument("name")
@home_option
@format_option
def team_add(name: str, home: Path | None, fmt: str) -> None:
    """Create team NAME."""
    with _service(home, fmt) as service:
        created = service.add_team(name)
        _emit_created(fmt, created.name, created.created_at, f"Created team '{name}'.")


@team.command("list")
@home_option
@format_option
def team_list(home: Path | None, fmt: str) -> None:
    """List teams and their members."""
    with _service(home, fmt) as service:
        rows = [
            {"name": t.name, "created_at": stamp(t.created_at), "members": list(t.members)}
            for t in service.list_teams()
        ]
        _emit_rows(
            fmt, "teams", rows, {"Team": "name", "Members": "members", "Created": "created_at"}
        )


@team.command("join")
@click.argument("team_name", metavar="TEAM")
@click.argument("agent_name", metavar="AGENT")
@home_option
@format_option
def team_join(team_name: str, agent_name: str, home: Path | None, fmt: str) -> None:
    """Put registered agent AGENT in team TEAM (a member already stays one)."""
    with _service(home, fmt) as service:
        joined_team, joined = service.join_team(team_name, agent_name)
        if fmt == "json":
            _emit_json(
                {
                    "team": joined_team.name,
                    "agent": agent_name,
                    "joined": joined,
                    "members": list(joined_team.members),
                }
            )
        elif joined:
            _say(f"Agent '{agent_name}' joined team '{team_name}'.")
        else:
            _say(f"Agent '{agent_name}' is already in team '{team_name}'.")


@cli.group()
def project() -> None:
    """Create, list, rename and remove projects (the project tiers)."""


@project.command("add")
@click.argument("name")
@home_option
@format_option
def project_add(name: str, home: Path | None, fmt: str) -> None:
    """Create project NAME."""
    with _service(home, fmt) as service:
        created = service.add_project(name)
        _emit_created(fmt, created.name, created.created_at, f"Created project '{name}'.")


@project.command("list")
@home_option
@format_option
def project_list(home: Path | None, fmt: str) -> None:
    """List projects with how many memories each holds."""
    with _service(home, fmt) as service:
        rows = [
            {"name": p.name, "created_at": stamp(p.created_at), "memories": p.memories}
            for p in service.list_projects()
        ]
        columns = {"Project": "name", "Memories": "memories", "Created": "created_at"}
        _emit_rows(fmt, "projects", rows, columns)


@project.command("rename")
@click.argument("old")
@click.argument("new")
@home_option
@format_option
def project_rename(old: str, new: str, home: Path | None, fmt: str) -> None:
    """Rename project OLD to NEW, moving its memories with it."""
    with _service(home, fmt) as service:
        renamed = service.rename_project(old, new)
        if fmt == "json":
            _emit_json(record_of(renamed))
        else:
            _say(f"Renamed project '{old}' to '{new}' ({renamed.memories} memories moved).")


@project.command("remove")
@click.argument("name")
@home_option
@format_option
def project_remove(name: str, home: Path | None, fmt: str) -> None:
    """Remove project NAME (refused while it holds memories)."""
    with _service(home, fmt) as service:
        service.remove_project(name)
        if fmt == "json":
            _emit_json({"removed": name})
        else:
            _say(f"Removed project '{name}'.")


# -- writing ---------------------------------------------------------------------------------


@cli.command()
@click.argument("name")
@click.option("--description", "-d", help="One line: what the index lists.")
@click.option("--body", "-b", help='The body; "" clears it.')
@click.option(
    "--from-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
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
    home: Path | None,
    fmt: str,
) -> None:
    """Save memory NAME; with --force, update it, keeping every field not given."""
    if body is not None and from_file is not None:
        raise click.UsageError("give --body or --from-file, not both")
    with _service(home, fmt) as service:
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
        )
        memory = result.memory
        if fmt == "json":
            record = memory.to_dict(_now())
            record.update(
                created=result.created,
                changed=result.changed,
                notes=list(result.notes),
                before=result.before,
                after=result.after,
            )
            _emit_json(record)
            return
        verb_done = "Saved" if result.created else ("Updated" if result.changed else "Unchanged:")
        where = f"project {memory.project}" if memory.project else "global"
        _say(f"{verb_done} memory '{memory.name}' (priority {memory.priority}, {where}).")
        _print_notes(result.notes)
        _show_change(result)


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
    project: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Edit the body of NAME in $VISUAL or $EDITOR, or with --old/--new."""
    if old is None and (new is not None or replace_all):
        raise click.UsageError("--new and --replace-all need --old")
    if old is not None and editor_command is not None:
        raise click.UsageError("give --old (and --new) or --editor, not both")
    with _service(home, fmt) as service:
        if old is not None:
            result = service.edit(
                name, old, new or "", replace_all=replace_all, verified=verified, project=project
            )
            if fmt == "json":
                record = result.memory.to_dict(_now())
                record.update(
                    replacements=result.replacements,
                    excerpt=result.excerpt,
                    before=result.before,
                    after=result.after,
                )
                _emit_json(record)
            else:
                _say(
                    f"Edited '{name}' ({result.replacements} replacement"
                    f"{'s' if result.replacements != 1 else ''}):"
                )
                _say(result.excerpt)
                _show_change(result)
            return
        command = _editor_command(editor_command)
        current = service.get(name, project=project).memory
        edited = _decode(_run_editor(current.body.encode("utf-8"), command), "the edited body")
        written = service.write(
            name,
            body=edited,
            project=current.project or "",
            verified=verified,
            expected_hash=current.content_hash,
        )
        if fmt == "json":
            record = written.memory.to_dict(_now())
            record.update(changed=written.changed, before=written.before, after=written.after)
            _emit_json(record)
        elif written.changed:
            _say(f"Updated the body of '{name}'.")
            _show_change(written)
        else:
            _say(f"No change to '{name}'.")


@cli.command()
@click.argument("name")
@project_option("The project whose memory to remove.")
@home_option
@format_option
def remove(name: str, project: str | None, home: Path | None, fmt: str) -> None:
    """Remove memory NAME; memories that reference it keep their references."""
    with _service(home, fmt) as service:
        result = service.delete(name, project=project)
        if fmt == "json":
            _emit_json(result.to_dict())
            return
        _say(f"Removed memory '{name}'.")
        _show_change(result)
        if result.referenced_by:
            _say(
                "Still referenced by: "
                + ", ".join(result.referenced_by)
                + " (their references are kept as markers to revisit)."
            )


# -- reading ---------------------------------------------------------------------------------


@cli.command()
@click.argument("name")
@project_option("The project whose memory to get.")
@home_option
@format_option
def get(name: str, project: str | None, home: Path | None, fmt: str) -> None:
    """Every stored field of NAME, and what references it."""
    with _service(home, fmt) as service:
        record = service.get(name, project=project)
        data = record.memory.to_dict(_now())
        data["referenced_by"] = list(record.referenced_by)
        if fmt == "json":
            _emit_json(data)
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
            _row(table, key, shown)
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
    with _service(home, fmt) as service:
        memory = service.get(name, project=project).memory
        if fmt == "json":
            _emit_json(memory.to_dict(_now(), body=True))
            return
        _write_stored(memory.body, raw)


def _write_stored(text: str, raw: bool) -> None:
    """Stored text on stdout: byte for byte when it goes to a file or a pipe, or when
    ``raw``; on a terminal, with every control character spelled out."""
    stream = sys.stdout
    shown = text if raw or not is_terminal(stream) else visible(text)
    stream.buffer.write(shown.encode("utf-8"))
    stream.flush()


@cli.command()
@click.argument("name")
@click.option("--offset", type=int, default=0, show_default=True, help="Continuation offset.")
@project_option("The project whose memory to read.")
@home_option
@format_option
def read(name: str, offset: int, project: str | None, home: Path | None, fmt: str) -> None:
    """Read NAME as an agent does: a captioned page of the body (counts as a read)."""
    with _service(home, fmt) as service:
        page = service.read(name, offset=offset, project=project)
        if fmt == "json":
            _emit_json(page.to_dict(_now()))
            return
        _say(f"{page.memory.name or page.memory.id}: {page.memory.description}")
        _say(page.caption)
        _say(page.text)
        if page.next_offset is not None:
            _say(
                f"[{page.total_chars - page.next_offset} more characters: "
                f"--offset {page.next_offset}]"
            )
        for ref in page.references:
            _say(f"References: {ref.target}" + (f" — {ref.description}" if ref.description else ""))
        if page.referenced_by:
            _say("Referenced by: " + ", ".join(page.referenced_by))


@cli.command("list")
@project_option('One project\'s tier; "" for the global tier.')
@filter_options
@click.option("--limit", "-n", type=int, help="A page of at most this many (default: all).")
@click.option("--cursor", help="Continue after the page that gave this cursor (its next_cursor).")
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
    home: Path | None,
    fmt: str,
) -> None:
    """Memories in index order: priority, then newest first."""
    with _service(home, fmt) as service:
        memories = service.list_memories(
            project=project,
            tag=tag,
            referencing=referencing,
            unverified=unverified,
            expired=expired,
            limit=limit,
            after=cursor,
        )
        full = limit is not None and len(memories) == limit
        from retain import fields  # here: it loads retain.model, which --help need not

        next_cursor = fields.cursor_of(memories[-1].position) if full else None
        if fmt == "json":
            now = _now()
            _emit_json({"memories": [m.to_dict(now) for m in memories], "next_cursor": next_cursor})
            return
        out.print(_memory_table(memories))
        if next_cursor is not None:
            _say(f"More after this page: --cursor {next_cursor}")


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
    home: Path | None,
    fmt: str,
) -> None:
    """Search memories; several QUERIES are synonyms whose hits are fused."""
    with _service(home, fmt) as service:
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
        )
        now = _now()
        if fmt == "json":
            _emit_json(result.to_dict(now))
            return
        _say(result.summary)
        if result.degraded:
            _warn(f"degraded: {result.degraded} (searching with {result.embedder})")
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
            _row(
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


# -- an agent's own memory ------------------------------------------------------------------


def as_option(fn: F) -> F:
    return click.option(
        "--as",
        "principal",
        required=True,
        metavar="agent:NAME",
        help="The registered agent acting (the local door stands in for authentication).",
    )(fn)


@cli.command()
@click.argument("text")
@as_option
@click.option("--description", "-d", help="One line; the text's first line otherwise.")
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--priority", type=int, help="0 (most important) to 9; default 5.")
@click.option("--subject", help="Who or what it is about.")
@click.option("--thread", help="The conversation it belongs to.")
@click.option("--valid-from", help="When it began to hold: RFC 3339, or YYYY-MM-DD.")
@home_option
@format_option
def remember(
    text: str,
    principal: str,
    description: str | None,
    tags: tuple[str, ...],
    priority: int | None,
    subject: str | None,
    thread: str | None,
    valid_from: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Save TEXT in the acting agent's own memory (its scope agent:NAME)."""
    with _service(home, fmt, principal) as service:
        memory = service.remember(
            text,
            description=description,
            tags=list(tags) if tags else None,
            priority=priority,
            subject=subject,
            thread=thread,
            valid_from=valid_from,
        )
        if fmt == "json":
            _emit_json(memory.to_dict(_now(), body=True))
        else:
            _say(f"Remembered {memory.id} ({memory.scope}).")


@cli.command()
@click.argument("queries", nargs=-1, required=True)
@as_option
@project_option("Recall as a session on this project (its tier besides the agent's own).")
@click.option("--limit", "-n", type=int, default=10, show_default=True, help="At most this many.")
@click.option("--budget", type=int, help="Tokens the results may fill.")
@home_option
@format_option
def recall(
    queries: tuple[str, ...],
    principal: str,
    project: str | None,
    limit: int,
    budget: int | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Search what the acting agent sees: global, the project, its teams and its own."""
    with _service(home, fmt, principal) as service:
        result = service.recall(list(queries), project=project, limit=limit, budget_tokens=budget)
        now = _now()
        if fmt == "json":
            _emit_json(result.to_dict(now))
            return
        _say(result.summary)
        table = Table()
        for column in ("Id", "Scope", "Description", "Match"):
            table.add_column(column, overflow="fold")
        for hit in result.hits:
            m = hit.memory
            shown = m.short_body if m.short_body and m.short_body != m.description else ""
            text = m.description + (f"\n{shown}" if shown else "")
            _row(table, m.name or m.id, m.scope, text, ", ".join(hit.senses))
        out.print(table)


@cli.command()
@click.argument("memory_id", metavar="ID")
@as_option
@click.option("--reason", default="", help="Why, for the event log.")
@home_option
@format_option
def forget(memory_id: str, principal: str, reason: str, home: Path | None, fmt: str) -> None:
    """Take one of the acting agent's own memories out of recall (history keeps it)."""
    with _service(home, fmt, principal) as service:
        memory = service.forget(memory_id, reason=reason)
        if fmt == "json":
            _emit_json(memory.to_dict(_now()))
        else:
            _say(f"Forgot {memory.id}.")


# -- facts --------------------------------------------------------------------------------


def acting_option(fn: F) -> F:
    return click.option(
        "--as",
        "principal",
        default="operator:local",
        show_default=True,
        metavar="PRINCIPAL",
        help="Who acts: agent:NAME for a registered agent (it sees global, the project, its "
        "teams and its own).",
    )(fn)


def _span(start: datetime | None, end: datetime | None) -> str:
    """``from → to`` in minutes (an open end left blank)."""
    shown = [f"{m:%Y-%m-%d %H:%M}" if m else "" for m in (start, end)]
    return f"{shown[0]} → {shown[1]}".strip()


def _emit_facts(fmt: str, found: list[Fact]) -> None:
    if fmt == "json":
        _emit_json(facts_of(found))
        return
    if not found:
        _say("No facts.")
        return
    table = Table()
    for column in ("Fact", "Value", "Tier", "Held (UTC)", "Believed (UTC)", "Status"):
        table.add_column(column, overflow="fold")
    for f in found:
        cells = (
            f"{f.subject} {f.predicate}", f.value, f.scope,
            _span(f.valid_from or f.recorded_at, f.valid_to),
            _span(f.recorded_at, f.retracted_at), f.status.value,
        )  # fmt: skip
        _row(table, *cells)
    out.print(table)


def _emit_change(fmt: str, change: FactChange, verb: str) -> None:
    if fmt == "json":
        _emit_json(change.to_dict(verb))
        return
    fact = change.fact
    if verb == "write" and not change.changed:
        _say(f"Unchanged: {fact.subject} {fact.predicate} is {fact.value}.")
        return
    done = "Recorded" if verb == "write" else "Retracted"
    _say(f"{done} {fact.subject} {fact.predicate} = {fact.value} ({fact.scope}).")
    if change.other is not None:
        other = "Superseded" if verb == "write" else "Holds again"
        _say(f"{other}: {change.other.value}.")


@cli.group()
def fact() -> None:
    """Facts: a subject's predicate has a value, from a moment on (see docs/concepts.md)."""


@fact.command("write")
@click.argument("subject")
@click.argument("predicate")
@click.argument("value")
@acting_option
@project_option("The project's tier (else the global one; an agent's go to its own).")
@click.option("--valid-from", help="When it began to hold: RFC 3339, or YYYY-MM-DD.")
@click.option("--reason", default="", help="Why, for the event log.")
@home_option
@format_option
def fact_write(
    subject: str,
    predicate: str,
    value: str,
    principal: str,
    project: str | None,
    valid_from: str | None,
    reason: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Record that SUBJECT's PREDICATE is VALUE; the current value is superseded."""
    with _service(home, fmt, principal) as service:
        change = service.fact_write(
            subject, predicate, value, project=project, valid_from=valid_from, reason=reason
        )
        _emit_change(fmt, change, "write")


@fact.command("read")
@click.argument("subject")
@click.argument("predicate", required=False)
@acting_option
@project_option("Read as a session on this project (its tier besides the global one).")
@click.option("--valid-at", help="What held then (default now): RFC 3339, or YYYY-MM-DD.")
@click.option("--known-at", help="As the store knew then (default now).")
@home_option
@format_option
def fact_read(
    subject: str,
    predicate: str | None,
    principal: str,
    project: str | None,
    valid_at: str | None,
    known_at: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """SUBJECT's facts (of PREDICATE, or all) that held at --valid-at, as known at --known-at."""
    with _service(home, fmt, principal) as service:
        found = service.fact_read(
            subject, predicate, project=project, valid_at=valid_at, known_at=known_at
        )
        _emit_facts(fmt, found)


@fact.command("history")
@click.argument("subject")
@click.argument("predicate")
@acting_option
@project_option("Read as a session on this project (its tier besides the global one).")
@home_option
@format_option
def fact_history(
    subject: str, predicate: str, principal: str, project: str | None, home: Path | None, fmt: str
) -> None:
    """Every version of SUBJECT's PREDICATE, in the order recorded."""
    with _service(home, fmt, principal) as service:
        _emit_facts(fmt, service.fact_history(subject, predicate, project=project))


@fact.command("retract")
@click.argument("subject")
@click.argument("predicate")
@acting_option
@project_option("The project's tier (else the global one; an agent's own for an agent).")
@click.option("--reason", default="", help="Why, for the event log.")
@home_option
@format_option
def fact_retract(
    subject: str,
    predicate: str,
    principal: str,
    project: str | None,
    reason: str,
    home: Path | None,
    fmt: str,
) -> None:
    """Withdraw the current value of SUBJECT's PREDICATE; the one it superseded holds again."""
    with _service(home, fmt, principal) as service:
        change = service.fact_retract(subject, predicate, project=project, reason=reason)
        _emit_change(fmt, change, "retract")


# -- the memory section of an agent's context ---------------------------------------------


@cli.command()
@acting_option
@project_option("Render for a session on this project (its tier after the global one).")
@click.option("--turn", help="The turn's text: memories matching it are recalled and quoted.")
@click.option("--session", help="The session's key: later renders show only what changed.")
@click.option("--restate", is_flag=True, help="State the whole section (after a compaction).")
@click.option(
    "--recall-timeout-ms",
    type=int,
    help="How long recall may take; default [context] recall_timeout_ms (500).",
)
@click.option(
    "--recall-failure",
    type=click.Choice(RECALL_POLICIES),
    help="When recall is late or fails: skip it or fail; default [context] "
    "recall_failure_policy (skip).",
)
@home_option
@format_option
def context(
    principal: str,
    project: str | None,
    turn: str | None,
    session: str | None,
    restate: bool,
    recall_timeout_ms: int | None,
    recall_failure: str | None,
    home: Path | None,
    fmt: str,
) -> None:
    """Print the memory section to place in front of an agent."""
    with _service(home, fmt, principal) as service:
        result = service.context(
            project=project,
            turn=turn,
            session=session,
            restate=restate,
            recall_timeout_ms=recall_timeout_ms,
            recall_failure_policy=recall_failure,
        )
        if fmt == "json":
            _emit_json(result.to_dict())
            return
        _write_stored(result.text, raw=False)
        if result.recall_note:
            _warn(f"note: {result.recall_note}; rendered without recall")


@cli.command()
@click.option("--memory", "memory_id", help="Only this memory's (its id).")
@click.option("--session", help="Only this session's.")
@click.option("--identity", help="Only what was rendered for this principal (agent:NAME).")
@click.option("--limit", "-n", type=int, default=100, show_default=True, help="At most this many.")
@click.option(
    "--as",
    "principal",
    default="operator:local",
    show_default=True,
    metavar="PRINCIPAL",
    help="Who reads; anyone but an operator sees only their own rows.",
)
@home_option
@format_option
def injections(
    memory_id: str | None,
    session: str | None,
    identity: str | None,
    limit: int,
    principal: str,
    home: Path | None,
    fmt: str,
) -> None:
    """List the injection ledger: which memories were rendered into whose context."""
    with _service(home, fmt, principal) as service:
        rows = service.list_injections(
            memory_id=memory_id, session=session, identity=identity, limit=limit
        )
        _emit_rows(
            fmt,
            "injections",
            [r.to_dict() for r in rows],
            {
                "When": "injected_at",
                "Memory": "memory_id",
                "Identity": "identity",
                "Session": "session",
                "Surface": "surface",
            },
        )


# -- export, import, health ----------------------------------------------------------------


@cli.command()
@click.option(
    "--directory",
    "-o",
    required=True,
    type=click.Path(path_type=Path),
    help="A new or empty directory for the snapshot.",
)
@project_option("Export one project's tier only.")
@home_option
@format_option
def export(directory: Path, project: str | None, home: Path | None, fmt: str) -> None:
    """Write every memory as Markdown with YAML frontmatter (a snapshot)."""
    with _service(home, fmt) as service:
        with _progress() as progress:
            result = service.export(directory, project=project, progress=progress)
        if fmt == "json":
            _emit_json(
                {
                    "directory": str(directory),
                    "memories": result.memories,
                    "left_out": result.left_out,
                }
            )
        else:
            _say(f"Exported {result.memories} memories to {directory}.")
            if result.left_out:
                _say(
                    f"Left out {result.left_out} agent memories and facts: snapshots do "
                    "not carry agents' own memories or facts yet."
                )


@cli.command("import")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite memories the store already holds.")
@home_option
@format_option
def import_(directory: Path, force: bool, home: Path | None, fmt: str) -> None:
    """Restore a snapshot written by `retain export`, all or nothing."""
    with _service(home, fmt) as service:
        with _progress() as progress:
            results = service.import_(directory, force=force, progress=progress)
        created = sum(1 for r in results if r.created)
        if fmt == "json":
            _emit_json(
                {"imported": len(results), "created": created, "updated": len(results) - created}
            )
        else:
            _say(
                f"Imported {len(results)} memories ({created} new, "
                f"{len(results) - created} overwritten)."
            )


@cli.command()
@click.option(
    "--rebuild", is_flag=True, help="Regenerate the search index and vectors from the table first."
)
@home_option
@format_option
def verify(rebuild: bool, home: Path | None, fmt: str) -> None:
    """Check the search index, the vectors and the event chain."""
    with _service(home, fmt) as service:
        with _progress() as progress:
            report = service.verify(rebuild=rebuild, progress=progress)
        if fmt == "json":
            _emit_json(
                {
                    "ok": report.ok,
                    "memories": report.memories,
                    "index_documents": report.index_documents,
                    "index_sound": report.index_sound,
                    "events": report.events,
                    "chain_ok": report.chain_ok,
                    "vectors": report.vectors,
                    "pending_vectors": report.pending_vectors,
                    "early_reversals": report.early_reversals,
                    "problems": list(report.problems),
                    "notes": list(report.notes),
                    "rebuilt": report.rebuilt,
                }
            )
        else:
            if report.rebuilt:
                _say("Rebuilt the search index and every search key.")
            _say(
                f"{report.memories} memories, {report.index_documents} indexed documents, "
                f"{report.vectors} vectors, {report.events} events."
            )
            if report.pending_vectors:
                _say(
                    f"{report.pending_vectors} vectors pending: a write that landed is storing "
                    "them, or the next write makes them."
                )
            for problem in report.problems:
                _say(f"problem: {problem}")
            for note in report.notes:
                _say(f"note: {note}")
            if report.ok:
                _say("Index sound; event chain unbroken.")
        if not report.ok:
            raise integrity_error(report)


@cli.command()
@home_option
@format_option
def reindex(home: Path | None, fmt: str) -> None:
    """Embed every memory again with the embedder in use (after a model change)."""
    with _service(home, fmt) as service:
        with _progress() as progress:
            count = service.reindex(progress=progress)
        loaded = service.embedder
        if fmt == "json":
            _emit_json(
                {"reindexed": count, "embedder": loaded.model_id, "degraded": loaded.degraded}
            )
            return
        _say(f"Re-indexed {count} memories with {loaded.model_id}.")
        if loaded.degraded:
            _warn(f"degraded: {loaded.degraded}")


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
    type=click.Path(file_okay=False, path_type=Path),
    envvar="RETAIN_HOME",
    help="Where settings (the embedder) are read from (default $RETAIN_HOME).",
)
@format_option
def migrate(source: str, target: str, home: Path | None, fmt: str) -> None:
    """Copy a whole store, its history included, into an empty one on any backend."""
    with _service(home, fmt, location=source) as service:
        destination = retain.open_backend(target, home=home, pool_size=service.settings.pool_size)
        try:
            with _progress() as progress:
                result = service.migrate_to(destination, progress=progress)
        finally:
            destination.close()
        if fmt == "json":
            _emit_json(result.to_dict())
        else:
            _say(
                f"Copied {result.memories} memories and {result.events} events of "
                f"{result.realms} realms from {result.source} to {result.target}; chain head "
                f"{result.chain_head[:12]} in both; {result.rekeyed} search keys made."
            )
            for problem in result.problems:
                _say(f"problem: {problem}")
        if not result.verified:
            raise errors.IntegrityFailed(
                "the copy did not verify",
                remedy="run `retain verify` on both stores",
                problems=list(result.problems),
            )


@cli.command()
@home_option
@format_option
def status(home: Path | None, fmt: str) -> None:
    """Where the store is and what it holds."""
    with _service(home, fmt) as service:
        s = service.status()
        data = s.to_dict()
        if fmt == "json":
            _emit_json(data)
            return
        if s.degraded:
            _warn(f"degraded: {s.degraded} (searching with {s.embedder})")
        table = Table(show_header=False)
        table.add_column("field", style="bold")
        table.add_column("value")
        for key, value in data.items():
            _row(table, key, value)
        out.print(table)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", "port_text", default="8765", show_default=True, help="Port to listen on (1-65535)."
)
@click.option(
    "--tokens",
    "tokens_file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="RETAIN_TOKENS_FILE",
    help="A file of TOKEN=PRINCIPAL lines (besides $RETAIN_TOKENS); with tokens, every "
    "request needs one.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Server processes sharing the port, each with the store open.",
)
@home_option
def serve(
    host: str, port_text: str, tokens_file: Path | None, workers: int, home: Path | None
) -> None:
    """Serve the REST API under /v1 and the MCP server at /mcp on one port."""
    with _refusals(), needed("server", "serving the REST API and MCP"):
        import uvicorn

        from retain.doors import http, serving

    url = click.get_current_context().meta.get("retain.database_url")
    with _service(home) as service:
        port = serving.port_of(port_text)
        tokens = http.load_tokens(tokens_file)
        http.check_binding(host, tokens)
        app = http.create_app(service, tokens=tokens, host=host)
        loaded = service.embedder
        listener = serving.listen(host, port)  # said once it listens: a caller may connect
        _warn(
            f"retain: serving {service.backend.location} at http://{host}:{port}{http.API} "
            f"and MCP at http://{host}:{port}{http.MCP_PATH}/ ({len(tokens)} token(s); "
            f"embedder {loaded.model_id})"
        )
        if loaded.degraded:
            _warn(f"degraded: {loaded.degraded}")
        if workers == 1:
            http.one_blas_thread()
            config = uvicorn.Config(app, host=host, port=port, log_level="warning")
            uvicorn.Server(config).run(sockets=[listener])
            return
        os.environ[http.SERVE_ENV] = json.dumps(
            {
                "location": url,
                "home": str(home) if home else None,
                "tokens": str(tokens_file) if tokens_file else None,
                "host": host,
            }
        )
        serving.run_workers(f"{http.__name__}:app_from_environment", listener, workers)


@cli.group("mcp", invoke_without_command=True)
@click.option(
    "--as",
    "principal",
    default="operator:local",
    show_default=True,
    help="Who the client acts as: agent:NAME (a registered agent) for an agent's memory.",
)
@home_option
@click.pass_context
def mcp_(ctx: click.Context, principal: str, home: Path | None) -> None:
    """Serve the MCP server over stdio, for a desktop client that starts it.

    `retain mcp config` prints what a client's configuration needs to start it."""
    if ctx.invoked_subcommand is not None:  # it reads these options from this context
        ctx.meta["retain.mcp.database_url"] = ctx.meta.get("retain.database_url")
        return  # (its own --database-url, absent, would set the shared one to None)
    with _refusals(), needed("server", "the MCP server"):
        from retain.doors import http, mcp

    with _service(home, principal=principal) as service:
        service.check_principal()  # an agent that is not registered is refused now
        services = http.Services(service)
        mcp.create_server(services.of, local_principal=principal).run("stdio")


@mcp_.command("config")
@click.option(
    "--client",
    type=click.Choice(["claude-desktop", "claude-code", "cursor"]),
    default="claude-desktop",
    show_default=True,
    help="The client whose configuration to print.",
)
@click.option(
    "--as", "principal", default=None, help="Who the client acts as (default: retain mcp's)."
)
@home_option
@click.pass_context
def mcp_config(ctx: click.Context, client: str, principal: str | None, home: Path | None) -> None:
    """Print the block an MCP client needs to start `retain mcp`: this retain's absolute
    path and the store's RETAIN_HOME, so a client with another PATH or HOME opens it."""
    from retain.config import resolve_home
    from retain.doors import launch

    given = ctx.parent.params if ctx.parent is not None else {}
    principal = principal or given.get("principal") or "operator:local"
    home = home or given.get("home")
    url = ctx.meta.get("retain.database_url") or ctx.meta.get("retain.mcp.database_url")
    with _service(home, principal=principal, location=url) as service:
        service.check_principal()  # a block for an agent that is not registered fails later
        location = service.backend.location
    env = {"RETAIN_HOME": os.path.abspath(resolve_home(home))}
    if url:
        env["RETAIN_DATABASE_URL"] = url
    args = ["mcp", "--as", principal]
    click.echo(launch.server_block(client, launch.retain_command(), args, env))
    _warn(f"{launch.WHERE[client]} It opens {location} as {principal}.")


def main() -> None:
    """The console script's entry point."""
    try:
        cli(standalone_mode=True)
    except Exception:  # a bug: log it and exit 70
        import traceback  # only here: a command that works never loads it

        _warn("internal error (a bug in retain; please report it):")
        _warn(traceback.format_exc())
        sys.exit(EXIT_BUG)
