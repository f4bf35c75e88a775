"""Query: local (entity-centred), global (map-reduce over community reports), naive.

Every mode sits on tgr.query.retrieve: the context is cut from a ranking, never from an unordered
set. Every mode returns an Answer: the answer text, the context tables the model saw, the
ranked sources (passages with text, score and document), model calls, tokens and timings.
The answer comes from the answerer chosen once (tgr.query.answerers): the chat model's, or without
one the extractive one (best-matching source sentences / report findings, with citations);
with context_only no answer is generated at all.

ask_stream gives the answer's text in pieces as the model writes it (the reduce step's, in
global mode), then the complete Answer; ask() is the same without the pieces. A question may
follow a conversation (tgr.query.conversation): retrieval resolves it against the last turn, and
the chat model reads the latest turns that fit QuerySettings.history_tokens.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Generator, Iterator, Sequence

from .answer_record import Answer
from .answerers import OfflineAnswerer, answerer_for
from .global_search import global_answer, over_reports
from .grounding import ground
from ..errors import tell
from ..store.db import Connection
from ..models.gateway import Gateway
from ..models.clients import vector_type
from ..offline.global_answer import themes as offline_themes
from ..store.size_limits import MAX_CONTEXT_TEXT
from ..prompts import Prompts
from .retrieve import (MODES, Passage, Retriever, is_hashed_embedder, is_lexical_embedder, question_spans,
                       ranks_reports)
from ..text import ContextTable, shorten

LOCAL_PASSAGES = 40   # passages ranked for a local context (the budget keeps the best)
RELATIONSHIP_PAGE = 64  # relationships read at a time for a local context (a table holds a few dozen)
RESPONSE_TYPE = "a few concise paragraphs"


CONTEXT_ONLY = "none (context only)"  # an Answer's model when no model wrote it (context_only)


@dataclass
class QuerySettings:
    top_k: int = 10                 # entities (local) or chunks (naive) retrieved
    context_tokens: int = 6000      # budget of the local / naive context
    level: int = 0                  # community level for global search
    global_top: int = 32            # reports kept after the similarity pre-filter
    map_tokens: int = 3000          # budget of one map call's reports
    reduce_tokens: int = 3000       # budget of the key points given to reduce
    history_tokens: int = 2000      # budget of the earlier turns a chat model reads
    response_type: str = RESPONSE_TYPE


class Searcher:
    """Runs the three query modes against one open store; its answerer (tgr.query.answerers) is
    the chat model's or, without one, the extractive one, chosen once here."""

    def __init__(self, conn: Connection, gateway: Gateway, prompts: Prompts,
                 settings: QuerySettings | None = None, vector_tables: dict[str, str] | None = None):
        self.conn = conn
        self.gateway = gateway
        self.prompts = prompts
        self.settings = settings or QuerySettings()
        self.dense = not is_lexical_embedder(gateway.embedder.name)
        self.retriever = retriever_for(conn, gateway.embedder, self._embed, vector_tables)
        self.answerer = answerer_for(gateway, prompts, self.settings.response_type)
        self.history: list[dict] = []  # the conversation a question follows (see follow)
        self.turns: list[dict] = []    # ... its latest turns, which the chat model reads
        self.stream = False            # whether the answer's text is given as it is written
        self.warn = None               # told each note an answer gets as it is written (see note)

    def ask(self, question: str, mode: str = "local", context_only: bool = False,
            history: Sequence[dict] = ()) -> Answer:
        return final_answer(self.ask_stream(question, mode, context_only, history, stream=False))

    def ask_stream(self, question: str, mode: str = "local", context_only: bool = False,
                   history: Sequence[dict] = (), stream: bool = True) -> Iterator[str | Answer]:
        """The answer's text pieces as they are written (with stream), then the Answer."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self.follow(history, stream)
        return self._measured(getattr(self, f"_{mode}")(question, context_only))

    def answer_passages(self, question: str, passages: list[Passage], mode: str, context_only: bool = False,
                        history: Sequence[dict] = (), stream: bool = False) -> Iterator[str | Answer]:
        """An answer written from given ranked passages (e.g. several stores' fused ranking):
        the best that fit the context budget are the sources, as in naive mode. Its text
        pieces (with stream), then the Answer."""
        self.follow(history, stream)
        return self._measured(self._from_passages(question, mode, passages, context_only, time.perf_counter()))

    def follow(self, history: Sequence[dict], stream: bool = False) -> None:
        """Answer the next question after this conversation (role/content turns), streamed or not."""
        self.history, self.stream, self.turns = list(history), stream, []
        if self.history:  # (a question on its own never loads tgr.query.conversation)
            from .conversation import recent_turns

            self.turns = recent_turns(self.history, self.settings.history_tokens)

    def searched(self, question: str) -> str:
        """What retrieval looks for: the question, resolved against the conversation."""
        if not self.history:
            return question
        from .conversation import search_text

        return search_text(question, self.history, self.names_in, self.kind_of)

    def resolved(self, question: str) -> str:
        """The question an answer is written for: a follow-up's pronouns read (conversation.resolved)."""
        if not self.history:
            return question
        from .conversation import resolved

        return resolved(question, self.history, self.names_in, self.kind_of)

    def kind_of(self, name: str) -> str:
        """The type of the store's entity of that name ("" when there is none)."""
        row = self.conn.execute("SELECT lower(type) FROM entities WHERE name = ? ORDER BY degree DESC",
                                (name,)).fetchone()
        return str(row[0] or "") if row else ""

    def names_in(self, text: str) -> list[str]:
        """The store's entities a text names (capitalised or CJK spans), most specific first."""
        named = self.retriever.named_entities([s for s in question_spans(text) if s[1]])
        names = dict(self.conn.execute("SELECT id, name FROM entities WHERE id IN (SELECT value FROM json_each(?))",
                                       (json.dumps(sorted(named), ensure_ascii=False),)).fetchall())
        return [names[e] for e in sorted(named, key=lambda e: (-named[e], e)) if e in names]

    def _measured(self, steps: Generator[str, None, Answer]) -> Iterator[str | Answer]:
        """The steps' text pieces, then their Answer with the model calls, tokens and time it took."""
        started = time.perf_counter()
        before = self.gateway.total_usage()
        before = (before.calls, before.prompt_tokens, before.completion_tokens)
        written = False
        for piece in _pieces_of(steps):
            if isinstance(piece, Answer):
                answer = piece
            else:
                written = True
                yield piece
        if self.stream and not written and answer.answer:  # written whole, with no model
            yield answer.answer
        after = self.gateway.total_usage()
        answer.model_calls = after.calls - before[0]
        answer.prompt_tokens = after.prompt_tokens - before[1]
        answer.completion_tokens = after.completion_tokens - before[2]
        answer.timings["total_s"] = round(time.perf_counter() - started, 4)
        yield answer

    def _written(self, kind: str, *args, **kwargs) -> Generator[str, None, str]:
        """The answerer's kind ('answer' or 'reduce') of text after the conversation; with
        stream, its pieces are yielded as they are written. Returns the whole text."""
        if not self.stream:
            return getattr(self.answerer, kind)(*args, history=self.turns, **kwargs)
        pieces: list[str] = []
        for piece in getattr(self.answerer, f"{kind}_stream")(*args, history=self.turns, **kwargs):
            if not pieces:
                piece = piece.lstrip()
            if piece:
                pieces.append(piece)
                yield piece
        return "".join(pieces).strip()

    def note(self, answer: Answer, message: str) -> None:
        """Keep a note in the answer (what it could not do as asked, e.g. a model's unusable
        answers) and say it now through warn (with none, as a tgr.TgrWarning)."""
        answer.notes.append(message)
        tell(self.warn, message)

    def _grounded(self, result: Answer, question: str, passages: list[tuple[str, str]],
                  **kwargs) -> Generator[str, None, str]:
        """A local or naive answer held to its sources (tgr.query.grounding): a chat model's
        answer that cites nothing gets citations where its sentences match the passages, and
        one that mostly matches none (or an empty one) is replaced by the extractive answer; each
        said in a note.
        With stream, the model's text is given as it is written (its first words come early):
        the citations tgr found for it follow it, all at its end, and an extractive answer that
        replaces it follows it after an empty line."""
        text = yield from self._written("answer", question, passages, **kwargs)
        if isinstance(self.answerer, OfflineAnswerer):
            return text
        grounded, name, written = ground(text, passages), self.answerer.name, bool(text.strip())
        if grounded.invented or not written:
            if self.stream and written:  # the note's line (a warning) after the model's text, then the answer
                yield "\n"
            why = (f"'s answer cites no source and {grounded.judged - grounded.matched} of its {grounded.judged} "
                   f"sentences match none of the {len(passages)} passages it was given" if written
                   else " gave an empty answer")
            self.note(result, f"{name}{why}: answered with the passages' own sentences instead, as tgr answers offline")
            text = OfflineAnswerer().answer(question, passages, **kwargs)
            if self.stream:
                yield ("\n" if written else "") + text
        elif grounded.matched:
            if self.stream:  # written already: the passages its sentences come from follow it
                yield f" [Sources: {', '.join(grounded.cited)}]"
            sentences = "its sentence" if grounded.matched == 1 else f"each of its {grounded.matched} sentences"
            self.note(result, f"{name}'s answer cites no source: tgr cited the passage {sentences} found "
                              f"in the sources comes from")
            text = grounded.text
        return text

    # -- shared pieces --------------------------------------------------------------------

    def _embed(self, text: str) -> list[float]:
        return self.gateway.embed("query", [text])[0]

    def _model_name(self, context_only: bool) -> str:
        return CONTEXT_ONLY if context_only else self.answerer.name

    @staticmethod
    def _sources(passages: list[Passage]) -> list[dict]:
        """The ranked passages as numbered source records (ref n = row n of Sources)."""
        return [{"ref": ref, **p.to_dict()} for ref, p in enumerate(passages, 1)]

    def _fill_sources(self, passages: list[Passage], budget: int) -> tuple[ContextTable, list[Passage]]:
        """The best passages that fit the budget, in rank order (at least one, trimmed)."""
        table = ContextTable("Sources", "id|text", budget)
        used: list[Passage] = []
        for passage in passages:
            text = " ".join(passage.text.split())
            if not table.add(f"{len(used) + 1}|{text}"):
                if not used:  # always give at least one (trimmed) source
                    table.add(f"1|{shorten(text, max(200, budget * 3))}")
                    used.append(passage)
                break
            used.append(passage)
        return table, used

    # -- local ----------------------------------------------------------------------------

    def _local(self, question: str, context_only: bool) -> Answer:
        s = self.settings
        t0 = time.perf_counter()
        searched = self.searched(question)
        retrieval = self.retriever.retrieve(searched, "local", max(LOCAL_PASSAGES, s.top_k))
        scores = retrieval.entity_scores
        ids = sorted(scores, key=lambda e: (-scores[e], e))[:s.top_k]
        entities = {r[0]: r for r in self.conn.execute(
            f"SELECT id, name, type, substr(description, 1, {MAX_CONTEXT_TEXT}), degree FROM entities "
            "WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids, ensure_ascii=False),))}
        ids = [i for i in ids if i in entities]
        tables, used_reports = self._local_tables(ids, entities, scores)
        budget = s.context_tokens - sum(t.used for t in tables)
        src, passages = self._fill_sources(retrieval.passages, budget)
        context = "\n\n".join(t for t in [t.text() for t in tables] + [src.text()] if t)
        result = Answer(question, "local", "", context, self._model_name(context_only),
                        sources=self._sources(passages), entities=ids, reports=used_reports,
                        timings={"retrieve_s": round(time.perf_counter() - t0, 4)})
        if context_only:
            return result
        t1 = time.perf_counter()
        if not passages:
            result.answer = "I don't know: nothing in this store matches the question."
        else:
            result.answer = yield from self._grounded(result, self.resolved(question), _cited(passages),
                                                      context=context, names=[entities[i][1] for i in ids[:5]],
                                                      linked=True, searched=searched)
        result.timings["generate_s"] = round(time.perf_counter() - t1, 4)
        return result

    def _local_tables(self, ids: list[str], entities: dict[str, tuple],
                      scores: dict[str, float]) -> tuple[list[ContextTable], list[str]]:
        """The Entities, Relationships and Reports tables of a local context (each within its
        share of the budget), and the reports used: relationships and reports follow the
        scores of the entities they touch."""
        budget = self.settings.context_tokens
        chosen = json.dumps(ids, ensure_ascii=False)
        # the relationships in their order first (ids and weights), their names and texts only
        # for as many as the table takes: the chosen entities of a big store touch thousands
        ranked = sorted(self.conn.execute(
            "SELECT r.id, r.weight, r.source_id, r.target_id FROM relationships r "
            "WHERE r.source_id IN (SELECT value FROM json_each(?1)) "
            "OR r.target_id IN (SELECT value FROM json_each(?1))", (chosen,)).fetchall(),
            key=lambda r: (-(scores.get(r[2], 0.0) + scores.get(r[3], 0.0)), -r[1], r[0]))
        communities: dict[str, float] = {}
        for cid, eid in self.conn.execute(
                "SELECT community_id, entity_id FROM community_members "
                "WHERE entity_id IN (SELECT value FROM json_each(?))", (chosen,)):
            communities[cid] = communities.get(cid, 0.0) + scores.get(eid, 0.0)
        reports = {r[0]: r for r in self.conn.execute(
            f"SELECT community_id, title, substr(full_text, 1, {MAX_CONTEXT_TEXT}) FROM reports "
            "WHERE community_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(communities)),))}
        ent = ContextTable("Entities", "id|entity|type|description|degree", int(budget * 0.15))
        for n, eid in enumerate(ids, 1):
            _, name, etype, desc, degree = entities[eid]
            ent.add(f"{n}|{name}|{etype}|{shorten(desc, 500)}|{degree}")
        rel = ContextTable("Relationships", "id|source|target|description|weight", int(budget * 0.25))
        for n, (src, dst, pred, desc, weight) in enumerate(relationship_rows(self.conn, [r[0] for r in ranked]), 1):
            if not rel.add(f"{n}|{src}|{dst}|{pred}: {shorten(desc, 300)}|{weight:g}"):
                break
        rep = ContextTable("Reports", "id|title|content", int(budget * 0.2))
        used_reports = []
        for cid in sorted(reports, key=lambda c: (-communities[c], c)):
            _, title, full = reports[cid]
            if rep.add(f"{cid}|{title}|{shorten(full, 1200)}"):
                used_reports.append(cid)
        return [ent, rel, rep], used_reports

    # -- naive ----------------------------------------------------------------------------

    def _naive(self, question: str, context_only: bool) -> Answer:
        t0 = time.perf_counter()
        ranked = self.retriever.retrieve(self.searched(question), "naive", self.settings.top_k).passages
        return self._from_passages(question, "naive", ranked, context_only, t0)

    def _from_passages(self, question: str, mode: str, ranked: list[Passage], context_only: bool,
                       t0: float) -> Answer:
        src, passages = self._fill_sources(ranked, self.settings.context_tokens)
        result = Answer(question, mode, "", src.text(), self._model_name(context_only),
                        sources=self._sources(passages), timings={"retrieve_s": round(time.perf_counter() - t0, 4)})
        if context_only:
            return result
        t1 = time.perf_counter()
        if not passages:
            result.answer = "I don't know: no passage in this store matches the question."
        else:
            result.answer = yield from self._grounded(result, self.resolved(question), _cited(passages),
                                                      context=result.context)
        result.timings["generate_s"] = round(time.perf_counter() - t1, 4)
        return result

    # -- global ---------------------------------------------------------------------------

    def candidate_reports(self, question: str, level: int) -> list[tuple[str, str, str, float]]:
        """(community id, title, full text, rating) of the reports global search reads, best first."""
        return self.retriever.reports(question, level, self.settings.global_top)

    def _global(self, question: str, context_only: bool) -> Answer:
        return (yield from global_answer(self, question, context_only))

    def over_reports(self, question: str, reports: list[tuple[str, str, str, float]], names: dict[str, str],
                     history: Sequence[dict] = (), stream: bool = False) -> Iterator[str | Answer]:
        """A chat model's global answer over given labelled reports, best first (several stores'
        reports ranked together, tgr.multi_store; see tgr.query.global_search.over_reports)."""
        self.follow(history, stream)
        return self._measured(over_reports(self, question, reports, names))

    def themes(self, question: str, history: Sequence[dict] = (), always: bool = False) -> tuple[list, bool] | None:
        """The themes an offline global answer lists (tgr.offline.global_answer.Theme, each with its
        cited passages) and whether they match the question (resolved against the conversation,
        if any); None where a chat model writes global answers instead, unless always."""
        if not (always or isinstance(self.answerer, OfflineAnswerer)):
            return None
        self.follow(history)
        searched = self.searched(question)
        reports = self.candidate_reports(searched, self.settings.level)
        chosen, matched = offline_themes(self.conn, self.retriever, searched, [r[0] for r in reports])
        for theme in chosen:
            theme.passages = self.retriever.passages([(cid, 1.0) for cid in theme.chunks])
        return chosen, matched


def retriever_for(conn: Connection, embedder, embed_query, vector_tables: dict[str, str] | None) -> Retriever:
    """The retriever of a store whose vectors the embedder made (embed_query embeds a question)."""
    return Retriever(conn, embed_query, dense=not is_lexical_embedder(embedder.name),
                     vector_type=vector_type(embedder), tables=vector_tables,
                     report_vectors=ranks_reports(embedder.name), hashed=is_hashed_embedder(embedder.name),
                     hashed_dim=getattr(embedder, "dim", None))


def _pieces_of(steps: Generator[str, None, Answer]) -> Iterator[str | Answer]:
    """The steps' pieces, then the Answer they return."""
    answer = yield from steps
    yield answer


def final_answer(items: Iterator[str | Answer]) -> Answer:
    """The Answer at the end of an ask_stream (its text pieces are passed over)."""
    for item in items:
        pass
    return item


def _cited(passages: list[Passage]) -> list[tuple[str, str]]:
    """(citation, text) of ranked passages: passage n is source n."""
    return [(str(n), p.text) for n, p in enumerate(passages, 1)]


def relationship_rows(conn, ids: list[str]):
    """(source name, target name, predicate, description, weight) of these relationships, in
    this order, read a page at a time as they are used; one whose source or target entity is
    missing (a store made elsewhere) is left out."""
    for start in range(0, len(ids), RELATIONSHIP_PAGE):
        page = ids[start:start + RELATIONSHIP_PAGE]
        rows = {r[0]: r[1:] for r in conn.execute(
            f"SELECT r.id, s.name, t.name, r.predicate, substr(r.description, 1, {MAX_CONTEXT_TEXT}), r.weight "
            "FROM relationships r JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
            "WHERE r.id IN (SELECT value FROM json_each(?))", (json.dumps(page, ensure_ascii=False),))}
        yield from (rows[rid] for rid in page if rid in rows)
