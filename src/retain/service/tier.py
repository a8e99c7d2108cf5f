"""The tiers' memories: writes by name (one, or a batch in one transaction, the inline
budget measured over it), edits of a body, and deletes.

It is one piece past the usual size on purpose: a write, a batch and an edit share the
inline budget's bookkeeping (``_Inline``), and a write and a batch one path
(``_apply``, with the batch's staged rows and names read ahead, ``_Staged``); apart,
each part would reach into the others' internals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain import budget, fields
from retain.chrono import parse_expires, parse_optional_stamp, parse_valid_from, stamp
from retain.errors import (
    DescriptionRequired,
    EditAmbiguous,
    EditNoMatch,
    InvalidValue,
    MemoryExists,
    NameConflict,
    NoProject,
    NotActive,
    StaleUpdate,
)
from retain.model import (
    CALLER,
    DEFAULT_PRIORITY,
    GLOBAL_SCOPE,
    Load,
    Memory,
    Status,
    project_scope,
    with_caller,
)
from retain.search import key
from retain.service import lookup, rows, similar, trust
from retain.service.work import Work
from retain.storage.base import InlineEntry, Progress, Reads
from retain.write_results import DeleteResult, EditResult, WriteRequest, WriteResult

if TYPE_CHECKING:
    from retain.service import MemoryService


class _Inline:
    """The inline entries of a realm as a transaction changes them, read from the store
    when the first change that spends or frees inline budget comes (most writes have
    none: they read nothing for it)."""

    def __init__(self, reads: Reads, realm: str) -> None:
        self._reads, self._realm = reads, realm
        self.start: list[InlineEntry] | None = None  # as the unit of work found them
        self.current: dict[str, InlineEntry] = {}
        self.touched: set[str] = set()

    def apply(self, before: Memory | None, after: Memory | None, now: str) -> None:
        was = before is not None and budget.counts(before, now)
        will = after is not None and budget.counts(after, now)
        if not was and not will:
            return
        if self.start is None:
            # Every change before this one left the entries as they were; this one's own
            # row may be written already, so it is read as it stood (``before``).
            own = {m.id for m in (before, after) if m is not None}
            entries = self._reads.inline_entries(self._realm, now)
            self.start = [e for e in entries if e.memory_id not in own]
            if was and before is not None:
                self.start.append(budget.entry(before))
            self.current = {e.memory_id: e for e in self.start}
        if before is not None:
            self.current.pop(before.id, None)
            self.touched.add(before.scope)
        if after is not None and will:
            self.current[after.id] = budget.entry(after)
            self.touched.add(after.scope)

    def check(self, limit: int) -> None:
        if self.start is not None:  # (nothing touched: nothing to measure)
            budget.check(self.start, self.current.values(), budget=limit, touched=self.touched)


class _Staged:
    """The memories a batch creates, held back to be inserted in one statement.

    FTS5 flushes its pending index data at the end of every statement, so a
    thousand single-row inserts write a thousand tiny segments where one
    multi-row insert writes one (several times faster at 100k memories).
    Later writes of the same batch find staged memories by name.

    It also keeps the stored memories holding each name the batch writes, read together
    before the first write (``Batch.read_ahead``): the name's first write takes them from
    there, and a later one reads them again, as the first may have changed them. And the
    projects its writes found, each looked up once (a batch removes no project).
    """

    def __init__(self) -> None:
        self.rows: dict[str, Memory] = {}
        self._by_name: dict[str | None, list[str]] = {}
        self.unread: set[str] = set()  # names read ahead that no write has taken yet
        self.ahead: dict[str, list[Memory]] = {}  # what they found (a name none holds: absent)
        self.projects: set[str] = set()

    def named(self, name: str) -> list[Memory]:
        return [self.rows[i] for i in self._by_name.get(name, ())]

    def stored(self, tx: Reads, realm: str, name: str, *, take: bool = False) -> list[Memory]:
        """The stored memories holding ``name`` (by scope): what was read ahead, while no
        write has taken it (``take``: this one does), else read now."""
        if name not in self.unread:
            return tx.find_by_name(realm, name, None)
        if take:
            self.unread.discard(name)
            return self.ahead.pop(name, [])
        return list(self.ahead.get(name, ()))

    def holding(self, tx: Reads, realm: str, name: str) -> list[Memory]:
        """Every memory holding ``name`` as a write of it finds them: the stored ones (by
        scope), then the batch's own."""
        return self.stored(tx, realm, name, take=True) + self.named(name)

    def holds(self, memory_id: str) -> bool:
        return memory_id in self.rows

    def put(self, memory: Memory) -> None:
        if memory.id not in self.rows:
            self._by_name.setdefault(memory.name, []).append(memory.id)
        self.rows[memory.id] = memory


def _excerpt(body: str, start: int, length: int, context: int = 2) -> str:
    """The lines around a change, for showing what an edit did."""
    lines = body.splitlines(keepends=True)
    first = body.count("\n", 0, start)
    last = body.count("\n", 0, start + length)
    return "".join(lines[max(0, first - context) : last + context + 1])


def _unless_kept(value: Any, check: Callable[[Any], str]) -> str | None:
    """``value`` checked, unless it is None (keep) or "" (clear)."""
    return value if value is None or value == "" else check(value)


def write(svc: MemoryService, name: str, **options: Any) -> WriteResult:
    """Create or update one memory by name (see ``WriteRequest`` for the options)."""
    request = fields.made(WriteRequest, {"name": name, **options})
    return write_many(svc, [request])[0]


def write_many(
    svc: MemoryService,
    requests: Sequence[WriteRequest],
    *,
    notes: bool = True,
    reason: str = "",
    progress: Progress | None = None,
) -> list[WriteResult]:
    """Apply every write in one transaction: all land or none does.

    The inline budget is measured once, over the batch as a whole. With ``notes``, a
    memory created or redescribed is noted when another already says nearly the same
    (``similar.noted``; a batch of more than ``similar.NOTED_BATCH`` is not).
    """
    checked = [normalized(svc, request) for request in requests]
    return write_normalized(svc, checked, notes=notes, reason=reason, progress=progress)


def write_normalized(
    svc: MemoryService,
    requests: Sequence[WriteRequest],
    *,
    notes: bool = False,
    reason: str = "",
    progress: Progress | None = None,
) -> list[WriteResult]:
    """``write_many`` of requests ``normalized`` already checked and put in stored form."""

    def run(work: Work) -> list[WriteResult]:
        return Batch(svc, work, reason=reason).apply_all(requests, progress)

    results = svc._write(run)
    if progress is not None:  # a bulk write: the vector index too, while it is shown
        svc.store.index_vectors(progress)
    return similar.noted(svc, results) if notes else results


class Batch:
    """The writes of one batch inside one unit of work (``write_normalized``'s, or
    another verb's that writes many memories at once): each request ``normalized``
    already, applied in order (``apply``), then the inline budget measured over them
    all, the new rows created in one statement and the search keys made (``close``)."""

    def __init__(self, svc: MemoryService, work: Work, *, reason: str) -> None:
        self.svc, self.work, self.reason = svc, work, reason
        self.inline = _Inline(work.reads, svc.realm)
        self.staged = _Staged()

    def read_ahead(
        self, names: Iterable[str], found: dict[str, list[Memory]] | None = None
    ) -> None:
        """Read the stored memories holding each of ``names`` together, for the writes to
        come (a statement each, otherwise: half a PostgreSQL write's round trips);
        ``found``: what ``find_by_names`` of them answered in this unit of work, before
        any write of it."""
        self.staged.unread = set(names)
        if found is None:
            found = self.work.reads.find_by_names(self.svc.realm, list(self.staged.unread))
        self.staged.ahead = dict(found)

    def stored(self, name: str) -> list[Memory]:
        """The stored memories holding ``name`` now (not the batch's own)."""
        return self.staged.stored(self.work.reads, self.svc.realm, name)

    def apply(self, request: WriteRequest) -> WriteResult:
        return _apply(self.svc, self.work, request, self.inline, self.staged, self.reason)

    def apply_all(
        self, requests: Sequence[WriteRequest], progress: Progress | None = None
    ) -> list[WriteResult]:
        """Apply ``requests`` in order (each a ``write`` step of ``progress``), then close."""
        self.read_ahead(request.name for request in requests)
        results = []
        for done, request in enumerate(requests, start=1):
            results.append(self.apply(request))
            if progress is not None:
                progress("write", done, len(requests))
        self.close(progress)
        return results

    def close(self, progress: Progress | None = None) -> None:
        self.inline.check(self.svc.settings.inline_max_bytes)
        rows = list(self.staged.rows.values())
        self.work.embed_ahead(rows)  # while the rows are inserted
        reporter = None if progress is None else (lambda d, t: progress("embed", d, t))
        try:
            self.work.create(rows)
            self.work.make_keys(progress=reporter)
        except BaseException:
            self.work.withdraw_ahead()
            raise


def normalized(svc: MemoryService, r: WriteRequest) -> WriteRequest:
    """The request checked field by field, in stored form (refused before any I/O).

    ``expires`` comes back as a stored timestamp, ``""`` (clear) or None (keep).
    """
    fields.dataclass_fields(r)
    fields.name(r.name)
    if r.expected_hash is not None:
        fields.text(r.expected_hash, "expected_hash")
    trust.evidence_of(r.evidence)  # its shape, before any I/O
    if r.project:
        fields.name(r.project, what="project")
    if r.tier not in (None, "global", "project"):
        raise InvalidValue(
            f"tier {r.tier!r} is not global or project",
            remedy="pass tier global or project, or leave it out",
            field="tier",
        )
    if r.tier == "project" and not r.project:
        raise NoProject(
            "a write to the project tier needs a project",
            remedy="pass a project, or write to the global tier",
            name=r.name,
        )
    return replace(
        r,
        description=None if r.description is None else fields.description(r.description),
        body=None if r.body is None else fields.text(r.body, "body"),
        priority=None if r.priority is None else fields.priority(r.priority),
        load=None if r.load is None else fields.load(r.load),
        tags=None if r.tags is None else fields.tags(r.tags),
        references=None if r.references is None else fields.references(r.references),
        source=None if r.source is None else fields.source(r.source),
        expires=parse_expires(r.expires, svc.clock) if r.expires else r.expires,
        subject=_unless_kept(r.subject, fields.subject),
        thread=_unless_kept(r.thread, fields.thread),
        valid_from=_unless_kept(r.valid_from, lambda v: parse_valid_from(v, svc.clock)),
        metadata=None if r.metadata is None else fields.caller_metadata(r.metadata),
    )


def _apply(
    svc: MemoryService,
    work: Work,
    r: WriteRequest,
    inline: _Inline,
    staged: _Staged,
    reason: str,
) -> WriteResult:
    tx, now, rekey = work.reads, work.now, work.rekey
    project = r.project or None
    if project and project not in staged.projects:
        svc._require_project(tx, project)
        staged.projects.add(project)
    if r.exact_tier:
        visible = [project_scope(project) if project else GLOBAL_SCOPE]
    else:
        visible = [GLOBAL_SCOPE] + ([project_scope(project)] if project else [])
    named = staged.holding(tx, svc.realm, r.name)
    existing = next((m for m in named if m.scope in visible), None)
    if existing is not None and r.create_only:
        raise MemoryExists(
            f"a memory named {r.name!r} already exists in the {existing.tier} tier",
            remedy=(
                "overwrite it with the snapshot's version: import again, forced"
                if r.restore is not None
                else "update it instead, or choose another name"
            ),
            fix="force_import" if r.restore is not None else "update",
            name=r.name,
            tier=existing.tier,
        )
    if existing is not None and existing.status is Status.SUPERSEDED and r.restore is None:
        successor = rows.linked(tx, [existing])[0].superseded_by
        raise NotActive(
            f"{r.name!r} was superseded"
            + (f" by {successor!r}" if successor else "")
            + ", so a write to it would change a memory that is no longer in force",
            remedy="write to the memory that replaced it, or remove this one and write anew",
            fix="graph",
            id=existing.id,
            status=existing.status.value,
            superseded_by=successor,
        )
    if r.expected_hash is not None and (
        existing is None or existing.content_hash != r.expected_hash
    ):
        raise StaleUpdate(
            f"memory {r.name!r} changed after it was read",
            remedy="read it again and redo the change on the current body",
            name=r.name,
        )
    if r.tier == "global":
        scope = GLOBAL_SCOPE
    elif r.tier == "project" and project:
        scope = project_scope(project)
    elif existing is not None:
        scope = existing.scope
    else:
        scope = project_scope(project) if project else GLOBAL_SCOPE
    _check_name_free(named, r.name, scope, existing)

    merged = _merge(svc, r, existing, scope, now)
    proof = trust.evidence_of(r.evidence)
    if proof is not None:
        record = trust.checked(svc, tx, proof, merged.body, claimant=merged.id)
        merged = trust.evidenced(svc, merged, record, now)
    out_notes: list[str] = []
    if len(merged.description) > fields.DESCRIPTION_NOTE_AT:
        out_notes.append(
            f"The description is {len(merged.description)} characters long; the index "
            "lists it every turn, so keep the fact there short and the detail in the body."
        )
    if merged.is_expired(now) and (existing is None or r.expires):
        out_notes.append(
            f"'{r.name}' is already expired: its expiry "
            f"{stamp(merged.expires_at or now)} is past, so it stays out of the index "
            "and the memory section; pass a later expiry, or an empty one to clear it."
        )
    elif existing is not None and merged.is_expired(now):
        out_notes.append(
            f"'{r.name}' stays expired (since {stamp(merged.expires_at or now)}); "
            "pass a new expiry, or an empty one to clear it."
        )
    if existing is not None and existing.scope != merged.scope:
        out_notes.append(f"Moved '{r.name}' from the {existing.tier} tier to {merged.tier}.")

    if existing is not None and rows.same(existing, merged):
        return WriteResult(
            existing, created=False, changed=False, notes=tuple(out_notes), previous=existing
        )
    if existing is None:
        merged = work.admit(merged, redact=r.redact)
        staged.put(merged)
        kind = "create"
    elif staged.holds(existing.id):
        merged = work.admit(merged, redact=r.redact)  # a row of this batch, not stored yet
        staged.put(merged)
        kind = "restore" if r.restore is not None else "update"
    else:
        # A restore takes the snapshot's version, created date included, in place.
        if existing.thread != merged.thread:
            rekey.leave(tx, existing.id)
        stored = work.change(merged, existing, restore=r.restore is not None, redact=r.redact)
        if stored is None:
            raise StaleUpdate(
                f"memory {r.name!r} changed while this write was being made",
                remedy="read it again and retry the write",
                name=r.name,
            )
        merged = stored
        kind = "restore" if r.restore is not None else "update"
    if existing is None or key.source_changed(existing, merged):
        rekey.touch(merged.id)
    inline.apply(existing, merged, stamp(now))
    if existing is None:
        kind, payload = rows.created(merged, now)
    else:
        payload = rows.payload_of(merged, now)
    event = work.event(kind, payload, memory_id=merged.id, reason=reason)
    return WriteResult(
        merged,
        created=existing is None,
        changed=True,
        notes=tuple(out_notes),
        previous=existing,
        receipt=work.receipt(event, merged.content_hash),
    )


def name_clash(named: Sequence[Memory], scope: str, existing: Memory | None = None) -> list[Memory]:
    """Of the memories holding a name (``named``), those a memory of ``scope`` (other
    than ``existing``) would clash with: any, for a global one; else the global tier's
    and its own scope's."""
    others = [m for m in named if existing is None or m.id != existing.id]
    if scope == GLOBAL_SCOPE:
        return others
    return [m for m in others if m.scope in (GLOBAL_SCOPE, scope)]


def _check_name_free(
    named: Sequence[Memory], name: str, scope: str, existing: Memory | None
) -> None:
    """Refuse ``scope`` for ``name`` when another memory of the realm holds it there."""
    clash = name_clash(named, scope, existing)
    if clash:
        tiers = sorted({m.tier for m in clash})
        raise NameConflict(
            f"{name!r} is already a memory of the {', '.join(tiers)} tier, and a global "
            "name may not also be a project's",
            remedy="choose another name",
            name=name,
            tiers=tiers,
        )


def _merge(
    svc: MemoryService, r: WriteRequest, existing: Memory | None, scope: str, now: datetime
) -> Memory:
    description = r.description or ""
    if existing is None:
        if not description:
            raise DescriptionRequired(
                f"new memory {r.name!r} has no description",
                remedy="describe it in one line: the index lists it by this",
                name=r.name,
            )
        body = r.body or ""
        expires = r.expires or None
        created = r.restore.created_at if r.restore else now
        verified = r.restore.verified_at if r.restore else created
        return Memory(
            id=r.restore.id if r.restore and r.restore.id else svc.store.ids.new(now),
            realm=svc.realm,
            scope=scope,
            name=r.name,
            description=description,
            body=body,
            tags=tuple(r.tags or ()),
            priority=r.priority if r.priority is not None else DEFAULT_PRIORITY,
            load=Load(r.load) if r.load is not None else Load.INDEX,
            references=tuple(r.references or ()),
            source=r.source or "",
            subject=r.subject or None,
            predicate=None,
            trust=r.restore.trust if r.restore and r.restore.trust else svc.actor.trust,
            status=Status.ACTIVE,
            ever_quarantined=False,
            supersedes=None,
            content_hash=rows.content_hash(body),
            author=r.restore.author if r.restore and r.restore.author else svc.principal,
            created_at=created,
            updated_at=r.restore.updated_at if r.restore and r.restore.updated_at else now,
            verified_at=verified,
            expires_at=parse_optional_stamp(expires),
            valid_from=parse_optional_stamp(r.valid_from or None),
            valid_to=None,
            read_count=r.restore.read_count if r.restore else 0,
            thread=r.thread or None,
            metadata={CALLER: dict(r.metadata)} if r.metadata else {},
        )
    body = existing.body if r.body is None else r.body
    if r.expires is None:
        expires_at = existing.expires_at
    elif r.expires == "":
        expires_at = None
    else:
        expires_at = parse_optional_stamp(r.expires)
    merged = replace(
        existing,
        scope=scope,
        description=description or existing.description,
        body=body,
        tags=existing.tags if r.tags is None else tuple(r.tags),
        priority=existing.priority if r.priority is None else r.priority,
        load=existing.load if r.load is None else Load(r.load),
        references=(existing.references if r.references is None else tuple(r.references)),
        source=r.source or existing.source,
        content_hash=rows.content_hash(body),
        expires_at=expires_at,
        subject=existing.subject if r.subject is None else (r.subject or None),
        thread=existing.thread if r.thread is None else (r.thread or None),
        valid_from=(
            existing.valid_from
            if r.valid_from is None
            else parse_optional_stamp(r.valid_from or None)
        ),
        metadata=existing.metadata if r.metadata is None else with_caller(existing, r.metadata),
    )
    if r.restore is not None:
        merged = replace(
            merged,
            created_at=r.restore.created_at,
            verified_at=r.restore.verified_at,
            read_count=r.restore.read_count,
            author=r.restore.author or merged.author,
            trust=r.restore.trust or merged.trust,
            updated_at=r.restore.updated_at or merged.updated_at,
        )
    elif r.verified:
        merged = replace(merged, verified_at=now)
    if not rows.same(existing, merged):
        merged = rows.changed(svc, merged, now)
    return merged


def edit(
    svc: MemoryService,
    name: str,
    old: str,
    new: str,
    *,
    replace_all: bool = False,
    verified: bool = False,
    project: str | None = None,
    redact: bool = False,
) -> EditResult:
    """Replace ``old`` with ``new`` in a body; ``new`` empty deletes the text. A secret
    the new body holds is refused, or written as its marker with ``redact``."""
    fields.text(old, "old text")
    fields.text(new, "new text")
    if old == "":
        raise InvalidValue(
            "the text to replace is empty",
            remedy="give the exact text to find in the body",
            field="old",
        )

    def run(work: Work) -> EditResult:
        tx, now = work.reads, work.now
        now_stamp = stamp(now)
        current = lookup.locate(svc, tx, name, project)
        found = current.body.count(old)
        if found == 0:
            raise EditNoMatch(
                f"the text to replace does not occur in {name!r}",
                remedy="read the memory and copy the text exactly, whitespace included",
                name=name,
            )
        if found > 1 and not replace_all:
            raise EditAmbiguous(
                f"the text to replace occurs {found} times in {name!r}",
                remedy="give more surrounding text to pick one, or pass replace_all",
                name=name,
                occurrences=found,
            )
        body = current.body.replace(old, new, -1 if replace_all else 1)
        start = current.body.find(old)
        if body == current.body and not verified:  # nothing to change: nothing recorded
            excerpt = _excerpt(body, start, len(new))
            return EditResult(current, replacements=0, excerpt=excerpt, previous=current)
        changed = replace(
            current,
            body=body,
            content_hash=rows.content_hash(body),
            updated_at=now,
            verified_at=now if verified else current.verified_at,
        )
        if body != current.body:
            changed = rows.changed(svc, changed, now)
        inline = _Inline(tx, svc.realm)
        inline.apply(current, changed, now_stamp)
        inline.check(svc.settings.inline_max_bytes)
        stored = work.change(changed, current)
        if stored is None:
            raise StaleUpdate(
                f"memory {name!r} changed while the edit was being made",
                remedy="read it again and redo the edit",
                name=name,
            )
        changed = stored
        work.rekey.touch(changed.id)
        event = work.event("edit", rows.payload_of(changed, now), memory_id=changed.id)
        return EditResult(
            changed,
            replacements=found if replace_all else 1,
            excerpt=_excerpt(changed.body, start, len(new)),  # as stored: redacted
            previous=current,
            receipt=work.receipt(event, changed.content_hash),
        )

    return svc._write(run, redact=redact)


def delete(svc: MemoryService, name: str, *, project: str | None = None) -> DeleteResult:
    """Remove a memory; memories that referenced it keep their references."""

    def run(work: Work) -> DeleteResult:
        tx, now = work.reads, work.now
        memory = lookup.locate(svc, tx, name, project)
        cited = lookup.referenced_by(svc, tx, memory)
        work.remove(memory)
        event = work.event("delete", rows.payload_of(memory, now), memory_id=memory.id)
        return DeleteResult(memory, cited, receipt=work.receipt(event))

    return svc._write(run)
