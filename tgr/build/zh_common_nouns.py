"""Chinese words jieba's dictionary tags as person names that a document uses as common nouns
or verbs (和尚, 言语, 师兄, 胡说), and words it tags as place names that a document never writes
as a place (哥哥, 上马, 且莫): no entity in that document.

jieba's dictionary tags many common words nr ("和尚 3959 nr", "言语 2335 nr"), and its counts
cannot tell them from names ("宋江 2862 nr"). The text can: a name takes no measure word, no
plural and no adverb, so "一个和尚", "众师兄", "的和尚", "和尚们", "不言语", "莫胡说", "谢恩毕"
say the word is a noun or a verb. A dictionary person word the document writes so at least
_LEAST times and in at least _SHARE of its occurrences is no name there, unless the document
names it with a naming phrase (法名玄奘, 称名须菩提祖师).

A place is where one goes, is, comes from, or something is on, in or before, or the name
of a town, province or island: "到了花果山", "在灵山", "往西天", "山坡下", "哈尔滨市", "西西里岛".
A word typed location (of two or three characters, not ending in a place word such as 山, 河,
寺, 海) that a document writes at least _PLACE_LEAST times and with such company in under
_PLACE_SHARE of them is no place there: in 西游记's chunks "哥哥" 196 times, once so, "上马" 63 times,
twice; "花果山" and "南海" two times in five. (A short text seldom says a word 25 times: news
and encyclopedia articles keep their places.)
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict

from ..offline.name_words import CJK_CHARS
from ..offline.jieba_words import dictionary_person_words
from ..offline.names_zh import NAMING_VERBS, PLACE_ENDS
from ..store.db import Connection

# what stands before a noun or a verb and never before a name: a measure word or plural
# marker (个 些 群 伙 众 诸 各 每), 的, a negation or an adverb (不 没 未 休 莫 别 便 就 又 ...)
_BEFORE = frozenset("个些群伙众诸各每的不没未休莫别便就又也都即遂忙再已曾要肯敢能会")
_AFTER = ("们", "了", "着", "过", "罢", "毕")  # a plural, or an aspect particle after a verb
_SHARE = 0.15
_LEAST = 2
# what stands before a place (到 在 往 至 ..., also with 了/那/这 between) or after one (上 下 里 ...)
_TO_PLACE = frozenset("在到往至向回去来从于入进出离过住望奔赴近")
_BETWEEN = frozenset("了那这")
_AT_PLACE = frozenset("上下里中内外前后边旁间省市县镇乡村区州国岛港湾洲")  # (哈尔滨市, 西西里岛)
_PLACE_WORDS = ("海", "洋", "洞", "府", "殿", "门", "关", "城", "庙", "庄", "峰", "岭", "涧", "林", "坡", "池",
                "泉", "阁", "楼", "台", "园", "营", "塔", "院", "堂", "亭", "界", "域", "方", "处", "地", "天")
_PLACE_ENDS = PLACE_ENDS + _PLACE_WORDS  # a name that ends in one is a place whatever its company
_PLACE_LEAST = 25
_PLACE_SHARE = 0.05
# (compiled where used, by re's cache: not on import, which every build does, English too)
_WORD = f"[{CJK_CHARS}]{{2,3}}"
_NAMED_BY = f"(?:{NAMING_VERBS})[：:]?[“「‘]?$"


def chinese_common_nouns(conn: Connection, names: dict[str, dict[str, Counter]]) -> dict[str, set[str]]:
    """document -> the person names it gives (names: document -> name -> Counter of types) that
    are a dictionary's person word the document writes as a common noun or a verb, and the
    place names it gives that it never writes as a place (module docstring)."""
    chinese = {document: [n for n in found if not n.isascii()] for document, found in names.items()}
    if not any(chinese.values()):
        return {}  # (an English text: not even the pattern to compile)
    word = re.compile(_WORD).fullmatch
    typed = {document: [(n, names[document][n].most_common(1)[0][0]) for n in found if word(n)]
             for document, found in chinese.items()}
    persons = {document: {n for n, kind in found if kind == "person"} for document, found in typed.items()}
    if any(persons.values()):  # (no Chinese person name: no dictionary to read)
        people = dictionary_person_words()
        persons = {d: c & people for d, c in persons.items()}
    places = {document: {n for n, kind in found if kind == "location" and not n.endswith(_PLACE_ENDS)}
              for document, found in typed.items()}
    wanted = sorted(d for d in chinese if persons.get(d) or places.get(d))
    if not wanted:
        return {}
    found = {}
    for document in wanted:  # a document's text at a time, not every document's at once
        text = "\n".join(text for (text,) in conn.execute(
            "SELECT text FROM chunks WHERE document_id = ? ORDER BY ordinal", (document,)))
        people, spots = persons.get(document, set()), places[document]
        occurrences = _occurrences(text, people | spots)  # (one pass over the text for both)
        common = _common_words(text, {w: occurrences[w] for w in people}) | \
            _never_places(text, {w: occurrences[w] for w in spots})
        if common:
            found[document] = common
    return found


def words_never_places(text: str, words) -> set[str]:
    """The words the text writes at least _PLACE_LEAST times, under _PLACE_SHARE of them with a
    place's company (module docstring)."""
    return _never_places(text, _occurrences(text, words))


def _never_places(text: str, occurrences: dict[str, list[int]]) -> set[str]:
    """words_never_places, given where each word is in the text."""
    never = set()
    for word, starts in occurrences.items():
        if len(starts) < _PLACE_LEAST:
            continue  # (most words)
        placed = sum(text[start - 1:start] in _TO_PLACE
                     or text[start - 1:start] in _BETWEEN and text[start - 2:start - 1] in _TO_PLACE
                     or text[start + len(word):start + len(word) + 1] in _AT_PLACE for start in starts)
        if placed < _PLACE_SHARE * len(starts):
            never.add(word)
    return never


def used_as_common_word(text: str, word: str) -> bool:
    """The text writes word with a noun's or a verb's company (module docstring) often enough,
    and never names it with a naming phrase."""
    return bool(words_used_as_common(text, [word]))


def words_used_as_common(text: str, words) -> set[str]:
    """The words (of two or three characters) that used_as_common_word holds for, from one
    pass over the text (not a scan of the whole text per word)."""
    return _common_words(text, _occurrences(text, words))


def _common_words(text: str, occurrences: dict[str, list[int]]) -> set[str]:
    """words_used_as_common, given where each word is in the text."""
    common, named_by = set(), re.compile(_NAMED_BY).search
    for word, starts in occurrences.items():
        marked = 0
        for start in starts:
            if named_by(text, max(0, start - 4), start):
                break
            marked += text[start - 1:start] in _BEFORE or text.startswith(_AFTER, start + len(word))
        else:
            if marked >= _LEAST and marked >= _SHARE * len(starts):
                common.add(word)
    return common


def _occurrences(text: str, words) -> dict[str, list[int]]:
    """Where each word starts in text, left to right and not overlapping itself (as a
    str.find loop steps); the words may overlap each other (师兄, 兄弟 in 师兄弟)."""
    starts: dict[str, list[int]] = {word: [] for word in words}
    by_length: dict[int, list[str]] = defaultdict(list)
    for word in starts:
        by_length[len(word)].append(word)
    codes = None
    for length, group in by_length.items():
        if length > _PACKED:
            for word in group:
                position = text.find(word)
                while position >= 0:
                    starts[word].append(position)
                    position = text.find(word, position + length)
            continue
        codes = _code_points(text) if codes is None else codes
        ends = dict.fromkeys(group, 0)
        for position in _where_any(codes, group):
            word = text[position:position + length]
            if position >= ends[word]:
                starts[word].append(position)
                ends[word] = position + length
    return starts


_PACKED = 3  # the most characters of a word _where_any packs into one 64-bit integer (21 bits each)


def _code_points(text: str):
    import numpy as np

    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)


def _where_any(codes, group: list[str]) -> list[int]:
    """The positions, in order, where one of group (words of one length, at most _PACKED) starts
    in a text of these code points: every character one a word has there, then the whole word
    (its code points packed into one integer) among the group's (a scan per candidate word was
    most of the time)."""
    import numpy as np

    length = len(group[0])
    count = len(codes) - length + 1
    if count <= 0:
        return []
    top = max(int(codes.max()), *(ord(c) for word in group for c in word)) + 1
    maybe = np.ones(count, dtype=bool)
    for offset in range(length):
        allowed = np.zeros(top, dtype=bool)
        allowed[[ord(word[offset]) for word in group]] = True
        maybe &= allowed[codes[offset:offset + count]]
    candidates = np.flatnonzero(maybe)
    keys = np.zeros(len(candidates), dtype=np.int64)
    for offset in range(length):
        keys = (keys << 21) | codes[candidates + offset]
    wanted = np.unique(np.array([sum(ord(c) << 21 * (length - 1 - i) for i, c in enumerate(word)) for word in group],
                                dtype=np.int64))
    nearest = wanted[np.minimum(np.searchsorted(wanted, keys), len(wanted) - 1)]
    return candidates[nearest == keys].tolist()
