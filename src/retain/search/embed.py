"""Embedders: text in, one L2-normalised float32 row per text out.

Every embedder has a stable ``model_id`` (stored beside each vector, so a
model change is seen) and a ``dim``. The providers:

``static``  the default: a static word-piece model shipped inside the
            package (``retain/search/models/``), run with numpy alone —
            nothing to download, nothing to install.
``hash``    signed feature hashing of word unigrams and bigrams: no model at
            all, deterministic; the fallback when the configured model cannot
            load.
``model2vec``  a Model2Vec static model by local path or a hub id already in
            the local Hugging Face cache (the ``[embed]`` extra).
``sentence-transformers``  a neural model by local path or cached hub id
            (the ``[st]`` extra).
``http``    an OpenAI-compatible ``/embeddings`` endpoint, called only when
            configured.
``none``    no vectors at all: search is lexical alone (the BM25 ablation).

Nothing here downloads: hub ids are resolved from the local cache only. A
model that cannot load leaves ``load_embedder`` with the hash embedder and the
reason, which ``status`` and every search result report as *degraded*.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import mmap
import os
import re
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import add, mul
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from retain.errors import ConfigInvalid, DimensionMismatch, EmbedderFailed

# numpy is imported where a vector is made, not here: choosing an embedder (the
# settings) costs no numpy, and a command that makes no vector never loads it.
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

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


def check_shape(embedder: Embedder, matrix: Matrix, count: int) -> Matrix:
    """``matrix`` as the embedder promised it, or ``DimensionMismatch``."""
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
    return matrix


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


# -- static word-piece models ---------------------------------------------------


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F
        or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_PIECES = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")


def basic_words(text: str) -> list[str]:
    """BERT's basic tokenisation, uncased: clean, split CJK, fold accents, split punctuation.

    An ASCII word (most of most text) takes a regular expression; only words with
    other characters go through the character-by-character path.
    """
    text = _ASCII_CONTROL.sub("", text)
    if text.isascii():
        return _ASCII_PIECES.findall(text.lower())
    words: list[str] = []
    for token in text.split():
        if token.isascii():
            words.extend(_ASCII_PIECES.findall(token.lower()))
        else:
            words.extend(_unicode_words(token))
    return words


def _unicode_words(text: str) -> list[str]:
    chars = []
    for char in text:
        code = ord(char)
        control = unicodedata.category(char).startswith("C") and char not in "\t\n\r"
        if code == 0 or code == 0xFFFD or control:
            continue
        if _is_cjk(code):
            chars.append(f" {char} ")
        elif char.isspace():
            chars.append(" ")
        else:
            chars.append(char)
    words: list[str] = []
    for token in "".join(chars).lower().split():
        token = "".join(
            c for c in unicodedata.normalize("NFD", token) if unicodedata.category(c) != "Mn"
        )
        current = ""
        for char in token:
            if _is_punctuation(char):
                if current:
                    words.append(current)
                    current = ""
                words.append(char)
            else:
                current += char
        if current:
            words.append(current)
    return words


class StaticModel:
    """A static model: one vector per word piece, a text is the mean of its pieces.

    Loaded from a directory holding ``vocab.txt`` (one piece per line, in id
    order), ``vectors.npy`` (int8, one row per piece), ``scales.npy`` (float32,
    each row's scale) and ``manifest.json`` (name, dim, sha256 of each file),
    which is checked before use. Text is cut into pieces as BERT's uncased
    WordPiece tokenizer cuts it (clean, split CJK and punctuation, fold case
    and accents, longest match first).

    A text is embedded two ways that give the same float32 vector: ``embed`` with
    numpy (a batch), ``embed_few`` in plain Python over the mapped rows (a write's few
    texts, in a process that has not loaded numpy: importing it costs more than the
    arithmetic). The plain path rounds to float32 after every operation, in the order
    numpy adds, so both store the same bytes.
    """

    MAX_WORD_CHARS = 100
    MAX_PIECES = 512
    ARRAYS = ("vectors.npy", "scales.npy")
    CACHED_WORDS = 200_000

    def __init__(self, directory: Path) -> None:
        manifest_path = directory / "manifest.json"
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            files = {n: _mapped(directory / n) for n in ("vocab.txt", *self.ARRAYS)}
        except (OSError, ValueError) as exc:
            raise EmbedderFailed(
                f"cannot read the static model in {directory}: {exc}",
                remedy="reinstall retain, or choose another embedder",
                path=str(directory),
            ) from exc
        sums = manifest.get("sha256") if isinstance(manifest, dict) else None
        if not isinstance(sums, dict) or not isinstance(manifest.get("name"), str):
            raise EmbedderFailed(
                f"the static model's manifest in {directory} lacks its name or checksums",
                remedy="reinstall retain, or choose another embedder",
                path=str(directory),
            )
        import hashlib

        from retain.search.npy import NpyArray

        for label, data in files.items():
            if hashlib.sha256(data).hexdigest() != sums.get(label):
                raise EmbedderFailed(
                    f"the static model's {label} in {directory} does not match its manifest",
                    remedy="reinstall retain, or choose another embedder",
                    path=str(directory),
                )
        self.name = manifest["name"]
        self.pieces = bytes(files["vocab.txt"]).decode("utf-8").split("\n")
        if self.pieces and self.pieces[-1] == "":
            self.pieces.pop()
        self.ids = dict(zip(self.pieces, range(len(self.pieces)), strict=True))
        # a bound on a piece's length (a "##" piece counts its marks): only tries are skipped
        self.longest = max(map(len, self.pieces), default=1)
        self.unknown = self.ids.get("[UNK]")
        # Kept as stored (int8 rows, a float32 scale each), over the mapped file itself:
        # a text's pieces are scaled when it is embedded, so loading copies no row.
        try:
            rows = NpyArray.read(files["vectors.npy"], ("|i1",), dims=2)
            scales = NpyArray.read(files["scales.npy"], ("<f4", "<f8"), dims=1)
        except ValueError as exc:
            raise EmbedderFailed(
                f"the static model's arrays in {directory} cannot be read: {exc}",
                remedy="reinstall retain, or choose another embedder",
                path=str(directory),
            ) from exc
        if rows.shape[0] != len(self.pieces) or scales.shape != rows.shape[:1]:
            raise EmbedderFailed(
                f"the static model in {directory} has {len(self.pieces)} pieces "
                f"but {rows.shape[0]} vectors and {scales.shape[0]} scales",
                remedy="reinstall retain, or choose another embedder",
                path=str(directory),
            )
        self._layout = rows
        self._rows = rows.values.cast("b")  # signed bytes, in the file's order
        self._scales = array("f", scales.floats())  # as numpy's astype(float32) rounds
        self._known: dict[str, tuple[int, ...]] = {}  # word → its pieces, unknown ones left out

    @property
    def dim(self) -> int:
        return self._layout.shape[1]

    @functools.cached_property
    def rows(self) -> npt.NDArray[np.int8]:
        """The rows as a numpy array over the mapped file (made the first time it is used)."""
        import numpy as np

        flat = np.frombuffer(self._rows, dtype=np.int8)
        return flat.reshape(self._layout.shape, order="F" if self._layout.fortran else "C")

    @functools.cached_property
    def scales(self) -> Matrix:
        import numpy as np

        return np.frombuffer(self._scales, dtype=np.float32)

    def _word_ids(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first word pieces of one basic word."""
        if len(word) > self.MAX_WORD_CHARS:
            return () if self.unknown is None else (self.unknown,)
        found: list[int] = []
        start = 0
        while start < len(word):
            end = min(len(word), start + self.longest)  # no piece is longer: skip those tries
            piece_id = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                piece_id = self.ids.get(piece)
                if piece_id is not None:
                    break
                end -= 1
            if piece_id is None:
                return () if self.unknown is None else (self.unknown,)
            found.append(piece_id)
            start = end
        return tuple(found)

    def token_ids(self, text: str) -> list[int]:
        """The known pieces of ``text``, at most ``MAX_PIECES`` (unknown ones are dropped,
        as model2vec drops them). Words are looked up in bulk; only new ones are cut."""
        known = self._known
        words = basic_words(text)
        pieces: list[tuple[int, ...] | None] = list(map(known.get, words))
        if None in pieces:
            for at, word in enumerate(words):
                if pieces[at] is None:
                    cut = tuple(i for i in self._word_ids(word) if i != self.unknown)
                    if len(known) < self.CACHED_WORDS:
                        known[word] = cut
                    pieces[at] = cut
        ids = list(itertools.chain.from_iterable(cast(list[tuple[int, ...]], pieces)))
        return ids[: self.MAX_PIECES]

    def embed(self, texts: Sequence[str]) -> Matrix:
        """The mean piece vector of each text (zero for a text with no known piece)."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = self.token_ids(text)
            if ids:
                pieces = self.rows.take(ids, axis=0).astype(np.float32)
                pieces *= self.scales.take(ids)[:, None]
                out[row] = pieces.sum(axis=0) / len(ids)
        return out

    def embed_few(self, texts: Sequence[str]) -> list[array[float]]:
        """``embed`` in plain Python, a float32 array per text: the same values, as
        numpy makes them (each piece's row scaled, the rows added in order, divided
        by their count), each step rounded to float32."""
        dim, rows, scales = self.dim, self._rows, self._scales
        step, across = (1, len(self.pieces)) if self._layout.fortran else (dim, 1)
        out = []
        for text in texts:
            mean = array("f", bytes(4 * dim))  # numpy's sum starts from zeros
            ids = self.token_ids(text)
            for i in ids:
                row = rows[i * step : i * step + dim * across : across]
                mean = array("f", map(add, mean, array("f", map(mul, row, repeat(scales[i])))))
            if ids:
                count = len(ids)
                mean = array("f", [x / count for x in mean])
            out.append(mean)
        return out


class StaticEmbedder:
    """A static model of the package's, or one in a directory of the same layout."""

    def __init__(self, model: str) -> None:
        directory = MODELS_DIR / model if "/" not in model and os.sep not in model else Path(model)
        if not directory.is_dir():
            raise EmbedderFailed(
                f"no static model {model!r} (looked in {directory})",
                remedy=f"use the built-in {DEFAULT_STATIC_MODEL!r} or a directory path",
                model=model,
            )
        self._model = _static_model(directory.resolve())

    @property
    def model_id(self) -> str:
        return f"static:{self._model.name}"

    @property
    def dim(self) -> int:
        return self._model.dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalised(self._model.embed(texts))

    def embed_few(self, texts: Sequence[str]) -> list[array[float]]:
        """``embed`` without numpy: a float32 array per text, the same values."""
        return [unit(row) for row in self._model.embed_few(texts)]


# -- float32 arithmetic without numpy --------------------------------------------
# A double holds the exact result of +, -, *, / or sqrt of two float32 values to more than
# twice float32's precision, so rounding it to float32 gives what float32 arithmetic gives.


def f32(x: float) -> float:
    """``x`` rounded to float32 (as a Python float)."""
    return array("f", (x,))[0]


def _pairwise_sum(values: array[float], start: int, n: int) -> float:
    """numpy's float32 sum of ``values[start:start + n]``: eight running sums over
    blocks of up to 128, halves of larger runs added (its ``pairwise_sum``)."""
    if n < 8:
        total = 0.0
        for x in values[start : start + n]:
            total = f32(total + x)
        return total
    if n <= 128:
        sums = values[start : start + 8]
        whole = n - n % 8
        for at in range(start + 8, start + whole, 8):
            sums = array("f", map(add, sums, values[at : at + 8]))
        r = [f32(sums[i] + sums[i + 1]) for i in (0, 2, 4, 6)]
        total = f32(f32(r[0] + r[1]) + f32(r[2] + r[3]))
        for x in values[start + whole : start + n]:
            total = f32(total + x)
        return total
    half = n // 2
    half -= half % 8
    return f32(_pairwise_sum(values, start, half) + _pairwise_sum(values, start + half, n - half))


def unit(row: array[float]) -> array[float]:
    """``row`` scaled to unit length as ``normalised`` scales a row (zero stays zero)."""
    squares = array("f", map(mul, row, row))
    norm = f32(math.sqrt(f32(0.0 + _pairwise_sum(squares, 0, len(squares)))))
    if norm == 0:
        return array("f", row)
    return array("f", [x / norm for x in row])


def mixed(own: array[float], other: array[float], weight: float) -> array[float]:
    """``own + weight × other`` as numpy computes it in float32 (then ``unit`` it)."""
    w = f32(weight)
    return array("f", map(add, own, array("f", [w * x for x in other])))


def _mapped(path: Path) -> mmap.mmap | bytes:
    """A file's bytes, mapped read-only (an empty file, which cannot be mapped, read)."""
    with path.open("rb") as handle:
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (ValueError, OSError):
            return handle.read()


@functools.lru_cache(maxsize=4)
def _static_model(directory: Path) -> StaticModel:
    return StaticModel(directory)


# -- optional providers ---------------------------------------------------------


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
        return StaticEmbedder(settings.model)
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
