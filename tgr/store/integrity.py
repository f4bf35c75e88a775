"""Is the file intact, and is its content the content that was built?

- damage(conn): SQLite's full `PRAGMA integrity_check`, and FTS5's own 'integrity-check' of the
  full-text index against the chunks it indexes (run on a scratch copy of those rows: the
  check is an INSERT, which a read-only connection cannot run).
- content_digest(conn): a sha256 over the logical content, in the spirit of SQLite's dbhash:
  every table's rows in primary-key order, not pages, so VACUUM or a copy leaves it unchanged.
  A finished build records it in meta (DIGEST_KEY); `tgr check` recomputes and compares.

The digest covers the schema (sqlite_master without rootpage) and every ordinary table,
including the shadow tables that hold the FTS5 index and the sqlite-vec vectors and the
runs/model_calls ledger (nothing writes them after a build), except the meta row holding
the digest itself and sqlite_stat* (ANALYZE). Each value is hashed with its type: NULL 'N';
integer 'I' + 8 bytes big-endian; real 'F' + IEEE double big-endian; text 'T' and blob 'B' +
8-byte length + bytes; each table starts with 'table' + its name, each row with 'R'.
"""
from __future__ import annotations

import struct

import sqlean as sqlite3

from . import hardening

DIGEST_KEY = "content_digest"
DIGEST_PREFIX = "sha256:"
INTEGRITY_LINES = 5  # damage lines of PRAGMA integrity_check kept in a finding


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _ordered_select(conn, table: str) -> str:
    """SELECT every column of table, ordered by its primary key (or by every column)."""
    info = conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
    columns = [_quote(row[1]) for row in info]
    key = [_quote(row[1]) for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]
    return f"SELECT {', '.join(columns)} FROM {_quote(table)} ORDER BY {', '.join(key or columns)}"


def _tables(conn) -> list[str]:
    """Ordinary tables, by name (virtual tables hold their rows in shadow tables, hashed as such)."""
    return [name for name, sql in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_stat%' "
        "ORDER BY name")
        if not (sql or "").upper().startswith("CREATE VIRTUAL")]


def content_digest(conn) -> str:
    """'sha256:<hex>' over the store's logical content (see the module docstring)."""
    import hashlib  # not at the top: a cold `tgr ask` never hashes (tests/test_coldstart.py)

    digest = hashlib.sha256(b"tgr content digest 1\n")
    update = digest.update
    pack_int, pack_float = struct.Struct(">q").pack, struct.Struct(">d").pack
    queries = [("sqlite_master", "SELECT type, name, tbl_name, sql FROM sqlite_master "
                                  "WHERE name NOT LIKE 'sqlite_stat%' ORDER BY name")]
    queries += [(table, _ordered_select(conn, table)) for table in _tables(conn)]
    digest_row = DIGEST_KEY.encode()
    old_factory = conn.text_factory
    conn.text_factory = bytearray  # text as bytearray, blobs as bytes: told apart, never decoded
    try:
        for table, sql in queries:
            update(b"table" + table.encode() + b"\0")
            for row in conn.execute(sql):
                if table == "meta" and row[0] == digest_row:
                    continue
                parts = [b"R"]  # one update a row: a quarter faster than one a value
                append = parts.append
                for value in row:
                    kind = type(value)
                    if kind is bytearray:
                        append(b"T" + pack_int(len(value)))
                        append(value)
                    elif kind is int:
                        append(b"I" + pack_int(value))
                    elif value is None:
                        append(b"N")
                    elif kind is float:
                        append(b"F" + pack_float(value))
                    else:
                        append(b"B" + pack_int(len(value)))
                        append(value)
                update(b"".join(parts))
    finally:
        conn.text_factory = old_factory
    return DIGEST_PREFIX + digest.hexdigest()


def recorded_digest(conn) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (DIGEST_KEY,)).fetchone()
    return row[0] if row else None


def record_digest(conn) -> str:
    """Compute the content digest and record it in meta (in its own transaction)."""
    value = content_digest(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (DIGEST_KEY, value))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return value


def forget_digest(conn) -> None:
    """Remove the recorded digest: the content is about to change (a build starts)."""
    conn.execute("DELETE FROM meta WHERE key = ?", (DIGEST_KEY,))


def damage(conn) -> list[str]:
    """What SQLite finds damaged in the file (its pages, then its full-text index): [] when
    intact. Reads only."""
    return page_damage(conn) or fts_damage(conn)


def page_damage(conn) -> list[str]:
    """PRAGMA integrity_check's findings (at most INTEGRITY_LINES); [] when it says ok."""
    old_factory = conn.text_factory
    conn.text_factory = bytes  # its messages may quote damaged bytes
    try:
        lines = [row[0].decode("utf-8", "replace")
                 for row in conn.execute(f"PRAGMA integrity_check({INTEGRITY_LINES})")]
    finally:
        conn.text_factory = old_factory
    return [] if lines == ["ok"] else lines


def fts_damage(conn) -> list[str]:
    """FTS5's integrity-check of chunks_fts against chunks.terms, on a scratch copy of the two
    (the index's own rows copied as they are; the copy is tgr's, not the file's). Chunks listed
    in chunks_unindexed are not in the index yet (an interrupted index): left out."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
    if not row or "content='chunks'" not in (row[0] or ""):
        return []  # no index, or an older store's own-content one (PRAGMA integrity_check covers it)
    pending = ("WHERE seq NOT IN (SELECT seq FROM chunks_unindexed)"
               if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_unindexed'").fetchone() else "")
    scratch = sqlite3.connect("", isolation_level=None, factory=hardening.Connection)  # temporary
    try:
        hardening.harden(scratch, "the full-text check's scratch copy", trusted=True)
        if hasattr(scratch, "setconfig"):  # its shadow tables are written directly: not defensive
            scratch.setconfig(hardening.SQLITE_DBCONFIG_DEFENSIVE, False)
        scratch.execute("CREATE TABLE chunks(seq INTEGER PRIMARY KEY, terms TEXT)")
        scratch.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, content='chunks', content_rowid='seq')")
        scratch.execute("BEGIN")
        rows = conn.execute(f"SELECT seq, terms FROM chunks {pending}")
        scratch.executemany("INSERT INTO chunks VALUES (?, ?)", rows)
        for shadow in ("data", "idx", "docsize", "config"):
            table = f"chunks_fts_{shadow}"
            scratch.execute(f"DELETE FROM {table}")
            columns = len(scratch.execute(f"SELECT * FROM {table} LIMIT 0").description)
            rows = conn.execute(f"SELECT * FROM {table}")
            scratch.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * columns)})", rows)
        scratch.execute("COMMIT")
        try:
            scratch.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            return [f"the full-text index (chunks_fts) does not match the chunks it indexes ({exc})"]
        return []
    finally:
        scratch.close()
