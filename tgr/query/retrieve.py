"""Ranked retrieval: the core that every query mode, context and answer is built from.

`Retriever.retrieve(question, mode, k)` returns chunks ("passages") in relevance order, each
with a score:

- naive: FTS5 BM25 over the chunk terms (a document's title is indexed with each of its
  chunks), fused with dense KNN (scaled scores summed) when the store's embedder is a real model,
  and then with the chunks nearest to the best fused one (pseudo-relevance feedback).
  Hashed vectors (tgr:hash-*) are left out of naive ranking: they lower recall.
- local: personalized PageRank (as in HippoRAG) over a query subgraph of entities and chunks
  (tgr.query.graph_walk). Reset mass sits on the entities the question names (weighted by how
  specific they are), on the chunks BM25 (and a real embedder) ranks highest, and on documents
  whose title the question names; relevance spreads through mentions and relationships, so the
  chunks about a bridge entity of a multi-hop question are reached though they share no word
  with it. With hashed vectors, the chunks whose words are nearest the best BM25 chunk's are
  seeds too (lexical feedback). A question that asks several things (tgr.query.question_terms)
  is walked from clause by clause. Entities, relationships and reports in the local context
  follow the same scores. A "who/what is X", "X的R是谁" or "Who is X's R?" question leads with
  the passage that defines X, or the person X meets where R is said (tgr.query.focus): the walk
  ranks where X is most connected.
"""
from __future__ import annotations

import bisect
import heapq
import json
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from .common_terms import common_terms
from .pending_chunks import PendingChunks
from ..store.db import Connection, has_table, serialize, vec_param, vector_bytes
from ..models.clients import embeds
from ..store.size_limits import MAX_CONTEXT_TEXT
from .name_match import named_entities, titled_chunks
from .named_reach import named_communities, nearer_first
from .question_terms import question_clauses, question_terms
from ..offline.global_answer import topic_terms
from .topic_evidence import best_matches, topic_evidence
from ..offline.pagerank import SMALL_GRAPH_EDGES, personalized_pagerank  # noqa: F401 - part of this API
from .query_cache import WARM_QUERIES, QueryCache  # noqa: F401 - part of this API
from ..text import CJK_RUN, has_cjk, match_terms, term_set
from .graph_walk import walk
from .focus import Focus, focus
from .vector_matrix import nearest

MODES = ("local", "global", "naive")
MAX_KNN = 4096        # the most neighbours one sqlite-vec KNN query returns
SEED_CHUNKS = 30      # BM25 / dense chunks that start the walk
MAX_NAME_WORDS = 6    # longest question span tried as an entity name or title
DENSE_WEIGHT = 1.0    # a real embedder's scaled cosine against scaled BM25 (see _fuse)
FEEDBACK_WEIGHT = 0.75 # ... and the scaled cosine to the best chunk of those two (see dense_seeds)
LEXICAL_FEEDBACK = 0.25 # local mode, hashed vectors: their cosine to the best BM25 chunk (see local_walk)
GLOBAL_REPORTS = 8    # reports whose chunks are the passages of retrieve(..., "global")
SOURCES_PER_REPORT = 3  # chunks behind each report
REPORT_MATCHES = 1000   # best BM25 chunks a report's sources are chosen among first (see report_chunks)
EVIDENCE_WEIGHT = 0.5   # tgr.query.topic_evidence against a report's own word overlap in ranking reports
NAMED_WEIGHT = 1.0      # the communities holding the question's named entities (tgr.query.named_reach), likewise
RRF_K = 10            # reciprocal rank fusion of report rankings: small, as only the top of a few
                      # hundred reports counts, and the ranks must still outweigh centrality
VECTOR_TABLES = {"chunks": "vec_chunks", "entities": "vec_entities", "reports": "vec_reports"}


@dataclass
class Passage:
    """One retrieved chunk with its document."""

    chunk_id: str
    score: float
    text: str
    document_id: str
    source: str
    title: str
    ordinal: int
    char_start: int
    char_end: int
    external_id: str | None = None
    metadata: dict = field(default_factory=dict)
    page: int | None = None  # a PDF page, where the document's metadata gives page offsets
    store: str | None = None  # the store it came from, when several are asked together (tgr.multi_store)

    def to_dict(self) -> dict:
        fields = asdict(self)
        if self.store is None:
            del fields["store"]
        return fields


@dataclass
class Retrieval:
    """Ranked passages, plus (local mode) the entity scores behind them."""

    passages: list[Passage]
    entity_scores: dict[str, float] = field(default_factory=dict)
    named_entities: list[str] = field(default_factory=list)


def is_lexical_embedder(name: str | None) -> bool:
    """Hashed feature vectors only repeat what BM25 knows, less well."""
    return not name or name.startswith("tgr:hash")


def is_hashed_embedder(name: str | None) -> bool:
    """tgr's own hashed feature vectors (always at hand): local mode's lexical feedback uses
    them (see Retriever.local_walk); no other lexical stand-in is ever asked for a vector."""
    return bool(name) and name.startswith("tgr:hash")


def ranks_reports(name: str | None) -> bool:
    """Whether this embedder's report vectors help rank reports for a global question. Not
    the bundled local model's: fused with the reports' word overlap, e5-small's cosine between
    a question and a whole report lowered global R@10 on every dev set (hotpotqa 0.715 ->
    0.620, cmrc2018_trial 0.870 -> 0.720, rgb_zh 0.456 -> 0.402), so it is neither used nor
    computed (tgr.models.clients.embeds). Nor hashed vectors', which only repeat the words."""
    return not is_lexical_embedder(name) and embeds("reports", name)


class Question:
    """One question being retrieved for: its text, and its vector once a dense step needs it."""

    def __init__(self, text: str, embed_query=None, vector_type: str = "float32"):
        self.text = text
        self._embed_query = embed_query
        self._vector_type = vector_type
        self._vector: bytes | None = None

    def vector(self) -> bytes:
        """The question's embedding as the store keeps vectors (embedded once, on first use)."""
        if self._vector is None:
            self._vector = serialize(self._embed_query(self.text), self._vector_type)
        return self._vector


class Retriever:
    """Retrieval against one open store. `embed_query(text) -> vector` is used only when
    `dense` is true (a real embedding model) or `hashed` is (tgr's hashed vectors: local mode's
    lexical feedback); vector_type is how the store keeps vectors.
    What is kept between questions (and whether the warm paths are taken) belongs to the
    connection's QueryCache; each question is counted there once."""

    def __init__(self, conn: Connection, embed_query=None, dense: bool = False,
                 vector_type: str = "float32", tables: dict[str, str] | None = None,
                 report_vectors: bool = True, hashed: bool = False, hashed_dim: int | None = None):
        self.conn = conn
        self.embed_query = embed_query
        self.dense = dense and embed_query is not None
        self.hashed = hashed and not self.dense and embed_query is not None
        self.hashed_dim = hashed_dim if self.hashed else None  # every question vector's length (see nearest_chunks)
        self.report_vectors = self.dense and report_vectors  # see ranks_reports
        self.vector_type = vector_type
        self.tables = tables or VECTOR_TABLES  # kind -> the vec0 table searched (see tgr.build.portable_vectors)
        self.vec = vec_param(vector_type)  # the SQL that binds a query vector
        self._chunk_total: int | None = None

    # -- public ---------------------------------------------------------------------------

    def retrieve(self, question: str, mode: str = "local", k: int = 10) -> Retrieval:
        """The k best passages for the question, best first."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        q = self.question(question)
        if mode == "naive":
            return Retrieval(self.passages(self.naive_scores(q, k)))
        if mode == "local":
            return self.local(q, k)
        reports = [r[0] for r in self.ranked_reports(q, 0, GLOBAL_REPORTS)]
        return Retrieval(self.passages(self.report_chunks(reports, q.text)[:k]))

    def reports(self, question: str, level: int, top: int) -> list[tuple[str, str, str, float]]:
        """(community id, title, full text, rating) of the reports global search reads for
        the question, best first (see ranked_reports)."""
        return self.ranked_reports(self.question(question), level, top)

    def question(self, text: str) -> Question:
        """Start a question: counted once by the connection's QueryCache."""
        QueryCache.of(self.conn).question()
        return Question(text, self.embed_query, self.vector_type)

    @property
    def cache(self) -> QueryCache:
        return QueryCache.of(self.conn)

    def passages(self, ranked: list[tuple[str, float]]) -> list[Passage]:
        """Passages for (chunk id, score) pairs, in the given order."""
        if not ranked:
            return []
        ids = json.dumps([cid for cid, _ in ranked])
        rows = {r[0]: r for r in self.conn.execute(
            f"SELECT c.id, substr(c.text, 1, {MAX_CONTEXT_TEXT}), c.document_id, d.source, d.title, c.ordinal, "
            "c.char_start, c.char_end "
            "FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE c.id IN (SELECT value FROM json_each(?))", (ids,)).fetchall()}
        extra = _document_extras(self.conn, {r[2] for r in rows.values()})
        result = []
        for cid, score in ranked:
            row = rows.get(cid)
            if row is None:
                continue
            external_id, metadata = extra.get(row[2], (None, {}))
            result.append(Passage(cid, round(score, 6), row[1], row[2], row[3], row[4], row[5], row[6],
                                  row[7], external_id, metadata, _page(metadata, row[6])))
        return result

    # -- naive ----------------------------------------------------------------------------

    def naive_scores(self, q: Question, k: int) -> list[tuple[str, float]]:
        """BM25, fused with dense KNN and feedback when the embedder is real."""
        bm25 = self.bm25(q.text, max(k, SEED_CHUNKS))
        if not self.dense:
            return bm25[:k]
        return self.dense_seeds(q, bm25, max(k, SEED_CHUNKS))[:k]

    def dense_seeds(self, q: Question, bm25: list[tuple[str, float]], limit: int) -> list[tuple[str, float]]:
        """BM25 and dense KNN fused, then fused again with the chunks nearest the best of
        them (pseudo-relevance feedback). The best chunk stands for what the question is
        about better than the question does: retellings of the same news and other passages
        on that one subject rise, passages that only share the question's words fall."""
        dense = self.dense_chunks(q, limit)
        first = _fuse((bm25, 1.0), (dense, DENSE_WEIGHT))
        if not first or FEEDBACK_WEIGHT <= 0:
            return first
        near = self.nearest_chunks(q, first[0][0], limit)
        return _fuse((bm25, 1.0), (dense, DENSE_WEIGHT), (near, FEEDBACK_WEIGHT))

    def bm25(self, question: str, limit: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of the best FTS5 matches of the question's terms, and of the
        chunks an interrupted run stored before indexing them (tgr.query.pending_chunks)."""
        terms = self.bm25_terms(question)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
        # rank inside the full-text index first, then look up only the best rows' ids
        found = [(cid, -score) for cid, score in self.conn.execute(
            "SELECT c.id, f.s FROM (SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts "
            "WHERE chunks_fts MATCH ? ORDER BY s, rowid LIMIT ?) f JOIN chunks c ON c.seq = f.rowid "
            "ORDER BY f.s, f.rowid", (match, limit)).fetchall()]
        pending = self.cache.get(("pending chunks",), lambda: PendingChunks.read(self.conn))
        if not pending.chunks:  # (read once per version of the store: none, in a finished one)
            return found
        return sorted(found + pending.bm25(terms, limit), key=lambda hit: -hit[1])[:limit]

    def bm25_terms(self, question: str) -> list[str]:
        """The question's terms to match (see tgr.query.question_terms), leaving out the
        commonest ones: bm25() of two texts with the same terms is the same."""
        terms = question_terms(question)
        if not terms:
            return []
        common = common_terms(self.conn, terms)
        if common:  # weightless, and the longest posting lists: leave them out
            kept = [t for t in terms if t not in common]
            terms = kept or terms[:1]
        return terms

    def dense_chunks(self, q: Question, limit: int) -> list[tuple[str, float]]:
        if not has_table(self.conn, self.tables["chunks"]):
            return []
        return [(cid, 1.0 - d) for cid, d in self._knn(self.tables["chunks"], q.vector(), min(limit, MAX_KNN))]

    def nearest_chunks(self, q: Question, chunk_id: str, limit: int) -> list[tuple[str, float]]:
        """(chunk id, cosine) of the chunks nearest to one chunk's stored vector."""
        table = self.tables["chunks"]
        row = self.conn.execute(f"SELECT embedding FROM {table} WHERE id = ?", (chunk_id,)).fetchone()
        # a hashed vector has its embedder's length: no question embedded (rjieba loaded) to measure
        size = vector_bytes(self.hashed_dim, self.vector_type) if self.hashed_dim else len(q.vector())
        if row is None or len(row[0]) != size:
            return []  # no vector, or a malformed one in a file made elsewhere
        return [(cid, 1.0 - d) for cid, d in self._knn(table, row[0], min(limit, MAX_KNN))]

    def _knn(self, table: str, vector: bytes, k: int) -> list[tuple[str, float]]:
        """(id, cosine distance) of the k nearest vectors of a vec0 table, nearest first."""
        if self.vector_type == "int8" and self.cache.vector_copies:
            found = nearest(self.conn, table, vector, k)
            if found is not None:
                return found
        return self.conn.execute(
            f"SELECT id, distance FROM {table} WHERE embedding MATCH {self.vec} AND k = ? ORDER BY distance",
            (vector, k)).fetchall()

    # -- global ---------------------------------------------------------------------------

    def ranked_reports(self, q: Question, level: int, top: int) -> list[tuple[str, str, str, float]]:
        """(community id, title, full text, rating) of the reports at `level` (plus shallower
        leaves), best first: similarity to the question (words, topic evidence, the entities
        it names among the members), then centrality (size and rating)."""
        rows = self.conn.execute(
            f"SELECT c.id, r.title, NULL, r.rating, c.size, substr(r.summary, 1, {MAX_CONTEXT_TEXT}) "
            "FROM communities c JOIN reports r ON r.community_id = c.id "
            "WHERE c.level = ? OR (c.level < ? AND c.is_leaf = 1) ORDER BY c.id", (level, level)).fetchall()
        if not rows:
            return []
        similarity = _added(self._report_similarity(q, level, rows),
                            (self.topic_evidence(q.text, [r[0] for r in rows]), EVIDENCE_WEIGHT),
                            (named_communities(self.conn, self.named_entities(question_spans(q.text)), level),
                             NAMED_WEIGHT))
        biggest = max(r[4] for r in rows) or 1
        best = max(r[3] for r in rows) or 1
        centrality = {r[0]: 0.5 * math.log1p(r[4]) / math.log1p(biggest) + 0.5 * r[3] / best for r in rows}
        rows.sort(key=lambda r: (-(similarity.get(r[0], 0.0) + 0.25 * centrality[r[0]]), r[0]))
        full = dict(self.conn.execute(  # the full texts of the top ones only (a big store has thousands)
            f"SELECT community_id, substr(full_text, 1, {MAX_CONTEXT_TEXT}) FROM reports "
            "WHERE community_id IN (SELECT value FROM json_each(?))", (json.dumps([r[0] for r in rows[:top]]),)))
        return [(r[0], r[1], full.get(r[0]), r[3]) for r in rows[:top]]

    def _report_similarity(self, q: Question, level: int, rows: list[tuple]) -> dict[str, float]:
        """Each report's similarity to the question, 0..1: the share of the question's terms
        its title and summary hold, each term weighted by how few of the reports hold it
        ("american" is in many, "hexum" in one). Where the store has report vectors of an
        embedder that ranks_reports, that ranking is fused by rank (RRF) with the vectors'
        cosine ranking: a short question's cosine to a whole report is a weak signal on its
        own, and decides alone only where no report holds a word of the question."""
        lexical = self._word_overlap(q.text, level, rows)
        if not (self.report_vectors and has_table(self.conn, self.tables["reports"])):
            return lexical
        dense = {cid: 1.0 - d for cid, d in self.conn.execute(
            f"SELECT id, vec_distance_cosine(embedding, {self.vec}) FROM {self.tables['reports']} "
            "WHERE id IN (SELECT value FROM json_each(?))", (q.vector(), json.dumps(sorted(lexical))))}
        matching = {cid: score for cid, score in lexical.items() if score > 0}  # no word in common: no evidence
        return _rank_fuse(matching, dense)

    def _word_overlap(self, question: str, level: int, rows: list[tuple]) -> dict[str, float]:
        """IDF-weighted share of the question's terms in each report's title and summary."""
        return self.cache.get(("report terms", level), lambda: ReportTerms(rows)).overlap(set(match_terms(question)))

    def topic_evidence(self, question: str, community_ids: list[str], **options) -> dict[str, float]:
        """How much each community's passages say about the question's topic, 0..1 (see
        tgr.query.topic_evidence)."""
        return topic_evidence(self, question, community_ids, **options)

    def report_chunks(self, community_ids: list[str], question: str | None = None,
                      near: bool = True) -> list[tuple[str, float]]:
        """The chunks behind reports, ranked: for each report in turn, its community's chunks
        that match the question best (by BM25), then those that mention the most of its
        members. Without a question, or for one about the whole corpus ("What are the main
        themes?"), by members alone. A big community's most connected chunks are seldom the
        ones a question is about; those near an entity the question names (or related to one)
        are what it asks of, wherever Leiden put that entity (unless not near: the passage a
        theme quotes is the one that best matches the question's words, its answer's, not
        the one that names its names)."""
        matched = best_matches(self, question, REPORT_MATCHES) if question and topic_terms(question) else {}
        if matched and near:  # those near the entities the question names first (tgr.query.named_reach)
            matched = nearer_first(self, question_spans(question), matched)
        ranked: list[tuple[str, float]] = []
        seen = set()
        for rank, cid in enumerate(community_ids):
            members = _member_chunks(self.conn, cid)
            top = max((matched[c] for c in matched if c in members), default=0.0)
            for chunk_id in _first_chunks(members, matched, SOURCES_PER_REPORT):
                if chunk_id in seen:
                    continue
                seen.add(chunk_id)
                # in 0.5..1, matching chunks above the others: each report's chunks score
                # above every later report's
                fit = (0.75 + 0.25 * matched[chunk_id] / top if chunk_id in matched
                       else 0.5 + 0.25 * members[chunk_id] / (members[chunk_id] + 1))
                ranked.append((chunk_id, 0.5 ** rank * fit))
        return ranked

    # -- local ----------------------------------------------------------------------------

    def local(self, q: Question, k: int) -> Retrieval:
        clauses = question_clauses(q.text)
        if len(clauses) > 1:
            ranked, entity_scores, named = self.clause_walks(q, clauses)
        else:
            ranked, entity_scores, named, _ = self.local_walk(q)
        if len(ranked) < k:  # a question the graph does not reach: BM25 fills the list
            have = {cid for cid, _ in ranked}
            floor = ranked[-1][1] if ranked else 1.0
            extra = [c for c, _ in self.bm25(q.text, k * 2) if c not in have]
            ranked += [(cid, floor * 0.5 / (1 + i)) for i, cid in enumerate(extra)]
        ranked, entity_scores = _led(focus(self.conn, q.text), ranked, entity_scores)
        return Retrieval(self.passages(ranked[:k]), entity_scores, named)

    def local_walk(self, q: Question) -> tuple[list[tuple[str, float]], dict[str, float], list[str], float]:
        """One walk for the question: (ranked chunks, entity scores, entities it names, its
        best BM25 score)."""
        spans = question_spans(q.text)
        named = self.named_entities(spans)
        seeds = self.bm25(q.text, SEED_CHUNKS)
        best = seeds[0][1] if seeds else 0.0
        if self.dense:
            # the fused lists hold up to three times as many; the tail adds little reset mass
            # but a large subgraph (its entities, their other chunks)
            seeds = self.dense_seeds(q, seeds, SEED_CHUNKS)[:SEED_CHUNKS]
            named = _merge_weights(named, self.dense_entities(q, 10))
        elif seeds and self.hashed and has_table(self.conn, self.tables["chunks"]):
            # hashed vectors: the chunks that share the most words with the best one start the
            # walk too. The page a multi-hop question's first hop leads to repeats its names
            # (hotpotqa R@5 0.875 -> 0.910); naive ranking by the question's own hashed vector
            # only repeats BM25, less well
            near = self.nearest_chunks(q, seeds[0][0], SEED_CHUNKS)
            seeds = _fuse((seeds, 1.0), (near, LEXICAL_FEEDBACK))[:SEED_CHUNKS]
        scores, entity_scores = self.walk(named, seeds, titled_chunks(self.conn, spans))
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])), entity_scores, list(named), best

    def clause_walks(self, q: Question, clauses: list[str]):
        """A question that asks several things ("…的时间，…是多少？"): one walk per clause,
        fused, each weighted by how well the full-text index matches it (its best BM25 score
        against the whole question's, at most 1). One walk for the whole question spends its
        seeds on whichever fact its rarest words belong to, and the other facts' passages
        fall below that fact's near misses."""
        whole = self.bm25(q.text, 1)
        top = whole[0][1] if whole else 0.0
        rankings, entity_scores, named = [], {}, []
        for clause in clauses:
            ranked, entities, names, best = self.local_walk(Question(clause, self.embed_query, self.vector_type))
            weight = min(1.0, best / top) if top > 0 else 1.0
            rankings.append((ranked, weight))
            for eid, score in entities.items():
                entity_scores[eid] = entity_scores.get(eid, 0.0) + weight * score
            named += names
        return _fuse(*rankings), entity_scores, list(dict.fromkeys(named))

    def named_entities(self, spans: list[tuple[str, bool]]) -> dict[str, float]:
        """Entities the question names, weighted by specificity (see tgr.query.name_match)."""
        return named_entities(self.conn, spans, self.chunk_total())

    def dense_entities(self, q: Question, limit: int) -> dict[str, float]:
        if not has_table(self.conn, self.tables["entities"]):
            return {}
        rows = self._knn(self.tables["entities"], q.vector(), limit)
        return {eid: max(0.0, 1.0 - d) * 0.5 for eid, d in rows}

    def chunk_total(self) -> int:
        if self._chunk_total is None:
            self._chunk_total = self.conn.execute("SELECT max(1, count(*)) FROM chunks").fetchone()[0]
        return self._chunk_total

    def walk(self, named: dict[str, float], seeds: list[tuple[str, float]],
             titled: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
        """Personalized PageRank over the query subgraph; (chunk scores, entity scores)."""
        return walk(self.conn, named, seeds, titled, self.chunk_total(), numpy=self.cache.numpy_walk)


def _member_chunks(conn: Connection, community_id: str) -> dict[str, int]:
    """How many of a community's members each chunk mentions, by chunk id. The mentions' chunk
    ids come as one JSON array, counted here: half the time of SQLite grouping a big
    community's tens of thousands of mentions (and of a row a chunk)."""
    ids = conn.execute("SELECT json_group_array(em.chunk_id) FROM community_members m JOIN entity_mentions em "
                       "ON em.entity_id = m.entity_id WHERE m.community_id = ?", (community_id,)).fetchone()[0]
    return Counter(json.loads(ids))


def _first_chunks(members: dict[str, int], matched: dict[str, float], n: int) -> list[str]:
    """The n first member chunks by (BM25 score among the matched, members mentioned, id), as
    sorting them all would give; only the matched ones and the unmatched ones that mention the
    most members are sorted (a big community has tens of thousands of chunks)."""
    mine = [c for c in matched if c in members]
    # the n first unmatched mention at least as many as the (n + len(mine))-th most of all
    least = min(heapq.nlargest(n + len(mine), members.values()), default=0)
    unmatched = sorted((c for c, count in members.items() if count >= least and c not in matched),
                       key=lambda c: (-members[c], c))[:n]
    return sorted(mine + unmatched, key=lambda c: (-matched.get(c, 0.0), -members[c], c))[:n]


def question_spans(question: str) -> list[tuple[str, bool]]:
    """Spans of the question that could name an entity or a title: runs of 1-6 words
    (English), substrings of CJK runs (Chinese); with whether the span is capitalised."""
    question = question.replace("’", "'")
    spans: list[tuple[str, bool]] = []
    words = list(re.finditer(r"\w+(?:[-.'&]\w+)*\.?", question))
    for i in range(len(words)):
        for j in range(i, min(len(words), i + MAX_NAME_WORDS)):
            text = question[words[i].start():words[j].end()]
            stripped = re.sub(r"'s?$", "", text.rstrip(".")) if not has_cjk(text) else text
            for candidate in {text, stripped}:
                if candidate and not (candidate.isdigit() and len(candidate) < 3):
                    spans.append((candidate, candidate[0].isupper() or has_cjk(candidate)
                                  or candidate[0].isdigit()))
    for run in CJK_RUN.findall(question):
        for n in range(2, min(len(run), 12) + 1):
            spans.extend((run[i:i + n], True) for i in range(len(run) - n + 1))
    return spans


def _fuse(*rankings: tuple[list[tuple[str, float]], float]) -> list[tuple[str, float]]:
    """(ranking, weight) pairs in one ranking: the weighted sum of their scores, each scaled to
    0..1 over its own list (on the evaluation sets this beat reciprocal-rank fusion, which
    drops how far apart the scores are). A list of equal scores (one chunk, say) scales to 1."""
    fused: dict[str, float] = {}
    for ranking, weight in rankings:
        if not ranking:
            continue
        high, low = ranking[0][1], ranking[-1][1]
        for cid, score in ranking:
            fused[cid] = fused.get(cid, 0.0) + weight * ((score - low) / (high - low) if high > low else 1.0)
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


class ReportTerms:
    """Which reports hold a term in their title and summary (tgr.text.term_set), worked out
    for each term when it is first asked about: a question reads its own terms' holders, not
    every report's words (0.2 s for the 4,500 reports of a level at 100 M characters). A
    report whose lowercased text does not hold the term as a substring cannot hold it as a
    word (term_set lowercases each word, and lowercasing is one character at a time except
    for the Greek capital sigma, whose reports are always read word by word)."""

    def __init__(self, rows: list[tuple]):
        self.texts = {r[0]: f"{r[1]} {r[5]}" for r in rows}  # report id -> its title and summary
        self._lowered: dict[str, str | None] | None = None
        self._words: dict[str, frozenset[str]] = {}
        self._holders: dict[str, frozenset[str]] = {}

    def holders(self, term: str) -> frozenset[str]:
        """The ids of the reports holding the term (a match_terms term)."""
        found = self._holders.get(term)
        if found is None:
            if self._lowered is None:
                self._lowered = {cid: None if "\u03a3" in text else text.lower() for cid, text in self.texts.items()}
            found = self._holders[term] = frozenset(
                cid for cid, lowered in self._lowered.items()
                if (lowered is None or term in lowered) and term in self._words_of(cid))
        return found

    def overlap(self, asked: set[str]) -> dict[str, float]:
        """Each report's IDF-weighted share of the asked terms."""
        holders = {t: self.holders(t) for t in asked}
        idf = {t: math.log(1 + len(self.texts) / (1 + len(holders[t]))) for t in asked}
        total = sum(idf.values())
        if not total:
            return {cid: 0.0 for cid in self.texts}
        return {cid: sum(w for t, w in idf.items() if cid in holders[t]) / total for cid in self.texts}

    def _words_of(self, cid: str) -> frozenset[str]:
        words = self._words.get(cid)
        if words is None:
            words = self._words[cid] = frozenset(term_set(self.texts[cid]))
        return words


def _rank_fuse(*scores: dict[str, float]) -> dict[str, float]:
    """Reciprocal rank fusion of score maps, scaled to 0..1 (1: first in every map). Equal
    scores share a rank, so a run of ties is no order; scales need not agree (cosines of
    different embedders, shares of words)."""
    fused: dict[str, float] = {}
    for ranking in scores:
        values = sorted(ranking.values(), reverse=True)
        for key, score in ranking.items():
            rank = bisect.bisect_left(values, -score, key=lambda v: -v)  # how many score higher
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
    best = len(scores) / (RRF_K + 1)
    return {key: value / best for key, value in fused.items()}


def _led(lead: Focus, ranked: list[tuple[str, float]],
         entity_scores: dict[str, float]) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """The ranking and entity scores with a question's focus first (tgr.query.focus): its
    chunks above every other, in order, and its entities above the others."""
    if lead.chunks:
        top = ranked[0][1] if ranked else 1.0
        first = [(cid, top * (1.0 + 0.01 * (len(lead.chunks) - i))) for i, cid in enumerate(lead.chunks)]
        ranked = first + [(cid, score) for cid, score in ranked if cid not in lead.chunks]
    if lead.entities:
        best = max(entity_scores.values(), default=1.0)
        entity_scores = {**entity_scores, **{e: best * (1.0 + 0.01 * (len(lead.entities) - i))
                                            for i, e in enumerate(lead.entities)}}
    return ranked, entity_scores


def _added(scores: dict[str, float], *weighted: tuple[dict[str, float], float]) -> dict[str, float]:
    """The scores with each (other scores, weight) added, weighted; a key missing from one counts 0."""
    for other, weight in weighted:
        if other:
            scores = {key: scores.get(key, 0.0) + weight * other.get(key, 0.0) for key in scores.keys() | other.keys()}
    return scores


def _merge_weights(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    merged = dict(a)
    for key, value in b.items():
        merged[key] = max(merged.get(key, 0.0), value)
    return merged


def _page(metadata: dict, char_start: int) -> int | None:
    """The page a passage starts on, from a PDF's page start offsets."""
    pages = metadata.get("pages")
    if isinstance(pages, list) and pages and all(type(p) is int for p in pages):
        return max(1, bisect.bisect_right(pages, char_start))
    return None


def _document_extras(conn: Connection, document_ids: set[str]) -> dict[str, tuple[str | None, dict]]:
    """external_id and metadata of documents, on stores that have those columns (kept by the
    connection's QueryCache: a question reads a document's once). Read through the index
    documents_extras where the store has it: the columns follow the document's text in its
    row, and reaching them without that index walks the text's overflow pages."""
    cache = QueryCache.of(conn)
    columns = cache.get(("document extras",), lambda: _DocumentExtras(conn))
    if not columns.kept:
        return {}
    missing = sorted(set(document_ids) - columns.read.keys())
    if missing:
        columns.read.update(dict.fromkeys(missing))  # (an id without a document: None, left out below)
        columns.read.update((doc_id, (external_id, metadata)) for doc_id, external_id, metadata in conn.execute(
            f"SELECT id, external_id, metadata FROM documents {columns.index} "
            "WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(missing),)).fetchall())
    extras = {}
    for doc_id in document_ids:
        if columns.read.get(doc_id) is None:
            continue
        external_id, metadata = columns.read[doc_id]
        try:  # the file may come from anyone: a malformed or hostile value becomes {}
            meta = json.loads(metadata) if metadata and len(metadata) <= 1_000_000 else {}
        except (ValueError, RecursionError):
            meta = {}
        extras[doc_id] = (external_id, meta if isinstance(meta, dict) else {})
    return extras


class _DocumentExtras:
    """Whether the store has documents' external_id and metadata, how to read them, and
    those read so far."""

    def __init__(self, conn: Connection):
        self.kept = "external_id" in {r[1] for r in conn.execute("PRAGMA table_info(documents)").fetchall()}
        indexed = self.kept and [r[2] for r in conn.execute("PRAGMA index_info(documents_extras)")] == \
            ["id", "external_id", "metadata"] and conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'documents_extras' "
                "AND tbl_name = 'documents'").fetchone() is not None
        self.index = "INDEXED BY documents_extras" if indexed else ""
        self.read: dict[str, tuple | None] = {}  # id -> (external_id, metadata as stored)
