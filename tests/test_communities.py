"""tgr/build/cluster.py: hierarchical Leiden, and cluster() on a real store."""
from __future__ import annotations

import random
from collections import Counter

import pytest

import tgr
from conftest import EN_CORPUS, SMALL, ZH_CORPUS
from tgr.build.cluster import _split, cluster, cluster_graph, hierarchical_leiden, stored_communities


def clique(prefix: str, n: int) -> tuple[list[str], list[tuple[str, str, float]]]:
    nodes = [f"{prefix}{i}" for i in range(n)]
    return nodes, [(a, b, 1.0) for i, a in enumerate(nodes) for b in nodes[i + 1:]]


def two_cliques():
    a_nodes, a_edges = clique("a", 5)
    b_nodes, b_edges = clique("b", 5)
    return a_nodes + b_nodes, a_edges + b_edges + [("a0", "b0", 1.0)]


def random_graph(seed: int = 7, n: int = 200, groups: int = 6, p_in: float = 0.12, p_out: float = 0.01):
    """A seeded planted-partition graph with unique undirected edges."""
    rng = random.Random(seed)
    nodes = [f"n{i:03d}" for i in range(n)]
    edges = {}
    for i in range(n):
        for j in range(i + 1, n):
            p = p_in if i % groups == j % groups else p_out
            if rng.random() < p:
                edges[(nodes[i], nodes[j])] = float(rng.randint(1, 3))
    return nodes, [(a, b, w) for (a, b), w in edges.items()]


def shapes(communities):
    """The hierarchy up to community ids: (level, members, parent's members, is_leaf)."""
    members = {c.id: tuple(c.members) for c in communities}
    return sorted((c.level, tuple(c.members), members.get(c.parent_id, ()), c.is_leaf) for c in communities)


def as_tuples(communities):
    return [(c.id, c.level, c.parent_id, tuple(c.members), c.is_leaf) for c in communities]


def check_hierarchy(nodes, edges, communities, max_size):
    by_id = {c.id: c for c in communities}
    assert len(by_id) == len(communities), "community ids are unique"
    level0 = [c for c in communities if c.level == 0]
    assert all(c.parent_id is None for c in level0)
    counts = Counter(m for c in level0 for m in c.members)
    assert set(counts) == set(nodes) and set(counts.values()) == {1}, \
        "every node is in exactly one level-0 community"
    children: dict[str, list] = {}
    for c in communities:
        assert c.members == sorted(c.members) and c.members
        assert c.id.startswith(f"{c.level}.")
        if c.parent_id is not None:
            parent = by_id[c.parent_id]
            assert c.level == parent.level + 1
            children.setdefault(parent.id, []).append(c)
    for c in communities:
        kids = children.get(c.id, [])
        if c.is_leaf:
            assert not kids
        else:
            assert len(c.members) > max_size, "only communities above the max are split"
            assert len(kids) >= 2
            member_counts = Counter(m for k in kids for m in k.members)
            assert set(member_counts) == set(c.members) and set(member_counts.values()) == {1}, \
                "children partition the parent's members exactly"
    return children


# -- hierarchical_leiden ---------------------------------------------------------------

def test_empty_graph_has_no_communities():
    assert hierarchical_leiden([], []) == []
    assert hierarchical_leiden([], [("a", "b", 1.0)]) == []  # edges to unknown nodes are ignored


def test_isolated_nodes_are_singletons():
    communities = hierarchical_leiden(["c", "a", "b"], [])
    assert [(c.level, c.parent_id, c.members, c.is_leaf) for c in communities] == [
        (0, None, ["a"], True), (0, None, ["b"], True), (0, None, ["c"], True)]
    assert [c.id for c in communities] == ["0.0", "0.1", "0.2"]


def test_isolated_nodes_next_to_a_connected_part():
    nodes, edges = clique("k", 4)
    communities = hierarchical_leiden(nodes + ["lonely", "alone"], edges)
    members = sorted(tuple(c.members) for c in communities)
    assert members == [("alone",), ("k0", "k1", "k2", "k3"), ("lonely",)]


def test_self_loops_duplicates_and_unknown_endpoints_are_ignored():
    nodes, edges = two_cliques()
    noisy = edges + [("a1", "a1", 5.0), ("a2", "ghost", 9.0), ("ghost", "b3", 9.0)]
    assert as_tuples(hierarchical_leiden(nodes, noisy)) == as_tuples(hierarchical_leiden(nodes, edges))


def test_two_cliques_joined_by_one_edge():
    nodes, edges = two_cliques()
    communities = hierarchical_leiden(nodes, edges, max_cluster_size=10)
    assert all(c.level == 0 and c.is_leaf for c in communities)
    assert sorted(c.members for c in communities) == [[f"a{i}" for i in range(5)], [f"b{i}" for i in range(5)]]


def test_two_cliques_split_again_when_above_the_max():
    nodes, edges = two_cliques()
    communities = hierarchical_leiden(nodes, edges, max_cluster_size=3)
    level0 = [c for c in communities if c.level == 0]
    assert sorted(c.members for c in level0) == [[f"a{i}" for i in range(5)], [f"b{i}" for i in range(5)]]
    check_hierarchy(nodes, edges, communities, 3)


def test_deterministic_for_the_same_input():
    nodes, edges = random_graph()
    first = hierarchical_leiden(nodes, edges, max_cluster_size=8)
    second = hierarchical_leiden(list(nodes), list(edges), max_cluster_size=8)
    assert as_tuples(first) == as_tuples(second)


@pytest.mark.parametrize("shuffle_seed", [1, 2, 3])
def test_deterministic_for_shuffled_input(shuffle_seed):
    nodes, edges = random_graph()
    expected = as_tuples(hierarchical_leiden(nodes, edges, max_cluster_size=8))
    rng = random.Random(shuffle_seed)
    shuffled_nodes = nodes[:]
    rng.shuffle(shuffled_nodes)
    # shuffle the edge order and flip the direction of some edges
    shuffled_edges = [(b, a, w) if rng.random() < 0.5 else (a, b, w) for a, b, w in edges]
    rng.shuffle(shuffled_edges)
    assert as_tuples(hierarchical_leiden(shuffled_nodes, shuffled_edges, max_cluster_size=8)) == expected


@pytest.mark.parametrize("seed", [1, 1234])
def test_other_seeds_are_deterministic_and_valid(seed):
    nodes, edges = random_graph()
    a = hierarchical_leiden(nodes, edges, max_cluster_size=8, seed=seed)
    assert as_tuples(a) == as_tuples(hierarchical_leiden(nodes, edges, max_cluster_size=8, seed=seed))
    check_hierarchy(nodes, edges, a, 8)


@pytest.mark.parametrize("max_size", [4, 8, 20])
def test_hierarchy_on_a_random_graph(max_size):
    nodes, edges = random_graph()
    communities = hierarchical_leiden(nodes, edges, max_cluster_size=max_size)
    children = check_hierarchy(nodes, edges, communities, max_size)
    assert children, "a 200-node graph with small max has a second level"
    assert max(c.level for c in communities) >= 1
    index = {n: i for i, n in enumerate(sorted(nodes))}
    from tgr.build import cluster as module
    graph = module.Graph.from_edges(nodes, edges)
    for c in communities:
        if c.is_leaf and len(c.members) > max_size and c.level < module.MAX_LEVELS - 1:
            # a leaf above the max must be one Leiden cannot split any further
            parts = _split(graph, [index[m] for m in c.members], 42, 1.0, whole=False)
            assert len(parts) == 1, f"{c.id} ({len(c.members)} members) could have been split"


def test_every_level_nests_in_the_one_above():
    nodes, edges = random_graph(seed=11, n=150, groups=3)
    communities = hierarchical_leiden(nodes, edges, max_cluster_size=5)
    by_id = {c.id: c for c in communities}
    for c in communities:
        if c.parent_id:
            assert set(c.members) <= set(by_id[c.parent_id].members)
    # within one level no node appears twice
    for level in {c.level for c in communities}:
        counts = Counter(m for c in communities if c.level == level for m in c.members)
        assert max(counts.values()) == 1


@pytest.mark.parametrize("n, max_size", [(2, 1), (3, 1), (12, 10)])
def test_clique_above_the_max_keeps_a_valid_hierarchy(n, max_size):
    nodes, edges = clique("k", n)
    communities = hierarchical_leiden(nodes, edges, max_cluster_size=max_size)
    assert [c.members for c in communities if c.level == 0] == [sorted(nodes)]
    check_hierarchy(nodes, edges, communities, max_size)


@pytest.mark.parametrize("resolution", [0.05, 0.5, 1.0, 1.5, 1.99, 2.0, 2.5, 8.0])
def test_a_two_entity_component_is_split_as_leiden_splits_it(resolution):
    # below resolution 2 _split joins the two without running Leiden: Leiden must agree
    import leidenalg
    import numpy as np

    from tgr.build.cluster import Graph

    rng = random.Random(resolution)
    for _ in range(20):
        weight, seed = rng.choice([1.0, 54.0, rng.uniform(0.01, 100.0)]), rng.randrange(1000)
        graph = Graph(["a", "b"], np.array([0]), np.array([1]), np.array([weight]))
        membership = leidenalg.find_partition(graph.igraph(), leidenalg.RBConfigurationVertexPartition, weights="weight",
                                              resolution_parameter=resolution, n_iterations=-1,
                                              seed=seed).membership
        expected = [[0, 1]] if membership[0] == membership[1] else [[0], [1]]
        assert _split(graph, [0, 1], seed, resolution, whole=True) == expected
        assert _split(graph, [0, 1], seed, resolution, whole=True, start=([0, 1], [False, False])) == expected


# -- cluster() on a real store ---------------------------------------------------------

@pytest.fixture
def store(db_path):
    # the offline graph of both fixture corpora (stars around one name, like the scripted
    # model's Carol graph or the offline one, do not split)
    kb = tgr.open(db_path, chat="offline", embedder="tgr:hash-384")
    kb.index([str(EN_CORPUS), str(ZH_CORPUS)], **SMALL)
    yield kb
    kb.close()


def test_cluster_writes_tables_consistent_with_the_result(store):
    conn = store.conn
    result = cluster(conn, max_cluster_size=4)
    assert result["changed"] is True
    rows = conn.execute("SELECT id, level, parent_id, size, is_leaf FROM communities").fetchall()
    assert len(rows) == result["communities"]
    assert dict(Counter(level for _, level, _, _, _ in rows)) == result["levels"]
    assert max(result["levels"]) >= 1, "max 4 on the fixture graph gives a second level"
    members = {}
    for cid, eid in conn.execute("SELECT community_id, entity_id FROM community_members"):
        members.setdefault(cid, set()).add(eid)
    for cid, level, parent, size, leaf in rows:
        assert len(members[cid]) == size
    entities = [r[0] for r in conn.execute("SELECT id FROM entities")]
    edges = conn.execute("SELECT source_id, target_id, weight FROM relationships").fetchall()
    expected = hierarchical_leiden(entities, edges, max_cluster_size=4)
    assert shapes(stored_communities(conn)) == shapes(expected)  # ids follow the previous clustering
    check_hierarchy(entities, edges, expected, 4)
    # orphan references are impossible: every member is an entity, every parent a community
    assert conn.execute("SELECT count(*) FROM community_members WHERE entity_id NOT IN "
                        "(SELECT id FROM entities)").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM communities WHERE parent_id IS NOT NULL AND parent_id "
                        "NOT IN (SELECT id FROM communities)").fetchone()[0] == 0
    assert store.meta["max_cluster_size"] == "4"
    # which Leiden produced them: releases of leidenalg split the same graph differently
    from importlib.metadata import version
    assert store.meta["cluster_library"] == f"leidenalg {version('leidenalg')}"


def test_cluster_again_is_unchanged(store):
    first = cluster(store.conn, max_cluster_size=4)
    before = stored_communities(store.conn)
    second = cluster(store.conn, max_cluster_size=4)
    assert second == {**first, "changed": False, "rewritten": 0, "removed": 0, "changed_ids": set()}
    assert as_tuples(stored_communities(store.conn)) == as_tuples(before)
    assert cluster(store.conn, max_cluster_size=4, force=True)["changed"] is True


def test_cluster_with_the_index_settings_is_unchanged(store):
    # index() already clustered with max_cluster_size=10
    assert cluster(store.conn, max_cluster_size=10)["changed"] is False


def test_cluster_change_drops_reports_of_removed_communities(store):
    conn = store.conn
    store.rebuild("communities", max_cluster_size=4)  # adds level 1, with reports
    before = {r[0] for r in conn.execute("SELECT community_id FROM reports")}
    assert any(cid.startswith("1.") for cid in before)
    assert cluster(conn, max_cluster_size=10)["changed"] is True
    after = {r[0] for r in conn.execute("SELECT community_id FROM reports")}
    existing = {r[0] for r in conn.execute("SELECT id FROM communities")}
    assert before - existing, "max 10 merges some of the smaller communities back"
    assert after == before & existing  # the communities that went took their reports with them
    assert conn.execute("SELECT count(*) FROM reports WHERE community_id NOT IN "
                        "(SELECT id FROM communities)").fetchone()[0] == 0


def test_ids_follow_members_and_are_never_reused(db_path):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS), str(ZH_CORPUS)], **SMALL)
        conn = kb.conn
        first = {c.id: set(c.members) for c in stored_communities(conn)}
        cluster(conn, max_cluster_size=4)
        second = {c.id: set(c.members) for c in stored_communities(conn)}
        for cid, members in second.items():
            if cid in first:  # a kept id names mostly the same members
                assert 2 * len(members & first[cid]) > max(len(members), len(first[cid]))
        new_ids = set(second) - set(first)
        assert new_ids
        cluster(conn, max_cluster_size=10)
        third = {c.id: set(c.members) for c in stored_communities(conn)}
        gone = (set(first) | set(second)) - set(third)
        assert not (set(third) - set(first) - set(second)) & gone  # a removed id never comes back
        by_members = {frozenset(m): cid for cid, m in first.items()}
        kept = [cid for cid, m in third.items() if by_members.get(frozenset(m)) == cid]
        assert len(kept) >= len(first) // 2  # back at the first settings: mostly the first ids


def test_previous_split_of_unchanged_entities_is_kept_and_changed_ones_are_reclustered():
    nodes, edges = two_cliques()
    # a previous clustering (as if from another graph): the two cliques mixed up
    odd = {n: ("0.0" if n[1] in "012" else "0.1") for n in nodes}
    kept = hierarchical_leiden(nodes, edges, previous={0: odd}, unchanged=set(nodes))
    assert sorted(c.members for c in kept) == sorted([sorted(n for n in nodes if odd[n] == g)
                                                      for g in ("0.0", "0.1")])
    # once an entity is changed, Leiden runs from that start, moving only the changed one
    moved = hierarchical_leiden(nodes, edges, previous={0: odd}, unchanged=set(nodes) - {"a3"})
    assert sorted(c.members for c in moved) == sorted([["a0", "a1", "a2", "a3", "b0", "b1", "b2"], ["a4"],
                                                      ["b3", "b4"]])
    # with nothing known to be unchanged, Leiden from that start is free to undo the mix-up
    fresh = hierarchical_leiden(nodes, edges, previous={0: odd}, unchanged=set())
    assert sorted(c.members for c in fresh) == [[f"a{i}" for i in range(5)], [f"b{i}" for i in range(5)]]


def level_of(communities, level: int) -> dict[str, frozenset]:
    """entity -> the members of its community at that level."""
    return {m: frozenset(c.members) for c in communities if c.level == level for m in c.members}


def sparse_graph(seed: int = 0, n: int = 300):
    """A seeded preferential-attachment graph: hubs and long tails, as an entity graph has."""
    rng = random.Random(seed)
    nodes = [f"n{i:03d}" for i in range(n)]
    edges, targets = {}, [0, 1]
    for i in range(2, n):
        for _ in range(2):
            j = rng.choice(targets)
            if j != i:
                edges[(nodes[j], nodes[i])] = float(rng.randint(1, 3))
        targets += [i, i, rng.randrange(i)]
    return nodes, [(a, b, w) for (a, b), w in edges.items()]


def test_an_unrelated_addition_leaves_every_unchanged_entity_where_it_was():
    # issue 16's incremental add: Leiden restarted from the previous partition re-optimised
    # the whole component and moved ~100 of these entities that no new document touched
    nodes, edges = sparse_graph()
    first = hierarchical_leiden(nodes, edges)
    previous = {}
    for c in first:
        previous.setdefault(c.level, {}).update((m, c.id) for m in c.members)
    touched = {"n010", "n020"}  # one new document names these two, and brings three new names
    added = [("n010", "x0", 1.0), ("x0", "x1", 1.0), ("x1", "x2", 1.0), ("x2", "n020", 1.0)]
    again = hierarchical_leiden(nodes + ["x0", "x1", "x2"], edges + added, previous=previous,
                                unchanged=set(nodes) - touched)
    check_hierarchy(nodes + ["x0", "x1", "x2"], edges + added, again, 10)
    news = touched | {"x0", "x1", "x2"}
    for level in (0, 1):
        before, after = level_of(first, level), level_of(again, level)
        for node in set(nodes) - touched:  # the same community, give or take the touched and new
            assert before.get(node, frozenset()) - news == after.get(node, frozenset()) - news, (level, node)


def test_the_stored_graph_is_read_as_the_sorted_rows_gave_it():
    """Graph.read keeps, for a pair stored more than once (either way round), the weight of its
    last row in sorted (source, target, weight) order, as the dict of sorted rows did; self-loops
    and relationships to an entity not stored are left out."""
    import sqlite3

    from tgr.build.cluster import Graph

    rng = random.Random(3)
    names = ["é", "z", "Ahab", "ahab", "b#2", "b", "中"] + [f"n{i}" for i in range(30)]
    rows = [(rng.choice(names), rng.choice(names), float(rng.randint(1, 4))) for _ in range(300)]
    rows += [("b", "ghost", 2.0), ("ghost", "z", 1.0)]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE entities(id TEXT PRIMARY KEY)")
    conn.execute("CREATE TABLE relationships(source_id TEXT, target_id TEXT, weight REAL)")
    conn.executemany("INSERT INTO entities VALUES (?)", [(n,) for n in names])
    conn.executemany("INSERT INTO relationships VALUES (?, ?, ?)", rows)
    graph = Graph.read(conn)
    nodes = sorted(names)
    index = {n: i for i, n in enumerate(nodes)}
    expected = sorted({(min(index[a], index[b]), max(index[a], index[b])): w for a, b, w in sorted(rows)
                       if a in index and b in index and a != b}.items())
    assert graph.nodes == nodes
    assert list(zip(graph.pairs(), graph.w.tolist())) == expected
    assert graph.hash(10, 42, 1.0) == Graph.from_edges(nodes, sorted(rows)).hash(10, 42, 1.0)
    assert as_tuples(cluster_graph(graph, max_cluster_size=4)) == \
        as_tuples(hierarchical_leiden(names, sorted(rows), max_cluster_size=4))


def test_ids_follow_the_majority_of_members_whether_or_not_a_community_is_unchanged():
    """stable_ids: a community with exactly a previous one's members takes its id at once; the
    result is the majority rule's (checked here against the rule written out)."""
    from tgr.build.cluster import Community, stable_ids

    nodes, edges = random_graph(seed=11)
    before = hierarchical_leiden(nodes, edges, max_cluster_size=8)
    rng = random.Random(5)
    after = hierarchical_leiden(nodes, [e for e in edges if rng.random() < 0.9], max_cluster_size=8)
    previous = [Community(f"{c.level}.{i + 100}", c.level, None, c.members) for i, c in enumerate(before)]
    renamed = stable_ids(after, previous, {})
    used: dict[int, int] = {}
    for c in previous:
        used[c.level] = max(used.get(c.level, -1), int(c.id.split(".")[1]))
    expected = {}
    for level in sorted({c.level for c in after}):
        owner = {m: c for c in previous if c.level == level for m in c.members}
        for c in (c for c in after if c.level == level):
            overlap = Counter(owner[m].id for m in c.members if m in owner)
            best = min(overlap, key=lambda oid: (-overlap[oid], oid)) if overlap else None
            size = sum(len(o.members) for o in previous if o.id == best)
            if best is not None and 2 * overlap[best] > len(c.members) and 2 * overlap[best] > size:
                expected[c.id] = best
            else:
                used[level] = used.get(level, -1) + 1
                expected[c.id] = f"{level}.{used[level]}"
    assert [c.id for c in renamed] == [expected[c.id] for c in after]
    kept = sum(c.id in {p.id for p in previous} for c in renamed)
    assert 0 < kept < len(renamed)  # both kinds occur


def _graph_of(nodes, edges):
    """The graph as cluster's Graph of positions in nodes, its edges in the order given."""
    import numpy as np

    from tgr.build.cluster import Graph

    index = {n: i for i, n in enumerate(nodes)}
    return Graph(list(range(len(nodes))), np.array([index[a] for a, _, _ in edges], dtype=np.int64),
                 np.array([index[b] for _, b, _ in edges], dtype=np.int64), np.array([w for _, _, w in edges]))


def _whole_subgraph_leiden(sub, seed, labels, fixed):
    """Leiden from a start with fixed members on the whole subgraph (before _collapsed)."""
    import leidenalg

    partition = leidenalg.RBConfigurationVertexPartition(sub, initial_membership=labels, weights="weight")
    optimiser = leidenalg.Optimiser()
    optimiser.set_rng_seed(seed)
    optimiser.optimise_partition(partition, n_iterations=-1, is_membership_fixed=fixed)
    return partition.membership


@pytest.mark.parametrize("seed", [3, 7, 11])
def test_fixed_members_are_one_node_each_community_and_the_quality_is_the_same(seed):
    """With most members fixed, Leiden is given each start community's fixed members as one
    node: a graph the size of the communities and the free members, on which every
    assignment of the free members has the quality it has on the whole subgraph."""
    import leidenalg

    from tgr.build.cluster import _collapsed

    nodes, edges = random_graph(seed)
    sub = _graph_of(nodes, edges)
    labels = leidenalg.find_partition(sub.igraph(), leidenalg.RBConfigurationVertexPartition, weights="weight",
                                      seed=seed).membership
    rng = random.Random(seed)
    free = set(rng.sample(range(len(nodes)), 5))
    fixed = [v not in free for v in range(len(nodes))]
    collapsed, node, initial, fixed_nodes = _collapsed(sub, labels, fixed)
    assert collapsed.vcount() == len(set(labels)) + len(free) and fixed_nodes.count(False) == len(free)
    assert [initial[node[v]] == initial[node[u]] for v, u in zip(range(len(nodes)), range(1, len(nodes)))] == \
        [labels[v] == labels[u] for v, u in zip(range(len(nodes)), range(1, len(nodes)))]
    for _ in range(5):  # the free members anywhere: the same quality on both graphs
        moved = list(labels)
        for v in free:
            moved[v] = rng.choice(labels + [max(labels) + 1])
        grouped = {}
        for v, label in enumerate(moved):
            grouped.setdefault(node[v], label)
        whole = leidenalg.RBConfigurationVertexPartition(sub.igraph(), initial_membership=moved, weights="weight")
        small = leidenalg.RBConfigurationVertexPartition(
            collapsed, initial_membership=[grouped[n] for n in range(collapsed.vcount())], weights="weight")
        assert small.quality() == pytest.approx(whole.quality())
    # and Leiden from the start places the free members as it does on the whole subgraph here
    from tgr.build.cluster import _leiden

    start = (labels, fixed, set(labels) - {labels[v] for v in free})
    found = _leiden(sub, seed, 1.0, start)
    expected = _whole_subgraph_leiden(sub.igraph(), seed, labels, fixed)
    same = lambda m: {frozenset(v for v in range(len(m)) if m[v] == c) for c in set(m)}  # noqa: E731
    assert same(found) == same(expected)


def test_a_community_its_free_member_held_together_is_cut_into_its_pieces():
    """a - b - c were one community; b (free: its edges changed) now belongs with the y
    clique: a and c, fixed, are no longer connected inside their community and part."""
    from tgr.build.cluster import _leiden

    x_nodes, x_edges = clique("x", 6)
    y_nodes, y_edges = clique("y", 6)
    nodes = x_nodes + y_nodes + ["a", "b", "c"]
    edges = x_edges + y_edges + [("a", "x0", 1.0), ("c", "x1", 1.0), ("a", "b", 0.1), ("b", "c", 0.1)]
    edges += [("b", y, 5.0) for y in y_nodes] + [("x5", "y5", 1.0)]
    sub = _graph_of(nodes, edges)
    labels = [0] * 6 + [1] * 6 + [2, 2, 2]
    fixed = [n != "b" for n in nodes]
    membership = _leiden(sub, 42, 1.0, (labels, fixed, {0, 1}))
    at = {n: membership[i] for i, n in enumerate(nodes)}
    assert at["b"] == at["y0"] and at["a"] != at["c"]
    assert len({at[n] for n in x_nodes}) == 1 and at["a"] != at["x0"]


def test_stored_members_read_joined_are_those_read_row_by_row(hierarchy_store, tmp_path):
    """stored_communities reads each community's members as one joined text: the same members,
    sorted, as a row each; a community whose ids cannot be joined (a NUL in one) is read by rows."""
    import shutil
    import sqlean as sqlite3
    from tgr.build.cluster import _member_rows, _members, stored_communities

    path = tmp_path / "copy.db"
    shutil.copy(hierarchy_store, path)
    conn = sqlite3.connect(path)
    assert _members(conn, "", ()) == _member_rows(conn, "", ())
    cid, eid = conn.execute("SELECT community_id, entity_id FROM community_members LIMIT 1").fetchone()
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("INSERT INTO community_members(community_id, entity_id) VALUES (?, ?)", (cid, eid + "\0x"))
    joined, by_rows = _members(conn, "", ()), _member_rows(conn, "", ())
    assert joined == by_rows and eid + "\0x" in joined[cid]
    assert all(c.members == by_rows.get(c.id, []) for c in stored_communities(conn))


def test_changed_components_found_through_the_indexes_are_those_of_the_whole_graph(hierarchy_store):
    """The components of a few changed entities, found from them through the relationship
    indexes, are the graph and stored communities _changed_components picks from the whole
    graph; a scope over the limit is left to the whole graph (None)."""
    import random
    import sqlean as sqlite3
    from tgr.build.cluster import Graph, _changed_components, _local_components

    conn = sqlite3.connect(f"file:{hierarchy_store}?mode=ro", uri=True)
    whole = Graph.read(conn)
    random.seed(5)
    as_rows = lambda cs: [(c.id, c.level, c.parent_id, c.members, c.is_leaf) for c in cs]  # noqa: E731
    for changed in [set(), {"no such entity"}, *({*random.sample(whole.nodes, k), "gone"} for k in (1, 2, 5))]:
        local, full = _local_components(conn, changed), _changed_components(conn, whole, changed)
        assert local is not None and full is not None
        assert (local[0].nodes, local[0].pairs(), local[0].w.tolist()) == (full[0].nodes, full[0].pairs(), full[0].w.tolist())
        assert as_rows(local[1]) == as_rows(full[1])
    assert _local_components(conn, set(whole.nodes[:50]), limit=10) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_subgraph_cut_from_the_arrays_is_the_one_igraph_cuts(seed):
    """Leiden is given each group's subgraph cut from the graph's arrays (through its members'
    edges): the same vertices, edges in the same order and weights as igraph's
    induced_subgraph of the whole graph, which chooses its order by the group's size."""
    from tgr.build.cluster import Graph

    rng = random.Random(seed)
    nodes, edges = random_graph(seed, n=120, p_out=0.05)
    edges = [(a, b, rng.uniform(0.1, 3.0)) for a, b, _ in edges]  # weights whose sums depend on order
    graph = Graph.from_edges(nodes, edges)
    whole = graph.igraph()
    for size in (1, 5, 59, 60, 61, 90, 120):
        members = sorted(rng.sample(range(len(nodes)), size))
        sub, expected = graph.induced(members), whole.induced_subgraph(members)
        assert sub.nodes == members
        assert sub.pairs() == expected.get_edgelist() and sub.w.tolist() == expected.es["weight"]


def test_components_given_or_found_give_the_same_communities():
    """cluster_graph takes the components _changed_components found on the whole graph
    (Graph.component) instead of finding them again: the same communities either way."""
    import numpy as np

    from tgr.build.cluster import Graph, cluster_graph, igraph_components

    nodes, edges = random_graph(5, n=150, p_out=0.0)  # six components
    nodes += ["lone1", "lone2"]
    graph = Graph.from_edges(nodes, edges)
    found = cluster_graph(graph, max_cluster_size=5)
    labels = np.array(igraph_components(len(graph.nodes), graph.pairs())) * 7 + 3  # any labels
    given = Graph(graph.nodes, graph.lo, graph.hi, graph.w, component=labels)
    assert len(given.components()) >= 8 and given.components() == graph.components()
    assert as_tuples(cluster_graph(given, max_cluster_size=5)) == as_tuples(found)


@pytest.mark.parametrize("seed", [4, 8])
def test_communities_are_cut_into_the_pieces_their_own_subgraphs_have(seed):
    """_connected_pieces numbers the pieces of the checked communities as cutting each
    community's own subgraph does: by community, then by each piece's first vertex."""
    from tgr.build.cluster import Graph, _connected_pieces

    rng = random.Random(seed)
    nodes, edges = random_graph(seed, n=90, p_in=0.06, p_out=0.02)
    sub = Graph.from_edges(nodes, edges)
    whole = sub.igraph()
    membership = [rng.randrange(6) for _ in nodes]
    for check in (None, {0, 2, 5}, set()):
        expected, numbers = [0] * len(nodes), {}
        for label in sorted(set(membership)):
            vertices = [v for v, m in enumerate(membership) if m == label]
            inner = ([0] * len(vertices) if check is not None and label not in check
                     else whole.induced_subgraph(vertices).connected_components().membership)
            for v, piece in zip(vertices, inner):
                expected[v] = numbers.setdefault((label, piece), len(numbers))
        assert _connected_pieces(sub, membership, check) == expected
    assert len(set(_connected_pieces(sub, membership))) > len(set(membership))  # some were cut
