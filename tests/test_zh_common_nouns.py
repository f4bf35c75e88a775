"""Chinese words jieba's dictionary tags as names, used by the text as common nouns or verbs."""
from __future__ import annotations

import tgr
from tgr.build.zh_common_nouns import used_as_common_word, words_never_places, words_used_as_common
from tgr.offline.jieba_words import dictionary_person_words

STORY = ("唐僧骑马西行，路遇一个和尚。那和尚道：“长老从何处来？”唐僧道：“贫僧自东土大唐而来。”"
         "寺里的和尚都来相见，众和尚围着唐僧说话。唐僧对和尚们道：“我要往西天拜佛。”"
         "唐僧又问那和尚。和尚答道：“此去西天，路途遥远。”唐僧谢了和尚，又上马去了。\n"
         "次日唐僧行到山前，只见那行者跪在路旁，不言语。唐僧问他，他只是不言语，唐僧便叫他起来。")


def test_the_dictionary_tags_the_words_as_names():
    # the premise: without the text's evidence these would be person entities
    assert {"和尚", "言语", "唐僧"} <= dictionary_person_words()


def test_a_word_with_measure_words_plurals_or_negations_is_a_common_word():
    assert used_as_common_word(STORY, "和尚")   # 一个和尚, 的和尚, 众和尚, 和尚们
    assert used_as_common_word(STORY, "言语")   # 不言语 twice
    assert not used_as_common_word(STORY, "唐僧")
    assert not used_as_common_word("那和尚法名叫做和尚。一个和尚，众和尚。", "和尚")  # named: kept
    assert not used_as_common_word("一个和尚来了。和尚道：好。和尚去了寺中。和尚又笑。和尚坐下。"
                                   "和尚吃茶。和尚睡觉。和尚起来。和尚念经。和尚出门。和尚回来。", "和尚")  # once in 11


def test_words_looked_for_together_are_judged_as_one_at_a_time():
    # overlapping words (师兄 and 兄弟 in 众师兄弟们) are each found; 哈哈 in 哈哈哈 counts once
    text = STORY + "众师兄弟们来了。不兄弟们。哈哈哈。哈哈们。众哈哈。那师兄道：好。"
    words = ["和尚", "言语", "唐僧", "师兄", "兄弟", "师兄弟", "哈哈", "行者"]
    expected = {w for w in words if used_as_common_word(text, w)}
    assert words_used_as_common(text, words) == expected
    assert expected == {"和尚", "言语", "兄弟", "哈哈"}  # 师兄: one of two; 师兄弟 once
    assert words_used_as_common(text, []) == set()


def test_an_offline_store_keeps_the_name_and_drops_the_common_nouns(tmp_path):
    (tmp_path / "story.txt").write_text(STORY, encoding="utf-8")
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / "story.txt")])
        names = dict(kb.conn.execute("SELECT name, type FROM entities"))
        aliases = {a for (a,) in kb.conn.execute("SELECT alias FROM entity_aliases")}
    assert names.get("唐僧") == "person"
    assert "和尚" not in names and "言语" not in names and not {"和尚", "言语"} & aliases


JOURNEY = "".join(["行者道：“哥哥，你看那山。”八戒道：“哥哥莫怕。”" * 13,
                   "三藏到了花果山，又在花果山上歇马。八戒上马，便往灵山去。那灵山下有一座寺，众人在灵山拜佛。" * 13,
                   "行者叫声哥哥，八戒上马，沙僧也上马。" * 6, "众人都说哈尔滨市好，哈尔滨冬天冷，哈尔滨有冰灯。" * 9])


def test_a_word_typed_place_that_the_text_never_writes_as_a_place_is_none():
    never = words_never_places(JOURNEY, ["哥哥", "上马", "灵山", "哈尔滨"])
    # 哥哥 (32 times) and 上马 (25) never follow 到/在/往 nor stand before 上/下/市 ...
    assert never == {"哥哥", "上马"}
    # 灵山: 往灵山, 灵山下, 在灵山; 哈尔滨 (27): 哈尔滨市 once in three, a town's name
    assert words_never_places("八戒上马。" * 24, ["上马"]) == set()  # 24 times: too few to judge
    assert words_never_places("八戒上马。" * 25, ["上马"]) == {"上马"}


def test_an_offline_store_drops_the_places_its_text_never_writes_as_places(tmp_path):
    (tmp_path / "journey.txt").write_text(JOURNEY, encoding="utf-8")
    with tgr.open(tmp_path / "j.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(tmp_path / "journey.txt")])
        names = dict(kb.conn.execute("SELECT name, type FROM entities"))
    assert names.get("花果山") == "location" and names.get("灵山") == "location" and names.get("哈尔滨") == "location"
    assert "哥哥" not in names and "上马" not in names


def test_occurrences_step_as_a_find_loop_for_any_word_length_and_character():
    from tgr.build.zh_common_nouns import _occurrences

    def find_loop(text, word):
        found, position = [], text.find(word)
        while position >= 0:
            found.append(position)
            position = text.find(word, position + len(word))
        return found

    text = "哈哈哈们😀师兄弟😀师兄弟们a师兄弟子\n哈兄"
    words = ["哈哈", "😀师", "师兄弟", "师兄弟子", "兄", "们a师兄弟", "无", "a"]
    assert _occurrences(text, words) == {w: find_loop(text, w) for w in words}
    assert _occurrences(text, words)["哈哈"] == [0]  # not overlapping itself
    assert _occurrences("哈", ["哈哈"]) == {"哈哈": []}


def test_the_shipped_dictionary_words_are_what_jiebas_dict_txt_gives(tmp_path):
    # the person, rare and everyday words are shipped in tgr/offline/data/jieba_words.txt.gz, rewritten by
    # write_jieba_words() whenever jieba's dict.txt changes; the patterns (the slow way) say what they mean
    from tgr.offline import jieba_words

    data = jieba_words.jieba_dictionary()
    assert jieba_words.shipped_words(data) == jieba_words.parsed_words(data)
    rewritten = tmp_path / "jieba_words.txt.gz"
    jieba_words.write_jieba_words(rewritten)
    assert rewritten.read_bytes() == jieba_words.JIEBA_WORDS_FILE.read_bytes()  # reproducible, byte for byte
    assert jieba_words.shipped_words(data + "新词 3 nr\n".encode()) is None  # another dict.txt: parsed instead
    small = "宋江 2862 nr\n和尚 3959 nr\n罕见 7 nrt\n零 0 nr\n零七 07 nr\n地方 52641 n\n利用 5000 v\n观音 763 nr\n"
    people, rare, everyday = jieba_words.parsed_words(small.encode())
    assert people == {"宋江", "和尚", "罕见", "零", "零七", "观音"} and rare == {"罕见"}
    assert everyday == {"地方", "利用"}
