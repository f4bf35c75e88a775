"""Chinese names without a model: jieba's proper-noun tags and a few cheap patterns.

Besides the words jieba tags as names (nr/ns/nt/nz...), a sentence yields: titles in
《》 and short quoted terms in 「」/“”; transliterated names joined by "·"
(安德里·拉乔利纳); compounds of a name or noun and nouns that end in an institution or
place word (重庆武隆岩溶国家地质公园, 首钢集团有限公司); the subject of a defining
sentence (狭叶艾纳香（学名：…）是…); what a naming phrase names (称名须菩提祖师, 叫做孙悟空,
唤名烂桃山); a name and the title after it (菩提祖师, 镇元大仙), and a title alone (祖师道:
tgr.build.resolve joins it to the document's one name with that title, or drops it); and Latin
names written inside Chinese text (Bee Gees). A name the tagger glued from a verb and an address
word (有劳师父 -> 劳师父, 多蒙师父 -> 蒙师父) is none. Within one text a short form is merged into its long form when the text
says so (X，简称Y) or when it keeps the long form's first and last characters in order
(香港特区 -> 香港特别行政区).
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import lru_cache, partial
from itertools import accumulate, compress
from operator import itemgetter, methodcaller

from ..text import compiled
from .jieba_words import everyday_words as _everyday_words, rare_person_names as _rare_names
from .name_words import CHINESE_FUNCTION_WORDS, CHINESE_TITLES, CJK_CHARS, MONTH_ABBREVIATIONS, MONTHS, \
    chinese_short_forms

Name = tuple[str, str]  # (name, type)

_CJK = CJK_CHARS
_TAG_TYPES = {"nr": "person", "nrfg": "person", "nrt": "person", "ns": "location",
              "nt": "organization", "nz": "concept"}
_TITLE = r"《([^《》\n]{1,30})》"  # (the patterns: compiled when first needed, by text.compiled)
_QUOTED = rf"[「“]([{_CJK}A-Za-z0-9·]{{2,10}})[」”]"
_DOTTED = rf"[{_CJK}]{{1,8}}(?:[·・•‧][{_CJK}]{{1,8}})+"
_ALL_CJK = f"[{_CJK}]+"
_LATIN = r"[A-Za-z][A-Za-z0-9&'\-.]*(?: [A-Za-z0-9][A-Za-z0-9&'\-.]*)*"
_NAMING = "简称|又称|或称|又名|亦称|俗称|通称|别称|别名|全称|原名"
_SUBJECT = rf"([{_CJK}]{{2,16}})\s*(?:[（(]|[，,](?:{_NAMING}))"
_ALIAS = rf"[，,（(]\s*(?:{_NAMING})[：:“「]?([{_CJK}A-Za-z0-9·]{{2,12}})"
_ORGANIZATION_ENDS = ("公司", "集团", "大学", "学院", "中学", "小学", "学校", "银行", "协会", "学会",
                      "委员会", "政府", "电视台", "电台", "报社", "出版社", "研究所", "研究院", "医院",
                      "图书馆", "博物馆", "体育馆", "俱乐部", "基金会", "联盟", "党", "军", "队")
_LOCATION_ENDS = ("省", "市", "县", "镇", "乡", "村", "区", "州", "国", "山", "河", "江", "湖", "岛",
                  "港", "站", "机场", "公园", "寺", "宫", "桥", "街", "路", "湾", "峡", "洲")
_PLACE_ENDS = _ORGANIZATION_ENDS + _LOCATION_ENDS
PLACE_ENDS = _PLACE_ENDS  # (tgr.build.zh_common_nouns: a name ending in one is a place or a body)
_COMPOUND_START = {"nr", "nrt", "nrfg", "ns", "nt", "nz"}
_COMPOUND_PART = {"n", "nz", "nt", "ns", "nr", "nrt", "l"}
_HEADS = {"n", "l"}
_NAME_FLAGS = {"nr", "nrt", "nrfg", "ns", "nt", "nz", "x", "eng"}
NAMING_VERBS = "称名|名叫|叫做|叫作|唤做|唤作|名唤|唤名|号为|名为|名曰|号曰|称为|法名|道号|人称|绰号|混名"
_NAMED = rf"(?:{NAMING_VERBS})[：:]?[“「‘]?"
_NOT_IN_NAMED = {"x", "y", "uj", "ul", "ud", "uz", "uv", "ug", "p", "c", "d", "r", "m", "q", "zg", "e", "o"}
_NOT_NAMED = {"i", "l", "v", "vn", "vd", "a", "ad", "an"}  # idioms, verbs, adjectives
_NAMED_LENGTH = (2, 7)  # what a naming phrase names: 2 to 7 characters
_TITLE_STEM_FLAGS = {"n", "nr", "nrt", "nrfg", "ns", "nz", "ng", "nt", "j"}
_TITLE_STEM = 4      # the most characters of a name before its title (观世音菩萨, not 南海观世音菩萨)
# address words a verb before them is glued to by the tagger (有劳师父 -> 劳师父 "nr")
_ADDRESS_WORDS = frozenset("""师父 师傅 师兄 师弟 老爷 大哥 哥哥 大人 先生 夫人 娘子 小姐 公子 长老 大王 贤弟
    兄弟 姐姐 妹妹 徒弟 老儿 太太 爷爷 奶奶 娘娘 菩萨""".split())
_VERB_LIKE = ("v", "d", "p", "c", "r", "u", "m")
_GLUED_AFTER = _VERB_LIKE + ("y",)  # the tags of a character glued after a name (唐僧见, 唐僧哩)
_AFTER_SPEAKER = frozenset("道笑斗何闻听见问叫喝怒看说骂答")  # 大圣笑道, 大圣何在
# what follows a speaker and no place: 道 opening a quotation (not 山道, a mountain road), or a
# verb of speech ending in 道
_SPEECH = ("道：", "道:", "道“", "道「", "笑道", "问道", "说道", "叫道", "喝道", "答道", "骂道", "言道")
# what may stand before a speaker: the end of a clause (行者道) or a demonstrative (那八戒道);
# a noun right after a name before 道 says how it spoke (行者合掌道, 八戒暗想道)
_BEFORE_SPEAKER = frozenset("，,。！？；：:”」’\n 　、…—")
_POINTERS = frozenset(("那", "这"))
_COLLECTIVE_FIRST = frozenset("众诸各二两三四五六七")  # 众人道, 二老道: no one character (八戒 starts with 八)
_FUNCTION_CHARS = frozenset("是的在和与为于了及等曾将被也")
# words jieba's dictionary tags as place names that name no place
_GENERIC = frozenset("城市 城镇 古城 市区 郊区 地区 湖畔 老城区 首都 国家 全国 各国 中外 海外 国内 国外 "
                     "巴士 公交 地铁 的士 线路".split())
_NOT_LATIN_NAMES = frozenset("I A The An Of In On At To".split())
_MONTHS = MONTHS | MONTH_ABBREVIATIONS
_TITLES = tuple(sorted(CHINESE_TITLES, key=lambda t: (-len(t), t)))  # the longest title a word ends with first
_ANY_TITLE = "|".join(_TITLES)  # a word ends with a title only in a sentence that has one
_TITLE_LAST = frozenset(t[-1] for t in _TITLES)
_TITLE_LENGTHS = sorted({len(t) for t in _TITLES}, reverse=True)
# patterns that no sentence of most texts matches, by what they find; each matches wherever
# that finder's own pattern does (or more widely), never across a "\n" (chinese_names looks
# for them once in the whole text, the sentences joined by "\n", and runs a finder only where
# its pattern is; a sentence with none of them can have only tagged names and compounds)
_DOTS = "·・•‧"
_NAMING_CHARS = "[{}][{}]".format(*("".join(sorted({w[i] for w in _NAMING.split("|")})) for i in (0, 1)))
_RARE_PATTERNS = {"dotted": f"[{_DOTS}]+", "latin": "[A-Za-z]+", "named": _NAMED,
                  "subject": f"[（(，,](?:(?<=[（(])|{_NAMING_CHARS})",  # (a naming word's two characters:
                  "alias": rf"[，,（(]\s*{_NAMING_CHARS}",  # one look, not eleven, after a comma)
                  "title": _TITLE, "quoted": _QUOTED, "titled": _ANY_TITLE}
_ALL_RARE = frozenset(_RARE_PATTERNS)
_NO_RARE: frozenset[str] = frozenset()
_TITLED_ONLY = {"titled"}
_START = methodcaller("start")


def chinese_names(sentences: list[str]) -> list[list[Name]]:
    """The names found in each sentence (one list per sentence), aliases merged."""
    if not sentences:
        return []
    text = "\n".join(sentences)
    rare = _rare_patterns(sentences, text)
    tagged = _chunk_tags(sentences, text)
    if tagged is None:  # a word straddles a "\n": each sentence tagged alone
        found = [_sentence_names(s, rare.get(i, _NO_RARE)) for i, s in enumerate(sentences)]
    else:
        words, flags, starts, ends = tagged
        nouns = _speaking_nouns(text, words, flags, starts)
        if nouns:  # 行者道：“…” — jieba's dictionary knows 行者 and 八戒 only as nouns
            flags = tuple("nr" if flag == "n" and word in nouns else flag for word, flag in zip(words, flags))
        found = _chunk_names(sentences, rare, words, flags, starts, ends)
    aliases = _explicit_aliases(sentences, found) if any("alias" in r for r in rare.values()) else {}
    if aliases:  # "首钢" wherever the text uses the short form
        _add_long_forms(sentences, found, aliases)
    places = _speaking_places(text, found)
    if places:  # 三藏道：“…” — jieba's dictionary tags 三藏 ns, but a place does not speak
        found = [[(name, "person" if name in places else kind) for name, kind in names_here] for names_here in found]
    names = {name for names in found for name, _ in names}
    # 那唐僧, 那道士: the tagger glued a demonstrative to a word of the dictionary (not 那不勒斯)
    aliases.update({name: name[1:] for name in names if len(name) >= 3 and name[0] in _POINTERS
                    and name not in aliases and _known(name[1:])})
    aliases.update(_glued_after(found, aliases))
    aliases.update(chinese_short_forms(names - set(aliases)))
    if not aliases:
        return found
    return [[(aliases.get(name, name), kind) for name, kind in names_here] for names_here in found]


def _glued_after(found: list[list[Name]], aliases: dict[str, str]) -> dict[str, str]:
    """唐僧见 -> 唐僧, 沙僧笑 -> 沙僧: a three-character person the tagger glued from a person the
    text names on its own and the verb, adverb or particle after it (not 大王子, 佩洛西: a noun or
    a direction ends it)."""
    persons = {name for names_here in found for name, kind in names_here if kind == "person"}
    return {name: name[:2] for name in persons if len(name) == 3 and name[:2] in persons and name not in aliases
            and _lone_flag(name[2]).startswith(_GLUED_AFTER)}


def _speaking_places(text: str, found: list[list[Name]]) -> set[str]:
    """The names typed location that the text has speak (三藏道：, 三藏笑道): a person's name
    jieba's dictionary tags as a place. Each chunk decides for itself, and the entity takes
    its chunks' most frequent type, so an object before a subject-less 道 (按落云头道：) in a
    chunk or two does not make 云头 a person."""
    places = {name for names_here in found for name, kind in names_here if kind == "location"}
    marks = [mark for mark in _SPEECH if mark in text] if places else []  # (most chunks: none)
    return {name for name in places if any(name + mark in text for mark in marks)}


def _speaking_nouns(text: str, words: tuple[str, ...], flags: tuple[str, ...], starts: list[int]) -> set[str]:
    """The common nouns of two characters or more that the text has speak, as persons'
    names there: a character jieba's dictionary knows only as a noun (行者, 八戒, 菩萨, 国王).
    A speaker starts a clause or follows 那/这, and speaks twice in the text or is named in it
    again: a noun between a name and 道 (行者合掌道, 八戒暗想道) says how one spoke, and a
    group (众人道, 二老道) is no one."""
    said: dict[str, int] = {}
    for mark in _SPEECH:
        at = text.find(mark)
        while at >= 0:  # (a chunk of a story: a few dozen marks; most other texts: none)
            index = bisect_left(starts, at) - 1  # the word before the mark, if the mark starts a word
            if index >= 0 and starts[index + 1] == at and flags[index] == "n":
                word, start = words[index], starts[index]
                if len(word) >= 2 and word[0] not in _COLLECTIVE_FIRST and (
                        start == 0 or text[start - 1] in _BEFORE_SPEAKER or words[index - 1] in _POINTERS):
                    said[word] = said.get(word, 0) + 1
            at = text.find(mark, at + 2)
    return {word for word, times in said.items() if times >= 2 or text.count(word) >= 2}


def _chunk_names(sentences: list[str], rare: dict[int, set[str]], words: tuple[str, ...],
                 flags: tuple[str, ...], starts: list[int], ends: list[int]) -> list[list[Name]]:
    """_sentence_names of each sentence from the chunk's _chunk_tags. A sentence with a rare
    pattern goes through _sentence_names; the others (most) can have only tagged names and
    compounds, found here for the whole chunk at once: a "\n" (flag x) stops a compound and,
    as a sentence's edge does, a glued rare name. A sentence whose only rare pattern is a
    title also has its titled names (_titled_names), and none of its tagged names within them."""
    found: list[list[Name]] = [[] for _ in sentences]
    here: dict[int, list[tuple[int, int, str, str]]] = {}  # sentence -> (start, -length, name, type)
    covered: dict[int, list[tuple[int, int]]] = {}  # sentence -> the spans of its titled names
    for index in sorted(rare):
        first, end = ends[index - 1] + 1 if index else 0, ends[index]
        if rare[index] == _TITLED_ONLY:  # (most rare sentences in a story: 大圣, 长老, 菩萨)
            here[index], covered[index] = _titled_names(list(zip(starts[first:end], words[first:end], flags[first:end])))
            continue
        found[index] = _sentence_names(sentences[index], rare[index], (words[first:end], flags[first:end]))
    for index in compress(range(len(words)), map(_TAG_TYPES.__contains__, flags)):  # the words tagged as names
        sentence = bisect_left(ends, index)
        if sentence not in rare or sentence in covered:
            start, word = starts[index], words[index]
            if sentence in covered and any(start < e and s < start + len(word) for s, e in covered[sentence]):
                continue  # (part of a titled name)
            kind = _tag_kind(words, flags, index)
            if kind:
                here.setdefault(sentence, []).append((start, -len(word), word, kind))
    compounded = set(covered)  # the sentences with a compound or a titled name (the others' names are in order)
    for index, start, name, kind in _compounds(words, flags, starts):
        sentence = bisect_left(ends, index)
        if sentence not in rare or sentence in covered:
            here.setdefault(sentence, []).append((start, -len(name), name, kind))
            compounded.add(sentence)
    by_place = itemgetter(0, 1)
    for sentence, names in here.items():
        if not names:
            continue
        if len(names) == 1:
            found[sentence].append(names[0][2:])
            continue
        if sentence in compounded:
            names.sort(key=by_place)
        seen, result = set(), found[sentence]
        for _, _, name, kind in names:
            if name not in seen:
                seen.add(name)
                result.append((name, kind))
    return found


def _titled_names(spans: list[tuple[int, str, str]]) -> tuple[list[tuple[int, int, str, str]], list[tuple[int, int]]]:
    """_sentence_names' titled names of a sentence whose only rare pattern is a title, as
    _chunk_names keeps them ((start, -length, name, type)), and the spans they cover."""
    names, covered = [], []
    for start, name, kind in _titled(spans):
        end = start + len(name)
        if not any(start < e and s < end for s, e in covered):
            names.append((start, -len(name), name, kind))
            covered.append((start, end))
    return names, covered


def _add_long_forms(sentences: list[str], found: list[list[Name]], aliases: dict[str, str]) -> None:
    """Add to the names of each sentence that uses a short form (aliases: short -> long) its long form."""
    kinds = {n: k for names_there in found for n, k in names_there}  # (what an added long form repeats)
    pairs = sorted(aliases.items())
    for sentence, names_here in zip(sentences, found):
        present = {n for n, _ in names_here}
        names_here.extend((long, kinds.get(long, "concept")) for short, long in pairs
                          if short in sentence and short not in present and long not in present)


def _rare_patterns(sentences: list[str], text: str) -> dict[int, set[str]]:
    """The _RARE_PATTERNS each sentence has, by its index (none: not there), looked for once in
    text (the sentences joined by "\n"): a sentence runs only the finders whose pattern it has."""
    after = partial(bisect_right, list(accumulate((len(s) + 1 for s in sentences), initial=0)))
    letters = text.encode("ascii", "ignore")
    absent = {"dotted": not any(dot in text for dot in _DOTS), "latin": letters.lower() == letters.upper()}
    found: dict[int, set[str]] = {}
    for name, pattern in _RARE_PATTERNS.items():
        if absent.get(name):
            continue  # (a scan for one character beats a regex's over a character class)
        for index in set(map(after, map(_START, compiled(pattern).finditer(text)))):  # (the sentence's index + 1)
            found.setdefault(index - 1, set()).add(name)
    return found


Tags = tuple[tuple[str, ...], tuple[str, ...]]  # a sentence's words, and their part-of-speech flags


def _tags(sentence: str) -> Tags:
    """The words of a sentence and their flags: jieba's dictionary and part-of-speech tags, by
    rjieba (jieba in Rust: jieba.posseg's pure-Python HMM was most of a Chinese offline build)."""
    import rjieba

    tags = rjieba.tag(sentence)
    return tuple(zip(*tags)) if tags else ((), ())


def _spans(words: tuple[str, ...], flags: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """(start, word, flag) of each word."""
    return list(zip(accumulate(map(len, words), initial=0), words, flags))


def _chunk_tags(sentences: list[str], text: str) -> tuple[tuple[str, ...], tuple[str, ...], list[int], list[int]] | None:
    """The words and flags of text (the sentences joined by "\n") from one rjieba call, each
    word's start (and the text's end), and the index of the "\n" word after each sentence's
    words (the number of words after the last).
    jieba cuts a text into runs of CJK characters, letters and digits and tags each run alone,
    so a "\n" between stripped sentences is a word of its own and each sentence gets the words
    and flags it gets alone; should a word ever straddle a "\n": None (tag each alone)."""
    import rjieba

    tags = rjieba.tag(text)
    words, flags = tuple(map(itemgetter(0), tags)), tuple(map(itemgetter(1), tags))  # (zip(*tags): 2x dearer)
    starts = list(accumulate(map(len, words), initial=0))  # each word's start, and the text's end
    breaks = list(accumulate((len(s) + 1 for s in sentences[:-1]), initial=-1))[1:]  # the "\n"s between
    ends, end, find = [], -1, words.index
    try:
        for _ in breaks:  # (one C scan per sentence beats a comparison per word)
            end = find("\n", end + 1)
            ends.append(end)
    except ValueError:
        pass
    if list(map(starts.__getitem__, ends)) != breaks:  # a "\n" within a sentence, or a word across one
        index_at = dict(zip(starts, range(len(words))))
        ends = list(map(index_at.get, breaks))
        if None in ends or any(words[end] != "\n" for end in ends):
            return None
    ends.append(len(words))
    return words, flags, starts, ends


def _sentence_names(sentence: str, rare: frozenset[str] = _ALL_RARE, tags: Tags | None = None) -> list[Name]:
    """The names of one sentence; rare: the names of the _RARE_PATTERNS its text may match
    (the others are not looked for); tags: its _tags if known."""
    words, flags = _tags(sentence) if tags is None else tags
    kinds = list(map(_TAG_TYPES.get, flags))
    if not (rare or any(kinds)):
        return []  # no word tagged as a name (nor a compound's first word), no pattern that finds one
    titled = "titled" in rare and compiled(_ANY_TITLE).search(sentence)  # a word ends with a title only where one is
    spans = _spans(words, flags)
    names: list[tuple[int, str, str]] = []  # (position, name, type)
    covered: list[tuple[int, int]] = []
    if "title" in rare:
        for match in compiled(_TITLE).finditer(sentence):
            names.append((match.start(), match.group(1).strip(), "concept"))
            covered.append(match.span())
    if "quoted" in rare:
        for match in compiled(_QUOTED).finditer(sentence):
            names.append((match.start(), match.group(1), _type_by_suffix(match.group(1))))
            covered.append(match.span())
    if "dotted" in rare:
        for match in compiled(_DOTTED).finditer(sentence):
            a, b = _trim_dotted(match, spans)
            names.append((a, sentence[a:b], "person"))
            covered.append((a, b))
    inside = lambda a, b: any(s <= a and b <= e for s, e in covered)
    overlaps = lambda a, b: any(a < e and s < b for s, e in covered)
    for match in compiled(_LATIN).finditer(sentence) if "latin" in rare else ():
        name = match.group().rstrip(".-'")
        if not inside(*match.span()) and any(c.isupper() for c in name) and len(name) >= 2 \
                and name not in _NOT_LATIN_NAMES and name.split()[0].lower().rstrip(".") not in _MONTHS:
            names.append((match.start(), name, "concept"))
    for start, name in _named_phrases(sentence, spans) if "named" in rare else ():
        if not overlaps(start, start + len(name)):
            names.append((start, name, _named_type(name, spans)))
            covered.append((start, start + len(name)))
    for start, name, kind in _titled(spans) if titled else ():
        if not overlaps(start, start + len(name)):
            names.append((start, name, kind))
            covered.append((start, start + len(name)))
    subject = compiled(_SUBJECT).match(sentence) if "subject" in rare else None
    if subject:
        names.append((0, subject.group(1), _type_by_suffix(subject.group(1))))
    for index in compress(range(len(spans)), kinds):  # the words tagged as names
        start, word, _ = spans[index]
        if not overlaps(start, start + len(word)):
            kind = _tag_kind(words, flags, index)
            if kind:
                names.append((start, word, kind))
    names.extend(c[1:] for c in _compounds(words, flags, [s for s, _, _ in spans] + [len(sentence)]))
    seen, result = set(), []
    for _, name, kind in sorted(names, key=lambda n: (n[0], -len(n[1]))):
        if name not in seen:
            seen.add(name)
            result.append((name, kind))
    return result


def _tag_kind(words: tuple[str, ...], flags: tuple[str, ...], index: int) -> str | None:
    """The type of the word at index, tagged as a name; None when it is no name (too short,
    generic, a fragment the tagger made up, a verb glued to an address word, a rare name glued
    into a run of names)."""
    kind, glued = _word_kind(words[index], flags[index])
    return None if glued and _glued_rare_name(words, flags, index) else kind


@lru_cache(maxsize=1 << 16)
def _word_kind(word: str, flag: str) -> tuple[str | None, bool]:
    """_tag_kind of a word tagged as a name by what it is alone, and whether _glued_rare_name
    must still look at its neighbours."""
    if len(word) < 2 or word in _GENERIC or _guessed_fragment(word, flag) or _glued_address(word, flag):
        return None, False
    kind = _TAG_TYPES[flag]
    if kind == "concept" or (kind == "person" and len(word) >= 3 and _type_by_suffix(word) == "location"):
        kind = _type_by_suffix(word)  # 花果山 is a mountain whatever the tagger guessed
    return kind, flag.startswith("nr") and word in _rare_names()


def _named_phrases(sentence: str, spans: list[tuple[int, str, str]]) -> list[tuple[int, str]]:
    """(start, name) of what a naming phrase names: "称名须菩提祖师", "叫做‘孙悟空’", "唤名烂桃山".
    The name runs from the phrase to the first punctuation or function word (孙悟空 of
    叫做孙悟空也), and starts where the tagger starts a word; a pronoun (唤做甚么) is none."""
    matches = list(compiled(_NAMED).finditer(sentence))
    if not matches:
        return []
    starts = {start: index for index, (start, _, _) in enumerate(spans)}
    found = []
    for match in matches:
        index = starts.get(match.end())
        if index is None:
            continue
        words = []
        for _, word, flag in spans[index:]:
            if flag in _NOT_IN_NAMED or not compiled(_ALL_CJK).fullmatch(word) or word in CHINESE_FUNCTION_WORDS:
                break
            if flag in _NOT_NAMED or not (flag[:2] in ("nr", "ns", "nz") or _known(word) or len(word) == 1):
                words = []  # a saying (叫做将计就计), a verb, or a word the tagger made up: no name
                break
            words.append(word)
        name = "".join(words)
        if _NAMED_LENGTH[0] <= len(name) <= _NAMED_LENGTH[1]:
            found.append((match.end(), name))
    return found


def _named_type(name: str, spans: list[tuple[int, str, str]]) -> str:
    """A named place or body by its last word (灵台方寸山); else a person when titled or tagged one."""
    kind = _type_by_suffix(name)
    if kind != "concept":
        return kind
    if name.endswith(_TITLES) or any(w in name and f.startswith("nr") for _, w, f in spans):
        return "person"
    return "concept"


def _titled(spans: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """A name and the title after it (菩提 + 祖师, 镇 + 元大仙, 观音菩萨): a person; a title alone
    (祖师道) too, for tgr.build.resolve to join to its bearer. The name before the title is at
    least two characters of nouns or names (not 大法师's 大), at most _TITLE_STEM."""
    found = []
    for index, (start, word, _) in enumerate(spans):
        if word[-1] not in _TITLE_LAST:
            continue  # (most words)
        title = next((word[-n:] for n in _TITLE_LENGTHS if word[-n:] in CHINESE_TITLES), None)  # the longest
        if title is None:
            continue
        first = index
        while len(word) - len(title) < 2 and first > 0 and _title_stem(*spans[first - 1][1:]) \
                and len(word) - len(title) + start - spans[first - 1][0] <= _TITLE_STEM \
                and (first == index or spans[first - 1][2][:2] in ("nr", "ns", "nz")):
            first -= 1  # 齐天大圣 needs no name before it (全仗齐天大圣); one common noun at most (利用地方长老)
        begin = spans[first][0]
        name = "".join(w for _, w, _ in spans[first:index + 1])
        if len(name) - len(title) >= 2:
            found.append((begin, name, "person"))
        elif word == title:
            found.append((start, word, "person"))
    return found


def _title_stem(word: str, flag: str) -> bool:
    """A word that may stand before a title as (part of) its bearer's name: a noun or name
    of the dictionary (菩提, 泾河), not one the tagger guessed from a run of characters (即命道人)."""
    return flag in _TITLE_STEM_FLAGS and compiled(_ALL_CJK).fullmatch(word) is not None \
        and word not in CHINESE_FUNCTION_WORDS and (len(word) == 1 or _known(word) and word not in _everyday_words())


def _glued_address(word: str, flag: str) -> bool:
    """劳师父 of 有劳师父, 望大圣 of 望大圣方便, 大圣笑 of 大圣笑道: a verb (or adverb, pronoun ...)
    the tagger glued to an address word or a title and called a person. 唐长老 (唐 a name) stays one."""
    if not flag.startswith("nr") or len(word) != 3:
        return False
    if word[1:] in _ADDRESS_WORDS | CHINESE_TITLES:
        return _lone_flag(word[0]).startswith(_VERB_LIKE)
    return word[:2] in CHINESE_TITLES and word[2] in _AFTER_SPEAKER  # not 罗汉松


@lru_cache(maxsize=4096)
def _lone_flag(character: str) -> str:
    """The part-of-speech tag of one character standing alone (劳 of 劳师父, 见 of 唐僧见)."""
    import rjieba

    return rjieba.tag(character)[0][1]


def _trim_dotted(match: re.Match, spans: list[tuple[int, str, str]]) -> tuple[int, int]:
    """"马克·拉瓦卢马纳纳总统宣布" -> 马克·拉瓦卢马纳纳: the name ends before an ordinary word."""
    a, b = match.span()
    text = match.group()
    first_dot = a + min(text.find(d) for d in "·・•‧" if d in text)
    last_dot = a + max(text.rfind(d) for d in "·・•‧")
    for start, word, flag in spans:
        end = start + len(word)
        if a <= start and end <= first_dot - 1 and _ordinary(word, flag):
            a = end  # "总统安德里·…": the title is not part of the name
        if last_dot + 1 < start < b and _ordinary(word, flag):
            # "拉莫特出生": the tagger's 特出 straddles the name's end and 出生
            b = start + 1 if _in_dictionary(match.string[start + 1:start + 3]) and start + 1 < b else start
            break
    for position in range(last_dot + 2, b):
        if match.string[position] in _FUNCTION_CHARS:
            return a, position
    return a, b


def _known(word: str) -> bool:
    """jieba's dictionary has the word."""
    import rjieba

    return rjieba.has_word(word)


def _in_dictionary(word: str) -> bool:
    import rjieba

    return len(word) == 2 and rjieba.has_word(word)


def _guessed_fragment(word: str, flag: str) -> bool:
    """A two-character place the tagger made up from unknown text (再拜山拜 -> 山拜): jieba's
    dictionary does not know it."""
    import rjieba

    return len(word) == 2 and flag == "ns" and not rjieba.has_word(word)


_CONTENT_FLAGS = frozenset("v vg n ng a ag zg q".split())  # a lone character that is no particle


def _glued_rare_name(words: tuple[str, ...], flags: tuple[str, ...], index: int) -> bool:
    """A person name jieba's dictionary barely knows, glued on both sides: after another name
    and before a lone character or a word the dictionary lacks (东胜 + 神洲傲 + 来国 in
    东胜神洲傲来国: the tagger's hidden Markov model joins the leftover characters). That
    is a wrong cut through a run of names, not a third name between two."""
    word, flag = words[index], flags[index]
    if not flag.startswith("nr") or word not in _rare_names():
        return False  # a name the tagger guessed (not in the dictionary) is judged elsewhere
    if index == 0 or index + 1 == len(words):
        return False
    before, before_flag = words[index - 1], flags[index - 1]
    after, after_flag = words[index + 1], flags[index + 1]
    if len(before) < 2 or before_flag not in _COMPOUND_START:
        return False
    import rjieba

    if len(after) == 1:
        return after_flag in _CONTENT_FLAGS
    return compiled(_ALL_CJK).fullmatch(after) is not None and not rjieba.has_word(after)
    # 来 or 来国 of 傲来国; not 完颜洪烈用计, 杜氏的


def _ordinary(word: str, flag: str) -> bool:
    return word in _FUNCTION_CHARS or (len(word) >= 2 and flag not in _NAME_FLAGS)


def _compounds(words: tuple[str, ...], flags: tuple[str, ...], starts: list[int]) -> list[tuple[int, int, str, str]]:
    """(index of the last word, start, compound, type) of each name and nouns headed by an
    institution or place noun: 台湾电视公司, 北京国家体育馆. starts: each word's start.

    Leftmost-longest and not overlapping; the last word must be a common noun (the head),
    so two place names in a row (中华人民共和国北京市) are no compound, and the first may
    not be an organization itself (上市公司 + 北京首钢股份有限公司).
    """
    found, after, count = [], 0, len(words)  # (a compound's words start no other)
    for i in compress(range(count), map(_COMPOUND_START.__contains__, flags)):
        if i < after or i + 1 == count or flags[i + 1] not in _COMPOUND_PART:
            continue  # (most names: no noun after them)
        word = words[i]
        if len(word) < 2 or _type_by_suffix(word) == "organization":
            continue
        best, text = None, word
        for k in range(i + 1, min(count, i + 6)):
            nflag = flags[k]
            if nflag not in _COMPOUND_PART:
                break
            text += words[k]
            if len(text) > 14:
                break
            if nflag in _HEADS:
                kind = _type_by_suffix(text)
                if kind != "concept":
                    best = (k, starts[i], text, kind)
            if nflag == "l":
                break  # an idiom-like word only ends a compound (淡江大学)
        if best and len(best[2]) >= 4:
            found.append(best)
            after = best[0] + 1
    return found


def _type_by_suffix(name: str) -> str:
    """organization / location / concept by the name's last word (大学, 市 ...)."""
    if not name.endswith(_PLACE_ENDS):
        return "concept"  # (most names: one C call)
    if name.endswith(("线路", "道路", "公路网")):
        return "concept"  # 巴士线路: a route, not a road of that name
    if name.endswith(_ORGANIZATION_ENDS):
        return "organization"
    if name.endswith(_LOCATION_ENDS):
        return "location"
    return "concept"


def _explicit_aliases(sentences: list[str], found: list[list[Name]]) -> dict[str, str]:
    """X，简称Y / X（又称Y）: Y is another name of the name that ends right before."""
    aliases = {}
    for sentence, names in zip(sentences, found):
        for match in compiled(_ALIAS).finditer(sentence):
            before = sentence[:match.start()]
            long = max((n for n, _ in names if before.endswith(n)), key=len, default=None)
            short = match.group(1)
            if long and short != long:
                aliases[short] = long
    return aliases
