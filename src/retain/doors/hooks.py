"""An agent host's hook events, read as the session verbs they stand for.

Translation only: a host runs a hook command with a JSON event on its standard input,
and this module says which verb that event is and with what arguments. The one host
read today is Claude Code (``hooks`` in its settings), whose events carry
``session_id``, ``hook_event_name`` and, by event:

* ``PostToolUse``: ``tool_name`` (``WebFetch``, ``Bash``, ``mcp__github__get_issue``, ...),
  ``tool_input``, ``tool_response`` → ``observe`` of that tool in that session;
* ``SessionStart``: ``source`` → ``reset_session`` at a boundary: ``clear`` → ``clear``,
  ``startup`` → ``new``, ``compact`` → ``compact`` (accepted, nothing changes); ``resume``
  continues a context and is no boundary at all. It also asks for the memory section
  (``context``): stated whole after ``clear`` or ``compact``, whose context lost it;
* ``UserPromptSubmit``: ``prompt`` → ``context`` for that turn (the memories it recalls).

A ``context`` hook answers in the host's form (``hook_output``): the section as the
event's ``additionalContext``, which Claude Code places before the model's next turn.

Every tool name is passed as the host reports it: the classifier reads Claude Code's own
fetchers, ``WebFetch`` and ``WebSearch``, as the built-in fetchers they are, and
attributes ``mcp__<server>__<tool>`` to its server (``retain.governance.content_trust``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from retain.errors import InvalidValue

POST_TOOL_USE = "PostToolUse"
SESSION_START = "SessionStart"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
RESTATED = ("clear", "compact")  # the boundaries after which a context holds no section
SOURCE_BOUNDARY: dict[str, str | None] = {
    "clear": "clear",
    "startup": "new",
    "compact": "compact",
    "resume": None,  # the same context, continued: no boundary
}


@dataclass(frozen=True, slots=True)
class HookEvent:
    """What a hook event asks: the session, and the tool it ingested (``PostToolUse``)
    or the boundary it crossed (``SessionStart``; None when it crossed none)."""

    event: str
    session: str
    tool: str | None = None
    boundary: str | None = None
    prompt: str | None = None


def read_event(text: str) -> HookEvent:
    """The hook event a host wrote, or ``invalid_value`` naming what is missing."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(f"the hook's input is not JSON: {exc.msg}", "input") from exc
    if not isinstance(data, dict):
        raise _bad("the hook's input is not a JSON object", "input")
    event, session = data.get("hook_event_name"), data.get("session_id")
    if not isinstance(session, str) or not session:
        raise _bad("the hook's input has no session_id", "session_id")
    if event == POST_TOOL_USE:
        tool = data.get("tool_name")
        if not isinstance(tool, str) or not tool:
            raise _bad("the PostToolUse event has no tool_name", "tool_name")
        return HookEvent(event, session, tool=tool)
    if event == SESSION_START:
        source = data.get("source")
        if source not in SOURCE_BOUNDARY:
            raise _bad(
                f"the SessionStart event's source is {source!r}, not one of "
                f"{', '.join(SOURCE_BOUNDARY)}",
                "source",
            )
        return HookEvent(event, session, boundary=SOURCE_BOUNDARY[source])
    if event == USER_PROMPT_SUBMIT:
        prompt = data.get("prompt")
        if not isinstance(prompt, str):
            raise _bad("the UserPromptSubmit event has no prompt", "prompt")
        return HookEvent(event, session, prompt=prompt)
    raise _bad(
        f"the hook event {event!r} is not PostToolUse, SessionStart or UserPromptSubmit",
        "event",
    )


def hook_output(event: str, context: str) -> dict[str, Any]:
    """What a hook answers to put ``context`` before the model's next turn."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


def _bad(message: str, field: str) -> InvalidValue:
    return InvalidValue(
        message,
        remedy="run it as the host's hook command, which writes the event's JSON to it",
        field=field,
    )
