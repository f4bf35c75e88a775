"""Questions through kin: "When did X's mother die?", "Who is the paternal grandfather of X?",
"Who is X's father-in-law?", "What is the cause of death of X's mother?".

The question names a person X and a kin word, made of plain steps (a grandchild is a child's
child, a maternal grandfather the mother's father, a father-in-law the spouse's father, an uncle a
parent's brother). Each step is taken through the facts the passages say (tgr.offline.kin_facts):
"He was the second son of Emperor Lothair I and Ermengarde of Tours" gives his father and mother,
"He was the father of Rudra Shah" a child, "Boraqchin was the wife of Ögedei Khan" a spouse, and
the sex a step asks (a mother, a son) must fit what is known of the person. The answer quotes the
sentence of each step, then, where the question asks something of the last person (a date of
death, a place of birth, a cause of death, a nationality), the sentence of that person's passage
that says it. None when a step finds no one: the answer is then what it was without the chain.
"""
from __future__ import annotations

import re
from typing import Sequence

from .comparison_bridges import ROLES, WORK, Bridged, bridged
from .kin_facts import CAPITAL, CHILDREN, PARENTS, SIBLINGS, SPOUSES, Fact, KinFacts, bare, read_facts, same_one
from .answer_sentences import match_terms

MAX_PEOPLE = 4  # the people one step keeps (a grandchild may be any child's child)
# a kin word of a question as its steps
STEPS = {"father": ["father"], "mother": ["mother"], "parent": ["parent"], "parents": ["parent"],
         "son": ["son"], "daughter": ["daughter"], "child": ["child"], "children": ["child"],
         "husband": ["husband"], "wife": ["wife"], "spouse": ["spouse"], "brother": ["brother"], "sister": ["sister"],
         "sibling": ["sibling"], "grandfather": ["parent", "father"], "grandmother": ["parent", "mother"],
         "grandparent": ["parent", "parent"], "grandchild": ["child", "child"], "grandson": ["child", "son"],
         "granddaughter": ["child", "daughter"], "father-in-law": ["spouse", "father"],
         "mother-in-law": ["spouse", "mother"], "son-in-law": ["child", "husband"],
         "daughter-in-law": ["child", "wife"], "brother-in-law": ["spouse", "brother"],
         "sister-in-law": ["spouse", "sister"], "sibling-in-law": ["spouse", "sibling"],
         "child-in-law": ["child", "spouse"], "stepmother": ["father", "wife", "!mother"],
         "stepfather": ["mother", "husband", "!father"], "uncle": ["parent", "brother"], "aunt": ["parent", "sister"]}
_SIDE = {"paternal": "father", "maternal": "mother"}
_WORD = r"((?:paternal\s+|maternal\s+)?(?:" + "|".join(sorted(STEPS, key=len, reverse=True)) + r"))\b"
_OWNER = rf"((?:{CAPITAL}[\w.&’-]*|\([^)]*\))(?:\s+(?:(?:of|the|de|von|van|and|du|da|al|bin|for|in|to|a|an|on|at|with|from|by)\s+)*(?:{CAPITAL}[\w.&’-]*|\([^)]*\)))*)"
_OWNED = re.compile(rf"{_OWNER}['’]s?\s+{_WORD}")
_NAMED = re.compile(_OWNER)
_ROLE_OWNER = re.compile(rf"(?:the\s+)?({'|'.join(ROLES)})s?\s+of\s+(?:the\s+)?(?:{WORK}\s+)?", re.I)
_OF = re.compile(rf"\bthe\s+{_WORD}\s+of\s+")
_MALE, _FEMALE = {"father", "son", "husband", "brother"}, {"mother", "daughter", "wife", "sister"}
# what the question asks of the last person: the words of the sentence that says it
_CAUSES = (r"tuberculosis|consumption|cancer|tumou?r|leuk[a]?emia|pneumonia|influenza|heart\s+(?:attack|failure|disease)|"
           r"stroke|typhoid|typhus|cholera|smallpox|malaria|plague|dysentery|fever|diabetes|cirrhosis|sepsis|syphilis|"
           r"alzheimer|parkinson|dementia|suicide|murder(?:ed)?|assassinat(?:ed|ion)|executed|drowned|overdose|accident|crash")
_ASKED = [("cause", r"\bcause\s+of\s+(?:his|her|the\s+)?death\b|\bhow\s+did\b.*\bdie\b|\bdie\s+of\b",
           [r"\b(?:died|dies)\s+(?:[a-z]+\s+){0,3}(?:of|from)\b|\bcause\s+of\s+death\b|\bdeath\s+(?:from|due\s+to|caused)\b",
            rf"\b(?:{_CAUSES})\b"]),
          ("death", r"\bdie\b|\bdied\b|\bdeath\b",
           [r"\bdied\b|\bdeath\b|\bkilled\b", r"[–-]\s*(?:\w+\s+){0,2}\d{3,4}\)"]),
          ("born", r"\bdate\s+of\s+birth\b|\bplace\s+of\s+birth\b|\bborn\b|\bbirth",
           [r"\bborn\b", r"\(\s*(?:\w+\s+){0,2}\d{3,4}\s*[–-]"]),
          ("buried", r"\bburied\b|\bburial\b", [r"\bburied\b|\binterred\b|\bburial\b"]),
          ("nation", r"\bnationality\b|\bcountry\b|\bcitizen", [r"^"])]


def kin_question(question: str) -> tuple[str, list[str], str] | None:
    """(X, the steps, the rest of the question) of a kin question: "When did Edla of Varnholm's
    mother die?" -> ("Edla of Varnholm", ["mother"], "When did die?"); None when it names no kin."""
    text = " ".join(question.split())
    owned = _OWNED.search(text)
    found = []
    if owned:
        found.append((owned.start(), owned.group(1), owned.group(2), owned.start(), owned.end()))
    for match in _OF.finditer(text):  # "the mother of X", "the spouse of the director of film X"; never "of X's director"
        role = _ROLE_OWNER.match(text, match.end())
        named = _NAMED.match(text, role.end() if role else match.end())
        if named and not re.match(r"['’]", text[named.end():]):
            owner = f"{role.group(1).lower()} of {named.group(1)}" if role else named.group(1)
            found.append((match.start(), owner, match.group(1), match.start(), named.end()))
    if not found:
        return None
    _, owner, word, start, end = min(found)
    words = word.lower().split()
    steps = list(STEPS[words[-1]])
    if len(words) == 2 and steps[0] == "parent":
        steps[0] = _SIDE[words[0]]
    owner = re.sub(r"^(?:Who|What|When|Where|Which|How|Is|Was|Did|Does)\s+", "", owner).strip()
    return (owner, steps, text[:start] + " " + text[end:]) if len(bare(owner)) > 2 else None


def kin_answer(question: str, passages: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (sentence, citation) pairs of a kin question's chain: each step's sentence, then the
    sentence saying what is asked of the last person. Empty when the question names no kin or a
    step finds no one."""
    asked = kin_question(question)
    if asked is None:
        return []
    owner, steps, rest = asked
    through = _through_role(owner, passages)
    if through is not None:  # "the spouse of the director of film X": from the director the film's text names
        if not through:
            return []
        owner = through[0].bearer.name
    facts = read_facts(passages)
    paths: list[tuple[str, list[Fact], list[str]]] = [(owner, [], [owner])]  # (person, facts, the people on the way)
    for step in steps:
        if step.startswith("!"):  # a stepmother is the father's wife who is not the mother
            own = [person for person, _ in _step(facts, owner, step[1:])]
            paths = [p for p in paths if not any(same_one(p[0], o) for o in own)]
        else:
            paths = [(person, path + told, seen + [person]) for who, path, seen in paths
                     for person, told in _step(facts, who, step)
                     if not any(same_one(person, s) for s in seen)][:MAX_PEOPLE]
        if not paths:
            return []
    kind = next((k for k, asks, _ in _ASKED if re.search(asks, rest, re.I)), None)
    for person, path, _ in paths:
        said = _said_of(facts, person, kind, rest) if kind or not _asks_person(rest) else None
        if said is None and not _asks_person(rest):
            continue
        picked = [(b.sentence, b.cite) for b in through or []]
        picked += [pair for f in path for pair in _told(facts, f)] + ([said] if said else [])
        return list(dict.fromkeys(picked))
    return []


def _through_role(owner: str, passages: Sequence[tuple[str, str]]) -> list[Bridged] | None:
    """None for an owner that is a person; for "director of Harbour of Glass", the film's side
    naming its director (tgr.offline.comparison_bridges) in a list, empty when none does."""
    role = re.match(rf"({'|'.join(ROLES)}) of (.+)$", owner)
    if role is None:
        return None
    side = bridged(role.group(2), role.group(1), passages)
    return [side] if side is not None else []


def _told(facts: KinFacts, fact: Fact) -> list[tuple[str, str]]:
    """A fact's sentence, after its passage's opening where it names its subject by a pronoun only
    ("He was the father of Rudra Shah." needs "Krishna Shah (?–1661) was the king ...")."""
    said = (fact.sentence, fact.cite)
    if not re.match(r"(?:He|She|His|Her|They|Their)\b", fact.sentence):
        return [said]
    opening = next((s[0] for subject, cite, s in facts.subjects if cite == fact.cite and s), None)
    return [(opening, fact.cite), said] if opening else [said]


def _asks_person(rest: str) -> bool:
    return re.match(r"\s*(?:who|whom)\b", rest, re.I) is not None


def _step(facts: KinFacts, who: str, step: str) -> list[tuple[str, list[Fact]]]:
    """The people in one plain relation (step) to who, each with the facts that say it; a sibling
    the passages name as none is a parent's other child."""
    found: list[tuple[str, list[Fact], str | None]] = []  # (person, facts, what they say of their sex)
    for fact in facts.facts:
        if same_one(fact.who, who) and not same_one(fact.whom, who):  # who is fact.kin of fact.whom
            other = _inverse(fact, step)
            if other is not None:
                found.append((fact.whom, [fact], other))
        elif same_one(fact.whom, who) and not same_one(fact.who, who) and _group(fact.kin) == _group(step):
            found.append((fact.who, [fact], "m" if fact.kin in _MALE else "f" if fact.kin in _FEMALE else None))
    if step in SIBLINGS and not found:
        for parent, told in _step(facts, who, "parent"):
            found += [(child, told + more, None) for child, more in _step(facts, parent, "child")
                      if not same_one(child, who)]
    wanted = "m" if step in _MALE else "f" if step in _FEMALE else None
    people: list[tuple[str, list[Fact]]] = []
    for person, told, said in found:
        sex = said or facts.sex(person)
        last = told[-1]
        if last.kin in CHILDREN and step in PARENTS and sex is None:  # "son of A and B": A the father, B the mother
            sex = "f" if last.place == 1 else "m"
        if wanted and sex != wanted and not (wanted == "m" and sex is None):
            continue
        if not any(same_one(person, p) for p, _ in people):
            people.append((person, told))
    return people


def _group(kin: str) -> str | None:
    for group in (PARENTS, CHILDREN, SPOUSES, SIBLINGS):
        if kin in group:
            return min(group)
    return None


def _inverse(fact: Fact, step: str) -> str | None:
    """Whether the fact, saying who is fact.kin of fact.whom, gives fact.whom in the step's
    relation to who; the sex it says of fact.whom ("" when none)."""
    group = _group(fact.kin)
    if group == min(CHILDREN) and step in PARENTS or group == min(PARENTS) and step in CHILDREN:
        return ""
    if group == min(SPOUSES) and step in SPOUSES:
        return {"husband": "f", "widower": "f", "wife": "m", "widow": "m", "consort": ""}.get(fact.kin, "")
    if group == min(SIBLINGS) and step in SIBLINGS:
        return ""
    return None


def _said_of(facts: KinFacts, person: str, kind: str | None, rest: str) -> tuple[str, str] | None:
    """The sentence of the person's passage that says what is asked: one holding the words of
    that kind ("died of"), else, for a nationality, the opening; else the one sharing most
    words with the rest of the question."""
    for subject, cite, sentences in facts.subjects:
        if not same_one(subject, person):
            continue
        if kind is not None:
            when = re.search(r"\b(?:when|date|year)\b", rest, re.I) is not None
            where = re.search(r"\b(?:where|place)\b", rest, re.I) is not None  # "died in Rome", "born at Tours"
            for says in next(p for k, _, p in _ASKED if k == kind):
                hit = next((s for s in sentences if re.search(says, s, re.I) and (not when or re.search(r"\d{3}", s))
                            and (not where or re.search(rf"\b(?:in|at|near)\s+{CAPITAL}", s))), None)
                if hit:
                    return hit, cite
            return None
        terms = set(match_terms(rest))
        best = max(sentences, key=lambda s: len(terms & set(match_terms(s))), default=None)
        return (best, cite) if best and terms & set(match_terms(best)) else None
    return None
