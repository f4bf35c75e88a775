"""Which idle work runs during which model wait: the one place a run's stages overlap.

The stages are plain functions of their inputs; this scheduler hands them the work to do
while their model answers are awaited (Gateway.chat_many's idle steps), and keeps what
was computed early for the stage that needs it:

- during extraction: full-text terms of the chunks just stored, then chunk vectors, then
  the tables the merge types entities with (the gazetteer, first names: loaded once per
  process, otherwise on the merge's path before the summary wave), then entity resolution's
  work on the documents already extracted (tgr.build.resolve.KeysAhead: each one's own
  keys and lower-case words, which assign_keys would otherwise redo for every document
  when one is added);
- during the description-summary wave: clustering of the graph the merge is about to
  store, a first clustering in a child process (tgr/build/cluster_ahead.py: Leiden holds the
  GIL; a small graph's as an idle step), an incremental one as an idle step (tgr.build.cluster.cluster_future_graph);
  cluster() takes either only when it was computed from exactly its own Leiden inputs;
  then the entities' names and types (MergePlan.row_steps), off store_merge's path;
- during the report wave: entity and chunk vectors.

Every overlap is an optimisation only: without it each stage gives the same rows.
"""
from __future__ import annotations

from typing import Callable

from .cluster_ahead import MIN_EDGES, ClusterAhead
from .cluster import Community, Graph, cluster_future_graph, leiden_key
from ..ingest.corpus import IndexWhileWaiting
from ..store.db import Connection
from .embed import EmbedWhileWaiting
from ..offline.entity_types import census_first_names, place_kind
from ..models.gateway import Gateway
from .merge_graph import MergePlan
from .resolve import KeysAhead

Idle = Callable[[], bool]


class Overlap:
    """The idle work of one run. close() it (it stops a clustering child still running)."""

    def __init__(self, conn: Connection, gateway: Gateway, cluster_settings: dict, ahead_min_edges: int = MIN_EDGES):
        self.conn, self.gateway = conn, gateway
        self.cluster_settings = dict(cluster_settings)
        self._ahead = ClusterAhead(self.cluster_settings, ahead_min_edges)
        self._started_ahead = False
        self._meanwhile: tuple[str, list[Community]] | None = None
        self.keys_ahead = KeysAhead(conn)  # for needs_merge: what the extraction wave left time for

    def during_extraction(self) -> Idle:
        """Chunks were stored without their full-text terms: those, then chunk vectors, then
        the merge's type tables, then entity resolution's per-document work."""
        return one_after_another(IndexWhileWaiting(self.conn), EmbedWhileWaiting(self.conn, self.gateway, ("chunks",)),
                                 load_type_tables, self.keys_ahead.step)

    def during_summaries(self, plan: MergePlan, *, first_clustering: bool, incremental: bool) -> Idle:
        """Call just before the summary wave; its steps run only if there is a wave to wait
        for. first_clustering (no communities stored yet): Leiden of the graph the merge
        stores, in a child process (a small graph's in this one). incremental (the stored communities are of the graph
        before the merge): the idle step that clusters the changed part of the graph the merge
        is about to store. Then each entity's name and type, which store_merge writes."""
        rows = plan.row_steps()  # store_merge's per-entity work, done while the wave is out
        if first_clustering:
            # the child starts once the wave's calls are out: spawning it blocks this thread
            # for up to a second (the graph goes down a pipe the new interpreter reads late)
            def start() -> bool:
                self._ahead.start(*plan.graph(), small_here=True)
                self._started_ahead = True
                return False

            return one_after_another(start, rows)
        if not incremental or plan.dirty is None:
            return rows
        recomputed = set(plan.dirty)  # a recomputed entity's input hash changed: its row changes
        changed = recomputed | plan.edge_ends
        nodes, edges = plan.graph()

        def step() -> bool:
            self._meanwhile = cluster_future_graph(self.conn, self.cluster_settings, recomputed, nodes, edges,
                                                   changed)
            return False

        return one_after_another(step, rows)

    def clustered_meanwhile(self, graph: Graph, start: dict, unchanged) -> list[Community] | None:
        """For cluster(precomputed=...): the communities computed during the summary wave from
        exactly these Leiden inputs, or None."""
        if self._started_ahead and not start:
            early = self._ahead.result()  # waits for the child, if it is still running
            if early is not None and early[0] == graph.hash(**self.cluster_settings):
                return early[1]
            return None
        if self._meanwhile is not None and \
                self._meanwhile[0] == leiden_key(graph, start, unchanged, self.cluster_settings):
            return self._meanwhile[1]
        return None

    def during_reports(self) -> Idle:
        """Vectors of chunks and entities not embedded yet."""
        return EmbedWhileWaiting(self.conn, self.gateway)

    def close(self) -> None:
        self._ahead.close()


def load_type_tables() -> bool:
    """Load what entity typing reads (each table is cached for the process); nothing left after."""
    place_kind("")
    census_first_names()
    return False


def one_after_another(*steps: Idle) -> Idle:
    """An idle step that runs each step until it has nothing left, then the next."""
    pending = list(steps)

    def step() -> bool:
        while pending:
            if pending[0]():
                return True
            pending.pop(0)
        return False

    return step
