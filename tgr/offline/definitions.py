"""Where a text says who or what X is: narration, not speech, and sentences that name X by a pronoun.

A "who is X" question is answered by what the narrator says of X ("Marley was dead, to begin
with."), not by lines of dialogue addressed to X ("'In life I was your partner, Jacob Marley.'"),
which hold X's name but say nothing of X to the reader. After the sentence that names X, the
next ones often name X only by a pronoun ("Scrooge and he were partners ...", "他是..."): a
pronoun stands for the last name written before its sentence that its sentence does not hold
itself ("Scrooge knew he was dead": he is not Scrooge). tgr.offline.answer_sentences reads these.
"""
from __future__ import annotations

import re
from typing import Sequence

from ..text import has_cjk

_SPEECH_EN = re.compile(r"^\s*[\"'“‘]|[.!?,;:—-][\"'”’]\s*$")  # opens or closes a quotation
_QUOTED_ZH = re.compile(r"[“「『][^”」』]*[”」』]")
_PRONOUN_EN = re.compile(r"\b(?:he|him|his|she|her|hers)\b", re.I)
_PRONOUN_ZH = re.compile(r"[他她]")
_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]+")
# a pronoun sentence that says what X is or was: "he was ...", "Scrooge and he were ...",
# "Scrooge was his sole friend", "他是...", "她乃..."
_SAYS_EN = re.compile(r"\b(?:he|she)\s+(?:is|was|were|are|had\s+been|has\s+been)\b|"
                      r"\band\s+(?:he|she)\s+(?:were|are)\b|\b(?:is|was|were)\s+(?:his|her)\s+\w", re.I)
_SAYS_ZH = re.compile(r"^[他她](?:是|乃|为|曾是|本是|原是)")


def in_speech(sentence: str, forms: Sequence[str]) -> bool:
    """The sentence names X (one of forms) only inside quoted speech: an English sentence that
    opens or closes a quotation, or Chinese whose every mention of X is between quotation marks
    (or before a closing mark, after an opening one, whose pair is in another sentence)."""
    if not has_cjk(sentence):
        return bool(_SPEECH_EN.search(sentence))
    outside = _QUOTED_ZH.sub("", sentence)
    closes = max(outside.rfind(c) for c in "”」』")  # a quotation that opened in an earlier sentence
    outside = outside[closes + 1:]
    opens = min((i for i in (outside.find(c) for c in "“「『") if i >= 0), default=len(outside))
    outside = outside[:opens]  # ... or goes on after this one
    return any(f in sentence for f in forms) and not any(f in outside for f in forms)


def refers_back(sentences: Sequence[str], forms: Sequence[str]) -> list[bool]:
    """For each sentence of one passage (in order): does a pronoun in it stand for X? It does
    when the last name written before the sentence, among those the sentence does not hold, is
    one of X's forms. English names are capitalised words (a sentence's first word only where the
    passage writes it capitalised inside a sentence too); Chinese sentences look back at X only."""
    forms = [f for f in forms if f]
    if not forms:
        return [False] * len(sentences)
    mid = {m.group(0) for s in sentences for m in _CAPITALISED.finditer(s) if m.start() > 0}
    seen: list[str] = []  # names in text order, X's forms as "X"
    found = []
    for sentence in sentences:
        names = _names(sentence, forms, mid)
        pronoun = (_PRONOUN_ZH if has_cjk(sentence) else _PRONOUN_EN).search(sentence)
        before = next((n for n in reversed(seen) if n not in names), None)
        found.append(bool(pronoun) and "X" not in names and before == "X")
        seen.extend(names)
    return found


def says_what(sentence: str) -> bool:
    """A sentence whose pronoun stands for X says what X is or was ("he was", "X's partner")."""
    return bool((_SAYS_ZH if has_cjk(sentence) else _SAYS_EN).search(sentence.strip()))


def _names(sentence: str, forms: Sequence[str], mid: set[str]) -> list[str]:
    """The names a sentence writes, in order, X's forms as "X" (Chinese: X's only)."""
    if has_cjk(sentence):
        return ["X"] if any(f in sentence for f in forms) else []
    words = {f.split()[-1] for f in forms}  # a name's last word stands for it ("Marley", "Old Marley")
    names = []
    for m in _CAPITALISED.finditer(sentence):
        word = m.group(0)[:-2] if m.group(0).endswith(("'s", "’s")) else m.group(0)
        if m.start() > 0 or word in mid or word in words:
            names.append("X" if word in words else word)
    return names
