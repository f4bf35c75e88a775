"""Clustering ahead: run Leiden on the merged graph while the description-summary wave is
in flight, in a child process (Leiden holds the GIL, so a thread would stall the model calls).

Used only on a first clustering (no stored communities) of a large graph: there Leiden
needs nothing but the graph, which the merge knows before its summary wave. The result is
tagged with the hash of the graph it was computed from; tgr/build/idle_work.py (which starts it)
hands it to cluster() only when that equals the hash of the graph as stored, and cluster()
otherwise runs Leiden itself. Any failure of
the child (no spawn, a killed process) falls back the same way.
"""
from __future__ import annotations

from .cluster import Community, graph_hash, hierarchical_leiden

MIN_EDGES = 3000  # below this Leiden takes well under a second: not worth a process


def _leiden(nodes: list[str], edges: list[tuple[str, str, float]], settings: dict) -> tuple[str, list[Community]]:
    nodes, edges = sorted(nodes), sorted(edges)
    return graph_hash(nodes, edges, **settings), hierarchical_leiden(nodes, edges, **settings)


def _child(pipe, nodes, edges, settings) -> None:
    try:
        pipe.send(_leiden(nodes, edges, settings))
    finally:
        pipe.close()


class ClusterAhead:
    """start() before the summary wave; result() after the merge is stored; close() always
    (it stops a child still running, e.g. after Ctrl-C)."""

    def __init__(self, settings: dict, min_edges: int = MIN_EDGES):
        self.settings, self.min_edges = dict(settings), min_edges
        self._process = self._pipe = None
        self._here: tuple[str, list[Community]] | None = None  # a small graph's, clustered in process

    def start(self, nodes: list[str], edges: list[tuple[str, str, float]], small_here: bool = False) -> None:
        """Begin clustering this graph in a child process (if it is large enough); small_here:
        a smaller graph is clustered here and now (an idle step: it takes well under a second)."""
        if self._process is not None or self._here is not None:
            return
        if len(edges) < self.min_edges:
            if small_here:
                self._here = _leiden(nodes, edges, self.settings)
            return
        try:
            import multiprocessing  # only when a large graph is clustered: queries never pay for it

            context = multiprocessing.get_context("spawn")  # no fork of a process with threads
            self._pipe, child_end = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(child_end, list(nodes), list(edges), self.settings),
                                      daemon=True)
            process.start()
            self._process = process  # only a started process: close() joins it
            child_end.close()
        except Exception:  # noqa: BLE001 - no child (no spawn, nothing to pickle): cluster() runs Leiden
            self.close()

    def result(self) -> tuple[str, list[Community]] | None:
        """(graph hash, communities) from the child (or of a small graph, from start()), or
        None if none was started or it failed; handed over once."""
        if self._process is None:
            here, self._here = self._here, None
            return here
        try:
            while not self._pipe.poll(0.05):
                if not self._process.is_alive() and not self._pipe.poll():
                    return None  # ended without an answer
            return self._pipe.recv()
        except (EOFError, OSError):
            return None
        finally:
            self.close()

    def close(self) -> None:
        self._here = None
        if self._process is not None:
            if self._process.is_alive():
                self._process.terminate()
            self._process.join(5)
        if self._pipe is not None:
            self._pipe.close()
        self._process = self._pipe = None
