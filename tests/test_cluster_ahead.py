"""tgr/build/cluster_ahead.py: Leiden in a child process while the summary wave is in flight
(scheduled by tgr/build/idle_work.py)."""
from __future__ import annotations

import random

from conftest import ScriptedChat
from test_communities import as_tuples, random_graph, shapes
from test_merge import CAROL, load, long_descriptions, merge, open_store, summarize_prompts
from tgr.build.cluster_ahead import ClusterAhead
from tgr.build.cluster import Graph, cluster, graph_hash, hierarchical_leiden, stored_communities
from tgr.build.merge_graph import plan_merge, store_merge, summarise
from tgr.build.idle_work import Overlap
from tgr.prompts import Prompts

SETTINGS = dict(max_cluster_size=10, seed=42, resolution=1.0)


def stored_graph(conn):
    nodes = sorted(r[0] for r in conn.execute("SELECT id FROM entities"))
    edges = sorted(conn.execute("SELECT source_id, target_id, weight FROM relationships").fetchall())
    return nodes, edges


def _merge_overlapped(kb, overlap, summary_tokens=300):
    """A first merge as the pipeline runs it: plan, the wave with the overlap, store."""
    gateway = kb.gateway()
    plan = plan_merge(kb.conn, gateway, Prompts(), summary_tokens=summary_tokens)
    idle = overlap.during_summaries(plan, first_clustering=True, incremental=False)
    store_merge(kb.conn, plan, summarise(gateway, plan, idle=idle))
    return plan


def test_the_merge_plan_holds_the_graph_it_stores_before_the_summary_wave(db_path):
    chat = ScriptedChat()
    with open_store(db_path, chat) as kb:
        load(kb, CAROL + [("m" + cid, entities, relations) for cid, entities, relations in long_descriptions()])
        plan = plan_merge(kb.conn, kb.gateway(), Prompts(), summary_tokens=300)
        assert len(plan.jobs) == 1 and summarize_prompts(chat) == [], "planned, not asked yet"
        nodes, edges = plan.graph()
        store_merge(kb.conn, plan, summarise(kb.gateway(), plan))
        assert len(summarize_prompts(chat)) == 1
        assert (sorted(nodes), sorted(edges)) == stored_graph(kb.conn)


def test_a_first_clustering_during_the_summary_wave_is_the_one_stored(db_path):
    settings = dict(SETTINGS, max_cluster_size=2)
    with open_store(db_path) as kb:
        load(kb, CAROL + [("m" + cid, entities, relations) for cid, entities, relations in long_descriptions()])
        overlap = Overlap(kb.conn, kb.gateway(), settings, ahead_min_edges=0)
        try:
            _merge_overlapped(kb, overlap)
            result = cluster(kb.conn, **settings, precomputed=overlap.clustered_meanwhile)
        finally:
            overlap.close()
        assert result["computed_meanwhile"], "the child's clustering was taken"
        nodes, edges = stored_graph(kb.conn)
        assert as_tuples(stored_communities(kb.conn)) == as_tuples(hierarchical_leiden(nodes, edges, **settings))


def test_no_summary_wave_no_child(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        overlap = Overlap(kb.conn, kb.gateway(), SETTINGS, ahead_min_edges=0)
        plan = _merge_overlapped(kb, overlap)
        assert plan.jobs == []
        assert overlap.clustered_meanwhile(Graph.from_edges(*stored_graph(kb.conn)), {}, None) is None
        overlap.close()


def test_the_child_clusters_as_hierarchical_leiden_does():
    nodes, edges = random_graph(n=150)
    shuffled = edges[:]
    random.Random(3).shuffle(shuffled)
    ahead = ClusterAhead(SETTINGS, min_edges=0)
    ahead.start(list(reversed(nodes)), shuffled)
    digest, communities = ahead.result()
    assert digest == graph_hash(sorted(nodes), sorted(edges), **SETTINGS)
    assert as_tuples(communities) == as_tuples(hierarchical_leiden(nodes, edges, **SETTINGS))
    assert ahead.result() is None, "a result is handed over once; the child is gone"


def test_small_graphs_are_clustered_in_process():
    nodes, edges = random_graph(n=40)
    ahead = ClusterAhead(SETTINGS, min_edges=len(edges) + 1)
    ahead.start(nodes, edges)
    assert ahead.result() is None
    ahead.start(list(reversed(nodes)), edges, small_here=True)  # the summary wave's idle step
    assert ahead._process is None, "no child for a small graph"
    digest, communities = ahead.result()
    assert digest == graph_hash(sorted(nodes), sorted(edges), **SETTINGS)
    assert as_tuples(communities) == as_tuples(hierarchical_leiden(nodes, edges, **SETTINGS))
    assert ahead.result() is None, "handed over once"


def _ahead_result(ahead, settings, graph, start, unchanged):
    """What Overlap.clustered_meanwhile does with a first clustering's child."""
    early = ahead.result()
    return early[1] if early and early[0] == graph.hash(**settings) else None


def test_cluster_takes_the_early_result_only_for_the_stored_graph(db_path):
    with open_store(db_path) as kb:
        load(kb, CAROL)
        merge(kb, summary_tokens=300)
        nodes, edges = stored_graph(kb.conn)
        expected = hierarchical_leiden(nodes, edges, max_cluster_size=2)
        other = edges[1:]  # another graph: its clustering differs, and must not be stored
        assert shapes(hierarchical_leiden(nodes, other, max_cluster_size=2)) != shapes(expected)
        settings = dict(SETTINGS, max_cluster_size=2)
        ahead = ClusterAhead(settings, min_edges=0)
        ahead.start(nodes, other)
        cluster(kb.conn, **settings, precomputed=lambda *inputs: _ahead_result(ahead, settings, *inputs))
        assert shapes(stored_communities(kb.conn)) == shapes(expected)

    with open_store(db_path.with_name("same.db")) as kb:
        load(kb, CAROL)
        merge(kb, summary_tokens=300)
        ahead = ClusterAhead(settings, min_edges=0)
        ahead.start(*stored_graph(kb.conn))
        cluster(kb.conn, **settings, precomputed=lambda *inputs: _ahead_result(ahead, settings, *inputs))
        assert as_tuples(stored_communities(kb.conn)) == as_tuples(expected)


def test_close_stops_a_child_still_running():
    nodes, edges = random_graph(n=150)
    ahead = ClusterAhead(SETTINGS, min_edges=0)
    ahead.start(nodes, edges)
    ahead.close()  # e.g. Ctrl-C during the summary wave: no child outlives the run
    assert ahead.result() is None
    ahead.start(nodes, edges)  # and it can start again
    assert ahead.result()[0] == graph_hash(sorted(nodes), sorted(edges), **SETTINGS)
