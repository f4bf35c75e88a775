"""A store file a command creates is removed again when the command fails before storing a
document (`tgr index new.db nosuchdir/` leaves nothing behind). Once a document is stored the
file is kept: running the same command again resumes from it. A file that existed before the
command, or that another process is writing to, is never removed.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..store.db import MEMORY, DatabaseError
from ..store.opening import connect
from ..errors import TgrError
from ..store.write_lock import WriterLock

SIDE_FILES = ("-wal", "-shm", "-journal")


class RemovedIfUnused:
    """Context manager around a command that may create the store at path."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.files = [Path(f"{self.path}{suffix}") for suffix in ("", *SIDE_FILES)]
        self.new = str(path) != MEMORY and not self.path.exists()
        self.absent = [f for f in self.files if not f.exists()] if self.new else []
        self.removed = False  # set when a failed command's new file was removed again

    def __enter__(self) -> "RemovedIfUnused":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self.new and self.path.exists() and not _in_use(self.path):
            for f in self.absent:  # only what this command made
                f.unlink(missing_ok=True)
            self.removed = True


def _in_use(path: Path) -> bool:
    """The store holds a document, or another process is writing to it."""
    from ..ingest.corpus import has_documents  # here: tgr.ingest.corpus loads the ingest modules a question never needs

    lock = WriterLock(path)
    try:
        if not lock.try_acquire():
            return True
        try:
            conn = connect(path, create=False, readonly=True, upgrade=False)
        except (TgrError, DatabaseError):  # not even a store yet
            return False
        try:
            return has_documents(conn)
        except DatabaseError:
            return False
        finally:
            conn.close()
    finally:
        lock.close()
