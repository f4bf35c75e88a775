"""Offline verdicts for comparison questions: "yes", "no", or the name of the side asked for.

An extractive answer quotes sentences, so the "yes" or "no" a question like "Are A and B both
film directors?" wants is never in it, and "Which band was formed first, A or B?" leaves the
reader to compare. The question's form is read first, then what the passages say of each side
(tgr.offline.comparison_sides: its defining sentence, "A is a ..."):

- "Are/Is/Were/Was (both) A and B (both) X?": a side holds X when its predicate holds every word
  of X by stem ("an Indian film and documentary Director" holds "film directors"); it excludes X
  when X names a nationality and the predicate names others but not it ("a Hungarian film
  director" is no "American director"), or when X's head noun is nowhere in its passage while the
  other side's predicate holds X. Yes when both hold X, No when one excludes it.
- "... (in/from/of) the same K?": K a country or nationality (the nationalities each definition
  names, else the countries), a US state, or a kind written beside a name ("Jiangsu province"):
  Yes when both name one and the same, No when both name one and they differ.
- "Which/Who ... is X, A or B?": the side that holds X when the other excludes it (as above).
- "Which/Who ... first/earlier/older (later, younger, more recently) ..., A or B?": the date
  each side's text gives for the event asked (born: the birth date; formed, founded,
  published ...: the date after that verb), the earlier (later) side named.
Unsure (a side undefined, no date, equal dates, nothing said): no verdict, and the answer is
the sentences as before. A verdict leads the answer, its sides' sentences right after it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .answer_sentences import match_terms
from .comparison_bridges import bridge_role, bridged, pair_works
from .comparison_sides import (Side, birth_date, death_date, event_date, find_side, leading_name, nationalities,
                               places_of_kind)

_YES_NO = re.compile(r"^(?:are|is|were|was|do|does|did)\s+"
                     r"(?:both\s+(?:(?:[a-z]+\s+){0,2}[a-z]+,\s+)?)?(.+?)\s*[?.]*\s*$", re.I)  # "both magazines, A and B"
_SAME = re.compile(r"\bsame\s+([a-z]+)\b")
_NATIONAL_KINDS = {"country", "nationality", "citizenship", "origin"}
_EARLY = re.compile(r"\b(?:first|earlier|earliest|older|oldest|sooner|before)\b", re.I)
_LATE = re.compile(r"\b(?:later|latest|last|younger|youngest|more\s+recent(?:ly)?|most\s+recent(?:ly)?|newer|newest)\b",
                   re.I)
_DIED = re.compile(r"\b(?:die|died|dies|death)\b", re.I)
_PERSON_AGE = re.compile(r"\b(?:born|birth|older|oldest|younger|youngest)\b", re.I)
# the events a date is asked of, each as the words that say it ("former" is no forming)
_EVENTS = {"born": r"born|birth", "form": r"form(?:ed|ing|ation)?", "found": r"(?:co-?)?found(?:ed|ing|ation)",
           "establish": r"establish(?:ed|ing|ment)?", "publish": r"publish(?:ed|ing)?|publication",
           "release": r"releas(?:e|ed|ing)|came\s+out|come\s+out", "create": r"creat(?:e|ed|ing|ion)", "open": r"open(?:ed|ing)",
           "build": r"built|construct(?:ed|ion)", "launch": r"launch(?:ed|ing)?", "start": r"start(?:ed|ing)?",
           "debut": r"debut(?:ed)?", "premiere": r"premiere(?:d)?", "begin": r"began|begun|beginning"}
_AFTER_LAST_CUT = re.compile(rf",|\s+or\s+|{_EARLY.pattern}|{_LATE.pattern}", re.I)
_WHICH = re.compile(r"^\s*(?:which|who|what)\b", re.I)
_HOLDS = re.compile(r"^\s*(?:which|who)\s+(?:[a-z]+\s+)?(?:is|was|are|were)\s+(?:an?\s+)?([^,]+?)\s*,\s*", re.I)
_LOWER_LEAD = re.compile(r"^(?:(?:the|a|an|of|between|[a-z]+ing|birth|death|founding|formation|release|"
                         r"publication|creation|establishment|opening)\s+)+(?=[A-Z\"“])")


@dataclass
class Verdict:
    """A comparison's answer: the lead ("Yes", "No" or a side's name) and the sentences behind it."""

    lead: str
    support: list[tuple[str, str]]  # (sentence, citation), each side's in the question's order


def comparison_verdict(question: str, passages: Sequence[tuple[str, str]]) -> Verdict | None:
    """The verdict on a comparison question from the (citation, text) passages, or None when the
    question is no comparison of these forms or the passages do not settle it."""
    question = " ".join(question.split())
    role = bridge_role(question)
    if role is not None:  # "Which film has the director who died first, A or B?": through each side's director
        return _through_bearers(question, role, passages)
    if _WHICH.match(question):
        options = _options(question)
        if options is None:
            return None
        if _EARLY.search(question) or _LATE.search(question):
            return _by_date(question, options, passages)
        return _which_holds(question, options, passages)
    asked = _YES_NO.match(question)
    parts = asked and _pair(asked.group(1))
    if not parts:
        return None
    first, second, what = parts
    sides = [find_side(first, passages), find_side(second, passages)]
    if None in sides:
        return None
    same = _SAME.search(what)
    answer = _same(sides, same.group(1)) if same else _both(sides, what)
    if answer is None:
        return None
    return Verdict("Yes" if answer else "No", [(s.sentence, s.cite) for s in sides])


def _through_bearers(question: str, role: str, passages: Sequence[tuple[str, str]]) -> Verdict | None:
    """A comparison of two works' bearers of a role (tgr.offline.comparison_bridges): by their
    dates of birth or death ("Which film has the director born first, A or B?"), or by their
    nationalities ("Are the directors of films A and B from the same country?"). Each side's
    sentence naming its bearer, then the bearer's sentence, follow the verdict."""
    if _WHICH.match(question):
        options = _options(question)
        if options is None or not (_EARLY.search(question) or _LATE.search(question)):
            return None
        works = [bridged(option, role, passages) for option in options]
        if None in works:
            return None
        died = _DIED.search(question) is not None
        dated = []
        for work in works:
            when = death_date(work.bearer) if died else birth_date(work.bearer)
            if when is None:
                return None
            dated.append((when[0], work.work, [(work.sentence, work.cite), (when[1], work.bearer.cite)]))
        if dated[0][0][0] == dated[1][0][0]:
            return None  # the same year: too close to call
        later = bool(_LATE.search(question)) and not _EARLY.search(question)
        chosen = max(dated) if later else min(dated)
        return Verdict(chosen[1], [pair for d in dated for pair in d[2]])
    same, named = _SAME.search(question), pair_works(question, passages)
    works = [bridged(work, role, passages) for work in named] if same and named else [None]
    if None in works:
        return None
    answer = _same([w.bearer for w in works], same.group(1))
    if answer is None:
        return None
    return Verdict("Yes" if answer else "No", [p for w in works for p in ((w.sentence, w.cite), (w.bearer.sentence, w.bearer.cite))])


def _pair(text: str) -> tuple[str, str, str] | None:
    """(A, B, X) of "A and B (both) X": A up to " and ", B the name that follows, X the rest."""
    first, sep, rest = text.partition(" and ")
    second = leading_name(rest, frozenset()) if sep else ""
    what = re.sub(r"^both\s+", "", rest[len(second):].strip(" ,"))
    first = re.sub(r"^the\s+", "", first.strip(" ,"), flags=re.I)
    if not (first[:1].isupper() or first[:1].isdigit()) or not second or not what:
        return None
    return first, second, what


def _holds(side: Side, what: str) -> bool | None:
    """Does the side's definition say it is X? True: every word of X by stem; False: X names a
    nationality and the definition names others but not it; None: it does not say."""
    wanted = set(match_terms(what))
    if wanted and wanted <= side.terms:
        return True
    asked, named = nationalities(what), side.nationalities
    if asked and named and not asked & named:
        return False
    return None


def _both(sides: list[Side], what: str) -> bool | None:
    """"Are A and B both X?": True when both hold X, False when one excludes it."""
    said = _said(sides, what)
    if False in said:
        return False
    return True if all(said) else None


def _said(sides: list[Side], what: str) -> list[bool | None]:
    """What each side's definition says of X (tgr.offline.comparisons._holds); a side it says
    nothing of is no X when the other is one and X's head noun, unless a nationality, is nowhere
    in its passage."""
    said = [_holds(s, what) for s in sides]
    terms = match_terms(what)
    if not terms or nationalities(what.split()[-1]):  # "American": a Texan's text need not say it
        return said
    for i, side in enumerate(sides):
        if said[i] is None and said[1 - i] and terms[-1] not in match_terms(" ".join(side.passage)):
            said[i] = False
    return said


def _same(sides: list[Side], kind: str) -> bool | None:
    """"... the same K?": whether both definitions name the same one place or nationality of kind K."""
    found = [s.nationalities for s in sides] if kind in _NATIONAL_KINDS else []
    if not found or not all(found):  # no nationality on one side: the places ("a village in Kurram, Pakistan")
        found = [places_of_kind(s.sentence, "country" if kind in _NATIONAL_KINDS else kind) for s in sides]
    if not all(len(f) == 1 for f in found) and not (kind in _NATIONAL_KINDS and all(found)):
        return None
    if found[0] == found[1]:
        return True
    return False if not found[0] & found[1] else None


def _options(question: str) -> tuple[str, str] | None:
    """The two sides of "..., A or B?" (or "... between A and B?"), as the question names them."""
    text = question.strip().rstrip("?. ")
    text = text.split("?")[-1] if " or " in text.split("?")[-1] else text.replace("?", ",")
    cut = text.rfind(" or ")
    if cut < 0:
        found = re.search(r"\b(?:between|out\s+of)\s+(.+?)\s+and\s+(.+)$", text)
        if not found:
            return None
        head, first, second = text[:found.start()], found.group(1), found.group(2)
    else:
        head, second = text[:cut], text[cut + 4:]
        starts = [head.rfind(",") + 1] + [m.end() for m in (_EARLY.search(head), _LATE.search(head)) if m]
        first = head[max(starts):]
    sides = [_LOWER_LEAD.sub("", s.strip(" ,")).strip(" ,") for s in (first, second)]
    if any(not s or "," in s or not (s[0].isupper() or s[0] in "\"“") or len(s.split()) > 8 for s in sides):
        return None
    return sides[0], sides[1]


def _event(text: str) -> str | None:
    """The event a question or a side's phrase asks the date of ("form", "born")."""
    found = [(m.start(), event) for event, words in _EVENTS.items() if (m := re.search(rf"\b(?:{words})\b", text, re.I))]
    return min(found)[1] if found else None


def _by_date(question: str, options: tuple[str, str], passages: Sequence[tuple[str, str]]) -> Verdict | None:
    """"Which ... first, A or B?": the side whose event is dated earlier (later: "younger")."""
    later = bool(_LATE.search(question)) and not _EARLY.search(question)
    asked = _event(question) or ("died" if _DIED.search(question) else "born" if _PERSON_AGE.search(question) else None)
    dated = []
    for option in options:
        side = find_side(option, passages)
        before = question[:question.find(option)] if option in question else ""
        phrase = _AFTER_LAST_CUT.split(before)[-1]  # "the birth of Robert Young", "the death of X"
        event = _event(phrase) or ("died" if _DIED.search(phrase) else asked)
        if side is None or event is None:
            return None
        when = birth_date(side) if event == "born" else death_date(side) if event == "died" else \
            event_date(side, _EVENTS[event])
        if when is None:
            return None
        dated.append((when[0], option, when[1], side.cite))
    if dated[0][0][0] == dated[1][0][0]:
        return None  # the same year: too close to call
    first = max(dated) if later else min(dated)
    return Verdict(first[1], [(d[2], d[3]) for d in dated])


def _which_holds(question: str, options: tuple[str, str], passages: Sequence[tuple[str, str]]) -> Verdict | None:
    """"Which singer is American, A or B?": the side that holds X when the other excludes it."""
    asked = _HOLDS.match(question)
    if not asked or re.search(r"(?:er|est)$", asked.group(1)) or not match_terms(asked.group(1)):
        return None  # "larger", "more popular": no definition says it
    sides = [find_side(option, passages) for option in options]
    if None in sides:
        return None
    said = _said(sides, asked.group(1))
    if sorted(said, key=str) != [False, True]:
        return None
    chosen = options[said.index(True)]
    return Verdict(chosen, [(s.sentence, s.cite) for s in sides])
