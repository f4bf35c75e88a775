"""The country a "which country" question asks, where the answering sentences name it only by its
demonym: "In what country was Lost Gravity manufactured?" answered by "Mack Rides ... is a German
company" leads with "Germany"; "Which country is X's father from?" by "... a German nobleman" too.

Only where the question asks a country (not "the same country", nor a yes/no question), the
answering sentences name no country themselves, and the demonym is not the question's own
("Which country did the American singer move to?"); and only a demonym that says what a thing the
question or an earlier answering sentence names is ("Mack Rides ... is a German company" after
"It was manufactured by Mack Rides"), or that the sentence of a kin chain's last person, or the defining sentence of the bearer of a role
the question asks through ("Which country is the director of film X from?"), holds; and in the predicate's own noun phrase
("X is a novel by English writer Y" says nothing of where X is).
"""
from __future__ import annotations

import re
from typing import Sequence

from .comparison_bridges import ROLES, bridged
from .comparison_sides import leading_name
from .demonyms import country_of, gazetteer
from .role_hop import question_role

_ASKS = re.compile(r"^\s*(?:(?:in|from|of|to)\s+)?(?:what|which)\s+country\b|"
                   r"\b(?:what|which)\s+(?:is\s+the\s+)?country\s+(?:of\s+(?:origin|citizenship)|is|was|did|does|do)\b",
                   re.I)
_COPULA = re.compile(r"\s(?:is|was|are|were)\s+(?:an?|the)\s")
_NOUN_PHRASE_END = re.compile(r"\b(?:by|of|in|from|for|with|to|at|on|who|which|that|and)\b|[,;(]")
_ADJECTIVE = re.compile(r"\b(?=([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?))")


def country_lead(question: str, sentences: Sequence[str], said_of_person: bool = False) -> str | None:
    """The country the sentences name by a demonym ("German" -> "Germany"), when the question asks
    a country and they name none; else None. said_of_person: the one sentence is the person's a
    kin chain found, so it need not name what the question names."""
    if not _ASKS.search(question) or re.search(r"\bsame\b", question, re.I):
        return None
    text = " ".join(sentences)
    if any(re.search(rf"\b{re.escape(place)}\b", text) for place in gazetteer("countries.json")):
        return None
    asked = question.lower()
    for n, sentence in enumerate(sentences):
        before = question + " " + " ".join(sentences[:n])
        copula = _COPULA.search(sentence)
        subject = leading_name(sentence[:copula.start()]) if copula else ""
        if not said_of_person and not (len(subject) > 2 and subject.split()[0] in before):
            continue
        start = copula.end() if copula else 0
        end = _NOUN_PHRASE_END.search(sentence, start)  # "a novel by English writer Y" says nothing of the novel's country
        for match in _ADJECTIVE.finditer(sentence, start, end.start() if end else len(sentence)):
            words = match.group(1).split()
            for name in [" ".join(words), words[0]] if len(words) == 2 else [words[0]]:
                country = country_of(name)
                if country and name.lower() not in asked:
                    return country
    return None


def bearer_sentence(question: str, passages: Sequence[tuple[str, str]]) -> str | None:
    """The defining sentence of the person a country question reaches through a role ("the
    director of film X": tgr.offline.comparison_bridges), or None."""
    if not _ASKS.search(question):
        return None
    role = question_role(question)
    if role is None or role[1] not in ROLES:
        return None
    side = bridged(role[0], role[1], passages)
    return side.bearer.sentence if side is not None else None
