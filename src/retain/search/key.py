"""A memory's search key: the words and the vector it is found by.

Besides its own name, description and body, a memory is found by its
*context*, derived and lightly weighted:

* the times it holds and mentions, as ``search/when.py``'s tokens: the day it
  held (``valid_from``), and every day, week, month or year its text names —
  "8 May 2023" outright, or "last Friday" resolved against the day it held — so
  a question that names a time prefers it;
* its subject — who said it or whom it is about;
* the text of its thread neighbours, up to ``RADIUS`` memories either side
  in the order they were written. A conversational turn rarely repeats its
  topic ("yes, last Tuesday!"); the turns around it do.

The vector is the embedding of the memory's own text, nudged toward its
neighbours': ``normalise(e(own) + NEIGHBOUR_WEIGHT × e(neighbours))``.
Context and vector are derived data: rebuilt from the rows at any time.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from datetime import tzinfo
from typing import TYPE_CHECKING, NamedTuple

from retain.chrono import in_zone, parse_stamp
from retain.errors import EmbedderFailed, RetainError
from retain.model import Memory
from retain.search import when
from retain.search.embed import Embedder, check_shape, normalised
from retain.storage.base import KeySource, Reads, SearchKey, StoredVector, Transaction

if TYPE_CHECKING:
    from array import array
    from concurrent.futures import Future, ThreadPoolExecutor

    from retain.search.embed import Matrix
    from retain.search.static_model import StaticEmbedder
    from retain.storage.base import Vector

RADIUS = 2
NEIGHBOUR_CHARS = 600  # of each neighbour's text
OWN_CHARS = 4000  # of a memory's own text, for its vector
NEIGHBOUR_WEIGHT = 0.8


def source_changed(before: Memory, after: Memory) -> bool:
    """Whether a change reaches the search key (tags and priority, say, do not)."""
    return any(
        getattr(before, f) != getattr(after, f)
        for f in ("name", "description", "body", "subject", "thread", "valid_from")
    )


def own_text(source: KeySource | Memory) -> str:
    """What the memory says, as its vector reads it: name, subject, description, body."""
    named = source.name.replace("-", " ") + ". " if source.name else ""
    head = named + (f"{source.subject}: " if source.subject else "")
    text = source.description if not source.body else f"{source.description}\n{source.body}"
    return (head + text)[:OWN_CHARS]


def neighbour_text(source: KeySource) -> str:
    return (source.body or source.description)[:NEIGHBOUR_CHARS]


def time_words(source: KeySource, zone: tzinfo | None) -> str:
    """The time tokens of the day ``source`` held and of the times its text names,
    relative ones resolved against that day (without one, only the absolute ones)."""
    held = in_zone(parse_stamp(source.valid_from), zone).date() if source.valid_from else None
    named = when.spans(f"{source.description}\n{source.body}"[:OWN_CHARS], held)
    if held is not None:
        named.insert(0, when.Span(held, held, when.DAY, (0, 0)))
    return " ".join(dict.fromkeys(t for span in named for t in when.span_tokens(span)))


class Context(NamedTuple):
    """A memory's context: the context column's words, and its neighbours' texts (in
    thread order), which nudge its vector as one text (``around``)."""

    words: str
    neighbours: tuple[str, ...] = ()

    @property
    def around(self) -> str:
        return " ".join(self.neighbours)


def context(source: KeySource, neighbours: Sequence[KeySource], zone: tzinfo | None) -> Context:
    """The context of ``source`` among ``neighbours`` (see ``Context``)."""
    texts = tuple(neighbour_text(n) for n in neighbours)
    around = " ".join(texts)
    head = " ".join(p for p in (time_words(source, zone), source.subject or "") if p)
    return Context("\n".join(p for p in (head, around) if p), texts)


BATCH = 2048  # memories embedded at a time


class Ahead:
    """Texts being embedded by a worker thread while the write stores its rows.

    A batch's new rows are inserted before their keys are made, and SQLite and
    PostgreSQL's drivers let go of the GIL while a statement runs: an insert of a
    thousand rows takes about as long as embedding them, so their own texts are
    embedded meanwhile (``Work.embed_ahead``), up to ``BATCH`` of them (one call, as
    ``build`` makes). ``take`` gives a text's vector from here when it is the very text
    the key needs, and embeds any other there and then.
    """

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        self.embedder = embedder
        self.at = {text: i for i, text in enumerate(texts)}
        self.future: Future[Matrix] = _worker().submit(embed, embedder, list(texts))

    def settle(self) -> None:
        """Wait for the worker, once the rows are stored: the rest of the write is Python,
        which the worker would only slow (and be slowed by). Texts the worker has not
        begun on (it is embedding another write's batch) are withdrawn, and ``take``
        embeds them itself: no write waits on another's."""
        if not self.future.cancel():
            self.future.exception()  # done; a failure is raised by ``take``

    def take(self, embedder: Embedder, texts: Sequence[str]) -> Matrix:
        """``texts`` embedded, each from here when it was embedded ahead: the vectors
        ``embed`` makes, for an embedder whose vector of a text does not depend on the
        other texts of its call (the static model, ``hash``, model2vec; a neural model
        that pads a call's texts alike may differ in the last bits)."""
        if embedder is not self.embedder or self.future.cancel():
            return embed(embedder, texts)
        done = self.future.result()  # the embedder's failure is raised here, in the write
        found = {i: row for i, text in enumerate(texts) if (row := self.at.get(text)) is not None}
        if len(found) == len(texts):
            return done[list(found.values())]
        import numpy as np

        out = np.empty((len(texts), done.shape[1]), done.dtype)
        out[list(found)] = done[list(found.values())]
        missing = [i for i in range(len(texts)) if i not in found]
        out[missing] = embed(embedder, [texts[i] for i in missing])
        return out


AHEAD_FROM = 64  # rows a batch creates before their texts are embedded ahead


@functools.cache
def _worker() -> ThreadPoolExecutor:
    """The one thread that embeds ahead (made at first use; a forked child makes its own)."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="retain-embed-ahead")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_worker.cache_clear)


class Rekey:
    """The memories a write touched, whose search keys are made again before it commits.

    A memory's key holds its thread neighbours' words, so touching one memory
    re-keys the neighbours around it too; a memory leaving its place (deleted,
    or moved to another thread) re-keys the neighbours it leaves. ``ahead``: the
    batch's own texts being embedded already, if any.
    """

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.ahead: Ahead | None = None

    def touch(self, memory_id: str) -> None:
        self.ids.add(memory_id)

    def leave(self, tx: Reads, memory_id: str) -> None:
        """Call before ``memory_id`` is deleted or leaves its thread."""
        for source in tx.key_sources([memory_id]):
            if source.thread:
                before, after = tx.thread_neighbours(source, RADIUS)
                self.ids.update(n.memory_id for n in (*before, *after))

    def apply(
        self,
        tx: Transaction,
        embedder: Embedder | None,
        zone: tzinfo | None,
        *,
        everything: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Re-key what was touched (and the neighbours whose context changed); returns how many.

        ``everything`` also re-keys the neighbours whose context is unchanged (a reindex).
        """
        if self.ahead is not None:
            self.ahead.settle()
        touched = {s.num: s for s in tx.key_sources(sorted(self.ids))}
        hoods: dict[int, list[KeySource]] = {}
        affected = dict(touched)
        for source in touched.values():
            hoods[source.num] = _neighbours(tx, source, affected)
        for num, source in list(affected.items()):
            if num not in hoods:
                hoods[num] = _neighbours(tx, source, None)
        made = {num: context(source, hoods[num], zone) for num, source in affected.items()}
        chosen = [
            (source, made[num])
            for num, source in sorted(affected.items())
            if num in touched or everything or made[num].words != source.context
        ]
        for start in range(0, len(chosen), BATCH):
            part = chosen[start : start + BATCH]
            tx.set_keys(build(embedder, [s for s, _ in part], [c for _, c in part], self.ahead))
            if progress is not None:
                progress(start + len(part), len(chosen))
        return len(chosen)


def _neighbours(
    tx: Reads, source: KeySource, collect: dict[int, KeySource] | None
) -> list[KeySource]:
    """``source``'s thread neighbours in thread order; adds them to ``collect``."""
    if not source.thread:
        return []
    before, after = tx.thread_neighbours(source, RADIUS)
    if collect is not None:
        for n in (*before, *after):
            collect.setdefault(n.num, n)
    return [*reversed(before), *after]


def build(
    embedder: Embedder | None,
    sources: Sequence[KeySource],
    contexts: Sequence[Context],
    ahead: Ahead | None = None,
) -> list[SearchKey]:
    """The search keys of ``sources``, each with its ``Context``; own texts embedded
    ``ahead`` are taken from there."""
    if not sources:
        return []
    # None: the row holds these words already (an UPDATE would only cost the lookup)
    changed = [
        c.words if c.words != s.context else None for s, c in zip(sources, contexts, strict=True)
    ]
    if embedder is None:
        return [SearchKey(s.num, w, None) for s, w in zip(sources, changed, strict=True)]
    texts = [own_text(s) for s in sources]
    joined = [c.around for c in contexts]
    arounds = [i for i, around in enumerate(joined) if around]
    around_texts = [joined[i] for i in arounds]
    vectors: Sequence[Vector]
    # the static model's module, here: a process that makes no vector (``retain get``) never
    # loads it, and one that made a static embedder has it loaded already
    from retain.search.static_model import StaticEmbedder

    if isinstance(embedder, StaticEmbedder) and few([*texts, *around_texts]):
        vectors = _build_few(embedder, texts, arounds, around_texts)
    else:
        own = embed(embedder, texts) if ahead is None else ahead.take(embedder, texts)
        if arounds:
            extra = embed(embedder, around_texts, [contexts[i].neighbours for i in arounds])
            own[arounds] += NEIGHBOUR_WEIGHT * extra
            own = normalised(own)
        vectors = list(own)
    return [
        SearchKey(s.num, w, StoredVector(0, s.num, embedder.model_id, embedder.dim, vectors[i]))
        for i, (s, w) in enumerate(zip(sources, changed, strict=True))
    ]


# What a write or a search embeds without numpy, if numpy is not loaded already:
# importing it costs about 75 ms (and starts its threads); SimSIMD's elementwise sums
# cost about 3–6 µs a word piece (``StaticModel.embed_few``), so up to some 10,000
# pieces (four characters or so each) they are the cheaper.
FEW_TEXTS = 64  # (the relevance gate's 40 sentences among them)
FEW_CHARS = 40_000


def few(texts: Sequence[str]) -> bool:
    """Whether ``texts`` are embedded without numpy (see ``FEW_CHARS``)."""
    return (
        len(texts) <= FEW_TEXTS and sum(map(len, texts)) <= FEW_CHARS and "numpy" not in sys.modules
    )


def _build_few(
    embedder: StaticEmbedder, texts: list[str], arounds: list[int], around_texts: list[str]
) -> Sequence[Vector]:
    """``build``'s vectors without numpy: the same float32 values as with it."""
    from retain.search.static_model import mixed, unit

    own = _embedded_few(embedder, texts)
    if arounds:
        for i, extra in zip(arounds, _embedded_few(embedder, around_texts), strict=True):
            own[i] = mixed(own[i], extra, NEIGHBOUR_WEIGHT)
        own = [unit(row) for row in own]
    return own


def _embedded_few(embedder: StaticEmbedder, texts: Sequence[str]) -> list[array[float]]:
    """``embed_few``'s unit rows; a failure of the model's own is ``EmbedderFailed``, as
    ``embed`` reports it."""
    try:
        return embedder.embed_few(texts)
    except RetainError:
        raise
    except Exception as exc:
        raise EmbedderFailed(
            f"embedder {embedder.model_id} failed: {type(exc).__name__}: {exc}",
            remedy="check the embedder, or set embedder = 'static' in [search]",
            model=embedder.model_id,
        ) from exc


def queries(embedder: Embedder, texts: Sequence[str]) -> list[Vector]:
    """A search's query vectors (unit rows, float32): a few texts of the static model
    without numpy where it is not loaded (``few``: a command's search loads none), else
    ``embed``'s rows."""
    from retain.search.static_model import StaticEmbedder

    if isinstance(embedder, StaticEmbedder) and few(texts):
        return list(_embedded_few(embedder, texts))
    return list(embed(embedder, texts))


def embed(
    embedder: Embedder, texts: Sequence[str], joined: Sequence[Sequence[str]] | None = None
) -> Matrix:
    """``texts`` embedded, checked for shape and dimension; any failure of the embedder's
    own is ``EmbedderFailed`` (a write that needed it changes nothing). ``joined``: each
    text's parts (``text == " ".join(parts)``), for an embedder that cuts each part once
    (``embed_joined``: the static model)."""
    if not texts:
        import numpy as np

        return np.zeros((0, embedder.dim), dtype=np.float32)
    by_parts = getattr(embedder, "embed_joined", None) if joined is not None else None
    try:
        matrix = embedder.embed(texts) if by_parts is None else by_parts(joined)
    except RetainError:
        raise
    except Exception as exc:  # a model's runtime error (out of memory, say)
        raise EmbedderFailed(
            f"embedder {embedder.model_id} failed: {type(exc).__name__}: {exc}",
            remedy="check the embedder, or set embedder = 'static' in [search]",
            model=embedder.model_id,
        ) from exc
    return check_shape(embedder, matrix, len(texts))
