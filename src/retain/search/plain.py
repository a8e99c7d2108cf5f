"""Vector arithmetic without numpy: what a search of a large SQLite store's vector codes
needs (``storage.sqlite_ann``), and the service's side of any search of vectors a
database keeps (the query's products with the gate's sentences and a realm's sum).

Importing numpy costs a new process 60–100 ms, more than such a search's own work, and
a ``retain search`` command is a new process. So the query vectors, the products with
candidate rows, the relevance gate's arithmetic and the choice of the codes' best
scores are made here over plain buffers (``array``, ``bytes``, memory maps) by
SimSIMD's kernels, which take any buffer of float32 or int8 values and let go of the
interpreter's lock while they run. A vector is a float32 buffer of one row: an
``array('f')``, or a numpy row where numpy is loaded anyway. Where it is (a process's
second search of large codes loads it: ``storage.sqlite_ann.warmed``), the choice of
the best scores is numpy's, at a fraction of the cost.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import operator
import sys
from array import array
from collections.abc import Sequence
from typing import Any, cast

# Where a float32's sign bit is, among its four bytes.
_SIGN_BYTE = 3 if sys.byteorder == "little" else 0
# A sign byte to 1 where the sign bit is clear (the value is +0 or more), else 0.
_CLEAR = bytes(int(b < 0x80) for b in range(256))
_NEGATIVE_ZERO = array("f", [-0.0]).tobytes()


def floats(values: Any) -> array[float]:
    """A float32 buffer (a SimSIMD result, a numpy row, an array) as an ``array('f')``,
    a copy."""
    out = array("f")
    out.frombytes(memoryview(values).cast("B"))
    return out


def packed(vectors: Sequence[Any]) -> bytes:
    """Float32 vectors joined, row after row, as one buffer's bytes."""
    return b"".join(memoryview(v).cast("B").tobytes() for v in vectors)


def stored(blob: bytes) -> bytes:
    """A stored vector (little-endian float32, as the store keeps it) in this machine's
    order."""
    if sys.byteorder == "little":
        return blob
    values = array("f", blob)
    values.byteswap()
    return values.tobytes()


def joined(blobs: Sequence[bytes]) -> bytes:
    """Stored vectors as one buffer of rows, in this machine's order."""
    return b"".join(blobs if sys.byteorder == "little" else map(stored, blobs))


def rows(data: Any, dim: int) -> memoryview[float]:
    """A buffer of whole float32 rows of ``dim`` values as a two-dimensional view, what
    SimSIMD's ``cdist`` reads."""
    flat = memoryview(data).cast("B")
    return flat.cast("f", shape=[len(flat) // (4 * dim), dim])


def int8_rows(data: Any, dim: int) -> memoryview[int]:
    """A buffer of whole int8 rows of ``dim`` values as a two-dimensional view."""
    flat = memoryview(data).cast("B")
    return flat.cast("b", shape=[len(flat) // dim, dim])


def _kernels() -> Any:
    """SimSIMD (its stubs know numpy's arrays, not the buffers given here)."""
    import simsimd

    return simsimd


def dots(queries: Any, data: Any, dim: int) -> memoryview[float]:
    """Each float32 row of ``queries`` (one vector, or several joined) by each float32 row
    of ``data``: a float32 view, a query's products after another's."""
    if not len(memoryview(data)):
        return memoryview(array("f")).cast("B").cast("f")
    found = _kernels().cdist(
        rows(queries, dim), rows(data, dim), metric="dot", dtype="float32", out_dtype="float32"
    )
    return view(found)


def cosines(query: Any, data: Any, dim: int) -> list[float]:
    """``dots`` as a list: a unit query's cosines with unit rows."""
    return cast("list[float]", dots(query, data, dim).tolist())


def int8_dots(queries: memoryview[int], codes: memoryview[int]) -> memoryview[float]:
    """Each int8 row of ``queries`` by each int8 row of ``codes`` (two-dimensional
    views), the products summed exactly in integers: a float32 view, a query's row
    after another's."""
    found = _kernels().cdist(queries, codes, metric="dot", dtype="int8", out_dtype="float32")
    return view(found)


def int8_floats(data: Any, dim: int) -> memoryview[float]:
    """Int8 rows of ``dim`` values as float32 values, exactly: their products with the
    identity's rows (integers summed in integers), one kernel call for all of them."""
    return int8_dots(int8_rows(data, dim), int8_rows(_identity(dim), dim))


@functools.cache
def _identity(dim: int) -> bytes:
    """The int8 identity matrix of ``dim`` rows."""
    matrix = bytearray(dim * dim)
    matrix[:: dim + 1] = b"\x01" * dim
    return bytes(matrix)


def dot(a: Any, b: Any) -> float:
    """The product of two float32 vectors."""
    return float(_kernels().dot(view(a), view(b)))


def added(a: Any, b: Any) -> memoryview[float]:
    """``a + b``, float32 vectors: one float32 rounding a value, as numpy's."""
    return view(_kernels().wsum(view(a), view(b), alpha=1.0, beta=1.0))


def summed(data: Any, dim: int) -> array[float]:
    """The sum of ``data``'s float32 rows of ``dim`` values (zeros for none): the second
    half of the rows added to the first, again and again, each step one SimSIMD call."""
    values = view(data)
    count = len(values) // dim
    if not count:
        return array("f", bytes(4 * dim))
    while count > 1:
        half = count // 2
        first, second = values[: half * dim], values[half * dim : 2 * half * dim]
        folded = view(_kernels().wsum(first, second, alpha=1.0, beta=1.0))
        if count % 2:  # the odd row goes on as it is
            folded = view(folded.tobytes() + values[2 * half * dim : count * dim].tobytes())
        values, count = folded, half + count % 2
    return floats(values[:dim])


def scaled(a: Any, scale: float) -> memoryview[float]:
    """``scale × a``, a float32 vector: one float32 rounding a value."""
    values = view(a)
    return view(_kernels().wsum(values, values, alpha=scale, beta=0.0))


def times(a: Any, b: Any) -> memoryview[float]:
    """``a × b`` value by value, float32 vectors."""
    values = view(a)
    return view(_kernels().fma(values, view(b), values, alpha=1.0, beta=0.0))


def view(values: Any) -> memoryview[float]:
    """A float32 buffer as a flat float32 view."""
    return memoryview(values).cast("B").cast("f")


def codes(vector: Any) -> array[int]:
    """A float32 vector as int8 codes, its largest magnitude ±127 (its step left out: a
    query's products with every row are scaled alike, which changes no order)."""
    values = view(vector).tolist()
    top = max(map(abs, values), default=0.0)
    return array("b", map(round, map((127 / top if top else 1.0).__mul__, values)))


def at_least(scores: Any, threshold: float) -> list[int]:
    """The places of ``scores`` (float32) at ``threshold`` or above, in order. Each score
    less the threshold is made by SimSIMD (its sign is the comparison's: the difference
    of two float32s rounds to zero, not past it), and the places whose sign bit is clear
    are found byte by byte: no Python object is made for a score below."""
    values = view(scores)
    if not len(values):
        return []
    threshold += 0.0  # (-0 becomes 0)
    less = _kernels().wsum(values, _ones(len(values)), alpha=1.0, beta=-threshold)
    # (bytes' own strided slice: a memoryview's copies a byte at a time, 15× slower)
    clear = memoryview(less).tobytes()[_SIGN_BYTE::4].translate(_CLEAR)
    if clear.count(1) * 8 > len(clear):  # many: every byte read in one pass, in C
        found = list(itertools.compress(range(len(clear)), clear))
    else:  # few: the runs between them measured, each place the sum of those before
        runs = map((1).__add__, map(len, clear.split(b"\x01")[:-1]))
        found = list(itertools.islice(itertools.accumulate(runs, initial=-1), 1, None))
    if threshold == 0:  # SimSIMD leaves -0 less 0 at -0: a score of -0 is at 0 as well
        scores_bytes, at = values.tobytes(), -1
        while (at := scores_bytes.find(_NEGATIVE_ZERO, at + 1)) >= 0:
            if at % 4 == 0:
                found.append(at // 4)
        found = sorted(set(found))  # (once each, whichever way a kernel signs -0 less 0)
    return found


@functools.lru_cache(maxsize=16)
def _ones(count: int) -> array[float]:
    """``count`` ones (the parts scanned are of a few sizes, met at every search)."""
    return array("f", [1.0]) * count


def best(parts: Sequence[Any], count: int, sampled: int = 16) -> list[int]:
    """The places, counted across ``parts`` (float32 scores each), of the ``count``
    highest scores, in no order (all of them when there are no more).

    A strided sample dense enough that ``sampled`` of its scores are expected above the
    place of the ``8 × count``-th gives a threshold that about that many scores pass,
    and only they are ranked. When the sample is too sparse for that, or fewer than
    ``count`` pass (``sampled`` of the sample's scores among the best ``count``, where
    about 2 are expected: less than once in a billion for scores in no order), every
    score is ranked. Where numpy is loaded (a process that wrote a batch, or searched
    large codes before: ``sqlite_ann.warmed``) its partition does it, at a tenth of the
    cost (``_best_numpy``): the same places but for ties."""
    views = [view(p) for p in parts]
    size = sum(len(v) for v in views)
    if count >= size:
        return list(range(size))
    if "numpy" in sys.modules:
        return _best_numpy(views, size, count, sampled)
    return _best_plain(views, size, count, sampled)


def about(parts: Sequence[Any], count: int, sampled: int = 32) -> list[int]:
    """The places, in order and counted across ``parts`` (float32 scores each), of about
    ``count`` of the highest scores, unranked: those at or above the score that a strided
    sample (one score in ``count ÷ sampled``) has ``count ÷ stride`` at or above it: as
    many as ``count`` give or take a sixth, for 32, and exactly ``count`` (but for ties)
    below twice ``sampled``. Every place when the sample would be too sparse. Cheaper than
    ``best`` where the exact ``count`` do not matter (a pool scored again); by numpy's
    partition where numpy is loaded already, as ``best``."""
    views = [view(p) for p in parts]
    size = sum(len(v) for v in views)
    stride = max(1, count // sampled)
    kept = count // stride  # the sample's scores at or above the threshold
    if count >= size or size // stride <= kept:
        return list(range(size))
    if "numpy" in sys.modules:
        return _about_numpy(views, stride, kept)
    return _about_plain(views, stride, kept)


def _about_plain(views: list[memoryview[float]], stride: int, kept: int) -> list[int]:
    places, _ = _above_plain(views, _sampled(views, stride, kept))
    return places


def _about_numpy(views: list[memoryview[float]], stride: int, kept: int) -> list[int]:
    above: list[int] = _above_numpy(_scores_numpy(views), stride, kept).tolist()
    return above


def _best_plain(views: list[memoryview[float]], size: int, count: int, sampled: int) -> list[int]:
    """``best`` without numpy: the sample's threshold, the scores at or above it found by
    their signs (``at_least``), one sort of theirs."""
    stride = 8 * count // sampled
    if stride >= 2 and size // stride > sampled:
        places, values = _above_plain(views, _sampled(views, stride, sampled))
        if len(places) >= count:
            return _highest(places, values, count)
    every = floats(b"".join(part.cast("B") for part in views))
    return _highest(list(range(size)), every.tolist(), count)


def _best_numpy(views: list[memoryview[float]], size: int, count: int, sampled: int) -> list[int]:
    """``best`` by numpy's partition, of the sample's threshold and then of the scores
    above it (0.6 ms at a million scores, against 6 for partitioning them all)."""
    import numpy as np

    scores = _scores_numpy(views)
    stride = 8 * count // sampled
    if stride >= 2 and size // stride > sampled:
        above = _above_numpy(scores, stride, sampled)
        if len(above) >= count:
            kept = np.argpartition(scores[above], len(above) - count)[len(above) - count :]
            return cast("list[int]", above[kept].tolist())
    return cast("list[int]", np.argpartition(scores, size - count)[size - count :].tolist())


def _sampled(views: list[memoryview[float]], stride: int, kept: int) -> float:
    """The ``kept``-th highest score of a strided sample (each part's from its start)."""
    sample = [x for part in views for x in part[::stride].tolist()]
    return heapq.nlargest(kept, sample)[-1]


def _above_plain(views: list[memoryview[float]], threshold: float) -> tuple[list[int], list[float]]:
    """The places, counted across ``views``, of the scores at or above ``threshold``, and
    those scores, in order."""
    places: list[int] = []
    values: list[float] = []
    start = 0
    for part in views:
        found = at_least(part, threshold)
        if found:  # (the offset added by map, in C)
            places += map(start.__add__, found)
            values += picked(part, found)
        start += len(part)
    return places, values


def _scores_numpy(views: list[memoryview[float]]) -> Any:
    """The parts' scores joined in one numpy array."""
    import numpy as np

    return np.concatenate([np.frombuffer(part.cast("B"), dtype=np.float32) for part in views])


def _above_numpy(scores: Any, stride: int, kept: int) -> Any:
    """The places of ``scores`` at or above the ``kept``-th highest of their strided
    sample (by numpy's partition)."""
    import numpy as np

    sample = scores[::stride]
    nth = len(sample) - kept
    return np.flatnonzero(scores >= np.partition(sample, nth)[nth])


def picked(values: Any, places: list[int]) -> Sequence[Any]:
    """``values`` at ``places`` (at least one; in C: a getter of every place)."""
    return operator.itemgetter(*places)(values) if len(places) > 1 else [values[places[0]]]


def _highest(places: list[int], values: list[float], count: int) -> list[int]:
    """The ``count`` of ``places`` whose ``values`` are highest (ties at the last one's
    value taken in order): one sort of the values, in C, for the ``count``-th."""
    if count >= len(places):
        return places
    cut = sorted(values, reverse=True)[count - 1]
    kept = list(itertools.compress(places, map(cut.__lt__, values)))
    tied = itertools.compress(places, map(cut.__eq__, values))
    return kept + list(itertools.islice(tied, count - len(kept)))
