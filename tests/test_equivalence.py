"""After any sequence of adds, replacements and deletes, the store equals a fresh build of
the documents that remain: documents, chunks, entities, relationships with weights and
mentions exactly. Communities are clustered from the previous partition, so that a small
change moves few entities; they form a valid hierarchy with a report for every community
that qualifies, and `rebuild communities` (Leiden from scratch) gives exactly the fresh
build's membership and reports, up to community ids."""
from __future__ import annotations

import random

import pytest

import tgr
from conftest import EN_CORPUS, ZH_CORPUS, ScriptedChat, ScriptedEmbedder

TINY = dict(chunk_size=120, chunk_overlap=20)  # small chunks keep many operations quick
PIECE_CHARS = {EN_CORPUS: 2500, ZH_CORPUS: 700}  # Chinese: more entities per character, slower to tag


def pieces(corpus, n: int) -> list[str]:
    """The first n pieces of a fixture corpus (PIECE_CHARS each or a little more), cut at paragraphs."""
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(corpus.iterdir()))
    result, current = [], ""
    for paragraph in text.split("\n\n"):
        current = f"{current}\n\n{paragraph}" if current else paragraph
        if len(current) >= PIECE_CHARS[corpus]:
            result.append(current.strip())
            current = ""
        if len(result) == n:
            break
    return result


def snapshot(kb) -> dict:
    # the full-text index holds exactly the terms of the stored chunks (raises otherwise)
    kb.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    q = lambda sql: kb.conn.execute(sql).fetchall()
    members: dict[str, frozenset] = {}
    for cid, eid in q("SELECT community_id, entity_id FROM community_members"):
        members[cid] = members.get(cid, frozenset()) | {eid}
    return {
        "documents": sorted(q("SELECT id, source FROM documents")),
        "chunks": sorted(q("SELECT id, document_id, ordinal, text, terms FROM chunks")),
        "entities": sorted(q("SELECT id, name, type, description, degree, mentions FROM entities")),
        "relationships": sorted(q("SELECT id, source_id, target_id, predicate, description, weight "
                                  "FROM relationships")),
        "entity_mentions": sorted(q("SELECT entity_id, chunk_id FROM entity_mentions")),
        "entity_aliases": sorted(q("SELECT entity_id, alias, key, mentions FROM entity_aliases")),
        "relationship_mentions": sorted(q("SELECT relationship_id, chunk_id FROM relationship_mentions")),
        "communities": sorted((level, sorted(members[cid]), sorted(members.get(parent, ())), leaf)
                              for cid, level, parent, leaf in
                              q("SELECT id, level, parent_id, is_leaf FROM communities")),
        "reports": sorted(sorted(members[cid]) for (cid,) in q("SELECT community_id FROM reports")),
    }


GRAPH_KEYS = ("documents", "chunks", "entities", "relationships", "entity_mentions", "relationship_mentions",
              "entity_aliases")


def check_hierarchy(kb) -> None:
    """Every entity in exactly one level-0 community; children split their parent exactly;
    a report for exactly the communities with at least min_community_size members."""
    q = lambda sql: kb.conn.execute(sql).fetchall()
    members: dict[str, set] = {}
    for cid, eid in q("SELECT community_id, entity_id FROM community_members"):
        members.setdefault(cid, set()).add(eid)
    rows = q("SELECT id, level, parent_id, is_leaf FROM communities")
    level0 = [members[cid] for cid, level, _, _ in rows if level == 0]
    entities = {r[0] for r in q("SELECT id FROM entities")}
    assert sum(len(m) for m in level0) == len(entities) and set().union(*level0) == entities
    for cid, level, parent, leaf in rows:
        children = [members[c] for c, _, p, _ in rows if p == cid]
        assert bool(children) != bool(leaf)
        if children:
            assert set().union(*children) == members[cid] and sum(map(len, children)) == len(members[cid])
    minimum = kb.settings().min_community_size
    assert {r[0] for r in q("SELECT community_id FROM reports")} == \
        {cid for cid, m in members.items() if len(m) >= minimum}


def compare(kb, fresh: dict, log) -> None:
    living = snapshot(kb)
    for key in GRAPH_KEYS:
        assert living[key] == fresh[key], (key, log)
    check_hierarchy(kb)
    texts = lambda: sorted(kb.conn.execute("SELECT community_id, full_text, context_hash FROM reports"))
    reports = texts()
    kb.rebuild("reports")  # every report looked at again: the incremental runs missed none
    assert texts() == reports, log
    kb.rebuild("communities")  # from scratch: exactly what a fresh build clusters
    rebuilt = snapshot(kb)
    for key in ("communities", "reports"):
        assert rebuilt[key] == fresh[key], (key, log)


def run_sequence(tmp_path, texts, rng, open_store, steps):
    """Random adds, replacements (same file, new content) and deletes on the store at
    tmp_path/living.db; returns the files that remain and what happened."""
    files = [tmp_path / f"doc{i}.txt" for i in range(len(texts))]
    present: set[int] = set()
    log = []
    with open_store(tmp_path / "living.db") as kb:
        for _ in range(steps):
            absent = [i for i in range(len(files)) if i not in present]
            choice = rng.choice(["add", "add", "delete", "replace"] if present else ["add"])
            if choice == "add" and absent:
                batch = rng.sample(absent, min(len(absent), rng.randint(1, 2)))
                for i in batch:
                    files[i].write_text(texts[i], encoding="utf-8")
                kb.index([str(files[i]) for i in batch], **TINY)
                present.update(batch)
            elif choice == "delete":
                i = rng.choice(sorted(present))
                kb.delete([str(files[i])])
                present.discard(i)
            elif choice == "replace":  # the same file with one paragraph dropped
                i = rng.choice(sorted(present))
                paragraphs = files[i].read_text(encoding="utf-8").split("\n\n")
                if len(paragraphs) > 1:
                    del paragraphs[rng.randrange(len(paragraphs))]
                    files[i].write_text("\n\n".join(paragraphs), encoding="utf-8")
                    kb.index([str(files[i])])
            log.append((choice, sorted(present)))
    return [files[i] for i in sorted(present)], log


def fresh_snapshot(tmp_path, remaining, open_store):
    with open_store(tmp_path / "fresh.db") as kb:
        if remaining:
            kb.index([str(f) for f in remaining], **TINY)
        return snapshot(kb)


def offline(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


@pytest.mark.parametrize("corpus", ["en", "zh"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_offline_sequences_equal_a_fresh_build(tmp_path, corpus, seed):
    texts = pieces(EN_CORPUS if corpus == "en" else ZH_CORPUS, 4)
    remaining, log = run_sequence(tmp_path, texts, random.Random(seed), offline, steps=6)
    fresh = fresh_snapshot(tmp_path, remaining, offline)
    assert fresh["entities"] or not remaining
    with offline(tmp_path / "living.db") as kb:
        compare(kb, fresh, log)


def test_scripted_llm_sequence_equals_a_fresh_build(tmp_path):
    texts = pieces(EN_CORPUS, 2) + pieces(ZH_CORPUS, 2)

    def scripted(path):
        return tgr.open(path, chat=ScriptedChat(), embedder=ScriptedEmbedder())

    remaining, log = run_sequence(tmp_path, texts, random.Random(7), scripted, steps=6)
    fresh = fresh_snapshot(tmp_path, remaining, scripted)
    with scripted(tmp_path / "living.db") as kb:
        compare(kb, fresh, log)
