"""The ``retain`` command: parse, call one service verb, render.

No rule lives here. Errors are printed with their code and remedy and mapped
to an exit status through ``EXIT_CODES``; anything unmapped is a bug (70).

The package is the command, one module a concern: ``root`` (the group, the shared
options, the store a command opens), ``output`` (what is printed, and how),
``refusal`` (exit statuses and hints), ``editor``, and one module a group of commands
(``memory``, ``agent``, ``fact``, ``registry``, ``review``, ``session``, ``ticket``,
``transfer``, ``trust``, ``access``, ``admin``, ``server``), each imported the first time
one of its commands is asked for (``root.COMMANDS``: a command loads its own module, not
the others), each leaving rich and the service unimported until a command runs them.
``main`` is the console script.
"""

from __future__ import annotations

import sys

from retain.doors.cli.output import warn
from retain.doors.cli.refusal import EXIT_BUG, EXIT_CODES, HINTS, exit_code
from retain.doors.cli.root import cli, load_commands

__all__ = ["EXIT_BUG", "EXIT_CODES", "HINTS", "cli", "exit_code", "load_commands", "main"]


def main() -> None:
    """The console script's entry point."""
    try:
        cli(standalone_mode=True)
    except Exception:  # a bug: log it and exit 70
        import traceback  # only here: a command that works never loads it

        warn("internal error (a bug in retain; please report it):")
        warn(traceback.format_exc())
        sys.exit(EXIT_BUG)
