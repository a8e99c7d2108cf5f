"""chromadb beside retain, on the same vectors and queries: what users pick instead.

    python bench/chroma.py STORE_DIR --chroma-python /path/to/venv/bin/python [--reuse]

``STORE_DIR`` is a store ``bench/cold.py`` loaded (``cold-<size>`` under its home, with
its ``queries.json``). This script reads every vector that store holds and embeds the
same queries with the same model (the bundled static model), then, with a Python that
has ``chromadb`` installed (it is not one of retain's dependencies: give its own
environment), loads them into a persistent chromadb collection (HNSW, cosine, its
defaults) beside the store and measures it in a new process as ``bench/cold.py``
measures retain: opening the client and the collection, the first query, warm
queries (p50, p95, one at a time, 10 results), peak RSS, and recall@10 against the
exact scan. chromadb answers by vectors alone; retain's searches are hybrid (words
and vectors). Run ``bench/cold.py --reuse`` beside it for retain's figures.

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


def load(work: Path) -> dict[str, Any]:
    """(In chromadb's Python.) The vectors into a persistent collection."""
    import chromadb

    matrix = np.load(work / "vectors.npy")
    nums = np.load(work / "nums.npy")
    client = chromadb.PersistentClient(path=str(work / "chroma"))
    collection = client.get_or_create_collection("bench", metadata={"hnsw:space": "cosine"})
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


def measure(work: Path) -> dict[str, Any]:
    """(In chromadb's Python, a new process.) Open, first query, warm queries, recall."""
    began = time.perf_counter()
    import chromadb

    client = chromadb.PersistentClient(path=str(work / "chroma"))
    collection = client.get_collection("bench")
    open_ms = (time.perf_counter() - began) * 1000
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
    truth = [set(nums[np.argsort(-(matrix @ q), kind="stable")[:10]].tolist()) for q in queries]
    recall = [len(set(f) & t) / 10 for f, t in zip(found, truth, strict=True)]
    ms = sorted(s * 1000 for s in seconds)
    return {
        "open_ms": round(open_ms, 1),
        "first_query_ms": round(first_ms, 1),
        "query_ms": {"p50": round(ms[len(ms) // 2], 2), "p95": round(ms[int(len(ms) * 0.95)], 2)},
        "recall_at_10": round(float(np.mean(recall)), 4),
        "rss_mib": rss_hwm_mib(),
        "chromadb": chromadb.__version__,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path, nargs="?")
    parser.add_argument("--chroma-python", type=Path)
    parser.add_argument("--reuse", action="store_true", help="keep a collection loaded before")
    parser.add_argument("--inner", nargs=2, metavar=("STEP", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        step, work = args.inner[0], Path(args.inner[1])
        print(json.dumps(load(work) if step == "load" else measure(work)))
        return 0
    if args.store is None or args.chroma_python is None:
        parser.error("give the store's directory and --chroma-python")
    work = args.store / "chroma-bench"
    work.mkdir(exist_ok=True)
    print(f"exporting {args.store}'s vectors", file=sys.stderr)
    export(args.store, work)

    def inner(step: str) -> dict[str, Any]:
        command = [str(args.chroma_python), str(Path(__file__).resolve()), "--inner", step]
        done = subprocess.run([*command, str(work)], stdout=subprocess.PIPE, text=True, check=True)
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    loaded = None
    if not (args.reuse and (work / "chroma").exists()):
        print("loading chromadb", file=sys.stderr)
        loaded = inner("load")
    print("measuring chromadb in a new process", file=sys.stderr)
    measured = inner("measure")
    print(json.dumps({"benchmark": "chroma", "store": str(args.store), "load": loaded, **measured}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
