"""One freshness rule: each derived stage is redone exactly when its inputs changed."""
from __future__ import annotations

import tgr
from conftest import EN_CORPUS, SMALL, ScriptedChat, ScriptedEmbedder
from tgr.build.extract import save_extraction
from tgr.parsing import RawEntity as E
from tgr.parsing import RawRelation as R


def offline_store(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def test_same_counts_other_content_rebuilds_the_graph(tmp_path, db_path):
    """The stale-graph bug: extraction rows replaced by others with the same counts."""
    doc = tmp_path / "ships.txt"
    doc.write_text("Captain Nemo commands the Nautilus. The Nautilus sails under the sea.\n")
    with offline_store(db_path) as kb:
        kb.index([str(doc)], **SMALL)
        chunk = kb.conn.execute("SELECT id FROM chunks").fetchone()[0]
        counts = kb.conn.execute("SELECT entities, relations FROM extractions").fetchone()
        assert counts == (2, 1)
        save_extraction(kb.conn, chunk, "offline-heuristic",
                        [E("Ahab", "person", "Ahab commands the Pequod."), E("Pequod", "ship", "A whaler.")],
                        [R("Ahab", "Pequod", "commands", "Ahab commands the Pequod.")])
        summary = kb.index([str(doc)])
        names = {r[0] for r in kb.conn.execute("SELECT name FROM entities")}
        assert names == {"Ahab", "Pequod"}, names
        assert summary.stage_seconds.get("merge") is not None  # the merge ran again
        context = kb.ask("Who commands the Nautilus?", context_only=True).context
        graph_part = context.split("-----Sources-----")[0]  # the chunk text itself still says Nemo
        assert "Pequod" in graph_part and "Nemo" not in graph_part


def test_second_run_of_unchanged_input_redoes_nothing(db_path):
    chat, embedder = ScriptedChat(), ScriptedEmbedder()
    with tgr.open(db_path, chat=chat, embedder=embedder) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        calls, embeds = chat.calls, embedder.calls
        second = kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")])
    assert (chat.calls, embedder.calls) == (calls, embeds)
    assert second.model_calls == 0 and second.cache_hits == 0
    assert "merge" not in second.stage_seconds  # its inputs are unchanged


def test_rebuilding_reports_with_unchanged_text_needs_no_embedding(db_path):
    chat, embedder = ScriptedChat(), ScriptedEmbedder()
    with tgr.open(db_path, chat=chat, embedder=embedder) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        vectors = kb.conn.execute("SELECT count(*) FROM vec_reports").fetchone()[0]
        embeds = embedder.calls
        summary = kb.rebuild("reports")
        assert summary.reports == vectors > 0
        assert embedder.calls == embeds  # every report answer came from the cache, same text
        assert kb.conn.execute("SELECT count(*) FROM reports WHERE embed_hash IS NULL").fetchone()[0] == 0
        reports = sorted(kb.conn.execute("SELECT community_id, full_text FROM reports"))
        kb.rebuild("communities")  # Leiden from scratch finds the same communities: nothing to redo
        assert embedder.calls == embeds
        assert sorted(kb.conn.execute("SELECT community_id, full_text FROM reports")) == reports


def test_another_report_prompt_rewrites_every_report(db_path):
    from tgr.prompts import Prompts

    chat = ScriptedChat()
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder()) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        before = dict(kb.conn.execute("SELECT community_id, context_hash FROM reports"))
    prompts = Prompts(community_report=Prompts().community_report + "\nKeep every finding short.")
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder(), prompts=prompts) as kb:
        summary = kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")])
        after = dict(kb.conn.execute("SELECT community_id, context_hash FROM reports"))
    assert set(after) == set(before) and all(after[c] != before[c] for c in after)
    assert summary.calls_by_stage.get("report") == len(after)
