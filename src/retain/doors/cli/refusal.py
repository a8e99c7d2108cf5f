"""How the ``retain`` command answers a refusal: its message, its hint, its exit status.

A refusal is printed with its code and remedy (with this door's hint for the remedy's
``fix``, from ``HINTS``) on stderr, or as ``{"error": {...}}`` with ``--format json``,
and the command exits with the status of the error's nearest class in ``EXIT_CODES``;
an error no entry covers is a bug (``EXIT_BUG``, 70).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from retain import errors
from retain.doors.cli.output import err, stderr_may_be_terminal, warn
from retain.doors.deferred import Deferred
from retain.doors.terminal import cell, json_text

if TYPE_CHECKING:
    from rich.text import Text
else:  # imported on first use: `retain --help` loads no rich
    Text = Deferred("rich.text", "Text")

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
    errors.SecretDetected: 19,
    errors.ReviewRefused: 20,
    errors.HoldActive: 21,
    errors.SignatureInvalid: 22,
}
EXIT_BUG = 70


def exit_code(error: errors.RetainError) -> int:
    """The exit status of an error: its nearest class in ``EXIT_CODES``."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return EXIT_BUG


@contextmanager
def refusals(fmt: str = "table") -> Iterator[None]:
    """Turn a refusal inside the block into its message on stderr and its exit status."""
    try:
        yield
    except errors.RetainError as exc:
        exc = exc.hinted(HINTS)
        if fmt == "json":
            click.echo(json_text({"error": exc.to_dict()}), err=True)
        else:
            if stderr_may_be_terminal():  # "error" in bold red, as rich draws it
                said = cell(f"[{exc.code}] {exc.message}")
                err.print(Text.assemble(("error", "bold red"), " ", said))
            else:  # off a terminal no style is drawn: the same line, without importing rich
                warn(f"error [{exc.code}] {exc.message}")
            if exc.remedy:
                warn(f"  {exc.remedy}")
        sys.exit(exit_code(exc))


def _act_as(details: Mapping[str, Any]) -> str:
    from retain.service import actor  # loaded already: the refusal is the service's

    kinds = details.get("allowed") or ()
    return " or ".join(f"`--as {actor.FORM_OF.get(kind, kind)}`" for kind in kinds)


# How this door does the fix a refusal names (``RetainError.hinted``).
HINTS: Mapping[str, errors.Hint] = {
    "act_as": _act_as,
    "grant": "`retain access grant {principal} {action} {on}`",
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
    "redact": "`--redact` writes each secret as its marker",
    "quarantine": "`retain quarantine list` shows it with its content_hash",
    "ticket": "`retain ticket show {ticket}` shows the ticket it waits on",
    "release_hold": "`retain release {id} --reason ...` releases it",
    "keygen": "`retain receipt keygen --out FILE`, then key_file under [signing]",
    "graph": "`retain graph {id}` shows what replaced it",
}
