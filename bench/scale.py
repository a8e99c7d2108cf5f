"""Synthetic scale benchmark of hybrid search (lexical + semantic), through the public API.

    python bench/scale.py [--sizes 100000,1000000] [--queries 200] [--seed 1]
                          [--embedder default|static|hash|none] [--home DIR] [--batch 5000]
                          [--no-reindex]
                          [--database-url postgresql://USER:PASSWORD@HOST/DB]

For each size a fresh store is loaded with ``bench/store.py``'s synthetic corpus (the same
English-like, Zipf-distributed, seed-deterministic memories), then measured:

* loading: ``write_many`` in batches of ``--batch`` requests, one transaction each, with
  ``load="search"``. Writing embeds every memory, so the rate includes the embedder. Each
  batch's time is split at the write progress callbacks into *apply* (checking and staging
  the requests), *index* (inserting rows, full-text index, search keys and vectors: the
  embedding) and *commit*;
* index build: ``store.reindex()`` (every memory embedded again), when the store has it,
  unless ``--no-reindex`` (it doubles the time of a 1M run on PostgreSQL);
* serving, in a fresh process (this script again, in a hidden ``--measure-only`` mode), so
  that memory use is that of a server opening an existing store and not of the loader: the
  store is opened, the embedder loaded, one warm-up search run (the first search reads
  every vector into memory: ``first_search_ms`` is the vector load), then the query sets
  of ``store.py``: rare/medium words, the corpus's most common words, both mixed (the
  targets, and ``overall``), and words no memory holds (extra). RSS is read after the
  searches, in MiB: current (``VmRSS``, split into ``anon`` and ``file``), peak
  (``ru_maxrss``) and this process image's own peak (``hwm``, ``VmHWM``; Linux carries
  ``ru_maxrss`` over ``exec``, so it starts at the loader's RSS). The RSS target is
  checked against ``hwm``.

Query words are drawn from a sample of up to 20,000 memories spread evenly over the store.
``--embedder default`` writes no configuration (a fresh install's: the static model);
``static``, ``hash`` and ``none`` set ``[search] embedder`` in the store's ``config.toml``.

Targets (from the issue, for this 2-core machine): search p50 ≤ 15 ms at 100k and
≤ 60 ms at 1M (over the rare, common and mixed sets together), peak RSS ≤ 1.5 GB at 1M with
256-dimensional vectors. Sizes other than 100,000 and 1,000,000 are measured without targets.

With ``--database-url`` the stores are in PostgreSQL (pgvector): each size's store is the
schema ``bench_<size>`` of that database (``<schema>_<size>`` when the URL names a
``schema``), dropped and made again at the start of the size so that a rerun starts clean.
Loading and the measuring process open that URL; the settings (``config.toml``, the
embedder) and the query sets still live in the size's directory under ``--home``. Semantic
search is then pgvector's HNSW index, made with the first vector and filled as memories
are written, so ``first_search_ms`` is no vector load (the vectors stay in the server) and
the RSS target does not apply: RSS is reported, and so are the server's version and
settings and the sizes of the store's tables and indexes. The PostgreSQL target (from the
issue): search p50 ≤ 20 ms at 1M with HNSW; 100k is measured without one.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

import retain

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from store import (  # noqa: E402 - bench/ is put on the path just above
    PROJECTS,
    Corpus,
    Doc,
    log,
    machine,
    make_queries,
    search_summary,
    source_state,
    summary_ms,
)

# -- targets (from the issue) ------------------------------------------------------------

GB = 1e9
MIB = 2**20
TARGETS: dict[int, dict[str, float]] = {
    100_000: {"search_p50_ms": 15.0},
    1_000_000: {"search_p50_ms": 60.0, "rss_peak_mib": round(1.5 * GB / MIB, 1), "dim": 256},
}
POSTGRES_TARGETS: dict[int, dict[str, float]] = {  # with --database-url: HNSW in the server
    1_000_000: {"search_p50_ms": 20.0},
}

EMBEDDERS = ("default", "static", "hash", "none")
QUERY_SAMPLE = 20_000  # memories the query words are drawn from, spread over the store
TARGET_SETS = ("rare", "common", "mixed")  # the sets the search target is measured over
WARM_QUERY = "deploy the new release to the server"  # the one search before the measured ones
QUERIES_FILE = "queries.json"
STARTED = time.perf_counter()
PROGRESS_EVERY_S = 15.0  # seconds between progress lines of a long step

# -- loading ------------------------------------------------------------------------------


def write_config(directory: Path, embedder: str) -> None:
    """The store's ``config.toml``: none for ``default``, else ``[search] embedder``."""
    path = directory / "config.toml"
    if embedder == "default":
        path.unlink(missing_ok=True)
        return
    path.write_text(f'[search]\nembedder = "{embedder}"\n', encoding="utf-8")


def fresh_directory(home: Path, size: int) -> Path:
    """The directory of one size's store, emptied of a previous run's files."""
    directory = home / f"scale-{size}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


# -- PostgreSQL (--database-url) ------------------------------------------------------------


def schema_url(database_url: str, suffix: object, default: str = "bench") -> str:
    """One store in the database: the schema ``<default>_<suffix>`` (``bench_<size>``), or
    ``<schema>_<suffix>`` when the URL names a ``schema``."""
    parts = urlsplit(database_url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    base = next((v for k, v in query if k == "schema"), default)
    kept = [(k, v) for k, v in query if k != "schema"] + [("schema", f"{base}_{suffix}")]
    return urlunsplit(parts._replace(query=urlencode(kept)))


def shown_url(url: str) -> str:
    """A URL as it may be printed: any password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password:
        user = parts.username or ""
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{user}:***@{host}")
    query = [(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, True)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def fresh_schema(url: str) -> None:
    """Drop the schema a store URL names, with everything in it (retain makes it again)."""
    import psycopg
    from psycopg import sql

    from retain.storage.postgres import split_url

    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as con:
        con.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


SERVER_SETTINGS = (
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "maintenance_work_mem",
    "max_connections",
    "synchronous_commit",
    "fsync",
    "wal_level",
    "max_wal_size",
    "jit",
)


def server_info(url: str) -> dict[str, Any]:
    """The PostgreSQL server a URL reaches: its version, pgvector's and a few settings."""
    import psycopg

    from retain.storage.postgres import split_url

    conninfo, _ = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as con:
        version = con.execute("SHOW server_version").fetchone()
        full = con.execute("SELECT version()").fetchone()
        vector = con.execute(  # installed in this database, else the version it would get
            "SELECT coalesce(installed_version, default_version) FROM pg_available_extensions "
            "WHERE name = 'vector'"
        ).fetchone()
        settings = {
            name: str(row[0])
            for name in SERVER_SETTINGS
            if (row := con.execute(f"SHOW {name}").fetchone()) is not None
        }
    return {
        "server_version": version[0] if version else None,
        "version": full[0] if full else None,
        "pgvector": vector[0] if vector else None,
        "settings": settings,
    }


def relation_sizes(url: str) -> dict[str, float]:
    """The store's tables and indexes over 1 MiB, in MiB, largest first."""
    import psycopg

    from retain.storage.postgres import split_url

    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as con:
        rows = con.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'i', 't') "
            "ORDER BY 2 DESC",
            (schema,),
        ).fetchall()
    return {str(name): round(int(size) / MIB, 1) for name, size in rows if int(size) >= MIB}


class BatchClock:
    """A ``write_many`` progress callback that notes when each phase of a batch ends."""

    def __init__(self) -> None:
        self.start = 0.0
        self.ends: dict[str, float] = {}

    def begin(self) -> None:
        self.start = time.perf_counter()
        self.ends = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        if done >= total:
            self.ends[phase] = time.perf_counter()


def load(corpus: Corpus, size: int, batch: int, store: retain.MemoryService) -> dict[str, Any]:
    """Write ``size`` memories with ``write_many``; the rates and where the time went."""
    clock = BatchClock()
    batch_seconds: list[float] = []
    split = {"apply": 0.0, "index": 0.0, "commit": 0.0}
    generate = 0.0
    started = time.perf_counter()
    for start in range(0, size, batch):
        began = time.perf_counter()
        docs = corpus.docs(start, min(start + batch, size))
        requests = [replace(doc.request(), load="search") for doc in docs]
        generate += time.perf_counter() - began
        clock.begin()
        store.write_many(requests, progress=clock)
        end = time.perf_counter()
        batch_seconds.append(end - clock.start)
        applied = clock.ends.get("write", clock.start)
        indexed = clock.ends.get("embed", applied)
        split["apply"] += applied - clock.start
        split["index"] += indexed - applied
        split["commit"] += end - indexed
        done = start + len(requests)
        if done % (batch * 10) == 0 or done == size:
            log(
                f"  {done:>8} written, last batch {len(requests) / batch_seconds[-1]:7.0f}/s, "
                f"overall {done / sum(batch_seconds):7.0f}/s"
            )
    seconds = sum(batch_seconds)
    tenth = max(1, len(batch_seconds) // 10)
    first, last = batch_seconds[:tenth], batch_seconds[-tenth:]
    sizes = [min(batch, size - start) for start in range(0, size, batch)]
    return {
        "memories": size,
        "batch": batch,
        "seconds": round(seconds, 2),
        "wall_seconds": round(time.perf_counter() - started, 2),
        "generate_seconds": round(generate, 2),
        "per_s": round(size / seconds, 1),
        "first_tenth_per_s": round(sum(sizes[:tenth]) / sum(first), 1),
        "last_tenth_per_s": round(sum(sizes[-tenth:]) / sum(last), 1),
        "batch_ms": summary_ms(batch_seconds),
        "split_seconds": {phase: round(s, 2) for phase, s in split.items()},
    }


def build_index(store: retain.MemoryService, size: int) -> dict[str, Any]:
    """``store.reindex()`` timed, when the store has it."""
    reindex: Callable[..., Any] | None = getattr(store, "reindex", None)
    if reindex is None:
        log("  no store.reindex(): index build time not measured")
        return {"available": False, "seconds": None, "per_s": None}

    last = [time.perf_counter()]

    def progress(phase: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] >= PROGRESS_EVERY_S:
            last[0] = now
            log(f"  {phase}: {done}/{total}")

    began = time.perf_counter()
    reindex(progress=progress)
    seconds = time.perf_counter() - began
    return {"available": True, "seconds": round(seconds, 2), "per_s": round(size / seconds, 1)}


def query_sets(corpus: Corpus, size: int, count: int, seed: int) -> dict[str, Any]:
    """``store.py``'s query sets, drawn from up to ``QUERY_SAMPLE`` memories of the store."""
    sample = min(size, QUERY_SAMPLE)
    docs: list[Doc] = [corpus.doc(i * size // sample) for i in range(sample)]
    queries = make_queries(corpus, docs, count, random.Random(f"scale:{seed}:{size}"))
    return {
        "sets": queries.sets,
        "common_pool": queries.common_pool,
        "common_df_share": queries.common_df_share,
        "sampled_memories": sample,
    }


# -- measuring (in a fresh process) ----------------------------------------------------------


def rss_mib() -> dict[str, float]:
    """This process's memory, in MiB: ``current`` (``VmRSS``) and ``peak``, with detail.

    ``peak`` is ``ru_maxrss``. Linux carries ``ru_maxrss`` over ``exec``, so a child
    starts with its parent's high-water mark; ``hwm`` (``VmHWM``) counts this process
    image alone. ``anon`` and ``file`` split the current RSS (``RssAnon``, ``RssFile``).
    """
    fields = {"VmRSS": "current", "VmHWM": "hwm", "RssAnon": "anon", "RssFile": "file"}
    found: dict[str, float] = {}
    with suppress(OSError):
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            label, _, value = line.partition(":")
            if label in fields:
                found[fields[label]] = round(int(value.split()[0]) * 1024 / MIB, 1)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MIB  # kB on Linux
    return {
        "current": found.get("current", 0.0),
        "peak": round(peak, 1),
        **{name: found.get(name, 0.0) for name in ("hwm", "anon", "file")},
    }


def measure(directory: Path, url: str | None = None) -> dict[str, Any]:
    """Open the store in ``directory`` (or at ``url``, with the settings of ``directory``)
    as a server would and time its searches."""
    spec = json.loads((directory / QUERIES_FILE).read_text(encoding="utf-8"))
    sets: dict[str, list[str]] = spec["sets"]
    rss: dict[str, dict[str, float]] = {"started": rss_mib()}

    began = time.perf_counter()
    store = retain.open(url or directory / "retain.db", home=directory)
    open_ms = (time.perf_counter() - began) * 1000.0
    began = time.perf_counter()
    loaded = store.embedder
    embedder_ms = (time.perf_counter() - began) * 1000.0
    dim = loaded.embedder.dim if loaded.embedder is not None else 0
    rss["opened"] = rss_mib()

    load_before = os.getloadavg()
    warm = "connects, reads the index" if url else "loads the vectors"
    log(f"measure: opened in {open_ms:.0f} ms; warm-up search ({warm})")
    began = time.perf_counter()
    first = store.search(WARM_QUERY)
    first_ms = (time.perf_counter() - began) * 1000.0
    rss["first_search"] = rss_mib()
    log(f"measure: first search {first_ms:.0f} ms, RSS {rss['first_search']}")

    searches: dict[str, Any] = {}
    targeted: list[float] = []
    senses: dict[str, int] = {}
    for kind, texts in sets.items():
        seconds: list[float] = []
        hits: list[int] = []
        for text in texts:
            began = time.perf_counter()
            result = store.search(text)
            seconds.append(time.perf_counter() - began)
            hits.append(len(result.hits))
            for hit in result.hits:
                for sense in hit.senses:
                    senses[sense] = senses.get(sense, 0) + 1
        if kind in TARGET_SETS:
            targeted.extend(seconds)
        searches[kind] = search_summary(seconds, hits, texts, examples=2, slowest=3)
        log(
            f"measure: {len(texts)} {kind}: p50 {searches[kind]['p50']:.2f} ms, "
            f"p95 {searches[kind]['p95']:.2f} ms"
        )
    searches["overall"] = {**summary_ms(targeted), "sets": list(TARGET_SETS)}
    rss["searched"] = rss_mib()
    load_after = os.getloadavg()
    status = store.status()
    store.close()
    return {
        "open_ms": round(open_ms, 1),
        "embedder_load_ms": round(embedder_ms, 1),
        "first_search_ms": round(first_ms, 1),
        "search_ms": searches,
        "hit_senses": dict(sorted(senses.items())),
        "rss_mib": rss["searched"],
        "rss_mib_by_stage": rss,
        "memories": status.memories,
        "vectors": status.vectors,
        "embedder": status.embedder,
        "embedder_in_results": first.embedder,
        "degraded": status.degraded,
        "dim": dim,
        "vector_matrix_mib": round(status.vectors * dim * 4 / MIB, 1),
        "store_bytes": status.size_bytes,
        "load_average": {  # other work on the machine skews the latencies
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in load_after],
        },
    }


def measure_in_fresh_process(directory: Path, url: str | None = None) -> dict[str, Any]:
    """``measure`` run by this script in a new interpreter; its JSON result."""
    command = [sys.executable, str(Path(__file__).resolve()), "--measure-only", str(directory)]
    if url is not None:
        command += ["--database-url", url]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def targets_of(size: int, postgres: bool) -> dict[str, float]:
    """The issue's targets for a store of ``size`` on this backend (none if it names none)."""
    return (POSTGRES_TARGETS if postgres else TARGETS).get(size, {})


def verdict(size: int, measured: dict[str, Any], postgres: bool = False) -> dict[str, bool]:
    """Pass or fail of each target of this size (none for sizes the issue does not name)."""
    targets = targets_of(size, postgres)
    checks: dict[str, bool] = {}
    if "search_p50_ms" in targets:
        checks["search_p50"] = measured["search_ms"]["overall"]["p50"] <= targets["search_p50_ms"]
    if "rss_peak_mib" in targets:
        checks["rss_peak"] = measured["rss_mib"]["hwm"] <= targets["rss_peak_mib"]
    if "dim" in targets:
        checks["dim"] = measured["dim"] == targets["dim"]
    return checks


def bench_size(corpus: Corpus, size: int, args: argparse.Namespace, home: Path) -> dict[str, Any]:
    directory = fresh_directory(home, size)
    write_config(directory, args.embedder)
    url = schema_url(args.database_url, size) if args.database_url else None
    if url is not None:
        fresh_schema(url)
        log(f"size {size}: store {shown_url(url)}")
    store = retain.open(url or directory / "retain.db", home=directory)
    for project in PROJECTS:
        store.add_project(project)
    log(f"size {size}: loading in batches of {args.batch} (embedder {store.embedder.model_id})")
    loaded = load(corpus, size, args.batch, store)
    log(f"size {size}: {loaded['per_s']:.0f} memories/s, {loaded['seconds']:.1f} s")
    if args.no_reindex:
        index: dict[str, Any] = {"available": True, "skipped": True, "seconds": None}
    else:
        log(f"size {size}: index build")
        index = build_index(store, size)
    store.close()

    log(f"size {size}: drawing {args.queries} queries per set")
    queries = query_sets(corpus, size, args.queries, args.seed)
    (directory / QUERIES_FILE).write_text(json.dumps(queries), encoding="utf-8")
    tables = relation_sizes(url) if url is not None else None
    log(f"size {size}: measuring in a fresh process")
    measured = measure_in_fresh_process(directory, url)
    overall = measured["search_ms"]["overall"]
    log(
        f"size {size}: search p50 {overall['p50']:.2f} ms, p95 {overall['p95']:.2f} ms; "
        f"RSS {measured['rss_mib']['current']:.0f} MiB (peak {measured['rss_mib']['hwm']:.0f})"
    )
    return {
        "load": loaded,
        "index_build": index,
        **measured,
        "common_words": {"pool": queries["common_pool"], "df_share": queries["common_df_share"]},
        "query_sample": queries["sampled_memories"],
        **({"relations_mib": tables} if tables is not None else {}),
        "targets": targets_of(size, url is not None),
        "meets_targets": verdict(size, measured, url is not None),
    }


# -- the run ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100000,1000000", help="store sizes, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="queries per query set")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embedder", choices=EMBEDDERS, default="default")
    parser.add_argument("--home", type=Path, help="where the stores go (default: a temp dir)")
    parser.add_argument("--batch", type=int, default=5000, help="requests per write_many")
    parser.add_argument(
        "--no-reindex", action="store_true", help="skip timing store.reindex() (long at 1M)"
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="a PostgreSQL database (postgresql://...): each size is a schema of it",
    )
    parser.add_argument("--measure-only", type=Path, metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.database_url and not args.database_url.startswith(("postgres://", "postgresql://")):
        parser.error("--database-url needs a postgres:// or postgresql:// URL")
    if args.measure_only is not None:
        return args
    args.size_list = [int(s) for s in args.sizes.split(",") if s.strip()]
    if not args.size_list or min(args.size_list) < 1:
        parser.error("--sizes needs one or more positive whole numbers")
    for option in ("queries", "batch"):
        if getattr(args, option) < 1:
            parser.error(f"--{option} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.measure_only is not None:
        print(json.dumps(measure(args.measure_only, args.database_url), ensure_ascii=False))
        return 0
    started = datetime.now(UTC)
    source = source_state()
    temporary = args.home is None
    home = Path(tempfile.mkdtemp(prefix="retain-scale-")) if temporary else args.home
    home.mkdir(parents=True, exist_ok=True)
    log(f"stores under {home}; corpus seed {args.seed}; embedder {args.embedder}")
    postgres = bool(args.database_url)
    database = (
        {
            "backend": "postgresql",
            "url": shown_url(args.database_url),
            **server_info(args.database_url),
        }
        if postgres
        else {"backend": "sqlite", "sqlite": machine()["sqlite"]}
    )
    if postgres:
        log(f"PostgreSQL {database['server_version']}, pgvector {database['pgvector']}")
    corpus = Corpus(args.seed)
    results: dict[str, Any] = {}
    try:
        for size in args.size_list:
            results[str(size)] = bench_size(corpus, size, args, home)
    finally:
        if temporary:
            shutil.rmtree(home, ignore_errors=True)
    models = {r["embedder"] for r in results.values()}
    shown = [shown_url(a) if "://" in a else a for a in (argv or sys.argv[1:])]
    targets = POSTGRES_TARGETS if postgres else TARGETS
    report = {
        "benchmark": "bench/scale.py",
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/scale.py", *shown]),
        "machine": {**machine(), "numpy": np.__version__},
        "source": source,
        "backend": database["backend"],
        "database": database,
        "embedder": models.pop() if len(models) == 1 else sorted(models),
        "parameters": {
            "sizes": args.size_list,
            "queries_per_set": args.queries,
            "seed": args.seed,
            "embedder": args.embedder,
            "batch": args.batch,
            "query_sample": QUERY_SAMPLE,
            "warm_query": WARM_QUERY,
        },
        "targets": {str(size): values for size, values in targets.items()},
        "results": results,
        "meets_targets": {size: r["meets_targets"] for size, r in results.items()},
        "seconds": round(time.perf_counter() - STARTED, 1),
    }
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
