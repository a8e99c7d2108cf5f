"""What a batched write costs SQLite itself on this machine, beside retain's ``write_many``.

    python bench/sqlite_insert.py [--size 15000] [--batch 1000] [--rounds 3] [--home DIR]
                                  [--conversation]

The floor under ``bench/store.py``'s batched writes, as ``bench/pgvector_insert.py`` is
under PostgreSQL's: the same synthetic memories (``bench/store.py``'s corpus) written in
batches of ``--batch``, one durable transaction each (WAL, ``synchronous = FULL``, as
retain's store), three ways, each into a fresh file, interleaved ``--rounds`` times:

* ``rows``: each memory's row (id, name, description, body, tags) inserted into a table
  whose full-text index is kept by a trigger, as retain's ``memories_fts`` is (FTS5,
  external content, the same tokenizer), by one ``executemany`` a batch;
* ``rows_vectors``: the same, and each memory's description and body embedded by the
  bundled static model (numpy, a batch at once) and its vector stored in a table of
  its own;
* ``retain``: ``write_many`` of the same requests through the service (the gate, field
  checks, secret and time finding, the search key, the event log, and no near-copy
  note: ``notes=False``).

With ``--conversation`` each memory is a turn of a thread of ``TURNS`` (two speakers as
subjects, a day a thread), as an ingested transcript's: retain's keys then hold each
turn's neighbours' text and day, and its vector is nudged toward theirs, which the raw
ways do not do (their figures are no floor for it; the ratio is left out).

``retain`` ÷ ``rows_vectors`` is what the service keeps of what SQLite and the embedding
allow. Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import retain  # noqa: E402
from retain.results import WriteRequest  # noqa: E402
from store import PROJECTS, Corpus, log, machine, source_state  # noqa: E402

WAYS = ("rows", "rows_vectors", "retain")
TURNS = 40  # a conversation's thread, with --conversation
SCHEMA = """
CREATE TABLE memories (
    num INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT, description TEXT NOT NULL,
    body TEXT NOT NULL, tags TEXT NOT NULL
);
CREATE VIRTUAL TABLE memories_fts USING fts5(
    name, description, body, content='memories', content_rowid='num',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, name, description, body)
        VALUES (new.num, new.name, new.description, new.body);
END;
CREATE TABLE vectors (num INTEGER PRIMARY KEY, vector BLOB NOT NULL);
"""


def raw(path: Path, batches: list[list[WriteRequest]], vectors: bool) -> float:
    """Seconds to write ``batches`` straight into SQLite (see the module docstring)."""
    embedder = None
    if vectors:
        from retain.search.static_model import StaticEmbedder

        embedder = StaticEmbedder("minilm-l6-static-256")
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = FULL")
    con.executescript(SCHEMA)
    began, num = time.perf_counter(), 0
    for batch in batches:
        rows = []
        for request in batch:
            num += 1
            tags = json.dumps(list(request.tags or ()))
            rows.append((num, f"m{num}", request.name, request.description, request.body, tags))
        con.execute("BEGIN IMMEDIATE")
        con.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)", rows)
        if embedder is not None:
            texts = [f"{r.description}\n{r.body}" for r in batch]
            matrix = embedder.embed(texts)
            con.executemany(
                "INSERT INTO vectors VALUES (?, ?)",
                [(row[0], vector.tobytes()) for row, vector in zip(rows, matrix, strict=True)],
            )
        con.execute("COMMIT")
    seconds = time.perf_counter() - began
    con.close()
    return seconds


def through_retain(directory: Path, batches: list[list[WriteRequest]]) -> float:
    store = retain.open(directory / "retain.db", home=directory)
    for project in PROJECTS:
        store.add_project(project)
    began = time.perf_counter()
    for batch in batches:
        store.write_many(batch, notes=False)
    seconds = time.perf_counter() - began
    store.close()
    return seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=15_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--home", default="/tmp/retain-sqlite-insert")
    parser.add_argument("--conversation", action="store_true", help="turns of threads")
    args = parser.parse_args(argv)
    if args.size < 1 or args.batch < 1 or args.rounds < 1:
        parser.error("--size, --batch and --rounds must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    home = Path(args.home)
    requests = [doc.request() for doc in Corpus(1).docs(0, args.size)]
    if args.conversation:
        requests = [
            replace(
                r,
                thread=f"chat-{i // TURNS}",
                subject=("Ann", "Bob")[i % 2],
                valid_from=f"2023-{1 + i // TURNS % 12:02d}-{1 + i // TURNS % 28:02d}T10:00:00Z",
            )
            for i, r in enumerate(requests)
        ]
    batches = [requests[i : i + args.batch] for i in range(0, args.size, args.batch)]
    per_s: dict[str, list[float]] = {way: [] for way in WAYS}
    for round_ in range(1, args.rounds + 1):
        for way in WAYS:
            directory = home / f"{way}-{round_}"
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            if way == "retain":
                seconds = through_retain(directory, batches)
            else:
                seconds = raw(directory / "raw.db", batches, vectors=way == "rows_vectors")
            per_s[way].append(round(args.size / seconds, 1))
            log(f"round {round_} {way}: {per_s[way][-1]:,.0f} memories/s")
    medians = {way: statistics.median(values) for way, values in per_s.items()}
    print(
        json.dumps(
            {
                "benchmark": "bench/sqlite_insert.py",
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": machine(),
                "source": source_state(),
                "parameters": {
                    k: getattr(args, k) for k in ("size", "batch", "rounds", "conversation")
                },
                "per_s": per_s,
                "median_per_s": medians,
                "retain_of_rows_vectors": None
                if args.conversation
                else round(medians["retain"] / medians["rows_vectors"], 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
