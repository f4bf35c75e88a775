"""The SQLite connection: driver, sqlite-vec, pragmas, schema.sql, transactions, meta.

Opening a store (checks, migrations) is tgr/store/opening.py, above this module.

tgr uses one driver everywhere: sqlean.py, a build of the stdlib sqlite3 module with a
recent bundled SQLite that can load extensions (many system Pythons cannot). Never mix
it with another bundled-SQLite driver in one process.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
import time
import struct
from pathlib import Path
from typing import Callable

import sqlean as sqlite3

from ..version import __version__
from . import hardening
from ..errors import StoreError

SCHEMA_VERSION = 8
MEMORY = ":memory:"  # a throw-away store, e.g. for `tgr index --estimate` of a new file
FORMAT_TAG = "tgr"
SETTLE_WAIT_S = 5.0  # how long settle() waits for other processes to close the store
VEC_TABLES = ("vec_entities", "vec_chunks", "vec_reports")
# vec0 preallocates storage in chunks of this many vectors; its default (1024) would make
# a small store several megabytes of zeros.
VEC_CHUNK_ROWS = 128

Connection = hardening.Connection
DatabaseError = sqlite3.DatabaseError


def schema_sql() -> str:
    """The text of schema.sql shipped inside the package."""
    # beside this file, not through importlib.resources: that import costs a cold `tgr ask` ~10 ms
    return Path(__file__).with_name("schema.sql").read_text(encoding="utf-8")


def open_file(path: Path, *, readonly: bool) -> Connection:
    """A defended connection to an existing file, before any check of what it holds."""
    # check_same_thread=False: tgr hands a connection to one thread at a time itself
    # (tgr/store/thread_connections.py), and a store may be closed from another thread
    if readonly:  # as_uri() percent-encodes '#', '?' and '%' in the path
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None,
                               factory=Connection, check_same_thread=False)
    else:
        conn = sqlite3.connect(str(path), isolation_level=None, factory=Connection, check_same_thread=False)
    with closed_on_failure(conn, path):
        hardening.harden(conn, str(path))
        _load_vec(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 5000")
        if readonly:
            conn.execute("PRAGMA query_only = ON")
    return conn


@contextlib.contextmanager
def closed_on_failure(conn: Connection, path: Path):
    """Close the connection on any failure; a database error becomes a one-line StoreError."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a usable SQLite database ({exc})") from None
    except BaseException:
        conn.close()
        raise


def raw_connection() -> Connection:
    """A scratch in-memory database with sqlite-vec and the same defences (tgr's own data)."""
    conn = sqlite3.connect(MEMORY, isolation_level=None, factory=Connection, check_same_thread=False)
    hardening.harden(conn, MEMORY, trusted=True)
    _load_vec(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def vec_extension_path() -> str:
    """The sqlite-vec loadable extension inside the sqlite_vec package. Found without importing
    the package, whose __init__ imports numpy (a tenth of a second on every command)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.origin:
        raise StoreError("sqlite-vec is not installed: pip install sqlite-vec")
    return os.path.join(os.path.dirname(spec.origin), "vec0")


def _load_vec(conn: Connection) -> None:
    conn.enable_load_extension(True)
    try:
        conn.load_extension(vec_extension_path())
    finally:
        conn.enable_load_extension(False)


def create_schema(conn: Connection) -> None:
    """Run schema.sql (inside the caller's transaction, if any)."""
    run_script(conn, schema_sql())


def create_fresh(conn: Connection) -> None:
    create_schema(conn)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    set_meta(conn, format=FORMAT_TAG, schema_version=SCHEMA_VERSION, tgr_version=__version__)


def run_script(conn: Connection, script: str) -> None:
    """Run a multi-statement script inside the current transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            if statement.strip():
                conn.execute(statement)
            statement = ""


def in_pages(cursor, size: int = 4096):
    """A cursor's rows, fetched size at a time: not all at once beside what the caller makes of
    them, and not one at a time either (each fetch is a watched call, tgr.store.hardening)."""
    return itertools.chain.from_iterable(iter(functools.partial(cursor.fetchmany, size), []))


class Rows:
    """The rows of a query, read again from the store a page at a time (in_pages) on each pass
    instead of held: what a build goes through twice (every extraction row of a store, in entity
    resolution and in the merge) would otherwise be in memory whole. count: the rows of the last
    complete pass."""

    def __init__(self, conn: Connection, sql: str, args: tuple = ()):
        self.conn, self.sql, self.args = conn, sql, args
        self.count = 0

    def __iter__(self):
        count = 0
        for count, row in enumerate(in_pages(self.conn.execute(self.sql, self.args)), 1):
            yield row
        self.count = count


class transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (including Ctrl-C)."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def __enter__(self) -> Connection:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn
        except BaseException:  # Ctrl-C just after BEGIN: __exit__ will not run to roll it back
            rollback_open(self.conn)
            raise

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            rollback_open(self.conn)
            return
        try:
            self.conn.execute("COMMIT")
        except BaseException:  # a COMMIT that fails or is interrupted leaves the transaction open
            rollback_open(self.conn)
            raise


def rollback_open(conn: Connection) -> None:
    """Roll back the connection's open transaction, if it has one."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")


WRITING_CACHE_KIB = 8192  # the page cache of a connection that builds (SQLite's default: 2,000 KiB)


def begin_writing(conn: Connection) -> None:
    """WAL for the duration of an indexing run: readers are never blocked, commits are cheap.
    A larger page cache while building: with 2 MB, a build read the same pages again and again
    (西游记's offline build: 70,890 page reads and 66,022 page writes for a 41 MB store; with
    8 MB 38,851 and 54,492; Moby-Dick 15,106 / 17,987 -> 10,453 / 17,466), at ~7 MB more peak memory."""
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA cache_size = -{WRITING_CACHE_KIB}")


def settle(conn: Connection, before_try: Callable[[], None] | None = None) -> bool:
    """Leave one self-contained file: fold the WAL back in and use a rollback journal.

    A WAL-mode file cannot be read from a read-only directory, and a shipped .db must be
    a single file; the next indexing run switches to WAL again. Waits (busy_timeout) for
    readers of other processes; returns False when one still holds an old snapshot, so the
    -wal file is still needed (finish later with `tgr check --fix`). before_try, if given, runs
    before each attempt (StoreAdmin closes the idle connections of this process's other threads).
    """
    deadline = time.monotonic() + SETTLE_WAIT_S
    while True:
        if before_try is not None:
            before_try()
        try:
            if conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                return False  # busy after busy_timeout: a reader keeps an old snapshot
            return conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0].lower() == "delete"
        except DatabaseError:  # another process has it open in WAL mode (e.g. a short `tgr ask`)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)


def pending_wal(path: str | os.PathLike) -> list[Path]:
    """The -wal / -shm files next to a store (a WAL not yet folded into the .db)."""
    return [p for p in (Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def unfinished_message(path) -> str:
    return (f"{path}: the store is not one complete file yet (its -wal file is still needed: another "
            f"process was reading it); run `tgr check --fix {path}` once that reader is done")


def get_meta(conn: Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta"))


def set_meta(conn: Connection, **values) -> None:
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(k, str(v)) for k, v in values.items()],
    )


def ensure_vec_tables(conn: Connection, dim: int, vector_type: str = "float32") -> None:
    """Create the vec0 embedding tables for this dimension and element type (float32 or
    int8), once the embedder is known."""
    element = {"float32": "float", "int8": "int8"}[vector_type]
    for table in VEC_TABLES:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            f"id TEXT PRIMARY KEY, embedding {element}[{int(dim)}] distance_metric=cosine, "
            f"chunk_size={VEC_CHUNK_ROWS})"
        )


# Portable vectors (tgr.build.portable_vectors): a local embedder's vectors beside an API embedder's, each
# with the hash of the text it embeds; read when the store's own embedder is out of reach.
PORTABLE_TABLES = {"chunks": "vec_portable_chunks", "entities": "vec_portable_entities",
                   "reports": "vec_portable_reports"}
PORTABLE_MODEL_KEY = "portable_embed_model"  # meta: their embedder (+ portable_embed_dim, _vector)


def ensure_portable_tables(conn: Connection, dim: int, vector_type: str = "int8") -> None:
    """Create the vec0 tables of portable vectors for this dimension and element type."""
    element = {"float32": "float", "int8": "int8"}[vector_type]
    for table in PORTABLE_TABLES.values():
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            f"id TEXT PRIMARY KEY, embedding {element}[{int(dim)}] distance_metric=cosine, "
            f"+input_hash TEXT, chunk_size={VEC_CHUNK_ROWS})"
        )


def drop_vec_tables(conn: Connection) -> None:
    for table in VEC_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def has_table(conn: Connection, name: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ?", (name,)
    ).fetchone() is not None


def serialize(vector, vector_type: str = "float32") -> bytes:
    """A vector as vec0 stores it. int8 scales each vector by 127 / its largest component:
    cosine distance ignores a vector's length, so this keeps the most precision per vector."""
    if vector_type == "float32":
        values = list(vector)
        return struct.pack(f"{len(values)}f", *values)
    values = list(vector)
    peak = max((abs(x) for x in values), default=0.0) or 1.0
    return struct.pack(f"{len(values)}b", *(round(x * 127 / peak) for x in values))


def vector_bytes(dim: int, vector_type: str) -> int:
    """The length in bytes of a stored vector of this dimension and type."""
    return dim * (1 if vector_type == "int8" else 4)


def vec_param(vector_type: str = "float32") -> str:
    """The SQL that binds a serialized vector of this type (vec0 reads untyped blobs as float32)."""
    return "vec_int8(?)" if vector_type == "int8" else "?"
