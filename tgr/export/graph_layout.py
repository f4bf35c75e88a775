"""Positions for the graph page, computed once at export time so a 10,000-entity page opens fast.

The main component is laid out as groups: each top-level community is a disk whose area grows
with its size, the disks are placed by a force layout of the community-contracted graph (edge
weight = relationships between them) and then pushed apart until they do not overlap, and each
community's members are laid out inside its disk by a force layout of their own subgraph.
The other components (small islands, isolated entities) are packed in rows below, so fitting
the view to the main component (`Layout.view`) is not spoiled by a few far outliers.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import numpy as np

LAYOUT_SEED = 42
UNIT = 14.0             # world units per entity: a community of n members gets a disk of area ~ n * UNIT²
GAP = 0.35              # space kept between neighbouring disks, as a share of the smaller radius
MEMBER_ITERATIONS = 300
MAIN_SHARE = 0.3        # the first view fits the main component when it holds this share of entities ...
MAIN_MIN = 20           # ... and at least this many


@dataclass
class Layout:
    """x, y per entity (world units), whether it is in the main component, the disk of every
    laid-out group (community id -> (x, y, radius)) and the box the page fits at first."""

    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    main: list[bool] = field(default_factory=list)
    disks: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    view: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)


def compute_layout(count: int, edges: list[tuple[int, int, float]], groups: list[str | None],
                   seed: int = LAYOUT_SEED) -> Layout:
    """Lay out count entities joined by (i, j, weight) edges, grouped by groups[i] (their
    top-level community, or None)."""
    import igraph

    out = Layout(x=[0.0] * count, y=[0.0] * count, main=[False] * count)
    if count == 0:
        return out
    weights: dict[tuple[int, int], float] = {}
    for i, j, w in edges:
        if i != j:
            key = (min(i, j), max(i, j))
            weights[key] = weights.get(key, 0.0) + max(float(w), 0.1)
    graph = igraph.Graph(n=count, edges=list(weights))
    graph.es["weight"] = list(weights.values())
    rng = random.Random(seed)
    igraph.set_random_number_generator(rng)
    try:
        components = sorted(graph.connected_components(), key=lambda c: (-len(c), c[0]))
        main = components[0]
        for i in main:
            out.main[i] = True
        _lay_out_main(graph, main, groups, out, rng)
        _pack_islands(graph, components[1:], out)
    finally:
        igraph.set_random_number_generator(random)
    # the main component is fitted when it is a real share of the graph; a store that is
    # mostly small islands (a tiny demo) is fitted whole
    fitted = main if len(main) >= max(MAIN_SHARE * count, min(count, MAIN_MIN)) else range(count)
    xs = [out.x[i] for i in fitted]
    ys = [out.y[i] for i in fitted]
    out.view = (min(xs), min(ys), max(xs), max(ys))
    return out


def _lay_out_main(graph, main: list[int], groups: list[str | None], out: Layout, rng: random.Random) -> None:
    """Community disks placed by the contracted graph, members inside their disk."""
    members: dict[str, list[int]] = {}
    for i in main:
        members.setdefault(groups[i] or f"entity {i}", []).append(i)
    names = sorted(members, key=lambda g: (-len(members[g]), g))
    index = {g: k for k, g in enumerate(names)}
    group_of = {i: index[g] for g, ms in members.items() for i in ms}
    radius = np.array([UNIT * math.sqrt(len(members[g])) + UNIT for g in names])
    centres = _place_disks(graph, group_of, radius, main, rng)
    for g, k in index.items():
        cx, cy, r = float(centres[k, 0]), float(centres[k, 1]), float(radius[k])
        out.disks[g] = (round(cx, 1), round(cy, 1), round(r, 1))
        for i, (x, y) in zip(members[g], _inside_disk(graph, members[g], r - UNIT * 0.5)):
            out.x[i], out.y[i] = round(cx + x), round(cy + y)


def _place_disks(graph, group_of: dict[int, int], radius: np.ndarray, main: list[int],
                 rng: random.Random) -> np.ndarray:
    """Centres of the community disks: a force layout of the contracted graph, scaled so that
    linked disks sit near each other, then pushed apart until no two overlap."""
    import igraph

    n = len(radius)
    if n == 1:
        return np.zeros((1, 2))
    between: dict[tuple[int, int], float] = {}
    for edge in graph.es.select(_source_in=main):
        a, b = group_of[edge.source], group_of[edge.target]
        if a != b:
            key = (min(a, b), max(a, b))
            between[key] = between.get(key, 0.0) + edge["weight"]
    contracted = igraph.Graph(n=n, edges=list(between))
    weights = [math.log1p(w) for w in between.values()]
    start = [[rng.uniform(-1, 1), rng.uniform(-1, 1)] for _ in range(n)]
    if n > 1000:
        coords = contracted.layout_drl(weights=weights or None, seed=start)
    else:
        coords = contracted.layout_fruchterman_reingold(weights=weights or None, seed=start, niter=800)
    pos = np.array(coords.coords, dtype=float)
    pos -= pos.mean(axis=0)
    # scale: the typical distance between linked disks becomes the sum of their radii
    if between:
        pairs = np.array(list(between))
        dist = np.linalg.norm(pos[pairs[:, 0]] - pos[pairs[:, 1]], axis=1)
        want = radius[pairs[:, 0]] + radius[pairs[:, 1]]
        pos *= float(np.median(want / np.maximum(dist, 1e-9)))
    else:
        pos *= float(radius.sum()) / max(1.0, float(np.abs(pos).max()))
    return _separate(pos, radius)


def _separate(pos: np.ndarray, radius: np.ndarray, rounds: int = 120) -> np.ndarray:
    """Push overlapping disks apart."""
    n = len(radius)
    pos = pos.copy()
    for _ in range(rounds):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.sqrt((delta ** 2).sum(axis=2)) + np.eye(n)
        need = (radius[:, None] + radius[None, :]) * (1 + GAP) - dist
        np.fill_diagonal(need, 0.0)
        overlap = np.clip(need, 0.0, None)
        if not overlap.any():
            break
        # larger disks move less: their share of the push falls with their area
        mass = radius ** 2
        share = mass[None, :] / (mass[:, None] + mass[None, :])
        push = (delta / dist[:, :, None] * (overlap * share)[:, :, None]).sum(axis=1)
        pos += push
    pos -= pos.mean(axis=0)
    return pos


def _inside_disk(graph, members: list[int], radius: float) -> list[tuple[float, float]]:
    """Positions of members relative to their disk's centre: a force layout of their own
    subgraph, scaled into the disk (a lone member sits at the centre)."""
    if len(members) == 1:
        return [(0.0, 0.0)]
    sub = graph.induced_subgraph(members)
    if sub.ecount() == 0:
        return _sunflower(len(members), radius)
    coords = np.array(sub.layout_fruchterman_reingold(weights="weight", niter=MEMBER_ITERATIONS).coords)
    coords -= np.median(coords, axis=0)
    # a radial squash, so a few far members do not shrink the rest into a dot: the 90th
    # percentile distance lands at 0.9 of the radius and nothing lands outside the disk
    dist = np.sqrt((coords ** 2).sum(axis=1))
    d90 = float(np.quantile(dist, 0.9)) or 1.0
    squashed = radius * np.tanh(dist / d90 * math.atanh(0.9))
    coords *= (squashed / np.maximum(dist, 1e-9))[:, None]
    return [(float(x), float(y)) for x, y in coords]


def _sunflower(n: int, radius: float) -> list[tuple[float, float]]:
    """n points spread evenly over a disk (Vogel's spiral)."""
    golden = math.pi * (3 - math.sqrt(5))
    return [(radius * math.sqrt((k + 0.5) / n) * math.cos(k * golden),
             radius * math.sqrt((k + 0.5) / n) * math.sin(k * golden)) for k in range(n)]


def _pack_islands(graph, components: list[list[int]], out: Layout) -> None:
    """Small components in rows under the main one, largest first; isolated entities last,
    as one sunflower-filled block."""
    if not components:
        return
    xs = [out.x[i] for i, m in enumerate(out.main) if m]
    ys = [out.y[i] for i, m in enumerate(out.main) if m]
    left, right, top = min(xs), max(xs), max(ys) + UNIT * 6
    width = max(right - left, UNIT * 40)
    islands = [c for c in components if len(c) > 1]
    singles = [c[0] for c in components if len(c) == 1]
    cursor_x, cursor_y, row_height = left, top, 0.0
    for component in islands:
        r = UNIT * math.sqrt(len(component)) + UNIT * 0.5
        if cursor_x + 2 * r > left + width and cursor_x > left:
            cursor_x, cursor_y, row_height = left, cursor_y + row_height + UNIT, 0.0
        for i, (x, y) in zip(component, _inside_disk(graph, component, r)):
            out.x[i], out.y[i] = round(cursor_x + r + x), round(cursor_y + r + y)
        cursor_x += 2 * r + UNIT
        row_height = max(row_height, 2 * r)
    if singles:
        top = cursor_y + row_height + UNIT * 2
        per_row = max(1, int(width // (UNIT * 1.6)))
        for k, i in enumerate(singles):
            out.x[i] = round(left + (k % per_row) * UNIT * 1.6)
            out.y[i] = round(top + (k // per_row) * UNIT * 1.6)
