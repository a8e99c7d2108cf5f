"""The memory section of an agent's context: what the view holds now within the
inline budget and the index's ceilings, what changed since a session's last render,
the memories a turn recalls (bounded by a timeout), and the injection ledger's rows.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from retain import fields
from retain.chrono import stamp
from retain.config import RECALL_POLICIES
from retain.errors import InvalidValue, RecallFailed, RetainError
from retain.model import Injection, Load, Memory, Trust
from retain.results import ContextResult
from retain.service import search, trust
from retain.service.work import Work
from retain.storage.base import LoadCounts, MemoryFilter, Reads

if TYPE_CHECKING:
    from concurrent.futures import Future

    from retain import context as rendering
    from retain.context import Scene
    from retain.service import MemoryService


T = TypeVar("T")

INDEX_FIRST_PAGE = 100  # index memories read first; the rest only when all of them fit
TALLIES_KEPT = 64  # views whose counts a service remembers
RECALL_SLACK = 8  # turn recall asks for this many more than it quotes (inline ones are skipped)


@dataclass(frozen=True, slots=True)
class _Tally:
    """A view's counts, and the tags of its live index memories once asked for. They hold
    while no event has been appended (every change to a memory appends one) and no memory
    of the view has reached its expiry since they were counted."""

    head: int  # the event log's last seq when counted
    at: str  # when counted (stored form)
    counts: LoadCounts
    tags: dict[str, int] | None = None

    def holds(self, head: int, now: str) -> bool:
        due = self.counts.next_expiry
        return head == self.head and self.at <= now and (due is None or now < due)


@dataclass(frozen=True, slots=True)
class _Heading:
    """How the memory section addresses its reader: the scopes it shows, in order."""

    scopes: tuple[str, ...]
    heading: str  # how the memory section names the reader: "agent ada on project webdev"
    pointer: str  # the verb that reaches what the section does not show


def _whole(value: object, field: str, most: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise InvalidValue(
            f"{field} must be a whole number from 0 to {most}, not {value!r}",
            remedy=f"pass {field} as milliseconds, at most {most}",
            field=field,
        )
    return value


def _in_background(fn: Callable[[], T]) -> Future[T]:
    """Run ``fn`` on a daemon thread: a caller that stops waiting for it (a late turn
    recall) is not held up by it, nor is the process's exit."""
    from concurrent.futures import Future

    future: Future[T] = Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to whoever waits for the result
                future.set_exception(exc)

    called = contextvars.copy_context()  # the call's grants go with it (service.access)
    threading.Thread(target=called.run, args=(run,), name="retain-recall", daemon=True).start()
    return future


def _heading(svc: MemoryService, tx: Reads, project: str | None) -> _Heading:
    """Who is reading: the scopes they see (global, the project, an agent's teams and
    its own scope, in that order), how the section names them, and their search verb."""
    view = svc._reader(tx, project)
    if view.agent is None:
        who, pointer = svc.principal, "search"
    else:
        who, pointer = f"agent {view.agent.name}", "recall"
    on = f" on project {project}" if project else ""
    return _Heading(view.scopes, who + on, pointer)


def context(
    svc: MemoryService,
    *,
    project: str | None = None,
    turn: str | None = None,
    session: str | None = None,
    restate: bool = False,
    recall_timeout_ms: int | None = None,
    recall_failure_policy: str | None = None,
    min_trust: str | None = None,
) -> ContextResult:
    """The memory section to place in front of the acting identity.

    The first render of a ``session`` states the whole section; later ones render
    what changed since that session's last render, until ``restate`` (after a
    compaction) or a move to another project states it whole again. Without a
    session every render is whole. With ``turn`` text, memories matching it are
    recalled (the hybrid search) and quoted as observations, bounded by
    ``recall_timeout_ms``; past it, policy ``skip`` renders without them and says
    so in the result, ``fail`` raises ``recall_failed``. Every memory rendered is
    written to the injection ledger. With memory turned off for the installation
    (``[memory] enabled = false``) the section is empty and nothing is recorded.
    With ``min_trust``, the section (and turn recall) holds only memories trusted at
    least that. Whatever is asked, quarantined memories are never shown, text below
    ``attested`` is quoted, and a ``claimed`` body is never placed inline.
    """
    from retain import context as rendering

    least = trust.minimum(min_trust)

    if project:
        fields.name(project, what="project")
    project = project or None
    if turn is not None:
        fields.text(turn, "turn")
    if session is not None:
        fields.text(session, "session")
        if not session.strip() or len(session) > fields.SESSION_MAX_CHARS:
            raise InvalidValue(
                "a session key is 1 to 200 characters",
                remedy="pass the key your agent runtime gives the session",
                field="session",
            )
    settings = svc.settings.context
    timeout_ms = _whole(
        settings.recall_timeout_ms if recall_timeout_ms is None else recall_timeout_ms,
        "recall_timeout_ms",
        fields.RECALL_TIMEOUT_MAX_MS,
    )
    policy = (
        settings.recall_failure_policy if recall_failure_policy is None else recall_failure_policy
    )
    if policy not in RECALL_POLICIES:
        raise InvalidValue(
            f"recall failure policy {policy!r} is not skip or fail",
            remedy="pass skip (render without recall) or fail (raise)",
            field="recall_failure_policy",
        )
    key = session or ""
    if not svc.settings.memory_enabled:  # the installation keeps no memory section
        return ContextResult(
            text="",
            full=True,
            session=key,
            project=project,
            changes=(),
            injected=(),
            inline_bytes=0,
            inline_budget=svc.settings.inline_max_bytes,
            index_left_out=0,
            search_only=0,
            expired=0,
            recall="off",
        )
    now = svc._now()

    def look(tx: Reads) -> tuple[Scene, str | None, rendering.Shown | None, dict[str, Memory]]:
        """The scene, the session's last state (stored and read), and the rows of what
        left the section."""
        scene = _scene(svc, tx, project, now, least)
        raw = tx.get_context_state(svc.realm, svc.principal, key) if session else None
        gone: dict[str, Memory] = {}
        shown = rendering.Shown.loads(raw)
        if shown is not None:
            current = scene.surfaces()
            left = [i for i in shown.memories if i not in current]
            gone = {m.id: m for m in tx.get_many(left) if m.realm == svc.realm}
        return scene, raw, shown, gone

    scene, raw, before, gone = svc.backend.read(look)
    turn_text = turn or ""
    wanted = bool(turn_text.strip())
    started = time.monotonic()
    pending = (
        _in_background(lambda: _turn_recall(svc, turn_text, project, now, least))
        if wanted and timeout_ms > 0
        else None
    )
    recalled, recall, note = _recalled(wanted, pending, started, timeout_ms, policy)
    quoted, unquoted = rendering.pick_recalled(
        recalled,
        {m.id for m in scene.band},
        max_entries=settings.recall_max_entries,
        max_bytes=settings.recall_max_bytes,
    )
    moved = before is not None and before.project != project
    rendered: list[tuple[str, Memory]]
    kinds: tuple[str, ...] = ()
    if before is None or restate or moved:
        text = rendering.render(scene, now, moved_to=(project or "") if moved else None)
        rendered = list(scene.surfaces().values())
    else:
        items = rendering.changes(before, scene, now, gone)
        text = rendering.render_changes(items)
        rendered = [(c.surface, c.memory) for c in items if c.memory is not None]
        kinds = tuple(c.kind for c in items)
    rendered += [(rendering.RECALL, m) for m in quoted]
    recalled_text = rendering.render_recall(quoted, now, unquoted, scene.pointer)
    rows = tuple(Injection(m.id, svc.principal, key, surface, now) for surface, m in rendered)
    state = rendering.Shown.of(scene, project).dumps() if session else None

    def record(work: Work) -> None:
        work.record_injections(rows)
        if state is not None and state != raw:
            work.put_context_state(svc.principal, key, state)

    if rows or state != raw:  # a turn where nothing changed writes nothing
        svc._write(record)
    return ContextResult(
        text="\n".join(t for t in (text, recalled_text) if t),
        full=before is None or restate or moved,
        session=key,
        project=project,
        changes=kinds,
        injected=rows,
        inline_bytes=scene.inline_total,
        inline_budget=scene.inline_budget,
        index_left_out=scene.index_left.count,
        search_only=scene.search_only,
        expired=scene.expired,
        recall=recall,
        recall_note=note,
    )


def _scene(
    svc: MemoryService, tx: Reads, project: str | None, now: datetime, least: Trust | None
) -> Scene:
    """What the view holds now (trusted at least ``least``), bounded by the inline budget
    and the index ceilings."""
    from retain import context as rendering

    heading = _heading(svc, tx, project)
    limits = svc.settings.context
    budget_bytes = svc.settings.inline_max_bytes
    where = trust.narrowed(MemoryFilter(realm=svc.realm, scopes=heading.scopes), least)
    live = replace(where, live_at=stamp(now))
    inline = tx.list_memories(replace(live, loads=(Load.INLINE.value,)))
    band, over = rendering.choose_band(inline, budget_bytes)

    def fit(memories: Sequence[Memory], scoped: bool) -> list[Memory]:
        """The leading memories within the index's ceilings."""
        return rendering.cap(
            memories,
            now,
            max_bytes=limits.index_max_bytes,
            max_entries=limits.index_max_entries,
            scoped=scoped,
        )

    listed = fit(over, scoped=True)
    indexed = replace(live, loads=(Load.INDEX.value,))
    index: list[Memory] = []
    for page in (INDEX_FIRST_PAGE, limits.index_max_entries):  # most sections fit the first
        rows = tx.list_memories(indexed, min(page, limits.index_max_entries))
        index = fit(rows, scoped=False)
        if len(index) < len(rows) or len(rows) < page:
            break
    tally = _tally(svc, tx, where, stamp(now))
    left_out = tally.counts.index - len(index)
    tags: tuple[tuple[str, int], ...] = ()
    if left_out:
        if tally.tags is None:
            tally = replace(tally, tags=tx.tag_counts(indexed))
            svc.store.tallies[where.realm, where.scopes, where.trusts] = tally
        assert tally.tags is not None
        shown = rendering.tag_histogram(index)
        every = tally.tags
        tags = rendering.top_tags({t: n - shown.get(t, 0) for t, n in every.items()})
    return rendering.Scene(
        heading=heading.heading,
        scopes=heading.scopes,
        pointer=heading.pointer,
        band=tuple(band),
        listed=tuple(listed),
        listed_left=rendering.Overflow(
            len(over) - len(listed),
            rendering.top_tags(rendering.tag_histogram(over[len(listed) :])),
        ),
        inline_total=sum(m.body_bytes for m in inline),
        inline_budget=budget_bytes,
        index=tuple(index),
        index_left=rendering.Overflow(left_out, tags),
        search_only=tally.counts.search,
        expired=tally.counts.expired,
    )


def _tally(svc: MemoryService, tx: Reads, where: MemoryFilter, now: str) -> _Tally:
    """The view's counts: those of an earlier render while they still hold, else
    counted again (they are the part of a render that grows with the store)."""
    head = tx.chain_head()[0]
    found: _Tally | None = svc.store.tallies.get((where.realm, where.scopes, where.trusts))
    if found is not None and found.holds(head, now):
        return found
    if len(svc.store.tallies) >= TALLIES_KEPT:
        svc.store.tallies.clear()
    tally = _Tally(head, now, tx.load_counts(where, now))
    svc.store.tallies[where.realm, where.scopes, where.trusts] = tally
    return tally


def _turn_recall(
    svc: MemoryService, turn: str, project: str | None, now: datetime, least: Trust | None
) -> list[Memory]:
    """The view's live memories (trusted at least ``least``) that match a turn's content
    words, best first (the hybrid search); none for a turn without content words."""
    from retain.search import lexical

    query = lexical.turn_query(turn)
    if not query:
        return []
    limit = svc.settings.context.recall_max_entries + RECALL_SLACK
    result = search.ranked(
        svc,
        [query],
        now,
        lambda tx: trust.narrowed(
            MemoryFilter(realm=svc.realm, scopes=svc._reader(tx, project).scopes), least
        ),
        limit=limit,
        budget_tokens=None,
        live_only=True,
        listing_summary=str,
    )
    return [hit.memory for hit in result.hits]


def _recalled(
    wanted: bool, pending: Future[list[Memory]] | None, started: float, timeout_ms: int, policy: str
) -> tuple[list[Memory], str, str | None]:
    """Turn recall's memories, and ``off`` (not wanted), ``ok``, or ``skipped`` with
    the reason (policy ``skip``); under ``fail`` a recall that timed out or failed
    raises. A timeout of 0 leaves no time at all: recall is not even started."""
    if not wanted:
        return [], "off", None
    code = "timeout"
    reason = f"recall took longer than {timeout_ms} ms"
    if pending is not None:
        remaining = max(0.0, timeout_ms / 1000 - (time.monotonic() - started))
        try:
            return pending.result(timeout=remaining), "ok", None
        except TimeoutError:
            pending.cancel()
        except RetainError as exc:
            reason = f"recall failed: {exc.message}"
            code = exc.code
    if policy == "fail":
        raise RecallFailed(
            reason,
            remedy="retry, raise recall_timeout_ms, or use the skip policy",
            cause=code,
            timeout_ms=timeout_ms,
        )
    return [], "skipped", reason
