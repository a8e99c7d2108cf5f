"""Stored text as the CLI shows it: data, never markup and never terminal control.

Anything a memory holds (a description, a body, a tag, a fact's value, a name in an
error) may hold what a terminal or rich would act on: ``[bold]`` or ``[/]`` is rich
markup, ``\\x1b[2J`` clears the screen, an OSC sequence sets the window title, a
right-to-left override reorders what follows. ``visible`` spells every such character
out (``\\x1b``, ``\\u202e``) and ``cell`` makes a rich ``Text`` of the result, so no
``[...]`` is ever read as a style. Newlines and tabs are kept where text has lines.
``json_text`` escapes the same characters in JSON (``\\u009b``), which reads back the
same. ``diff`` draws what a change did to a memory's exported text.
"""

from __future__ import annotations

import re
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text

# C0 controls (ESC, CR, BEL, …), DEL, C1 controls (CSI, OSC, …), the bidirectional
# marks, embeddings, overrides and isolates, and the Unicode line/paragraph separators.
# The patterns are compiled on first use (``re``'s cache keeps them): `retain --help`
# compiles none.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_TEXT = f"[{_UNSAFE}]"  # newlines and tabs kept
_IN_LINE = f"[\t\n{_UNSAFE}]"
_IN_JSON = "[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: object, *, line: bool = False) -> str:
    """``value`` as text with every control character spelled out; ``line`` spells out
    newlines and tabs too (for a value shown inside one line)."""
    text = "" if value is None else str(value)
    return re.sub(_IN_LINE if line else _IN_TEXT, _spelled, text)


def cell(value: object, style: str = "") -> Text:
    """A table cell or a printed line: ``value`` made visible, as text, never as markup."""
    from rich.text import Text  # with the first print: `retain --help` loads no rich

    return Text(visible(value), style=style)


def json_text(data: Any) -> str:
    """``data`` as indented JSON whose strings carry no raw control character (JSON
    escapes C0 itself; DEL, C1 and the bidirectional controls are escaped here)."""
    import json  # with the first JSON printed: `retain --help` loads no json

    text = json.dumps(data, ensure_ascii=False, indent=2)
    return re.sub(_IN_JSON, lambda m: f"\\u{ord(m.group()):04x}", text)


def is_terminal(stream: IO[Any]) -> bool:
    """Whether ``stream`` is a terminal (a stream without ``isatty`` is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def _lines(text: str) -> list[str]:
    """``text`` cut after each newline only (``splitlines`` also cuts at form feeds,
    separators and other controls, which are shown instead)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def diff(before: str | None, after: str | None, label: str) -> list[Text]:
    """A unified diff of a memory's exported text before and after a change (``None``:
    it did not exist), each line made visible; removed lines red, added green."""
    old = [] if before is None else _lines(before)
    new = [] if after is None else _lines(after)
    import difflib  # here: only a change shown on a terminal needs it

    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{label}",
        tofile="/dev/null" if after is None else f"b/{label}",
    )
    shown = []
    for number, row in enumerate(lines):
        text = row.rstrip("\n")
        if number < 2:  # the two file names
            shown.append(cell(text, "bold"))
            continue
        if not row.endswith("\n"):
            text += "\n\\ No newline at end of file"
        style = {"@": "cyan", "+": "green", "-": "red"}.get(row[:1], "")
        shown.append(cell(text, style))
    return shown
