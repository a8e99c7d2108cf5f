"""What ``status`` costs a realm of a large store that holds other realms too.

    python bench/status.py --home DIR [--other 100] [--processes 3]

``DIR`` holds a loaded store (``retain.db``: ``bench/cold.py``'s 1M store, say), whose
memories are in the realm ``default``. Unless it is there already, a realm ``other`` of
``--other`` memories is added to it. Then, in ``--processes`` new processes for each of
the two realms, the store is opened and ``status()`` timed twice (the first after the
open, the second again), and the realm's vector count alone twice
(``vector_counts``, what ``status`` reads for ``vectors``): each vector's realm is its
memory's, so counting one realm's among others' costs what is looked up.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import retain
from retain import WriteRequest

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from store import log, machine  # noqa: E402 - bench/ is on the path

OTHER = "other"


def measured(home: Path, realm: str) -> dict[str, Any]:
    """In this process: the store opened, ``status()`` and the vector count timed twice."""
    started = time.perf_counter()
    store = retain.open(home / "retain.db", home=home, realm=realm)
    found: dict[str, Any] = {"open_s": round(time.perf_counter() - started, 3)}
    for round_ in (1, 2):
        started = time.perf_counter()
        status = store.status()
        found[f"status_s_{round_}"] = round(time.perf_counter() - started, 3)
        started = time.perf_counter()
        counted = store.backend.read(lambda tx: tx.vector_counts(realm))
        found[f"vector_count_s_{round_}"] = round(time.perf_counter() - started, 3)
    found.update(memories=status.memories, vectors=status.vectors, counted=counted)
    store.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--other", type=int, default=100, help="memories of the other realm")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # a realm: this process measures
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measured(args.home, args.measure)))
        return 0
    other = retain.open(args.home / "retain.db", home=args.home, realm=OTHER)
    if not other.status().memories:
        log(f"adding {args.other} memories to the realm {OTHER!r}")
        other.write_many(
            [
                WriteRequest(f"other-{i}", description=f"a memory of another realm, number {i}")
                for i in range(args.other)
            ]
        )
    other.close()
    runs: dict[str, list[dict[str, Any]]] = {"default": [], OTHER: []}
    for process in range(args.processes):
        for realm, found in runs.items():
            log(f"process {process + 1}/{args.processes}, realm {realm!r}")
            out = subprocess.run(
                [sys.executable, __file__, "--home", str(args.home), "--measure", realm],
                check=True,
                capture_output=True,
                text=True,
            )
            found.append(json.loads(out.stdout.splitlines()[-1]))
    print(
        json.dumps(
            {
                "bench": "status",
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": machine(),
                "realms": runs,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
