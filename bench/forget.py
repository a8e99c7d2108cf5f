"""What erasure costs at scale: ``forget`` and the store's compaction at 100k memories.

    python bench/forget.py [--size 100000] [--forgets 20] [--seed 1] [--batch 5000]
                           [--embedder default|static|hash|none] [--home DIR]
                           [--database-url postgresql://USER:PASSWORD@HOST/DB]

A fresh store is loaded with ``bench/store.py``'s synthetic corpus (``write_many`` in
batches), then ``--forgets`` memories spread over it are erased each way below, and
``--forgets`` more the other:

* ``erase``: ``forget(compact=False)`` — the erasing transaction alone (the rows, the
  events that name them, the search keys, the certificate);
* ``forget``: ``forget()`` as a user calls it — the erasure, then the store's compaction
  (SQLite: the full-text index merged, the log checkpointed and truncated; PostgreSQL:
  VACUUM of the tables it rewrites), the search of every file (every table) for the erased
  text, and the ``forget_verify`` event;
* ``compact``: ``compact()`` alone, after each ``erase``, to split the two.

Every certificate must say ``verified`` for the rows, events and vectors, and (for
``forget``) for the store's files; a run where one does not is reported as failed. The
store's size (file, log) is read before and after. Progress goes to stderr; the last line
of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import retain

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from store import PROJECTS, Corpus, log, machine, summary_ms  # noqa: E402 - bench/ is on the path


def load(mem: Any, corpus: Corpus, size: int, batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, size, batch):
        docs = corpus.docs(start, min(size, start + batch))
        mem.write_many([d.request() for d in docs])
        log(f"loaded {start + len(docs):,} of {size:,}")
    return time.perf_counter() - started


def ids_of(mem: Any, docs: list[Any]) -> list[str]:
    return [mem.get(d.name, project=d.project or "").memory.id for d in docs]


def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(args.home or tempfile.mkdtemp(prefix="retain-forget-"))
    home.mkdir(parents=True, exist_ok=True)
    if args.embedder != "default":
        (home / "config.toml").write_text(f'[search]\nembedder = "{args.embedder}"\n')
    location = args.database_url or str(home / "retain.db")
    mem = retain.open(location, home=home)
    corpus = Corpus(args.seed)
    for project in PROJECTS:
        mem.add_project(project)
    load_s = load(mem, corpus, args.size, args.batch)
    size_before = mem.backend.size_bytes()
    step = max(1, args.size // (2 * args.forgets + 1))
    docs = [corpus.doc(i * step) for i in range(1, 2 * args.forgets + 1)]
    erase_ids = ids_of(mem, docs[0::2])
    forget_ids = ids_of(mem, docs[1::2])
    timings: dict[str, list[float]] = {"erase": [], "forget": [], "compact": []}
    failed: list[dict[str, Any]] = []

    def check(cert: Any, files: bool) -> None:
        wanted = ["memories", "events", "vectors"] + (["store_files"] if files else [])
        if any(cert.places[p] != "verified" for p in wanted):
            failed.append(cert.to_dict())

    for i, memory_id in enumerate(erase_ids):
        started = time.perf_counter()
        cert = mem.forget(memory_id, reason="bench", compact=False)
        timings["erase"].append(time.perf_counter() - started)
        check(cert, False)
        started = time.perf_counter()
        mem.compact()
        timings["compact"].append(time.perf_counter() - started)
        log(f"erase {i + 1}/{len(erase_ids)}")
    for i, memory_id in enumerate(forget_ids):
        started = time.perf_counter()
        cert = mem.forget(memory_id, reason="bench")
        timings["forget"].append(time.perf_counter() - started)
        check(cert, True)
        log(f"forget {i + 1}/{len(forget_ids)}")
    report = mem.verify()
    result = {
        "bench": "forget",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "backend": "postgres" if args.database_url else "sqlite",
        "embedder": args.embedder,
        "size": args.size,
        "forgets": args.forgets,
        "load_s": round(load_s, 1),
        "events": mem.status().events,
        "size_bytes_before": size_before,
        "size_bytes_after": mem.backend.size_bytes(),
        "erase_ms": summary_ms(timings["erase"]),
        "compact_ms": summary_ms(timings["compact"]),
        "forget_ms": summary_ms(timings["forget"]),
        "verify_ok": report.ok,
        "failed_certificates": failed,
        "ok": report.ok and not failed,
    }
    mem.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--forgets", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument(
        "--embedder", default="default", choices=("default", "static", "hash", "none")
    )  # noqa: E501
    parser.add_argument("--home")
    parser.add_argument("--database-url", default=os.environ.get("RETAIN_BENCH_PG_URL"))
    result = run(parser.parse_args())
    print(json.dumps(result))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
