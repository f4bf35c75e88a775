"""The .db file itself: schema, migrations, meta, bad files, bad inputs, read-only use."""
from __future__ import annotations

import os
import stat

import pytest
import sqlean as sqlite3

import tgr
from conftest import EN_CORPUS, ROOT, SMALL, ScriptedChat, ScriptedEmbedder
from tgr.store import db, opening as storefile
from tgr.store.migrations import migrate
from tgr.errors import InputError, StoreError


def offline_store(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def test_packaged_schema_is_the_top_level_schema():
    assert db.schema_sql() == (ROOT / "schema.sql").read_text(encoding="utf-8")


def test_new_store_has_schema_views_meta_and_user_version(db_path):
    conn = storefile.connect(db_path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"meta", "documents", "chunks", "chunks_fts", "extractions", "entities", "entity_mentions",
            "relationships", "relationship_mentions", "communities", "community_members", "reports",
            "llm_cache", "runs", "model_calls"} <= names
    assert {"entity_overview", "relationship_overview", "report_overview", "cost_by_stage"} <= names
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.get_meta(conn)["format"] == "tgr"
    conn.close()


def test_vec_tables_follow_the_embedder_dimension(db_path):
    with tgr.open(db_path, chat="offline", embedder=ScriptedEmbedder()) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        sql = kb.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'vec_entities'").fetchone()[0]
        assert "float[64]" in sql
        assert kb.meta["embed_model"] == "scripted:embed" and kb.meta["embed_dim"] == "64"
        n = kb.conn.execute("SELECT count(*) FROM vec_entities").fetchone()[0]
        assert n == kb.conn.execute("SELECT count(*) FROM entities").fetchone()[0] > 0


def test_not_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are not the bytes of a database" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        tgr.open(path)
    assert path.read_bytes().startswith(b"these are not")  # untouched


def test_foreign_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a tgr store"):
        tgr.open(path)
    assert path.read_bytes() == before


def test_awkward_paths_and_empty_sqlite_files(tmp_path):
    odd = tmp_path / "a#1?%20.db"
    with offline_store(odd) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    with tgr.open(odd, create=False, readonly=True) as kb:
        assert kb.ask("Who is Scrooge?").sources
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a#1?%20.db"]  # nothing else created
    blank = tmp_path / "blank.db"
    conn = sqlite3.connect(blank)
    conn.execute("CREATE TABLE t(x)")
    conn.execute("DROP TABLE t")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="empty SQLite database"):
        tgr.open(blank, create=False, readonly=True)


def test_truncated_store_is_refused(tmp_path, db_path):
    with offline_store(db_path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    broken = tmp_path / "broken.db"
    broken.write_bytes(db_path.read_bytes()[:4096 * 3])
    with pytest.raises(StoreError):
        with tgr.open(broken) as kb:
            kb.ask("Who is Scrooge?")


def test_newer_schema_is_refused(db_path):
    conn = storefile.connect(db_path)
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer tgr"):
        tgr.open(db_path)


def test_missing_store_is_not_created_for_queries(tmp_path):
    path = tmp_path / "absent.db"
    with pytest.raises(StoreError, match="no such tgr store"):
        tgr.open(path, create=False)
    assert not path.exists()


def test_migrations_run_in_order_and_record_the_version(db_path):
    conn = storefile.connect(db_path)
    conn.execute("PRAGMA user_version = 0")
    applied = []
    migrations = {1: lambda c: applied.append(1) or c.execute("CREATE TABLE m1(x)"),
                  2: lambda c: applied.append(2) or c.execute("CREATE TABLE m2(x)")}
    assert migrate(conn, migrations, target=2) == 2
    assert applied == [1, 2]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    assert db.get_meta(conn)["schema_version"] == "2"
    conn.close()


def test_failed_migration_rolls_back(db_path):
    conn = storefile.connect(db_path)
    conn.execute("PRAGMA user_version = 0")

    def broken(c):
        c.execute("CREATE TABLE half_done(x)")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        migrate(conn, {1: broken}, target=1)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    assert not db.has_table(conn, "half_done")
    conn.close()


def test_round_trip_reopen_keeps_everything(db_path):
    with offline_store(db_path) as kb:
        summary = kb.index([str(EN_CORPUS)], **SMALL)
        first = kb.ask("Who is Marley?").answer
    assert summary.entities > 10 and summary.reports > 0
    assert not os.path.exists(f"{db_path}-wal")  # one self-contained file after a run
    with tgr.open(db_path) as kb:  # no options: the store knows how it was built
        info = kb.info()
        assert info["entities"] == summary.entities
        assert info["settings"]["chunk_size"] == SMALL["chunk_size"]
        assert kb.ask("Who is Marley?").answer == first


def test_chunk_settings_cannot_change_on_an_existing_store(db_path):
    with offline_store(db_path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        with pytest.raises(StoreError, match="chunk size 300"):
            kb.index([str(EN_CORPUS)], chunk_size=500)


def test_bad_inputs(tmp_path, db_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "empty.txt").write_text("   \n")
    (tmp_path / "docs" / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR")
    (tmp_path / "docs" / "good.md").write_text("Captain Ahab commands the Pequod. Ishmael sails with him.")
    (tmp_path / "docs" / "copy.txt").write_text("Captain Ahab commands the Pequod. Ishmael sails with him.")
    warnings = []
    with offline_store(db_path) as kb:
        summary = kb.index([str(tmp_path / "docs")], warn=warnings.append, **SMALL)
        assert summary.documents == 1
        assert any("empty" in w for w in warnings)
        assert any("binary" in w for w in warnings)
        assert any("same content" in w for w in warnings)
        (tmp_path / "sjis.txt").write_bytes("吾輩は猫である。名前はまだ無い。".encode("shift_jis"))
        with pytest.raises(InputError, match="sjis.txt: not UTF-8.*it may be"):
            kb.index([str(tmp_path / "sjis.txt")])
        with pytest.raises(InputError, match="no such file"):
            kb.index([str(tmp_path / "missing.txt")])
        assert kb.info()["documents"] == 1  # nothing lost, nothing half-written


def test_only_unreadable_files_is_an_error(tmp_path, db_path):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01\x02" * 100)
    with offline_store(db_path) as kb:
        with pytest.raises(InputError, match="nothing to index.*empty.txt: empty file.*blob.txt: binary"):
            kb.index([str(tmp_path / "empty.txt"), str(tmp_path / "blob.txt")])
        assert kb.info()["documents"] == 0


def test_stdin_document(db_path):
    import io

    with offline_store(db_path) as kb:
        summary = kb.index(["-"], stdin=io.BytesIO("Queequeg is a harpooner. Queequeg befriends Ishmael.".encode()),
                           **SMALL)
        assert summary.documents == 1
        assert kb.conn.execute("SELECT source FROM documents").fetchone()[0] == "<stdin>"


def test_asking_never_modifies_the_file(tmp_path):
    path = tmp_path / "shipped.db"
    with offline_store(path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    before = path.read_bytes()
    with tgr.open(path, create=False) as kb:
        for mode in ("local", "global", "naive"):
            assert kb.ask("Who is Scrooge?", mode).answer
    with tgr.open(path, create=False, readonly=True) as kb:
        assert "Scrooge" in kb.ask("Who is Scrooge?").answer
        with pytest.raises(StoreError, match="read-only"):
            kb.index([str(EN_CORPUS)])
    assert path.read_bytes() == before
    assert not os.path.exists(f"{path}-wal")


def test_read_only_directory(tmp_path):
    folder = tmp_path / "dataset"
    folder.mkdir()
    path = folder / "shipped.db"
    with offline_store(path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    os.chmod(path, stat.S_IRUSR)
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        with tgr.open(path, create=False) as kb:  # read-only access is detected, no -wal or -journal needed
            assert "Scrooge" in kb.ask("Who is Scrooge?").answer
        assert sorted(os.listdir(folder)) == ["shipped.db"]
    finally:
        os.chmod(folder, stat.S_IRWXU)
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def test_secrets_never_reach_the_store(db_path, monkeypatch):
    secret = "sk-very-secret-key-123"
    monkeypatch.setenv("TGR_API_KEY", secret)
    with tgr.open(db_path, chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    assert secret.encode() not in db_path.read_bytes()


def test_views_answer_plain_sql(db_path):
    with tgr.open(db_path, chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        kb.index([str(EN_CORPUS)], **SMALL)
        top = kb.conn.execute("SELECT name, degree FROM entity_overview LIMIT 1").fetchone()
        assert top[1] == kb.conn.execute("SELECT max(degree) FROM entities").fetchone()[0]
        rel = kb.conn.execute("SELECT source, target FROM relationship_overview LIMIT 1").fetchone()
        assert all(isinstance(x, str) for x in rel)
        levels = [r[0] for r in kb.conn.execute("SELECT level FROM report_overview")]
        assert levels == sorted(levels) and levels
        stages = {r[0] for r in kb.conn.execute("SELECT stage FROM cost_by_stage")}
        assert {"extract", "report"} <= stages


def test_utf16_files_are_read(tmp_path, db_path):
    path = tmp_path / "notepad.txt"
    path.write_bytes("Scrooge met Marley in the counting-house.".encode("utf-16"))
    with offline_store(db_path) as kb:
        assert kb.index([str(path)], **SMALL).documents == 1
        assert kb.conn.execute("SELECT text FROM documents").fetchone()[0].startswith("Scrooge met")


def test_two_index_processes_on_one_store(tmp_path):
    import subprocess
    import sys

    db = tmp_path / "shared.db"
    command = [sys.executable, "-m", "tgr.cli", "index", str(db), str(EN_CORPUS), "--offline",
               "--chunk-size", "300", "--chunk-overlap", "40", "-q"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in runs]
    assert all(code == 0 for code, _ in results), results
    with tgr.open(db, create=False, readonly=True) as kb:
        info = kb.info()
        assert info["documents"] == 2 and info["chunks"] == info["chunks_extracted"]
        assert kb.conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0] == info["chunks"]


def test_migration_2_adds_report_context_hash_to_a_version_1_store(db_path):
    with offline_store(db_path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    conn = sqlite3.connect(db_path)  # make it look like a store written by schema version 1
    _drop_document_ids(conn)
    conn.execute("ALTER TABLE reports DROP COLUMN context_hash")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with tgr.open(db_path, readonly=True) as kb:  # a read-only open does not migrate, and still answers
        assert kb.ask("Who is Scrooge?").sources
    with tgr.open(db_path) as kb:  # opening and asking do not migrate either; the first write does
        assert kb.ask("Who is Scrooge?").sources
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == 1
        kb.index([str(EN_CORPUS)])  # and the upgraded store keeps working
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION
        columns = [r[1] for r in kb.conn.execute("PRAGMA table_info(reports)")]
        assert "context_hash" in columns
        assert kb.conn.execute("SELECT count(*) FROM reports WHERE context_hash IS NULL").fetchone()[0] == 0


def _drop_document_ids(conn) -> None:
    """Undo schema 3 (documents.external_id and documents.metadata)."""
    conn.execute("DROP INDEX documents_by_external_id")
    conn.execute("DROP INDEX IF EXISTS documents_extras")  # (schema 8)
    conn.execute("ALTER TABLE documents DROP COLUMN external_id")
    conn.execute("ALTER TABLE documents DROP COLUMN metadata")


def test_migration_3_adds_document_ids_and_metadata_to_a_version_2_store(db_path, tmp_path):
    with offline_store(db_path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    conn = sqlite3.connect(db_path)  # make it look like a store written by schema version 2
    _drop_document_ids(conn)
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with tgr.open(db_path, readonly=True) as kb:  # not migrated, still answers, sources without ids
        sources = kb.ask("Who is Scrooge?").sources
        assert sources and all(s["external_id"] is None and s["metadata"] == {} for s in sources)
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "r1", "title": "Marley", "text": "Marley was dead: to begin with.", '
                    '"url": "https://example.org/marley"}\n', encoding="utf-8")
    with tgr.open(db_path) as kb:
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == 2  # opening does not migrate
        kb.index([str(rows)])  # the first write does, and the upgraded store keeps working
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION >= 3
        assert kb.meta["schema_version"] == str(db.SCHEMA_VERSION)
        columns = {r[1]: r for r in kb.conn.execute("PRAGMA table_info(documents)")}
        assert {"external_id", "metadata"} <= set(columns)
        indexes = {r[1] for r in kb.conn.execute("PRAGMA index_list(documents)")}
        assert "documents_by_external_id" in indexes
        # the document stored before the migration gets the defaults; the new one its id and metadata
        assert kb.conn.execute("SELECT metadata FROM documents WHERE external_id IS NULL").fetchall() == [("{}",)]
        assert kb.conn.execute("SELECT title, metadata FROM documents WHERE external_id = 'r1'").fetchone() == (
            "Marley", '{"url": "https://example.org/marley"}')


def test_a_write_run_on_a_current_store_leaves_its_schema_alone(tmp_path):
    """migrate() has nothing to do on a store of the current schema without portable vectors
    (their vec0 tables exist only where a store keeps them): no view is dropped and made again."""
    from tgr.store.migrations import schema_current

    story = tmp_path / "story.txt"
    story.write_text("Ebenezer Scrooge kept a counting-house in London with Bob Cratchit.\n", encoding="utf-8")
    with tgr.open(tmp_path / "kb.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(story)])
        assert schema_current(kb.conn)
        assert not kb.conn.execute("SELECT 1 FROM sqlite_master WHERE name LIKE 'vec_portable%'").fetchone()
    with tgr.open(tmp_path / "kb.db", chat="offline", embedder="tgr:hash-384") as kb:
        before = kb.conn.execute("PRAGMA schema_version").fetchone()[0]
        kb.index([str(story)])
        assert kb.conn.execute("PRAGMA schema_version").fetchone()[0] == before
