"""chromadb beside retain, on the same vectors and queries: what users pick instead.

    python bench/chroma.py STORE_DIR --chroma-python /path/to/venv/bin/python [--reuse]
                           [--ef 10,100,400,1600] [--centred]

``STORE_DIR`` is a store ``bench/cold.py`` loaded (``cold-<size>`` under its home, with
its ``queries.json``). This script reads every vector that store holds and embeds the
same queries with the same model (the bundled static model), then, with a Python that
has ``chromadb`` installed (it is not one of retain's dependencies: give its own
environment), loads them into a persistent chromadb collection (HNSW, cosine, its
defaults) beside the store and measures it in a new process as ``bench/cold.py``
measures retain: opening the client and the collection, the first query, warm
queries (p50, p95, one at a time, 10 results), peak RSS, and recall@10 against the
exact scan, with ``within_0.001`` as ``bench/cold.py`` counts it (the share of the ten
scoring at least the exact tenth's cosine less 0.001: a miss among near-ties is a tie).

An HNSW index trades recall for time by how far a query walks its graph
(``ef_search``). ``--ef`` lists the values to measure (chromadb's default is 100):
each is set on the collection, then measured in a process of its own, so the table
says what chromadb's queries cost at each recall. The bundled model's vectors share one
strong direction (their mean's norm is near 1), which a graph walked by cosine finds
hard; ``--centred`` also loads them less their mean into a second collection compared
by inner product (for a query the same order, ``q·x = q·(x − μ) + q·μ``, and what
retain's codes keep), the kinder case for chromadb. chromadb answers by vectors alone;
retain's searches are hybrid (words and vectors). Run ``bench/cold.py --reuse`` beside
it for retain's figures.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 5000
COLLECTIONS = {False: "bench", True: "bench-centred"}


def export(store_dir: Path, work: Path) -> None:
    """The store's vectors and ids, the queries embedded, as .npy files in ``work``."""
    import retain
    from retain.search import key

    spec = json.loads((store_dir / "queries.json").read_text(encoding="utf-8"))
    texts = [t for texts in spec["sets"].values() for t in texts]
    store = retain.open(store_dir / "retain.db", home=store_dir)
    embedder = store.embedder.embedder
    assert embedder is not None

    def rows(tx: Any) -> tuple[list[int], list[bytes]]:
        nums: list[int] = []
        blobs: list[bytes] = []
        after = 0
        while True:
            got = tx.vectors_after(embedder.model_id, after, 20000)
            if not got.nums:
                return nums, blobs
            nums += got.nums
            blobs += got.blobs
            after = got.last_vec

    nums, blobs = store.backend.read(rows)
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(nums), embedder.dim)
    np.save(work / "vectors.npy", matrix)
    np.save(work / "nums.npy", np.array(nums, dtype=np.int64))
    np.save(work / "queries.npy", key.embed(embedder, texts))
    store.close()


def rss_hwm_mib() -> float:
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def load(work: Path, centred: bool, reuse: bool) -> dict[str, Any] | None:
    """(In chromadb's Python.) The vectors into a persistent collection; ``centred``, their
    mean taken away, compared by inner product (the same order for every query)."""
    import chromadb

    matrix = np.load(work / "vectors.npy")
    nums = np.load(work / "nums.npy")
    client = chromadb.PersistentClient(path=str(work / "chroma"))
    collection = client.get_or_create_collection(
        COLLECTIONS[centred], metadata={"hnsw:space": "ip" if centred else "cosine"}
    )
    if reuse and collection.count() == len(matrix):
        return None
    if held := collection.count():
        raise SystemExit(
            f"collection {collection.name} already holds {held} of {len(matrix)} rows: "
            f"remove {work / 'chroma'} to load it again (--reuse measures a whole one as it is)"
        )
    if centred:
        matrix = matrix - matrix.mean(axis=0)
    began = time.perf_counter()
    for start in range(0, len(matrix), BATCH):
        collection.add(
            ids=[str(n) for n in nums[start : start + BATCH]],
            embeddings=matrix[start : start + BATCH],
        )
    seconds = time.perf_counter() - began
    return {
        "rows": len(matrix),
        "seconds": round(seconds, 1),
        "per_s": round(len(matrix) / seconds),
    }


def set_ef(work: Path, centred: bool, ef: int) -> dict[str, Any]:
    """(In chromadb's Python.) How far the collection's queries walk its graph."""
    import chromadb

    client = chromadb.PersistentClient(path=str(work / "chroma"))
    client.get_collection(COLLECTIONS[centred]).modify(configuration={"hnsw": {"ef_search": ef}})
    return {"ef_search": ef}


def measure(work: Path, centred: bool) -> dict[str, Any]:
    """(In chromadb's Python, a new process.) Open, first query, warm queries, recall."""
    began = time.perf_counter()
    import chromadb

    client = chromadb.PersistentClient(path=str(work / "chroma"))
    collection = client.get_collection(COLLECTIONS[centred])
    open_ms = (time.perf_counter() - began) * 1000
    ef = collection.configuration_json["hnsw"]["ef_search"]
    queries = np.load(work / "queries.npy")
    began = time.perf_counter()
    collection.query(query_embeddings=queries[:1], n_results=10)
    first_ms = (time.perf_counter() - began) * 1000
    seconds, found = [], []
    for query in queries:
        began = time.perf_counter()
        got = collection.query(query_embeddings=query[None, :], n_results=10)
        seconds.append(time.perf_counter() - began)
        found.append([int(i) for i in got["ids"][0]])
    matrix = np.load(work / "vectors.npy", mmap_mode="r")
    nums = np.load(work / "nums.npy")
    row_of = {int(n): i for i, n in enumerate(nums)}
    recall, tied = [], []
    for query, got in zip(queries, found, strict=True):
        scores = matrix @ query
        best = np.argsort(-scores, kind="stable")[:10]
        recall.append(len(set(got) & set(nums[best].tolist())) / 10)
        tenth = scores[best[-1]]
        tied.append(np.mean([scores[row_of[i]] >= tenth - 0.001 for i in got]))
    ms = sorted(s * 1000 for s in seconds)
    return {
        "centred": centred,
        "ef_search": ef,
        "open_ms": round(open_ms, 1),
        "first_query_ms": round(first_ms, 1),
        "query_ms": {"p50": round(ms[len(ms) // 2], 2), "p95": round(ms[int(len(ms) * 0.95)], 2)},
        "recall_at_10": round(float(np.mean(recall)), 4),
        "within_0.001": round(float(np.mean(tied)), 4),
        "rss_mib": rss_hwm_mib(),
        "chromadb": chromadb.__version__,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path, nargs="?")
    parser.add_argument("--chroma-python", type=Path)
    parser.add_argument("--reuse", action="store_true", help="keep a collection loaded before")
    parser.add_argument(
        "--ef", default="10,100,400,1600", help="ef_search values to measure, comma-separated"
    )
    parser.add_argument(
        "--centred",
        action="store_true",
        help="also measure a collection of the vectors less their mean, by inner product",
    )
    parser.add_argument("--inner", nargs=2, metavar=("STEP", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        step, work = json.loads(args.inner[0]), Path(args.inner[1])
        centred = step["centred"]
        if step["do"] == "load":
            print(json.dumps(load(work, centred, step["reuse"])))
        elif step["do"] == "ef":
            print(json.dumps(set_ef(work, centred, step["ef"])))
        else:
            print(json.dumps(measure(work, centred)))
        return 0
    if args.store is None or args.chroma_python is None:
        parser.error("give the store's directory and --chroma-python")
    try:
        efs = [int(ef) for ef in args.ef.split(",")]
    except ValueError:
        parser.error(f"--ef takes whole numbers separated by commas, not {args.ef!r}")
    if not efs or min(efs) < 1:
        parser.error("--ef takes one or more values of at least 1")
    work = args.store / "chroma-bench"
    work.mkdir(exist_ok=True)
    print(f"exporting {args.store}'s vectors", file=sys.stderr)
    export(args.store, work)

    def inner(**step: Any) -> Any:
        command = [str(args.chroma_python), str(Path(__file__).resolve()), "--inner"]
        command += [json.dumps(step), str(work)]
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    loaded, measured = {}, []
    for centred in (False, True) if args.centred else (False,):
        print(f"loading chromadb's {COLLECTIONS[centred]} collection", file=sys.stderr)
        loaded[COLLECTIONS[centred]] = inner(do="load", centred=centred, reuse=args.reuse)
        for ef in efs:
            print(f"measuring it at ef_search {ef} in a new process", file=sys.stderr)
            inner(do="ef", centred=centred, ef=ef)
            measured.append(inner(do="measure", centred=centred))
    report = {"benchmark": "chroma", "store": str(args.store), "load": loaded, "by_ef": measured}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
