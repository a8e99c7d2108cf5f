"""retain: governed long-term memory for AI agents.

import retain
mem = retain.open()                 # the embedded store under $RETAIN_HOME
mem.write("tz", description="Alice is in UTC+8", tags=["people"])
mem.search("timezone")
"""

from __future__ import annotations

import importlib
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (10 ms or so)
if TYPE_CHECKING:  # the public names, loaded on first use (PEP 562: ``__getattr__``)
    from typing import Any

    from retain.assertions import (
        Assertion,
        ConflictSignal,
        GateAnswer,
        IndexResult,
        LedgerResult,
        StoreInfo,
    )
    from retain.chrono import Clock, ManualClock, SystemClock
    from retain.config import Settings
    from retain.conversation import Conversation, Turn
    from retain.errors import RetainError
    from retain.governance.retention import Hold, HoldEvent, HoldState, SweepResult
    from retain.grants import Grant
    from retain.model import (
        Agent,
        Approval,
        Fact,
        Injection,
        Load,
        Memory,
        Project,
        Proposal,
        Status,
        Team,
        TicketStatus,
        Trust,
    )
    from retain.read_results import ReadResult, SearchHit, SearchResult
    from retain.receipt import LogExport, Receipt
    from retain.results import (
        ContextResult,
        ExportResult,
        FactChange,
        IngestResult,
        MigrateResult,
        RetierResult,
        StoreStatus,
        VerifyReport,
    )
    from retain.service import MemoryService, Record
    from retain.storage.base import Backend, Progress
    from retain.write_results import DeleteResult, EditResult, WriteRequest, WriteResult

# Where each lazily loaded public name lives: ``import retain`` loads none of them, so a
# program (or the ``retain`` command) pays only for the parts it uses.
_LAZY = {
    **dict.fromkeys(("Clock", "ManualClock", "SystemClock"), "retain.chrono"),
    "Settings": "retain.config",
    **dict.fromkeys(("Conversation", "Turn"), "retain.conversation"),
    "RetainError": "retain.errors",
    "Grant": "retain.grants",
    **dict.fromkeys(("LogExport", "Receipt"), "retain.receipt"),
    **dict.fromkeys(
        ("Assertion", "ConflictSignal", "GateAnswer", "IndexResult", "LedgerResult", "StoreInfo"),
        "retain.assertions",
    ),
    **dict.fromkeys(
        ("Hold", "HoldEvent", "HoldState", "SweepResult"), "retain.governance.retention"
    ),
    **dict.fromkeys(
        (
            "Agent",
            "Approval",
            "Fact",
            "Injection",
            "Load",
            "Memory",
            "Project",
            "Proposal",
            "Status",
            "Team",
            "TicketStatus",
            "Trust",
        ),
        "retain.model",
    ),
    **dict.fromkeys(
        (
            "ContextResult",
            "ExportResult",
            "FactChange",
            "IngestResult",
            "MigrateResult",
            "RetierResult",
            "StoreStatus",
            "VerifyReport",
        ),
        "retain.results",
    ),
    **dict.fromkeys(("ReadResult", "SearchHit", "SearchResult"), "retain.read_results"),
    **dict.fromkeys(
        ("DeleteResult", "EditResult", "WriteRequest", "WriteResult"), "retain.write_results"
    ),
    **dict.fromkeys(("MemoryService", "Record"), "retain.service"),
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'retain' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0.dev0"


def open(  # noqa: A001 - the natural verb, as in sqlite3 and shelve
    location: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    clock: Clock | None = None,
    realm: str = "default",
    principal: str = "operator:local",
    session: str | None = None,
    progress: Progress | None = None,
) -> MemoryService:
    """Open a store: a ``postgres://`` URL (or ``$RETAIN_DATABASE_URL`` when no location is
    given), a SQLite file path, or the default file under ``$RETAIN_HOME``.

    Settings come from ``config.toml`` in the home directory. ``session`` is the key of
    the agent context the principal acts in (the host's, never the model's): an agent's
    writes are judged by that session's taint. ``progress`` hears the long work the store
    does on its own: an older store's schema upgrade (phase ``schema``), if one is
    pending, and, in a SQLite store, the vector index a search has to build (phase
    ``vector index``: an earlier format's, or its files gone).
    """
    from retain.config import LEGACY_DIR, load_settings, resolve_home
    from retain.errors import StoreError
    from retain.service import MemoryService
    from retain.storage.sqlite import SqliteBackend

    root = resolve_home(home)
    settings = load_settings(root)
    if location is None and os.environ.get(DATABASE_URL_ENV):
        location = os.environ[DATABASE_URL_ENV]
        if not location.startswith(POSTGRES_SCHEMES):
            raise StoreError(
                f"${DATABASE_URL_ENV} is not a postgres:// or postgresql:// URL",
                remedy=f"set ${DATABASE_URL_ENV} to the database's URL, or unset it to use "
                "the SQLite store of the home directory",
            )
    backend = open_backend(
        location,
        home=root,
        pool_size=settings.pool_size,
        ef_search=settings.ef_search,
        progress=progress,
    )
    if isinstance(backend, SqliteBackend):
        legacy_dir = backend.path.parent / LEGACY_DIR  # beside the store it belongs to
    else:
        legacy_dir = root / LEGACY_DIR
    return MemoryService(
        backend,
        settings=settings,
        clock=clock,
        realm=realm,
        principal=principal,
        session=session,
        legacy_dir=legacy_dir,
    )


DATABASE_URL_ENV = "RETAIN_DATABASE_URL"
POSTGRES_SCHEMES = ("postgres://", "postgresql://")
SQLITE_SCHEME = "sqlite://"  # sqlite:///abs/path.db, sqlite://relative/path.db


def open_backend(
    location: str | os.PathLike[str] | None,
    *,
    home: str | os.PathLike[str] | None = None,
    pool_size: int | None = None,
    ef_search: int | None = None,
    progress: Progress | None = None,
) -> Backend:
    """The backend of a location: a ``postgres://`` URL, a ``sqlite:///path`` URL, a
    SQLite file, or a directory meaning ``retain.db`` inside it (default: the home's).
    ``pool_size``: a PostgreSQL store's connections (default ``config.DEFAULT_POOL_SIZE``);
    ``ef_search``: the candidates its HNSW walks keep (default ``config.DEFAULT_EF_SEARCH``);
    ``progress``: hears an older store's schema upgrade, and the vector index a search
    of a SQLite store builds."""
    from pathlib import Path

    from retain.config import DEFAULT_EF_SEARCH, DEFAULT_POOL_SIZE, STORE_FILE, resolve_home
    from retain.storage.sqlite import SqliteBackend

    if isinstance(location, str) and location.startswith(POSTGRES_SCHEMES):
        return _postgres(
            location,
            DEFAULT_POOL_SIZE if pool_size is None else pool_size,
            DEFAULT_EF_SEARCH if ef_search is None else ef_search,
            progress,
        )
    if isinstance(location, str) and location.startswith(SQLITE_SCHEME):
        location = location[len(SQLITE_SCHEME) :]
    path = Path(location) if location is not None else resolve_home(home) / STORE_FILE
    if path.is_dir():
        path = path / STORE_FILE
    return SqliteBackend(path, progress=progress)


def _postgres(url: str, pool_size: int, ef_search: int, progress: Progress | None) -> Backend:
    from retain.errors import StoreError
    from retain.extras import needed

    try:
        with needed("postgres", "a PostgreSQL store"):  # psycopg is the [postgres] extra
            from retain.storage.postgres import PostgresBackend
    except ImportError as exc:  # installed, but it cannot load (no libpq, say)
        raise StoreError(
            f"a PostgreSQL store needs the PostgreSQL driver: {exc}",
            remedy="pip install 'retain[postgres]'",
        ) from exc
    return PostgresBackend(url, pool_size=pool_size, ef_search=ef_search, progress=progress)


__all__ = [
    "Agent",
    "Approval",
    "Assertion",
    "Clock",
    "ConflictSignal",
    "ContextResult",
    "Conversation",
    "DeleteResult",
    "EditResult",
    "ExportResult",
    "Fact",
    "FactChange",
    "GateAnswer",
    "Grant",
    "Hold",
    "HoldEvent",
    "HoldState",
    "IndexResult",
    "IngestResult",
    "Injection",
    "LedgerResult",
    "Load",
    "LogExport",
    "ManualClock",
    "Memory",
    "MemoryService",
    "MigrateResult",
    "Project",
    "Proposal",
    "ReadResult",
    "Receipt",
    "Record",
    "RetainError",
    "RetierResult",
    "SearchHit",
    "SearchResult",
    "Settings",
    "Status",
    "StoreInfo",
    "StoreStatus",
    "SweepResult",
    "SystemClock",
    "Team",
    "TicketStatus",
    "Trust",
    "Turn",
    "VerifyReport",
    "WriteRequest",
    "WriteResult",
    "__version__",
    "open",
    "open_backend",
]
