"""Which of some texts a SQLite store's files still hold, read by a process of its own.

Closing a file lets go of every POSIX lock the closing process holds on it, and
SQLite's locks on a store, its write-ahead log and the log's shared-memory index are
POSIX locks. A process that opened one of those files beside its SQLite connections and
closed it would leave them unlocked: another process's checkpoint could then reset the
log under one of their reads ("database disk image is malformed": three runs of four of
``bench/concurrency.py``, whose processes forget memories while others read), or two
writers append to it at once. So ``SqliteBackend.residue`` runs this file in a new
interpreter (``python -I -S``), which holds no SQLite connection to lose: the paths and
the texts go in on its standard input (never its command line: they are what was just
erased), and what it found comes back on its standard output, both in ``marshal``'s
form (built into the interpreter: the child imports nothing else but ``os``, and
starts in about 10 ms).

Another process may change the files meanwhile: replace the vector codes' segments,
truncate the log, delete it on closing. So a file is read, not mapped (reading past a
truncated mapping kills the process), one gone since it was listed holds nothing, and
one shorter than when it was listed is read as far as it goes.
"""

from __future__ import annotations

import marshal
import os
import sys

READ_BYTES = 16 * 1024 * 1024  # a file is searched a piece at a time


def held(path: str, wanted: dict[str, bytes]) -> list[str]:
    """Which of ``wanted`` (each text and its bytes) ``path`` holds; none when it is gone.
    Pieces overlap by the longest text less one byte, so a text across two is found."""
    found: list[str] = []
    if not wanted:
        return found
    overlap = max(map(len, wanted.values())) - 1
    try:
        with open(path, "rb") as file:
            carried = b""
            while piece := file.read(READ_BYTES):
                data = carried + piece
                found += [text for text, raw in wanted.items() if text not in found and raw in data]
                if len(found) == len(wanted):
                    break
                carried = data[max(0, len(data) - overlap) :] if overlap else b""
    except FileNotFoundError:
        pass
    return found


def scan(paths: list[str], texts: list[str]) -> dict[str, list[str]]:
    """Each of ``texts`` (UTF-8) that one of ``paths`` holds, with the names of those."""
    wanted = {text: text.encode("utf-8") for text in texts if text}
    found: dict[str, list[str]] = {}
    for path in paths:
        for text in held(path, wanted):
            found.setdefault(text, []).append(os.path.basename(path))
    return found


def main() -> None:
    paths, texts = marshal.loads(sys.stdin.buffer.read())
    sys.stdout.buffer.write(marshal.dumps(scan(paths, texts)))


if __name__ == "__main__":
    main()
