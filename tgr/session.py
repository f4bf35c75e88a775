"""Store administration: the connection, the writer lock, migration on first write, meta,
the prompts and settings in force, and the models the store is used with."""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from .store.db import Connection, get_meta, set_meta, transaction
from .errors import StoreError
from .store.migrations import migrate
from .models.selection import ModelChoice
from .prompts import Prompts, check_templates
from .settings import IndexSettings, given_prompts
from .store.opening import connect, missing_store
from .store.write_lock import WriterLock


class StoreAdmin:
    """One open store file. Opening never migrates or writes an existing store; writable() does."""

    def __init__(self, path: str | os.PathLike, *, create: bool | None, readonly: bool, prompts, **model_options):
        """create: True makes the file now; None (the Python API's default) makes it on the first
        index (create_if_missing), so that asking a misspelt path creates nothing; False never."""
        self.path = Path(path)
        self._conn: Connection | None = None
        if create is not None or readonly or _is_store_file(self.path):
            self._conn = connect(self.path, create=bool(create) and not readonly, readonly=readonly,
                                 upgrade=False)
        self._upgraded = False
        self._lock = WriterLock(self.path) if str(path) != ":memory:" else None
        self.readonly = readonly or (str(path) != ":memory:" and self.path.exists()
                                     and not os.access(self.path, os.W_OK))
        self._prompt_templates, self._prompt_types = given_prompts(prompts)
        self.models = ModelChoice(self, **model_options)

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            raise StoreError(missing_store(self.path))
        return self._conn

    @conn.setter
    def conn(self, value: Connection) -> None:
        self._conn = value

    @contextlib.contextmanager
    def in_memory_if_missing(self):
        """While the block runs, an empty in-memory store stands in for one not made yet
        (an estimate of a first index writes nothing)."""
        if self._conn is not None:
            yield
            return
        self._conn = connect(":memory:")
        try:
            yield
        finally:
            self._conn.close()
            self._conn = None

    def create_if_missing(self) -> None:
        """Make the store file now if opening it did not (the first index of a new store)."""
        if self._conn is None:
            self._conn = connect(self.path, create=True, upgrade=False)

    def close(self) -> None:
        self.models.release()
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
