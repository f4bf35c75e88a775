"""Cluster stage: hierarchical Leiden, in-process (leidenalg on an igraph graph).

Level 0 is Leiden on the whole entity graph. Every community larger than
max_cluster_size is clustered again on its own subgraph, giving level 1 children with a
parent link, and so on. Seeded, on a graph built in a fixed order: the same graph always
gives the same communities. Isolated entities form singleton communities.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import igraph
import leidenalg

from .db import Connection, get_meta, set_meta, transaction

MAX_LEVELS = 8


@dataclass
class Community:
    id: str
    level: int
    parent_id: str | None
    members: list[str]
    is_leaf: bool = True


def hierarchical_leiden(nodes: list[str], edges: list[tuple[str, str, float]], *,
                        max_cluster_size: int = 10, seed: int = 42,
                        resolution: float = 1.0) -> list[Community]:
    """Communities of every level for the graph (nodes, weighted undirected edges)."""
    nodes = sorted(set(nodes))
    index = {n: i for i, n in enumerate(nodes)}
    graph = igraph.Graph(n=len(nodes))
    clean = sorted({(min(index[a], index[b]), max(index[a], index[b])): w
                    for a, b, w in edges if a in index and b in index and a != b}.items())
    graph.add_edges([pair for pair, _ in clean])
    graph.es["weight"] = [float(w) for _, w in clean]

    result: list[Community] = []
    everything = list(range(len(nodes)))
    frontier = [(None, _split(graph, everything, seed, resolution, whole=True))]
    level = 0
    while frontier and level < MAX_LEVELS:
        entries = [(group, parent) for parent, groups in frontier for group in groups]
        entries.sort(key=lambda gp: (gp[1] or "", -len(gp[0]), min(gp[0])))
        frontier = []
        for n, (group, parent) in enumerate(entries):
            community = Community(f"{level}.{n}", level, parent, [nodes[i] for i in sorted(group)])
            result.append(community)
            if len(group) > max_cluster_size:
                parts = _split(graph, group, seed, resolution, whole=False)
                if len(parts) > 1:
                    community.is_leaf = False
                    frontier.append((community.id, parts))
        level += 1
    return result


def _split(graph: igraph.Graph, members: list[int], seed: int, resolution: float,
           whole: bool) -> list[list[int]]:
    """Leiden on the subgraph of members; tries a finer resolution if it will not split."""
    if not members:
        return []
    sub = graph.induced_subgraph(sorted(members)) if not whole else graph
    local = sorted(members)
    if sub.ecount() == 0:
        return [[v] for v in local] if whole else [local]
    for attempt in range(4):
        partition = leidenalg.find_partition(
            sub, leidenalg.RBConfigurationVertexPartition, weights="weight",
            resolution_parameter=resolution * (2 ** attempt), n_iterations=-1, seed=seed)
        groups: dict[int, list[int]] = {}
        for vertex, label in enumerate(partition.membership):
            groups.setdefault(label, []).append(local[vertex])
        # a split into nothing but single nodes is no structure: treat as unsplittable
        if whole or (len(groups) > 1 and any(len(g) > 1 for g in groups.values())):
            return list(groups.values())
    return [local]


def stored_communities(conn: Connection) -> list[Community]:
    members: dict[str, list[str]] = {}
    for cid, eid in conn.execute("SELECT community_id, entity_id FROM community_members ORDER BY 1, 2"):
        members.setdefault(cid, []).append(eid)
    return [Community(cid, level, parent, members.get(cid, []), bool(leaf)) for cid, level, parent, leaf in
            conn.execute("SELECT id, level, parent_id, is_leaf FROM communities ORDER BY level, id")]


def cluster(conn: Connection, *, max_cluster_size: int = 10, seed: int = 42,
            resolution: float = 1.0, force: bool = False) -> dict:
    """Recompute communities; rewrites the tables only when the result changed."""
    nodes = [r[0] for r in conn.execute("SELECT id FROM entities")]
    edges = conn.execute("SELECT source_id, target_id, weight FROM relationships").fetchall()
    digest = hashlib.sha256(repr((max_cluster_size, seed, resolution, sorted(nodes), sorted(edges))).encode())
    signature = digest.hexdigest()
    if not force and get_meta(conn).get("clustered_graph") == signature:
        levels = dict(conn.execute("SELECT level, count(*) FROM communities GROUP BY level ORDER BY level"))
        return {"communities": sum(levels.values()), "levels": levels, "changed": False}  # same graph
    communities = hierarchical_leiden(nodes, edges, max_cluster_size=max_cluster_size,
                                      seed=seed, resolution=resolution)
    key = lambda cs: sorted((c.id, c.level, c.parent_id or "", tuple(c.members), c.is_leaf) for c in cs)
    changed = force or key(communities) != key(stored_communities(conn))
    if changed:
        with transaction(conn):
            conn.execute("DELETE FROM communities")  # cascades to members and reports
            conn.executemany(
                "INSERT INTO communities(id, level, parent_id, size, is_leaf) VALUES (?, ?, ?, ?, ?)",
                [(c.id, c.level, c.parent_id, len(c.members), int(c.is_leaf)) for c in communities])
            conn.executemany(
                "INSERT INTO community_members(community_id, entity_id) VALUES (?, ?)",
                [(c.id, m) for c in communities for m in c.members])
            # what produced the stored communities, for people reading meta with sqlite3
            set_meta(conn, max_cluster_size=max_cluster_size, cluster_seed=seed,
                     cluster_resolution=resolution, clustered_graph=signature)
    else:
        with transaction(conn):
            # what produced the stored communities, for people reading meta with sqlite3
            set_meta(conn, max_cluster_size=max_cluster_size, cluster_seed=seed,
                     cluster_resolution=resolution, clustered_graph=signature)
    levels: dict[int, int] = {}
    for c in communities:
        levels[c.level] = levels.get(c.level, 0) + 1
    return {"communities": len(communities), "levels": levels, "changed": changed}
