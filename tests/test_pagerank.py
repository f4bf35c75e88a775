"""Personalized PageRank: the plain-Python and numpy paths give the same numbers, bit for bit."""
from __future__ import annotations

import math
import random

import igraph
import pytest

from conftest import ROOT
from tgr.offline.pagerank import _pagerank_numpy, _pagerank_python, personalized_pagerank


def random_graph(rng: random.Random):
    """A graph with self loops, repeated edges, nodes without edges and a sparse reset."""
    n = rng.randrange(1, 400)
    edges = [(rng.randrange(n), rng.randrange(n)) for _ in range(rng.randrange(0, 900))]
    weights = [rng.choice([1.0, rng.uniform(0.01, 5.0)]) for _ in edges]
    reset = [rng.choice([0.0, 0.0, 0.0, rng.random()]) for _ in range(n)]
    reset[rng.randrange(n)] = 1.0
    total = sum(reset)
    return n, edges, weights, [x / total for x in reset]


def test_python_and_numpy_paths_are_bit_identical():
    rng = random.Random(11)
    for _ in range(60):
        n, edges, weights, reset = random_graph(rng)
        python = _pagerank_python(n, edges, weights, reset, 0.35, 15)
        numpy = _pagerank_numpy(n, edges, weights, reset, 0.35, 15)
        assert python == numpy  # exact: which path runs never changes a ranking
        assert sum(python) == pytest.approx(1.0)


def test_the_result_is_personalized_pagerank():
    rng = random.Random(3)
    n, edges, weights, reset = random_graph(rng)
    theirs = igraph.Graph(n=n, edges=edges, directed=False).personalized_pagerank(
        damping=0.35, reset=reset, weights=weights)
    assert personalized_pagerank(n, edges, weights, reset, 0.35, iterations=40) == pytest.approx(theirs, abs=1e-9)


def test_edges_without_a_positive_finite_weight_carry_nothing():
    edges = [(0, 1), (1, 2), (2, 3), (0, 3)]
    clean = personalized_pagerank(4, edges[:2], [1.0, 2.0], [1.0, 0, 0, 0], 0.5)
    for bad in (0.0, -1.0, math.nan, math.inf):
        assert personalized_pagerank(4, edges, [1.0, 2.0, bad, bad], [1.0, 0, 0, 0], 0.5) == clean
    # a node whose only edge weighs nothing has no edge: its mass goes back to the seeds
    assert personalized_pagerank(2, [(0, 1)], [0.0], [1.0, 0], 0.5) == [1.0, 0.0]



def test_a_cold_walk_over_a_100m_stores_query_graph_does_not_import_numpy():
    """The local walks of a 100 M-character store have 2,000-6,000 edges: plain Python walks
    them in 10-50 ms, less than importing numpy (0.1-0.25 s) in a process that asks once."""
    import subprocess
    import sys

    script = ("import random, sys\n"
              "from tgr.offline.pagerank import personalized_pagerank\n"
              "rng = random.Random(1)\n"
              "edges = [(rng.randrange(5000), rng.randrange(5000)) for _ in range(6000)]\n"
              "personalized_pagerank(5000, edges, [1.0] * 6000, [1.0] + [0.0] * 4999, 0.35)\n"
              "print('numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "False"
