"""Documents and chunks: the one code path that stores and deletes them.

chunks_fts is an external-content FTS5 index over chunks.terms (rowid = chunks.seq).
Stock SQLite reads it, but it is only in step with chunks if every insert and delete
goes through here: an insert adds the chunk's terms, a delete removes exactly the terms
stored with the chunk (FTS5 'delete' command). No triggers: a store made elsewhere is
untrusted, and tgr opens stores with trusted_schema off.

A chunk may be stored before its terms are computed (add_document with index=False, so
that an index run's first model calls need not wait for segmentation). Invariant: such
a chunk is listed in chunks_unindexed, its terms are '' and chunks_fts has no row for
it; index_pending() computes the terms, adds the FTS row and unlists it in one
transaction. Until then full-text search does not find the chunk.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass

from .chunking import Chunk, chunk_text
from ..store.db import Connection, has_table, transaction
from .formats import part_id
from .sources import Document
from ..text import index_text

_BATCH = 256  # chunks per transaction of index_pending


@dataclass
class StoredDocument:
    id: str
    source: str
    title: str
    chunks: int


def add_document(conn: Connection, doc: Document, chunks: list[Chunk], *, index: bool = True) -> int:
    """Store a document and its chunks with their FTS rows (inside the caller's transaction).

    A document's title is indexed with each of its chunks: it says what every part is about.
    index=False stores the chunks without terms, listed for index_pending().
    Returns the number of chunks added; OR IGNORE, so another process storing the same
    document meanwhile is harmless.
    """
    conn.execute(
        "INSERT OR IGNORE INTO documents(id, source, title, text, chars, external_id, metadata) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (doc.id, doc.source, doc.title, doc.text, len(doc.text), doc.external_id,
         json.dumps(doc.metadata, ensure_ascii=False, sort_keys=True, default=str)))
    doc_id = doc.id
    added = 0
    for c in chunks:
        terms = index_text(f"{doc.title}\n{c.text}") if index else ""
        cursor = conn.execute(
            "INSERT OR IGNORE INTO chunks(id, document_id, ordinal, text, char_start, char_end, tokens, terms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (c.id, doc_id, c.ordinal, c.text, c.start, c.end, c.tokens, terms))
        if cursor.rowcount:
            if index:
                conn.execute("INSERT INTO chunks_fts(rowid, terms) VALUES (?, ?)", (cursor.lastrowid, terms))
            else:
                conn.execute("INSERT INTO chunks_unindexed(seq) VALUES (?)", (cursor.lastrowid,))
            added += 1
    return added


def index_pending(conn: Connection, limit: int | None = None, *, waiting: bool = False) -> int:
    """Compute the terms of up to limit chunks stored without them (all if None), store them
    and add their FTS rows, a transaction per batch. Returns how many were indexed.
    waiting: called while model answers are awaited (see tgr.text.index_text)."""
    if not has_table(conn, "chunks_unindexed"):
        return 0
    done = 0
    while limit is None or done < limit:
        size = _BATCH if limit is None else min(_BATCH, limit - done)
        rows = conn.execute(  # from the few listed chunks (SQLite chose to scan every chunk's text)
            "SELECT u.seq, d.title, c.text FROM chunks_unindexed u CROSS JOIN chunks c ON c.seq = u.seq "
            "JOIN documents d ON d.id = c.document_id WHERE c.terms = '' ORDER BY u.seq LIMIT ?",
            (size,)).fetchall()
        if not rows:
            break
        terms = [(seq, index_text(f"{title}\n{text}", waiting=waiting)) for seq, title, text in rows]
        with transaction(conn):
            for seq, text in terms:  # only chunks still listed (another writer may have got there first)
                if conn.execute("DELETE FROM chunks_unindexed WHERE seq = ?", (seq,)).rowcount:
                    conn.execute("UPDATE chunks SET terms = ? WHERE seq = ?", (text, seq))
                    conn.execute("INSERT INTO chunks_fts(rowid, terms) VALUES (?, ?)", (seq, text))
                    done += 1
    return done


def pending_count(conn: Connection) -> int:
    """How many chunks are not in the full-text index yet."""
    if not has_table(conn, "chunks_unindexed"):
        return 0
    return conn.execute("SELECT count(*) FROM chunks_unindexed").fetchone()[0]


class IndexWhileWaiting:
    """An idle step for Gateway.chat_many: each call indexes a few pending chunks (about 20 ms
    for 1,200-token Chinese chunks). Returns False when none is left."""

    STEP = 16

    def __init__(self, conn: Connection):
        self.conn = conn

    def __call__(self) -> bool:
        return index_pending(self.conn, self.STEP, waiting=True) > 0


def delete_documents(conn: Connection, doc_ids: list[str]) -> int:
    """Remove documents with their chunks, FTS rows, chunk vectors and extractions
    (inside the caller's transaction). Returns the number of chunks removed."""
    removed = 0
    pending = has_table(conn, "chunks_unindexed")
    for doc_id in doc_ids:
        rows = conn.execute("SELECT seq, id, terms FROM chunks WHERE document_id = ?", (doc_id,)).fetchall()
        unindexed = {r[0] for r in conn.execute(
            "SELECT u.seq FROM chunks_unindexed u JOIN chunks c ON c.seq = u.seq WHERE c.document_id = ?",
            (doc_id,))} if pending else set()
        conn.executemany("INSERT INTO chunks_fts(chunks_fts, rowid, terms) VALUES ('delete', ?, ?)",
                         [(seq, terms) for seq, _, terms in rows if seq not in unindexed])
        conn.executemany("DELETE FROM chunks_unindexed WHERE seq = ?", [(seq,) for seq in sorted(unindexed)])
        if has_table(conn, "vec_chunks"):
            conn.executemany("DELETE FROM vec_chunks WHERE id = ?", [(cid,) for _, cid, _ in rows])
        conn.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))  # cascades to extractions
        conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        removed += len(rows)
    return removed


def store_documents(conn: Connection, docs: list[Document], *, chunk_size: int, chunk_overlap: int,
                    progress=None, replaced=None) -> int:
    """Store the documents not stored yet, chunked, without their terms (index_pending
    computes those). A new version of a stored file (or of one row id of a file) replaces
    the old document: replaced(new document, old source) is called for each. Returns the
    number of documents added. Each document leaves docs as it is stored (docs ends empty), so
    that a corpus read whole is not held through the stages after."""
    known = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, source, external_id FROM documents")}
    by_source: dict[tuple, list[str]] = {}  # (file, row id) -> stored documents
    for doc_id, (source, external_id) in known.items():
        key = source_key(source)
        if key is not None:
            by_source.setdefault((key, external_id), []).append(doc_id)
    # a file that gives several documents without ids (rows with no id): nothing says which
    # stored document a changed one replaces, so those are only ever added
    unnamed = Counter(source_key(d.source) for d in docs if d.external_id is None)
    outgrown, renamed = _outgrown(docs, by_source)
    if renamed:  # a stored form with a new form's text: kept under the new form's id
        with transaction(conn):
            conn.executemany("UPDATE documents SET external_id = ? WHERE id = ?",
                             [(external_id, doc_id) for doc_id, external_id in renamed.items()])
    new = [d for d in reversed(docs) if d.id not in known]  # (last first: each is popped once stored)
    docs.clear()
    total = len(new)
    report = progress or (lambda *a: None)
    replaced = replaced or (lambda d, s: None)
    report("ingest", 0, total)
    for done in range(1, total + 1):
        doc = new.pop()
        chunks = chunk_text(doc.text, doc.id, chunk_size, chunk_overlap)
        key = source_key(doc.source)
        old = by_source.pop((key, doc.external_id), []) if key is not None else []
        if len(old) > 1 or (doc.external_id is None and unnamed[key] > 1):
            old = []
        old += outgrown.pop((key, doc.whole_id), ([], None))[0]
        with transaction(conn):
            delete_documents(conn, old)
            add_document(conn, doc, chunks, index=False)
        for old_id in old:
            replaced(doc, known.pop(old_id)[0])
        report("ingest", done, total)
    for old, doc in outgrown.values():  # a text read in fewer parts, its others unchanged
        with transaction(conn):
            delete_documents(conn, old)
        for old_id in old:
            replaced(doc, known.pop(old_id)[0])
    return total


def _outgrown(docs: list[Document], by_source: dict[tuple, list[str]]
              ) -> tuple[dict[tuple, tuple[list[str], Document]], dict[str, str | None]]:
    """({(file, text id): (stored document ids, a document of the text now)}, {document id:
    its new external id}): the stored forms of a text that this read gives in another form
    (the whole text where it is now read in parts, having grown past what one document holds;
    parts where it is now read whole or in fewer parts), taken out of by_source. A stored form
    whose text is the same as one of the new forms (a whole that is now part 1) is not
    replaced but renamed."""
    now: dict[tuple, tuple[set, Document]] = {}
    new_ids = {doc.id: doc.external_id for doc in docs}
    for doc in docs:
        key = source_key(doc.source)
        if key is not None:
            now.setdefault((key, doc.whole_id), (set(), doc))[0].add(doc.external_id)
    outgrown, renamed = {}, {}
    for (key, whole_id), (ids, doc) in now.items():
        forms = [whole_id] if whole_id not in ids else []
        k = 1
        while (key, part_id(whole_id, k)) in by_source:
            if part_id(whole_id, k) not in ids:
                forms.append(part_id(whole_id, k))
            k += 1
        old = [i for form in forms if len(by_source.get((key, form), [])) == 1
               for i in by_source.pop((key, form))]
        renamed.update((i, new_ids[i]) for i in old if i in new_ids)
        old = [i for i in old if i not in new_ids]
        if old:
            outgrown[(key, whole_id)] = (old, doc)
    return outgrown, renamed


def document_count(conn: Connection) -> int:
    return conn.execute("SELECT count(*) FROM documents").fetchone()[0]


def has_documents(conn: Connection) -> bool:
    """Whether the store holds at least one document (without counting them)."""
    return conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None


def documents(conn: Connection) -> list[StoredDocument]:
    """Every stored document with its chunk count, oldest first."""
    return [StoredDocument(*row) for row in conn.execute(
        "SELECT d.id, d.source, d.title, (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) "
        "FROM documents d ORDER BY d.added_at, d.id")]


def document_names(conn: Connection) -> list[tuple[str, str, str]]:
    """(key, source, title) of every stored document, oldest first: the key is what retrieval
    ranks and `tgr eval` matches, the row's own id (external_id) or else the source path."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(documents)").fetchall()}
    key = "coalesce(nullif(external_id, ''), source)" if "external_id" in columns else "source"
    return [tuple(row) for row in conn.execute(
        f"SELECT {key}, source, title FROM documents ORDER BY added_at, id")]


def find_documents(conn: Connection, specs: list[str]) -> tuple[list[StoredDocument], list[str]]:
    """The documents named by specs (a document id or a unique prefix of one, a source path
    as given when indexed or the same file, or a title: every document with it), and the
    specs that named nothing."""
    stored = documents(conn)
    found: dict[str, StoredDocument] = {}
    missing = []
    for spec in specs:
        hits = [d for d in stored if spec in (d.id, d.source, d.title)]
        if not hits:
            hits = [d for d in stored if _same_path(spec, d.source)]
        if not hits and len(spec) >= 6:
            prefixed = [d for d in stored if d.id.startswith(spec)]
            hits = prefixed if len(prefixed) == 1 else []
            if len(prefixed) > 1:
                spec += f" (a prefix of {len(prefixed)} document ids)"
        if not hits:
            missing.append(spec)
        for d in hits:
            found.setdefault(d.id, d)
    return list(found.values()), missing


def source_key(source: str) -> str | None:
    """What makes two document sources the same file (None: stdin, never the same)."""
    if source == "<stdin>":
        return None
    try:
        return os.path.realpath(source)
    except (OSError, ValueError):
        return source


def _same_path(spec: str, source: str) -> bool:
    try:
        return os.path.realpath(spec) == os.path.realpath(source)
    except (OSError, ValueError):
        return False

