"""Extract stage: entities and relationships from every chunk not yet extracted.

LLM mode sends one combined prompt per chunk by default (entities + relationships), or
the seed's two prompts (entities, then triplets among them) with two_step=True, plus
optional gleaning rounds (LLMExtractor). Without a chat model the offline provider's
extractor (tgr.offline.providers.OfflineExtractor) takes its place behind the same interface. Each
chunk's result is committed as soon as it is complete, so an interrupted run loses nothing; an
extractor that computes locally (save_batch > 1: the offline one) has its chunks committed
a batch at a time, as a commit per chunk wrote ~65 index pages each (half of what an offline
Chinese build wrote to disk).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

from ..store.db import Connection, transaction
from ..models.gateway import ChatJob, Gateway
from ..parsing import (RawEntity, RawRelation, extraction_is_valid, parse_entities,
                      parse_relations, says_none)
from ..prompts import Prompts
from ..text import name_key
from .title_subjects import document_subjects, with_subject

Progress = Callable[[str, int, int], None]
Save = Callable[[str, list[RawEntity], list[RawRelation]], None]


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


class Extractor(Protocol):
    """What the extract stage needs: a name (recorded per chunk) and a batch method."""
    name: str

    def extract(self, chunks: list[tuple[str, str]], save: Save, idle=None) -> None:
        """Extract every (chunk id, text), calling save(chunk id, entities, relations) per chunk."""


class LLMExtractor:
    """Extraction by the chat model: one combined prompt per chunk, or the seed's two
    prompts with two_step, plus optional gleaning rounds; answers go through the gateway."""

    def __init__(self, gateway: Gateway, prompts: Prompts, *, two_step: bool = False, gleanings: int = 0):
        self.gateway, self.prompts = gateway, prompts
        self.two_step, self.gleanings = two_step, gleanings
        self.name = gateway.chat_model.name

    def extract(self, chunks: list[tuple[str, str]], save: Save, idle=None) -> None:
        rounds = ["main"] + (["triplets"] if self.two_step else []) + ["glean"] * self.gleanings
        states = {cid: _ChunkState(cid, text) for cid, text in chunks}
        for number, kind in enumerate(rounds):
            last = number == len(rounds) - 1
            if kind == "glean":  # a chunk whose last answer found nothing is complete
                for state in [s for s in states.values() if says_none(s.answers[-1])]:
                    save(state.id, *_parsed(state))
                    del states[state.id]
            jobs = [_job(kind, state, self.prompts, self.two_step) for state in states.values()]
            for job, text in self.gateway.chat_many("extract", jobs, idle):
                state: _ChunkState = job.tag
                state.answers.append(text)
                if last:
                    save(state.id, *_parsed(state))


def extract_chunks(conn: Connection, extractor: Extractor, *, progress: Progress | None = None,
                   idle=None) -> int:
    """Extract every pending chunk with the extractor (tgr.build.role_providers.extractor_for); returns how
    many chunks were extracted.

    idle: optional main-thread work to do while answers are awaited (see Gateway.chat_many).
    """
    chunks = pending_chunks(conn)
    total = len(chunks)
    report = progress or (lambda *a: None)
    report("extract", 0, total)
    done = 0
    subjects = document_subjects(conn, [cid for cid, _ in chunks])
    texts = dict(chunks)

    batch = max(1, getattr(extractor, "save_batch", 1))
    pending: list[tuple[str, list[RawEntity], list[RawRelation]]] = []

    def save(chunk_id: str, entities: list[RawEntity], relations: list[RawRelation]) -> None:
        nonlocal done
        if chunk_id in subjects:  # the document's subject, linked to what its opening names
            entities, relations = with_subject(subjects[chunk_id], texts[chunk_id], entities, relations)
        pending.append((chunk_id, entities, relations))
        if len(pending) >= batch:
            flush()
        done += 1
        report("extract", done, total)

    def flush() -> None:
        if pending:
            save_extractions(conn, extractor.name, pending)
            pending.clear()

    try:
        extractor.extract(chunks, save, idle)
    finally:  # what was computed before a failure or Ctrl-C is kept
        flush()
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


def _parsed(state: _ChunkState) -> tuple[list[RawEntity], list[RawRelation]]:
    entities: list[RawEntity] = []
    relations: list[RawRelation] = []
    for answer in state.answers:
        entities.extend(parse_entities(answer))
        relations.extend(parse_relations(answer))
    return entities, relations


def save_extraction(conn: Connection, chunk_id: str, extractor: str,
                    entities: list[RawEntity], relations: list[RawRelation]) -> None:
    """Store one chunk's parsed extraction atomically."""
    save_extractions(conn, extractor, [(chunk_id, entities, relations)])


def save_extractions(conn: Connection, extractor: str,
                     results: list[tuple[str, list[RawEntity], list[RawRelation]]]) -> None:
    """Store the parsed extractions of (chunk id, entities, relations) in one transaction."""
    with transaction(conn):
        for chunk_id, entities, relations in results:
            _store_extraction(conn, chunk_id, extractor, entities, relations)


def _store_extraction(conn: Connection, chunk_id: str, extractor: str,
                      entities: list[RawEntity], relations: list[RawRelation]) -> None:
    """One chunk's rows (inside the caller's transaction); replaces an earlier result (e.g.
    from a concurrent run)."""
    for table in ("extracted_entities", "extracted_relations", "extractions"):
        conn.execute(f"DELETE FROM {table} WHERE chunk_id = ?", (chunk_id,))
    conn.executemany(  # key: the entity the row merges into (tgr.build.resolve settles it before a merge)
        "INSERT INTO extracted_entities(chunk_id, position, name, type, description, key) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(chunk_id, i, e.name, e.type, e.description, name_key(e.name)) for i, e in enumerate(entities)])
    conn.executemany(
        "INSERT INTO extracted_relations(chunk_id, position, source, target, predicate, "
        "description, strength, source_key, target_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(chunk_id, i, r.source, r.target, r.predicate, r.description, r.strength,
          name_key(r.source), name_key(r.target)) for i, r in enumerate(relations)])
    conn.execute(
        "INSERT INTO extractions(chunk_id, extractor, entities, relations) VALUES (?, ?, ?, ?)",
        (chunk_id, extractor, len(entities), len(relations)))
