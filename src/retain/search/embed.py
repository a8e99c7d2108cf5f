"""Embedders: text in, one L2-normalised float32 row per text out.

Every embedder has a stable ``model_id`` (stored beside each vector, so a
model change is seen) and a ``dim``. This module is what every embedder shares
and how one is chosen: the ``Embedder`` protocol, ``normalised`` and
``check_shape``, the ``[search]`` settings, the hash embedder and
``load_embedder``. The providers:

``static``  the default: a static word-piece model shipped inside the
            package (``retain/search/models/``), run with numpy alone —
            nothing to download, nothing to install (``search/static_model.py``).
``hash``    signed feature hashing of word unigrams and bigrams: no model at
            all, deterministic; the fallback when the configured model cannot
            load (here).
``model2vec``  a Model2Vec static model by local path or a hub id already in
            the local Hugging Face cache (the ``[embed]`` extra;
            ``search/providers.py``, as are the next two).
``sentence-transformers``  a neural model by local path or cached hub id
            (the ``[st]`` extra).
``http``    an OpenAI-compatible ``/embeddings`` endpoint, called only when
            configured.
``none``    no vectors at all: search is lexical alone (the BM25 ablation).

``load_embedder`` imports the module of the provider it loads, and no other:
reading the settings (as ``retain get`` does) loads none. Nothing here downloads:
hub ids are resolved from the local cache only. A model that cannot load leaves
``load_embedder`` with the hash embedder and the reason, which ``status`` and every
search result report as *degraded*.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from retain.errors import ConfigInvalid, DimensionMismatch, EmbedderFailed

# numpy is imported where a vector is made, not here: choosing an embedder (the
# settings) costs no numpy, and a command that makes no vector never loads it.
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from retain.storage.base import VectorRows

    Matrix = npt.NDArray[np.float32]


def __getattr__(name: str) -> Any:
    if name == "Matrix":  # the alias, for code that names it at run time
        import numpy as np
        import numpy.typing as npt

        return npt.NDArray[np.float32]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PROVIDERS = ("static", "hash", "model2vec", "sentence-transformers", "http", "none")
DEFAULT_PROVIDER = "static"
DEFAULT_STATIC_MODEL = "minilm-l6-static-256"
HASH_DIM = 256
MODELS_DIR = Path(__file__).parent / "models"


class Embedder(Protocol):
    """Turns a batch of texts into a float32 matrix of unit rows."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...


def normalised(matrix: npt.NDArray[Any]) -> Matrix:
    """Rows scaled to unit length (a zero row stays zero)."""
    import numpy as np

    out = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out /= norms
    return out


def stored_mismatch(what: str, model: str, expected: int, actual: int) -> DimensionMismatch:
    """The refusal of stored vectors whose dimension is not the model's: ``what`` says
    which (``"memory #7 has a 384-dimensional vector"``)."""
    return DimensionMismatch(
        f"{what} of {model}, which makes {expected}-dimensional ones",
        remedy="reindex the store to embed every memory again with one model",
        fix="reindex",
        model=model,
        expected_dim=expected,
        actual_dim=actual,
    )


def check_stored(rows: VectorRows, model: str, dim: int) -> None:
    """Refuse a chunk of stored vectors that holds one of another size than ``dim``
    (``dimension_mismatch``, naming the memory)."""
    for num, size in zip(rows.nums, rows.dims, strict=True):
        if size != dim:
            what = f"memory #{num} has a {size}-dimensional vector"
            raise stored_mismatch(what, model, dim, size)


def check_shape(embedder: Embedder, matrix: Matrix, count: int) -> Matrix:
    """``matrix`` as the embedder promised it, or ``DimensionMismatch``; as contiguous
    float32 rows (what a search reads as buffers: ``search.plain``), whatever an
    embedder of the caller's own returned."""
    if matrix.ndim != 2 or matrix.shape[0] != count:
        raise EmbedderFailed(
            f"embedder {embedder.model_id} returned {matrix.shape} for {count} texts",
            remedy="check the embedder's configuration, or fall back with embedder = 'hash'",
            model=embedder.model_id,
        )
    if matrix.shape[1] != embedder.dim:
        raise DimensionMismatch(
            f"embedder {embedder.model_id} returned {matrix.shape[1]}-dimensional vectors "
            f"where {embedder.dim} were expected",
            remedy="point the configuration at one model and reindex the store",
            fix="reindex",
            model=embedder.model_id,
            expected_dim=embedder.dim,
            actual_dim=int(matrix.shape[1]),
        )
    import numpy as np

    return np.ascontiguousarray(matrix, dtype=np.float32)


# -- hash ---------------------------------------------------------------------

_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=65536)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    import hashlib  # here (and where a model is checked): loading OpenSSL costs ~7 ms

    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return digest % dim, (1.0 if digest >> 63 else -1.0)


class HashEmbedder:
    """Signed feature hashing of lower-cased word unigrams and bigrams.

    Bigrams weigh half as much as words. No model, no state: the same text
    gives the same vector on every machine.
    """

    def __init__(self, dim: int = HASH_DIM) -> None:
        self._dim = dim

    @property
    def model_id(self) -> str:
        return f"hash-v1-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        import numpy as np

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.casefold())
            for word in words:
                index, sign = _bucket(word, self._dim)
                out[row, index] += sign
            for first, second in zip(words, words[1:], strict=False):
                index, sign = _bucket(first + " " + second, self._dim)
                out[row, index] += 0.5 * sign
        return normalised(out)


# -- choosing -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EmbedderSettings:
    """The ``[search]`` settings that choose the embedder."""

    provider: str = DEFAULT_PROVIDER
    model: str = DEFAULT_STATIC_MODEL
    url: str = ""
    api_key_env: str = ""

    def describe(self) -> str:
        if self.provider in ("hash", "none"):
            return self.provider
        if self.provider == "http":
            return f"http:{self.model}@{self.url}"
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True, slots=True)
class LoadedEmbedder:
    """The embedder in use, what was configured, and why they differ (if they do)."""

    embedder: Embedder | None  # None: configured off
    configured: str
    degraded: str | None = None

    @property
    def model_id(self) -> str:
        return self.embedder.model_id if self.embedder is not None else "none"


def check_settings(settings: EmbedderSettings) -> EmbedderSettings:
    if settings.provider not in PROVIDERS:
        raise ConfigInvalid(
            f"[search] embedder {settings.provider!r} is not one of {', '.join(PROVIDERS)}",
            remedy=f"set embedder = {DEFAULT_PROVIDER!r} (the default)",
            value=settings.provider,
        )
    if settings.provider not in ("hash", "none") and not settings.model:
        raise ConfigInvalid(
            f"[search] embedder {settings.provider!r} needs a model",
            remedy="set model = a local path or a hub id in the local cache",
        )
    if settings.provider == "http" and not settings.url:
        raise ConfigInvalid(
            "[search] embedder 'http' needs a url",
            remedy="set url = 'http://host:port/v1' (the endpoint's base)",
        )
    return settings


def _load(settings: EmbedderSettings) -> Embedder:
    if settings.provider == "hash":
        return HashEmbedder()
    if settings.provider == "static":
        from retain.search.static_model import StaticEmbedder

        return StaticEmbedder(settings.model)
    from retain.search.providers import (
        HttpEmbedder,
        Model2VecEmbedder,
        SentenceTransformerEmbedder,
    )

    if settings.provider == "model2vec":
        return Model2VecEmbedder(settings.model)
    if settings.provider == "sentence-transformers":
        return SentenceTransformerEmbedder(settings.model)
    key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
    return HttpEmbedder(settings.url, settings.model, key)


@functools.lru_cache(maxsize=8)
def load_embedder(settings: EmbedderSettings) -> LoadedEmbedder:
    """The configured embedder, or the hash embedder and the reason it could not load."""
    check_settings(settings)
    if settings.provider == "none":
        return LoadedEmbedder(None, "none")
    try:
        return LoadedEmbedder(_load(settings), settings.describe())
    except Exception as exc:  # any failure to load means the fallback, reported
        reason = exc.message if isinstance(exc, EmbedderFailed) else f"{type(exc).__name__}: {exc}"
        return LoadedEmbedder(HashEmbedder(), settings.describe(), degraded=reason)
