"""What starting retain costs: `import retain`, `retain --help`, `retain add`, `retain get`,
and with ``--search`` a whole `retain search` of a large store.

Each case is a fresh process, run ``--runs`` times (default 10), interleaved round by
round with a bare ``python -c pass`` so that a busy moment of a shared machine falls on
every case alike; one round of warm-up first (the page cache). For each case: the
median, lowest and highest wall time, and the CPU time (user + system) the process
itself used, from ``os.wait4``'s resource usage, which another process's load does not
inflate as it inflates wall time; and each median's ratio to ``python -c pass``'s.

    .venv/bin/python bench/cli_start.py            # JSON on stdout
    .venv/bin/python bench/cli_start.py --runs 20
    .venv/bin/python bench/cli_start.py --compare /tmp/old/src   # and another tree
    .venv/bin/python bench/cli_start.py --search /tmp/cold/cold-100000

``--compare DIR`` runs every case of retain from ``DIR`` too (a ``src`` directory of
another commit, first on ``PYTHONPATH``), in the same rounds, so both trees meet the
same moments of a busy machine; its results are under ``compared``.

The targets (issue 14): ``import retain`` <= 80 ms, ``retain --help`` <= 120 ms,
``retain add`` and ``retain get`` <= 200 ms, each a median of wall time. The store is
a fresh SQLite file in a temporary home; ``add`` writes a new memory each run (its
vector made by the default static model), ``get`` reads one back.

``--search HOME`` adds ``retain search`` of the store under ``HOME`` (``--home HOME``),
asked ``SEARCHED`` in JSON: every tree searches that one store, which it does not
change. ``bench/cold.py --sizes 100000 --home DIR`` makes one at ``DIR/cold-100000``,
where issue 19's target for the whole command is 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGETS_MS = {"import retain": 80, "retain --help": 120, "retain add": 200, "retain get": 200}
PACKAGES = ("retain", "numpy", "click", "rich", "PyYAML", "fastapi", "mcp")
SEARCHED = "deploy the new release to the server"  # bench/cold.py's warm query


def retain_command() -> list[str]:
    """The console script beside this interpreter, as a user runs it."""
    script = Path(sys.executable).parent / "retain"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from retain.doors.cli import main; main()"]


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process; it must succeed."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read() if child.stderr else b""
    if child.stderr:
        child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"{argv} exited {child.returncode}: {error.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def summary(values: list[float]) -> dict[str, float]:
    ms = sorted(v * 1000 for v in values)
    return {
        "median_ms": round(statistics.median(ms), 1),
        "min_ms": round(ms[0], 1),
        "max_ms": round(ms[-1], 1),
    }


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def commit() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def environment(home: str, source: str | None) -> dict[str, str]:
    env = {**os.environ, "RETAIN_HOME": home}
    env.pop("RETAIN_DATABASE_URL", None)
    # as installed: modules compiled once (the warm-up round writes __pycache__)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")]).rstrip(":")
    return env


def table(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> dict[str, Any]:
    base_wall = statistics.median(wall["python -c pass"])
    base_cpu = statistics.median(cpu["python -c pass"])
    results: dict[str, Any] = {}
    for name in wall:
        row: dict[str, Any] = {"wall": summary(wall[name]), "cpu": summary(cpu[name])}
        row["wall_ratio_to_python"] = round(statistics.median(wall[name]) / base_wall, 2)
        row["cpu_ratio_to_python"] = round(statistics.median(cpu[name]) / base_cpu, 2)
        if name in TARGETS_MS:
            row["target_ms"] = TARGETS_MS[name]
            row["meets_target"] = row["wall"]["median_ms"] <= TARGETS_MS[name]
        results[name] = row
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--compare", metavar="DIR", help="another tree's src directory")
    parser.add_argument("--search", metavar="HOME", help="a store to time `retain search` on")
    args = parser.parse_args()
    retain = retain_command()
    trees: dict[str, str | None] = {"this": None}
    if args.compare:
        trees["compared"] = str(Path(args.compare).resolve())
    with tempfile.TemporaryDirectory(prefix="retain-start-") as scratch:
        envs = {}
        for tree, source in trees.items():
            envs[tree] = environment(os.path.join(scratch, tree), source)
            # the store exists before the first timed run (making it is not start-up)
            run([*retain, "add", "seed", "-d", "a memory to get back"], envs[tree])
        counter = iter(range(10**9))
        searched: dict[str, list[str]] = {}
        if args.search:
            home = str(Path(args.search).resolve())
            searched["retain search"] = [*retain, "search", SEARCHED, "--home", home,
                                         "--format", "json"]  # fmt: skip

        def cases() -> dict[str, list[str]]:
            n = next(counter)
            return {
                "python -c pass": [sys.executable, "-c", "pass"],
                "import retain": [sys.executable, "-c", "import retain"],
                "retain --help": [*retain, "--help"],
                "retain add": [*retain, "add", f"note-{n}", "-d", f"start-up run {n}"],
                "retain get": [*retain, "get", "seed"],
            } | searched

        load_before = os.getloadavg()
        for env in envs.values():  # warm-up round, not counted
            for argv in cases().values():
                run(argv, env)
        wall: dict[str, dict[str, list[float]]] = {tree: {} for tree in trees}
        cpu: dict[str, dict[str, list[float]]] = {tree: {} for tree in trees}
        for _ in range(args.runs):
            for name, argv in cases().items():
                for tree, env in envs.items():
                    w, c = run(argv, env)
                    wall[tree].setdefault(name, []).append(w)
                    cpu[tree].setdefault(name, []).append(c)
        load_after = os.getloadavg()
    results = table(wall["this"], cpu["this"])
    report = {
        "benchmark": "cli_start",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": commit(),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after],
        },
        "versions": versions(),
        "runs": args.runs,
        "command": retain,
        "searched_home": args.search,
        "results": results,
    }
    if args.compare:
        report["compared"] = {
            "source": trees["compared"],
            "results": table(wall["compared"], cpu["compared"]),
        }
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
