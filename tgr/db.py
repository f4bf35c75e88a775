"""The SQLite connection: driver, sqlite-vec, pragmas, schema and migrations.

tgr uses one driver everywhere: sqlean.py, a build of the stdlib sqlite3 module with a
recent bundled SQLite that can load extensions (many system Pythons cannot). Never mix
it with another bundled-SQLite driver in one process.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Callable, Mapping

import sqlean as sqlite3
import sqlite_vec

from . import __version__
from .errors import StoreError

SCHEMA_VERSION = 4
MEMORY = ":memory:"  # a throw-away store, e.g. for `tgr index --estimate` of a new file
FORMAT_TAG = "tgr"
VEC_TABLES = ("vec_entities", "vec_chunks", "vec_reports")
# vec0 preallocates storage in chunks of this many vectors; its default (1024) would make
# a small store several megabytes of zeros.
VEC_CHUNK_ROWS = 128

# Numbered migrations: MIGRATIONS[n] upgrades a store from user_version n-1 to n.
# schema.sql always describes the newest version; a new store gets it directly.
Migration = Callable[["sqlite3.Connection"], None]


def _add_report_context_hash(conn: "sqlite3.Connection") -> None:
    """2: reports remember the context they were written from, to notice stale ones."""
    conn.execute("ALTER TABLE reports ADD COLUMN context_hash TEXT")


def _documents_columns(conn: "sqlite3.Connection") -> None:
    """3: placeholder for the documents columns of the ingest branch (replaced on merge)."""


def _external_content_fts(conn: "sqlite3.Connection") -> None:
    """4: an FTS index stock SQLite reads (external content over chunks.terms instead of
    contentless_delete, an SQLite >= 3.43 option), chunk seq numbers never reused, and
    entities that remember what they were merged from."""
    from .text import index_terms

    conn.execute("DROP TABLE IF EXISTS chunks_fts")
    conn.execute("""CREATE TABLE chunks_v4 (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        id          TEXT NOT NULL UNIQUE,
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        ordinal     INTEGER NOT NULL,
        text        TEXT NOT NULL,
        char_start  INTEGER NOT NULL,
        char_end    INTEGER NOT NULL,
        tokens      INTEGER NOT NULL,
        embed_hash  TEXT,
        terms       TEXT NOT NULL DEFAULT '')""")
    columns = "seq, id, document_id, ordinal, text, char_start, char_end, tokens, embed_hash"
    conn.execute(f"INSERT INTO chunks_v4({columns}) SELECT {columns} FROM chunks")
    conn.execute("DROP TABLE chunks")  # foreign keys are off during migrations: nothing cascades
    conn.execute("ALTER TABLE chunks_v4 RENAME TO chunks")
    conn.execute("CREATE INDEX chunks_by_document ON chunks(document_id, ordinal)")
    rows = conn.execute("SELECT seq, text FROM chunks").fetchall()
    conn.executemany("UPDATE chunks SET terms = ? WHERE seq = ?",
                     [(" ".join(index_terms(text)), seq) for seq, text in rows])
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, content='chunks', content_rowid='seq')")
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    if "input_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(entities)")}:
        conn.execute("ALTER TABLE entities ADD COLUMN input_hash TEXT")  # merge redoes only changed entities


MIGRATIONS: dict[int, Migration] = {2: _add_report_context_hash, 3: _documents_columns,
                                    4: _external_content_fts}

Connection = sqlite3.Connection
DatabaseError = sqlite3.DatabaseError


def schema_sql() -> str:
    """The text of schema.sql shipped inside the package."""
    return resources.files("tgr").joinpath("schema.sql").read_text(encoding="utf-8")


def connect(path: str | os.PathLike, *, create: bool = True, readonly: bool = False) -> Connection:
    """Open (or create) a tgr store and bring its schema up to date.

    Raises StoreError for a missing file (unless create), a file that is not SQLite,
    an SQLite file that is not a tgr store, or a store written by a newer tgr.
    """
    path = Path(path)
    if str(path) == MEMORY:
        conn = sqlite3.connect(MEMORY, isolation_level=None)
        _load_vec(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        _ensure_schema(conn, fresh=True)
        return conn
    exists = path.exists() and path.stat().st_size > 0
    if not exists and not create:
        raise StoreError(f"{path}: no such tgr store (build one with `tgr index {path} DOCS...`)")
    if exists and not os.access(path, os.W_OK):
        readonly = True
    if readonly:  # as_uri() percent-encodes '#', '?' and '%' in the path
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
    else:
        conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        _load_vec(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 5000")
        _check_is_tgr(conn, path, readonly)
        if not readonly:
            _ensure_schema(conn, fresh=not exists)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{path}: not a usable SQLite database ({exc})") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _load_vec(conn: Connection) -> None:
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


def _check_is_tgr(conn: Connection, path: Path, readonly: bool) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        if readonly:
            raise StoreError(f"{path}: an empty SQLite database, not a tgr store")
        return  # a new, empty database becomes a tgr store
    tag = None
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        tag = row[0] if row else None
    if tag != FORMAT_TAG:
        raise StoreError(f"{path}: an SQLite database, but not a tgr store (no tgr meta table)")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: written by a newer tgr (schema {version}, this tgr reads up to "
            f"{SCHEMA_VERSION}); upgrade tgr"
        )


def _ensure_schema(conn: Connection, fresh: bool) -> None:
    if fresh:
        with transaction(conn):
            _run_script(conn, schema_sql())
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            set_meta(conn, format=FORMAT_TAG, schema_version=SCHEMA_VERSION, tgr_version=__version__)
        return
    migrate(conn)


def migrate(conn: Connection, migrations: Mapping[int, Migration] | None = None,
            target: int = SCHEMA_VERSION) -> int:
    """Run pending migrations in order, each in its own transaction. Returns the new version."""
    migrations = MIGRATIONS if migrations is None else migrations
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version < target:  # a step may rebuild a table; dropping the old one must not cascade
        conn.execute("PRAGMA foreign_keys = OFF")
    try:
        while version < target:
            step = migrations.get(version + 1)
            if step is None:
                raise StoreError(f"no migration from schema {version} to {version + 1}")
            with transaction(conn):
                step(conn)
                if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                    raise StoreError(f"migration to schema {version + 1} broke a foreign key")
                conn.execute(f"PRAGMA user_version = {version + 1}")
                set_meta(conn, schema_version=version + 1)
            version += 1
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    with transaction(conn):
        _run_script(conn, schema_sql())  # new views / indexes are IF NOT EXISTS
    return version


def _run_script(conn: Connection, script: str) -> None:
    """Run a multi-statement script inside the current transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            if statement.strip():
                conn.execute(statement)
            statement = ""


class transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (including Ctrl-C)."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def __enter__(self) -> Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")


def begin_writing(conn: Connection) -> None:
    """WAL for the duration of an indexing run: readers are never blocked, commits are cheap."""
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")


def settle(conn: Connection) -> None:
    """Leave one self-contained file: fold the WAL back in and use a rollback journal.

    A WAL-mode file cannot be read from a read-only directory, and a shipped .db should
    be a single file; the next indexing run switches to WAL again.
    """
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    except DatabaseError:  # another connection has it open: it stays in WAL, which is fine
        pass


def get_meta(conn: Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta"))


def set_meta(conn: Connection, **values) -> None:
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(k, str(v)) for k, v in values.items()],
    )


def ensure_vec_tables(conn: Connection, dim: int) -> None:
    """Create the vec0 embedding tables for this dimension (once the embedder is known)."""
    for table in VEC_TABLES:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            f"id TEXT PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine, "
            f"chunk_size={VEC_CHUNK_ROWS})"
        )


def drop_vec_tables(conn: Connection) -> None:
    for table in VEC_TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def has_table(conn: Connection, name: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ?", (name,)
    ).fetchone() is not None


def serialize(vector) -> bytes:
    return sqlite_vec.serialize_float32(list(vector))
