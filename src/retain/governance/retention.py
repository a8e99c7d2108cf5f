"""Legal holds and retention, as values: a hold on a memory, the event a hold or a
release is, whether a memory is held, the ``[retention]`` windows of config.toml (scope
pattern → ISO 8601 duration) and the one a scope falls under, and what a sweep did.

A retention pattern is ``*`` (every scope), a scope (``global``, ``project:web``,
``team:blue``, ``agent:ada``) or a kind of scope (``project:*``, ``team:*``,
``agent:*``). The most specific pattern that matches a scope decides its window: the
scope itself, then its kind, then ``*``; a scope no pattern matches has no window (a
sweep without an instant keeps it). Nothing here reads the store or the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from retain.chrono import Period, stamp
from retain.fields import is_name
from retain.model import AGENT_PREFIX, GLOBAL_SCOPE, PROJECT_PREFIX, TEAM_PREFIX, Event
from retain.receipt import Receipt

EVERY_SCOPE = "*"
SCOPE_KINDS = (PROJECT_PREFIX, TEAM_PREFIX, AGENT_PREFIX)  # the scopes named NAME


@dataclass(frozen=True, slots=True)
class Hold:
    """A legal hold standing on one memory (``target``, its id): why, who placed it,
    when, and the ``hold`` event that placed it."""

    realm: str
    target: str
    reason: str
    held_by: str
    held_at: datetime
    event_id: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "reason": self.reason,
            "held_by": self.held_by,
            "held_at": stamp(self.held_at),
            "event_id": self.event_id,
        }


@dataclass(frozen=True, slots=True)
class HoldEvent:
    """What a hold or a release answers: its event (``kind`` ``hold`` or ``release``),
    as the log holds it."""

    event_id: str
    seq: int
    kind: str
    tx_time: datetime
    target: str
    principal: str
    reason: str
    receipt: Receipt | None = None  # the event's receipt

    @classmethod
    def of(cls, event: Event, target: str, receipt: Receipt | None = None) -> HoldEvent:
        return cls(
            event.event_id, event.seq, event.kind, event.tx_time, target, event.principal,
            event.reason, receipt,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "seq": self.seq,
            "kind": self.kind,
            "tx_time": stamp(self.tx_time),
            "target": self.target,
            "principal": self.principal,
            "reason": self.reason,
            "receipt": None if self.receipt is None else self.receipt.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class HoldState:
    """Whether a memory is held, and the hold when it is."""

    target: str
    hold: Hold | None

    @property
    def held(self) -> bool:
        return self.hold is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "held": self.held,
            "hold": None if self.hold is None else self.hold.to_dict(),
        }


# -- retention windows --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Window:
    """One line of ``[retention]``: what a scope ``pattern`` keeps, for how long."""

    pattern: str
    period: Period


def is_pattern(pattern: str) -> bool:
    """Whether ``pattern`` is a retention pattern: ``*``, ``global``, ``KIND:*`` or
    ``KIND:NAME`` for a kind of named scope (project, team, agent)."""
    if pattern in (EVERY_SCOPE, GLOBAL_SCOPE):
        return True
    for prefix in SCOPE_KINDS:
        if pattern.startswith(prefix):
            rest = pattern[len(prefix) :]
            return rest == "*" or is_name(rest)
    return False


def rank(pattern: str, scope: str) -> int:
    """How specifically ``pattern`` matches ``scope``: 3 the scope itself, 2 its kind
    (``team:*``), 1 every scope (``*``), 0 not at all."""
    if pattern == scope:
        return 3
    if pattern.endswith(":*") and scope.startswith(pattern[:-1]):
        return 2
    return 1 if pattern == EVERY_SCOPE else 0


def window_for(windows: Sequence[Window], scope: str) -> Window | None:
    """The window of the most specific pattern matching ``scope`` (None: no pattern
    matches, so it is kept). Patterns are unique, so no two tie."""
    best: Window | None = None
    best_rank = 0
    for window in windows:
        matched = rank(window.pattern, scope)
        if matched > best_rank:
            best, best_rank = window, matched
    return best


# -- what a sweep did ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cutoff:
    """Where a sweep cut one scope: the memories it learned before ``before`` go;
    ``window`` is the retention window that set it (None: the sweep's own instant)."""

    scope: str
    before: datetime
    window: Window | None = None

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"scope": self.scope, "before": stamp(self.before)}
        if self.window is not None:
            shown |= {"pattern": self.window.pattern, "window": self.window.period.text}
        return shown


@dataclass(frozen=True, slots=True)
class Swept:
    """A memory a sweep selected: learned (``created_at``) before its scope's cutoff."""

    id: str
    scope: str
    learned_at: datetime
    status: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scope": self.scope,
            "learned_at": stamp(self.learned_at),
            "status": self.status,
        }


@dataclass(frozen=True, slots=True)
class SweepResult:
    """A sweep: the instant asked (``before``; None when the retention windows decided),
    the cutoff of each scope it went through (``retention``), the one ``scope`` asked
    (None: every scope in view), what it selected, the certificate of each memory it
    forgot (none in a ``dry_run``, which writes nothing), and the held memories it
    skipped (their ids)."""

    before: datetime | None
    scope: str | None
    retention: tuple[Cutoff, ...]
    selected: tuple[Swept, ...]
    held: tuple[str, ...]
    dry_run: bool
    forgotten: tuple[Mapping[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": None if self.before is None else stamp(self.before),
            "scope": self.scope,
            "retention": [c.to_dict() for c in self.retention],
            "dry_run": self.dry_run,
            "selected": [s.to_dict() for s in self.selected],
            "forgotten": [dict(c) for c in self.forgotten],
            "held": list(self.held),
        }
