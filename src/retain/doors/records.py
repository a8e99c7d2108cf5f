"""Results as JSON for the doors that answer in JSON (REST, MCP, the CLI's
``--format json``): one shape for each."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from enum import Enum
from typing import Any

from retain.chrono import stamp
from retain.model import Fact
from retain.results import QueuePage, held_record


def plain(value: Any) -> Any:
    """A result as JSON: dataclasses as objects, times in retain's stamp, enums by value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return stamp(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def facts_of(found: Sequence[Fact]) -> dict[str, Any]:
    """A fact read or a fact's history as one JSON object."""
    return {"facts": [f.to_dict() for f in found]}


def record_of(value: object) -> dict[str, Any]:
    """A dataclass result as one JSON object."""
    result = plain(value)
    assert isinstance(result, dict)
    return result


def quarantine_of(page: QueuePage, now: datetime) -> dict[str, Any]:
    """A page of the quarantine queue as one JSON object: each record with its body,
    reasons, session and content_hash; ``next_cursor`` (its last id) when more records
    follow."""
    return {
        "quarantine": [held_record(m, now) for m in page],
        "next_cursor": page.next_cursor,
    }
