"""The passages a "who is X" or "X的R是谁" question must read first, whatever the walk ranks.

A definition question ("Who is Jacob Marley?", "须菩提祖师是谁？") is answered by the passage
that defines X: the first of X's chunks with a sentence in the form of a definition ("Ghost of
Jacob Marley, a spectre of ...", "称名须菩提祖师"; tgr.offline.answer_sentences.defines). The
walk ranks the chunks where X is most connected, which are seldom that one.

A relation question ("孙悟空的师父是谁？") is answered by a person X is related to, found where
the two meet and the text speaks of the relation: the related person (the bearer) with the most
chunks that mention both and hold the relation word (祖师 and 孙悟空 where 师父 is said). Then
the bearer's defining passage leads ("称名须菩提祖师", a chunk that never names 孙悟空), and one
of those meeting chunks follows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..offline.answer_sentences import QuestionShape, defines
from ..store.db import Connection
from ..text import normalise_name, split_sentences
from .name_match import alias_entity

MAX_SCANNED = 200   # an entity's chunks read for its defining sentence, first ones first
BEARERS = 50        # related people weighed for a relation question


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
    for chunk_id, text in conn.execute(
            "SELECT c.id, c.text FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
            "WHERE em.entity_id = ? ORDER BY c.document_id, c.ordinal LIMIT ?", (entity_id, MAX_SCANNED)):
        for a, b in split_sentences(text):
            sentence = " ".join(text[a:b].split())
            if any(s in sentence and defines(sentence, s) for s in surfaces):
                return chunk_id
    return None


def _relation(conn: Connection, subject: str, relation: str) -> Focus:
    """The related person who meets the subject most where the relation is spoken of."""
    rows = conn.execute(
        "SELECT b.entity_id, c.id FROM entity_mentions a "
        "JOIN entity_mentions b ON b.chunk_id = a.chunk_id AND b.entity_id != a.entity_id "
        "JOIN chunks c ON c.id = a.chunk_id JOIN entities e ON e.id = b.entity_id AND e.type = 'person' "
        "WHERE a.entity_id = ?1 AND instr(c.text, ?2) > 0 AND b.entity_id IN ("
        "  SELECT CASE WHEN source_id = ?1 THEN target_id ELSE source_id END FROM relationships "
        "  WHERE source_id = ?1 OR target_id = ?1 ORDER BY weight DESC LIMIT ?3) "
        "ORDER BY c.document_id, c.ordinal", (subject, relation, BEARERS)).fetchall()
    if not rows:
        return Focus()
    met: dict[str, list[str]] = {}
    for bearer, chunk_id in rows:
        met.setdefault(bearer, []).append(chunk_id)
    bearer = min(met, key=lambda e: (-len(met[e]), e))
    defined = defining_chunk(conn, bearer, (_name(conn, bearer), bearer)) or _first_chunk(conn, bearer)
    chunks = [defined, met[bearer][0]]
    return Focus(list(dict.fromkeys(c for c in chunks if c)), [bearer])


def _first_chunk(conn: Connection, entity_id: str) -> str | None:
    """Where the text first mentions the entity (who introduces it)."""
    row = conn.execute("SELECT c.id FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
                       "WHERE em.entity_id = ? ORDER BY c.document_id, c.ordinal LIMIT 1", (entity_id,)).fetchone()
    return row[0] if row else None


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

