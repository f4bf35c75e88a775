"""Full pipeline runs: scripted LLM and offline default, English and Chinese; the demo db."""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, FIXTURES, SMALL, ZH_CORPUS, ScriptedChat, ScriptedEmbedder
from tgr.cli import main
from tgr.parsing import parse_report

DEMO = FIXTURES / "demo_carol.db"
# How fixtures/demo_carol.db is built (also in the README).
DEMO_COMMAND = ["index", "{db}", "fixtures/corpus_en", "--offline", "--embed-model", "tgr:hash-384", "--chunk-size", "300", "--chunk-overlap", "40", "-q"]
DEMO_QUESTIONS = [("Who is Jacob Marley?", "local"), ("What did Scrooge say about Christmas?", "local"),
                  ("What happens with the ghost and the chains?", "global"),
                  ("Scrooge's nephew", "naive")]


def content(conn) -> dict:
    """Everything a query reads, in a stable order (no timestamps, ledger or cache)."""
    q = lambda sql: conn.execute(sql).fetchall()
    return {
        "documents": q("SELECT id, source, text FROM documents ORDER BY id"),
        "chunks": q("SELECT id, document_id, ordinal, text FROM chunks ORDER BY id"),
        "entities": q("SELECT id, name, type, description, degree, mentions FROM entities ORDER BY id"),
        "relationships": q("SELECT id, source_id, target_id, predicate, description, weight FROM relationships ORDER BY id"),
        "communities": q("SELECT id, level, parent_id, size, is_leaf FROM communities ORDER BY id"),
        "members": q("SELECT community_id, entity_id FROM community_members ORDER BY 1, 2"),
        "reports": q("SELECT community_id, title, summary, rating, findings FROM reports ORDER BY 1"),
    }


@pytest.mark.parametrize("corpus,question,expect", [
    (EN_CORPUS, "Who is Marley?", "Marley"),
    (ZH_CORPUS, "孙悟空是谁？", "孙悟空"),
])
def test_scripted_llm_pipeline(db_path, corpus, question, expect):
    chat = ScriptedChat()
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder(), concurrency=4) as kb:
        summary = kb.index([str(corpus)], **SMALL)
        assert summary.documents == 2 and summary.chunks > 10
        assert summary.entities > 20 and summary.relationships > 10
        assert summary.calls_by_stage["extract"] == summary.chunks  # one call per chunk
        assert summary.reports == kb.conn.execute(
            "SELECT count(*) FROM communities WHERE size >= 2").fetchone()[0]
        for (text,) in kb.conn.execute("SELECT full_text FROM reports"):
            assert text.startswith("# ")
        generators = {g for (g,) in kb.conn.execute("SELECT DISTINCT generator FROM reports")}
        assert generators == {"scripted:fake"}
        # every entity has provenance, every relationship too
        assert kb.conn.execute("SELECT count(*) FROM entities e WHERE NOT EXISTS "
                               "(SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)").fetchone()[0] == 0
        assert kb.conn.execute("SELECT count(*) FROM relationships r WHERE NOT EXISTS "
                               "(SELECT 1 FROM relationship_mentions m WHERE m.relationship_id = r.id)").fetchone()[0] == 0

        local = kb.ask(question)
        assert expect in local.context and local.sources and local.model_calls >= 1
        assert local.sources[0]["document_id"] and local.sources[0]["source"].endswith(".txt")
        glob = kb.ask(question, mode="global")
        assert glob.mode == "global" and glob.reports and glob.answer
        naive = kb.ask(question, mode="naive")
        assert naive.sources and "-----Sources-----" in naive.context
        calls = chat.calls
        again = kb.index([str(corpus)])
        assert again.model_calls == 0 and chat.calls == calls  # re-index is free


@pytest.mark.parametrize("corpus,question,expect", [
    (EN_CORPUS, "Who is Marley?", "Marley"),
    (ZH_CORPUS, "花果山在哪里？", "花果山"),
])
def test_offline_pipeline(db_path, corpus, question, expect):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        summary = kb.index([str(corpus)], **SMALL)
        # hashing is a local computation: no model calls, no tokens, but counted as what it is
        assert summary.model_calls == 0 and summary.calls_by_stage == {}
        assert summary.prompt_tokens == summary.completion_tokens == 0
        assert summary.local_computations >= 3  # chunks, entities, reports
        assert kb.info()["chat_model"] == "offline-extractive"
        assert "lower quality" in kb.info()["quality"]
        generators = {g for (g,) in kb.conn.execute("SELECT DISTINCT generator FROM reports")}
        assert generators == {"offline-extractive"}
        answer = kb.ask(question)
        assert expect in answer.answer and "[Sources:" in answer.answer
        assert answer.model == "offline-extractive" and answer.sources
        glob = kb.ask(question, mode="global")
        assert "[Reports:" in glob.answer
        context = kb.ask(question, context_only=True)
        assert context.answer == "" and "-----Entities-----" in context.context
        for unrelated in ("What is quantum chromodynamics?", "???", "the of and"):
            assert kb.ask(unrelated).answer.startswith("I don't know"), unrelated


def test_same_input_gives_same_store(tmp_path):
    stores = []
    for name in ("a.db", "b.db"):
        with tgr.open(tmp_path / name, chat=ScriptedChat(), embedder=ScriptedEmbedder(), concurrency=8) as kb:
            kb.index([str(EN_CORPUS)], **SMALL)
            stores.append(content(kb.conn))
    assert stores[0] == stores[1]


def test_two_step_extraction_and_gleaning(db_path):
    chat = ScriptedChat()
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder()) as kb:
        summary = kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], two_step=True, gleanings=1, **SMALL)
        chunks = summary.chunks
        kinds = [chat.llm.kind(p) for p in chat.prompts]
        assert kinds.count("extract_entities") == chunks
        assert kinds.count("extract_triplets") == chunks
        # the fake's glean answer is <none/>, so gleaning asks at most once per chunk
        assert 0 < kinds.count("glean") <= chunks
        assert summary.relationships > 0


def test_incremental_index_adds_only_new_work(db_path):
    chat = ScriptedChat()
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder()) as kb:
        first = kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        extract_calls = sum(1 for p in chat.prompts if chat.llm.kind(p) == "extract")
        second = kb.index([str(EN_CORPUS)])
        new_extract = sum(1 for p in chat.prompts if chat.llm.kind(p) == "extract") - extract_calls
        assert second.documents_added == 1
        assert new_extract == second.chunks - first.chunks
        assert second.entities >= first.entities


def test_rebuild_stages_from_the_file_alone(tmp_path):
    path = tmp_path / "store.db"
    with tgr.open(path, chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        kb.index([str(ZH_CORPUS)], **SMALL)  # its scripted graph has communities that split at max 4
        before = content(kb.conn)
    copy = tmp_path / "elsewhere.db"
    shutil.copy(path, copy)  # no source files needed from here on
    chat = ScriptedChat()
    with tgr.open(copy, chat=chat, embedder=ScriptedEmbedder()) as kb:
        kb.rebuild("graph")
        kb.rebuild("communities")
        kb.rebuild("reports")
        assert content(kb.conn) == before
        assert chat.calls == 0  # every answer came from the in-file cache
        summary = kb.rebuild("communities", max_cluster_size=4)
        assert summary.communities.get("1", 0) > 0
        deepest = kb.conn.execute("SELECT max(level) FROM communities").fetchone()[0]
        assert deepest >= 1


def test_rebuild_embeddings_switches_model(db_path):
    with tgr.open(db_path, chat="offline", embedder=ScriptedEmbedder()) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.rebuild("embeddings")
        assert kb.meta["embed_model"] == "tgr:hash-384"
        assert "float[384]" in kb.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'vec_chunks'").fetchone()[0]
        assert kb.ask("Who is Scrooge?").sources


def test_rebuild_embeddings_with_an_unusable_model_keeps_the_old_vectors(db_path):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        vectors = kb.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0]
    with tgr.open(db_path, chat="offline", embedder="openai:nomic", base_url="http://127.0.0.1:9/v1",
                  max_retries=0, timeout=0.5) as kb:
        with pytest.raises(tgr.TgrError):
            kb.rebuild("embeddings")
    with tgr.open(db_path) as kb:
        assert kb.meta["embed_model"] == "tgr:hash-384"
        assert kb.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == vectors
        assert kb.ask("Who is Scrooge?").sources


def test_chat_model_does_not_change_silently(db_path, monkeypatch):
    with tgr.open(db_path, chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    # no chat model configured now: the LLM-built store is not continued offline by accident
    with tgr.open(db_path, embedder=ScriptedEmbedder()) as kb:
        with pytest.raises(tgr.ModelMismatch, match="built with the chat model scripted:fake"):
            kb.index([str(EN_CORPUS)])
        assert kb.info()["documents"] == 1
    # naming a model is a deliberate choice
    with tgr.open(db_path, chat="offline", embedder=ScriptedEmbedder()) as kb:
        assert kb.index([str(EN_CORPUS)]).documents == 2


def test_merge_settings_take_effect_on_an_existing_store(db_path):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS)], **SMALL)
        longest = kb.conn.execute("SELECT max(length(description)) FROM entities").fetchone()[0]
        summary = kb.index([str(EN_CORPUS)], summary_tokens=40)
        assert "merge" in summary.stage_seconds
        shorter = kb.conn.execute("SELECT max(length(description)) FROM entities").fetchone()[0]
        assert shorter < longest and shorter <= 40 * 4 + 10


def test_malformed_reports_never_stop_the_run(db_path):
    class BrokenReports(ScriptedChat):
        def complete(self, prompt, **params):
            result = super().complete(prompt, **params)
            if self.llm.kind(prompt) == "community_report":
                result.text = '{"title": "Half a report", "summary": '  # hopeless, every time
            return result

    chat = BrokenReports()
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder()) as kb:
        summary = kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        assert summary.reports > 0
        rows = kb.conn.execute("SELECT generator, title FROM reports").fetchall()
        assert {g for g, _ in rows} == {"fallback"} and all(t for _, t in rows)
        kinds = [chat.llm.kind(p) for p in chat.prompts]
        assert kinds.count("community_report") == 3 * summary.reports  # asked again twice, then fell back


def test_repairable_report_json_is_repaired():
    text = '```json\n{"title": "Scrooge and Marley", "summary": "Partners.", "rating": "7/10",' \
           ' "findings": [{"summary": "Partners", "explanation": "They ran a firm."},]}\n```'
    report = parse_report(text)
    assert report["rating"] == 7.0 and report["findings"][0]["summary"] == "Partners"


def test_global_with_no_relevant_point_lists_the_main_themes_and_says_why(db_path):
    """Every map answer says "I don't know" (score 0): the store's themes answer, as offline
    (tests/test_weak_model_answers.py: a real model's unusable map answers)."""
    with tgr.open(db_path, chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        notes = []
        answer = kb.ask("zzzz qqqq xylophone", mode="global", warn=notes.append)
        assert answer.answer.startswith('No theme mentions "zzzz", "qqqq", "xylophone"; the main themes instead')
        assert notes == answer.notes and "each scored 0 or saying nothing" in notes[0]


def test_demo_db_is_reproducible_and_answers_the_same(tmp_path, monkeypatch):
    monkeypatch.chdir(FIXTURES.parent)  # the documented command runs from the repository root
    rebuilt = tmp_path / "demo.db"
    args = [a.format(db=rebuilt) for a in DEMO_COMMAND]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    with tgr.open(DEMO, readonly=True) as shipped, tgr.open(rebuilt, readonly=True) as fresh:
        assert content(fresh.conn) == content(shipped.conn)
        for question, mode in DEMO_QUESTIONS:
            a, b = shipped.ask(question, mode), fresh.ask(question, mode)
            assert a.answer == b.answer and a.answer
            assert [s["chunk_id"] for s in a.sources] == [s["chunk_id"] for s in b.sources]


def test_demo_answers_through_the_cli():
    result = CliRunner().invoke(main, ["ask", str(DEMO), "Who is Jacob Marley?", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "Marley" in data["answer"] and data["sources"] and data["mode"] == "local"
    assert data["model"] == "offline-extractive"


def test_offline_global_answers_a_corpus_wide_question_from_the_most_important_reports():
    with tgr.open(DEMO, readonly=True) as kb:
        answer = kb.ask("What are the main themes?", mode="global")
        important = kb.conn.execute(
            "SELECT c.id FROM communities c JOIN reports r ON r.community_id = c.id WHERE c.level = 0 "
            "ORDER BY r.rating DESC, c.id LIMIT 1").fetchone()[0]
    assert not answer.answer.startswith("I don't know")
    assert f"[Reports: {important}]" in answer.answer.splitlines()[1]
    assert answer.sources and all(s["text"] for s in answer.sources)


@pytest.mark.parametrize("before", [(700, 10, 10), (0, 10, 10), (80_000, 10, 10)])
def test_a_build_collects_garbage_less_often_and_puts_the_collector_back(db_path, before):
    """A build runs the cyclic collector every 50,000 allocations, not 700; a collector turned
    off (threshold 0) or already rarer is left as it is, and the thresholds are put back."""
    import gc

    seen = set()
    saved = gc.get_threshold()
    gc.set_threshold(*before)
    try:
        with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
            kb.index([str(EN_CORPUS)], progress=lambda *a: seen.add(gc.get_threshold()), **SMALL)
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*saved)
    assert seen == {(50_000, 10, 10) if before == (700, 10, 10) else before}
    assert after == before
