"""The state an incremental run keeps at write time instead of recomputing it: the names
whose extraction rows changed (merge_pending), the normalised names on extraction rows,
each entity's input hash, the graph's freshness hash, and embed_hash (NULL exactly where
a row's text is not yet in its vector). After any sequence of adds, replacements and
deletes, all of it equals what a full recomputation gives."""
from __future__ import annotations

import random
import sqlite3

import pytest

import tgr
from conftest import EN_CORPUS, SMALL, ZH_CORPUS, ScriptedChat, ScriptedEmbedder
from test_community_chunks import check_community_chunks
from test_equivalence import pieces, run_sequence
from tgr.store import db
from tgr.build.cluster import cluster, stored_communities
from tgr.build.embed import TARGETS
from tgr.build.extract import save_extraction
from tgr.build.merge_graph import merge_graph, needs_merge, plan_merge, store_merge, summarise
from tgr.build.idle_work import Overlap
from tgr.build.resolve import assign_keys
from tgr.parsing import RawEntity as E
from tgr.parsing import RawRelation as R
from tgr.prompts import Prompts
from tgr.text import content_hash, normalise_name


def offline(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def scripted(path):
    return tgr.open(path, chat=ScriptedChat(), embedder=ScriptedEmbedder())


def kept_state(kb) -> dict:
    q = lambda sql: sorted(kb.conn.execute(sql).fetchall())
    return {"entities": q("SELECT id, name, type, description, degree, mentions, input_hash FROM entities"),
            "relationships": q("SELECT id, source_id, target_id, predicate, description, weight FROM relationships"),
            "merge": kb.meta.get("fresh.merge"), "cluster": kb.meta.get("fresh.cluster")}


def check_row_state(kb) -> None:
    """Nothing pending after a run; every key is the resolved one; every vector's hash is
    the hash of its row's current text."""
    assert kb.conn.execute("SELECT count(*) FROM merge_pending").fetchone()[0] == 0
    assign_keys(kb.conn)  # every row's key is the one tgr.build.resolve gives: nothing changes
    assert kb.conn.execute("SELECT count(*) FROM merge_pending").fetchone()[0] == 0
    check_community_chunks(kb)  # every community's count kept, and the count of what it names now
    model = kb.meta["embed_model"]
    for vec_table, table, key, text_sql in TARGETS.values():
        rows = kb.conn.execute(f"SELECT {key}, {text_sql}, embed_hash FROM {table}").fetchall()
        assert rows, table
        for rid, text, stored in rows:
            assert stored == content_hash(model, text), (table, rid)
        vectors = {r[0] for r in kb.conn.execute(f"SELECT id FROM {vec_table}")}
        assert vectors == {r[0] for r in rows}, table


@pytest.mark.parametrize("open_store,corpus,seed", [(offline, EN_CORPUS, 11), (offline, ZH_CORPUS, 12),
                                                    (scripted, EN_CORPUS, 13)])
def test_state_kept_at_write_time_equals_a_full_recomputation(tmp_path, open_store, corpus, seed):
    texts = pieces(corpus, 4)
    remaining, log = run_sequence(tmp_path, texts, random.Random(seed), open_store, steps=6)
    with open_store(tmp_path / "living.db") as kb:
        if not remaining:  # the sequence ended empty: give the check something to look at
            kb.index([str(tmp_path / "doc0.txt")])
        check_row_state(kb)
        kept = kept_state(kb)
        assert kept["merge"] and kept["cluster"]
        summary = kb.rebuild("graph")  # every entity merged again from all rows
        assert kept_state(kb) == kept, log
        assert summary.model_calls == 0
        check_row_state(kb)


def test_hand_edits_of_extraction_rows_reach_the_graph(tmp_path, db_path):
    """Rows inserted or changed with sqlite3, without their keys, are noticed and keyed."""
    doc = tmp_path / "ships.txt"
    doc.write_text("Captain Nemo commands the Nautilus. The Nautilus sails under the sea.\n")
    with offline(db_path) as kb:
        kb.index([str(doc)], chunk_size=300, chunk_overlap=40)
        chunk = kb.conn.execute("SELECT id FROM chunks").fetchone()[0]
        kb.conn.execute("INSERT INTO extracted_entities(chunk_id, position, name, type, description) "
                        "VALUES (?, 99, ' Ned  Land', 'person', 'A harpooner.')", (chunk,))
        kb.conn.execute("INSERT INTO extracted_relations(chunk_id, position, source, target, predicate, "
                        "description) VALUES (?, 99, 'Ned Land', 'Nautilus', 'sails on', 'Ned sails.')", (chunk,))
        kb.conn.execute("UPDATE extracted_entities SET description = 'An underwater ship.' "
                        "WHERE name = 'Nautilus' AND position = (SELECT min(position) FROM extracted_entities "
                        "WHERE name = 'Nautilus')")
        kb.index([str(doc)])
        entities = dict(kb.conn.execute("SELECT id, description FROM entities"))
        assert entities["ned land"] == "A harpooner."
        assert "An underwater ship." in entities["nautilus"]
        assert kb.conn.execute("SELECT count(*) FROM relationships WHERE source_id = 'ned land' "
                               "OR target_id = 'ned land'").fetchone()[0] == 1
        check_row_state(kb)


def test_hand_edits_of_embedded_text_are_embedded_again(tmp_path, db_path):
    """An entity description or report summary changed with sqlite3 gets a new vector on the
    next run (schema.sql's triggers mark it), and nothing else is embedded again."""
    doc = tmp_path / "ships.txt"
    doc.write_text("Captain Nemo commands the Nautilus. The Nautilus sails under the sea with Nemo.\n")
    with offline(db_path) as kb:
        kb.index([str(doc)], chunk_size=300, chunk_overlap=40)
        report = kb.conn.execute("SELECT community_id FROM reports ORDER BY community_id").fetchone()[0]
        before = {table: dict(kb.conn.execute(f"SELECT id, embedding FROM {table}"))
                  for table in ("vec_entities", "vec_reports", "vec_chunks")}
        kb.conn.execute("UPDATE entities SET description = 'A submarine.' WHERE id = 'nautilus'")
        kb.conn.execute("UPDATE reports SET summary = 'Edited by hand.' WHERE community_id = ?", (report,))
        kb.conn.execute("UPDATE entities SET mentions = mentions WHERE id = 'nemo'")  # text unchanged
        kb.conn.commit()
        summary = kb.index([])
        after = {table: dict(kb.conn.execute(f"SELECT id, embedding FROM {table}"))
                 for table in ("vec_entities", "vec_reports", "vec_chunks")}
        changed = {(table, rid) for table in before for rid in before[table]
                   if before[table][rid] != after[table].get(rid)}
        assert changed == {("vec_entities", "nautilus"), ("vec_reports", report)}
        assert summary.model_calls == 0
        check_row_state(kb)


def test_a_merge_reads_only_the_rows_of_changed_names(db_path):
    with scripted(db_path) as kb:
        conn = kb.conn
        conn.execute("INSERT INTO documents(id, source, title, text, chars) VALUES ('d', 'd.txt', 'd', 'x', 1)")
        for ordinal, chunk in enumerate(("c1", "c2")):
            conn.execute("INSERT INTO chunks(id, document_id, ordinal, text, char_start, char_end, tokens) "
                         "VALUES (?, 'd', ?, 'x', 0, 1, 1)", (chunk, ordinal))
        save_extraction(conn, "c1", "test", [E("Scrooge", "person", "A miser."), E("Marley", "person", "Dead.")],
                        [R("Scrooge", "Marley", "partner of", "Partners.")])
        gateway, prompts = kb.gateway(), Prompts()
        merge_graph(conn, gateway, prompts, inputs=needs_merge(conn, gateway, prompts, 300, False))
        assert needs_merge(conn, gateway, prompts, 300, False) is None
        save_extraction(conn, "c2", "test", [E("Fred", "person", "The nephew."), E("SCROOGE", "person", "Uncle.")],
                        [R("Fred", "Scrooge", "nephew of", "Fred is his nephew.")])
        inputs = needs_merge(conn, gateway, prompts, 300, False)
        assert sorted(inputs.names) == ["Fred", "SCROOGE", "Scrooge", "fred", "scrooge"]  # names and keys
        result = merge_graph(conn, gateway, prompts, inputs=inputs)
        assert result["recomputed"] == 2  # fred and scrooge; marley is not read again
        assert result["changed_entities"] == {"fred", "scrooge"}
        assert "Uncle." in conn.execute("SELECT description FROM entities WHERE id = 'scrooge'").fetchone()[0]
        assert needs_merge(conn, gateway, prompts, 300, False) is None
        other = needs_merge(conn, gateway, prompts, 40, False)  # other settings: every row
        assert other is not None and other.names is None


def _downgrade_to_schema_4(path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("""
        BEGIN;
        DROP TRIGGER extracted_entity_added; DROP TRIGGER extracted_entity_removed;
        DROP TRIGGER extracted_entity_changed; DROP TRIGGER extracted_relation_added;
        DROP TRIGGER extracted_relation_removed; DROP TRIGGER extracted_relation_changed;
        DROP TRIGGER extracted_entity_key_added; DROP TRIGGER extracted_entity_key_removed;
        DROP TRIGGER extracted_entity_key_changed; DROP TRIGGER extracted_relation_key_added;
        DROP TRIGGER extracted_relation_key_removed; DROP TRIGGER extracted_relation_key_changed;
        DROP TABLE entity_aliases;
        DROP TABLE merge_pending;
        DROP INDEX extracted_entities_by_key; DROP INDEX extracted_relations_by_source;
        DROP INDEX extracted_relations_by_target;
        ALTER TABLE extracted_entities DROP COLUMN key;
        ALTER TABLE extracted_relations DROP COLUMN source_key;
        ALTER TABLE extracted_relations DROP COLUMN target_key;
        UPDATE entities SET embed_hash = 'stale' WHERE id = (SELECT min(id) FROM entities);
        PRAGMA user_version = 4;
        COMMIT;
    """)
    conn.close()


def test_migration_5_keys_the_rows_and_resets_stale_embed_hashes(tmp_path):
    part1, part2 = EN_CORPUS / "carol_stave1_part1.txt", EN_CORPUS / "carol_stave1_part2.txt"
    with offline(tmp_path / "fresh.db") as kb:
        kb.index([str(part1), str(part2)], chunk_size=300, chunk_overlap=40)
        fresh = kept_state(kb)
    with offline(tmp_path / "old.db") as kb:
        kb.index([str(part1)], chunk_size=300, chunk_overlap=40)
        stale = kb.conn.execute("SELECT min(id) FROM entities").fetchone()[0]
    _downgrade_to_schema_4(tmp_path / "old.db")
    with offline(tmp_path / "old.db") as kb:
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == 4  # opening does not migrate
        kb.index([str(part2)])
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION
        check_row_state(kb)  # the stale vector was redone, every row keyed
        assert kb.conn.execute("SELECT embed_hash FROM entities WHERE id = ?", (stale,)).fetchone()[0] != "stale"
        state = kept_state(kb)
        for key in ("entities", "relationships", "merge"):
            assert state[key] == fresh[key], key


def test_clustering_only_the_changed_components_gives_the_whole_graphs_result(tmp_path):
    """An addition re-clusters only the connected components holding a changed entity; the
    result is what hierarchical Leiden from the previous partition gives on the whole graph."""
    from tgr.build.cluster import hierarchical_leiden

    texts = pieces(EN_CORPUS, 3) + pieces(ZH_CORPUS, 1)
    files = []
    for i, text in enumerate(texts):
        files.append(tmp_path / f"doc{i}.txt")
        files[-1].write_text(text, encoding="utf-8")
    q = lambda kb, sql: {r[0]: r[1:] for r in kb.conn.execute(sql).fetchall()}
    entity_sql = "SELECT id, name, type, description, degree, mentions, input_hash FROM entities"
    edge_sql = "SELECT id, source_id, target_id, predicate, description, weight FROM relationships"
    with offline(tmp_path / "store.db") as kb:
        kb.index([str(f) for f in files[:2]], chunk_size=120, chunk_overlap=20)
        previous = stored_communities(kb.conn)
        entities, edges = q(kb, entity_sql), q(kb, edge_sql)
        kb.index([str(f) for f in files[2:]])
        new_entities, new_edges = q(kb, entity_sql), q(kb, edge_sql)
        nodes = sorted(new_entities)
        graph = sorted((s, t, w) for s, t, _, _, w in new_edges.values())
        after = {(c.level, frozenset(c.members), c.is_leaf) for c in stored_communities(kb.conn)}
        kept = {c.id for c in stored_communities(kb.conn)} & {c.id for c in previous}
    # what the merge reports as changed: entities whose rows differ, and both ends of changed edges
    changed = {e for e in entities.keys() | new_entities.keys() if entities.get(e) != new_entities.get(e)}
    for rid in edges.keys() | new_edges.keys():
        if edges.get(rid) != new_edges.get(rid):
            changed.update(row[0] for row in (edges.get(rid), new_edges.get(rid)) if row)
            changed.update(row[1] for row in (edges.get(rid), new_edges.get(rid)) if row)
    start: dict = {}
    for c in previous:
        start.setdefault(c.level, {}).update((m, c.id) for m in c.members)
    expected = hierarchical_leiden(nodes, graph, max_cluster_size=10, seed=42, previous=start,
                                   unchanged=set(nodes) - changed)
    assert after == {(c.level, frozenset(c.members), c.is_leaf) for c in expected}
    untouched = [c for c in previous if not changed & set(c.members)]
    assert untouched and kept >= {c.id for c in untouched}  # communities of unchanged components stay


def test_a_changed_merge_trigger_is_refused(tmp_path):
    """tgr's own triggers are part of the schema it checks: one rewritten to do something
    else makes the store refused before anything runs."""
    with offline(tmp_path / "s.db") as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], chunk_size=300, chunk_overlap=40)
    conn = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    conn.executescript("""
        DROP TRIGGER extracted_entity_added;
        CREATE TRIGGER extracted_entity_added AFTER INSERT ON extracted_entities BEGIN
            DELETE FROM documents;
        END;
    """)
    conn.close()
    with pytest.raises(tgr.StoreError, match="extracted_entity_added"):
        offline(tmp_path / "s.db")


def test_a_write_restores_schema_objects_dropped_by_hand(tmp_path):
    """A current store is not rebuilt on every write, but one missing an index, a view or a
    trigger of schema.sql gets it back from the next writing command."""
    path = tmp_path / "s.db"
    with offline(path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], chunk_size=300, chunk_overlap=40)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("DROP INDEX extracted_entities_by_key; DROP VIEW entity_overview; "
                       "DROP TRIGGER extracted_relation_removed;")
    conn.close()
    with offline(path) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part2.txt")])
        names = {r[0] for r in kb.conn.execute("SELECT name FROM sqlite_master")}
    assert {"extracted_entities_by_key", "entity_overview", "extracted_relation_removed"} <= names


def _clustered(conn) -> list:
    return sorted((c.id, c.level, c.parent_id, c.members, c.is_leaf) for c in stored_communities(conn))


def test_clustering_while_the_summaries_are_awaited_gives_the_same_communities(tmp_path):
    """An incremental merge with a summary wave clusters the graph it is about to store in
    that wait; cluster() takes that result, and it is what clustering afterwards gives."""
    settings = dict(max_cluster_size=10, seed=42, resolution=1.0)
    texts = pieces(EN_CORPUS, 2)
    for i, text in enumerate(texts):
        (tmp_path / f"doc{i}.txt").write_text(text, encoding="utf-8")
    with tgr.open(tmp_path / "a.db", chat=ScriptedChat(delay=0.2), embedder=ScriptedEmbedder()) as kb:
        kb.index([str(tmp_path / "doc0.txt"), str(tmp_path / "doc1.txt")], chunk_size=120, chunk_overlap=20,
                 summary_tokens=40)
        conn = kb.conn
        hub = conn.execute("SELECT name FROM entities ORDER BY degree DESC, id LIMIT 1").fetchone()[0]
        conn.execute("INSERT INTO documents(id, source, title, text, chars) VALUES ('d9', 'd9.txt', 'd9', 'x', 1)")
        conn.execute("INSERT INTO chunks(id, document_id, ordinal, text, char_start, char_end, tokens) "
                     "VALUES ('c9', 'd9', 0, 'x', 0, 1, 1)")
        long = " ".join(f"{hub} keeps the counting-house ledger number {n} open." for n in range(12))
        save_extraction(conn, "c9", "test", [E(hub, "person", long), E("Ledger Clerk", "person", "A clerk.")],
                        [R(hub, "Ledger Clerk", "employs", f"{hub} employs the ledger clerk.")])
        conn.execute("VACUUM INTO ?", (str(tmp_path / "b.db"),))
        gateway, prompts = kb.gateway(), Prompts()
        overlap = Overlap(conn, gateway, settings)
        plan = plan_merge(conn, gateway, prompts, summary_tokens=40, inputs=needs_merge(conn, gateway, prompts, 40, False))
        idle = overlap.during_summaries(plan, first_clustering=False, incremental=True)
        merged = store_merge(conn, plan, summarise(gateway, plan, idle=idle))
        assert kb.gateway().usage["summarize"].calls >= 1  # there was a wave to wait for
        result = cluster(conn, **settings, changed=merged["changed_entities"], precomputed=overlap.clustered_meanwhile)
        assert result["computed_meanwhile"]
        during = _clustered(conn)
    with tgr.open(tmp_path / "b.db", chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        gateway, prompts = kb.gateway(), Prompts()
        merged = merge_graph(kb.conn, gateway, prompts, summary_tokens=40,
                             inputs=needs_merge(kb.conn, gateway, prompts, 40, False))
        result = cluster(kb.conn, **settings, changed=merged["changed_entities"])
        assert not result["computed_meanwhile"]
        assert _clustered(kb.conn) == during


@pytest.mark.parametrize("page", [2, 4096])
def test_the_embed_stage_reads_the_rows_to_embed_once(db_path, page):
    """embed_all finds the rows to embed (embed_hash NULL) in one pass when one page holds
    them (an add: no count beforehand, no read past the last page), and in pages otherwise;
    either way exactly the rows marked get new vectors."""
    from tgr.build.embed import embed_all

    with offline(db_path) as kb:
        kb.index([str(EN_CORPUS)], **SMALL)
        ids = [r[0] for r in kb.conn.execute("SELECT id FROM entities ORDER BY id LIMIT 5")]
        before = dict(kb.conn.execute("SELECT id, embedding FROM vec_entities"))
        with db.transaction(kb.conn):
            kb.conn.executemany("UPDATE entities SET description = description || ' Edited.' WHERE id = ?",
                                [(i,) for i in ids])
        statements = []
        kb.conn.set_trace_callback(statements.append)
        assert embed_all(kb.conn, kb.gateway(), page=page) == len(ids)
        kb.conn.set_trace_callback(None)
        after = dict(kb.conn.execute("SELECT id, embedding FROM vec_entities"))
    assert {i for i in before if before[i] != after[i]} == set(ids) and after.keys() == before.keys()
    reads = [s for s in statements if "embed_hash IS NULL" in s and "UPDATE" not in s.upper()[:10]]
    per_kind = {kind: sum(f"FROM {kind} " in s for s in reads) for kind in ("entities", "chunks", "reports")}
    if page > len(ids):
        assert per_kind == {"entities": 1, "chunks": 1, "reports": 1}
    else:  # pages of two: three reads of five rows, and the count of them
        assert per_kind["entities"] == 4
