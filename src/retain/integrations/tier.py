"""What both integrations share: the tier they keep their memories in, as the session's
verbs name it (``Tier``), and the one order their filters compare values in
(``in_order``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retain import fields

if TYPE_CHECKING:
    from retain.model import Memory
    from retain.service import MemoryService


@dataclass(frozen=True, slots=True)
class Tier:
    """A project's tier, or the global tier (``project`` None)."""

    project: str | None

    @property
    def scope(self) -> str:
        return f"project:{self.project}" if self.project else "global"

    @property
    def named(self) -> str:
        """The ``project`` of a verb that finds a memory by name: "" is the global tier."""
        return self.project or ""

    @property
    def written(self) -> dict[str, Any]:
        """A write's options that file it in this tier."""
        return {"project": self.project, "tier": "project" if self.project else "global"}

    @property
    def searched(self) -> dict[str, Any]:
        """A search's options that keep it to this tier."""
        return {"project": self.project, "tier": "project"} if self.project else {"project": ""}

    def check(self, service: MemoryService) -> None:
        """Refuse a project the realm lacks, when the store is made (not at its first
        read, which would otherwise answer "nothing there")."""
        if self.project and self.project not in {p.name for p in service.list_projects()}:
            from retain.errors import ProjectNotFound

            raise ProjectNotFound(
                f"there is no project {self.project!r}",
                remedy="create the project first (add_project), or check the name",
                fix="add_project",
                project=self.project,
            )

    def memories(self, service: MemoryService, tag: str) -> Iterator[Memory]:
        """The tier's memories tagged ``tag`` that the session sees, in index order, a page
        at a time."""
        after = None
        while True:
            page = service.list_memories(
                project=self.named, tag=tag, limit=fields.PAGE_MAX, after=after
            )
            yield from page
            if len(page) < fields.PAGE_MAX:
                return
            after = fields.cursor_of(page[-1].position)


def in_order(have: Any, op: str, operand: Any) -> bool:
    """``have`` against ``operand`` by ``op`` (``gt``, ``gte``, ``lt``, ``lte``): numbers
    with numbers (``true`` is no number), text with text; anything else, a missing value
    among them, is in no order and passes none."""
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (have, operand))
    if not (numbers or (isinstance(have, str) and isinstance(operand, str))):
        return False
    if op == "gt":
        return bool(have > operand)
    if op == "gte":
        return bool(have >= operand)
    if op == "lt":
        return bool(have < operand)
    return bool(have <= operand)
