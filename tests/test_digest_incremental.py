"""The content digest a run keeps up to date from the rows it changed (tgr/store/integrity.py,
adhash1): after adds, deletes and replacements it equals the digest read afresh; a value
changed anywhere afterwards is still caught by `tgr check`; a store recorded with the older
whole-store sha256 digest still checks as before."""
from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, FIXTURES
from tgr.cli import main
from tgr.store import integrity
from tgr.store.opening import connect

SMALL = dict(chunk_size=300, chunk_overlap=40)
PART1, PART2 = EN_CORPUS / "carol_stave1_part1.txt", EN_CORPUS / "carol_stave1_part2.txt"


def check(path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["check", str(path)])
    return result.exit_code, result.output


def digests(path) -> tuple[str, str]:
    """(recorded, read afresh) with a plain connection."""
    conn = connect(path, create=False, readonly=True, upgrade=False)
    try:
        return integrity.recorded_digest(conn), integrity.content_digest(conn)
    finally:
        conn.close()


def index(path, *files, **options) -> None:
    with tgr.open(path, chat="offline") as kb:
        kb.index([str(f) for f in files], **SMALL, **options)


@pytest.fixture
def built(tmp_path):
    path = tmp_path / "s.db"
    index(path, PART1)
    return path


def test_adds_deletes_and_replacements_keep_the_digest_equal_to_a_fresh_one(built, tmp_path):
    recorded, fresh = digests(built)
    assert recorded == fresh and recorded.startswith(integrity.SUM_PREFIX)
    index(built, PART2)  # an add
    assert digests(built)[0] == digests(built)[1]
    extra = tmp_path / "extra.txt"
    extra.write_text("Marley's clerk walked to Nantucket in the winter. He met Captain Ahab at the harbour.\n")
    index(built, extra)
    assert digests(built)[0] == digests(built)[1]
    extra.write_text("Marley's clerk sailed to London in the spring. He met Bob Cratchit at the office.\n")
    index(built, extra)  # the same path, changed content: a replacement
    assert digests(built)[0] == digests(built)[1]
    with tgr.open(built, chat="offline") as kb:
        kb.delete([str(PART1)])
    assert digests(built)[0] == digests(built)[1]
    assert check(built)[0] == 0
    # and the same content built from scratch has the same digest (the ledger aside: its runs differ)
    scratch = tmp_path / "scratch.db"
    index(scratch, PART2, extra)
    same = "SELECT id FROM documents ORDER BY id"
    assert sqlite3.connect(scratch).execute(same).fetchall() == sqlite3.connect(built).execute(same).fetchall()


@pytest.mark.parametrize("sql", [
    "UPDATE chunks SET text = text || ' ' WHERE rowid = (SELECT min(rowid) FROM chunks)",  # a tracked table
    "UPDATE entities SET description = 'x' WHERE rowid = (SELECT max(rowid) FROM entities)",
    "DELETE FROM entity_mentions WHERE rowid = (SELECT max(rowid) FROM entity_mentions)",
    "UPDATE meta SET value = value || ' ' WHERE key = 'chunk_size'",  # meta, read afresh every run
    "UPDATE chunks_fts_docsize SET sz = sz WHERE 0",  # no change at all: still ok (below)
    "UPDATE vec_chunks_rowids SET chunk_offset = chunk_offset WHERE 0",
])
def test_a_value_changed_after_an_incremental_add_is_caught(built, tmp_path, sql):
    index(built, PART2)
    conn = sqlite3.connect(built)
    changed = conn.execute(sql).rowcount
    conn.commit()
    conn.close()
    code, output = check(built)
    if changed:
        assert code == 2 and "content changed since it was built" in output, output
    else:
        assert code == 0, output


def test_a_changed_vector_or_index_row_is_caught(built):
    """Shadow tables (sqlite-vec's vectors, FTS5's index) are summed afresh: a byte changed in
    a vector blob changes the digest."""
    index(built, PART2)
    conn = sqlite3.connect(built)
    blob = bytearray(conn.execute("SELECT vectors FROM vec_chunks_vector_chunks00 LIMIT 1").fetchone()[0])
    blob[5] ^= 1
    conn.execute("UPDATE vec_chunks_vector_chunks00 SET vectors = ? WHERE rowid = "
                 "(SELECT min(rowid) FROM vec_chunks_vector_chunks00)", (bytes(blob),))
    conn.commit()
    conn.close()
    code, output = check(built)
    assert code == 2 and "content changed since it was built" in output, output


def test_a_change_made_between_runs_stays_caught_after_the_next_run(built):
    """The next run builds on the recorded sums, not on what the file holds: a change from
    outside tgr is not absorbed into the new digest (the old whole-store digest absorbed it)."""
    conn = sqlite3.connect(built)
    conn.execute("UPDATE relationships SET description = 'planted' WHERE rowid = (SELECT min(rowid) FROM relationships)")
    conn.commit()
    conn.close()
    assert check(built)[0] == 2
    index(built, PART2)
    code, output = check(built)
    assert code == 2 and "content changed since it was built" in output, output


def test_recorded_sums_that_are_not_the_content_are_refused(built):
    conn = sqlite3.connect(built)
    state = conn.execute("SELECT value FROM meta WHERE key = ?", (integrity.STATE_KEY,)).fetchone()[0]
    state = json.loads(state)
    state["sums"]["chunks"] = format(int(state["sums"]["chunks"], 16) ^ 1, "064x")
    conn.execute("UPDATE meta SET value = ? WHERE key = ?", (json.dumps(state), integrity.STATE_KEY))
    conn.commit()
    conn.close()
    code, output = check(built)
    assert code == 2 and "table sums" in output, output
    index(built, PART2)  # a run does not build on sums that do not give the recorded digest
    assert check(built)[0] == 0


def test_the_tracker_follows_inserts_updates_deletes_replaces_and_rollbacks(built):
    conn = connect(built, create=False, upgrade=False)
    try:
        tracker = integrity.DigestTracker(conn)
        assert tracker.active
        conn.execute("BEGIN")
        conn.execute("INSERT INTO llm_cache(key, model, prompt, params, response, prompt_tokens, completion_tokens) VALUES ('k', 'm', 'p', '{}', 'r', 1, 1)")
        conn.execute("INSERT OR REPLACE INTO llm_cache(key, model, prompt, params, response, prompt_tokens, completion_tokens) "
                     "VALUES ('k', 'm', 'p2', '{}', 'r2', 2, 2)")  # a REPLACE deletes the old row
        conn.execute("UPDATE entities SET description = description || '!' WHERE rowid % 3 = 0")
        conn.execute("DELETE FROM entity_mentions WHERE rowid % 5 = 0")
        conn.execute("UPDATE chunks SET text = CAST(text AS BLOB) WHERE rowid = (SELECT min(rowid) FROM chunks)")
        conn.execute("COMMIT")
        conn.execute("BEGIN")
        conn.execute("DELETE FROM relationships")
        conn.execute("ROLLBACK")  # its terms go with it
        conn.execute("BEGIN")
        conn.execute("SAVEPOINT s")
        conn.execute("DELETE FROM communities")
        conn.execute("ROLLBACK TO s")
        conn.execute("RELEASE s")
        conn.execute("COMMIT")
        assert integrity.record_digest(conn, tracker) == integrity.content_digest(conn)
        assert not conn.execute("SELECT 1 FROM sqlite_temp_master").fetchall()  # its triggers are gone
    finally:
        conn.close()


def test_another_connection_writing_meanwhile_means_a_fresh_reading(built):
    conn = connect(built, create=False, upgrade=False)
    try:
        tracker = integrity.DigestTracker(conn)
        assert tracker.active
        other = sqlite3.connect(built)
        other.execute("UPDATE entities SET description = 'elsewhere' WHERE rowid = (SELECT min(rowid) FROM entities)")
        other.commit()
        other.close()
        assert tracker.finish() is None  # PRAGMA data_version moved: every table is read afresh
        assert integrity.record_digest(conn) == integrity.content_digest(conn)
    finally:
        conn.close()


def test_a_store_with_the_older_sha256_digest_checks_and_moves_on(tmp_path):
    copy = tmp_path / "demo.db"
    shutil.copy(FIXTURES / "demo_carol.db", copy)
    recorded, _ = digests(copy)
    assert recorded.startswith(integrity.DIGEST_PREFIX)
    assert check(copy)[0] == 0
    conn = sqlite3.connect(copy)
    conn.execute("UPDATE chunks SET text = text || ' ' WHERE rowid = (SELECT min(rowid) FROM chunks)")
    conn.commit()
    conn.close()
    assert check(copy)[0] == 2  # the older digest still catches a change
    shutil.copy(FIXTURES / "demo_carol.db", copy)
    index(copy, PART2)  # the next run records an adhash1 digest
    recorded, fresh = digests(copy)
    assert recorded == fresh and recorded.startswith(integrity.SUM_PREFIX)
    assert check(copy)[0] == 0
