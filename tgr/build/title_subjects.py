"""The document's subject as an entity: a title that is a name names what the document is
about ("Demon Dice", "长谷川町子", a book's title). The first chunk of such a document gets
the title as an entity (its surface form kept as an alias even when the extractor found the
name there already) and a relationship from it to every entity its first two sentences name; the parenthesised part of a title
("Ludwig (film)") is dropped. A title that is a sentence, a file name or a path is no name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..store.db import Connection
from ..parsing import RawEntity, RawRelation
from ..text import name_key
from ..text import has_cjk, shorten, split_sentences

_PARENTHESISED = re.compile(r"\s*[(（][^()（）]*[)）]")
_CJK_PUNCTUATION = set("，。！？；：、…")
_MAX_WORDS, _MAX_CJK = 10, 20
_HEADING = re.compile(r"^(?:stave|chapter|book|part|volume|section|act|scene)\s+(?:[ivxlc]+|\d+|one|two|three|"
                      r"four|five|six|seven|eight|nine|ten)\b", re.I)
_FILE_NAME = re.compile(r"\.(?:txt|md|rst|html?|pdf|jsonl?|csv|docx?)$", re.I)
_VERBS = frozenset("is was are were be been has have had do did to with for that which who when "
                   "it he she they we i".split())
_SMALL_WORDS = frozenset("a an the of and or in on at to for with by from de la le von van du".split())


@dataclass
class Subject:
    name: str
    type: str


def subject_name(title: str, source: str = "") -> str | None:
    """The name a document title gives its subject, or None when the title is no name
    (a sentence, a path or file name, too long)."""
    name = _PARENTHESISED.sub("", title or "").strip().strip(";:,-—").strip()
    if not name or name == source or "/" in name or "\\" in name or _FILE_NAME.search(name):
        return None
    if has_cjk(name):
        if len(name) > _MAX_CJK or _CJK_PUNCTUATION & set(name):
            return None
        return name
    words = name.split()
    if _HEADING.match(name):
        return None  # "STAVE ONE", "Chapter 3": a part of a work, not its subject
    if len(words) > _MAX_WORDS or not (name[0].isupper() or name[0].isdigit()):
        return None
    if name.endswith(".") and len(words[-1]) > 4 and not words[-1].isupper():
        return None  # a sentence ("Marley was dead, to begin with."), not "Harris & Co." or "Bill W."
    if len(words) > 4 and sum(w.lower().strip(",;") in _VERBS for w in words) >= 2:
        return None  # "Marley was dead, to begin with"
    if name.isupper() and len(name) > 3:  # "A CHRISTMAS CAROL" -> "A Christmas Carol"
        name = " ".join("-".join(p.capitalize() for p in w.split("-")) if w.lower() not in _SMALL_WORDS or i == 0
                        else w.lower() for i, w in enumerate(name.split()))
    return name


def document_subjects(conn: Connection, chunk_ids: list[str]) -> dict[str, Subject]:
    """chunk id -> the subject of its document, for the first chunk of each document whose
    title is a name (among chunk_ids)."""
    if not chunk_ids:
        return {}
    import json

    rows = conn.execute(
        "SELECT c.id, d.title, d.source, d.metadata FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE c.ordinal = 0 AND c.id IN (SELECT value FROM json_each(?))", (json.dumps(chunk_ids),)).fetchall()
    subjects = {}
    for chunk_id, title, source, _ in rows:
        name = subject_name(title, source)
        if name:
            subjects[chunk_id] = Subject(name, "concept")
    return subjects


def with_subject(subject: Subject, text: str, entities: list[RawEntity],
                 relations: list[RawRelation]) -> tuple[list[RawEntity], list[RawRelation]]:
    """The chunk's entities and relations with the subject and its links added."""
    key = name_key(subject.name)
    same = [e for e in entities if name_key(e.name) == key]
    sentences = [" ".join(text[a:b].split()) for a, b in split_sentences(text)]
    sentences = [s for s in sentences if s]
    name = subject.name  # added even when the extractor found it ("Prestige"): the title is an alias too
    about = [s for s in sentences if name.casefold() in s.casefold()] or sentences[:1]
    kind = next((e.type for e in same if e.type != "concept"), None) or _subject_type(name, text)
    extra = [] if any(e.name == name for e in same) else \
        [RawEntity(name=name, type=kind, description=shorten(" ".join(about[:2]), 300))]
    linked = {name_key(r.source) for r in relations if name_key(r.target) == key} | \
        {name_key(r.target) for r in relations if name_key(r.source) == key}
    links = []  # what the opening names (linking every entity of a long chunk made local retrieval worse)
    opening = " ".join(sentences[:2])
    for entity in [e for e in entities if e.name in opening]:
        other = name_key(entity.name)
        if other == key or other in linked:
            continue
        linked.add(other)
        where = next((s for s in sentences if entity.name in s), sentences[0] if sentences else "")
        links.append(RawRelation(source=name, target=entity.name, predicate="mentions" if not has_cjk(name) else "提及",
                                 description=shorten(where, 240), strength=1.0))
    return extra + list(entities), list(relations) + links


def _subject_type(name: str, text: str) -> str:
    """By the document's opening only: this runs while model answers are awaited, so nothing
    slow (the gazetteer types the entity at the merge). The opening is read without its
    asides in brackets, where a definition's subject keeps its other names, scripts and dates
    ("X (née Y; 3 February 1898 – 27 August 1971) was a jazz pianist"), unless the first
    aside gives a person's birth or life span."""
    if has_cjk(name):
        return "concept"  # (the defining patterns are English)
    from ..offline.entity_types import type_by_words
    from ..offline.names_en import defining_type, life_aside

    opening = text[:_OPENING]
    by_words = type_by_words(name)  # what the name's own words say (an event's dates are no life span)
    if by_words is None and (aside := _FIRST_ASIDE.search(opening)) and life_aside(aside.group(1)):
        return "person"
    plain = _without_asides(opening)
    sentences = [" ".join(plain[a:b].split()) for a, b in split_sentences(plain)]
    about = [s for s in sentences if name.casefold() in s.casefold()] or sentences[:1]
    for sentence in about[:1]:
        kind = defining_type(sentence)
        if kind:
            return kind
    if len(sentences) > 1 and name.casefold() in sentences[0].casefold() and by_words is None \
            and _HE_OR_SHE.match(sentences[1]):
        return "person"  # "Franc Rode is a Slovenian Cardinal. He is the prefect emeritus of ..."
    return "concept"


_HE_OR_SHE = re.compile(r"(?:He|She|His|Her)\s")
_OPENING = 1500  # characters: the first sentence of a document, asides and all
# the first aside, right after the opening's first words (its subject's name: "Cláudio Ibrahim Vaz Leal (born ...")
_FIRST_ASIDE = re.compile(r"^\W*[A-Z][^.!?。(（\s]*(?:\s+[^.!?。(（\s]+){0,7}\s*[(（]((?:[^()（）]|[(（][^()（）]*[)）])*)[)）]")


def _without_asides(text: str) -> str:
    """The text with its bracketed asides removed, innermost first."""
    while True:
        plain = _PARENTHESISED.sub("", text)
        if plain == text:
            return plain
        text = plain

