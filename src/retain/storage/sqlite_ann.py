"""The persisted vector codes of an embedded store: every vector as int8, memory-mapped.

It is one piece past the usual size on purpose: the codes' file format, their build,
their scan and the choice of candidates share one layout, changed together.

Below ``[search] ann_from`` vectors of a model, the service scans them exactly in
memory (``retain.search.vectors``). From there on, every new process would have
to read them all from the store before its first search (8 s at a million), so the
store keeps a compact copy of them beside its file, ``<store>.vectors/``, that a
process maps in milliseconds and reads straight from the operating system's page
cache. It is derived and disposable, like the full-text index: built by the first
search or bulk write that needs it, kept up by the ones after, built again by
``reindex`` and ``verify --rebuild`` and by an erasure's compaction, and never the only
copy of anything.

**What is kept.** Each stored vector with the mean of the first build taken away
(``q·x = q·(x − μ) + q·μ``: the same order for a query as the cosine of the unit rows),
as int8 codes and a step per row: ``x − μ ≈ step × code``. The static model's vectors
share one strong direction (their mean has norm 0.95), so the centred rows are what
differ, and a step per centred row keeps their differences (a code is a quarter of a
float32 row). A search takes its query vectors to int8 codes the same way and reads
every code, in two parts side by side, each product summed in integers by SimSIMD's
kernels (``vectors.scan_codes``): at 100,000 rows 0.8 ms a query vector, at a million
9, against 2.6 and 24 ms cast to float32 and multiplied by BLAS, and 15 and 51 ms for
the HNSW graph the codes replaced (usearch, walked at ef 2,048), which found 0.997 and
0.978 of the exact ten where this finds them all, took half a loading's time to
build, and held 930 MiB at a million against 342 (``bench/cold.py``;
``bench/RESULTS.md``). The codes' best ``FIRST`` (or twice the rows wanted) are
candidates: they are scored again exactly by the vectors the store holds, so the codes'
rounding could only keep out of them a row within the rounding of the last (none was,
in any measurement: the best 64 by the codes held all of the exact thirty, at 100,000
rows and at a million).

**Segments.** The codes are a few files, each the rows whose ``vec`` fell in one range
when they were added. Rows written since the last range (the *tail*, past ``upto``)
are held exactly in memory; once there are more than ``TAIL_MAX`` of them they are
added to the last segment (read, grown, saved whole under a new name) while it holds
fewer than ``SEGMENT_ROWS``, and to a new one after. A whole build fills segments the
same way. A row rewritten since its segment was built is replaced there when that is
the segment still taking rows, and otherwise leaves a stale key, harmless: a candidate is scored by
what the store holds now, once. A deleted row's key stays until its codes are built
again (``compacted``).

**Searching.** Every segment's codes give each query's approximate scores of all its
rows; the tail gives its exact ones. The best ``count`` are the candidates: the store's
filter (realm, scope, status, trust, tag, expiry) is checked on each by number, and
those that pass are scored exactly by the vectors the store holds in the search's own
transaction (a candidate whose vector is gone, or another model's now, has none and
drops out). When too few pass and the filter's realm and scopes, or its tag, hold
fewer than √(limit × rows) rows (a scope or a tag of 0.1% of the store, counted in its
index), the rows of them passing the filter are scored exactly, which costs less than
reaching them through the candidates (``limit ÷ p`` read back for a pass rate p,
against p × rows). Otherwise more candidates are taken from the same scores, as many
as the pass rate seen so far needs and half again (at least twice as many; four times
when none passed), and only the new ones are read; when so few pass that more than
``WIDEST`` would be needed, the rows passing the filter are scanned exactly instead. A
small scope or tag loses nothing to candidates that were elsewhere.

**Files.** ``<slug>-<lo>-<hi>-<tag>.codes.npy`` (the int8 codes, a row each) and
``….rows.npy`` (each row's memory number and step) for each segment (the tag drawn
by the build that wrote it, so files are never rewritten in place), and
``<slug>.json``, the current list of them with the mean and each segment's per-realm
vector sums (the relevance gate's mean). New segments are written beside the old and
the JSON replaced last, so a reader sees one whole version or the one before; writers
take ``lock`` (``flock``), and a reader that still has a replaced segment mapped keeps
reading it until it next looks at the JSON.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from retain.storage.base import LexicalHit, MemoryFilter, Progress

if TYPE_CHECKING:
    from retain.search.vectors import VectorIndex
    from retain.storage.sqlite_transaction import SqliteTransaction

Matrix = npt.NDArray[np.float32]

TAIL_MAX = 4096  # rows past the last segment held exactly before they are added to one
SEGMENT_ROWS = 65_536  # rows past which a segment takes no more (a chunk may overshoot)
FIRST = 64  # candidates taken first (at least twice the rows wanted)
WIDEST = 16_384  # a filter needing more candidates than this has its rows scanned instead
SPARE = 1.5  # candidates taken next, past what the pass rate seen so far needs
CHUNK = 8192  # stored vectors read (and added) at a time
SAMPLED = 16  # a strided sample's rows above its threshold, when choosing candidates
# a scan's parts read side by side: two, or one on a process held to one core
THREADS = max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2))
ROW = np.dtype([("key", "<i8"), ("step", "<f4")])  # a segment's rows: number and step
PARTS = ("codes", "rows")  # a segment's files: <stem>.codes.npy, <stem>.rows.npy
SUFFIX = ".vectors"


def folder_of(db: Path) -> Path:
    """Where a store file's vector codes live."""
    return Path(str(db) + SUFFIX)


def _slug(model: str, dim: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", model)[:80] + f"-{dim}"


@dataclass(frozen=True, slots=True)
class Segment:
    """The rows whose ``vec`` was in ``(lo, hi]`` when it was built, under a ``tag`` its
    build drew (so that a segment built again, of the same range, has files of its own:
    its two files are never replaced one after the other under a reader's feet)."""

    lo: int
    hi: int
    rows: int
    sums: dict[str, list[float]]  # each realm's vector sum (uncentred), for the gate
    counts: dict[str, int]
    tag: str = ""


@dataclass(frozen=True, slots=True)
class Meta:
    """One version of a model's index: what its JSON says."""

    model: str
    dim: int
    mean: list[float]
    segments: list[Segment] = field(default_factory=list)

    @property
    def upto(self) -> int:
        """The last ``vec`` the segments cover: every row at or below it is in one."""
        return self.segments[-1].hi if self.segments else 0

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.segments)

    def stem(self, segment: Segment) -> str:
        tag = f"-{segment.tag}" if segment.tag else ""
        return f"{_slug(self.model, self.dim)}-{segment.lo}-{segment.hi}{tag}"


class Approximate:
    """One model's persisted codes, opened (each segment's files mapped), and the exact
    tail past them."""

    def __init__(self, folder: Path, meta: Meta, tail: VectorIndex, stamp: tuple[int, int]) -> None:
        self.folder = folder
        self.meta = meta
        self.tail = tail
        self.stamp = stamp  # the JSON's, taken before it was read: a newer one is reread
        self.segments: list[Codes] = [
            Codes.mapped(folder, meta.stem(segment), meta.dim) for segment in meta.segments
        ]
        self.keys = np.concatenate(
            [np.zeros(0, dtype=np.int64), *(codes.rows["key"] for codes in self.segments)]
        )  # every segment row's memory number, in scan order
        self.steps = [np.ascontiguousarray(codes.rows["step"]) for codes in self.segments]

    def sums(self, realm: str) -> tuple[npt.NDArray[np.float32], int]:
        """The realm's vector sum and count, the segments' and the tail's. A row deleted
        since its segment was built, or rewritten into a later one, counts until the codes
        are built again."""
        total = np.zeros(self.meta.dim, dtype=np.float64)
        count = 0
        for segment in self.meta.segments:
            if realm in segment.counts:
                total += np.asarray(segment.sums[realm], dtype=np.float64)
                count += segment.counts[realm]
        extra, more = self.tail.realm_sum(realm)
        return (total + extra).astype(np.float32), count + more

    def scored(self, queries: Matrix) -> tuple[npt.NDArray[np.int64], Matrix]:
        """Every segment row's memory number, and each query's (a row) approximate score
        of it from the codes (``q·(x − μ)``, the same order as the cosine). The queries
        are taken to int8 codes as the rows are, and each product of codes summed in
        integers (``vectors.scan_codes``), the rows split in ``THREADS`` parts read side
        by side."""
        from retain.search.vectors import quantized

        asked, scale = quantized(queries)
        rough = np.empty((len(queries), len(self.keys)), dtype=np.float32)
        parts, at = [], 0
        for codes, step in zip(self.segments, self.steps, strict=True):
            size = len(codes)
            cut = -(-size // THREADS)
            for start in range(0, size, cut or 1):
                stop = min(start + cut, size)
                out = rough[:, at + start : at + stop]
                parts.append((codes.codes[start:stop], step[start:stop], out))
            at += size
        failed: list[BaseException] = []
        helpers = [
            threading.Thread(target=_scan_all, args=(asked, scale, parts[i::THREADS], failed))
            for i in range(1, min(THREADS, len(parts)))
        ]  # a thread each (no pool: concurrent.futures costs a command 5 ms to import)
        for helper in helpers:
            helper.start()
        _scan_all(asked, scale, parts[::THREADS] if helpers else parts, failed)
        for helper in helpers:
            helper.join()
        if failed:
            raise failed[0]
        return self.keys, rough


def _scan_all(
    asked: npt.NDArray[np.int8],
    scale: npt.NDArray[np.float32],
    parts: list[tuple[npt.NDArray[np.int8], npt.NDArray[np.float32], Matrix]],
    failed: list[BaseException],
) -> None:
    """Each part scanned; what fails is kept for the caller to raise."""
    from retain.search.vectors import scan_codes

    try:
        for codes, step, out in parts:
            scan_codes(asked, scale, codes, step, out)
    except BaseException as exc:  # noqa: BLE001 - raised again by the thread that waits
        failed.append(exc)


@dataclass(frozen=True, slots=True)
class Codes:
    """One segment's rows: ``codes`` (int8, a row each) and ``rows`` (each row's memory
    number ``key`` and ``step``: the centred vector is about ``step × code``)."""

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
        """The codes of centred rows: each row's largest magnitude is ±127."""
        from retain.search.vectors import quantized

        codes, step = quantized(centred)
        rows = np.empty(len(nums), dtype=ROW)
        rows["key"], rows["step"] = nums, step
        return cls(codes, rows)

    def decoded(self, at: npt.NDArray[np.intp]) -> Matrix:
        """The centred rows at ``at``, as the codes keep them."""
        step = np.asarray(self.rows["step"][at], dtype=np.float32)
        return self.codes[at].astype(np.float32) * step[:, None]


def _stamp(folder: Path, model: str, dim: int) -> tuple[int, int]:
    """Which file the model's JSON is, and when it was written ((0, 0): there is none):
    every version is a new file (``os.replace``), so a coarse clock cannot hide one."""
    try:
        status = (folder / f"{_slug(model, dim)}.json").stat()
    except OSError:
        return (0, 0)
    return (status.st_ino, status.st_mtime_ns)


def _read(folder: Path, model: str, dim: int) -> tuple[Meta | None, tuple[int, int]]:
    """The model's current version (None: none, or not one this module wrote) and its
    JSON's stamp, taken before it was read."""
    stamp = _stamp(folder, model, dim)
    return _parsed(folder, model, dim), stamp


def _parsed(folder: Path, model: str, dim: int) -> Meta | None:
    try:
        data = json.loads((folder / f"{_slug(model, dim)}.json").read_text(encoding="utf-8"))
        segments = [Segment(**s) for s in data.pop("segments")]
        meta = Meta(**data, segments=segments)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return meta if (meta.model, meta.dim) == (model, dim) else None


@contextlib.contextmanager
def locked(folder: Path, *, wait: bool) -> Iterator[bool]:
    """Hold the folder's writer lock; yields False (another holds it) unless ``wait``."""
    folder.mkdir(mode=0o700, exist_ok=True)
    with os.fdopen(
        os.open(folder / "lock", os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600), "a"
    ) as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


class Indexes:
    """The vector codes of one store file, one per model, shared by every thread
    of a process (see the module docstring)."""

    def __init__(self, db: Path) -> None:
        self.folder = folder_of(db)
        self._open: dict[tuple[str, int], Approximate] = {}
        self._lock = threading.Lock()

    def drop(self) -> bool:
        """Remove every index of the store, files and all; whether there were any."""
        with self._lock:
            self._open.clear()
            if not self.folder.exists():
                return False
            with locked(self.folder, wait=True):  # the lock file stays: a waiter holds it
                for path in self.folder.iterdir():
                    if path.name != "lock":
                        path.unlink(missing_ok=True)
            return True

    def files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.iterdir() if p.is_file() and p.name != "lock")

    def kept(
        self,
        tx: SqliteTransaction,
        model: str,
        dim: int,
        at_least: int,
        progress: Progress | None = None,
        *,
        folded: bool = False,
    ) -> Approximate | None:
        """``model``'s index brought up to date in ``tx`` (``current``), or None when the
        store keeps none for it: it has none and holds fewer than ``at_least`` of its
        vectors (0: never)."""
        if not self._wanted(tx, model, dim, at_least):
            return None
        return self.current(tx, model, dim, progress, folded=folded)

    def _wanted(self, tx: SqliteTransaction, model: str, dim: int, at_least: int) -> bool:
        if at_least <= 0:
            return False
        if (model, dim) in self._open or _stamp(self.folder, model, dim) != (0, 0):
            return True
        return tx.last_vector() >= at_least and tx.vector_count(model) >= at_least

    def current(
        self,
        tx: SqliteTransaction,
        model: str,
        dim: int,
        progress: Progress | None = None,
        *,
        folded: bool = False,
    ) -> Approximate:
        """``model``'s index as the store holds it in ``tx``: opened (or built), its tail
        brought up to date, and the tail added to the segments once past ``TAIL_MAX``
        (with ``folded``, whenever there is one, waiting for another process's writer)."""
        with self._lock:
            ann = self._open.get((model, dim))
            if ann is None or ann.stamp != _stamp(self.folder, model, dim):
                ann = self._load(tx, model, dim, progress)
            ann.tail.refresh(tx)
            if len(ann.tail) > (0 if folded else TAIL_MAX):
                with locked(self.folder, wait=folded) as mine:
                    if mine:
                        ann = self._grown(tx, ann, progress)
                ann.tail.refresh(tx)  # (another process's version: rows past its range)
            self._open[model, dim] = ann
            return ann

    def compacted(self, tx: SqliteTransaction, progress: Progress | None = None) -> bool:
        """Build again, whole, every index still holding a key of a vector the store no
        longer has (deleted or erased: its codes stay in a segment until then), reporting
        to ``progress``; whether one was."""
        with self._lock:
            rebuilt = False
            for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
                data = _json(path)
                model, dim = str(data.get("model")), int(data.get("dim") or 0)
                with locked(self.folder, wait=True):
                    meta, stamp = _read(self.folder, model, dim)
                    if meta is None:
                        continue
                    live = np.fromiter(tx.vector_nums(model), dtype=np.int64)
                    try:
                        held = self._opened(meta, stamp).segments
                        stale = any(len(np.setdiff1d(c.rows["key"], live)) for c in held)
                    except (OSError, RuntimeError, ValueError):
                        stale = True  # unreadable (an earlier format, a damaged file)
                    if not stale:
                        continue
                    # afresh, the mean too: an erased vector is part of the old one
                    self._open[model, dim] = self._written(
                        *_extended(tx, Meta(model, dim, []), self.folder, progress)
                    )
                rebuilt = True
            return rebuilt

    def _load(
        self, tx: SqliteTransaction, model: str, dim: int, progress: Progress | None
    ) -> Approximate:
        meta, stamp = _read(self.folder, model, dim)
        if meta is not None:
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                return self._opened(meta, stamp)
        with locked(self.folder, wait=True):  # another process may be writing it
            meta, stamp = _read(self.folder, model, dim)
            if meta is not None:
                with contextlib.suppress(OSError, RuntimeError, ValueError):
                    return self._opened(meta, stamp)
            return self._written(*_extended(tx, Meta(model, dim, []), self.folder, progress))

    def _opened(self, meta: Meta, stamp: tuple[int, int]) -> Approximate:
        from retain.search.vectors import VectorIndex

        tail = VectorIndex(meta.model, meta.dim, meta.upto)
        return Approximate(self.folder, meta, tail, stamp)

    def _grown(
        self, tx: SqliteTransaction, ann: Approximate, progress: Progress | None
    ) -> Approximate:
        """``ann`` with its tail added to its last segment, or to new ones past
        ``SEGMENT_ROWS`` (under the folder's lock)."""
        meta, stamp = _read(self.folder, ann.meta.model, ann.meta.dim)
        if meta is not None and meta.upto != ann.meta.upto:  # another process's, meanwhile
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                return self._opened(meta, stamp)
            meta = None  # unreadable (an earlier format, a damaged file): afresh
        if meta is None or len(ann.tail) > meta.rows:  # dropped, or a reindex: afresh
            meta = Meta(ann.meta.model, ann.meta.dim, [])
        return self._written(*_extended(tx, meta, self.folder, progress))

    def _written(self, meta: Meta, made: dict[str, Codes]) -> Approximate:
        """Save a new version (its new segments, then the JSON) and open it."""
        for stem, codes in made.items():  # under new names: a reader may map the old
            for part, array in (("codes", codes.codes), ("rows", codes.rows)):
                final = self.folder / f"{stem}.{part}.npy"
                staged = final.with_name(final.name + ".new")
                with staged.open("wb") as file:
                    np.lib.format.write_array(file, np.ascontiguousarray(array))
                os.chmod(staged, 0o600)  # as the store's file: codes of what it holds
                os.replace(staged, final)
        slug = _slug(meta.model, meta.dim)
        current = self.folder / f"{slug}.json"
        staged = current.with_name(current.name + ".new")
        staged.write_text(json.dumps(asdict(meta)), encoding="utf-8")
        os.chmod(staged, 0o600)
        os.replace(staged, current)
        stamp = _stamp(self.folder, meta.model, meta.dim)
        keep = {current.name}
        keep.update(f"{meta.stem(s)}.{part}.npy" for s in meta.segments for part in PARTS)
        for old in self.folder.glob(f"{slug}-*"):  # replaced segments, a crash's leftovers
            if old.name not in keep:
                old.unlink(missing_ok=True)  # a reader holding it mapped keeps its pages
        return self._opened(meta, stamp)


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _chunks(
    tx: SqliteTransaction, model: str, dim: int, lo: int
) -> Iterator[tuple[npt.NDArray[np.int64], Matrix, list[str], int]]:
    """The stored rows of ``model`` past ``vec`` ``lo``, a chunk at a time: (memory
    numbers, vectors, realms, the chunk's last ``vec``)."""
    from retain.search.vectors import stored_matrix

    while True:
        rows = tx.vectors_after(model, lo, CHUNK)
        if not rows.nums:
            return
        vectors = stored_matrix(rows, model, dim)
        yield np.array(rows.nums, dtype=np.int64), vectors, rows.realms, rows.last_vec
        lo = rows.last_vec


def _extended(
    tx: SqliteTransaction, meta: Meta, folder: Path, progress: Progress | None
) -> tuple[Meta, dict[str, Codes]]:
    """``meta`` with every stored row past its last segment added: to that segment while it
    holds fewer than ``SEGMENT_ROWS`` (a row it holds already, rewritten since, is replaced
    there), then to new ones. Without segments it is a whole build, and without a mean yet
    the mean is taken first (a pass of its own). The new version and its changed segments'
    codes, by stem."""
    model, dim = meta.model, meta.dim
    if not meta.mean:
        meta = replace(meta, mean=_mean(tx, model, dim))
    mean = np.asarray(meta.mean, dtype=np.float32)
    segments = list(meta.segments)
    open_: _Open | None = None
    if segments and segments[-1].rows < SEGMENT_ROWS:
        last = segments.pop()
        open_ = _Open(last, Codes.mapped(folder, meta.stem(last), dim))
    total, done = max(tx.vector_count(model) - meta.rows, 0), 0  # about: for the progress
    if progress is not None:
        progress("vector index", 0, total)
    made: dict[str, Codes] = {}
    for nums, vectors, realms, hi in _chunks(tx, model, dim, meta.upto):
        if open_ is None or open_.rows >= SEGMENT_ROWS:
            if open_ is not None:
                segments.append(open_.segment(meta, made))  # (full, as loaded: kept)
            lo = segments[-1].hi if segments else 0
            open_ = _Open(Segment(lo, lo, 0, {}, {}), Codes.of(*_none(dim)))
        open_.add(nums, vectors, realms, hi, mean)
        done += len(nums)
        if progress is not None:
            progress("vector index", min(done, max(total, done)), max(total, done))
    if open_ is not None:
        segments.append(open_.segment(meta, made))
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
        self, nums: npt.NDArray[np.int64], vectors: Matrix, realms: list[str], hi: int, mean: Matrix
    ) -> None:
        whole = self._joined()
        held = np.isin(whole.rows["key"], nums)
        if held.any():  # rewritten since: the old codes go, and their share of the sums
            at = np.flatnonzero(held)
            realm_of = dict(zip(nums.tolist(), realms, strict=True))
            old = whole.decoded(at) + mean
            self._count([realm_of[k] for k in whole.rows["key"][at].tolist()], old, -1)
            whole = Codes(whole.codes[~held], whole.rows[~held])
        codes = Codes.of(nums, vectors - mean)
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


def _mean(tx: SqliteTransaction, model: str, dim: int) -> list[float]:
    """The mean of every stored row of ``model``."""
    summed, count = np.zeros(dim, dtype=np.float64), 0
    for _, vectors, _, _ in _chunks(tx, model, dim, 0):
        summed += vectors.sum(axis=0, dtype=np.float64)
        count += len(vectors)
    return [float(x) for x in summed / max(count, 1)]


def nearest(
    tx: SqliteTransaction, ann: Approximate, queries: Matrix, where: MemoryFilter, limit: int
) -> list[list[LexicalHit]]:
    """For each query, the ``limit`` memories passing ``where`` nearest it by exact
    cosine: the segments' candidates and the tail together (see the module docstring)."""
    from retain.search import vectors

    tail = ann.tail.scores(queries, where.realm)
    keys, rough = ann.scored(queries)
    floor = float(np.finfo(np.float32).min)
    model, dim = ann.meta.model, ann.meta.dim
    # A tier or tag of fewer rows than √(limit × rows) is cheaper to score whole than to reach
    # through candidates: about limit ÷ p candidates are read for ``limit`` rows that
    # pass at rate p, against the p × rows that pass, equal at p = √(limit ÷ rows).
    whole_below = math.isqrt(limit * (len(keys) + len(tail.nums))) + 1
    passing = functools.cache(lambda: tx.passing(where, whole_below))  # asked once
    found = []
    for i, query in enumerate(queries):
        near = tail.exact(i, floor)
        ranked = np.argsort(-near, kind="stable")
        ranked = ranked[np.isfinite(near[ranked])]  # -inf: another realm's row
        count = max(FIRST, limit * 2)
        seen: set[int] = set()  # the candidates read so far
        passed: list[tuple[float, int, str]] = []  # of them, those passing: score, number, id
        while True:
            exhausted = count >= len(keys)
            best = keys if exhausted else keys[_best(rough[i], count)]
            # Candidates all, the tail's too: each that passes the filter scored by the
            # vector the store holds in this transaction (gone, or another model's: no
            # row), once, however many rounds ask for it.
            asked = _distinct(np.concatenate([best, tail.nums[ranked[:count]]])).tolist()
            new = [num for num in asked if num not in seen]
            seen.update(new)
            nums, ids, blobs = tx.vectors_passing(model, where, new)
            scores = (vectors.unpacked(blobs, dim) @ query).astype(np.float32)
            passed += zip(scores.tolist(), nums, ids, strict=True)
            passed.sort(key=lambda p: (-p[0], p[1]))  # equal cosines in number order, as a scan's
            hits = [LexicalHit(memory_id, score) for score, _, memory_id in passed[:limit]]
            if len(hits) >= limit or (exhausted and len(ranked) <= count):
                break
            if (tier := passing()) is not None:  # too few passed, of a small tier or tag
                hits = _exactly(tx, model, dim, query, tier, limit)
                break
            wanted = count * limit / max(len(hits), 1)  # the candidates this pass rate needs
            if wanted > WIDEST:  # so few pass: a narrow filter
                hits = _scanned(tx, model, dim, query, where, limit)
                break
            count = max(count * 2, math.ceil(wanted * SPARE)) if hits else count * 4
        found.append(hits)
    return found


def _best(scores: Matrix, count: int) -> npt.NDArray[np.intp]:
    """The places of the ``count`` highest ``scores`` (fewer than all), in no order.

    Partitioning a million scores costs 6 ms (and 8 MB of indices). A strided sample
    dense enough that ``SAMPLED`` of its rows are expected above the place of the
    ``8 × count``-th score gives a threshold that about that many rows pass, and only
    they are partitioned (0.6 ms at a million). When fewer than ``count`` pass (16 of
    the sample's rows among the best ``count``, where about 2 are expected: less than
    once in a billion for scores in no order), every row is partitioned."""
    size = len(scores)
    stride = 8 * count // SAMPLED
    if stride >= 2 and size // stride > SAMPLED:
        sample = scores[::stride]
        nth = len(sample) - SAMPLED
        above = np.flatnonzero(scores >= np.partition(sample, nth)[nth])
        if len(above) >= count:
            return above[np.argpartition(scores[above], len(above) - count)[len(above) - count :]]
    return np.argpartition(scores, size - count)[size - count :]


def _distinct(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``values`` sorted, once each: ``np.unique``'s answer without its first call's import
    of ``numpy.ma`` (8 ms of a command's first search)."""
    ordered = np.sort(values)
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def _exactly(
    tx: SqliteTransaction, model: str, dim: int, query: Matrix, ids: dict[int, str], limit: int
) -> list[LexicalHit]:
    """The ``limit`` nearest of the memories ``ids`` (number → id), scored exactly by the
    vectors the store holds (in number order among equal scores, as a scan's)."""
    from retain.search.vectors import unpacked

    nums, blobs = tx.vectors_by_num(model, sorted(ids))
    if not nums:
        return []
    scores = unpacked(blobs, dim) @ query
    order = np.lexsort((np.asarray(nums), -scores))[:limit]
    return [LexicalHit(ids[nums[j]], float(scores[j])) for j in order]


def _scanned(
    tx: SqliteTransaction, model: str, dim: int, query: Matrix, where: MemoryFilter, limit: int
) -> list[LexicalHit]:
    """The ``limit`` nearest of every row passing ``where``, scanned exactly: for a
    filter too narrow for the segments' candidates to reach."""
    from retain.search.vectors import unpacked

    best: list[tuple[float, str]] = []
    after = 0
    while True:
        nums, ids, blobs = tx.vectors_where(model, where, after, CHUNK)
        if not nums:
            break
        scores = unpacked(blobs, dim) @ query
        top = np.argsort(-scores, kind="stable")[:limit]
        best = sorted([*best, *((float(scores[j]), ids[j]) for j in top)], key=lambda b: -b[0])
        best = best[:limit]
        after = nums[-1]
    return [LexicalHit(memory_id, score) for score, memory_id in best]
