"""The offline default: everything tgr needs when no model is configured.

- HashEmbedder: a local embedder with no weights to download (signed feature hashing of
  words, character trigrams and CJK bigrams). Good for lexical similarity, weaker than a
  neural model on paraphrase.
- extract_heuristic: entities from names (tgr.offline.names_en: capitalised spans; tgr.offline.names_zh:
  jieba's proper-noun tags, titles, compounds, aliases), chosen per sentence by script;
  relationships from same-sentence co-occurrence.
- extractive_report: a community report from stored descriptions (the LLM writer's last
  resort; offline reports are tgr.offline.community_reports's). The sentences of an offline
  answer are chosen by tgr.offline.answer_sentences, always with citations.
- OfflineExtractor, ExtractiveAnswerer: the offline provider, behind the same interfaces as
  the chat model's extractor and answerer (its report writer: tgr.offline.community_reports; its
  summariser: tgr.build.role_providers, which chooses each build role's provider; tgr.query.answerers
  chooses the answerer).
- OFFLINE_WRITER: the offline provider's name where a store records one (the chat model,
  a report's generator); spelled here only.
All of it is deterministic. It is lower quality than an LLM, and `tgr info` says so.
"""
from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Sequence

from ..parsing import RawEntity, RawRelation
from ..text import CJK_RUN, chunk_sentence_spans, has_cjk, jieba_word_terms, match_terms, search_terms, shorten
from .answer_sentences import answer_sentences
from .comparisons import comparison_verdict
from .kin_chain import kin_answer
from .asked_country import bearer_sentence, country_lead
from .name_words import CHINESE_TITLES

OFFLINE_EXTRACTOR = "offline-heuristic"
OFFLINE_WRITER = "offline-extractive"



class HashEmbedder:
    """Deterministic local embeddings by signed feature hashing (no model weights)."""

    in_caller_thread = True  # Python work under the GIL: the Gateway's threads would only add hand-offs

    def __init__(self, dim: int = 384):
        self.dim = dim
        self.name = f"tgr:hash-{dim}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if sum(map(len, texts)) < _BATCH_CHARS:  # a question: no numpy to import
            return [self._vector(text) for text in texts]
        from .feature_hashing import hashed_vectors

        return hashed_vectors(texts, _word_features, self.dim, _FEATURE_WEIGHT)

    def _features(self, text: str) -> Counter:
        """Feature counts, in the order first seen: words ("w:", 1 each) with their
        character trigrams ("t:", 1/4 each), then CJK bigrams ("b:", 1/2 each)."""
        counts = _word_features(text)
        bigrams: list[str] = []
        for run in CJK_RUN.findall(text):
            bigrams += ["b:" + run[i:i + 2] for i in range(len(run) - 1)]
        counts.update(bigrams)
        return counts

    def _vector(self, text: str) -> list[float]:
        """One text's vector (embed's batches, with numpy, give the same numbers)."""
        vector, dim, crc32, log1p, weights = [0.0] * self.dim, self.dim, zlib.crc32, math.log1p, _FEATURE_WEIGHT
        for feature, count in self._features(text).items():
            # the feature's CRC-32 picks both bucket and sign; computed afresh, as a cache of
            # them thrashes on a Chinese corpus (its bigrams alone outnumber any bounded cache)
            digest = crc32(feature.encode("utf-8"))
            value = log1p(count * weights[feature[0]])  # count * weight: exact (powers of 2)
            vector[digest % dim] += value if digest & 0x80000000 else -value
        total = 0.0
        for x in vector:  # summed in order, as numpy's cumsum sums (Python 3.12's sum() does not)
            total += x * x
        norm = math.sqrt(total)
        if norm == 0:
            vector[0] = 1.0  # an empty text still needs a valid unit vector
            return vector
        return [x / norm for x in vector]


_BATCH_CHARS = 2000  # texts of this many characters in all are embedded together, with numpy


def _word_features(text: str) -> Counter:
    """The words and trigrams of a text, counted in the order first seen: search_terms'
    words with _term_features' trigrams, a Chinese cut's words each looked up once."""
    if has_cjk(text):
        import rjieba

        # every word's features in the cut's order, counted in C: the same features, in the
        # same first-seen order, with the same counts as each distinct word's features times
        # its count (a Python loop over the distinct words was a tenth of a Chinese build's embedding)
        return Counter(chain.from_iterable(map(_CUT_WORD_FEATURES.__getitem__, rjieba.cut_for_search(text))))
    return Counter(chain.from_iterable(map(_term_features, search_terms(text))))


class _CutWordFeatures(dict):
    """A word of a Chinese cut -> its features. A dict, not an lru_cache: a hit is one C look-up.
    Emptied when it holds _CUT_WORDS_KEPT words (a long Chinese novel cuts into ~50,000)."""

    def __missing__(self, word: str) -> tuple[str, ...]:
        if len(self) >= _CUT_WORDS_KEPT:
            self.clear()
        if CJK_RUN.full.fullmatch(word):  # most words of a Chinese cut: the word itself
            features = ("w:" + word,)
        else:
            features = tuple(chain.from_iterable(map(_term_features, jieba_word_terms(word))))
        self[word] = features
        return features


_CUT_WORDS_KEPT = 1 << 17
_CUT_WORD_FEATURES = _CutWordFeatures()

_FEATURE_WEIGHT = {"w": 1.0, "t": 0.25, "b": 0.5}


@lru_cache(maxsize=16384)
def _term_features(term: str) -> tuple[str, ...]:
    """A term's features: the word, and the character trigrams of a non-CJK word over 3 letters."""
    if len(term) <= 3 or has_cjk(term):
        return ("w:" + term,)
    padded = f" {term} "
    return ("w:" + term, *("t:" + padded[i:i + 3] for i in range(len(padded) - 2)))


# --- heuristic extraction ------------------------------------------------------------

class OfflineExtractor:
    """The offline provider's extractor: extract_heuristic on each chunk (no model calls)."""
    name = OFFLINE_EXTRACTOR
    save_batch = 64  # chunks per commit (tgr.build.extract): ~0.3 s of work, not a model's
    page_size = 1024  # chunks read at a time (tgr.build.extract.pending_pages)

    def __init__(self, max_entities: int = 20):
        self.max_entities = max_entities

    def extract(self, chunks: Sequence[tuple[str, str]], save, idle=None) -> None:
        """Call save(chunk id, entities, relations) for each (chunk id, text)."""
        for chunk_id, text in chunks:
            save(chunk_id, *extract_heuristic(text, self.max_entities))


def extract_heuristic(text: str, max_entities: int = 20) -> tuple[list[RawEntity], list[RawRelation]]:
    """Entities and co-occurrence relationships from one chunk, with no model."""
    sentences = [text[a:b].strip() for a, b in chunk_sentence_spans(text)]
    sentences = [s for s in sentences if s]
    found = _sentence_names(sentences, text)
    flat = list(chain.from_iterable(found))  # (name, type) in order
    counts = Counter(map(itemgetter(0), flat))
    first_seen: dict[str, int] = {}  # each name's first sentence
    for index, names in enumerate(found):
        for name, _ in names:
            first_seen.setdefault(name, index)
    types = {name: kind for name, kind in flat if kind != "concept"}  # the last type not a concept
    keep = sorted(counts, key=lambda n: (-counts[n], first_seen[n], n))[:max_entities]
    keep_set = set(keep)
    named = [[n for n, _ in names if n in keep_set] if names else [] for names in found]  # kept, per sentence
    where: dict[str, list[str]] = {name: [] for name in keep}  # the sentences naming each, in order
    for sentence, names in zip(sentences, named):
        if len(names) == 1:
            where[names[0]].append(sentence)
        elif names:
            for name in dict.fromkeys(names):
                where[name].append(sentence)
    entities = []
    for name in sorted(keep, key=lambda n: (first_seen[n], n)):
        evidence = where[name]
        evidence.sort(key=lambda s: name not in s)  # first where it is named in full (not an alias)
        description = shorten(" ".join(evidence[:2]), 300)
        entities.append(RawEntity(name=name, type=types.get(name, "concept"), description=description))
    relations = []
    seen_pairs: set[tuple[str, str]] = set()
    for sentence, names in zip(sentences, named):
        if len(names) < 2:
            continue  # no pair
        # by position, then name: "长安" and "长安大唐国" start at the same place
        present = sorted(set(names), key=lambda n: (sentence.find(n), n))
        description = shorten(sentence, 240)
        for i, source in enumerate(present):
            for target in present[i + 1:]:
                pair = (source, target)
                if pair in seen_pairs or (target, source) in seen_pairs:
                    continue
                seen_pairs.add(pair)
                relations.append(RawRelation(
                    source=source, target=target,
                    predicate=_between(sentence, source, target),
                    description=description, strength=1.0))
    relations += _neighbours(sentences, named, seen_pairs)
    return entities, relations


def _sentence_names(sentences: list[str], text: str) -> list[list[tuple[str, str]]]:
    """The (name, type)s of each sentence, by tgr.offline.names_zh or names_en as it is mostly
    Chinese or not (_mostly_cjk)."""
    if text.isascii():
        from .names_en import english_names  # their word lists load with the first extraction

        return english_names(sentences, text)
    from .names_zh import chinese_names

    chinese = _chinese_sentences(sentences, text)
    if all(chinese):
        return chinese_names(sentences)  # (a Chinese text: names_en and its patterns not loaded)
    from .names_en import english_names

    english = iter(english_names([s for s, zh in zip(sentences, chinese) if not zh], text))
    zh_names = iter(chinese_names([s for s, zh in zip(sentences, chinese) if zh]))
    return [next(zh_names) if zh else next(english) for zh in chinese]


NEAR = 2  # sentences before or after that a name alone in its sentences is linked across


def _neighbours(sentences: list[str], named: list[list[str]], seen_pairs: set[tuple[str, str]]) -> list[RawRelation]:
    """A name that shares no sentence with another name of the chunk is linked to the names of
    the nearest sentence (at most NEAR away) that has some: "Ghost of Christmas Present"
    alone in its sentence, "Scrooge" in the next. A name with none near stays an island, as
    in the text. named: the names kept of each sentence."""
    # a title alone (祖师) may name no one the document knows (tgr.build.resolve drops it): no link
    titles, linked = CHINESE_TITLES, set()
    for source, target in seen_pairs:
        if source not in titles and target not in titles:
            linked.add(source)
            linked.add(target)
    relations = []
    for index, names in enumerate(named):
        if linked.issuperset(names):
            continue  # (most sentences)
        for name in dict.fromkeys(n for n in names if n not in linked):
            near = next((other for distance in range(1, NEAR + 1) for other in
                         (index - distance, index + distance)
                         if 0 <= other < len(named) and any(n != name and n not in titles for n in named[other])),
                        None)
            if near is None:
                continue
            context = " ".join(sentences[min(index, near):max(index, near) + 1])
            predicate, description = "同段出现" if has_cjk(context) else "appears near", shorten(context, 240)
            for target in dict.fromkeys(n for n in named[near] if n != name):
                if (name, target) in seen_pairs or (target, name) in seen_pairs:
                    continue
                seen_pairs.add((name, target))
                relations.append(RawRelation(source=name, target=target, predicate=predicate,
                                             description=description, strength=0.5))
            linked.add(name)
    return relations


def _chinese_sentences(sentences: list[str], text: str) -> list[bool]:
    """_mostly_cjk of each sentence (of text). Where text has no letter but CJK's (most Chinese
    chunks), that is whether the sentence has a CJK character: one look at the text instead of
    counting each sentence's characters."""
    runs = CJK_RUN.full
    if _LETTER.search(runs.sub("", text)) is None:
        return [runs.search(s) is not None for s in sentences]
    return list(map(_mostly_cjk, sentences))


def _mostly_cjk(sentence: str) -> bool:
    """Chinese by weight: a CJK character counts as much as four Latin letters."""
    cjk = sum(map(len, CJK_RUN.full.findall(sentence)))
    if 5 * cjk >= len(sentence) > 0:
        return True  # letters are at most the whole sentence: no need to count them
    return cjk > 0 and 4 * cjk >= sum(c.isalpha() for c in sentence) - cjk


_LETTER = re.compile(r"[^\W\d_]")  # a letter (str.isalpha), or a number that is no digit (Ⅳ, 〇)


def _between(sentence: str, source: str, target: str) -> str:
    start = sentence.find(source) + len(source)
    end = sentence.find(target, start)
    middle = sentence[start:end].strip(" ,;:，、；：") if end > start else ""
    if middle and len(middle.split()) <= 5 and len(middle) <= 30:
        return middle
    return "appears with" if not has_cjk(sentence) else "同现于"


# --- extractive reports and answers --------------------------------------------------

def extractive_report(entities: list[dict], relationships: list[dict]) -> dict:
    """A community report built from stored descriptions (no LLM)."""
    top = entities[:3]
    chinese = any(has_cjk(e["name"]) for e in entities)
    joiner = "、" if chinese else ", "
    title = joiner.join(e["name"] for e in top)
    weight = sum(r.get("weight", 1) for r in relationships)
    summary_parts = [
        (f"{len(entities)} 个实体，核心为{title}。" if chinese else
         f"A community of {len(entities)} entities centred on {title}.")
    ]
    summary_parts += [shorten(r["description"], 220) for r in relationships[:2]]
    findings = [
        {"summary": f"{e['name']} ({e['type']})", "explanation": shorten(e["description"], 400)}
        for e in entities[:5]
    ]
    return {
        "title": title,
        "summary": " ".join(summary_parts),
        "rating": round(min(10.0, 1.0 + math.log2(1 + weight + len(entities))), 1),
        "rating_explanation": "Offline heuristic: grows with the community's size and "
                              "relationship weight (no LLM was used).",
        "findings": findings,
    }


def score_overlap(question_terms: list[str], text: str, idf: dict[str, float] | None = None) -> float:
    """Weighted share of the question's terms that occur in text."""
    if not question_terms:
        return 0.0
    present = set(match_terms(text))
    weights = {t: (idf or {}).get(t, 1.0) for t in set(question_terms)}
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in present) / total if total else 0.0


def _ahead(first: list[tuple[str, str]], picked: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """first, then the picked (sentence, cite) pairs whose sentence it does not quote already."""
    quoted = {sentence for sentence, _ in first}
    return first + [p for p in picked if p[0] not in quoted]


class ExtractiveAnswerer:
    """The offline provider's answerer: answers assembled from the retrieved text itself.

    answer() serves local and naive queries (the best-matching source sentences, each
    with its citation); global questions are answered whole by tgr.query.answerers.OfflineAnswerer
    (the main communities, tgr.offline.global_answer), never by a map and reduce.
    """
    name = OFFLINE_WRITER

    def answer(self, question: str, passages: list[tuple[str, str]], *, context: str = "",
               names: Sequence[str] = (), linked: bool = False) -> str:
        """An answer from (citation, text) passages in ranked order, the answering sentence
        first (tgr.offline.answer_sentences); linked: a local walk's passages. (The context
        tables are for a chat model.)"""
        picked = answer_sentences(question, passages, names=names, linked=linked)
        chain = kin_answer(question, passages)
        if chain:  # "X's mother", "the grandchild of X": each step's sentence, then what is asked of the last
            picked = _ahead(chain, picked)
        verdict = comparison_verdict(question, passages)
        if verdict is not None:  # "Yes", "No" or the side asked for, then the sentences that say so
            picked = _ahead(verdict.support, picked)
        if not picked:
            return "I don't know: the retrieved passages do not mention the question's terms."
        lines = [f"{sentence} [Sources: {cite}]" for sentence, cite in picked]
        lead = verdict.lead if verdict is not None else self._country(question, passages, chain, picked)
        return "\n".join([lead.rstrip(".") + "."] + lines if lead else lines)

    @staticmethod
    def _country(question: str, passages: list[tuple[str, str]], chain: list[tuple[str, str]],
                 picked: list[tuple[str, str]]) -> str | None:
        """The country a "which country" question asks, where the answer names it by a demonym
        (tgr.offline.asked_country): said of a kin chain's last person, a role's bearer, or what
        the first answering sentences name."""
        said_of = [s for s, _ in chain[-1:]] or list(filter(None, [bearer_sentence(question, passages)]))
        return country_lead(question, said_of or [s for s, _ in picked[:2]], bool(said_of))
