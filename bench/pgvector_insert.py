"""What pgvector's HNSW index costs a write on this machine, without retain.

    python bench/pgvector_insert.py --database-url postgresql://USER:PASSWORD@HOST/DB
                                    [--dim 256] [--rows 20000] [--measure 5000] [--batch 100]
                                    [--clients 1]

The floor under ``bench/writers.py``'s PostgreSQL figures: in a scratch schema of the
database (``pgvector_insert``, dropped first and at the end), a table of vectors of
``--dim`` dimensions is filled with ``--rows`` unit vectors clustered as text embeddings
are (50 centres, noise), then ``--measure`` more are inserted in batches of ``--batch``,
one transaction each, one row per vector, as retain's writes insert them — once with no
index, once under an HNSW index (cosine) of pgvector's default build settings
(``m = 16``, ``ef_construction = 64``; retain's). The server's CPU time per row is read
from the backends' own ``/proc/<pid>/stat`` when the server runs on this machine (it does
under the test suite and in ``bench/RESULTS.md``). ``--clients N`` inserts the measured
batches from N connections at once (threads; the literals are made beforehand), as N
writers would: the ceiling ``bench/writers.py --writers N`` is compared with.

With the writers' own CPU per write from ``bench/writers.py``, it bounds what a machine
of N cores can do with the server beside the writers: N / (writers + server) per ms.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from scale import server_info, shown_url  # noqa: E402 - bench/ is put on the path just above
from store import log, machine, source_state  # noqa: E402

SCHEMA = "pgvector_insert"
CENTRES = 50
NOISE = 0.7


def clustered(rng: np.random.Generator, centres: npt.NDArray[np.float32], n: int) -> list[str]:
    """``n`` unit vectors near ``centres``, as pgvector literals."""
    picked = centres[rng.integers(0, len(centres), n)]
    vectors = picked + NOISE * rng.standard_normal(picked.shape).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    form = "[" + ",".join(["%.9g"] * vectors.shape[1]) + "]"
    return [form % tuple(v.tolist()) for v in vectors]


def server_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of the server process ``pid``, if it is on this machine."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_table(
    con: psycopg.Connection[Any], args: argparse.Namespace, index: bool
) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((CENTRES, args.dim)).astype(np.float32)
    kind = f"vector({args.dim})"
    con.execute("DROP TABLE IF EXISTS v")
    con.execute(f"CREATE TABLE v (id BIGSERIAL PRIMARY KEY, embedding {kind} NOT NULL)")
    if index:
        con.execute(
            "CREATE INDEX ON v USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
    insert = f"INSERT INTO v(embedding) SELECT e::{kind} FROM unnest(%s::text[]) e"
    for start in range(0, args.rows, 1000):
        con.execute(insert, (clustered(rng, centres, min(1000, args.rows - start)),))
        con.commit()
    batches = [
        clustered(rng, centres, min(args.batch, args.measure - start))
        for start in range(0, args.measure, args.batch)
    ]
    connections = [con] + [
        psycopg.connect(args.database_url, options=f"-c search_path={search_path(con)}")
        for _ in range(args.clients - 1)
    ]
    pids = [c.info.backend_pid for c in connections]
    cpu_before = [server_cpu_s(pid) for pid in pids]
    began = time.perf_counter()
    with ThreadPoolExecutor(len(connections)) as pool:
        for done in [
            pool.submit(insert_each, c, insert, batches[i :: len(connections)])
            for i, c in enumerate(connections)
        ]:
            done.result()
    seconds = time.perf_counter() - began
    cpu_after = [server_cpu_s(pid) for pid in pids]
    for other in connections[1:]:
        other.close()
    cpu = None
    if None not in cpu_before and None not in cpu_after:
        cpu = sum(a - b for a, b in zip(cpu_after, cpu_before, strict=True))
    name = "hnsw" if index else "no_index"
    per_row_ms = 1000 * seconds / args.measure
    log(f"{name}: {args.measure / seconds:.0f} rows/s, {per_row_ms:.3f} ms a row")
    return {
        "rows_per_s": round(args.measure / seconds, 1),
        "ms_per_row": round(1000 * seconds / args.measure, 3),
        "server_cpu_ms_per_row": None if cpu is None else round(1000 * cpu / args.measure, 3),
    }


def insert_each(con: psycopg.Connection[Any], insert: str, batches: list[list[str]]) -> None:
    """Each batch in a transaction of its own."""
    for batch in batches:
        con.execute(insert, (batch,))
        con.commit()


def search_path(con: psycopg.Connection[Any]) -> str:
    row = con.execute("SHOW search_path").fetchone()
    return str(row[0]).replace(" ", "") if row else SCHEMA


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--rows", type=int, default=20_000, help="vectors in the table first")
    parser.add_argument("--measure", type=int, default=5_000, help="vectors inserted, timed")
    parser.add_argument("--batch", type=int, default=100, help="vectors a transaction")
    parser.add_argument("--clients", type=int, default=1, help="connections inserting at once")
    return parser.parse_args(argv)


def measured(
    url: str, *, dim: int, rows: int, measure: int, batch: int, clients: int, bare: bool = True
) -> dict[str, Any]:
    """The rows/s and the server's CPU a row of each table (no index, when ``bare``; under
    HNSW), in a scratch schema of ``url`` dropped first and at the end."""
    args = argparse.Namespace(
        database_url=url, dim=dim, rows=rows, measure=measure, batch=batch, clients=clients
    )
    with psycopg.connect(url) as con:
        con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        con.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        con.execute(f"CREATE SCHEMA {SCHEMA}")
        extension = con.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        ).fetchone()
        con.execute(f"SET search_path TO {SCHEMA}, {extension[0] if extension else 'public'}")
        con.commit()
        try:
            results = {"no_index": measure_table(con, args, False)} if bare else {}
            results["hnsw"] = measure_table(con, args, True)
        finally:
            con.rollback()
            con.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
            con.commit()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = {k: getattr(args, k) for k in ("dim", "rows", "measure", "batch", "clients")}
    results = measured(args.database_url, **settings)
    print(
        json.dumps(
            {
                "benchmark": "pgvector_insert",
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": machine(),
                "source": source_state(),
                "server": server_info(args.database_url),
                "database": shown_url(args.database_url),
                "psycopg": metadata.version("psycopg"),
                "settings": settings,
                "results": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
