"""Store administration: the connection, the writer lock, migration on first write, meta,
the prompts and settings in force, and the models the store is used with.

One StoreAdmin serves any number of threads: the thread that opened it uses the connection it
opened, every other thread one of its own for the length of a call (tgr/store/thread_connections.py;
KnowledgeBase takes the leases), and writers take turns (writing())."""
from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

from .store.db import Connection, get_meta, set_meta, transaction
from .errors import StoreError
from .store.migrations import migrate
from .models.selection import ModelChoice
from .prompts import Prompts, check_templates
from .settings import IndexSettings, given_prompts
from .store.opening import connect, missing_store
from .store.thread_connections import ThreadConnections
from .store.write_lock import WriterLock


class StoreAdmin:
    """One open store file. Opening never migrates or writes an existing store; writable() does."""

    def __init__(self, path: str | os.PathLike, *, create: bool | None, readonly: bool, prompts, **model_options):
        """create: True makes the file now; None (the Python API's default) makes it on the first
        index (create_if_missing), so that asking a misspelt path creates nothing; False never."""
        self.path = Path(path)
        self.home = threading.get_ident()  # the thread that opened the store uses self._conn
        self._conn: Connection | None = None
        if create is not None or readonly or _is_store_file(self.path):
            self._conn = connect(self.path, create=bool(create) and not readonly, readonly=readonly,
                                 upgrade=False)
        self._upgraded = False
        self._lock = WriterLock(self.path) if str(path) != ":memory:" else None
        self._writers = threading.RLock()  # this process's writers take turns
        self.readonly = readonly or (str(path) != ":memory:" and self.path.exists()
                                     and not os.access(self.path, os.W_OK))
        self.threads = ThreadConnections(self.path, self._open_for_thread)
        self._prompt_templates, self._prompt_types = given_prompts(prompts)
        self.models = ModelChoice(self, **model_options)
        self.threads.on_close = self.models.forget

    @property
    def conn(self) -> Connection:
        """The calling thread's connection (see the module)."""
        if threading.get_ident() != self.home:
            return self.threads.conn()
        if self._conn is None:
            if self.path.exists() and self.path.stat().st_size > 0:  # made since, by another thread
                self._conn = connect(self.path, create=False, readonly=self.readonly, upgrade=False)
            else:
                raise StoreError(missing_store(self.path))
        return self._conn

    @conn.setter
    def conn(self, value: Connection) -> None:
        if threading.get_ident() != self.home:
            self.threads.replace(value)
        else:
            self._conn = value

    @property
    def on_home_thread(self) -> bool:
        return threading.get_ident() == self.home

    def _open_for_thread(self, writable: bool) -> Connection:
        """A connection for another thread than the opening one: read-only unless it writes."""
        if str(self.path) == ":memory:":
            raise StoreError("an in-memory store serves the thread that opened it only")
        if not self.path.exists() or self.path.stat().st_size == 0:
            raise StoreError(missing_store(self.path))
        return connect(self.path, create=False, readonly=not writable or self.readonly, upgrade=False)

    @contextlib.contextmanager
    def reading(self):
        """The calling thread holds a connection for the block (nothing to do on the opening thread)."""
        if threading.get_ident() == self.home:
            yield
            return
        with self.threads.lease():
            yield

    @contextlib.contextmanager
    def writing(self):
        """A write (index, rebuild, delete) runs in the block: after this process's other writers,
        on a writable connection of the calling thread's."""
        with self._writers:
            if threading.get_ident() == self.home:
                yield
                return
            with self.threads.lease(writable=True):
                yield

    def settle(self) -> bool:
        """Fold the WAL back in (tgr.store.db.settle) with no other thread of this process keeping
        it open: idle connections are closed and no lease starts until it is done."""
        from .store.db import settle

        with self.threads.paused() as close_idle:
            return settle(self.conn, close_idle)

    @contextlib.contextmanager
    def in_memory_if_missing(self):
        """While the block runs, an empty in-memory store stands in for one not made yet
        (an estimate of a first index writes nothing)."""
        home = threading.get_ident() == self.home
        if (self._conn is not None and home) or _is_store_file(self.path):
            with self.reading():
                yield
            return
        memory = connect(":memory:")
        try:
            if home:
                self._conn = memory
                yield
            else:
                with self.threads.using(memory):
                    yield
        finally:
            if home:
                self._conn = None
            memory.close()

    def create_if_missing(self) -> None:
        """Make the store file now if opening it did not (the first index of a new store)."""
        if threading.get_ident() != self.home:
            if not self.path.exists() or self.path.stat().st_size == 0:
                with self._writers:
                    connect(self.path, create=True, upgrade=False).close()
            return
        if self._conn is None:
            self._conn = connect(self.path, create=True, upgrade=False)

    def close(self) -> None:
        self.models.release(closing=True)
        self.threads.close()
        if self._conn is not None:
            self._conn.close()
        if self._lock:
            self._lock.close()  # after the connection: see tgr/store/write_lock.py

    def release_lock(self) -> None:
        if self._lock:
            self._lock.release()

    @property
    def meta(self) -> dict:
        return get_meta(self.conn)

    @property
    def prompts(self) -> Prompts:
        """The prompts in force: tgr's defaults, then those the store records, then those given."""
        recorded = self.meta.get("prompts")
        try:
            stored = check_templates(json.loads(recorded)) if recorded else {}
        except (ValueError, TypeError, AttributeError) as exc:  # a .db made elsewhere is untrusted
            raise StoreError(f"{self.path}: the prompts recorded in this store are not usable: {exc}") from None
        return Prompts().with_overrides({**stored, **self._prompt_templates})

    def record_prompts(self) -> None:
        """Keep the templates in force in meta (those that differ from the defaults)."""
        with transaction(self.conn):
            set_meta(self.conn, prompts=json.dumps(self.prompts.overrides(), sort_keys=True, ensure_ascii=False))

    def writable(self, command: str, warn=None) -> None:
        """Called before writing: refuse a read-only store, take the writer lock (waiting for
        another process's run to finish), run pending migrations."""
        if self.readonly:
            raise StoreError(f"{self.path}: read-only file, cannot {command}")
        if self._lock and not self._lock.try_acquire():
            (warn or (lambda m: None))(f"another tgr process is writing to {self.path}; waiting for it "
                                       "to finish (its model answers will be reused, not paid again)")
            # an open connection would keep the other run from folding its WAL back in
            self.models.release()
            self.conn.close()
            self._lock.wait()
            self.conn = connect(self.path, create=False, upgrade=False)
            self._upgraded = False
        if not self._upgraded:
            migrate(self.conn)
            self._upgraded = True

    def has_rows(self, table: str) -> bool:
        """Whether one of documents, chunks, extractions, communities holds a row."""
        assert table in ("documents", "chunks", "extractions", "communities")
        return self.conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None

    def settings(self, **overrides) -> IndexSettings:
        """The store's settings (from meta), with overrides applied and checked."""
        settings = IndexSettings.from_meta(self.meta)
        if overrides.get("entity_types") is None and self._prompt_types:  # given with the prompts
            overrides = {**overrides, "entity_types": self._prompt_types}
        has_chunks = self.has_rows("chunks")
        for name, value in overrides.items():
            if value is None:
                continue
            if name not in IndexSettings.__dataclass_fields__:
                raise TypeError(f"unknown index setting {name!r}")
            if has_chunks and name in ("chunk_size", "chunk_overlap") and getattr(settings, name) != value:
                raise StoreError(f"{self.path}: chunked with {name.replace('_', ' ')} "
                                 f"{getattr(settings, name)}; use a new store for {value}")
            setattr(settings, name, value)
        return settings


def _is_store_file(path: Path) -> bool:
    """An existing, non-empty file (or the in-memory store): opened as it is, never created."""
    return str(path) == ":memory:" or (path.exists() and path.stat().st_size > 0)
