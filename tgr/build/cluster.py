"""Cluster stage: hierarchical Leiden, in-process (leidenalg on an igraph graph).

Level 0 is Leiden on each connected component of the entity graph. Every community
larger than max_cluster_size is clustered again on its own subgraph, giving level 1
children with a parent link, and so on. Seeded, on subgraphs built in a fixed order: the
same component always gives the same communities, whatever else the graph holds, so an
unrelated addition leaves them alone. Isolated entities form singleton communities.

After a change, only the connected components holding a changed entity are clustered
again; when the merge has a description-summary wave to wait for, that clustering runs in
the wait (cluster_future_graph, scheduled by tgr/build/idle_work.py) and is used only if its inputs
are exactly those cluster() sees.

Community ids follow their members: after re-clustering, a community keeps the id of
the previous community it shares a majority of members with (both ways); others get a
new number never used before at their level. Reports, ratings, vectors and citations of
communities that survive are therefore kept.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # igraph and leidenalg are imported when clustering
    import igraph

from . import stage_inputs as freshness
from ..store.db import Connection, get_meta, set_meta, transaction
from .stage_inputs import InputHash

MAX_LEVELS = 8


@dataclass
class Community:
    id: str
    level: int
    parent_id: str | None
    members: list[str]
    is_leaf: bool = True


@dataclass
class Graph:
    """The undirected graph Leiden is given: sorted nodes, and each connected pair once as
    positions lo < hi in nodes, sorted, with its weight (numpy arrays)."""
    nodes: list[str]
    lo: "np.ndarray"
    hi: "np.ndarray"
    w: "np.ndarray"
    # each node's connected component (any labels), when known: found once for the whole graph
    component: "np.ndarray | None" = field(default=None, compare=False, repr=False)

    @classmethod
    def from_edges(cls, nodes: list[str], edges: list[tuple[str, str, float]]) -> "Graph":
        """nodes and edges (a, b, weight); self-loops and edges to unknown nodes are left out,
        and a pair given more than once keeps the weight given last."""
        nodes = sorted(set(nodes))
        index = {n: i for i, n in enumerate(nodes)}
        edges = [(index[a], index[b], w) for a, b, w in edges if a in index and b in index]
        return cls.from_positions(nodes, *_columns(edges))

    @classmethod
    def from_positions(cls, nodes: list[str], source, target, weight) -> "Graph":
        """nodes (sorted, distinct) and edges as positions in nodes, in the order given (the
        last weight given for a pair is kept)."""
        import numpy as np

        lo, hi = np.minimum(source, target), np.maximum(source, target)
        keep = lo != hi
        lo, hi, w = lo[keep], hi[keep], np.asarray(weight, dtype=float)[keep]
        order = np.argsort(lo * len(nodes) + hi, kind="stable")  # by (lo, hi); a pair's edges in the order given
        lo, hi, w = lo[order], hi[order], w[order]
        last = np.ones(len(lo), dtype=bool)
        last[:-1] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        return cls(nodes, lo[last], hi[last], w[last])

    @classmethod
    def read(cls, conn: Connection, among: set[str] | None = None) -> "Graph":
        """The stored entity graph (a pair stored more than once keeps the weight of the
        last of its rows in sorted (source, target, weight) order), or its subgraph of the
        stored entities among (the graph read whole, then within(among), gives the same)."""
        import numpy as np

        if among is None:
            nodes = sorted(r[0] for r in conn.execute("SELECT id FROM entities").fetchall())
            rows = conn.execute("SELECT source_id, target_id, weight FROM relationships").fetchall()
        else:
            nodes = sorted(among)
            args = (json.dumps(nodes),)
            rows = conn.execute("SELECT source_id, target_id, weight FROM relationships "
                                f"WHERE source_id {_IN} AND target_id {_IN}", args * 2).fetchall()
        get = {n: i for i, n in enumerate(nodes)}.get
        source = np.array([get(r[0], -1) for r in rows], dtype=np.int64)
        target = np.array([get(r[1], -1) for r in rows], dtype=np.int64)
        weight = np.array([r[2] for r in rows], dtype=float)
        known = (source >= 0) & (target >= 0)  # a relationship to an entity not stored is left out
        source, target, weight = source[known], target[known], weight[known]
        # the rows' sorted (source, target, weight) order: positions follow the names
        order = np.lexsort((weight, source * len(nodes) + target))
        return cls.from_positions(nodes, source[order], target[order], weight[order])

    def within(self, keep: "np.ndarray") -> "Graph":
        """The subgraph of the nodes where keep is true."""
        import numpy as np

        position = np.cumsum(keep) - 1
        inside = keep[self.lo] & keep[self.hi]
        return Graph([n for n, k in zip(self.nodes, keep.tolist()) if k], position[self.lo[inside]],
                     position[self.hi[inside]], self.w[inside])

    def pairs(self) -> list[tuple[int, int]]:
        return list(zip(self.lo.tolist(), self.hi.tolist()))

    def induced(self, members: list[int]) -> "Graph":
        """The subgraph of members (sorted positions; its nodes are these positions), its edges
        in the order igraph's induced_subgraph gives them (Leiden is given the same graph as when
        it was cut from an igraph one): the graph's order when members are more than half the
        nodes, else by (hi, lo). Read through each member's edges, not every edge."""
        import numpy as np

        members = np.asarray(members, dtype=np.int64)
        offsets = self._offsets()
        starts, counts = offsets[members], offsets[members + 1] - offsets[members]
        edges = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        position = np.full(len(self.nodes), -1, dtype=np.int64)
        position[members] = np.arange(len(members))
        lo, hi = position[self.lo[edges]], position[self.hi[edges]]
        inside = hi >= 0  # (lo is a member: its edges were read)
        lo, hi, w = lo[inside], hi[inside], self.w[edges[inside]]
        if 2 * len(members) <= len(self.nodes):
            order = np.argsort(hi, kind="stable")
            lo, hi, w = lo[order], hi[order], w[order]
        return Graph(members.tolist(), lo, hi, w)

    def _offsets(self) -> "np.ndarray":
        """Where each node's edges (as lo) start in lo, and where the last ends (lo ascending, as
        from_positions and within leave it; a subgraph induced from half the nodes or fewer is not)."""
        import numpy as np

        if getattr(self, "_starts", None) is None:
            if len(self.lo) and bool((self.lo[1:] < self.lo[:-1]).any()):
                raise ValueError("the graph's edges are not in order of lo")
            self._starts = np.searchsorted(self.lo, np.arange(len(self.nodes) + 1))
        return self._starts

    def igraph(self) -> "igraph.Graph":
        """The graph as igraph's, each edge's weight in "weight"."""
        import igraph

        graph = igraph.Graph(n=len(self.nodes), edges=self.pairs())
        graph.es["weight"] = self.w.tolist()
        return graph

    def components(self) -> list[list[int]]:
        """The connected components (sorted positions), by their first node."""
        import numpy as np

        if self.component is None:
            labels = np.array(igraph_components(len(self.nodes), self.pairs()), dtype=np.int64)
        else:
            labels = np.asarray(self.component)
        order = np.argsort(labels, kind="stable")
        cuts = np.flatnonzero(np.diff(labels[order])) + 1
        return sorted((part.tolist() for part in np.split(order, cuts)) if len(order) else [], key=lambda c: c[0])

    def hash(self, max_cluster_size: int, seed: int, resolution: float) -> str:
        """Hash of the graph with the clustering settings."""
        inputs = InputHash("cluster", max_cluster_size, seed, resolution).rows((n,) for n in self.nodes)
        return inputs.add("edges", self.lo.tobytes(), self.hi.tobytes(), self.w.tobytes()).hexdigest()


def _columns(edges: list[tuple[int, int, float]]):
    import numpy as np

    if not edges:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    source, target, weight = zip(*edges)
    return np.array(source, dtype=np.int64), np.array(target, dtype=np.int64), np.array(weight, dtype=float)


def hierarchical_leiden(nodes: list[str], edges: list[tuple[str, str, float]], *,
                        max_cluster_size: int = 10, seed: int = 42, resolution: float = 1.0,
                        previous: dict[int, dict[str, str]] | None = None,
                        unchanged: set[str] | None = None) -> list[Community]:
    """Communities of every level for the graph (nodes, weighted undirected edges); see
    cluster_graph."""
    return cluster_graph(Graph.from_edges(nodes, edges), max_cluster_size=max_cluster_size, seed=seed,
                         resolution=resolution, previous=previous, unchanged=unchanged)


def cluster_graph(entity_graph: Graph, *, max_cluster_size: int = 10, seed: int = 42, resolution: float = 1.0,
                  previous: dict[int, dict[str, str]] | None = None,
                  unchanged: set[str] | None = None) -> list[Community]:
    """Communities of every level for the graph.

    previous: level -> entity -> community id of an earlier clustering; Leiden then starts
    from that membership (new entities alone), so a small change moves few nodes.
    unchanged: entities whose edges are known to be the same as when previous was computed
    with these settings; a group made only of them that previous already split (or left
    whole) is split the same way again without running Leiden, and in a group that Leiden
    must split again they keep their previous community: only new and changed entities
    move (a community left in pieces is split into them).
    """
    previous = previous or {}
    unchanged = unchanged or set()
    sizes: Counter = Counter()  # community id -> members (ids carry their level: unique)
    for groups in previous.values():
        sizes.update(groups.values())
    nodes = entity_graph.nodes
    # the positions of new and changed entities (few): every other one is unchanged
    moved = {i for i, n in enumerate(nodes) if n not in unchanged}

    result: list[Community] = []
    top: list[list[int]] = []
    for component in entity_graph.components():
        if len(component) == 1:
            top.append(component)
            continue
        kept = _kept(component, nodes, {}, previous.get(0), sizes, bool(unchanged), moved, whole=True)
        top.extend(kept if kept is not None else _split(entity_graph, component, seed, resolution, whole=True,
                                                        start=_start(component, nodes, previous.get(0), moved, sizes)))
    frontier = [(None, top)] if top else []
    level = 0
    while frontier and level < MAX_LEVELS:
        entries = [(group, parent) for parent, groups in frontier for group in groups]
        entries.sort(key=lambda gp: (gp[1] or "", -len(gp[0]), min(gp[0])))
        frontier = []
        for n, (group, parent) in enumerate(entries):
            community = Community(f"{level}.{n}", level, parent, list(map(nodes.__getitem__, sorted(group))))
            result.append(community)
            if len(group) > max_cluster_size:
                members = sorted(group)
                parts = _kept(members, nodes, previous.get(level, {}), previous.get(level + 1), sizes,
                              bool(unchanged), moved, whole=False)
                if parts is None:
                    parts = _split(entity_graph, members, seed, resolution, whole=False,
                                   start=_start(members, nodes, previous.get(level + 1), moved, sizes))
                if len(parts) > 1:
                    community.is_leaf = False
                    frontier.append((community.id, parts))
        level += 1
    return result


def _kept(members: list[int], nodes: list[str], outer: dict[str, str], inner: dict[str, str] | None,
          sizes: dict[str, int], known: bool, moved: set[int], whole: bool) -> list[list[int]] | None:
    """The previous split of members, if it still holds: every member unchanged (known: which
    entities are unchanged is known; moved: the positions of those that are not), and the
    members are exactly one previous group (for a component: exactly whole previous
    communities). None when Leiden must run."""
    if not known or not moved.isdisjoint(members):
        return None
    inner = inner or {}
    names = [nodes[i] for i in members]
    if not whole:  # one previous group, whole
        outer_ids = set(map(outer.get, names))
        if len(outer_ids) != 1 or None in outer_ids or sizes[next(iter(outer_ids))] != len(members):
            return None
    inner_ids = list(map(inner.get, names))
    if None in inner_ids:  # a member no previous group of the level below holds
        return [members] if not whole and not any(map(inner.__contains__, names)) else None  # left whole
    groups: dict[str, list[int]] = {}
    for i, group in zip(members, inner_ids):
        groups.setdefault(group, []).append(i)
    if whole:  # a component: its previous level-0 communities must cover exactly these members
        return list(groups.values()) if all(sizes[g] == len(v) for g, v in groups.items()) else None
    return list(groups.values())


def _start(members: list[int], nodes: list[str], previous: dict[str, str] | None,
           moved: set[int], sizes: dict[str, int]) -> tuple[list[int], list[bool], set[int]] | None:
    """An initial membership for Leiden on members (sorted): their previous communities,
    each new node on its own; which members are fixed there (unchanged ones that had a
    community; moved: the positions of the others); and the labels of the previous
    communities whose members (sizes: how many each had) are all here, fixed. None when
    there is nothing to start from."""
    if not previous:
        return None
    labels: dict[str, int] = {}
    start, fixed = [], []
    held: Counter = Counter()
    for i in members:
        old = previous.get(nodes[i])
        start.append(labels.setdefault(old or f"new:{i}", len(labels)))
        fixed.append(old is not None and i not in moved)
        if fixed[-1]:
            held[old] += 1
    return start, fixed, {labels[old] for old, count in held.items() if count == sizes[old]}


def _split(graph: Graph, members: list[int], seed: int, resolution: float,
           whole: bool, start: tuple[list[int], list[bool], set[int]] | None = None) -> list[list[int]]:
    """Leiden on the subgraph of members (positions in graph; from the membership start, with
    its fixed members, if given); tries a finer resolution if it will not split."""
    if not members:
        return []
    local = sorted(members)
    if whole and len(local) == 2 and resolution < 2 and (start is None or not any(start[1])):
        # a component of two entities (one edge, weight w): joining them gains w(1 - resolution/2)
        # in the RB configuration quality, so Leiden always joins them (~100 such components in
        # 西游记's graph, each a Leiden call otherwise)
        return [local]
    sub = graph.induced(local)
    if len(sub.lo) == 0:
        return [[v] for v in local] if whole else [local]
    for attempt in range(4):
        membership = _leiden(sub, seed, resolution * (2 ** attempt), start)
        groups: dict[int, list[int]] = {}
        for vertex, label in enumerate(membership):
            groups.setdefault(label, []).append(local[vertex])
        # a split into nothing but single nodes is no structure: treat as unsplittable
        if whole or (len(groups) > 1 and any(len(g) > 1 for g in groups.values())):
            return list(groups.values())
    return [local]


def _leiden(sub: Graph, seed: int, resolution: float,
            start: tuple[list[int], list[bool], set[int]] | None) -> list[int]:
    """Leiden's membership of the subgraph's vertices. From a start with fixed members,
    only the others move, and a community that is no longer connected (an entity that held
    it together deleted or changed) becomes one community per connected piece."""
    import leidenalg

    if start is None or not any(start[1]):
        return leidenalg.find_partition(
            sub.igraph(), leidenalg.RBConfigurationVertexPartition, weights="weight", resolution_parameter=resolution,
            n_iterations=-1, seed=seed, initial_membership=start[0] if start else None).membership
    collapsed, node, initial, fixed = _collapsed(sub, start[0], start[1])
    partition = leidenalg.RBConfigurationVertexPartition(collapsed, initial_membership=initial, weights="weight",
                                                         resolution_parameter=resolution)
    optimiser = leidenalg.Optimiser()
    optimiser.set_rng_seed(seed)
    optimiser.optimise_partition(partition, n_iterations=-1, is_membership_fixed=fixed)
    membership = [partition.membership[n] for n in node]
    # a previous community whose members are all here and fixed, and that no free member joined,
    # is still connected (their edges are what they were when it was found connected): only the
    # others are looked at
    whole = start[2]
    kept = {membership[v] for v, label in enumerate(start[0]) if label in whole}
    kept -= {membership[v] for v, keep in enumerate(start[1]) if not keep}
    return _connected_pieces(sub, membership, set(membership) - kept)


def _collapsed(sub: Graph, labels: list[int], fixed: list[bool]):
    """The graph Leiden is given when some members are fixed: the fixed members of each start
    community made one node (its internal weight a self-loop), the others as they are. Leiden's
    quality (RB configuration) and every move open to the free members are the same as on the
    whole subgraph, at a cost that no longer grows with the fixed part. Returns (graph, each
    vertex's node, the nodes' start membership, which nodes are fixed)."""
    import igraph
    import numpy as np

    labels, free = np.asarray(labels, dtype=np.int64), ~np.asarray(fixed, dtype=bool)
    held = np.unique(labels[~free])  # start communities with fixed members: a node each
    node = np.empty(len(labels), dtype=np.int64)
    node[~free] = np.searchsorted(held, labels[~free])
    node[free] = len(held) + np.arange(int(free.sum()))
    count = len(held) + int(free.sum())
    a, b = node[sub.lo], node[sub.hi]
    keys, where = np.unique(np.minimum(a, b) * count + np.maximum(a, b), return_inverse=True)
    weights = np.bincount(where.ravel(), weights=np.asarray(sub.w, dtype=float), minlength=len(keys))
    collapsed = igraph.Graph(n=count, edges=list(zip((keys // count).tolist(), (keys % count).tolist())))
    collapsed.es["weight"] = weights.tolist()
    start = np.concatenate([held, labels[free]])
    initial = np.unique(start, return_inverse=True)[1].ravel().tolist()
    return collapsed, node.tolist(), initial, [True] * len(held) + [False] * int(free.sum())


def _connected_pieces(sub: Graph, membership: list[int], check: set[int] | None = None) -> list[int]:
    """membership with each community (of check, if given) split into its connected pieces,
    numbered by community, then by their first vertex."""
    import numpy as np

    labels = np.asarray(membership, dtype=np.int64)
    checked = np.ones(len(labels), dtype=bool) if check is None else np.isin(labels, sorted(check))
    inner = (labels[sub.lo] == labels[sub.hi]) & checked[sub.lo]  # the edges inside a checked community
    piece = igraph_components(len(labels), list(zip(sub.lo[inner].tolist(), sub.hi[inner].tolist())))
    piece = np.where(checked, np.asarray(piece, dtype=np.int64), -1)
    order = np.lexsort((np.arange(len(labels)), labels))  # by community, then vertex
    keys = (labels[order] - labels.min()) * (len(labels) + 1) + piece[order] + 1
    _, first, which = np.unique(keys, return_index=True, return_inverse=True)
    pieces = np.empty(len(labels), dtype=np.int64)
    pieces[order] = np.argsort(np.argsort(first))[which.ravel()]  # each piece's number: where it comes first
    return pieces.tolist()


def igraph_components(count: int, pairs: list[tuple[int, int]]) -> list[int]:
    """Each of count vertices' connected component, given the edges as pairs."""
    import igraph

    return igraph.Graph(n=count, edges=pairs).connected_components().membership


_IN = "IN (SELECT value FROM json_each(?))"


def stored_communities(conn: Connection, holding: set[str] | None = None) -> list[Community]:
    """The stored communities (only those holding one of these entities, and those left with
    no members when their entities were deleted, if given)."""
    if holding is None:
        scope, args = "", ()
    else:
        scope = (f"WHERE id IN (SELECT community_id FROM community_members WHERE entity_id {_IN}) OR NOT EXISTS "
                 "(SELECT 1 FROM community_members m WHERE m.community_id = communities.id)")
        args = (json.dumps(sorted(holding)),)
    rows = conn.execute(f"SELECT id, level, parent_id, is_leaf FROM communities {scope} ORDER BY level, id",
                        args).fetchall()
    members = _members(conn, "" if holding is None else f"WHERE community_id {_IN}",
                       () if holding is None else (json.dumps([r[0] for r in rows]),))
    return [Community(cid, level, parent, members.get(cid, []), bool(leaf)) for cid, level, parent, leaf in rows]


JOINED_MEMBERS_BYTES = 32 << 20  # below SQLite's value length limit (tgr.store.hardening): one text per community


def _members(conn: Connection, where: str, args: tuple) -> dict[str, list[str]]:
    """community id -> its member ids, sorted (the rows of community_members matching where).
    Each community's ids come joined in one text (a row per member took twice the CPU at
    600 k rows), unless an id holds a NUL or is not text, or they could pass the length limit."""
    total = conn.execute("SELECT sum(length(CAST(entity_id AS BLOB)) + 1) FROM community_members "
                         f"{where}", args).fetchone()[0] or 0
    if total >= JOINED_MEMBERS_BYTES:
        return _member_rows(conn, where, args)
    members: dict[str, list[str]] = {}
    odd = []
    for cid, joined, count, texts in conn.execute(
            "SELECT community_id, group_concat(entity_id, char(0)), count(*), sum(typeof(entity_id) = 'text') "
            f"FROM community_members {where} GROUP BY community_id", args).fetchall():
        ids = joined.split("\0") if texts == count else []
        if len(ids) == count:
            ids.sort()  # (in the index's order already: a linear pass)
            members[cid] = ids
        else:
            odd.append(cid)
    if odd:
        members.update(_member_rows(conn, f"WHERE community_id {_IN}", (json.dumps(odd),)))
    return members


def _member_rows(conn: Connection, where: str, args: tuple) -> dict[str, list[str]]:
    members: dict[str, list[str]] = {}
    for cid, eid in conn.execute(f"SELECT community_id, entity_id FROM community_members {where} ORDER BY 1, 2",
                                 args).fetchall():
        members.setdefault(cid, []).append(eid)
    return members


def _affected(graph: Graph, changed: set[str], known: set[str]) -> tuple["np.ndarray", "np.ndarray"]:
    """Which nodes are in a connected component that holds a changed entity or one that no
    stored community holds (known: the entities a level-0 community holds), and each node's
    component."""
    import numpy as np

    membership = np.array(igraph_components(len(graph.nodes), graph.pairs()), dtype=np.int64)
    hit = np.zeros(len(graph.nodes) and int(membership.max()) + 1, dtype=bool)
    hit[[membership[i] for i, n in enumerate(graph.nodes) if n in changed or n not in known]] = True
    return hit[membership], membership


# (graph, previous partition, unchanged) -> communities computed earlier from exactly these, or None
Precomputed = Callable[[Graph, dict, "set[str] | None"], "list[Community] | None"]


def cluster(conn: Connection, *, max_cluster_size: int = 10, seed: int = 42,
            resolution: float = 1.0, force: bool = False, changed: set[str] | None = None,
            precomputed: Precomputed | None = None) -> dict:
    """Recompute communities when the graph or the settings changed; ids follow members.

    changed: entities whose rows or relationships changed since the stored communities
    were computed (None: unknown); every other entity is unchanged (see
    hierarchical_leiden). Only trusted when those used the same settings.

    precomputed(graph, previous, unchanged): communities computed earlier (while a
    model wait was in progress, see tgr/build/idle_work.py) from exactly these Leiden inputs, or
    None; Leiden runs here when it gives None.

    Only communities whose row or members changed are rewritten; a removed community's
    report goes with it (cascade)."""
    inputs = cluster_inputs(conn, max_cluster_size, seed, resolution)
    if not force and freshness.is_fresh(conn, "cluster", inputs):
        with transaction(conn):  # the merge may have changed what they name (their counts dropped)
            count_community_chunks(conn)
        levels = dict(conn.execute("SELECT level, count(*) FROM communities GROUP BY level ORDER BY level"))
        return {"communities": sum(levels.values()), "levels": levels, "changed": False,  # same graph
                "rewritten": 0, "removed": 0, "changed_ids": set(), "computed_meanwhile": False}
    settings = dict(max_cluster_size=max_cluster_size, seed=seed, resolution=resolution)
    graph, start, unchanged, previous, used = _leiden_inputs(conn, settings, force, changed)
    communities = precomputed(graph, start, unchanged) if precomputed else None
    computed_meanwhile = communities is not None
    if communities is None:
        communities = cluster_graph(graph, **settings, previous=start, unchanged=unchanged)
    if previous or used:  # numbers once given are never given again
        communities = stable_ids(communities, previous, used)
    for c in communities:
        used[c.level] = max(used.get(c.level, -1), _number(c.id))
    result = _store_communities(conn, communities, previous, used, settings, inputs)
    return {**result, "changed": force or result["changed"], "computed_meanwhile": computed_meanwhile}


def _leiden_inputs(conn: Connection, settings: dict, force: bool, changed: set[str] | None):
    """(graph, previous partition, unchanged entities) to give Leiden, the stored
    communities they replace, and the community numbers used so far per level."""
    meta = get_meta(conn)
    same_settings = _same_settings(meta, **settings)
    used = {int(k): v for k, v in json.loads(meta.get("community_ids_used", "{}")).items()}
    incremental = not force and same_settings and changed is not None
    scoped = _local_components(conn, changed) if incremental else None
    if scoped is None:  # (the changed entities' components are large, or clustering starts afresh)
        graph = Graph.read(conn)
        scoped = _changed_components(conn, graph, changed) if incremental else None
    if scoped is not None:
        graph, previous = scoped
        for level, number in conn.execute(
                "SELECT level, max(CAST(substr(id, instr(id, '.') + 1) AS INTEGER)) FROM communities "
                "GROUP BY level").fetchall():
            used[level] = max(used.get(level, -1), number)
    else:
        previous = stored_communities(conn)
    start = _membership(previous) if not force else {}  # force: Leiden from scratch
    unchanged = set(graph.nodes) - changed if (start and same_settings and changed is not None) else None
    return graph, start, unchanged, previous, used


def _store_communities(conn: Connection, communities: list[Community], previous: list[Community],
                       used: dict[int, int], settings: dict, inputs: str) -> dict:
    """Write the communities whose row or members changed, remove those gone, record the inputs."""
    old = {c.id: c for c in previous}
    row = lambda c: (c.level, c.parent_id, len(c.members), int(c.is_leaf))
    # stored sizes too: a member deleted with its entity (cascade) leaves the size column behind
    stored_size = dict(conn.execute("SELECT id, size FROM communities").fetchall())
    changed_rows = [c for c in communities if c.id not in old or row(old[c.id]) != row(c)
                    or stored_size.get(c.id) != len(c.members)]
    changed_members = [c for c in communities if c.id not in old or old[c.id].members != c.members]
    gone = set(old) - {c.id for c in communities}
    with transaction(conn):
        conn.executemany(  # parents first: levels ascend in communities
            "INSERT INTO communities(id, level, parent_id, size, is_leaf) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET level = excluded.level, parent_id = excluded.parent_id, "
            "size = excluded.size, is_leaf = excluded.is_leaf",
            [(c.id, *row(c)) for c in sorted(changed_rows, key=lambda c: c.level)])
        left, joined = _member_changes(changed_members, old)
        conn.executemany("DELETE FROM community_members WHERE community_id = ? AND entity_id = ?", left)
        conn.executemany("DELETE FROM community_members WHERE community_id = ?",
                         [(c.id,) for c in changed_members if c.id not in old])
        conn.executemany("INSERT INTO community_members(community_id, entity_id) VALUES (?, ?)", joined)
        conn.executemany("DELETE FROM communities WHERE id = ?", [(cid,) for cid in sorted(gone)])
        count_community_chunks(conn)
        # what produced the stored communities, for people reading meta with sqlite3
        set_meta(conn, max_cluster_size=settings["max_cluster_size"], cluster_seed=settings["seed"],
                 cluster_resolution=settings["resolution"], cluster_library=_leiden_library(),
                 community_ids_used=json.dumps({str(k): v for k, v in sorted(used.items())}))
        freshness.record(conn, "cluster", inputs)
    levels = dict(conn.execute("SELECT level, count(*) FROM communities GROUP BY level ORDER BY level").fetchall())
    touched = {c.id for c in changed_rows + changed_members}
    return {"communities": sum(levels.values()), "levels": levels,
            "changed": bool(changed_rows or changed_members or gone),
            "rewritten": len(touched), "removed": len(gone), "changed_ids": touched}


def _member_changes(changed: list[Community], old: dict[str, Community]) -> tuple[list[tuple], list[tuple]]:
    """The (community, entity) rows to delete and to insert so that the stored members of the
    changed communities become theirs: of a community stored before (old, as read), only the
    members that left and those that joined (a large community gaining one entity rewrote
    thousands of rows, each through the digest's and community_chunks' triggers)."""
    left, joined = [], []
    for c in changed:
        before = set(old[c.id].members) if c.id in old else set()
        now = set(c.members)
        left += [(c.id, m) for m in sorted(before - now)]
        joined += [(c.id, m) for m in c.members if m not in before]
    return left, joined


def count_community_chunks(conn: Connection) -> int:
    """Write how many chunks mention a member of each community that has no count (a new
    one, or one whose members or their mentions changed: schema.sql's triggers drop its
    count), for global search (tgr/query/topic_evidence.py). Returns how many were written."""
    return conn.execute(
        "INSERT INTO community_chunks(community_id, chunks) SELECT c.id, "
        "(SELECT count(DISTINCT em.chunk_id) FROM community_members m "
        "JOIN entity_mentions em ON em.entity_id = m.entity_id WHERE m.community_id = c.id) "
        "FROM communities c WHERE NOT EXISTS (SELECT 1 FROM community_chunks k WHERE k.community_id = c.id) "
        "ORDER BY c.id").rowcount


@lru_cache(maxsize=1)
def _leiden_library() -> str:
    """The Leiden implementation and its version (communities differ between releases): the
    package's own __version__ (importlib.metadata's lookup walks sys.path's installed packages,
    ~0.05-0.1 CPU-s of a one-document add), the same string its distribution records."""
    import leidenalg

    return f"leidenalg {leidenalg.__version__}"


def _same_settings(meta: dict, max_cluster_size: int, seed: int, resolution: float) -> bool:
    """Were the stored communities computed with these settings?"""
    return (meta.get("max_cluster_size"), meta.get("cluster_seed"), meta.get("cluster_resolution")) == \
        (str(max_cluster_size), str(seed), str(resolution))


def _membership(communities: list[Community]) -> dict[int, dict[str, str]]:
    """level -> entity -> community id."""
    start: dict[int, dict[str, str]] = {}
    for c in communities:
        start.setdefault(c.level, {}).update(dict.fromkeys(c.members, c.id))
    return start


def _changed_components(conn: Connection, graph: Graph, changed: set[str] | None):
    """(graph, stored communities) of the connected components that hold a changed entity,
    or None when everything is to be clustered. Components without a changed entity keep
    their communities as stored, which is what Leiden from the previous partition would
    give them."""
    if changed is None:
        return None
    stored = stored_communities(conn)  # one read of them all: cheaper than picking the scope's
    known = set().union(*(c.members for c in stored if c.level == 0))
    if not known:
        return None
    keep, component = _affected(graph, changed, known)
    scoped = graph.within(keep)
    scoped.component = component[keep]  # (cluster_graph needs them: found once)
    scope = set(scoped.nodes)
    gone = changed - set(graph.nodes)
    previous = [c for c in stored if not c.members or not scope.isdisjoint(c.members)
                or not gone.isdisjoint(c.members)]
    inside = scope | gone if gone else scope
    if not all(map(inside.issuperset, (c.members for c in previous))):
        return None  # stored communities that straddle components: cluster everything
    return scoped, previous  # edges stay inside a component


LOCAL_SCOPE = 2_000  # entities: the changed ones' components, when larger, are found on the whole graph


def _local_components(conn: Connection, changed: set[str], limit: int = LOCAL_SCOPE):
    """What _changed_components gives, found from the changed entities through the
    relationship indexes without reading the whole graph: None when their components hold
    more than limit entities (most of a large store is one component: reading the graph whole
    is cheaper then), or when _changed_components would need the whole graph."""
    existing = lambda ids: {r[0] for r in conn.execute(  # noqa: E731
        f"SELECT id FROM entities WHERE id {_IN}", (json.dumps(sorted(ids)),)).fetchall()}
    frontier = existing(changed)
    scope = set(frontier)
    if len(scope) > limit:
        return None
    while frontier:  # breadth first, through the stored entities only (as Graph.read keeps edges)
        rows = conn.execute(  # (a neighbour once per relationship: so many rows end the search early)
            f"SELECT target_id FROM relationships WHERE source_id {_IN} UNION ALL "
            f"SELECT source_id FROM relationships WHERE target_id {_IN} LIMIT ?",
            (json.dumps(sorted(frontier)),) * 2 + (4 * limit,)).fetchall()
        found = {r[0] for r in rows} - scope
        if len(rows) == 4 * limit or len(scope) + len(found) > limit:
            return None
        frontier = existing(found)
        scope |= frontier
    gone = changed - existing(changed)
    previous = stored_communities(conn, scope | gone)
    level_zero = {m for c in previous if c.level == 0 for m in c.members}
    known = conn.execute("SELECT count(DISTINCT m.entity_id) FROM community_members m JOIN communities c "
                         "ON c.id = m.community_id JOIN entities e ON e.id = m.entity_id WHERE c.level = 0").fetchone()[0]
    entities = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
    # every entity no level-0 community holds is in the scope (its component is clustered too)
    if not known or entities - known != len(scope - level_zero):
        return None
    if not all(m in scope or m in gone for c in previous for m in c.members):
        return None  # stored communities that straddle components: cluster everything
    return Graph.read(conn, scope), previous


def leiden_key(graph: Graph, start, unchanged, settings: dict) -> str:
    """Hash of everything cluster_graph is given."""
    digest = InputHash(sorted(settings.items()), graph.hash(**settings))
    digest.rows((level, sorted(groups.items())) for level, groups in sorted(start.items()))
    return digest.add(sorted(unchanged) if unchanged is not None else None).hexdigest()


def cluster_future_graph(conn: Connection, settings: dict, recomputed: set[str], nodes: list[str],
                         edges: list[tuple[str, str, float]], changed: set[str]):
    """Cluster the graph a merge is about to store (it replaces the entities recomputed, and
    every edge touching them, by nodes and edges; changed: what it will say changed), as
    cluster() would once it is stored. Returns (leiden_key of the inputs, communities), or
    None when cluster() would not cluster incrementally. cluster() takes the result only
    when its own Leiden inputs have that key, so the outcome never depends on timing."""
    stored_nodes, stored_edges = _graph(conn)
    graph_nodes = sorted((set(stored_nodes) - recomputed) | set(nodes))
    graph_edges = sorted([e for e in stored_edges if e[0] not in recomputed and e[1] not in recomputed]
                         + [tuple(e) for e in edges])
    scoped = _changed_components(conn, Graph.from_edges(graph_nodes, graph_edges), changed)
    if scoped is None:
        return None
    graph, previous = scoped
    start = _membership(previous)
    unchanged = set(graph.nodes) - changed
    return (leiden_key(graph, start, unchanged, settings),
            cluster_graph(graph, **settings, previous=start, unchanged=unchanged))


def _graph(conn: Connection) -> tuple[list[str], list[tuple[str, str, float]]]:
    """The entity graph: sorted nodes and weighted edges."""
    nodes = sorted(r[0] for r in conn.execute("SELECT id FROM entities").fetchall())
    edges = sorted(conn.execute("SELECT source_id, target_id, weight FROM relationships").fetchall())
    return nodes, edges


def cluster_inputs(conn: Connection, max_cluster_size: int, seed: int, resolution: float) -> str:
    """Hash of what clustering reads: the settings and the graph, named by the merge's
    freshness hash (every entity's input hash), so that no stage rereads the graph to see
    whether it changed."""
    return InputHash("cluster", max_cluster_size, seed, resolution, freshness.recorded(conn, "merge")).hexdigest()


def graph_hash(nodes: list[str], edges: list[tuple[str, str, float]], max_cluster_size: int, seed: int,
               resolution: float) -> str:
    """Hash of a graph (nodes, edges, as Leiden is given them) with the clustering settings."""
    return Graph.from_edges(nodes, edges).hash(max_cluster_size, seed, resolution)


def is_clustered(conn: Connection, *, max_cluster_size: int = 10, seed: int = 42, resolution: float = 1.0) -> bool:
    """Were the stored communities computed from the graph as it is now?"""
    return freshness.is_fresh(conn, "cluster", cluster_inputs(conn, max_cluster_size, seed, resolution))


def _number(community_id: str) -> int:
    try:
        return int(community_id.split(".", 1)[1])
    except (IndexError, ValueError):
        return -1


def stable_ids(new: list[Community], previous: list[Community], used: dict[int, int]) -> list[Community]:
    """new with ids taken over from previous where a community shares a majority of members
    with a previous one (both ways); the others get numbers above every one used (used:
    level -> highest number ever given, updated here)."""
    old_by_level: dict[int, list[Community]] = {}
    sizes = {c.id: len(c.members) for c in previous}
    for c in previous:
        old_by_level.setdefault(c.level, []).append(c)
        used[c.level] = max(used.get(c.level, -1), _number(c.id))
    rename: dict[str, str] = {}
    for level in sorted({c.level for c in new}):
        old = old_by_level.get(level, [])
        owner = {m: c for c in old for m in c.members}
        # a community with exactly the members of a previous one keeps its id (the majority
        # rule below gives the same when no entity is in two previous communities of the level)
        same = {tuple(c.members): c.id for c in old} if len(owner) == sum(len(c.members) for c in old) else {}
        for c in (c for c in new if c.level == level):
            if (kept := same.get(tuple(c.members))) is not None:
                rename[c.id] = kept
                continue
            overlap = Counter(owner[m].id for m in c.members if m in owner)
            best = min(overlap, key=lambda oid: (-overlap[oid], oid)) if overlap else None
            if best is not None:
                shared, size = overlap[best], sizes[best]
                if 2 * shared > len(c.members) and 2 * shared > size:
                    rename[c.id] = best
                    continue
            used[level] = used.get(level, -1) + 1
            rename[c.id] = f"{level}.{used[level]}"
    return [Community(rename[c.id], c.level, rename.get(c.parent_id) if c.parent_id else None,
                      c.members, c.is_leaf) for c in new]
