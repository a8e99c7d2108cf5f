"""How an MCP client starts ``retain mcp``: the command, its environment, and the block
each client's configuration takes (``retain mcp config``).

A client launches its servers with an environment of its own (often no ``PATH``, and
another ``HOME``), so the block names everything: the absolute path of the ``retain``
that printed it (else this Python with ``-m retain``, the same installation for sure),
and ``RETAIN_HOME`` (and ``RETAIN_DATABASE_URL`` for a PostgreSQL store) so the server
opens the store it was configured on, whatever the client's ``HOME``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

SERVER_NAME = "retain"
CLIENTS = ("claude-desktop", "claude-code", "cursor")
WHERE = {
    "claude-desktop": "Add it to claude_desktop_config.json (Settings > Developer > Edit "
    "Config; on macOS ~/Library/Application Support/Claude/, on Windows %APPDATA%\\Claude\\) "
    "and restart Claude Desktop.",
    "claude-code": "Run it once; --scope user offers the server in every project "
    "(--scope project writes .mcp.json for the repository instead).",
    "cursor": "Add it to ~/.cursor/mcp.json (every project) or .cursor/mcp.json in a "
    "project, then enable the server in Cursor's MCP settings.",
}


def retain_command(argv0: str | None = None) -> list[str]:
    """The command that runs this installation's ``retain``, by absolute path."""
    launched = Path(sys.argv[0] if argv0 is None else argv0)
    if launched.stem == "retain" and launched.is_file():  # the console script
        return [os.path.abspath(launched)]
    return [os.path.abspath(sys.executable), "-m", "retain"]


def server_block(client: str, command: list[str], args: list[str], env: Mapping[str, str]) -> str:
    """What ``client``'s configuration needs to start the server ``command + args``."""
    if client == "claude-code":
        # the name before --env: --env takes several values, up to the "--"
        words = ["claude", "mcp", "add", "--transport", "stdio", "--scope", "user", SERVER_NAME]
        for key, value in env.items():
            words += ["--env", f"{key}={value}"]
        return shlex.join([*words, "--", *command, *args])
    entry = {"command": command[0], "args": [*command[1:], *args], "env": dict(env)}
    return json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2, ensure_ascii=False)
