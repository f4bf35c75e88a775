"""What the passages say of one side of a comparison: its defining sentence, what it is, where, when.

tgr.offline.comparisons reads a question about two named things ("Are A and B both X?", "Who
was born first, A or B?") and asks this module, for each side, the sentence that defines it:
the first sentence of the ranked passages whose subject, before its "is"/"was", is that name
(all its words, the last one last: "Christopher Edward Nolan (born 1970) is ..." for
"Christopher Nolan", never "Jonathan Nolan is ..." nor "The Nolan Institute is ..."; a one-word
name that word alone; or a name it is "better known as"). From it: the predicate (what follows
the copula up to a clause: "an American film director, producer"), the nationalities it
names, the places of a kind ("Jiangsu province", a US state), and dates: a birth date from the
parentheses after the subject or after "born", an event's date from the first sentence of its
passage that holds the event's verb ("formed in 1997", "published since July 1980").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from .answer_sentences import match_terms, whole_sentences
from .demonyms import demonyms, gazetteer
from .name_words import MONTH_NAMES, MONTH_PATTERN
from ..text import split_sentences

MAX_SUBJECT = 160  # characters before the copula: longer, the sentence is about something else
EVENT_REACH = 80   # characters after an event's verb its date is read in ("formed in Portland, Oregon in 1994")
_COPULA = re.compile(r"\s(?:is|was|are|were)\s+(?=[a-z])")
_PARENTHESES = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_KNOWN_AS = re.compile(r"\b(?:known|called)\s+(?:by\s+(?:his|her|their|the)\s+(?:[a-z]+\s+)?(?:name|mononym)\s+|as\s+)"
                       r"[\"“]?([A-Z][^,;]*?)[\"”]?\s*(?:,|$)")
# lowercase words inside a name ("Géza von Cziffra"), and a title's small words ("If I Have to
# Stand Alone"): a name asked without them is not the one written with them ("Science News for
# Students", "Directed by Raoul Walsh from the novel, X is ...")
_CONNECTORS = {"of", "the", "de", "von", "van", "der", "den", "da", "la", "le", "du", "al", "bin", "y", "and", "&"}
_TITLE_WORDS = {"to", "a", "an", "in", "on", "for", "with", "at", "from", "by", "or"}
_PREDICATE_END = re.compile(r"\s(?:who|which|that|whose|where|when|while|since|whom)\b|[;:(]|\.(?:\s|$)|"
                            r",\s(?:and\s)?(?:best|known|born|based|located|situated|founded|formed|"
                            r"published|released|created|established)\b")
# creeds and parties are demonyms to tgr.offline.demonyms but say nothing of a nationality
_NOT_NATIONAL = frozenset("""christian muslim islamic catholic protestant buddhist hindu sikh orthodox anglican
    lutheran methodist baptist mormon evangelical presbyterian pentecostal democratic democrat democrats
    republican republicans liberal liberals conservative conservatives socialist communist labour unionist
    nationalist jewish latin hispanic latino latina gaelic celtic roman""".split())
_DATE = re.compile(rf"(?:(\d{{1,2}})\s+({MONTH_PATTERN})\s+|({MONTH_PATTERN})\s+(?:(\d{{1,2}}),?\s+)?)?"
                   r"(?<![\d,.])(1[0-9]{3}|20[0-9]{2})(?![\d,])")
_MONTHS = {m.lower(): n for n, m in enumerate(MONTH_NAMES, 1)}


@dataclass
class Side:
    """One side of a comparison as the passages define it."""

    name: str
    sentence: str   # its defining sentence
    cite: str
    predicate: str  # what the sentence says it is
    passage: list[str] = field(default_factory=list)  # the sentences of its passage

    @property
    def terms(self) -> set[str]:
        return set(match_terms(self.predicate))

    @property
    def nationalities(self) -> set[str]:
        return nationalities(self.predicate)


def nationalities(text: str) -> set[str]:
    """The nationality adjectives a text names ("English-American" -> english, american)."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    return {w for w in words & demonyms() if w not in _NOT_NATIONAL}


def find_side(name: str, passages: Sequence[tuple[str, str]]) -> Side | None:
    """The side named name, from the first sentence of the ranked passages that defines it."""
    for cite, text in passages:
        sentences = whole_sentences([" ".join(text[a:b].split()) for a, b in split_sentences(text)])
        for sentence in sentences:
            copula = _COPULA.search(sentence)
            if copula and not sentence[copula.end():].startswith("not ") and _names(sentence[:copula.start()], name):
                rest = sentence[copula.end():]
                end = _PREDICATE_END.search(rest)
                return Side(name, sentence, cite, rest[:end.start()] if end else rest, sentences)
    return None


def _names(subject: str, name: str) -> bool:
    """The subject before a copula is the name: its leading name holds all the name's words and
    ends with its last word ("Nicholas Lofton "Nick" Hexum" for "Nick Hexum"), or it says the
    thing is known as the name."""
    if len(subject) > MAX_SUBJECT:
        return False
    plain = _PARENTHESES.sub(" ", _PARENTHESES.sub(" ", subject))
    known = _KNOWN_AS.search(plain)
    written = leading_name(plain)
    if {w.lower() for w in written.split()} & _TITLE_WORDS - {w.lower() for w in name.split()}:
        written = ""
    return _same_name(written, name) or bool(known and _same_name(known.group(1), name))


def leading_name(subject: str, small: set[str] | frozenset[str] = _TITLE_WORDS) -> str:
    """The capitalised words a subject opens with (and the connectors between them, small: a
    title's small words too), up to a comma or another lowercase word."""
    words = []
    for word in subject.split():
        bare = word.strip("\"“”'‘’")
        if not bare or not (bare[0].isupper() or bare[0].isdigit() or bare.lower() in _CONNECTORS | small):
            break
        words.append(word.rstrip(","))
        if word.endswith(","):
            break
    while words and words[-1].lower() in _CONNECTORS | small:
        words.pop()
    return " ".join(words)


def name_words(name: str) -> list[str]:
    """A name's words, folded, without quotes, a possessive's s nor a leading "the"."""
    words = [re.sub(r"['’]s$", "", w.strip("\"“”'‘’,.").casefold()) for w in name.split()]
    words = [w for w in words if w]
    return words[1:] if words[:1] == ["the"] and len(words) > 1 else words


def _same_name(written: str, name: str) -> bool:
    have, want = name_words(written), name_words(re.sub(r"\s*\([^()]*\)$", "", name))  # "Nevada (1927 film)"
    if len(want) == 1:  # "Medici": that word alone, never a surname of someone else's full name
        return have == want
    return bool(have) and have[-1] == want[-1] and set(want) <= set(have)


def places_of_kind(sentence: str, kind: str) -> set[str]:
    """The places of a kind a sentence names: countries and US states by name after "in", "of"
    or a comma, any other kind written beside a name ("Jiangsu province", "Province of Ontario",
    "Rapides Parish")."""
    if kind in ("country", "state"):
        found, rest = set(), sentence
        for place in gazetteer("countries.json" if kind == "country" else "us_states.json"):
            where = rf"(?:\bin|\bof|,)\s+(?:the\s+)?{re.escape(place)}\b"  # "in Kurram, Pakistan"; never "Chad Smith"
            if re.search(where, rest):
                found.add(place)
                rest = re.sub(where, " ", rest)
        return found
    name = r"([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)"
    return set(re.findall(rf"{name}\s+(?i:{kind})\b", sentence)) | set(re.findall(rf"\b(?i:{kind})\s+of\s+{name}", sentence))


def date_of(text: str) -> tuple[int, int, int] | None:
    """The first date of a text as (year, month, day), 0 for a part it leaves out."""
    found = _DATE.search(text)
    if not found:
        return None
    day, month = found.group(1) or found.group(4), found.group(2) or found.group(3)
    return int(found.group(5)), _MONTHS.get((month or "").lower(), 0), int(day or 0)


def birth_date(side: Side) -> tuple[tuple[int, int, int], str] | None:
    """A person's birth date and the sentence giving it: "born <date>" in the defining sentence,
    or the first date of the parentheses after its subject ("(July 9, 1921 - 1978)")."""
    sentence = side.sentence
    born = re.search(r"\bborn\b([^;)]*)", sentence)
    if born and date_of(born.group(1)):
        return date_of(born.group(1)), sentence
    opening = re.match(r"[^()]{0,80}?\(([^()]*)\)", sentence)
    if opening and date_of(opening.group(1)):
        return date_of(opening.group(1)), sentence
    return None


def event_date(side: Side, words: str) -> tuple[tuple[int, int, int], str] | None:
    """The date of an event and the sentence giving it: the first date shortly after a word of
    the event (words: a pattern, "formed|forming") in the first sentence of the side's passage
    holding both; else the first date in the parentheses after its subject ("Arthur's Magazine
    (1844-1846)"), else the year its predicate opens with ("a 1939 Italian comedy film")."""
    for sentence in side.passage:
        verb = re.search(rf"\b(?:{words})\b", sentence, re.I)
        when = verb and date_of(sentence[verb.end():verb.end() + EVENT_REACH])
        if when:
            return when, sentence
    opening = re.match(r"[^()]{0,80}?\(([^()]*)\)", side.sentence)
    if opening and date_of(opening.group(1)):
        return date_of(opening.group(1)), side.sentence
    year = re.match(r"(?:an?|the)\s+(1[0-9]{3}|20[0-9]{2})\s+[a-zA-Z]", side.predicate)  # "a 1939 Italian comedy film"
    if year:
        return (int(year.group(1)), 0, 0), side.sentence
    return None


def death_date(side: Side) -> tuple[tuple[int, int, int], str] | None:
    """A person's date of death and the sentence giving it: the date after the dash of the
    parentheses after its subject ("(August 17, 1909 – January 23, 2006)"), else the first date
    shortly after "died" in its passage."""
    opening = re.match(r"[^()]{0,80}?\(([^()]*)\)", side.sentence)
    if opening:
        parts = re.split(r"\s[–—-]\s|[–—]|\s-", opening.group(1))
        if len(parts) == 2 and date_of(parts[1]) and date_of(parts[0]):
            return date_of(parts[1]), side.sentence
    for sentence in side.passage:
        died = re.search(r"\bdied\b", sentence)
        when = died and date_of(sentence[died.end():died.end() + EVENT_REACH])
        if when:
            return when, sentence
    return None
