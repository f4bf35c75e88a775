"""A question's full-text terms (what it asks about, not how it asks) and its clauses, and the
local retrieval they give: Chinese question words do not rank, a question of two facts brings
both facts' passages."""
from __future__ import annotations

import json

import tgr
from tgr.query.question_terms import question_clauses, question_terms
from tgr.text import query_terms


def test_question_words_and_the_bigrams_across_them_are_left_out():
    terms = question_terms("2022年冬奥会开幕式总导演是谁")
    assert "总导演" in terms and "冬奥会" in terms and "2022" in terms
    plain = query_terms("2022年冬奥会开幕式总导演是谁")
    assert {"是谁", "演是", "导演是"} <= set(plain)
    assert not {"是谁", "演是", "导演是", "谁"} & set(terms)
    assert not any("哪" in t or "多少" in t for t in question_terms("苹果在哪个城市开店，卖了多少台？"))


def test_a_lone_character_between_question_words_is_no_term():
    assert question_terms("CVPR2022在哪举办") == ["cvpr2022", "举办", "cvpr", "2022"]


def test_a_question_of_only_question_words_keeps_them():
    assert question_terms("谁是谁") == query_terms("谁是谁")
    assert question_terms("Who is Scrooge?") == query_terms("Who is Scrooge?")


def test_letter_digit_words_are_also_searched_by_their_parts():
    terms = question_terms("Who designed the M1 chip for CVPR2022?")
    assert {"m1", "m", "1", "cvpr2022", "cvpr", "2022"} <= set(terms)
    assert "who" in terms  # English stopwords are the store's to drop (tgr.query.common_terms)


def test_clauses_of_a_chinese_question_that_asks_several_things():
    assert question_clauses("印度核潜艇下水的时间，2021年中国电影总票房是多少？") == [
        "印度核潜艇下水的时间", "2021年中国电影总票房是多少"]
    assert question_clauses("查尔斯加冕时间?硅谷银行破产时间") == ["查尔斯加冕时间", "硅谷银行破产时间"]
    assert question_clauses("冬奥会的举办城市以及开幕时间") == ["冬奥会的举办城市", "开幕时间"]
    # one clause, or clauses without a term of their own: the question as it is
    assert question_clauses("2021赛季中超冠军？") == ["2021赛季中超冠军？"]
    assert question_clauses("中超冠军，是谁？") == ["中超冠军，是谁？"]
    # English: a comma or a title's "!" is no end of a question
    english = 'What genre is the author of "Act of War! Direct Action" associated with?'
    assert question_clauses(english) == [english]
    assert question_clauses("Which actor, born in 1950, starred in Jaws?") == ["Which actor, born in 1950, starred in Jaws?"]


def _store(tmp_path, rows):
    corpus = tmp_path / "news.jsonl"
    corpus.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    kb = tgr.open(tmp_path / "news.db", chat="offline", embedder="tgr:hash-384")
    kb.index([str(corpus)])
    return kb


def _documents(kb, question, k):
    return list(dict.fromkeys(p.external_id for p in kb.retrieve(question, "local", k)))


CITIES = ["上海", "北京", "广州", "成都", "杭州", "南京", "武汉", "西安"]
NEWS = ["地铁新线路开通，沿线居民出行更加方便", "举办国际车展，多家车企发布新能源车型", "港口集装箱吞吐量创新高",
        "迎来旅游旺季，景区游客人数明显增加"]
# unrelated news, so that the words of the questions below are rare, as in a real store
FILLER = [{"doc_id": f"filler{i}", "text": city + news + "。"}
          for i, (city, news) in enumerate((c, n) for c in CITIES for n in NEWS)]


def test_a_headline_that_asks_the_question_no_longer_outranks_the_answer(tmp_path):
    rows = [{"doc_id": "asks", "text": "清明档总票房1.2亿，下一个爆款在哪里？"},
            {"doc_id": "answers", "text": "计算机视觉大会CVPR 2022于6月在美国新奥尔良举办，论文数量创新高。"}]
    with _store(tmp_path, rows + FILLER) as kb:
        assert _documents(kb, "CVPR2022在哪举办", 2)[0] == "answers"
        assert kb.retrieve("CVPR2022在哪举办", "naive", 1)[0].external_id == "answers"


def test_a_question_of_two_facts_brings_the_passages_of_both(tmp_path):
    # eight passages on the submarine, which name the same things (so one walk keeps its mass
    # among them), and one longer article with the box office
    launch = "印度第三艘歼敌者级核潜艇{}在维萨卡帕特南造船中心下水，代号S4。"
    rows = [{"doc_id": f"sub{i}", "text": launch.format(day)}
            for i, day in enumerate(["2021年11月23日", "于2021年11月23日", "在2021年11月23日"])]
    rows += [{"doc_id": f"near{i}", "text": f"印度第三艘歼敌者级核潜艇{what}，印度第二艘歼敌者级核潜艇服役推迟。"}
             for i, what in enumerate(["由印度海军建造", "为弹道导弹潜艇", "排水量六千吨", "将装备远程导弹", "舾装工作仍在进行"])]
    rows.append({"doc_id": "box", "text": "国家电影局发布数据，2021年中国电影市场总票房为472.58亿元。"
                                          + "城市院线观影人次增加，全国银幕数量继续增长，影院经营逐步恢复。" * 4})
    question = "印度第三艘歼敌者级核潜艇下水的时间，2021年中国电影市场总票房是多少？"
    with _store(tmp_path, rows + FILLER) as kb:
        top = _documents(kb, question, 12)[:3]
        assert "box" in top and any(d.startswith(("sub", "near")) for d in top)
        # each clause alone finds its own fact first
        assert _documents(kb, "2021年中国电影市场总票房是多少？", 1) == ["box"]
