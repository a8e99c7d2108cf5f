"""Approximate-nearest-neighbour libraries measured side by side, for the embedded store.

    python bench/ann.py [--sizes 100000] [--variants usearch-i8,faiss-sq8,…] [--queries 200]
                        [--home DIR] [--seed 1]

The vectors are real: ``bench/store.py``'s synthetic memories (description and body)
embedded by the default embedder (the bundled static model), cached under ``--home``
as ``vectors-<size>.npy`` so that a rerun skips the embedding. The queries are
``store.py``'s rare, common and mixed query sets, embedded the same way; the truth is
the exact scan (float32 cosine) over every vector.

Each library builds an index of the same rows (cosine, 8-bit codes where it has them,
M = 16, construction depth 128), saves it, and is then measured in a **new process**
(this script again, in a hidden ``--open`` mode), as a CLI search would meet it:
importing the library and opening the file (memory-mapped where the library can),
the first search, warm searches of 200 candidates (the semantic sense's first window)
on one thread, p50 and p95, recall@10 of those candidates against the exact top 10,
and the process's RSS. A **scope** test then keeps only the rows of a random 0.1% of
the memories (a small project in a large store) and asks how many candidates each
library must return before the exact top 10 of the scope is among them, widening
200 → 800 → 3,200 → 12,800 (the store's filter is exact and runs after the index).

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import rss_mib  # noqa: E402
from store import Corpus, log, make_queries, source_state  # noqa: E402

VARIANTS = ("usearch-i8", "usearch-f16", "usearch-i8-cos", "faiss-sq8", "hnswlib-f32")
CONNECTIVITY = 16  # M: each node's neighbours
EXPANSION_ADD = 128  # ef at construction
CANDIDATES = 200  # what the semantic sense asks for first (its window: depth 50 × 4)
WIDENING = (200, 800, 3200, 12800)
SCOPE_SHARE = 0.001
BATCH = 5000

Matrix = npt.NDArray[np.float32]


# -- the data --------------------------------------------------------------------------------


def embedder() -> Any:
    import retain
    from retain.search.embed import EmbedderSettings, load_embedder

    del retain
    loaded = load_embedder(EmbedderSettings())
    assert loaded.embedder is not None, "the default embedder did not load"
    return loaded.embedder


def vectors_file(home: Path, seed: int, size: int) -> Path:
    return home / f"vectors-{seed}-{size}.npy"


def vectors(corpus: Corpus, size: int, home: Path) -> Matrix:
    """The corpus's first ``size`` memories embedded (cached in ``home``)."""
    cached = vectors_file(home, corpus.seed, size)
    if cached.exists():
        return np.load(cached, mmap_mode="r")
    model = embedder()
    out = np.empty((size, model.dim), dtype=np.float32)
    for start in range(0, size, BATCH):
        docs = corpus.docs(start, min(size, start + BATCH))
        out[start : start + len(docs)] = model.embed([f"{d.description}\n{d.body}" for d in docs])
        log(f"embedded {start + len(docs):,} of {size:,}")
    np.save(cached, out)
    return out


def queries(corpus: Corpus, size: int, count: int, seed: int) -> Matrix:
    sample = [corpus.doc(i * size // min(size, 20000)) for i in range(min(size, 20000))]
    sets = make_queries(corpus, sample, count, random.Random(f"ann:{seed}:{size}")).sets
    texts = sets["rare"] + sets["common"] + sets["mixed"]
    embedded: Matrix = embedder().embed(texts)
    return embedded


def exact_top(matrix: Matrix, asked: Matrix, k: int, rows: npt.NDArray[np.int64] | None = None):
    """Each query's ``k`` best rows by cosine (of ``rows`` only, when given)."""
    found = []
    for start in range(0, len(asked), 50):
        part = asked[start : start + 50]
        if rows is None:
            scores = part @ np.asarray(matrix).T
            top = np.argpartition(-scores, k, axis=1)[:, :k]
            found.extend(set(map(int, t)) for t in top)
        else:
            scores = part @ np.asarray(matrix[rows]).T
            top = np.argpartition(-scores, min(k, len(rows) - 1), axis=1)[:, :k]
            found.extend({int(rows[i]) for i in t} for t in top)
    return found


# -- the libraries ---------------------------------------------------------------------------


def build(variant: str, matrix: Matrix, path: Path) -> dict[str, Any]:
    """Build and save ``variant``'s index of ``matrix``: centred rows under the inner
    product (see the module's notes), or, for ``usearch-i8-cos``, the rows as they are."""
    lib, _, kind = variant.partition("-")
    began = time.perf_counter()
    keys = np.arange(len(matrix), dtype=np.int64)
    rows = np.asarray(matrix)
    metric = "ip"
    if kind.endswith("-cos"):
        metric, kind = "cos", kind.removesuffix("-cos")
    else:
        centred = rows - rows.mean(axis=0)
        rows = (centred / np.abs(centred).max()).astype(np.float32)  # one scale: same order
    if lib == "usearch":
        from usearch.index import Index

        index = Index(
            ndim=rows.shape[1],
            metric=metric,
            dtype=kind,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        for start in range(0, len(rows), 50000):
            index.add(keys[start : start + 50000], rows[start : start + 50000])
        index.save(str(path))
    elif lib == "faiss":
        import faiss

        index = faiss.IndexHNSWSQ(
            rows.shape[1], faiss.ScalarQuantizer.QT_8bit, CONNECTIVITY, faiss.METRIC_INNER_PRODUCT
        )
        index.hnsw.efConstruction = EXPANSION_ADD
        index.train(rows[: min(len(rows), 100000)])
        index.add(rows)
        faiss.write_index(index, str(path))
    else:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=rows.shape[1])
        index.init_index(len(rows), ef_construction=EXPANSION_ADD, M=CONNECTIVITY)
        index.add_items(rows, keys)
        index.save_index(str(path))
    seconds = time.perf_counter() - began
    return {
        "build_s": round(seconds, 1),
        "per_s": round(len(matrix) / seconds),
        "file_mib": round(path.stat().st_size / 2**20, 1),
    }


def opener(variant: str, path: Path, dim: int, size: int) -> Callable[[Matrix, int], Any]:
    """Open the saved index as a new process would; a search function ``(queries, k) →
    rows`` (each query's candidates, best first)."""
    lib = variant.partition("-")[0]
    if lib == "usearch":
        from usearch.index import Index

        index = Index.restore(str(path), view=True)

        def search(asked: Matrix, k: int) -> Any:
            index.expansion_search = max(k, 64)
            found = index.search(asked, k, threads=1)
            if len(asked) == 1:  # one query: one Matches, not a batch
                return [found.keys]
            return [found.keys[i][: found.counts[i]] for i in range(len(asked))]

    elif lib == "faiss":
        import faiss

        faiss.omp_set_num_threads(1)
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)

        def search(asked: Matrix, k: int) -> Any:
            index.hnsw.efSearch = max(k, 64)
            _, rows = index.search(asked, k)
            return [r[r >= 0] for r in rows]

    else:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=dim)
        index.load_index(str(path), max_elements=size)
        index.set_num_threads(1)

        def search(asked: Matrix, k: int) -> Any:
            index.set_ef(max(k, 64))
            rows, _ = index.knn_query(asked, k)
            return list(rows)

    return search


def measure_open(variant: str, path: Path, work: Path) -> dict[str, Any]:
    """In this (new) process: open, first search, warm searches, recall, scope, RSS.

    A search is the index's ``CANDIDATES`` best, then their exact cosines from the
    float32 rows (memory-mapped) and the best 10 of those: what the store would rank.
    """
    spec = json.loads((work / "spec.json").read_text(encoding="utf-8"))
    asked: Matrix = np.load(work / "queries.npy")
    truth = [set(t) for t in spec["truth"]]
    scope = np.array(spec["scope"], dtype=np.int64)
    scope_truth = [set(t) for t in spec["scope_truth"]]
    started = rss_mib()
    began = time.perf_counter()
    search = opener(variant, path, spec["dim"], spec["size"])
    floats = np.load(spec["vectors"], mmap_mode="r")
    open_ms = (time.perf_counter() - began) * 1000

    def best(query: Matrix, rows: npt.NDArray[Any], k: int = 10) -> list[int]:
        rows = np.sort(rows.astype(np.int64))  # in file order: fewer pages touched
        exact = floats[rows] @ query
        return [int(r) for r in rows[np.argsort(-exact, kind="stable")[:k]]]

    began = time.perf_counter()
    best(asked[0], search(asked[:1], CANDIDATES)[0])
    first_ms = (time.perf_counter() - began) * 1000
    seconds, raw, exact = [], [], []
    for i, want in enumerate(truth):
        began = time.perf_counter()
        rows = search(asked[i : i + 1], CANDIDATES)[0]
        top = best(asked[i], rows)
        seconds.append(time.perf_counter() - began)
        raw.append(len(want & set(map(int, rows[:10]))) / len(want))
        exact.append(len(want & set(top)) / len(want))
    in_scope = set(map(int, scope))
    widened: dict[int, float] = {}
    for k in WIDENING:
        found = search(asked, k)
        got = [
            len(want & set(best(q, np.array([r for r in rows if int(r) in in_scope])))) / len(want)
            for q, want, rows in zip(asked, scope_truth, found, strict=True)
        ]
        widened[k] = round(statistics.fmean(got), 4)
    seconds.sort()
    return {
        "open_ms": round(open_ms, 2),
        "first_search_ms": round(first_ms, 2),
        "search_ms": {
            "p50": round(seconds[len(seconds) // 2] * 1000, 3),
            "p95": round(seconds[int(len(seconds) * 0.95)] * 1000, 3),
        },
        "recall_at_10_index_order": round(statistics.fmean(raw), 4),
        "recall_at_10": round(statistics.fmean(exact), 4),
        "scope_recall_at_10_by_candidates": widened,
        "rss_mib": {"started": started["current"], "searched": rss_mib()["current"]},
    }


def open_in_new_process(variant: str, path: Path, work: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--open", variant, str(path), str(work)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- the run ---------------------------------------------------------------------------------


def bench_size(size: int, args: argparse.Namespace, home: Path) -> dict[str, Any]:
    corpus = Corpus(args.seed)
    matrix = vectors(corpus, size, home)
    asked = queries(corpus, size, args.queries, args.seed)
    rng = np.random.default_rng(args.seed)
    scope = np.sort(rng.choice(size, max(10, int(size * SCOPE_SHARE)), replace=False))
    log(f"{size:,}: exact truth for {len(asked)} queries")
    began = time.perf_counter()
    truth = exact_top(matrix, asked, 10)
    exact_ms = (time.perf_counter() - began) * 1000 / len(asked)
    work = home / f"work-{size}"
    work.mkdir(exist_ok=True)
    np.save(work / "queries.npy", asked)
    spec = {
        "size": size,
        "dim": int(matrix.shape[1]),
        "vectors": str(vectors_file(home, corpus.seed, size)),
        "truth": [sorted(t) for t in truth],
        "scope": scope.tolist(),
        "scope_truth": [sorted(t) for t in exact_top(matrix, asked, 10, scope)],
    }
    (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    out: dict[str, Any] = {
        "vectors": size,
        "dim": int(matrix.shape[1]),
        "queries": len(asked),
        "exact_numpy_ms_per_query": round(exact_ms, 2),
        "scope_rows": len(scope),
    }
    for variant in args.variants:
        path = work / f"index.{variant}"
        log(f"{size:,}: {variant}: building")
        built = build(variant, matrix, path)
        log(f"{size:,}: {variant}: built in {built['build_s']} s; measuring in a new process")
        out[variant] = {**built, **open_in_new_process(variant, path, work)}
        log(f"{size:,}: {variant}: {out[variant]}")
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="100000", help="store sizes, comma-separated")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="queries per query set")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--home", type=Path, help="where vectors and indexes go (default: temp)")
    parser.add_argument("--open", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        known = ", ".join(VARIANTS)
        parser.error(f"unknown variants: {', '.join(sorted(unknown))} (known: {known})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.open:
        variant, path, work = args.open
        print(json.dumps(measure_open(variant, Path(path), Path(work))))
        return 0
    home = args.home or Path(tempfile.mkdtemp(prefix="retain-ann-"))
    home.mkdir(parents=True, exist_ok=True)
    import importlib.metadata

    packages = {"usearch": "usearch", "faiss": "faiss-cpu", "hnswlib": "hnswlib"}
    libs = sorted({v.partition("-")[0] for v in args.variants})
    versions = {lib: importlib.metadata.version(packages[lib]) for lib in libs}
    result = {
        "source": source_state(),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpu_count": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
        "versions": versions,
        "sizes": {},
    }
    for size in (int(s) for s in args.sizes.split(",")):
        result["sizes"][size] = bench_size(size, args, home)
    result["machine"]["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
