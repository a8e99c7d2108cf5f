"""The turns a SQLite store's writers take: one at a time across every process, each
woken by the kernel when the one before lets go, rather than polling for SQLite's lock.

SQLite lets one writer in at a time and keeps the others in its busy handler, which
sleeps and tries again, 1, 2, 5, 10 and up to 100 ms apart. With four writer processes
on two cores a writer that kept missing the lock waited more than 100 ms once in a
hundred writes, and up to a second (``bench/writers.py --modes single``). So before
``BEGIN IMMEDIATE`` a writer takes an exclusive ``flock`` on ``<store>.lock``, an empty
file beside the store: one that finds it held blocks in the kernel and is woken as soon
as it is let go. SQLite's lock still decides who may write; the queue only orders the
writers that use it (the sqlite3 shell, or a retain from before this, writes without
it and is met by the busy handler as before).

A blocked ``flock`` cannot be given a timeout, so a writer that finds the lock held
waits for it on a file of its own in a helper thread, for at most ``WAIT_S`` (about
what the busy handler's retries allowed); then ``store_busy``, and the helper lets go
of the lock as soon as it gets it. A thread's file is opened again in a forked child:
a lock belongs to the open file, which a child would otherwise share with its parent.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from retain.errors import StoreBusy

WAIT_S = 80.0  # a writer's wait for its turn before store_busy


def stayed_locked(location: str) -> StoreBusy:
    """What a writer that waited its turn, or SQLite's lock, as long as it may is told."""
    return StoreBusy(
        f"{location} stayed locked by another writer",
        remedy="retry once the other process has finished writing",
    )


class _LockFile:
    """An open descriptor of the lock file, closed when let go (a thread's may outlive
    the ``close`` of its store; a forked child's copy of its parent's is closed in the
    child alone)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __del__(self) -> None:
        self.close()


class WriterQueue:
    """The writers' turns of one store file (``turn``), a file of its own per thread."""

    def __init__(self, db: Path, location: str) -> None:
        self.path = Path(str(db) + ".lock")
        self.location = location
        self._local = threading.local()

    def _opened(self) -> _LockFile | None:
        """The lock file, opened anew (None where it cannot be: a store that cannot be
        written, where SQLite itself refuses the write)."""
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError:
            return None
        return _LockFile(fd)

    def _file(self) -> _LockFile | None:
        """This thread's lock file, in this process."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.file, local.pid, local.holding = self._opened(), os.getpid(), False
        file: _LockFile | None = local.file
        return file

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the writers' lock for the block: at once when it is free, else after the
        writers before (``store_busy`` past ``WAIT_S``). A block inside another of the same
        thread holds it already."""
        file = self._file()
        if file is None or self._local.holding:
            yield
            return
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held: _LockFile | None = file
        except BlockingIOError:
            held = self._waited()
        if held is None:  # no turn to be had: SQLite's busy handler orders this one
            yield
            return
        self._local.holding = True
        try:
            yield
        finally:
            self._local.holding = False
            fcntl.flock(held, fcntl.LOCK_UN)
            if held is not file:
                held.close()

    def _waited(self) -> _LockFile | None:
        """A file of its own holding the lock once the writers before have let go, waited
        for on a helper thread; None when no thread can be started or the lock taken."""
        file = self._opened()
        if file is None:
            return None
        given = threading.Event()
        settle = threading.Lock()
        gave_up = False
        failed = False

        def wait() -> None:
            nonlocal failed
            try:
                fcntl.flock(file, fcntl.LOCK_EX)
            except OSError:
                failed = True
            with settle:
                if gave_up or failed:  # (closing the file lets go of the lock)
                    file.close()
                if not gave_up:
                    given.set()

        try:
            threading.Thread(target=wait, name="retain-writer-turn", daemon=True).start()
        except RuntimeError:
            file.close()
            return None
        if not given.wait(WAIT_S):
            with settle:
                if not given.is_set():
                    gave_up = True
                    raise stayed_locked(self.location)
        return None if failed else file

    def close(self) -> None:
        """Close this thread's lock file (another thread's is closed once the state it
        is kept in is let go)."""
        local = self._local
        file = getattr(local, "file", None)
        if file is not None and getattr(local, "pid", None) == os.getpid():
            file.close()
        self._local = threading.local()
