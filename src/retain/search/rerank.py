"""The optional neural reranker of a search's best candidates, from local weights only.

``[search] reranker = "PATH"`` names a local sentence-transformers model directory
(the ``[st]`` extra); unset (the default), no search is reranked. A directory whose
``config.json`` names a ``…ForSequenceClassification`` architecture is a cross-encoder,
which scores each (query, text) pair; any other is a bi-encoder, whose score is the
cosine of the query's and the text's vectors. Nothing is downloaded: the model is read
with ``local_files_only``. The store loads it once, at its first search
(``service/store.py``), as it does the embedder; a model that cannot load refuses the
search (``embedder_failed``) rather than answer silently without it.

``rerank`` reorders the ``DEPTH`` best of a search's scored candidates by the
reciprocal-rank fusion of the hybrid's order and the reranker's (``K``); those below
keep their order. The scores of the reordered candidates are the same values, handed
out again in the new order, so a result's scores still fall as its ranks do.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from retain.errors import ConfigInvalid, EmbedderFailed

if TYPE_CHECKING:
    from retain.storage.base import Reads, Standing

DEPTH = 50  # the candidates a reranker sees
K = 60  # the reciprocal-rank fusion's constant, as rank.fuse's


class Reranker(Protocol):
    """Scores texts against a query: higher is more relevant."""

    @property
    def name(self) -> str: ...

    def scores(self, query: str, texts: Sequence[str]) -> list[float]: ...


def check_path(value: str) -> str:
    """``[search] reranker``'s value, refused unless empty or an existing directory."""
    if value and not Path(value).expanduser().is_dir():
        raise ConfigInvalid(
            f"[search] reranker {value!r} is not a directory",
            remedy="point it at a local sentence-transformers model directory, or remove it",
            value=value,
        )
    return value


def _is_cross_encoder(directory: Path) -> bool:
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    architectures = config.get("architectures") if isinstance(config, dict) else None
    return any(str(a).endswith("ForSequenceClassification") for a in architectures or ())


class CrossEncoderReranker:
    """A cross-encoder's score of each (query, text) pair."""

    def __init__(self, directory: Path) -> None:
        from sentence_transformers import CrossEncoder

        self.name = f"cross-encoder:{directory.name}"
        self._model: Any = CrossEncoder(str(directory), device="cpu", local_files_only=True)

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        found = self._model.predict([(query, text) for text in texts], show_progress_bar=False)
        return [float(x) for x in found]


class BiEncoderReranker:
    """A bi-encoder's cosine of the query's and each text's vectors."""

    def __init__(self, directory: Path) -> None:
        from sentence_transformers import SentenceTransformer

        self.name = f"bi-encoder:{directory.name}"
        self._model: Any = SentenceTransformer(str(directory), device="cpu", local_files_only=True)

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        rows = self._model.encode(
            [query, *texts], normalize_embeddings=True, show_progress_bar=False
        )
        return [float(x) for x in rows[1:] @ rows[0]]


@functools.lru_cache(maxsize=4)
def load_reranker(path: str) -> Reranker:
    """The reranker in ``path``, loaded once per process and path; ``EmbedderFailed``
    when it cannot load (not a model, or sentence-transformers not installed)."""
    directory = Path(check_path(path)).expanduser().resolve()
    try:
        if _is_cross_encoder(directory):
            return CrossEncoderReranker(directory)
        return BiEncoderReranker(directory)
    except Exception as exc:  # any failure to load: the search that needs it is refused
        raise EmbedderFailed(
            f"the reranker in {directory} cannot load: {type(exc).__name__}: {exc}",
            remedy="install retain[st] and point [search] reranker at a local "
            "sentence-transformers model directory, or remove the setting",
            model=str(directory),
        ) from exc


def fused_order(hybrid: int, judged: Sequence[float]) -> list[int]:
    """Positions ``0 … hybrid-1`` (the hybrid's order) reordered by the reciprocal-rank
    fusion of that order and the reranker's scores ``judged`` (ties: the hybrid's)."""
    by_reranker = sorted(range(hybrid), key=lambda i: (-judged[i], i))
    place = {i: rank for rank, i in enumerate(by_reranker)}
    fused = {i: 1 / (K + i + 1) + 1 / (K + place[i] + 1) for i in range(hybrid)}
    return sorted(range(hybrid), key=lambda i: (-fused[i], i))


def texts(tx: Reads, standings: Sequence[Standing]) -> list[str]:
    """What a reranker reads of each candidate: its description, then its body."""
    memories = {m.id: m for m in tx.get_many([s.id for s in standings])}
    return [f"{memories[s.id].description}\n{memories[s.id].body or ''}" for s in standings]


def rerank(
    reranker: Reranker | None,
    queries: Sequence[str],
    scored: list[tuple[float, Standing]],
    tx: Reads,
) -> list[tuple[float, Standing]]:
    """``scored`` (best first) with its ``DEPTH`` best reordered by ``fused_order``: a
    candidate is judged by its best score over the queries. Without a reranker, or
    with fewer than two candidates, ``scored`` itself."""
    if reranker is None or len(scored) < 2 or not queries:
        return scored
    head, tail = scored[:DEPTH], scored[DEPTH:]
    read = texts(tx, [s for _, s in head])
    judged = [max(pair) for pair in zip(*(reranker.scores(q, read) for q in queries), strict=True)]
    order = fused_order(len(head), judged)
    values = [score for score, _ in head]  # falling: handed out again in the new order
    return [(values[rank], head[i][1]) for rank, i in enumerate(order)] + tail
