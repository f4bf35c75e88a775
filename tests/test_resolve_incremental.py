"""Entity resolution kept per document (resolved_names): an add or a delete resolves only the
documents it changed, and the keys are those of resolving every document afresh."""
from __future__ import annotations

import tgr
from tgr.build.resolve import assign_keys

KEYS = ("SELECT rowid, key FROM extracted_entities UNION ALL SELECT rowid, source_key || '|' || target_key "
        "FROM extracted_relations ORDER BY 1, 2")
DOCS = {
    "a.txt": "The Cold House\n\nIn the cold house Scrooge counted his coins. Bob Cratchit worked for Scrooge, "
             "and Scrooge was alone. Marley was dead, and Scrooge knew it.\n",
    "b.txt": "The Counting House\n\nEbenezer Scrooge kept a counting-house in London. Mr. Scrooge said nothing. "
             "Scrooge was alone, and Scrooge counted coins.\n",
    "c.txt": "The Market\n\nFred Scrooge walked to the market in London. Mr. Scrooge bought a goose, "
             "and Scrooge carried it home.\n",
}


def fresh_keys(kb, tmp_path, name: str) -> list:
    """The rows' keys when every document is resolved afresh (a copy without resolved_names' stamp)."""
    copy = tmp_path / f"{name}.db"
    kb.conn.execute("VACUUM INTO ?", (str(copy),))
    with tgr.open(copy, chat="offline", embedder="tgr:hash-384") as other:
        other.conn.execute("DELETE FROM meta WHERE key = 'resolved_names'")
        assign_keys(other.conn)
        assert other.conn.execute("SELECT count(*) FROM merge_pending").fetchone()[0] == 0  # nothing moved
        return other.conn.execute(KEYS).fetchall()


def scrooge_of_a(kb) -> set:
    return {k for (k,) in kb.conn.execute(
        "SELECT DISTINCT e.key FROM extracted_entities e JOIN chunks c ON c.id = e.chunk_id "
        "JOIN documents d ON d.id = c.document_id WHERE d.source LIKE '%a.txt' AND e.name = 'Scrooge'")}


def test_adds_and_deletes_resolve_only_what_changed_and_give_a_fresh_resolutions_keys(tmp_path):
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with tgr.open(tmp_path / "kb.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / "a.txt")])
        assert scrooge_of_a(kb) == {"scrooge"}
        kb.index([str(tmp_path / "b.txt")])  # b names him in full: a's "Scrooge" joins him across documents
        assert scrooge_of_a(kb) == {"ebenezer scrooge"}
        assert kb.conn.execute(KEYS).fetchall() == fresh_keys(kb, tmp_path, "ab")
        assert kb.conn.execute("SELECT count(*) FROM resolve_pending").fetchone()[0] == 0
        kb.index([str(tmp_path / "c.txt")])  # another full name ends with it: the documents disagree
        assert scrooge_of_a(kb) == {"scrooge"}
        assert kb.conn.execute(KEYS).fetchall() == fresh_keys(kb, tmp_path, "abc")
        kb.delete([str(tmp_path / "c.txt")])
        assert scrooge_of_a(kb) == {"ebenezer scrooge"}
        assert kb.conn.execute(KEYS).fetchall() == fresh_keys(kb, tmp_path, "ab2")
        kb.delete([str(tmp_path / "b.txt")])
        assert scrooge_of_a(kb) == {"scrooge"}
        assert kb.conn.execute(KEYS).fetchall() == fresh_keys(kb, tmp_path, "a2")
        documents = {d for (d,) in kb.conn.execute("SELECT id FROM documents")}
        assert {d for (d,) in kb.conn.execute("SELECT DISTINCT document_id FROM resolved_names")} == documents


def test_a_changed_document_is_listed_for_resolution_by_the_store_itself(tmp_path):
    (tmp_path / "a.txt").write_text(DOCS["a.txt"], encoding="utf-8")
    with tgr.open(tmp_path / "kb.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / "a.txt")])
        pending = lambda: [d for (d,) in kb.conn.execute("SELECT document_id FROM resolve_pending")]  # noqa: E731
        assert pending() == []
        document = kb.conn.execute("SELECT id FROM documents").fetchone()[0]
        kb.conn.execute("UPDATE extracted_entities SET key = 'x' WHERE rowid = (SELECT min(rowid) FROM extracted_entities)")
        assert pending() == []  # a key is resolution's own output
        kb.conn.execute("UPDATE extracted_entities SET type = 'location' WHERE name = 'Scrooge'")
        assert pending() == [document]
        kb.conn.execute("DELETE FROM resolve_pending")
        kb.conn.execute("UPDATE documents SET title = 'Marley' WHERE id = ?", (document,))
        assert pending() == [document]
        kb.conn.execute("DELETE FROM resolve_pending")
        kb.conn.execute("DELETE FROM chunks")
        assert pending() == [document]


def test_rebuilding_the_graph_resolves_every_document_afresh(tmp_path):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(DOCS[name], encoding="utf-8")
    with tgr.open(tmp_path / "kb.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
        keys = kb.conn.execute(KEYS).fetchall()
        kb.conn.execute("UPDATE extracted_entities SET key = 'someone else' WHERE name = 'Scrooge'")  # by hand
        kb.index([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
        assert scrooge_of_a(kb) == {"someone else"}  # no document changed: nothing is resolved again
        kb.rebuild("graph")
        assert kb.conn.execute(KEYS).fetchall() == keys
        assert scrooge_of_a(kb) == {"ebenezer scrooge"}
