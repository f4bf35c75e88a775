"""The full-text index: readable by stock SQLite, in step with chunks, migrated from schema 2."""
from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
import sqlean as sqlite3

import tgr
from conftest import EN_CORPUS, SMALL, ZH_CORPUS
from tgr.store import db, opening as storefile

STOCK_PYTHON = "/usr/bin/python3"  # the system Python: its own SQLite, no extensions loaded


def offline_store(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def stock_sqlite(path, script: str) -> dict:
    """Run script (with `conn` open on path) in the system Python's stdlib sqlite3; its JSON output."""
    code = "import json, sqlite3, sys\nconn = sqlite3.connect(sys.argv[1])\n" + textwrap.dedent(script)
    done = subprocess.run([STOCK_PYTHON, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


READ_EVERYTHING = """
    objects = conn.execute("SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    vec = {name for name, type_, sql in objects if sql and 'USING vec0' in sql}
    rows, skipped = {}, []
    for name, type_, sql in objects:
        if name in vec or any(name.startswith(v + '_') for v in vec):
            skipped.append(name)
            continue
        rows[name] = len(conn.execute(f'SELECT * FROM "{name}"').fetchall())
    print(json.dumps({"version": sqlite3.sqlite_version, "rows": rows, "skipped": skipped, "match": {
        q: [r[0] for r in conn.execute(
            "SELECT c.id FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid "
            "WHERE chunks_fts MATCH ? ORDER BY rank", (q,))]
        for q in ('marley', '"花果 果山"', 'scrooge AND marley')}}))
"""


def test_stock_sqlite_reads_every_table_and_view_and_matches(db_path):
    with offline_store(db_path) as kb:
        kb.index([str(EN_CORPUS), str(ZH_CORPUS)], **SMALL)
        chunks = kb.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        marley = {r[0] for r in kb.conn.execute("SELECT id FROM chunks WHERE lower(text) LIKE '%marley%'")}
        huaguo = {r[0] for r in kb.conn.execute("SELECT id FROM chunks WHERE text LIKE '%花果山%'")}
    result = stock_sqlite(db_path, READ_EVERYTHING)
    assert result["version"].startswith("3.40"), result["version"]  # older than contentless_delete
    rows = result["rows"]
    assert rows["chunks"] == rows["chunks_fts"] == chunks
    for name in ("documents", "entities", "relationships", "communities", "reports", "entity_overview",
                 "relationship_overview", "report_overview", "cost_by_stage", "runs"):
        assert rows[name] > 0, name
    assert "llm_cache" in rows and "sqlite_sequence" in rows
    assert {"vec_chunks", "vec_entities", "vec_reports"} <= set(result["skipped"])
    assert marley and set(result["match"]["marley"]) == marley
    assert huaguo and set(result["match"]['"花果 果山"']) == huaguo
    assert set(result["match"]["scrooge AND marley"]) <= marley


def test_chunk_seq_is_never_reused(db_path):
    with offline_store(db_path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        top = kb.conn.execute("SELECT max(seq) FROM chunks").fetchone()[0]
        with db.transaction(kb.conn):
            from tgr.ingest.corpus import delete_documents
            delete_documents(kb.conn, [r[0] for r in kb.conn.execute("SELECT id FROM documents")])
        kb.index([str(EN_CORPUS / "carol_stave1_part2.txt")], **SMALL)
        assert kb.conn.execute("SELECT min(seq) FROM chunks").fetchone()[0] > top
        # the index holds exactly the stored chunks' terms: a check FTS5 does itself
        kb.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


def _downgrade_to_schema_2(path) -> None:
    """Rewrite chunks, chunks_fts and documents as schema 2 had them (contentless_delete FTS,
    no chunk terms, no document ids or metadata)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.executescript("""
        BEGIN;
        DROP TABLE chunks_fts;
        DROP TABLE resolved_names;  -- (schema 8, with its triggers: they read chunks)
        DROP TABLE resolve_pending;
        DROP TRIGGER resolve_entity_added; DROP TRIGGER resolve_entity_removed; DROP TRIGGER resolve_entity_changed;
        DROP TRIGGER resolve_relation_added; DROP TRIGGER resolve_relation_removed;
        DROP TRIGGER resolve_relation_changed; DROP TRIGGER resolve_title_changed;
        CREATE TABLE chunks_v2 (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL, text TEXT NOT NULL, char_start INTEGER NOT NULL,
            char_end INTEGER NOT NULL, tokens INTEGER NOT NULL, embed_hash TEXT);
        INSERT INTO chunks_v2 SELECT seq, id, document_id, ordinal, text, char_start, char_end, tokens,
            embed_hash FROM chunks;
        DROP TABLE chunks;
        ALTER TABLE chunks_v2 RENAME TO chunks;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(terms, content='', contentless_delete=1);
        INSERT INTO chunks_fts(rowid, terms) SELECT seq, lower(text) FROM chunks;
        DROP INDEX documents_by_external_id;
        DROP INDEX IF EXISTS documents_extras;
        ALTER TABLE documents DROP COLUMN external_id;
        ALTER TABLE documents DROP COLUMN metadata;
        ALTER TABLE entities DROP COLUMN input_hash;
        PRAGMA user_version = 2;
        COMMIT;
    """)
    conn.close()


def test_migration_4_rebuilds_the_index_and_keeps_everything(db_path):
    with offline_store(db_path) as kb:
        kb.index([str(EN_CORPUS), str(ZH_CORPUS)], **SMALL)
        before = {t: kb.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("chunks", "extractions", "extracted_entities", "entity_mentions", "reports")}
        seqs = kb.conn.execute("SELECT seq, id FROM chunks ORDER BY seq").fetchall()
        answer = kb.ask("Who is Marley?", mode="naive").answer
    _downgrade_to_schema_2(db_path)
    with offline_store(db_path) as kb:  # opening does not migrate; the first write does
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == 2
        kb.index([str(EN_CORPUS), str(ZH_CORPUS)], **SMALL)
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION >= 4
        after = {t: kb.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in before}
        assert after == before  # rebuilding chunks cascaded nothing
        assert kb.conn.execute("SELECT seq, id FROM chunks ORDER BY seq").fetchall() == seqs
        assert kb.conn.execute("SELECT count(*) FROM chunks WHERE terms = ''").fetchone()[0] == 0
        assert "input_hash" in {r[1] for r in kb.conn.execute("PRAGMA table_info(entities)")}
        assert kb.ask("Who is Marley?", mode="naive").answer == answer
        kb.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    assert stock_sqlite(db_path, READ_EVERYTHING)["match"]["marley"]


def test_chinese_index_words_are_jiebas_search_words():
    """The index's Chinese words come from rjieba (fast); they must be the words jieba's own
    search-mode cut gives, or a store's terms would depend on which segmenter built it."""
    from tgr.text import CJK_RUN, index_terms, jieba

    text = "".join(p.read_text(encoding="utf-8") for p in sorted(ZH_CORPUS.glob("*.txt")))
    runs = CJK_RUN.findall(text)
    bigrams = [r[i:i + 2] for r in runs for i in range(max(1, len(r) - 1))]
    words = [w for r in runs for w in jieba().cut_for_search(r) if len(w) > 1]
    terms = index_terms(text)
    assert len(words) > 1000
    assert terms[len(terms) - len(words):] == words
    assert terms[len(terms) - len(words) - len(bigrams):len(terms) - len(words)] == bigrams


def test_chunks_stored_before_their_terms_join_the_index_later(tmp_path):
    """`tgr index` stores chunks first and computes their terms while the first model calls
    are in flight. Until then a chunk is outside the index, and every path stays right:
    delete, `tgr check`, and the next index or `check --fix` filling the rest in, which
    gives the same index as computing the terms at once."""
    from tgr.build import check
    from tgr.ingest.chunking import chunk_text
    from tgr.ingest.corpus import add_document, delete_documents, find_documents, pending_count
    from tgr.ingest.sources import read_documents
    from tgr.knowledge_base import IndexSettings

    files = [str(EN_CORPUS), str(ZH_CORPUS)]
    reference = tmp_path / "reference.db"
    with offline_store(reference) as kb:
        kb.index(files, **SMALL)
    late = tmp_path / "late.db"
    conn = storefile.connect(late)
    with db.transaction(conn):
        db.set_meta(conn, **IndexSettings(**SMALL).to_meta())
        for doc in read_documents(files):
            chunks = chunk_text(doc.text, doc.id, SMALL["chunk_size"], SMALL["chunk_overlap"])
            add_document(conn, doc, chunks, index=False)
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert chunks > 4 and pending_count(conn) == chunks
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'scrooge'").fetchone()[0] == 0
    # a question asked of it meanwhile finds them, ranked as FTS5 ranks them once indexed
    from tgr.query.retrieve import Retriever
    question = "Marley's ghost and the chains 花果山"
    with offline_store(reference) as kb:
        indexed = Retriever(kb.conn).bm25(question, 10)
    pending = Retriever(conn).bm25(question, 10)
    assert len(indexed) == 10 and [c for c, _ in pending] == [c for c, _ in indexed]
    assert [s for _, s in pending] == pytest.approx([s for _, s in indexed], rel=1e-5)
    (first, *_), _ = find_documents(conn, [str(next(EN_CORPUS.glob("*.txt")))])
    with db.transaction(conn):
        delete_documents(conn, [first.id])
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
    left = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert left < chunks and pending_count(conn) == left
    conn.close()

    assert any(p.severity == "unfinished" and "full-text index" in p.message for p in check.diagnose(late))
    assert check.fix(late)[0] == f"added {left} chunks to the full-text index"
    # what is left is the model work this hand-built store never started
    assert [p.message.split(";")[0] for p in check.diagnose(late)] == [
        f"{left} of {left} chunks are not extracted yet (an interrupted index)", f"no vector yet for {left} chunks"]
    with offline_store(late) as kb:
        kb.index(files, **SMALL)  # adds the deleted document again, its chunks indexed by the run
        kb.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        assert pending_count(kb.conn) == 0
        got = dict(kb.conn.execute("SELECT id, terms FROM chunks"))
        hits = [r[0] for r in kb.conn.execute(
            "SELECT c.id FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid "
            "WHERE chunks_fts MATCH '\"花果 果山\" OR scrooge' ORDER BY c.id")]
    with offline_store(reference) as kb:
        assert got == dict(kb.conn.execute("SELECT id, terms FROM chunks"))
        assert hits and hits == [r[0] for r in kb.conn.execute(
            "SELECT c.id FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.rowid "
            "WHERE chunks_fts MATCH '\"花果 果山\" OR scrooge' ORDER BY c.id")]


def test_a_chunks_fts_row_is_its_index_terms_joined_whatever_the_script():
    """index_text writes a Chinese run's bigrams in one numpy pass instead of a string per
    bigram: the row must still be index_terms joined by spaces, on real text and on odd
    mixes (kana, Hangul, full-width letters, 〇, a lone surrogate, a character above the BMP)."""
    import random

    import numpy  # noqa: F401  (the one-pass path: taken once numpy is loaded)
    from tgr.text import index_terms, index_text

    texts = [p.read_text(encoding="utf-8") for p in sorted(ZH_CORPUS.glob("*.txt"))]
    texts.append(EN_CORPUS.read_text(encoding="utf-8") if EN_CORPUS.is_file() else "Marley was dead")
    alphabet = "ab Zé中文字あア한글\n，。 1_-\ud800\U00020000ｱ〇ⅣＡ"
    rng = random.Random(5)
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    assert sum(index_text(t) != " ".join(index_terms(t)) for t in texts) == 0
    row = index_text("猴王大闹天宫")
    assert row.startswith("猴王 王大 大闹 闹天 天宫 ") and row.endswith(" 大闹天宫")  # bigrams, then jieba's words


def test_indexing_pending_chunks_starts_from_the_pending_list(tmp_path):
    """index_pending reads the listed chunks through chunks_unindexed, not by scanning every
    chunk's text for empty terms (what SQLite chose: 0.2 CPU-s a call at 100 M characters,
    twice in every add)."""
    from tgr.ingest.chunking import chunk_text
    from tgr.ingest.corpus import add_document, index_pending, pending_count
    from tgr.ingest.sources import read_documents
    from tgr.knowledge_base import IndexSettings

    conn = storefile.connect(tmp_path / "store.db")
    with db.transaction(conn):
        db.set_meta(conn, **IndexSettings(**SMALL).to_meta())
        for n, doc in enumerate(read_documents([str(EN_CORPUS)])):
            chunks = chunk_text(doc.text, doc.id, SMALL["chunk_size"], SMALL["chunk_overlap"])
            add_document(conn, doc, chunks, index=n > 0)  # the first document's chunks left pending
    pending = pending_count(conn)
    assert 0 < pending < conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    statements = []
    conn.set_trace_callback(statements.append)
    assert index_pending(conn) == pending
    conn.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "FROM chunks_unindexed u" in s]
    assert reads
    for sql in reads:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        assert plan[0].startswith("SCAN u") and not any(step.startswith("SCAN c") for step in plan), plan
    conn.close()
