"""Sustained load on ``retain serve``'s REST API from several client processes (loopback).

    python bench/serve_load.py [--clients 4] [--seconds 10] [--memories 10000]
                               [--workers 1] [--home DIR] [--seed 1]

A store of ``--memories`` of ``bench/store.py``'s synthetic memories (default embedder)
is made under ``--home`` (a temp dir), with its projects; ``retain serve`` is started on
it on a free loopback port, as a user starts it (the console script, its own process;
``--workers`` server processes).
Then, for each phase, ``--clients`` processes each keep one HTTP connection (the
standard library's ``http.client``, the cheapest Python client) and send requests back to
back for ``--seconds`` from a common start:

* ``search``: ``POST /v1/memories/search`` with the rare/medium/common query words of
  ``store.py``'s query sets (``limit`` 10);
* ``write``: ``PUT /v1/memories/{name}`` of new memories (distinct names per client,
  ``load`` search so the inline budget plays no part).

A phase reports the aggregate rate (requests over the time from the start to the last
client's end), latency percentiles per request, and every answer that was not 2xx
(``errors``: none is expected), and where the CPU went (``cpu``, Linux): the machine's
busy share, the clients' and the server's CPU time per request, and each server process's
seconds and the clients' connections it held at the start (the supervisor first, then
the workers). The server's RSS is read at the end.

Targets (issue 6, this 2-core machine): ≥ 500 searches/s and ≥ 200 writes/s, with no
error. The clients and the server share the machine's cores.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from http.client import HTTPConnection
from importlib import metadata
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import httpx

import retain

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from store import (  # noqa: E402 - bench/ is put on the path just above
    PROJECTS,
    Corpus,
    log,
    machine,
    machine_busy_s,
    make_queries,
    process_cpu_s,
    source_state,
    summary_ms,
)

TARGETS = {"search": 500.0, "write": 200.0}  # requests/s, aggregate
PHASES = ("search", "write")
LOAD_BATCH = 1000
JSON_HEADERS = {"Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client_main(
    client: int,
    port: int,
    phase: str,
    seconds: float,
    queries: list[str],
    seed: int,
    ready: Barrier,
    start: Any,
    results: Any,
) -> None:
    """Send one phase's requests back to back; put this client's figures on ``results``.

    The standard library's ``http.client`` on one keep-alive connection: the clients share
    the machine's cores with the server, and it costs them a third of what httpx does.
    """
    rng = random.Random(f"{seed}:{client}")
    latencies: list[float] = []
    errors: dict[str, int] = {}
    sent = 0
    http = HTTPConnection("127.0.0.1", port, timeout=30.0)

    def call(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        http.request(method, path, body=data, headers=JSON_HEADERS if data else {})
        response = http.getresponse()
        return response.status, response.read()

    call("GET", "/v1/status")  # the connection is made before the start
    ready.wait(60)
    while start.value == 0.0 or time.monotonic() < start.value:  # the parent sets it
        time.sleep(0.001)
    deadline = start.value + seconds
    cpu = time.process_time()
    now = time.monotonic()
    while now < deadline:
        began = now
        if phase == "search":
            body = {"queries": [rng.choice(queries)], "limit": 10}
            status, answer = call("POST", "/v1/memories/search", body)
        else:
            name = f"load-{client}-{sent}"
            text = " ".join(rng.choice(queries) for _ in range(3))
            body = {"description": f"Load note {sent}: {text}", "body": text, "load": "search"}
            status, answer = call("PUT", f"/v1/memories/{name}", body)
        json.loads(answer)  # every answer is read whole, as a client would
        now = time.monotonic()
        sent += 1
        latencies.append(now - began)
        if status >= 300:
            key = f"{status} {json.loads(answer).get('error', {}).get('code')}"
            errors[key] = errors.get(key, 0) + 1
    cpu = time.process_time() - cpu
    http.close()
    results.put({"client": client, "sent": sent, "end": now, "latencies": latencies,
                 "errors": errors, "cpu_s": cpu})  # fmt: skip


def server_processes(root: int) -> list[int]:
    """``retain serve``'s process and its children (the worker processes, with --workers)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text(encoding="ascii")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == root:
                children.append(int(entry.name))
    return [root, *sorted(children)]


def connections_held(pids: list[int], port: int) -> list[int]:
    """How many established connections to ``port`` each of ``pids`` holds (Linux)."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text(encoding="ascii").splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                    established.add(f"socket:[{fields[9]}]")
    held = []
    for pid in pids:
        count = 0
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    count += os.readlink(fd) in established
        held.append(count)
    return held


def run_phase(
    args: argparse.Namespace, port: int, phase: str, queries: list[str], server: int
) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(args.clients + 1)
    start = context.Value("d", 0.0)
    results = context.Queue()
    processes = [
        context.Process(
            target=client_main,
            args=(k, port, phase, args.seconds, queries, args.seed, ready, start, results),
        )
        for k in range(args.clients)
    ]
    for process in processes:
        process.start()
    ready.wait(120)
    pids = server_processes(server)
    held = connections_held(pids, port)
    start.value = time.monotonic() + 0.2
    began = start.value
    time.sleep(0.2)
    busy_before, served_before = machine_busy_s(), [process_cpu_s(p) for p in pids]
    reports = [results.get(timeout=args.seconds * 10 + 120) for _ in processes]
    busy = machine_busy_s() - busy_before
    served = [process_cpu_s(p) - s for p, s in zip(pids, served_before, strict=True)]
    for process in processes:
        process.join()
    seconds = max(r["end"] for r in reports) - began
    sent = sum(r["sent"] for r in reports)
    errors: dict[str, int] = {}
    for report in reports:
        for key, count in report["errors"].items():
            errors[key] = errors.get(key, 0) + count
    rate = sent / seconds
    cores = os.cpu_count() or 1
    log(f"{phase}: {sent} requests in {seconds:.2f} s, {rate:.0f}/s, errors {errors or 'none'}")
    return {
        "requests": sent,
        "seconds": round(seconds, 3),
        "per_s": round(rate, 1),
        "latency_ms": summary_ms([s for r in reports for s in r["latencies"]]),
        "errors": errors,
        # Where the machine's CPU went: the clients' own time and the server's processes'
        # (per process: with --workers, how evenly the kernel spread the connections).
        "cpu": {
            "busy_share": round(busy / (seconds * cores), 3),
            "clients_ms_per_request": round(1000 * sum(r["cpu_s"] for r in reports) / sent, 3),
            "server_ms_per_request": round(1000 * sum(served) / sent, 3),
            "server_s_by_process": [round(s, 2) for s in served],
            "connections_by_process": held,
        },
        "target_per_s": TARGETS[phase],
        "meets_target": rate >= TARGETS[phase] and not errors,
    }


def load_store(home: Path, count: int, seed: int) -> tuple[Corpus, list[str]]:
    """A store of ``count`` synthetic memories under ``home``; the query words."""
    store = retain.open(home=home)
    for project in PROJECTS:
        store.add_project(project)
    corpus = Corpus(seed)
    docs = list(corpus.docs(0, count))
    for first in range(0, count, LOAD_BATCH):
        store.write_many([d.request() for d in docs[first : first + LOAD_BATCH]])
        log(f"loaded {min(first + LOAD_BATCH, count)}/{count}")
    store.close()
    sets = make_queries(corpus, docs, 200, random.Random(seed))
    words = [q for name in ("rare", "common", "mixed") for q in sets.sets[name]]
    return corpus, words


def server_rss_mib(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--memories", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--workers", type=int, default=1, help="retain serve --workers")
    parser.add_argument("--home", type=Path, help="where the store goes (a temp dir)")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    temporary = args.home is None
    home = Path(tempfile.mkdtemp(prefix="retain-serve-load-")) if temporary else args.home
    home.mkdir(parents=True, exist_ok=True)
    try:
        _, queries = load_store(home, args.memories, args.seed)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "RETAIN_HOME": str(home)}
        env.pop("RETAIN_DATABASE_URL", None)
        env.pop("RETAIN_TOKENS", None)
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "retain"),
                *("serve", "--port", str(port), "--workers", str(args.workers)),
            ],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{base}/v1/status", timeout=2).raise_for_status()
                    break
                except httpx.TransportError as exc:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("retain serve did not start") from exc
                    time.sleep(0.2)
            httpx.post(f"{base}/v1/memories/search", json={"queries": ["warm"]}, timeout=60)
            phases = {phase: run_phase(args, port, phase, queries, server.pid) for phase in PHASES}
            rss = server_rss_mib(server.pid)  # with workers, the supervisor's alone
        finally:
            server.terminate()
            server.communicate(timeout=30)
        print(
            json.dumps(
                {
                    "benchmark": "serve_load",
                    "date": datetime.now(UTC).isoformat(timespec="seconds"),
                    "machine": machine(),
                    "source": source_state(),
                    "versions": {
                        name: metadata.version(name) for name in ("retain", "fastapi", "uvicorn")
                    },
                    "settings": {
                        "clients": args.clients,
                        "seconds": args.seconds,
                        "memories": args.memories,
                        "workers": args.workers,
                        "seed": args.seed,
                    },
                    "phases": phases,
                    "server_rss_mib": rss,
                    "meets_targets": all(p["meets_target"] for p in phases.values()),
                }
            )
        )
    finally:
        if temporary:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
