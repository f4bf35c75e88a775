"""The ranked retrieval core: PageRank, seeds, bridges, titles, scores, no jieba at query time."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter

import igraph
import pytest

import tgr
from tgr.query.modes import QuerySettings
from tgr.query.query_cache import QueryCache
from tgr.query.name_match import titled_chunks
from tgr.query.retrieve import (MODES, SMALL_GRAPH_EDGES, WARM_QUERIES, Retriever, _fuse, _rank_fuse, is_lexical_embedder,
                          personalized_pagerank, question_spans)
from tgr.text import match_terms

from conftest import ROOT, SMALL, ZH_CORPUS

# A small multi-hop corpus: the question names the film; the director's page shares no word
# with the question, and only the film's page says who directed it.
ROWS = [
    {"doc_id": "film", "title": "Harbour of Glass",
     "text": "Harbour of Glass is a 1961 drama film directed by Orsolya Vindel. "
             "Harbour of Glass was shot in Trieste and opened the Venice festival."},
    {"doc_id": "director", "title": "Orsolya Vindel",
     "text": "Orsolya Vindel was a Hungarian filmmaker born in Szeged in 1919. "
             "Orsolya Vindel studied painting in Budapest before turning to cinema."},
    {"doc_id": "other", "title": "Copper Lantern",
     "text": "Copper Lantern is a 1958 comedy about a lighthouse keeper in Cornwall. "
             "Copper Lantern was a success in Britain and France."},
    {"doc_id": "noise", "title": "Glass making",
     "text": "Glass making in Murano uses sand, soda and lime. "
             "The drama of glass blowing attracts many visitors to the island every year."},
]
for n in range(12):  # distractors so that BM25 alone has something to rank
    ROWS.append({"doc_id": f"d{n}", "title": f"Festival report {n}",
                 "text": f"The festival of year {1950 + n} showed many films. Critics praised the drama "
                         f"and the comedy programme, and a film about harbour workers won the prize."})


def write_jsonl(path, rows):
    """rows as a .jsonl corpus at path."""
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("retrieve")
    corpus = write_jsonl(root / "films.jsonl", ROWS)
    path = root / "films.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(corpus)], **SMALL)
    return path


def test_pagerank_matches_igraph():
    edges = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (5, 4), (1, 5)]
    weights = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25]
    reset = [1.0, 0, 0, 0, 0.5, 0]
    ours = personalized_pagerank(6, edges, weights, reset, damping=0.6, iterations=100)
    graph = igraph.Graph(n=6, edges=edges, directed=False)
    theirs = graph.personalized_pagerank(damping=0.6, reset=reset, weights=weights)
    assert ours == pytest.approx(theirs, abs=1e-6)
    assert sum(ours) == pytest.approx(1.0)


def test_large_graphs_take_the_numpy_path_with_the_same_result():
    import random

    rng = random.Random(7)
    n = 3000
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(3 * SMALL_GRAPH_EDGES)]
    edges = [(a, b) for a, b in edges if a != b]
    weights = [rng.uniform(0.1, 3.0) for _ in edges]
    reset = [1.0 if i % 97 == 0 else 0.0 for i in range(n)]
    ours = personalized_pagerank(n, edges, weights, reset, damping=0.5, iterations=60)
    theirs = igraph.Graph(n=n, edges=edges, directed=False).personalized_pagerank(
        damping=0.5, reset=reset, weights=weights)
    assert len(edges) > SMALL_GRAPH_EDGES and ours == pytest.approx(theirs, abs=1e-6)


def test_a_node_without_edges_returns_its_mass_to_the_seeds():
    ranks = personalized_pagerank(3, [(0, 1)], [1.0], [0, 0, 1.0], damping=0.5)
    assert ranks[2] == pytest.approx(1.0) and ranks[0] == ranks[1] == pytest.approx(0.0)


def test_local_reaches_the_bridge_document_that_bm25_does_not(store):
    question = "What did the director of Harbour of Glass study?"
    with tgr.open(store, readonly=True) as kb:
        local = [p.external_id for p in kb.retrieve(question, "local", 8)]
        naive = [p.external_id for p in kb.retrieve(question, "naive", 8)]
    assert local[0] == "film"
    assert "director" in local[:3], local
    assert "director" not in naive[:3], naive  # it shares no word with the question


def test_passages_are_ranked_with_scores_text_and_document_metadata(store):
    with tgr.open(store, readonly=True) as kb:
        for mode in ("local", "naive", "global"):
            passages = kb.retrieve("Copper Lantern lighthouse keeper", mode, 5)
            assert passages, mode
            scores = [p.score for p in passages]
            assert scores == sorted(scores, reverse=True), mode
            for p in passages:
                document = kb.conn.execute("SELECT text FROM documents WHERE id = ?",
                                           (p.document_id,)).fetchone()[0]
                assert p.text == document[p.char_start:p.char_end] or p.text in document
                assert p.external_id and p.source.endswith("films.jsonl") and p.title
        assert kb.retrieve("Copper Lantern lighthouse keeper", "naive", 1)[0].external_id == "other"


def test_a_title_is_indexed_with_its_chunks(store):
    # "Festival report 7" is only in the title of d7; its text says "year 1957"
    with tgr.open(store, readonly=True) as kb:
        assert kb.retrieve("festival report 7", "naive", 1)[0].external_id == "d7"
        assert kb.retrieve("Festival report 7", "local", 1)[0].external_id == "d7"


def test_ask_json_sources_are_the_ranking(store):
    with tgr.open(store, readonly=True) as kb:
        answer = kb.ask("Who directed Harbour of Glass?", mode="naive")
        ranked = kb.retrieve("Who directed Harbour of Glass?", "naive", len(answer.sources))
    assert [s["chunk_id"] for s in answer.sources] == [p.chunk_id for p in ranked]
    assert [s["ref"] for s in answer.sources] == list(range(1, len(ranked) + 1))
    assert all(s["text"] and isinstance(s["score"], float) for s in answer.sources)


def test_question_spans_keep_names_possessives_and_case():
    spans = dict(question_spans("Was Hello Love's director in the U.S. Army?"))
    assert spans["Hello Love"] is True and spans["U.S. Army"] is True
    assert spans["director"] is False
    chinese = {text for text, _ in question_spans("花果山在哪里")}
    assert {"花果山", "花果", "在哪里"} <= chinese


def test_hashed_vectors_are_left_out_of_ranking():
    assert is_lexical_embedder("tgr:hash-384") and not is_lexical_embedder("local:multilingual-e5-small")
    calls = []
    retriever = Retriever(None, embed_query=lambda text: calls.append(text), dense=False)
    assert retriever.dense is False and not calls


def test_a_chinese_question_needs_no_jieba(tmp_path):
    path = tmp_path / "zh.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(ZH_CORPUS)], **SMALL)
    script = (
        "import sys, json, tgr\n"
        f"kb = tgr.open({str(path)!r}, readonly=True)\n"
        "for mode in ('local', 'naive', 'global'):\n"
        "    a = kb.ask('花果山在哪里？', mode=mode)\n"
        "    assert a.answer and (a.sources or mode == 'global'), mode\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('jieba', 'igraph', 'httpx', 'numpy'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TGR_EMBED_MODEL": "tgr:hash-384"},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_long_lived_process_switches_to_numpy_with_the_same_ranking(store):
    # a cold `tgr ask` must not pay for importing numpy; an eval or a server does, once
    script = (
        "import sys, json, tgr\n"
        "from tgr.query.retrieve import WARM_QUERIES\n"
        f"kb = tgr.open({str(store)!r}, readonly=True)\n"
        "ask = lambda: [(p.chunk_id, p.score) for p in kb.retrieve('Who directed Harbour of Glass?', 'local', 8)]\n"
        "first = ask()\n"
        "cold = 'numpy' in sys.modules\n"
        "for _ in range(WARM_QUERIES):\n"
        "    ask()\n"
        "print(json.dumps([cold, 'numpy' in sys.modules, ask() == first]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, True, True]


class TopicEmbedder:
    """A real embedder with a tiny vocabulary: each dimension is a subject, each listed word
    adds to its subjects (the last dimension keeps every vector non-zero)."""

    name = "test:topics"
    dim = 4
    WORDS = {"bridge": (1, 1, 0), "1932": (1, 0, 0), "ribbon": (1, 0, 0), "ceremony": (1, 0, 0),
             "crowds": (1, 0, 0), "premier": (1, 0, 0), "climb": (0, 1, 0), "climbing": (0, 1, 0),
             "tourists": (0, 1, 0), "ferry": (0, 0, 1), "ferries": (0, 0, 1)}

    def embed(self, texts):
        vectors = []
        for text in texts:
            vector = [0.0, 0.0, 0.0, 0.3]
            for word in re.findall(r"\w+", text.lower()):
                for i, x in enumerate(self.WORDS.get(word, (0, 0, 0))):
                    vector[i] += x
            vectors.append(vector)
        return vectors


def test_a_retelling_of_the_best_passage_outranks_one_that_only_shares_the_questions_words(tmp_path):
    # BM25 and the question's vector both prefer "climb" (it shares "Harbour Bridge ... opened")
    # to "retelling"; but "retelling" is about what the best passage is about
    rows = [
        {"doc_id": "opening", "text": "When the Harbour Bridge was opened in 1932, the ribbon ceremony "
                                      "drew crowds to the bridge."},
        {"doc_id": "retelling", "text": "Crowds cheered in 1932 as the premier cut the ribbon on the new bridge."},
        {"doc_id": "climb", "text": "Tourists climb the Harbour Bridge, which was opened to climbing."},
    ] + [{"doc_id": f"ferry{n}", "text": f"Ferries number {n} cross the harbour every day; "
                                         f"ferry {n} was opened in {1950 + n}."} for n in range(8)]
    corpus = write_jsonl(tmp_path / "bridge.jsonl", rows)
    path = tmp_path / "bridge.db"
    with tgr.open(path, chat="offline", embedder=TopicEmbedder()) as kb:
        kb.index([str(corpus)])
    with tgr.open(path, embedder=TopicEmbedder(), readonly=True) as kb:
        ranked = [p.external_id for p in kb.retrieve("When was the Harbour Bridge opened?", "naive", 3)]
    assert ranked == ["opening", "retelling", "climb"]


class Int8TopicEmbedder(TopicEmbedder):
    """The same subjects, kept by the store as int8 vectors (as the local embedder's are)."""

    name = "test:topics-int8"
    vector_type = "int8"


def test_a_connection_that_answers_often_uses_vector_copies_with_the_same_ranking(tmp_path):
    rows = [{"doc_id": f"d{n}", "text": text} for n, text in enumerate([
        "When the Harbour Bridge was opened in 1932, the ribbon ceremony drew crowds.",
        "Tourists climb the Harbour Bridge, which was opened to climbing.",
        "Ferries cross the harbour every day; the ferry was opened in 1950.",
        "Crowds cheered in 1932 as the premier cut the ribbon on the new bridge."])]
    corpus = write_jsonl(tmp_path / "bridge.jsonl", rows)
    path = tmp_path / "bridge.db"
    with tgr.open(path, chat="offline", embedder=Int8TopicEmbedder()) as kb:
        kb.index([str(corpus)])
    questions = ["When was the Harbour Bridge opened?", "Who climbs the bridge?", "ferries"]
    with tgr.open(path, embedder=Int8TopicEmbedder(), readonly=True) as kb:
        cache = QueryCache.of(kb.conn)
        first = {(q, mode): kb.retrieve(q, mode, 4) for q in questions for mode in ("local", "naive")}
        cold = {mode: kb.ask(questions[0], mode).to_dict() for mode in ("local", "global")}
        assert not (cache.numpy_walk or cache.vector_copies)
        for _ in range(WARM_QUERIES):
            kb.retrieve(questions[0], "naive", 4)
        assert cache.numpy_walk and cache.vector_copies  # this connection now takes the warm paths
        again = {(q, mode): kb.retrieve(q, mode, 4) for q in questions for mode in ("local", "naive")}
        warm = {mode: kb.ask(questions[0], mode).to_dict() for mode in ("local", "global")}
    for answers in (cold, warm):
        for answer in answers.values():
            answer.pop("timings")
    assert warm == cold
    assert again == first


def test_every_question_is_counted_once_whatever_the_mode(store):
    with tgr.open(store, readonly=True) as kb:
        cache = QueryCache.of(kb.conn)
        for n, mode in enumerate(MODES, 1):
            kb.retrieve("Who directed Harbour of Glass?", mode, 4)
            kb.ask("Who directed Harbour of Glass?", mode)
            assert cache.questions == 2 * n, mode


def _rare_word(conn, text: str) -> str | None:
    """A word of the text that no other chunk of the store has."""
    for word in dict.fromkeys(re.findall(r"[a-z]{6,}", text.lower())):
        if conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{word}"',)).fetchone()[0] == 1:
            return word
    return None


def test_a_reports_sources_are_the_chunks_behind_it_that_match_the_question():
    with tgr.open(ROOT / "fixtures" / "demo_carol.db", readonly=True) as kb:
        retriever = Retriever(kb.conn)
        biggest, second = [cid for cid, in kb.conn.execute(
            "SELECT m.community_id FROM community_members m JOIN communities c ON c.id = m.community_id "
            "JOIN entity_mentions em ON em.entity_id = m.entity_id WHERE c.level = 0 "
            "GROUP BY m.community_id ORDER BY count(DISTINCT em.chunk_id) DESC, m.community_id LIMIT 2")]
        by_members = [c for c, _ in retriever.report_chunks([biggest])]
        behind = [c for c, in kb.conn.execute(
            "SELECT DISTINCT em.chunk_id FROM community_members m JOIN entity_mentions em "
            "ON em.entity_id = m.entity_id WHERE m.community_id = ? ORDER BY em.chunk_id", (biggest,))]
        chunk, word = next((c, w) for c in behind if c not in by_members
                           for w in [_rare_word(kb.conn, kb.conn.execute(
                               "SELECT text FROM chunks WHERE id = ?", (c,)).fetchone()[0])] if w)
        question = f"Who or what is {word}?"
        ranked = retriever.report_chunks([biggest, second], question)
        assert ranked[0][0] == chunk  # a chunk the most connected three leave out
        scores = [s for _, s in ranked]
        assert scores == sorted(scores, reverse=True) and len(set(c for c, _ in ranked)) == len(ranked)
        # a question about the whole corpus names nothing: the most connected chunks, as before
        assert [c for c, _ in retriever.report_chunks([biggest], "What are the main themes?")] == by_members


class MisleadingEmbedder:
    """A real-shaped embedder with two subjects: "inaugurated" points at ferries (a poor signal),
    "ships" and "night" at the lighthouse (a good one, where no word matches)."""

    name = "test:misleading"
    dim = 3
    SUBJECTS = {"ferry": 0, "ferries": 0, "inaugurated": 0, "lighthouse": 1, "ships": 1, "night": 1}

    def embed(self, texts):
        vectors = []
        for text in texts:
            vector = [0.1, 0.1, 0.1]
            for word in set(re.findall(r"\w+", text.lower())):
                if word in self.SUBJECTS:
                    vector[self.SUBJECTS[word]] += 1.0
            vectors.append(vector)
        return vectors


def test_report_vectors_are_fused_with_the_reports_words_by_rank(tmp_path):
    rows = [
        {"doc_id": "bridge", "title": "Harbour Bridge",
         "text": "The Harbour Bridge was opened by Premier Lang in 1932. "
                 "Premier Lang cut the ribbon of the Harbour Bridge."},
        {"doc_id": "climb", "title": "Harbour Bridge climb",
         "text": "Tourists climb the Harbour Bridge with Bridgeclimb Sydney. Bridgeclimb Sydney began in 1998."},
        {"doc_id": "ferry", "title": "Manly Ferry",
         "text": "The Manly Ferry crosses Sydney Harbour. The Manly Ferry is run by Transdev Sydney Ferries."},
        {"doc_id": "light", "title": "Hornby Lighthouse",
         "text": "Hornby Lighthouse stands on South Head. Hornby Lighthouse was built by Mortimer Lewis."}]
    corpus = write_jsonl(tmp_path / "harbour.jsonl", rows)
    path = tmp_path / "harbour.db"
    embedder = MisleadingEmbedder()
    with tgr.open(path, chat="offline", embedder=embedder) as kb:
        kb.index([str(corpus)])
    with tgr.open(path, embedder=embedder, readonly=True) as kb:
        retriever = Retriever(kb.conn, lambda text: embedder.embed([text])[0], dense=True)
        words_only = Retriever(kb.conn)

        def first(r, question):
            return r.reports(question, 0, 1)[0][1]

        def nearest(question):  # the report the vectors alone would put first
            return kb.conn.execute(
                "SELECT r.title FROM vec_reports v JOIN reports r ON r.community_id = v.id "
                "ORDER BY vec_distance_cosine(v.embedding, ?), v.id LIMIT 1",
                (json.dumps(embedder.embed([question])[0]),)).fetchone()[0]

        # the vectors alone would lead with the ferries; the reports' words keep the bridge first
        question = "Who inaugurated the Harbour Bridge?"
        assert "Manly Ferry" in nearest(question)
        assert "Harbour Bridge" in first(retriever, question) and "Harbour Bridge" in first(words_only, question)
        # no report holds a word of this question: the vectors decide
        question = "What guides ships at night?"
        assert "Hornby Lighthouse" in first(retriever, question)
        assert "Hornby Lighthouse" not in first(words_only, question)
        assert "Hornby Lighthouse" in [p.title for p in kb.retrieve(question, "global", 1)]


def test_rank_fusion_shares_ranks_between_equal_scores_and_ignores_scales():
    words = {"a": 0.5, "b": 0.5, "c": 0.25}
    cosines = {"a": 0.91, "b": 0.90, "c": 0.95, "d": 0.10}
    fused = _rank_fuse(words, cosines)
    assert _rank_fuse(words)["a"] == _rank_fuse(words)["b"] == 1.0  # a tie is no order
    assert fused["c"] < fused["a"] and fused["b"] < fused["a"] and fused["d"] < fused["b"]
    assert _rank_fuse(words, {k: v * 100 for k, v in cosines.items()}) == fused


def test_a_rare_question_word_outweighs_a_common_one_in_ranking_reports():
    with tgr.open(ROOT / "fixtures" / "demo_carol.db", readonly=True) as kb:
        reports = {cid: set(match_terms(f"{title} {summary}")) for cid, title, summary in kb.conn.execute(
            "SELECT c.id, r.title, r.summary FROM communities c JOIN reports r ON r.community_id = c.id "
            "WHERE c.level = 0")}
        retriever = Retriever(kb.conn)
        central = retriever.reports("", 0, 1)[0][0]  # first on centrality alone
        held = Counter(t for terms in reports.values() for t in terms)
        shared = sorted(t for t in reports[central] if held[t] < len(reports) and t.isalpha())
        common = max(shared, key=lambda t: held[t])
        rare, owner = next((t, cid) for cid, terms in sorted(reports.items()) for t in sorted(terms)
                           if held[t] == 1 and common not in terms and cid != central and len(t) > 3)
        assert held[common] > 2
        assert retriever.reports(f"{common} {rare}", 0, 1)[0][0] == owner


def test_a_question_names_a_title_but_for_its_parenthesised_qualifier(tmp_path):
    rows = [{"doc_id": "copley", "title": "William Copley (South Australian politician)",
             "text": "He was a member of the House of Assembly from 1884 to 1887, representing Frome."},
            {"doc_id": "stadium", "title": "William Copley Stadium",
             "text": "The stadium was named after a benefactor of the town."},
            {"doc_id": "son", "title": "William Copleyson (painter)",
             "text": "A painter of harbours and ships."}]
    corpus = write_jsonl(tmp_path / "titles.jsonl", rows)
    with tgr.open(tmp_path / "t.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(corpus)])
        titled = titled_chunks(kb.conn, question_spans("Which seat did William Copley represent?"))
        documents = {kb.conn.execute("SELECT d.external_id FROM chunks c JOIN documents d ON d.id = c.document_id "
                                     "WHERE c.id = ?", (cid,)).fetchone()[0] for cid in titled}
        assert documents == {"copley"}
        assert kb.retrieve("Which seat did William Copley represent?", "local", 1)[0].external_id == "copley"


def test_who_is_x_leads_with_the_passage_that_defines_x(tmp_path):
    # the cast list defines Marley once; the story names him far more often elsewhere
    book = tmp_path / "carol.txt"
    scenes = [f"'Jacob,' cried Scrooge in scene {n}. Jacob Marley rattled his chain, and Jacob Marley "
              f"groaned, and Scrooge looked at Jacob Marley by the fire number {n}." for n in range(6)]
    book.write_text("Characters in the story. Bob Cratchit, clerk to Ebenezer Scrooge. Fred, his nephew. "
                    "Jacob Marley, a spectre of Scrooge's former partner in business. Mrs. Fezziwig, a "
                    "worthy partner for her husband.\n\n" + "\n\n".join(scenes), encoding="utf-8")
    path = tmp_path / "carol.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(book)], chunk_size=60, chunk_overlap=0)
    with tgr.open(path, readonly=True) as kb:
        first = kb.retrieve("Who is Jacob Marley?", "local", 3)[0]
        answer = kb.ask("Who is Jacob Marley?", mode="local").answer
    assert "a spectre of Scrooge's former partner" in first.text
    assert answer.startswith("Jacob Marley, a spectre"), answer


def test_a_relation_question_brings_the_person_met_where_the_relation_is_said(tmp_path):
    # 须菩提祖师 is defined in a passage that never names 孙悟空; the two meet, as 祖师, where 师父 is said
    book = tmp_path / "xyj.txt"
    book.write_text(
        "樵夫道：此山叫做灵台方寸山。那洞中有一个神仙，称名须菩提祖师。那祖师的徒弟也不计其数。\n\n"
        "猴王拜道：师父！祖师笑道：与你起个法名叫做孙悟空。孙悟空拜谢祖师，口称师父。\n\n"
        + "\n\n".join(f"孙悟空在花果山第{n}回与众猴玩耍，孙悟空做了美猴王，孙悟空又回到水帘洞。" for n in range(6)),
        encoding="utf-8")
    path = tmp_path / "xyj.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(book)], chunk_size=60, chunk_overlap=0)
    with tgr.open(path, readonly=True) as kb:
        passages = kb.retrieve("孙悟空的师父是谁？", "local", 3)
        answer = kb.ask("孙悟空的师父是谁？", mode="local").answer
    assert "称名须菩提祖师" in passages[0].text
    # the sentence names neither 孙悟空 nor 师父, yet it answers
    assert answer.startswith("那洞中有一个神仙，称名须菩提祖师。"), answer


def test_an_english_relation_question_brings_the_person_said_to_bear_it(tmp_path):
    # the cast list names the clerk once; the scenes speak of Scrooge's clerk without his name
    book = tmp_path / "carol.txt"
    scenes = [f"Scrooge watched his clerk in scene {n}. The clerk of Scrooge copied letters, and Scrooge "
              f"scolded the clerk by the fire number {n}." for n in range(6)]
    book.write_text("Characters in the story. Bob Cratchit, clerk to Ebenezer Scrooge. Tiny Tim, his son. "
                    "Fred, Scrooge's nephew.\n\n" + "\n\n".join(scenes) + "\n\nMartha Cratchit hid herself, and "
                    "in came little Bob, the father, with Tiny Tim upon his shoulder. Scrooge's nephew Fred laughed "
                    "with Scrooge.", encoding="utf-8")
    path = tmp_path / "carol.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(book)], chunk_size=60, chunk_overlap=0)
    with tgr.open(path, readonly=True) as kb:
        for question in ("Who is Scrooge's clerk?", "Who was the clerk of Scrooge?", "Who is Tiny Tim's father?"):
            first = kb.retrieve(question, "local", 3)[0]
            answer = kb.ask(question, mode="local").answer
            assert "Bob Cratchit, clerk to Ebenezer Scrooge." in first.text, question
            assert answer.startswith("Bob Cratchit, clerk to Ebenezer Scrooge."), (question, answer)
        # a short apposition defines the nephew
        assert kb.ask("Who is Scrooge's nephew?", mode="local").answer.startswith("Fred, Scrooge's nephew.")


def test_hashed_local_walks_from_the_passages_that_share_the_best_ones_words(tmp_path):
    # "log" shares no word with the question and names no entity the question names; it
    # shares its rare words with the best passage, as a bridge page shares the first hop's names
    rows = [{"doc_id": "keeper", "text": "The lighthouse keeper kept a logbook of the amber tide and the "
                                         "saltmarsh geese that winter."},
            {"doc_id": "log", "text": "That logbook says the amber tide drove the saltmarsh geese inland "
                                      "for a fortnight."}]
    rows += [{"doc_id": f"ferry{n}", "text": f"Ferries number {n} cross the harbour every day; "
                                            f"ferry {n} was opened in {1950 + n}."} for n in range(12)]
    corpus = write_jsonl(tmp_path / "coast.jsonl", rows)
    with tgr.open(tmp_path / "coast.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(corpus)])
        question = "What did the lighthouse keeper write down?"
        assert "log" not in [p.external_id for p in kb.retrieve(question, "naive", 5)]
        assert [p.external_id for p in kb.retrieve(question, "local", 2)] == ["keeper", "log"]


def test_score_fusion_scales_each_list_and_a_list_of_equal_scores_to_one():
    assert _fuse(([("a", 3.0)], 1.0)) == [("a", 1.0)]  # one chunk: the best of its list
    fused = dict(_fuse(([("a", 9.0), ("b", 5.0), ("c", 1.0)], 1.0), ([("b", 0.8), ("d", 0.8)], 0.25)))
    assert fused == {"a": 1.0, "b": 0.5 + 0.25, "d": 0.25, "c": 0.0}


def test_a_local_context_reads_its_relationships_in_pages_in_the_order_of_one_query(hierarchy_store, tmp_path,
                                                                                    monkeypatch):
    """The Relationships table is read a page at a time as it fills: the same rows, numbered
    the same, as ranking every relationship of the chosen entities with its text; one whose
    entity is missing (a store made elsewhere) is left out either way."""
    import json
    import shutil

    import sqlean

    import tgr
    from tgr.query import modes
    from tgr.text import ContextTable, shorten

    path = tmp_path / "store.db"
    shutil.copy(hierarchy_store, path)
    conn = sqlean.connect(str(path))
    scrooge = conn.execute("SELECT id FROM entities ORDER BY degree DESC, id LIMIT 1").fetchone()[0]
    conn.execute("INSERT INTO relationships (id, source_id, target_id, predicate, description, weight) "
                 "VALUES ('dangling', ?, 'no such entity', 'knows', 'a missing entity', 99.0)", (scrooge,))
    conn.commit()
    conn.close()

    def one_query(self, ids, entities, scores):  # the table as one query over every relationship made it
        rows = sorted(self.conn.execute(
            "SELECT r.id, s.name, t.name, r.predicate, r.description, r.weight, r.source_id, r.target_id "
            "FROM relationships r JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
            "WHERE r.source_id IN (SELECT value FROM json_each(?1)) OR r.target_id IN (SELECT value FROM json_each(?1))",
            (json.dumps(ids),)).fetchall(),
            key=lambda r: (-(scores.get(r[6], 0.0) + scores.get(r[7], 0.0)), -r[5], r[0]))
        table = ContextTable("Relationships", "id|source|target|description|weight", int(self.settings.context_tokens * 0.25))
        for n, (_, src, dst, pred, desc, weight, _, _) in enumerate(rows, 1):
            if not table.add(f"{n}|{src}|{dst}|{pred}: {shorten(desc, 300)}|{weight:g}"):
                break
        return table.text()

    expected, seen = [], []
    real = modes.Searcher._local_tables

    def both(self, ids, entities, scores):
        expected.append(one_query(self, ids, entities, scores))
        tables, used = real(self, ids, entities, scores)
        seen.append(tables[1].text())
        return tables, used

    monkeypatch.setattr(modes.Searcher, "_local_tables", both)
    monkeypatch.setattr(modes, "RELATIONSHIP_PAGE", 3)
    with tgr.open(path, readonly=True) as kb:
        for question in ["Who is Scrooge?", "Who is Marley?", "孙悟空是谁？"]:
            kb.ask(question, mode="local", context_only=True)
    assert seen == expected and all(t.count("\n") > 3 for t in seen)
    assert "missing entity" not in "".join(seen)


def test_the_defining_chunk_is_the_first_in_text_order_as_one_sorted_query_with_texts_found_it(hierarchy_store):
    """defining_chunk orders an entity's chunks first (documents as added, then their chunks)
    and reads each text as it looks at it: the same chunk, for every entity of a store, as
    sorting the chunks with their texts."""
    import sqlean

    from tgr.offline.answer_sentences import defines
    from tgr.query.focus import MAX_SCANNED, defining_chunk
    from tgr.text import split_sentences

    def sorted_with_texts(conn, entity_id, surfaces):
        surfaces = tuple(dict.fromkeys(s for s in surfaces if s))
        for chunk_id, text in conn.execute(
                "SELECT c.id, c.text FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
                "JOIN documents d ON d.id = c.document_id "
                "WHERE em.entity_id = ? ORDER BY d.rowid, c.ordinal LIMIT ?", (entity_id, MAX_SCANNED)):
            for a, b in split_sentences(text):
                sentence = " ".join(text[a:b].split())
                if any(s in sentence and defines(sentence, s) for s in surfaces):
                    return chunk_id
        return None

    conn = sqlean.connect(str(hierarchy_store))
    found = 0
    for entity_id, name in conn.execute("SELECT id, name FROM entities ORDER BY id").fetchall():
        chunk = defining_chunk(conn, entity_id, (name, entity_id))
        assert chunk == sorted_with_texts(conn, entity_id, (name, entity_id)), entity_id
        found += chunk is not None
    conn.close()
    assert found > 5


def test_relation_meetings_read_each_text_once_and_find_what_one_query_per_mention_found(hierarchy_store):
    """focus._meetings reads each chunk's text once, as bytes: the same meetings, in the same
    order, as one query over every mention with its text, tested as strings."""
    import sqlean

    from tgr.query.focus import _RELATED, BEARERS, _forms, _meetings

    def per_mention(conn, subject, relation):
        forms = _forms(conn, subject)
        rows = conn.execute(
            "SELECT em.entity_id, c.id, e.mentions, c.text FROM entity_mentions em JOIN entities e "
            "ON e.id = em.entity_id AND e.type = 'person' JOIN chunks c ON c.id = em.chunk_id "
            "WHERE em.entity_id != ?1 AND instr(c.text, ?2) > 0 AND em.entity_id IN (" + _RELATED + ") "
            "ORDER BY c.document_id, c.ordinal, em.entity_id", (subject, relation, BEARERS)).fetchall()
        return [(b, c, m, 1) for b, c, m, text in rows if any(form in text for form in forms)]

    conn = sqlean.connect(str(hierarchy_store))
    people = [e for (e,) in conn.execute("SELECT id FROM entities WHERE type = 'person' ORDER BY id")]
    met = 0
    for subject in people:
        for relation in ("师父", "徒弟", "兄弟", "老"):
            found = _meetings(conn, subject, relation)
            expected = per_mention(conn, subject, relation)
            assert sorted(found) == sorted(expected), (subject, relation)
            assert [m[1] for m in found] == [m[1] for m in expected], (subject, relation)  # text order
            met += len(found)
    conn.close()
    assert met > 5


class _TextReads:
    """A connection that keeps the chunk ids whose text a statement read (CAST(text AS BLOB),
    the fourth column: NULL where it was not read)."""

    def __init__(self, conn):
        self.conn, self.read, self.listed = conn, set(), set()

    def execute(self, sql, params=()):
        if "CAST(text AS BLOB)" in sql:
            rows = self.conn.execute(sql, params).fetchall()
            self.read.update(row[0] for row in rows if row[3] is not None)
            self.listed.update(row[0] for row in rows)
        return self.conn.execute(sql, params)


def test_relation_meetings_read_only_the_texts_the_full_text_index_can_hold_the_relation_in(hierarchy_store):
    """focus._meetings looks only at the related people's chunks that the full-text index holds
    the relation word's bigrams and a form of the subject in, not every chunk they are mentioned
    in (tens of thousands for a novel's hero at 100 M characters); where the word and the
    subject's shortest forms are of two characters it reads none of their texts (the index
    holds exactly the chunks whose text holds such a word)."""
    import sqlean

    from tgr.query.focus import _forms, _meetings

    conn = sqlean.connect(str(hierarchy_store))
    texts = dict(conn.execute("SELECT id, text FROM chunks"))
    people = [e for (e,) in conn.execute("SELECT id FROM entities WHERE type = 'person' ORDER BY id")
              if all(re.fullmatch("[\u4e00-\u9fff]{2,}", form) for form in _forms(conn, e))]  # (as the index holds them)
    assert len(people) > 5
    skipped, unread = 0, 0
    for subject in people:
        forms = _forms(conn, subject)
        two = all(len(f) == 2 for f in forms if not any(g != f and g in f for g in forms))
        for relation in ("师父", "徒弟", "兄弟"):
            reads = _TextReads(conn)
            found = _meetings(reads, subject, relation)
            assert all(relation in texts[chunk_id] for chunk_id in reads.listed), (subject, relation)
            assert {m[1] for m in found} <= reads.listed
            assert not reads.read if two else reads.read == reads.listed, (subject, relation)
            unread += len(reads.listed) if two else 0
            mentioned = {c for (c,) in conn.execute(
                "SELECT DISTINCT chunk_id FROM entity_mentions WHERE entity_id != ? AND entity_id IN "
                "(SELECT id FROM entities WHERE type = 'person')", (subject,))}
            skipped += len(mentioned - reads.listed)
    conn.close()
    assert skipped > 0 and unread > 0


def test_the_full_text_index_narrows_meetings_only_for_words_of_han_characters(hierarchy_store):
    """Only a word of two Han characters or more is held as bigrams that FTS5 keeps whole (the
    kana block's middle dot is a separator to it; a lone character is indexed only standing
    alone; a Latin form is no bigram): any other relation word, or a subject with any other
    form, is looked for in every chunk the related people are mentioned in."""
    import sqlean

    from tgr.query.focus import _indexed_holders

    conn = sqlean.connect(str(hierarchy_store))
    assert _indexed_holders(conn, "师父", {"悟空", "孙悟空"}) is not None
    for relation, forms in (("师", {"悟空"}), ("シ・ン", {"悟空"}), ("师父", {"悟空", "Wukong"}), ("师父", {"悟・空"})):
        assert _indexed_holders(conn, relation, forms) is None, (relation, forms)
    conn.close()


def test_relation_meetings_find_the_chunks_an_interrupted_run_left_unindexed(hierarchy_store, tmp_path):
    """A chunk stored but not indexed yet (chunks_unindexed, no full-text row) is read too:
    the meetings of a store whose meeting chunk is left unindexed are those of the whole store."""
    import shutil

    import sqlean

    from tgr.query.focus import _meetings

    path = tmp_path / "pending.db"
    shutil.copy(hierarchy_store, path)
    conn = sqlean.connect(str(path))
    people = [e for (e,) in conn.execute("SELECT id FROM entities WHERE type = 'person' ORDER BY id")]
    subject, relation, expected = max(((s, r, _meetings(conn, s, r)) for s in people for r in ("师父", "兄弟")),
                                      key=lambda found: len(found[2]))
    assert expected
    seq, terms = conn.execute("SELECT seq, terms FROM chunks WHERE id = ?", (expected[0][1],)).fetchone()
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, terms) VALUES ('delete', ?, ?)", (seq, terms))
    conn.execute("UPDATE chunks SET terms = '' WHERE seq = ?", (seq,))
    conn.execute("INSERT INTO chunks_unindexed(seq) VALUES (?)", (seq,))
    conn.commit()
    assert _meetings(conn, subject, relation) == expected
    conn.execute("DELETE FROM chunks_unindexed")  # (without the list the index cannot find it)
    assert expected[0][1] not in {m[1] for m in _meetings(conn, subject, relation)}
    conn.close()


def test_the_walks_subgraph_has_the_edges_of_a_row_a_mention(hierarchy_store):
    """graph_walk._subgraph reads a specific entity's chunks as one JSON array of node keys
    ("c:" chunk id): the same entity-chunk edges as a row a mention, for walks from every
    entity with a few seeds."""
    import sqlean

    from tgr.query.graph_walk import HUB_MENTIONS, _reached, _subgraph

    conn = sqlean.connect(str(hierarchy_store))
    chunk_ids = [c for (c,) in conn.execute("SELECT id FROM chunks ORDER BY seq")]
    checked = 0
    for n, (entity_id,) in enumerate(conn.execute("SELECT id FROM entities ORDER BY id").fetchall()):
        seeds = set(chunk_ids[n % len(chunk_ids):n % len(chunk_ids) + 3])
        graph = _subgraph(conn, _reached(conn, {entity_id: 1.0}, seeds))
        expected = {(e, c) for e, c in conn.execute(
            "SELECT entity_id, chunk_id FROM entity_mentions WHERE chunk_id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(seeds)),))}
        for eid, mentions in graph.entity_mentions.items():
            if mentions <= HUB_MENTIONS:
                expected |= set(conn.execute("SELECT entity_id, chunk_id FROM entity_mentions WHERE entity_id = ?", (eid,)))
        expected |= set(conn.execute(
            "SELECT e.id, c.id FROM entities e JOIN documents d ON d.title = e.name COLLATE NOCASE "
            "JOIN chunks c ON c.document_id = d.id WHERE e.id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(graph.entity_mentions), ensure_ascii=False),)))
        assert {(e, key[2:]) for e, keys in graph.entity_chunks.items() for key in keys} == expected, entity_id
        assert all(key.startswith("c:") for keys in graph.entity_chunks.values() for key in keys)
        checked += len(expected)
    conn.close()
    assert checked > 100


def test_the_walk_numbers_and_weighs_its_edges_as_one_edge_at_a_time_did():
    """graph_walk._subgraph_edges numbers nodes in C-level passes: the same node numbers,
    edges and weights as numbering each edge's two ends in turn, in sorted edge order."""
    import math
    import random

    from tgr.query.graph_walk import RELATION_WEIGHT, _Subgraph, _subgraph_edges, specificity

    rng = random.Random(7)
    entities = [rng.choice(["a", "ab", "abc", "b", "孙悟空", "悟空"]) + str(rng.randrange(30)) for _ in range(60)]
    mentions = {e: rng.randrange(1, 80) for e in entities}
    pairs = {(rng.choice(entities + ["unknown"]), rng.choice(["c1", "c10", "c2", "c", "d5"]) + str(rng.randrange(9)))
             for _ in range(400)}
    relations = [(rng.choice(entities), rng.choice(entities), rng.random() * 3, 0, 0) for _ in range(40)]
    chunks_of: dict[str, set[str]] = {}
    for eid, cid in pairs:
        chunks_of.setdefault(eid, set()).add("c:" + cid)
    graph = _Subgraph(mentions, chunks_of, relations)

    index: dict[str, int] = {}

    def node(key):
        return index.setdefault(key, len(index))

    edges, weights = [], []
    for eid, cid in sorted(pairs):
        edges.append((node("e:" + eid), node("c:" + cid)))
        weights.append(specificity(mentions[eid], 500) if eid in mentions else specificity(1, 500))
    for src, dst, weight, _, _ in relations:
        if src != dst:
            edges.append((node("e:" + src), node("e:" + dst)))
            weights.append(RELATION_WEIGHT * math.log1p(weight) * min(specificity(mentions[src], 500),
                                                                       specificity(mentions[dst], 500)))
    numbered: dict[str, int] = {}
    assert _subgraph_edges(graph, numbered, 500) == (edges, weights)
    assert list(numbered.items()) == list(index.items())


def test_a_hubs_first_mentions_read_in_text_order_are_the_sorted_ones(hierarchy_store):
    """focus._first_mentions reads a hub's chunks in text order until enough mention it: the
    same chunks, in the same order, as sorting all its mentions, for every entity, both orders
    of documents and several counts (and some entities are hubs whose scan finds them all)."""
    import sqlean

    from tgr.query.focus import HUB_SHARE, _first_mentions

    conn = sqlean.connect(str(hierarchy_store))
    chunks = conn.execute("SELECT max(seq) FROM chunks").fetchone()[0]
    hubs = 0
    for entity_id, mentions in conn.execute("SELECT id, mentions FROM entities ORDER BY id").fetchall():
        for order in ("d.rowid, c.ordinal", "c.document_id, c.ordinal"):
            for n in (1, 3, 200):
                expected = [r[0] for r in conn.execute(
                    "SELECT c.id FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id JOIN documents d "
                    f"ON d.id = c.document_id WHERE em.entity_id = ? ORDER BY {order} LIMIT ?", (entity_id, n))]
                assert _first_mentions(conn, entity_id, order, n) == expected, (entity_id, order, n)
                hubs += mentions * HUB_SHARE >= chunks and mentions * mentions >= n * chunks
    conn.close()
    assert hubs > 5
