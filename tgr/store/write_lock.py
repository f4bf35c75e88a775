"""One writer per store: an advisory lock on the store file, held while a run writes.

Two `tgr index` runs on one file would otherwise both pay for every model call. The second
waits for the first and then finds every answer in the cache. flock() locks are separate
from the POSIX locks SQLite uses on the same file, but closing any descriptor of the file
drops the process's POSIX locks: close() this only after the SQLite connection is closed.
"""
from __future__ import annotations

import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: SQLite's own locking is all there is
    fcntl = None


class WriterLock:
    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self.held = False

    def try_acquire(self) -> bool:
        """Take the lock if it is free; False if another process holds it."""
        if self.held or fcntl is None:
            return True
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        self.held = True
        return True

    def wait(self) -> None:
        """Block until the lock is ours (Ctrl-C interrupts the wait)."""
        if self.held or fcntl is None:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.held = True

    def release(self) -> None:
        if self.held and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.held = False

    def close(self) -> None:
        """Release and close; call after the store's SQLite connection is closed."""
        self.release()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
