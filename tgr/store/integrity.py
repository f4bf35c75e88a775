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

That digest ('sha256:', DIGEST_PREFIX) reads the whole store, so recording it after every run
cost what the store holds (3 s of a one-document add at 10 M characters, ~25 s at 100 M). The
digest recorded now ('adhash1:', SUM_PREFIX) is one a run can keep up to date from the rows it
changed. Each table's rows are summed as numbers: sha256('row' + table + row encoded as above)
read as a 256-bit integer, added mod 2**256 (AdHash: order-free, so a row inserted or deleted
adds or takes away its own term; a table without a key counts a repeated row twice). The digest
is sha256 over a version line, the schema's hash (sqlite_master as above) and each table's
name and sum, tables by name. The sums are recorded with it (STATE_KEY, not itself hashed).
A run (DigestTracker) takes those sums when it starts, and TEMP triggers (this connection's
own: nothing is written into the file's schema) put a signed hash of every row a statement
inserts, deletes or updates in tgr's own tables into a temp table, inside the statement's own
transaction, so a rolled-back write takes its terms away with it. At the end a tracked
table's sum is its recorded sum plus those terms; every other table (meta, the FTS5 and
sqlite-vec shadow tables, whose modules write some of their rows through blob handles no
trigger sees, any table made or altered during the run) is summed afresh. If anything else
wrote the file meanwhile (another connection: PRAGMA data_version; a migration: user_version;
a schema changed: the schema's hash), or the recorded sums do not give the recorded digest,
every table is summed afresh. `tgr check` always sums afresh, and also compares the recorded
sums with the content: a changed value anywhere still changes the digest. A store that
records a 'sha256:' digest is checked with that digest (digest_like).
"""
from __future__ import annotations

import json
import struct

import sqlean as sqlite3

from . import hardening
from .db import in_pages

DIGEST_KEY = "content_digest"
DIGEST_PREFIX = "sha256:"  # the whole-store digest of tgrs before adhash1 (still checked as such)
SUM_PREFIX = "adhash1:"
STATE_KEY = "content_digest_state"  # the per-table sums behind an adhash1 digest (JSON)
_MODULUS = 1 << 256
_SUM_PAGE = 16  # rows a fetch when summing a table: a vector shadow row is ~200 KB
_TEMP_TERMS = "temp.tgr_digest_terms"
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


def _row_encoder(head: bytes = b"R"):
    """row -> head + its values' bytes as the module docstring says (text read as bytearray,
    blobs as bytes). head: b"R", or with table_sum's prefix before it (one join, no copy after)."""
    tagged, pack_float = struct.Struct(">cq").pack, struct.Struct(">d").pack  # tag and 8 bytes in one call

    def encode(row) -> bytes:
        parts = [head]  # one join a row: a quarter faster than one update a value
        append = parts.append
        for value in row:
            kind = type(value)
            if kind is bytearray:
                append(tagged(b"T", len(value)))
                append(value)
            elif kind is int:
                append(tagged(b"I", value))
            elif value is None:
                append(b"N")
            elif kind is float:
                append(b"F" + pack_float(value))
            else:
                append(tagged(b"B", len(value)))
                append(value)
        return b"".join(parts)
    return encode


_ENCODE = _row_encoder()


class _RawText:
    """Text read as bytearray, blobs as bytes, for the block: told apart, never decoded."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.old = self.conn.text_factory
        self.conn.text_factory = bytearray

    def __exit__(self, *exc):
        self.conn.text_factory = self.old


def digest_like(conn, recorded: str | None) -> str:
    """The content's digest in the form of the recorded one ('sha256:' for a store an older
    tgr recorded, 'adhash1:' otherwise): what `tgr check` compares."""
    if recorded is not None and recorded.startswith(DIGEST_PREFIX):
        return sha256_digest(conn)
    return content_digest(conn)


def verify(conn) -> tuple[str, str | None]:
    """(the content's digest in the recorded digest's form, what is wrong with the recorded
    table sums of an adhash1 digest or None): what `tgr check` reads, everything afresh."""
    recorded = recorded_digest(conn)
    if recorded is not None and recorded.startswith(DIGEST_PREFIX):
        return sha256_digest(conn), None
    schema, sums = content_sums(conn)
    actual = _combine(schema, sums)
    if recorded is None or recorded != actual:
        return actual, None  # the digest itself differs (or none): said as such
    return actual, state_problem(conn, schema, sums)


def sha256_digest(conn) -> str:
    """'sha256:<hex>' over the store's logical content, rows in key order (the module docstring)."""
    import hashlib  # not at the top: a cold `tgr ask` never hashes (tests/test_coldstart.py)

    digest = hashlib.sha256(b"tgr content digest 1\n")
    update = digest.update
    encode = _row_encoder()
    queries = [("sqlite_master", "SELECT type, name, tbl_name, sql FROM sqlite_master "
                                  "WHERE name NOT LIKE 'sqlite_stat%' ORDER BY name")]
    queries += [(table, _ordered_select(conn, table)) for table in _tables(conn)]
    digest_row = DIGEST_KEY.encode()
    with _RawText(conn):
        for table, sql in queries:
            update(b"table" + table.encode() + b"\0")
            for row in conn.execute(sql):
                if table == "meta" and row[0] == digest_row:
                    continue
                update(encode(row))
    return DIGEST_PREFIX + digest.hexdigest()


def _schema_hash(conn) -> bytes:
    import hashlib

    digest = hashlib.sha256(b"schema\0")
    encode = _row_encoder()
    with _RawText(conn):
        for row in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                "WHERE name NOT LIKE 'sqlite_stat%' ORDER BY name"):
            digest.update(encode(row))
    return digest.digest()


def _columns(conn, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")]


def table_sum(conn, table: str) -> int:
    """The table's rows summed (the module docstring), read afresh a page at a time (a watched
    call per page, not per row: tgr.store.hardening)."""
    import hashlib

    sha, from_bytes = hashlib.sha256, int.from_bytes
    encode = _row_encoder(_row_head(table) + b"R")
    skipped = (DIGEST_KEY.encode(), STATE_KEY.encode()) if table == "meta" else ()
    total = 0
    columns = ", ".join(map(_quote, _columns(conn, table)))
    with _RawText(conn):  # a page of rows a fetch: one watched call each, not one a row
        for row in in_pages(conn.execute(f"SELECT {columns} FROM {_quote(table)}"), _SUM_PAGE):
            if skipped and row[0] in skipped:
                continue
            total += from_bytes(sha(encode(row)).digest(), "big")
    return total % _MODULUS


def _combine(schema: bytes, sums: dict[str, int]) -> str:
    import hashlib

    digest = hashlib.sha256(b"tgr content digest 2\n" + schema)
    for table in sorted(sums):
        digest.update(b"table" + table.encode() + b"\0" + sums[table].to_bytes(32, "big"))
    return SUM_PREFIX + digest.hexdigest()


def content_sums(conn) -> tuple[bytes, dict[str, int]]:
    """(the schema's hash, every table's sum), all read afresh."""
    return _schema_hash(conn), {table: table_sum(conn, table) for table in _tables(conn)}


def content_digest(conn) -> str:
    """'adhash1:<hex>' over the store's logical content (the module docstring), read afresh."""
    return _combine(*content_sums(conn))


def _state(schema: bytes, sums: dict[str, int], user_version: int) -> str:
    return json.dumps({"user_version": user_version, "schema": schema.hex(),
                       "sums": {t: format(v, "064x") for t, v in sorted(sums.items())}}, sort_keys=True)


def recorded_state(conn) -> tuple[bytes, dict[str, int], int] | None:
    """(schema hash, sums, user_version) recorded with an adhash1 digest; None if none or unreadable."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (STATE_KEY,)).fetchone()
    try:
        state = json.loads(row[0])
        sums = {str(t): int(v, 16) % _MODULUS for t, v in state["sums"].items()}
        return bytes.fromhex(state["schema"]), sums, int(state["user_version"])
    except (TypeError, ValueError, KeyError, AttributeError):  # none, or not what tgr writes
        return None


def state_problem(conn, schema: bytes, sums: dict[str, int]) -> str | None:
    """What is wrong with the recorded sums of an adhash1 digest, given the content's own
    (schema, sums): a next run would build on them. None when they are the content's."""
    state = recorded_state(conn)
    if state is None:
        return "its content digest's table sums are not recorded (or not readable)"
    if state[0] != schema or state[1] != sums:
        changed = sorted(t for t in set(sums) | set(state[1]) if sums.get(t) != state[1].get(t))
        return ("its content digest's recorded table sums are not its content's"
                + (f" ({', '.join(changed[:5])})" if changed else " (schema)"))
    return None


def recorded_digest(conn) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (DIGEST_KEY,)).fetchone()
    return row[0] if row else None


def record_digest(conn, tracker: "DigestTracker | None" = None) -> str:
    """Compute the content digest and record it in meta with its table sums (in their own
    transaction). tracker: the run's DigestTracker, whose tables' sums are taken from the
    rows the run changed (the others are read afresh)."""
    kept = tracker.finish() if tracker is not None else None
    schema = _schema_hash(conn)
    sums = {table: kept[table] if kept and table in kept else table_sum(conn, table)
            for table in _tables(conn)}
    value = _combine(schema, sums)
    state = _state(schema, sums, conn.execute("PRAGMA user_version").fetchone()[0])
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                         [(DIGEST_KEY, value), (STATE_KEY, state)])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return value


def forget_digest(conn) -> None:
    """Remove the recorded digest: the content is about to change (a build starts)."""
    conn.execute("DELETE FROM meta WHERE key = ?", (DIGEST_KEY,))


def _tracked(conn) -> list[str]:
    """The tables a DigestTracker follows by trigger: tgr's own ordinary tables; not meta (the
    digest's own rows, rewritten every run), SQLite's, nor a virtual table's shadow tables."""
    virtual = [name for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
               if (sql or "").upper().startswith("CREATE VIRTUAL")]
    return [t for t in _tables(conn) if t != "meta" and not t.startswith("sqlite_")
            and not any(t.startswith(v + "_") for v in virtual)]


def _row_term(table: str, *values) -> bytes:
    """The trigger's function: sha256 of one row as table_sum hashes it. values: pairs of an
    is-text flag and the value (a text cast to a blob, so that its bytes are hashed as stored)."""
    import hashlib

    row = [bytearray(value) if is_text and value is not None else value
           for is_text, value in zip(values[::2], values[1::2])]
    return hashlib.sha256(_row_head(table) + _ENCODE(row)).digest()


def _row_head(table: str) -> bytes:
    """What a row's hash starts with, before the row's encoding: the same for table_sum's read
    and for the trigger's term (_row_term), or a changed row would not cancel out."""
    return b"row" + table.encode() + b"\0"


class DigestTracker:
    """The rows one run changes, for record_digest (the module docstring). Start it before the
    run's first write (before start_run forgets the digest); record_digest finishes it."""

    def __init__(self, conn):
        self.conn, self.active, self.triggers, self.definitions = conn, False, [], {}
        recorded = recorded_digest(conn)
        state = recorded_state(conn) if recorded and recorded.startswith(SUM_PREFIX) else None
        self.user_version = conn.execute("PRAGMA user_version").fetchone()[0]
        if state is None or state[2] != self.user_version:
            return  # nothing to build on: record_digest reads every table
        schema, sums, _ = state
        if schema != _schema_hash(conn) or _combine(schema, sums) != recorded:
            return
        tables = _tracked(conn)
        self.base = {t: sums[t] for t in tables if t in sums}
        self.definitions = self._definitions()
        self.data_version = conn.execute("PRAGMA data_version").fetchone()[0]
        conn.create_function("tgr_digest_row", -1, _row_term, deterministic=True)
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS tgr_digest_terms(tbl TEXT, sign INTEGER, term BLOB)")
        conn.execute(f"DELETE FROM {_TEMP_TERMS}")
        conn.execute("PRAGMA recursive_triggers = ON")  # a REPLACE's deletions fire the delete trigger
        self.active = True
        for i, table in enumerate(sorted(self.base)):
            self._triggers(i, table)

    def _definitions(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))

    def _triggers(self, i: int, table: str) -> None:
        def row(side: str) -> str:
            return ", ".join(f"typeof({side}.{c}) = 'text', CASE WHEN typeof({side}.{c}) = 'text' "
                             f"THEN CAST({side}.{c} AS BLOB) ELSE {side}.{c} END"
                             for c in map(_quote, _columns(self.conn, table)))

        name = _quote(table)
        label = "'" + table.replace("'", "''") + "'"

        def term(sign: int, side: str) -> str:
            return (f"INSERT INTO tgr_digest_terms(tbl, sign, term) "  # (temp: no qualified names here)
                    f"VALUES ({label}, {sign}, tgr_digest_row({label}, {row(side)}));")

        for event, body in (("INSERT", term(1, "NEW")), ("DELETE", term(-1, "OLD")),
                            ("UPDATE", term(-1, "OLD") + " " + term(1, "NEW"))):
            trigger = f"tgr_digest_{i}_{event.lower()}"
            self.conn.execute(f"CREATE TEMP TRIGGER {trigger} AFTER {event} ON main.{name} "
                              f"FOR EACH ROW BEGIN {body} END")
            self.triggers.append((trigger, table))

    def finish(self) -> dict[str, int] | None:
        """The tracked tables' sums now (None: read every table afresh); the triggers go."""
        if not self.active:
            return None
        conn = self.conn
        self.active = False
        try:
            if conn.execute("PRAGMA data_version").fetchone()[0] != self.data_version \
                    or conn.execute("PRAGMA user_version").fetchone()[0] != self.user_version:
                return None  # another connection wrote, or the schema moved on: read everything
            present = {name for (name,) in conn.execute("SELECT name FROM sqlite_temp_master WHERE type = 'trigger'")}
            definitions = self._definitions()
            lost = {table for trigger, table in self.triggers if trigger not in present}
            sums = {t: v for t, v in self.base.items()
                    if t not in lost and definitions.get(t) == self.definitions.get(t)}
            for table, sign, term in in_pages(conn.execute(f"SELECT tbl, sign, term FROM {_TEMP_TERMS}")):
                if table in sums:
                    sums[table] = (sums[table] + sign * int.from_bytes(term, "big")) % _MODULUS
            return sums
        finally:
            for trigger, _ in self.triggers:
                conn.execute(f"DROP TRIGGER IF EXISTS temp.{trigger}")
            conn.execute(f"DROP TABLE IF EXISTS {_TEMP_TERMS}")
            conn.execute("PRAGMA recursive_triggers = OFF")


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
