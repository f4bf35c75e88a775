""""Who is X?" leads with what the narration says X is or was: not with lines of speech that
address X, and including a sentence that names X only by a pronoun after the name."""
from __future__ import annotations

import json

import sqlean as sqlite3

import tgr
from conftest import SMALL
from tgr.text import content_hash
from tgr.offline.answer_sentences import answer_sentences, defines
from tgr.offline.definitions import in_speech, refers_back

EN = [
    ("1", "'In life I was your friend, Silas Hartley.' 'Old Silas Hartley, tell me more!' cried Walter."),
    ("2", "Hartley was dead, to begin with. Walter knew he was dead. Walter and he were partners for "
          "twenty years. Walter was his sole executor and his sole friend."),
    ("3", "'Speak to me, Silas Hartley!' Walter said, and the bell rang."),
]
ZH = [
    ("1", "李雷走进院子，喊道：“韩梅梅，快来看！”"),
    ("2", "韩梅梅生于杭州。她是一位小学教师，教了二十年语文。"),
    ("3", "王老师说：“韩梅梅，你今天来晚了。”"),
]


def test_speech_addressed_to_x_is_no_definition_and_narration_is():
    assert in_speech("'Old Silas Hartley, tell me more!'", ["Silas Hartley"])
    assert in_speech("Speak comfort to me, Jacob!'", ["Jacob"])
    assert not in_speech("Hartley was dead, to begin with.", ["Hartley"])
    assert in_speech("王老师说：“韩梅梅，你今天来晚了。”", ["韩梅梅"])
    assert not in_speech("韩梅梅笑了，说：“走吧。”", ["韩梅梅"])
    assert in_speech("自今就叫做韩梅梅也！”", ["韩梅梅"])  # the quotation opened a sentence before
    assert in_speech("他说：“你好，韩梅梅。", ["韩梅梅"])
    assert defines("Hartley was dead, to begin with.", "Silas Hartley")  # the surname alone, a copula
    assert not defines("'Silas Hartley was a friend,' said Walter.", "Silas Hartley")


def test_a_pronoun_stands_for_the_last_name_its_sentence_does_not_hold():
    sentences = ["Hartley was dead.", "So Walter knew he was dead?", "Of course he did.",
                 "Walter and he were partners.", "Then Mary laughed.", "He left."]
    assert refers_back(sentences, ["Silas Hartley", "Hartley"]) == [False, True, False, True, False, False]
    assert refers_back(["韩梅梅生于杭州。", "她是教师。"], ["韩梅梅"]) == [False, True]


def test_who_is_leads_with_narration_not_the_lines_that_address_x():
    picked = [s for s, _ in answer_sentences("Who is Silas Hartley?", EN)]
    assert picked[0] in {"Hartley was dead, to begin with.", "Walter and he were partners for twenty years."}
    narration = [n for n, s in enumerate(picked) if not s.startswith("'")]
    speech = [n for n, s in enumerate(picked) if s.startswith("'")]
    assert len(narration) >= 3 and max(narration) < min(speech)
    zh = [s for s, _ in answer_sentences("韩梅梅是谁？", ZH)]
    assert zh[0] == "她是一位小学教师，教了二十年语文。" and "韩梅梅生于杭州。" in zh[:2]


STORY = ("Hartley was dead, to begin with. There was no doubt about that. Walter knew he was dead. "
         "Walter and he were partners for twenty years in the mill by the river. Walter was his sole "
         "executor and his sole friend.\n\n")
SCENE = ("'Old Silas Hartley, tell me more!' cried Walter in scene {n}. 'Speak to me, Silas Hartley!' "
         "The bell rang {n} times and the candle burned low over the table in the cold room.\n\n")


def test_the_store_answers_who_is_from_the_defining_narration(tmp_path):
    story = tmp_path / "story.txt"
    story.write_text(STORY + "".join(SCENE.format(n=n) for n in range(12)), encoding="utf-8")
    rows = [{"doc_id": "z", "title": "", "text": "韩梅梅生于杭州。她是一位小学教师，教了二十年语文。\n\n"
             + "".join(f"王老师说：“韩梅梅，你今天来晚了{n}次。”李雷喊道：“韩梅梅，快来看！”\n\n" for n in range(12))}]
    zh = tmp_path / "zh.jsonl"
    zh.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(story), str(zh)], **SMALL)
        first = kb.ask("Who is Silas Hartley?").answer.splitlines()[0]
        assert first.startswith(("Hartley was dead", "Walter and he were partners")), first
        first = kb.ask("韩梅梅是谁？").answer.splitlines()[0]
        assert first.startswith("她是一位小学教师"), first


def test_a_sentence_opening_word_is_no_part_of_the_name_defined():
    """"As Scrooge looked fixedly ..., it was a knocker again." names Scrooge after a capitalised
    "As", and the "was a" is the knocker's: no definition (it had led "Who is Scrooge?")."""
    assert not defines("As Scrooge looked fixedly at this phenomenon, it was a knocker again.", "Scrooge")
    assert defines("Ebenezer Scrooge was a grasping old man.", "Scrooge")  # the full name before the surname
    assert defines("Old Scrooge was a grasping old man.", "Scrooge")


def test_who_is_reads_the_documents_in_the_order_they_were_added(tmp_path):
    """A book in two files: the passage that defines its hero leads, from the first file added,
    though the second's document id (a hash of its text) sorts first."""
    opening = "Walter Grice was a miser of the old town.\n\n" + "Walter counted coins at his desk. " * 40
    later = next(text for n in range(100) for text in [f"Walter Grice was seen at the harbour {n} times.\n\n"
                                                        + "Walter walked home in the fog. " * 40]
                 if content_hash(text) < content_hash(opening))
    first, second = tmp_path / "part1.txt", tmp_path / "part2.txt"
    first.write_text(opening, encoding="utf-8")
    second.write_text(later, encoding="utf-8")
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(first), str(second)], **SMALL)
        assert kb.retrieve("Who is Walter Grice?", "local", 1)[0].text.startswith("Walter Grice was a miser")
    store = sqlite3.connect(tmp_path / "s.db")
    ids = [row[0] for row in store.execute("SELECT id FROM documents ORDER BY rowid")]
    assert ids[1] < ids[0]  # the hash order would have put part 2 first
