"""The semantic sense: an exact cosine scan over one model's vectors, in memory.

The vectors of the model in use are held as one contiguous float32 matrix
(rows are unit length, so a matrix-vector product is the cosine of every
memory at once) and an int8 copy, which the scan reads: a quarter of the memory
traffic. The queries are taken to int8 codes too, and each product of codes is
summed in integers by SimSIMD's kernels (``scan_codes``), so each cosine is within a
known margin of the float32 one, which is computed again for every row that could
reach the gate (see ``Scored``). It is refreshed
incrementally: the store numbers every vector it writes (``vec``, always
growing), and a refresh reads only the rows past the last one seen, 8,192 at a
time, as columns joined into one buffer (no Python object per vector). A memory
deleted since leaves a row that the governance filter turns away; the matrix
is reconciled with the store whenever new rows arrive and the counts differ.

Scoring is exact — no approximate index that could miss older evidence — and
governance comes first in effect: the best rows are looked up through the
caller's filter, and the scan widens until enough pass or every row was seen.

The codes' products run on the calling thread, with no thread pool of their own:
threads spinning beside the caller's other threads and processes cost more than
they gain (on a busy machine, eight synonyms took 190 ms to scan 10,000 rows with
two BLAS threads, 12 ms with one; SimSIMD's own OpenMP threads burned 8.8 ms of CPU
a 1.1 ms scan). Where two parts are worth reading side by side (the persisted codes
of ``storage.sqlite_ann``) the caller runs them on two threads, as the kernel lets go
of the interpreter's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from retain.errors import DimensionMismatch
from retain.search.embed import check_stored
from retain.search.lexical import SEMANTIC, SenseHits
from retain.storage.base import LexicalHit, MemoryFilter, Reads, VectorRows

if TYPE_CHECKING:
    from retain.search.embed import Matrix
    from retain.storage.base import Vector

GROWTH = 1.5
REFRESH_CHUNK = 8192  # stored vectors read and written into the matrix at a time
# Added to each row's bound: the float32 rounding of a 256-term product is far below it.
ROUNDING = 1e-4


@dataclass(frozen=True, slots=True)
class Scored:
    """Each query's (a row) cosines against every memory (a column) from the int8 codes
    of both, each within its ``margin`` of the true one, and what makes any of them
    exact: taken from one snapshot of the index. Other realms' columns are -inf."""

    queries: Matrix
    rough: Matrix
    norms: npt.NDArray[np.float32]  # each query's
    missed: npt.NDArray[np.float32]  # each query's distance from its codes (Euclidean)
    slack: npt.NDArray[np.float32]  # each row's distance from its codes
    lengths: npt.NDArray[np.float32]  # each row's codes' length
    nums: npt.NDArray[np.int64]
    matrix: Matrix  # the float32 rows
    totals: npt.NDArray[np.float64]  # each query's cosines summed over the realm, exactly
    count: int  # the realm's rows

    def margin(self, query: int) -> npt.NDArray[np.float32]:
        """How far each of query ``query``'s rough cosines may be from the true one:
        ``q·x − q̂·x̂ = q·(x − x̂) + (q − q̂)·x̂``, each term within the product of the
        lengths."""
        margin: npt.NDArray[np.float32] = self.norms[query] * self.slack
        margin += self.missed[query] * self.lengths
        return margin

    def exact(self, query: int, gate: float) -> npt.NDArray[np.float32]:
        """Query ``query``'s cosines, exact wherever the cosine may reach ``gate`` (from
        the float32 rows); below it every value stays below it, as the true one is."""
        values: npt.NDArray[np.float32] = self.rough[query].copy()
        near = np.flatnonzero(values + self.margin(query) >= gate)
        near = near[np.isfinite(values[near])]  # another realm's column stays -inf
        if len(near):
            values[near] = self.matrix[near] @ self.queries[query]
        return values


class VectorIndex:
    """Every vector of one model, as rows of a matrix, with their memory numbers.

    ``_row_of[num]`` is the row of memory ``num`` (-1: none): an array, not a
    dict, so a million memories cost 4 MB of bookkeeping, not a hundred.

    One index serves every thread of a process: a refresh changes it under a lock,
    and a search scores a snapshot taken under the same lock. Rows are only ever
    appended or overwritten in place; dropping rows builds new arrays, so a
    snapshot's columns keep meaning the memories they meant.
    """

    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self._matrix: Matrix = np.zeros((0, dim), dtype=np.float32)
        self._nums = np.zeros(0, dtype=np.int64)
        self._row_of = np.full(0, -1, dtype=np.int32)
        self._realm = np.zeros(0, dtype=np.int32)  # each row's realm, as a code
        # An int8 copy the scan reads (a quarter of the memory traffic): each row is
        # ``_step`` × its codes, within ``_slack`` of the float32 row (Euclidean), and
        # ``_length`` long.
        self._coded = np.zeros((0, dim), dtype=np.int8)
        self._step = np.zeros(0, dtype=np.float32)
        self._slack = np.zeros(0, dtype=np.float32)
        self._length = np.zeros(0, dtype=np.float32)
        self._sums: dict[int, tuple[int, npt.NDArray[np.float64], int]] = {}
        self._version = 0  # moves with every change, for the realms' sums
        self._codes: dict[str, int] = {}
        self._size = 0
        self._seen = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._size

    def refresh(self, tx: Reads) -> None:
        """Take in the vectors written since the last refresh, a chunk at a time."""
        with self._lock:
            last = tx.last_vector()
            if last == self._seen:
                return
            if self._seen == 0:  # the first load of every row: size the matrix once
                self._reserve(tx.vector_count(self.model))
            while True:
                rows = tx.vectors_after(self.model, self._seen, REFRESH_CHUNK)
                if not rows.nums:
                    break
                self._put(rows)  # a refused chunk is met again, until it is mended
                self._seen = rows.last_vec
            self._seen = max(self._seen, last)  # past other models' rows too
            if tx.vector_count(self.model) != self._size:
                self._keep(tx.vector_nums(self.model))

    def _reserve(self, rows: int) -> None:
        if rows <= len(self._nums):
            return
        matrix = np.zeros((rows, self.dim), dtype=np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        nums = np.zeros(rows, dtype=np.int64)
        nums[: self._size] = self._nums[: self._size]
        realms = np.zeros(rows, dtype=np.int32)
        realms[: self._size] = self._realm[: self._size]
        self._matrix, self._nums, self._realm = matrix, nums, realms
        coded = np.zeros((rows, self.dim), dtype=np.int8)
        coded[: self._size] = self._coded[: self._size]
        step = np.zeros(rows, dtype=np.float32)
        step[: self._size] = self._step[: self._size]
        slack = np.zeros(rows, dtype=np.float32)
        slack[: self._size] = self._slack[: self._size]
        length = np.zeros(rows, dtype=np.float32)
        length[: self._size] = self._length[: self._size]
        self._coded, self._step, self._slack, self._length = coded, step, slack, length

    def _put(self, rows: VectorRows) -> None:
        """Write a chunk of stored vectors into their rows (new memories get new rows)."""
        vectors = stored_matrix(rows, self.model, self.dim)
        count = len(rows.nums)
        nums = np.array(rows.nums, dtype=np.int64)
        codes = np.fromiter(
            (self._codes.setdefault(r, len(self._codes)) for r in rows.realms),
            dtype=np.int32,
            count=count,
        )
        top = int(nums.max())
        if top >= len(self._row_of):
            grown = np.full(int((top + 1) * GROWTH) + 1, -1, dtype=np.int32)
            grown[: len(self._row_of)] = self._row_of
            self._row_of = grown
        at = self._row_of[nums].astype(np.int64)
        new = at < 0
        added = int(new.sum())
        if added:
            if self._size + added > len(self._nums):
                self._reserve(int((self._size + added) * GROWTH) + 1024)
            at[new] = np.arange(self._size, self._size + added)
            self._row_of[nums[new]] = at[new]
            self._nums[at[new]] = nums[new]
            self._size += added
        self._matrix[at] = vectors
        self._realm[at] = codes
        coded, step = quantized(vectors)
        decoded = coded * step[:, None]
        self._coded[at] = coded
        self._step[at] = step
        self._slack[at] = np.linalg.norm(vectors - decoded, axis=1) + ROUNDING
        self._length[at] = np.linalg.norm(decoded, axis=1)
        self._version += 1

    def _keep(self, live: set[int]) -> None:
        """Drop the rows of memories that no longer have a vector of this model."""
        size = self._size
        keep = np.flatnonzero(np.isin(self._nums[:size], np.fromiter(live, dtype=np.int64)))
        self._matrix = np.ascontiguousarray(self._matrix[keep])
        self._nums = self._nums[keep]
        self._realm = self._realm[keep]
        self._coded = np.ascontiguousarray(self._coded[keep])
        self._step, self._slack = self._step[keep], self._slack[keep]
        self._length = self._length[keep]
        self._version += 1
        self._size = len(keep)
        self._row_of = np.full(len(self._row_of), -1, dtype=np.int32)
        self._row_of[self._nums] = np.arange(self._size, dtype=np.int32)

    def scores(self, queries: Matrix, realm: str) -> Scored:
        """Each query's (a row) cosines against every memory (a column) of ``realm``,
        from the int8 copy, and the exact sum over the realm; the other realms'
        columns are -inf: nothing crosses realms, not even a mean."""
        if queries.shape[1] != self.dim:
            raise DimensionMismatch(
                f"a {queries.shape[1]}-dimensional query met {self.dim}-dimensional vectors "
                f"of {self.model}",
                remedy="reindex the store after changing the embedder",
                fix="reindex",
                expected_dim=self.dim,
                actual_dim=int(queries.shape[1]),
            )
        with self._lock:
            size = self._size
            matrix, nums, realms = self._matrix[:size], self._nums[:size], self._realm[:size]
            coded, step = self._coded[:size], self._step[:size]
            slack, lengths = self._slack[:size], self._length[:size]
            code = self._codes.get(realm)
            several = len(self._codes) > 1
            total, count = self._realm_sum(code, matrix, realms, several)
        asked, scale = quantized(queries)
        rough = np.empty((len(queries), size), dtype=np.float32)
        scan_codes(asked, scale, coded, step, rough)
        if code is None:
            rough[:] = -np.inf
        elif several:
            rough[:, realms != code] = -np.inf
        totals = queries.astype(np.float64) @ total
        norms = np.linalg.norm(queries, axis=1)
        missed = np.linalg.norm(queries - asked * scale[:, None], axis=1) + ROUNDING
        return Scored(queries, rough, norms, missed, slack, lengths, nums, matrix, totals, count)

    def _realm_sum(
        self, code: int | None, matrix: Matrix, realms: npt.NDArray[np.int32], several: bool
    ) -> tuple[npt.NDArray[np.float64], int]:
        """The realm's rows summed (kept until the index changes) and how many."""
        if code is None:
            return np.zeros(self.dim), 0
        kept = self._sums.get(code)
        if kept is None or kept[0] != self._version:
            own = matrix[realms == code] if several else matrix
            kept = (self._version, own.sum(axis=0, dtype=np.float64), len(own))
            self._sums[code] = kept
        return kept[1], kept[2]


def quantized(rows: Matrix) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as int8 codes and a step (the row is about ``step × codes``): its largest
    magnitude is ±127, a row of zeros has step 1."""
    step = (np.abs(rows).max(axis=1) / 127).astype(np.float32)
    step[step == 0] = 1.0
    return np.rint(rows / step[:, None]).astype(np.int8), step


def scan_codes(
    asked: npt.NDArray[np.int8],
    scale: npt.NDArray[np.float32],
    codes: npt.NDArray[np.int8],
    step: npt.NDArray[np.float32],
    out: Matrix,
) -> None:
    """Each query (a row: ``scale × asked``) by each row (``step × codes``) into ``out``:
    the products of codes summed exactly, in integers, by SimSIMD's kernels, then
    scaled. The kernel lets go of the interpreter's lock, so parts of the rows can be
    scanned on threads side by side.

    Not with ``cdist(out=…)``: SimSIMD 6.5 returns ``None`` from it without taking a
    reference, and the interpreter aborts once ``None``'s count runs out."""
    import simsimd

    if len(asked) and len(codes):
        found = simsimd.cdist(asked, codes, metric="dot", dtype="int8", out_dtype="float32")
        assert isinstance(found, simsimd.DistancesTensor)  # matrices in, a matrix out
        np.multiply(np.asarray(found), step, out=out)
        out *= scale[:, None]


def matrix_of(queries: Sequence[Vector]) -> Matrix:
    """Query vectors (float32 rows: arrays, or a matrix's) as one matrix, a row each."""
    from retain.search.plain import packed

    return np.frombuffer(packed(queries), dtype=np.float32).reshape(len(queries), -1)


def stored_matrix(rows: VectorRows, model: str, dim: int) -> Matrix:
    """A chunk of stored vectors as one matrix, a row each; a vector of another size is
    refused (``dimension_mismatch``, naming the memory)."""
    check_stored(rows, model, dim)
    return unpacked(rows.blobs, dim)


def unpacked(blobs: Sequence[bytes], dim: int) -> Matrix:
    """Stored vectors (little-endian float32 blobs) as the rows of one matrix."""
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)


def search(
    tx: Reads,
    nums: npt.NDArray[np.int64],
    where: MemoryFilter,
    scores: Matrix,
    *,
    depth: int,
    gate: float,
) -> SenseHits:
    """The ``depth`` best memories by cosine that pass ``where`` and the gate.

    Only the rows above the gate are ranked (usually few: the gate is what keeps a
    query from matching everything), best first, and looked up through the filter a
    window at a time, widening until enough pass.
    """
    above = np.flatnonzero(scores >= gate)
    hits: list[LexicalHit] = []
    start, stop = 0, min(max(depth * 4, 64), len(above))
    while start < stop:
        if stop < len(above):
            top = above[np.argpartition(-scores[above], stop - 1)[:stop]]
        else:
            top = above
        top = top[np.argsort(-scores[top], kind="stable")]
        rows = top[start:stop]
        passed = tx.filter_nums(where, [int(nums[r]) for r in rows])
        for row in rows:
            memory_id = passed.get(int(nums[row]))
            if memory_id is not None:
                hits.append(LexicalHit(memory_id, float(scores[row])))
        if len(hits) >= depth:
            break
        start, stop = stop, min(stop * 4, len(above))
    return SenseHits(SEMANTIC, tuple(hits[:depth]))
