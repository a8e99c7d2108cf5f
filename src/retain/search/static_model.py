"""The static model: the default embedder, a word-piece model read with numpy alone.

``StaticModel`` reads a model directory (the package's own in ``search/models/``, which
``bench/static_model.py`` builds, or one of the same layout) over its mapped files,
checked against its manifest, and cuts text into word pieces as BERT's uncased
WordPiece tokenizer does; ``StaticEmbedder`` is the ``static`` provider over it. A
batch is embedded with numpy; a write's few texts are embedded without it
(``StaticModel.embed_few``, ``unit``, ``mixed``) to the same float32 bytes, so a
process that makes only those vectors never imports numpy. The model's reader
(``search/npy.py``) and hashlib are imported the first time a model loads.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import unicodedata
from array import array
from collections.abc import Iterable, Sequence
from operator import add, mul
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from retain.errors import EmbedderFailed
from retain.search.embed import DEFAULT_STATIC_MODEL, MODELS_DIR, normalised

if TYPE_CHECKING:
    import mmap

    import numpy as np
    import numpy.typing as npt

    from retain.search.embed import Matrix

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


def _unusable(directory: Path, message: str) -> EmbedderFailed:
    """A static model's directory refused: ``message`` says why."""
    return EmbedderFailed(
        message, remedy="reinstall retain, or choose another embedder", path=str(directory)
    )


class StaticModel:
    """A static model: one vector per word piece, a text is the mean of its pieces.

    Loaded from a directory holding ``vocab.txt`` (one piece per line, in id
    order), ``vectors.npy`` (int8, one row per piece), ``scales.npy`` (float32,
    each row's scale) and ``manifest.json`` (name, dim, sha256 of each file),
    which is checked before use. Text is cut into pieces as BERT's uncased
    WordPiece tokenizer cuts it (clean, split CJK and punctuation, fold case
    and accents, longest match first).

    A directory may also hold ``memo.npy``: the unit vectors (float32, a row each) of
    the texts its manifest lists under ``memo``, as this model embeds them (``memo``:
    text → row), made from the files whose sha256 it lists under ``memo_of`` (other
    files: the memo is left unused). The bundled model's are the relevance gate's
    sentences (``rank.BACKGROUND``), which every new process's first search would
    otherwise cut and add (9 ms); ``bench/static_model.py --memo`` writes them again.

    A text is embedded two ways that give the same float32 vector: ``embed`` with
    numpy (a batch), ``embed_few`` without it, over the mapped rows with SimSIMD's
    elementwise kernels (a write's few texts, a search's queries and the relevance
    gate's sentences, in a process that has not loaded numpy: importing it costs more
    than the arithmetic). That path rounds to float32 after every operation, in the
    order numpy adds, so both store the same bytes.
    """

    MAX_WORD_CHARS = 100
    MAX_PIECES = 512
    ARRAYS = ("vectors.npy", "scales.npy")
    MEMO = "memo.npy"
    CACHED_WORDS = 200_000
    CACHED_PIECES = 8192  # rows ``embed_few`` keeps scaled: 8 MiB at 256 dimensions

    def __init__(self, directory: Path) -> None:
        from retain.search.npy import NpyArray, mapped

        manifest_path = directory / "manifest.json"
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            sums = manifest.get("sha256") if isinstance(manifest, dict) else None
            memo = isinstance(sums, dict) and self.MEMO in sums  # checked like the rest
            names = ("vocab.txt", *self.ARRAYS, *((self.MEMO,) if memo else ()))
            files = {n: mapped(directory / n) for n in names}
        except (OSError, ValueError) as exc:
            raise _unusable(
                directory,
                f"cannot read the static model in {directory}: {exc}",
            ) from exc
        if not isinstance(sums, dict) or not isinstance(manifest.get("name"), str):
            raise _unusable(
                directory,
                f"the static model's manifest in {directory} lacks its name or checksums",
            )
        import hashlib

        for label, data in files.items():
            if hashlib.sha256(data).hexdigest() != sums.get(label):
                raise _unusable(
                    directory,
                    f"the static model's {label} in {directory} does not match its manifest",
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
            raise _unusable(
                directory,
                f"the static model's arrays in {directory} cannot be read: {exc}",
            ) from exc
        if rows.shape[0] != len(self.pieces) or scales.shape != rows.shape[:1]:
            raise _unusable(
                directory,
                f"the static model in {directory} has {len(self.pieces)} pieces "
                f"but {rows.shape[0]} vectors and {scales.shape[0]} scales",
            )
        self.memo = self._memo(directory, manifest, files.get(self.MEMO), rows.shape[1])
        self._layout = rows
        self._rows = rows.values.cast("b")  # signed bytes, in the file's order
        self._scales = array("f", scales.floats())  # as numpy's astype(float32) rounds
        self._known: dict[str, tuple[int, ...]] = {}  # word → its pieces, unknown ones left out
        self._few: dict[int, array[float]] = {}  # piece → its scaled row (``embed_few``)

    @classmethod
    def _memo(
        cls, directory: Path, manifest: dict[str, Any], data: mmap.mmap | bytes | None, dim: int
    ) -> dict[str, array[float]]:
        """The memo's rows by text: none without one, nor when it was made from other
        files than these (``memo_of``: the sha256 of each, as the memo's writer read
        them; the files themselves are checked against the manifest). A memo that does
        not fit its list of texts is refused."""
        from retain.search.npy import NpyArray

        if data is None:
            return {}
        texts = manifest.get("memo")
        try:
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise ValueError("its manifest's memo is not a list of texts")
            if len(set(texts)) != len(texts):
                raise ValueError("its manifest's memo names a text twice")
            table = NpyArray.read(data, ("<f4",), dims=2)
            if table.fortran or table.shape != (len(texts), dim):
                raise ValueError(f"an array of shape {table.shape} for {len(texts)} texts")
        except ValueError as exc:
            raise _unusable(
                directory,
                f"the static model's memo in {directory} cannot be read: {exc}",
            ) from exc
        sums = manifest["sha256"]
        if manifest.get("memo_of") != {n: sums.get(n) for n in ("vocab.txt", *cls.ARRAYS)}:
            return {}  # stale: its texts are embedded as any other
        values = table.floats()
        return {text: values[i * dim : (i + 1) * dim] for i, text in enumerate(texts)}

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

    @functools.cached_property
    def _dequantized(self) -> tuple[Matrix, npt.NDArray[np.bool_]]:
        """Each piece's row in float32 (its int8 row times its scale: the values ``embed``
        adds), and which rows are made. A row is made the first time a batch holds its
        piece, so a batch adds rows already scaled (28 → 16 µs a text of 150 pieces)
        and no process pays for the whole table (200 ms, 30 MB) up front. The table is
        an anonymous map, its pages made as rows are written: numpy asks the kernel for
        huge pages for an array as large as this (2 MB each), and a few hundred rows
        made across it would hold nearly all of it (27 MB more in a searching process)."""
        import mmap

        import numpy as np

        size = self.rows.size  # (a map holds a byte at least: a model of no rows maps one)
        table = np.frombuffer(mmap.mmap(-1, max(4 * size, 1)), np.float32, count=size)
        return table.reshape(self.rows.shape), np.zeros(self.rows.shape[0], np.bool_)

    def _scaled(self, ids: npt.NDArray[np.intp]) -> Matrix:
        """The float32 table with the rows of ``ids`` made."""
        import numpy as np

        table, made = self._dequantized
        wanted = np.zeros_like(made)
        wanted[ids] = True
        new = np.flatnonzero(wanted & ~made)  # each once: a batch holds a piece many times
        if new.size:  # (two threads making a row write the same values: no lock needed)
            table[new] = self.rows.take(new, axis=0) * self.scales.take(new)[:, None]
            made[new] = True  # after the row: a row marked made is whole
        return table

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
            cuts = {}
            for word in {w for w, p in zip(words, pieces, strict=True) if p is None}:
                cuts[word] = tuple(i for i in self._word_ids(word) if i != self.unknown)
                if len(known) < self.CACHED_WORDS:
                    known[word] = cuts[word]
            pieces = list(map(cuts.get, words, pieces))  # a new word's cut, else as found
        ids = list(itertools.chain.from_iterable(cast(list[tuple[int, ...]], pieces)))
        return ids[: self.MAX_PIECES]

    def embed(self, texts: Sequence[str]) -> Matrix:
        """The mean piece vector of each text (zero for a text with no known piece)."""
        return self._means([self.token_ids(text) for text in texts])

    def embed_joined(self, texts: Sequence[Sequence[str]]) -> Matrix:
        """``embed`` of each ``" ".join(parts)``, the same values, each part cut into
        pieces once however many texts join it (a memory's neighbours' texts: a turn is
        the neighbour of four). A space ends a word, and a text's first ``MAX_PIECES``
        pieces are its parts' first ones, so the joined text's pieces are its parts'."""
        cut: dict[str, list[int]] = {}
        pieces = []
        for parts in texts:
            ids: list[int] = []
            for part in parts:
                if len(ids) >= self.MAX_PIECES:
                    break
                if part not in cut:
                    cut[part] = self.token_ids(part)
                ids += cut[part]
            pieces.append(ids[: self.MAX_PIECES])
        return self._means(pieces)

    def _means(self, pieces: list[list[int]]) -> Matrix:
        """The mean of each list's pieces' rows (zero for an empty list)."""
        import numpy as np

        out = np.zeros((len(pieces), self.dim), dtype=np.float32)
        every = np.fromiter(itertools.chain.from_iterable(pieces), np.intp)
        table = self._scaled(every)
        for row, ids in enumerate(pieces):
            if ids:
                out[row] = table.take(ids, axis=0).sum(axis=0) / len(ids)
        return out

    def embed_few(self, texts: Sequence[str]) -> list[array[float]]:
        """``embed`` without numpy, a float32 array per text: the same values, as numpy
        makes them (each piece's row scaled, the rows added in order, divided by their
        count), each step rounded to float32. The rows are scaled and added by SimSIMD's
        elementwise kernels (``a × s + b × 0`` and ``a + b``: one float32 rounding each,
        as numpy's): 3–6 µs a piece, against some sixty in plain Python."""
        from retain.search.plain import added, floats

        pieces = [self.token_ids(text) for text in texts]
        rows = self._scaled_rows(itertools.chain.from_iterable(pieces))
        out = []
        for ids in pieces:
            mean: Any = array("f", bytes(4 * self.dim))  # numpy's sum starts from zeros
            for i in ids:
                mean = added(mean, rows[i])
            total = floats(mean)
            if ids:
                count = len(ids)
                total = array("f", [x / count for x in total])
            out.append(total)
        return out

    def _scaled_rows(self, pieces: Iterable[int]) -> dict[int, array[float]]:
        """Each of ``pieces``' rows times its scale in float32 (``embed_few``'s own, as
        ``_scaled`` is the batches'). A row is made the first time it is asked for, the
        new ones together: their int8 codes are turned into floats by one SimSIMD call
        (``plain.int8_floats``), 6 µs a row against 21 read value by value."""
        from retain.search.plain import floats, int8_floats, scaled

        few, dim = self._few, self.dim
        found = {}
        new = []
        for piece in dict.fromkeys(pieces):
            row = few.get(piece)
            if row is None:
                new.append(piece)
            else:
                found[piece] = row
        if not new:
            return found
        step, across = (1, len(self.pieces)) if self._layout.fortran else (dim, 1)
        rows = self._rows
        codes = b"".join(rows[p * step : p * step + dim * across : across].tobytes() for p in new)
        values = int8_floats(codes, dim)
        for k, piece in enumerate(new):
            row = floats(scaled(values[k * dim : (k + 1) * dim], self._scales[piece]))
            found[piece] = row
            if len(few) < self.CACHED_PIECES:
                few[piece] = row
        return found


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

    def embed_joined(self, texts: Sequence[Sequence[str]]) -> Matrix:
        """``embed`` of each ``" ".join(parts)``, each part cut once (``StaticModel``)."""
        return normalised(self._model.embed_joined(texts))

    def embed_few(self, texts: Sequence[str]) -> list[array[float]]:
        """``embed`` without numpy: a float32 array per text, the same values (a text in
        the model's memo is not embedded again)."""
        memo = self._model.memo
        made = iter(
            [unit(row) for row in self._model.embed_few([t for t in texts if t not in memo])]
        )
        return [memo[t][:] if t in memo else next(made) for t in texts]


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


@functools.lru_cache(maxsize=4)
def _static_model(directory: Path) -> StaticModel:
    return StaticModel(directory)
