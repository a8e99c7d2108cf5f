"""The store: what every caller of one backend shares, whoever it acts as.

One ``Store`` per opened backend holds the backend, the settings, the clock, the
embedder, the id factory, the relevance gate's sentences embedded, and the counts the
memory section caches (the vectors a search reads are the backend's: one set per
store, however many principals search it). A principal is not a
reason to build another: a session (``MemoryService``) is the store and an actor, and
``acting_as`` makes another session over the same store.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from retain.config import Settings
from retain.ids import IdFactory
from retain.mirrors import Mirror as MirrorType
from retain.search.embed import LoadedEmbedder, load_embedder
from retain.storage.base import Backend, Progress

if TYPE_CHECKING:
    from retain.chrono import Clock
    from retain.mirrors import Configured, Mirror
    from retain.search.embed import Embedder
    from retain.search.rerank import Reranker
    from retain.signing import Signer


class Store:
    """A backend and everything its callers share (see the module docstring)."""

    def __init__(
        self,
        backend: Backend,
        *,
        settings: Settings | None = None,
        clock: Clock | None = None,
        embedder: LoadedEmbedder | None = None,
    ) -> None:
        from retain.chrono import SystemClock

        self.backend = backend
        self.settings = settings or Settings()
        self.clock = clock or SystemClock()
        self.ids = IdFactory()
        self._embedder = embedder
        self._background: tuple[str, bytes] | None = None
        self._lock = threading.RLock()  # building a mirror may load the embedder
        # the memory section's counts, by realm and scopes (the service's to read)
        self.tallies: dict[tuple[str, tuple[str, ...] | None, tuple[str, ...]], Any] = {}
        self._signer: Signer | None = None
        self._signer_read = False
        self._mirrors: list[Configured] | None = None  # made from the settings at first use

    @property
    def mirrors(self) -> list[Configured]:
        """The write-through mirrors and the scopes each takes: config.toml's
        ``[[mirrors]]``, built at first use, and those ``add_mirror`` added."""
        if self._mirrors is None:
            from retain.mirrors import built

            with self._lock:
                if self._mirrors is None:
                    self._mirrors = [built(spec, self) for spec in self.settings.mirrors]
        return self._mirrors

    def add_mirror(self, mirror: Mirror, *, scopes: Sequence[str] = ("*",)) -> None:
        """Mirror every applied write of ``scopes`` (scope patterns) to ``mirror`` from now
        on, for every session over this store; a name already taken is refused."""
        from retain.mirrors import Configured, scope_patterns

        patterns = scope_patterns(scopes, f"mirror {getattr(mirror, 'name', '')!r}")
        if not isinstance(mirror, MirrorType):
            from retain.errors import InvalidValue

            raise InvalidValue(
                f"{mirror!r} is no mirror: it needs a name, put and remove",
                remedy="give an object with name, put(memory) and remove(external_id, memory)",
                field="mirror",
            )
        taken = {c.mirror.name for c in self.mirrors}
        if mirror.name in taken:
            from retain.errors import InvalidValue

            raise InvalidValue(
                f"a mirror is named {mirror.name!r} already",
                remedy="give each mirror a name of its own",
                field="mirror",
            )
        self.mirrors.append(Configured(mirror, patterns))

    @property
    def signer(self) -> Signer | None:
        """The signing key (``$RETAIN_SIGNING_KEY`` or ``[signing] key_file``), read at
        first use; None when none is configured (then ``cryptography`` is never loaded)."""
        if not self._signer_read:
            from retain import signing

            with self._lock:
                if not self._signer_read:
                    self._signer = signing.load(self.settings.signing_key_file)
                    self._signer_read = True
        return self._signer

    @property
    def embedder(self) -> LoadedEmbedder:
        """The embedder in use: the one given, else the settings' (loaded at first use, so
        that a command that makes no vector loads no model)."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = load_embedder(self.settings.embedder)
        return self._embedder

    @property
    def reranker(self) -> Reranker | None:
        """The ``[search] reranker``, loaded at the first search that needs it (None: unset)."""
        path = self.settings.reranker
        if not path:
            return None
        from retain.search.rerank import load_reranker

        return load_reranker(path)

    def index_vectors(self, progress: Progress | None = None) -> int:
        """Bring the backend's own vector index up to date (see ``Backend.index_vectors``):
        after a bulk write or a reindex, so that no search pays for it."""
        embedder = self.embedder.embedder
        if embedder is None:
            return 0
        return self.backend.index_vectors(
            embedder.model_id, embedder.dim, self.settings.ann_from, progress
        )

    def background(self, embedder: Embedder) -> bytes:
        """The relevance gate's reference sentences (``rank.BACKGROUND``), embedded once
        per model: their float32 unit rows, joined."""
        from retain.search import key, plain, rank

        made = self._background
        if made is None or made[0] != embedder.model_id:
            rows = plain.packed(key.queries(embedder, rank.BACKGROUND))
            made = self._background = (embedder.model_id, rows)
        return made[1]

    def close(self) -> None:
        self.backend.close()
