"""The duplicate-pair finder of ``retain dedup`` against planted near-copies.

    python bench/dedup.py [--seed N] [--source constructed|locomo|both] [--out FILE]
                          [--data DIR]
    python bench/dedup.py --scale 10000,30000      # what one pass costs, instead

Two sources, reported apart:

* ``constructed`` — ``bench/dedup_corpus.py``'s few hundred agent-memory notes (its
  docstring says how they are written): near-copies of kinds ``reworded``,
  ``added_detail`` and ``register``; related but distinct pairs of kinds ``same_topic``
  and ``changed_value``; every other pair a negative (``same_attribute`` when both notes
  give one attribute of two entities, else ``unrelated``).
* ``locomo`` — ``locomo-dev-paraphrase.json`` in ``--data`` (``../shared/bench``, its
  README): each question's ``original`` and its hand rewording are a near-copy
  (``paraphrase``); two questions of one conversation that both name one of its
  speakers are ``same_topic``. Skipped, with a message, when the files are absent.

**The path measured is the product's.** Each source's notes are written into a fresh
store (``retain.open``, its default embedder) as global memories ``note-<n>`` (the
note's description and body: what ``dedup`` compares, ``similar.text_of``, is then
the note's text, which the run checks; a locomo question is taken as a description is
stored, its spaces collapsed). The operator (``retain.open``'s default principal) calls
the service verb ``dedup(threshold=FLOOR)``, and each ``Candidate`` it lists is mapped
back to its notes by the memories' ids. Patched in ``retain.graph`` for a pass alone:

* ``NEIGHBOURS``, raised to this module's (10 000): the finder keeps at most
  ``graph.NEIGHBOURS`` pairs per memory, and at ``FLOOR`` would spend them on pairs
  below the thresholds measured. Unbounded, the pairs at ``FLOOR`` scoring at least a
  threshold are exactly those a pass at that threshold proposes; ``check_floor`` stops
  the bench unless, at the defaults, that is also what the real ``NEIGHBOURS`` gives.
* ``DETAIL_PENALTY``, each of ``PENALTIES`` in turn: ``dedup`` is called again under
  each (it scores every pass afresh; pairs an earlier pass linked are open, so listed
  again with this pass's score). Nothing is re-scored outside the verb but a missed
  near-copy among the examples that the default pass did not list: its score is
  ``graph.pair_score`` of its cosine (from the pass at penalty 0).
* ``pair_score``, for the ceiling alone (below).

``FLOOR`` is the lowest threshold measured, not lower: every pair a pass links is a
relation later passes look up, and a pass at 0.3 (17 000 pairs of the constructed
corpus at penalty 0) took two minutes. A missed near-copy of cosine below ``FLOOR`` is
shown among the examples with no cosine or score.

Reported per source, for each penalty and each threshold of ``THRESHOLDS``: precision,
recall, F1, recall by near-copy kind and the negatives wrongly found by kind (a
``changed_value`` pair is a negative, though a curator may want it surfaced as a
possible contradiction: its share found is given too); per penalty the best threshold
(highest recall at precision ≥ ``PRECISION_TARGET``, else None) and that of best F1;
the default penalty's rows at ``AROUND_DEFAULT``; the figures and examples of false
positives and negatives at the defaults. For the constructed corpus also ``ceiling``
(the rule, and every pair of one attribute with another value or entity vetoed by its
label besides: what the rule would reach if it told every such pair apart) and the spread at the
defaults: folds by family (each also at a threshold chosen on the other folds) and the
corpora of ``SPREAD_SEEDS`` seeds, each in a fresh store.

Progress goes to stderr; stdout is one JSON object (``--out`` writes it to a file too).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import retain  # noqa: E402
import store  # noqa: E402
from dedup_corpus import NEAR_KINDS, RELATED_KINDS, Corpus, Note, build  # noqa: E402
from retain import WriteRequest, fields, graph  # noqa: E402
from retain.service import MemoryService  # noqa: E402
from retain.service.similar import text_of  # noqa: E402
from store import log, machine, source_state  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "bench"
THRESHOLDS = tuple(round(0.5 + 0.025 * k, 3) for k in range(19))  # 0.5 to 0.95
FLOOR = THRESHOLDS[0]  # the threshold of every run
NEIGHBOURS = 10_000  # graph.NEIGHBOURS for a run at FLOOR: no memory's pairs are cut
PENALTIES = (0.0, 0.1, 0.2, 0.3, 0.5)
AROUND_DEFAULT = (0.7, 0.725, 0.75, 0.775)  # thresholds reported at the default penalty
PRECISION_TARGET = 0.9
RECALL_TARGET = 0.8
FOLDS = 5
SPREAD_SEEDS = 5  # the corpora of seeds seed … seed + 4
EXAMPLES = 10

Pair = tuple[int, int]
Scorer = Callable[[float, str, str, frozenset[str]], float]  # graph.pair_score's shape


# the path under test


@dataclass(frozen=True, slots=True)
class Loaded:
    """A corpus written into a fresh store: the store, each memory's note (its place in
    the corpus) by id, and the names of the batch (``graph.names_in`` of the texts)."""

    service: MemoryService
    place: dict[str, int]
    names: frozenset[str]


@dataclass(frozen=True, slots=True)
class Candidates:
    """The pairs one ``dedup`` pass listed, by their notes' places: scores and cosines."""

    scores: dict[Pair, float]
    cosines: dict[Pair, float]

    def found(self, threshold: float, within: Callable[[Pair], bool] | None = None) -> set[Pair]:
        return {
            p for p, s in self.scores.items() if s >= threshold and (within is None or within(p))
        }


def load(corpus: Corpus, directory: Path) -> Loaded:
    """``corpus`` written into a fresh store in ``directory``: one global memory a note,
    ``note-<n>``, whose compared text is checked to be the note's."""
    directory.mkdir(parents=True)
    service = retain.open(directory / "retain.db", home=directory)
    requests = [
        WriteRequest(f"note-{n}", description=note.description, body=note.body)
        for n, note in enumerate(corpus.notes)
    ]
    place: dict[str, int] = {}
    for n, result in enumerate(service.write_many(requests, notes=False)):
        if text_of(result.memory) != corpus.notes[n].text:
            service.close()
            raise SystemExit(f"note-{n} is compared as {text_of(result.memory)!r}, not as written")
        place[result.memory.id] = n
    return Loaded(service, place, graph.names_in([note.text for note in corpus.notes]))


@contextmanager
def patched(neighbours: int, penalty: float | None, scorer: Scorer | None) -> Iterator[None]:
    """``retain.graph`` with ``neighbours``, ``penalty`` (None: its own) and ``scorer`` as
    its ``pair_score`` (None: its own), for the time of a pass."""
    with ExitStack() as stack:
        stack.enter_context(patch.object(graph, "NEIGHBOURS", neighbours))
        if penalty is not None:
            stack.enter_context(patch.object(graph, "DETAIL_PENALTY", penalty))
        if scorer is not None:
            stack.enter_context(patch.object(graph, "pair_score", scorer))
        yield


def propose(
    loaded: Loaded,
    threshold: float = FLOOR,
    *,
    penalty: float | None = None,
    neighbours: int = NEIGHBOURS,
    scorer: Scorer | None = None,
) -> Candidates:
    """The pairs the operator's ``dedup`` pass lists at ``threshold`` (see ``patched``)."""
    with patched(neighbours, penalty, scorer):
        result = loaded.service.dedup(threshold=threshold)
    scores: dict[Pair, float] = {}
    cosines: dict[Pair, float] = {}
    for candidate in result.pairs:
        i, j = sorted((loaded.place[candidate.first.id], loaded.place[candidate.second.id]))
        scores[(i, j)], cosines[(i, j)] = candidate.score, candidate.cosine
    return Candidates(scores, cosines)


def check_floor(loaded: Loaded, floor_run: Candidates) -> None:
    """That a pass at the default threshold and penalty, with the real ``NEIGHBOURS``,
    lists what the run at ``FLOOR`` scores at or above that threshold."""
    direct = propose(loaded, graph.THRESHOLD, neighbours=graph.NEIGHBOURS)
    filtered = floor_run.found(graph.THRESHOLD)
    if set(direct.scores) != filtered:
        raise SystemExit(
            f"a pass at {graph.THRESHOLD} lists {len(direct.scores)} pairs, the pass at "
            f"{FLOOR} filtered {len(filtered)}: NEIGHBOURS cuts pairs, so the figures of the "
            "floor run are not those of the product"
        )


# the locomo source


def locomo(data: Path, seed: int) -> Corpus | None:
    """The paraphrase set as a corpus: every question's original and rewording, in a
    seeded order; None, with a message, when its files are absent."""
    reworded, conversations = data / "locomo-dev-paraphrase.json", data / "locomo-dev.json"
    if not (reworded.is_file() and conversations.is_file()):
        log(f"locomo: skipped, {reworded} or {conversations} not found")
        return None
    speakers = {
        sample["sample_id"]: (
            sample["conversation"]["speaker_a"],
            sample["conversation"]["speaker_b"],
        )
        for sample in json.loads(conversations.read_text(encoding="utf-8"))
    }
    notes = []
    for entry in json.loads(reworded.read_text(encoding="utf-8")):
        fact = f"{entry['sample_id']}/{entry['qa_index']}"
        for field in ("original", "question"):
            text = fields.description(entry[field])  # as stored: two have a stray space
            notes.append(Note(text, "", fact, entry["sample_id"], fact))
    random.Random(seed).shuffle(notes)
    near: dict[Pair, str] = {}
    related: dict[Pair, str] = {}
    for i in range(len(notes)):
        for j in range(i + 1, len(notes)):
            a, b = notes[i], notes[j]
            if a.fact == b.fact:
                near[(i, j)] = "paraphrase"
            elif a.entity == b.entity and any(
                mentions(a.text, name) and mentions(b.text, name) for name in speakers[a.entity]
            ):
                related[(i, j)] = "same_topic"
    return Corpus(tuple(notes), near, related)


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` (as a word, possessive or not)."""
    return re.search(rf"\b{re.escape(name)}\b", text, re.IGNORECASE) is not None


def ceiling(corpus: Corpus) -> Scorer:
    """The rule with a perfect veto added: a pair of one attribute with another value or
    entity (``changed_value``, ``same_attribute``) vetoed by its label, every other pair
    scored as ``graph.pair_score`` scores it."""
    rule = graph.pair_score
    vetoed = {
        (corpus.notes[i].text, corpus.notes[j].text)
        for i in range(len(corpus.notes))
        for j in range(i + 1, len(corpus.notes))
        if corpus.kind(i, j) in ("changed_value", "same_attribute")
    }

    def pair_score(cosine: float, a: str, b: str, names: frozenset[str] = frozenset()) -> float:
        if (a, b) in vetoed or (b, a) in vetoed:
            return cosine - 1
        return rule(cosine, a, b, names)

    return pair_score


# scoring


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def measure(
    corpus: Corpus,
    found: set[Pair],
    threshold: float,
    within: Callable[[Pair], bool] | None = None,
) -> dict[str, Any]:
    """Precision, recall, F1, recall by near-copy kind and the negatives wrongly found by
    kind, of ``found`` (of the pairs passing ``within``, when given)."""
    near = {p: k for p, k in corpus.near.items() if within is None or within(p)}
    hits = Counter(near[p] for p in found if p in near)
    wrong = Counter(corpus.kind(*p) for p in found if p not in near)
    changed = sum(1 for k in corpus.related.values() if k == "changed_value")
    right = hits.total()
    row: dict[str, Any] = {
        "threshold": threshold,
        "found": len(found),
        "precision": share(right, len(found)),
        "recall": share(right, len(near)),
        "f1": share(2 * right, len(found) + len(near)),
        "recall_by_kind": {k: share(hits[k], n) for k, n in sorted(Counter(near.values()).items())},
        "wrongly_found": dict(sorted(wrong.items())),
    }
    if changed and within is None:
        row["changed_value_surfaced"] = share(wrong["changed_value"], changed)
    return row


def sweep(
    corpus: Corpus, run: Candidates, within: Callable[[Pair], bool] | None = None
) -> list[dict[str, Any]]:
    return [measure(corpus, run.found(t, within), t, within) for t in THRESHOLDS]


def best(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The row of highest recall among those of precision ≥ the target (of two alike, the
    more precise, then the higher threshold); None when no row reaches it."""
    meeting = [r for r in rows if r["found"] and r["precision"] >= PRECISION_TARGET]
    if not meeting:
        return None
    return max(meeting, key=lambda r: (r["recall"], r["precision"], r["threshold"]))


def best_f1(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The row of highest F1 (of two alike, the more precise, then the higher threshold);
    None when no row found a near-copy."""
    scored = [r for r in rows if r["f1"]]
    if not scored:
        return None
    return max(scored, key=lambda r: (r["f1"], r["precision"], r["threshold"]))


def brief(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    keys = ("threshold", "found", "precision", "recall", "f1", "recall_by_kind", "wrongly_found")
    return {k: row[k] for k in keys}


# the spread


def folds(corpus: Corpus, seed: int) -> list[int]:
    """Each note's fold: its family's, the families dealt to ``FOLDS`` folds in a seeded
    order."""
    families = sorted({note.family for note in corpus.notes})
    random.Random(seed).shuffle(families)
    fold_of = {family: n % FOLDS for n, family in enumerate(families)}
    return [fold_of[note.family] for note in corpus.notes]


def in_fold(fold: Sequence[int], n: int, inside: bool) -> Callable[[Pair], bool]:
    """Whether a pair is fold ``n``'s (or, not ``inside``, another's): its first note's
    fold (a near-copy's and a changed_value pair's notes share a family, so a fold)."""
    return lambda pair: (fold[pair[0]] == n) is inside


def held_out(
    corpus: Corpus,
    run: Candidates,
    mine: Callable[[Pair], bool],
    chosen: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """A fold's figures at the threshold of ``chosen`` (a row of the other folds)."""
    if chosen is None:
        return None
    t = chosen["threshold"]
    held = measure(corpus, run.found(t, mine), t, mine)
    return {"threshold": t, "precision": held["precision"], "recall": held["recall"]}


def fold_spread(corpus: Corpus, run: Candidates, seed: int) -> list[dict[str, Any]]:
    """Each fold's figures at the default threshold, and at the thresholds the other
    folds choose (by the precision target, and by F1)."""
    fold = folds(corpus, seed)
    out = []
    for n in range(FOLDS):
        mine, rest = in_fold(fold, n, True), in_fold(fold, n, False)
        at = measure(corpus, run.found(graph.THRESHOLD, mine), graph.THRESHOLD, mine)
        others = sweep(corpus, run, rest)
        out.append(
            {
                "fold": n,
                "near_copies": sum(1 for p in corpus.near if mine(p)),
                "precision": at["precision"],
                "recall": at["recall"],
                "f1": at["f1"],
                "chosen_on_others": held_out(corpus, run, mine, best(others)),
                "chosen_on_others_by_f1": held_out(corpus, run, mine, best_f1(others)),
            }
        )
    return out


def summary(values: Sequence[float | None]) -> dict[str, float] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {"min": min(present), "median": statistics.median(present), "max": max(present)}


def seed_row(corpus: Corpus, run: Candidates, seed: int) -> dict[str, Any]:
    """One seed's corpus: figures at the default threshold, its own best thresholds."""
    at = measure(corpus, run.found(graph.THRESHOLD), graph.THRESHOLD)
    rows = sweep(corpus, run)
    own, own_f1 = best(rows), best_f1(rows)
    return {
        "seed": seed,
        "near_copies": len(corpus.near),
        "precision": at["precision"],
        "recall": at["recall"],
        "f1": at["f1"],
        "best_threshold": None if own is None else own["threshold"],
        "best_recall": None if own is None else own["recall"],
        "best_f1_threshold": None if own_f1 is None else own_f1["threshold"],
        "best_f1": None if own_f1 is None else own_f1["f1"],
    }


def spread(corpus: Corpus, default: Candidates, seed: int, home: Path) -> dict[str, Any]:
    """Folds of ``corpus`` and the corpora of ``SPREAD_SEEDS`` seeds (``seed``'s is
    ``corpus``, run already as ``default``), at the default threshold and penalty."""
    by_fold = fold_spread(corpus, default, seed)
    by_seed = [seed_row(corpus, default, seed)]
    for s in range(seed + 1, seed + SPREAD_SEEDS):
        other = build(s)
        log(f"spread: seed {s}, {len(other.notes)} notes, {len(other.near)} near-copies")
        loaded = load(other, home / f"seed-{s}")
        try:
            by_seed.append(seed_row(other, propose(loaded), s))
        finally:
            loaded.service.close()
    return {
        "threshold": graph.THRESHOLD,
        "penalty": graph.DETAIL_PENALTY,
        "folds": by_fold,
        "seeds": by_seed,
        "precision": summary([r["precision"] for r in by_fold + by_seed]),
        "recall": summary([r["recall"] for r in by_fold + by_seed]),
        "f1": summary([r["f1"] for r in by_fold + by_seed]),
    }


# examples


def example(
    corpus: Corpus, names: frozenset[str], pair: Pair, cosine: float | None, score: float | None
) -> dict[str, Any]:
    a, b = (corpus.notes[i].text for i in pair)
    only_a, only_b = graph.differing(a, b, names)
    return {
        "kind": corpus.kind(*pair),
        "cosine": None if cosine is None else round(cosine, 4),
        "score": None if score is None else round(score, 4),
        "a": a,
        "b": b,
        "details": [sorted(graph.details(a, names)), sorted(graph.details(b, names))],
        "conflict": bool(only_a and only_b),
    }


def by_kind_in_turn(corpus: Corpus, pairs: Sequence[Pair]) -> list[Pair]:
    """Up to ``EXAMPLES`` of ``pairs``, the kinds taken in turn, each in ``pairs``' order."""
    queues: dict[str, list[Pair]] = {}
    for p in pairs:
        queues.setdefault(corpus.kind(*p), []).append(p)
    out: list[Pair] = []
    while len(out) < EXAMPLES and any(queues.values()):
        for queue in queues.values():
            if queue and len(out) < EXAMPLES:
                out.append(queue.pop(0))
    return out


def examples(
    corpus: Corpus, names: frozenset[str], default: Candidates, unpenalised: Candidates
) -> dict[str, list[dict[str, Any]]]:
    """At the defaults: the best-scoring false positives, and the missed near-copies that
    came nearest (one of cosine below ``FLOOR`` last, its cosine and score None), a few
    of each kind."""
    found = default.found(graph.THRESHOLD)
    wrong = sorted((p for p in found if p not in corpus.near), key=lambda p: -default.scores[p])
    missed: dict[Pair, tuple[float | None, float | None]] = {}
    for p in corpus.near:
        if p in found:
            continue
        cosine = unpenalised.cosines.get(p)
        score = default.scores.get(p)
        if score is None and cosine is not None:  # below FLOOR at the default penalty
            a, b = (corpus.notes[i].text for i in p)
            score = graph.pair_score(cosine, a, b, names)
        missed[p] = (cosine, score)

    def nearness(p: Pair) -> float:
        score = missed[p][1]
        return -1.0 if score is None else score

    nearest = sorted(missed, key=lambda p: -nearness(p))
    return {
        "false_positives": [
            example(corpus, names, p, default.cosines[p], default.scores[p])
            for p in by_kind_in_turn(corpus, wrong)
        ],
        "false_negatives": [
            example(corpus, names, p, *missed[p]) for p in by_kind_in_turn(corpus, nearest)
        ],
    }


# the run


def source_report(
    name: str, corpus: Corpus, seed: int, home: Path, *, constructed: bool
) -> dict[str, Any]:
    """One source's figures (see the module's docstring)."""
    log(f"{name}: {len(corpus.notes)} notes, {len(corpus.near)} near-copies")
    loaded = load(corpus, home / name)
    try:
        runs: dict[float, Candidates] = {}
        for penalty in sorted({*PENALTIES, graph.DETAIL_PENALTY}):
            started = time.perf_counter()
            runs[penalty] = propose(loaded, penalty=penalty)
            log(
                f"{name}: penalty {penalty}: {len(runs[penalty].scores)} pairs at {FLOOR} "
                f"in {time.perf_counter() - started:.1f}s"
            )
        default = runs[graph.DETAIL_PENALTY]
        check_floor(loaded, default)
        ceiling_run = propose(loaded, scorer=ceiling(corpus)) if constructed else None
    finally:
        loaded.service.close()
    sweeps = {p: sweep(corpus, runs[p]) for p in PENALTIES}
    at_default_penalty = sweep(corpus, default)
    report: dict[str, Any] = {
        "notes": len(corpus.notes),
        "near_copies": dict(sorted(Counter(corpus.near.values()).items())),
        "related": dict(sorted(Counter(corpus.related.values()).items())),
        "at_defaults": measure(corpus, default.found(graph.THRESHOLD), graph.THRESHOLD),
        "best": {str(p): brief(best(rows)) for p, rows in sweeps.items()},
        "best_f1": {str(p): brief(best_f1(rows)) for p, rows in sweeps.items()},
        "around_default": [
            brief(r) for r in at_default_penalty if r["threshold"] in AROUND_DEFAULT
        ],
        "examples_at_defaults": examples(corpus, loaded.names, default, runs[0.0]),
    }
    if ceiling_run is not None:
        rows = sweep(corpus, ceiling_run)
        report["ceiling"] = {
            "best": brief(best(rows)),
            "best_f1": brief(best_f1(rows)),
            "sweep": [brief(r) for r in rows],
        }
    if constructed:
        log("spread: folds and seeds")
        report["spread_at_defaults"] = spread(corpus, default, seed, home)
    report["sweep"] = {str(p): rows for p, rows in sweeps.items()}
    return report


def run(data: Path, source: str, seed: int, home: Path) -> dict[str, Any]:
    started = time.perf_counter()
    probe = retain.open(home / "probe" / "retain.db", home=home / "probe")
    embedder = probe.store.embedder.embedder
    probe.close()
    if embedder is None:
        raise SystemExit("the store has no embedder, and retain dedup needs one")
    report: dict[str, Any] = {
        "benchmark": "dedup",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source_state(),
        "machine": machine(),
        "numpy": np.__version__,
        "load_average": os.getloadavg(),
        "embedder": embedder.model_id,
        "dimensions": embedder.dim,
        "seed": seed,
        "defaults": {
            "threshold": graph.THRESHOLD,
            "detail_penalty": graph.DETAIL_PENALTY,
            "neighbours": graph.NEIGHBOURS,
        },
        "target": {"precision": PRECISION_TARGET, "recall": RECALL_TARGET},
        "floor": FLOOR,
        "neighbours_at_floor": NEIGHBOURS,
        "near_kinds": [*NEAR_KINDS, "paraphrase"],
        "related_kinds": list(RELATED_KINDS),
        "sources": {},
    }
    corpora: list[tuple[str, Corpus]] = []
    if source in ("constructed", "both"):
        corpora.append(("constructed", build(seed)))
    if source in ("locomo", "both"):
        if (paraphrases := locomo(data, seed)) is not None:
            corpora.append(("locomo", paraphrases))
        else:
            report["skipped"] = {
                "locomo": f"no locomo-dev-paraphrase.json or locomo-dev.json in {data}"
            }
    for name, corpus in corpora:
        report["sources"][name] = source_report(
            name, corpus, seed, home, constructed=name == "constructed"
        )
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def _phase_ends(phases: dict[str, float], began: float, phase: str, *_: int) -> None:
    """A progress callback: when each phase last reported, in seconds since ``began``."""
    phases[phase] = time.perf_counter() - began


def scale(sizes: Sequence[int], seed: int, home: Path) -> dict[str, Any]:
    """What one ``dedup`` pass costs over ``sizes`` memories of one scope: the synthetic
    documents of ``bench/store.py`` (``store.Corpus``, as ``scale.py`` and ``cold.py`` load:
    few of them alike, as in a store), the pass timed whole and by its progress phases."""
    corpus = store.Corpus(seed)
    out: dict[str, Any] = {}
    for size in sizes:
        directory = home / f"scale-{size}"
        directory.mkdir(parents=True)
        service = retain.open(directory / "retain.db", home=directory)
        requests = [
            WriteRequest(f"scale-{doc.number}", description=doc.description, body=doc.body)
            for doc in corpus.docs(0, size)
        ]
        for start in range(0, size, 5000):
            service.write_many(requests[start : start + 5000], notes=False)
        phases: dict[str, float] = {}
        began = time.perf_counter()
        result = service.dedup(progress=functools.partial(_phase_ends, phases, began))
        seconds = time.perf_counter() - began
        service.close()
        out[str(size)] = {
            "seconds": round(seconds, 2),
            "embedded_by_s": round(phases.get("embed", 0.0), 2),
            "compared_by_s": round(phases.get("compare", 0.0), 2),
            "pairs": len(result.pairs),
            "linked": result.linked,
        }
        log(f"scale {size}: {seconds:.1f} s, {len(result.pairs)} pairs")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=20240601, help="the corpus's seed")
    parser.add_argument(
        "--source", choices=("constructed", "locomo", "both"), default="both", help="the notes"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the locomo data")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument(
        "--scale",
        metavar="N,N",
        help="instead, time one pass over N memories of one scope for each N given",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="retain-dedup-") as home:
        if args.scale:
            sizes = [int(n) for n in args.scale.split(",")]
            measured = scale(sizes, args.seed, Path(home))
            report = {"benchmark": "dedup --scale", "machine": machine(),
                      "source": source_state(), "scale": measured}  # fmt: skip
        else:
            report = run(args.data, args.source, args.seed, Path(home))
    text = json.dumps(report, ensure_ascii=False)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
