"""tgr/text.py (token estimates, sentences, name keys) and tgr/ingest/chunking.py (windows)."""
from __future__ import annotations

import pytest

from conftest import EN_CORPUS, SMALL, ZH_CORPUS
from tgr.ingest.chunking import chunk_text
from tgr.text import CJK_RANGES, cjk_counts, content_hash, estimate_tokens, normalise_name, split_sentences

CORPUS_FILES = sorted(EN_CORPUS.glob("*.txt")) + sorted(ZH_CORPUS.glob("*.txt"))

EN_SENTENCES = [f"Sentence number {i} says a few plain words about item {i}." for i in range(60)]
EN_TEXT = " ".join(EN_SENTENCES)
ZH_TEXT = "".join(f"第{i}句话讲了一个关于花果山的小故事。" for i in range(60))


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


# -- estimate_tokens -------------------------------------------------------------------

def test_cjk_counts_count_each_span_like_a_regex_over_it():
    """Han, kana, Hangul and compatibility ideographs count; CJK punctuation, fullwidth forms and
    other scripts do not."""
    import random
    import re

    pieces = ["汉字", "かなカナ", "한국어", "\uf900\ufaff", "，。「」", "ＡＢ", "plain words. ", "é ñ ß", "\n\n", "𠀀"]
    rng = random.Random(3)
    text = "".join(rng.choice(pieces) for _ in range(260_000))  # about 1.3 M characters
    starts = sorted(rng.sample(range(1, len(text)), 2000)) + [len(text) - 1]
    starts = [0] + sorted(set(starts))
    bounds = starts + [len(text)]
    expected = [len(re.findall(f"[{CJK_RANGES}]", text[a:b])) for a, b in zip(bounds, bounds[1:])]
    assert cjk_counts(text, starts) == expected
    assert cjk_counts("plain ascii", [0, 5]) == [0, 0] and cjk_counts("汉", []) == []
    assert cjk_counts("汉字\0かな。é한", [0, 1, 4, 7]) == [1, 2, 1, 1]  # a NUL in the text counts nothing
    assert cjk_counts(text[:5000], [7]) == [len(re.findall(f"[{CJK_RANGES}]", text[7:5000]))]  # one span



def test_estimate_tokens_counts_each_cjk_character():
    assert estimate_tokens("孙悟空") == 3
    assert estimate_tokens("花果山水帘洞") == 6
    assert estimate_tokens("ひらがな") == 4  # kana counts as CJK too
    assert estimate_tokens("한국어") == 3    # and Hangul


def test_estimate_tokens_counts_english_as_four_chars_per_token():
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 400) == 100


def test_estimate_tokens_cjk_is_denser_than_english():
    # the same number of characters: Chinese is one token each, English a quarter
    assert estimate_tokens("孙" * 100) == 100
    assert estimate_tokens("s" * 100) == 25
    assert estimate_tokens("孙悟空 and Scrooge") == 3 + (len(" and Scrooge") + 3) // 4


# -- split_sentences -------------------------------------------------------------------

def test_split_sentences_english_punctuation():
    text = "Marley was dead. Was he? Yes!  Scrooge signed it; the clerk too"
    assert [s.strip() for s in sentences(text)] == [
        "Marley was dead.", "Was he?", "Yes!", "Scrooge signed it;", "the clerk too"]


def test_split_sentences_chinese_punctuation():
    text = "孙悟空住在花果山。他很高兴！真的吗？是的；就这样…最后一句"
    assert sentences(text) == ["孙悟空住在花果山。", "他很高兴！", "真的吗？", "是的；", "就这样…", "最后一句"]


@pytest.mark.parametrize("text, expected", [
    ("", []), ("\n", ["\n"]),
    ("第一句。\n\n第二句\n\n第三句", ["第一句。\n\n", "第二句\n\n", "第三句"]),
    ("他说：“走吧。”  然后……走了！？", ["他说：“走吧。”  ", "然后……", "走了！？"]),
    ("一\n二\n\n\n三。", ["一\n二\n\n\n", "三。"]),
])
def test_split_sentences_of_text_without_latin_end_marks(text, expected):
    # (where no Latin end mark is, every end mark or blank line ends a sentence: one pass, no checks)
    assert sentences(text) == expected
    before = max(len(expected) - 1, 0)  # the same cuts before the last where the checks run
    assert sentences(text + " A.")[:before] == expected[:before]


@pytest.mark.parametrize("text, expected", [
    ("Wait... what?! No.", ["Wait...", "what?!", "No."]),
    ("Really?! Yes.", ["Really?!", "Yes."]),
    ("就这样……好吧。", ["就这样……", "好吧。"]),
    ("什么？！走吧。", ["什么？！", "走吧。"]),
], ids=["en-ellipsis", "en-interrobang", "zh-ellipsis", "zh-interrobang"])
def test_split_sentences_keeps_runs_of_end_punctuation_together(text, expected):
    # an ellipsis or "?!" ends one sentence; it must not leave one-character fragments
    assert [s.strip() for s in sentences(text)] == expected


def test_split_sentences_keeps_closing_quotes_with_their_sentence():
    text = "He said \"Stop.\" Then he left. 他说：“走吧。”然后走了。"
    assert sentences(text) == ["He said \"Stop.\" ", "Then he left. ", "他说：“走吧。”", "然后走了。"]


def test_split_sentences_breaks_at_blank_lines():
    text = "A heading without a full stop\n\nThe first paragraph."
    assert sentences(text) == ["A heading without a full stop\n\n", "The first paragraph."]


@pytest.mark.parametrize("text", [EN_TEXT, ZH_TEXT, "no punctuation at all", "   ", ""])
def test_split_sentences_spans_tile_the_text(text):
    spans = split_sentences(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(a < b for a, b in spans)
    assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))


def test_split_sentences_does_not_end_a_sentence_after_an_honorific():
    # "Mr." is an abbreviation, not the end of a sentence: the name belongs with it
    text = "The office belonged to Mr. Scrooge and nobody else. Dr. Watson agreed."
    assert [s.strip() for s in sentences(text)] == [
        "The office belonged to Mr. Scrooge and nobody else.", "Dr. Watson agreed."]


@pytest.mark.parametrize("text, expected", [
    ("G. Stanley Hall was born in 1844. He studied.", ["G. Stanley Hall was born in 1844.", "He studied."]),
    ("Then J. R. R. Tolkien wrote it. It sold.", ["Then J. R. R. Tolkien wrote it.", "It sold."]),
    ("Version 3.5 came out. It was fast.", ["Version 3.5 came out.", "It was fast."]),
    ("Cats, e.g. Tom, purr. Dogs, i.e. Rex, bark.", ["Cats, e.g. Tom, purr.", "Dogs, i.e. Rex, bark."]),
    ("The U.S. Army hired him. He left.", ["The U.S. Army hired him.", "He left."]),
    ("He moved to the U.S. in 1990. He left the U.S. The end.",
     ["He moved to the U.S. in 1990.", "He left the U.S.", "The end."]),
    ("He lived in St. Louis. Then he left.", ["He lived in St. Louis.", "Then he left."]),
    ("See example.com for more. Next.", ["See example.com for more.", "Next."]),
    ("No. 5 was his. No. Ask him.", ["No. 5 was his.", "No.", "Ask him."]),
    ("Born Jan. 5, 1900. Died in Jan. The end.", ["Born Jan. 5, 1900.", "Died in Jan.", "The end."]),
    ("Acme Inc. sold it. So do I. Fine.", ["Acme Inc. sold it.", "So do I.", "Fine."]),
    ("It was cold. nobody came.", ["It was cold.", "nobody came."]),
], ids=["initial", "initials", "decimal", "eg-ie", "US-name", "US-end", "saint", "domain",
        "number-abbrev", "month-abbrev", "company-and-I", "lowercase-start"])
def test_split_sentences_abbreviations_initials_and_decimals(text, expected):
    assert [s.strip() for s in sentences(text)] == expected


def test_split_sentences_mixed_chinese_and_english_abbreviations():
    text = "他在美国（U.S.）读书，学了3.5年。G. Stanley Hall是他的老师。"
    assert sentences(text) == ["他在美国（U.S.）读书，学了3.5年。", "G. Stanley Hall是他的老师。"]


# -- normalise_name --------------------------------------------------------------------

@pytest.mark.parametrize("raw, key", [
    ("Scrooge", "scrooge"),
    ("SCROOGE", "scrooge"),
    ("  Jacob   Marley ", "jacob marley"),
    ("Jacob\tMarley\n", "jacob marley"),
    ("Jacob\u00a0Marley", "jacob marley"),        # no-break space
    ("Ｓｃｒｏｏｇｅ", "scrooge"),                  # full-width Latin (NFKC)
    ("Ｍａｒｌｅｙ　Ｊａｃｏｂ", "marley jacob"),     # full-width letters and ideographic space
    ("Room １０１", "room 101"),                  # full-width digits
    ('"Scrooge"', "scrooge"),
    ("'Scrooge'", "scrooge"),
    ("“Bob Cratchit”", "bob cratchit"),
    ("「孙悟空」", "孙悟空"),
    ("《西游记》", "西游记"),
    ("孙悟空", "孙悟空"),
])
def test_normalise_name(raw, key):
    assert normalise_name(raw) == key


def test_normalise_name_merges_variants_to_one_key():
    variants = ["Jacob Marley", "jacob marley", " JACOB  MARLEY ", "“Jacob Marley”", "Ｊａｃｏｂ Ｍａｒｌｅｙ"]
    assert {normalise_name(v) for v in variants} == {"jacob marley"}
    assert normalise_name("Jacob Marley") != normalise_name("Jacob Marleys")


# -- chunk_text ------------------------------------------------------------------------

def assert_well_formed(text: str, chunks, size: int) -> None:
    """Spans reproduce slices, ordinals count up, windows advance and leave no gaps."""
    assert chunks, "a non-empty text gives at least one chunk"
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert text[c.start:c.end] == c.text
        assert c.tokens == estimate_tokens(c.text)
        assert c.text.strip()
    assert not text[:chunks[0].start].strip()
    assert not text[chunks[-1].end:].strip()
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start > prev.start and nxt.end > prev.end, "windows always advance"
        assert nxt.start <= prev.end, "no text falls between two windows"
    assert len({c.id for c in chunks}) == len(chunks)


@pytest.mark.parametrize("text", [EN_TEXT, ZH_TEXT], ids=["en", "zh"])
@pytest.mark.parametrize("size, overlap", [(16, 0), (40, 10), (100, 30), (300, 40)])
def test_chunk_windows_are_bounded_and_end_on_sentences(text, size, overlap):
    chunks = chunk_text(text, "doc", size, overlap)
    assert_well_formed(text, chunks, size)
    spans = split_sentences(text)
    longest = max(estimate_tokens(text[a:b]) for a, b in spans)
    ends = {b for _, b in spans}
    starts = {a for a, _ in spans}
    for c in chunks:
        assert c.tokens <= size + longest, "at most one sentence beyond the window size"
        if longest <= size:  # (a sentence longer than the window is cut; see below)
            assert c.end in ends, "windows end on a sentence boundary"
            assert c.start in starts, "windows start on a sentence boundary"
    if estimate_tokens(text) > size:
        assert len(chunks) > 1


@pytest.mark.parametrize("text", [EN_TEXT, ZH_TEXT], ids=["en", "zh"])
def test_consecutive_chunks_overlap_but_advance(text):
    chunks = chunk_text(text, "doc", 100, 30)
    assert len(chunks) > 3
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start < prev.end, "the next window starts before the previous one ends"
        assert nxt.start > prev.start
        shared = estimate_tokens(text[nxt.start:prev.end])
        assert 0 < shared <= 30 + 3  # whole sentences worth about `overlap` tokens


def test_zero_overlap_gives_adjacent_windows():
    chunks = chunk_text(EN_TEXT, "doc", 100, 0)
    assert len(chunks) > 3
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start == prev.end


def test_single_short_text_is_one_chunk():
    chunks = chunk_text("Marley was dead. Scrooge signed it.", "doc", 300, 40)
    assert len(chunks) == 1
    assert (chunks[0].start, chunks[0].end, chunks[0].ordinal) == (0, 35, 0)


@pytest.mark.parametrize("text", ["", "   \n\n  "])
def test_empty_or_blank_text_gives_no_chunks(text):
    assert chunk_text(text, "doc", 300, 40) == []


def test_chunk_ids_are_stable_and_depend_on_the_document():
    first = chunk_text(EN_TEXT, "doc-a", 100, 20)
    again = chunk_text(EN_TEXT, "doc-a", 100, 20)
    other = chunk_text(EN_TEXT, "doc-b", 100, 20)
    assert [c.id for c in first] == [c.id for c in again]
    assert [(c.start, c.end) for c in first] == [(c.start, c.end) for c in other]
    assert not {c.id for c in first} & {c.id for c in other}
    # the same window text at two positions of one document still gets two ids
    repeated = chunk_text("Same words here. " * 40, "doc-a", 16, 0)
    assert len({c.text for c in repeated}) < len(repeated)
    assert len({c.id for c in repeated}) == len(repeated)


@pytest.mark.parametrize("size", [16, 100, 300, 1200])
def test_overlong_chinese_sentence_is_split_into_window_sized_pieces(size):
    text = "孙" * 5000  # no punctuation at all
    chunks = chunk_text(text, "doc", size, min(40, size - 1))
    assert_well_formed(text, chunks, size)
    assert len(chunks) >= 5000 // size
    assert all(c.tokens <= size for c in chunks)
    assert chunks[0].start == 0 and chunks[-1].end == 5000


def test_overlong_english_sentence_is_split():
    text = " ".join(["word"] * 3000)  # 15,000 characters, no sentence end
    chunks = chunk_text(text, "doc", 300, 40)
    assert_well_formed(text, chunks, 300)
    assert len(chunks) >= estimate_tokens(text) // 300
    assert all(c.tokens <= 300 for c in chunks)


def test_overlong_mixed_script_sentence_pieces_fit_the_window():
    # one unpunctuated sentence: Latin letters, then Chinese (very different token density)
    text = "a" * 2000 + "孙" * 1000
    chunks = chunk_text(text, "doc", 300, 40)
    assert_well_formed(text, chunks, 300)
    assert max(c.tokens for c in chunks) <= 300, [c.tokens for c in chunks]


def test_overlong_sentence_between_normal_sentences():
    text = "Before it. " + "孙" * 700 + "。After it, a normal sentence."
    chunks = chunk_text(text, "doc", 100, 20)
    assert_well_formed(text, chunks, 100)
    assert all(c.tokens <= 100 for c in chunks)
    assert chunks[0].text.startswith("Before it.")
    assert chunks[-1].text.endswith("After it, a normal sentence.")


@pytest.mark.parametrize("size, overlap", [(15, 0), (0, 0), (-5, 0), (100, -1), (100, 100), (100, 150)])
def test_invalid_size_or_overlap_raises(size, overlap):
    with pytest.raises(ValueError):
        chunk_text(EN_TEXT, "doc", size, overlap)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("size, overlap", [(SMALL["chunk_size"], SMALL["chunk_overlap"]), (1200, 100)])
def test_fixture_corpora_chunk_well(path, size, overlap):
    text = path.read_text(encoding="utf-8")
    chunks = chunk_text(text, path.name, size, overlap)
    assert_well_formed(text, chunks, size)
    ends = {b for _, b in split_sentences(text)}
    assert all(c.tokens <= size for c in chunks)
    assert all(c.end in ends for c in chunks)
    assert sum(c.end - c.start for c in chunks) >= len(text.strip())
    assert [c.id for c in chunk_text(text, path.name, size, overlap)] == [c.id for c in chunks]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_fixture_corpora_consecutive_chunks_overlap(path):
    text = path.read_text(encoding="utf-8")
    chunks = chunk_text(text, path.name, SMALL["chunk_size"], SMALL["chunk_overlap"])
    no_overlap = [(prev.ordinal, nxt.ordinal) for prev, nxt in zip(chunks, chunks[1:])
                  if not nxt.start < prev.end]
    assert not no_overlap, f"consecutive chunks sharing no text: {no_overlap}"


@pytest.mark.parametrize("parts", [(), ("",), ("", ""), ("Scrooge",), ("孙悟空", "花果山\x1f水帘洞", "é" * 300)])
def test_content_hash_is_the_sha256_of_each_part_followed_by_a_unit_separator(parts):
    """Every stored id and input hash is one of these: the bytes hashed must never change."""
    import hashlib

    expected = hashlib.sha256(b"".join(p.encode("utf-8") + b"\x1f" for p in parts)).hexdigest()
    assert content_hash(*parts) == expected[:16]
    assert content_hash(*parts, length=32) == expected[:32]


def test_a_big_text_hashes_as_a_small_one_would():
    """content_hash reads a big document a slice at a time (no encoded copy of it whole):
    the id is still the hash of its text and the separator, whatever the script."""
    import hashlib

    from tgr.text import content_hash

    for text in ("a" * 3_000_001, "孙悟空" * 700_000 + "x", "é\U0001F600" * 600_000, "short"):
        whole = hashlib.sha256((text + "\x1f").encode("utf-8")).hexdigest()
        assert content_hash(text) == whole[:16] and content_hash(text, length=32) == whole[:32]


def test_term_set_is_match_terms_as_a_set_with_its_stopwords():
    """tgr.text.term_set (reports' terms, tested against a question's): every term match_terms
    gives, Chinese bigrams and a lone character included, and nothing else but stopwords."""
    from tgr.text import STOPWORDS, match_terms, term_set

    for text in ("Scrooge's nephew, Fred, and the Ghost of Christmas Past", "孙悟空拜师学艺。唐僧 and 猪",
                 "X 一 y", "Ünal and ÉCOLE"):
        got = term_set(text)
        assert set(match_terms(text)) <= got and got - set(match_terms(text)) <= STOPWORDS
    assert {"孙悟", "悟空", "一"} <= term_set("孙悟空 一") and "the" in term_set("the Ghost")
