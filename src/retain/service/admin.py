"""The store's health and upkeep: verify (the search index, the vectors, the event
chain and its signatures), the signed chain head, reindex, the vector index brought up
to date, the move of a whole store to another backend, and the status.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeVar

from retain import budget, graph, ledger
from retain.chrono import stamp
from retain.errors import IntegrityFailed
from retain.model import Event
from retain.receipt import ChainHead
from retain.results import MigrateResult, StoreStatus, VerifyReport
from retain.service import policy
from retain.service.work import Work
from retain.signing import Signer, event_message, head_message
from retain.storage.base import Backend, Progress, Reads

if TYPE_CHECKING:
    from retain.service import MemoryService


T = TypeVar("T")

REINDEX_PAGE = 2000


def integrity_error(report: VerifyReport) -> IntegrityFailed:
    """The refusal a failed ``verify`` raises, carrying its ``report``."""
    error = IntegrityFailed(
        "; ".join(report.problems),
        fix="rebuild",
        remedy="verify the store, rebuilding its index; a broken event chain "
        "means the log was altered outside retain: restore it from a backup",
        problems=list(report.problems),
        broken_at=report.broken_at,
    )
    error.report = report
    return error


class EventSignatures:
    """The walk of the events' signatures beside the chain's (``ledger.Signatures``):
    with the store's key, each signature by it must hold, and once an event is signed
    every later one must be; without a key, signatures are counted, not checked."""

    def __init__(self, rows: Iterator[tuple[int, str, str]], signer: Signer | None) -> None:
        self._rows = rows
        self._next = next(rows, None)
        self._public = signer.public if signer is not None else None
        self._first: int | None = None  # the first signed event's seq
        self._checked = False
        self.present = 0  # signatures seen
        self.other_key = 0  # signatures by another key than the store's

    def _take(self, seq: int) -> tuple[int, str, str] | None:
        while self._next is not None and self._next[0] < seq:  # no such event: the chain says
            self._next = next(self._rows, None)
        if self._next is None or self._next[0] != seq:
            return None
        row, self._next = self._next, next(self._rows, None)
        return row

    def check(self, event: Event) -> str | None:
        row = self._take(event.seq)
        self._checked = False
        if row is None:
            if self._first is not None and self._public is not None:
                return f"event {event.seq} is not signed, though event {self._first} before it is"
            return None
        self.present += 1
        if self._first is None:
            self._first = event.seq
        if self._public is None:
            return None
        if row[1] != self._public.key_id:
            self.other_key += 1
            return None
        if not self._public.verifies(event_message(event.hash), row[2]):
            return f"event {event.seq} signature does not hold for key {row[1]}"
        self._checked = True
        return None

    def signed(self, event: Event) -> bool:
        return self._checked

    def note(self) -> str:
        if self._public is None and self.present:
            return f"{self.present} events are signed; configure the signing key to check them"
        if self.other_key:
            return (
                f"{self.other_key} events are signed by another key than the store's: "
                "check an export of the log with that key's public key"
            )
        return ""


def _reporting(
    items: Iterator[T], phase: str, total: int, progress: Progress, every: int = 1000
) -> Iterator[T]:
    """Pass ``items`` through, reporting every ``every`` of them and the last."""
    for done, item in enumerate(items, start=1):
        yield item
        if done % every == 0 or done == total:
            progress(phase, done, total)


def verify(
    svc: MemoryService, *, rebuild: bool = False, progress: Progress | None = None
) -> VerifyReport:
    """Check the search index, the vectors and the event chain; ``rebuild`` regenerates
    the derived data first (the full-text index, then every search key): a rebuild is
    ``reindex``'s work, so it needs ``reindex``'s row of the policy table too."""
    if rebuild:
        policy.check(svc.actor, "reindex", svc.settings)  # before anything is rebuilt
        if progress is not None:
            progress("rebuild", 0, 1)
        svc.backend.rebuild_index()
        if progress is not None:
            progress("rebuild", 1, 1)
        reindex(svc, progress=progress)
    sound, documents, problems = svc.backend.check_index()
    model = svc.embedder.model_id if svc.embedder.embedder is not None else None
    # Vectors are counted over the whole store (a reindex covers every realm); with no
    # embedder configured there are none to expect.

    signer = svc.store.signer
    signatures: EventSignatures | None = None

    def chain(
        tx: Reads,
    ) -> tuple[int, int, int, int, int, ledger.ChainCheck, dict[str, int]]:
        nonlocal signatures
        total = tx.count_events()
        events = tx.iter_events()
        if progress is not None:
            events = _reporting(events, "chain", total, progress)
        signatures = EventSignatures(tx.iter_signatures(), signer)
        everywhere = tx.count_keyed()  # a forgotten memory has no vector to expect
        vectored = tx.vector_count(model) if model is not None else 0
        pending = tx.pending_vectors(model) if model is not None else 0
        return (
            tx.count_memories(svc.realm),
            everywhere,
            vectored,
            pending,
            total,
            ledger.check_chain(events, ordered_from=tx.ordered_from(), signatures=signatures),
            tx.relation_counts(svc.realm),
        )

    memories, everywhere, vectored, pending, total, check, relations = svc.backend.read(chain)
    all_problems = list(problems)
    # A vector a committed write has yet to store (or a later write to make again) is
    # work under way, not damage.
    missing = everywhere - vectored - pending
    if model is not None and missing > 0:
        all_problems.append(
            f"{missing} of the store's {everywhere} memories have no vector of {model}"
        )
    if not check.ok:
        all_problems.append(f"event chain broken: {check.problem}")
    notes = []
    if signatures is not None and signatures.note():
        notes.append(signatures.note())
    if check.early_reversals:  # written so by an earlier version: kept as written
        one = check.early_reversals == 1
        notes.append(
            f"{check.early_reversals} {'event' if one else 'events'} written before this "
            "store kept its transaction times in order "
            f"{'is' if one else 'are'} stamped before the event "
            f"{'it follows; it stays' if one else 'they follow; they stay'} as written"
        )
    report = VerifyReport(
        ok=not all_problems,
        memories=memories,
        index_documents=documents,
        index_sound=sound,
        events=total,
        chain_ok=check.ok,
        problems=tuple(all_problems),
        rebuilt=rebuild,
        vectors=vectored,
        pending_vectors=min(pending, everywhere - vectored),
        relations={
            kind: relations.get(kind, 0) for kind in graph.TYPES if kind != graph.REFERENCES
        },
        early_reversals=check.early_reversals,
        notes=tuple(notes),
        broken_at=check.broken_at,
        head_seq=check.head_seq,
        head_hash=check.head,
        signed_events=check.signed,
        erased_events=check.erased,
        key_id=signer.key_id if signer is not None else None,
        head_signature=(
            signer.sign(head_message(check.head_seq, check.head))
            if signer is not None and check.ok
            else None
        ),
    )
    if not report.ok:
        raise integrity_error(report)
    return report


def migrate_to(
    svc: MemoryService, target: Backend, *, progress: Progress | None = None
) -> MigrateResult:
    """Copy this whole store — every realm, its history included — into the empty
    store ``target``, then make the copy's search keys with the embedder in use and
    verify it. The copy lands whole or not at all; its chain head is the source's. A
    copy that does not verify raises ``integrity_failed`` (the copy stays, to be
    looked at)."""
    from retain import migrate

    copied = migrate.copy_store(svc.backend, target, progress=progress)
    other = type(svc)(
        target, settings=svc.settings, clock=svc.clock, realm=svc.realm,
        principal=svc.principal,
    )  # fmt: skip
    rekeyed = other.reindex(progress=progress)
    try:
        other.verify(progress=progress)
    except IntegrityFailed as failed:
        problems = failed.details.get("problems", [])
        error = IntegrityFailed(
            f"the copy in {target.location} did not verify: {'; '.join(problems)}",
            remedy="verify both stores; the copy is left as it is, to be looked at",
            fix="verify",
            problems=problems,
        )
        error.report = failed.report  # the copy's
        raise error from failed
    return MigrateResult(
        source=svc.backend.location,
        target=target.location,
        realms=copied.realms,
        memories=copied.memories,
        events=copied.events,
        chain_head=copied.chain_head,
        rekeyed=rekeyed,
    )


def reindex(svc: MemoryService, *, progress: Progress | None = None) -> int:
    """Make every memory's search key again — context words and vector — with the
    embedder in use, in every realm of the store, then the store's vector index (SQLite
    past ``[search] ann_from``); returns how many were re-keyed.

    Runs a page of memories per transaction: the keys are derived data, and
    writers are not held up for the whole run.
    """
    total = svc.backend.read(lambda tx: tx.count_memories(None))
    state = {"after": 0, "done": 0}

    def page(work: Work) -> int:
        sources = work.reads.iter_key_sources(state["after"], REINDEX_PAGE)
        if not sources:
            return 0
        for source in sources:
            work.rekey.touch(source.memory_id)
        work.make_keys(everything=True)
        state["after"] = sources[-1].num
        return len(sources)

    if progress is not None:
        progress("reindex", 0, total)
    while count := svc._write(page):
        state["done"] += count
        if progress is not None:
            progress("reindex", min(state["done"], total), total)
    svc.store.index_vectors(progress)  # every vector is new: the index is built again
    return state["done"]


def index_vectors(svc: MemoryService, *, progress: Progress | None = None) -> int:
    """Bring the store's own vector index up to date, reporting to ``progress``: on
    SQLite past ``[search] ann_from``, the codes built where they are missing or of an
    earlier format, and extended with the vectors written since, as the next search
    would (a server does it before it listens, so that no request waits for a build);
    how many vectors it holds (0: the store keeps none, PostgreSQL's kept by every
    write). Changes no memory and writes no event: the index is derived."""
    return svc.store.index_vectors(progress)


def chain_head(svc: MemoryService) -> ChainHead:
    """The log's last event (seq, hash) as the store holds it now, signed with the
    store's key when it has one. Not a check: ``verify`` walks the chain to it."""
    seq, head = svc.backend.read(lambda tx: tx.chain_head())
    signer = svc.store.signer
    if signer is None:
        return ChainHead(seq, head)
    return ChainHead(seq, head, signer.key_id, signer.sign(head_message(seq, head)))


def status(svc: MemoryService) -> StoreStatus:
    now_stamp = stamp(svc._now())
    loaded = svc.embedder

    def run(tx: Reads) -> StoreStatus:
        entries = tx.inline_entries(svc.realm, now_stamp)
        projects = tx.list_projects(svc.realm)
        fullest = max(
            budget.bands(entries, [p.name for p in projects]).values(), key=lambda b: b.total
        )
        seq, head = tx.chain_head()
        return StoreStatus(
            location=svc.backend.location,
            schema_version=svc.backend.schema_version(),
            realm=svc.realm,
            memories=tx.count_memories(svc.realm),
            projects=len(projects),
            events=seq,
            chain_head=head,
            inline_bytes=fullest.total,
            inline_max_bytes=svc.settings.inline_max_bytes,
            size_bytes=svc.backend.size_bytes(),
            embedder=loaded.model_id,
            embedder_configured=loaded.configured,
            degraded=loaded.degraded,
            vectors=tx.vector_counts(svc.realm).get(loaded.model_id, 0),
        )

    return svc.backend.read(run)
