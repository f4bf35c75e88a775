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

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Protocol

from ..store.db import Connection, transaction
from ..models.gateway import ChatJob, Gateway
from ..models.output_forms import extraction_schema, output_form, wants_json
from ..offline.entity_types import common_words
from ..offline.providers import OfflineExtractor
from ..store.extractors import FALLBACK
from ..parsing import (RawEntity, RawRelation, extraction_is_valid, grounded, parse_entities,
                      parse_extraction, says_none)
from ..prompts import Prompts
from ..text import estimate_tokens, name_key
from .title_subjects import document_subjects, with_subject

Progress = Callable[[str, int, int], None]
# save(chunk id, entities, relations[, extractor]): the extractor's name unless another is given
Save = Callable[..., None]


@dataclass
class _ChunkState:
    id: str
    text: str
    answers: list[str] = field(default_factory=list)
    cut: str | None = None  # why the model's answer is unusable as it stands (LOOPING, CUT)


def pending_chunks(conn: Connection, limit: int | None = None, after: tuple[str, int] | None = None
                   ) -> list[tuple[str, str]]:
    """(id, text) of chunks with no extraction yet, in document order: up to limit of them
    (all if None), after the chunk at (document id, ordinal) if given."""
    return conn.execute(
        "SELECT c.id, c.text FROM chunks c LEFT JOIN extractions x ON x.chunk_id = c.id "
        "WHERE x.chunk_id IS NULL AND (c.document_id, c.ordinal) > (?, ?) "
        "ORDER BY c.document_id, c.ordinal LIMIT ?",
        (*(after or ("", -1)), -1 if limit is None else limit)).fetchall()


def pending_pages(conn: Connection, size: int | None):
    """pending_chunks a page of size at a time (all in one page if None), read as the pages
    before are done: what a run holds does not grow with the corpus."""
    after = None
    while page := pending_chunks(conn, size, after):
        yield page
        if size is None or len(page) < size:
            return
        after = conn.execute("SELECT document_id, ordinal FROM chunks WHERE id = ?", (page[-1][0],)).fetchone()


def pending_count(conn: Connection) -> int:
    """How many chunks have no extraction yet."""
    return conn.execute("SELECT count(*) FROM chunks c LEFT JOIN extractions x ON x.chunk_id = c.id "
                        "WHERE x.chunk_id IS NULL").fetchone()[0]


class Extractor(Protocol):
    """What the extract stage needs: a name (recorded per chunk) and a batch method."""
    name: str

    def extract(self, chunks: list[tuple[str, str]], save: Save, idle=None) -> None:
        """Extract every (chunk id, text), calling save(chunk id, entities, relations) per chunk."""


# Why a chunk was extracted offline instead of by the model: extractions.extractor holds
# FALLBACK + the reason, and `tgr info` counts them.
LOOPING, CUT, EMPTY, TOO_LONG = ("looping answer", "answer cut at max_tokens", "no usable entities in the answer",
                                 "prompt over the context window")
LLM_PAGE = 2048  # chunks an LLM run reads and asks at a time: their prompts are in memory together
WEAK_AFTER = 4  # chunks answered before tgr says whether the model can do the format


def extraction_budget(chunk_tokens: int) -> tuple[int, int]:
    """(max_tokens, most entities or relations) of one chunk's answer: in proportion to the
    chunk, as a dense passage names about one entity per 40 tokens and each costs ~60 tokens
    of answer (an unbounded answer let a looping model write 4,096 tokens for one chunk)."""
    items = max(8, min(60, chunk_tokens // 40))
    return max(600, min(4096, 300 + int(1.5 * chunk_tokens))), items


EXTRACT_PROMPT_TOKENS = 400  # the extraction prompt around its chunk, with the entity types


def chunk_size_for(context_tokens: int) -> int:
    """The largest chunk whose extraction prompt (estimated tokens, +15 % for tokenizers that
    cut finer) and answer (extraction_budget) fit a context window of this many tokens."""
    room = context_tokens - 1.15 * EXTRACT_PROMPT_TOKENS - 300
    return max(64, int(room / (1.15 + 1.5)))


class LLMExtractor:
    """Extraction by the chat model: one combined prompt per chunk, or the seed's two
    prompts with two_step, plus optional gleaning rounds; answers go through the gateway.

    Where the endpoint holds answers to a JSON schema (chat_model.output_form), the combined
    prompt asks for JSON under a schema bounded by the chunk's size. Names the chunk does not
    write are dropped (tgr.parsing.grounded). A chunk whose answer is unusable (looping, cut,
    nothing the text names, a prompt over the model's context window) is extracted offline
    and recorded as a fallback with its reason; after WEAK_AFTER chunks, warn() says whether
    the model is too weak for the format."""

    def __init__(self, gateway: Gateway, prompts: Prompts, *, two_step: bool = False, gleanings: int = 0,
                 warn: Callable[[str], None] | None = None):
        self.gateway, self.prompts = gateway, prompts
        self.two_step, self.gleanings = two_step, gleanings
        self.name = gateway.chat_model.name
        self.warn = warn or (lambda message: None)
        form = output_form(gateway.chat_model)
        # a domain's own tag prompt is kept as written (a JSON twin of it is not ours to guess)
        self.json = wants_json(form) and not two_step and prompts.extract == Prompts().extract
        self.context_tokens = getattr(gateway.chat_model, "context_tokens", None)
        self.by_model, self.fallbacks = 0, Counter()
        self._told = 0
        self._offline = OfflineExtractor()  # for the chunks the model's answers give nothing for
        # chunks read and asked at a time (one Batch API job holds a whole wave: no pages there)
        self.page_size = None if gateway.batch else LLM_PAGE

    def extract(self, chunks: list[tuple[str, str]], save: Save, idle=None) -> None:
        rounds = ["main"] + (["triplets"] if self.two_step else []) + ["glean"] * self.gleanings
        states = {cid: _ChunkState(cid, text) for cid, text in chunks}
        for state in list(states.values()):  # a prompt the model cannot read whole: offline now
            if not self._fits(self._job("main", state)):
                self._save(state, save, TOO_LONG)
                del states[state.id]
        for number, kind in enumerate(rounds):
            last = number == len(rounds) - 1
            if kind == "glean":  # a chunk whose last answer found nothing is complete
                for state in [s for s in states.values() if says_none(s.answers[-1])]:
                    self._save(state, save)
                    del states[state.id]
            jobs = [self._job(kind, state) for state in states.values()]
            for job, text in self.gateway.chat_many("extract", jobs, idle):
                state: _ChunkState = job.tag
                state.answers.append(text)
                if job.finish_reason in ("loop", "length"):
                    state.cut = LOOPING if job.finish_reason == "loop" else CUT
                if last or state.cut:
                    self._save(state, save)
                    states.pop(state.id, None)

    def _job(self, kind: str, state: _ChunkState) -> ChatJob:
        if kind != "main" or not self.json:
            return _job(kind, state, self.prompts, self.two_step)
        max_tokens, items = extraction_budget(estimate_tokens(state.text))
        types = [t.strip() for t in self.prompts.entity_types.split(",") if t.strip()]
        prompt = self.prompts.extract_json.format(entity_types=", ".join(types), text=state.text)
        schema = {"name": "knowledge_graph", "schema": extraction_schema(types, items)}
        return ChatJob(state, prompt, {"max_tokens": self._room(prompt, max_tokens), "schema": schema},
                       validate=extraction_is_valid)

    def _room(self, prompt: str, max_tokens: int) -> int:
        """max_tokens, less what the context window cannot hold after the prompt."""
        if not self.context_tokens:
            return max_tokens
        return max(64, min(max_tokens, self.context_tokens - int(estimate_tokens(prompt) * 1.15) - 16))

    def _fits(self, job: ChatJob) -> bool:
        """Whether the prompt and a useful answer fit the model's context window (when known);
        tokens are estimated, with a margin for tokenizers that cut text finer."""
        return not self.context_tokens or estimate_tokens(job.prompt) * 1.15 + 256 <= self.context_tokens

    def _save(self, state: _ChunkState, save: Save, reason: str | None = None) -> None:
        entities, relations = grounded(*_parsed(state), state.text, common_words())
        # a cut answer keeps what it gave before the cut; with nothing usable, the cut is the reason
        reason = reason or (None if entities else state.cut or EMPTY)
        if reason is None:
            self.by_model += 1
            save(state.id, entities, relations)
        else:  # the text's names, found without the model
            self.fallbacks[reason] += 1
            self._offline.extract([(state.id, state.text)],
                                  lambda cid, e, r: save(cid, e, r, FALLBACK + reason))
        self._tell()

    def _tell(self) -> None:
        """Say, once a few chunks are in, how many the model could not do; and the gateway's notes."""
        for message in self.gateway.notices[self._told:]:
            self.warn(message)
        self._told = len(self.gateway.notices)
        done = self.by_model + sum(self.fallbacks.values())
        if done == WEAK_AFTER and sum(self.fallbacks.values()) * 2 >= done:
            self.warn(f"{self.name} gave no usable entities for {sum(self.fallbacks.values())} of the first "
                      f"{done} chunks ({_reasons(self.fallbacks)}); those chunks are extracted offline. The model "
                      "may be too weak for the format: a larger one, or --chat-model offline, builds a better graph")


def _reasons(counts: Counter) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in counts.most_common())


def extract_chunks(conn: Connection, extractor: Extractor, *, progress: Progress | None = None,
                   idle=None) -> int:
    """Extract every pending chunk with the extractor (tgr.build.role_providers.extractor_for); returns how
    many chunks were extracted.

    idle: optional main-thread work to do while answers are awaited (see Gateway.chat_many).
    """
    total = pending_count(conn)
    report = progress or (lambda *a: None)
    report("extract", 0, total)
    done = 0
    subjects: dict = {}
    texts: dict[str, str] = {}

    batch = max(1, getattr(extractor, "save_batch", 1))
    pending: list[tuple[str, list[RawEntity], list[RawRelation], str]] = []

    def save(chunk_id: str, entities: list[RawEntity], relations: list[RawRelation],
             by: str | None = None) -> None:
        nonlocal done
        if chunk_id in subjects:  # the document's subject, linked to what its opening names
            entities, relations = with_subject(subjects[chunk_id], texts[chunk_id], entities, relations)
        pending.append((chunk_id, entities, relations, by or extractor.name))
        if len(pending) >= batch:
            flush()
        done += 1
        report("extract", done, total)

    def flush() -> None:
        if pending:
            save_extractions(conn, extractor.name, pending)
            pending.clear()

    try:
        for chunks in pending_pages(conn, getattr(extractor, "page_size", None)):
            subjects = document_subjects(conn, [cid for cid, _ in chunks])
            texts = dict(chunks)
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
        found, linked = parse_extraction(answer)
        entities.extend(found)
        relations.extend(linked)
    return entities, relations


def save_extraction(conn: Connection, chunk_id: str, extractor: str,
                    entities: list[RawEntity], relations: list[RawRelation]) -> None:
    """Store one chunk's parsed extraction atomically."""
    save_extractions(conn, extractor, [(chunk_id, entities, relations)])


def save_extractions(conn: Connection, extractor: str, results: list[tuple]) -> None:
    """Store the parsed extractions of (chunk id, entities, relations[, extractor]) in one
    transaction; a row's own extractor name, if it has one, is recorded instead of `extractor`."""
    with transaction(conn):
        for chunk_id, entities, relations, *by in results:
            _store_extraction(conn, chunk_id, by[0] if by else extractor, entities, relations)


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
