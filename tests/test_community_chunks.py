"""community_chunks: the count of chunks naming a member of each community, kept in the store
for global search (tgr/query/topic_evidence.py) instead of counted at every question. A count
present is always the count of what the store holds (triggers drop it when members or
mentions change; the cluster stage writes the missing ones); a store without the table (made
by an older tgr) or without a community's count answers the same by counting, and asking never
writes it."""
from __future__ import annotations

import hashlib
import shutil

import pytest
import sqlean as sqlite3
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, SMALL
from tgr.cli import main
from tgr.query.retrieve import Retriever
from tgr.query.topic_evidence import _community_chunks
from tgr.store import opening

COUNTED = ("SELECT c.id, (SELECT count(DISTINCT em.chunk_id) FROM community_members m JOIN entity_mentions em "
           "ON em.entity_id = m.entity_id WHERE m.community_id = c.id) FROM communities c")


def check_community_chunks(kb) -> None:
    """Every community has a kept count, and it is the count of the chunks naming its members."""
    kept = dict(kb.conn.execute("SELECT community_id, chunks FROM community_chunks").fetchall())
    counted = dict(kb.conn.execute(COUNTED).fetchall())
    assert counted and kept == counted


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    path = tmp_path_factory.mktemp("chunks") / "store.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(p) for p in sorted(EN_CORPUS.glob("*.txt"))], **SMALL)
    return path


def copy(built, tmp_path, folder="copy"):
    (tmp_path / folder).mkdir()
    out = tmp_path / folder / "store.db"  # one name: the answer names the store's path
    shutil.copyfile(built, out)
    return out


def test_index_keeps_every_communitys_count(built):
    with tgr.open(built, chat="offline", embedder="tgr:hash-384") as kb:
        check_community_chunks(kb)
        assert kb.conn.execute("SELECT count(*) FROM community_chunks WHERE chunks > 1").fetchone()[0] > 0


def test_a_change_to_members_or_mentions_drops_the_counts_it_touches(built, tmp_path):
    conn = sqlite3.connect(copy(built, tmp_path))
    try:
        community, entity = conn.execute("SELECT community_id, entity_id FROM community_members "
                                         "ORDER BY community_id, entity_id LIMIT 1").fetchone()
        holding = {r[0] for r in conn.execute("SELECT community_id FROM community_members WHERE entity_id = ?",
                                              (entity,))}
        kept = lambda: {r[0] for r in conn.execute("SELECT community_id FROM community_chunks")}  # noqa: E731
        everything = kept()
        other = conn.execute("SELECT id FROM chunks WHERE id NOT IN (SELECT chunk_id FROM entity_mentions "
                             "WHERE entity_id = ?) LIMIT 1", (entity,)).fetchone()[0]
        conn.execute("INSERT INTO entity_mentions(entity_id, chunk_id) VALUES (?, ?)", (entity, other))
        assert kept() == everything - holding  # each community holding the entity, and only those
        conn.execute("INSERT INTO community_chunks(community_id, chunks) SELECT id, 0 FROM communities "
                     "WHERE id NOT IN (SELECT community_id FROM community_chunks)")
        conn.execute("DELETE FROM entity_mentions WHERE entity_id = ? AND chunk_id = ?", (entity, other))
        assert kept() == everything - holding
        conn.execute("INSERT INTO community_chunks(community_id, chunks) SELECT id, 0 FROM communities "
                     "WHERE id NOT IN (SELECT community_id FROM community_chunks)")
        conn.execute("DELETE FROM community_members WHERE community_id = ? AND entity_id = ?", (community, entity))
        assert kept() == everything - {community}
    finally:
        conn.close()


def test_asking_reads_the_kept_counts(built, tmp_path):
    path = copy(built, tmp_path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE community_chunks SET chunks = chunks + 1000")  # no trigger watches the counts
    conn.close()
    conn = opening.connect(path, create=False, readonly=True)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM communities ORDER BY id")]
        counts = _community_chunks(Retriever(conn), ids)
        assert ids and all(counts[c] >= 1000 for c in ids)
    finally:
        conn.close()


QUESTIONS = ["What are the main themes?", "Who is Scrooge?", "What happened at the harbour?"]


def answers(path, monkeypatch) -> list[str]:
    monkeypatch.chdir(path.parent)  # the answer names the store as it was given: the same name
    out = []
    for question in QUESTIONS:
        result = CliRunner().invoke(main, ["ask", path.name, question, "--offline", "--mode", "global"])
        assert result.exit_code == 0, result.output
        out.append(result.output)
    return out


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("older", ["no table", "no counts"])
def test_a_store_without_the_counts_answers_the_same_and_is_not_written(built, tmp_path, monkeypatch, older):
    path = copy(built, tmp_path, "older")
    conn = sqlite3.connect(path)
    with conn:
        if older == "no table":  # as a store of schema 7 is
            for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                           "AND name LIKE 'community_chunks_%'").fetchall():
                conn.execute(f"DROP TRIGGER {trigger}")
            conn.execute("DROP TABLE community_chunks")
            conn.execute("PRAGMA user_version = 7")
        else:
            conn.execute("DELETE FROM community_chunks")
    conn.close()
    before = sha(path)
    assert answers(path, monkeypatch) == answers(copy(built, tmp_path), monkeypatch)
    assert sha(path) == before  # asked, never migrated nor filled


def test_the_next_index_of_a_store_made_before_the_counts_keeps_them(built, tmp_path):
    path = copy(built, tmp_path, "older")
    conn = sqlite3.connect(path)
    with conn:  # as a store of schema 7 is
        for (trigger,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                       "AND name LIKE 'community_chunks_%'").fetchall():
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE community_chunks")
        conn.execute("DROP INDEX documents_extras")
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(p) for p in sorted(EN_CORPUS.glob("*.txt"))], **SMALL)  # nothing new: only the upgrade
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == 8
        check_community_chunks(kb)
        assert kb.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'documents_extras'").fetchone()
