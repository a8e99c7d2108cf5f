"""``python -m retain``: the ``retain`` command (what ``retain mcp config`` falls back to
when it was not started as the console script)."""

from retain.doors.cli import main

main()
