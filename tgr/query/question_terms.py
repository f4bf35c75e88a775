"""The full-text terms of a question: what it asks about, not how it asks.

tgr.text.query_terms gives every word of a question, and for Chinese every bigram and 3-6
character substring. Two kinds of those terms mislead BM25:

- Chinese question and function words (谁, 多少, 哪家, 什么时候, 是, 的) and the bigrams that
  straddle them ("导演是", "是谁", "水的"): news text seldom asks questions, so 多少 or 在哪
  are rare there and weigh a lot, and a headline that asks one ("下一个爆款在哪里?") outranks
  the articles that answer. A Chinese run is cut at those words before its terms are made.
- a word run together of letters and digits ("cvpr2022", "m1"): the texts that write it
  apart ("CVPR 2022") index two words, so its parts are searched for as well.

A question may also ask several things at once ("…下水的时间，…总票房是多少？"): question_clauses
gives its parts, which local retrieval walks from one by one (tgr.query.retrieve).
"""
from __future__ import annotations

import re

from ..text import CJK_RUN, query_terms

# What a Chinese question asks with, and the two commonest particles; words one of these
# characters starts elsewhere (是否, 但是, 目的) are function words or rare in a question.
QUESTION_WORDS_ZH = (
    "什么时候", "为什么", "什么", "多少", "哪些", "哪个", "哪家", "哪里", "哪儿", "哪位", "哪年", "哪天",
    "哪一", "哪", "怎么", "怎样", "如何", "是否", "何时", "何地", "何处", "谁", "几", "吗", "呢", "的", "是",
)
_QUESTION_WORD = re.compile("|".join(sorted(QUESTION_WORDS_ZH, key=len, reverse=True)))
_LETTERS_DIGITS = re.compile(r"[a-z]+|[0-9]+")
# where one Chinese question ends and the next begins: a full-width stop, an ASCII one after a
# Chinese character, or 以及/并且. Not in English: "Which actor, born in 1950, …" is one question,
# and "!" or "?" is often part of a title ("Act of War! Direct Action")
_CLAUSE_END = re.compile(r"[，；？！。]+|(?<=[\u3400-\u9fff])[;?!]+|以及|并且")


def question_terms(question: str) -> list[str]:
    """The question's full-text terms (OR-ed by the caller): query_terms of the text with its
    Chinese runs cut at question and function words (leaving out single characters), plus
    the letter and digit parts of a word that has both."""
    terms = _content_terms(question)
    if not terms:  # a question of nothing but question words: keep them
        return query_terms(question)
    parts = [p for t in terms if t.isascii() and t.isalnum() for p in _LETTERS_DIGITS.findall(t) if p != t]
    return list(dict.fromkeys(terms + parts))


def _content_terms(question: str) -> list[str]:
    """query_terms of the question with its Chinese runs cut at question and function words."""
    # a lone character left between two cuts ("在" of "在哪举办") only matches a text's lone ones
    cut = " ".join(part for run in CJK_RUN.findall(question) for part in _QUESTION_WORD.split(run)
                   if len(part) > 1)
    rest = CJK_RUN.sub(" ", question)
    return query_terms(f"{rest} {cut}") if cut or rest.strip() else []


def question_clauses(question: str) -> list[str]:
    """The parts of a question that asks several things: its Chinese clauses (cut at ，；？！。 and
    以及/并且) that have a term of their own to search by; one part for a plain question."""
    clauses = [c.strip() for c in _CLAUSE_END.split(question)]
    clauses = [c for c in clauses if len(c) > 1 and _content_terms(c)]
    return clauses if len(clauses) > 1 else [question]
