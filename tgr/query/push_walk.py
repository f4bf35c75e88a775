"""The local walk over a big subgraph: personalized PageRank by forward push (Andersen, Chung
and Lang 2006), reading each node's edges only when mass worth spreading reaches it.

Around a novel's hero at 100 M characters the walk's subgraph holds thousands of related
entities and a hundred thousand of their chunks (tgr.query.graph_walk), most of which receive a
millionth of the mass. Forward push keeps, for every node, a score p and a residual r (mass
not yet spread; at first the reset vector). Pushing a node moves (1 - damping) of its residual
into its score and spreads the rest over its edges by weight; a node is pushed while its
residual is at least EPSILON times its edges' total weight. The graph is the one the exact walk
builds, read lazily: a specific entity's chunks and a chunk's specific entities are read from
the store the first time the node is pushed, in one query a round. The result is the walk's
fixed point less what the unpushed residuals would still spread: each node's score is
p + (1 - damping) r.
"""
from __future__ import annotations

import json
import math

from ..store.db import Connection

EPSILON = 1e-6        # a node is pushed while its residual is at least this times its edges' weight
MAX_ROUNDS = 60       # rounds of pushes (each reads the edges of the nodes it pushes first)


class LazyGraph:
    """The walk's subgraph (tgr.query.graph_walk) with the edges read so far: each node key's
    ("e:" entity id, "c:" chunk id) neighbours and weights, and the nodes whose edges are all
    known (complete)."""

    def __init__(self, conn: Connection, weight_of: dict[str, float], specific: set[str]):
        self.conn = conn
        self.weight_of = weight_of   # entity id -> the weight of its entity-chunk edges
        self.specific = specific     # entity ids whose every chunk is in the subgraph
        self.edges: dict[str, dict[str, float]] = {}
        self.out: dict[str, float] = {}  # node key -> its known edges' total weight
        self.complete: set[str] = set()
        self.expected: dict[str, float] = {}  # node key -> its edges' total weight, as far as known before reading them

    def expect(self, mentions: dict[str, int]) -> None:
        """Expect each unread specific entity's edges to weigh what its known edges do plus an
        edge to each of its chunks not linked yet (mentions: entity id -> chunks it is in)."""
        for eid in self.specific:
            key = "e:" + eid
            if key not in self.complete:
                linked = sum(1 for other in self.edges.get(key, ()) if other[0] == "c")
                self.expected[key] = self.out.get(key, 0.0) + self.weight_of[eid] * max(0, mentions[eid] - linked)

    def weight(self, key: str) -> float:
        """A node's edges' total weight: as read, or as expected while unread."""
        return self.expected.get(key) or self.out.get(key, 0.0)

    def add_edge(self, a: str, b: str, weight: float) -> None:
        """One undirected edge (added to any edge between the two already known)."""
        if not 0 < weight < math.inf:
            return
        for x, y in ((a, b), (b, a)):
            edges = self.edges.setdefault(x, {})
            edges[y] = edges.get(y, 0.0) + weight
            self.out[x] = self.out.get(x, 0.0) + weight

    def link(self, entity: str, chunk_keys: list[str]) -> None:
        """An entity's edges to chunks (node keys), each once (the exact walk's chunk sets hold
        each chunk once)."""
        key, weight = "e:" + entity, self.weight_of[entity]
        if not 0 < weight < math.inf:
            return
        mine, edges, out = self.edges.setdefault(key, {}), self.edges, self.out
        new = [c for c in dict.fromkeys(chunk_keys) if c not in mine]
        mine.update(dict.fromkeys(new, weight))
        out[key] = out.get(key, 0.0) + weight * len(new)
        for chunk in new:
            edges.setdefault(chunk, {})[key] = weight
            out[chunk] = out.get(chunk, 0.0) + weight

    def read(self, keys: list[str]) -> None:
        """Make these nodes complete: a specific entity's chunks, a chunk's specific entities."""
        entities = sorted(k[2:] for k in keys if k[0] == "e" and k not in self.complete and k[2:] in self.specific)
        chunks = sorted(k[2:] for k in keys if k[0] == "c" and k not in self.complete)
        if entities:
            for eid, ids in self.conn.execute(
                    "SELECT entity_id, json_group_array('c:' || chunk_id) FROM entity_mentions "
                    "WHERE entity_id IN (SELECT value FROM json_each(?)) GROUP BY entity_id",
                    (json.dumps(entities, ensure_ascii=False),)).fetchall():
                self.link(eid, json.loads(ids))
        if chunks:
            specific, link = self.specific, self.link
            for cid, ids in self.conn.execute(
                    "SELECT chunk_id, json_group_array(entity_id) FROM entity_mentions "
                    "WHERE chunk_id IN (SELECT value FROM json_each(?)) GROUP BY chunk_id",
                    (json.dumps(chunks),)).fetchall():
                key = ["c:" + cid]
                for eid in json.loads(ids):
                    if eid in specific:
                        link(eid, key)
        self.complete.update(keys)
        for key in keys:
            self.expected.pop(key, None)


def push_walk(graph: LazyGraph, reset: dict[str, float], damping: float) -> dict[str, float]:
    """Personalized PageRank scores (node key -> score) of the lazily read graph, by forward
    push from the reset mass (normalised here)."""
    total = sum(reset.values())
    reset = {key: value / total for key, value in reset.items() if value > 0}
    residual = dict(reset)
    score: dict[str, float] = {}
    frontier = sorted(k for k in residual if residual[k] >= EPSILON * graph.weight(k))
    edges, out = graph.edges, graph.out
    for _ in range(MAX_ROUNDS):
        if not frontier:
            break
        graph.read([key for key in frontier if key not in graph.complete])
        touched: set[str] = set()
        for key in frontier:
            mass = residual[key]
            weight = out.get(key, 0.0)
            if mass < EPSILON * weight:
                continue
            residual[key] = 0.0
            score[key] = score.get(key, 0.0) + (1 - damping) * mass
            if weight > 0:
                targets, share = edges[key], damping * mass / weight
            else:  # a node without edges: its mass goes back to the reset distribution
                targets, share = reset, damping * mass
            for other, w in targets.items():
                residual[other] = residual.get(other, 0.0) + share * w
            touched.update(targets)
        # a node whose edges are not all known yet is read (and pushed) if its expected edges allow it
        frontier = sorted(k for k in touched if residual[k] > 0 and residual[k] >= EPSILON * graph.weight(k))
    for key, mass in residual.items():
        if mass > 0:
            score[key] = score.get(key, 0.0) + (1 - damping) * mass
    return score
