"""The optional providers: a Model2Vec or sentence-transformers model, an HTTP endpoint.

Each is chosen by the ``[search]`` settings (``search/embed.py``'s ``load_embedder``)
and imported only then. ``model2vec`` needs the ``[embed]`` extra and
``sentence-transformers`` the ``[st]`` extra, each given a local path or a hub id
already in the local Hugging Face cache: nothing here downloads. ``http`` calls an
OpenAI-compatible ``/embeddings`` endpoint, only when configured.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retain.errors import EmbedderFailed
from retain.search.embed import normalised

if TYPE_CHECKING:
    from retain.search.embed import Matrix


def _cached_hub_path(model: str) -> str:
    """A local path for ``model``: the path itself, or its snapshot in the local hub cache."""
    if Path(model).expanduser().exists():
        return str(Path(model).expanduser())
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise EmbedderFailed(
            f"{model!r} is not a local path and huggingface_hub is not installed",
            remedy="give the model's directory",
            model=model,
        ) from exc
    try:
        return str(snapshot_download(model, local_files_only=True))
    except Exception as exc:  # the hub raises several unrelated types for "not cached"
        raise EmbedderFailed(
            f"{model!r} is neither a local path nor in the local model cache "
            "(retain never downloads models)",
            remedy="download it once yourself, or give the model's directory",
            model=model,
        ) from exc


class Model2VecEmbedder:
    """A Model2Vec static model through the ``model2vec`` package."""

    def __init__(self, model: str) -> None:
        try:
            from model2vec import StaticModel as M2V
        except ImportError as exc:
            raise EmbedderFailed(
                "the model2vec package is not installed",
                remedy="pip install 'retain[embed]'",
            ) from exc
        self._name = model
        self._model: Any = M2V.from_pretrained(_cached_hub_path(model))
        self._dim = int(self._model.dim)

    @property
    def model_id(self) -> str:
        return f"model2vec:{self._name}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalised(self._model.encode(list(texts)))


class SentenceTransformerEmbedder:
    """A neural sentence model through ``sentence-transformers``."""

    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderFailed(
                "the sentence-transformers package is not installed",
                remedy="pip install 'retain[st]'",
            ) from exc
        self._name = model
        self._model: Any = SentenceTransformer(
            _cached_hub_path(model), device="cpu", local_files_only=True
        )
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        self._dim = int(get_dim())

    @property
    def model_id(self) -> str:
        return f"sentence-transformers:{self._name}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        import numpy as np

        vectors = self._model.encode(list(texts), batch_size=64, show_progress_bar=False)
        return normalised(np.asarray(vectors))


class HttpEmbedder:
    """An OpenAI-compatible ``POST {url}/embeddings`` endpoint."""

    TIMEOUT_S = 30.0

    def __init__(self, url: str, model: str, api_key: str | None) -> None:
        self._url = url.rstrip("/") + "/embeddings"
        self._model = model
        self._key = api_key
        self._dim = int(self._call(["dimension probe"]).shape[1])

    @property
    def model_id(self) -> str:
        return f"http:{self._model}@{self._url}"

    @property
    def dim(self) -> int:
        return self._dim

    def _call(self, texts: Sequence[str]) -> Matrix:
        import urllib.error
        import urllib.request

        import numpy as np

        request = urllib.request.Request(
            self._url,
            data=json.dumps({"model": self._model, "input": list(texts)}).encode(),
            headers={"Content-Type": "application/json"}
            | ({"Authorization": f"Bearer {self._key}"} if self._key else {}),
        )
        try:
            with urllib.request.urlopen(request, timeout=self.TIMEOUT_S) as response:
                payload = json.loads(response.read())
            rows = sorted(payload["data"], key=lambda item: item["index"])
            return normalised(np.array([row["embedding"] for row in rows], dtype=np.float32))
        except (OSError, ValueError, KeyError, TypeError, urllib.error.URLError) as exc:
            raise EmbedderFailed(
                f"the embedding endpoint {self._url} failed: {exc}",
                remedy="check that the endpoint is up, or set embedder = 'static'",
                url=self._url,
            ) from exc

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            import numpy as np

            return np.zeros((0, self._dim), dtype=np.float32)
        return self._call(texts)
