"""Comparisons through a role's bearer: "Which film has the director who died first, A or B?",
"Which film whose director was born later, A or B?", "Are the directors of films A and B from the
same country?", "Do director of film A and director of film B have the same nationality?".

Each side is a work (A, B) and what is compared is said of the person who bears the role for it:
the work's passage (the one opening with its name) names that person in the sentence that speaks
of the role ("... a 1949 American film directed by Frederick de Cordova"), and the person's own
passage defines them (tgr.offline.comparison_sides.find_side). tgr.offline.comparisons then
compares the two people's dates or nationalities.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .answer_sentences import whole_sentences
from .comparison_sides import Side, find_side
from .demonyms import only_demonyms
from .kin_facts import NAME
from .role_hop import opens_with
from ..text import split_sentences

# the roles a work's text names its bearer by, each as the words saying it ("directed by X", "director X")
ROLES = {"director": r"direct(?:ed|or)", "composer": r"compos(?:ed|er)", "producer": r"produc(?:ed|er)",
         "writer": r"writ(?:ten|er)", "author": r"writ(?:ten)|author(?:ed)?", "performer": r"perform(?:ed|er)|sung|recorded|(?:song|single|album|track)\s+by",
         "creator": r"creat(?:ed|or)", "screenwriter": r"screenwriter|screenplay", "founder": r"found(?:ed|er)"}
_ROLE = "|".join(ROLES)
WORK = r"(?:films?|movies?|songs?|albums?|books?|novels?|works?|shows?|series|plays?|operas?|companies|company)"
_WHICH_BRIDGE = re.compile(rf"^\s*(?:which|what)\s+{WORK}\s+(?:has|had|have|whose|with)\s+(?:the\s+|a\s+)?({_ROLE})s?\b", re.I)
_PAIR_BRIDGE = re.compile(rf"\b({_ROLE})s?\s+of\s+(?:(?:the\s+)?(?:both\s+)?(?:the\s+)?{WORK}\s+)?|"
                          rf"\b{WORK}\s+.*\b(?:have|has|had)\s+(?:the\s+)?({_ROLE})s?\b", re.I)
_TAIL = re.compile(r"\s+(?:both\s+)?(?:have|has|had|share|shares|are|were|is|was|from|come|came)\b", re.I)
# "the art director Heinrich Richter" directed no film
_OTHER_ROLE = re.compile(r"\b(?:art|music|musical|assistant|casting|second[- ]unit|photography|creative|executive|"
                         r"associate|co|set|sound|dance|stunt)[- ]$", re.I)
_DESCRIPTION = r"(?:the\s+(?:[a-z]+\s+){1,2})?"  # "directed by the veteran director X"
_INNER_ROLE = re.compile(rf"\b(?:(?:the\s+)?(?:{_ROLE})s?\s+of\s+)?(?:the\s+)?{WORK}\s+", re.I)


@dataclass
class Bridged:
    """One side of a bridge comparison: the work, its sentence naming the bearer, and the bearer's side."""

    work: str
    sentence: str
    cite: str
    bearer: Side


def bridge_role(question: str) -> str | None:
    """The role a comparison goes through: "Which film has the director ..." -> director; "Are the
    directors of films A and B ...", "Do director of film A and director of film B ..." -> director."""
    found = _WHICH_BRIDGE.match(question)
    if found:
        return found.group(1).lower()
    if re.match(r"^\s*(?:are|is|were|was|do|does|did)\b", question, re.I) and re.search(r"\bsame\b", question):
        pair = _PAIR_BRIDGE.search(question)
        if pair:
            return (pair.group(1) or pair.group(2)).lower()
    return None


def pair_works(question: str, passages: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
    """The two works a yes/no bridge comparison names ("Are the directors of films A and B from the
    same country?"): of the ways to cut the span at an "and", the one whose two sides each open a
    passage."""
    text = question.strip().rstrip("?. ")
    first = _INNER_ROLE.search(text)
    if first is None:
        return None
    found = set()
    for end in [m.start() for m in _TAIL.finditer(text, first.end())]:  # where the works' names end
        span = _INNER_ROLE.sub(" ", text[first.start():end]).strip()
        for cut in re.finditer(r"\s+and\s+", span):
            left, right = span[:cut.start()].strip(" ,"), span[cut.end():].strip(" ,")
            if all(any(_opens(t, _plain(side)) for _, t in passages) for side in (left, right)):
                found.add((left, right))
    return found.pop() if len(found) == 1 else None


def _opens(text: str, name: str) -> bool:
    """The passage opens with the whole name ("Rain and Salt is ...", not "Rainfall is ..."), a
    leading "The" on either side or none ("The Gal Who Took the West" for "Gal Who Took the West")."""
    text, name = (re.sub(r"^the\s+", "", t.lstrip(" \"'“"), flags=re.I) for t in (text, name))
    return opens_with(text, name) and not text[len(name):len(name) + 1].isalnum()


def bridged(work: str, role: str, passages: Sequence[tuple[str, str]]) -> Bridged | None:
    """The side of a work: the first sentence of a passage opening with its name that names the
    role's bearer ("directed by Frederick de Cordova"), and the bearer's defining sentence."""
    said = ROLES[role]
    pattern = re.compile(rf"\b(?:{said})\s+(?:by\s+)?{_DESCRIPTION}({NAME})|\b(?:{said})\s*(?:,|is|was)\s+({NAME})")
    for cite, text in passages:
        year = re.search(r"\((?:[^()]*\D)?(1[0-9]{3}|20[0-9]{2})\b[^()]*\)\s*$", work)
        if not _opens(text, _plain(work)) or (year and year.group(1) not in text[:300]):
            continue  # "Nevada (1927 film)" is not the 1935 one
        for sentence in whole_sentences([" ".join(text[a:b].split()) for a, b in split_sentences(text)]):
            found = next((m for m in pattern.finditer(sentence) if not _OTHER_ROLE.search(sentence[:m.start()])), None)
            if found:
                person = (found.group(1) or found.group(2)).strip(" .")
                if only_demonyms(person.split()[0]):  # "American singer Ada Penn" is Ada Penn
                    named = re.match(rf"\S+\s+(?:[a-z]+\s+){{1,3}}({NAME})", sentence[found.start(1 if found.group(1) else 2):])
                    if named is None:
                        continue
                    person = named.group(1).strip(" .")
                side = find_side(person, passages)
                return Bridged(work, sentence, cite, side) if side is not None else None
    return None


def _plain(work: str) -> str:
    """A work's name without a disambiguation ("Nevada (1927 film)") or quotes."""
    return re.sub(r"\s*\([^)]*\)\s*$", "", work).strip(" \"'“”")
