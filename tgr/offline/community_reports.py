"""Offline community profiles: who holds a community together, what distinguishes it, where it is said.

A profile is computed from the stored graph and text, with no model:
- central members: personalised PageRank inside the community's own subgraph (edge weights as
  they are, the jump back weighted by each member's mention count), so the hub the others hang
  on comes first, not the member whose name sorts first;
- key phrases: class-based TF-IDF (c-TF-IDF, as BERTopic's topic words) of the words and
  two-word phrases of the sentences naming its members, against their frequency in all the
  text it is read from (every sentence of the chunks that mention a member);
  W(t, c) = tf(t, c) * log(1 + A / f(t)), A the average words per chunk there, a frequency
  counting the sentences that hold the term (one sentence repeating a word six times is one).
  The background is the community's own text, not the whole store's, so that a report changes
  only when its community's text does (an unrelated document leaves every report as it was);
- representative sentences: sentences of its chunks that carry most of its key phrases and
  name its central members (deterministic: ties go to the earlier chunk and sentence);
- importance: how far the community reaches (chunks and documents that mention it, its size)
  on fixed log scales; a one-sentence list of names ranks low.
profile_report() turns a profile into the report row (title, summary, findings, rating) of the
offline writer. Findings carry two extra keys the offline global answer reads back:
"key_phrases" (a list) and "chunk_id" (a representative sentence's chunk).
"""
from __future__ import annotations

import json
import math
import pickle
import re
import sys
import tempfile
from array import array
from collections import Counter, OrderedDict
from itertools import chain
from operator import attrgetter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from .name_words import CHINESE_FUNCTION_WORDS
from .providers import OFFLINE_WRITER
from .pagerank import personalized_pagerank
from ..store.db import in_pages
from ..text import CJK_OR_NUL, CJK_RUN, STOPWORDS, chunk_sentence_spans, has_cjk, shorten

MAX_CLASS_CHUNKS = 200   # chunks read per community (those naming most of its members first)
KEY_PHRASES = 8          # key phrases kept per community
SENTENCES = 3            # representative sentences kept per community
CANDIDATES = 60          # a community's most frequent terms, scored as key phrases
CHUNK_SCALE, DOCUMENT_SCALE, SIZE_SCALE = 500, 50, 200  # a community this wide rates 10
ANALYSED_IN_MEMORY = 2000  # analysed chunks a writer keeps in memory (~45 KB each; the others: on disk).
# At 30 M English characters 6,000 held 105 MB more at the peak than 2,000, which cost 9 % more
# report-stage CPU (bench/stage_rss.py; issue 41)
DAMPING = 0.85
REPEATED_DOCUMENTS = 3   # a store of this many documents or more can tell what they all repeat
_LATIN_WORD = re.compile(r"[A-Za-z\u00C0-\u024F][A-Za-z0-9\u00C0-\u024F]*(?:['’][A-Za-z]+)?")
_BREAK = re.compile(r"[.,;:!?()\[\]\"“”—–\n]|--|['‘’](?=\s|$)|(?<=\s)['‘’]")  # no two-word phrase spans these
_LATIN_LETTER = re.compile(r"[A-Za-z\u00C0-\u024F]")  # where a _LATIN_WORD can start
_TOKEN = re.compile(f"{_LATIN_WORD.pattern}|{_BREAK.pattern}")  # a break is no content word either (_content_word)
# words of prose too common to say what a community is about (beyond tgr.text.STOPWORDS)
_GENERIC = frozenset("""now like well just even still yet never ever always upon little great good
    old new first last long much make made come came go went get got know knew see saw seen
    think thought thing things way time times man men day days back away though without
    nothing something anything every each whole might let take took give gave put yes oh
    another ought quite rather almost enough far round look looked looking left right through
    across among towards toward within whose cried replied returned asked answered exclaimed
    sir mr mrs miss himself herself itself themselves myself yourself ourselves
    while whilst known unknown supposed suppose seemed seem seems seeming certain several same
    others nothing everything somebody someone anyone everyone nobody none whether either
    neither both less least few lot lots part kind sort very really here everywhere anywhere
    somewhere nowhere often sometimes twice already soon later till until ago being having
    doing done became become becomes began begin begun keep kept felt feel found find stood
    sat lay heard hear held hold turned turn called call goes going gone upon unto thus
    therefore however indeed perhaps whose whom shall should would could might must can
    three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred
    thousand second third fourth fifth sixth tenth half dozen yes yeah okay right sure
    actually basically maybe probably mean means meant lot""".split())
# what a chunk repeats because of its form, not its topic: a speaker's label at a line's start
# ("HOST:", "Maria Lopez:"), a heading line ("# Episode 12", "CHAPTER IV"), a file's name
_FORM_LINES = re.compile(r"(?m)^[ \t]*(?:#+[^\n]*$|[A-Z][\w.'’ -]{0,40}:(?=\s)|[A-Z0-9][A-Z0-9 .,'’-]{2,}$)")
_FILE_EXTENSION = re.compile(r"\.(?:txt|md|pdf|docx?|html?|jsonl?|csv|srt|vtt)\b")
_FORM = re.compile(_FORM_LINES.pattern + r"|\b[\w.-]+" + _FILE_EXTENSION.pattern)
_FORM_CHARS = re.compile(r"[#A-Za-z0-9]")  # a text without any of these holds no _FORM


@dataclass
class Profile:
    """What the offline report of one community says, before it is written out."""
    members: list[dict]                  # entities, most central first (with "centrality")
    key_phrases: list[str]
    sentences: list[tuple[str, str]]     # (sentence, chunk id)
    chunks: int                          # chunks that mention a member
    documents: int                       # documents that mention a member
    edge_weight: float
    rating: float
    relationships: list[dict] = field(default_factory=list)


# --- terms ---------------------------------------------------------------------------

def phrase_terms(text: str, cjk: bool | None = None) -> list[str]:
    """Candidate key phrases of a text: content words (Latin: three letters or more, not
    stopwords; Chinese: words of two characters or more) and adjacent pairs of Latin content
    words within a clause ("counting house"). cjk: whether the text has CJK characters (None: look)."""
    terms = chinese_words([text])[0] if (has_cjk(text) if cjk is None else cjk) else []
    return latin_terms(text, terms)


def chinese_words(texts: list[str], unique: bool = False) -> list[list[str]]:
    """The Chinese words (two characters or more, not function words) of each text's CJK runs,
    from one cut of them all: jieba cuts each run of Han characters on its own, so runs cut
    together, kept apart by a character it returns as a word of its own, are cut as they are
    alone. unique: each word once per text (in the order first said)."""
    return [list(dict.fromkeys(words)) if unique else words for words in _cut_apart(texts)]


def _cut_apart(texts: list[str]) -> list[list[str]]:
    """Each text's kept Chinese words (see chinese_words), from one cut of all their CJK runs:
    the runs of a text joined by "\n", the texts by "\0"."""
    import rjieba

    joined = "\0".join(texts)
    if joined.count("\0") == len(texts) - 1:  # (else a text holds a NUL: find its runs one by one)
        # every stretch between CJK runs becomes one "\n", and none is left at a text's ends
        runs = "\n".join(CJK_OR_NUL.full.findall(joined)).replace("\n\0", "\0").replace("\0\n", "\0")
    else:
        runs = "\0".join("\n".join(CJK_RUN.full.findall(text)) for text in texts)
    function_words = CHINESE_FUNCTION_WORDS
    kept = [w for w in rjieba.cut(runs) if len(w) > 1 and w not in function_words or w == "\0"]
    words, start = [], 0
    for _ in range(len(texts) - 1):
        end = kept.index("\0", start)
        words.append(kept[start:end])
        start = end + 1
    words.append(kept[start:])
    return words


def latin_terms(text: str, terms: list[str]) -> list[str]:
    """terms, then the Latin content words and two-word phrases of text (see phrase_terms)."""
    if not _LATIN_LETTER.search(text):
        return terms  # no Latin word can start anywhere (most Chinese sentences)
    previous = None
    append = terms.append
    for word in map(_CONTENT_WORDS.__getitem__, _TOKEN.findall(text)):
        if word is None:  # a clause break (one or two characters: no content word), a stopword
            previous = None  # no phrase spans either
            continue
        append(word)
        if previous:
            append(f"{previous} {word}")
        previous = word
    return terms


class _ContentWords(dict):
    """token -> _content_word(token), remembered (a dict's lookup from map: a quarter of
    latin_terms' time went to calling the lru_cache)."""

    def __missing__(self, token: str) -> str | None:
        if len(self) >= 65536:
            self.clear()
        word = self[token] = _content_word(token)
        return word


_CONTENT_WORDS = _ContentWords()


@lru_cache(maxsize=65536)
def _content_word(word: str) -> str | None:
    """The lower-cased content word, or None for a stopword, a short word or a contraction."""
    word = word.lower()
    if word.endswith(("'s", "’s")):
        word = word[:-2]  # a possessive is its word; any other contraction is no phrase
    elif "'" in word or "’" in word:
        return None
    if len(word) < 3 or word in STOPWORDS or word in _GENERIC:
        return None
    return word


class Background:
    """How often terms occur in the text a community is read from: every sentence of the
    chunks that mention its members (a sentence counts a term once), and the average words
    per chunk there. Local to the community, so a document that mentions none of its members
    changes nothing in its report."""

    def __init__(self, chunks: list["ChunkText"], terms):
        """Counted for the given terms only (a large community's text has many more)."""
        self.frequency = dict.fromkeys(terms, 0)
        for chunk in chunks:  # a chunk holds few of the terms: look up only those (a C-level intersection)
            where = chunk.where
            for term in where.keys() & self.frequency.keys():
                self.frequency[term] += where[term].bit_count()  # the sentences that say it
        self.average_words = max(1.0, sum(c.words for c in chunks) / max(1, len(chunks)))

    def weight(self, term: str, class_count: int) -> float:
        """c-TF-IDF of a term counted class_count times in the sentences naming the members."""
        seen = max(class_count, self.frequency.get(term, 0))
        return class_count * math.log(1 + self.average_words / seen)

    def weights(self, counted: list[tuple[str, int]]) -> list[float]:
        """weight() of each (term, class_count)."""
        frequency, average, log = self.frequency, self.average_words, math.log
        return [n * log(1 + average / max(n, frequency.get(t, 0))) for t, n in counted]


# --- the parts of a profile ------------------------------------------------------------

def central_members(entities: list[dict], edges: list[dict]) -> list[dict]:
    """The community's entities ranked by PageRank inside its subgraph, jumping back to each
    member in proportion to its mentions; ties by mentions, then name."""
    index = {e["id"]: n for n, e in enumerate(entities)}
    pairs = [(index[e["source"]], index[e["target"]]) for e in edges
             if e["source"] in index and e["target"] in index]
    weights = [float(e["weight"]) for e in edges if e["source"] in index and e["target"] in index]
    reset = [1.0 + max(0, int(e.get("mentions") or 0)) for e in entities]
    if pairs:
        ranks = personalized_pagerank(len(entities), pairs, weights, reset, DAMPING, iterations=20,
                                      numpy=len(pairs) > 500)
    else:
        total = sum(reset)
        ranks = [r / total for r in reset]
    ranked = [dict(e, centrality=round(float(r), 6)) for e, r in zip(entities, ranks)]
    ranked.sort(key=lambda e: (-e["centrality"], -int(e.get("mentions") or 0), e["name"], e["id"]))
    return ranked


def title_members(ranked: list[dict]) -> list[dict]:
    """The members that name a community: the most central one and those at least half as central (up to 3)."""
    if not ranked:
        return []
    top = ranked[0]["centrality"]
    return [e for e in ranked[:3] if e["centrality"] >= 0.5 * top]


def key_phrases(class_counts: Counter, background: Background, exclude: set[str], limit: int = KEY_PHRASES) -> list[str]:
    """The community's most distinctive terms by c-TF-IDF; a phrase hides the words it is made
    of, a word already said in the title is left out, and a phrase must occur twice."""
    # ties (a community read from one sentence) go to the term said first
    kept = [(t, n) for t, n in class_counts.items() if n > 1 or " " not in t]
    scored = sorted(zip([-w for w in background.weights(kept)], range(len(kept)), [t for t, _ in kept]))
    chosen: list[str] = []
    for _, _, term in scored:
        words = set(term.split())
        if words & exclude or term in exclude:
            continue
        if any(term in c.split() or words <= set(c.split()) for c in chosen):
            continue  # already inside a chosen phrase
        if " " in term:  # a phrase replaces the single words it holds
            chosen = [c for c in chosen if c not in words]
        chosen.append(term)
        if len(chosen) == limit:
            break
    return chosen


class Sentence(NamedTuple):
    """A sentence of a chunk with its terms, split once per chunk and reused by every community."""
    text: str
    phrases: tuple         # phrase_terms, each once: key phrases count the sentences that say them
    words: int             # (its content words, what names are matched against: the phrases without a space)


class ChunkText(NamedTuple):
    """A chunk analysed once: its sentences, where each term is (a bit per sentence) and its words.
    Kept small (no set per word or sentence): a writer keeps thousands of them."""
    sentences: list
    where: dict
    words: int
    quotable: int = 0   # the sentences of 8 to 80 words (a bit each): those a report may quote
    cut: int = 0        # the sentences whose first letter is lower case (a tail cut at the chunk's start)


def analyse_chunk(text: str) -> ChunkText:
    """The chunk's sentences, postings (the sentence frequency of a term is its bit count) and word count."""
    sentences = chunk_sentences(text)
    quotable = cut = 0
    for position, sentence in enumerate(sentences):
        quotable |= (8 <= sentence.words <= 80) << position
        first = sentence.text[0]  # (a sentence is never empty; its first letter is most often its first character)
        if not first.isalpha():
            first = next((c for c in sentence.text if c.isalpha()), "")
        cut |= first.islower() << position
    return ChunkText(sentences, postings(sentences), sum(s.words for s in sentences), quotable, cut)


def chunk_sentences(text: str) -> list[Sentence]:
    """The sentences of a chunk, analysed (the Chinese words of all of them in one cut)."""
    spans = []
    chinese = has_cjk(text)  # a sentence of a chunk without CJK has none either
    formed = _FORM_CHARS.search(text) is not None  # else no sentence has a label, heading or file name
    latin = _LATIN_LETTER.search(text) is not None  # else no sentence has a Latin word
    cjk_run = CJK_RUN.full
    form_chars, latin_letter = _FORM_CHARS.search, _LATIN_LETTER.search
    for a, b in chunk_sentence_spans(text):
        piece = text[a:b]
        parts = piece.split()
        if parts:
            sentence = " ".join(parts)
            cjk = chinese and cjk_run.search(piece) is not None
            # labels, headings and file names say no topic (a sentence of Chinese words alone holds none)
            said = _without_form(piece) if formed and form_chars(piece) else piece
            spans.append((sentence, cjk, said, len(sentence) // 2 if cjk else len(parts)))
    words = iter(_cut_apart([said for _, cjk, said, _ in spans if cjk]) if chinese else ())
    sentences = []
    intern = sys.intern
    for sentence, cjk, said, count in spans:
        # interned: the same word in thousands of kept chunks is one string
        if cjk and not (latin and latin_letter(said)):  # its Chinese words (each once) are all its terms
            sentences.append(Sentence(sentence, tuple(map(intern, dict.fromkeys(next(words)))), count))
            continue
        terms = latin_terms(said, list(dict.fromkeys(next(words))) if cjk else [])
        sentences.append(Sentence(sentence, tuple(map(intern, dict.fromkeys(terms))), count))
    return sentences


def _without_form(piece: str) -> str:
    """piece with what _FORM matches replaced by a clause break. Where no file extension is
    written, only its line patterns can match: tried alone, a quarter of the time (the file
    name pattern is tried at every word)."""
    return (_FORM if _FILE_EXTENSION.search(piece) else _FORM_LINES).sub(" . ", piece)


_NAME_PHRASES: dict[str, tuple] = {}  # name -> its phrase_terms (see learn_names)
NAMES_KEPT = 65536


def learn_names(names) -> None:
    """Find the phrase terms of the names not known yet, the Chinese words of them all in one
    cut (each name is cut as it is alone: see chinese_words), not one cut per name."""
    missing = [n for n in dict.fromkeys(names) if n not in _NAME_PHRASES]
    if not missing:
        return
    if len(_NAME_PHRASES) + len(missing) > NAMES_KEPT:
        _NAME_PHRASES.clear()
    chinese = [n for n in missing if has_cjk(n)]
    words = dict(zip(chinese, chinese_words(chinese))) if chinese else {}
    for name in missing:
        _NAME_PHRASES[name] = tuple(latin_terms(name, words.get(name, [])))


@lru_cache(maxsize=65536)
def name_words(name: str) -> frozenset:
    """The content words of a name, as sentences are matched against them (empty for a name
    of short words or stopwords only: it matches no sentence). Remembered: a member's name is
    matched in every community above it."""
    return frozenset(t for t in _name_terms(name) if " " not in t)


@lru_cache(maxsize=65536)
def _name_terms(name: str) -> tuple:
    """phrase_terms of a name."""
    learn_names([name])
    return _NAME_PHRASES[name]


def postings(sentences: list[Sentence]) -> dict[str, int]:
    """Each term of a chunk with the sentences that hold it, as a bit mask (bit i: sentence i)."""
    where: dict[str, int] = {}
    for position, sentence in enumerate(sentences):
        bit = 1 << position
        for term in sentence.phrases:
            where[term] = where.get(term, 0) | bit
    return where


def member_sentences(chunk: ChunkText, names: list[frozenset]) -> int:
    """The sentences of a chunk that hold every word of one of the names, as a bit mask (bit i:
    sentence i); all of them when none does (the chunk was linked to the community by a form
    of a name the sentences do not spell out)."""
    return _holding(chunk.where, names) or (1 << len(chunk.sentences)) - 1


def _holding(where: dict[str, int], names: list[frozenset]) -> int:
    """The sentences (a bit mask, from a chunk's postings) that hold every word of one of the names."""
    hits = 0
    for name in names:
        if name:
            common = -1  # (every bit, until a word's sentences take some away)
            for word in name:
                common &= where.get(word, 0)
                if not common:
                    break
            hits |= common
    return hits


def _member_chunks(read: list[tuple[str, list[str]]], analysed: dict[str, ChunkText],
                   names: dict[str, frozenset]) -> tuple[list[tuple[str, ChunkText, int]], list[tuple]]:
    """(chunk id, chunk, its member sentences' mask) of the chunks read (each matched only against
    the members it mentions), and the terms of every member sentence, chunk by chunk."""
    chunks, said = [], []
    for cid, members in read:
        chunk = analysed.get(cid)
        if chunk is None:
            continue
        sentences = chunk.sentences
        mask = member_sentences(chunk, [names[m] for m in members if m in names])
        chunks.append((cid, chunk, mask))
        if mask == (1 << len(sentences)) - 1:
            said.extend(map(_PHRASES, sentences))
        else:
            said.extend(sentences[position].phrases for position in _positions(mask))
    return chunks, said


_PHRASES = attrgetter("phrases")


def _positions(mask: int):
    """The set bits of a mask, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def representative_sentences(chunks: list[tuple[str, ChunkText, int]], weights: dict[str, float],
                             names: list[str], limit: int = SENTENCES) -> list[tuple[str, str]]:
    """(sentence, chunk id) from (chunk id, chunk, its member sentences' mask) that best carry
    the key phrase weights and name the central members; one per chunk, ties to the earlier
    chunk and sentence."""
    name_terms = [n for n in map(name_words, names) if n]
    weighted = list(weights.items())
    scored = []
    for order, (chunk_id, chunk, members) in enumerate(chunks):
        candidates = members & chunk.quotable
        if not candidates:
            continue
        where = chunk.where
        # only the masks of a candidate sentence count (each in the weights' order)
        masks = [(m, w) for t, w in weighted if (m := where.get(t, 0)) & candidates]
        said = 0  # the member sentences that score anything: a phrase or a name (the others score 0)
        for mask, _ in masks:
            said |= mask
        named = []
        for name in name_terms:
            common = _holding(where, (name,))
            if common & candidates:
                named.append(common)
                said |= common
        said &= candidates
        best = None
        sentences, cut = chunk.sentences, chunk.cut
        while said:  # each sentence that scores, first to last
            bit = said & -said
            said ^= bit
            score = sum([w for m, w in masks if m & bit])  # (summed in the weights' order)
            if named:
                score += sum([1.0 for m in named if m & bit])
            position = bit.bit_length() - 1
            sentence = sentences[position]
            score /= math.sqrt(sentence.words)  # a long sentence carries more terms; do not reward length alone
            if cut & bit:
                score /= 2  # the tail of a sentence cut at the chunk's start
            if score > 0 and (best is None or score > best[0]):
                best = (score, order, position, sentence.text, chunk_id)
        if best:
            scored.append(best)
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    seen, picked = set(), []
    for _, _, _, sentence, chunk_id in scored:
        if sentence not in seen:
            seen.add(sentence)
            picked.append((sentence, chunk_id))
        if len(picked) == limit:
            break
    return picked


def importance(chunks: int, documents: int, size: int) -> float:
    """Rating 1-10: how far the community reaches, on log scales that reach the top at
    CHUNK_SCALE passages, DOCUMENT_SCALE documents and SIZE_SCALE entities; the passages that
    mention it count most, then the documents, then its size. Absolute, not a share of the
    store: a document that mentions none of its members leaves it as it is."""
    scale = lambda n, top: min(1.0, math.log1p(n) / math.log1p(top))
    score = (0.6 * scale(chunks, CHUNK_SCALE) + 0.25 * scale(documents, DOCUMENT_SCALE)
             + 0.15 * scale(size, SIZE_SCALE))
    return round(1.0 + 9.0 * score, 1)


# --- from the store to report rows -----------------------------------------------------

_IN = "IN (SELECT value FROM json_each(?))"
JOINED_BYTES = 32 << 20  # below SQLite's value length limit (tgr.store.hardening): one text per entity


class _Mentions:
    """Where the members are mentioned (chunks, and their documents and positions) and how
    often, read from the store once per entity in a report stage: a member's chunks serve
    every community above it too (each level holds it again), not a query per community."""

    def __init__(self, conn):
        self.conn = conn
        self.mentions: dict[str, object] = {}           # entity id -> entities.mentions
        self._chunks: dict[str, array] = {}             # entity id -> chunk numbers (4 bytes each, not ~36)
        self._numbers: dict[str, int] = {}              # chunk id -> number
        self._chunk_ids: list[str] = []                 # by number
        self._places: list[tuple | None] = []           # (document id, ordinal) by number (None: no such chunk)

    def read(self, ids: list[str]) -> None:
        """Read the entities not read yet."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._chunks]
        if not missing:
            return
        for eid in missing:
            self._chunks[eid] = array("i")
        args = (json.dumps(missing),)
        self.mentions.update(self.conn.execute(f"SELECT id, mentions FROM entities WHERE id {_IN}", args).fetchall())
        said = self._joined(args)
        # chunks not seen before: their places are read once each, not joined to every mention
        fresh = sorted(set().union(*said.values()).difference(self._numbers), key=str)
        start = len(self._chunk_ids)
        self._numbers.update(zip(fresh, range(start, start + len(fresh))))
        self._chunk_ids += fresh
        self._places += [None] * len(fresh)
        number = self._numbers.__getitem__
        for eid, chunk_ids in said.items():
            self._chunks[eid] = array("i", map(number, chunk_ids))
        if fresh:
            places = self.conn.execute(f"SELECT id, document_id, ordinal FROM chunks WHERE id {_IN}", (json.dumps(fresh),))
            for cid, document, ordinal in in_pages(places):
                if document is not None and cid in self._numbers:
                    self._places[self._numbers[cid]] = (document, ordinal)

    def _joined(self, args: tuple) -> dict[str, list[str]]:
        """entity id -> the ids of the chunks that mention it, of the entities in args. Each
        entity's come joined in one text (a row per mention, a Python tuple each, took three
        times the CPU: 428 k mentions of a 100 M-character store's add), unless an id holds a
        NUL or is not text, or they could pass SQLite's value length limit."""
        total = self.conn.execute("SELECT sum(length(CAST(chunk_id AS BLOB)) + 1) FROM entity_mentions "
                                  f"WHERE entity_id {_IN}", args).fetchone()[0] or 0
        said: dict[str, list[str]] = {}
        odd = []
        if total < JOINED_BYTES:
            for eid, joined, count, texts in self.conn.execute(
                    "SELECT entity_id, group_concat(chunk_id, char(0)), count(*), sum(typeof(chunk_id) = 'text') "
                    f"FROM entity_mentions WHERE entity_id {_IN} GROUP BY entity_id", args).fetchall():
                chunk_ids = joined.split("\0") if texts == count else []
                if len(chunk_ids) == count:
                    said[eid] = chunk_ids
                else:
                    odd.append(eid)
            if not odd:
                return said
            args = (json.dumps(odd),)
        # (fetched a few thousand at a time: a row at a time is a watched call each)
        for eid, cid in in_pages(self.conn.execute(
                f"SELECT entity_id, chunk_id FROM entity_mentions WHERE entity_id {_IN}", args)):
            said.setdefault(eid, []).append(cid)
        return said

    def chunk_ids(self, ids: list[str]) -> list[str]:
        """The ids of the chunks that mention these entities, sorted."""
        self.read(ids)
        numbers = set().union(*map(self._chunks.__getitem__, ids))
        return sorted(map(self._chunk_ids.__getitem__, numbers))

    def community_chunks(self, ids: list[str], limit: int) -> tuple[list[tuple[str, list[str]]], int, int]:
        """(chunk id, the members it mentions) of the first `limit` chunks that mention members,
        those naming most members first (then by document and position); how many chunks mention
        members, and how many documents they span."""
        self.read(ids)
        ids = list(dict.fromkeys(ids))
        said = list(map(self._chunks.__getitem__, ids))
        naming = Counter(chain.from_iterable(said))  # chunk number -> the members it names
        places, chunk_ids = self._places, self._chunk_ids
        placed = [n for n in naming if places[n] is not None]
        # only chunks naming as many members as the limit-th most can be among the first
        least = sorted(map(naming.__getitem__, placed), reverse=True)[min(limit, len(placed)) - 1] if placed and limit else 0
        # in document order, not in the order documents were added: an incremental store and a fresh build agree
        order = sorted((n for n in placed if naming[n] >= least),
                       key=lambda n: (-naming[n], places[n], chunk_ids[n]))[:limit]
        members: dict[int, list[str]] = {n: [] for n in order}
        for eid, numbers in zip(ids, said):
            for n in members.keys() & set(numbers):
                members[n].append(eid)
        return ([(chunk_ids[n], members[n]) for n in order], len(placed),
                len({places[n][0] for n in placed}))


class ProfileReportWriter:
    """The offline provider's report writer: each community's report from its profile (central
    members, c-TF-IDF key phrases, representative sentences, importance), read from the store."""
    name = "offline-profile"          # part of each report's context hash
    prompt = ""                       # asks no model
    generator = OFFLINE_WRITER        # recorded in reports.generator, as the offline answers are
    save_batch = 64                   # reports per commit (tgr.build.report): no model call to lose

    def __init__(self, conn=None):
        self.conn = conn
        self._sentences = _AnalysedChunks(ANALYSED_IN_MEMORY)
        self._repeated: frozenset | None = None
        self._mentions = _Mentions(conn)

    def begin(self) -> None:
        """A report stage starts (tgr.build.report): the graph may have changed since the last."""
        self._mentions = _Mentions(self.conn)

    def end(self) -> None:
        """A report stage ended: the chunks it analysed and the mentions it read are let go."""
        self._sentences.close()
        self._sentences = _AnalysedChunks(ANALYSED_IN_MEMORY)
        self._mentions = _Mentions(self.conn)

    def expect(self, members: list[str]) -> None:
        """The members of the communities this stage will write (tgr.build.report): where they
        are mentioned is read at once, not in a query per community."""
        self._mentions.read(members)

    @property
    def repeated(self) -> frozenset:
        """The store's words that every document repeats (see repeated_words), read once."""
        if self._repeated is None:
            self._repeated = repeated_words(self.conn)
        return self._repeated

    def inputs(self, members: list[str]) -> str:
        """What a report reads besides its community's context (part of its context hash): the
        chunks that mention its members (ids hash their document, position and text)."""
        chunk_ids = self._mentions.chunk_ids(members)
        # the words left out as what every document repeats: a report changes when they do
        return "\n-----Chunks-----\n" + ",".join(chunk_ids) + (
            "\n-----Repeated-----\n" + ",".join(sorted(self.repeated)) if self.repeated else "")

    def write(self, items, idle=None, more=None):
        """(tag, report, generator) for each item (see tgr.build.report.ReportItem); no model
        to wait for, so more (see ReportWriter) is left to the caller's next round."""
        for item in items:
            entities, edges = item.material()  # (a giant community's: its most connected members')
            size = getattr(item, "size", None) or len(entities)
            yield item.tag, profile_report(self.profile(entities, edges), size), self.generator

    def profile(self, entities: list[dict], edges: list[dict]) -> Profile:
        """The profile of the community of these entities and internal relationships."""
        ids = [e["id"] for e in entities]
        read, mentioned, documents = self._mentions.community_chunks(ids, MAX_CLASS_CHUNKS)
        mentions = self._mentions.mentions
        entities = [dict(e, mentions=mentions.get(e["id"], 0)) for e in entities]
        analysed = self._analysed([cid for cid, _ in read])
        learn_names(e["name"] for e in entities)
        names = {e["id"]: name_words(e["name"]) for e in entities}
        # a chunk's sentences are matched only against the members it mentions
        chunks, said = _member_chunks(read, analysed, names)
        class_counts = Counter(chain.from_iterable(said))
        # the most frequent terms are the only ones c-TF-IDF can rank first (W grows with the
        # count); kept in the order they were first said, which breaks ties
        frequent = {t for t, _ in class_counts.most_common(CANDIDATES)}
        class_counts = Counter({t: n for t, n in class_counts.items() if t in frequent})
        background = Background([analysed[cid] for cid, _ in read if cid in analysed], class_counts)
        ranked = central_members(entities, edges)
        named = title_members(ranked)
        exclude = {w for e in named for w in _name_terms(e["name"])} | self.repeated
        phrases = key_phrases(class_counts, background, exclude)
        weights = {t: background.weight(t, class_counts[t]) for t in phrases}
        top = max(weights.values(), default=1.0) or 1.0
        sentences = representative_sentences(chunks, {t: w / top for t, w in weights.items()},
                                             [e["name"] for e in named])
        return Profile(ranked, phrases, sentences, mentioned, documents,
                       sum(float(e["weight"]) for e in edges), importance(mentioned, documents, len(entities)),
                       edges)

    def _analysed(self, chunk_ids: list[str]) -> dict[str, ChunkText]:
        """The chunks analysed, each once while the writer lives."""
        found = {c: self._sentences.get(c) for c in chunk_ids}
        missing = [c for c, analysed in found.items() if analysed is None]
        if missing:
            for cid, text in self.conn.execute(f"SELECT id, text FROM chunks WHERE id {_IN}",
                                               (json.dumps(missing),)).fetchall():
                found[cid] = self._sentences.put(cid, analyse_chunk(text))
        return {c: found[c] for c in chunk_ids if found[c] is not None}


class _AnalysedChunks:
    """Analysed chunks by id: the most recently used in memory (up to `limit`), the others
    pickled to a temporary file (read back in a fraction of the time analysing takes), so
    the memory a writer holds does not grow with the store (it was ~150 KB per Chinese chunk,
    every chunk of the store)."""

    def __init__(self, limit: int):
        self.limit = limit
        self._memory: OrderedDict[str, ChunkText] = OrderedDict()
        self._spilled: dict[str, tuple[int, int]] = {}  # id -> (offset, length) in the file
        self._file = None

    def get(self, chunk_id: str) -> ChunkText | None:
        analysed = self._memory.get(chunk_id)
        if analysed is not None:
            self._memory.move_to_end(chunk_id)
            return analysed
        place = self._spilled.get(chunk_id)
        if place is None:
            return None
        self._file.seek(place[0])
        return self.put(chunk_id, pickle.loads(self._file.read(place[1])))

    def close(self) -> None:
        """Forget every analysed chunk (and the file the spilled ones are in)."""
        self._memory.clear()
        self._spilled.clear()
        if self._file is not None:
            self._file.close()
            self._file = None

    def put(self, chunk_id: str, analysed: ChunkText) -> ChunkText:
        self._memory[chunk_id] = analysed
        while len(self._memory) > self.limit:
            old_id, old = self._memory.popitem(last=False)
            if old_id not in self._spilled:  # (an analysed chunk never changes: written once)
                if self._file is None:
                    self._file = tempfile.TemporaryFile(prefix="tgr-chunks-")
                data = pickle.dumps(old, protocol=pickle.HIGHEST_PROTOCOL)
                self._file.seek(0, 2)
                self._spilled[old_id] = (self._file.tell(), len(data))
                self._file.write(data)
        return analysed


def repeated_words(conn) -> frozenset:
    """Latin words in half of the store's chunks or more, where it holds three documents or
    more: what every document repeats (a show's opening line, a template's headings, a file
    name's words in the indexed titles), not what any part of it is about. Read from the
    full-text index's own counts (fts5vocab), so no text is read again."""
    documents, chunks = conn.execute(
        "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks)").fetchone()
    if documents < REPEATED_DOCUMENTS or not chunks:
        return frozenset()
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.tgr_chunk_words USING fts5vocab(main, chunks_fts, 'row')")
    # the range is what the GLOB's first letter allows, and what fts5vocab reads alone: the
    # store's Chinese terms (most of a mixed store's) are never visited
    return frozenset(w for (w,) in conn.execute(
        "SELECT term FROM temp.tgr_chunk_words WHERE term >= 'a' AND term < '{' AND doc * 2 >= ? "
        "AND term GLOB '[a-z][a-z]*'", (chunks,))
        if _content_word(w))


def _joined(names: list[str], chinese: bool) -> str:
    if chinese:
        return "、".join(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def profile_report(profile: Profile, size: int) -> dict:
    """The report row (title, summary, rating, findings) of a community profile."""
    named = title_members(profile.members)
    chinese = any(has_cjk(e["name"]) for e in named) or any(has_cjk(p) for p in profile.key_phrases)
    names = _joined([e["name"] for e in named], chinese)
    phrases = profile.key_phrases
    if chinese:
        title = names + ("：" + "、".join(phrases[:2]) if phrases else "")
        summary = (f"{size} 个实体，核心为{names}；见于 {profile.documents} 篇文档的 {profile.chunks} 个段落。"
                   + (f"关键词：{'、'.join(phrases)}。" if phrases else ""))
    else:
        title = names + (": " + ", ".join(phrases[:2]) if phrases else "")
        held = _joined([f"{e['name']} ({e['type']})" for e in named], False)
        summary = (f"{size} entities around {held}, mentioned in {profile.chunks} passage{'s' if profile.chunks != 1 else ''} of "
                   f"{profile.documents} document{'s' if profile.documents != 1 else ''}."
                   + (f" Key phrases: {', '.join(phrases)}." if phrases else ""))
    if profile.sentences:
        summary += " " + shorten(profile.sentences[0][0], 300)
    findings = []
    if phrases:
        findings.append({"summary": "关键词" if chinese else "Key phrases",
                         "explanation": ("、" if chinese else ", ").join(phrases), "key_phrases": phrases,
                         "members": [e["name"] for e in named]})
    findings += [{"summary": f"{e['name']} ({e['type']})", "explanation": shorten(e["description"], 400)}
                 for e in profile.members[:3]]
    findings += [{"summary": "代表句" if chinese else "Representative passage",
                  "explanation": shorten(sentence, 600), "chunk_id": chunk_id}
                 for sentence, chunk_id in profile.sentences]
    return {
        "title": title,
        "summary": summary,
        "rating": profile.rating,
        "rating_explanation": (f"Offline: mentioned in {profile.chunks} passages of {profile.documents} "
                               f"documents; {size} entities held together by {names} "
                               "(no LLM was used)."),
        "findings": findings,
    }
