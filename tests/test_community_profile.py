"""Offline community profiles (central members, c-TF-IDF key phrases, representative
sentences, importance) and the offline global answer built from them."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tgr
from conftest import EN_CORPUS, SMALL
from tgr.offline.community_reports import central_members, phrase_terms, title_members

ROOT = Path(__file__).resolve().parent.parent

WHALING = """Captain Ahab stood on the deck of the Pequod with his harpoon. Ahab told Starbuck to lower the harpoon boats.
Ahab and Stubb watched the whale spout beside the harpoon line. Queequeg sharpened his harpoon while Ahab paced.
Ahab cursed the white whale, and Flask coiled the harpoon line. Ahab ordered Tashtego to the masthead to watch for the whale.
Ahab and Daggoo hauled the harpoon line as the whale sounded. Ahab swore the harpoon would find the whale at last."""

GARDEN = """Mistress Rose pruned the roses in the walled garden at Greenhaven. Mistress Rose and Tom watered the roses by the greenhouse.
Mistress Rose showed Lily the tulips and roses of the garden. Lily and Mistress Rose planted seedlings in the greenhouse.
Mistress Rose asked Tom to mend the trellis of climbing roses. Mistress Rose gave Lily cuttings of roses from the garden."""


def _corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "whaling.txt").write_text(WHALING, encoding="utf-8")
    (folder / "garden.txt").write_text(GARDEN, encoding="utf-8")
    return folder


def _reports(kb) -> list[tuple]:
    return kb.conn.execute("SELECT community_id, title, summary, rating, findings FROM reports "
                           "ORDER BY rating DESC, community_id").fetchall()


def _holding(reports, name: str) -> tuple:
    return next(r for r in reports if r[1].startswith(name))


@pytest.fixture
def two_topics(tmp_path):
    path = tmp_path / "topics.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(_corpus(tmp_path))], **SMALL)
    return path


def test_a_community_is_named_by_its_hub_not_by_the_first_name_in_order():
    # a star: "Zed" is linked to every other member; alphabetically and by mentions it is not first
    entities = [{"id": n, "name": n, "mentions": 3} for n in ("Ann", "Bea", "Cy", "Dot")]
    entities.append({"id": "Zed", "name": "Zed", "mentions": 2})
    edges = [{"source": "Zed", "target": n, "weight": 1.0} for n in ("Ann", "Bea", "Cy", "Dot")]
    ranked = central_members(entities, edges)
    assert ranked[0]["name"] == "Zed"
    assert [e["name"] for e in title_members(ranked)] == ["Zed"]


def test_mentions_decide_between_members_equally_linked():
    entities = [{"id": "a", "name": "Alpha", "mentions": 1}, {"id": "b", "name": "Beta", "mentions": 40}]
    ranked = central_members(entities, [{"source": "a", "target": "b", "weight": 2.0}])
    assert [e["name"] for e in ranked] == ["Beta", "Alpha"]


def test_phrase_terms_keep_content_words_and_two_word_phrases():
    terms = phrase_terms("Scrooge's counting-house was closed; the old clerk didn't stay.")
    assert "scrooge" in terms and "counting house" in terms and "clerk" in terms
    assert "the" not in terms and "didn" not in terms and "closed clerk" not in terms


def test_the_hub_names_the_community_and_key_phrases_tell_two_communities_apart(two_topics):
    with tgr.open(two_topics, readonly=True) as kb:
        reports = _reports(kb)
    whaling, garden = _holding(reports, "Ahab"), _holding(reports, "Mistress Rose")
    phrases = {r[0]: next(f["key_phrases"] for f in json.loads(r[4]) if "key_phrases" in f)
               for r in (whaling, garden)}
    assert {"harpoon", "whale"} <= set(phrases[whaling[0]]) or "harpoon line" in phrases[whaling[0]]
    assert "roses" in phrases[garden[0]]
    assert not {"harpoon", "whale", "harpoon line"} & set(phrases[garden[0]])
    assert not {"roses", "garden", "greenhouse"} & set(phrases[whaling[0]])
    # representative sentences come from the community's own chunks and name its hub
    sentences = [f for f in json.loads(whaling[4]) if "chunk_id" in f]
    assert sentences and all("Ahab" in f["explanation"] for f in sentences)


def test_profiles_are_deterministic(tmp_path, two_topics):
    # another process with another string hash seed: no set or dict order leaks into a report
    again = tmp_path / "again.db"
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "tgr.cli", "index", str(again), str(tmp_path / "corpus"), "--offline",
                    "--embed-model", "tgr:hash-384", "--chunk-size", "300", "--chunk-overlap", "40", "-q"],
                   env=env, check=True, capture_output=True)
    with tgr.open(again, readonly=True) as kb:
        second = _reports(kb)
    with tgr.open(two_topics, readonly=True) as kb:
        assert _reports(kb) == second


@pytest.fixture(scope="module")
def carol(tmp_path_factory):
    """A store built as the demo store is (fixtures/corpus_en, the README's command)."""
    path = tmp_path_factory.mktemp("carol") / "carol.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS)], **SMALL)
    return path


def test_offline_global_opens_with_the_scrooge_community(carol):
    with tgr.open(carol, readonly=True) as kb:
        answer = kb.ask("What are the main themes?", mode="global")
        reports = _reports(kb)
    first = answer.answer.splitlines()[1]
    assert first.startswith("1. Scrooge") and "marley" in first.lower()
    # a one-sentence list of names ranks below the community around the hub
    assert _holding(reports, "Abels")[3] < _holding(reports, "Scrooge")[3]


def test_offline_global_cites_the_chunk_of_each_quoted_sentence(carol):
    with tgr.open(carol, readonly=True) as kb:
        answer = kb.ask("What are the main themes?", mode="global")
    lines = answer.answer.splitlines()[1:]
    assert len(lines) >= 3
    for line in lines:
        quoted = re.search(r'\. "(.+?)(?:…)?" \[Reports', line).group(1)
        first_source = int(re.search(r"\[Sources: (\d+)", line).group(1))
        text = " ".join(answer.sources[first_source - 1]["text"].split())
        assert quoted.rstrip("…") in text


def test_offline_global_puts_the_matching_community_first(two_topics):
    with tgr.open(two_topics, readonly=True) as kb:
        garden = kb.ask("Who pruned the roses in the garden?", mode="global").answer.splitlines()
        whaling = kb.ask("Who sharpened the harpoon?", mode="global").answer.splitlines()
    assert garden[0].startswith("The themes about") and garden[1].startswith("1. Mistress Rose")
    assert whaling[1].startswith("1. Ahab")


def test_offline_global_survives_malformed_findings(tmp_path, carol):
    copy = tmp_path / "copy.db"
    copy.write_bytes(carol.read_bytes())
    with tgr.open(copy) as kb:
        kb.conn.execute("UPDATE reports SET findings = CASE WHEN rating > 5 THEN 'not json' "
                        "ELSE '[{\"key_phrases\": 7, \"chunk_id\": 3}, 5]' END")
        kb.conn.commit()
    with tgr.open(copy, readonly=True) as kb:
        answer = kb.ask("What are the main themes?", mode="global")
    assert answer.answer.splitlines()[1].startswith("1. Scrooge")


def test_offline_global_says_when_no_report_matches(two_topics):
    with tgr.open(two_topics, readonly=True) as kb:
        answer = kb.ask("zzzz qqqq xylophone", mode="global").answer.splitlines()
    assert answer[0].startswith('No theme mentions "zzzz", "qqqq", "xylophone"')
    assert answer[1].startswith("1. ")


EPISODES = {
    "episode_01.txt": """HOST: Welcome back to Open Table, recorded in Boston with Maria Lopez.
MARIA LOPEZ: Thanks. At Lopez Consulting I help Acme Robotics hire for diversity and inclusion.
HOST: Why does diversity matter to Acme Robotics?
MARIA LOPEZ: Diverse teams at Acme Robotics ship better robots, and inclusion keeps them there.
HOST: Maria Lopez, what is the first step toward diversity at Acme Robotics?
MARIA LOPEZ: Measure diversity honestly, then publish the hiring numbers of Acme Robotics.""",
    "episode_02.txt": """HOST: Welcome back to Open Table, recorded in Boston with Tom Reed.
TOM REED: I grow tomatoes at Greenhaven Farm with Lily Park every summer.
HOST: How do tomatoes at Greenhaven Farm survive the frost?
TOM REED: Lily Park covers the tomatoes at Greenhaven Farm with straw before the frost.
HOST: Tom Reed, what do you feed the tomatoes?
TOM REED: Compost from Greenhaven Farm, and Lily Park swears by seaweed for tomatoes.""",
    "episode_03.txt": """HOST: Welcome back to Open Table, recorded in Boston with Ada Stone.
ADA STONE: I restore sailing ships at Salem Harbor with the Peabody Museum.
HOST: Which ships does the Peabody Museum bring to Salem Harbor?
ADA STONE: Whaling ships mostly; the Peabody Museum rigs them again at Salem Harbor.
HOST: Ada Stone, how long does a ship take?
ADA STONE: Two winters at Salem Harbor, and the Peabody Museum pays for the sails.""",
}


@pytest.fixture(scope="module")
def podcast(tmp_path_factory):
    folder = tmp_path_factory.mktemp("podcast")
    for name, text in EPISODES.items():
        (folder / name).write_text(text, encoding="utf-8")
    path = folder / "podcast.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(folder)], **SMALL)
    return path


def test_offline_global_brings_the_theme_a_question_is_about(podcast):
    with tgr.open(podcast, readonly=True) as kb:
        diversity = kb.ask("Which guests discuss diversity?", mode="global").answer.splitlines()
        tomatoes = kb.ask("Who talks about tomatoes?", mode="global").answer.splitlines()
    assert diversity[0].startswith('The themes about "diversity"')
    assert "Maria Lopez" in diversity[1] or "Acme Robotics" in diversity[1]
    assert "Greenhaven Farm" in tomatoes[1] or "Tom Reed" in tomatoes[1]
    assert diversity[1] != tomatoes[1]


def test_key_phrases_leave_out_speaker_labels_and_file_names(podcast):
    with tgr.open(podcast, readonly=True) as kb:
        phrases = [p for (findings,) in kb.conn.execute("SELECT findings FROM reports")
                   for f in json.loads(findings) for p in f.get("key_phrases", [])]
    assert phrases
    assert not {"host", "episode", "txt", "maria lopez", "tom reed"} & set(phrases)


def test_a_chinese_question_gets_a_chinese_frame_without_function_words(tmp_path):
    text = ("孙悟空拜须菩提祖师为师。须菩提祖师闻言大喜，二人同入洞中。孙悟空学会七十二变。"
            "须菩提祖师传孙悟空筋斗云。二人在灵台方寸山斜月三星洞修行。猪八戒在高老庄招亲。"
            "猪八戒闻言大怒。唐僧收猪八戒为徒。唐僧与孙悟空同往西天取经。")
    (tmp_path / "xyj.txt").write_text(text, encoding="utf-8")
    path = tmp_path / "xyj.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / "xyj.txt")], **SMALL)
        answer = kb.ask("这个故事的主要主题是什么？", mode="global").answer
        phrases = [p for (findings,) in kb.conn.execute("SELECT findings FROM reports")
                   for f in json.loads(findings) for p in f.get("key_phrases", [])]
        names = {n for (n,) in kb.conn.execute("SELECT name FROM entities")}
    assert "孙悟空" in names and not {"闻言", "二人"} & names
    assert answer.startswith("本库的主要主题") and "key phrases" not in answer and "关键词" in answer
    assert not {"闻言", "二人"} & set(phrases)


def test_several_stores_rank_their_themes_together(tmp_path, carol, two_topics):
    with tgr.open_many([carol, two_topics]) as stores:
        answer = stores.ask("Who sharpened the harpoon?", mode="global")
        main = stores.ask("What are the main themes?", mode="global")
        streamed = list(stores.ask("What are the main themes?", mode="global", stream=True))
    assert streamed[-1].answer == main.answer and "".join(streamed[:-1]) == main.answer
    lines = answer.answer.splitlines()
    assert lines[0].startswith('The themes about "sharpened", "harpoon"')
    assert lines[1].startswith("1. Ahab") and f"[Reports: {two_topics}: " in lines[1]
    assert answer.sources and all(s["store"] == str(two_topics) for s in answer.sources[:1])
    stores_named = {s["store"] for s in main.sources}
    assert stores_named == {str(carol), str(two_topics)}  # each store's main theme is listed
    assert main.answer.startswith("The main themes of these stores")


def test_several_stores_answer_a_global_follow_up_from_their_themes(carol, two_topics):
    with tgr.open_many([carol, two_topics]) as stores:
        chat = stores.chat("global")
        chat.ask("Who sharpened the harpoon?")
        answer = chat.ask("What else is said about him?")
        alone = stores.ask("What else is said about him?", mode="global")
    # the themes of the name the conversation spoke of, not passages that lack the question's words
    lines = answer.answer.splitlines()
    assert lines[0].startswith('The themes about "else", "ahab"') and lines[1].startswith("1. Ahab")
    assert answer.question == "What else is said about him?" and answer.sources
    assert answer.reports[0].startswith(f"{two_topics}: ")
    assert "ahab" not in alone.answer.splitlines()[0]  # the same question on its own has no name to carry


def test_several_stores_give_a_global_questions_context_as_their_reports(carol, two_topics):
    with tgr.open_many([carol, two_topics]) as stores:
        context = stores.ask("What are the main themes?", mode="global", context_only=True)
        one = tgr.open(carol, readonly=True)
        alone = one.ask("What are the main themes?", mode="global", context_only=True)
        one.close()
    # the reports global search would read, each headed by its store, as one store gives its own
    assert context.answer == "" and context.model == alone.model == "none (context only)"
    assert f"----- Report {carol}: " in context.context and f"----- Report {two_topics}: " in context.context
    assert {r.split(": ")[0] for r in context.reports} == {str(carol), str(two_topics)}
    assert context.sources and {s["store"] for s in context.sources} <= {str(carol), str(two_topics)}
    assert alone.context.startswith("----- Report ")


def test_analysed_chunks_beyond_the_memory_limit_come_back_from_disk_unchanged():
    """The report writer keeps a bounded number of analysed chunks in memory; the others are
    read back from its temporary file as they were analysed (Chinese and English alike)."""
    from tgr.offline.community_reports import _AnalysedChunks, analyse_chunk

    texts = {"en": WHALING, "garden": GARDEN, "zh": "孙悟空大闹天宫。唐僧和猪八戒去西天取经，孙悟空保护唐僧。"}
    kept = _AnalysedChunks(limit=1)
    for chunk_id, text in texts.items():
        kept.put(chunk_id, analyse_chunk(text))
    assert kept.get("missing") is None
    for _ in range(2):  # each read evicts the one before it to disk
        for chunk_id, text in texts.items():
            assert kept.get(chunk_id) == analyse_chunk(text)
    zh = kept.get("zh")
    assert zh.where["孙悟空"] == 0b11 and zh.where["唐僧"] == 0b10  # a bit per sentence that says it


def test_a_chunks_chinese_words_cut_at_once_are_each_sentences_own():
    """The analysis cuts all the Chinese of a chunk in one call: each sentence gets the terms
    it gets on its own (jieba cuts each run of Han characters apart)."""
    from tgr.offline.community_reports import analyse_chunk, chinese_words

    text = "孙悟空大闹天宫，玉帝大惊。唐僧和猪八戒去西天取经，孙悟空保护唐僧。Sun Wukong met the Dragon King 龙王 at sea."
    chunk = analyse_chunk(text)
    assert len(chunk.sentences) == 3
    for sentence in chunk.sentences:
        assert sentence.phrases == tuple(dict.fromkeys(phrase_terms(sentence.text)))
    texts = [s.text for s in chunk.sentences]
    assert chinese_words(texts) == [chinese_words([t])[0] for t in texts]
    odd = ["孙悟空\0唐僧", "", "abc", " 猪八戒 ", "沙僧"]  # a NUL inside, nothing Chinese, spaces around
    assert chinese_words(odd) == [chinese_words([t])[0] for t in odd] == [["孙悟空", "唐僧"], [], [], ["猪八戒"], ["沙僧"]]
    assert "龙王" in chunk.sentences[2].phrases and "dragon king" in chunk.sentences[2].phrases


def test_a_report_writer_reads_the_mentions_again_in_a_new_stage(two_topics):
    """The offline writer reads where members are mentioned once per report stage; begin()
    (each build_reports) reads the store as it is then."""
    from tgr.offline.community_reports import ProfileReportWriter
    from tgr.store.db import transaction

    with tgr.open(two_topics) as kb:
        conn = kb.conn
        entity, = conn.execute("SELECT min(entity_id) FROM entity_mentions").fetchone()
        writer = ProfileReportWriter(conn)
        before = writer.inputs([entity])
        with transaction(conn):
            conn.execute("DELETE FROM entity_mentions WHERE entity_id = ?", (entity,))
        writer.begin()
        after = writer.inputs([entity])
        assert after != before and after == ProfileReportWriter(conn).inputs([entity])


def test_form_replacement_without_a_file_extension_uses_the_line_patterns_alone():
    """_without_form tries the file-name pattern only where an extension is written: on every
    kind of piece it replaces what the whole pattern replaces."""
    from tgr.offline.community_reports import _FORM, _without_form

    pieces = ["HOST: welcome back.\nMaria Lopez: thanks for having me.", "# Episode 12\nCHAPTER IV\nplain words",
              "He read notes.txt and readme.md twice.", "HOST: see the file a.pdf. It said so.",
              "No label here: just a colon.", "  ## indented heading\ntext", "A.B.C. DEF.\nGHI: jkl",
              "version 2.txt1 and x.md", "孙悟空：大闹天宫。", "ends with a dot.", "", "\n\nTITLE LINE\n"]
    for piece in pieces:
        assert _without_form(piece) == _FORM.sub(" . ", piece)


def test_latin_terms_breaks_and_stopwords_end_a_phrase_as_before():
    """The cached token lookup of latin_terms gives each sentence the terms of the plain loop:
    content words, and two-word phrases that span no clause break and no stopword."""
    from tgr.offline.community_reports import _BREAK, _LATIN_WORD, _ContentWords, _content_word, latin_terms

    def plain(text: str) -> list[str]:
        terms, previous = [], None
        for word, stop in re.findall(f"({_LATIN_WORD.pattern})|({_BREAK.pattern})", text):
            word = None if stop else _content_word(word)
            if word is not None:
                terms += [word] + ([f"{previous} {word}"] if previous else [])
            previous = word
        return terms

    for text in (WHALING, GARDEN, "Scrooge's counting-house -- closed; the clerk's 'own' stool (old) — gone!",
                 "It's Marley's ghost “walking” in Scrooge’s room\nagain", "孙悟空 met the Dragon King 龙王."):
        for sentence in text.split("\n"):
            assert latin_terms(sentence, []) == plain(sentence)
    words = _ContentWords()  # bounded: cleared when full, each token still its content word
    tokens = [f"word{n}" for n in range(70_000)] + ["Scrooge's", "the", "--", "Harpoon"]
    assert [words[t] for t in tokens] == [_content_word(t) for t in tokens] and len(words) < 65_536


def test_mentions_read_each_chunks_place_once(hierarchy_store):
    """The report writer's mention reader gives each mention its chunk's document and position
    (None for a chunk that is gone) from one read of the chunks seen, not a join per mention."""
    import sqlean as sqlite3
    from tgr.offline.community_reports import _Mentions

    conn = sqlite3.connect(f"file:{hierarchy_store}?mode=ro", uri=True)
    ids = [r[0] for r in conn.execute("SELECT id FROM entities ORDER BY id")]
    statements = []
    conn.set_trace_callback(statements.append)
    mentions = _Mentions(conn)
    mentions.read(ids)
    conn.set_trace_callback(None)
    assert not any("JOIN" in s.upper() for s in statements)
    joined = conn.execute("SELECT em.entity_id, em.chunk_id, c.document_id, c.ordinal FROM entity_mentions em "
                          "LEFT JOIN chunks c ON c.id = em.chunk_id").fetchall()
    places = {(e, ch): None if d is None else (d, o) for e, ch, d, o in joined}
    for eid in ids:
        for number in mentions._chunks[eid]:
            cid = mentions._chunk_ids[number]
            assert mentions._places[number] == places[(eid, cid)]
    assert sum(len(v) for v in mentions._chunks.values()) == len(joined)


def _plain_community_chunks(conn, ids: list[str]) -> tuple[list[tuple[str, list[str]]], int]:
    """(chunk id, members it mentions) of every chunk mentioning one of ids, most members first,
    then by document and position, and the documents they span: from a join, row by row."""
    members: dict[str, list[str]] = {}
    place = {}
    for eid in ids:
        for cid, document, ordinal in conn.execute(
                "SELECT em.chunk_id, c.document_id, c.ordinal FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
                "WHERE em.entity_id = ? ORDER BY em.chunk_id", (eid,)):
            members.setdefault(cid, []).append(eid)
            place[cid] = (document, ordinal)
    order = sorted(members, key=lambda c: (-len(members[c]), place[c], c))
    return [(c, members[c]) for c in order], len({place[c][0] for c in order})


def test_a_communitys_first_chunks_are_those_of_the_whole_ordering(hierarchy_store, monkeypatch):
    """The mention reader gives a community's first chunks (those naming most members, then by
    document and position), how many chunks mention members and the documents they span, as
    ordering every mentioned chunk does; each entity's chunks read joined in one text or, past
    the joined length limit, row by row, alike."""
    import sqlean as sqlite3
    from tgr.offline import community_reports
    from tgr.offline.community_reports import _Mentions

    conn = sqlite3.connect(f"file:{hierarchy_store}?mode=ro", uri=True)
    groups = [[r[0] for r in conn.execute("SELECT entity_id FROM community_members WHERE community_id = ? "
                                          "ORDER BY entity_id DESC", (cid,))]
              for (cid,) in conn.execute("SELECT community_id FROM community_chunks ORDER BY chunks DESC, 1 LIMIT 8")]
    read = []
    for joined_bytes in (community_reports.JOINED_BYTES, 0):
        monkeypatch.setattr(community_reports, "JOINED_BYTES", joined_bytes)
        mentions = _Mentions(conn)
        found = []
        for group in groups:
            every, documents = _plain_community_chunks(conn, group)
            assert len(every) > 3
            for limit in (1, 3, len(every), len(every) + 5):
                assert mentions.community_chunks(group, limit) == (every[:limit], len(every), documents)
            found.append(mentions.chunk_ids(group))
            assert found[-1] == sorted(c for c, _ in every)
        read.append(found)
    assert read[0] == read[1]
