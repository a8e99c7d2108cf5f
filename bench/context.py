"""Benchmark of ``MemoryService.context()``, the memory section of an agent's context.

    python bench/context.py [--memories 10000] [--iterations 200] [--seed 1]
                            [--embedder default|static|hash|none] [--home DIR]
                            [--locomo FILE] [--outside 2000] [--profile DIR]

One store is built holding ``--memories`` memories in the view of agent ``ada`` on project
``webdev`` (global, the project, team ``ops`` that ada is in, and ada's own scope), plus
``--outside`` memories of project ``infra`` that the view must leave out:

* 20 inline memories (standing rules of a few hundred bytes, 12 global and 8 of the
  project: well within the 32 KiB inline budget);
* 40% index memories with one-line descriptions and 0–2 tags out of 30 (global, project
  and, 500 of them, the team);
* 2% expired (index and search-only ones whose expiry has passed);
* 1,000 of ada's own memories, written with the agent verb ``remember`` (search-only,
  at ``observed`` trust), and the rest search-only memories of the shared scopes.

The shared tiers are written with ``write_many`` in batches of ``--batch`` as the operator,
the store's clock (a ``ManualClock``) moving on between batches, so the memories span about a
year. The team's memories are inserted directly in batches (with their search keys, without
events): no verb writes a team's scope yet (proposals to it are only stored). Bodies of the
search-only and agent memories are LoCoMo dialogue turns (``--locomo``, the five development
conversations), so the turn texts — LoCoMo questions — have something to match; the rest is
``bench/store.py``'s synthetic corpus.

Measured, each over ``--iterations`` calls after warm-up ones, as agent ada on webdev, the
clock moving one second per call:

* ``full``: no session, no turn — every render is the whole section;
* ``full_after_change``: the same, each call after the agent remembered something (not
  timed), so the view's counts, which a service otherwise keeps between renders while
  nothing changes, are counted again every time;
* ``full_turn``: no session, a different LoCoMo question as the turn each call (recall on);
* ``restate``: a session restated each call (a first turn, or after a compaction), no turn;
* ``delta``: a session whose previous render saw the same store — the steady-state turn,
  where nothing changed — without a turn, and ``delta_turn`` with one.

Each series reports p50/p95/p99/max/mean in ms, the section's size in bytes and the injection
ledger rows a render writes (by surface). Every render is one durable write transaction (the
ledger), so the bare SQLite durable commit of ``bench/store.py`` is reported as the floor.

Target (from the issue): ``context()`` p50 at 10k memories in view ≤ 10 ms without turn
recall and ≤ 25 ms with it (checked on ``full`` and ``full_turn``; the delta series are held
to the same figures).

Progress goes to stderr; the last line of stdout is one JSON object. ``--profile DIR`` also
writes a cProfile dump and a text summary of every series (turn recall runs on a worker
thread, which cProfile does not see; the timings of a profiled run are inflated).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import retain
from retain import ManualClock, Memory, WriteRequest
from retain.ids import IdFactory
from retain.model import Load, Status, Trust
from retain.search import key
from retain.service import content_hash

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from store import (  # noqa: E402 - bench/ is put on the path just above
    TAGS,
    Corpus,
    Profiler,
    durable_commit_floor,
    log,
    machine,
    source_state,
    summary_ms,
)

# -- targets (from the issue) ------------------------------------------------------------

TARGET_P50_MS = 10.0  # without turn recall
TARGET_TURN_P50_MS = 25.0  # with turn recall

# -- the store -----------------------------------------------------------------------------

EMBEDDERS = ("default", "static", "hash", "none")
AGENT, TEAM, PROJECT, OTHER_PROJECT = "ada", "ops", "webdev", "infra"
ALL_TAGS = (*TAGS, "release", "testing", "perf", "privacy", "vendor", "support")  # 30 tags
INLINE_GLOBAL, INLINE_PROJECT = 12, 8
INDEX_SHARE = 0.40
EXPIRED_SHARE = 0.02
TEAM_INDEX = 500
AGENT_OWN = 1000
SPAN_DAYS = 365
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
WARMUP = 10
SESSION = "bench-session"
DEFAULT_LOCOMO = BENCH.parent.parent / "shared" / "bench" / "locomo-dev.json"


@dataclass(frozen=True, slots=True)
class Turn:
    """One LoCoMo dialogue turn: who said it, what was said, and its session."""

    speaker: str
    text: str
    thread: str


def read_locomo(path: Path) -> tuple[list[Turn], list[str]]:
    """Every dialogue turn and every question of a LoCoMo-format file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[Turn] = []
    questions: list[str] = []
    for sample in data:
        conversation = sample["conversation"]
        for label, value in conversation.items():
            if label.startswith("session_") and isinstance(value, list):
                thread = f"{sample['sample_id']}-{label.replace('_', '-')}"
                for turn in value:
                    text = turn["text"]
                    if turn.get("blip_caption"):
                        text += f" (shared an image: {turn['blip_caption']})"
                    turns.append(Turn(turn["speaker"], text, thread))
        questions += [str(qa["question"]) for qa in sample["qa"] if qa.get("question")]
    return turns, questions


def tags_for(rng: random.Random) -> tuple[str, ...]:
    return tuple(rng.sample(ALL_TAGS, rng.choice((0, 1, 1, 2))))


def priority_for(rng: random.Random) -> int:
    return rng.choices(range(10), weights=(2, 3, 5, 8, 10, 14, 10, 8, 6, 4))[0]


def rule_body(corpus: Corpus, number: int, rng: random.Random) -> str:
    """An inline memory's body: a few sentences, 200–600 bytes, cut at a sentence's end."""
    text = corpus.doc(1_000_000 + number).body
    limit = rng.randint(200, 600)
    cut = text.rfind(". ", 0, limit)
    return text[: cut + 1] if cut > 0 else text[:limit]


@dataclass(slots=True)
class Plan:
    """What the store will hold: the shared tiers' writes, the team's memories (made at
    insert time) and the agent's own texts."""

    shared: list[WriteRequest]
    team: list[
        tuple[str, str, tuple[str, ...], int, Load]
    ]  # description, body, tags, priority, load
    own: list[Turn]
    outside: list[WriteRequest]
    counts: dict[str, int]


def plan(corpus: Corpus, turns: Sequence[Turn], memories: int, outside: int, seed: int) -> Plan:
    rng = random.Random(f"context:{seed}")
    inline = INLINE_GLOBAL + INLINE_PROJECT
    index = round(memories * INDEX_SHARE)
    expired = round(memories * EXPIRED_SHARE)
    own = min(AGENT_OWN, memories // 10)
    team_index = min(TEAM_INDEX, index)
    search = memories - inline - index - expired - own
    if search < 0:
        raise SystemExit(f"--memories {memories} is too small for this mix")
    locomo = list(turns)
    rng.shuffle(locomo)
    own_turns, shared_turns = locomo[:own], locomo[own:]
    numbers = iter(range(10**9))

    def synthetic(**options: Any) -> WriteRequest:
        doc = corpus.doc(next(numbers))
        return WriteRequest(
            name=doc.name,
            description=doc.description,
            body=doc.body,
            tags=tags_for(rng),
            priority=priority_for(rng),
            **options,
        )

    def project_or_global() -> str | None:
        return PROJECT if rng.random() < 0.4 else None

    shared: list[WriteRequest] = []
    for i in range(inline):
        shared.append(
            WriteRequest(
                name=f"rule-{i:02d}",
                description=f"Standing rule {i + 1}",
                body=rule_body(corpus, i, rng),
                tags=tags_for(rng),
                priority=rng.randint(0, 3),
                load="inline",
                project=PROJECT if i >= INLINE_GLOBAL else None,
            )
        )
    shared += [
        synthetic(load="index", project=project_or_global()) for _ in range(index - team_index)
    ]
    team: list[tuple[str, str, tuple[str, ...], int, Load]] = []
    for _ in range(team_index):
        doc = corpus.doc(next(numbers))
        team.append((doc.description, doc.body, tags_for(rng), priority_for(rng), Load.INDEX))
    for i in range(search):
        project = project_or_global()
        if i < len(shared_turns):  # a conversation turn, kept as a search-only memory
            turn = shared_turns[i]
            shared.append(
                WriteRequest(
                    name=f"said-{i:05d}",
                    description=f"{turn.speaker} in {turn.thread}",
                    body=f"{turn.speaker}: {turn.text}",
                    tags=tags_for(rng),
                    priority=priority_for(rng),
                    load="search",
                    subject=turn.speaker,
                    thread=turn.thread,
                    project=project,
                )
            )
        else:
            shared.append(synthetic(load="search", project=project))
    # Expiry is set when the store is written (relative to the clock then).
    shared += [
        synthetic(load=rng.choice(("index", "search")), project=project_or_global(), expires="x")
        for _ in range(expired)
    ]
    rng.shuffle(shared)
    others = [synthetic(load=rng.choice(("index", "search")), project=OTHER_PROJECT)
              for _ in range(outside)]  # fmt: skip
    return Plan(
        shared=shared,
        team=team,
        own=own_turns,
        outside=others,
        counts={
            "in_view": memories,
            "inline": inline,
            "index": index,
            "index_team": team_index,
            "search_only": search + own,
            "agent_own": own,
            "expired": expired,
            "outside_view": outside,
        },
    )


def write_config(directory: Path, embedder: str) -> None:
    """The store's ``config.toml``: none for ``default``, else ``[search] embedder``."""
    path = directory / "config.toml"
    if embedder == "default":
        path.unlink(missing_ok=True)
        return
    path.write_text(f'[search]\nembedder = "{embedder}"\n', encoding="utf-8")


def insert_team(
    store: retain.MemoryService,
    clock: ManualClock,
    items: Sequence[tuple[str, str, tuple[str, ...], int, Load]],
    rng: random.Random,
) -> None:
    """The team's memories, inserted directly (no verb writes a team scope yet), with their
    search keys, created over the past ``SPAN_DAYS`` days."""
    ids = IdFactory()
    now = clock.now()
    rows: list[Memory] = []
    for number, (description, body, tags, priority, load) in enumerate(items):
        created = now - timedelta(days=rng.uniform(0, SPAN_DAYS))
        rows.append(
            Memory(
                id=ids.new(created),
                realm=store.realm,
                scope=f"team:{TEAM}",
                name=f"ops-{number:05d}",
                description=description,
                body=body,
                tags=tags,
                priority=priority,
                load=load,
                references=(),
                source="",
                subject=None,
                predicate=None,
                trust=Trust.ATTESTED,
                status=Status.ACTIVE,
                ever_quarantined=False,
                supersedes=None,
                content_hash=content_hash(body),
                author="operator:local",
                created_at=created,
                updated_at=created,
                verified_at=created,
                expires_at=None,
                valid_from=None,
                valid_to=None,
                read_count=0,
            )
        )
    embedder = store.embedder.embedder

    def run(tx: Any) -> None:
        tx.insert_memories(rows)
        rekey = key.Rekey()
        for row in rows:
            rekey.touch(row.id)
        rekey.apply(tx, embedder, clock.local_tz())

    store.backend.write(run)


def build(
    directory: Path, corpus: Corpus, turns: Sequence[Turn], args: argparse.Namespace
) -> tuple[retain.MemoryService, ManualClock, Plan, dict[str, Any]]:
    """The store, its agent's service and clock (at the measuring time), and the build's
    timings."""
    began = time.perf_counter()
    layout = plan(corpus, turns, args.memories, args.outside, args.seed)
    rng = random.Random(f"build:{args.seed}")
    generated = time.perf_counter() - began
    clock = ManualClock(current=START)
    operator = retain.open(directory / "retain.db", home=directory, clock=clock)
    operator.add_project(PROJECT)
    operator.add_project(OTHER_PROJECT)
    operator.add_agent(AGENT)
    operator.add_team(TEAM)
    operator.join_team(TEAM, AGENT)
    log(f"build: embedder {operator.embedder.model_id}; {len(layout.shared)} shared writes")

    began = time.perf_counter()
    writes = layout.shared + layout.outside
    batches = max(1, -(-len(writes) // args.batch))
    step = timedelta(days=SPAN_DAYS / batches)
    for start in range(0, len(writes), args.batch):
        now = clock.now()
        requests = [
            replace(r, expires=(now + timedelta(days=rng.uniform(1, 20))).isoformat())
            if r.expires
            else r
            for r in writes[start : start + args.batch]
        ]
        operator.write_many(requests)
        clock.current += step
    shared_seconds = time.perf_counter() - began
    log(f"build: {len(writes)} shared writes in {shared_seconds:.1f} s")

    began = time.perf_counter()
    insert_team(operator, clock, layout.team, rng)
    team_seconds = time.perf_counter() - began
    operator.close()

    agent = retain.open(
        directory / "retain.db", home=directory, clock=clock, principal=f"agent:{AGENT}"
    )
    began = time.perf_counter()
    clock.current -= timedelta(days=30)
    own_step = timedelta(days=30) / max(1, len(layout.own))
    for turn in layout.own:
        agent.remember(
            f"{turn.speaker}: {turn.text}",
            tags=tags_for(rng)[:1],
            subject=turn.speaker,
            thread=turn.thread,
        )
        clock.current += own_step
    own_seconds = time.perf_counter() - began
    log(f"build: {len(layout.own)} remember calls in {own_seconds:.1f} s")
    clock.current += timedelta(days=21)  # every expiry has passed
    return (
        agent,
        clock,
        layout,
        {
            "generate": round(generated, 2),
            "write_many": round(shared_seconds, 2),
            "team_insert": round(team_seconds, 2),
            "remember": round(own_seconds, 2),
            "remember_ms": round(own_seconds * 1000 / max(1, len(layout.own)), 2),
        },
    )


# -- measuring ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    call: Callable[[int], retain.ContextResult]
    prepare: Callable[[int], object] | None = None  # run before each call, not timed


def measure(
    series: Series, clock: ManualClock, iterations: int, profiler: Profiler
) -> dict[str, Any]:
    """``iterations`` timed calls after ``WARMUP`` untimed ones, the clock moving 1 s each."""
    for i in range(WARMUP):
        clock.advance(seconds=1)
        series.call(-1 - i)
    seconds: list[float] = []
    sizes: list[int] = []
    rows: list[int] = []
    surfaces: Counter[str] = Counter()
    recall: Counter[str] = Counter()
    full = 0
    with profiler.phase(series.name):
        for i in range(iterations):
            clock.advance(seconds=1)
            if series.prepare is not None:
                series.prepare(i)
            began = time.perf_counter()
            result = series.call(i)
            seconds.append(time.perf_counter() - began)
            sizes.append(len(result.text.encode("utf-8")))
            rows.append(len(result.injected))
            surfaces.update(row.surface for row in result.injected)
            recall[result.recall] += 1
            full += result.full
    out: dict[str, Any] = {
        **summary_ms(seconds),
        "section_bytes": {
            "min": min(sizes),
            "p50": sorted(sizes)[len(sizes) // 2],
            "max": max(sizes),
        },  # fmt: skip
        "ledger_rows": {
            "min": min(rows),
            "p50": sorted(rows)[len(rows) // 2],
            "max": max(rows),
            "by_surface_per_call": {
                s: round(n / iterations, 2) for s, n in sorted(surfaces.items())
            },
        },  # fmt: skip
        "full_renders": full,
        "recall": dict(recall),
    }
    log(
        f"{series.name}: p50 {out['p50']:.2f} ms, p95 {out['p95']:.2f} ms, "
        f"{out['section_bytes']['p50']} bytes, {out['ledger_rows']['p50']} ledger rows"
    )
    return out


def bench(args: argparse.Namespace, home: Path, profiler: Profiler) -> dict[str, Any]:
    turns, questions = read_locomo(args.locomo)
    corpus = Corpus(args.seed)
    directory = home / "context"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    write_config(directory, args.embedder)
    started = time.perf_counter()
    agent, clock, layout, build_seconds = build(directory, corpus, turns, args)
    build_seconds["total"] = round(time.perf_counter() - started, 2)

    first = agent.context(project=PROJECT)
    scene: dict[str, Any] = {
        "section_bytes": len(first.text.encode("utf-8")),
        "ledger_rows": len(first.injected),
        "ledger_rows_by_surface": dict(Counter(r.surface for r in first.injected)),
        "inline_bytes": first.inline_bytes,
        "inline_budget": first.inline_budget,
        "index_left_out": first.index_left_out,
        "search_only": first.search_only,
        "expired": first.expired,
    }
    shown = Counter(r.surface for r in first.injected)
    scene["in_view_check"] = sum(shown.values()) + first.index_left_out + first.search_only
    scene["in_view_check"] += first.expired
    log(f"scene: {json.dumps(scene)}")

    order = random.Random(f"turns:{args.seed}")
    texts = list(questions)
    order.shuffle(texts)

    def turn(i: int) -> str:
        return texts[i % len(texts)]

    agent.context(project=PROJECT, session=SESSION)  # the session's first, full render
    series = [
        Series("full", lambda i: agent.context(project=PROJECT)),
        Series(
            "full_after_change",
            lambda i: agent.context(project=PROJECT),
            prepare=lambda i: agent.remember(f"{turn(i)} (noted for the benchmark)"),
        ),
        Series("full_turn", lambda i: agent.context(project=PROJECT, turn=turn(i))),
        Series("restate", lambda i: agent.context(project=PROJECT, session="r", restate=True)),
        Series("delta", lambda i: agent.context(project=PROJECT, session=SESSION)),
        Series(
            "delta_turn", lambda i: agent.context(project=PROJECT, session=SESSION, turn=turn(i))
        ),  # fmt: skip
    ]
    results = {s.name: measure(s, clock, args.iterations, profiler) for s in series}
    store_bytes = sum(
        p.stat().st_size for p in directory.iterdir() if p.name.startswith("retain.db")
    )
    embedder = agent.embedder.model_id
    agent.close()
    return {
        "embedder": embedder,
        "composition": layout.counts,
        "build_seconds": build_seconds,
        "store_bytes": store_bytes,
        "first_render": scene,
        "context_ms": results,
        "turn_texts": {
            "source": "LoCoMo questions",
            "count": len(texts),
            "examples": texts[:3],
        },  # fmt: skip
    }


# -- the run ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=10_000, help="memories in the view")
    parser.add_argument("--outside", type=int, default=2000, help="memories out of the view")
    parser.add_argument("--iterations", type=int, default=200, help="timed calls per series")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--embedder", choices=EMBEDDERS, default="default")
    parser.add_argument("--batch", type=int, default=500, help="requests per write_many")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON file")
    parser.add_argument("--home", type=Path, help="where the store goes (default: a temp dir)")
    parser.add_argument("--profile", type=Path, help="write cProfile output of each series here")
    args = parser.parse_args(argv)
    for option in ("memories", "iterations", "batch"):
        if getattr(args, option) < 1:
            parser.error(f"--{option} must be at least 1")
    if args.outside < 0:
        parser.error("--outside must be 0 or more")
    if not args.locomo.is_file():
        parser.error(f"no LoCoMo file at {args.locomo}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now(UTC)
    source = source_state()
    temporary = args.home is None
    home = Path(tempfile.mkdtemp(prefix="retain-context-")) if temporary else args.home
    home.mkdir(parents=True, exist_ok=True)
    profiler = Profiler(args.profile)
    log(f"store under {home}; seed {args.seed}; embedder {args.embedder}")
    try:
        floor = durable_commit_floor(home)
        log(f"bare SQLite durable commit: p50 {floor['p50']:.3f} ms")
        result = bench(args, home, profiler)
    finally:
        if temporary:
            shutil.rmtree(home, ignore_errors=True)
    timings = result["context_ms"]
    report = {
        "benchmark": "bench/context.py",
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/context.py", *(argv or sys.argv[1:])]),
        "machine": {**machine(), "bare_sqlite_commit_ms": floor},
        "source": source,
        "parameters": {
            "memories": args.memories,
            "outside": args.outside,
            "iterations": args.iterations,
            "warmup": WARMUP,
            "seed": args.seed,
            "embedder": args.embedder,
            "batch": args.batch,
            "locomo": str(args.locomo),
            "profiled": args.profile is not None,
        },
        **result,
        "targets": {"p50_ms": TARGET_P50_MS, "turn_p50_ms": TARGET_TURN_P50_MS},
        "meets_targets": {
            "full_p50": timings["full"]["p50"] <= TARGET_P50_MS,
            "full_turn_p50": timings["full_turn"]["p50"] <= TARGET_TURN_P50_MS,
            "delta_p50": timings["delta"]["p50"] <= TARGET_P50_MS,
            "delta_turn_p50": timings["delta_turn"]["p50"] <= TARGET_TURN_P50_MS,
            "full_after_change_p50": timings["full_after_change"]["p50"] <= TARGET_P50_MS,
        },
    }
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
