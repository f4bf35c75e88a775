"""The local walk: personalized PageRank (as in HippoRAG) over a question's subgraph of entities
and chunks. Reset mass sits on the entities the question names, the seed chunks and the chunks
of titled documents; relevance spreads through mentions and relationships, and hub entities
(mentioned everywhere) pass little of it on. tgr.query.retrieve chooses the seeds.

A subgraph of more than PUSH_EDGES edges (a novel's hero at 100 M characters: thousands of
related entities and 150 k of their chunk edges) is walked by forward push (tgr.query.push_walk),
which reads only the part of it that mass worth spreading reaches; a smaller one, by power
iteration over all of it (tgr.offline.pagerank)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import repeat

from ..offline.pagerank import personalized_pagerank
from ..store.db import Connection
from .push_walk import LazyGraph, push_walk

HUB_MENTIONS = 64     # entities in more chunks than this are not expanded to all of them
DAMPING = 0.35        # PageRank: chance of following an edge rather than jumping back to a seed
CHUNK_RESET = 1.0     # share of the reset mass on seed chunks (BM25 / dense) ...
ENTITY_RESET = 0.3    # ... on entities the question names ...
TITLE_RESET = 1.0     # ... and on documents whose title the question names
RELATION_WEIGHT = 0.5 # an entity-entity edge against an entity-chunk edge
SHARPNESS = 6.0       # seed chunk weight = (score / best score) ** SHARPNESS: keeps BM25's order
PUSH_EDGES = 15000    # a subgraph of more edges than this is walked by forward push (tgr.query.push_walk)


@dataclass
class _Subgraph:
    entity_mentions: dict[str, int]            # entity id -> chunks that mention it
    entity_chunks: dict[str, set[str]]         # entity id -> the node keys ("c:" chunk id) of its chunks
    relations: list[tuple]                     # (source, target, weight, mentions, mentions)


def walk(conn: Connection, named: dict[str, float], seeds: list[tuple[str, float]], titled: dict[str, float],
         chunk_total: int, *, numpy: bool) -> tuple[dict[str, float], dict[str, float]]:
    """Personalized PageRank over the query subgraph; (chunk scores, entity scores)."""
    seed_chunks = {cid for cid, _ in seeds} | set(titled)
    if not seed_chunks and not named:
        return {}, {}
    reached = _reached(conn, named, seed_chunks)
    if _size(reached) > PUSH_EDGES:
        return _pushed(conn, reached, named, seeds, titled, chunk_total)
    index: dict[str, int] = {}  # node key ("e:" entity id, "c:" chunk id) -> node number

    def node(key: str) -> int:
        return index.setdefault(key, len(index))

    edges, weights = _subgraph_edges(_subgraph(conn, reached), index, chunk_total)
    reset: dict[int, float] = {}
    _reset(reset, named, seeds, titled, node)
    if not reset:
        return {}, {}
    vector = [reset.get(i, 0.0) for i in range(len(index))]
    ranks = personalized_pagerank(len(index), edges, weights, vector, DAMPING,
                                  numpy=numpy)
    chunks = {key[2:]: value for key, value in zip(index, ranks) if value > 0 and key[0] == "c"}
    entities = {key[2:]: value for key, value in zip(index, ranks) if value > 0 and key[0] != "c"}
    return chunks, entities

def _reset(reset: dict, named: dict[str, float], seeds: list[tuple[str, float]], titled: dict[str, float],
           node) -> None:
    """The reset mass by node (node(key) numbers a node key): on the seed chunks, the named
    entities and the titled documents' chunks, each share spread by weight."""
    top = max((s for _, s in seeds), default=0.0)
    chunk_mass = {cid: (s / top) ** SHARPNESS for cid, s in seeds if top > 0 and s > 0}
    _add_reset(reset, {"c:" + c: w for c, w in chunk_mass.items()}, CHUNK_RESET, node)
    _add_reset(reset, {"e:" + e: w for e, w in named.items()}, ENTITY_RESET, node)
    _add_reset(reset, {"c:" + c: w for c, w in titled.items()}, TITLE_RESET, node)


def _size(reached) -> int:
    """How many edges the exact walk's subgraph has, about (every specific entity's mentions,
    the seed chunks' and the relationships)."""
    entity_mentions, mentions, relations = reached
    return sum(m for m in entity_mentions.values() if m <= HUB_MENTIONS) + len(mentions) + len(relations)


def _pushed(conn: Connection, reached, named: dict[str, float], seeds: list[tuple[str, float]],
            titled: dict[str, float], total: int) -> tuple[dict[str, float], dict[str, float]]:
    """The walk by forward push (tgr.query.push_walk): the same subgraph, read where mass reaches."""
    reset: dict[str, float] = {}
    _reset(reset, named, seeds, titled, lambda key: key)
    if not reset:
        return {}, {}
    ranks = push_walk(_lazy_graph(conn, reached, total), reset, DAMPING)
    chunks = {key[2:]: value for key, value in ranks.items() if value > 0 and key[0] == "c"}
    entities = {key[2:]: value for key, value in ranks.items() if value > 0 and key[0] != "c"}
    return chunks, entities


def _lazy_graph(conn: Connection, reached, total: int) -> LazyGraph:
    """The walk's subgraph with the edges known without reading a specific entity's chunks:
    the seed chunks' mentions, the titled documents' chunks, the relationships."""
    entity_mentions, mentions, relations = reached
    weight_of = {eid: specificity(m, total) for eid, m in entity_mentions.items()}
    specific = {e for e, m in entity_mentions.items() if m <= HUB_MENTIONS}
    graph = LazyGraph(conn, weight_of, specific)
    for eid, cid in mentions + _titled(conn, entity_mentions):
        graph.link(eid, ["c:" + cid])
    for src, dst, weight, _, _ in relations:
        if src != dst and RELATION_WEIGHT > 0:
            graph.add_edge("e:" + src, "e:" + dst,
                           RELATION_WEIGHT * math.log1p(weight) * min(weight_of[src], weight_of[dst]))
    # hubs and seed chunks have every edge already; a title's other chunks may have more
    graph.complete.update({"e:" + e for e in entity_mentions if e not in specific} |
                          {"c:" + cid for _, cid in mentions})
    graph.expect(entity_mentions)
    return graph


def _subgraph(conn: Connection, reached) -> _Subgraph:
    """The entities the walk reaches and their edges: those named and those the seed
    chunks mention, the relationships of the named ones, and the chunks of every
    entity that is not a hub (reached: _reached's answer)."""
    entity_mentions, mentions, relations = reached
    # the other chunks of every specific entity: where a bridge entity is written about (a
    # JSON array of them an entity: a row a mention was most of a hub's walk, 140 k of them)
    specific = sorted(e for e, m in entity_mentions.items() if m <= HUB_MENTIONS)
    chunks_of: dict[str, set[str]] = {}  # (as node keys: made in SQL, not in Python a chunk)
    for eid, cid in mentions:
        chunks_of.setdefault(eid, set()).add("c:" + cid)
    for eid, chunk_keys in conn.execute(
            "SELECT entity_id, json_group_array('c:' || chunk_id) FROM entity_mentions "
            "WHERE entity_id IN (SELECT value FROM json_each(?)) GROUP BY entity_id",
            (json.dumps(specific, ensure_ascii=False),)).fetchall():
        chunks_of.setdefault(eid, set()).update(json.loads(chunk_keys))
    for eid, cid in _titled(conn, entity_mentions):
        chunks_of.setdefault(eid, set()).add("c:" + cid)
    return _Subgraph(entity_mentions, chunks_of, relations)


def _reached(conn: Connection, named: dict[str, float], seed_chunks: set[str]):
    """(mentions of each entity the walk reaches, (entity, chunk) of each mention in a seed
    chunk, the relationships of the named entities as (source, target, weight, mentions,
    mentions))."""
    mentions = conn.execute(
        "SELECT em.entity_id, em.chunk_id, e.mentions FROM entity_mentions em "
        "JOIN entities e ON e.id = em.entity_id "
        "WHERE em.chunk_id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(seed_chunks)),)).fetchall()
    entity_mentions = {eid: m for eid, _, m in mentions}
    named_ids = json.dumps(sorted(named), ensure_ascii=False)
    for eid, m in conn.execute("SELECT id, mentions FROM entities WHERE id IN (SELECT value FROM json_each(?))",
                                    (named_ids,)).fetchall():
        entity_mentions[eid] = m
    # relationships of the named entities reach their neighbours (and between known ones)
    relations = conn.execute(
        "SELECT r.source_id, r.target_id, r.weight, s.mentions, t.mentions FROM relationships r "
        "JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
        "WHERE r.source_id IN (SELECT value FROM json_each(?1)) "
        "OR r.target_id IN (SELECT value FROM json_each(?1))", (named_ids,)).fetchall()
    for src, dst, _, ms, mt in relations:
        entity_mentions.setdefault(src, ms)
        entity_mentions.setdefault(dst, mt)
    return entity_mentions, [(eid, cid) for eid, cid, _ in mentions], relations


def _titled(conn: Connection, entity_mentions: dict[str, int]) -> list[tuple[str, str]]:
    """(entity, chunk) for the chunks of documents titled like one of the entities: an entity
    named like a document's title is what that document is about."""
    return conn.execute(
        "SELECT e.id, c.id FROM entities e JOIN documents d ON d.title = e.name COLLATE NOCASE "
        "JOIN chunks c ON c.document_id = d.id WHERE e.id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(entity_mentions), ensure_ascii=False),)).fetchall()


def _subgraph_edges(graph: _Subgraph, index: dict[str, int], total: int) -> tuple[list[tuple[int, int]], list[float]]:
    """The walk's weighted edges: entity-chunk edges weigh the entity's specificity,
    entity-entity edges the relationship's weight too. Nodes are numbered (in index, by key:
    "e:" entity id, "c:" chunk id) as the edges first name them, the entity-chunk edges in
    sorted order; those edges, a hundred thousand around a novel's hero, are numbered and
    weighed an entity at a time in C-level passes."""
    weight_of = {eid: specificity(m, total) for eid, m in graph.entity_mentions.items()}
    unknown = specificity(1, total)
    edges: list[tuple[int, int]] = []
    weights: list[float] = []
    for eid, keys in _chunks_by_entity(graph.entity_chunks):
        entity = index.setdefault("e:" + eid, len(index))
        new = [key for key in keys if key not in index]  # (an entity's keys are distinct)
        index.update(zip(new, range(len(index), len(index) + len(new))))
        edges += zip(repeat(entity), map(index.__getitem__, keys))
        weights += repeat(weight_of.get(eid) or unknown, len(keys))
    for src, dst, weight, _, _ in graph.relations:
        if src == dst or RELATION_WEIGHT <= 0:
            continue
        source = index.setdefault("e:" + src, len(index))
        target = index.setdefault("e:" + dst, len(index))
        edges.append((source, target))
        weights.append(RELATION_WEIGHT * math.log1p(weight) * min(weight_of[src], weight_of[dst]))
    return edges, weights


def _chunks_by_entity(chunks_of: dict[str, set[str]]) -> list[tuple[str, list[str]]]:
    """The entity-chunk edges in sorted order, grouped by entity (the chunks' keys share
    their prefix: sorted as the chunk ids): sorting each entity's chunks apart is several
    times faster than comparing a hundred thousand tuples."""
    return [(eid, sorted(chunks_of[eid])) for eid in sorted(chunks_of)]


def specificity(mentions: int, total: int) -> float:
    """IDF-like weight of an entity mentioned in `mentions` of `total` chunks."""
    return math.log(1 + total / max(1, mentions))


def _add_reset(reset: dict[int, float], weights: dict[str, float], share: float, node) -> None:
    total = sum(weights.values())
    if total <= 0:
        return
    for key, weight in weights.items():
        i = node(key)
        reset[i] = reset.get(i, 0.0) + share * weight / total
