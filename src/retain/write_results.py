"""What a write takes and gives back: a memory write (``WriteRequest``, with the
``Restore`` an import brings), and what a write, an edit or a delete did
(``WriteResult``, ``EditResult``, ``DeleteResult``), each with its ``receipt`` and its
``before`` and ``after`` text drawn only when read. Apart from ``retain.results``
(which gives them too) so that a write loads these alone, and not the results of the
verbs it does not run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from retain.model import Load, Memory, Trust
from retain.receipt import Receipt as WriteReceipt


@dataclass(frozen=True, slots=True)
class Restore:
    """Values an import brings back as they were, instead of stamping new ones."""

    created_at: datetime
    verified_at: datetime
    read_count: int
    author: str | None = None  # who wrote it (None: the importer)
    trust: Trust | None = None  # how far it is trusted (None: as the importer writes)
    id: str | None = None  # its id, for a new memory (None, or taken: a new one)
    updated_at: datetime | None = None  # when it last changed (None: now)


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One memory write. ``None`` keeps what is there; ``""`` clears body or expiry,
    ``[]`` clears a list."""

    name: str
    description: str | None = None
    body: str | None = None
    tags: Sequence[str] | None = None
    priority: int | None = None
    load: str | Load | None = None
    references: Sequence[str] | None = None
    source: str | None = None
    expires: str | None = None
    subject: str | None = None
    thread: str | None = None
    valid_from: str | None = None
    project: str | None = None
    tier: str | None = None
    verified: bool = False
    create_only: bool = False
    expected_hash: str | None = None
    restore: Restore | None = None
    exact_tier: bool = False
    redact: bool = False  # write each secret found as its marker instead of refusing it
    evidence: Mapping[str, str] | None = None  # what bears the body out: {"ref", "path"?}
    metadata: Mapping[str, Any] | None = None  # the caller's own JSON object; {} clears it


def receipted(receipt: WriteReceipt | None) -> dict[str, Any] | None:
    """A result's receipt as a door renders it (None: the call wrote nothing). The one
    line a result of another module (an erasure's, a hold's) calls for its own."""
    return None if receipt is None else receipt.to_dict()


def exported_text(memory: Memory) -> str:
    """``memory`` as the text an export writes for it (frontmatter, then the body): what
    a change's ``before`` and ``after`` are drawn over."""
    # transfer imports this module, so its renderer is imported when a text is asked
    # for: one renderer for exports and diffs, and no YAML work for a result whose
    # texts nobody reads (a batch write or an import).
    from retain.transfer import render

    return render(memory, provenance=False).decode("utf-8")


class _Changed:
    """``before`` and ``after`` of a result that changed ``memory`` from ``previous``
    (None: the change created it), rendered only when read."""

    __slots__ = ()
    memory: Memory
    previous: Memory | None

    @property
    def before(self) -> str | None:
        return None if self.previous is None else exported_text(self.previous)

    @property
    def after(self) -> str:
        return exported_text(self.memory)


@dataclass(frozen=True, slots=True)
class WriteResult(_Changed):
    """What a write did. ``before`` and ``after`` are the memory's exported text before
    and after it (``before`` None for a new memory; equal when nothing changed)."""

    memory: Memory
    created: bool
    changed: bool
    notes: tuple[str, ...] = ()
    previous: Memory | None = None  # the memory as it was (None: the write created it)
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            **self.memory.to_dict(now, body=True),
            "created": self.created,
            "changed": self.changed,
            "notes": list(self.notes),
            "before": self.before,
            "after": self.after,
            "receipt": receipted(self.receipt),
        }


@dataclass(frozen=True, slots=True)
class EditResult(_Changed):
    """What an edit did; ``before`` and ``after`` are the memory's exported text."""

    memory: Memory
    replacements: int
    excerpt: str
    previous: Memory | None = None  # the memory as it was before the edit
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    def to_dict(self, now: datetime) -> dict[str, Any]:
        return {
            **self.memory.to_dict(now, body=True),
            "replacements": self.replacements,
            "excerpt": self.excerpt,
            "before": self.before,
            "after": self.after,
            "receipt": receipted(self.receipt),
        }


@dataclass(frozen=True, slots=True)
class DeleteResult:
    """What a delete removed: the memory as it was (``before``, its exported text;
    ``after`` is None) and what still references it."""

    memory: Memory
    referenced_by: tuple[str, ...]
    receipt: WriteReceipt | None = None  # the write's (None: nothing was written)

    @property
    def before(self) -> str:
        return exported_text(self.memory)

    @property
    def after(self) -> None:
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "removed": self.memory.name,
            "referenced_by": list(self.referenced_by),
            "before": self.before,
            "after": self.after,
            "receipt": receipted(self.receipt),
        }
