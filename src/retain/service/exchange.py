"""Snapshots in and out (export and import of the shared tiers), imports from other
stores' formats (``import_from``), the export of the event log as JSON lines, and the
one-time import of legacy per-identity markdown files.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from retain import fields
from retain.errors import (
    InvalidInput,
    MemoryExists,
    NameConflict,
    RetainError,
    SnapshotInvalid,
)
from retain.governance import secrets
from retain.model import GLOBAL_SCOPE, Agent, Memory, agent_scope, project_scope
from retain.receipt import LogExport
from retain.results import ExportResult, ImportReport, Landing, Skipped, WriteResult
from retain.service import agent, lookup, registry, rows, tier
from retain.service.actor import Actor
from retain.service.work import Work
from retain.storage.base import Progress, Reads

if TYPE_CHECKING:
    from retain import legacy
    from retain.service import MemoryService


def export(
    svc: MemoryService,
    directory: str | Path,
    *,
    project: str | None = None,
    progress: Progress | None = None,
) -> ExportResult:
    """Write a snapshot of the active memories of the global and project tiers.

    Agents' own memories and facts are left out, and counted: the snapshot format
    has no place for them yet (a file at the root would come back as a global memory,
    a fact as a plain one without its history).
    """
    now = svc._now()

    def run(tx: Reads) -> tuple[list[Memory], int, dict[str, int]]:
        where = lookup.filter_of(svc, tx, now, project, None, None, None, False, listing=True)
        listed = tx.list_memories(where)
        memories = [
            m for m in listed if (m.scope == GLOBAL_SCOPE or m.project) and m.predicate is None
        ]
        positions = tx.thread_positions([m.id for m in memories if m.thread])
        return memories, len(listed) - len(memories), positions

    from retain import transfer  # YAML: loaded by an export or import only

    memories, left_out, positions = svc.backend.read(run)
    count = transfer.export_snapshot(Path(directory), memories, now, progress, positions)
    return ExportResult(count, left_out)


def export_log(
    svc: MemoryService, path: str | Path, *, progress: Progress | None = None
) -> LogExport:
    """Write the whole event log (every realm's: the chain is the store's) to the new
    file ``path`` as JSON lines, with each event's signature and, when the store has a
    signing key, the signed chain head (``retain.eventlog``), in one read transaction:
    whole or not at all."""
    from retain import eventlog

    signer = svc.store.signer

    def run(tx: Reads) -> LogExport:
        total = tx.count_events()
        if progress is not None:
            progress("export", 0, total)
        report = None if progress is None else (lambda done: progress("export", done, total))
        written = eventlog.write(Path(path), tx.iter_events(), tx.iter_signatures(), signer, report)
        if progress is not None:
            progress("export", total, total)
        return written

    return svc.backend.read(run)


def import_(
    svc: MemoryService,
    directory: str | Path,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> list[WriteResult]:
    """Restore a snapshot in one transaction; nothing lands unless everything does."""
    from retain import transfer

    snapshot = transfer.read_snapshot(Path(directory), progress)
    requests = []
    for path, item in snapshot:  # a refused field names its file
        try:
            normalized = tier.normalized(svc, item)
        except InvalidInput as exc:
            raise transfer.refused(path, exc) from exc
        found = secrets.scan_fields(secrets.request_texts(normalized), svc.settings.secrets)
        if found:  # the whole import is refused, naming the file
            raise secrets.refusal(found, what=str(path), file=str(path))
        requests.append(replace(normalized, create_only=not force, exact_tier=True))
    if not requests:
        return []
    return tier.write_normalized(svc, requests, reason="import", progress=progress)


def import_from(
    svc: MemoryService,
    kind: str,
    path: str | Path,
    *,
    project: str | None = None,
    create: bool = False,
    dry_run: bool = False,
    force: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import another store's memories (``retain.formats``: ``mcp-memory``, ``mem0``,
    ``markdown``) into ``project``'s tier (else the global tier), in one transaction.

    A record the format cannot use, or one whose fields or secrets the store refuses,
    is passed over and reported with the reason, its value never quoted. A name the
    tier holds already refuses the import unless ``force`` overwrites it. A project the
    realm lacks is refused unless ``create`` adds it in the same transaction. A dry run
    reads and checks everything and writes nothing."""
    from retain import formats

    if project is not None:
        fields.name(project, what="project")
    incoming = formats.read(kind, Path(path), project or None)
    skipped = list(incoming.skipped)
    sources, requests = [], []
    for done, (source, item) in enumerate(incoming.writes, start=1):
        if progress is not None:
            progress("check", done, len(incoming.writes))
        try:
            normalized = tier.normalized(svc, item)
        except InvalidInput as exc:
            skipped.append(Skipped(source, exc.message))
            continue
        found = secrets.scan_fields(secrets.request_texts(normalized), svc.settings.secrets)
        if found:
            kinds = ", ".join(sorted({f.kind for f in found}))
            skipped.append(Skipped(source, f"it holds what looks like a secret ({kinds})"))
            continue
        sources.append(source)
        requests.append(replace(normalized, create_only=not force, exact_tier=True))

    def plan(tx: Reads) -> tuple[list[Landing], str | None]:
        missing = bool(project) and tx.get_project(svc.realm, project or "") is None
        if missing and not create:
            registry.require_project(tx, svc.realm, project or "")
        scope = project_scope(project) if project else GLOBAL_SCOPE
        landed = []
        for source, request in zip(sources, requests, strict=True):
            named = tx.find_by_name(svc.realm, request.name, None)
            held = next((m for m in named if m.scope == scope), None)
            if tier.name_clash(named, scope, held):  # another tier's: no force overwrites it
                action = "conflict"
            else:
                action = "create" if held is None else "overwrite" if force else "exists"
            landed.append(Landing(source, request.name, action))
        return landed, project if missing else None

    if not requests and skipped:  # nothing of it could be used: not this format
        raise SnapshotInvalid(
            f"{path} holds nothing a {kind} import can use ({len(skipped)} records passed "
            f"over, the first: {skipped[0].source}: {skipped[0].reason})",
            remedy="check the format: --from mcp-memory, mem0 or markdown",
            file=str(path),
        )
    if dry_run:
        landed, created = svc.backend.read(plan)
        return ImportReport(kind, True, tuple(landed), tuple(skipped), created)

    def run(work: Work) -> tuple[list[Landing], str | None]:
        landed, created = plan(work.reads)
        _refuse_taken(landed, force)
        if created is not None:
            registry.add_project(work, created)
        batch = tier.Batch(svc, work, reason=f"import from {kind}")
        for done, (request, landing) in enumerate(zip(requests, landed, strict=True), 1):
            result = batch.apply(request)
            landed[done - 1] = replace(landing, action="create" if result.created else "overwrite")
            if progress is not None:
                progress("write", done, len(requests))
        batch.close(progress)
        return landed, created

    landed, created = svc._write(run)
    if progress is not None and requests:
        svc.store.index_vectors(progress)
    return ImportReport(kind, False, tuple(landed), tuple(skipped), created)


def _refuse_taken(landed: list[Landing], force: bool) -> None:
    """Refuse an import whose names are taken: in another tier (always), or in its own
    (unless forced), naming how many and the first."""
    conflicts = [x for x in landed if x.action == "conflict"]
    taken = [x for x in landed if x.action == "exists" and not force]
    if conflicts:
        raise NameConflict(
            f"{len(conflicts)} of the import's names are memories of another tier already "
            f"(the first: {conflicts[0].name!r}, from {conflicts[0].source}), and a global "
            "name may not also be a project's",
            remedy="import into the tier that holds them, or rename or remove those memories",
            name=conflicts[0].name,
            names=[x.name for x in conflicts],
        )
    if taken:
        raise MemoryExists(
            f"{len(taken)} of the import's names are taken in its tier already (the first: "
            f"{taken[0].name!r}, from {taken[0].source})",
            remedy="import again, forced, to overwrite them; a dry run lists them",
            fix="force_import",
            name=taken[0].name,
            names=[x.name for x in taken],
        )


def import_legacy(svc: MemoryService, directory: Path) -> legacy.Report | None:
    """Import the realm's legacy per-identity markdown files (see ``retain.legacy``).

    Every record goes through the validator of ``remember``; a malformed one is
    skipped and reported, never half-imported. The good records of every file land
    in one transaction, an unregistered identity is registered with them, and each
    file read is renamed ``<identity>.md.imported`` once they have. A file whose
    content (by SHA-256) was imported before is only renamed. A store that refuses
    the import leaves the files as they were and the report says why.
    """
    import hashlib

    from retain import legacy

    claimed = [c for f in legacy.pending(directory) if (c := legacy.claim(f)) is not None]
    if not claimed:
        return None
    files: list[tuple[Path, str, list[agent.Draft]]] = []  # claimed file, its digest, records
    problems: list[legacy.Problem] = []
    for path in claimed:
        name = legacy.identity_of(path)
        file = legacy.source_name(path)
        try:
            fields.name(name, what="agent")
            raw = path.read_bytes()
            records, bad = legacy.parse(raw.decode("utf-8-sig"))
        except (RetainError, UnicodeDecodeError) as exc:
            reason = exc.message if isinstance(exc, RetainError) else "not UTF-8 text"
            problems.append(legacy.Problem(file, 0, f"{reason}; the file was left as it is"))
            legacy.finish(path, imported=False)
            continue
        problems += [legacy.Problem(file, line, reason) for line, reason in bad]
        drafts = []
        for record in records:
            try:
                found = secrets.scan(record.text, "text", svc.settings.secrets)
                if found:  # skipped and reported, as a malformed record is
                    raise secrets.refusal(found, what="the record")
                drafts.append(agent.draft_of(svc, record.text, None, None, None, None, None, None))
            except RetainError as exc:
                problems.append(legacy.Problem(file, record.line, exc.message))
        files.append((path, hashlib.sha256(raw).hexdigest(), drafts))

    by = legacy.PRINCIPAL  # the import is the system's act, whoever opened the store

    def run(work: Work) -> legacy.Report:
        tx, now = work.reads, work.now
        added: list[str] = []
        imported = 0
        again: list[legacy.Problem] = []
        for path, digest, drafts in files:
            name = legacy.identity_of(path)
            author = agent_scope(name)
            trust = Actor(author).trust
            memories = [
                replace(make(Agent(name, now), now, None), author=author, trust=trust)
                for make in drafts
            ]
            if tx.legacy_imported(svc.realm, name, digest):
                again.append(legacy.Problem(legacy.source_name(path), 0, legacy.ALREADY))
                continue
            if memories and tx.get_agent(svc.realm, name) is None:
                work.add_agent(name)
                work.event("agent_add", {"agent": name}, principal=by)
                added.append(name)
            for memory in memories:
                rows.record(work, memory, principal=by)
            work.record_legacy_import(name, digest)
            imported += len(memories)
        report = legacy.Report(
            files=tuple(legacy.source_name(p) for p, _, _ in files),
            imported=imported,
            agents_added=tuple(added),
            problems=(*problems, *again),
        )
        work.event("legacy_import", report.to_dict(), principal=by)
        return report

    try:
        report = svc._write(run) if files else None
    except RetainError as exc:  # the store refused: nothing landed, the files stay
        for path, _, _ in files:
            legacy.finish(path, imported=False)
            problems.append(
                legacy.Problem(
                    legacy.source_name(path), 0, f"not imported: {exc.message}; left as it is"
                )
            )
        report = None
    except BaseException:
        for path, _, _ in files:
            legacy.finish(path, imported=False)
        raise
    if report is None:
        return legacy.Report(files=(), imported=0, agents_added=(), problems=tuple(problems))
    for path, _, _ in files:
        legacy.finish(path, imported=True)
    return report
