"""What SQLite's page cache per connection buys a search and a bulk write, and costs in memory.

    python bench/page_cache.py STORE_DIR [--sizes-kib 65536,4096] [--rows 200000]

``STORE_DIR`` is a store ``bench/cold.py`` loaded (its ``retain.db`` and ``queries.json``).
For each cache size, in a new process each: the store's query sets searched once to warm
it, then twice timed (p50, p95), and the process's peak RSS with its anonymous part (the
page cache is anonymous memory; the index beside the file is mapped); then a fresh store
in a temporary folder loaded in batches of 10,000 of ``bench/store.py``'s corpus up to
``--rows`` (``ann_from = 0``: no vector index), memories/s per batch. The size is set
through ``retain.storage.sqlite._CACHE_KIB``, the constant every connection reads.

Progress goes to stderr; stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import rss_mib  # noqa: E402
from store import Corpus, log, machine, source_state  # noqa: E402


def searches(directory: Path) -> dict[str, Any]:
    import retain
    from cold import searched

    spec = json.loads((directory / "queries.json").read_text(encoding="utf-8"))
    store = retain.open(directory / "retain.db", home=directory)
    searched(store, spec)  # once to warm the cache, then twice timed
    seconds = searched(store, spec)[0] + searched(store, spec)[0]
    store.close()
    ordered = sorted(seconds)
    return {
        "p50_ms": round(statistics.median(seconds) * 1000, 2),
        "p95_ms": round(ordered[int(len(ordered) * 0.95)] * 1000, 2),
        "rss_mib": {k: v for k, v in rss_mib().items() if k in ("hwm", "anon")},
    }


def writes(rows: int) -> dict[str, Any]:
    import retain

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        (home / "config.toml").write_text("[search]\nann_from = 0\n", encoding="utf-8")
        store = retain.open(home / "retain.db", home=home)
        for project in ("webdev", "infra", "research"):
            store.add_project(project)
        corpus, rates = Corpus(1), []
        for start in range(0, rows, 10_000):
            requests = [d.request() for d in corpus.docs(start, start + 10_000)]
            began = time.perf_counter()
            store.write_many(requests)
            rates.append(round(len(requests) / (time.perf_counter() - began)))
        store.close()
    return {"per_s": rates, "median_per_s": statistics.median(rates)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--sizes-kib", default="65536,4096")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)  # KIB, what
    args = parser.parse_args()
    if args.measure:
        import retain.storage.sqlite

        retain.storage.sqlite._CACHE_KIB = int(args.measure[0])
        done = searches(args.store) if args.measure[1] == "search" else writes(args.rows)
        print(json.dumps(done))
        return 0
    results: dict[str, Any] = {}
    for kib in args.sizes_kib.split(","):
        results[kib] = {}
        for what in ("search", "write"):
            command = [sys.executable, __file__, str(args.store), "--rows", str(args.rows)]
            done = subprocess.run(
                [*command, "--measure", kib, what], stdout=subprocess.PIPE, text=True, check=True
            )
            results[kib][what] = json.loads(done.stdout)
            log(f"cache {kib} KiB: {what}: {results[kib][what]}")
    print(
        json.dumps(
            {
                "benchmark": "page_cache",
                "source": source_state(),
                "machine": machine(),
                "store": str(args.store),
                "results": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
