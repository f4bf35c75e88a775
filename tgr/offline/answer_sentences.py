"""Extractive answers that lead with the answer: source sentences chosen by what the question asks.

The offline answerer (tgr.offline.providers.ExtractiveAnswerer) reads no model, so it must pick, from the
ranked passages, the few sentences a person would quote. The question is read first
(QuestionShape): what it asks for (a year, a number, a person, a place, a definition), its
subject when it asks "who/what is X" ("X是谁"), and its words. Each sentence then scores:

- the question's words it holds, weighted by how rare they are among the passages (as before);
- times how much it adds: a sentence that only restates the question answers nothing;
- plus what the question asks for: a year, number or name it does not already hold; for a
  definition, the sentence that defines the subject ("Ebenezer Scrooge, a grasping ... man",
  "X was a ...", "称名须菩提祖师"); for "X的R是谁" ("X's R", "the R of X"), the sentence that
  defines the person retrieval found in that relation (tgr.query.focus: the first of `names`;
  "Bob Cratchit, clerk to Ebenezer Scrooge."), else one that speaks of R;
- English words match by their stem (without a plural's s or a verb's -ing, -ed: "hotels" for
  "hotel", "opening" for "open"; a possessive's s is no word), and a
  sentence opening with "He"/"It" holds its passage's subject ("He was the father of ..." in
  a passage opening "Tomas Verlane (born 1950) was a painter ..." speaks of Tomas Verlane);
- plus, for the sentence after the first, the bridge: the names the first sentence adds to the
  question ("He played for the Philadelphia Eagles" -> "The Philadelphia Eagles are ... based
  in Philadelphia, Pennsylvania"), the second hop of a multi-hop question.

What a question asks is read from its first question phrase ("Who did X's team play ... last
year?" asks a person, not a year). The best sentence comes first (led by the sentence naming
in full a person or thing asked by name that it names by surname alone: "Mara K. Ostrand (born
1850) was a painter." before "Ostrand is widely known ..."); where it is its passage's opening,
the sentence of that passage that goes on by a pronoun and holds the question's words the
opening lacks comes right after it ("He was the father of the sculptor Ilse Verlane." for "...
is father to which sculptor?"); then its bridge sentence (from another passage; on top of the
limit): one that holds a name the first adds, or whose passage opens with it ("It is
headquartered in ..."); a first sentence opening with "He"/"It" adds its passage's subject; a
bridge sentence that opens its passage is completed as the first is ("The Odell Company is a lamp
maker ..." -> "It is headquartered in Dunmore."). Then
the best sentence of each leading passage that scores near the best (a multi-hop question's
evidence is spread over the passages a local walk links; naive passages, independent matches,
must score nearer), then the rest, each scored for the question terms the sentences before it
do not hold yet (the relation word, "godfather", after the sentences about the names); each keeps
its citation. The last place goes to a bridge's passage where the others name one (a passage
that opens by defining a name they add): its sentence with a question term they lack ("It was
created by ...") or else its opening ("... by the band Iron Maiden" -> "Iron Maiden are an English
heavy metal band formed in Leyton"), the hop a question's relation words rarely find. English
words match by their first STEM_CHARS letters (selected / selection).
Everything is deterministic and uses no embedder: the answer depends on the store's vectors only
through the passages retrieval gave it (the weights were tuned on the dev sets' hashed stores).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

from .definitions import in_speech, refers_back, says_what
from .demonyms import only_demonyms
from .name_words import DAYS, MONTH_NAMES, MONTH_PATTERN, chinese_given_name
from .role_hop import holds_word, named_in, opens_with, question_role, same_person
from ..text import estimate_tokens, has_cjk, match_terms as _match_terms, split_sentences

PASSAGES_QUOTED = 5     # the leading passages that each give their best sentence
LEADER_SHARE = 0.7      # ... when it scores at least this share of the best sentence: naive
LINKED_LEADER_SHARE = 0.3  # ... local, whose passages the graph walk linked (multi-hop evidence)
MIN_TOKENS = 4          # shorter "sentences" (headings, "Only You)") are no answer
MIN_WORDS = 4           # ... nor English ones of fewer words
NOVELTY_TERMS = 4       # new terms a sentence needs to count in full ...
NOVELTY_SHARE = 0.5     # ... and the share of its terms they must be
NOVELTY_WEIGHT = 0.7    # the part of a sentence's score that depends on what it adds
WANTED_BONUS = 0.5      # a year / number / name the question asks for, in units of the mean idf
DEFINITION_BONUS = 2.5  # the sentence that defines the subject of "who/what is X"
REFERRED_SHARE = 0.8    # ... of it for one that names X by a pronoun and says what X is ("he was")
SPEECH_SHARE = 0.5      # what a "who is X" sentence that names X only in quoted speech keeps
LED_PASSAGES = 2        # the passages tgr.query.focus leads a relation question with
NAME_WEIGHT = 0.5       # a question term of a name, against one of its other words (the relation)
PASSAGE_WEIGHT = 0.5    # the question terms of the sentence's whole passage
BRIDGE_BONUS = 1.5      # a name the first sentence adds (the second hop)

STEM_CHARS = 6         # an English word's first letters stand for it ("selected", "selection")
COVERED_SHARE = 0.5   # what a question term counts once a chosen sentence holds it

_YEAR = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d)|\d{1,2}月\d{1,2}日|\d{1,2}[日号]")  # a year, a 月日 date
_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|hundred|"
                     r"thousand|million|billion|once|twice|thrice|dozens?)\b|[一二三四五六七八九十百千万亿两]+[个人名位次年岁届]",
                     re.I)
_MONTHS = MONTH_PATTERN
_DATE_EN = re.compile(rf"\b(?:\d{{1,2}}\s+{_MONTHS}(?:,?\s+\d{{4}})?|{_MONTHS}\s+\d{{1,2}}(?:,\s*\d{{4}})?|"
                      rf"{_MONTHS}\s+\d{{4}})\b|(?<![\d,.])(?:1[0-9]{{3}}|20[0-9]{{2}})(?![\d,])")
_NAME_EN = re.compile(r"(?:\b[A-Z][\w'’.-]*(?:\s+(?:of|the|de|von|van|and|&)?\s*[A-Z][\w'’.-]*)*)")
_DEFINE_EN = [r"^(?:the\s+)?{x}\b[^.]{{0,80}}?\b(?:is|was|are|were)\s+(?:a|an|the|one)\b",
              r"^(?:the\s+)?{x}\s+(?:is|was|are|were|had\s+been|has\s+been)\s+(?!not\b)[a-z]",  # "Marley was dead"
              r"^(?:the\s+)?{x}\s*(?:\([^)]*\)\s*)?,\s*(?:a|an|the|who|one)\b",
              r"^{x}\s*,\s*(?:his|her|their|the\s+)?[a-z]+\s+(?:to|of)\s+(?:the\s+)?[A-Z]",  # "X, clerk to Y"
              r"^{x}\s*,\s*(?:his|her|their|[A-Z][\w.-]*['’]s)\s+[a-z]+(?:\s+[a-z]+)?\s*[.;]?$",  # "Fred, his nephew."
              r"^(?:\w+\s+){{0,3}}{x}\s*,\s*(?:a|an|the)\b",
              r"\b{x}\s+(?:is|was)\s+(?:a|an|the)\b"]
_DEFINE_ZH = ["^{x}(?:是|乃|者|，|,|（)", "(?:称名|名叫|叫做|名为|号为|唤做|乃是){x}", "{x}(?:是|为)一"]

_ASKS = [  # (what the question asks for, its patterns): see asked_kind
    ("year", re.compile(r"\b(?:what|which|in what)\s+year\b|\bwhen\b|\byear\b|"
                        r"\bdate\s+of\s+(?:birth|death)\b|\b(?:what|which)\s+date\b|\b(?:birth|death)\s*date\b|"
                        r"哪一?年|何年|什么时候|何时|时间")),
    ("number", re.compile(r"\bhow\s+(?:many|much|long|old|far|tall)\b|多少|几[个人名位次年岁届]?|数量|人数")),
    ("person", re.compile(r"\bwho(?:m|se)?\b|谁|何人|什么人|哪位")),
    ("place", re.compile(r"\bwhere\b|"  # "What is the place of birth of ...?" (a birthplace on the way is not asked)
                         r"^(?:what|which)\s+(?:is|was)\s+(?:the\s+)?"
                         r"(?:place\s+of\s+(?:birth|death|burial)|birth\s*place)\b|"
                         r"\b(?:what|which)\s+"
                         r"(?:city|state|country|town|county|region|province)\b|哪里|哪儿|何处|什么地方|哪个(?:国家|城市|省|地区)")),
]
# "What painter was ...", "Which river makes ...": a name asked by its kind
_HOW_MANY = re.compile(r"\bhow\s+(?:many|much)\b")
_ASKS_THING = re.compile(r"(?:^|[.?!]\s+)(?:what|which)\s+(?:[a-z]+\s+)?[a-z]+\s+"
                         r"(?:is|was|are|were|did|does|do|has|had|makes?|made)\b", re.I)
_ASKING_WORD = re.compile(r"^(?:What|Which|Who|Whom|Whose|When|Where|Why|How|In|On|At|By|For|From|Of|To|The|A|An|"
                          r"Is|Was|Are|Were|Did|Does|Do|Has|Had|Have|Can|Could|Would|Will)\b\s*")
_POSSESSIVE_S = re.compile(r"(?<=\w)['’]s\b")
_LIST = re.compile(r"(?:\b[A-Z][\w.'’-]*(?:\s+[A-Z][\w.'’-]*)*\s*,\s*){3,}")  # "Austria, Belgium, Cyprus, ..."
# the clause of a composed question that names its bridge by the anchor: "the state where X is
# located", "the country Signmark is from", "Gisvi's city of birth"
_BRIDGE_CLAUSE = re.compile(r"\b(?:the|a)\s+(?:[a-z]+(?:\s+[a-z]+)?\s+(?:where|that|which|who|whose|in\s+which)\b|"
                            r"[a-z]+\s+(?=[A-Z]))[^,?]*|\b[A-Z][\w.-]*['’]s?\s+[a-z]+(?:\s+of\s+[a-z]+)?")
# capitalised at a sentence's start, but no part of a name before X: "As Scrooge looked ..."
_OPENING_WORDS = (r"(?:As|When|While|If|But|And|Or|So|Yet|Then|Though|Although|Now|Here|There|This|That|It|He|She|"
                  r"They|In|On|At|For|With|By|From|After|Before|Once|Since|Until|Where|What|Who|Why|How|Even|Only)")
_PRONOUNS = {"He", "She", "It", "They", "His", "Her", "Its", "Their"}
_CALENDAR = set(MONTH_NAMES) | {day.capitalize() for day in DAYS}
_DEFINITION_EN = re.compile(r"^\s*(?:who|what)\s+(?:is|was|are|were)\s+(?:an?\s+|the\s+)?(.+?)\s*[?？.]*\s*$", re.I)
_DEFINITION_ZH = re.compile(r"^\s*(.+?)(?:是|为)(?:谁|什么人|何人|什么|何物|哪位)[?？。]*\s*$")
_RELATION_ZH = re.compile(r"^\s*(.+?)的(.+?)(?:是|为)(?:谁|什么人|何人|什么|哪位|哪里)[?？。]*\s*$")
# English relations, asked right after "who is" (tgr.offline.answer_sentences.relation_en):
# "Tiny Tim's father" (X capitalised, R lowercase words), "the clerk of Scrooge", "clerk to Scrooge"
_NOUNS = r"[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2}?"
_COPULA_EN = re.compile(r"^\s*(?:who|whom|what|which)(?:\s+[a-z]+)?\s+(?:is|was|are|were)\s+", re.I)
_LINKS_EN = re.compile(rf"(?:(?:the\s+)?({_NOUNS})\s+(?:of|to|for)\s+)+")  # ... the last R of a chain
_POSSESSIVE_EN = re.compile(r"(?:the\s+)?((?:[A-Z][\w.&-]*\s+(?:(?:of|the|de|von|van|and|&)\s+)?)*[A-Z][\w.&-]*?)"
                            rf"['’]s?\s+({_NOUNS})(?=\s*[,;]|\s*$|\s+(?:in|at|on|of|for|with|from|during|"
                            r"who|that|which|when|and|or|called|named|born)\b)")
_NOT_RELATIONS = {"is", "was", "are", "were", "the", "a", "an", "and", "or", "name", "names", "one", "ones",
                  "same", "other", "most", "first", "last", "kind", "type", "part", "year", "time", "number"}


def match_terms(text: str) -> list[str]:
    """The text's terms, an English word cut to its stem (tgr.text.match_terms otherwise); a
    possessive's s is no term."""
    return [_stem(t) if t.isascii() and t.isalpha() else t for t in _match_terms(_POSSESSIVE_S.sub("", text))]


def _stem(word: str) -> str:
    """An English word's first STEM_CHARS letters, a plural's without its s ("hotels" as "hotel",
    "times" as "time"; "class", "bonus", "analysis" keep theirs), a verb's without -ing or -ed
    and a final e ("opening", "opened" as "open"; "invite", "invited" as "invit")."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for ending in ("ing", "ed"):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            word = word[:-len(ending)]
            break
    if word.endswith("e") and len(word) > 4:  # "invite" as "invited", "inviting"
        word = word[:-1]
    return word[:STEM_CHARS]


@dataclass
class QuestionShape:
    """What a question asks: its terms, the kind of answer, and its subject (definitions)."""

    terms: list[str]
    names: frozenset[str] = frozenset()  # terms of the question's capitalised names
    asks: str | None = None      # year, number, person, place, or None
    subject: str | None = None   # X of "who/what is X", "X是谁", "X的R是谁"
    relation: str | None = None  # R of "X的R是谁", "X's R", "the R of X": what the answer is to X
    defines: bool = False        # "who/what is X": the answer is X's defining sentence
    bearers: tuple[str, ...] = ()  # "X的R是谁", "X's R": the store's people retrieval found in relation R to X

    @classmethod
    def of(cls, question: str) -> "QuestionShape":
        shape = cls(list(dict.fromkeys(match_terms(question))))
        shape.names = frozenset(t for n in _NAME_EN.findall(question[1:]) for t in match_terms(n))
        shape.asks = asked_kind(question)
        zh = _RELATION_ZH.match(question)
        relation = (zh.group(1).strip(), zh.group(2).strip()) if zh else relation_en(question)
        definition = None if relation else (_DEFINITION_EN.match(question) or _DEFINITION_ZH.match(question))
        if definition and len(definition.group(1).split()) <= 6 and len(definition.group(1)) <= 40:
            shape.subject, shape.defines = definition.group(1).strip(" \"'“”"), True
        elif relation:
            shape.subject, shape.relation = relation
        return shape


def asked_kind(question: str) -> str | None:
    """What the question asks for: year, number, person, place or None. An English question asks
    with the first such phrase it holds ("Who did X's team play ... last year?" asks a person,
    "Which city was the band formed ... when ...?" no year), except that "how many/much" asks a
    number wherever it stands ("a singer who has sold how many records?"); a Chinese one, whose
    question word may come anywhere, with the first kind of _ASKS it holds."""
    lowered = question.lower()
    if has_cjk(question):
        return next((kind for kind, pattern in _ASKS if pattern.search(lowered)), None)
    if _HOW_MANY.search(lowered):  # never a relative clause: "a singer who has sold how many records?"
        return "number"
    found = [(match.start(), order, kind) for order, (kind, pattern) in enumerate(_ASKS)
             if (match := pattern.search(lowered))]
    return min(found)[2] if found else None


def asks_name(question: str, shape: QuestionShape) -> bool:
    """The answer is a name: "who ...?", or "what/which NOUN ...?" ("What painter was more popular
    ...?") rather than a year, a number or a place; not "who is X?"."""
    if shape.defines:
        return False
    return shape.asks == "person" or (shape.asks is None and _ASKS_THING.search(question) is not None)


def relation_en(question: str) -> tuple[str, str] | None:
    """(X, R) of an English relation question: "Who is Tiny Tim's father?" -> (Tiny Tim, father);
    "Who was the clerk of Scrooge?", "Who is clerk to Scrooge?" -> (Scrooge, clerk). Of nested
    relations ("What is the nationality of the author of Y?") the innermost, whose X is a name.
    The relation must be what is asked, right after "who is" ("Who signed the register of
    Marley's burial?" asks no relation); R is lowercase words, not a mere "name of"."""
    text = question.strip().rstrip("?？. ")
    lead = _COPULA_EN.match(text)
    if not lead:
        return None
    links = _LINKS_EN.match(text, lead.end())
    rest = links.end() if links else lead.end()
    possessive = _POSSESSIVE_EN.match(text, rest)
    if possessive and _relation_noun(possessive.group(2)):
        return possessive.group(1), possessive.group(2)
    subject = named_in(text[rest:]) if links else None
    if subject and _relation_noun(links.group(1)):
        return subject, links.group(1)
    return None


def _relation_noun(words: str) -> bool:
    return words.split()[-1] not in _NOT_RELATIONS and not any(w in {"is", "was", "the"} for w in words.split())


def speaks_of(text: str, relation: str) -> bool:
    """The text says the relation: the Chinese word, or an English head noun's stem ("clerk",
    "father's", "direct" in "directed by")."""
    if has_cjk(relation):
        return relation in text
    return re.search(rf"\b{re.escape(relation_stem(relation))}", text, re.I) is not None


def relation_stem(relation: str) -> str:
    """What a relation is matched by: a Chinese word whole, an English head noun by its stem."""
    return relation if has_cjk(relation) else relation.split()[-1].lower()[:STEM_CHARS]


@dataclass
class _Sentence:
    text: str
    cite: str
    order: int
    terms: frozenset[str]
    passage: frozenset[str] = frozenset()  # its passage's terms
    subject: str = ""  # the name its passage opens with: what "He", "It" stand for (English)
    speech: bool = False  # "who is X": it names X only in quoted speech
    refers: bool = False  # "who is X": a pronoun in it stands for X and it says what X is
    referent: frozenset[str] = frozenset()  # the terms of its passage's subject, when it opens with "He", "It"
    subject_defined: bool = False  # its passage opens by defining its subject ("X (born 1950) is a ...")


def answer_sentences(question: str, passages: Sequence[tuple[str, str]], *, limit: int = 5,
                     names: Sequence[str] = (), linked: bool = False) -> list[tuple[str, str]]:
    """(sentence, citation) pairs that answer the question, the answering sentence first (and
    its second hop on top of the limit). passages: (citation, text) in ranked order; names:
    the store's entities for the question (Chinese bridges; English ones are found by case);
    linked: the passages are a local walk's, linked through the graph, so more of the leading
    ones give their best sentence (naive passages are independent matches)."""
    shape = QuestionShape.of(question)
    if shape.relation:  # retrieval puts the person it found in that relation first (tgr.query.focus)
        shape.bearers = tuple(n for n in names if has_cjk(n) == has_cjk(shape.relation) and n not in question)[:1]
    candidates = _candidates(passages, shape.bearers, shape.subject if shape.defines else None)
    if not candidates or not shape.terms:
        return []
    idf = _idf(shape.terms, candidates)
    mean = sum(idf.values()) / len(idf)
    scored = {id(s): _score(s, shape, idf, mean) for s in candidates}
    ranked = sorted((s for s in candidates if scored[id(s)] > 0), key=lambda s: (-scored[id(s)], s.order))
    if not ranked:
        return []
    answering = next((s for s in ranked if _defines_bearer(s, shape) and defines(s.text, shape.bearers[0])),
                     None) or next((s for s in ranked if _defines_bearer(s, shape)), None)
    if answering is not None:  # the person found in the relation asked: who the answer is
        ranked.remove(answering)
        ranked.insert(0, answering)
    first = ranked[0]
    chosen = [first]
    named = _full_name_before(first, candidates) if asks_name(question, shape) else None
    if named is not None:  # "Hall, who was the first president ..." is G. Stanley Hall: the sentence naming him in full
        chosen.insert(0, named)
    bridges = [] if shape.defines else _bridges(first, question, names, passages)  # one hop: X itself
    hop = None
    if bridges:
        hop = max((s for s in candidates if s.order != first.order and _held(s, bridges)),
                  key=lambda s: (_bridge_score(s, bridges, scored[id(s)], mean), -s.order), default=None)
        if hop is not None:
            chosen.append(hop)
    for told in [] if shape.defines else [first, hop]:
        completion = told and _completion(told, candidates, shape, idf, scored, chosen)
        if completion:  # it goes on about the subject the sentence before it opens with: right after it
            chosen.insert(chosen.index(told) + 1, completion)
    chain = [] if shape.defines else _chain(question, candidates, chosen, scored, mean, shape)
    chosen += chain
    protected = len(chosen)
    # then the best sentence of each leading passage not yet quoted, then the best of the rest,
    # each for the question terms the sentences before it have not yet given
    represented = {first.order}  # the hop's passage still gives its best sentence
    floor = (LINKED_LEADER_SHARE if linked else LEADER_SHARE) * scored[id(first)]
    leaders = [s for s in ranked if s.order < PASSAGES_QUOTED and scored[id(s)] >= floor
               and not (s.order in represented or represented.add(s.order))]
    limit += len(chosen) - 1  # the second hop and the chain come on top
    for s in leaders:
        if len(chosen) >= limit:
            break
        if _fresh(s, chosen):
            chosen.append(s)
    _fill(chosen, [s for s in ranked if _fresh(s, chosen)], shape, idf, mean, limit)
    if not shape.defines and len(chosen) > max(2, protected):  # the last place: a name's defining sentence
        defining = _bridge_definition(chosen[:-1], candidates, question, scored)
        if defining is not None:
            chosen[-1] = defining
    return [(_named(s, chosen[i - 1] if i else None), s.cite) for i, s in enumerate(chosen)]


def _named(s: _Sentence, before: _Sentence | None) -> str:
    """The sentence as quoted, its opening pronoun followed by whom it stands for when the reader
    cannot tell: "She [Laura Ann Osnes] also starred in ..." out of a passage that opens by
    defining Laura Ann Osnes, unless the sentence quoted before it is of the same passage."""
    if not s.referent or (before is not None and before.order == s.order):
        return s.text
    opening = re.match(r"[\"'“]?(?:He|She|It|They)\b", s.text)
    if opening is None or not s.subject_defined or s.subject.lower() in s.text.lower():
        return s.text
    return f"{s.text[:opening.end()]} [{s.subject}]{s.text[opening.end():]}"


def _bridge_definition(kept: list[_Sentence], candidates: list[_Sentence], question: str,
                       scored: dict[int, float]) -> _Sentence | None:
    """The sentence that tells about a bridge the answer names: in a passage that opens by
    defining a name ("X is/was/are ...", "X (...) was ...") that a kept sentence of another passage
    adds to the question, its best sentence holding a question term no kept sentence holds ("It
    was created by ..." for "created by whom?"), else its opening ("... by the band Iron Maiden" ->
    "Iron Maiden are an English heavy metal band formed in Leyton"); of several passages, the best
    scored. None when the kept sentences name no such passage's subject or already quote its opening."""
    asked, best, openings = question.lower(), None, {}
    missing = set(match_terms(question)).difference(*(c.terms for c in kept))
    for s in candidates:
        openings.setdefault(s.order, s)
    for order, opening in openings.items():
        name = opening.subject
        if len(name) < 3 or name.lower() in asked or name in _CALENDAR or not _fresh(opening, kept):
            continue
        if not re.match(rf"{re.escape(name)}\s*(?:\([^)]*\)\s*)?,?\s*(?:is|was|are|were)\b", opening.text):
            continue
        if not any(name in c.text for c in kept if c.order != order):
            continue
        telling = [s for s in candidates if s.order == order and s.terms & missing and _fresh(s, kept)]
        pick = max(telling, key=lambda s: scored[id(s)]) if telling else opening
        if best is None or scored[id(pick)] > scored[id(best)]:
            best = pick
    return best


def _completion(told: _Sentence, candidates: list[_Sentence], shape: QuestionShape, idf: dict[str, float],
                scored: dict[int, float], chosen: list[_Sentence]) -> _Sentence | None:
    """After a passage's opening sentence (the first or the bridge sentence), the sentence of
    the same passage that goes on about the subject by a pronoun and says what the opening lacks:
    the question's words other than its names ("Tomas Verlane (born 1950) was a painter ..." ->
    "He was the father of the sculptor Ilse Verlane." for "... is father to which sculptor?")."""
    opening = next(s for s in candidates if s.order == told.order)
    if opening is not told:
        return None
    held = set().union(*(c.terms for c in chosen))
    lacking = {t for t in shape.terms if t not in shape.names and t not in held}
    pool = [s for s in candidates if s.order == told.order and s.referent and s.terms & lacking and _fresh(s, chosen)]
    return max(pool, key=lambda s: (sum(idf[t] for t in s.terms & lacking), scored[id(s)]), default=None)


def _fill(chosen: list[_Sentence], rest: list[_Sentence], shape: QuestionShape, idf: dict[str, float],
          mean: float, limit: int) -> None:
    """Add the best of the rest until the limit, each scored for the question terms the chosen
    sentences do not hold yet (a covered term counts COVERED_SHARE): the sentence that gives what
    is still missing ("godfather", "headquartered") before a third one about the same words."""
    while len(chosen) < limit and rest:
        covered = set().union(*(c.terms for c in chosen))
        weights = {t: w * (COVERED_SHARE if t in covered else 1.0) for t, w in idf.items()}
        best = max(rest, key=lambda s: (_score(s, shape, weights, mean), -s.order))
        chosen.append(best)
        rest = [s for s in rest if _fresh(s, chosen)]


def _fresh(s: _Sentence, chosen: list[_Sentence]) -> bool:
    """Not chosen yet, nor inside (or around) a chosen sentence."""
    return s not in chosen and not any(s.text in c.text or c.text in s.text for c in chosen)


def _candidates(passages: Sequence[tuple[str, str]], keep: Sequence[str] = (),
                defined: str | None = None) -> list[_Sentence]:
    """Every sentence of the passages, once, in ranked order; a short one only where it names
    one of keep (the person found in the relation asked: "Fred, Scrooge's nephew."). defined:
    the X of "who is X", whose mentions in speech and by a pronoun are marked (and a pronoun's
    sentence holds X's terms)."""
    found, seen = [], set()
    forms = subject_forms(defined) if defined else ()
    for order, (cite, text) in enumerate(passages):
        whole = frozenset(match_terms(text))
        opening = None if has_cjk(text[:40]) else _NAME_EN.match(text.lstrip(" \"'“"))
        subject = opening.group(0).strip() if opening else ""
        sentences = whole_sentences([" ".join(text[a:b].split()) for a, b in split_sentences(text)])
        referring = refers_back(sentences, forms)
        subject_defined = bool(subject and sentences) and _opens_defining(sentences[0], subject)
        for sentence, refers in zip(sentences, referring):
            short = estimate_tokens(sentence) < MIN_TOKENS or _fragment(sentence)
            if sentence in seen or (short and not any(k in sentence for k in keep)):
                continue
            seen.add(sentence)
            names_x = refers or any(f in sentence for f in forms)  # "Marley", "he" name Jacob Marley
            terms = frozenset(match_terms(sentence + (" " + defined if names_x else "")))
            found.append(_Sentence(sentence, cite, order, terms, whole, subject,
                                   speech=bool(forms) and in_speech(sentence, forms),
                                   refers=refers and says_what(sentence),
                                   referent=_referent(sentence, subject, text), subject_defined=subject_defined))
    return found


def _opens_defining(sentence: str, subject: str) -> bool:
    """The sentence defines the whole subject right after naming it ("Laura Ann Osnes (born 1985)
    is ...", "Zambia, officially ..., is ..."), not a name's first capitalised words
    ("Hyperkalemic periodic paralysis is ...")."""
    return bool(re.match(rf"[\"'“]?{re.escape(subject)}\s*(?:\(|,|\b(?:is|was|are|were)\b)", sentence)) \
        and defines(sentence, subject)


def whole_sentences(pieces: list[str]) -> list[str]:
    """The pieces, each joined to the next while it ends with a semicolon inside an open
    parenthesis ('Nicholas I (also known as "Niklot"; died 1200 near Waschow) was ...')."""
    joined: list[str] = []
    for piece in pieces:
        last = joined[-1] if joined else ""
        if last.endswith(";") and last.count("(") > last.count(")"):
            joined[-1] = f"{last} {piece}"
        else:
            joined.append(piece)
    return joined


def _referent(sentence: str, subject: str, passage: str) -> frozenset[str]:
    """The terms of what an English sentence's opening pronoun stands for: its passage's subject
    ("It is based in Dunmore" in a passage opening "Odell Company is a lamp maker ...").
    Empty for the passage's opening sentence and any other."""
    if not subject or passage.lstrip(" \"'“").startswith(sentence[:20]):
        return frozenset()
    opening = re.match(r"[\"'“]?([A-Z][a-z]*)\b", sentence)
    return frozenset(match_terms(subject)) if opening and opening.group(1) in _PRONOUNS else frozenset()


def _fragment(sentence: str) -> bool:
    """An English piece too short to say anything ("Love Forecast (;", "Only You)")."""
    return not has_cjk(sentence) and sum(any(c.isalpha() for c in w) for w in sentence.split()) < MIN_WORDS


def _idf(terms: list[str], sentences: list[_Sentence]) -> dict[str, float]:
    """Rarity of each question term among the candidate sentences' passages."""
    by_passage: dict[int, set[str]] = {}
    for s in sentences:
        by_passage.setdefault(s.order, set()).update(s.terms)
    n = len(by_passage)
    return {t: math.log(1 + n / (1 + sum(t in held for held in by_passage.values()))) + 0.5 for t in terms}


def _score(s: _Sentence, shape: QuestionShape, idf: dict[str, float], mean: float) -> float:
    """How well the sentence answers: matched question terms, scaled by what it adds, plus
    what the question asks for."""
    held = s.terms | s.referent  # "He was the father of ...": the pronoun holds its passage's subject
    overlap = sum(w * (NAME_WEIGHT if t in shape.names else 1.0) for t, w in idf.items() if t in held)
    bearer = _defines_bearer(s, shape)
    if overlap <= 0 and not bearer:
        return 0.0
    new = len(s.terms - set(shape.terms))
    adds = min(1.0, new / NOVELTY_TERMS) * min(1.0, new / max(1, len(s.terms)) / NOVELTY_SHARE)
    score = overlap * (1.0 - NOVELTY_WEIGHT + NOVELTY_WEIGHT * adds)
    around = s.passage or s.terms
    score += PASSAGE_WEIGHT * sum(w for t, w in idf.items() if t in around)
    if shape.asks and _has_wanted(s.text, shape):
        score += WANTED_BONUS * mean
    if shape.defines and defines(s.text, shape.subject):
        score += DEFINITION_BONUS * mean
    elif shape.defines and s.refers:  # "Scrooge and he were partners": what X was, by a pronoun
        score += REFERRED_SHARE * DEFINITION_BONUS * mean
    elif shape.defines and s.speech:  # "'Old Jacob Marley, tell me more!'": X addressed, not defined
        score *= SPEECH_SHARE
    elif bearer:  # the answer itself (answer_sentences puts it first)
        score += DEFINITION_BONUS * mean
    elif shape.relation and speaks_of(s.text, shape.relation):  # "师父", "clerk": it speaks of the relation asked
        score += WANTED_BONUS * mean
    return score


def _defines_bearer(s: _Sentence, shape: QuestionShape) -> bool:
    """The sentence defines the person retrieval found in the relation asked ("称名须菩提祖师",
    "Bob Cratchit, clerk to ..."). English names, found by case rather than by the store, count
    only in the passages retrieval led with for them (tgr.query.focus), where one that names the
    person and speaks of the relation answers too."""
    if not shape.bearers or not shape.relation:
        return False
    if has_cjk(shape.relation):
        return any(b in s.text and defines(s.text, b) for b in shape.bearers)
    return s.order < LED_PASSAGES and any(b in s.text and (defines(s.text, b) or speaks_of(s.text, shape.relation))
                                          for b in shape.bearers)


def _has_wanted(text: str, shape: QuestionShape) -> bool:
    """The sentence holds a year / number / name of the kind asked that the question lacks."""
    question = " ".join(shape.terms)
    if shape.asks == "year":
        return any(m.group(0) not in question for m in _YEAR.finditer(text))
    if shape.asks == "number":  # a count or an amount: a date or a year is no answer to "how many"
        return any(m not in question for m in _NUMBER.findall(_DATE_EN.sub(" ", text)))
    if has_cjk(text):
        return False
    names = [n for n in _NAME_EN.findall(text[1:]) if n.lower() not in question]  # not the first word
    return bool(names)


def defines(text: str, subject: str) -> bool:
    """The sentence defines the subject ("X, a ...", "X was a ...", "称名X", "X是..."), in
    narration: a line of quoted speech that names X defines nothing (tgr.offline.definitions)."""
    forms = subject_forms(subject)
    if in_speech(text, forms):
        return False
    if has_cjk(subject):
        x = re.escape(subject)
        return any(re.search(p.format(x=x), text) for p in _DEFINE_ZH)
    # the subject's last word alone names it too ("Ebenezer Scrooge" for "Scrooge", "Marley was
    # dead" for "Jacob Marley": subject_forms), a first name its full name ("Bob Cratchit, clerk to ..." for "Bob")
    full = "|".join(r"\s+".join(re.escape(w) for w in form.split()) for form in forms)
    x = rf"(?:(?!{_OPENING_WORDS}\s)[A-Z][\w'’.-]*\s+){{0,3}}" + (f"(?:{full})" if len(forms) > 1 else full) \
        + r"(?:\s+[A-Z][\w'’-]+)?"
    return any(re.search(p.format(x=x), text, re.I if p.startswith(r"\b") else 0) for p in _DEFINE_EN)


def subject_forms(subject: str) -> tuple[str, ...]:
    """How a text names the subject: whole, an English name by its last word ("Marley"), a
    Chinese one by its given name (悟空 of 孙悟空)."""
    if has_cjk(subject):
        return tuple(filter(None, (subject, chinese_given_name(subject))))
    last = subject.split()[-1] if subject.split() else ""
    return (subject, last) if " " in subject and last[:1].isupper() else (subject,)


def _bridges(first: _Sentence, question: str, names: Sequence[str],
             passages: Sequence[tuple[str, str]]) -> list[str]:
    """Names the first sentence adds to the question: where a second hop starts. Its opening
    word counts when the passages write it capitalised inside a sentence too ("Winter is best
    remembered ..."), and a pronoun opening stands for its passage's subject ("He was ...")."""
    asked, text = question.lower(), first.text
    found = [n for n in names if n and n in text and n.lower() not in asked and has_cjk(n)]
    if not has_cjk(text):
        opening = re.match(r"[\"'“]?([A-Z][\w'’-]+)\b", text)
        word = opening.group(1) if opening else ""
        if word in _PRONOUNS and first.subject:
            found.append(first.subject)
        elif len(word) > 2 and any(re.search(rf"[\w,;] {re.escape(word)}\b", p) for _, p in passages):
            found.append(word)
        found += [n.strip(" .") for n in _NAME_EN.findall(text[1:]) if len(n.strip(" .")) > 2]  # not the full stop
    found = [b for b in dict.fromkeys(found) if b.lower() not in asked and b not in _CALENDAR]
    return [b for b in found if not any(b != o and b in o for o in found)]


def _held(s: _Sentence, bridges: list[str]) -> int:
    """How many of the bridge names the sentence holds, or its passage is about."""
    return sum(1 for b in bridges if b in s.text or b in s.subject)


def _bridge_score(s: _Sentence, bridges: list[str], score: float, mean: float) -> float:
    """A sentence's score as the second hop: plus the bridge names it holds."""
    return score + BRIDGE_BONUS * mean * min(_held(s, bridges), 2)


def _chain(question: str, candidates: list[_Sentence], chosen: list[_Sentence],
           scored: dict[int, float], mean: float, shape: QuestionShape) -> list[_Sentence]:
    """A composed question's chain: through the bearer of a role it names ("the director of film
    X": tgr.offline.role_hop), else from the name it holds (_anchor_chain)."""
    through_role = _role_chain(question, shape, candidates, chosen, scored)
    if through_role is not None:
        return through_role
    return _anchor_chain(question, candidates, chosen, scored, mean, shape)


def _role_chain(question: str, shape: QuestionShape, candidates: list[_Sentence],
                chosen: list[_Sentence], scored: dict[int, float]) -> list[_Sentence] | None:
    """The chain through a role's bearer (tgr.offline.role_hop): the sentence of the passage
    opening with X that speaks of the role and names someone ("The film is directed by Ansel
    Brook"), then the bearer's sentence holding the kind asked (those not chosen yet). None where
    the question names no role, asks no kind, asks for the bearer alone ("Who is the director of
    X?": the bridge sentence is the answer), or the passages hold no such chain."""
    role = question_role(question) if shape.asks else None
    if role is None or not role[2]:
        return None
    thing, relation, rest = role
    openings: dict[int, _Sentence] = {}
    for s in candidates:
        openings.setdefault(s.order, s)
    homes = {order for order, s in openings.items() if opens_with(s.text, thing)}
    asked = question.lower()
    for bridge in (s for s in candidates if s.order in homes and speaks_of(s.text, relation)):
        for person in _adds(bridge, asked, thing):
            passage = next((o for o, s in openings.items() if o not in homes and same_person(person, s.subject)), None)
            target = None if passage is None else _bearer_sentence(person, passage, rest, shape, candidates, scored)
            if target is not None:
                return [s for s in (bridge, target) if _fresh(s, chosen)]
    return None


def _bearer_sentence(person: str, passage: int, rest: str, shape: QuestionShape,
                     candidates: list[_Sentence], scored: dict[int, float]) -> _Sentence | None:
    """Of the bearer's passage, the sentence holding the kind asked that opens the passage or
    names the person: first one holding a word of the question outside the role's phrase
    (rest: "died", "born"), then the opening, then the best scored; not merely the one sharing
    most question words ("He won the prize for Best Director" holds no date)."""
    own = [s for s in candidates if s.order == passage]
    opening, surname = own[0], person.split()[-1]
    lacking = set(match_terms(rest)) - set(match_terms(person))
    pool = [s for s in own if (s is opening or surname in s.text) and not _LIST.search(s.text)
            and _holds_asked(s.text, shape, [n.strip(" .") for n in _NAME_EN.findall(s.text) if surname in n])]
    return max(pool, key=lambda s: (holds_word(s.terms, lacking), s is opening, scored[id(s)], -candidates.index(s)),
               default=None)


def _anchor_chain(question: str, candidates: list[_Sentence], chosen: list[_Sentence],
                  scored: dict[int, float], mean: float, shape: QuestionShape) -> list[_Sentence]:
    """The chain of a composed question ("What currency predated the Euro in the country Signmark
    is from?"), which starts at the name it holds and the chosen sentences lack: the anchor's
    sentence in the best passage naming it ("Signmark ... in Finland's national qualifications"),
    then the best sentence of another passage that holds a name the first adds (Finland) and a
    word the question asks with ("The Finnish markka ... was the currency of Finland"). Where none
    does, a middle link first: a sentence holding an added name and a word of the clause that
    names the bridge ("the city where the performers of Brother were formed": "Pearl Jam ...
    formed in Seattle"), then the hop from the names it adds. Where no link holds such a word,
    the hop holding an added name and what the question asks for ("Who was in charge of the region
    where Orvik lies?": "Hanna Seld was the last governor of Dalmark")."""
    asked, names = question.lower(), _anchors(question)
    clauses = " ".join(m.group(0) for m in _BRIDGE_CLAUSE.finditer(question))
    asking = set(match_terms(_BRIDGE_CLAUSE.sub(" ", question))) or set(match_terms(question))  # "When was" asks no word
    for anchor in [a for a in names if a in clauses] or names:  # the name the bridge is told by first
        holding = [s for s in candidates if anchor in s.text]
        if not holding or any(anchor in c.text for c in chosen):
            continue
        start = min(holding, key=lambda s: (s.order, -scored[id(s)]))
        own, adds = set(match_terms(anchor)), _adds(start, asked, anchor)
        hop = _hop(start, adds, asking - own, candidates, chosen, scored, mean)
        if hop is not None:
            return [s for s in (start, hop) if _fresh(s, chosen)]
        middle = _hop(start, adds, set(match_terms(clauses)) - own, candidates, chosen, scored, mean)
        if middle is None:
            continue
        hop = _hop(middle, _adds(middle, asked, anchor), asking - own, candidates, chosen + [start], scored, mean)
        if hop is not None:
            return [s for s in (start, middle, hop) if _fresh(s, chosen)]
    return _wanted_hop(question, [a for a in names if a in clauses], candidates, chosen, scored, mean, shape)


def _wanted_hop(question: str, anchors: list[str], candidates: list[_Sentence], chosen: list[_Sentence],
                scored: dict[int, float], mean: float, shape: QuestionShape) -> list[_Sentence]:
    """The chain's last resort: from the sentence of the anchor a bridge clause names, the best
    sentence of another passage holding a name it adds and the kind of thing asked (a year, a
    number, a person's or a place's name besides the added ones)."""
    if shape.asks is None:
        return []
    asked = question.lower()
    for anchor in anchors:
        holding = [s for s in candidates if anchor in s.text]
        if not holding or any(anchor in c.text for c in chosen):
            continue
        start = min(holding, key=lambda s: (s.order, -scored[id(s)]))
        adds = _adds(start, asked, anchor)
        hop = max((s for s in candidates if s.order != start.order and _held(s, adds) and _fresh(s, chosen)
                   and not _LIST.search(s.text) and _holds_asked(s.text, shape, adds)),
                  key=lambda s: (_bridge_score(s, adds, scored[id(s)], mean), -s.order), default=None)
        if hop is not None:
            return [s for s in (start, hop) if _fresh(s, chosen)]
    return []


def _holds_asked(text: str, shape: QuestionShape, adds: list[str]) -> bool:
    """The text holds what the question asks for, beyond the names a chain's link added."""
    if shape.asks in ("year", "number"):
        return _has_wanted(text, shape)
    return any(n.strip(" .") not in adds and n.lower() not in " ".join(shape.terms) and n not in _CALENDAR
               for n in _NAME_EN.findall(text[1:]))


def _adds(sentence: _Sentence, asked: str, anchor: str) -> list[str]:
    """The names a chain's link adds to the question (a possessive's name without its 's)."""
    found = [re.sub(r"['’]s?$", "", n.strip(" .")) for n in _NAME_EN.findall(sentence.text[1:])]
    return [n for n in dict.fromkeys(found)
            if len(n) > 2 and n.lower() not in asked and n not in _CALENDAR and anchor not in n]


def _hop(after: _Sentence, adds: list[str], words: set[str], candidates: list[_Sentence],
         chosen: list[_Sentence], scored: dict[int, float], mean: float) -> _Sentence | None:
    """The chain's next link: the best sentence of another passage holding a name the link
    before adds and one of the words; a sentence listing names ("Austria, Belgium, Finland,
    ...") tells little about any one."""
    return max((s for s in candidates if s.order != after.order and _held(s, adds) and s.terms & words
                and _fresh(s, chosen) and not _LIST.search(s.text)),
               key=lambda s: (_bridge_score(s, adds, scored[id(s)], mean), -s.order), default=None)


def _anchors(question: str) -> list[str]:
    """The question's names a chain can start from: not its asking word ("What"), nor a demonym
    ("British" names no one thing); a possessive names its owner ("Orla's town" starts at Orla)."""
    found = [_POSSESSIVE_S.sub("", _ASKING_WORD.sub("", n.strip(" ."))) for n in _NAME_EN.findall(question)]
    return [n for n in dict.fromkeys(found) if len(n) > 2 and not only_demonyms(n)]


def _full_name_before(first: _Sentence, candidates: list[_Sentence]) -> _Sentence | None:
    """The sentence before the answering one, in its passage, that names in full the person it
    opens with by surname alone ("... G. Stanley Hall's 'Adolescence'." before "Hall, who was ...")."""
    opening = re.match(r"([A-Z][a-z][\w'’-]+)\s*(?:,|\b(?:was|is|had|became|served)\b)", first.text)
    if not opening or opening.group(1) in _PRONOUNS or opening.group(1) in _CALENDAR:
        return None
    full = re.compile(rf"\b(?:(?!{_OPENING_WORDS}\s)[A-Z][\w.'’-]*\s+)+{re.escape(opening.group(1))}\b")
    before = [s for s in candidates[:candidates.index(first)] if s.order == first.order and full.search(s.text)]
    return before[-1] if before else None
