"""Conversation ingestion: a thread's turns written as memories, one a turn, in one
transaction (``ingest_conversation``), the way an agent host writes what was said.

Each turn becomes the memory named ``conversation.turn_name(thread, place, id)``: body
the turn's text (and ``[image: caption]``), ``subject`` its speaker, ``thread`` the
call's, ``valid_from`` the turn's time (else the call's ``at``; neither: when it is
first written, kept after), loaded ``search``, described by where it stands
(``Turn <id> of <thread>``: ``conversation.describe``). The turns' order is the write
order, so a turn's thread neighbours are the turns around it. The writes go through
the tiers' batch (``tier.Batch``): a turn stored as given already changes nothing (no
row, no event), a turn that differs is updated, and a refusal of any turn (its place
in ``details['turn']``) writes none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from retain import fields
from retain.chrono import parse_valid_from, stamp
from retain.conversation import Turn, body_of, check_turns, describe, turn_name, turn_of
from retain.errors import InvalidValue, NameConflict, RetainError
from retain.model import GLOBAL_SCOPE, project_scope
from retain.results import IngestResult, WriteRequest, WriteResult
from retain.service import tier
from retain.service.work import Work
from retain.storage.base import Progress

if TYPE_CHECKING:
    from retain.service import MemoryService

T = TypeVar("T")


def ingest_conversation(
    svc: MemoryService,
    turns: Sequence[Turn | Mapping[str, Any]],
    *,
    thread: str,
    project: str | None = None,
    at: str | None = None,
    reason: str = "",
    redact: bool = False,
    progress: Progress | None = None,
) -> IngestResult:
    """Write ``turns`` (``Turn`` values, or mappings with their keys) as the memories of
    ``thread``, in the global tier or ``project``'s, all or none (see the module
    docstring). ``at`` is the time of a turn that gives none (RFC 3339 or YYYY-MM-DD);
    ``redact`` writes each secret a turn holds as its marker instead of refusing it."""
    check_turns(turns)
    name_of_thread = fields.thread(thread)
    if not name_of_thread:
        raise InvalidValue(
            "a conversation needs a thread",
            remedy="name the thread the turns belong to, in one line",
            field="thread",
        )
    if project:
        fields.name(project, what="project")
    fields.text(reason, "reason")
    default_at = None
    if at:  # "" is none, as a time left out
        try:
            default_at = parse_valid_from(at, svc.clock)
        except RetainError as exc:
            exc.details["field"] = "at"
            raise
    checked = [turn_of(value, place) for place, value in enumerate(turns, start=1)]
    requests: list[WriteRequest] = []
    placed: dict[str, int] = {}
    for place, turn in enumerate(checked, start=1):
        name = turn_name(name_of_thread, place, turn.id)
        if name in placed:
            raise InvalidValue(
                f"turns {placed[name]} and {place} would both be the memory {name!r}",
                remedy="give every turn of a thread its own id",
                field="turns",
                turn=place,
                name=name,
            )
        placed[name] = place
        request = WriteRequest(
            name,
            description=describe(turn, name_of_thread, place),
            body=body_of(turn),
            subject=turn.speaker,
            thread=name_of_thread,
            valid_from=turn.at or None,
            project=project or None,
            tier="project" if project else "global",
            exact_tier=True,
            load="search",
            redact=redact,
        )
        normal = _at_turn(place, turn, lambda r=request: tier.normalized(svc, r))  # type: ignore[misc]
        requests.append(normal if turn.at else replace(normal, valid_from=default_at))
    scope = project_scope(project) if project else GLOBAL_SCOPE

    def run(work: Work) -> IngestResult:
        batch = tier.Batch(svc, work, reason=reason)
        batch.read_ahead(request.name for request in requests)
        results: list[WriteResult] = []
        for place, (turn, request) in enumerate(zip(checked, requests, strict=True), start=1):
            if request.valid_from is None:  # no time given: now, the first time it is written
                stored = batch.stored(request.name)
                first = not any(m.scope == scope for m in stored)
                request = replace(request, valid_from=stamp(work.now) if first else None)
            result = _at_turn(place, turn, lambda r=request: batch.apply(r))  # type: ignore[misc]
            previous = result.previous
            if previous is not None and previous.thread != name_of_thread:
                raise NameConflict(
                    f"turn {place} would be {request.name!r}, a memory of thread "
                    f"{previous.thread!r}",
                    remedy="give the turns ids of their own, or name the thread differently",
                    name=request.name,
                    thread=previous.thread,
                    turn=place,
                )
            results.append(result)
            if progress is not None:
                progress("write", place, len(requests))
        batch.close(progress)
        return IngestResult(name_of_thread, project or None, tuple(results))

    ingested = svc._write(run, redact=redact)
    if progress is not None:  # a bulk write: the vector index too, while it is shown
        svc.store.index_vectors(progress)
    return ingested


def _at_turn(place: int, turn: Turn, fn: Callable[[], T]) -> T:
    """``fn()``, its refusal naming the turn it refused: its place, and its id."""
    try:
        return fn()
    except RetainError as exc:
        if "turn" not in exc.details:
            exc.details["turn"] = place
            if turn.id is not None:
                exc.details["turn_id"] = turn.id
            if exc.details.get("field") == "valid_from":
                exc.details["field"] = "at"
            exc.message = f"turn {place}: {exc.message}"
            exc.args = (exc.message, *exc.args[1:])
        raise
