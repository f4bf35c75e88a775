"""tgr/offline/providers.py: heuristic extraction, the hash embedder, extractive reports and answers."""
from __future__ import annotations

import json
import math

import pytest

from conftest import EN_CORPUS, SMALL, ZH_CORPUS, ScriptedChat
from tgr.ingest.chunking import chunk_text
import tgr
from tgr.build.extract import LLMExtractor, extract_chunks
from tgr.models.gateway import Gateway
from tgr.offline.community_reports import ProfileReportWriter
from tgr.offline import providers
from tgr.offline.providers import (ExtractiveAnswerer, HashEmbedder, OfflineExtractor,
                                   extract_heuristic, extractive_report)
from tgr.prompts import Prompts
from tgr.build.report import LLMReportWriter
from tgr.build.role_providers import extractor_for, report_writer_for, summariser_for
from tgr.build.role_providers import LLMSummariser, OfflineSummariser
from tgr.parsing import RawEntity, parse_report


def corpus_names(corpus) -> dict[str, set[str]]:
    """name -> types found by extract_heuristic over every SMALL chunk of a fixture corpus."""
    found: dict[str, set[str]] = {}
    for path in sorted(corpus.glob("*.txt")):
        for chunk in chunk_text(path.read_text(encoding="utf-8"), path.name,
                                SMALL["chunk_size"], SMALL["chunk_overlap"]):
            entities, relations = extract_heuristic(chunk.text)
            kept = {e.name for e in entities}
            for r in relations:
                assert r.source in kept and r.target in kept and r.source != r.target
            for e in entities:
                found.setdefault(e.name, set()).add(e.type)
    return found


@pytest.fixture(scope="module")
def en_names():
    return corpus_names(EN_CORPUS)


@pytest.fixture(scope="module")
def zh_names():
    return corpus_names(ZH_CORPUS)


def names(text):
    return [e.name for e in extract_heuristic(text)[0]]


def by_name(text):
    return {e.name: e for e in extract_heuristic(text)[0]}


# -- English heuristic extraction ------------------------------------------------------

def test_english_corpus_names(en_names):
    assert {"Scrooge", "Marley", "Jacob Marley"} <= set(en_names)
    assert "person" in en_names["Scrooge"]


@pytest.mark.parametrize("word", ["The", "But", "Nothing", "And", "It", "He", "There", "This", "Of",
                                  "Oh", "No", "Yes", "Now", "What", "If", "A", "I", "Mr", "Mr."])
def test_english_corpus_sentence_initial_common_words_are_not_names(en_names, word):
    assert word not in en_names
    assert not any(name.startswith(word + " ") for name in en_names), \
        [name for name in en_names if name.startswith(word + " ")]


def test_multiword_names_and_cooccurrence():
    text = "Bob Cratchit worked for Scrooge. Scrooge paid Bob Cratchit fifteen shillings."
    entities, relations = extract_heuristic(text)
    assert [e.name for e in entities] == ["Bob Cratchit", "Scrooge"]
    assert "Bob Cratchit worked for Scrooge." in entities[0].description
    assert [(r.source, r.target, r.predicate) for r in relations] == [("Bob Cratchit", "Scrooge", "worked for")]
    assert relations[0].description == "Bob Cratchit worked for Scrooge."


def test_sentence_initial_common_words_are_not_names():
    text = ("The night was cold and Scrooge sat alone. But the fire was small. Nothing was said. "
            "It was Christmas Eve, and Jacob Marley had been dead seven years.")
    found = names(text)
    assert "Scrooge" in found and "Jacob Marley" in found and "Christmas Eve" in found
    for word in ("The", "But", "Nothing", "It"):
        assert word not in found
        assert not any(n.startswith(word + " ") for n in found)


def test_single_word_at_sentence_start_needs_a_second_capitalised_sighting():
    assert "Fezziwig" not in names("Fezziwig laughed. The room was warm.")
    assert "Fezziwig" in names("Fezziwig laughed. Everybody loved old Fezziwig.")


def test_honorific_without_a_period_is_stripped_and_typed_person():
    found = by_name("The office belonged to Mister Scrooge and nobody else.")
    assert list(found) == ["Scrooge"]
    assert found["Scrooge"].type == "person"


def test_honorific_mr_is_stripped_and_typed_person():
    text = "The office belonged to Mr. Scrooge and the clerk feared Mr. Scrooge."
    found = by_name(text)
    assert "Scrooge" in found, list(found)
    assert found["Scrooge"].type == "person"
    assert not any(n.startswith(("Mr", "Mr.")) for n in found)


def test_honorific_mrs_single_mention_is_found():
    found = by_name("After dinner Mrs. Cratchit brought in the pudding.")
    assert list(found) == ["Mrs. Cratchit"]  # her title kept: she is not Bob Cratchit (issue 16)
    assert found["Mrs. Cratchit"].type == "person"


def test_speech_verbs_and_place_prepositions_type_entities():
    found = by_name('"Humbug," said Scrooge. He walked to London with Marley.')
    assert found["Scrooge"].type == "person"
    assert found["London"].type == "location"


def test_possessive_is_not_a_separate_entity():
    found = names("In the evening Scrooge's office was cold. The clerk watched Scrooge all day.")
    assert "Scrooge" in found
    assert "Scrooge's" not in found


def test_pronoun_contractions_are_not_names():
    found = names("He said that I'll go to Bedlam, and Scrooge said I'd better.")
    assert "Bedlam" in found and "Scrooge" in found
    assert "I'll" not in found and "I'd" not in found


def test_max_entities_and_determinism():
    people = [c.upper() + "olton" for c in "abcdefghijklmnopqrstuvwxyz"]
    text = " ".join(f"Then {a} met {b} in the square." for a, b in zip(people, people[1:]))
    entities, relations = extract_heuristic(text, max_entities=7)
    assert len(entities) == 7
    kept = {e.name for e in entities}
    assert all(r.source in kept and r.target in kept for r in relations)
    assert extract_heuristic(text, max_entities=7) == (entities, relations)


def test_no_names_gives_nothing():
    assert extract_heuristic("it was cold. nobody came. the fire went out.") == ([], [])
    assert extract_heuristic("") == ([], [])


def test_relations_within_a_sentence_and_weaker_ones_for_a_name_alone_in_its_sentence():
    _, relations = extract_heuristic("Later that night Scrooge sat with Marley. Everybody liked young Fred.")
    strong = [(r.source, r.target) for r in relations if r.strength == 1.0]
    near = {(r.source, r.target, r.predicate) for r in relations if r.strength < 1.0}
    assert strong == [("Scrooge", "Marley")]
    assert near == {("Fred", "Scrooge", "appears near"), ("Fred", "Marley", "appears near")}
    # a name with no other name within two sentences stays an island, as in the text
    _, far = extract_heuristic("That night Scrooge sat with Marley. It was cold. The fog came in. The bells rang. "
                               "Everybody liked young Fred.")
    assert [(r.source, r.target) for r in far] == [("Scrooge", "Marley")]


@pytest.mark.parametrize("text, name", [
    ("The treaty was signed by Adolf Schärf in Vienna.", "Adolf Schärf"),
    ("Later the film Aschenbrödel was shown on television.", "Aschenbrödel"),
    ("Everybody in the village liked Zoë very much.", "Zoë"),
    ("The campaign was directed by Václav Vorlíček and friends.", "Václav Vorlíček"),
], ids=["umlaut", "o-umlaut", "diaeresis", "acute-and-caron"])
def test_non_ascii_letters_stay_in_names(text, name):
    found = names(text)
    assert name in found, found
    assert not any(n != name and name.startswith(n) for n in found), found


def test_long_names_with_connectors_initials_and_commas():
    text = ("Frodo read The Lord of the Rings by J. R. R. Tolkien. Later G. Stanley Hall taught "
            "at the University of California, Berkeley for a year.")
    found = by_name(text)
    assert {"Lord of the Rings", "J. R. R. Tolkien", "G. Stanley Hall",
            "University of California, Berkeley"} <= set(found), list(found)
    assert found["G. Stanley Hall"].type == "person"
    assert found["University of California, Berkeley"].type == "organization"
    found = by_name("After he left the University of Vienna, Hayek earned a doctorate. "
                    "She studied at the University of California, Davis, for two years.")
    assert {"University of Vienna", "Hayek", "University of California, Davis"} <= set(found), list(found)


def test_a_leading_the_is_not_part_of_the_name_so_mentions_agree():
    text = "The Exies were an American rock band. Fans of The Exies waited. The band split."
    assert names(text) == ["Exies"]
    assert names("The Ghost of Christmas Past came to Scrooge. Scrooge was afraid.") == \
        ["Ghost of Christmas Past", "Scrooge"]


def test_a_surname_alone_joins_the_one_full_name_of_the_text():
    found = by_name("James Bond Stockdale was a vice admiral. Later, Stockdale ran for office. "
                    "Everybody met Hank Williams and Audrey Williams. They loved Williams. "
                    "Bob Cratchit came home. Then Mrs. Cratchit cooked.")
    assert "Stockdale" not in found and "James Bond Stockdale" in found
    assert "Williams" in found  # two Williamses: the surname stays itself
    assert "Mrs. Cratchit" in found and found["Mrs. Cratchit"].type == "person"  # a titled name is its own
    _, relations = extract_heuristic("James Bond Stockdale was an admiral. Stockdale met Ross Perot.")
    assert [(r.source, r.target) for r in relations] == [("James Bond Stockdale", "Ross Perot")]
    # the description opens where the full name is written
    found = by_name("Later, Stockdale flew jets. James Bond Stockdale was an admiral.")
    assert found["James Bond Stockdale"].description.startswith("James Bond Stockdale was an admiral.")


def test_possessives_end_a_name_unless_they_are_part_of_it():
    found = names("Critics praised Hello Love's director. Hello Love won. "
                  "Norway hosted the FIFA Women's World Cup. The fans of the Warriors' team cheered.")
    assert "Hello Love" in found and "FIFA Women's World Cup" in found and "Warriors" in found
    assert not any(n.endswith(("'s", "’s", "'")) for n in found), found


def test_generic_capitalised_words_are_not_names():
    text = ("The President of the club met Scrooge on Monday in March 1843. The president was kind. "
            "Every Country sent a Minister. In 1850 the Chairman of Lloyd's left for Paris.")
    found = names(text)
    assert "Scrooge" in found and "Paris" in found
    for generic in ("President", "Monday", "March", "Country", "Minister", "Chairman", "The"):
        assert generic not in found, found
    assert not any(ch.isdigit() for n in found for ch in n), found


def test_a_word_the_text_writes_in_lower_case_is_not_a_name_alone():
    found = names("Scrooge feared the Spirit of the fire. The spirit said nothing. Marley met Want.")
    assert "Spirit" not in found
    assert "Want" in found  # never lower-cased here: kept


def test_sentence_initial_words_need_evidence():
    assert names("Later, Scrooge went home. Everybody knew Marley.") == ["Scrooge", "Marley"]
    assert names("Later Scrooge went home. Everybody knew Marley.") == ["Marley"]
    # the subject of a defining sentence is a name at its start
    assert names("Ælfgar (died c. 1060) was the son of Leofric.") == ["Ælfgar", "Leofric"]
    assert "Frozen" in names("Frozen is a 2013 American film made in California.")


def test_numbers_stay_out_of_names_except_short_sequel_numbers():
    found = names("Big Hero 6 is a film shown on Channel 4 in 2014. It was released in Japan in 2015.")
    assert {"Big Hero 6", "Channel 4", "Japan"} <= set(found), found
    assert not any("2014" in n or "2015" in n for n in found)


def test_cheap_types():
    found = by_name("Scrooge sailed down the Hudson River to visit Columbia University on "
                    "Christmas Eve with the Duke of Wellington. Bruce Lindsey (born 1950) is a lawyer.")
    assert found["Hudson River"].type == "location"
    assert found["Columbia University"].type == "organization"
    assert found["Christmas Eve"].type == "date"
    assert found["Duke of Wellington"].type == "person"
    assert found["Bruce Lindsey"].type == "person"


def test_the_words_around_a_name_type_it():
    found = by_name("The film stars Palash Sen, Ira Dubey and Kymsleen Kholie, with music by poet Kaifi Azmi. "
                    "Starring Rajendra Prasad, it was shot near Pensacola, Florida. Fionn Regan (born 1981) sang. "
                    "The band Porcupine Tree recorded it.")
    assert all(found[n].type == "person" for n in ("Palash Sen", "Ira Dubey", "Kymsleen Kholie", "Kaifi Azmi",
                                                   "Rajendra Prasad", "Fionn Regan")), found
    assert "Starring Rajendra Prasad" not in found
    assert found["Pensacola"].type == "location" and found["Porcupine Tree"].type == "organization"
    # no cue, no type: a name alone in a sentence stays a concept
    assert by_name("We met Kymsleen Kholie there.")["Kymsleen Kholie"].type == "concept"


def test_quoted_titles_are_whole_works_and_speech_is_not():
    found = by_name('He starred in the film "It Happened One Night" and the episode "Simpsons Roasting on an '
                    'Open Fire". Its singles were "To Know You," "Who You Are," and "Cheer Up".')
    assert {"It Happened One Night", "Simpsons Roasting on an Open Fire", "To Know You", "Who You Are",
            "Cheer Up"} <= set(found), list(found)
    assert all(found[n].type == "work" for n in ("It Happened One Night", "To Know You"))
    assert not {"Open Fire", "Know", "Happened One Night"} & set(found)
    speech = by_name('"Bah," said Scrooge, "Humbug!" Then Scrooge said, "Good Afternoon Sir." and left.')
    assert "Humbug" not in speech and not any(e.type == "work" for e in speech.values()), speech


def test_where_from_is_no_name_but_a_language_is():
    found = by_name("A Maine-based South Korean company hired a Canadian and an Italian-American. "
                    "It made an Indian Hindi-language film and a Telugu comedy.")
    assert not {"South Korean", "Canadian", "Italian-American", "Maine-based"} & set(found), list(found)
    assert found["Maine"] and found["Hindi"].type == found["Telugu"].type == "language"


def test_english_sentences_in_a_chinese_chunk_use_english_names():
    found = names("孙悟空住在花果山。Journey to the West was translated by Arthur Waley in London.")
    assert "孙悟空" in found and "Arthur Waley" in found and "London" in found


# -- Chinese heuristic extraction ------------------------------------------------------

def test_chinese_names_and_cooccurrence():
    entities, relations = extract_heuristic("孙悟空住在花果山。唐僧在长安收孙悟空为徒弟。")
    found = {e.name: e for e in entities}
    assert {"孙悟空", "花果山", "唐僧"} <= set(found)
    assert found["孙悟空"].type == "person"
    pairs = {frozenset((r.source, r.target)): r for r in relations}
    assert frozenset(("孙悟空", "花果山")) in pairs
    assert pairs[frozenset(("孙悟空", "花果山"))].predicate == "住在"
    assert frozenset(("唐僧", "孙悟空")) in pairs
    # names from different sentences are not related
    assert frozenset(("花果山", "唐僧")) not in pairs


def test_a_dictionary_place_that_speaks_is_a_person_and_a_place_stays_a_place():
    # jieba's dictionary tags 三藏 ns (a place); the chunk has him speak
    found = by_name("三藏到了花果山。三藏道：“徒弟，此山甚险。”")
    assert found["三藏"].type == "person" and found["花果山"].type == "location"
    found = by_name("三藏到了花果山，见了长老。")  # no speech: the tagger's type stands
    assert found["三藏"].type == "location"
    # 道 after a comma has its subject further back (行者): the place before the comma does not speak
    found = by_name("行者按落云头，道：“师父，前面有山。”")
    assert found.get("云头") is None or found["云头"].type == "location"


def test_a_noun_that_speaks_is_a_person_and_a_manner_of_speaking_or_a_group_is_not():
    # jieba's dictionary knows 八戒 and 行者 only as common nouns (n); the chunk has them speak
    found = by_name("八戒道：“哥哥，你去那里？”行者笑道：“呆子，我去化斋。”那八戒听说，又道：“我也去。”"
                    "行者合掌道：“师父放心。”众人道：“好！”众人又道：“妙！”")
    assert found["八戒"].type == "person" and found["行者"].type == "person"
    # a noun between a name and 道 says how one spoke; a group is no one
    assert "合掌" not in found and "众人" not in found
    # one line of speech by a noun named nowhere else in the text: too little to call it a name
    assert "行者" not in by_name("行者道：“师父，前面有山。”")


def test_a_demonstrative_or_a_verb_the_tagger_glued_to_a_name_is_left_out_of_it():
    found = by_name("那道士笑道：“好。”唐僧见了行者。唐僧道：“徒弟。”沙僧笑道：“是。”沙僧也来了。"
                    "大王子道：“父王。”大王来了。")
    assert "道士" in found and "那道士" not in found        # 那 + a word of the dictionary
    assert {"唐僧", "沙僧"} <= set(found) and not {"唐僧见", "沙僧笑"} & set(found)  # + 见, 笑 (verbs)
    assert "大王子" in found and "大王" in found             # + 子 (a noun): another person
    assert "那不勒斯" in by_name("那不勒斯是意大利城市。")     # 不勒斯 is no word: a name of its own


def test_one_tagger_call_per_chunk_tags_each_sentence_as_alone():
    from tgr.offline import names_zh

    sentences = ["孙悟空住在花果山。", "Bee Gees 在1967年到了伦敦，  唱了「Massachusetts」", "他说：\n“唐僧 在长安”",
                 "东胜神洲傲来国", "3.5%的A-1人", "菩提祖师道：“你姓甚么？”"]
    words, flags, _, ends = names_zh._chunk_tags(sentences, "\n".join(sentences))  # (None: tagged alone)
    firsts = [0, *(end + 1 for end in ends[:-1])]  # each sentence's words run up to its "\n"
    tagged = [(words[first:end], flags[first:end]) for first, end in zip(firsts, ends)]
    assert tagged == [names_zh._tags(s) for s in sentences]
    assert tagged[0][0][:2] == ("孙悟空", "住") and tagged[0][1][0] == "nr"


def test_patterns_looked_for_once_per_chunk_find_names_in_the_sentence_that_has_them():
    from tgr.offline.names_zh import chinese_names

    found = chinese_names(["孙悟空住在花果山。", "那石猴称名须菩提祖师也。", "他见了安德里·拉乔利纳和Bee Gees。",
                           "狭叶艾纳香（学名：X）是一种植物。"])
    assert ("须菩提祖师", "person") in found[1] and ("安德里·拉乔利纳", "person") in found[2]
    assert ("Bee Gees", "concept") in found[2] and ("狭叶艾纳香", "concept") in found[3]
    assert [n for n, _ in found[0]] == ["孙悟空", "花果山"]


def test_chinese_corpus_names(zh_names):
    assert {"孙悟空", "花果山", "美猴王"} <= set(zh_names)
    assert all(len(n) >= 2 for n in zh_names)


def test_a_rare_dictionary_name_cut_through_a_run_of_names_is_no_name():
    found = names("猴王道：弟子东胜神洲傲来国花果山水帘洞人氏。")
    assert "神洲傲" not in found and "花果山" in found, found  # jieba's dictionary has 神洲傲 as a rare name


def test_chinese_quoted_titles_and_terms():
    found = by_name("他读了《西游记》和《This Is Where I Came In》，又学了「仓颉」输入法。「将知道的仓颉码尽量打出来」很难。")
    assert {"西游记", "This Is Where I Came In", "仓颉"} <= set(found), list(found)
    assert not any("尽量" in n for n in found)  # a quoted phrase is no name


def test_chinese_transliterated_names_with_dots_are_whole():
    found = by_name("安德里·尼里纳·拉乔利纳是马达加斯加共和国政治人物。")
    assert found["安德里·尼里纳·拉乔利纳"].type == "person"
    assert not any(n != "安德里·尼里纳·拉乔利纳" and n in "安德里·尼里纳·拉乔利纳" for n in found), list(found)


def test_chinese_compounds_headed_by_institution_or_place_words():
    found = by_name("天生三桥是重庆武隆岩溶国家地质公园的一部分。他兼任辅仁大学副教授，后来加入台湾电视公司。")
    assert found["重庆武隆岩溶国家地质公园"].type == "location"
    assert found["辅仁大学"].type == "organization"
    assert found["台湾电视公司"].type == "organization"
    assert "重庆" in found  # the parts that are names stay names
    # two place names in a row are not one compound, nor are common nouns alone
    assert "中华人民共和国北京市" not in names("首都在中华人民共和国北京市。")
    assert not any(n.endswith("名胜区") for n in names("重庆直辖市级风景名胜区很美。"))


def test_chinese_subject_of_a_defining_sentence_and_latin_names():
    found = names("狭叶艾纳香（学名：Blumea）是菊科植物。Bee Gees的专辑由MIT OpenCourseWare收录。")
    assert {"狭叶艾纳香", "Bee Gees", "MIT OpenCourseWare"} <= set(found), found


def test_dates_written_in_latin_letters_are_not_names():
    assert names("Mar 24, 2023 TikTok在北京和美国都很有名。") == ["TikTok", "北京", "美国"]
    found = names("The story was updated on Mar 24 by the Reuters desk in London.")
    assert sorted(found) == ["London", "Reuters"]


def test_chinese_aliases_merge_into_the_long_form():
    found = names("香港特别行政区政府宣布，香港特别行政区将举行选举。香港特区居民投票。")
    assert "香港特别行政区" in found and "香港特区" not in found
    entities, relations = extract_heuristic("首钢集团有限公司，简称首钢，是北京市的公司。首钢在香港上市。")
    found = [e.name for e in entities]
    assert "首钢集团有限公司" in found and "首钢" not in found
    pairs = {frozenset((r.source, r.target)) for r in relations}
    assert frozenset(("首钢集团有限公司", "香港")) in pairs  # the short form's sentence counts


def test_chinese_naming_phrases_and_titled_names():
    found = by_name("那洞中有一个神仙，称名须菩提祖师。此山叫做灵台方寸山。我原有个法名，叫做孙悟空。")
    assert found["须菩提祖师"].type == "person" and found["孙悟空"].type == "person"
    assert found["灵台方寸山"].type == "location"
    assert not any(n in ("菩提", "须菩提", "祖师") for n in found), list(found)
    titled = by_name("见那菩提祖师端坐在台上。南海观世音菩萨到了。泾河龙王与镇元大仙说话。")
    assert {"菩提祖师", "观世音菩萨", "泾河龙王", "镇元大仙"} <= set(titled), list(titled)
    assert all(titled[n].type == "person" for n in ("菩提祖师", "观世音菩萨", "镇元大仙"))
    # a saying or a pronoun after a naming word is no name
    assert names("这个叫做将计就计。那个唤做甚么？") == []
    # an everyday word before a title is the sentence's, not the bearer's name
    assert "地方长老" not in names("一是利用地方长老进行教化活动。")


def test_chinese_verbs_glued_to_an_address_word_or_title_are_no_names():
    found = names("猴王道：不劳师父盛意。悟空道：多蒙师父海恩。二神道：望大圣方便。唐长老道：徒弟。")
    assert not {"劳师父", "蒙师父", "望大圣"} & set(found), found
    assert "唐长老" in found


def test_a_title_alone_is_its_one_bearer_and_links_its_sentence():
    entities, relations = extract_heuristic("忽被祖师看见，叫孙悟空道：你怎么不听我讲？")
    assert "祖师" in {e.name for e in entities}  # tgr.build.resolve decides whose title it is
    assert frozenset(("祖师", "孙悟空")) in {frozenset((r.source, r.target)) for r in relations}
    # a name whose sentence holds only a title still meets the names of the next sentence
    _, relations = extract_heuristic("祖师见了花果山。美猴王十分欢喜。")
    assert frozenset(("花果山", "美猴王")) in {frozenset((r.source, r.target)) for r in relations}


def test_chinese_short_forms_stay_apart_when_not_abbreviations():
    found = names("北京市很大。北京国家体育馆在北京。马达加斯加共和国位于马达加斯加岛。")
    assert {"北京", "北京市"} <= set(found), found


# -- HashEmbedder ----------------------------------------------------------------------

def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


TEXTS = ["Scrooge was a covetous old miser.", "Scrooge was a greedy old miser.",
         "The ship sailed across the Pacific.", "孙悟空住在花果山水帘洞。", "孙悟空住在花果山。",
         "唐僧去西天取经。", "", "   ", "the of and", "!!!"]


def test_hash_embedder_is_deterministic():
    a = HashEmbedder().embed(TEXTS)
    b = HashEmbedder().embed(TEXTS)
    assert a == b
    assert HashEmbedder().embed(TEXTS[:1]) == a[:1]  # independent of the batch


@pytest.mark.parametrize("dim", [8, 64, 384, 1024])
def test_hash_embedder_dim_and_unit_norm(dim):
    embedder = HashEmbedder(dim)
    assert embedder.dim == dim and str(dim) in embedder.name
    for vector in embedder.embed(TEXTS):
        assert len(vector) == dim
        assert all(math.isfinite(x) for x in vector)
        assert math.isclose(math.sqrt(dot(vector, vector)), 1.0, rel_tol=1e-9)


def test_hash_embedder_default_dim():
    assert HashEmbedder().dim == 384
    assert len(HashEmbedder().embed(["x"])[0]) == 384


def test_hash_embedder_similar_texts_are_closer():
    v = dict(zip(TEXTS, HashEmbedder().embed(TEXTS)))
    assert dot(v[TEXTS[0]], v[TEXTS[1]]) > dot(v[TEXTS[0]], v[TEXTS[2]]) + 0.3
    assert dot(v[TEXTS[3]], v[TEXTS[4]]) > dot(v[TEXTS[3]], v[TEXTS[5]]) + 0.3
    assert dot(v[TEXTS[0]], v[TEXTS[0]]) == pytest.approx(1.0)


def test_hash_embedder_empty_text_is_a_valid_vector():
    empty, blank = HashEmbedder(32).embed(["", "   "])
    assert empty == blank
    assert sum(x * x for x in empty) == pytest.approx(1.0)


# A batch big enough for embed's numpy path, with what could trip it: non-BMP characters (𠀀,
# an emoji, U+14E00, whose low 16 bits are 一's), kana, Hangul, compatibility ideographs,
# Latin words with trigrams and case, CJK runs of one character, texts with no feature.
MIXED = ["孙悟空住在花果山水帘洞。Monkey King 孙悟空", "𠀀𠀁一二\U00014e00\U00014e01三四😀五六", "かなカナ한국어 ひらがな",
         "豈更車 Shakespeare's SHIPS ships, Ship", "一", "一 二 三", "", "   ", "the of and", "!!!",
         "x" * 3, "中文English混合text文本", "\u3040\u30ff\u3400\u4dbf\u9fff\uf900\ufaff\uac00\ud7af\ud7b0"]


@pytest.mark.parametrize("dim", [8, 384])
def test_hash_embedder_batches_give_the_one_text_vectors_exactly(dim):
    """embed's numpy path for a batch equals the one-text path (_vector) bit for bit: a small
    dim puts many features in each bucket, where a sum in another order would differ."""
    chunks = [c.text for corpus in (ZH_CORPUS, EN_CORPUS) for path in sorted(corpus.glob("*.txt"))
              for c in chunk_text(path.read_text(encoding="utf-8"), path.name, SMALL["chunk_size"],
                                  SMALL["chunk_overlap"])]
    texts = MIXED + chunks + [c[:40] + m for c, m in zip(chunks, MIXED)]
    embedder = HashEmbedder(dim)
    assert sum(map(len, texts)) >= providers._BATCH_CHARS  # the numpy path
    assert embedder.embed(texts) == [embedder._vector(text) for text in texts]
    assert embedder.embed(texts[::-1]) == [embedder._vector(text) for text in texts[::-1]]


# -- extractive reports ----------------------------------------------------------------

MEMBERS = [
    {"name": "Scrooge", "type": "person", "description": "A covetous old miser."},
    {"name": "Marley", "type": "person", "description": "Scrooge's partner, dead seven years."},
    {"name": "Bob Cratchit", "type": "person", "description": "Scrooge's clerk."},
    {"name": "Fred", "type": "person", "description": "Scrooge's nephew."},
    {"name": "Counting-house", "type": "location", "description": "Where Scrooge works."},
    {"name": "Belle", "type": "person", "description": "Someone Scrooge once loved."},
]
EDGES = [{"description": "Scrooge and Marley were partners.", "weight": 3.0},
         {"description": "Bob Cratchit works for Scrooge.", "weight": 1.0},
         {"description": "Fred visits his uncle.", "weight": 1.0}]


def test_extractive_report_has_every_field():
    report = extractive_report(MEMBERS, EDGES)
    assert set(report) == {"title", "summary", "rating", "rating_explanation", "findings"}
    assert isinstance(report["rating"], float) and 0.0 <= report["rating"] <= 10.0
    assert report["rating_explanation"]
    assert all(set(f) == {"summary", "explanation"} for f in report["findings"])
    # a report that tgr's own report parser accepts unchanged
    assert parse_report(json.dumps(report)) == report


def test_extractive_report_cites_members():
    report = extractive_report(MEMBERS, EDGES)
    assert report["title"] == "Scrooge, Marley, Bob Cratchit"
    assert "6 entities" in report["summary"]
    assert "Scrooge and Marley were partners." in report["summary"]
    findings = " ".join(f["summary"] + " " + f["explanation"] for f in report["findings"])
    for member in MEMBERS[:5]:
        assert member["name"] in findings
        assert member["description"] in findings
    assert len(report["findings"]) == 5


def test_extractive_report_rating_grows_with_size_and_weight():
    small = extractive_report(MEMBERS[:2], EDGES[:1])["rating"]
    large = extractive_report(MEMBERS, EDGES)["rating"]
    heavy = extractive_report(MEMBERS, [dict(e, weight=200.0) for e in EDGES])["rating"]
    assert small < large < heavy <= 10.0


def test_extractive_report_chinese():
    members = [{"name": "孙悟空", "type": "person", "description": "石猴出世。"},
               {"name": "花果山", "type": "location", "description": "孙悟空的家。"}]
    report = extractive_report(members, [{"description": "孙悟空住在花果山。", "weight": 1}])
    assert report["title"] == "孙悟空、花果山"
    assert "孙悟空住在花果山。" in report["summary"]
    assert "2 个实体" in report["summary"]


# -- the extractive answerer (its sentence choice: tests/test_answer_sentences.py) -------

PASSAGES = [
    ("1", "Scrooge was a miser who worked late every night. Scrooge kept the fire very small."),
    ("2", "Scrooge once worked for old Fezziwig in a warehouse. Scrooge was young then and happy."),
    ("3", "Scrooge walked home through the fog. Scrooge ate his supper alone in the tavern."),
]


# -- the offline provider behind the stage interfaces ---------------------------------

def test_offline_provider_is_chosen_without_a_chat_model(db_path):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        offline, llm = Gateway(kb.conn, None, HashEmbedder()), Gateway(kb.conn, ScriptedChat(), HashEmbedder())
        assert isinstance(extractor_for(offline, Prompts()), OfflineExtractor)
        assert isinstance(report_writer_for(offline, Prompts()), ProfileReportWriter)
        assert isinstance(extractor_for(llm, Prompts()), LLMExtractor)
        assert isinstance(report_writer_for(llm, Prompts()), LLMReportWriter)
        assert extractor_for(llm, Prompts()).name == ScriptedChat().name
        assert isinstance(summariser_for(offline, Prompts()), OfflineSummariser)
        assert isinstance(summariser_for(llm, Prompts()), LLMSummariser)
        assert report_writer_for(offline, Prompts()).prompt == summariser_for(offline, Prompts()).prompt == ""
        assert report_writer_for(llm, Prompts()).prompt == Prompts().community_report
        assert summariser_for(llm, Prompts()).prompt == Prompts().summarize_descriptions


def test_the_offline_summariser_asks_nothing_and_the_llm_one_asks_for_several_descriptions(db_path):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        llm = summariser_for(Gateway(kb.conn, ScriptedChat(), HashEmbedder()), Prompts())
        parts = ["A miser of London.", "Partner of Jacob Marley."]
        assert OfflineSummariser().job("e1", "Scrooge", "person", parts, 10) is None
        assert llm.job("e1", "Scrooge", "person", parts[:1], 10) is None  # one description: trimmed, not asked
        job = llm.job("e1", "Scrooge", "person", parts, 10)
        assert job.tag == "e1" and "Scrooge" in job.prompt and "Partner of Jacob Marley" in job.prompt


class UpperCaseExtractor:
    """Another extractor behind the same interface: every upper-case word is an entity."""
    name = "test:upper"

    def extract(self, chunks, save, idle=None):
        for chunk_id, text in chunks:
            words = sorted({w.strip(".,;!?") for w in text.split() if w.isupper() and len(w) > 2})
            save(chunk_id, [RawEntity(w, "concept", "shouted") for w in words], [])


def test_extract_stage_runs_any_extractor_and_records_its_name(db_path):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        names = {x for (x,) in kb.conn.execute("SELECT DISTINCT extractor FROM extractions")}
        assert names == {OfflineExtractor.name}
        kb.conn.execute("DELETE FROM extractions")
        steps = []
        done = extract_chunks(kb.conn, UpperCaseExtractor(),
                              progress=lambda stage, n, total: steps.append((n, total)))
        chunks = kb.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        assert done == chunks and steps[-1] == (chunks, chunks)
        assert {x for (x,) in kb.conn.execute("SELECT DISTINCT extractor FROM extractions")} == {"test:upper"}
        assert kb.conn.execute("SELECT count(*) FROM extracted_entities WHERE description = 'shouted'").fetchone()[0] > 0


def test_extractive_answerer_answers_from_the_passages():
    answerer = ExtractiveAnswerer()
    answer = answerer.answer("Did Scrooge work for Fezziwig?", PASSAGES)
    lines = answer.splitlines()
    assert lines[0] == "Scrooge once worked for old Fezziwig in a warehouse. [Sources: 2]"
    assert answerer.answer("submarine periscope", PASSAGES).startswith("I don't know")


def test_offline_relations_do_not_depend_on_the_hash_seed():
    """Two names that start at the same place ("长安", "长安大唐国") were ordered by set
    iteration, so the relationship's direction changed from one process to the next."""
    import subprocess
    import sys

    from conftest import ROOT

    script = ("from tgr.offline.providers import extract_heuristic\n"
              "_, relations = extract_heuristic('菩萨与木吒离了此处，一直东来，不一日就到了长安大唐国。长安城里，唐王正坐早朝。')\n"
              "print([(r.source, r.target) for r in relations])\n")
    runs = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": str(seed)})
            for seed in range(6)]  # side by side: each process loads jieba's dictionary
    outputs = {run.communicate(timeout=120)[0] for run in runs}
    assert all(run.returncode == 0 for run in runs)
    assert len(outputs) == 1 and "长安大唐国" in outputs.pop()


def test_a_name_broken_by_a_hard_wrapped_line_is_one_name():
    from tgr.offline.names_en import english_names

    found = english_names(["Once upon a time, on Christmas\nEve, old Scrooge sat busy.",
                           "He went to see Jacob\r\nMarley and Bob Cratchit.",
                           "They met Tiny Tim\n\nLondon was cold."])
    names = [[name for name, _ in sentence] for sentence in found]
    assert names[0] == ["Christmas Eve", "Scrooge"]
    assert names[1] == ["Jacob Marley", "Bob Cratchit"]
    assert "Tiny Tim London" not in names[2] and "Tiny Tim" in names[2]  # a blank line ends a name


@pytest.mark.parametrize("text", ["孙悟空住在花果山。唐僧问道：“第Ⅳ回？”2024年，〇号。……",
                                  "孙悟空住在花果山。Journey to the West。ＡＢＣ公司。",
                                  "ひらがなの文。한국어 문장。孙悟空。", "一二三。", "——。"])
def test_a_chunks_sentences_are_chinese_as_each_is_mostly_cjk(text):
    # (a chunk without letters but CJK's is judged in one look, not a count per sentence)
    from tgr.offline.providers import _chinese_sentences, _mostly_cjk
    from tgr.text import split_sentences

    sentences = [text[a:b] for a, b in split_sentences(text)]
    assert _chinese_sentences(sentences, text) == list(map(_mostly_cjk, sentences))


def test_the_text_shows_who_is_a_person_by_a_following_he_or_she_and_a_surname_used_alone():
    found = by_name("Arne Blomberg, was born in 1930 in Gothenburg, Sweden. He started off by studying art. "
                    "Friedrich Hayek taught at Vienna. Hayek earned a doctorate in 1921.")
    assert found["Arne Blomberg"].type == "person" and found["Friedrich Hayek"].type == "person", found
    # an adjective or a place before the repeated word is no given name; a plural is a team
    found = by_name("Fishing in Central Newfoundland is good. Ships reach Newfoundland in May. The Golden State "
                    "Warriors won. The Warriors were glad.")
    assert found["Central Newfoundland"].type != "person" and found["Golden State Warriors"].type != "person", found
    assert by_name("Bob Cratchit came home. The Cratchits sat at the table.")["Cratchits"].type == "person"


def test_a_head_noun_after_a_name_and_a_plural_place_of_type_it():
    found = by_name("The Taubenklippe is a rock formation in the Harz mountains. The album was recorded for the "
                    "Candid label in 1961. It spans the states of Rajasthan, Madhya Pradesh and Haryana.")
    assert found["Harz"].type == "location" and found["Candid"].type == "organization", found
    assert all(found[n].type == "location" for n in ("Rajasthan", "Madhya Pradesh", "Haryana")), found
