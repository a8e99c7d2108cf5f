"""Export and import: a store as a directory of Markdown files, and back.

It is one piece past the usual size on purpose: the snapshot's writer and its reader
share its layout, its files' shapes and their checks, so a change of the format is made,
and read, in one place.

A snapshot (format 2) is::

    export.toml                      format_version, when and by what it was written
    <name>.md                        a global memory
    <project>/<name>.md              a project's memory
    _records/<scope>/<id>.md         every other row: an agent's or a team's memory, a
                                     fact's version, a superseded or retracted one, …
                                     (<scope> with its colon as a folder: agent/ada)
    _tickets.jsonl                   the tickets, one JSON object a line
    _teams.jsonl                     each team, {"name", "members"}
    _relations.jsonl                 the relation graph's stored edges among its memories

A named memory's file is YAML frontmatter (description; project; priority and load when
not the defaults; created; verified when it differs from created; expires; source;
subject, thread (with the memory's place in it, thread_position) and valid_from when
set; read_count; references, tags and metadata when set; author and trust) and then the
body, byte for byte. A record's frontmatter is every stored field of its row
(``retain.record``), so it comes back as it was: its id, author, trust, status, times and
the version it superseded. A folder's name starting with ``_`` is no project's: a
project name starts with a letter or digit. The directory is created 0700 and every
file 0600. An export that fails removes what it wrote; a description YAML cannot carry
refuses the whole run before anything is written. A format 1 snapshot (named memories
alone, without author and trust) is read as format 2 holding no records and no tickets.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import shutil
import tomllib
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml

from retain import record
from retain.chrono import parse_stamp, stamp
from retain.errors import (
    ExportTargetNotEmpty,
    InvalidInput,
    InvalidTime,
    SnapshotInvalid,
    TransferError,
    UnexportableDescription,
    UnknownFormatVersion,
)
from retain.fields import WHOLE_MAX, is_name
from retain.model import CALLER, COUNT_MAX, DEFAULT_PRIORITY, Load, Memory, Proposal, Trust
from retain.write_results import Restore, WriteRequest

T = TypeVar("T")
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)  # a format 1 snapshot is format 2 without records or tickets
MANIFEST = "export.toml"
RECORDS = "_records"
TICKETS = "_tickets.jsonl"
TEAMS = "_teams.jsonl"  # each team and its members
RELATIONS = "_relations.jsonl"  # the stored edges between the snapshot's memories
_OPEN = b"---\n"
_CLOSE = b"\n---\n"


def _yaml(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1_000_000)


def frontmatter(
    memory: Memory, position: int | None = None, *, provenance: bool = True
) -> dict[str, Any]:
    data: dict[str, Any] = {"description": memory.description}
    if memory.project:
        data["project"] = memory.project
    if memory.priority != DEFAULT_PRIORITY:
        data["priority"] = memory.priority
    if memory.load is not Load.INDEX:
        data["load"] = memory.load.value
    data["created"] = stamp(memory.created_at)
    if memory.verified_at != memory.created_at:
        data["verified"] = stamp(memory.verified_at)
    if memory.expires_at is not None:
        data["expires"] = stamp(memory.expires_at)
    if memory.source:
        data["source"] = memory.source
    if memory.subject:
        data["subject"] = memory.subject
    if memory.thread:
        data["thread"] = memory.thread
        if position is not None:
            data["thread_position"] = position
    if memory.valid_from is not None:
        data["valid_from"] = stamp(memory.valid_from)
    data["read_count"] = memory.read_count
    if memory.references:
        data["references"] = list(memory.references)
    if memory.tags:
        data["tags"] = list(memory.tags)
    if memory.metadata.get(CALLER):
        data["metadata"] = memory.metadata[CALLER]
    if provenance:  # a snapshot's; a change's before and after are drawn without them
        data["author"] = memory.author
        data["trust"] = memory.trust.value
        data["id"] = memory.id
        data["updated"] = stamp(memory.updated_at)
    return data


def render(memory: Memory, position: int | None = None, *, provenance: bool = True) -> bytes:
    """One memory as the bytes of its file (``provenance``: its author, trust, id and
    last change too, as a snapshot writes them)."""
    head = _yaml(frontmatter(memory, position, provenance=provenance))
    return _OPEN + head.encode("utf-8") + b"---\n" + memory.body.encode("utf-8")


def render_record(memory: Memory) -> bytes:
    """A row as the bytes of its record's file: every stored field, then the body."""
    head = _yaml(record.memory_record(memory))
    return _OPEN + head.encode("utf-8") + b"---\n" + memory.body.encode("utf-8")


def record_path(memory: Memory) -> Path:
    """Where a record's file lives in a snapshot: its scope's folders, then its id."""
    return Path(RECORDS, *memory.scope.split(":"), f"{memory.id}.md")


def _carried(memory: Memory) -> bool:
    try:
        back = yaml.safe_load(_yaml({"description": memory.description}))
    except yaml.YAMLError:
        return False
    return isinstance(back, dict) and back.get("description") == memory.description


def _carried_record(row: Memory) -> bool:
    """Whether a row's record comes back from its YAML as it is."""
    written = record.memory_record(row)
    try:
        return bool(yaml.safe_load(_yaml(written)) == written)
    except yaml.YAMLError:
        return False


def _file_name(memory: Memory) -> str:
    return f"{memory.name or memory.id}.md"


def export_snapshot(
    directory: Path,
    memories: Sequence[Memory],
    now: datetime,
    progress: Callable[[str, int, int], None] | None = None,
    positions: dict[str, int] | None = None,
    records: Sequence[Memory] = (),
    tickets: Sequence[Proposal] = (),
    realm: str = "default",
    extras: Sequence[tuple[str, Sequence[dict[str, Any]]]] = (),
) -> int:
    """Write ``memories`` (the named ones of the shared tiers), ``records`` (every other
    row) and ``tickets`` under ``directory``, which must be new or empty; ``positions`` is
    each threaded memory's place in its thread, so an import keeps thread order."""
    for row in records:
        if not _carried_record(row):
            raise TransferError(
                f"memory {row.id!r} holds text YAML cannot carry back as it is",
                remedy=f"rewrite memory {row.id!r} and export again",
                id=row.id,
            )
    for memory in memories:
        if not _carried(memory):
            raise UnexportableDescription(
                f"the description of {memory.name!r} cannot be written as YAML",
                remedy=f"rewrite the description of {memory.name!r} and export again",
                name=memory.name,
            )
    for memory in memories:
        if memory.project == MANIFEST:
            raise TransferError(
                f"project {MANIFEST!r} would write its folder over the snapshot's manifest",
                remedy="rename that project and export again",
                fix="rename_project",
                project=memory.project,
            )
    try:
        return _export(
            directory, memories, now, progress, positions or {}, records, tickets, realm,
            [(TICKETS, [record.fields_of(t) for t in tickets]), *extras],
        )  # fmt: skip
    except OSError as exc:
        raise TransferError(
            f"cannot write the snapshot at {directory}: {exc.strerror or exc}",
            remedy="export to a directory you can create and write",
            directory=str(directory),
        ) from exc


def _export(
    directory: Path,
    memories: Sequence[Memory],
    now: datetime,
    progress: Callable[[str, int, int], None] | None,
    positions: dict[str, int],
    records: Sequence[Memory],
    tickets: Sequence[Proposal],
    realm: str,
    lines: Sequence[tuple[str, Sequence[dict[str, Any]]]],
) -> int:
    if directory.exists():
        if not directory.is_dir():
            raise ExportTargetNotEmpty(
                f"{directory} exists and is not a directory",
                remedy="export to a new or empty directory",
                directory=str(directory),
            )
        if any(directory.iterdir()):
            raise ExportTargetNotEmpty(
                f"{directory} is not empty",
                remedy="export to a new or empty directory: a snapshot is never merged",
                directory=str(directory),
            )
        created_root = False
    else:
        directory.mkdir(mode=0o700, parents=True)
        created_root = True
    os.chmod(directory, 0o700)
    written: list[Path] = []
    try:
        for done, memory in enumerate(memories, start=1):
            folder = directory / memory.project if memory.project else directory
            if not folder.exists():
                folder.mkdir(mode=0o700)
                written.append(folder)
            path = folder / _file_name(memory)
            if not path.resolve().is_relative_to(directory.resolve()):
                raise TransferError(
                    f"memory {memory.id!r} would be written outside the snapshot, at {path}",
                    remedy="rename that memory and export again",
                    id=memory.id,
                )
            _write_private(path, render(memory, positions.get(memory.id)))
            written.append(path)
            if progress is not None:
                progress("export", done, len(memories) + len(records))
        for done, row in enumerate(records, start=len(memories) + 1):
            path = directory / record_path(row)
            for folder in reversed(path.relative_to(directory).parents[:-1]):
                if not (directory / folder).exists():
                    (directory / folder).mkdir(mode=0o700)
                    written.append(directory / folder)
            _write_private(path, render_record(row))
            written.append(path)
            if progress is not None:
                progress("export", done, len(memories) + len(records))
        for name, objects in lines:  # the JSON lines files: tickets, teams, relations
            if objects:
                text = "".join(
                    json.dumps(o, ensure_ascii=False, sort_keys=True) + "\n" for o in objects
                )
                _write_private(directory / name, text.encode("utf-8"))
                written.append(directory / name)
        manifest = (
            f"format_version = {FORMAT_VERSION}\n"
            f'exported_at = "{stamp(now)}"\n'
            f'retain_version = "{importlib.metadata.version("retain")}"\n'
            f"memories = {len(memories)}\n"
            f"realm = {json.dumps(realm)}\n"
            f"records = {len(records)}\n"
            f"tickets = {len(tickets)}\n"
        )
        _write_private(directory / MANIFEST, manifest.encode("utf-8"))
    except BaseException:
        if created_root:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            for path in reversed(written):
                with contextlib.suppress(OSError):
                    path.rmdir() if path.is_dir() else path.unlink()
            with contextlib.suppress(OSError):
                (directory / MANIFEST).unlink()
        raise
    return len(memories)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


# -- import ---------------------------------------------------------------------------


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not directory.is_dir():
        raise SnapshotInvalid(
            f"{directory} is not a directory",
            remedy="point import at a directory an export wrote; another store's file or folder "
            "is imported by naming its format (import_from: mcp-memory, mem0, markdown)",
            fix="export",
            directory=str(directory),
        )
    try:
        manifest = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SnapshotInvalid(
            f"{directory} has no {MANIFEST}",
            remedy="point import at a directory an export wrote; another store's file or folder "
            "is imported by naming its format (import_from: mcp-memory, mem0, markdown)",
            fix="export",
            directory=str(directory),
        ) from exc
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SnapshotInvalid(
            f"cannot read {path}: {exc}", remedy="restore the manifest from the original export"
        ) from exc
    version = manifest.get("format_version")
    if version not in READ_VERSIONS:
        raise UnknownFormatVersion(
            f"{path} is format_version {version!r}; this retain reads "
            f"{' and '.join(map(str, READ_VERSIONS))}",
            remedy="import it with the retain version that wrote it, or a newer one",
            format_version=version,
        )
    return manifest


def _when(value: Any, field: str, path: Path) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise SnapshotInvalid(
                f"{path}: {field} has no timezone",
                remedy="write it as RFC 3339 with Z",
                file=str(path),
                field=field,
            )
        moment = value
    elif isinstance(value, str):
        try:
            moment = parse_stamp(value)
        except InvalidTime as exc:
            raise SnapshotInvalid(
                f"{path}: {field} {value!r} is not a timestamp",
                remedy="write it as RFC 3339, like 2026-01-01T00:00:00Z",
                file=str(path),
                field=field,
            ) from exc
    else:
        raise SnapshotInvalid(
            f"{path}: {field} is missing or not a timestamp",
            remedy="add it",
            file=str(path),
            field=field,
        )
    try:
        stamp(moment)
    except InvalidTime as exc:
        raise SnapshotInvalid(
            f"{path}: {field} {value!r} is outside the years 1–9999 in UTC",
            remedy="write a time between years 1 and 9999",
            file=str(path),
            field=field,
        ) from exc
    return moment


def _whole(head: dict[str, Any], field: str, default: int, path: Path, most: int) -> int:
    """A whole-number field of a file's frontmatter, refused unless from 0 to ``most``
    (what the stores' columns hold)."""
    value = head.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise SnapshotInvalid(
            f"{path}: {field} {str(value)[:40]!r} is not a whole number from 0 to {most}",
            remedy=f"write {field} as a whole number from 0 to {most}, or leave it out",
            file=str(path),
            field=field,
        )
    return value


def refused(path: Path, error: InvalidInput, field: str | None = None) -> SnapshotInvalid:
    """A field of the file at ``path`` the service refused, as the refusal of the import
    (``field``: the one checked, when the refusal does not name it)."""
    field = error.details.get("field", field)
    return SnapshotInvalid(
        f"{path}: {error.message}",
        remedy=f"fix the file ({error.remedy})" if error.remedy else "fix the file",
        file=str(path),
        field=field,
        refused=error.code,
    )


def parse_file(path: Path, project: str | None) -> WriteRequest:
    """One exported file back into a write that restores it."""
    return _parse(path, project)[0]


def _read(path: Path) -> bytes:
    try:
        # O_NOFOLLOW: a file swapped for a symbolic link after the snapshot was checked
        # is refused too, never followed
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise SnapshotInvalid(
            f"cannot read {path}: {exc.strerror or exc}",
            remedy="restore the file from the original export or remove it",
        ) from exc


def _split(path: Path) -> tuple[dict[str, Any], str]:
    """A file's frontmatter and body."""
    raw = _read(path)
    if not raw.startswith(_OPEN):
        raise SnapshotInvalid(
            f"{path} does not start with YAML frontmatter", remedy="open it with ---"
        )
    end = raw.find(_CLOSE, len(_OPEN) - 1)
    if end < 0:
        raise SnapshotInvalid(f"{path} has no closing --- line", remedy="close the frontmatter")
    try:
        head = yaml.safe_load(raw[len(_OPEN) : end + 1].decode("utf-8"))
        body = raw[end + len(_CLOSE) :].decode("utf-8")
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SnapshotInvalid(f"{path}: {exc}", remedy="fix the file's YAML or text") from exc
    if not isinstance(head, dict):
        raise SnapshotInvalid(f"{path}: frontmatter is not a mapping", remedy="use key: value")
    return head, body


def _parse(path: Path, project: str | None) -> tuple[WriteRequest, int]:
    """A file's write, and its place in its thread (0 when it has none)."""
    head, body = _split(path)
    declared = head.get("project")
    if declared != project:
        raise SnapshotInvalid(
            f"{path}: frontmatter says project {declared!r} but the file is under {project!r}",
            remedy="move the file to its project's folder or fix the frontmatter",
        )
    created = _when(head.get("created"), "created", path)
    verified = _when(head["verified"], "verified", path) if "verified" in head else created
    expires = head.get("expires")
    read_count = _whole(head, "read_count", 0, path, COUNT_MAX)
    for key in ("tags", "references"):
        if key in head and not (
            isinstance(head[key], list) and all(isinstance(x, str) for x in head[key])
        ):
            raise SnapshotInvalid(f"{path}: {key} must be a list of strings", remedy="fix it")
    for key in ("subject", "thread"):
        if key in head and not isinstance(head[key], str):
            raise SnapshotInvalid(f"{path}: {key} must be text", remedy="fix it")
    valid_from = head.get("valid_from")
    position = _whole(head, "thread_position", 0, path, WHOLE_MAX)
    metadata = head.get("metadata", {})
    if not isinstance(metadata, dict):
        raise SnapshotInvalid(f"{path}: metadata must be a mapping", remedy="fix it")
    description = head.get("description")
    if not isinstance(description, str):
        raise SnapshotInvalid(f"{path}: description must be text", remedy="add a description")
    return WriteRequest(
        name=path.stem,
        description=description,
        body=body,
        tags=head.get("tags", []),
        priority=head.get("priority", DEFAULT_PRIORITY),
        load=head.get("load", Load.INDEX.value),
        references=head.get("references", []),
        source=head.get("source", ""),
        expires=stamp(_when(expires, "expires", path)) if expires is not None else "",
        subject=head.get("subject", ""),
        thread=head.get("thread", ""),
        valid_from=stamp(_when(valid_from, "valid_from", path)) if valid_from is not None else "",
        project=project,
        tier="project" if project else "global",
        metadata=metadata,
        restore=Restore(
            created_at=created,
            verified_at=verified,
            read_count=read_count,
            author=_author(head, path),
            trust=_trust(head, path),
            id=_id(head, path),
            updated_at=_when(head["updated"], "updated", path) if "updated" in head else None,
        ),
    ), position


def _author(head: dict[str, Any], path: Path) -> str | None:
    """The principal who wrote a named memory (format 2; None: the importer)."""
    author = head.get("author")
    if author is not None and (not isinstance(author, str) or not author.strip()):
        raise SnapshotInvalid(f"{path}: author must be a principal's name", remedy="fix it")
    return author


def _id(head: dict[str, Any], path: Path) -> str | None:
    """A named memory's id (format 2; None: a new one)."""
    found = head.get("id")
    if found is not None and (not isinstance(found, str) or not is_name(found)):
        raise SnapshotInvalid(f"{path}: id {found!r} is not a memory's id", remedy="fix it")
    return found


def _trust(head: dict[str, Any], path: Path) -> Trust | None:
    """How far a named memory is trusted (format 2; None: as its importer writes)."""
    if "trust" not in head:
        return None
    try:
        return Trust(head["trust"])
    except ValueError as exc:
        raise SnapshotInvalid(
            f"{path}: trust {head['trust']!r} is not one of claimed, observed, attested, verified",
            remedy="fix it",
        ) from exc


def read_records(
    directory: Path, manifest: dict[str, Any]
) -> tuple[list[tuple[Path, Memory]], list[Proposal]]:
    """A format 2 snapshot's records (every row but the named ones of the shared tiers),
    oldest first, and its tickets; a format 1 snapshot (``manifest``, as read_manifest
    read it) holds neither."""
    if manifest.get("format_version") == 1:
        return [], []
    root = directory.resolve()
    rows: list[tuple[Path, Memory]] = []
    folder = directory / RECORDS
    pending = [folder] if folder.exists() else []
    while pending:
        for entry in _visible(pending.pop(), root):
            if entry.is_dir():
                pending.append(entry)
            elif entry.suffix == ".md":
                rows.append((entry, _row(entry, directory)))
    tickets = read_lines(directory, TICKETS, record.ticket_of)
    rows.sort(key=lambda pair: (pair[1].created_at, pair[1].id))
    return rows, tickets


def read_lines(directory: Path, name: str, made: Callable[[Any], T]) -> list[T]:
    """A snapshot's JSON lines file (``name``; none: empty), each line ``made`` into its
    value; a line that is not one is ``snapshot_invalid`` naming it."""
    path = directory / name
    if not path.exists():
        return []
    out: list[T] = []
    for n, line in enumerate(_read(path).decode("utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(made(json.loads(line)))
            except (ValueError, TypeError, KeyError, InvalidInput, record.RecordInvalid) as exc:
                raise SnapshotInvalid(
                    f"{path}:{n}: {exc}", remedy="fix the line", file=str(path)
                ) from exc
    return out


def _row(path: Path, directory: Path) -> Memory:
    head, body = _split(path)
    try:
        row = record.memory_of(head, body)
    except record.RecordInvalid as exc:
        raise SnapshotInvalid(
            f"{path}: {exc}", remedy="fix the record", file=str(path), field=exc.field
        ) from exc
    placed = directory / record_path(row)
    if placed != path:
        raise SnapshotInvalid(
            f"{path}: the record is memory {row.id!r} of {row.scope}, which lives at "
            f"{record_path(row)}",
            remedy="move the file to its scope's folder under its id",
            file=str(path),
            field="scope" if placed.parent != path.parent else "id",
        )
    return row


def _visible(directory: Path, root: Path) -> list[Path]:
    """A folder's entries, sorted, without dot-files and dot-folders (such as .git); a
    symbolic link among them (or an entry that resolves outside the snapshot) is refused:
    an import reads what the snapshot holds, never what a link points at."""
    entries = sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    for entry in entries:
        if entry.is_symlink() or not entry.resolve().is_relative_to(root):
            raise SnapshotInvalid(
                f"{entry} is a symbolic link; a snapshot holds only its own files and folders",
                remedy="replace the link with the file or folder it points at, or remove it",
                file=str(entry),
            )
    return entries


def read_snapshot(
    directory: Path, progress: Callable[[str, int, int], None] | None = None
) -> list[tuple[Path, WriteRequest]]:
    """Every memory of a snapshot with the file it came from, the manifest checked first."""
    read_manifest(directory)
    root = directory.resolve()
    if (directory / MANIFEST).is_symlink():
        raise SnapshotInvalid(
            f"{directory / MANIFEST} is a symbolic link",
            remedy="replace the link with the manifest it points at",
            file=str(directory / MANIFEST),
        )
    files: list[tuple[Path, str | None]] = []
    for entry in _visible(directory, root):
        if entry.name in (RECORDS, TICKETS, TEAMS, RELATIONS):
            continue  # read_records and read_lines read them
        if entry.is_dir():
            for item in _visible(entry, root):
                if item.is_dir():
                    raise SnapshotInvalid(
                        f"{item} is nested too deep for a snapshot",
                        remedy="keep project folders one level under the snapshot",
                    )
                if item.suffix == ".md":
                    files.append((item, entry.name))
        elif entry.suffix == ".md":
            files.append((entry, None))
    parsed = []
    for done, (path, project) in enumerate(files, start=1):
        request, position = _parse(path, project)
        parsed.append(((path, request), position))
        if progress is not None:
            progress("read", done, len(files))
    # A thread is ordered by when its memories were written: write each thread's
    # memories in their exported places (file names do not keep that order).
    order = sorted(
        range(len(parsed)),
        key=lambda i: (
            (1, parsed[i][0][1].project or "", parsed[i][0][1].thread, parsed[i][1], i)
            if parsed[i][0][1].thread
            else (0, "", "", 0, i)
        ),
    )
    return [parsed[i][0] for i in order]
