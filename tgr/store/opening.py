"""Opening a store file: checked before anything in it is read (tgr/store/hardening.py,
tgr/store/schema_check.py), then created or brought up to date (tgr/store/migrations.py)."""
from __future__ import annotations

import os
from pathlib import Path

from . import size_limits as limits, schema_check as schemacheck
from .db import (FORMAT_TAG, MEMORY, SCHEMA_VERSION, Connection, closed_on_failure, create_fresh, get_meta,
                 open_file, raw_connection, transaction)
from ..errors import StoreError
from .migrations import migrate


def connect(path: str | os.PathLike, *, create: bool = True, readonly: bool = False,
            upgrade: bool = True) -> Connection:
    """Open (or create) a tgr store; a writable one is brought up to date unless not upgrade
    (then call migrate() before the first write).

    Every store is opened defensively (tgr/store/hardening.py) and its schema compared with
    tgr's before anything in it is read (tgr/store/schema_check.py). A read-only open never
    migrates and runs with query_only. Raises StoreError for a missing file (unless
    create), a file that is not SQLite, an SQLite file that is not a tgr store, a store
    whose schema holds objects tgr did not create, or a store written by a newer tgr.
    """
    path = Path(path)
    if str(path) == MEMORY:
        conn = raw_connection()
        with transaction(conn):
            create_fresh(conn)
        return conn
    exists = path.exists() and path.stat().st_size > 0
    if not exists and not create:
        raise StoreError(missing_store(path))
    if exists and not os.access(path, os.W_OK):
        readonly = True
    conn = open_file(path, readonly=readonly)
    with closed_on_failure(conn, path):
        _check_is_tgr(conn, path, readonly)
        if not readonly and (upgrade or not exists):
            _ensure_schema(conn, fresh=not exists)
    return conn


def missing_store(path: Path) -> str:
    """The one line for a store path that holds no store: no file, or an empty one."""
    if path.is_file():
        return f"{path}: an empty file (0 bytes), not a tgr store; `tgr index {path} DOCS...` builds one in it"
    return f"{path}: no such tgr store (build one with `tgr index {path} DOCS...`)"


def _check_is_tgr(conn: Connection, path: Path, readonly: bool) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    objects = dict(conn.execute("SELECT name, type FROM sqlite_master"))
    if not objects:
        if readonly:
            raise StoreError(f"{path}: an empty SQLite database, not a tgr store")
        return  # a new, empty database becomes a tgr store
    tag = None
    if objects.get("meta") == "table":
        refused = schemacheck.fatal(conn)  # before any of the store's own objects is read
        if refused is not None:
            raise StoreError(f"{path}: refused, {refused.message}; see `tgr check {path}`")
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        tag = row[0] if row else None
    if tag != FORMAT_TAG:
        raise StoreError(f"{path}: an SQLite database, but not a tgr store (no tgr meta table)")
    unsafe = limits.meta_problems(get_meta(conn))
    if unsafe:
        raise StoreError(f"{path}: refused, {unsafe[0]}; see `tgr check {path}`")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: written by a newer tgr (schema {version}, this tgr reads up to "
            f"{SCHEMA_VERSION}); upgrade tgr"
        )


def _ensure_schema(conn: Connection, fresh: bool) -> None:
    if fresh:
        with transaction(conn):
            create_fresh(conn)
        return
    migrate(conn)
