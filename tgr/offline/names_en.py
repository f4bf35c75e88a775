"""English names without a model: runs of capitalised words, filtered and typed.

A run of capitalised words (any script's letters: "Adolf Schärf", "Zoë") may contain
connectors ("Lord of the Rings", "Ludwig van Beethoven") and keeps its initials and
dotted abbreviations ("G. Stanley Hall", "U.S."); a leading "The" is dropped so that all
mentions agree. A possessive ends a name ("Hello Love's director" -> "Hello Love"), and a
surname alone joins the one full name the text gives it ("Stockdale" -> "James Bond
Stockdale"). Generic capitalised words ("President", "March",
"Country") are not names on their own, nor is a capitalised word that the same text also
writes in lower case, nor a sentence's first word unless it is capitalised mid-sentence
too. Types come from cheap cues: honorifics and speech verbs (person), place prepositions
and words such as "River" (location), "University" or "Inc" (organization), month and
day names (date); the words around the name ("directed by X", "actor X", "X (born 1950)",
"X, Florida": context_type); a quoted title mid-sentence (work); the gazetteer and the
census first names; and names listed together share a type. Everything else is a concept.
Adjectives of origin ("Canadian", "Italian-American": tgr.offline.demonyms) are no names; a
language ("Telugu-language") is one.
"""
from __future__ import annotations

import re

from .demonyms import language_of, only_demonyms, strip_adjective_suffix
from .entity_types import (COMMON_ACRONYMS, census_first_names, common_words, given_and_family_name, place_kind,
                           type_by_words)
from .name_words import DAYS, MONTH_PATTERN, MONTHS
from ..text import CJK_RANGES, STOPWORDS

Name = tuple[str, str]  # (name, type)

_LETTER, _ALNUM = rf"[^\W\d_{CJK_RANGES}]", rf"[^\W_{CJK_RANGES}]"  # any script's letters but CJK
_WORD = re.compile(rf"{_LETTER}{_ALNUM}*(?:[-'’]{_ALNUM}+)*['’]?")
_POSSESSIVE = re.compile(r"(?<=\w)['’]s?$")
_DOTTED_NAME = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
_MAX_WORDS = 8
_QUOTE = re.compile(r"['’]")
_SPACES = re.compile(r"\s+")

_HONORIFICS = frozenset("mr mrs ms miss dr mister madam sir dame president senator governor "
                        "professor prof doctor captain capt general gen colonel col lieutenant "
                        "sergeant judge justice mayor chancellor".split())
_OWN_TITLES = frozenset("mrs miss ms madam".split())
# capitalised words before a person's name that are no part of it ("Starring Rajendra Prasad")
_PERSON_OPENERS = frozenset("""starring featuring businessman businesswoman actor actress singer
    rapper songwriter director producer composer poet novelist author writer painter guitarist
    drummer detective constable inspector maj lt sgt cpl vice coach journalist comedian""".split())  # a woman's: another person than the surname's man
_ROYAL = frozenset("king queen prince princess emperor empress pope saint st lord lady duke "
                   "duchess earl count countess baron bishop archbishop".split())
_CONNECTORS = frozenset("of the de van von la le du der den da di del dos das al bin ibn upon".split())
_NOT_NAMES = frozenset("""i oh ah yes no o ay aye well now then there here what why how who where
    when this that these those it he she we they you his her my our their your the a an but and
    or if so for in on at to of as by all not nor yet nay let come chapter book project hark bah
    ha eh hem hallo halloa hollo hush alas pooh mind see its it's i'm i'll i'd i've we're
    you're they're don't can't won't isn't whereat whereupon wherefore whereas wherein thereupon
    thereat therefore hereupon hereafter nevertheless nonetheless moreover furthermore besides
    likewise otherwise instead accordingly presently forthwith anon lo behold albeit ere
    whither thither hither thence hence""".split())
_MONTHS, _DAYS = MONTHS, DAYS
# capitalised in titles and at the start of a sentence, but not names on their own
_GENERIC = _MONTHS | _DAYS | _HONORIFICS | _ROYAL | frozenset("""
    country city state states county province region district town village capital nation
    republic kingdom empire island islands river lake mountain mountains sea ocean street road
    north south east west northern southern eastern western central new old great little first
    second third last early late later after before during since until today yesterday tomorrow
    university college school academy institute church party army navy government council court
    company corporation group team club league band album song film movie series season episode
    show novel story magazine newspaper station airport museum hospital library prize award
    television radio internet std jan feb mar apr jun jul aug sep sept oct nov dec
    world international national american british english french german european western
    century year years day days week month time act article section part volume edition
    minister secretary chairman director chief officer member leader head founder author writer
    father mother son daughter brother sister uncle aunt wife husband family man woman men women
    god heaven hell spirit ghost however meanwhile although though while also still
    soon suddenly finally perhaps indeed once again even yet thus hence therefore because up
    according following despite many most some several each every both either neither other
    another such only one two three four five six seven eight nine ten eleven twelve twenty
    hundred thousand million billion op vol no inc ltd co corp llc plc jr sr stave chapter
    heading tailpiece frontispiece illustration illustrations contents preface""".split()) | COMMON_ACRONYMS
_PERSON_VERBS = frozenset("said cried replied asked exclaimed answered thought says told wrote "
                          "married".split())
_PLACE_PREPOSITIONS = frozenset("in at from to into near towards across".split())
_LOCATION_WORDS = frozenset("""river lake mountain mountains mount sea ocean bay island islands
    street road avenue square park valley county city province state kingdom republic bridge
    castle harbour harbor coast desert forest hill hills peninsula canal fort port cape
    strait gulf""".split())
_ORGANIZATION_WORDS = frozenset("""university college institute school academy company corporation
    corp inc ltd llc plc group party church army navy council society association club
    foundation bank records studios league committee commission ministry department agency
    union federation museum hospital fc""".split())
_PLURAL_OWNERS = frozenset("women men children people girls boys ladies gentlemen nations "
                           "bachelor master".split())
# "X (born 1950) was", "X is a": the subject of a defining sentence is a name even at its start
_DEFINING = re.compile(r"\s*[(（]|\s+(?:is|was|are|were)\s+(?:a|an|the)\s")
_NUMBER_AFTER = re.compile(r" \d{1,3}(?![\d,.]?\d|\w)")  # "Big Hero 6", "Channel 4" (not a year)
_DATE_WORDS = _MONTHS | _DAYS | frozenset("day eve".split())
_HOLIDAYS = frozenset("""christmas easter thanksgiving halloween hallowe'en michaelmas whitsun
    whitsuntide epiphany candlemas hanukkah chanukah passover ramadan diwali christmas-time
    christmastide yuletide yule twelfth-night""".split()) | {"new year"}
_GREETINGS = frozenset("merry happy".split())  # "Merry Christmas" names Christmas
_PUNCTUATION = ".,;:!?\"'()[]{}“”‘’«»—–-"
_TRAILING_JUNK = _CONNECTORS | _NOT_NAMES
_QUOTES_AND_OPENERS = "\"“‘'(:;—–-[«"


def english_names(sentences: list[str], text: str | None = None) -> list[list[Name]]:
    """The names found in each sentence (one list per sentence, in order).

    text: the whole text the sentences come from; a word it writes in lower case
    ("the president") is not a name on its own even where it is capitalised.
    """
    lower = {_without_possessive(w.strip(_PUNCTUATION)) for w in
             set((text if text is not None else " ".join(sentences)).split()) if w.islower()}
    spans_per_sentence = [_capitalised_spans(s, lower) for s in sentences]
    mid_sentence = {name for spans in spans_per_sentence for name, _, inside, *_ in spans if inside}
    mid_sentence |= {name.split()[-1] for spans in spans_per_sentence for name, *_ in spans
                     if " " in name}  # "Stockdale ran" after "James Bond Stockdale"
    result = []
    for sentence, spans in zip(sentences, spans_per_sentence):
        names = []
        for name, kind, inside, titled, start in spans:
            if " " not in name:
                key = _without_possessive(name).lower()
                if key in _GENERIC or key in lower or key in STOPWORDS:
                    continue
                if not inside and name not in mid_sentence:
                    continue
            names.append((name, kind, titled, start))
        result.append(_share_list_types(sentence, names))
    result = _people_by_text(sentences, result, lower)
    surnames = _surnames([n for names in result for n in names])
    return [[(name if titled else surnames.get(name, name), kind) for name, kind, titled in names]
            for names in result]


_LIST_GAPS = frozenset([", ", " and ", ", and ", " & ", " or ", ", or ", " and the ", ", and the "])


def _share_list_types(sentence: str, names: list[tuple[str, str, bool, int]]) -> list[tuple[str, str, bool]]:
    """Names listed together ("stars Palash Sen, Ira Dubey and Kymsleen Kholie") are of one
    type: an untyped member takes the one type its typed neighbours agree on."""
    groups: list[list[int]] = []
    for k, (name, _, _, start) in enumerate(names):
        if groups and sentence[names[k - 1][3] + len(names[k - 1][0]):start] in _LIST_GAPS:
            groups[-1].append(k)
        else:
            groups.append([k])
    kinds = [kind for _, kind, _, _ in names]
    for group in groups:
        known = {kinds[k] for k in group} - {"concept", "date"}  # "May 5 and Rock Hudson"
        if len(group) > 1 and len(known) == 1:
            for k in group:
                kinds[k] = next(iter(known))
    return [(name, kind, titled) for (name, _, titled, _), kind in zip(names, kinds)]


_HE_OR_SHE = re.compile(r"\s*[\"“‘']?(?:He|She|His|Her)\s")


def _people_by_text(sentences: list[str], result: list[list[tuple[str, str, bool]]],
                    lower: set[str]) -> list[list[tuple[str, str, bool]]]:
    """Untyped names that the text shows to be people (a sentence's subject that the next
    sentence calls he or she, a full name whose last word the text also writes alone) typed
    person, unless the name's own words give it a type ("Boston Mafia") or it is an acronym."""
    people = _subjects_before_he_or_she(sentences, result) | _names_with_a_surname_alone(result, lower) \
        | _families(result)
    people = {name for name in people if not name.isupper() and not type_by_words(name)}
    if not people:
        return result
    return [[(name, "person" if kind == "concept" and name in people else kind, titled) for name, kind, titled in names]
            for names in result]


def _subjects_before_he_or_she(sentences: list[str], result: list[list[tuple[str, str, bool]]]) -> set[str]:
    """"Arne Blomberg, was born in 1930 in Gothenburg, Sweden. He started ...": the untyped name
    a sentence opens with, when the next sentence opens with he or she."""
    return {names[0][0] for names, sentence, following in zip(result, sentences, sentences[1:])
            if names and names[0][1] == "concept" and _HE_OR_SHE.match(following)
            and sentence.lstrip(" \"“‘'").startswith(names[0][0])}


def _families(result: list[list[tuple[str, str, bool]]]) -> set[str]:
    """"the Cratchits" beside "Bob Cratchit": the plural of a person's family name is the family."""
    surnames = {name.split()[-1] for names in result for name, kind, _ in names if kind == "person" and " " in name}
    return {name for names in result for name, kind, _ in names
            if kind == "concept" and " " not in name and name.endswith("s") and name[:-1] in surnames}


def _names_with_a_surname_alone(result: list[list[tuple[str, str, bool]]], lower: set[str]) -> set[str]:
    """"Friedrich Hayek ... Hayek earned doctorates": an untyped full name whose last word the
    text also writes alone. Not a plural ("Golden State Warriors" / "the Warriors"), a place,
    an acronym or an English word ("Chesapeake Bay Retriever"), nor after an English word or a
    demonym ("Central Newfoundland", "English Wikipedia")."""
    alone: dict[str, set[str]] = {}
    for names in result:
        for name, kind, _ in names:
            if " " not in name:
                alone.setdefault(name, set()).add(kind)
    found = set()
    for names in result:
        for name, kind, _ in names:
            parts = name.split()
            if kind != "concept" or len(parts) < 2:
                continue
            first, last = parts[0].split("-")[0], parts[-1]
            if len(last) > 2 and not last.endswith("s") and not last.isupper() \
                    and alone.get(last, {"location"}) <= {"concept", "person"} \
                    and not _CONNECTORS & {p.lower() for p in parts} and first.lower() not in lower \
                    and not {first.lower(), last.lower()} & common_words() and not only_demonyms(first) \
                    and not place_kind(last):
                found.add(name)
    return found


def _surnames(names: list[tuple[str, str, bool]]) -> dict[str, str]:
    """"Stockdale" -> "James Bond Stockdale" when the text names exactly one such person.

    A surname alone would otherwise tie every text about any Stockdale together; a name
    that came with a title ("Mrs. Cratchit") may be another person and keeps its own.
    """
    full: dict[str, set[str]] = {}
    for name, kind, _ in names:
        parts = name.split()
        if len(parts) > 1 and kind in ("person", "concept") and not _CONNECTORS & set(parts) \
                and parts[-1][0].isupper() and not _DOTTED_NAME.fullmatch(parts[-1]):
            full.setdefault(parts[-1], set()).add(name)
    return {short: next(iter(longs)) for short, longs in full.items() if len(longs) == 1}


def _capitalised_spans(sentence: str, lower: set[str]) -> list[tuple[str, str, bool, bool, int]]:
    """(name, type, inside, titled, start) for each run of capitalised words; inside: not
    sentence-initial; titled: it followed an honorific ("Mrs. Cratchit")."""
    words = list(_WORD.finditer(sentence))
    texts = [w.group() for w in words]
    shouting = sum(map(str.isupper, texts)) * 2 > len(words)
    titles = [] if shouting else _quoted_titles(sentence)
    spans = [(title, "work", True, False, a) for title, a, _ in titles]
    in_title = (lambda k: any(a <= words[k].start() < b for _, a, b in titles)) if titles else (lambda k: False)
    j = 0
    for i in [k for k, text in enumerate(texts) if text[0].isupper()]:  # where a run may start
        if i < j or not _capitalised(texts[i], shouting) or in_title(i):
            continue
        j = _run_end(sentence, words, i, shouting)
        while j > i + 1 and in_title(j - 1):
            j -= 1
        span = _name_of(sentence, words, i, j, lower)
        if span:
            spans.append(span)
    spans.sort(key=lambda span: span[4])
    return spans


def _without_possessive(word: str) -> str:
    """The word without a trailing possessive ("dog's" -> "dog"); most words hold no quote."""
    return _POSSESSIVE.sub("", word) if "'" in word or "’" in word else word


def _capitalised(word: str, shouting: bool) -> bool:
    return word[0].isupper() and not (shouting and word.isupper() and len(word) > 1)


def _run_end(sentence: str, words: list[re.Match], i: int, shouting: bool) -> int:
    """Index after the last word of the run of capitalised words starting at i."""
    j = i + 1
    while j < len(words) and j - i < _MAX_WORDS:
        if ("'" in words[j - 1].group() or "’" in words[j - 1].group()) \
                and _POSSESSIVE.search(words[j - 1].group()) and _bare(words[j - 1].group()) not in _PLURAL_OWNERS:
            break  # "Scrooge's Christmas": the possessive ends the name ("Women's World Cup" does not)
        if strip_adjective_suffix(words[j - 1].group()) != words[j - 1].group():
            break  # "a Maine-based South Korean company": the adjective ends the name
        gap = _gap(sentence, words[j - 1], words[j])
        if gap not in (" ", ". ", "."):
            if not (gap == ", " and _comma_continues(words, i, j)):
                break
        if _capitalised(words[j].group(), shouting):
            j += 1
            continue
        k = j  # connectors ("of the") only inside a name
        while k < len(words) and k - j < 2 and words[k].group() in _CONNECTORS \
                and _gap(sentence, words[k - 1], words[k]) == " ":
            k += 1
        if k > j and k < len(words) and _gap(sentence, words[k - 1], words[k]) == " " \
                and _capitalised(words[k].group(), shouting) and words[k].group() != "The" \
                and not ("of" in [w.group() for w in words[j:k]] and "of" in [w.group() for w in words[i:j]]):
            j = k + 1
            continue
        break
    return j


def _gap(sentence: str, before: re.Match, after: re.Match) -> str:
    """What separates two words, a line break of hard-wrapped text read as a space
    ("Christmas\nEve" is one name; a blank line still ends it)."""
    gap = sentence[before.end():after.start()]
    return _SPACES.sub(" ", gap) if gap.count("\n") == 1 else gap


def _comma_continues(words: list[re.Match], i: int, j: int) -> bool:
    """"University of California, Berkeley": a campus after an institution's name, when it is
    a place or a word that stands alone ("..., Davis)"); in "the University of Vienna, Hayek
    earned" the word after the comma starts the sentence's subject."""
    run = [w.group().lower() for w in words[i:j]]
    if not ("of" in run and run[0] in {"university", "college", "institute"}):
        return False
    if j + 1 >= len(words):
        return True
    campus, after = words[j], words[j + 1]
    alone = campus.string[campus.end():after.start()] != " "
    return not after.group()[0].isupper() and (alone or place_kind(campus.group()) is not None)


def _name_of(sentence: str, words: list[re.Match], i: int, j: int,
             lower: set[str]) -> tuple[str, str, bool, bool, int] | None:
    """The name in the run words[i:j] with its type, whether it is mid-sentence, whether
    it followed a title, and where it starts."""
    tokens = list(range(i, j))
    lowered = [_bare(words[k].group()) for k in tokens]
    previous = words[i - 1].group().lower() if i else ""
    before = sentence[:words[i].start()].rstrip()
    inside = bool(previous) and not (before and before[-1] in _QUOTES_AND_OPENERS)
    if not inside and _DEFINING.match(sentence, words[j - 1].end()):
        inside = True
    kind = "person" if len(tokens) > 1 and lowered[0] in _ROYAL else "concept"
    titled = False
    tokens, lowered, kind, inside, titled = _strip_openers(tokens, lowered, kind, inside, lower)
    if not tokens or all(w in STOPWORDS or w in _NOT_NAMES for w in lowered):
        return None
    if len(tokens) > 1 and all(w in _GENERIC or w in _CONNECTORS for w in lowered):
        return None  # "North American", "Early Life"
    start, end = words[tokens[0]].start(), words[tokens[-1]].end()
    name = sentence[start:end]
    if "\n" in name:
        name = " ".join(name.split())  # hard-wrapped
    if _POSSESSIVE.search(name):
        name = _POSSESSIVE.sub("", name)
    elif _DOTTED_NAME.fullmatch(name) and sentence[end:end + 1] == ".":
        name += "."  # "U.S."
    elif lowered[-1] not in _GENERIC and (number := _NUMBER_AFTER.match(sentence, end)):
        name += number.group()  # "Big Hero 6"
    name = strip_adjective_suffix(name.strip("'’-")).strip("'’-")
    if language := language_of(name):
        return language, "language", True, titled, start  # "Telugu-language", "Indian Hindi"
    if len(name) < 2 or only_demonyms(name):
        return None  # "Canadian", "Italian-American": where from, not what
    after = words[tokens[-1] + 1].group().lower() if tokens[-1] + 1 < len(words) else ""
    if kind == "concept" and _life_after(sentence, name, end):
        kind = "person"
    if kind == "concept":
        kind = _type_of(lowered, previous, after)
    if kind == "concept":
        kind = context_type(sentence, start, end) or kind
    if kind == "concept":  # what the gazetteer and census say, so that a list can share it
        kind = place_kind(name) or ("person" if given_and_family_name(name) else kind)
    if kind == "concept" and not previous:  # the subject of "X is an American actor"
        kind = defining_type(sentence) or kind
    if kind == "concept":
        kind = _defined_after(sentence, start, end) or kind
    return name, kind, inside, titled, start


def _life_after(sentence: str, name: str, end: int) -> bool:
    """A birth, death or life span in brackets right after the name ("Amador Salazar Jiménez (30
    April 1868 – 16 April 1916)"), when the name's words say nothing else (a battle has dates
    too) and it is no post-nominal ("Ken Annakin, OBE (10 August 1914 – ...)")."""
    aside = _ASIDE_AFTER.match(sentence, end)
    return bool(aside) and life_aside(aside.group(1)) and not name.isupper() and type_by_words(name) is None


def _defined_after(sentence: str, start: int, end: int) -> str | None:
    """What a defining clause right after a name says it is, when the name is the whole subject
    (no word of the subject before it: "Broken Path/Attack Of The Yakuza is a martial arts film",
    not "No Time for Flowers is a 1952 film") or another name of it ("X, known professionally as
    Y, is an American rapper")."""
    before = sentence[:start]
    if _IS_A_AFTER.match(sentence, end) and not _WORD_AT_END.search(before):
        return defining_type(sentence[end:])
    if _KNOWN_AS.search(before) and (clause := _IS_A.search(sentence, end)) and clause.start() - end < 80:
        return _head_after(sentence, clause.end(), name_heads=True)
    return None


def _strip_openers(tokens: list[int], lowered: list[str], kind: str, inside: bool,
                   lower: set[str]) -> tuple[list[int], list[str], str, bool, bool]:
    """Drop the run's leading words that are no part of the name ("The", "But", "Mr.",
    "Starring") and its trailing ones; a title says the rest is a person."""
    titled = False
    while tokens:
        first = lowered[0]
        if len(tokens) > 1 and first in _OWN_TITLES and lowered[1] not in _CONNECTORS:
            kind, inside, titled = "person", True, True  # "Mrs. Cratchit" is not "Bob Cratchit": kept whole
            break
        if len(tokens) > 1 and first in _HONORIFICS and lowered[1] not in _CONNECTORS:
            kind, inside, titled = "person", True, True  # "Captain Ahab": a title is evidence of a name
        elif len(tokens) > 1 and first in _PERSON_OPENERS and lowered[1] not in _CONNECTORS | _GENERIC:
            kind, inside = "person", True  # "Starring Rajendra Prasad", "Businessman Jaquelin Hume"
        elif first in _GREETINGS and len(tokens) > 1 and " ".join(lowered[1:]) in _HOLIDAYS:
            inside = True  # "a Merry Christmas": the holiday is the name
        elif first in _NOT_NAMES:  # "The Beatles" and "the Beatles" are one name: Beatles
            inside = True  # what follows a dropped opener ("But Scrooge") is no longer sentence-initial
        elif first in _CONNECTORS:
            pass
        elif not inside and len(tokens) > 1 and (first in _GENERIC or first in lower):
            pass  # "Later Scrooge went": Later is no name
        else:
            break
        tokens, lowered = tokens[1:], lowered[1:]
    while tokens and lowered[-1] in _TRAILING_JUNK:
        tokens, lowered = tokens[:-1], lowered[:-1]
    return tokens, lowered, kind, inside, titled


_NOT_TITLE_BEFORE = frozenset("as called named nicknamed dubbed meaning means word words term "
                              "slogan motto phrase".split())


_QUOTED = re.compile(r"[\"“]([^\"“”]{2,100}?)[,.!?]?[\"”]")
_BEFORE_QUOTE = re.compile(r"(\w+|[\"”])(,?)\s$")
_IS_AFTER_QUOTE = re.compile(r"\s+(?:is|was|are|were)\s")
_TITLE_SMALL = frozenset("""a an the and or nor but of in on at to for from by with as into onto
    upon over off out up is are was were be been am it's its i ever not no so than""".split())


def _quoted_titles(sentence: str) -> list[tuple[str, int, int]]:
    """(title, start, end) of each quotation mid-sentence written as a title ("Simpsons
    Roasting on an Open Fire", the single "Cheer Up"): the name of a work. Not speech
    ("Humbug," said Scrooge) nor a nickname (known as "Bud"); a leading "The" is dropped, as
    everywhere, so that all mentions agree."""
    found = []
    for match in _QUOTED.finditer(sentence):
        text, start = match.group(1).strip(), match.start(1)
        words = text.split()
        if not words or len(words) > 12 or not (words[0][:1].isupper() or words[0][:1].isdigit()) \
                or words[0].lower() in _GREETINGS:  # "Merry Christmas!" is said, not a title
            continue
        if not all(w[:1].isupper() or w[:1].isdigit() or w.lower().strip(",:;") in _TITLE_SMALL for w in words):
            continue
        before = _BEFORE_QUOTE.search(sentence[:match.start()])
        defining = _IS_AFTER_QUOTE.match(sentence[match.end():])
        head = before.group(1).lower() if before else ""
        listed = before and (head in "\"”" or before.group(2) and _HEAD_TYPES.get(head.rstrip("s")) == "work")
        # singles, "A," "B," and "C" (a list of titles), not said, "Good Afternoon Sir."
        if not defining and not listed and not (before and not before.group(2)
                                                 and before.group(1).lower() not in _NOT_TITLE_BEFORE):
            continue
        if len(words) > 1 and words[0] in ("The", "the"):
            start = sentence.index(words[1], start)
            text = sentence[start:match.start(1) + len(match.group(1).rstrip())]
        text = text.rstrip(",.;:!?")
        if len(text) >= 2 and text.lower() not in STOPWORDS:
            found.append((text, start, start + len(text)))
    return found


def _type_of(lowered: list[str], previous: str, after: str) -> str:
    last, first = _without_possessive(lowered[-1]), lowered[0]
    if len(lowered) <= 2 and " ".join(lowered) in _HOLIDAYS:
        return "event"  # "at Christmas" is a time, not a place
    if last in _ORGANIZATION_WORDS or first in {"university", "college", "bank"}:
        return "organization"
    if last in _LOCATION_WORDS or first in {"mount", "lake", "fort", "port", "cape", "river"}:
        return "location"
    if last in _DATE_WORDS and len(lowered) > 1 and first not in census_first_names() \
            or first in _MONTHS and len(lowered) == 1:  # "Christmas Day", not "Doris Day"
        return "date"
    if after in _PERSON_VERBS or previous in _PERSON_VERBS or after in {"born", "died"} \
            or len(lowered[-1]) > 1 and any(len(w) == 1 for w in lowered[:-1]):  # "G. Stanley Hall"
        return "person"
    if previous in _PLACE_PREPOSITIONS:
        return "location"
    return "concept"


def _bare(word: str) -> str:
    """Lower-cased word without a possessive or contraction: "Scrooge's" -> "scrooge", "I'll" -> "i"."""
    if "'" not in word and "’" not in word:
        return word.lower()
    if _POSSESSIVE.search(word):
        return _POSSESSIVE.sub("", word).lower()
    return _QUOTE.split(word, maxsplit=1)[0].lower()


_HEADS = {
    "person": """actor actress singer songwriter musician writer author novelist poet politician
        player footballer cricketer coach director producer rapper composer painter artist
        journalist businessman businesswoman entrepreneur scientist physicist chemist biologist
        philosopher historian professor lawyer judge officer soldier king queen prince princess
        emperor president minister diplomat model comedian dancer architect engineer designer
        photographer economist mathematician inventor screenwriter filmmaker presenter broadcaster
        guitarist drummer bassist pianist vocalist conductor boxer wrestler athlete cyclist
        swimmer golfer jockey priest bishop monk saint explorer astronaut aviator pilot
        statesman activist critic editor publisher executive heiress socialite man woman detective
        teacher leader merchant nobleman noblewoman courtier magnate landowner industrialist banker
        farmer physician surgeon sailor""",
    "work": """film movie novel book album song single series show sitcom drama documentary opera
        play poem game magazine newspaper comic manga anime episode franchise painting
        sculpture musical soundtrack novella anthology miniseries telenovela journal
        videogame ep""",
    "organization": """company corporation band group organization organisation university college
        school team club party firm brand agency institute airline manufacturer label network
        channel church order retailer chain conglomerate charity foundation society
        association federation league union studio publisher museum diocese archdiocese duo trio
        quartet quintet ensemble""",
    "location": """city town village river lake mountain country state province county district
        region island municipality suburb neighborhood neighbourhood borough capital area park
        airport stadium arena building bridge castle street road highway peninsula valley
        commune parish hamlet settlement resort canal bay census-designated township community
        prison hotel waterfall site ridge peak glacier cove archipelago atoll crater headland""",
    "event": """battle war election tournament festival championship competition siege
        massacre revolution conference expedition""",
}
_HEAD_TYPES = {word: kind for kind, words in _HEADS.items() for word in words.split()}
_IS_A = re.compile(r"\b(?:is|was|are|were)\s+(?:an?|the|one of the)\s+")
_DEFINING_WORD = re.compile(r"[\w\-]+|,")
_DEFINING_STOP = frozenset("""who which that whose where by from of in for with on at about to as
    than since until during after before under between""".split())
_PHRASE_END = re.compile(r"[;:!?]")
_RELATIVE = re.compile(r"\b(?:who|whom|whose|which|that)\b")
# asides closed before the definition: "X (the four people who carry ...) is", "X, who resembled Y, is"
_CLOSED_ASIDES = re.compile(r"[(（][^()（）]*[)）]|,[^,]*,")


def defining_type(sentence: str) -> str | None:
    """The type a defining sentence gives its subject: "X is an American actor" -> person,
    "X, originally published as Y, is a collectible dice game" -> work (_head_after the first
    "is a"), or None; not what a relative clause says of someone else ("X was named for Y,
    who was a county judge")."""
    match = _IS_A.search(sentence)
    if not match or _RELATIVE.search(_CLOSED_ASIDES.sub("", sentence[:match.start()])):
        return None
    return _head_after(sentence, match.end(), name_heads=True)


def _head_after(sentence: str, position: int, name_heads: bool = False) -> str | None:
    """The type of the noun phrase from position on by its head, its last known noun (English
    puts the head last: "a film director" is a person, "a film production company" a company,
    "a rugby union and rugby league footballer" a person): among its first twelve words, up to
    a semicolon, colon, ! or ? (a comma once a head is found), a relative or a preposition, or
    a participle after a head ("a film directed by"). A capitalised word is part of a name
    ("a Studio Ghibli film"), no head, unless it is an office ("a former Prime Minister") or,
    with name_heads (what a definition says: "X is the First Baptist Church of Providence"),
    the phrase has no lower-case head and ends with it (not "a dual Austrian/United States
    citizen")."""
    phrase = _PHRASE_END.split(sentence[position:position + 200], maxsplit=1)[0]
    kind = capitalised = None
    words = _DEFINING_WORD.findall(phrase)[:12]
    for k, word in enumerate(words):
        if word in _DEFINING_STOP or (kind or capitalised) and (word.endswith(("ed", "ing")) or word == ","):
            break
        head = word.lower()
        found = _HEAD_TYPES.get(head) or (_HEAD_TYPES.get(head[:-1]) if head.endswith("s") else None)
        if found and (word.islower() or word.isupper() or found == "person"):
            kind = found
        elif found:
            capitalised = found
        elif capitalised and word.islower():
            if k + 1 < len(words) and words[k + 1] in _DEFINING_STOP:
                break  # "an ALA Notable Children's Book written by": a participle ends the phrase
            capitalised = None  # "a dual Austrian/United States citizen": the phrase goes on past the name
    return kind or (capitalised if name_heads else None)


_BY_PERSON = re.compile(r"\b(?:(?:directed|written|co-written|composed|played|portrayed|voiced|hosted|sung|"
                        r"performed|narrated|illustrated|painted|authored)\s+by|starring|co-starring|"
                        r"featuring|feat\.|stars|co-stars|voices\s+of|voice\s+of)\s+$", re.I)
_WORD_BEFORE = re.compile(r"(?<![\w-])([a-z][a-z-]+)\s$")
_PLACE_OF = re.compile(r"\b(?:city|town|village|county|province|district|borough|island|region|"
                       r"municipality|parish|capital|suburb|commune|state)s?\s+of\s$|"
                       r"\b(?:town|village|county|district|borough|region|municipality|parish)s?\s+of\s+the\s+$|"
                       r"\b(?:north|south|east|west)(?:-?(?:east|west))?\s+of\s+$")  # "located west of Sanborn"
# a monarch's reign and what ends or crowns a life: "during the reign of Aurangzeb"
_LIFE_EVENT_OF = re.compile(r"\b(?:reign|coronation|abdication|assassination|funeral|burial)\s+of\s+$")
# head nouns that are also verbs or adjectives before a capitalised word ("to play Hamlet")
_NOT_HEAD_BEFORE = frozenset("play order state single game party model saint man woman duo trio quartet".split())
_BORN = re.compile(r"\s*\((?:born|née|nee|b\.)\s|\s*\(\d{3,4}\s*[–-]\s*(?:\d|[A-Z][a-z]+ \d)")
_ASIDE_AFTER = re.compile(r"\s*[(（]((?:[^()（）]|[(（][^()（）]*[)）]){1,200}?)[)）]")
_MONTH = MONTH_PATTERN
_LIFE_WORD = re.compile(r"\b(?:born|née|nee|b\.|died|d\.)\s")
_SPAN = re.compile(r"\d{3,4}\b.{0,40}?\s?(?:–|-|--)\s?.{0,25}?\b\d{3,4}\b")
_FULL_DATE = re.compile(rf"\b\d{{1,2}} {_MONTH} \d{{3,4}}\b|\b{_MONTH} \d{{1,2}}, \d{{3,4}}\b")
# what is said of a person's relatives: "daughter of X", "the second son of X", "married to X"
_KIN_OF = re.compile(r"\b(?:sons?|daughters?|wife|husband|widow|widower|father|mother|brothers?|sisters?|"
                     r"grandsons?|granddaughters?|grandfather|grandmother|nephew|niece|cousin|stepson|stepdaughter|"
                     r"stepfather|stepmother|half-brother|half-sister|son-in-law|daughter-in-law|father-in-law|"
                     r"mother-in-law|mistress|consort|spouse)\s+of\s+$|"
                     r"\b(?:married\s+to|bint|daughter\s+and\s+heiress\s+of)\s+$")
# another name of a person: "(born Gunasekar Karri", "née Hardin", "courtesy name Zhongmiao", "stage name X"
_PERSON_NAME_BEFORE = re.compile(r"\b(?:courtesy|stage|pen|birth|real|art|ring|maiden|given|full|baptismal|regnal|"
                                 r"religious)\s+name\s+(?:was\s+|is\s+)?$")
_BORN_BEFORE = re.compile(r"\b(?:born|née|nee)\s+$")
# what follows a birth name, not a birthplace ("born Dayton, Ohio"): "(born Gunasekar Karri;", "born X in Y"
_AFTER_BIRTH_NAME = re.compile(r"\s*(?:[;)(]|\s(?:in|on|at|to)\s)")
# the same thing by another name: "X, known professionally as Y, is ..." -> what the sentence defines X as
_KNOWN_AS = re.compile(r"\b(?:(?:also|better|best|professionally|popularly|commonly|widely|formerly|simply|"
                       r"mononymously|locally|originally|officially)\s+)?(?:known|credited|billed)\s+"
                       r"(?:(?:professionally|mononymously|popularly|simply|also)\s+)?(?:as|by\s+(?:the|his|her|their)\s+"
                       r"(?:stage\s+|pen\s+|ring\s+)?name(?:\s+of)?)\s+[\"“‘']?$")
_WORD_AT_END = re.compile(r"(?:\w['’]?|[&+])\s*$")  # "Capricorn One: Singles & Rarities"
_IS_A_AFTER = re.compile(r"\s+(?:is|was)\s+(?:an?|the|one of the)\s+")


def life_aside(aside: str) -> bool:
    """A birth, a death or a life span with a full date: what an aside after a person's name holds
    ("born 1950", "d. 20 March 851", "30 April 1868 – 16 April 1916"; an event's is years alone:
    "(1939–1945)")."""
    return bool(_LIFE_WORD.search(aside) or _SPAN.search(aside) and _FULL_DATE.search(aside))
_PAREN_HEAD = re.compile(r"\s*\((?:[^()]*\s)?([a-z][a-z-]+)\)")  # "(2005 film)", "(band)"
_APPOSITIVE = re.compile(r",\s+(?:an?|the|one of the)\s+")
_AFTER_TYPES = {**{w: "location" for w in """mountains mountain range massif river valley region state
    province district county island islands peninsula basin desert plateau lake coast area village
    town city""".split()}, **{w: "organization" for w in "label band company brand network party studio firm".split()}}
_HEAD_NOUN_AFTER = re.compile(r" (" + "|".join(_AFTER_TYPES) + r")\b(?![-'’])")
_PLACE_AFTER = re.compile(r",\s+((?:[A-Z][\w.]*)(?:\s+[A-Z][\w.]*){0,2})(?=[,.;:)]|\s+[a-z]|$)")


def context_type(sentence: str, start: int, end: int) -> str | None:
    """The type the words around a name give it: "directed by X", "actor X", "the city of X"
    (before); "X (born 1950)", "X (2005 film)", "X, an American actor", "X, Florida" (after)."""
    before = sentence[:start]
    kin = _KIN_OF.search(before) and not _POSSESSIVE.search(sentence[start:end])  # not "son of Allegiant Air's CEO"
    if _BY_PERSON.search(before) or _BORN.match(sentence, end) or kin or _LIFE_EVENT_OF.search(before) \
            or _PERSON_NAME_BEFORE.search(before) \
            or _BORN_BEFORE.search(before) and _AFTER_BIRTH_NAME.match(sentence, end):
        return "person"
    if _PLACE_OF.search(before):
        return "location"
    if (word := _WORD_BEFORE.search(before)) and (head := word.group(1)) not in _NOT_HEAD_BEFORE:
        kind = _HEAD_TYPES.get(head) or (_HEAD_TYPES.get(head[:-1]) if head.endswith("s") else None)
        if kind:
            return kind
    if (paren := _PAREN_HEAD.match(sentence, end)) and (kind := _HEAD_TYPES.get(paren.group(1))):
        return kind
    if appositive := _APPOSITIVE.match(sentence, end):
        return _head_after(sentence, appositive.end())
    if (place := _PLACE_AFTER.match(sentence, end)) and place_kind(place.group(1)):
        return "location"
    if noun := _HEAD_NOUN_AFTER.match(sentence, end):  # "the Harz mountains", "the Candid label"
        return _AFTER_TYPES[noun.group(1)]
    return None
