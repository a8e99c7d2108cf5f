"""How an embedded store searches its vectors: every row in memory, or, past
``[search] ann_from`` of them, int8 codes of every vector, memory-mapped.

It is one piece past the usual size on purpose: the codes' file format, their scan, the
rows held in memory and the choice of candidates share one layout, changed together;
the codes' build, which needs numpy, is ``sqlite_ann_build`` (a search reads without
it, ``search.plain``, until a process searches a second time: ``warmed``).

Below ``ann_from`` vectors of a model, a store keeps no codes: a process reads every
row into memory at its first search and scores them exactly (a ``Tail`` with no
segments, ``Indexes.searched``). From there on, every new process would have to read
them all from the store before its first search (8 s at a million), so the store
keeps a compact copy of them beside its file, ``<store>.vectors/``, that a process
maps in milliseconds and reads straight from the operating system's page cache. It is
derived and disposable, like the full-text index: built by the first search or bulk
write that needs it, kept up by the ones after, built again by ``reindex`` and ``verify
--rebuild`` and by an erasure's compaction, and never the only copy of anything.

**What is kept.** Each stored vector with the mean of the first build taken away
(``q·x = q·(x − μ) + q·μ``: the same order for a query as the cosine of the unit rows),
as int8 codes and a step per row: ``x − μ ≈ step × code``. The static model's vectors
share one strong direction (their mean has norm 0.95), so the centred rows are what
differ, and a step per centred row keeps their differences (a code is a quarter of a
float32 row). The codes' dimensions are put in falling variance (``order``, taken by the
first build with the mean), so that a row's first half, its *head*, holds most of what
tells rows apart (``share``: 0.76 of the variance for the bundled model, whose own
dimensions come nearly in that order). A search takes its query vectors to int8 codes
the same way and reads every code, in two parts side by side, each product summed in
integers by SimSIMD's kernels (``scan``): at 100,000 rows 0.8 ms a query vector, at a
million 9, against 2.6 and 24 ms cast to float32 and multiplied by BLAS, and 15 and 51
ms for the HNSW graph the codes replaced (usearch, walked at ef 2,048), which found
0.997 and 0.978 of the exact ten where this finds them all, took half a loading's time
to build, and held 930 MiB at a million against 342 (``bench/cold.py``;
``bench/RESULTS.md``). The codes' best ``FIRST`` (or twice the rows wanted) are
candidates: they are scored again exactly by the vectors the store holds, so the codes'
rounding could only keep out of them a row within the rounding of the last (none was,
in any measurement: the best 64 by the codes held all of the exact thirty, at 100,000
rows and at a million).

**Past ``POOL × GATHERED`` rows** (262,144) a search reads the heads alone, from a plane
of its own: half the bytes of the codes (at a million 5 ms a query vector against 9).
About the best ``POOL`` (2,048) by the heads' scores, or eight times the candidates
wanted when that is more, are a pool (``plain.about``: those above a sampled threshold,
unranked), each scored again by its other codes, read where it is in a second plane,
the *rest*; the candidates are the best of the pool by every code. This gives up the
codes' exactness for a few queries: at a million, 0.998 of the exact ten were found in
the realm (one query of sixty found nine), 0.99 in a project of 8% (``bench/cold.py``),
where the scan of every code found them all. A pool that would be more than the rows
÷ ``GATHERED`` (a narrow filter's later rounds) reads every row's rest instead, once
(reading a row where it is costs about what 128 read in order do), and a model whose
head holds less than ``HEAD_SHARE`` of the variance is always read whole. Below it
every code is read and nothing is given up: at 300,000 rows the two ways were level.

**Segments.** The codes are a few files, each the rows whose ``vec`` fell in one range
when they were added. Rows written since the last range (the *tail*, past ``upto``)
are held exactly in memory, each realm's apart, in chunks a refresh copies only where
it writes (``Held``); once there are more than ``TAIL_MAX`` of them they are
added to the last segment (read, grown, saved whole under a new name) while it holds
fewer than ``SEGMENT_ROWS``, and to a new one after. A whole build fills segments the
same way. A row rewritten since its segment was built is replaced there when that is
the segment still taking rows, and otherwise leaves a stale key, harmless: a candidate is scored by
what the store holds now, once. A deleted row's key stays until its codes are built
again (``compacted``).

**Searching.** Every segment's codes give each query's approximate scores of all its
rows (past ``POOL × GATHERED``, their heads and a pool's rests: above); the tail gives
its exact ones. The best ``count`` are the candidates: the store's
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

**Files.** ``<slug>-<lo>-<hi>-<tag>.codes.npy`` (the int8 codes, a row each),
``….head.npy`` and ``….rest.npy`` (the same codes in two planes: each row's head, and
the others; a search reads either the codes or the planes, never both, so what it does
not read costs it no memory) and ``….rows.npy`` (each row's memory number and step) for
each segment (the tag drawn by the build that wrote it, so files are never rewritten in
place), and ``<slug>.json``, the current list of them with the mean, the dimensions'
order and the head's share, and each segment's per-realm vector sums (the relevance
gate's mean). A JSON without an order is an earlier format's: the next search or write
that opens it builds the codes again. New segments are written beside the old and the
JSON replaced last, so a reader sees one whole version or the one before; writers take
``lock`` (``flock``), and a reader that still has a replaced segment mapped keeps
reading it until it next looks at the JSON. A writer waits for another's lock up to
``LOCK_WAIT_S`` and then does without (``Indexes._writer``): a search scores every row
exactly, a fold leaves the tail, a compaction says it is incomplete, a drop is refused.
A process's threads take turns on a lock of their own first, and none waits or writes
while holding what the others need to search: they read the version they have open.
Codes that cannot be written (a full disk) are done without the same way, for
``RETRY_WRITE_S``; a compaction removes them instead.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import functools
import itertools
import json
import math
import os
import re
import sys
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from retain.errors import StoreBusy, StoreError
from retain.search import plain
from retain.storage.base import LexicalHit, MemoryFilter, Progress

if TYPE_CHECKING:
    from retain.storage.sqlite_ann_build import Codes
    from retain.storage.sqlite_transaction import SqliteTransaction

TAIL_MAX = 4096  # rows past the last segment held exactly before they are added to one
SEGMENT_ROWS = 65_536  # rows past which a segment takes no more (a chunk may overshoot)
FIRST = 64  # candidates taken first (at least twice the rows wanted)
WIDEST = 16_384  # a filter needing more candidates than this has its rows scanned instead
SPARE = 1.5  # candidates taken next, past what the pass rate seen so far needs
CHUNK = 8192  # stored vectors read (and added) at a time
# the longest a process waits for another's writer of the codes (a whole build of a
# million took 12 s) before it does without: ``Indexes._writer``
LOCK_WAIT_S = 60.0
WAITING = "waiting for the vector index"  # the wait's phase, as progress reports it
# after the codes could not be written (a full disk), how long a process reads its
# vectors without them (exactly, in memory) before it tries again
RETRY_WRITE_S = 600.0
SAMPLED = 16  # a strided sample's rows above its threshold, when choosing candidates
# a scan's parts read side by side: two, or one on a process held to one core
THREADS = max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2))
# The codes' rows from which a scan is split in those parts: below it one thread reads
# them all. At 100k one thread was 0.2 ms quicker a search (the word senses run beside
# the scan, on the other core), at 300k the two were level, at 1M two threads were 5 ms
# quicker (bench/RESULTS.md).
SPLIT_FROM = 250_000
# the rows chosen by the head alone, then scored by every code: about this many, or twice
# the candidates wanted when that is more
POOL = 2048
# A row's rest read where it is costs about what this many read in order do: a search
# whose pool would be more than the rows ÷ this reads every row's rest instead (below
# POOL × GATHERED rows, always: every code of every row is read, the candidates exact)
GATHERED = 128
HEAD_SHARE = 0.7  # the share of the rows' variance the head must hold to choose alone
# the rows from which a process's second search loads numpy (``warmed``)
NUMPY_FROM = SEGMENT_ROWS
# a segment's rows: each a memory number and a step (numpy's record, as its header says)
ROW_DESCR, ROW_BYTES = "[('key', '<i8'), ('step', '<f4')]", 12
# a segment's files: <stem>.codes.npy (its codes, a row each), <stem>.head.npy and
# <stem>.rest.npy (the same codes in two planes: each row's head, the others) and
# <stem>.rows.npy
PARTS = ("codes", "head", "rest", "rows")
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
    order: list[int] = field(default_factory=list)  # the dimensions, most varied first
    share: float = 0.0  # of the rows' variance, what the head's dimensions hold

    @property
    def head(self) -> int:
        """The codes in a row's head: the first half, in ``order``."""
        return self.dim // 2

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


class Mapped:
    """One segment's four files mapped, read without numpy: ``codes`` (int8, ``dim`` a
    row, in the meta's order), the same codes in two planes, ``head`` (the first
    ``width`` of each row's) and ``rest`` (the others), and ``rows`` (each row's memory
    number and step, ``ROW_BYTES`` a row). A search reads the codes, or the head and the
    rest of a few rows, never both: what it does not read costs it nothing."""

    def __init__(
        self, planes: tuple[memoryview, memoryview, memoryview], rows: memoryview, size: int
    ) -> None:
        self.codes, self.head, self.rest = planes
        self.rows = rows
        self.size = size
        self.dim, self.width, self.rest_width = (len(p) // size if size else 0 for p in planes)
        self._steps: array[float] | None = None

    @classmethod
    def of(cls, folder: Path, stem: str, dim: int, width: int) -> Mapped:
        from retain.search.npy import NpyArray, mapped

        def plane(part: str, wide: int) -> NpyArray:
            found = NpyArray.read(mapped(folder / f"{stem}.{part}.npy"), ("|i1",), dims=2)
            if found.fortran or found.shape[1] != wide:
                raise ValueError(f"{stem}.{part}.npy is not {wide} int8 codes a row")
            return found

        planes = plane("codes", dim), plane("head", width), plane("rest", dim - width)
        rows = NpyArray.read(
            mapped(folder / f"{stem}.rows.npy"), (ROW_DESCR,), dims=1, width=ROW_BYTES
        )
        if any(p.shape[:1] != rows.shape for p in planes):
            raise ValueError(f"{stem}.rows.npy does not match its codes")
        views = (planes[0].values, planes[1].values, planes[2].values)
        return cls(views, rows.values, rows.shape[0])

    def steps(self) -> array[float]:
        """Each row's step, in row order (gathered from the rows the first time, each of
        its four bytes by bytes' own strided slice: a memoryview's copies a byte at a
        time)."""
        if self._steps is None:
            whole, gathered = self.rows.tobytes(), bytearray(4 * self.size)
            for i in range(4):
                gathered[i::4] = whole[8 + i :: ROW_BYTES]
            steps = array("f", bytes(gathered))
            if sys.byteorder != "little":
                steps.byteswap()
            self._steps = steps
        return self._steps

    def key(self, row: int) -> int:
        """The memory number of row ``row``."""
        at = row * ROW_BYTES
        return int.from_bytes(self.rows[at : at + 8], "little", signed=True)

    def part(self, start: int, stop: int) -> memoryview[int]:
        """Rows ``start`` to ``stop`` of the codes, as SimSIMD reads them."""
        return plain.int8_rows(self.codes[start * self.dim : stop * self.dim], self.dim)

    def head_part(self, start: int, stop: int) -> memoryview[int]:
        """Rows ``start`` to ``stop`` of the head's plane."""
        return plain.int8_rows(self.head[start * self.width : stop * self.width], self.width)

    def rest_part(self, start: int, stop: int) -> memoryview[int]:
        """Rows ``start`` to ``stop`` of the rest's plane."""
        wide = self.rest_width
        return plain.int8_rows(self.rest[start * wide : stop * wide], wide)


class Held:
    """One realm's rows in a tail: their float32 rows joined, ``CHUNK`` rows a chunk (the
    last may hold fewer), each chunk's sum of rows and each row's memory number. A state
    is never changed once made: a refresh writes to copies of the chunks where rows
    changed or were added, and shares the rest. The numbers are only added to (a row is
    found by its place, which never moves; a state reads the places its chunks hold), so
    every state of a realm shares one list."""

    __slots__ = ("chunks", "nums", "sums")

    def __init__(
        self, chunks: tuple[bytearray, ...], sums: tuple[array[float], ...], nums: list[int]
    ) -> None:
        self.chunks = chunks
        self.sums = sums
        self.nums = nums


class _Changing:
    """A realm's rows while a refresh changes them: the chunks it writes to, copied (the
    numbers it adds go on the shared list, past the places any state reads, and are
    taken off again by ``abandon``)."""

    def __init__(self, held: Held | None, width: int) -> None:
        self.chunks = list(held.chunks) if held else []
        self.sums = list(held.sums) if held else []
        self.nums = held.nums if held else []
        self.held = len(self.nums)
        self.width = width
        self.written: dict[int, bytearray] = {}

    def _chunk(self, k: int) -> bytearray:
        chunk = self.written.get(k)
        if chunk is None:
            if k == len(self.chunks):
                self.chunks.append(bytearray())
                self.sums.append(array("f"))
            chunk = self.written[k] = bytearray(self.chunks[k])
        return chunk

    def put(self, place: int, blob: bytes) -> None:
        k, row = divmod(place, CHUNK)
        self._chunk(k)[row * self.width : (row + 1) * self.width] = blob

    def extend(self, nums: list[int], blobs: list[bytes]) -> int:
        """Add rows after the last; the place of the first."""
        first = done = len(self.nums)
        while done < first + len(nums):
            k, row = divmod(done, CHUNK)
            taken = slice(done - first, done - first + CHUNK - row)
            self._chunk(k).extend(plain.joined(blobs[taken]))
            self.nums += nums[taken]
            done = len(self.nums)
        return first

    def abandon(self) -> None:
        del self.nums[self.held :]

    def done(self, dim: int) -> Held:
        for k, chunk in self.written.items():
            self.chunks[k] = chunk
            self.sums[k] = plain.summed(chunk, dim)
        return Held(tuple(self.chunks), tuple(self.sums), self.nums)


class _Moved(Exception):
    """A number turned up in another realm than the one a tail holds it in."""


class Tail:
    """The rows of one model held exactly in memory, without numpy: those written past
    the segments (``vec`` past ``after``), or, with ``whole``, every row of a store that
    keeps no codes (below ``ann_from``). Each realm's rows are kept apart (``Held``), so a
    search reads its own realm's only. A row rewritten since is replaced in place. A
    number that turns up in another realm (a memory's number taken again, after the
    newest memory was deleted, by one of another realm) has every row read afresh; so
    has a ``whole`` tail when new rows arrive and it holds more memories than the store
    has vectors. Otherwise a row deleted since stays until the tail is added to a
    segment: the filter turns its memory away, and a candidate is scored by what the
    store holds now.

    One tail serves every thread of a process: a refresh makes a new state and sets it
    whole, with its places and the last ``vec`` it read, so a search reads one state, not
    a refresh's half; a refresh that fails sets nothing."""

    def __init__(self, model: str, dim: int, after: int, *, whole: bool = False) -> None:
        self.model = model
        self.dim = dim
        self._after = after
        self._whole = whole
        self._lock = threading.Lock()
        self._seen = after
        self._state: dict[str, Held] = {}
        self._place: dict[int, tuple[str, int]] = {}  # number → realm, place (the refresh's)

    def __len__(self) -> int:
        """The memories whose rows it holds."""
        return len(self._place)

    def refresh(self, tx: SqliteTransaction) -> None:
        """Take in the rows written since the last refresh, a chunk at a time (a reader of
        an older snapshot than the last refresh's takes in nothing)."""
        with self._lock:
            last = tx.last_vector()
            if last <= self._seen:
                return
            taken = self._take(tx, last, afresh=False)
            if not taken or (self._whole and len(self._place) > tx.vector_count(self.model)):
                self._take(tx, last, afresh=True)  # a number moved, or a vector went

    def _take(self, tx: SqliteTransaction, last: int, *, afresh: bool) -> bool:
        """Read the rows past the last refresh's (every row, ``afresh``) into a new state
        and set it; False, setting nothing, where a number turned up in another realm."""
        from retain.search.embed import check_stored

        base, held = ({}, {}) if afresh else (self._state, self._place)
        placed: dict[int, tuple[str, int]] = {}  # this refresh's new places
        changing: dict[str, _Changing] = {}
        width = 4 * self.dim

        def realm_of(realm: str) -> _Changing:
            if realm not in changing:
                changing[realm] = _Changing(base.get(realm), width)
            return changing[realm]

        seen = self._after if afresh else self._seen
        try:
            while True:
                rows = tx.vectors_after(self.model, seen, CHUNK)
                if not rows.nums:
                    break
                check_stored(rows, self.model, self.dim)  # (``dimension_mismatch``, naming it)
                new: dict[str, tuple[list[int], list[bytes]]] = {}  # by realm, in order
                for num, realm, blob in zip(rows.nums, rows.realms, rows.blobs, strict=True):
                    at = placed.get(num) or held.get(num)
                    if at is None:
                        nums, blobs = new.setdefault(realm, ([], []))
                        nums.append(num)
                        blobs.append(blob)
                    elif at[0] != realm:  # another realm's memory has the number now
                        raise _Moved
                    else:
                        realm_of(realm).put(at[1], plain.stored(blob))
                for realm, (nums, blobs) in new.items():
                    first = realm_of(realm).extend(nums, blobs)
                    places = zip(itertools.repeat(realm), range(first, first + len(nums)))
                    placed.update(zip(nums, places, strict=False))
                seen = rows.last_vec
        except BaseException as exc:
            for changed in changing.values():
                changed.abandon()
            if isinstance(exc, _Moved):
                return False
            raise
        state = dict(base)
        state.update((realm, changed.done(self.dim)) for realm, changed in changing.items())
        if afresh:
            self._place = placed
        else:
            self._place.update(placed)
        self._state = state
        self._seen = max(seen, last)  # past other models' rows too
        return True

    def scored(self, queries: Sequence[Any], realm: str) -> tuple[list[list[Any]], list[int]]:
        """Each query's cosines with ``realm``'s rows, as float32 parts in place order
        (a chunk a part), and each place's memory number."""
        held = self._state.get(realm)
        parts: list[list[Any]] = [[] for _ in queries]
        if held is None:
            return parts, []
        asked = plain.packed(queries)
        for chunk in held.chunks:
            found = plain.dots(asked, chunk, self.dim)
            size = len(chunk) // (4 * self.dim)
            for i, part in enumerate(parts):
                part.append(found[i * size : (i + 1) * size])
        return parts, held.nums

    def realm_sum(self, realm: str) -> tuple[array[float] | None, int]:
        """The sum of ``realm``'s rows (None: it has none) and how many there are."""
        held = self._state.get(realm)
        count = sum(map(len, held.chunks)) // (4 * self.dim) if held else 0
        if held is None or not count:
            return None, 0
        total: Any = held.sums[0]
        for more in held.sums[1:]:
            total = plain.added(total, more)
        return plain.floats(total), count


class Approximate:
    """One model's persisted codes, opened (each segment's files mapped), and the exact
    tail past them; where the store keeps no codes, the tail alone (every row)."""

    def __init__(
        self, folder: Path, meta: Meta, tail: Tail, stamp: tuple[int, int] = (0, 0)
    ) -> None:
        self.folder = folder
        self.meta = meta
        self.tail = tail
        self.stamp = stamp  # the JSON's, taken before it was read: a newer one is reread
        self.segments = [
            Mapped.of(folder, meta.stem(s), meta.dim, meta.head) for s in meta.segments
        ]
        self.starts = list(itertools.accumulate((m.size for m in self.segments), initial=0))
        self.size = self.starts.pop()  # (each segment's first row, counted across them)
        self._sums: dict[str, tuple[list[float], int]] = {}  # the segments' sum, a realm's

    def keys(self, rows: list[int]) -> list[int]:
        """The memory numbers of ``rows``, counted across the segments in order: each
        read where it is (a search reads some 64 of them, a wide filter's thousands)."""
        found = []
        for row in rows:
            at = bisect.bisect_right(self.starts, row) - 1
            found.append(self.segments[at].key(row - self.starts[at]))
        return found

    def sums(self, realm: str) -> tuple[array[float], int]:
        """The realm's vector sum and count, the segments' and the tail's. A row deleted
        since its segment was built, or rewritten into a later one, counts until the codes
        are built again."""
        if realm not in self._sums:  # (the segments' do not change: added once a realm)
            total = [0.0] * self.meta.dim
            count = 0
            for segment in self.meta.segments:
                if realm in segment.counts:
                    total = [a + b for a, b in zip(total, segment.sums[realm], strict=True)]
                    count += segment.counts[realm]
            self._sums[realm] = total, count
        total, count = self._sums[realm]
        extra, more = self.tail.realm_sum(realm)
        if extra is not None:
            total = [a + b for a, b in zip(total, extra, strict=True)]
        return array("f", total), count + more

    @property
    def narrow(self) -> bool:
        """Whether a search chooses its candidates by the head's codes first: past
        ``POOL × GATHERED`` rows, where the head holds ``HEAD_SHARE`` of the variance."""
        return self.size > POOL * GATHERED and self.meta.share >= HEAD_SHARE

    def scored(self, queries: Sequence[Any]) -> list[Rough]:
        """Each query's approximate scores of every segment row (``q·(x − μ)`` up to the
        query's own scale: the same order as the cosine), by the head's codes alone where
        the search is ``narrow``, else by all of them. The queries are taken to int8 codes
        as the rows are (their dimensions in the meta's order), each product of codes
        summed in integers by SimSIMD's kernels and scaled by the row's step; the rows are
        split in ``THREADS`` parts read side by side from ``SPLIT_FROM`` of them."""
        if not self.size:
            return [Rough([], [], None) for _ in queries]
        order, head = self.meta.order, self.meta.head
        coded = [plain.codes(array("f", map(plain.view(q).__getitem__, order))) for q in queries]
        narrow = self.narrow
        threads = THREADS if self.size >= SPLIT_FROM else 1
        pieces = []
        for mapped in self.segments:
            cut = -(-mapped.size // threads)
            pieces += [
                (mapped, start, min(start + cut, mapped.size))
                for start in range(0, mapped.size, cut or 1)
            ]
        scores: list[list[memoryview[float]] | None] = [None] * len(pieces)
        failed: list[BaseException] = []
        every = max(1, min(threads, len(pieces)))
        if narrow:  # the heads scanned, each query's rest kept for its pool
            asked = plain.int8_rows(plain.packed([c[:head] for c in coded]), head)
            rests = plain.int8_rows(plain.packed([c[head:] for c in coded]), self.meta.dim - head)
            rest_of: list[memoryview[int] | None] = [rests[i : i + 1] for i in range(len(coded))]
        else:
            asked = plain.int8_rows(plain.packed(coded), self.meta.dim)
            rest_of = [None] * len(coded)
        helpers = [
            threading.Thread(
                target=_scan_all, args=(asked, narrow, pieces, scores, i, every, failed)
            )
            for i in range(1, every)
        ]  # a thread each (no pool: concurrent.futures costs a command 5 ms to import)
        for helper in helpers:
            helper.start()
        _scan_all(asked, narrow, pieces, scores, 0, every, failed)
        for helper in helpers:
            helper.join()
        if failed:
            raise failed[0]
        return [
            Rough(pieces, [part[i] for part in scores if part is not None], rest_of[i])
            for i in range(len(queries))
        ]


class Rough:
    """One query's approximate scores of every segment row, as float32 parts in row order,
    one a piece of the scan (a segment's rows from ``start`` to ``stop``): by all of each
    row's codes, or, ``narrow``, by its head's alone, each candidate then scored by its
    rest's too (``best``)."""

    def __init__(
        self,
        pieces: list[tuple[Mapped, int, int]],
        parts: list[memoryview[float]],
        rest: memoryview[int] | None,
    ) -> None:
        self.pieces = pieces
        self.parts = parts
        self.rest = rest  # the query's codes past the head (a row), while ``narrow``
        self.size = sum(stop - start for _, start, stop in pieces)

    @property
    def narrow(self) -> bool:
        """Whether the scores are the heads' alone."""
        return self.rest is not None

    def best(self, count: int) -> list[int]:
        """The rows (counted across the segments in order) of the ``count`` best scores
        by every code: ``narrow``, of about the best ``POOL`` (or eight times ``count``) by
        the head, unless those would be more than the rows ÷ ``GATHERED`` (then every
        row's rest is read, once, and the scores are every code's from then on)."""
        wanted, rest = max(POOL, 8 * count), self.rest
        if rest is not None and wanted * GATHERED < self.size:
            pool = plain.about(self.parts, wanted)
            if not wanted // 2 <= len(pool) <= 2 * wanted:  # a sample that misled, or ties
                pool = sorted(plain.best(self.parts, wanted, SAMPLED))
            return [pool[i] for i in plain.best([self._rescored(pool, rest)], count, SAMPLED)]
        if rest is not None:
            self.parts = [
                plain.added(
                    part, scan(rest, mapped.rest_part(start, stop), mapped.steps()[start:stop])[0]
                )
                for part, (mapped, start, stop) in zip(self.parts, self.pieces, strict=True)
            ]
            self.rest = None
        return plain.best(self.parts, count, SAMPLED)

    def _rescored(self, rows: list[int], rest: memoryview[int]) -> memoryview[float]:
        """The scores by every code of ``rows`` (in order): the head's, and the rest's read
        where each row is; gathered by numpy where it is loaded (at a million rows, a pool
        of about 2,000 in 0.7 ms against 1.3)."""
        if "numpy" in sys.modules:
            return self._rescored_numpy(rows, rest)
        return self._rescored_plain(rows, rest)

    def _rescored_plain(self, rows: list[int], rest: memoryview[int]) -> memoryview[float]:
        heads: list[float] = []
        rests: list[memoryview[int]] = []
        scales: list[float] = []
        at = offset = 0
        for part, (mapped, start, stop) in zip(self.parts, self.pieces, strict=True):
            end = bisect.bisect_left(rows, offset + stop - start, at)
            if end > at:
                heads += plain.picked(part, [row - offset for row in rows[at:end]])
                within = [row - offset + start for row in rows[at:end]]  # the segment's rows
                scales += plain.picked(mapped.steps(), within)
                wide, plane = mapped.rest_width, mapped.rest
                rests += [plane[i * wide : i * wide + wide] for i in within]
            at, offset = end, offset + stop - start
        wide = rest.nbytes  # (a row)
        found = scan(rest, plain.int8_rows(b"".join(rests), wide), array("f", scales))[0]
        return plain.added(found, array("f", heads))

    def _rescored_numpy(self, rows: list[int], rest: memoryview[int]) -> memoryview[float]:
        import numpy as np

        places = np.asarray(rows, dtype=np.intp)
        sizes = [stop - start for _, start, stop in self.pieces]
        ends = np.cumsum(sizes)
        cuts = np.searchsorted(places, ends).tolist()  # where each piece's rows end
        heads, rests, scales = [], [], []
        at = 0
        for part, (mapped, start, _), size, end, cut in zip(
            self.parts, self.pieces, sizes, ends.tolist(), cuts, strict=True
        ):
            if cut > at:
                local = places[at:cut] - (end - size)  # the piece's rows
                within = local + start  # the segment's
                heads.append(np.frombuffer(part.cast("B"), np.float32)[local])
                scales.append(np.frombuffer(mapped.steps(), np.float32)[within])
                plane = np.frombuffer(mapped.rest, np.int8).reshape(-1, mapped.rest_width)
                rests.append(plane[within])
            at = cut
        codes = plain.int8_rows(np.concatenate(rests), rest.nbytes)
        found = scan(rest, codes, plain.floats(np.concatenate(scales)))[0]
        return plain.added(found, np.concatenate(heads))


def _scan_all(
    asked: memoryview[int],
    narrow: bool,
    pieces: list[tuple[Mapped, int, int]],
    out: list[list[memoryview[float]] | None],
    first: int,
    every: int,
    failed: list[BaseException],
) -> None:
    """Pieces ``first``, ``first + every``, … scanned into ``out`` (by the head's plane
    where the search is ``narrow``, else by the codes); what fails is kept for the caller
    to raise."""
    try:
        for at in range(first, len(pieces), every):
            mapped, start, stop = pieces[at]
            read = mapped.head_part(start, stop) if narrow else mapped.part(start, stop)
            out[at] = scan(asked, read, mapped.steps()[start:stop])
    except BaseException as exc:  # noqa: BLE001 - raised again by the thread that waits
        failed.append(exc)


def scan(
    asked: memoryview[int], codes: memoryview[int], steps: array[float]
) -> list[memoryview[float]]:
    """Each query's codes (a row of ``asked``) by each row's codes, summed exactly in
    integers by SimSIMD's kernel, then times the row's step: a float32 view a query.

    Not with ``cdist(out=…)``: SimSIMD 6.5 returns ``None`` from it without taking a
    reference, and the interpreter aborts once ``None``'s count runs out."""
    size = len(steps)
    if not size:
        return [plain.view(array("f")) for _ in range(len(asked))]
    found = plain.int8_dots(asked, codes)
    return [plain.times(found[i * size : (i + 1) * size], steps) for i in range(len(asked))]


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
        ordered = sorted(meta.order) == list(range(dim))  # (none: an earlier format's)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return meta if ordered and (meta.model, meta.dim) == (model, dim) else None


@contextlib.contextmanager
def locked(folder: Path, *, wait: float, progress: Progress | None = None) -> Iterator[bool]:
    """Hold the folder's writer lock, waiting up to ``wait`` seconds while another
    process holds it (0: not at all), each whole second of the wait reported to
    ``progress``; yields whether it is held."""
    folder.mkdir(mode=0o700, exist_ok=True)
    with os.fdopen(
        os.open(folder / "lock", os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600), "a"
    ) as file:
        if not _taken(file, wait, progress):
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def _taken(file: IO[str], wait: float, progress: Progress | None) -> bool:
    """Whether ``file``'s ``flock`` was taken within ``wait`` seconds (tried again and
    again: a blocking ``flock`` cannot be given up on). A wait shows from its first
    second (a shorter one, another process adding a tail, would only flash a bar); its
    last report, once it is over, says it done whichever way it ended."""
    start, pause, shown = time.monotonic(), 0.01, 0
    try:
        while True:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                pass
            waited = time.monotonic() - start
            if waited >= wait:
                return False
            if progress is not None and int(waited) > shown:
                shown = int(waited)
                progress(WAITING, shown, math.ceil(wait))
            time.sleep(min(pause, wait - waited))
            pause = min(pause * 2, 0.2)
    finally:
        if shown and progress is not None:
            progress(WAITING, math.ceil(wait), math.ceil(wait))


class Indexes:
    """The vector codes of one store file, one per model, shared by every thread
    of a process (see the module docstring)."""

    def __init__(self, db: Path, progress: Progress | None = None) -> None:
        self.folder = folder_of(db)
        self.progress = progress  # hears a build a search makes (``searched``)
        self._open: dict[tuple[str, int], Approximate] = {}
        self._whole: dict[tuple[str, int], Approximate] = {}  # no codes: every row in memory
        self._lock = threading.Lock()  # the two above, each look and change (never a wait)
        self._writing = threading.Lock()  # this process's writer of the codes (``_writer``)
        self._stuck = False  # a wait for the writer's lock ran out, and it was not held since
        self._failed: float | None = None  # when the codes last could not be written

    @contextlib.contextmanager
    def _writer(self, progress: Progress | None, *, wait: bool = True) -> Iterator[bool]:
        """The codes' writer: this process's (``_writing``, with ``wait`` waited for as
        long as another thread writes), then the folder's (``locked``, with ``wait``
        waited for up to ``LOCK_WAIT_S``); yields whether both are held. Once a wait for
        another process has run out (a writer stopped by Ctrl-Z, say), this process's
        next ones only try, until a try takes it (any search adding a tail tries): each
        waiter does without the lock rather than wait that long each time.

        No thread holds ``_lock`` meanwhile, nor while it writes the codes: the other
        threads search the version they have open (a build of a million takes 12 s)."""
        if not self._writing.acquire(blocking=wait):  # (a thread of this process: running)
            yield False
            return
        try:
            bound = LOCK_WAIT_S if wait and not self._stuck else 0.0
            with locked(self.folder, wait=bound, progress=progress) as mine:
                if mine:
                    self._stuck = False
                elif bound:
                    self._stuck = True
                yield mine
        finally:
            self._writing.release()

    def drop(self) -> None:
        """Remove every index of the store, files and all; ``store_busy`` when another
        process holds their writer's lock past ``LOCK_WAIT_S`` (nothing removed),
        ``store_error`` when they cannot be removed (a read-only disk)."""
        if not self.folder.exists():
            self._forget()
            return
        try:
            with self._writer(self.progress) as mine:  # the lock file stays: waiters hold it
                if not mine:
                    raise StoreBusy(
                        f"the vector index {self.folder} stayed locked by another process",
                        remedy="retry once it has finished writing the index (a process "
                        "stopped by Ctrl-Z holds it until it goes on or ends)",
                        location=str(self.folder),
                    )
                for path in self.folder.iterdir():
                    if path.name != "lock":
                        path.unlink(missing_ok=True)
                self._forget()  # (after: a search meanwhile may have opened a version)
        except OSError as exc:
            raise StoreError(
                f"cannot remove the vector index {self.folder}: {exc.strerror or exc}",
                remedy="make the folder writable, or remove it by hand (it is derived: "
                "the next search builds it again)",
                location=str(self.folder),
            ) from exc

    def _forget(self) -> None:
        """Let go of every version and tail open (a search reading one goes on)."""
        with self._lock:
            self._open.clear()
            self._whole.clear()

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
        store keeps none for it (it has none and holds fewer than ``at_least`` of its
        vectors; 0: never) or it must be built while another process holds its lock."""
        if not self._wanted(tx, model, dim, at_least):
            return None
        return self.current(tx, model, dim, progress, folded=folded)

    def searched(self, tx: SqliteTransaction, model: str, dim: int, at_least: int) -> Approximate:
        """``model``'s vectors as a search reads them in ``tx``: through the codes where
        the store keeps them (``kept``), else every row exactly in memory, a tail without
        segments (no file is written). A build it makes (the first past ``at_least``, an
        earlier format's, its files gone) or a tail it adds reports to ``progress``."""
        ann = self.kept(tx, model, dim, at_least, self.progress)
        with self._lock:
            if ann is not None:
                self._whole.pop((model, dim), None)
                return ann
            ann = self._whole.get((model, dim))
            if ann is None:
                tail = Tail(model, dim, 0, whole=True)
                ann = self._whole[model, dim] = Approximate(self.folder, Meta(model, dim, []), tail)
        ann.tail.refresh(tx)
        return ann

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
    ) -> Approximate | None:
        """``model``'s index as the store holds it in ``tx``: opened (or built), its tail
        brought up to date, and the tail added to the segments once past ``TAIL_MAX``
        (with ``folded``, whenever there is one, waiting for another writer).
        None when it must be built and another process holds the lock (``_writer``)."""
        ann = self._latest(model, dim)
        if ann is None:
            ann = self._load(tx, model, dim, progress)
            self._keep(model, dim, ann)
            if ann is None:
                return None
        ann.tail.refresh(tx)
        if len(ann.tail) > (0 if folded else TAIL_MAX) and self._writable():
            try:
                with self._writer(progress, wait=folded) as mine:
                    if mine:
                        ann = self._grown(tx, ann, progress)
                        self._keep(model, dim, ann)
            except OSError:  # the tail stays, read exactly
                self._failed = time.monotonic()
            ann.tail.refresh(tx)  # (another process's version: rows past its range)
        return ann

    def _latest(self, model: str, dim: int) -> Approximate | None:
        """The version of ``model`` open, if it is the one the folder holds."""
        with self._lock:
            ann = self._open.get((model, dim))
        return ann if ann is not None and ann.stamp == _stamp(self.folder, model, dim) else None

    def _keep(self, model: str, dim: int, ann: Approximate | None) -> None:
        """Have the process's searches read ``ann`` if it is the version the folder holds
        (if not, the next search opens that), and let go of the one open if it no
        longer is (None: of that alone). A version is published after its files are
        written, and let go of after they are removed."""
        with self._lock:
            stamp = _stamp(self.folder, model, dim)
            held = self._open.get((model, dim))
            if ann is not None and ann.stamp == stamp:
                self._open[model, dim] = ann
            elif held is not None and held.stamp != stamp:
                del self._open[model, dim]

    def compacted(
        self, tx: SqliteTransaction, progress: Progress | None = None
    ) -> tuple[list[str], bool]:
        """Build again, whole, every index still holding a key of a vector the store no
        longer has (deleted or erased: its codes stay in a segment until then), reporting
        to ``progress``, or remove it when it cannot be written (a full disk); the steps
        taken (``vector_index_rebuilt``, ``vector_index_removed``), and whether every
        index was seen to (not one whose lock another process held past
        ``LOCK_WAIT_S``, or that could be neither written nor removed)."""
        steps: set[str] = set()
        looked = True
        for model, dim in self._models():
            try:
                with self._writer(progress) as mine:
                    step = self._compacted(tx, model, dim, progress) if mine else None
                    looked = looked and mine
            except OSError:  # no lock file to be had, or codes neither written nor removed
                looked = False
                continue
            if step is not None:
                steps.add(step)
        return sorted(steps), looked

    def hold_stale(self, tx: SqliteTransaction) -> bool:
        """Whether an index holds, or may hold, a key of a vector the store no longer has."""
        return any(
            meta is not None and self._stale(tx, meta)
            for meta, _ in (_read(self.folder, model, dim) for model, dim in self._models())
        )

    def _models(self) -> list[tuple[str, int]]:
        """The model and dimension of each index whose JSON the folder holds."""
        paths = sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []
        return [(str(d.get("model")), int(d.get("dim") or 0)) for d in map(_json, paths)]

    def _stale(self, tx: SqliteTransaction, meta: Meta) -> bool:
        """Whether ``meta``'s segments hold a key of a vector the store no longer has, or
        cannot be read (an earlier format, a damaged file) to tell."""
        from retain.storage import sqlite_ann_build as build

        try:
            return build.stale(self.folder, meta, iter(tx.vector_nums(meta.model)))
        except (OSError, RuntimeError, ValueError):
            return True

    def _compacted(
        self, tx: SqliteTransaction, model: str, dim: int, progress: Progress | None
    ) -> str | None:
        """``model``'s index built again when it holds a key of a vector the store no
        longer has, or removed when it cannot be written (under the folder's lock); the
        step, if either was. ``OSError`` when it could be neither."""
        meta, _ = _read(self.folder, model, dim)
        if meta is None or not self._stale(tx, meta):
            return None
        try:  # afresh, the mean too: an erased vector is part of the old one
            self._keep(model, dim, self._built(tx, Meta(model, dim, []), progress))
        except OSError:
            self._failed = time.monotonic()
            self._remove(model, dim)
            self._keep(model, dim, None)
            return "vector_index_removed"
        return "vector_index_rebuilt"

    def _remove(self, model: str, dim: int) -> None:
        """Remove ``model``'s files, its JSON first (a reader then finds no version): a
        full disk still lets a file go."""
        slug = _slug(model, dim)
        (self.folder / f"{slug}.json").unlink(missing_ok=True)
        for path in _segment_files(self.folder, slug):
            path.unlink(missing_ok=True)

    def _load(
        self, tx: SqliteTransaction, model: str, dim: int, progress: Progress | None
    ) -> Approximate | None:
        """``model``'s index as last saved, or built; None when it has to be built and
        cannot be now (``_writer``, ``_writable``)."""
        meta, stamp = _read(self.folder, model, dim)
        if meta is not None:
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                return self._opened(meta, stamp)
        if not self._writable():
            return None
        try:
            with self._writer(progress) as mine:  # another writer's, meanwhile?
                if not mine:
                    return None
                meta, stamp = _read(self.folder, model, dim)
                if meta is not None:
                    with contextlib.suppress(OSError, RuntimeError, ValueError):
                        return self._opened(meta, stamp)
                return self._built(tx, Meta(model, dim, []), progress)
        except OSError:  # (its files cannot be written: a full disk, a read-only one)
            self._failed = time.monotonic()
            return None

    def _writable(self) -> bool:
        """Whether to try writing the codes: not within ``RETRY_WRITE_S`` of a try that
        failed (a build reads every vector before it writes: at a million, 12 s)."""
        return self._failed is None or time.monotonic() - self._failed >= RETRY_WRITE_S

    def _opened(self, meta: Meta, stamp: tuple[int, int]) -> Approximate:
        return Approximate(self.folder, meta, Tail(meta.model, meta.dim, meta.upto), stamp)

    def _grown(
        self, tx: SqliteTransaction, ann: Approximate, progress: Progress | None
    ) -> Approximate:
        """``ann`` with its tail added to its last segment, or to new ones past
        ``SEGMENT_ROWS`` (under the folder's lock)."""
        meta, stamp = _read(self.folder, ann.meta.model, ann.meta.dim)
        if meta is not None and meta.upto != ann.meta.upto:  # another writer's, meanwhile
            with contextlib.suppress(OSError, RuntimeError, ValueError):
                return self._opened(meta, stamp)
            meta = None  # unreadable (an earlier format, a damaged file): afresh
        if meta is None or len(ann.tail) > meta.rows:  # dropped, or a reindex: afresh
            meta = Meta(ann.meta.model, ann.meta.dim, [])
        return self._built(tx, meta, progress)

    def _built(self, tx: SqliteTransaction, meta: Meta, progress: Progress | None) -> Approximate:
        """``meta`` extended by every stored row past it (``sqlite_ann_build``), saved."""
        from retain.storage import sqlite_ann_build as build

        return self._written(*build.extended(tx, meta, self.folder, progress))

    def _written(self, meta: Meta, made: dict[str, Codes]) -> Approximate:
        """Save a new version (its new segments, then the JSON) and open it; a save that
        fails removes what it wrote (what a full disk most needs back)."""
        slug = _slug(meta.model, meta.dim)
        current = self.folder / f"{slug}.json"
        staged = current.with_name(current.name + ".new")
        try:
            for stem, codes in made.items():  # under new names: a reader may map the old
                codes.save(self.folder, stem, meta.head)
            staged.write_text(json.dumps(asdict(meta)), encoding="utf-8")
            os.chmod(staged, 0o600)
            os.replace(staged, current)
        except OSError:
            with contextlib.suppress(OSError):
                staged.unlink(missing_ok=True)
                for stem in made:
                    for path in self.folder.glob(f"{stem}.*"):
                        path.unlink(missing_ok=True)
            raise
        stamp = _stamp(self.folder, meta.model, meta.dim)
        keep = {current.name}
        keep.update(f"{meta.stem(s)}.{part}.npy" for s in meta.segments for part in PARTS)
        with contextlib.suppress(OSError):  # (left to the next version's, if need be)
            for old in _segment_files(self.folder, slug):  # replaced ones, a crash's leftovers
                if old.name not in keep:
                    old.unlink(missing_ok=True)  # a reader holding it mapped keeps its pages
        return self._opened(meta, stamp)


def _segment_files(folder: Path, slug: str) -> list[Path]:
    """The segments' files of the model whose slug is ``slug`` (staged ones too), and not
    those of another model in the folder whose slug begins with it."""
    own = _segment_name(slug)
    others = [_segment_name(path.stem) for path in folder.glob(f"{slug}-*.json")]
    return [
        path
        for path in folder.glob(f"{slug}-*")
        if own.fullmatch(path.name) and not any(o.fullmatch(path.name) for o in others)
    ]


def _segment_name(slug: str) -> re.Pattern[str]:
    """A file name of a segment of the model whose slug is ``slug`` (``Meta.stem``)."""
    return re.compile(re.escape(slug) + r"-\d+-\d+(-[0-9a-f]{8})?\.[a-z]+\.npy(\.new)?")


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def nearest(
    tx: SqliteTransaction,
    ann: Approximate,
    queries: Sequence[Any],
    where: MemoryFilter,
    limit: int,
) -> list[list[LexicalHit]]:
    """For each query (a float32 vector), the ``limit`` memories passing ``where``
    nearest it by exact cosine: the segments' candidates and the tail together (see the
    module docstring)."""
    model, dim = ann.meta.model, ann.meta.dim
    warmed(ann.size)
    vectors = [plain.floats(query) for query in queries]
    tail, tail_nums = ann.tail.scored(vectors, where.realm)
    rough = ann.scored(vectors)
    # A tier or tag of fewer rows than √(limit × rows) is cheaper to score whole than to reach
    # through candidates: about limit ÷ p candidates are read for ``limit`` rows that
    # pass at rate p, against the p × rows that pass, equal at p = √(limit ÷ rows).
    whole_below = math.isqrt(limit * (ann.size + len(ann.tail))) + 1
    passing = functools.cache(lambda: tx.passing(where, whole_below))  # asked once
    found: list[list[LexicalHit]] = []
    for query, scores, near in zip(vectors, rough, tail, strict=True):
        if not any(query):  # no direction (a text of no known word): no cosine but 0
            found.append([])
            continue
        count = max(FIRST, limit * 2)
        seen: set[int] = set()  # the candidates read so far
        passed: list[tuple[float, int, str]] = []  # of them, those passing: score, number, id
        held = sum(map(len, near))  # the realm's places in the tail
        while True:
            exhausted = count >= ann.size and count >= held
            best = ann.keys(scores.best(count))
            nearest_held = [tail_nums[i] for i in plain.best(near, count, SAMPLED)]
            # Candidates all, the tail's too: each that passes the filter scored by the
            # vector the store holds in this transaction (gone, or another model's: no
            # row), once, however many rounds ask for it.
            new = sorted({*best, *nearest_held} - seen)
            seen.update(new)
            nums, ids, blobs = tx.vectors_passing(model, where, new)
            cosines = plain.cosines(query, plain.joined(blobs), dim)
            passed += zip(cosines, nums, ids, strict=True)
            passed.sort(key=lambda p: (-p[0], p[1]))  # equal cosines in number order, as a scan's
            hits = [LexicalHit(memory_id, score) for score, _, memory_id in passed[:limit]]
            if len(hits) >= limit or exhausted:
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


_SEARCHED = threading.Event()  # set by a process's first search of NUMPY_FROM rows or more


def warmed(size: int) -> None:
    """numpy loaded for a process's second search of ``NUMPY_FROM`` codes or more.

    Where numpy is loaded, its partition chooses the best of the codes' scores for a
    fraction of the plain way's cost (``plain.best`` and ``plain.about``: at a million
    scores 0.6 ms against 4–5), but importing it costs a new process 60–100 ms, more than
    such a search. So a process's first search goes without it (a ``retain search``
    command searches once), and its second imports it: a process that searches again
    (a server, an agent's loop) is one that searches many times."""
    if size < NUMPY_FROM or "numpy" in sys.modules:
        return
    if _SEARCHED.is_set():
        import numpy  # noqa: F401  # (``search.plain`` uses it where it is loaded)
    _SEARCHED.set()


def _exactly(
    tx: SqliteTransaction, model: str, dim: int, query: Any, ids: dict[int, str], limit: int
) -> list[LexicalHit]:
    """The ``limit`` nearest of the memories ``ids`` (number → id), scored exactly by the
    vectors the store holds (in number order among equal scores, as a scan's)."""
    nums, blobs = tx.vectors_by_num(model, sorted(ids))
    scores = plain.cosines(query, plain.joined(blobs), dim)
    order = sorted(range(len(nums)), key=lambda j: (-scores[j], nums[j]))[:limit]
    return [LexicalHit(ids[nums[j]], scores[j]) for j in order]


def _scanned(
    tx: SqliteTransaction, model: str, dim: int, query: Any, where: MemoryFilter, limit: int
) -> list[LexicalHit]:
    """The ``limit`` nearest of every row passing ``where``, scanned exactly: for a
    filter too narrow for the segments' candidates to reach."""
    best: list[tuple[float, str]] = []
    after = 0
    while True:
        nums, ids, blobs = tx.vectors_where(model, where, after, CHUNK)
        if not nums:
            break
        scores = plain.cosines(query, plain.joined(blobs), dim)
        top = sorted(range(len(nums)), key=lambda j: -scores[j])[:limit]  # stable: in order
        best = sorted([*best, *((scores[j], ids[j]) for j in top)], key=lambda b: -b[0])
        best = best[:limit]
        after = nums[-1]
    return [LexicalHit(memory_id, score) for score, memory_id in best]
