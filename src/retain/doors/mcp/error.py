"""How the MCP door answers a refusal: a tool result with ``isError`` set, the text
``[code] message`` and the remedy, and ``{"error": {...}}`` as its structured content;
the door's hint for the fix a refusal names (``HINTS``); and arguments the input schema
refuses (or a tool does not take) as ``invalid_value`` naming the argument."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from retain.errors import Hint, InvalidValue, RetainError
from retain.service.actor import FORM_OF


def _act_as(details: Mapping[str, Any]) -> str:
    named = [FORM_OF.get(kind, kind) for kind in details.get("allowed") or ()]
    return f"connect the server as {' or '.join(named)}" if named else ""


# How this door does the fix a refusal names (``RetainError.hinted``): what a model can
# do itself names a tool or an argument; the rest is the operator's.
HINTS: Mapping[str, Hint] = {
    "act_as": _act_as,
    "grant": "an operator grants it: `retain access grant {principal} {action} {on}`",
    "add_project": "an operator creates it: `retain project add {project}`",
    "add_agent": "an operator registers it: `retain agent add {agent}`",
    "add_team": "an operator creates it: `retain team add {team}`",
    "find": "memory_search",
    "list_project": "memory_search with the project argument finds them",
    "name_project": "the project argument",
    "update": "memory_write updates a memory of that name",
    "reindex": "an operator runs `retain reindex`",
    "verify": "an operator runs `retain verify`",
    "rebuild": "an operator runs `retain verify --rebuild`",
    "redact": "the redact argument writes each secret as its marker",
    "quarantine": "memory_list_quarantine shows it with its content_hash",
    "ticket": "ticket_show shows the ticket it waits on",
    "release_hold": "an operator or an application releases it (memory_release)",
    "keygen": "an operator runs `retain receipt keygen` and configures the key",
    "graph": "memory_graph shows what replaced it",
}


def refusal(error: RetainError) -> CallToolResult:
    error = error.hinted(HINTS)
    text = f"[{error.code}] {error.message}" + (f"\n{error.remedy}" if error.remedy else "")
    return CallToolResult(
        is_error=True,
        content=[TextContent(type="text", text=text)],
        structured_content={"error": error.to_dict()},
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _problem(error: Mapping[str, Any]) -> tuple[str, str]:
    """One argument the input schema refused: its name, and what is wrong, in words."""
    where = [str(part) for part in error["loc"]]
    field = where[0] if where else "arguments"
    path = field + "".join(f"[{part}]" for part in where[1:])
    given = _shown(error.get("input"))
    context = error.get("ctx") or {}
    kind = str(error["type"])
    if kind == "missing":
        return field, f"{path} is required"
    if kind in ("greater_than_equal", "greater_than"):
        return field, f"{path} {given} is below {context.get('ge', context.get('gt'))}"
    if kind in ("less_than_equal", "less_than"):
        return field, f"{path} {given} is above {context.get('le', context.get('lt'))}"
    if kind == "literal_error":
        return field, f"{path} {given} is not one of {context.get('expected')}"
    words = {
        "int": "a whole number",
        "string": "text",
        "list": "a list",
        "bool": "true or false",
        "dict": "an object",
    }
    for prefix, what in words.items():
        if kind.startswith(prefix):
            return field, f"{path} {given} is not {what}"
    return field, f"{path} {given} is not valid ({error.get('msg', kind)})"


def invalid_arguments(tool: str, exc: ValidationError) -> InvalidValue:
    """The refusal of arguments the tool's input schema does not accept."""
    problems = [_problem(e) for e in exc.errors()]
    return InvalidValue(
        f"{tool}: " + "; ".join(text for _, text in problems),
        remedy="give the arguments the tool's input schema describes",
        field=problems[0][0] if problems else "arguments",
        fields=sorted({field for field, _ in problems}),
        tool=tool,
    )


def unknown_arguments(tool: str, given: list[str], known: list[str]) -> InvalidValue:
    hints = []
    for name in given:
        close = difflib.get_close_matches(name, known, n=1)
        hints.append(f"{name} (did you mean {close[0]}?)" if close else name)
    return InvalidValue(
        f"{tool} takes no argument {', '.join(hints)}",
        remedy=f"{tool} takes {', '.join(known) or 'no arguments'}",
        field=given[0],
        fields=given,
        tool=tool,
    )
