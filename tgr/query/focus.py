"""The passages a "who is X", "X的R是谁" or "Who is X's R?" question must read first, whatever the walk ranks.

A definition question ("Who is Jacob Marley?", "须菩提祖师是谁？") is answered by the passage
that defines X: the first of X's chunks with a sentence in the form of a definition ("Ghost of
Jacob Marley, a spectre of ...", "称名须菩提祖师"; tgr.offline.answer_sentences.defines). The
walk ranks the chunks where X is most connected, which are seldom that one.

A relation question ("孙悟空的师父是谁？") is answered by a person X is related to, found where
the two meet and the text speaks of the relation: the related person (the bearer) with the most
chunks that mention both and hold the relation word (祖师 and 孙悟空 where 师父 is said), each
chunk weighted by how specific the person is (a word said everywhere, 和尚, seldom answers). Then
the bearer's defining passage leads ("称名须菩提祖师", a chunk that never names 孙悟空), and one
of those meeting chunks follows. English relation questions ("Who is Scrooge's clerk?", "the
clerk of Scrooge") are answered alike, the relation said in the same sentence as the person
(tgr.offline.answer_sentences.relation_en reads the question; "Bob Cratchit, clerk to Ebenezer
Scrooge." leads).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..offline.answer_sentences import QuestionShape, defines, relation_stem
from ..offline.name_words import CJK_CHARS, chinese_given_name
from ..store.db import Connection, has_table
from ..text import compiled, has_cjk, normalise_name, split_sentences
from .graph_walk import specificity
from .name_match import alias_entity

MAX_SCANNED = 200   # an entity's chunks read for its defining sentence, first ones first
HUB_SHARE = 20      # an entity in one chunk of this many or more is a hub (see _first_mentions)
HUB_SCAN = 4        # a hub's first chunks are looked for among this many times as many as expected
BEARERS = 50        # related people weighed for a relation question
NEAR_WORDS = 3      # English: a name this close to the relation word is the one it belongs to
MAX_FORMS = 20      # English: the subject's written forms looked for
_RELATED = ("SELECT CASE WHEN source_id = ?1 THEN target_id ELSE source_id END FROM relationships "
            "WHERE source_id = ?1 OR target_id = ?1 ORDER BY weight DESC LIMIT ?3")  # ?1 subject, ?3 how many
_TITLE = re.compile(r"[A-Z][a-z]+\s+[A-Z]")
# a word the full-text index holds as its bigrams (compiled when used): Han characters only,
# each a token to FTS5 (the kana block's middle dot and sound marks are separators to it)
_CHINESE = f"[{CJK_CHARS}]{{2,}}"


@dataclass
class Focus:
    """Chunks to lead the ranking with (in order), and entities to lead the entity scores."""

    chunks: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)


def focus(conn: Connection, question: str) -> Focus:
    """The leading chunks and entities of a definition or relation question (empty otherwise)."""
    shape = QuestionShape.of(question)
    if not shape.subject:
        return Focus()
    subject = _entity(conn, shape.subject)
    if subject is None:
        return Focus()
    if shape.defines:
        chunk = defining_chunk(conn, subject, (shape.subject, _name(conn, subject)))
        return Focus([chunk] if chunk else [], [subject])
    if shape.relation:
        return _relation(conn, subject, shape.relation)
    return Focus()


def defining_chunk(conn: Connection, entity_id: str, surfaces: tuple[str, ...]) -> str | None:
    """The first chunk (in text order) where one of the entity's names is defined; None if none is."""
    surfaces = tuple(dict.fromkeys(s for s in surfaces if s))
    # the chunks in text order first, then the text of each as it is looked at: sorted with
    # their texts, every chunk that mentions the entity was read (thousands for a novel's hero
    # at 100 M characters), and the first few usually answer
    # documents in the order they were added (a book's parts)
    ordered = _first_mentions(conn, entity_id, "d.rowid, c.ordinal", MAX_SCANNED)
    # a name without whitespace is in a sentence with its whitespace made single spaces exactly
    # where it is in the sentence as written: only those that hold one are made so and tested
    # (a hub's 200 chunks have ten thousand sentences, a few hundred of which name it)
    spaced = any(s.split() != [s] for s in surfaces)
    for chunk_id in ordered:
        row = conn.execute("SELECT text FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        if row is None:
            continue
        text = row[0]
        if not spaced and not any(s in text for s in surfaces):
            continue
        for a, b in split_sentences(text):
            if not spaced and not any(s in text[a:b] for s in surfaces):
                continue
            sentence = " ".join(text[a:b].split())
            if any(s in sentence and defines(sentence, s) for s in surfaces):
                return chunk_id
    return None


def _relation(conn: Connection, subject: str, relation: str) -> Focus:
    """The related person who meets the subject most where the relation is spoken of: among
    the people the subject has relationships with, the one with the most chunks that hold the
    relation word and one of the subject's written forms (悟空 for 孙悟空: the tagger seldom
    calls a given name alone a name), each chunk weighted by how specific the person is (a
    word said everywhere, 和尚, seldom answers); one meeting is chance where others meet twice.
    English chunks are long and "clerk" far from the name it belongs to: there the evidence is
    the sentences of those chunks that name the person and say the relation (_said)."""
    english = not has_cjk(relation)
    met: dict[str, list[tuple[int, str]]] = {}  # bearer -> (evidence, chunk) of each meeting
    weight: dict[str, float] = {}
    total = conn.execute("SELECT max(1, count(*)) FROM chunks").fetchone()[0]
    for bearer, chunk_id, mentions, said in (_meetings_en if english else _meetings)(conn, subject, relation):
        met.setdefault(bearer, []).append((said, chunk_id))
        weight[bearer] = specificity(mentions, total)
    if not met:
        return Focus()
    evidence = {e: sum(n for n, _ in found) for e, found in met.items()}
    least = min(2, max(evidence.values()))
    bearer = min((e for e in met if evidence[e] >= least), key=lambda e: (-evidence[e] * weight[e], e))
    meeting = max(met[bearer], key=lambda m: m[0])[1]  # the first of the chunks that say it most
    # an English name is defined in full ("Bob Cratchit, clerk to ...") though "Bob" is said most
    surfaces = sorted(_forms(conn, bearer), key=len, reverse=True) if english else (_name(conn, bearer), bearer)
    defined = defining_chunk(conn, bearer, tuple(surfaces))
    if defined is None and not english:  # who introduces the person (an English meeting says more)
        defined = _first_chunk(conn, bearer)
    return Focus(list(dict.fromkeys(c for c in (defined, meeting) if c)), [bearer])


def _meetings(conn: Connection, subject: str, relation: str) -> list[tuple[str, str, int, int]]:
    """(person, chunk, the person's mentions, 1) for each chunk where a person related to the
    subject is mentioned with one of the subject's forms and the relation word, in text order.

    Only the chunks the full-text index can hold both in (_indexed_holders) are read, each
    once, however many of the people it mentions, and tested as UTF-8 bytes: a UTF-8 string
    holds another exactly where its bytes do, and decoding the texts (tens of thousands for a
    novel's hero at 100 M characters) cost more than the tests."""
    forms = _forms(conn, subject)
    people = dict(conn.execute(
        "SELECT id, mentions FROM entities WHERE type = 'person' AND id != ?1 AND id IN (" + _RELATED + ")",
        (subject, relation, BEARERS)))
    seqs, sure = _indexed_holders(conn, relation, forms) or (None, [])
    # the people's mentions in those chunks only (a novel's people are in tens of thousands)
    within = "?2 IS NULL OR +chunk_id IN (SELECT id FROM chunks WHERE seq IN (SELECT value FROM json_each(?2)))"
    mentioned: dict[str, list[str]] = {}  # chunk -> the people it mentions
    for person, chunk_id in conn.execute(
            f"SELECT entity_id, chunk_id FROM entity_mentions WHERE entity_id IN (SELECT value FROM json_each(?1)) "
            f"AND ({within})", (json.dumps(sorted(people), ensure_ascii=False), None if seqs is None else json.dumps(seqs))).fetchall():
        mentioned.setdefault(chunk_id, []).append(person)
    # a text is read only where the full-text index cannot tell (see _indexed_holders)
    texts = ("SELECT id, document_id, ordinal, CASE WHEN seq IN (SELECT value FROM json_each(?3)) THEN NULL "
             "ELSE CAST(text AS BLOB) END FROM chunks WHERE id IN (SELECT value FROM json_each(?1))")
    if seqs is not None:  # looked up by seq: both lists through the id index was a product of the two
        texts = texts.replace("WHERE id IN", "WHERE +id IN") + " AND seq IN (SELECT value FROM json_each(?2))"
    said, form_bytes = relation.encode(), [form.encode() for form in forms]
    met = sorted((document, ordinal, chunk_id) for chunk_id, document, ordinal, text in conn.execute(
        texts, (json.dumps(sorted(mentioned), ensure_ascii=False), json.dumps(seqs), json.dumps(sure)))
        if text is None or (said in text and any(form in text for form in form_bytes)))
    return [(person, chunk_id, people[person], 1) for *_, chunk_id in met for person in mentioned[chunk_id]]


def _indexed_holders(conn: Connection, relation: str, forms: set[str]) -> tuple[list[int], list[int]] | None:
    """The seqs of the chunks that can hold the relation word and one of the forms: those the
    full-text index holds every bigram of the word in and every bigram of one form in (it
    holds each Chinese run as its bigrams, tgr.text.index_terms), and those not indexed yet
    (chunks_unindexed); and the seqs of those that surely hold both. None when the index
    cannot narrow them: a word or every form not wholly Chinese of two characters or more (a
    lone character is indexed only standing alone). A text holds a two-character Chinese word
    exactly where the index holds it as a bigram, and a form holding another form adds no
    chunk: where the word and each form left are of two characters, the indexed chunks found
    hold both (the texts need not be read)."""
    either = [_all_bigrams(form) for form in sorted(forms)]
    if not compiled(_CHINESE).fullmatch(relation) or not all(either):
        return None
    match = f"{_all_bigrams(relation)} AND ({' OR '.join(either)})"
    seqs = json.loads(conn.execute("SELECT json_group_array(rowid) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                   (match,)).fetchone()[0])
    least = [f for f in forms if not any(other != f and other in f for other in forms)]
    sure = list(seqs) if len(relation) == 2 and all(len(f) == 2 for f in least) else []
    if has_table(conn, "chunks_unindexed"):
        seqs += [seq for (seq,) in conn.execute("SELECT seq FROM chunks_unindexed")]
    return seqs, sure


def _all_bigrams(word: str) -> str:
    """An FTS5 query for every bigram of a Chinese word ("" if the word is not one)."""
    if not compiled(_CHINESE).fullmatch(word):
        return ""
    return "(" + " AND ".join(f'"{word[i:i + 2]}"' for i in range(len(word) - 1)) + ")"


def _meetings_en(conn: Connection, subject: str, relation: str) -> list[tuple[str, str, int, int]]:
    """(person, chunk, the person's mentions, evidence) for each chunk holding the subject and
    the relation word where sentences name a person related to the subject and say the
    relation (_said). The chunks are read whole: a list of characters ("Fred, Scrooge's
    nephew.") is seldom where the tagger records every name it holds."""
    forms = sorted(_forms(conn, subject), key=len, reverse=True)[:MAX_FORMS]
    people = {e: (m, _forms(conn, e)) for e, m in conn.execute(
        "SELECT id, mentions FROM entities WHERE type = 'person' AND id != ?1 AND id IN (" + _RELATED + ")",
        (subject, relation, BEARERS))}
    if not people:
        return []
    chunks = conn.execute(
        "SELECT id, text FROM chunks WHERE instr(lower(text), ?) > 0 AND (" + " OR ".join(["instr(text, ?) > 0"] * len(forms))
        + ") ORDER BY document_id, ordinal LIMIT ?", (relation_stem(relation), *forms, MAX_SCANNED)).fetchall()
    found = []
    for chunk_id, text in chunks:
        for person, (mentions, names) in people.items():
            said = _said(text, relation, names) if any(n in text for n in names) else 0
            if said:
                found.append((person, chunk_id, mentions, said))
    return found


def _said(text: str, relation: str, names: set[str]) -> int:
    """The evidence of the text's sentences that name the person (one of names) and say the
    relation: one each, two where the name stands within NEAR_WORDS words of the relation word
    ("little Bob, the father"; not "Martha hid herself, and in came little Bob, the father")."""
    name = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    said = re.compile(rf"\b{re.escape(relation_stem(relation))}", re.I)
    evidence = 0
    for a, b in split_sentences(text):
        sentence = text[a:b]
        words = [m.span() for m in said.finditer(sentence)
                 if not _TITLE.match(sentence, m.start())]  # "Master Peter", "Uncle Scrooge": a title
        named = [m.span() for m in name.finditer(sentence)]
        if words and named:
            near = any(len(sentence[min(e1, e2):max(s1, s2)].split()) <= NEAR_WORDS
                       for s1, e1 in words for s2, e2 in named)
            evidence += 2 if near else 1
    return evidence


def _forms(conn: Connection, entity_id: str) -> set[str]:
    """How the text writes an entity: its name, its recorded aliases, and a Chinese given name
    alone (悟空 of 孙悟空)."""
    forms = {entity_id, _name(conn, entity_id)}
    if has_table(conn, "entity_aliases"):
        forms.update(str(a) for (a,) in conn.execute(
            "SELECT alias FROM entity_aliases WHERE entity_id = ? AND alias IS NOT NULL LIMIT 50", (entity_id,)))
    forms.update(filter(None, map(chinese_given_name, list(forms))))
    return {f for f in forms if len(f) >= 2}


def _first_chunk(conn: Connection, entity_id: str) -> str | None:
    """Where the text first mentions the entity (who introduces it)."""
    found = _first_mentions(conn, entity_id, "c.document_id, c.ordinal", 1)
    return found[0] if found else None


def _first_mentions(conn: Connection, entity_id: str, order: str, n: int) -> list[str]:
    """The ids of the first n chunks that mention the entity, in this order of documents
    ("d.rowid" or "c.document_id") and chunks. A hub's are found by reading the chunks in that
    order until n of them mention it, among the first HUB_SCAN * n * (chunks / mentions) (a
    few hundred for a novel's hero at 100 M characters); if fewer do, or for any other entity,
    all its mentions are sorted (the first 200 of 15,000 took 45 ms)."""
    row = conn.execute("SELECT e.mentions, (SELECT max(seq) FROM chunks) FROM entities e WHERE e.id = ?",
                       (entity_id,)).fetchone()
    mentions, chunks = row if row and row[0] and row[1] else (0, 0)
    # a hub (in one chunk of HUB_SHARE or more), if reading about n * chunks / mentions costs less than sorting
    if mentions * HUB_SHARE >= chunks > 0 and mentions * mentions >= n * chunks:
        scanned = int(HUB_SCAN * n * chunks / mentions) + 1
        found = [r[0] for r in conn.execute(  # (documents the outer loop: no sort, the first ones read)
            f"SELECT id FROM (SELECT c.id, {order.replace(', ', ' AS o1, ')} AS o2 FROM documents d "
            f"CROSS JOIN chunks c ON c.document_id = d.id ORDER BY {order} LIMIT ?3) "
            "WHERE EXISTS (SELECT 1 FROM entity_mentions em WHERE em.entity_id = ?1 AND em.chunk_id = id) "
            "ORDER BY o1, o2 LIMIT ?2", (entity_id, n, scanned))]
        if len(found) == n:
            return found
    return [r[0] for r in conn.execute(
        "SELECT c.id FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id JOIN documents d ON d.id = c.document_id "
        f"WHERE em.entity_id = ? ORDER BY {order} LIMIT ?", (entity_id, n))]


def _entity(conn: Connection, text: str) -> str | None:
    """The entity a question's subject names: by its key, else by a recorded alias."""
    key = normalise_name(text)
    if conn.execute("SELECT 1 FROM entities WHERE id = ?", (key,)).fetchone():
        return key
    found = alias_entity(conn, key)
    return found[0] if found else None


def _name(conn: Connection, entity_id: str) -> str:
    row = conn.execute("SELECT name FROM entities WHERE id = ?", (entity_id,)).fetchone()
    return str(row[0]) if row else ""

