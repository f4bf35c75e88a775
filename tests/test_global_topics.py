"""Global questions about a topic, and over several stores with a chat model: the communities
the passages say the topic of come first (in a long chunk, by the names near its words), and
several stores' reports are mapped and reduced together, each cited with its store (the model
reached at the wire level, fixtures/fakellm.py's server)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, SMALL
from tgr.cli import main
from tgr.query.global_search import _relabelled, relabel

FILLER = ["The roads out of the town were long and grey and quiet in that cold season of the year.",
          "Rain came over the hills every evening and the river rose slowly under the old stone bridge.",
          "The bell of the chapel rang twice at noon and the shops closed their shutters for an hour."]
HARBOUR = ["Boris Lindqvist and Dmitri Volkov walked down to the harbour market again.",
           "Boris Lindqvist and Dmitri Volkov counted the boxes on the wharf together.",
           "Boris Lindqvist and Dmitri Volkov argued about the price of rope and tar."]


def valley_text() -> str:
    """One chunk of about 1,000 tokens naming two pairs of people equally often in it; the
    famine is told of right after the Kellers, and never near the other two."""
    parts = []
    for i in range(6):
        parts.append("Anna Keller and Clara Keller came home late that night. Famine had reached the valley.")
        parts += [FILLER[(i + j) % 3] for j in range(3)]
        parts += [HARBOUR[i % 3], HARBOUR[(i + 1) % 3]]
        parts += [FILLER[(i + j + 1) % 3] for j in range(2)]
    return "\n\n".join(" ".join(parts[k:k + 3]) for k in range(0, len(parts), 3)) + "\n"


def test_in_a_long_chunk_a_topic_counts_for_the_names_near_its_words(tmp_path):
    source = tmp_path / "valley.txt"
    source.write_text(valley_text(), encoding="utf-8")
    with tgr.open(tmp_path / "valley.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(source)])  # the default chunk size: the whole text is one chunk
        assert kb.info()["chunks"] == 1
        themes, matched = kb.themes("What does the story say about the famine?")
        reports = kb.global_reports("What does the story say about the famine?")
    # the Kellers' report holds no word of the question ("Famine" stands in a sentence of its own):
    # the passages' evidence alone sets them apart from the pair the famine is never said near
    assert matched and [t.names for t in themes] == [["Anna Keller", "Clara Keller"]]
    assert len(reports) == 2 and "Anna Keller" in reports[0][1]


def test_a_chinese_question_about_a_topic_is_answered_in_chinese(tmp_path):
    from conftest import ZH_CORPUS

    with tgr.open(tmp_path / "xiyou.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(ZH_CORPUS)], **SMALL)
        answer = kb.ask("故事里关于猴王说了什么？", "global")
    assert answer.answer.startswith("与“猴王”有关的主题") and "关键词" in answer.answer


@pytest.fixture(scope="module")
def two_halves(tmp_path_factory):
    """Two offline stores, one of each half of the fixture Carol."""
    folder = tmp_path_factory.mktemp("halves")
    paths = []
    for n, part in enumerate(sorted(EN_CORPUS.glob("*.txt")), 1):
        path = folder / f"half{n}.db"
        with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
            kb.index([str(part)], **SMALL)
        paths.append(path)
    return paths


def test_several_stores_with_a_chat_model_map_and_reduce_their_reports_together(two_halves, fake_server,
                                                                                  monkeypatch):
    first, second = two_halves
    result = CliRunner().invoke(main, ["ask", str(first), str(second), "What is said about Scrooge and Marley?",
                                       "--mode", "global", "--chat-model", "openai:fake-chat",
                                       "--base-url", fake_server.url, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    kinds = fake_server.stats.calls_by_kind
    assert kinds["map_points"] >= 1 and kinds["reduce"] == 1  # a map and a reduce, not a passages answer
    # each store's reports are read and cited with the store's name
    assert {r.split(": ")[0] for r in data["reports"]} == {str(first), str(second)}
    assert f"[Reports: {first}: " in data["answer"] and f"{second}: " in data["answer"]
    assert "1-0." not in data["answer"] and "2-0." not in data["answer"]  # the labels the model saw
    assert {s["store"] for s in data["sources"]} == {str(first), str(second)}
    assert [s["ref"] for s in data["sources"]] == list(range(1, len(data["sources"]) + 1))


def test_several_stores_stream_the_reduce_with_their_citations_named(two_halves, fake_server):
    with tgr.open_many(two_halves, chat="openai:fake-chat", base_url=fake_server.url) as stores:
        items = list(stores.ask("What is said about Scrooge and Marley?", "global", stream=True))
        whole = stores.ask("What is said about Scrooge and Marley?", "global")
    pieces, answer = items[:-1], items[-1]
    assert "".join(pieces) == answer.answer == whole.answer and "[Reports: " in answer.answer
    assert answer.sources == whole.sources and answer.sources


def test_a_global_follow_up_over_several_stores_is_mapped_and_reduced_after_the_conversation(two_halves,
                                                                                              fake_server):
    first, second = two_halves
    with tgr.open_many(two_halves, chat="openai:fake-chat", base_url=fake_server.url) as stores:
        chat = stores.chat("global")
        chat.ask("What is said about Scrooge and Marley?")
        before = dict(fake_server.stats.calls_by_kind)
        answer = chat.ask("And what became of him?")
    kinds = fake_server.stats.calls_by_kind
    # a map over both stores' reports and a reduce, not an answer from fused passages
    assert kinds["map_points"] > before.get("map_points", 0) and kinds["reduce"] == before["reduce"] + 1
    assert kinds["answer"] == before.get("answer", 0)
    assert {r.split(": ")[0] for r in answer.reports} == {str(first), str(second)}
    assert answer.question == "And what became of him?" and answer.sources
    # the map reads the question resolved against the conversation: "him" is the last answer's
    # leading entity (issue 39 item 3)
    maps = [m for m in fake_server.conversations if "And what became of Scrooge?" in m[-1]["content"]]
    assert maps
    # ... and the reduce reads the conversation's turns
    reduce = next(m for m in maps if len(m) > 1)
    assert any(t["role"] == "user" and "Scrooge and Marley" in t["content"] for t in reduce[:-1])


def test_a_first_store_without_a_chat_model_answers_a_global_question_from_every_stores_themes(
        two_halves, fake_server, monkeypatch, tmp_path):
    """The first store's models write the answer: offline, its themes and those of a store
    that has a chat model of its own are ranked together, and that model is not asked."""
    built = CliRunner().invoke(main, ["index", str(tmp_path / "api.db"), str(sorted(EN_CORPUS.glob("*.txt"))[1]),
                                      "--base-url", fake_server.url, "--chat-model", "openai:fake-chat",
                                      "--embed-model", "tgr:hash-384", "--chunk-size", "300",
                                      "--chunk-overlap", "40", "-q"])
    assert built.exit_code == 0, built.output
    monkeypatch.setenv("TGR_BASE_URL", fake_server.url)  # the second store reaches its chat model
    calls = fake_server.stats.chat_calls
    with tgr.open_many([two_halves[0], tmp_path / "api.db"]) as stores:
        answer = stores.ask("What are the main themes?", "global")
        local = stores.ask("Who is Marley?", "local")
    assert answer.answer.startswith("The main themes of these stores") and answer.model == "offline-extractive"
    assert {r.split(": ")[0] for r in answer.reports} == {str(two_halves[0]), str(tmp_path / "api.db")}
    assert {s["store"] for s in answer.sources} == {str(two_halves[0]), str(tmp_path / "api.db")}
    assert local.model == "offline-extractive" and fake_server.stats.chat_calls == calls


def test_relabelling_holds_back_a_citation_split_between_pieces():
    names = {"1-0.2": "a.db: 0.2", "2-0.1": "b.db: 0.1"}
    assert relabel("x [Reports: 1-0.2, 2-0.1] y [Sources: 1]", names) == "x [Reports: a.db: 0.2; b.db: 0.1] y [Sources: 1]"

    def written():
        yield from ["Scrooge is mean [Rep", "orts: 1-0", ".2]. Bob is ", "poor [Reports: 2-0.1", ""]
        return "whole"

    relabelled = _relabelled(written(), names)
    out = []
    while True:
        try:
            out.append(next(relabelled))
        except StopIteration as end:
            assert end.value == "whole"
            break
    assert "".join(out) == "Scrooge is mean [Reports: a.db: 0.2]. Bob is poor [Reports: 2-0.1"
    assert out[0] == "Scrooge is mean "  # text before an open bracket is not held back


def test_a_quoted_chinese_term_is_one_topic_word():
    """A term the question quotes is what it is about, whole: the function words a question is
    cut at (里, 中, 有 ...) also occur inside words (乡里制), which must not fall apart."""
    from tgr.offline.global_answer import topic_terms, topic_words

    assert topic_words("“乡里制”可追溯到什么时期？") == ["乡里制", "可追溯到", "时期"]
    assert "乡里" in topic_terms("“乡里制”可追溯到什么时期？")
    assert topic_words("《中国有嘻哈》讲了什么？") == ["中国有嘻哈"]
    assert topic_words("这个故事的主要主题是什么？") == []  # nothing quoted: as before


def test_possessive_and_contraction_endings_are_no_topic_words():
    """"Scrooge's" is about Scrooge: the 's (or n't, 'll) is grammar, never a lone topic letter,
    while a letter written as a word of its own ("vitamin C") stays; 的 is no topic word either."""
    from tgr.offline.global_answer import heading, topic_words

    assert topic_words("How does Scrooge's view of Christmas change?") == ["scrooge", "view", "christmas", "change"]
    assert topic_words("What doesn’t Bob’s family have, and what'll they do?") == ["bob", "family"]
    assert topic_words("What is vitamin C good for?") == ["vitamin", "c", "good"]
    assert topic_words("孙悟空的师父是谁？") == ["孙悟空", "师父"]
    assert '"s"' not in heading("How does Scrooge's view of Christmas change?", matched=True)


def test_topic_words_match_where_a_word_starts_as_a_look_back_first_would():
    import re

    from tgr.query.topic_evidence import _topic_words
    from tgr.text import has_cjk

    terms = ["sea", "seas", "whale", "ahab", "饥荒"]
    text = ("Sea, seas and SEAS; the_sea, 2sea, oversea, Ahab's whale-boat; (sea) ahab\u00e9 "
            "\u00e9sea \u1e9eSEA. Der Walfisch: WHALE, whales, swhale. 饥荒来了，大饥荒")
    old = re.compile("|".join(re.escape(t) if has_cjk(t) else rf"(?<!\w){re.escape(t)}"
                              for t in sorted(set(terms), key=len, reverse=True)), re.IGNORECASE)
    new = _topic_words(terms)
    spans = [m.span() for m in new.finditer(text)]
    assert spans == [m.span() for m in old.finditer(text)]
    assert [text[a:b] for a, b in spans] == ["Sea", "seas", "SEAS", "Ahab", "whale", "sea", "ahab", "WHALE",
                                             "whale", "饥荒", "饥荒"]


def test_reports_holding_a_term_are_those_whose_words_hold_it():
    from tgr.query.retrieve import ReportTerms
    from tgr.text import term_set

    rows = [("0.1", "Ahab and the whale", None, 1.0, 3, "The WHALE-boat sank."),
            ("0.2", "Scrooge", None, 1.0, 2, "Overseas trade; whalebone."),
            ("0.3", "ΟΔΥΣΣΕΥΣ", None, 1.0, 2, "ΘΑΛΑΣΣΑ ΚΑΙ ΟΔΟΣ"),
            ("0.4", "İstanbul", None, 1.0, 2, "饥荒来了"),
            ("0.5", None, None, 1.0, 1, None)]
    held = ReportTerms(rows)
    for term in ["whale", "boat", "sea", "overseas", "scrooge", "ς", "οδος", "θαλασσα", "i̇stanbul", "饥荒",
                 "荒来", "none", "the"]:
        want = {r[0] for r in rows if term in term_set(f"{r[1]} {r[5]}")}
        assert held.holders(term) == want, term
    assert held.holders("whale") == {"0.1"} and held.holders("οδος") == {"0.3"} and held.holders("none") == {"0.5"}


def test_a_name_at_a_lines_start_is_found_as_one_pattern_of_text_or_line_start_would():
    import re

    import sqlean

    from tgr.offline.everywhere import _chunks_by_document, _Runs, _where_lines_repeat

    name = "Kevin Scott"
    old = re.compile(rf"(?:^|\n)[ \t]*(?:[^\n:：]{{1,20}}[:：][ \t]*)?{re.escape(name)}", re.IGNORECASE)
    texts = ["Kevin Scott: hello", "  kevin scott said", "HOST: KEVIN SCOTT", "a\n\tHost：Kevin Scott",
             "about Kevin Scott", "x: Kevin Scott", "a very long label that is too long: Kevin Scott",
             "\nKevin Scott", "line\r\nKevin Scott", "no name here", "Kevin\nScott", "说：Kevin Scott"]
    conn = sqlean.connect(":memory:")
    conn.executescript("CREATE TABLE chunks(seq INTEGER PRIMARY KEY, id TEXT UNIQUE, document_id TEXT, "
                       "ordinal INTEGER, text TEXT);"
                       "CREATE TABLE entity_mentions(entity_id TEXT, chunk_id TEXT);")
    for i, text in enumerate(texts):  # each text a document's second chunk: only the line starts count
        conn.execute("INSERT INTO chunks VALUES (?, ?, ?, 1, ?)", (i, f"c{i}", f"d{i}", text))
        conn.execute("INSERT INTO entity_mentions VALUES ('e', ?)", (f"c{i}",))
    expected = sum(bool(old.search(t)) for t in texts)
    assert expected == 8
    documents = _chunks_by_document(conn, "e", _Runs(conn), 1)
    assert _where_lines_repeat(conn, name, documents, expected)
    assert not _where_lines_repeat(conn, name, documents, expected + 1)


def test_topic_spans_on_lower_cased_text_are_those_of_the_ignore_case_pattern():
    import random
    import re

    from tgr.query.topic_evidence import _CASE_TRAPS, _topic_spans, _topic_words

    # every character past ASCII that lower() makes longer, an ASCII letter or another kind of
    # word character, or that matches an ASCII letter ignoring case, is a trap
    letter, word = re.compile(r"[a-z0-9_]", re.IGNORECASE), re.compile(r"\w")
    for cp in range(0x80, 0x110000):
        ch = chr(cp)
        low = ch.lower()
        if len(low) != 1 or low.isascii() or letter.match(ch) or bool(word.match(ch)) != bool(word.match(low)):
            assert ch in _CASE_TRAPS, hex(cp)
    terms = ["sea", "seas", "whale", "ahab", "a.b", "Moby"]
    alphabet = list("seawhlbSEAWHLB .,_'-2\n") + ["é", "É", "ß", "ẞ", "Σ", "ς", "ǅ", "\u0130", "\u0131", "\u017f",
                                                   "\u212a", "K", "k", "饥"]
    rng = random.Random(41)
    spans, hit = _topic_spans(terms), _topic_words(terms)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        text = text.replace("w", rng.choice(["whale", "w", "Ahab", "MOBY", "a.b"]))
        assert spans(text) == [m.span() for m in hit.finditer(text)], text
    assert _topic_spans(["饥荒", "sea"])("饥荒 SEA") == [(0, 2), (3, 6)]  # not all ASCII: the ignore-case pattern


def test_texts_with_the_same_terms_share_their_best_matches(hierarchy_store):
    """best_matches keeps a full-text ranking by the terms it matches: two texts with the same
    terms ("Scrooge?" and "scrooge"; at 100 M "Who is Scrooge?" too, whose "who" and "is" are in
    most chunks) run one ranking, the same as each would run alone."""
    import tgr
    from tgr.query.retrieve import Retriever
    from tgr.query.topic_evidence import best_matches

    with tgr.open(hierarchy_store, readonly=True) as kb:
        alone = {text: dict(Retriever(kb.conn).bm25(text, 50)) for text in ["Scrooge?", "scrooge", "Marley"]}
        retriever, calls = Retriever(kb.conn), []
        real = retriever.bm25
        retriever.bm25 = lambda text, limit: calls.append(text) or real(text, limit)
        assert retriever.bm25_terms("Scrooge?") == retriever.bm25_terms("scrooge") == ["scrooge"]
        for text in ["Scrooge?", "scrooge", "Marley", "Scrooge?"]:
            assert best_matches(retriever, text, 50) == alone[text]
    assert calls == ["Scrooge?", "Marley"] and alone["scrooge"]


def test_a_reports_first_chunks_are_those_of_sorting_every_member_chunk():
    """report_chunks counts a community's member chunks from one JSON array and sorts only the
    matched ones and the unmatched with the most members: the same chunks, in the same order,
    as grouping in SQLite and sorting them all (demo store; BM25 matches drawn at random, with
    ties, and some matching chunks of no member)."""
    import random

    from conftest import FIXTURES
    from tgr.query.retrieve import _first_chunks, _member_chunks
    from tgr.store.db import open_file

    conn = open_file(FIXTURES / "demo_carol.db", readonly=True)
    rng = random.Random(41)
    communities = [r[0] for r in conn.execute("SELECT id FROM communities")]
    assert communities
    for cid in communities:
        grouped = dict(conn.execute(
            "SELECT em.chunk_id, count(*) FROM community_members m JOIN entity_mentions em "
            "ON em.entity_id = m.entity_id WHERE m.community_id = ? GROUP BY em.chunk_id", (cid,)).fetchall())
        members = _member_chunks(conn, cid)
        assert members == grouped
        for _ in range(20):
            chosen = rng.sample(sorted(members), rng.randint(0, len(members)))
            matched = {c: rng.choice([0.0, 0.5, 1.0, rng.random()]) for c in chosen + ["elsewhere"]}
            for n in (1, 3, len(members) + 1):
                expected = sorted(grouped, key=lambda c: (-matched.get(c, 0.0), -grouped[c], c))[:n]
                assert _first_chunks(members, matched, n) == expected
    for _ in range(300):  # a big community's counts, the matched chunks among those that mention the most
        members = {f"c{i}": rng.randint(1, 40) for i in range(rng.randint(0, 60))}
        most = sorted(members, key=lambda c: -members[c])[:rng.randint(0, 10)]  # scores of any sign
        some = most + rng.sample(sorted(members), len(members) // 4)
        matched = {c: rng.choice([-0.5, 0.0, 0.5, rng.random()]) for c in some}
        expected = sorted(members, key=lambda c: (-matched.get(c, 0.0), -members[c], c))[:3]
        assert _first_chunks(members, matched, 3) == expected


def test_the_windows_holding_a_name_are_those_a_test_of_each_window_finds():
    """_near_words finds which of a chunk's windows hold a name from its occurrences in the
    windows joined by NUL: the windows a test of each finds, names with a NUL and windows
    holding one included, names found several times in a window or overlapping themselves."""
    import random

    from tgr.query.topic_evidence import _Joined

    rng = random.Random(41)
    alphabet = ["a", "b", "ab", "\0", "悟空", " ", "aa"]
    for _ in range(3000):
        windows = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 6))]
        names = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(0, 3))}
        expected = {i for i, window in enumerate(windows) if any(n in window for n in names)}
        assert _Joined(windows).naming(names) == expected, (windows, names)


def test_the_community_holding_a_named_entity_leads_though_its_report_never_names_it(tmp_path):
    people = ["Abel Crane", "Bruno Hale", "Cyril Dane", "Dora Vance", "Edith Moss", "Felix Grant", "Gwen Pike",
              "Hugo Lark"]
    harbour = [f"{p} sailed from Marlow Harbour with the morning tide and sold fish on the quay." for p in people]
    harbour.insert(3, "Quillon Weir stands on the stream north of Marlow Harbour.")
    (tmp_path / "harbour.txt").write_text("\n\n".join(harbour) + "\n", encoding="utf-8")
    (tmp_path / "river.txt").write_text(
        "Tessa Brand and Orla Finch fished the river below the old mill every summer.\n\n"
        "Tessa Brand and Orla Finch mended their nets by the river in the evening.\n", encoding="utf-8")
    question = "Which river feeds Quillon Weir?"
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / "harbour.txt"), str(tmp_path / "river.txt")])
        reports = kb.global_reports(question)
        passages = kb.retrieve(question, mode="global", k=2)
    # the harbour's report names its hub and busiest members, never the weir; the anglers' says "river"
    assert "Quillon" not in reports[0][2] and "Marlow Harbour" in reports[0][1]
    assert passages[0].source.endswith("harbour.txt")


def test_a_chunk_is_near_a_named_entity_through_an_entity_related_to_it(tmp_path):
    from tgr.query.named_reach import chunk_nearness, nearer_first
    from tgr.query.retrieve import Retriever, question_spans

    texts = {"w.txt": "Abel Crane, Bruno Hale, Cyril Dane and Dora Vance built Quillon Weir on the Brannock Stream.",
             "s.txt": "Abel Crane wrote that the Brannock Stream rises in the Tarn Hills above the moor.",
             "f.txt": "The choir sang in the chapel every Sunday morning before the market opened."}
    for name, text in texts.items():
        (tmp_path / name).write_text(text + "\n", encoding="utf-8")
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / name) for name in texts])
        conn = kb.conn
        chunk = {source.rsplit("/", 1)[-1]: cid for cid, source in conn.execute(
            "SELECT c.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id")}
        weir = conn.execute("SELECT id FROM entities WHERE name = 'Quillon Weir'").fetchone()[0]
        near = chunk_nearness(conn, {weir: 2.0}, sorted(chunk.values()), len(chunk))
        scores = nearer_first(Retriever(conn), question_spans("Where is Quillon Weir?"), dict.fromkeys(chunk.values(), 1.0))
    # the weir's own chunk is nearest; the stream's, which never names the weir, through the
    # stream the weir stands on (named twice, so less specific than the weir); the choir's not at all
    assert near[chunk["w.txt"]] == 1.0 and 0 < near[chunk["s.txt"]] < 1.0 and chunk["f.txt"] not in near
    assert scores[chunk["w.txt"]] > scores[chunk["s.txt"]] > scores[chunk["f.txt"]] == 1.0
