"""The MCP door: the verbs a model is offered as tools, with the official ``mcp`` SDK (2.x).

Translate only. A tool is named after its verb (``memory_search`` is ``search``), takes
the verb's arguments and returns the same record the REST API does, as structured
content typed by the tool's output schema. A refusal is a tool result with ``isError``
set, the text ``[code] message`` and the remedy, and ``{"error": {"code", "message",
"remedy", "details"}}`` as its structured content: clients read the code, never the
words. An argument the input schema refuses (a wrong type, a value out of bounds or
not one of a set, an argument the tool does not take) is refused the same way, as
``invalid_value`` naming the argument. Annotations say truthfully whether a tool
changes the store (``memory_read`` records the read, so it is not read-only), can lose
what was there, or can be repeated; no tool reaches beyond the store
(``open_world_hint`` is false).

Who acts: over streamable HTTP, the principal of the bearer token (the SDK refuses
a request without a known one when the server has tokens); over stdio, the identity
``retain mcp`` was started as. What a principal is offered is the service's
(``MemoryService.offered_verbs``, from the policy table's ``offered`` rows): ``tools/list`` lists
those tools only, per request, and the server's instructions are written for that
kind of principal. With memory turned off for the installation no tool is listed and
a call is refused with ``memory_disabled``.

Its modules: ``tools`` (``create_server``: the tools, their annotations, the context
resource), ``server`` (the SDK's server answering for the principal acting, its
instructions and token check), ``schema`` (the tools' arguments and typed results) and
``error`` (a refusal as a tool result, the door's hints, arguments refused).
"""

from __future__ import annotations

from retain.doors.mcp.error import HINTS, invalid_arguments, refusal, unknown_arguments
from retain.doors.mcp.server import (
    AGENT_KIND,
    INSTRUCTIONS,
    MEMORY_OFF,
    TIERS_KIND,
    Principals,
    Server,
    StaticTokens,
    instructions_for,
)
from retain.doors.mcp.tools import CONTEXT_URI, create_server

__all__ = [
    "AGENT_KIND",
    "CONTEXT_URI",
    "HINTS",
    "INSTRUCTIONS",
    "MEMORY_OFF",
    "TIERS_KIND",
    "Principals",
    "Server",
    "StaticTokens",
    "create_server",
    "instructions_for",
    "invalid_arguments",
    "refusal",
    "unknown_arguments",
]
