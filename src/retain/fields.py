"""The shape every stored field must have, checked before a store is touched.

Each function takes what a caller passed and returns the stored form, or
raises an ``InvalidInput`` naming the field and what to write instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from retain.errors import InvalidName, InvalidValue, TooManyReferences
from retain.model import Load

NAME_MAX = 128
DESCRIPTION_NOTE_AT = 200
MAX_REFERENCES = 20
REFERENCE_MAX = 1000
TAG_MAX = 64
MIN_PRIORITY = 0
MAX_PRIORITY = 9

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SPACE = re.compile(r"\s+")


def name(value: str, *, what: str = "memory") -> str:
    """A memory or project name: letters, digits, ``.``, ``_``, ``-``; it is also a file name."""
    if not isinstance(value, str) or not value:
        raise InvalidName(f"a {what} needs a name", remedy="give a name like deploy-host")
    if len(value) > NAME_MAX or not _NAME.match(value):
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
    return len(value) <= NAME_MAX and bool(_NAME.match(value))


def description(value: str) -> str:
    """The description collapsed to one line."""
    return _SPACE.sub(" ", value).strip()


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


def tags(values: Iterable[str]) -> tuple[str, ...]:
    """Tags: single tokens, no whitespace or commas, duplicates dropped in order."""
    cleaned: list[str] = []
    for tag in values:
        tag = tag.strip()
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
    for reference in values:
        reference = reference.strip()
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
    if "\n" in value.strip() or "\r" in value.strip():
        raise InvalidValue(
            "source must be one line",
            remedy="say in one line where the fact came from",
            field="source",
        )
    return value.strip()
