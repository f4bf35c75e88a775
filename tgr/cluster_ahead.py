"""Clustering ahead: run Leiden on the merged graph while the description-summary wave is
in flight, in a child process (Leiden holds the GIL, so a thread would stall the model calls).

Used only on a first clustering (no stored communities) of a large graph: there Leiden
needs nothing but the graph, which the merge knows before its summary wave. The result is
tagged with the hash of the graph it was computed from; cluster() uses it only when that
equals the hash of the graph as stored, and otherwise runs Leiden itself. Any failure of
the child (no spawn, a killed process) falls back the same way.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor

from .communities import Community, graph_hash, hierarchical_leiden

MIN_EDGES = 3000  # below this Leiden takes well under a second: not worth a process


def _leiden(nodes: list[str], edges: list[tuple[str, str, float]], settings: dict) -> tuple[str, list[Community]]:
    nodes, edges = sorted(nodes), sorted(edges)
    return graph_hash(nodes, edges, **settings), hierarchical_leiden(nodes, edges, **settings)


class ClusterAhead:
    """start() before the summary wave; result() after the merge is stored; close() always."""

    def __init__(self, settings: dict, min_edges: int = MIN_EDGES):
        self.settings, self.min_edges = dict(settings), min_edges
        self._pool: ProcessPoolExecutor | None = None
        self._future: Future | None = None

    def start(self, nodes: list[str], edges: list[tuple[str, str, float]]) -> None:
        """Begin clustering this graph in a child process (if it is large enough)."""
        if self._future is not None or len(edges) < self.min_edges:
            return
        try:
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
            self._future = self._pool.submit(_leiden, list(nodes), list(edges), self.settings)
        except (OSError, RuntimeError, ValueError):
            self.close()

    def result(self) -> tuple[str, list[Community]] | None:
        """(graph hash, communities) from the child, or None if none was started or it failed."""
        if self._future is None:
            return None
        try:
            return self._future.result()
        except Exception:  # noqa: BLE001 - a broken child only costs the head start
            return None
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool, self._future = None, None
