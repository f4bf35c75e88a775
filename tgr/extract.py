"""Extract stage: entities and relationships from every chunk not yet extracted.

LLM mode sends one combined prompt per chunk by default (entities + relationships), or
the seed's two prompts (entities, then triplets among them) with two_step=True, plus
optional gleaning rounds. Offline mode uses tgr.offline.extract_heuristic. Each chunk's
result is committed as soon as it is complete, so an interrupted run loses nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .db import Connection, transaction
from .gateway import ChatJob, Gateway
from .offline import OFFLINE_EXTRACTOR, extract_heuristic
from .parsing import (RawEntity, RawRelation, extraction_is_valid, parse_entities,
                      parse_relations, says_none)
from .prompts import Prompts

Progress = Callable[[str, int, int], None]


@dataclass
class _ChunkState:
    id: str
    text: str
    answers: list[str] = field(default_factory=list)


def pending_chunks(conn: Connection) -> list[tuple[str, str]]:
    """(id, text) of chunks with no extraction yet, in document order."""
    return conn.execute(
        "SELECT c.id, c.text FROM chunks c LEFT JOIN extractions x ON x.chunk_id = c.id "
        "WHERE x.chunk_id IS NULL ORDER BY c.document_id, c.ordinal").fetchall()


def extract_chunks(conn: Connection, gateway: Gateway, prompts: Prompts, *, two_step: bool = False,
                   gleanings: int = 0, progress: Progress | None = None, idle=None) -> int:
    """Extract every pending chunk; returns how many chunks were extracted.

    idle: optional main-thread work to do while answers are awaited (see Gateway.chat_many).
    """
    chunks = pending_chunks(conn)
    total = len(chunks)
    report = progress or (lambda *a: None)
    report("extract", 0, total)
    if gateway.chat_model is None:
        for done, (chunk_id, text) in enumerate(chunks, 1):
            entities, relations = extract_heuristic(text)
            save_extraction(conn, chunk_id, OFFLINE_EXTRACTOR, entities, relations)
            report("extract", done, total)
        return total
    rounds = ["main"] + (["triplets"] if two_step else []) + ["glean"] * gleanings
    states = {cid: _ChunkState(cid, text) for cid, text in chunks}
    done = 0
    for number, kind in enumerate(rounds):
        last = number == len(rounds) - 1
        if kind == "glean":  # a chunk whose last answer found nothing is complete
            for state in [s for s in states.values() if says_none(s.answers[-1])]:
                _save_state(conn, state, gateway.chat_model.name)
                del states[state.id]
                done += 1
                report("extract", done, total)
        jobs = [_job(kind, state, prompts, two_step) for state in states.values()]
        for job, text in gateway.chat_many("extract", jobs, idle):
            state: _ChunkState = job.tag
            state.answers.append(text)
            if last:
                _save_state(conn, state, gateway.chat_model.name)
                done += 1
                report("extract", done, total)
    return total


def _job(kind: str, state: _ChunkState, prompts: Prompts, two_step: bool) -> ChatJob:
    if kind == "main":
        template = prompts.extract_entities if two_step else prompts.extract
        prompt = template.format(entity_types=prompts.entity_types, text=state.text)
    elif kind == "triplets":
        names = [e.name for e in parse_entities(state.answers[0])]
        prompt = prompts.extract_triplets.format(entities="\n".join(names) or "(none)", text=state.text)
    else:
        prompt = prompts.glean.format(text=state.text, previous="\n".join(state.answers))
    return ChatJob(state, prompt, validate=extraction_is_valid)


def _save_state(conn: Connection, state: _ChunkState, extractor: str) -> None:
    entities: list[RawEntity] = []
    relations: list[RawRelation] = []
    for answer in state.answers:
        entities.extend(parse_entities(answer))
        relations.extend(parse_relations(answer))
    save_extraction(conn, state.id, extractor, entities, relations)


def save_extraction(conn: Connection, chunk_id: str, extractor: str,
                    entities: list[RawEntity], relations: list[RawRelation]) -> None:
    """Store one chunk's parsed extraction atomically."""
    with transaction(conn):  # replaces an earlier result (e.g. from a concurrent run)
        for table in ("extracted_entities", "extracted_relations", "extractions"):
            conn.execute(f"DELETE FROM {table} WHERE chunk_id = ?", (chunk_id,))
        conn.executemany(
            "INSERT INTO extracted_entities(chunk_id, position, name, type, description) "
            "VALUES (?, ?, ?, ?, ?)",
            [(chunk_id, i, e.name, e.type, e.description) for i, e in enumerate(entities)])
        conn.executemany(
            "INSERT INTO extracted_relations(chunk_id, position, source, target, predicate, "
            "description, strength) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(chunk_id, i, r.source, r.target, r.predicate, r.description, r.strength)
             for i, r in enumerate(relations)])
        conn.execute(
            "INSERT INTO extractions(chunk_id, extractor, entities, relations) VALUES (?, ?, ?, ?)",
            (chunk_id, extractor, len(entities), len(relations)))
