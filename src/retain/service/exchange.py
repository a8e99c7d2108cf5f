"""Snapshots in and out (export and import of the shared tiers), the export of the
event log as JSON lines, and the one-time import of legacy per-identity markdown files.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from retain import fields
from retain.errors import InvalidInput, RetainError
from retain.governance import secrets
from retain.model import GLOBAL_SCOPE, Agent, Memory, agent_scope
from retain.receipt import LogExport
from retain.results import ExportResult, WriteResult
from retain.service import agent, lookup, rows, tier
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
