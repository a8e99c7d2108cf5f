"""The build of a large SQLite store's vector codes (``storage.sqlite_ann``), with numpy.

A search reads the codes without numpy (``sqlite_ann``); building them is bulk work
over every stored vector, done by the writes, the searches that find the tail past
its limit, ``reindex``, ``verify --rebuild`` and compaction: this module, imported only
then. The layout, the segments and their files are described in ``sqlite_ann``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from retain.storage import sqlite_ann
from retain.storage.base import Progress
from retain.storage.sqlite_ann import Meta, Segment

if TYPE_CHECKING:
    from retain.storage.sqlite_transaction import SqliteTransaction

Matrix = npt.NDArray[np.float32]

ROW = np.dtype([("key", "<i8"), ("step", "<f4")])  # a segment's rows: number and step


@dataclass(frozen=True, slots=True)
class Codes:
    """One segment's rows: ``codes`` (int8, a row each, its dimensions in the meta's
    order) and ``rows`` (each row's memory number ``key`` and ``step``: the centred vector
    is about ``step × code``)."""

    codes: npt.NDArray[np.int8]
    rows: npt.NDArray[np.void]

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def mapped(cls, folder: Path, stem: str, dim: int) -> Codes:
        codes = np.load(folder / f"{stem}.codes.npy", mmap_mode="r", allow_pickle=False)
        rows = np.load(folder / f"{stem}.rows.npy", mmap_mode="r", allow_pickle=False)
        if codes.dtype != np.int8 or codes.ndim != 2 or codes.shape[1] != dim:
            raise ValueError(f"{stem}.codes.npy is not {dim}-dimensional int8 codes")
        if rows.dtype != ROW or rows.shape != (len(codes),):
            raise ValueError(f"{stem}.rows.npy does not match its codes")
        return cls(codes, rows)

    @classmethod
    def of(cls, nums: npt.NDArray[np.int64], centred: Matrix) -> Codes:
        """The codes of centred rows (their dimensions in order): each row's largest
        magnitude is ±127."""
        codes, step = quantized(centred)
        rows = np.empty(len(nums), dtype=ROW)
        rows["key"], rows["step"] = nums, step
        return cls(codes, rows)

    def decoded(self, at: npt.NDArray[np.intp]) -> Matrix:
        """The centred rows at ``at``, as the codes keep them (their dimensions in order)."""
        step = np.asarray(self.rows["step"][at], dtype=np.float32)
        return self.codes[at].astype(np.float32) * step[:, None]

    def save(self, folder: Path, stem: str, head: int) -> None:
        """Write the segment's four files under ``stem`` (each staged, then moved into
        place): the codes, their first ``head`` of each row, the others, the rows."""
        codes = self.codes
        parts = ("codes", codes), ("head", codes[:, :head]), ("rest", codes[:, head:])
        for part, array in (*parts, ("rows", self.rows)):
            final = folder / f"{stem}.{part}.npy"
            staged = final.with_name(final.name + ".new")
            with staged.open("wb") as file:
                np.lib.format.write_array(file, np.ascontiguousarray(array))
            os.chmod(staged, 0o600)  # as the store's file: codes of what it holds
            os.replace(staged, final)


def quantized(rows: Matrix) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row as int8 codes and a step (the row is about ``step × codes``): its largest
    magnitude is ±127, a row of zeros has step 1."""
    step = (np.abs(rows).max(axis=1) / 127).astype(np.float32)
    step[step == 0] = 1.0
    return np.rint(rows / step[:, None]).astype(np.int8), step


def stale(folder: Path, meta: Meta, live: Iterator[int]) -> bool:
    """Whether a segment of ``meta`` holds a key that ``live`` (the numbers of the model's
    stored vectors) lacks: a deleted or erased vector's codes, kept until a rebuild. A
    segment a search could not read (one of its four files missing, or not of its
    shape) raises, as ``Mapped.of`` does."""
    held = [sqlite_ann.Mapped.of(folder, meta.stem(s), meta.dim, meta.head) for s in meta.segments]
    kept = np.sort(np.fromiter(live, dtype=np.int64))  # each key looked up in it: at a
    for mapped in held:  # million 0.1 s, where ``setdiff1d`` sorted it again for each segment
        keys = np.frombuffer(mapped.rows, ROW)["key"]
        if len(keys) and not len(kept):
            return True
        at = np.minimum(np.searchsorted(kept, keys), len(kept) - 1)
        if not np.array_equal(kept[at], keys):
            return True
    return False


def _room(folder: Path, needed: int) -> None:
    """ENOSPC, before any vector is read, when the folder's disk has less free space than
    ``needed`` bytes (a build's new files: their codes twice, in two layouts, and their
    rows): otherwise each new process on a full disk would read every vector before its
    save failed (at a million, 12 s)."""
    if free_bytes(folder) < needed:
        raise OSError(errno.ENOSPC, f"{needed} bytes wanted for the vector index", str(folder))


def free_bytes(folder: Path) -> int:
    """The bytes an unprivileged writer may still use on ``folder``'s disk."""
    status = os.statvfs(folder)
    return status.f_bavail * status.f_frsize


def _chunks(
    tx: SqliteTransaction, model: str, dim: int, lo: int
) -> Iterator[tuple[npt.NDArray[np.int64], Matrix, list[str], int]]:
    """The stored rows of ``model`` past ``vec`` ``lo``, a chunk at a time: (memory
    numbers, vectors, realms, the chunk's last ``vec``); a vector of another size is
    refused (``dimension_mismatch``, naming the memory)."""
    from retain.search.embed import check_stored

    while True:
        rows = tx.vectors_after(model, lo, sqlite_ann.CHUNK)
        if not rows.nums:
            return
        check_stored(rows, model, dim)
        vectors = np.frombuffer(b"".join(rows.blobs), dtype="<f4").reshape(len(rows.blobs), dim)
        yield np.array(rows.nums, dtype=np.int64), vectors, rows.realms, rows.last_vec
        lo = rows.last_vec


def extended(
    tx: SqliteTransaction, meta: Meta, folder: Path, progress: Progress | None
) -> tuple[Meta, dict[str, Codes]]:
    """``meta`` with every stored row past its last segment added: to that segment while it
    holds fewer than ``SEGMENT_ROWS`` (a row it holds already, rewritten since, is replaced
    there), then to new ones. Without segments it is a whole build, and without a mean yet
    the mean is taken first (a pass of its own). The new version and its changed segments'
    codes, by stem. ``progress`` hears the rows read (phase ``vector index``): about
    every row twice for a whole build, the rows past ``meta`` otherwise."""
    model, dim = meta.model, meta.dim
    rows = max(tx.vector_count(model) - meta.rows, 0)  # about: for the progress
    total, done = rows * (1 if meta.mean else 2), 0

    def read(count: int) -> None:
        nonlocal done, total
        done += count
        total = max(total, done)
        if progress is not None:
            progress("vector index", done, total)

    ending = meta.segments[-1].rows if meta.segments else sqlite_ann.SEGMENT_ROWS
    again = ending if ending < sqlite_ann.SEGMENT_ROWS else 0  # a last one not full: rewritten
    _room(folder, (rows + again) * (2 * dim + ROW.itemsize))
    read(0)
    if not meta.mean:
        meta = _measured(tx, meta, read)
        total = done + rows  # the rows again: what the codes are made of
    mean = np.asarray(meta.mean, dtype=np.float32)
    order = np.asarray(meta.order, dtype=np.intp)
    segments = list(meta.segments)
    open_: _Open | None = None
    if segments and segments[-1].rows < sqlite_ann.SEGMENT_ROWS:
        last = segments.pop()
        open_ = _Open(last, Codes.mapped(folder, meta.stem(last), dim))
    made: dict[str, Codes] = {}
    for nums, vectors, realms, hi in _chunks(tx, model, dim, meta.upto):
        if open_ is None or open_.rows >= sqlite_ann.SEGMENT_ROWS:
            if open_ is not None:
                segments.append(open_.segment(meta, made))  # (full, as loaded: kept)
            lo = segments[-1].hi if segments else 0
            open_ = _Open(Segment(lo, lo, 0, {}, {}), Codes.of(*_none(dim)))
        open_.add(nums, vectors, realms, hi, mean, order)
        read(len(nums))
    if open_ is not None:
        segments.append(open_.segment(meta, made))
    total = done  # (fewer than counted: rows rewritten since)
    read(0)
    return replace(meta, segments=segments), made


def _none(dim: int) -> tuple[npt.NDArray[np.int64], Matrix]:
    return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)


class _Open:
    """A segment being written: its codes (in memory), sums, counts and range."""

    def __init__(self, segment: Segment, codes: Codes) -> None:
        self.lo, self.hi = segment.lo, segment.hi
        self.loaded = segment  # as it was: kept as it is unless a row is added
        self.grown = False
        self.parts = [Codes(np.array(codes.codes), np.array(codes.rows))]  # read, not mapped
        self.sums = {r: np.asarray(v, dtype=np.float64) for r, v in segment.sums.items()}
        self.counts = dict(segment.counts)

    def add(
        self,
        nums: npt.NDArray[np.int64],
        vectors: Matrix,
        realms: list[str],
        hi: int,
        mean: Matrix,
        order: npt.NDArray[np.intp],
    ) -> None:
        whole = self._joined()
        held = np.isin(whole.rows["key"], nums)
        if held.any():  # rewritten since: the old codes go, and their share of the sums
            at = np.flatnonzero(held)
            realm_of = dict(zip(nums.tolist(), realms, strict=True))
            old = np.empty((len(at), len(order)), dtype=np.float32)
            old[:, order] = whole.decoded(at)
            self._count([realm_of[k] for k in whole.rows["key"][at].tolist()], old + mean, -1)
            whole = Codes(whole.codes[~held], whole.rows[~held])
        codes = Codes.of(nums, (vectors - mean)[:, order])
        self.parts = [whole, codes]  # joined when next needed: one copy per segment written
        self._count(realms, vectors, 1)
        self.hi, self.grown = hi, True

    @property
    def rows(self) -> int:
        return sum(len(part) for part in self.parts)

    def _joined(self) -> Codes:
        if len(self.parts) > 1:
            self.parts = [
                Codes(
                    np.concatenate([p.codes for p in self.parts]),
                    np.concatenate([p.rows for p in self.parts]),
                )
            ]
        return self.parts[0]

    def _count(self, realms: list[str], vectors: Matrix, sign: int) -> None:
        for realm in dict.fromkeys(realms):
            mine = np.fromiter((r == realm for r in realms), dtype=bool, count=len(realms))
            self.sums[realm] = self.sums.get(realm, np.zeros(vectors.shape[1])) + sign * (
                vectors[mine].sum(axis=0, dtype=np.float64)
            )
            self.counts[realm] = self.counts.get(realm, 0) + sign * int(mine.sum())

    def segment(self, meta: Meta, made: dict[str, Codes]) -> Segment:
        """The segment as written, its codes put in ``made`` under its stem (unless no row
        was added: then the ones loaded)."""
        if not self.grown:
            return self.loaded
        sums = {r: [float(x) for x in v] for r, v in self.sums.items()}
        done = Segment(self.lo, self.hi, self.rows, sums, self.counts, os.urandom(4).hex())
        made[meta.stem(done)] = self._joined()
        return done


def _measured(tx: SqliteTransaction, meta: Meta, read: Callable[[int], None]) -> Meta:
    """``meta`` with the mean of every stored row of its model, its dimensions in falling
    variance (``order``) and the share of the variance the first half of them holds;
    ``read`` told each chunk's rows."""
    dim = meta.dim
    summed, squares, count = np.zeros(dim), np.zeros(dim), 0
    for _, vectors, _, _ in _chunks(tx, meta.model, dim, 0):
        summed += vectors.sum(axis=0, dtype=np.float64)
        squares += np.square(vectors, dtype=np.float64).sum(axis=0)
        count += len(vectors)
        read(len(vectors))
    mean = summed / max(count, 1)
    variance = np.maximum(squares / max(count, 1) - mean**2, 0.0)
    order = np.argsort(-variance, kind="stable")
    share = float(variance[order[: meta.head]].sum() / variance.sum()) if variance.any() else 0.0
    return replace(meta, mean=[float(x) for x in mean], order=[int(i) for i in order], share=share)
