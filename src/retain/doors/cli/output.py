"""What the ``retain`` command prints, and how.

Two consoles (stdout, stderr) made on first use, lines printed as text (stored text is
never read as markup or emoji codes, its control characters are spelled out), JSON for
``--format json``, the tables and diffs the commands share, and the progress bar of a
long operation. rich is imported the first time something is drawn with it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import click

import retain
from retain.doors.deferred import Deferred, real
from retain.doors.terminal import cell, diff, is_terminal, json_text, visible

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
    from rich.table import Table as Table  # the commands draw their tables with it

    from retain.chrono import stamp
    from retain.results import DeleteResult, EditResult, WriteResult
    from retain.service import Progress
else:  # imported on first use: `retain --help` loads neither rich nor the service
    stamp = Deferred("retain.chrono", "stamp")  # nor the clock's module
    BarColumn = Deferred("rich.progress", "BarColumn")
    MofNCompleteColumn = Deferred("rich.progress", "MofNCompleteColumn")
    TextColumn = Deferred("rich.progress", "TextColumn")
    TimeRemainingColumn = Deferred("rich.progress", "TimeRemainingColumn")
    RichProgress = Deferred("rich.progress", "Progress")
    Table = Deferred("rich.table", "Table")  # one stand-in for every command module

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


def say(text: str) -> None:
    """A line on stdout; what it carries is shown as text, control characters spelled out."""
    _line(text, out, err=False)


def emit_said(fmt: str, data: Any, sentence: str) -> None:
    """A result: ``data`` as JSON, else one sentence on stdout."""
    if fmt == "json":
        emit_json(data)
    else:
        say(sentence)


def say_held(status: str, reasons: Sequence[str] = ()) -> None:
    """The line that says a write was held for review (nothing when it was not)."""
    if status != "quarantined":
        return
    why = f" ({', '.join(reasons)})" if reasons else ""
    say(
        f"Held for review{why}: no agent recalls, searches or is shown it until a reviewer "
        "releases it (`retain quarantine list`)."
    )


def warn(text: str) -> None:
    """A line on stderr, shown as ``say`` shows it."""
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


def emit_json(data: Any) -> None:
    """``data`` on stdout as ``--format json`` prints it."""
    click.echo(json_text(data))


def moment() -> datetime:
    """Now, as records are rendered (their ages, whether they have expired)."""
    return retain.SystemClock().now()


def add_row(table: Table, *values: object) -> None:
    """A table row: each value shown as text (``terminal.cell``), never as markup."""
    table.add_row(*(cell(value) for value in values))


def emit_created(fmt: str, name: str, created_at: datetime, sentence: str) -> None:
    """What adding a project, agent or team prints."""
    if fmt == "json":
        emit_json({"name": name, "created_at": stamp(created_at)})
    else:
        say(sentence)


def emit_rows(fmt: str, key: str, rows: list[dict[str, Any]], columns: dict[str, str]) -> None:
    """A listing: ``{key: rows}`` as JSON, else a table whose ``columns`` map each header
    to a row field (a list shown comma-joined)."""
    if fmt == "json":
        emit_json({key: rows})
        return
    table = Table()
    for header, field in columns.items():
        if field == "id" and rows:  # an id is copied whole into the next command
            table.add_column(header, no_wrap=True, min_width=max(len(str(r["id"])) for r in rows))
        else:
            table.add_column(header, overflow="fold")
    for row in rows:
        add_row(
            table,
            *(", ".join(v) if isinstance(v := row[f], list) else v for f in columns.values()),
        )
    out.print(table)


def show_change(result: WriteResult | EditResult | DeleteResult) -> None:
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


def write_stored(text: str, raw: bool) -> None:
    """Stored text on stdout: byte for byte when it goes to a file or a pipe, or when
    ``raw``; on a terminal, with every control character spelled out."""
    stream = sys.stdout
    shown = text if raw or not is_terminal(stream) else visible(text)
    stream.buffer.write(shown.encode("utf-8"))
    stream.flush()


def stderr_may_be_terminal() -> bool:
    """Whether rich might find stderr a terminal: asked without rich (its import costs a
    short command tens of milliseconds) when stderr is no tty and neither variable rich
    reads to think otherwise is set (``TTY_COMPATIBLE=1``, a non-empty ``FORCE_COLOR``)."""
    return (
        is_terminal(sys.stderr)
        or os.environ.get("TTY_COMPATIBLE") == "1"
        or bool(os.environ.get("FORCE_COLOR"))
    )


class _Bar:
    """The bar of a ``progress_bar`` on a terminal's stderr: drawn at the first report of
    work left, gone (``stop``) once every phase it shows is done."""

    def __init__(self) -> None:
        self.bar: RichProgress | None = None
        self.drawn: bool | None = None  # whether rich finds stderr a terminal, asked once
        self.tasks: dict[str, TaskID] = {}

    def report(self, phase: str, done: int, total: int) -> None:
        if self.bar is None and done >= total:
            return  # nothing left to show
        if self.drawn is None:
            self.drawn = err.is_terminal
        if not self.drawn:
            return
        if self.bar is None:
            self.bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=real(err),
                transient=True,
            )
            self.bar.start()
        if phase not in self.tasks:
            self.tasks[phase] = self.bar.add_task(phase, total=total)
        self.bar.update(self.tasks[phase], completed=done, total=total)
        if self.bar.finished:
            self.stop()

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar, self.tasks = None, {}


_open: list[_Bar] = []  # the outermost ``progress_bar``'s, while it is open


@contextmanager
def progress_bar() -> Iterator[Progress | None]:
    """A progress bar on stderr for a long operation, when stderr is a terminal (as rich
    finds it; off one, rich is not imported to ask), drawn from the first report: an
    operation that reports nothing (a store opened with no upgrade due) imports nothing.

    The bar goes once every phase it shows is done, or when the ``with`` ends: a bar left
    on the terminal would be drawn over the command's output, and its last line cleared
    when it goes. A ``progress_bar`` inside another shares its bar, since rich draws one
    at a time: a command's store reports to one for as long as the command runs (an
    older store's upgrade, a vector index a search builds), and a verb's own is inside."""
    if _open:
        try:
            yield _open[-1].report
        finally:
            _open[-1].stop()
        return
    if not stderr_may_be_terminal():
        yield None
        return
    bar = _Bar()
    _open.append(bar)
    try:
        yield bar.report
    finally:
        _open.pop()
        bar.stop()
