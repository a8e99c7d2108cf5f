"""How many planted near-copies a write's near-copy note names, and what the note costs.

    python bench/noted.py [--size 20000] [--planted 300] [--seeds 7,8] [--singles 200]
                          [--home DIR]
                          [--database-url postgresql://USER:PASSWORD@HOST/DB]

A fresh store (SQLite in ``--home``'s ``noted/``, emptied first, or the schema
``noted_bench`` of the database)
is loaded with ``--size`` of ``bench/store.py``'s synthetic memories by ``write_many``
of 1,000 with the note off (``notes=False``, as a bulk load writes). Then, for each seed,
``--planted`` of them are written again as near-copies: under a new name, the same
project, the description with one word replaced by a common English one ("new",
"updated", "revised" or "other") and another body (the original's reversed, cut to 200
characters), in batches of 100 with the note on. A near-copy counts as noted when one of
its notes names its original. ``ms_per_write`` is the batches' wall time per write,
note included.

Then ``--singles`` near-copies of one more seed are written one at a time (``write_many``
of one, a transaction each), every other one with the note off: ``singles`` gives the
wall time of a single write with the note and without it (p50, p90), and how many of
those with it were noted.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import retain  # noqa: E402
from retain.results import WriteRequest  # noqa: E402
from scale import fresh_schema, schema_url, server_info, shown_url  # noqa: E402
from store import PROJECTS, Corpus, log, machine, percentile, source_state  # noqa: E402

REPLACEMENTS = ("new", "updated", "revised", "other")
BATCH = 100


def planted(requests: list[WriteRequest], seed: int, count: int) -> list[tuple[int, WriteRequest]]:
    """``count`` near-copies of ``requests``, each with the place of its original."""
    rng = random.Random(seed)
    copies = []
    for k, place in enumerate(rng.sample(range(len(requests)), count)):
        original = requests[place]
        words = (original.description or "").split()
        words[rng.randrange(len(words))] = rng.choice(REPLACEMENTS)
        copy = replace(
            original,
            name=f"copy-{seed}-{k}",
            description=" ".join(words),
            body=(original.body or "")[::-1][:200],
        )
        copies.append((place, copy))
    return copies


def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(args.home) / "noted"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    if args.database_url:
        location = schema_url(args.database_url, "bench", default="noted")
        fresh_schema(location)
    else:
        location = str(home / "retain.db")
    store = retain.open(location, home=home)
    for project in PROJECTS:
        store.add_project(project)
    requests = [doc.request() for doc in Corpus(1).docs(0, args.size)]
    began = time.perf_counter()
    for start in range(0, args.size, 1000):
        store.write_many(requests[start : start + 1000], notes=False)
    log(f"{args.size} memories loaded in {time.perf_counter() - began:.1f} s")
    rounds = []
    for seed in args.seeds:
        copies = planted(requests, seed, args.planted)
        noted, spent = 0, 0.0
        for start in range(0, len(copies), BATCH):
            part = copies[start : start + BATCH]
            began = time.perf_counter()
            results = store.write_many([copy for _, copy in part])
            spent += time.perf_counter() - began
            for (place, _), result in zip(part, results, strict=True):
                noted += any(f"'{requests[place].name}'" in note for note in result.notes)
        ms = round(1000 * spent / len(copies), 2)
        rounds.append({"seed": seed, "noted": noted, "of": len(copies), "ms_per_write": ms})
        log(f"seed {seed}: {noted} of {len(copies)} noted, {ms} ms a write")
    singles = single_writes(store, requests, max(args.seeds) + 1, args.singles)
    store.close()
    backend = "postgresql" if args.database_url else "sqlite"
    return {"backend": backend, "rounds": rounds, "singles": singles}


def single_writes(
    store: retain.MemoryService, requests: list[WriteRequest], seed: int, count: int
) -> dict[str, Any]:
    """``count`` near-copies written one at a time with the note and ``count`` without,
    alternately: the wall time of each kind (p50, p90, in ms) and how many were noted."""
    spent: dict[bool, list[float]] = {True: [], False: []}
    noted = 0
    for k, (place, copy) in enumerate(planted(requests, seed, 2 * count)):
        notes = k % 2 == 0
        began = time.perf_counter()
        (result,) = store.write_many([copy], notes=notes)
        spent[notes].append(1000 * (time.perf_counter() - began))
        noted += any(f"'{requests[place].name}'" in note for note in result.notes)

    def spread(times: list[float]) -> dict[str, float]:
        return {f"p{q}_ms": round(percentile(times, q), 2) for q in (50, 90)}

    with_note, without = spread(spent[True]), spread(spent[False])
    log(f"single writes, p50: {with_note['p50_ms']} ms with the note, {without['p50_ms']} without")
    return {"writes": count, "noted": noted, **with_note, "without_note": without}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--planted", type=int, default=300)
    parser.add_argument("--seeds", default="7,8", help="comma-separated seeds, a round each")
    parser.add_argument("--singles", type=int, default=200, help="single writes of each kind")
    parser.add_argument("--home", default="/tmp/retain-noted")
    parser.add_argument("--database-url", metavar="URL", help="a PostgreSQL store instead")
    args = parser.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",") if s]
    if args.planted > args.size or 2 * args.singles > args.size:
        parser.error("--planted, and twice --singles, cannot exceed --size")
    if not args.seeds or args.singles < 1:
        parser.error("give at least one seed and one single write")
    return args


def command(args: argparse.Namespace) -> str:
    """The command as run, any password in the database's URL hidden."""
    words = ["python", "bench/noted.py", f"--size {args.size}", f"--planted {args.planted}"]
    words += [f"--seeds {','.join(map(str, args.seeds))}", f"--singles {args.singles}"]
    words.append(f"--home {args.home}")
    if args.database_url:
        words.append(f"--database-url {shown_url(args.database_url)}")
    return " ".join(words)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out: dict[str, Any] = {
        "benchmark": "bench/noted.py",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command(args),
        "machine": machine(),
        "source": source_state(),
        "parameters": {k: getattr(args, k) for k in ("size", "planted", "seeds", "singles")},
    }
    if args.database_url:
        out["database"] = server_info(args.database_url)
    out["results"] = run(args)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
