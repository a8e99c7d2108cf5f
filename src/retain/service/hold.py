"""Legal holds: ``hold`` a memory (a fact is one too) so that nothing forgets or sweeps
it, ``release_hold`` it again, ask whether it is ``held``; and ``require_released``, the
check every erasing path calls before it erases a memory.

A hold is a row of ``holds`` (realm, target, reason, who, when, its event) and an event
of kind ``hold``; a release removes the row and appends a ``release`` event, in the same
transaction. The target is a memory id as the actor's view sees it: one it does not see
is ``not_found``. A second hold on a held memory is refused ``already_held`` and a
release of one not held ``not_held``, rather than answered as done: a hold is a legal
act with its own reason, and a repeated one (or a release of the wrong id) is a mistake
the caller should hear of, not one a retry should hide. Holds are placed and released by
operators and applications (the policy table); whether a memory is held is a read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retain import fields
from retain.chrono import stamp
from retain.errors import AlreadyHeld, HoldActive, InvalidValue, NotFound, NotHeld
from retain.governance.retention import Hold, HoldEvent, HoldState
from retain.model import Memory
from retain.service.view import View
from retain.service.work import Work
from retain.storage.base import Reads

if TYPE_CHECKING:
    from retain.service import MemoryService


def hold(svc: MemoryService, target: str, *, reason: str) -> HoldEvent:
    """Place a legal hold on the memory ``target`` (its id): until it is released,
    forgetting it and sweeping it are refused (``hold_active``). The hold event."""
    fields.text(target, "target")
    why = _reason(reason)

    def run(work: Work) -> HoldEvent:
        tx = work.reads
        memory = _seen(svc._reader(tx), tx, target, "hold")
        standing = tx.get_hold(work.realm, memory.id)
        if standing is not None:
            raise AlreadyHeld(
                f"memory {memory.id!r} is held already, since {stamp(standing.held_at)} "
                f"by {standing.held_by} ({standing.reason})",
                remedy="leave the hold standing, or release it and hold it again with the "
                "new reason",
                **_details(standing),
            )
        event = work.event(
            "hold", {"target": memory.id, "scope": memory.scope}, memory_id=memory.id, reason=why
        )
        work.add_hold(Hold(work.realm, memory.id, why, event.principal, work.now, event.event_id))
        return HoldEvent.of(event, memory.id, work.receipt(event))

    return svc._write(run)


def release_hold(svc: MemoryService, target: str, *, reason: str) -> HoldEvent:
    """Release the legal hold on the memory ``target``: it may be forgotten and swept
    again. The release event; ``not_held`` when no hold stands on it."""
    fields.text(target, "target")
    why = _reason(reason)

    def run(work: Work) -> HoldEvent:
        tx = work.reads
        view = svc._reader(tx)
        standing = tx.get_hold(work.realm, target)
        memory = view.get(tx, target)
        # a held memory deleted since is no row a view sees; its hold an operator's to release
        gone = memory is None and standing is not None and view.covers(work.realm, "")
        if memory is None and not gone:
            raise _not_found(target, "release")
        if standing is None:
            raise NotHeld(
                f"no hold stands on memory {target!r}",
                remedy="check the id: `held` says whether a memory is held",
                id=target,
            )
        work.remove_hold(target)
        event = work.event("release", {"target": target}, memory_id=target, reason=why)
        return HoldEvent.of(event, target, work.receipt(event))

    return svc._write(run)


def held(svc: MemoryService, target: str) -> HoldState:
    """Whether a legal hold stands on the memory ``target``, and that hold."""
    fields.text(target, "target")

    def run(tx: Reads) -> HoldState:
        memory = _seen(svc._reader(tx), tx, target, "look up")
        return HoldState(memory.id, tx.get_hold(svc.realm, memory.id))

    return svc.backend.read(run)


def require_released(work: Work, memory: Memory | str, *, action: str = "forgotten") -> None:
    """Refuse (``hold_active``) to let ``memory`` (a memory, or its id: a deleted one's
    history too) be ``action`` (forgotten, swept) while a legal hold stands on it, naming
    the hold's reason and since when. Every path that erases a memory calls it inside its
    write transaction, before it changes anything (``erasure.erase``, for each copy)."""
    target = memory if isinstance(memory, str) else memory.id
    standing = work.reads.get_hold(work.realm, target)
    if standing is None:
        return
    raise HoldActive(
        f"memory {target!r} may not be {action}: a legal hold stands on it since "
        f"{stamp(standing.held_at)} ({standing.reason})",
        remedy="ask whoever placed the hold to release it once its reason has passed, then "
        "try again",
        fix="release_hold",
        **_details(standing),
    )


def _details(standing: Hold) -> dict[str, str]:
    return {
        "id": standing.target,
        "reason": standing.reason,
        "held_by": standing.held_by,
        "held_at": stamp(standing.held_at),
    }


def _reason(reason: str) -> str:
    """A hold's or a release's reason: required, since the log keeps it as the why."""
    fields.text(reason, "reason")
    if not reason.strip():
        raise InvalidValue(
            "a hold and its release each need a reason",
            remedy="say why, in a line (a matter, a ticket, a request)",
            field="reason",
        )
    return reason


def _seen(view: View, tx: Reads, target: str, verb: str) -> Memory:
    memory = view.get(tx, target)
    if memory is None:
        raise _not_found(target, verb)
    return memory


def _not_found(target: str, verb: str) -> NotFound:
    return NotFound(
        f"no memory {target!r} to {verb}",
        remedy="give the id of a memory you can see",
        fix="find",
        id=target,
    )
