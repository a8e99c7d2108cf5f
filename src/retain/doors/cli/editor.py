"""A memory's body edited in the user's editor (``retain edit`` without ``--old``)."""

from __future__ import annotations

import os
import sys
from contextlib import suppress

import click

from retain import errors
from retain.doors.terminal import is_terminal


def command_of(given: str | None) -> str:
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


def run(data: bytes, command: str) -> bytes:
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
        from pathlib import Path

        return Path(path).read_bytes()
    finally:
        with suppress(OSError):
            os.unlink(path)
