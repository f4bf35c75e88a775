"""Query: local (entity-centred), global (map-reduce over community reports), naive.

Every mode sits on tgr.query.retrieve: the context is cut from a ranking, never from an unordered
set. Every mode returns an Answer: the answer text, the context tables the model saw, the
ranked sources (passages with text, score and document), model calls, tokens and timings.
The answer comes from the answerer chosen once (tgr.query.answerers): the chat model's, or without
one the extractive one (best-matching source sentences / report findings, with citations);
with context_only no answer is generated at all.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field

from .answerers import ReportText, answerer_for
from ..store.db import Connection
from ..models.gateway import Gateway
from ..models.clients import vector_type
from ..store.size_limits import MAX_CONTEXT_TEXT
from ..prompts import Prompts
from .retrieve import MODES, Passage, Retriever, is_lexical_embedder, ranks_reports
from ..text import ContextTable, estimate_tokens, shorten

LOCAL_PASSAGES = 40   # passages ranked for a local context (the budget keeps the best)
RESPONSE_TYPE = "a few concise paragraphs"


@dataclass
class QuerySettings:
    top_k: int = 10                 # entities (local) or chunks (naive) retrieved
    context_tokens: int = 6000      # budget of the local / naive context
    level: int = 0                  # community level for global search
    global_top: int = 32            # reports kept after the similarity pre-filter
    map_tokens: int = 3000          # budget of one map call's reports
    reduce_tokens: int = 3000       # budget of the key points given to reduce
    response_type: str = RESPONSE_TYPE


@dataclass
class Answer:
    question: str
    mode: str
    answer: str
    context: str
    model: str
    sources: list[dict] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what was left out (models out of reach)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)


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
        self.retriever = Retriever(conn, self._embed, dense=self.dense,
                                   vector_type=vector_type(gateway.embedder), tables=vector_tables,
                                   report_vectors=ranks_reports(gateway.embedder.name))
        self.answerer = answerer_for(gateway, prompts, self.settings.response_type)

    def ask(self, question: str, mode: str = "local", context_only: bool = False) -> Answer:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        return self._measured(lambda: getattr(self, f"_{mode}")(question, context_only))

    def answer_passages(self, question: str, passages: list[Passage], mode: str,
                        context_only: bool = False) -> Answer:
        """An answer written from given ranked passages (e.g. several stores' fused ranking):
        the best that fit the context budget are the sources, as in naive mode."""
        return self._measured(lambda: self._from_passages(question, mode, passages, context_only,
                                                          time.perf_counter()))

    def _measured(self, answer_question) -> Answer:
        """answer_question()'s Answer, with the model calls, tokens and time it took."""
        started = time.perf_counter()
        before = self.gateway.total_usage()
        before = (before.calls, before.prompt_tokens, before.completion_tokens)
        answer = answer_question()
        after = self.gateway.total_usage()
        answer.model_calls = after.calls - before[0]
        answer.prompt_tokens = after.prompt_tokens - before[1]
        answer.completion_tokens = after.completion_tokens - before[2]
        answer.timings["total_s"] = round(time.perf_counter() - started, 4)
        return answer

    # -- shared pieces --------------------------------------------------------------------

    def _embed(self, text: str) -> list[float]:
        return self.gateway.embed("query", [text])[0]

    def _model_name(self, context_only: bool) -> str:
        return "none (context only)" if context_only else self.answerer.name

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
        retrieval = self.retriever.retrieve(question, "local", max(LOCAL_PASSAGES, s.top_k))
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
            result.answer = self.answerer.answer(question, _cited(passages), context=context,
                                                 names=[entities[i][1] for i in ids[:5]], linked=True)
        result.timings["generate_s"] = round(time.perf_counter() - t1, 4)
        return result

    def _local_tables(self, ids: list[str], entities: dict[str, tuple],
                      scores: dict[str, float]) -> tuple[list[ContextTable], list[str]]:
        """The Entities, Relationships and Reports tables of a local context (each within its
        share of the budget), and the reports used: relationships and reports follow the
        scores of the entities they touch."""
        budget = self.settings.context_tokens
        chosen = json.dumps(ids, ensure_ascii=False)
        relationships = sorted(self.conn.execute(
            f"SELECT r.id, s.name, t.name, r.predicate, substr(r.description, 1, {MAX_CONTEXT_TEXT}), r.weight, "
            "r.source_id, r.target_id "
            "FROM relationships r JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
            "WHERE r.source_id IN (SELECT value FROM json_each(?1)) "
            "OR r.target_id IN (SELECT value FROM json_each(?1))", (chosen,)).fetchall(),
            key=lambda r: (-(scores.get(r[6], 0.0) + scores.get(r[7], 0.0)), -r[5], r[0]))
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
        for n, (_, src, dst, pred, desc, weight, _, _) in enumerate(relationships, 1):
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
        ranked = self.retriever.retrieve(question, "naive", self.settings.top_k).passages
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
            result.answer = self.answerer.answer(question, _cited(passages), context=result.context)
        result.timings["generate_s"] = round(time.perf_counter() - t1, 4)
        return result

    # -- global ---------------------------------------------------------------------------

    def candidate_reports(self, question: str, level: int) -> list[tuple[str, str, str, float]]:
        """(community id, title, full text, rating) of the reports global search reads, best first."""
        return self.retriever.reports(question, level, self.settings.global_top)

    def _global(self, question: str, context_only: bool) -> Answer:
        s = self.settings
        t0 = time.perf_counter()
        reports = self.candidate_reports(question, s.level)
        batches = self._batches(reports)
        context = "\n\n".join(report.block for batch in batches for report in batch)
        result = Answer(question, "global", "", context, self._model_name(context_only),
                        reports=[r[0] for r in reports],
                        timings={"retrieve_s": round(time.perf_counter() - t0, 4)})
        if context_only:
            result.sources = self._sources(self._report_sources([r[0] for r in reports[:5]], question))
            return result
        t1 = time.perf_counter()
        offline = self.answerer.whole_global(self.conn, self.retriever, question, [r[0] for r in reports])
        if offline is not None:  # the extractive answerer: the main communities, named and cited
            result.answer, result.sources = offline.text, self._sources(self.retriever.passages(offline.chunks))
            result.context += "\n\n-----Key points-----\n" + "\n".join(offline.points)
            result.timings["reduce_s"] = round(time.perf_counter() - t1, 4)
            return result
        points = self.answerer.key_points(question, batches)
        result.timings["map_s"] = round(time.perf_counter() - t1, 4)
        kept = _best_points(points, s.reduce_tokens)
        t2 = time.perf_counter()
        if kept:
            result.answer = self.answerer.reduce(question, kept)
        else:
            kept, result.answer = self.answerer.no_key_points(question, reports, s.level)
        cited = _cited_reports(" ".join(text for _, text in kept) + " " + result.answer)
        result.sources = self._sources(self._report_sources([r[0] for r in reports if r[0] in cited], question))
        result.context += "\n\n-----Key points-----\n" + "\n".join(f"{sc}|{tx}" for sc, tx in kept)
        result.timings["reduce_s"] = round(time.perf_counter() - t2, 4)
        return result

    def _batches(self, reports: list[tuple[str, str, str, float]]) -> list[list[ReportText]]:
        """The reports in map batches of at most map_tokens each (a larger report alone)."""
        batches: list[list[ReportText]] = [[]]
        used = 0
        for cid, _, full, _ in reports:
            report = ReportText(cid, f"----- Report {cid} -----\n{full}")
            cost = estimate_tokens(report.block)
            if batches[-1] and used + cost > self.settings.map_tokens:
                batches.append([])
                used = 0
            batches[-1].append(report)
            used += cost
        return [b for b in batches if b]

    def _report_sources(self, community_ids: list[str], question: str) -> list[Passage]:
        return self.retriever.passages(self.retriever.report_chunks(community_ids, question))


def _best_points(points: list[tuple[int, str]], budget: int) -> list[tuple[int, str]]:
    """The scored points, best first, that fit the reduce budget."""
    points = sorted((p for p in points if p[0] > 0), key=lambda p: (-p[0], p[1]))
    kept, used = [], 0
    for score, text in points:
        cost = estimate_tokens(text) + 4
        if used + cost > budget:
            break
        kept.append((score, text))
        used += cost
    return kept


def _cited_reports(text: str) -> set[str]:
    cited = set()
    for group in re.findall(r"Reports?\s*[:(]\s*([^\]\)]+)", text):
        cited.update(part.strip() for part in group.split(","))
    return cited


def _cited(passages: list[Passage]) -> list[tuple[str, str]]:
    """(citation, text) of ranked passages: passage n is source n."""
    return [(str(n), p.text) for n, p in enumerate(passages, 1)]
