"""Legacy per-identity markdown memory: read once, when its realm is first opened.

Layout: ``$RETAIN_HOME/agent-memory/<realm>/<identity>.md``, one file an agent.

* A file with top-level list items (``-``, ``*`` or ``+`` at the start of a line)
  holds one record per item; lines indented under an item continue it. Headings
  (``#`` lines) and blank lines between items are ignored; any other text outside
  an item is malformed and skipped.
* A file without list items is one record: its text, less a leading ``#`` heading.

This module only reads: it turns files into records and problems. The service
validates each record as a ``remember`` would, writes them in one transaction and
then renames each file to ``<identity>.md.imported``.
"""

from __future__ import annotations

import re
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

ITEM = re.compile(r"^[-*+](?:[ \t]+(.*))?$")
SUFFIX = ".md"
CLAIMED = ".md.importing"  # a file one process is importing now
DONE = ".md.imported"
STALE_CLAIM_S = 300  # a claim this old (by its rename) belongs to an importer that died
PRINCIPAL = "operator:legacy-import"  # who the import's events name, whoever opened the store
ALREADY = "already imported (the same content); renamed without importing it again"


@dataclass(frozen=True, slots=True)
class Record:
    line: int  # where it starts in its file (1-based)
    text: str


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    line: int  # 0: the whole file
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Report:
    """What one realm's legacy import did."""

    files: tuple[str, ...]  # the files read (now renamed .md.imported)
    imported: int  # records written
    agents_added: tuple[str, ...]  # identities registered for their files
    problems: tuple[Problem, ...]  # what was skipped, and why

    def to_dict(self) -> dict[str, object]:
        return {
            "files": list(self.files),
            "imported": self.imported,
            "agents_added": list(self.agents_added),
            "problems": [p.to_dict() for p in self.problems],
        }


def parse(text: str) -> tuple[list[Record], list[tuple[int, str]]]:
    """The records of one file, and the (line, reason) of each malformed part."""
    lines = text.splitlines()
    if not any(ITEM.match(line) for line in lines):
        first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
        body = lines[first + 1 :] if lines[first:] and lines[first].startswith("#") else lines
        whole = "\n".join(body).strip()
        return ([Record(1, whole)] if whole else []), []
    records: list[Record] = []
    problems: list[tuple[int, str]] = []
    item: tuple[int, list[str]] | None = None
    in_stray = False  # inside a paragraph outside any item (reported once)

    def close() -> None:
        nonlocal item
        if item is not None:
            body = "\n".join(item[1]).strip()
            if body:
                records.append(Record(item[0], body))
            else:
                problems.append((item[0], "an empty list item"))
            item = None

    for number, line in enumerate(lines, 1):
        found = ITEM.match(line)
        if found is not None:
            close()
            in_stray = False
            item = (number, [found.group(1) or ""])
        elif not line.strip():
            in_stray = False
            if item is not None:
                item[1].append("")
        elif line[0] in " \t" and item is not None:
            item[1].append(line[2:] if line.startswith("  ") else line.lstrip())
        elif line.startswith("#"):
            close()
            in_stray = False
        else:
            close()
            if not in_stray:
                in_stray = True
                problems.append((number, "text outside a list item"))
    close()
    return records, problems


def pending(directory: Path, now: float | None = None) -> list[Path]:
    """The files of a realm's legacy directory still to import, by name. A claim older
    than ``STALE_CLAIM_S`` (its importer was killed) is put back first."""
    if not directory.is_dir():
        return []
    now = time.time() if now is None else now
    for path in directory.glob("*" + CLAIMED):
        with suppress(FileNotFoundError):  # another process put it back, or finished it
            if now - path.stat().st_ctime > STALE_CLAIM_S:
                path.rename(path.with_name(identity_of(path) + SUFFIX))
    return sorted(p for p in directory.iterdir() if p.name.endswith(SUFFIX) and p.is_file())


def claim(path: Path) -> Path | None:
    """Take a file for this process (renamed ``.md.importing``); None if another did."""
    claimed = path.with_name(path.name[: -len(SUFFIX)] + CLAIMED)
    try:
        path.rename(claimed)
    except FileNotFoundError:
        return None
    return claimed


def identity_of(claimed: Path) -> str:
    return claimed.name[: -len(CLAIMED)]


def source_name(claimed: Path) -> str:
    """The name the file had before it was claimed: ``<identity>.md``."""
    return identity_of(claimed) + SUFFIX


def finish(claimed: Path, *, imported: bool) -> Path:
    """Rename a claimed file ``.md.imported`` (or back to ``.md`` when it was not); an
    earlier import's file of the same name is kept (the new one gets ``.imported.2``…)."""
    stem = identity_of(claimed)
    target = claimed.with_name(stem + (DONE if imported else SUFFIX))
    number = 1
    while imported and target.exists():
        number += 1
        target = claimed.with_name(f"{stem}{DONE}.{number}")
    claimed.rename(target)
    return target
