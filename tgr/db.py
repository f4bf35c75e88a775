"""The SQLite connection: driver, sqlite-vec, pragmas, schema and migrations.

tgr uses one driver everywhere: sqlean.py, a build of the stdlib sqlite3 module with a
recent bundled SQLite that can load extensions (many system Pythons cannot). Never mix
it with another bundled-SQLite driver in one process.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import time
import struct
from pathlib import Path
from typing import Callable, Mapping

import sqlean as sqlite3

from . import __version__
from . import hardening, limits, schemacheck
from .errors import StoreError

SCHEMA_VERSION = 6
MEMORY = ":memory:"  # a throw-away store, e.g. for `tgr index --estimate` of a new file
FORMAT_TAG = "tgr"
SETTLE_WAIT_S = 5.0  # how long settle() waits for other processes to close the store
VEC_TABLES = ("vec_entities", "vec_chunks", "vec_reports")
# vec0 preallocates storage in chunks of this many vectors; its default (1024) would make
# a small store several megabytes of zeros.
VEC_CHUNK_ROWS = 128

# Numbered migrations: MIGRATIONS[n] upgrades a store from user_version n-1 to n.
# schema.sql always describes the newest version; a new store gets it directly.
Migration = Callable[["sqlite3.Connection"], None]


def _columns(conn: "sqlite3.Connection", table: str) -> set[str]:
    """Column names of a table (migrations add only what is missing, so a half-upgraded
    or hand-edited store still upgrades)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _add_report_context_hash(conn: "sqlite3.Connection") -> None:
    """2: reports remember the context they were written from, to notice stale ones."""
    if "context_hash" not in _columns(conn, "reports"):
        conn.execute("ALTER TABLE reports ADD COLUMN context_hash TEXT")


def _add_document_ids_and_metadata(conn: "sqlite3.Connection") -> None:
    """3: documents keep their own id (e.g. a JSONL row's id) and a JSON object of metadata."""
    columns = _columns(conn, "documents")
    if "external_id" not in columns:
        conn.execute("ALTER TABLE documents ADD COLUMN external_id TEXT")
    if "metadata" not in columns:
        conn.execute("ALTER TABLE documents ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'")


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
    rows = conn.execute("SELECT c.seq, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.document_id").fetchall()
    conn.executemany("UPDATE chunks SET terms = ? WHERE seq = ?",
                     [(" ".join(index_terms(f"{title}\n{text}")), seq) for seq, title, text in rows])
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, content='chunks', content_rowid='seq')")
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    if "input_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(entities)")}:
        conn.execute("ALTER TABLE entities ADD COLUMN input_hash TEXT")  # merge redoes only changed entities


def _keyed_extractions(conn: "sqlite3.Connection") -> None:
    """5: extraction rows carry the normalised names they merge into (merge_pending and its
    triggers come from schema.sql), and an embed_hash is NULL unless it is the hash of the
    row's current text, so that the embed stage reads only rows marked NULL."""
    from .embeddings import forget_stale_embed_hashes
    from .text import normalise_name

    if "key" not in _columns(conn, "extracted_entities"):
        conn.execute("ALTER TABLE extracted_entities ADD COLUMN key TEXT")
    for column in ("source_key", "target_key"):
        if column not in _columns(conn, "extracted_relations"):
            conn.execute(f"ALTER TABLE extracted_relations ADD COLUMN {column} TEXT")
    conn.executemany("UPDATE extracted_entities SET key = ? WHERE rowid = ?",
                     [(normalise_name(name), rowid) for rowid, name in
                      conn.execute("SELECT rowid, name FROM extracted_entities").fetchall()])
    conn.executemany("UPDATE extracted_relations SET source_key = ?, target_key = ? WHERE rowid = ?",
                     [(normalise_name(source), normalise_name(target), rowid) for rowid, source, target in
                      conn.execute("SELECT rowid, source, target FROM extracted_relations").fetchall()])
    model = conn.execute("SELECT value FROM meta WHERE key = 'embed_model'").fetchone()
    forget_stale_embed_hashes(conn, model[0] if model else None)
    conn.execute("DELETE FROM meta WHERE key IN ('fresh.merge', 'fresh.cluster')")  # one full look


def _entity_aliases(conn: "sqlite3.Connection") -> None:
    """6: entity_aliases (every surface form of an entity) and triggers that mark the entity
    keys of changed extraction rows for the merge (both come from schema.sql; tgr/resolve.py
    may give a name another entity's key). The next merge recomputes every entity (and so
    records its aliases)."""
    conn.execute("UPDATE entities SET input_hash = NULL")
    conn.execute("DELETE FROM meta WHERE key IN ('fresh.merge', 'fresh.cluster')")


MIGRATIONS: dict[int, Migration] = {2: _add_report_context_hash, 3: _add_document_ids_and_metadata,
                                    4: _external_content_fts, 5: _keyed_extractions, 6: _entity_aliases}

Connection = hardening.Connection
DatabaseError = sqlite3.DatabaseError


def schema_sql() -> str:
    """The text of schema.sql shipped inside the package."""
    # beside this file, not through importlib.resources: that import costs a cold `tgr ask` ~10 ms
    return Path(__file__).with_name("schema.sql").read_text(encoding="utf-8")


def connect(path: str | os.PathLike, *, create: bool = True, readonly: bool = False,
            upgrade: bool = True) -> Connection:
    """Open (or create) a tgr store; a writable one is brought up to date unless not upgrade
    (then call migrate() before the first write).

    Every store is opened defensively (tgr/hardening.py) and its schema compared with
    tgr's before anything in it is read (tgr/schemacheck.py). A read-only open never
    migrates and runs with query_only. Raises StoreError for a missing file (unless
    create), a file that is not SQLite, an SQLite file that is not a tgr store, a store
    whose schema holds objects tgr did not create, or a store written by a newer tgr.
    """
    path = Path(path)
    if str(path) == MEMORY:
        conn = raw_connection()
        with transaction(conn):
            _create_fresh(conn)
        return conn
    exists = path.exists() and path.stat().st_size > 0
    if not exists and not create:
        raise StoreError(f"{path}: no such tgr store (build one with `tgr index {path} DOCS...`)")
    if exists and not os.access(path, os.W_OK):
        readonly = True
    conn = open_file(path, readonly=readonly)
    with _closed_on_failure(conn, path):
        _check_is_tgr(conn, path, readonly)
        if not readonly and (upgrade or not exists):
            _ensure_schema(conn, fresh=not exists)
    return conn


def open_file(path: Path, *, readonly: bool) -> Connection:
    """A defended connection to an existing file, before any check of what it holds."""
    if readonly:  # as_uri() percent-encodes '#', '?' and '%' in the path
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None,
                               factory=Connection)
    else:
        conn = sqlite3.connect(str(path), isolation_level=None, factory=Connection)
    with _closed_on_failure(conn, path):
        hardening.harden(conn, str(path))
        _load_vec(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 5000")
        if readonly:
            conn.execute("PRAGMA query_only = ON")
    return conn


@contextlib.contextmanager
def _closed_on_failure(conn: Connection, path: Path):
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
    conn = sqlite3.connect(MEMORY, isolation_level=None, factory=Connection)
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
            _create_fresh(conn)
        return
    migrate(conn)


def create_schema(conn: Connection) -> None:
    """Run schema.sql (inside the caller's transaction, if any)."""
    _run_script(conn, schema_sql())


def _create_fresh(conn: Connection) -> None:
    create_schema(conn)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    set_meta(conn, format=FORMAT_TAG, schema_version=SCHEMA_VERSION, tgr_version=__version__)


def migrate(conn: Connection, migrations: Mapping[int, Migration] | None = None,
            target: int = SCHEMA_VERSION) -> int:
    """Run pending migrations in order, each in its own transaction. Returns the new version."""
    migrations = MIGRATIONS if migrations is None else migrations
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == target and _schema_current(conn):
        return version  # nothing to upgrade or restore: every write run would redo it otherwise
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
        for view in schemacheck.expected_views():  # views hold no data: always tgr's current ones
            conn.execute(f'DROP VIEW IF EXISTS "{view}"')
        _run_script(conn, schema_sql())  # new views / indexes are IF NOT EXISTS
    return version


def _schema_current(conn: Connection) -> bool:
    """Does the store hold every object of schema.sql, with tgr's definition of each view
    and trigger? (The vec0 tables are created in code.)"""
    present = dict(conn.execute("SELECT name, sql FROM sqlite_master").fetchall())
    for name, want in schemacheck.expected_objects().items():
        if name.startswith(VEC_TABLES):
            continue
        if name not in present or (want.sql is not None and schemacheck.normal_sql(present[name]) != want.sql):
            return False
    return True


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


def settle(conn: Connection) -> bool:
    """Leave one self-contained file: fold the WAL back in and use a rollback journal.

    A WAL-mode file cannot be read from a read-only directory, and a shipped .db must be
    a single file; the next indexing run switches to WAL again. Waits (busy_timeout) for
    readers of other processes; returns False when one still holds an old snapshot, so the
    -wal file is still needed (finish later with `tgr check --fix`).
    """
    deadline = time.monotonic() + SETTLE_WAIT_S
    while True:
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


def vec_param(vector_type: str = "float32") -> str:
    """The SQL that binds a serialized vector of this type (vec0 reads untyped blobs as float32)."""
    return "vec_int8(?)" if vector_type == "int8" else "?"
