"""The role a question asks about: "What is the date of birth of the director of film Harbour of
Glass?", "When did Edla of Varnholm's father die?", "Where did the composer of Stillwater die?".

Such a question names a thing X and a role R of it (the director of X, X's father); what it asks (a
date, a place, a number, a person) is said of whoever bears R, in that person's own passage. The
chain quoted (tgr.offline.answer_sentences._role_chain) is then: the sentence of X's passage (the
one that opens with X) that speaks of R and names someone ("The film is directed by Ansel Brook"),
then, from the passage that opens with that person ("Ansel Marten Brook (born May 2, 1931) is a
director ..."), the sentence holding the kind asked. This module reads the question and matches
the names; it knows nothing of sentences' scores.
"""
from __future__ import annotations

import re

# "the director of film X", "the performers of X": the role and what follows "of"
_ROLE_OF = re.compile(r"\bthe\s+([a-z]+)\s+of\s+(?=(?:[a-z]+\s+){0,2}?[A-Z\"“])")
# "X's father", "Big Eye's main director"
_ROLE_OWNED = re.compile(r"((?:[A-Z][\w.&-]*\s+(?:(?:of|the|de|von|van|and|&)\s+)*)*[A-Z][\w.&-]*?)['’]s?\s+"
                         r"(?:(?:main|first|last|eldest|elder|younger|older|only|former|original|lead)\s+)?([a-z]+)\b")
_ASKING = re.compile(r"\b(?:what|which|who|whom|whose|when|where|how|is|was|are|were|did|does|do|the|of)\b", re.I)
_NOT_ROLES = {"date", "place", "year", "time", "name", "number", "cause", "birth", "death", "same", "kind", "type",
              "part", "most", "first", "last", "one",
              # what names X itself ("the village of Clonmoor", "the film Y"): no role of it
              "village", "town", "city", "county", "state", "country", "nation", "province", "region", "island",
              "river", "lake", "mountain", "kingdom", "republic", "empire", "district", "borough", "parish",
              "film", "movie", "song", "album", "single", "book", "novel", "play", "series", "show", "band", "group"}


def question_role(question: str) -> tuple[str, str, str] | None:
    """(X, R, the rest of the question) of the innermost role a question names, the rest being
    the question without the role's phrase and its asking words: "When did the director of film
    Harbour of Glass (1961 film) die?" -> (Harbour of Glass, director, "die"); "When did Edla of
    Varnholm's father die?" -> (Edla of Varnholm, father, "die"). None when it names no role of a name."""
    found = []  # (where, X, R, where the phrase ends): the innermost is the last
    for match in _ROLE_OF.finditer(question):
        named = named_in(question[match.end():].rstrip("?？. "))
        end = question.find(named, match.end()) if named else -1
        if match.group(1) not in _NOT_ROLES and end >= 0:
            found.append((match.start(), named, match.group(1), end + len(named)))
    owned = _ROLE_OWNED.search(question)
    if owned and owned.group(2) not in _NOT_ROLES:
        found.append((owned.start(), owned.group(1), owned.group(2), owned.end()))
    if not found:
        return None
    start, named, relation, end = max(found)
    thing = re.sub(r"\s*\([^)]*\)", "", named).strip(" \"'“”")  # "Best Friends (1982 Film)" is Best Friends
    rest = " ".join(_ASKING.sub(" ", question[:start] + " " + question[end:]).strip(" ?？.").split())
    return (thing, relation, rest) if len(thing) > 2 else None


def named_in(rest: str) -> str | None:
    """The name an of-phrase is about: from its first capitalised word (after at most three
    others: "the 1961 film Harbour of Glass"), up to a comma or a relative clause."""
    found = re.match(r"^(?:[\w'’-]+\s+){0,3}?([A-Z].*)$", re.split(r"[,;]", rest)[0])
    if not found:
        return None
    name = re.split(r"\s+(?:that|which|who|whose|where|when)\s", found.group(1))[0]
    return re.sub(r"(?:\s+[a-z][\w'’-]*)+$", "", name).strip(" \"'“”") or None  # "Apple born" -> Apple


def opens_with(text: str, name: str) -> bool:
    """The passage's opening sentence starts with the name (in any case: "Laughter in Hell")."""
    return text.lstrip(" \"'“").lower().startswith(name.lower())


def same_person(name: str, subject: str) -> bool:
    """A passage's subject is the person a sentence names: the same words, or the same first and
    last word ("Ansel Brook" for "Ansel Marten Brook")."""
    words, other = name.split(), subject.split()
    if len(words) < 2 or len(other) < 2:
        return name == subject
    return words == other or (words[0] == other[0] and words[-1] == other[-1])


def holds_word(terms: frozenset[str], words: set[str]) -> bool:
    """The terms hold one of the words, or a longer form of one ("died" for "die")."""
    return any(term.startswith(word) for term in terms for word in words if len(word) >= 3)
