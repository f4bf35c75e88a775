"""Numbered schema migrations, run on the first write to an older store (PRAGMA user_version).

MIGRATIONS[n] upgrades a store from user_version n-1 to n; schema.sql always describes the
newest version, and a new store gets it directly (tgr/store/db.py create_fresh). A migration may
use the stages' own helpers (text, embeddings): this module sits above them, and imports
them only when a step runs, so opening a current store never loads them.
"""
from __future__ import annotations

from typing import Callable, Mapping

from . import schema_check as schemacheck
from .db import PORTABLE_TABLES, SCHEMA_VERSION, VEC_TABLES, Connection, run_script, schema_sql, set_meta, transaction
from ..errors import StoreError

# Numbered migrations: MIGRATIONS[n] upgrades a store from user_version n-1 to n.
# schema.sql always describes the newest version; a new store gets it directly.
Migration = Callable[[Connection], None]


def _columns(conn: Connection, table: str) -> set[str]:
    """Column names of a table (migrations add only what is missing, so a half-upgraded
    or hand-edited store still upgrades)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _add_report_context_hash(conn: Connection) -> None:
    """2: reports remember the context they were written from, to notice stale ones."""
    if "context_hash" not in _columns(conn, "reports"):
        conn.execute("ALTER TABLE reports ADD COLUMN context_hash TEXT")


def _add_document_ids_and_metadata(conn: Connection) -> None:
    """3: documents keep their own id (e.g. a JSONL row's id) and a JSON object of metadata."""
    columns = _columns(conn, "documents")
    if "external_id" not in columns:
        conn.execute("ALTER TABLE documents ADD COLUMN external_id TEXT")
    if "metadata" not in columns:
        conn.execute("ALTER TABLE documents ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'")


def _external_content_fts(conn: Connection) -> None:
    """4: an FTS index stock SQLite reads (external content over chunks.terms instead of
    contentless_delete, an SQLite >= 3.43 option), chunk seq numbers never reused, and
    entities that remember what they were merged from."""
    from ..text import index_text

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
    for event in ("added", "removed", "changed"):  # (schema.sql's triggers that read chunks: made again after)
        conn.execute(f"DROP TRIGGER IF EXISTS resolve_entity_{event}")
        conn.execute(f"DROP TRIGGER IF EXISTS resolve_relation_{event}")
    conn.execute("DROP TABLE chunks")  # foreign keys are off during migrations: nothing cascades
    conn.execute("ALTER TABLE chunks_v4 RENAME TO chunks")
    conn.execute("CREATE INDEX chunks_by_document ON chunks(document_id, ordinal)")
    rows = conn.execute("SELECT c.seq, d.title, c.text FROM chunks c JOIN documents d ON d.id = c.document_id").fetchall()
    conn.executemany("UPDATE chunks SET terms = ? WHERE seq = ?",
                     [(index_text(f"{title}\n{text}"), seq) for seq, title, text in rows])
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, content='chunks', content_rowid='seq')")
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    if "input_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(entities)")}:
        conn.execute("ALTER TABLE entities ADD COLUMN input_hash TEXT")  # merge redoes only changed entities


def _keyed_extractions(conn: Connection) -> None:
    """5: extraction rows carry the normalised names they merge into (merge_pending and its
    triggers come from schema.sql), and an embed_hash is NULL unless it is the hash of the
    row's current text, so that the embed stage reads only rows marked NULL."""
    from .vector_rows import forget_stale_embed_hashes
    from ..text import normalise_name

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


def _entity_aliases(conn: Connection) -> None:
    """6: entity_aliases (every surface form of an entity) and triggers that mark the entity
    keys of changed extraction rows for the merge (both come from schema.sql; tgr/build/resolve.py
    may give a name another entity's key). The next merge recomputes every entity (and so
    records its aliases)."""
    conn.execute("UPDATE entities SET input_hash = NULL")
    conn.execute("DELETE FROM meta WHERE key IN ('fresh.merge', 'fresh.cluster')")


def _batch_jobs(conn: Connection) -> None:
    """7: the ledger prices each call (a Batch API answer costs half); the batch_jobs and
    batch_items tables come from schema.sql, which migrate() runs after the steps."""
    if "price" not in _columns(conn, "model_calls"):
        conn.execute("ALTER TABLE model_calls ADD COLUMN price REAL NOT NULL DEFAULT 1")


def _community_chunks_and_resolved_names(conn: Connection) -> None:
    """8: community_chunks (each community's count of chunks naming a member) and the triggers
    that drop a count when what it counts changes come from schema.sql, which migrate() runs
    after the steps; the cluster stage of the same run writes the counts. Until then a
    question counts them itself, as before. So does documents_extras (a document's id,
    external id and metadata, read without its text). Also from schema.sql: entity
    resolution's answers per document (resolved_names) and the documents to resolve again
    (resolve_pending, kept by triggers); without meta 'resolved_names' the next merge resolves
    every document (tgr/build/resolve.py)."""
    conn.execute("DELETE FROM meta WHERE key = 'resolved_names'")


MIGRATIONS: dict[int, Migration] = {2: _add_report_context_hash, 3: _add_document_ids_and_metadata,
                                    4: _external_content_fts, 5: _keyed_extractions, 6: _entity_aliases,
                                    7: _batch_jobs, 8: _community_chunks_and_resolved_names}


def migrate(conn: Connection, migrations: Mapping[int, Migration] | None = None,
            target: int = SCHEMA_VERSION) -> int:
    """Run pending migrations in order, each in its own transaction. Returns the new version."""
    migrations = MIGRATIONS if migrations is None else migrations
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == target and schema_current(conn):
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
        run_script(conn, schema_sql())  # new views / indexes are IF NOT EXISTS
    return version


def schema_current(conn: Connection) -> bool:
    """Does the store hold every object of schema.sql, with tgr's definition of each view
    and trigger? (The vec0 tables are created in code; the portable ones only where a store
    keeps portable vectors.)"""
    present = dict(conn.execute("SELECT name, sql FROM sqlite_master").fetchall())
    for name, want in schemacheck.expected_objects().items():
        if name.removeprefix("sqlite_autoindex_").startswith(VEC_TABLES + tuple(PORTABLE_TABLES.values())):
            continue
        if name not in present or (want.sql is not None and schemacheck.normal_sql(present[name]) != want.sql):
            return False
    return True
