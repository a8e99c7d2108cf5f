"""A search's semantic sense read beside its word senses, or in the search's own read:
each query of a store searched both ways in turn, in one process.

    python bench/beside.py DIR [--rounds 4] [--numpy] [--split]

``DIR`` is a store made by ``bench/cold.py`` (its ``retain.db`` and ``queries.json``,
the rare/common/mixed query sets). Each query is searched both ways: ``beside`` as the
store searches (``SqliteBackend.read_beside``), ``one_read`` with ``read_beside``
answering None (as when the spare connection is lent); over every memory (``all``), a
project of about 8% of the store (``project``) and a tag of about 6% (``tag``), as
``cold.py`` names them. Under each, every query is searched once each way to warm, and
the two ways checked to find the same memories in the same order
(``found_differently``: the queries that did not); then, for ``--rounds``, each query
is searched both ways in turn, which first alternating from query to query and round
to round, so that the machine's drift falls on both alike. ``--numpy`` loads numpy
first, as a process that has it (``cold.py``'s measuring process, a server that wrote a
batch) chooses the codes' candidates by its partition.

``--split`` compares another pair of ways instead, the semantic sense beside in both:
the codes' scan split in parts read side by side from ``sqlite_ann.SPLIT_FROM`` rows, as
set (``as_set``: below it, one part on one thread), against split at any size
(``two_parts``: ``THREADS`` parts).

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import retain  # noqa: E402
from retain.storage import sqlite_ann  # noqa: E402
from retain.storage.sqlite import SqliteBackend  # noqa: E402
from store import log, machine, source_state, summary_ms  # noqa: E402

FILTERS: dict[str, dict[str, Any]] = {
    "all": {},
    "project": {"project": "infra", "tier": "project"},  # cold.PROJECT
    "tag": {"tag": "infra"},  # cold.TAG
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--numpy", action="store_true", help="load numpy first")
    parser.add_argument(
        "--split", action="store_true", help="the codes' scan in one part or two, instead"
    )
    args = parser.parse_args()
    if args.numpy:
        import numpy  # noqa: F401

    spec = json.loads((args.directory / "queries.json").read_text(encoding="utf-8"))
    texts = [t for texts in spec["sets"].values() for t in texts]
    store = retain.open(args.directory / "retain.db", home=args.directory)
    backend = store.backend
    assert isinstance(backend, SqliteBackend), "a SQLite store made by bench/cold.py"
    lend, split_from = backend.read_beside, sqlite_ann.SPLIT_FROM

    def lent(fn: Any) -> Any:
        backend.read_beside = fn  # type: ignore[method-assign]

    def split(rows: int) -> None:
        sqlite_ann.SPLIT_FROM = rows

    ways: dict[str, Any] = (
        {"as_set": lambda: split(split_from), "two_parts": lambda: split(0)}
        if args.split
        else {"beside": lambda: lent(lend), "one_read": lambda: lent(lambda fn: None)}
    )
    first, second = ways

    def found(way: str, text: str, **options: Any) -> list[str]:
        ways[way]()
        return [hit.memory.id for hit in store.search(text, **options).hits]

    results: dict[str, Any] = {}
    differ: dict[str, int] = {}
    for name, options in FILTERS.items():
        differ[name] = sum(found(first, t, **options) != found(second, t, **options) for t in texts)
        log(f"{name}: {len(texts)} queries warm; {differ[name]} found differently")
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        for round_ in range(args.rounds):
            for i, text in enumerate(texts):
                for way in ways if (i + round_) % 2 else reversed(ways):
                    ways[way]()
                    began = time.perf_counter()
                    store.search(text, **options)
                    seconds[way].append(time.perf_counter() - began)
        results[name] = {way: summary_ms(s) for way, s in seconds.items()}
        log(f"{name}: {json.dumps(results[name])}")
    store.close()
    print(
        json.dumps(
            {
                "benchmark": "beside",
                "source": source_state(),
                "machine": machine(),
                "load_average": list(os.getloadavg()),
                "store": str(args.directory),
                "numpy": args.numpy,
                "split_from": split_from if args.split else None,
                "found_differently": differ,
                "search_ms": results,
            }
        )
    )


if __name__ == "__main__":
    main()
