"""The shape every stored field must have, checked before a store is touched.

Each function takes what a caller passed and returns the stored form, or
raises an ``InvalidInput`` naming the field and what to write instead.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable

from retain.chrono import parse_stamp, stamp
from retain.errors import InvalidName, InvalidValue, TooManyReferences
from retain.model import ListPosition, Load

NAME_MAX = 128
DESCRIPTION_NOTE_AT = 200
MAX_REFERENCES = 20
REFERENCE_MAX = 1000
TAG_MAX = 64
MIN_PRIORITY = 0
MAX_PRIORITY = 9

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_SPACE = re.compile(r"\s+")


def name(value: str, *, what: str = "memory") -> str:
    """A memory or project name: letters, digits, ``.``, ``_``, ``-``; it is also a file name."""
    if not isinstance(value, str) or not value:
        raise InvalidName(f"a {what} needs a name", remedy="give a name like deploy-host")
    if len(value) > NAME_MAX or not _NAME.fullmatch(value):
        raise InvalidName(
            f"{value!r} is not a valid {what} name",
            remedy=(
                f"use at most {NAME_MAX} letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            ),
            name=value,
        )
    return value


def is_name(value: str) -> bool:
    """Whether ``value`` could be a memory's name (and so may refer to one)."""
    return isinstance(value, str) and len(value) <= NAME_MAX and bool(_NAME.fullmatch(value))


def text(value: str, field: str) -> str:
    """Any stored text: it must be Unicode that UTF-8 can encode (no lone surrogates)."""
    if not isinstance(value, str):
        raise InvalidValue(
            f"the {field} must be text, not {type(value).__name__}",
            remedy=f"pass the {field} as a string",
            field=field,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidValue(
            f"the {field} holds characters that are not valid Unicode text",
            remedy=f"pass the {field} as UTF-8 text",
            field=field,
        ) from exc
    if "\x00" in value:  # PostgreSQL cannot store it, and no text needs it
        raise InvalidValue(
            f"the {field} holds a NUL character (U+0000)",
            remedy=f"remove the NUL characters from the {field}",
            field=field,
        )
    return value


def description(value: str) -> str:
    """The description collapsed to one line."""
    return _SPACE.sub(" ", text(value, "description")).strip()


def priority(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidValue(
            f"priority {value!r} is not a whole number",
            remedy=f"give a priority from {MIN_PRIORITY} (most important) to {MAX_PRIORITY}",
            field="priority",
        )
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise InvalidValue(
            f"priority {value} is outside {MIN_PRIORITY}–{MAX_PRIORITY}",
            remedy=f"give a priority from {MIN_PRIORITY} (most important) to {MAX_PRIORITY}",
            field="priority",
            value=value,
        )
    return value


def load(value: str | Load) -> Load:
    try:
        return Load(value)
    except ValueError as exc:
        raise InvalidValue(
            f"load {value!r} is not one of inline, index, search",
            remedy="use inline (body always in context), index (listed) or search (found)",
            field="load",
            value=value,
        ) from exc


def _strings(values: Iterable[object], field: str) -> list[str]:
    """A list field as given, refused when it is a bare string or holds non-strings."""
    items = [] if isinstance(values, str | bytes) else list(values)
    if isinstance(values, str | bytes) or not all(isinstance(v, str) for v in items):
        raise InvalidValue(
            f"{field} must be a list of strings",
            remedy=f'pass {field} as a list, such as ["infra"]; [] clears it',
            field=field,
        )
    return [str(v) for v in items]


def tags(values: Iterable[str]) -> tuple[str, ...]:
    """Tags: single tokens, no whitespace or commas, duplicates dropped in order."""
    cleaned: list[str] = []
    for tag in _strings(values, "tags"):
        tag = text(tag, "tags").strip()
        if not tag or len(tag) > TAG_MAX or _SPACE.search(tag) or "," in tag:
            raise InvalidValue(
                f"tag {tag!r} is not a single word of at most {TAG_MAX} characters",
                remedy="use short tags without spaces or commas, like infra or people",
                field="tags",
                value=tag,
            )
        if tag not in cleaned:
            cleaned.append(tag)
    return tuple(cleaned)


def references(values: Iterable[str]) -> tuple[str, ...]:
    """References: one line each, at most twenty, duplicates dropped in order."""
    cleaned: list[str] = []
    for reference in _strings(values, "references"):
        reference = text(reference, "references").strip()
        if not reference or "\n" in reference or "\r" in reference:
            raise InvalidValue(
                f"reference {reference!r} is not one non-empty line",
                remedy="give each reference as one line: a memory name, path, URL or id",
                field="references",
                value=reference,
            )
        if len(reference) > REFERENCE_MAX:
            raise InvalidValue(
                f"a reference is {len(reference)} characters long",
                remedy=f"keep references under {REFERENCE_MAX} characters",
                field="references",
            )
        if reference not in cleaned:
            cleaned.append(reference)
    if len(cleaned) > MAX_REFERENCES:
        raise TooManyReferences(
            f"{len(cleaned)} references given; a memory holds at most {MAX_REFERENCES}",
            remedy="keep the references this memory truly depends on",
            count=len(cleaned),
            limit=MAX_REFERENCES,
        )
    return tuple(cleaned)


def source(value: str) -> str:
    text(value, "source")
    if "\n" in value.strip() or "\r" in value.strip():
        raise InvalidValue(
            "source must be one line",
            remedy="say in one line where the fact came from",
            field="source",
        )
    return value.strip()


SUBJECT_MAX_CHARS = 200
THREAD_MAX_CHARS = 200


def _line(value: str, field: str, limit: int, remedy: str) -> str:
    text(value, field)
    value = value.strip()
    if "\n" in value or "\r" in value:
        raise InvalidValue(f"{field} must be one line", remedy=remedy, field=field)
    if len(value) > limit:
        raise InvalidValue(
            f"{field} is {len(value)} characters long; at most {limit} are allowed",
            remedy=remedy,
            field=field,
        )
    return value


def subject(value: str) -> str:
    """Who or what a memory is about (a fact's subject; a speaker's name)."""
    return _line(value, "subject", SUBJECT_MAX_CHARS, "name who or what it is about in one line")


PREDICATE_MAX_CHARS = 100


def predicate(value: str) -> str:
    """What a fact says of its subject (``employer``, ``lives in``): one line, kept
    case-folded with its spaces collapsed, so ``Lives  In`` and ``lives in`` are one."""
    line = _line(value, "predicate", PREDICATE_MAX_CHARS, "name the property in a few words")
    folded = _SPACE.sub(" ", line).casefold()
    if not folded:
        raise InvalidValue(
            "a fact needs a predicate", remedy="name the property it gives", field="predicate"
        )
    return folded


def thread(value: str) -> str:
    """The conversation or document a memory belongs to, in order of writing."""
    return _line(value, "thread", THREAD_MAX_CHARS, "give the conversation's id in one line")


def cursor_of(position: ListPosition) -> str:
    """An opaque cursor for a listing to continue after ``position``."""
    raw = json.dumps([position.priority, stamp(position.created_at), position.id])
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def cursor(value: str) -> ListPosition:
    """The position a cursor of ``cursor_of`` names."""
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        priority, created_at, memory_id = json.loads(raw)
        if not isinstance(priority, int) or not isinstance(memory_id, str):
            raise ValueError(value)
        return ListPosition(priority, parse_stamp(created_at), memory_id)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidValue(
            f"cursor {value!r} is not one a listing gave",
            remedy="pass the next_cursor of the previous page, or none for the first page",
            field="cursor",
        ) from exc


WHOLE_MAX = 2**63 - 1  # what a store's integer holds


def whole(value: int, field: str, least: int) -> int:
    """A count or position: a whole number from ``least`` to ``WHOLE_MAX`` (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= WHOLE_MAX:
        raise InvalidValue(
            f"{field} {value!r} is not a whole number from {least} to {WHOLE_MAX}",
            remedy=f"pass a {field} of {least} or more",
            field=field,
        )
    return value
