"""Benchmark of the retain store through the public service API.

    python bench/store.py [--sizes 10000,100000] [--queries 200] [--seed 1] [--home DIR]
                          [--embedder default|static|hash|none]

For each size a fresh store is loaded with a synthetic corpus and measured:

* batched writes: ``MemoryService.write_many`` in batches of ``--batch`` requests,
  one transaction each (event log, full-text index and vectors included);
* single durable writes: ``MemoryService.write`` of one new memory per transaction,
  on top of the loaded store (and, besides, updates of existing memories);
* search latency for query sets of rare/medium words, of the corpus's most common
  words (FTS5's slow case), of both mixed, and of words no memory holds;
* the size of the store file.

The corpus is English-like and deterministic from ``--seed``: a vocabulary of real
function and content words at the head and pronounceable made-up words in the tail,
drawn with a Zipf distribution, so the head words appear in most memories.

Progress goes to stderr; the last line of stdout is one JSON object.
``--profile DIR`` also writes a cProfile dump and a text summary of every phase
(the timings of a profiled run are inflated by the profiler).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import itertools
import json
import os
import platform
import pstats
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import retain
from retain import WriteRequest

T = TypeVar("T")

# -- targets (the scale issue's; the single write's is the foundation issue's) -------------

TARGET_BATCH_PER_S = 4000.0
TARGET_SINGLE_P50_MS = 3.0
SEARCH_TARGET_SIZE = 100_000  # up to it the 100k search targets hold, above its 1M ones


def search_targets(size: int) -> tuple[float, float]:
    """The warm hybrid search's p50 and p95 targets (ms) for a store of ``size``."""
    return (5.0, 10.0) if size <= SEARCH_TARGET_SIZE else (15.0, 30.0)


# -- the corpus -------------------------------------------------------------------------

ZIPF_S = 1.0
VOCABULARY = 30_000
CONTENT_SPREAD = 6  # made-up words between two content words after the head
RARE_MIN_RANK = 300  # rare/medium query words come from ranks at or below this one
COMMON_POOL = 40  # common query words: the corpus's top words by document frequency
WARM_QUERIES = 40  # searches run, unmeasured, before each size's query sets
MISS_SHARE = 4  # the missing-word set is a quarter the size of the others: it is slow
PROJECTS = ("webdev", "infra", "research")
PROJECT_SHARE = 0.25
PRIORITY_WEIGHTS = (2, 3, 5, 8, 10, 14, 10, 8, 6, 4)
TAGS = (
    "people", "infra", "deploy", "prefs", "style", "security", "billing", "oncall",
    "api", "db", "frontend", "backend", "ml", "docs", "travel", "meeting", "decision",
    "bug", "idea", "todo", "customer", "legal", "hiring", "finance",
)  # fmt: skip

# English function words, roughly by frequency: the head of the distribution.
_FUNCTION_TEXT = """
the of and to a in is that for it as was with on be by this are at from or have an not
but they which you were his her all she there their been has one would will we when more
can if no out so said what up its about into than them only other new some could time
these two may then do first any my now such like our over me even most made after also
did many before must through back where much your way well down should because each just
those how too little very make still own see here between both being under never day same
another know while last might us great old come since against go came right used take
three always again set often until without within however during without across around
"""

# Content words of the notes an agent keeps: the upper middle of the distribution.
_CONTENT_TEXT = """
user server deploy database config build release team project service api client key
token password host port branch commit review test error log request response cache
queue worker job schedule meeting customer account invoice payment plan budget report
issue ticket bug fix feature version update migration backup restore cluster node region
network domain certificate secret policy access role permission admin owner manager
engineer designer email phone address timezone office holiday travel flight hotel
preference style format language editor terminal script command flag option default
value limit timeout retry latency memory disk storage bucket file folder path url link
document page note summary decision reason context goal risk deadline date week month
morning evening lunch coffee birthday family friend colleague partner vendor contract
price cost discount tax salary hire interview candidate offer onboarding training
workshop conference talk slide demo prototype design mockup color font layout screen
mobile desktop browser window tab button form field table column row query index schema
model dataset metric dashboard alert incident outage postmortem runbook pager rotation
shift handoff approval merge conflict rebase pipeline artifact image container pod
kubernetes docker terraform ansible python rust golang javascript typescript react
postgres redis kafka nginx linux mac windows laptop keyboard monitor printer wifi vpn
firewall proxy gateway endpoint webhook callback event stream batch export import sync
archive delete rename move copy share invite mention comment thread channel message chat
call video audio recording transcript notes agenda minutes action owner status priority
blocker dependency estimate sprint roadmap quarter goal objective result feedback survey
research paper experiment hypothesis baseline benchmark accuracy loss gradient epoch
prompt agent tool memory context window embedding vector search ranking relevance
"""

_FUNCTION_WORDS = _FUNCTION_TEXT.split()
_CONTENT_WORDS = _CONTENT_TEXT.split()

_ONSETS = (
    "b", "br", "c", "ch", "cl", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m",
    "n", "p", "pl", "pr", "r", "s", "sh", "sk", "sl", "st", "t", "th", "tr", "v", "w", "z",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ee", "io", "ou", "y")
_CODAS = ("", "", "", "", "", "n", "r", "l", "s", "t", "m", "nd", "rt", "st", "ck", "ng", "x")


def _made_up(rng: random.Random) -> str:
    syllables = rng.choice((1, 2, 2, 2, 3))
    parts = [
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
    ]
    return "".join(parts)


def build_vocabulary(rng: random.Random, size: int) -> list[str]:
    """Function words at the head, content words spread over the next few thousand ranks,
    made-up words everywhere else; ``note`` is left out (every name holds it)."""
    head = list(dict.fromkeys(_FUNCTION_WORDS))
    content = [w for w in dict.fromkeys(_CONTENT_WORDS) if w not in head and w != "note"]
    seen = set(head) | set(content) | {"note"}
    made_up: list[str] = []
    while len(head) + len(content) + len(made_up) < size:
        word = _made_up(rng)
        if len(word) >= 4 and word not in seen:
            seen.add(word)
            made_up.append(word)
    words = head
    tail = iter(made_up)
    for word in content:  # one content word, then a few made-up ones
        words.append(word)
        words.extend(itertools.islice(tail, CONTENT_SPREAD))
    words.extend(tail)
    return words


@dataclass(frozen=True, slots=True)
class Doc:
    """One synthetic memory and the vocabulary ranks of the words it holds."""

    number: int
    description: str
    body: str
    ranks: array[int]
    tags: tuple[str, ...]
    priority: int
    project: str | None

    @property
    def name(self) -> str:
        return f"note-{self.number:06d}"

    def request(self) -> WriteRequest:
        return WriteRequest(
            name=self.name,
            description=self.description,
            body=self.body,
            tags=self.tags,
            priority=self.priority,
            project=self.project,
        )


class Corpus:
    """Deterministic documents: document ``i`` depends only on the seed and ``i``."""

    def __init__(self, seed: int, vocabulary: int = VOCABULARY) -> None:
        self.seed = seed
        self.words = build_vocabulary(random.Random(f"vocabulary:{seed}"), vocabulary)
        weights = (1.0 / (rank + 1) ** ZIPF_S for rank in range(len(self.words)))
        self.cumulative = list(itertools.accumulate(weights))
        self.indices = range(len(self.words))

    def _sentence_text(self, ranks: Sequence[int], rng: random.Random) -> str:
        words = [self.words[r] for r in ranks]
        out: list[str] = []
        start = 0
        while start < len(words):
            length = rng.randint(6, 14)
            sentence = words[start : start + length]
            if len(sentence) > 6 and rng.random() < 0.3:
                sentence[len(sentence) // 2] += ","
            sentence[0] = sentence[0].capitalize()
            out.append(" ".join(sentence) + ".")
            start += length
        return " ".join(out)

    def doc(self, number: int) -> Doc:
        rng = random.Random(f"doc:{self.seed}:{number}")
        described = rng.choices(self.indices, cum_weights=self.cumulative, k=rng.randint(5, 14))
        told = rng.choices(self.indices, cum_weights=self.cumulative, k=rng.randint(30, 80))
        description = " ".join(self.words[r] for r in described)
        description = description[0].upper() + description[1:]
        tags = tuple(rng.sample(TAGS, rng.choice((0, 1, 1, 2, 2, 3))))
        priority = rng.choices(range(10), weights=PRIORITY_WEIGHTS)[0]
        project = rng.choice(PROJECTS) if rng.random() < PROJECT_SHARE else None
        return Doc(
            number=number,
            description=description,
            body=self._sentence_text(told, rng),
            ranks=array("H", described + told),
            tags=tags,
            priority=priority,
            project=project,
        )

    def docs(self, start: int, stop: int) -> list[Doc]:
        return [self.doc(i) for i in range(start, stop)]

    def missing_word(self, rng: random.Random) -> str:
        known = set(self.words)
        while True:
            word = _made_up(rng) + rng.choice(("", "ix", "oz", "ulf"))
            if len(word) >= 5 and word not in known:
                return word


# -- query sets -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuerySets:
    sets: dict[str, list[str]]
    common_pool: list[str]
    common_df_share: list[float]


def make_queries(corpus: Corpus, docs: Sequence[Doc], count: int, rng: random.Random) -> QuerySets:
    """Rare/medium, common, mixed and missing-word queries for a store holding ``docs``."""
    frequency: Counter[int] = Counter()
    for doc in docs:
        frequency.update(set(doc.ranks))
    top = [rank for rank, _ in frequency.most_common(COMMON_POOL)]
    pool = [corpus.words[r] for r in top]
    shares = [round(frequency[r] / len(docs), 3) for r in top]

    def rare_words(k: int) -> list[str]:
        while True:
            doc = docs[rng.randrange(len(docs))]
            candidates = sorted({r for r in doc.ranks if r >= RARE_MIN_RANK})
            if len(candidates) >= k:
                return [corpus.words[r] for r in rng.sample(candidates, k)]

    rare = [" ".join(rare_words(rng.choice((2, 3)))) for _ in range(count)]
    common = [" ".join(rng.sample(pool, rng.choice((2, 3)))) for _ in range(count)]
    mixed = []
    for _ in range(count):
        words = rng.sample(pool, rng.choice((1, 2))) + rare_words(rng.choice((1, 2)))
        rng.shuffle(words)
        mixed.append(" ".join(words))
    miss = [
        " ".join(corpus.missing_word(rng) for _ in range(rng.choice((2, 3))))
        for _ in range(max(1, count // MISS_SHARE))
    ]
    return QuerySets({"rare": rare, "common": common, "mixed": mixed, "miss": miss}, pool, shares)


# -- measuring --------------------------------------------------------------------------

_STARTED = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary_ms(seconds: Sequence[float]) -> dict[str, float | int]:
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50": round(percentile(ms, 50), 3),
        "p95": round(percentile(ms, 95), 3),
        "p99": round(percentile(ms, 99), 3),
        "max": round(max(ms), 3),
        "mean": round(statistics.fmean(ms), 3),
    }


def search_summary(
    seconds: Sequence[float],
    hits: Sequence[int],
    texts: Sequence[str],
    *,
    examples: int,
    slowest: int,
) -> dict[str, Any]:
    """One query set's latencies, how many hits the queries had, and its slowest queries."""
    worst = sorted(zip(seconds, texts, strict=True), reverse=True)[:slowest]
    return {
        **summary_ms(seconds),
        "mean_hits": round(statistics.fmean(hits), 2),
        "no_hits": sum(1 for h in hits if h == 0),
        "examples": list(texts[:examples]),
        "slowest": [[t, round(s * 1000.0, 2)] for s, t in worst],
    }


class Profiler:
    """cProfile per phase when a directory is given; otherwise nothing."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self.directory is None:
            yield
            return
        profile = cProfile.Profile()
        profile.enable()
        try:
            yield
        finally:
            profile.disable()
            profile.dump_stats(self.directory / f"{name}.prof")
            text = io.StringIO()
            stats = pstats.Stats(profile, stream=text)
            stats.sort_stats("cumulative").print_stats(40)
            stats.sort_stats("tottime").print_stats(25)
            (self.directory / f"{name}.txt").write_text(text.getvalue(), encoding="utf-8")


def fresh_store(home: Path, size: int) -> Path:
    """The directory of one size's store, emptied of a previous run's files."""
    directory = home / f"store-{size}"
    directory.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        (directory / f"retain.db{suffix}").unlink(missing_ok=True)
    (directory / "config.toml").unlink(missing_ok=True)
    return directory


def file_sizes(directory: Path) -> dict[str, int]:
    db = directory / "retain.db"
    wal = directory / "retain.db-wal"
    sizes = {
        "db": db.stat().st_size,
        "wal": wal.stat().st_size if wal.exists() else 0,
    }
    sizes["total"] = sizes["db"] + sizes["wal"]
    return sizes


def timed(fn: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[float, T]:
    """``fn(*args, **kwargs)`` and the seconds it took."""
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def bench_size(
    corpus: Corpus, size: int, args: argparse.Namespace, home: Path, profiler: Profiler
) -> dict[str, Any]:
    log(f"size {size}: generating {size} memories")
    docs = corpus.docs(0, size)
    extra = corpus.docs(size, size + args.single_writes)
    directory = fresh_store(home, size)
    if args.embedder != "default":  # the store's own settings: embedder "none" is lexical alone
        config = f'[search]\nembedder = "{args.embedder}"\n'
        (directory / "config.toml").write_text(config, encoding="utf-8")
    service = retain.open(directory, home=directory)
    for project in PROJECTS:
        service.add_project(project)

    # Batched writes.
    log(f"size {size}: write_many in batches of {args.batch}")
    batch_seconds: list[float] = []
    batch_sizes: list[int] = []
    with profiler.phase(f"{size}-write_many"):
        for start in range(0, size, args.batch):
            requests = [d.request() for d in docs[start : start + args.batch]]
            seconds, _ = timed(service.write_many, requests)
            batch_seconds.append(seconds)
            batch_sizes.append(len(requests))
            done = start + len(requests)
            if done % (args.batch * 10) == 0 or done == size:
                log(f"  {done:>7} written, last batch {len(requests) / seconds:8.0f}/s")
    total = sum(batch_seconds)
    tenth = max(1, len(batch_seconds) // 10)
    batched = {
        "memories": size,
        "batch": args.batch,
        "seconds": round(total, 3),
        "per_s": round(size / total, 1),
        "first_tenth_per_s": round(sum(batch_sizes[:tenth]) / sum(batch_seconds[:tenth]), 1),
        "last_tenth_per_s": round(sum(batch_sizes[-tenth:]) / sum(batch_seconds[-tenth:]), 1),
        "batch_ms": summary_ms(batch_seconds),
    }
    log(f"size {size}: {batched['per_s']:.0f} memories/s batched")

    # Single durable writes: new memories, then updates of existing ones.
    log(f"size {size}: {args.single_writes} single writes")
    singles: list[float] = []
    with profiler.phase(f"{size}-write_single"):
        for doc in extra:
            r = doc.request()
            seconds, _ = timed(
                service.write,
                r.name,
                description=r.description,
                body=r.body,
                tags=r.tags,
                priority=r.priority,
                project=r.project,
            )
            singles.append(seconds)
    rng = random.Random(f"updates:{args.seed}:{size}")
    updates: list[float] = []
    with profiler.phase(f"{size}-write_update"):
        for doc in rng.sample(docs, min(len(docs), args.single_writes)):
            body = doc.body + " Updated."
            seconds, _ = timed(service.write, doc.name, body=body, project=doc.project)
            updates.append(seconds)

    # Search.
    queries = make_queries(corpus, docs, args.queries, random.Random(f"q:{args.seed}:{size}"))
    warm = random.Random(f"warm:{args.seed}")
    every = list(itertools.chain(*queries.sets.values()))
    for query in warm.sample(every, min(WARM_QUERIES, len(every))):
        service.search(query)
    searches: dict[str, Any] = {}
    for kind, texts in queries.sets.items():
        log(f"size {size}: {len(texts)} {kind} searches")
        seconds_list: list[float] = []
        hits: list[int] = []
        with profiler.phase(f"{size}-search_{kind}"):
            for text in texts:
                seconds, result = timed(service.search, text)
                seconds_list.append(seconds)
                hits.append(len(result.hits))
        searches[kind] = search_summary(seconds_list, hits, texts, examples=3, slowest=5)
        log(
            f"  {kind}: p50 {searches[kind]['p50']:.2f} ms, p95 {searches[kind]['p95']:.2f} ms, "
            f"max {searches[kind]['max']:.2f} ms"
        )
    searches["common_words"] = {"pool": queries.common_pool, "df_share": queries.common_df_share}

    sizes = file_sizes(directory)
    service.close()
    single = summary_ms(singles)
    targeted = [searches[k] for k in ("rare", "common", "mixed")]
    p50_target, p95_target = search_targets(size)
    return {
        "batched_write": batched,
        "single_write_ms": single,
        "single_update_ms": summary_ms(updates),
        "search_ms": searches,
        "store_bytes": {**sizes, "per_memory": round(sizes["total"] / size, 1)},
        "meets_targets": {
            "batched_write": batched["per_s"] >= TARGET_BATCH_PER_S,
            "single_write_p50": single["p50"] <= TARGET_SINGLE_P50_MS,
            "search_p50": all(s["p50"] <= p50_target for s in targeted),
            "search_p95": all(s["p95"] <= p95_target for s in targeted),
        },
    }


def durable_commit_floor(home: Path, commits: int = 200) -> dict[str, float | int]:
    """One-row commits on a bare SQLite file with the store's pragmas: the disk's floor."""
    path = home / "floor.db"
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = FULL")
        con.execute("CREATE TABLE t(x)")
        seconds = []
        for i in range(commits):
            start = time.perf_counter()
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT INTO t VALUES (?)", (i,))
            con.execute("COMMIT")
            seconds.append(time.perf_counter() - start)
    finally:
        con.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return summary_ms(seconds)


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def source_state() -> dict[str, Any]:
    """The commit measured and any uncommitted change to src/ (read-only git).

    Taken when the run starts, after ``retain`` is imported: that is the code measured.
    """
    state: dict[str, Any] = {"commit": None, "src_modified": None, "src_diff_sha256": None}
    with suppress(OSError, subprocess.SubprocessError):
        state["commit"] = _git("rev-parse", "HEAD").strip()
        changed = _git("status", "--porcelain", "--", "src").splitlines()
        state["src_modified"] = sorted(line[3:] for line in changed if line.strip())
        if state["src_modified"]:
            diff = _git("diff", "HEAD", "--", "src").encode("utf-8")
            state["src_diff_sha256"] = hashlib.sha256(diff).hexdigest()
    return state


def machine_busy_s() -> float:
    """CPU seconds every core of this machine has spent busy since boot (``/proc/stat``)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user and system) process ``pid`` has used (``/proc/PID/stat``); 0 if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return 0.0
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    with suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gib = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "memory_gib": memory_gib,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "retain": retain.__version__,
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000", help="store sizes, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="queries per query set")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--home", type=Path, help="where the stores go (default: a temp dir)")
    parser.add_argument("--batch", type=int, default=1000, help="requests per write_many")
    parser.add_argument("--single-writes", type=int, default=500, help="single writes measured")
    parser.add_argument("--profile", type=Path, help="write cProfile output of each phase here")
    parser.add_argument(
        "--embedder",
        default="default",
        help="default (the shipped configuration), static, hash or none (lexical alone)",
    )
    args = parser.parse_args(argv)
    args.size_list = [int(s) for s in args.sizes.split(",") if s.strip()]
    if not args.size_list or min(args.size_list) < 1:
        parser.error("--sizes needs one or more positive whole numbers")
    for option in ("queries", "batch", "single_writes"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    temporary = args.home is None
    home = Path(tempfile.mkdtemp(prefix="retain-bench-")) if temporary else args.home
    profiler = Profiler(args.profile)
    started = datetime.now(UTC)
    source = source_state()
    log(f"stores under {home}; corpus seed {args.seed}")
    corpus = Corpus(args.seed)
    results: dict[str, Any] = {}
    try:
        home.mkdir(parents=True, exist_ok=True)
        floor = durable_commit_floor(home)
        log(f"bare SQLite durable commit: p50 {floor['p50']:.3f} ms")
        for size in args.size_list:
            results[str(size)] = bench_size(corpus, size, args, home, profiler)
    finally:
        if temporary:
            shutil.rmtree(home, ignore_errors=True)
    report = {
        "benchmark": "bench/store.py",
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/store.py", *(argv or sys.argv[1:])]),
        "machine": {**machine(), "bare_sqlite_commit_ms": floor},
        "source": source,
        "parameters": {
            "sizes": args.size_list,
            "queries_per_set": args.queries,
            "seed": args.seed,
            "batch": args.batch,
            "single_writes": args.single_writes,
            "vocabulary": VOCABULARY,
            "zipf_s": ZIPF_S,
            "profiled": args.profile is not None,
            "embedder": args.embedder,
        },
        "targets": {
            "batched_write_per_s": TARGET_BATCH_PER_S,
            "single_write_p50_ms": TARGET_SINGLE_P50_MS,
            "search_p50_p95_ms": {size: search_targets(size) for size in args.size_list},
        },
        "results": results,
        "seconds": round(time.perf_counter() - _STARTED, 1),
    }
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
