"""A large embedded store searched from cold processes: the approximate index against the
exact scan, side by side.

    python bench/cold.py [--sizes 100000] [--queries 20] [--cli 10] [--home DIR] [--seed 1]
                         [--batch 5000] [--reuse] [--compact]

For each size a store is loaded with ``bench/store.py``'s synthetic memories (the default
embedder, ``write_many`` in batches of ``--batch`` with a progress callback, as an import
writes them: the vector index is kept up by those writes), one memory in a thousand in
the project ``tiny`` (a scope holding 0.1% of the store), another in a thousand tagged
``rare`` as well, a third trusted ``verified`` (as an import restores a memory's trust;
the rest are ``attested``, as the operator writes), a fourth referencing ``CITED``, a
fifth already expired and a sixth last verified a year ago (``STALE``: as an import
restores it).
``--reuse`` keeps a store already loaded under ``--home``. Then, for each way of
searching it — ``ann`` (the default settings: the approximate index beside the file) and
``exact`` (``[search] ann_from = 0``: every vector read into memory) — in a new process
each:

* ``open_ms`` and ``first_search_ms`` (everything the first search of a new process
  loads: numpy, the embedder, the vectors or their index, the search itself; the
  measuring process imports nothing that loads numpy before it), the same search
  again (``same_search_again_ms``: the difference is what the first one loaded; from
  65,536 codes this second search loads numpy, ``sqlite_ann.warmed``), then
  the store's rare/common/mixed query sets searched warm (p50, p95), and the process's
  peak RSS (``VmHWM``); then the same queries searched within the project tier of
  ``tiny`` alone (``tier_search_ms``), within the tier of ``infra``, a project of about
  8% of the store (``project_search_ms``), and for memories tagged ``infra``, about 6%
  (``tag_search_ms``), and ``rare``, 0.1% (``rare_tag_search_ms``), and kept to the
  memories trusted ``verified``, 0.1% (``trusted_search_ms``: ``min_trust``), and to
  those referencing ``CITED``, 0.1% (``cited_search_ms``), to the expired, 0.1%
  (``expired_search_ms``: ``expired``) and to those not verified for ``STALE``, 0.1%
  (``stale_search_ms``: ``unverified``); and a listing's first page (20, no query) of
  each small filter (``listing_ms``: the 0.1% project, tag, trust, reference, expiry and
  staleness);
* ``retain search QUERY`` run as a whole command (``--cli`` of them, a new interpreter
  each, the machine's page cache warm): wall time p50 and max.

In the ``ann`` process the semantic sense is also checked against the exact scan of the
stored vectors (read from the file, every row): recall@10 of the index's 10 nearest
(asked as a search of ten asks: ``rank.DEPTH``) over the query sets, and the same over
the ``tiny`` scope alone, the ``infra`` tier, the ``infra`` and ``rare`` tags, the
verified memories, those referencing ``CITED``, the expired and the stale, with the
time of each query vector's nearest (``nearest_ms``, one at a time, the query embedded
before: what ``bench/chroma.py`` times of chromadb).
The top-10 results of the two ways are compared query by query (``same_top10``).
Beside recall, ``within_0.001``: the share of the index's ten that score at least the
exact tenth's cosine less 0.001 (the synthetic corpus holds many rows within a
thousandth of each other: a miss among them is a tie).

``--compact`` runs ``compact`` on the loaded store first (timed, with the segments before
and after); ``segments`` says how many each measurement met.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import retain  # noqa: E402
from store import Corpus, log, machine, make_queries, source_state, summary_ms  # noqa: E402

MODES = ("ann", "exact")
SCOPE = "tiny"
PROJECT = "infra"  # a project of about 8% of the store (three share the quarter outside global)
TAG = "infra"  # a tag of about 6% (one of 24, up to three a memory)
RARE = "rare"  # a tag of 0.1%: one memory in a thousand (not the small scope's)
TRUSTED = "verified"  # the trust of 0.1%: one memory in a thousand (neither of the others)
CITED = "https://wiki/rare"  # a record 0.1% of the memories reference (none of the others)
EXPIRED = "2020-01-01"  # the expiry of 0.1%: past before they are written (none of the others)
STALE = "90d"  # 0.1% were last verified a year ago, longer than this (none of the others)
FILTERED = ("project", "tag", "rare_tag", "trusted", "cited", "expired", "stale")
SCOPE_EVERY = 1000  # one memory in a thousand is the small scope's
SMALL: dict[str, dict[str, Any]] = {  # a listing's options for each filter of 0.1%
    "tier": {"project": SCOPE},
    "rare_tag": {"tag": RARE},
    "trusted": {"min_trust": TRUSTED},
    "cited": {"referencing": CITED},
    "expired": {"expired": True},
    "stale": {"unverified": STALE},
}
WARM_QUERY = "deploy the new release to the server"
TARGETS = {  # the issue's, for this 2-core machine
    100_000: {"first_search_ms": 50, "cli_ms": 300, "rss_mib": 150, "p50_ms": 5, "p95_ms": 10},
    1_000_000: {"first_search_ms": 200, "cli_ms": 500, "rss_mib": 400, "p50_ms": 15, "p95_ms": 30},
}
RECALL_TARGET = 0.98


def write_config(directory: Path, mode: str) -> None:
    path = directory / "config.toml"
    if mode == "exact":
        path.write_text("[search]\nann_from = 0\n", encoding="utf-8")
    else:
        path.unlink(missing_ok=True)


def restored(number: int) -> Any:
    """What an import restores of memory ``number``: trusted ``verified``, or last
    verified a year ago; None for the rest."""
    if number % SCOPE_EVERY not in (2, 5):
        return None
    from datetime import UTC, datetime, timedelta

    from retain.model import Trust
    from retain.write_results import Restore

    now = datetime.now(UTC)
    if number % SCOPE_EVERY == 2:
        year_ago = now - timedelta(days=365)
        return Restore(created_at=year_ago, verified_at=year_ago, read_count=0)
    return Restore(created_at=now, verified_at=now, read_count=0, trust=Trust(TRUSTED))


def load(directory: Path, size: int, batch: int, corpus: Corpus) -> dict[str, Any]:
    """The store of ``size`` memories, written as an import writes them."""
    write_config(directory, "ann")
    store = retain.open(directory / "retain.db", home=directory)
    for project in ("webdev", "infra", "research", SCOPE):
        store.add_project(project)
    phases: dict[str, float] = {}

    def progress(phase: str, done: int, total: int) -> None:
        phases[phase] = time.perf_counter()

    began = time.perf_counter()
    index_s = 0.0
    for start in range(0, size, batch):
        docs = corpus.docs(start, min(start + batch, size))
        requests = [
            replace(
                d.request(),
                project=SCOPE if d.number % SCOPE_EVERY == 7 else d.project,
                tags=(*d.tags, RARE) if d.number % SCOPE_EVERY == 3 else d.tags,
                restore=restored(d.number),
                references=(CITED,) if d.number % SCOPE_EVERY == 9 else None,
                expires=EXPIRED if d.number % SCOPE_EVERY == 1 else None,
            )
            for d in docs
        ]
        phases.clear()
        store.write_many(requests, progress=progress)
        ended = time.perf_counter()
        if "vector index" in phases:
            index_s += ended - max(phases.get("embed", ended), phases.get("write", ended))
        done = start + len(requests)
        if done % (batch * 10) == 0 or done == size:
            log(f"  {done:>8} written, {done / (ended - began):6.0f}/s overall")
    seconds = time.perf_counter() - began
    store.close()
    return {
        "memories": size,
        "seconds": round(seconds, 1),
        "per_s": round(size / seconds),
        "vector_index_seconds": round(index_s, 1),
    }


def measure(directory: Path, mode: str) -> dict[str, Any]:
    """One new process's searches of the store (see the module docstring)."""
    spec = json.loads((directory / "queries.json").read_text(encoding="utf-8"))
    began = time.perf_counter()
    store = retain.open(directory / "retain.db", home=directory)
    open_ms = (time.perf_counter() - began) * 1000
    began = time.perf_counter()
    store.search(WARM_QUERY)
    first_ms = (time.perf_counter() - began) * 1000
    began = time.perf_counter()
    store.search(WARM_QUERY)
    again_ms = (time.perf_counter() - began) * 1000
    seconds, tops = searched(store, spec)
    from scale import rss_mib  # (it imports numpy: not before the first search)

    rss = rss_mib()
    in_tier, _ = searched(store, spec, project=SCOPE, tier="project")
    in_project, _ = searched(store, spec, project=PROJECT, tier="project")
    tagged, _ = searched(store, spec, tag=TAG)
    rare, _ = searched(store, spec, tag=RARE)
    trusted, _ = searched(store, spec, min_trust=TRUSTED)
    cited, _ = searched(store, spec, referencing=CITED)
    expired, _ = searched(store, spec, expired=True)
    stale, _ = searched(store, spec, unverified=STALE)
    listing = {name: summary_ms(listed(store, options)) for name, options in SMALL.items()}
    out: dict[str, Any] = {
        "open_ms": round(open_ms, 1),
        "first_search_ms": round(first_ms, 1),
        "same_search_again_ms": round(again_ms, 1),  # first - again: what the first loads
        "search_ms": summary_ms(seconds),
        "tier_search_ms": summary_ms(in_tier),
        "project_search_ms": summary_ms(in_project),
        "tag_search_ms": summary_ms(tagged),
        "rare_tag_search_ms": summary_ms(rare),
        "trusted_search_ms": summary_ms(trusted),
        "cited_search_ms": summary_ms(cited),
        "expired_search_ms": summary_ms(expired),
        "stale_search_ms": summary_ms(stale),
        "listing_ms": listing,
        "rss_mib": rss["hwm"],
        "tops": tops,
    }
    out["segments"] = segments(directory)
    if mode == "ann":
        texts = [t for texts in spec["sets"].values() for t in texts]
        out["recall"] = recall(store, texts)
    store.close()
    return out


def searched(
    store: retain.MemoryService, spec: dict[str, Any], **options: Any
) -> tuple[list[float], dict[str, list[str]]]:
    """Each query of the store's sets searched once with ``options``: the seconds each
    took, and each query's results (ids, best first)."""
    seconds, tops = [], {}
    for texts in spec["sets"].values():
        for text in texts:
            began = time.perf_counter()
            result = store.search(text, **options)
            seconds.append(time.perf_counter() - began)
            tops[text] = [hit.memory.id for hit in result.hits]
    return seconds, tops


def segments(directory: Path) -> list[int]:
    """The rows of each segment of the store's approximate index (none: [])."""
    found = sorted((directory / "retain.db.vectors").glob("*.json"))
    if not found:
        return []
    return [s["rows"] for s in json.loads(found[0].read_text(encoding="utf-8"))["segments"]]


def listed(store: retain.MemoryService, options: dict[str, Any], times: int = 20) -> list[float]:
    """The seconds each of ``times`` listings' first page (20, no query) took."""
    seconds = []
    for _ in range(times):
        began = time.perf_counter()
        store.list_memories(limit=20, **options)
        seconds.append(time.perf_counter() - began)
    return seconds


def recall(store: retain.MemoryService, texts: list[str]) -> dict[str, Any]:
    """The index's nearest against the exact scan of every stored vector, for the whole
    realm, the small scope, a project's tier, a common tag and a rare one, the verified
    memories, those referencing ``CITED``, the expired and the stale."""
    from datetime import UTC, datetime

    from retain.chrono import before, parse_duration, stamp
    from retain.search import key, rank
    from retain.storage.base import MemoryFilter

    embedder = store.embedder.embedder
    assert embedder is not None
    asked = key.embed(embedder, texts)
    model, dim = embedder.model_id, embedder.dim
    now, stale_for = datetime.now(UTC), parse_duration(STALE)
    wheres = {
        "realm": MemoryFilter(store.realm),
        "scope": MemoryFilter(store.realm, scopes=(f"project:{SCOPE}",)),
        "project": MemoryFilter(store.realm, scopes=(f"project:{PROJECT}",)),
        "tag": MemoryFilter(store.realm, tag=TAG),
        "rare_tag": MemoryFilter(store.realm, tag=RARE),
        "trusted": MemoryFilter(store.realm, trusts=(TRUSTED,)),
        "cited": MemoryFilter(store.realm, referencing=(CITED,)),
        "expired": MemoryFilter(store.realm, expired_at=stamp(now)),
        "stale": MemoryFilter(store.realm, verified_before=stamp(before(now, stale_for))),
    }

    def run(tx: Any) -> dict[str, Any]:
        tx.open_vectors(model, dim, store.settings.ann_from)
        found: dict[str, Any] = {}
        for name, where in wheres.items():
            near, seconds = [], []
            for i in range(len(texts)):  # one at a time, as chromadb is measured
                began = time.perf_counter()
                near += tx.nearest(model, asked[i : i + 1], where, rank.DEPTH)
                seconds.append(time.perf_counter() - began)
            truth = exact_top(tx, model, dim, asked, where, 10)
            found[name] = recalled(near, truth) | {"nearest_ms": summary_ms(seconds)}
        return found

    result: dict[str, Any] = store.backend.read(run)
    return result


def recalled(near: list[list[Any]], truth: list[list[tuple[float, str]]]) -> dict[str, Any]:
    """Each query's ten found (``near``, best first) against its exact ten (``truth``,
    (cosine, id) best first): the mean recall@10, the worst query's, and the share of
    those found within 0.001 of the exact tenth's cosine."""
    got = [
        len({h.memory_id for h in n[:10]} & {i for _, i in t}) / max(1, min(10, len(t)))
        for n, t in zip(near, truth, strict=True)
    ]
    tied = [
        statistics.fmean(h.score >= t[-1][0] - 0.001 for h in n[:10]) if t else 1.0
        for n, t in zip(near, truth, strict=True)
    ]
    return {
        "recall_at_10": round(statistics.fmean(got), 4),
        "worst": round(min(got), 2),
        "within_0.001": round(statistics.fmean(tied), 4),
    }


def exact_top(
    tx: Any, model: str, dim: int, asked: Any, where: Any, k: int
) -> list[list[tuple[float, str]]]:
    """Each query's ``k`` best (cosine, id) over every stored vector passing ``where``."""
    import numpy as np  # here: the first search of a measuring process imports it itself

    best: list[list[tuple[float, str]]] = [[] for _ in asked]
    after = 0
    while True:
        nums, ids, blobs = tx.vectors_where(model, where, after, 20000)
        if not nums:
            break
        scores = asked @ np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(nums), dim).T
        for q, row in enumerate(scores):
            top = np.argsort(-row, kind="stable")[:k]
            merged = best[q] + [(float(row[j]), ids[j]) for j in top]
            best[q] = sorted(merged, key=lambda b: -b[0])[:k]
        after = nums[-1]
    return best


def in_new_process(directory: Path, mode: str) -> dict[str, Any]:
    write_config(directory, mode)
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", mode, str(directory)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def compact(directory: Path) -> dict[str, Any]:
    """``compact`` of the store, timed, and the index's segments before and after."""
    write_config(directory, "ann")
    before = segments(directory)
    store = retain.open(directory / "retain.db", home=directory)
    began = time.perf_counter()
    done = store.compact(progress=lambda phase, done, total: None)
    seconds = time.perf_counter() - began
    store.close()
    return {
        "seconds": round(seconds, 1),
        "steps": done["steps"],
        "segments_before": before,
        "segments_after": segments(directory),
    }


def cli_times(directory: Path, texts: list[str]) -> dict[str, Any]:
    """``retain search`` as a whole command, once per query, wall time each."""
    retain_cli = Path(sys.executable).with_name("retain")
    seconds = []
    for text in texts:
        began = time.perf_counter()
        subprocess.run(
            [str(retain_cli), "search", text, "--home", str(directory), "--format", "json"],
            stdout=subprocess.DEVNULL,
            check=True,
        )
        seconds.append(time.perf_counter() - began)
    return {"p50": round(statistics.median(seconds) * 1000, 1), "max": round(max(seconds) * 1000)}


def bench_size(size: int, args: argparse.Namespace, corpus: Corpus) -> dict[str, Any]:
    directory = args.home / f"cold-{size}"
    loaded: dict[str, Any] | None = None
    if not (args.reuse and (directory / "retain.db").exists()):
        directory.mkdir(parents=True, exist_ok=True)
        for path in directory.glob("retain.db*"):
            if path.is_dir():
                for inner in path.iterdir():
                    inner.unlink()
                path.rmdir()
            else:
                path.unlink()
        log(f"size {size}: loading")
        loaded = load(directory, size, args.batch, corpus)
        log(f"size {size}: {loaded}")
    compacted: dict[str, Any] | None = None
    if args.compact:
        compacted = compact(directory)
        log(f"size {size}: {compacted}")
    sample = [corpus.doc(i * size // min(size, 20000)) for i in range(min(size, 20000))]
    queries = make_queries(corpus, sample, args.queries, random.Random(f"cold:{args.seed}"))
    sets = {k: v for k, v in queries.sets.items() if k in ("rare", "common", "mixed")}
    (directory / "queries.json").write_text(json.dumps({"sets": sets}), encoding="utf-8")
    modes: dict[str, Any] = {}
    for mode in MODES:
        log(f"size {size}: {mode}: measuring in a new process")
        modes[mode] = in_new_process(directory, mode)
        texts = [t for v in sets.values() for t in v][: args.cli]
        modes[mode]["cli_ms"] = cli_times(directory, texts)
        shown = {k: v for k, v in modes[mode].items() if k != "tops"}
        log(f"size {size}: {mode}: {shown}")
    write_config(directory, "ann")
    same = [modes["ann"]["tops"][t] == modes["exact"]["tops"][t] for t in modes["exact"]["tops"]]
    overlap = [
        len(set(modes["ann"]["tops"][t]) & set(e)) / max(1, len(e))
        for t, e in modes["exact"]["tops"].items()
    ]
    for mode in MODES:
        del modes[mode]["tops"]
    ann, targets = modes["ann"], TARGETS.get(size, {})
    checks = {
        "first_search": ann["first_search_ms"] <= targets.get("first_search_ms", float("inf")),
        "cli": ann["cli_ms"]["p50"] <= targets.get("cli_ms", float("inf")),
        "rss": ann["rss_mib"] <= targets.get("rss_mib", float("inf")),
        "p50": ann["search_ms"]["p50"] <= targets.get("p50_ms", float("inf")),
        "p95": ann["search_ms"]["p95"] <= targets.get("p95_ms", float("inf")),
        "recall": ann["recall"]["realm"]["recall_at_10"] >= RECALL_TARGET,
        "scope_recall": ann["recall"]["scope"]["recall_at_10"] >= RECALL_TARGET,
        "filtered_recall": min(ann["recall"][w]["recall_at_10"] for w in FILTERED) >= RECALL_TARGET,
    }
    return {
        "size": size,
        "load": loaded,
        "compact": compacted,
        "modes": modes,
        "same_top10": round(statistics.fmean(same), 4),
        "top10_overlap": round(statistics.fmean(overlap), 4),
        "targets": targets if targets else None,
        "checks": checks if targets else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--queries", type=int, default=20, help="queries per set")
    parser.add_argument("--cli", type=int, default=10, help="whole `retain search` commands")
    parser.add_argument("--home", type=Path, default=Path("/tmp/retain-bench-cold"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--reuse", action="store_true", help="keep a store already loaded")
    parser.add_argument("--compact", action="store_true", help="compact the store first")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        mode, directory = args.measure
        print(json.dumps(measure(Path(directory), mode)))
        return 0
    corpus = Corpus(args.seed)
    results = [bench_size(int(s), args, corpus) for s in args.sizes.split(",")]
    print(
        json.dumps(
            {
                "benchmark": "cold",
                "source": source_state(),
                "machine": machine(),
                "load_average": os.getloadavg(),
                "results": results,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
