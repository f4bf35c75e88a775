"""A chat model's local or naive answer held to its sources.

A weak model (SmolLM2-135M on tgr's answer prompt, tests/fixtures/smollm2) writes an answer that
cites nothing, and much of it is invented: a quote no passage holds, the same sentences again and
again. An answer that cites nothing is read sentence by sentence against the passages it was
given: a sentence most of whose words one passage holds cites that passage ([Sources: n], after
the sentence, as the extractive answer cites). When most of its sentences match no passage, it is
not an answer from the sources: tgr.query.modes answers extractively instead and says so.

An answer that cites anything is left as the model wrote it (its citations are its own); so is
one that says it doesn't know. Words are compared as tgr.text.match_terms gives them, English
words by their first five letters ("partners" is "partner"), Chinese by character bigrams.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..text import match_terms, split_sentences

MATCH = 0.5      # share of a sentence's words one passage holds for the sentence to cite it
MIN_WORDS = 3    # a sentence with fewer words is not judged (nor cited)
GROUNDED = 0.5   # share of an answer's judged sentences that must match a passage
STEM = 5         # letters of an English word compared

_CITATION = re.compile(r"\[(?:Data:\s*)?(?:Sources?|Entities|Relationships|Reports?)\b[^\[\]]*\]")
_DONT_KNOW = re.compile(r"(?i)^\W*(?:i don'?t know|i do not know|不知道|我不知道)")


@dataclass
class Grounded:
    """An answer read against its sources: its text with the citations attached, how many of
    its sentences were judged, how many matched a passage, and whether it is invented."""

    text: str
    judged: int = 0
    matched: int = 0
    cited: list[str] = field(default_factory=list)  # the passages cited, in the order first cited

    @property
    def invented(self) -> bool:
        return self.judged > 0 and self.matched < GROUNDED * self.judged


def cites(text: str) -> bool:
    """Whether a text holds a citation ([Sources: 2], [Entities: 1], [Data: Reports (3)] ...)."""
    return bool(_CITATION.search(text))


def needs_grounding(text: str) -> bool:
    """An answer that cites nothing and does not say it doesn't know."""
    return bool(text.strip()) and not cites(text) and not _DONT_KNOW.match(text)


def ground(text: str, passages: list[tuple[str, str]]) -> Grounded:
    """The answer with [Sources: n] after each sentence a passage (citation, text) holds most
    words of (the best such passage, the first of equals), and how many sentences matched.
    An answer that needs no grounding (see needs_grounding) comes back as it is."""
    if not needs_grounding(text):
        return Grounded(text)
    words = [(cite, _words(passage)) for cite, passage in passages]
    out, last, judged, matched, cited = [], 0, 0, 0, []
    for start, end in split_sentences(text):
        sentence = text[start:end]
        stems = _words(sentence)
        if len(stems) < MIN_WORDS:
            continue
        judged += 1
        best, share = None, 0.0
        for cite, held in words:
            found = len(stems & held) / len(stems)
            if found > share:
                best, share = cite, found
        if best is None or share < MATCH:
            continue
        matched += 1
        cited += [best] if best not in cited else []
        body = sentence.rstrip()
        out.append(text[last:start + len(body)] + f" [Sources: {best}]")
        last = start + len(body)
    out.append(text[last:])
    return Grounded("".join(out), judged, matched, cited)


def _words(text: str) -> set[str]:
    return {t[:STEM] if t.isascii() else t for t in match_terms(text) if len(t) > 1 or not t.isascii()}
