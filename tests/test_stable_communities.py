"""Community ids, reports, ratings and vectors survive an unrelated addition."""
from __future__ import annotations

import re

import pytest

import tgr
from conftest import EN_CORPUS, SMALL, ZH_CORPUS, ScriptedChat, ScriptedEmbedder

UNRELATED = ZH_CORPUS / "xiyouji_ch1_part1.txt"  # shares no entity with the Carol


def reports(kb):
    return {r[0]: r[1:] for r in kb.conn.execute(
        "SELECT community_id, full_text, rating, embed_hash, context_hash FROM reports")}


def members(kb):
    result = {}
    for cid, eid in kb.conn.execute("SELECT community_id, entity_id FROM community_members"):
        result.setdefault(cid, set()).add(eid)
    return result


@pytest.mark.parametrize("model", ["offline", "scripted"])
def test_citations_survive_an_unrelated_addition(db_path, model):
    chat = ScriptedChat() if model == "scripted" else "offline"
    embedder = ScriptedEmbedder() if model == "scripted" else "tgr:hash-384"
    with tgr.open(db_path, chat=chat, embedder=embedder) as kb:
        kb.index([str(EN_CORPUS)], **SMALL)
        answer = kb.ask("What are the main themes of the story?", mode="global")
        cited = set(re.findall(r"\[Reports: ([^\]]+)\]", answer.answer))
        cited = {cid.strip() for group in cited for cid in group.split(",")} | set(answer.reports)
        before, groups = reports(kb), members(kb)
        vectors = dict(kb.conn.execute("SELECT id, embedding FROM vec_reports"))
        prompts_before = len(chat.prompts) if model == "scripted" else 0

        summary = kb.index([str(UNRELATED)])
        after = reports(kb)
        assert summary.reports > len(before)  # the new document brought communities of its own
        assert cited and cited <= set(before)
        for cid in before:  # every report keeps its id, text, rating and vector
            assert after[cid] == before[cid], cid
            assert members(kb)[cid] == groups[cid]
        assert {cid: v for cid, v in kb.conn.execute("SELECT id, embedding FROM vec_reports")
                if cid in vectors} == vectors
        if model == "scripted":  # only the new communities' reports were asked for, not even from the cache
            run = kb.conn.execute("SELECT max(id) FROM runs").fetchone()[0]
            asked = kb.conn.execute("SELECT count(*), sum(cache_hit) FROM model_calls "
                                    "WHERE run_id = ? AND stage = 'report'", (run,)).fetchone()
            assert asked == (summary.reports - len(before), 0)
            assert not [p for p in chat.prompts[prompts_before:] if "Scrooge" in p]
        again = kb.ask("What are the main themes of the story?", mode="global")
        for cid in cited:
            assert kb.conn.execute("SELECT full_text FROM reports WHERE community_id = ?",
                                   (cid,)).fetchone()[0] == before[cid][0]
        assert again.answer


def test_a_community_that_gains_members_keeps_the_rows_of_those_it_had(tmp_path):
    """The cluster stage writes only the member rows that changed: a community that keeps its
    id after an addition keeps the rows (rowids) of its members that stayed, and the stored
    members are exactly the new ones."""
    first, second = sorted(EN_CORPUS.glob("*.txt"))
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(first)], **SMALL)
        rows = lambda: {(c, e): r for r, c, e in kb.conn.execute(  # noqa: E731
            "SELECT rowid, community_id, entity_id FROM community_members")}
        before, groups = rows(), members(kb)
        kb.index([str(second)])
        after, now = rows(), members(kb)
    changed = [cid for cid in groups if cid in now and now[cid] != groups[cid]]
    assert changed, "the second part moves members of communities the first made"
    for cid in changed:
        stayed = groups[cid] & now[cid]
        assert stayed and all(after[(cid, e)] == before[(cid, e)] for e in stayed), cid
    assert {k for k in after} == {(c, e) for c, es in now.items() for e in es}
