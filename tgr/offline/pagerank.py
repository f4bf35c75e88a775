"""Personalized PageRank of a query graph, in plain Python or with numpy: the same numbers.

Both paths add every node's incoming shares in the order of the edge list, so they give
bit-identical results and the choice between them is only a matter of speed. Importing numpy
costs a cold `tgr ask` (one walk) more than the walk over a small graph, so plain Python runs
unless numpy is already loaded (a local embedder imports it) and the graph is not tiny (most
of a report stage's communities are: there numpy's calls cost more than the walk), the graph is
large, or the caller asks for numpy: a long-lived process (an eval, a server, a notebook), where
the import (~0.1 s, once) soon costs less than the plain-Python walks it replaces (~3-5 ms each
against ~1 ms on the dev-set stores).
"""
from __future__ import annotations

import math
import sys
from itertools import chain

# a larger graph is worth importing numpy for: the plain-Python walk costs ~9 us an edge (25 ms
# at 4,000 edges, 52 ms at 5,800: the local walks of a 100 M-character store), the import
# 0.1-0.25 s, after which the walk is ~3 ms at that size
SMALL_GRAPH_EDGES = 15000
TINY_GRAPH_EDGES = 20     # up to this many edges plain Python walks faster than numpy's calls (~40 us against ~100)


def personalized_pagerank(n: int, edges: list[tuple[int, int]], weights: list[float],
                          reset: list[float], damping: float, iterations: int = 15, numpy: bool = False):
    """PageRank of an undirected weighted graph, following an edge with probability `damping`
    and jumping back to `reset` (normalised) otherwise; mass at a node without edges returns to
    the reset distribution. 15 power iterations leave an error below damping ** 15 (2e-7 at
    0.35). Edges without a positive finite weight are ignored. numpy: use it for a small graph
    too (the result is the same)."""
    total = sum(reset)
    r = [x / total for x in reset]
    if not all(0 < w < math.inf for w in weights):  # a store made elsewhere may hold anything
        kept = [(e, w) for e, w in zip(edges, weights) if 0 < w < math.inf]
        edges, weights = [e for e, _ in kept], [w for _, w in kept]
    if numpy or len(edges) > SMALL_GRAPH_EDGES or ("numpy" in sys.modules and len(edges) > TINY_GRAPH_EDGES):
        return _pagerank_numpy(n, edges, weights, r, damping, iterations)
    return _pagerank_python(n, edges, weights, r, damping, iterations)


def _pagerank_python(n: int, edges, weights, r: list[float], damping: float, iterations: int):
    out = [0.0] * n
    for (a, b), w in zip(edges, weights):
        out[a] += w
        out[b] += w
    links = [(a, b, w / out[a], w / out[b]) for (a, b), w in zip(edges, weights)]
    dangling = [i for i in range(n) if out[i] == 0]
    seeds = [(i, (1 - damping) * x, x) for i, x in enumerate(r) if x]
    p = list(r)
    for _ in range(iterations):
        spread = [0.0] * n
        for a, b, share_ab, share_ba in links:
            spread[b] += p[a] * share_ab
            spread[a] += p[b] * share_ba
        lost = sum(p[i] for i in dangling)
        # (1 - d) * r + d * (spread + lost * r) is exactly d * spread where r is 0
        p = [damping * x for x in spread]
        for i, base, x in seeds:
            p[i] = base + damping * (spread[i] + lost * x)
    return p


def _pagerank_numpy(n: int, edges, weights, r: list[float], damping: float, iterations: int):
    import numpy as np

    if not edges:
        return _pagerank_python(n, edges, weights, r, damping, iterations)
    # from the flat ends: converting each edge's tuple was most of this step for a hub's 150 k edges
    pairs = np.fromiter(chain.from_iterable(edges), dtype=np.int64, count=2 * len(edges)).reshape(-1, 2)
    # each edge both ways, in edge order (a->b, b->a, ...): bincount then adds a node's
    # shares in the same order as the Python path
    src = pairs.ravel()
    dst = pairs[:, ::-1].ravel()
    w = np.repeat(np.asarray(weights, dtype=np.float64), 2)
    out = np.bincount(src, weights=w, minlength=n)
    share = w / out[src]
    dangling = np.flatnonzero(out == 0)
    reset = np.asarray(r, dtype=np.float64)
    p = reset.copy()
    for _ in range(iterations):
        spread = np.bincount(dst, weights=p[src] * share, minlength=n)
        lost = sum(p[dangling].tolist())  # Python's sum, as in the Python path
        p = (1 - damping) * reset + damping * (spread + lost * reset)
    return p.tolist()
