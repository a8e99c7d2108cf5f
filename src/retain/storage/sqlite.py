"""The embedded backend: one SQLite file in WAL mode.

Writes take turns across processes (``sqlite_queue``: a ``flock`` beside the file,
so a waiting writer is woken when the one before it lets go), run in ``BEGIN
IMMEDIATE`` transactions, and are retried when another process holds the write
lock; anything raised inside a transaction rolls it back whole, and a ``sqlite3``
error comes out as a ``StoreError``. Connections are per thread and re-opened after
a fork; one spare connection more runs a read beside the caller's (``read_beside``:
a search's semantic sense beside its word senses). Opening a store migrates its
schema (``sqlite_schema``).

What a transaction can do is ``SqliteTransaction`` in ``sqlite_transaction``,
re-exported here. Full-text search uses an FTS5 external-content table kept in
step by triggers; ``sqlite_fts`` plans and runs the word searches over it. A store
past ``[search] ann_from`` vectors keeps int8 codes of its vectors beside the file
(``sqlite_ann``), derived like the full-text index.
"""

from __future__ import annotations

import contextvars
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from retain.errors import SchemaTooNew, StoreBusy, StoreError
from retain.storage.base import Compaction, Progress, migrations_ahead
from retain.storage.sqlite_queue import WriterQueue, stayed_locked
from retain.storage.sqlite_schema import MIGRATIONS, latest_version
from retain.storage.sqlite_transaction import SqliteTransaction

if TYPE_CHECKING:
    from retain.storage.sqlite_ann import Indexes

__all__ = ["SqliteBackend", "SqliteTransaction"]

T = TypeVar("T")

_RETRIES = 40
# Page cache per connection. The operating system caches the file too, so a larger one
# bought nothing measurable (batched writes up to 200,000 rows, searches at 100,000 and
# a million) but its size in every searching process: 64 MiB held 62 MiB more at 100k.
_CACHE_KIB = 4 * 1024
_BUSY_TIMEOUT_MS = 2000


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _settled(con: sqlite3.Connection) -> bool:
    """Whether ``con`` is open and in no transaction: fit for the next read."""
    try:
        return not con.in_transaction
    except sqlite3.Error:  # closed
        return False


class _Pending(Generic[T]):
    """A read running beside the caller's, on a thread of its own (``read_beside``)."""

    def __init__(self) -> None:
        self.done = threading.Lock()
        self.done.acquire()  # let go of when the read has ended
        self.value: T | None = None
        self.error: BaseException | None = None

    def result(self) -> T:
        with self.done:  # (and let go again: a retried caller may ask twice)
            pass
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]  # (set when no error was)


class SqliteBackend:
    """A store in one SQLite file (created 0600 in a 0700 directory)."""

    reads_wait = False  # WAL: a reader never waits for a writer

    def __init__(self, path: str | os.PathLike[str], *, progress: Progress | None = None) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._local = threading.local()
        self._queue = WriterQueue(self.path, self.location)  # the writers' turns
        self._common: set[str] = set()  # FTS phrases known to be common (see sqlite_fts)
        self._indexes: Indexes | None = None  # the vector codes beside the file, once used
        self._progress = progress  # hears the upgrade, and the codes a search builds
        # The spare connection of ``read_beside``: None until first used; lent to one
        # read at a time; ``_spare_pid`` the process it was opened in, ``_spare_made``
        # counted up by ``close`` so that a connection lent before it is closed on return.
        self._spare: sqlite3.Connection | None = None
        self._spare_lent = False
        self._spare_pid = os.getpid()
        self._spare_made = 0
        self._spare_lock = threading.Lock()
        self._create_file()
        self._migrate(progress)

    def vector_indexes(self) -> Indexes:
        """The vector codes beside the file (``storage.sqlite_ann``), made at first use:
        numpy is loaded by the searches that need it. A search that has to build them (an
        earlier format's, or their files gone) reports to the ``progress`` the store was
        opened with."""
        if self._indexes is None:
            from retain.storage.sqlite_ann import Indexes

            self._indexes = Indexes(self.path, self._progress)
        return self._indexes

    # -- connections ------------------------------------------------------------

    def _create_file(self) -> None:
        directory = self.path.parent
        try:
            if not directory.exists():
                directory.mkdir(mode=0o700, parents=True)
            if not self.path.exists():
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
        except OSError as exc:
            raise StoreError(
                f"cannot create the store {self.location}: {exc.strerror or exc}",
                remedy="point the store's home at a directory you can write",
                fix="home",
                location=self.location,
            ) from exc
        with suppress(OSError):
            os.chmod(self.path, 0o600)

    def _connect(self) -> sqlite3.Connection:
        try:
            return self._configure(
                sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
            )
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.location} is not a retain store: {exc}",
                remedy="point the store's home or path at a retain store, or move the file away",
                fix="home",
                location=self.location,
            ) from exc

    @staticmethod
    def _configure(con: sqlite3.Connection) -> sqlite3.Connection:
        con.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = FULL")
        con.execute("PRAGMA foreign_keys = ON")
        # What a write frees (an updated row's old cell, a deleted page) is zeroed, so an
        # erased value leaves no bytes behind in the file (``forget``, ``compact``).
        con.execute("PRAGMA secure_delete = ON")
        con.execute("PRAGMA temp_store = MEMORY")
        con.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
        con.create_function("retain_fold", 1, str.casefold, deterministic=True)
        con.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.retain_tokenizer USING fts5("
            "x, tokenize='porter unicode61 remove_diacritics 2')"
        )
        con.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.retain_tokenizer_vocab "
            "USING fts5vocab(temp, retain_tokenizer, 'instance')"
        )
        return con

    @property
    def _con(self) -> sqlite3.Connection:
        pid = os.getpid()
        con: sqlite3.Connection | None = getattr(self._local, "con", None)
        if con is None or getattr(self._local, "pid", None) != pid:
            con = self._connect()
            self._local.con = con
            self._local.pid = pid
        return con

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None and getattr(self._local, "pid", None) == os.getpid():
            con.close()
        self._local = threading.local()
        self._queue.close()
        with self._spare_lock:
            spare, self._spare = self._spare, None
            self._spare_made += 1  # a connection lent now is closed when it comes back
            mine = self._spare_pid == os.getpid()
        if spare is not None and mine:
            spare.close()

    # -- transactions -------------------------------------------------------------

    def _run(
        self,
        begin: str,
        fn: Callable[[SqliteTransaction], T],
        con: sqlite3.Connection | None = None,
    ) -> T:
        con = con if con is not None else self._con
        delay = 0.001
        for attempt in range(_RETRIES):
            try:
                con.execute(begin)
            except sqlite3.OperationalError as exc:
                if _is_busy(exc) and attempt < _RETRIES - 1:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.1)
                    continue
                raise self._mapped(exc) from exc
            try:
                reading = begin == "BEGIN DEFERRED"
                result = fn(
                    SqliteTransaction(con, self._common, self.vector_indexes, reading=reading)
                )
                con.execute("COMMIT")
                return result
            except sqlite3.OperationalError as exc:
                self._rollback(con)
                if _is_busy(exc) and attempt < _RETRIES - 1:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.1)
                    continue
                raise self._mapped(exc) from exc
            except sqlite3.Error as exc:
                self._rollback(con)
                raise self._mapped(exc) from exc
            except BaseException:
                self._rollback(con)
                raise
        raise stayed_locked(self.location)

    @staticmethod
    def _rollback(con: sqlite3.Connection) -> None:
        """Roll back what is still open (SQLite may already have, e.g. on a full disk)."""
        if con.in_transaction:
            con.execute("ROLLBACK")

    def _mapped(self, exc: sqlite3.Error) -> StoreError:
        if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
            return StoreBusy(
                f"{self.location} is locked by another writer: {exc}",
                remedy="retry once the other process has finished writing",
            )
        return StoreError(f"{self.location}: {exc}", remedy="verify the store", fix="verify")

    def write(self, fn: Callable[[SqliteTransaction], T]) -> T:
        with self._queue.turn():  # (writers take turns before SQLite's lock: sqlite_queue)
            return self._run("BEGIN IMMEDIATE", fn)

    def read(self, fn: Callable[[SqliteTransaction], T]) -> T:
        return self._run("BEGIN DEFERRED", fn)

    def read_beside(self, fn: Callable[[SqliteTransaction], T]) -> _Pending[T] | None:
        """``fn`` in a read transaction of its own, started now on a new thread over the
        store's spare connection, so that it runs beside the caller's next read (a
        search's semantic sense, whose scans and statements let go of the interpreter,
        beside its word senses). None, and nothing started, when the spare connection
        is lent already: the caller then runs ``fn`` in its own read. Its snapshot can
        be a moment apart from the caller's, as PostgreSQL's is."""
        with self._spare_lock:
            if self._spare_pid != os.getpid():  # forked: the parent's is not this process's
                self._spare, self._spare_lent, self._spare_pid = None, False, os.getpid()
            if self._spare_lent:
                return None
            self._spare_lent = True
            spare, made = self._spare, self._spare_made
            self._spare = None
        pending: _Pending[T] = _Pending()
        context = contextvars.copy_context()  # the caller's (a verb's access grants)

        def run() -> None:
            con = spare
            try:
                try:
                    if con is None:
                        con = self._connect()  # (on this thread: beside the caller's work)
                    pending.value = context.run(self._run, "BEGIN DEFERRED", fn, con)
                except BaseException as exc:  # noqa: BLE001 - raised by ``result`` to the caller
                    pending.error = exc
                    if con is not None and not _settled(con):  # not rolled back: not lent again
                        with suppress(sqlite3.Error):
                            con.close()
                        con = None
                self._give_back(con, made)
            finally:
                pending.done.release()

        try:
            threading.Thread(target=run, name="retain-beside", daemon=True).start()
        except RuntimeError:  # no thread to be had: the caller reads it itself
            self._give_back(spare, made)
            return None
        except BaseException:
            self._give_back(spare, made)
            raise
        return pending

    def _give_back(self, con: sqlite3.Connection | None, made: int) -> None:
        """The spare connection back from a read beside (on the thread that read, in
        the process that lent it); closed when the store was closed since it was lent."""
        with self._spare_lock:
            self._spare_lent = False
            kept = made == self._spare_made
            if kept:
                self._spare = con
        if con is not None and not kept:
            with suppress(sqlite3.Error):
                con.close()

    # -- schema -----------------------------------------------------------------------

    def _migrate(self, progress: Progress | None) -> None:
        con = self._con
        try:
            con.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise self._mapped(exc) from exc
        current = self.schema_version()
        if current > latest_version():
            raise SchemaTooNew(
                f"{self.location} is at schema version {current}; this retain knows up to "
                f"{latest_version()}",
                remedy="upgrade retain to open this store",
                version=current,
            )
        for migration in migrations_ahead(MIGRATIONS, current, progress):

            def apply(tx: SqliteTransaction, m: Any = migration) -> None:
                # Another process may have applied it while we waited for the lock.
                done = tx.con.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (m.version,)
                ).fetchone()
                if done:
                    return
                m.apply(tx.con)
                tx.con.execute(
                    "INSERT INTO schema_migrations(version, name, applied_at) "
                    "VALUES (?, ?, datetime('now'))",
                    (m.version, m.name),
                )

            self.write(apply)

    def schema_version(self) -> int:
        row = self._con.execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal"):
            with suppress(OSError):
                total += os.path.getsize(str(self.path) + suffix)
        return total

    # -- compaction: what erasure leaves for the file to shed -----------------------

    def files(self) -> list[Path]:
        """The store's files: the database, while there is one its write-ahead log, and
        the vector codes beside it."""
        found = []
        for suffix in ("", "-wal", "-shm", "-journal"):
            candidate = Path(str(self.path) + suffix)
            if candidate.exists():
                found.append(candidate)
        return found + self.vector_indexes().files()

    def compact(self, *, full: bool = False, progress: Progress | None = None) -> Compaction:
        """Merge the full-text index into one segment (dropping what deleted rows left in
        it), build the vector codes again when they hold a deleted row's codes
        (reporting to ``progress``), rebuild the file when ``full``, and checkpoint the
        write-ahead log into the file and truncate it. ``complete`` is False when a
        reader kept the log from being emptied, or another process held the codes' lock
        for as long as a compaction waits for it (``sqlite_ann.LOCK_WAIT_S``)."""
        steps = ["full_text_optimized"]
        self.write(
            lambda tx: tx.con.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
        )
        done, looked = self.read(lambda tx: self.vector_indexes().compacted(tx, progress))
        steps.extend(done)
        con = self._con
        try:
            if full:
                con.execute("VACUUM")
                steps.append("vacuumed")
            busy = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error as exc:
            raise self._mapped(exc) from exc
        wal = Path(str(self.path) + "-wal")
        truncated = not busy and (not wal.exists() or wal.stat().st_size == 0)
        if truncated:
            steps.append("log_truncated")
            # A reader of a snapshot older than a delete may have written the deleted row's
            # codes meanwhile: building them afresh after a removal, or adding its tail to
            # the version built again. None is left once the log is truncated, so this
            # looks conclusively.
            looked = looked and not self.read(self.vector_indexes().hold_stale)
        complete = truncated and looked
        return Compaction(tuple(steps), complete)

    def residue(self, needles: Sequence[str]) -> dict[str, list[str]]:
        """Each of ``needles`` (UTF-8) still in the store's files, with the files holding
        it: read by a process of its own, which has no SQLite lock to lose by closing
        them (``storage/residue.py`` says why)."""
        import marshal
        import subprocess
        import sys

        from retain.storage import residue

        asked = marshal.dumps(([str(p) for p in self.files()], list(needles)))
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-S", residue.__file__],
                input=asked,
                capture_output=True,
                check=True,
            )
            found: dict[str, list[str]] = marshal.loads(done.stdout)
        except (OSError, ValueError, EOFError, TypeError, subprocess.CalledProcessError) as exc:
            said = getattr(exc, "stderr", None)
            detail = said.decode("utf-8", "replace").strip() if said else str(exc)
            raise StoreError(
                f"cannot search {self.location}'s files for erased text: {detail}",
                remedy="the erasure itself is recorded; verify the store",
                fix="verify",
            ) from exc
        return found

    # -- the derived index ---------------------------------------------------------

    def check_index(self) -> tuple[bool, int, list[str]]:
        def check(tx: SqliteTransaction) -> tuple[bool, int, list[str]]:
            con = tx.con
            problems: list[str] = []
            try:  # a write command to FTS5: it runs under the write lock, retried when busy
                con.execute(
                    "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)"
                )
            except sqlite3.DatabaseError as exc:
                if _is_busy(exc):
                    raise
                problems.append(f"full-text index is not sound: {exc}")
            documents = int(con.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0])
            memories = int(con.execute("SELECT count(*) FROM memories").fetchone()[0])
            if documents != memories:
                problems.append(
                    f"full-text index holds {documents} documents for {memories} memories"
                )
            stray = con.execute(
                "SELECT count(*) FROM memories_fts_docsize d "
                "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.num = d.id)"
            ).fetchone()[0]
            if stray:
                problems.append(f"full-text index holds {stray} documents of no memory")
            return (not problems, documents, problems)

        return self.write(check)

    def index_vectors(
        self, model: str, dim: int, at_least: int, progress: Progress | None = None
    ) -> int:
        def run(tx: SqliteTransaction) -> int:
            ann = self.vector_indexes().kept(tx, model, dim, at_least, progress, folded=True)
            return ann.meta.rows if ann is not None else 0

        return self.read(run)

    def rebuild_index(self) -> None:
        # first, so that a refusal (another process writing the codes: store_busy) has
        # changed nothing; the next search that needs them builds them
        self.vector_indexes().drop()

        def rebuild(tx: SqliteTransaction) -> None:
            tx.con.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            tx.con.execute("DELETE FROM memory_tags")
            tx.con.execute(
                "INSERT OR IGNORE INTO memory_tags(tag, memory_num) "
                "SELECT j.value, m.num FROM memories m, json_each(m.tags) j"
            )
            tx.con.execute("DELETE FROM memory_refs")
            tx.con.execute(
                "INSERT OR IGNORE INTO memory_refs(target, memory_num) "
                "SELECT j.value, m.num FROM memories m, json_each(m.refs) j"
            )

        self.write(rebuild)
