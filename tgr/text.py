"""Language-neutral text helpers: token estimates, sentence splitting, search terms.

tgr counts "tokens" without a tokenizer download: a CJK character counts as one token,
and other text as one token per four characters (the usual BPE average for English).
"""
from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from itertools import chain
from operator import methodcaller

# the code points counted as CJK: Han (extension A, unified, compatibility), kana, Hangul
_CJK_CODES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x3040, 0x30FF), (0xAC00, 0xD7AF))
_CJK = "".join(f"\\u{low:04x}-\\u{high:04x}" for low, high in _CJK_CODES)
CJK_RANGES = _CJK  # for character classes elsewhere
CJK_CODE_RANGES = _CJK_CODES
_NOT_BELOW_CJK = r"[^\x00-\u303f]"  # a character from U+3040, where the lowest range above starts


@lru_cache(maxsize=None)
def compiled(pattern: str) -> re.Pattern:
    """re.compile(pattern), once per process, when first needed: compiling a CJK class walks
    every character of its ranges (milliseconds), which a cold `tgr ask` should not pay."""
    return re.compile(pattern)


class _CjkPattern:
    """A regex with a CJK character class, compiled when first needed.

    re takes milliseconds to compile such a class (it walks every code point of the ranges),
    which a cold `tgr ask` would pay on every run, while text with no character from U+3040
    up (any English text) never needs it: there the `plain` pattern finds the same matches
    (None: no match at all)."""

    def __init__(self, pattern: str, plain: str | None = None):
        self.pattern = pattern
        self.plain = re.compile(plain) if plain is not None else None

    def _for(self, text: str) -> re.Pattern | None:
        if text.isascii() or compiled(_NOT_BELOW_CJK).search(text) is None:
            return self.plain
        return compiled(self.pattern)

    def search(self, text: str) -> re.Match | None:
        pattern = self._for(text)
        return pattern.search(text) if pattern else None

    def match(self, text: str) -> re.Match | None:
        pattern = self._for(text)
        return pattern.match(text) if pattern else None

    def findall(self, text: str) -> list:
        pattern = self._for(text)
        return pattern.findall(text) if pattern else []

    @property
    def full(self) -> re.Pattern:
        """The whole pattern, compiled once per process: for a loop over text known to need it."""
        return compiled(self.pattern)

    def __getattr__(self, name: str):  # any other method (finditer, sub, ...): the full pattern
        return getattr(compiled(self.pattern), name)


_CJK_RE = _CjkPattern(f"[{_CJK}]")
CJK_RUN = _CjkPattern(f"[{_CJK}]+")
CJK_OR_NUL = _CjkPattern(f"[{_CJK}\0]+")  # (a class to find, not one to skip: re scans for it fast)
# a run of end marks and closing quotes/brackets (group 1), then space (group 2), or a blank
# line; the lookahead lets re skip to the next candidate character instead of trying both
# branches at every position
_SENTENCE_END = re.compile(r"(?=[.!?;。！？；…．\n])(?:([.!?;。！？；…．]+[\"'”’」』)\]）]*)(\s*)|\n\s*\n)")
_CJK_MARKS = frozenset("。！？；…．")
_END = methodcaller("end")
# a full stop after these never ends a sentence ("Mr. Scrooge", "St. Louis", "e.g. a cat")
_TITLES = frozenset("mr mrs ms messrs dr prof rev fr st mt ft capt col gen lt sgt cpl maj adm "
                    "gov sen rep hon pres supt insp e.g i.e cf viz vs".split())
# after these it ends one only when a usual sentence opener follows ("Acme Inc. sold")
_ABBREVIATIONS = frozenset("jr sr etc al approx inc ltd corp bros dept univ assn ave blvd a.m p.m".split())
# and after these only when no number follows ("No. 5", "Jan. 1848", "pp. 3-9")
_BEFORE_NUMBERS = frozenset("no nos vol vols fig figs pp ch sec op jan feb mar apr jun jul aug sep "
                            "sept oct nov dec".split())
_DOTTED = re.compile(r"[^\W\d_]{1,3}(?:\.[^\W\d_]{1,3})+")  # U.S, e.g, Ph.D
_NEXT_WORD = re.compile(r"[\"'“‘(\[]*(\w+)")
# every bigram of each CJK run, in order, and a one-character run whole: one C-level pass
_RUN_BIGRAMS = f"(?=([{_CJK}]{{2}}|(?<![{_CJK}])[{_CJK}](?![{_CJK}])))"
_INDEX_WORD = _CjkPattern(f"[^\\W_{_CJK}]+", plain=r"[^\W_]+")  # words of any script but CJK
_WORD_RE = re.compile(r"[A-Za-z0-9\u00C0-\u024F]+(?:['’][A-Za-z]+)?")

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he
    her hers him his how i if in into is it its me my no not of on or our she so than that
    the their them then there these they this those to was we were what when where which
    who whom why will with would you your about all also any because before after upon
    very more most much many one two such only own same other some up down out over under
    again further once here said say says tell told shall should may might must""".split()
)

_OPENERS = STOPWORDS | frozenset("in on at after before during although while since however "
                                 "there it this these they he she we i".split())


def jieba():
    """The jieba module, imported on first use (its dictionary takes a second to load)."""
    import logging

    import jieba as module

    module.setLogLevel(logging.WARNING)
    return module


def content_hash(*parts: str, length: int = 16) -> str:
    """Stable short hex id for a piece of content."""
    import hashlib  # here: loading OpenSSL costs a cold `tgr ask` (which hashes nothing) ~4 ms

    # each part followed by a unit separator, hashed in one call (a merge hashes ~150,000 parts)
    if len(parts) == 1 and len(parts[0]) > _HASH_SLICE:  # a whole big document: no copy of it
        hasher = hashlib.sha256()
        for start in range(0, len(parts[0]), _HASH_SLICE):
            hasher.update(parts[0][start:start + _HASH_SLICE].encode("utf-8"))
        hasher.update(b"\x1f")
        return hasher.hexdigest()[:length]
    joined = "\x1f".join(parts) + "\x1f" if parts else ""
    return hashlib.sha256(joined.encode("utf-8")).hexdigest()[:length]


_HASH_SLICE = 1 << 20  # characters of a big text encoded at a time


def has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


def estimate_tokens(text: str) -> int:
    """Rough token count that works for Chinese and English alike."""
    cjk = sum(map(len, CJK_RUN.findall(text)))  # runs, not characters: a few list items per sentence
    other = len(text) - cjk
    return cjk + (other + 3) // 4


def tokens_of(length: int, cjk: int) -> int:
    """estimate_tokens of a text of this many characters, cjk of them CJK."""
    return cjk + (length - cjk + 3) // 4


def cjk_counts(text: str, starts: list[int]) -> list[int]:
    """How many CJK characters (as estimate_tokens counts them) each consecutive span of text
    holds, the spans starting at the given increasing offsets (each runs to the next start,
    the last to the end of the text): the lengths of its CJK runs, and nothing to count in a
    span with no character from U+3040. (Not numpy: importing it starts a BLAS thread, which
    may then take a Ctrl-C meant for the main thread while that one waits.)"""
    if not starts or CJK_RUN._for(text) is None:  # (no character from U+3040)
        return [0] * len(starts)
    if len(starts) == 1:  # (a report's context row: no spans to join)
        return [len("".join(CJK_RUN.full.findall(text, starts[0])))]
    ends = list(starts[1:]) + [len(text)]
    if "\0" in text:  # (the separator below)
        return [sum(map(len, CJK_RUN.findall(text[a:b]))) for a, b in zip(starts, ends)]
    # a findall per batch of spans, not per span: the spans joined by NULs, only their CJK characters
    # kept (batches: the runs of a whole book at once would be a list of ~17 bytes per character)
    counts, batch = [], 1024
    for i in range(0, len(starts), batch):
        spans = "\0".join(map(text.__getitem__, map(slice, starts[i:i + batch], ends[i:i + batch])))
        counts += map(len, "".join(CJK_OR_NUL.full.findall(spans)).split("\0"))
    return counts


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) covering the text, for English and Chinese.

    A Latin full stop ends a sentence only before a space or the end of the text ("3.5",
    "U.S.A" and "example.com" stay whole), and not after an abbreviation or an initial that
    the next word continues ("Mr. Scrooge", "G. Stanley Hall", "e.g. a cat", "U.S. Army").
    """
    if not any(mark in text for mark in ".!?;"):  # (Chinese text: each match ends a sentence, none empty)
        ends = list(map(_END, _SENTENCE_END.finditer(text)))
        if len(text) > (ends[-1] if ends else 0):
            ends.append(len(text))
        return list(zip([0, *ends], ends))
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if not _ends_sentence(text, match):
            continue
        if end > start:
            spans.append((start, end))
            start = end
    if start < len(text):
        spans.append((start, len(text)))
    return spans


@lru_cache(maxsize=1024)
def chunk_sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """split_sentences of a chunk, remembered for the last chunks split: offline extraction
    and the offline reports read the same chunks."""
    return tuple(split_sentences(text))


def _ends_sentence(text: str, match: re.Match) -> bool:
    marks, space = match.group(1, 2)
    if marks is None or not _CJK_MARKS.isdisjoint(marks):
        return True  # a blank line, or Chinese punctuation
    if not space and match.end() < len(text):
        return False  # no space after it: "3.5", "U.S.A", "example.com", "（U.S.）读"
    if marks != ".":
        return True
    end = match.end()
    token = _token_before(text, match.start())
    if not token or "\n\n" in match.group():
        return True
    word = token.lower()
    if word in _TITLES:
        return False
    following = _NEXT_WORD.match(text, end)
    if following is None:
        return True
    nxt = following.group(1)
    if word in _BEFORE_NUMBERS:
        return not nxt[0].isdigit()
    initial = len(token) == 1 and token.isalpha() and token.isupper() and token != "I"
    if not (initial or word in _ABBREVIATIONS or _DOTTED.fullmatch(token)):
        return True
    if nxt[0].islower() or nxt[0].isdigit():
        return False  # "etc. and", "U.S. dollars", "G. 1844"
    return nxt.lower() in _OPENERS  # "in the U.S. The next year" ends; "U.S. Army" does not


def _token_before(text: str, end: int) -> str:
    """The word (with inner dots: "U.S") that ends at end, not counting CJK characters."""
    start = end
    while start > 0 and end - start < 40:
        char = text[start - 1]
        if not (char == "." or char.isalnum()) or not char.isascii() and _CJK_RE.match(char):
            break
        start -= 1
    return text[start:end]


def without_accents(text: str) -> str:
    """The text with its accents and other combining marks removed ("Napoléon" -> "Napoleon";
    letters with no decomposition, "ø", stay as they are)."""
    text = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFC", "".join(ch for ch in text if not unicodedata.combining(ch)))


def normalise_name(name: str) -> str:
    """The merge key of an entity name: NFKC, case-folded, quotes and spaces tidied."""
    if not name.isascii():  # NFKC leaves ASCII as it is
        name = unicodedata.normalize("NFKC", name)
    name = name.strip().strip("\"'“”‘’「」『』《》()[]").strip()
    name = _SPACES.sub(" ", name)
    return name.casefold()


_SPACES = re.compile(r"\s+")


_DOTS = str.maketrans({"・": "·", "•": "·", "‧": "·", "･": "·"})
_POSSESSIVE = re.compile(r"['’]s?$")
# titles that do not tell two people of one family apart (a man's, an office's)
_KEY_TITLES = frozenset("mr mr. mister master sir dr dr. doctor captain capt capt. professor prof prof. "
                    "president senator governor colonel col. lieutenant judge mayor".split())
NAME_CONNECTORS = frozenset("of the and de van von la le du der den da di del dos das al bin ibn & und y".split())
_COUNTRY_SHORT = {"us": "united states", "usa": "united states", "u.s": "united states",
                  "u.s.a": "united states", "united states of america": "united states",
                  "the united states": "united states", "uk": "united kingdom", "u.k": "united kingdom",
                  "great britain": "united kingdom", "ussr": "soviet union", "u.s.s.r": "soviet union",
                  "prc": "china", "people's republic of china": "china", "uae": "united arab emirates",
                  "美利坚合众国": "美国", "中华人民共和国": "中国"}
_NOT_AFTER_TITLE = frozenset({"america", "britain", "england", "marvel", "planet"})  # "Captain America"


@lru_cache(maxsize=1 << 16)
def name_key(name: str, titles: bool = True) -> str:
    """The key of a name by itself (step 1 of tgr/build/resolve.py's docstring); titles=False keeps a
    leading title ("master peter"). Remembered: every merge keys every row's name again."""
    key = normalise_name(name.translate(_DOTS))
    if not key:
        return key
    key = _POSSESSIVE.sub("", key) if " " in key or key.endswith(("'s", "’s")) else key
    short = _COUNTRY_SHORT.get(key.rstrip("."))
    if short:
        return short
    words = key.split()
    while len(words) > 1 and words[0] in ("the",):
        words = words[1:]
    while titles and len(words) > 1 and words[0] in _KEY_TITLES and words[1] not in NAME_CONNECTORS \
            and " ".join(words[1:]) not in _NOT_AFTER_TITLE:
        words = words[1:]
    if len(words) == 2 and words[0] == words[1]:
        words = words[:1]  # "Scrooge Scrooge"
    key = " ".join(words)
    return _COUNTRY_SHORT.get(key.rstrip("."), key)


def search_terms(text: str) -> list[str]:
    """Terms for full-text search and lexical scoring: jieba words for CJK (rjieba: jieba's
    dictionary and algorithm in Rust), words otherwise."""
    terms: list[str] = []
    if has_cjk(text):
        import rjieba

        # each word's terms looked up, not worked out again: Chinese text repeats its words
        return list(chain.from_iterable(map(jieba_word_terms, rjieba.cut_for_search(text))))
    for word in _WORD_RE.findall(text):
        word = word.lower()
        if word not in STOPWORDS:
            terms.append(word)
    return terms


@lru_cache(maxsize=16384)
def jieba_word_terms(word: str) -> tuple[str, ...]:
    """The search terms of one word of rjieba's cut: the word lower-cased, or none (a stopword,
    a space), or the Latin words in it (rjieba keeps "e.v" and "zh-hans" whole where jieba cut them)."""
    lowered = word.strip().lower()
    word = word if lowered == word else lowered  # (the cut's own string when it is the same: kept once)
    if not word or word in STOPWORDS:
        return ()
    if compiled(f"[{_CJK}]").search(word) or _WORD_RE.fullmatch(word):
        return (word,)
    return tuple(w for w in _WORD_RE.findall(word) if w not in STOPWORDS)


def index_terms(text: str) -> list[str]:
    """Terms of a chunk for the FTS5 index.

    Lower-cased words of any script ("hall's" gives "hall" and "s", so a possessive still
    matches its name); stopwords stay, as in plain BM25. Chinese runs give their character
    bigrams (they match any word of two or more characters with no segmentation) plus jieba's
    search-engine words (a real word of two characters counts twice: it outweighs a bigram that
    straddles two words; longer words become terms of their own); a
    question needs no jieba to match them (see query_terms).
    """
    terms = [w.lower() for w in _INDEX_WORD.findall(text)]
    runs = CJK_RUN.findall(text)
    if runs:
        terms += compiled(_RUN_BIGRAMS).findall(text)  # as each run's bigrams in turn (a lone character: itself)
        terms += _jieba_run_words(runs)
    return terms


def _jieba_run_words(runs: list[str]) -> list[str]:
    """jieba's search-engine words of CJK runs, of two characters or more. rjieba: jieba's
    dictionary and algorithm in Rust, the same words (2 of 112,089 runs of 西游记 differ) about
    15 times faster. One call for all runs: a line break separates them as the text between
    them did."""
    import rjieba

    return [w for w in rjieba.cut_for_search("\n".join(runs)) if len(w) > 1]


def index_text(text: str, waiting: bool = False) -> str:
    """A chunk's FTS5 row: index_terms joined by spaces, its Chinese runs' bigrams written in
    one numpy pass over the text (a string per bigram, only to be joined, was a sixth of a
    Chinese chunk's indexing). waiting: while model answers are awaited numpy is not imported
    here (its BLAS threads can take a Ctrl-C meant for the waiting main thread: see
    cjk_counts); the bigrams are then found by a regular expression, unless it is loaded."""
    runs = CJK_RUN.findall(text)
    if not runs:
        return " ".join(index_terms(text))
    terms = [w.lower() for w in _INDEX_WORD.findall(text)]
    terms.append(_run_bigrams_text(text, waiting))
    terms += _jieba_run_words(runs)
    return " ".join(terms)


def _run_bigrams_text(text: str, waiting: bool) -> str:
    """The matches of _RUN_BIGRAMS in text (each CJK run's bigrams in turn, a lone CJK
    character itself) joined by spaces; text has at least one CJK character."""
    if waiting and "numpy" not in sys.modules:
        return " ".join(compiled(_RUN_BIGRAMS).findall(text))
    import numpy as np

    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    cjk = cjk_table()[codes & 0xFFFF] & (codes <= 0xFFFF)  # (every CJK range is in the BMP)
    after = np.append(cjk[1:], False)  # the next character is CJK too
    before = np.insert(cjk[:-1], 0, False)
    starts = np.flatnonzero(cjk & (after | ~before))  # each bigram's first character, each lone one
    sizes = 1 + after[starts]
    ends = np.cumsum(sizes + 1)  # each term's end in the output, with the space after it
    out = np.full(int(ends[-1]) - 1, ord(" "), np.uint32)
    places = ends - sizes - 1
    out[places] = codes[starts]
    pairs = sizes == 2
    out[places[pairs] + 1] = codes[starts[pairs] + 1]
    return out.tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=None)
def cjk_table():
    """A numpy table of every BMP code point: is it CJK (the _CJK_CODES ranges)?"""
    import numpy as np

    table = np.zeros(0x10000, bool)
    for low, high in _CJK_CODES:
        table[low:high + 1] = True
    return table


def query_terms(text: str) -> list[str]:
    """Terms of a question for an FTS5 query (OR-ed): its words, the bigrams of its Chinese
    runs, and every 3-6 character substring of those runs. A substring that is no indexed
    word matches nothing and costs nothing, so the index itself acts as the dictionary and
    a question is segmented without loading jieba."""
    terms = [w.lower() for w in _INDEX_WORD.findall(text)]
    for run in CJK_RUN.findall(text):
        terms.extend(run[i:i + 2] for i in range(max(1, len(run) - 1)))
        terms.extend(run[i:i + n] for n in range(3, min(len(run), 6) + 1) for i in range(len(run) - n + 1))
    return list(dict.fromkeys(terms))


def match_terms(text: str) -> list[str]:
    """Terms for scoring how well a sentence or report matches a question, without jieba
    (a question must not pay for loading its dictionary): words that are not stopwords,
    and the bigrams of Chinese runs."""
    terms = [w.lower() for w in _INDEX_WORD.findall(text) if w.lower() not in STOPWORDS]
    for run in CJK_RUN.findall(text):
        terms.extend(run[i:i + 2] for i in range(max(1, len(run) - 1)))
    return terms


def term_set(text: str) -> set[str]:
    """match_terms' terms of a text as a set, with its stopwords too (for testing a question's
    terms, which hold none, against many texts): no Python step per word."""
    terms = set(map(str.lower, _INDEX_WORD.findall(text)))
    if CJK_RUN.search(text):
        terms.update(compiled(_RUN_BIGRAMS).findall(text))  # each run's bigrams (a lone character: itself)
    return terms


class ContextTable:
    """A '|'-separated table of a model's context, filled row by row under a token budget."""

    def __init__(self, title: str, header: str, budget: int):
        self.lines = [f"-----{title}-----", header]
        self.used = estimate_tokens("\n".join(self.lines))
        self.budget = budget
        self.rows = 0

    def add(self, row: str) -> bool:
        """Append a row if it fits; False (and nothing added) when it does not."""
        cost = estimate_tokens(row) + 1
        if self.used + cost > self.budget:
            return False
        self.lines.append(row)
        self.used += cost
        self.rows += 1
        return True

    def text(self) -> str:
        return "\n".join(self.lines) if self.rows else ""


def shorten(text: str, max_chars: int) -> str:
    """Cut text at a word boundary near max_chars, marking the cut."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    if space > max_chars * 0.6:
        cut = cut[:space]
    return cut + "…"


def fit_tokens(text: str, max_tokens: int) -> str:
    """Trim text so that estimate_tokens(text) <= max_tokens (roughly)."""
    if len(text) <= max_tokens or estimate_tokens(text) <= max_tokens:  # (never more tokens than characters)
        return text
    ratio = max_tokens / max(1, estimate_tokens(text))
    return shorten(text, max(1, int(len(text) * ratio) - 1))
