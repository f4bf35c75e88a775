"""Who is whose kin, as the passages say it: the facts a kin chain (tgr.offline.kin_chain) walks.

A passage about a person (its opening names them: "Ögedei (c.1186 – 1241) was the third son of
Genghis Khan") says how its subject stands to others. Read, in the sentences about the subject
(the opening, and those starting with "He"/"She"/"His"/"Her"/"They" or the subject's name):

- "was/is/as (the third) son/wife/father-in-law of A (and his wife B)": the subject is that kin of A
  (of both parents, the one named second a mother unless the text says otherwise);
- "His/Her (elder) son/father/wife (, | was) A": A is that kin of the subject;
- "married (to) A": A is the subject's spouse;
- "(They had five) children: A, B and C", "had a son, A": the subject's children.

Each fact keeps its sentence and citation, which the chain quotes. A person's sex comes from the
kin words said of them (son, wife), a title (Queen, Emperor), else the pronouns of their own
passage; unknown where nothing says it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .answer_sentences import whole_sentences
from .comparison_sides import leading_name
from ..text import split_sentences

MALE_KIN = {"father", "son", "husband", "brother", "grandfather", "grandson", "uncle", "nephew",
            "father-in-law", "son-in-law", "stepfather", "stepson", "widower"}
FEMALE_KIN = {"mother", "daughter", "wife", "sister", "grandmother", "granddaughter", "aunt", "niece",
              "mother-in-law", "daughter-in-law", "stepmother", "stepdaughter", "widow", "consort"}
KIN_WORDS = MALE_KIN | FEMALE_KIN | {"parent", "child", "spouse", "sibling", "grandchild", "grandparent"}
PARENTS, CHILDREN = {"father", "mother", "parent"}, {"son", "daughter", "child"}
SPOUSES, SIBLINGS = {"husband", "wife", "spouse", "widow", "widower", "consort"}, {"brother", "sister", "sibling"}
_MALE_TITLES = {"king", "emperor", "prince", "duke", "tsar", "czar", "sir", "lord", "count", "archduke", "sultan",
                "baron", "earl", "marquess", "mr", "pope", "khan", "grand"}
_FEMALE_TITLES = {"queen", "empress", "princess", "duchess", "tsarina", "lady", "countess", "archduchess",
                  "baroness", "mrs", "miss", "madame", "dame", "grand duchess"}
_TITLES = (_MALE_TITLES | _FEMALE_TITLES | {"saint", "st", "emir", "shah"}) - {"grand", "shah", "khan"}
_KIN = r"(father|mother|parent|son|daughter|child|husband|wife|spouse|brother|sister|sibling|grandfather|" \
       r"grandmother|grandson|granddaughter|grandchild|uncle|aunt|nephew|niece|widow|widower|consort|" \
       r"(?:father|mother|son|daughter)-\s?in-\s?law|step(?:father|mother|son|daughter))"
CAPITAL = "[A-ZÀ-ÖØ-ÞĀ-Ž]"  # a capital, Latin-1 and Latin Extended-A ("Ögedei", "Šimon")
NAME = rf"(?:{CAPITAL}[\w'’.-]*|[IVX]+\b)(?:\s+(?:(?:of|de|von|van|der|da|di|du|la|le|bin|ibn|al)\s+)?(?:{CAPITAL}[\w'’-]*\.?|[IVX]+\b))*"
_MODS = r"(?:(?!of\b|to\b|by\b)[a-z\d-]+\s+){0,6}?"
_OF_KIN = re.compile(rf"(?:\b(?:was|is|became|as|being)\s+|\band\s+)(?:the\s+|an?\s+)?{_MODS}{_KIN}\s+(?:of|to)\s+"
                     rf"(?:the\s+)?(?:{NAME}['’]s\s+)?(?:[a-z]+\s+){{0,2}}({NAME})")
_SECOND = re.compile(rf"^(?:\s*\([^)]*\))?(?:\s*,\s*[^,]{{1,40}},)?\s*,?\s*and\s+(?:(?:his|her)\s+(?:[a-z]+\s+)?"
                     rf"(wife|husband|consort)\s+)?({NAME})")
_OWN_KIN = re.compile(rf"^(?:His|Her|Their)\s+(?:[a-z]+\s+){{0,2}}?{_KIN}\s*(?:,\s*|\s+(?:was|is)\s+|\s+)({NAME})")
_MARRIED = re.compile(rf"\bmarried\s+(?:to\s+)?(?:the\s+)?(?:[a-z]+\s+){{0,2}}?({NAME})")
_CHILDREN = re.compile(rf"\b(?:children|sons|daughters)\b[^.:;]{{0,50}}?[:,]\s*((?:{NAME})(?:\s*(?:,|and|, and)\s*{NAME})*)")
_HAD_CHILD = re.compile(rf"\bhad\s+(?:a|an|one|the)\s+(?:[a-z]+\s+)?(son|daughter|child)\s*,?\s*(?:named\s+|called\s+)?({NAME})")
_DESCRIBED = re.compile(rf"^\s+(?:(?!and\b|or\b|in\b|at\b|on\b|from\b|with\b|who\b|which\b)[a-z]+\s+){{1,2}}({NAME})")
_ABOUT = re.compile(r"^(?:He|She|His|Her|They|Their)\b")


@dataclass
class Fact:
    """`who` is the `kin` of `whom` ("Ögedei" is the "son" of "Genghis Khan"), said in sentence."""

    who: str
    kin: str
    whom: str
    sentence: str
    cite: str
    place: int = 0  # of two parents named together, 0 the first, 1 the second


@dataclass
class KinFacts:
    """The facts of the passages, the people they are about, and what is known of each one's sex."""

    facts: list[Fact]
    subjects: list[tuple[str, str, list[str]]]  # (subject, citation, sentences) of each passage
    sexes: dict[str, str]  # a bare name -> "m" or "f"

    def sex(self, name: str) -> str | None:
        return self.sexes.get(bare(name))


def bare(name: str) -> str:
    """A name without its titles, parentheses and trailing dots: "Emperor Lothair I" -> "Lothair I"."""
    words = re.sub(r"\([^)]*\)", " ", name).replace(",", " ").split()
    while len(words) > 1 and words[0].lower().strip(".") in _TITLES | {"grand"}:
        words = words[1:]
    return " ".join(words).strip(" .'’")


def same_one(a: str, b: str) -> bool:
    """Two names of one person: the same first word, and one's words all in the other's; or the
    one's two or more words ending the other ("Kim Jong-il" of "Supreme Leader Kim Jong-il")."""
    x = [w for w in bare(a).casefold().split() if w not in {"of", "de", "von", "van"}]
    y = [w for w in bare(b).casefold().split() if w not in {"of", "de", "von", "van"}]
    if not x or not y:
        return False
    short, long = sorted((x, y), key=len)
    if len(short) >= 2 and long[-len(short):] == short:
        return True
    return x[0] == y[0] and (set(x) <= set(y) or set(y) <= set(x))


def read_facts(passages: Sequence[tuple[str, str]]) -> KinFacts:
    """Every kin fact the passages' sentences about their subjects say."""
    found = KinFacts([], [], {})
    for cite, text in passages:
        sentences = whole_sentences([" ".join(text[a:b].split()) for a, b in split_sentences(text)])
        subject = bare(leading_name(re.sub(r"\([^()]*\)", " ", re.sub(r"\([^()]*\)", " ", text[:400]))))
        if len(subject) < 3:
            continue
        found.subjects.append((subject, cite, sentences))
        _pronoun_sex(found, subject, text)
        opened = False
        for n, sentence in enumerate(sentences):
            opening = not opened and re.search(r"\s(?:is|was|are|were)\s", sentence) is not None
            opened = opened or opening
            if opening:  # the whole opening, where a parenthesis cut it ("(2 January O.S.) in St. Petersburg")
                _read(found, subject, " ".join(sentences[:n + 1]), cite)
            elif _ABOUT.match(sentence) or sentence.startswith(subject.split()[0]):
                _read(found, subject, sentence, cite)
    return found


def _pronoun_sex(found: KinFacts, subject: str, text: str) -> None:
    he = len(re.findall(r"\b(?:he|his|him)\b", text, re.I))
    she = len(re.findall(r"\b(?:she|her|hers)\b", text, re.I))
    if he != she:
        found.sexes.setdefault(subject, "m" if he > she else "f")


def _note_sex(found: KinFacts, name: str, kin: str, said: str = "") -> None:
    """What a kin word (or a title written before the name) tells of a person's sex."""
    title = said.split()[0].lower().strip(".") if said.split() else ""
    if kin in MALE_KIN or title in _MALE_TITLES:
        found.sexes[bare(name)] = "m"
    elif kin in FEMALE_KIN or title in _FEMALE_TITLES:
        found.sexes[bare(name)] = "f"


def _read(found: KinFacts, subject: str, sentence: str, cite: str) -> None:
    """The facts one sentence about the subject says."""
    add = lambda who, kin, whom, place=0: found.facts.append(Fact(bare(who), kin, bare(whom), sentence, cite, place))
    for match in _OF_KIN.finditer(sentence):
        kin, whom = _kin_word(match.group(1)), match.group(2)
        described = _DESCRIBED.match(sentence[match.end():])
        if described and " " not in whom:  # "of Bollywood actor Varun Dhawan": the name after the description
            whom = described.group(1)
        _note_sex(found, subject, kin)
        add(subject, kin, whom)
        _note_sex(found, whom, "", whom)
        second = _SECOND.match(sentence[match.end():]) if kin in CHILDREN else None
        if second:
            add(subject, kin, second.group(2), 1)
            _note_sex(found, second.group(2), second.group(1) or "", second.group(2))
    own = _OWN_KIN.match(sentence)
    if own:
        add(own.group(2), _kin_word(own.group(1)), subject)
        _note_sex(found, own.group(2), _kin_word(own.group(1)), own.group(2))
    for match in _MARRIED.finditer(sentence):
        add(match.group(1), "spouse", subject)
    for match in _CHILDREN.finditer(sentence):
        for child in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", match.group(1)):
            if len(child) > 2:
                add(child, "child", subject)
    for match in _HAD_CHILD.finditer(sentence):
        add(match.group(2), match.group(1), subject)
        _note_sex(found, match.group(2), match.group(1))


def _kin_word(word: str) -> str:
    return re.sub(r"\s", "", word.lower())
