"""Aggregate write throughput from concurrent writer processes, on SQLite and PostgreSQL.

    python bench/writers.py [--writers 1,4,8] [--seconds 10] [--batch 100]
                            [--modes batch,single] [--embedder default|static|hash|none]
                            [--database-url postgresql://USER:PASSWORD@HOST/DB] [--no-sqlite]
                            [--home DIR] [--seed 1] [--pool 3000] [--no-ceiling]

For each backend, mode and number of writers N, a fresh store is made — SQLite: a file in
a directory under ``--home``; PostgreSQL (with ``--database-url``): the schema
``writers_<mode>_<N>`` of that database (``<schema>_<mode>_<N>`` when the URL names one),
dropped first so that a rerun starts clean — with ``bench/store.py``'s projects. Then N
processes each open it with ``retain.open(location, home=DIR)``: a service of their own
(their own connection pool on PostgreSQL), with the embedder of ``DIR/config.toml``
(none for ``--embedder default``: a fresh install's static model). Each writer first
prepares ``--pool`` of ``store.py``'s synthetic memories, writes one unmeasured warm-up
memory (the embedder is loaded, the connection made), waits for the others, and from a
common start writes distinct memories (names ``w<writer>-<n>``, ``load="search"`` so that
the inline budget plays no part; a memory past the pool reuses a prepared text with a
description of its own) for ``--seconds``:

* ``batch``: ``write_many`` of ``--batch`` requests, one transaction each;
* ``single``: ``write``, one memory per transaction.

The aggregate rate is every memory written after the start over the time from the start
to the last writer's end (a writer ends after the call that crosses ``--seconds``).
Latency is per call (a batch, or one write), over all writers. A call refused as busy is
counted and not retried. Afterwards the store is opened once more: ``verify()`` (search
index, vectors, event chain) must be ok and the store must hold every memory written.

Where the CPU went (``cpu``, Linux): the machine's busy share over the run (from
``/proc/stat``), the writer processes' own CPU time per write, and the rest of the
machine's per write (the database server when it runs on this machine, and anything
else). With ``cores`` cores, ``cores / (writers + rest)`` writes per millisecond is the
most this machine could do with the server beside the writers.

The ceiling (``ceiling``, PostgreSQL, ``batch``): just before the N writers write,
``bench/pgvector_insert.py``'s raw inserts of the store's vectors under an HNSW index
of retain's settings, from N connections at once, in batches of ``--batch``, on the same
server (``--no-ceiling`` skips it). ``ratio`` is the writers' rate over it.

Target (from the issue): with 8 writers on PostgreSQL, in batches, ``ratio`` ≥ 0.8
(``single`` is reported beside it, without a target).

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from importlib import metadata
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

import retain
from retain.errors import IntegrityFailed, StoreBusy
from retain.results import WriteRequest

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import pgvector_insert  # noqa: E402 - bench/ is put on the path just above
from scale import (  # noqa: E402
    EMBEDDERS,
    fresh_schema,
    schema_url,
    server_info,
    shown_url,
    write_config,
)
from store import (  # noqa: E402
    PROJECTS,
    Corpus,
    log,
    machine,
    machine_busy_s,
    source_state,
    summary_ms,
)

TARGET_WRITERS = 8
TARGET_RATIO = 0.8  # TARGET_WRITERS writers' writes/s over raw pgvector's, on PostgreSQL
CEILING_ROWS = 20_000  # vectors in the raw table before the ceiling's are inserted
CEILING_MEASURE = 8_000  # vectors the ceiling times
TARGET_MODE = "batch"
MODES = ("batch", "single")
BACKENDS = ("sqlite", "postgresql")
STARTED = time.perf_counter()
READY_TIMEOUT_S = 300.0  # how long the writers may take to prepare before the start


# -- one writer (a process of its own) -----------------------------------------------------


def prepare(corpus: Corpus, writer: int, count: int) -> list[WriteRequest]:
    """``count`` of the corpus's memories for one writer, named for it, in the search tier."""
    first = (writer + 1) * 10_000_000  # writers draw from distinct stretches of the corpus
    return [
        replace(doc.request(), name=f"w{writer}-{i}", load="search")
        for i, doc in enumerate(corpus.docs(first, first + count))
    ]


def nth(pool: Sequence[WriteRequest], writer: int, n: int) -> WriteRequest:
    """The writer's ``n``-th memory: the pool's, then a pool text with its own name and
    description once the pool is used up."""
    request = pool[n % len(pool)]
    if n < len(pool):
        return request
    return replace(
        request, name=f"w{writer}-{n}", description=f"{request.description} (again, {n})"
    )


def writer_main(
    writer: int,
    location: str,
    home: str,
    mode: str,
    batch: int,
    seconds: float,
    seed: int,
    pool_size: int,
    ready: Barrier,
    go: Event,
    start: Any,
    results: Any,
) -> None:
    """Write for ``seconds`` from the common start; put this writer's figures on ``results``."""
    try:
        pool = prepare(Corpus(seed), writer, pool_size)
        store = retain.open(location, home=home)
        warm = WriteRequest(
            name=f"w{writer}-warm", description="Warm-up", body="warm-up", load="search"
        )
        store.write_many([warm])
        ready.wait(READY_TIMEOUT_S)
        go.wait(READY_TIMEOUT_S)
        deadline = start.value + seconds
        cpu = time.process_time()
        latencies: list[float] = []
        written = busy = n = 0
        now = time.monotonic()
        while now < deadline:
            size = batch if mode == "batch" else 1
            requests = [nth(pool, writer, n + i) for i in range(size)]
            n += size
            began = time.monotonic()
            try:
                if mode == "batch":
                    store.write_many(requests)
                else:
                    r = requests[0]
                    store.write(
                        r.name,
                        description=r.description,
                        body=r.body,
                        tags=r.tags,
                        priority=r.priority,
                        project=r.project,
                        load="search",
                    )
                written += size
            except StoreBusy:
                busy += 1
            now = time.monotonic()
            latencies.append(now - began)
        cpu = time.process_time() - cpu
        store.close()
        results.put(
            {
                "writer": writer,
                "writes": written,
                "busy": busy,
                "end": now,
                "cpu_s": cpu,
                "latencies": latencies,
                "pid": os.getpid(),
            }
        )
    except BaseException as exc:  # the parent reports it and fails the run
        results.put({"writer": writer, "error": f"{type(exc).__name__}: {exc}"})
        ready.abort()  # the parent, and the others, stop waiting for this writer
        raise


# -- one run: a backend, a mode, N writers ----------------------------------------------------


def fresh_store(
    args: argparse.Namespace, backend: str, mode: str, n: int
) -> tuple[str, Path, int | None]:
    """A new, empty store for one run: its location, its home (settings) directory and its
    embedder's dimensions (None without one)."""
    home = args.home / f"writers-{backend}-{mode}-{n}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    write_config(home, args.embedder)
    if backend == "postgresql":
        location = schema_url(args.database_url, f"{mode}_{n}", default="writers")
        fresh_schema(location)
    else:
        location = str(home / "retain.db")
    store = retain.open(location, home=home)
    for project in PROJECTS:
        store.add_project(project)
    embedder = store.embedder.embedder
    store.close()
    return location, home, None if embedder is None else embedder.dim


def run(args: argparse.Namespace, backend: str, mode: str, n: int) -> dict[str, Any]:
    """N writers on a fresh store for ``--seconds``; the rates, latencies and the check."""
    location, home, dim = fresh_store(args, backend, mode, n)
    ceiling = None
    if backend == "postgresql" and mode == "batch" and dim is not None and args.ceiling:
        log(f"raw pgvector, {n} client(s), the ceiling")
        raw = pgvector_insert.measured(
            args.database_url,
            dim=dim,
            rows=CEILING_ROWS,
            measure=CEILING_MEASURE,
            batch=args.batch,
            clients=n,
            bare=False,
        )
        ceiling = {"clients": n, "dim": dim, **raw["hnsw"]}
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(n + 1)
    go = context.Event()
    start = context.Value("d", 0.0)
    results = context.Queue()
    processes = [
        context.Process(
            target=writer_main,
            args=(
                k,
                location,
                str(home),
                mode,
                args.batch,
                args.seconds,
                args.seed,
                args.pool,
                ready,
                go,
                start,
                results,
            ),  # fmt: skip
        )
        for k in range(n)
    ]
    for process in processes:
        process.start()
    try:
        ready.wait(READY_TIMEOUT_S)
    except threading.BrokenBarrierError:
        error = results.get(timeout=10.0)
        for process in processes:
            process.join(timeout=10.0)
        raise RuntimeError(f"{backend} {mode} x{n}: a writer failed: {error}") from None
    load_before = os.getloadavg()
    busy_before = machine_busy_s()
    start.value = time.monotonic()
    go.set()
    began = start.value
    reports = [results.get(timeout=READY_TIMEOUT_S + args.seconds * 10) for _ in processes]
    busy = machine_busy_s() - busy_before
    for process in processes:
        process.join()
    load_after = os.getloadavg()
    failed = [r["error"] for r in reports if "error" in r]
    if failed:
        raise RuntimeError(f"{backend} {mode} x{n}: a writer failed: {failed[0]}")

    seconds = max(r["end"] for r in reports) - began
    writes = sum(r["writes"] for r in reports)
    latencies = [s for r in reports for s in r["latencies"]]
    log(f"{backend} {mode} x{n}: {writes} writes in {seconds:.2f} s, {writes / seconds:.0f}/s")
    ratio = None
    if ceiling is not None:
        ratio = round(writes / seconds / ceiling["rows_per_s"], 3)
        log(f"  {ratio:.2f} of raw pgvector's {ceiling['rows_per_s']:.0f} rows/s")
    writers_cpu = sum(r["cpu_s"] for r in reports)
    cores = os.cpu_count() or 1

    checked = time.perf_counter()
    store = retain.open(location, home=home)
    try:
        report = store.verify()
    except IntegrityFailed as failed:  # a failed verify raises, carrying its report
        report = failed.report
    memories = store.status().memories
    store.close()
    verify_s = time.perf_counter() - checked
    expected = writes + n  # and one warm-up memory a writer
    if not report.ok or memories != expected:
        log(f"{backend} {mode} x{n}: verify ok={report.ok}, {memories}/{expected} memories")
    return {
        "writers": n,
        "writes": writes,
        "seconds": round(seconds, 3),
        "writes_per_s": round(writes / seconds, 1),
        "ceiling": ceiling,
        "ratio": ratio,
        "per_writer_writes_per_s": sorted(
            round(r["writes"] / (r["end"] - began), 1) for r in reports
        ),
        "calls": len(latencies),
        "busy": sum(r["busy"] for r in reports),
        "latency_ms": summary_ms(latencies) if latencies else None,
        "verify": {
            "ok": report.ok,
            "chain_ok": report.chain_ok,
            "events": report.events,
            "memories": memories,
            "memories_expected": expected,
            "vectors": report.vectors,
            "problems": list(report.problems),
            "seconds": round(verify_s, 2),
        },
        # Where the machine's CPU went while writing: the writer processes' own time, and the
        # rest (the database server on this machine, and anything else running).
        "cpu": {
            "cores": cores,
            "busy_share": round(busy / (seconds * cores), 3),
            "writers_ms_per_write": round(1000 * writers_cpu / writes, 3) if writes else None,
            "rest_ms_per_write": round(1000 * (busy - writers_cpu) / writes, 3) if writes else None,
        },
        "load_average": {  # other work on the machine skews the rates
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in load_after],
        },
    }


# -- the run ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--writers", default="1,4,8", help="writer counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="writing time per run")
    parser.add_argument("--batch", type=int, default=100, help="requests per write_many")
    parser.add_argument("--modes", default=",".join(MODES), help="batch, single or both")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="default")
    parser.add_argument(
        "--database-url", metavar="URL", help="also a PostgreSQL database (postgresql://...)"
    )
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--home", type=Path, help="where stores and settings go (a temp dir)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pool", type=int, default=3000, help="memories a writer prepares")
    parser.add_argument(
        "--no-ceiling",
        dest="ceiling",
        action="store_false",
        help="no raw pgvector ceiling before PostgreSQL's batch runs",
    )
    args = parser.parse_args(argv)
    args.writer_list = [int(s) for s in args.writers.split(",") if s.strip()]
    if not args.writer_list or min(args.writer_list) < 1:
        parser.error("--writers needs one or more positive whole numbers")
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not args.mode_list or any(m not in MODES for m in args.mode_list):
        parser.error(f"--modes takes {' and/or '.join(MODES)}")
    if args.database_url and not args.database_url.startswith(("postgres://", "postgresql://")):
        parser.error("--database-url needs a postgres:// or postgresql:// URL")
    args.backend_list = [
        b
        for b in BACKENDS
        if (b == "sqlite" and not args.no_sqlite) or (b != "sqlite" and args.database_url)
    ]
    if not args.backend_list:
        parser.error("--no-sqlite needs --database-url")
    for option in ("seconds", "batch", "pool"):
        if getattr(args, option) <= 0:
            parser.error(f"--{option} must be positive")
    return args


def versions() -> dict[str, str | None]:
    """The packages the writes go through."""
    found: dict[str, str | None] = {}
    for package in ("psycopg", "psycopg-pool", "numpy"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now(UTC)
    source = source_state()
    temporary = args.home is None
    args.home = Path(tempfile.mkdtemp(prefix="retain-writers-")) if temporary else args.home
    args.home.mkdir(parents=True, exist_ok=True)
    postgres = "postgresql" in args.backend_list
    server = server_info(args.database_url) if postgres else None
    log(f"stores under {args.home}; embedder {args.embedder}; backends {args.backend_list}")
    results: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        for backend in args.backend_list:
            for mode in args.mode_list:
                for n in args.writer_list:
                    log(f"{backend} {mode}: {n} writer(s) for {args.seconds:g} s")
                    measured = run(args, backend, mode, n)
                    results.setdefault(backend, {}).setdefault(mode, {})[str(n)] = measured
    finally:
        if temporary:
            shutil.rmtree(args.home, ignore_errors=True)
    checked = results.get("postgresql", {}).get(TARGET_MODE, {}).get(str(TARGET_WRITERS))
    meets = (
        {"postgresql": {"ratio_8_writers": checked["ratio"] >= TARGET_RATIO}}
        if checked is not None and checked["ratio"] is not None
        else {}
    )
    verified = all(
        r["verify"]["ok"] and r["verify"]["memories"] == r["verify"]["memories_expected"]
        for modes in results.values()
        for runs in modes.values()
        for r in runs.values()
    )
    shown = [shown_url(a) if "://" in a else a for a in (argv or sys.argv[1:])]
    report = {
        "benchmark": "bench/writers.py",
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/writers.py", *shown]),
        "machine": {**machine(), **versions()},
        "source": source,
        "database": (
            {"url": shown_url(args.database_url), **server} if server is not None else None
        ),
        "parameters": {
            "writers": args.writer_list,
            "modes": args.mode_list,
            "seconds": args.seconds,
            "batch": args.batch,
            "embedder": args.embedder,
            "seed": args.seed,
            "pool": args.pool,
            "backends": args.backend_list,
        },
        "targets": {
            "postgresql": {
                "writers": TARGET_WRITERS,
                "mode": TARGET_MODE,
                "ratio_to_raw_pgvector": TARGET_RATIO,
            }
        },
        "results": results,
        "writes_per_s": {
            backend: {
                mode: {n: r["writes_per_s"] for n, r in runs.items()}
                for mode, runs in modes.items()
            }
            for backend, modes in results.items()
        },
        "verified": verified,
        "meets_targets": meets,
        "seconds": round(time.perf_counter() - STARTED, 1),
    }
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
