"""Query: local (entity-centred), global (map-reduce over community reports), naive.

Every mode returns an Answer: the answer text, the context tables the model saw, the
sources (chunk -> document) behind them, model calls, tokens and timings. Without a chat
model the answer is extractive (best-matching source sentences / report findings, with
citations); with context_only no answer is generated at all.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field

from .db import Connection, has_table, serialize, vec_param
from .gateway import ChatJob, Gateway
from .models import vector_type
from .offline import best_sentences, score_overlap
from .parsing import parse_points
from .prompts import Prompts
from .text import (ContextTable, estimate_tokens, has_cjk, index_terms, normalise_name, search_terms,
                   shorten, split_sentences)

MODES = ("local", "global", "naive")
MAX_KNN = 4096  # the most neighbours one sqlite-vec KNN query returns
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

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)


class Searcher:
    """Runs the three query modes against one open store."""

    def __init__(self, conn: Connection, gateway: Gateway, prompts: Prompts,
                 settings: QuerySettings | None = None):
        self.conn = conn
        self.gateway = gateway
        self.prompts = prompts
        self.settings = settings or QuerySettings()

    def ask(self, question: str, mode: str = "local", context_only: bool = False) -> Answer:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        started = time.perf_counter()
        before = self.gateway.total_usage()
        before = (before.calls, before.prompt_tokens, before.completion_tokens)
        answer = getattr(self, f"_{mode}")(question, context_only)
        after = self.gateway.total_usage()
        answer.model_calls = after.calls - before[0]
        answer.prompt_tokens = after.prompt_tokens - before[1]
        answer.completion_tokens = after.completion_tokens - before[2]
        answer.timings["total_s"] = round(time.perf_counter() - started, 4)
        return answer

    # -- shared pieces --------------------------------------------------------------------

    def _vector(self, question: str) -> bytes:
        return serialize(self.gateway.embed("query", [question])[0], self._vtype)

    @property
    def _vtype(self) -> str:
        return vector_type(self.gateway.embedder)

    def _model_name(self, context_only: bool) -> str:
        if context_only:
            return "none (context only)"
        return self.gateway.chat_model.name if self.gateway.chat_model else "offline-extractive"

    def _generate(self, question: str, context: str) -> str:
        prompt = self.prompts.answer.format(question=question, context=context,
                                            response_type=self.settings.response_type)
        return self.gateway.chat("query", prompt).strip()

    def _sources(self, chunk_ids: list[str]) -> list[dict]:
        sources = []
        for ref, chunk_id in enumerate(chunk_ids, 1):
            row = self.conn.execute(
                "SELECT c.document_id, d.source, d.title, c.ordinal, c.char_start, c.char_end "
                "FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ?", (chunk_id,)).fetchone()
            sources.append({"ref": ref, "chunk_id": chunk_id, "document_id": row[0], "source": row[1],
                            "title": row[2], "ordinal": row[3], "char_start": row[4], "char_end": row[5]})
        return sources

    def _chunk_text(self, chunk_id: str) -> str:
        return self.conn.execute("SELECT text FROM chunks WHERE id = ?", (chunk_id,)).fetchone()[0]

    # -- local ----------------------------------------------------------------------------

    def find_entities(self, question: str, k: int) -> list[str]:
        """Entities named in the question first, then nearest by embedding (vec0 KNN)."""
        named = self._named_entities(question)
        found = list(named)
        if has_table(self.conn, "vec_entities"):
            rows = self.conn.execute(
                f"SELECT id FROM vec_entities WHERE embedding MATCH {vec_param(self._vtype)} AND k = ? ORDER BY distance",
                (self._vector(question), min(k, MAX_KNN))).fetchall()
            found += [r[0] for r in rows if r[0] not in named]
        return found[:max(k, len(named))]

    def _named_entities(self, question: str) -> list[str]:
        """Entities whose (normalised) name is a 1-3 word n-gram of the question."""
        question = question.replace("’", "'")
        if has_cjk(question):
            words = search_terms(question)
        else:  # "Scrooge's clerk" names both "scrooge's clerk" and "scrooge"
            words = re.findall(r"[\w'-]+", question.lower())
            words += [re.sub(r"'s?$", "", w) for w in words if "'" in w]
        grams = {" ".join(words[i:i + n]) for n in (3, 2, 1) for i in range(len(words) - n + 1)}
        if has_cjk(question):  # Chinese names may span jieba words
            grams |= {question[i:i + n] for n in (2, 3, 4) for i in range(len(question) - n + 1)}
        keys = sorted({normalise_name(g) for g in grams if g and (len(g) > 2 or has_cjk(g))})
        if not keys:
            return []
        rows = self.conn.execute(  # json_each: no limit on how many names a long question has
            "SELECT id FROM entities WHERE id IN (SELECT value FROM json_each(?)) "
            "ORDER BY length(name) DESC, degree DESC, id", (json.dumps(keys, ensure_ascii=False),)).fetchall()
        return [r[0] for r in rows]

    def _local(self, question: str, context_only: bool) -> Answer:
        s = self.settings
        t0 = time.perf_counter()
        ids = self.find_entities(question, s.top_k)
        marks = ",".join("?" * len(ids)) or "''"
        entities = {r[0]: r for r in self.conn.execute(
            f"SELECT id, name, type, description, degree FROM entities WHERE id IN ({marks})", ids)}
        ids = [i for i in ids if i in entities]
        marks = ",".join("?" * len(ids)) or "''"
        relationships = self.conn.execute(
            f"SELECT r.id, s.name, t.name, r.predicate, r.description, r.weight, "
            f"(r.source_id IN ({marks})) + (r.target_id IN ({marks})) AS hits "
            f"FROM relationships r JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
            f"WHERE r.source_id IN ({marks}) OR r.target_id IN ({marks}) "
            f"ORDER BY hits DESC, r.weight DESC, s.degree + t.degree DESC, r.id", ids * 4).fetchall()
        communities = self.conn.execute(
            f"SELECT m.community_id, count(*) AS hits, r.title, r.full_text, r.rating FROM community_members m "
            f"JOIN reports r ON r.community_id = m.community_id JOIN communities c ON c.id = m.community_id "
            f"WHERE m.entity_id IN ({marks}) GROUP BY m.community_id "
            f"ORDER BY hits DESC, c.level DESC, r.rating DESC, m.community_id", ids).fetchall()
        chunk_rank = self.conn.execute(
            f"SELECT em.chunk_id, count(*) AS hits FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
            f"WHERE em.entity_id IN ({marks}) GROUP BY em.chunk_id "
            f"ORDER BY hits DESC, c.document_id, c.ordinal", ids).fetchall()

        budget = s.context_tokens
        ent = ContextTable("Entities", "id|entity|type|description|degree", int(budget * 0.15))
        for n, eid in enumerate(ids, 1):
            _, name, etype, desc, degree = entities[eid]
            ent.add(f"{n}|{name}|{etype}|{shorten(desc, 500)}|{degree}")
        rel = ContextTable("Relationships", "id|source|target|description|weight", int(budget * 0.25))
        for n, (_, src, dst, pred, desc, weight, _) in enumerate(relationships, 1):
            if not rel.add(f"{n}|{src}|{dst}|{pred}: {shorten(desc, 300)}|{weight:g}"):
                break
        rep = ContextTable("Reports", "id|title|content", int(budget * 0.2))
        used_reports = []
        for cid, _, title, full, _ in communities:
            if rep.add(f"{cid}|{title}|{shorten(full, 1200)}"):
                used_reports.append(cid)
        src_budget = budget - ent.used - rel.used - rep.used
        src = ContextTable("Sources", "id|text", src_budget)
        chunk_ids = []
        for chunk_id, _ in chunk_rank:
            text = " ".join(self._chunk_text(chunk_id).split())
            if not src.add(f"{len(chunk_ids) + 1}|{text}"):
                if src.rows == 0:  # always give at least one (trimmed) source
                    src.add(f"1|{shorten(text, max(200, src_budget * 3))}")
                    chunk_ids.append(chunk_id)
                break
            chunk_ids.append(chunk_id)
        context = "\n\n".join(t for t in (ent.text(), rel.text(), rep.text(), src.text()) if t)
        retrieve = time.perf_counter() - t0
        result = Answer(question, "local", "", context, self._model_name(context_only),
                        sources=self._sources(chunk_ids), entities=ids, reports=used_reports,
                        timings={"retrieve_s": round(retrieve, 4)})
        if context_only:
            return result
        t1 = time.perf_counter()
        if not ids:
            result.answer = "I don't know: no entity in this store matches the question."
        elif self.gateway.chat_model:
            result.answer = self._generate(question, context)
        else:
            names = [entities[i][1] for i in ids[:5]]
            top = entities[ids[0]]
            relevant = set(search_terms(question)) & set(search_terms(f"{top[1]} {top[3]}"))
            first = top[3][slice(*split_sentences(top[3])[0])] if top[3].strip() else ""
            lead = f"{top[1]} ({top[2]}): {shorten(first, 200)} [Entities: 1]" if relevant else ""
            passages = [(str(n), self._chunk_text(c)) for n, c in enumerate(chunk_ids, 1)]
            result.answer = _extractive(question, lead, passages, names)
        result.timings["generate_s"] = round(time.perf_counter() - t1, 4)
        return result

    # -- naive ----------------------------------------------------------------------------

    def find_chunks(self, question: str, k: int) -> list[str]:
        """Chunks by reciprocal-rank fusion of vec0 KNN and FTS5 BM25."""
        scores: dict[str, float] = {}
        if has_table(self.conn, "vec_chunks"):
            rows = self.conn.execute(
                f"SELECT id FROM vec_chunks WHERE embedding MATCH {vec_param(self._vtype)} AND k = ? ORDER BY distance",
                (self._vector(question), min(k, MAX_KNN))).fetchall()
            for rank, (cid,) in enumerate(rows):
                scores[cid] = scores.get(cid, 0) + 1 / (60 + rank)
        terms = sorted(set(index_terms(question)))
        if terms:
            match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
            rows = self.conn.execute(
                "SELECT c.id FROM chunks_fts f JOIN chunks c ON c.seq = f.rowid "
                "WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?", (match, k)).fetchall()
            for rank, (cid,) in enumerate(rows):
                scores[cid] = scores.get(cid, 0) + 1 / (60 + rank)
        return sorted(scores, key=lambda c: (-scores[c], c))[:k]

    def _naive(self, question: str, context_only: bool) -> Answer:
        t0 = time.perf_counter()
        chunk_ids = self.find_chunks(question, self.settings.top_k)
        src = ContextTable("Sources", "id|text", self.settings.context_tokens)
        used = []
        for chunk_id in chunk_ids:
            if not src.add(f"{len(used) + 1}|{' '.join(self._chunk_text(chunk_id).split())}"):
                break
            used.append(chunk_id)
        result = Answer(question, "naive", "", src.text(), self._model_name(context_only),
                        sources=self._sources(used), timings={"retrieve_s": round(time.perf_counter() - t0, 4)})
        if context_only:
            return result
        t1 = time.perf_counter()
        if not used:
            result.answer = "I don't know: no passage in this store matches the question."
        elif self.gateway.chat_model:
            result.answer = self._generate(question, result.context)
        else:
            passages = [(str(n), self._chunk_text(c)) for n, c in enumerate(used, 1)]
            result.answer = _extractive(question, "", passages, [])
        result.timings["generate_s"] = round(time.perf_counter() - t1, 4)
        return result

    # -- global ---------------------------------------------------------------------------

    def candidate_reports(self, question: str, level: int) -> list[tuple[str, str, str, float]]:
        """(community id, title, full text, rating) at `level` (plus shallower leaves),
        most similar to the question first, cut to global_top."""
        rows = self.conn.execute(
            "SELECT c.id, r.title, r.full_text, r.rating FROM communities c JOIN reports r ON r.community_id = c.id "
            "WHERE c.level = ? OR (c.level < ? AND c.is_leaf = 1) ORDER BY c.id", (level, level)).fetchall()
        if len(rows) > self.settings.global_top and has_table(self.conn, "vec_reports"):
            vector = self._vector(question)
            distance = dict(self.conn.execute(
                f"SELECT id, vec_distance_cosine(embedding, {vec_param(self._vtype)}) FROM vec_reports", (vector,)).fetchall())
            rows.sort(key=lambda r: (distance.get(r[0], 2.0), -r[3], r[0]))
            rows = rows[:self.settings.global_top]
        return rows

    def _global(self, question: str, context_only: bool) -> Answer:
        s = self.settings
        t0 = time.perf_counter()
        reports = self.candidate_reports(question, s.level)
        batches: list[list[tuple[str, str]]] = [[]]
        used = 0
        for cid, _, full, _ in reports:
            block = (cid, f"----- Report {cid} -----\n{full}")
            cost = estimate_tokens(block[1])
            if batches[-1] and used + cost > s.map_tokens:
                batches.append([])
                used = 0
            batches[-1].append(block)
            used += cost
        batches = [b for b in batches if b]
        context = "\n\n".join(block for batch in batches for _, block in batch)
        result = Answer(question, "global", "", context, self._model_name(context_only),
                        reports=[r[0] for r in reports],
                        timings={"retrieve_s": round(time.perf_counter() - t0, 4)})
        if context_only:
            return result
        t1 = time.perf_counter()
        points = self._map(question, batches)
        result.timings["map_s"] = round(time.perf_counter() - t1, 4)
        points = [p for p in points if p[0] > 0]
        points.sort(key=lambda p: (-p[0], p[1]))
        kept, used = [], 0
        for score, text in points:
            cost = estimate_tokens(text) + 4
            if used + cost > s.reduce_tokens:
                break
            kept.append((score, text))
            used += cost
        t2 = time.perf_counter()
        if not kept:
            result.answer = (f"I don't know: none of the {len(reports)} community reports at level "
                             f"{s.level} is relevant to the question.")
            if not self.gateway.chat_model and reports:  # offline: point to the main communities
                top = sorted(reports, key=lambda r: (-r[3], r[0]))[:3]
                result.answer += " The most prominent communities are: " + "; ".join(
                    f"{title} [Reports: {cid}]" for cid, title, _, _ in top) + "."
        elif self.gateway.chat_model:
            key_points = "\n".join(f"{n}. (importance {score}) {text}" for n, (score, text) in enumerate(kept, 1))
            prompt = self.prompts.reduce_answer.format(question=question, context=key_points,
                                                       response_type=s.response_type)
            result.answer = self.gateway.chat("query", prompt).strip()
        else:
            result.answer = "\n".join(f"- {text}" for _, text in kept[:6])
        result.context += "\n\n-----Key points-----\n" + "\n".join(f"{sc}|{tx}" for sc, tx in kept)
        result.timings["reduce_s"] = round(time.perf_counter() - t2, 4)
        return result

    def _map(self, question: str, batches: list[list[tuple[str, str]]]) -> list[tuple[int, str]]:
        if self.gateway.chat_model is None:
            return self._map_offline(question, batches)
        jobs = [ChatJob(i, self.prompts.map_points.format(question=question,
                                                          context="\n\n".join(b for _, b in batch)))
                for i, batch in enumerate(batches)]
        points = []
        for _, answer in self.gateway.chat_many("query", jobs):
            points.extend((score, text) for text, score in parse_points(answer))
        return points

    def _map_offline(self, question: str, batches) -> list[tuple[int, str]]:
        """Score each report's summary and findings by term overlap with the question."""
        terms = search_terms(question)
        points = []
        for batch in batches:
            for cid, _ in batch:
                summary, findings = self.conn.execute(
                    "SELECT summary, findings FROM reports WHERE community_id = ?", (cid,)).fetchone()
                items = [summary] + [f"{f['summary']}: {f['explanation']}" for f in json.loads(findings)]
                for item in items:
                    score = int(round(100 * score_overlap(terms, item)))
                    if score > 0:
                        points.append((score, f"{shorten(item, 400)} [Reports: {cid}]"))
        return points


def _extractive(question: str, lead: str, passages: list[tuple[str, str]], names: list[str]) -> str:
    """An answer made of the best-matching source sentences, each with its citation."""
    picked = best_sentences(question, passages, limit=5, boost_terms=names)
    lines = [lead] if lead else []
    lines += [f"{sentence} [Sources: {cite}]" for sentence, cite, _ in picked
              if sentence not in lead][:4]  # the lead already says it
    if not lines:
        return "I don't know: the retrieved passages do not mention the question's terms."
    return "\n".join(lines)
