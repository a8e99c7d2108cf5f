"""A stored row as a snapshot carries it, and back: a memory as the frontmatter of its
file (every stored field but the body, which follows it), a ticket as one JSON line.

Every field of the value type is written under its own name, as JSON has it: a time as
its stored stamp, an enum as its value, a tuple as a list, a nested value (a ticket's
approvals) as an object. What is derived and never stored (``superseded_by``, a result's
``receipt``) is left out. Reading checks each field's type against the value type's and
refuses, naming the field, what it is not; a field a newer retain wrote that this one
does not know is refused too, never dropped.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from retain.chrono import parse_stamp, stamp
from retain.errors import InvalidTime
from retain.graph import Relation
from retain.model import Approval, Memory, Proposal

DERIVED = frozenset({"superseded_by", "receipt"})  # never stored: in no record
T = TypeVar("T")


class RecordInvalid(ValueError):
    """A record a snapshot holds that cannot be read back: the field, and why."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field


def fields_of(value: Any, *, without: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A value type's stored fields, as JSON holds them (but those ``without`` names)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        if f.name in DERIVED or f.name in without:
            continue
        out[f.name] = _plain(getattr(value, f.name))
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return stamp(value)
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return fields_of(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def memory_record(memory: Memory) -> dict[str, Any]:
    """A memory's record: every stored field but its body, which its file holds after."""
    return fields_of(memory, without=frozenset({"body"}))


def memory_of(record: dict[str, Any], body: str) -> Memory:
    """The memory a record (a file's frontmatter) and its body hold."""
    return _typed(Memory, {**record, "body": body})


def ticket_of(record: dict[str, Any]) -> Proposal:
    return _typed(Proposal, record)


def relation_of(record: dict[str, Any]) -> Relation:
    return _typed(Relation, record)


def _typed(cls: type[T], record: dict[str, Any]) -> T:
    if not isinstance(record, dict):
        raise RecordInvalid("record", "is not a mapping")
    from retain.receipt import Receipt  # a hint of the types' (never read from a record)

    hints = typing.get_type_hints(cls, localns={"Receipt": Receipt})
    known = {f.name: f for f in dataclasses.fields(cls) if f.name not in DERIVED}  # type: ignore[arg-type]
    unknown = sorted(set(record) - set(known))
    if unknown:
        raise RecordInvalid(unknown[0], "is not a field this retain knows")
    values: dict[str, Any] = {}
    for name, f in known.items():
        if name not in record:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise RecordInvalid(name, "is missing")
            continue
        values[name] = _value(hints[name], record[name], name)
    return cls(**values)


def _value(hint: Any, value: Any, name: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _value(inner[0], value, name)
    if hint is datetime:
        if not isinstance(value, str):
            raise RecordInvalid(name, "is not a timestamp")
        try:
            return parse_stamp(value)
        except InvalidTime as exc:
            raise RecordInvalid(name, f"{value!r} is not a timestamp") from exc
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError as exc:
            raise RecordInvalid(name, f"{value!r} is not one of its values") from exc
    if origin is tuple:
        if not isinstance(value, list):
            raise RecordInvalid(name, "is not a list")
        return tuple(_value(args[0], v, name) for v in value)
    if hint is Approval:
        return _typed(Approval, value)
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise RecordInvalid(name, "is not a mapping")
        return value
    if hint in (str, int, bool) and not (
        isinstance(value, hint) and (hint is bool or not isinstance(value, bool))
    ):
        raise RecordInvalid(name, f"is not {hint.__name__}")
    return value
