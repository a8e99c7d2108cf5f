"""What erasure costs at scale: ``forget`` and the store's compaction at 100k memories.

    python bench/forget.py [--size 100000] [--forgets 20] [--seed 1] [--batch 5000]
                           [--embedder default|static|hash|none] [--home DIR]
                           [--database-url postgresql://USER:PASSWORD@HOST/DB]
                           [--searching]

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

With ``--searching``, a thread of the same process searches back to back meanwhile, as
a server's other requests do (``store.py``'s rare/medium query words, ``limit`` 10), and
for as long again (up to a minute) with nothing else running: ``search_idle_ms`` and
``search_during_ms`` (the second for every erasure, compaction and forget together:
a search held up by one shows in its ``max``). On a store past ``[search] ann_from``, a
compaction builds the vector codes again while those searches go on. The erasures'
and compactions' own times are then shared with the searches (``searching`` in the
JSON): compare them with a run without.

Every certificate must say ``verified`` for the rows, events and vectors, and (for
``forget``) for the store's files; a run where one does not is reported as failed. The
store's size (file, log) is read before and after. Progress goes to stderr; the last line
of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import retain

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from store import (  # noqa: E402 - bench/ is on the path
    PROJECTS,
    Corpus,
    log,
    machine,
    make_queries,
    summary_ms,
)

IDLE_S = 60.0  # the longest the searches alone are timed (--searching)


class Searching:
    """A thread searching ``mem`` back to back, each search's time kept, while it runs;
    a search that fails fails the ``with`` block."""

    def __init__(self, mem: Any, texts: list[str]) -> None:
        self.mem = mem
        self.texts = texts
        self.seconds: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._failed: BaseException | None = None

    def __enter__(self) -> Searching:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._failed is not None:
            raise RuntimeError("a search failed meanwhile") from self._failed

    def _run(self) -> None:
        try:
            for text in itertools.cycle(self.texts):
                if self._stop.is_set():
                    return
                started = time.perf_counter()
                self.mem.search(text, limit=10)
                self.seconds.append(time.perf_counter() - started)
        except BaseException as exc:
            self._failed = exc


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

    def forgotten() -> None:
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

    searched: dict[str, Any] = {}
    if args.searching:
        sample = corpus.docs(0, min(args.size, 2000))
        texts = make_queries(corpus, sample, 50, random.Random(args.seed)).sets["rare"]
        for text in texts[:10]:  # (unmeasured: the first searches open what they read)
            mem.search(text, limit=10)
        started = time.perf_counter()
        with Searching(mem, texts) as during:
            forgotten()
        with Searching(mem, texts) as alone:
            time.sleep(min(time.perf_counter() - started, IDLE_S))
        searched = {
            "search_idle_ms": summary_ms(alone.seconds),
            "search_during_ms": summary_ms(during.seconds),
        }
    else:
        forgotten()
    report = mem.verify()
    result = {
        "bench": "forget",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "backend": "postgres" if args.database_url else "sqlite",
        "embedder": args.embedder,
        "size": args.size,
        "forgets": args.forgets,
        "searching": args.searching,
        "load_s": round(load_s, 1),
        "events": mem.status().events,
        "size_bytes_before": size_before,
        "size_bytes_after": mem.backend.size_bytes(),
        "erase_ms": summary_ms(timings["erase"]),
        "compact_ms": summary_ms(timings["compact"]),
        "forget_ms": summary_ms(timings["forget"]),
        **searched,
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
    parser.add_argument(
        "--searching", action="store_true", help="search on a thread of its own meanwhile"
    )
    result = run(parser.parse_args())
    print(json.dumps(result))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
