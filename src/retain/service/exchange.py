"""Snapshots in and out (export and import of the shared tiers), imports from other
stores' formats (``import_from``), the export of the event log as JSON lines, and the
one-time import of legacy per-identity markdown files.

It is one piece past the usual size on purpose: every way memories cross the store's
edge in bulk (snapshots both ways, other stores' formats, the legacy files) shares the
same checks before one transaction, so they are read side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retain import fields
from retain.errors import (
    AccessDenied,
    AgentNotFound,
    InvalidInput,
    InvalidValue,
    MemoryExists,
    NameConflict,
    ProjectNotFound,
    RetainError,
    SnapshotInvalid,
    TeamNotFound,
)
from retain.governance import secrets
from retain.graph import Relation
from retain.model import (
    GLOBAL_SCOPE,
    Agent,
    Memory,
    Proposal,
    Status,
    Team,
    agent_scope,
    project_scope,
)
from retain.receipt import LogExport
from retain.record import fields_of, relation_of
from retain.results import (
    ExportResult,
    ImportReport,
    Landing,
    Skipped,
    WriteRequest,
    WriteResult,
)
from retain.service import agent, lookup, registry, tier
from retain.service import rows as rows_
from retain.service.actor import Actor, Kind
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
    """Write a snapshot (``retain.transfer``, format 2) of what the actor's view holds:
    the active named memories of the global and project tiers as their files, every
    other row it sees (agents' and teams' memories, facts' versions, superseded,
    retracted and discarded rows) as records with their provenance, and the tickets it
    sees. With ``project``, that project's tier alone, and no tickets. A forgotten row
    holds no text to carry, and a row held for review or discarded by one leaves the
    store only through a review: they are left out, and counted."""
    now = svc._now()
    only = None if project is None else project_scope(project) if project else GLOBAL_SCOPE

    def run(tx: Reads) -> _Exported:
        where = lookup.filter_of(svc, tx, now, project, None, None, None, False, listing=True)
        listed = tx.list_memories(where)
        memories = [
            m
            for m in listed
            if (m.scope == GLOBAL_SCOPE or m.project)
            and m.predicate is None
            and m.name
            and not (m.ever_quarantined or m.derived_from)  # else a record keeps all of it
        ]
        named = {m.id for m in memories}
        view = svc._reader(tx)
        rows, left_out, after = [], 0, 0
        while page := tx.iter_memories(after, PAGE):
            for _, m in page:
                if m.realm != svc.realm or m.id in named or (only and m.scope != only):
                    continue
                if not view.sees(m):
                    continue
                if m.status in LEFT_OUT:
                    left_out += 1
                else:
                    rows.append(m)
            after = page[-1][0]
        tickets = [] if only else list(tx.list_proposals(svc.realm, None))  # the realm's
        shown = [t for t in tickets if view.sees_proposal(t)]
        positions = tx.thread_positions([m.id for m in memories if m.thread])
        teams = [] if only else tx.list_teams(svc.realm)
        ids = {m.id for m in memories} | {m.id for m in rows}
        edges = [
            r for r in tx.relations(svc.realm, sorted(ids)) if r.source in ids and r.target in ids
        ]
        return _Exported(memories, rows, shown, left_out, positions, teams, edges)

    from retain import transfer  # YAML: loaded by an export or import only

    got = svc.backend.read(run)
    extras = [
        (transfer.TEAMS, [{"name": t.name, "members": list(t.members)} for t in got.teams]),
        (transfer.RELATIONS, [fields_of(r) for r in got.relations]),
    ]
    count = transfer.export_snapshot(
        Path(directory), got.memories, now, progress, got.positions, got.rows, got.tickets,
        svc.realm, extras,
    )  # fmt: skip
    return ExportResult(count, got.left_out, records=len(got.rows), tickets=len(got.tickets))


PAGE = 2000  # rows read at a time by an export
_MISSING = {"agent": AgentNotFound, "team": TeamNotFound, "project": ProjectNotFound}
# what a snapshot leaves out: a forgotten row's text is gone; a held row's and a discarded
# one's leaves the store only through a review
LEFT_OUT = (Status.FORGOTTEN, Status.QUARANTINED, Status.DISCARDED)


@dataclass(frozen=True, slots=True)
class _Exported:
    memories: list[Memory]  # the named memories of the shared tiers, as their files
    rows: list[Memory]  # every other row the view sees, as records
    tickets: list[Proposal]
    left_out: int
    positions: dict[str, int]
    teams: list[Team]
    relations: list[Relation]


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
    create: bool = False,
    progress: Progress | None = None,
) -> list[WriteResult]:
    """Restore a snapshot in one transaction; nothing lands unless everything does.

    The named memories come back as their files say (``force`` overwrites those the tier
    holds). The records (format 2) come back as they were, ids, authors, trust, status
    and times included, each with a ``create`` event whose reason is ``import``; the
    tickets likewise (a ``ticket_import`` event). A record or ticket whose id the store
    holds refuses the import (``memory_exists``): nothing replaces a row's history.
    The agents, teams and projects they need must exist, unless ``create`` adds them in
    the same transaction. With ``force``, a record or ticket the store holds is left as
    the store has it. The results are the named memories' writes."""
    from retain import transfer

    root = Path(directory)
    snapshot = transfer.read_snapshot(root, progress)
    manifest = transfer.read_manifest(root)
    rows, tickets = transfer.read_records(root, manifest)
    teams = transfer.read_lines(root, transfer.TEAMS, _team_of)
    edges = transfer.read_lines(root, transfer.RELATIONS, relation_of)
    operator = svc.kind is Kind.OPERATOR
    if (rows or tickets or teams or edges) and not operator:
        raise AccessDenied(
            f"{svc.principal} may import memories, but restoring records and tickets with "
            "their authors, trust and decisions is an operator's act",
            remedy="import the snapshot as an operator, or export the named memories alone",
            principal=svc.principal,
        )
    rows = [(path, _checked(path, replace(row, realm=svc.realm))) for path, row in rows]
    ids = [row.id for _, row in rows]
    realms = svc.backend.read(lambda tx: {m.realm for m in tx.get_many(ids)}) if ids else set()
    came_from = manifest.get("realm", svc.realm)
    renamed: dict[str, str] = {}
    if came_from != svc.realm or realms - {svc.realm}:
        rows, tickets, renamed = _moved(svc, rows, tickets)  # ids are the store's
    for path, row in rows:
        found = secrets.findings_of(row, svc.settings.secrets)
        if found:
            raise secrets.refusal(found, what=str(path), file=str(path))
    for ticket in tickets:
        texts = [("summary", ticket.summary), ("body", ticket.body), ("evidence", ticket.evidence)]
        found = secrets.scan_fields(texts, svc.settings.secrets)
        if found:
            raise secrets.refusal(found, what=f"ticket {ticket.id}", id=ticket.id)
    requests = []
    for path, item in snapshot:  # a refused field names its file
        try:
            normalized = tier.normalized(svc, item)
        except InvalidInput as exc:
            raise transfer.refused(path, exc) from exc
        found = secrets.scan_fields(secrets.request_texts(normalized), svc.settings.secrets)
        if found:  # the whole import is refused, naming the file
            raise secrets.refusal(found, what=str(path), file=str(path))
        if not operator and normalized.restore is not None:  # the importer's own provenance
            normalized = replace(
                normalized, restore=replace(normalized.restore, author=None, trust=None)
            )
        requests.append(replace(normalized, create_only=not force, exact_tier=True))
    if not requests and not rows and not tickets and not teams:
        return []

    def run(work: Work) -> list[WriteResult]:
        _registered(work, [row for _, row in rows], requests, create, teams)
        held = _held(work, rows, tickets, force)
        for _, row in rows:
            if row.id in held:
                continue  # forced: the store's row stands, with its own history
            (made,) = work.create([row])
            work.event("create", rows_.payload_of(made, work.now), memory_id=made.id,
                       reason="import")  # fmt: skip
        for ticket in tickets:
            if ticket.id in held:
                continue
            work.add_proposal(ticket)
            work.event("ticket_import", fields_of(ticket), reason="import")
        named = _fresh_ids(work.reads, requests)
        results = tier.Batch(svc, work, reason="import").apply_all(named, progress)
        for team, members in teams:
            for member in members:
                work.add_member(team, member)
        _related(work, edges, renamed)
        return results

    results = svc._write(run)
    if progress is not None:
        svc.store.index_vectors(progress)
    return results


def _checked(path: Path, row: Memory) -> Memory:
    """A record's fields as a write checks them (a name, a scope, a priority, one line of
    description, tags, references), its content hash made again from its body; else
    ``snapshot_invalid`` naming the file and the field."""
    from retain import transfer

    def one_line(description: str) -> None:
        if fields.description(description) != description:
            raise InvalidValue("the description is not one line", remedy="")

    checks: list[tuple[str, Callable[[], object]]] = [
        ("name", lambda: row.name is None or fields.name(row.name)),
        ("scope", lambda: lookup.check_scope(row.scope)),
        ("priority", lambda: fields.priority(row.priority)),
        ("description", lambda: one_line(row.description)),
        ("tags", lambda: fields.tags(list(row.tags))),
        ("references", lambda: fields.references(list(row.references))),
    ]
    for field, check in checks:
        try:
            check()
        except InvalidInput as exc:
            raise transfer.refused(path, exc, field) from exc
    return replace(row, content_hash=rows_.content_hash(row.body))


def _moved(
    svc: MemoryService, rows: list[tuple[Path, Memory]], tickets: list[Proposal]
) -> tuple[list[tuple[Path, Memory]], list[Proposal], dict[str, str]]:
    """A snapshot's records and tickets for another realm than the one it came from: each
    with a new id (an id names one row of the whole store), every reference between
    them (the version a row superseded, the row or ticket it was made from, a ticket's
    record and landing) following."""
    now = svc._now()
    new = {r.id: svc.store.ids.new(now) for _, r in rows} | {
        t.id: svc.store.ids.new(now) for t in tickets
    }

    def moved(ref: str | None) -> str | None:
        return None if ref is None else new.get(ref, ref)

    return [
        (path, replace(r, id=new[r.id], supersedes=moved(r.supersedes),
                       derived_from=moved(r.derived_from)))
        for path, r in rows
    ], [
        replace(t, id=new[t.id], record=moved(t.record), landed=moved(t.landed))
        for t in tickets
    ], new  # fmt: skip


def _fresh_ids(tx: Reads, requests: list[WriteRequest]) -> list[WriteRequest]:
    """The named memories' writes, each keeping its snapshot id unless a row of the store
    holds it (then it gets a new one, as a format 1 snapshot's do)."""
    wanted = [r.restore.id for r in requests if r.restore and r.restore.id]
    taken = {m.id for m in tx.get_many(wanted)} if wanted else set()
    return [
        replace(r, restore=replace(r.restore, id=None))
        if r.restore and r.restore.id in taken
        else r
        for r in requests
    ]


def _team_of(line: Any) -> tuple[str, tuple[str, ...]]:
    """A team's line: its name and its members' names."""
    name, members = line["name"], line["members"]
    fields.name(name, what="team")
    if not isinstance(members, list):
        raise ValueError("members is not a list")
    return name, tuple(fields.name(m, what="agent") for m in members)


def _related(work: Work, edges: list[Relation], renamed: dict[str, str]) -> None:
    """The snapshot's stored edges between the memories it restored (their ids followed
    where the import gave new ones, the edge's own too); one the store holds stays."""
    if not edges:
        return
    tx, realm = work.reads, work.realm

    def moved(edge: Relation) -> Relation:
        if not renamed:
            return replace(edge, realm=realm)
        return replace(
            edge, realm=realm, id=work.store.ids.new(work.now),
            source=renamed.get(edge.source, edge.source),
            target=renamed.get(edge.target, edge.target),
        )  # fmt: skip

    placed = [moved(e) for e in edges]
    ends = sorted({i for e in placed for i in (e.source, e.target)})
    here = {m.id for m in tx.get_many(ends) if m.realm == realm}
    known = {r.id for r in tx.relations(realm, sorted(here))}
    for edge in placed:
        if edge.source in here and edge.target in here and edge.id not in known:
            work.put_relation(edge)


def _registered(
    work: Work,
    rows: list[Memory],
    requests: list[WriteRequest],
    create: bool,
    teams: Sequence[tuple[str, tuple[str, ...]]] = (),
) -> None:
    """The agents, teams and projects a snapshot's rows (and its teams and their members)
    live in: each must exist, or is added (``create``), in the import's transaction."""
    tx, realm = work.reads, work.realm
    needed: dict[str, set[str]] = {"agent": set(), "team": set(), "project": set()}
    for row in rows:
        kind, _, name = row.scope.partition(":")
        if kind in needed and name:
            needed[kind].add(name)
    needed["project"] |= {r.project for r in requests if r.project}
    needed["team"] |= {team for team, _ in teams}
    needed["agent"] |= {member for _, members in teams for member in members}
    finds = {"agent": tx.get_agent, "team": tx.get_team, "project": tx.get_project}
    adds = {"agent": registry.add_agent, "team": registry.add_team, "project": registry.add_project}
    for kind in ("project", "agent", "team"):
        for name in sorted(needed[kind]):
            if finds[kind](realm, name) is not None:
                continue
            if not create:
                raise _MISSING[kind](
                    f"the snapshot holds memories of {kind} {name!r}, which this store lacks",
                    remedy=f"create the {kind} first, or import with create",
                    fix=f"add_{kind}",
                    **{kind: name},
                )
            adds[kind](work, name)


def _held(
    work: Work, rows: list[tuple[Path, Memory]], tickets: list[Proposal], force: bool
) -> set[str]:
    """The records and tickets whose ids the store holds already: refused, or (``force``)
    left as the store holds them; and a new record's name another row holds, refused."""
    tx, realm = work.reads, work.realm
    held = {m.id for m in tx.get_many([row.id for _, row in rows])}
    held |= {t.id for t in tickets if tx.get_proposal(realm, t.id) is not None}
    if held and not force:
        raise MemoryExists(
            f"{len(held)} of the snapshot's records and tickets are in this store already "
            f"(the first: {sorted(held)[0]!r}); a record is restored only into a store that "
            "lacks it",
            remedy="import into another store, or import again, forced, to keep the store's "
            "own rows and restore the rest",
            fix="force_import",
            ids=sorted(held),
        )
    restored = [(path, row) for path, row in rows if row.name is not None and row.id not in held]
    holding = tx.find_by_names(realm, [str(row.name) for _, row in restored])
    for path, row in restored:
        named = holding.get(str(row.name), [])
        if tier.name_clash(named, row.scope) or any(m.scope == row.scope for m in named):
            raise NameConflict(
                f"{path}: the name {row.name!r} is a memory's of this store already",
                remedy="import into another store, or rename that memory",
                name=row.name,
            )
    return held


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

    names = [request.name for request in requests]

    def plan(tx: Reads, holding: dict[str, list[Memory]]) -> tuple[list[Landing], str | None]:
        """What each request would do, given the stored memories holding their names."""
        missing = bool(project) and tx.get_project(svc.realm, project or "") is None
        if missing and not create:
            registry.require_project(tx, svc.realm, project or "")
        scope = project_scope(project) if project else GLOBAL_SCOPE
        landed = []
        for source, request in zip(sources, requests, strict=True):
            named = holding.get(request.name, [])
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
        landed, created = svc.backend.read(lambda tx: plan(tx, tx.find_by_names(svc.realm, names)))
        return ImportReport(kind, True, tuple(landed), tuple(skipped), created)

    def run(work: Work) -> tuple[list[Landing], str | None]:
        holding = work.reads.find_by_names(svc.realm, names)
        landed, created = plan(work.reads, holding)
        _refuse_taken(landed, force)
        if created is not None:
            registry.add_project(work, created)  # a project: no memory's name moves
        batch = tier.Batch(svc, work, reason=f"import from {kind}")
        batch.read_ahead(names, holding)
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
                rows_.record(work, memory, principal=by)
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
