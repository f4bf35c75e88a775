"""Community reports: token budget, bottom-up order, sub-community substitution."""
from __future__ import annotations

import json
import re
import time

import tgr
from conftest import EN_CORPUS, SMALL, ZH_CORPUS, ScriptedChat, ScriptedEmbedder
from tgr.text import estimate_tokens


def report_prompts(chat: ScriptedChat) -> list[str]:
    return [p for p in chat.prompts if chat.llm.kind(p) == "community_report"]


def data_section(prompt: str) -> str:
    return prompt.split("-Data-\n", 1)[1].rsplit("\n-Output-", 1)[0]


def build(db_path, corpus, delay=0.0, **settings):
    chat = ScriptedChat(delay=delay)
    kb = tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder(), concurrency=4)
    kb.index([str(corpus)], **SMALL, **settings)
    return kb, chat


def test_every_report_context_fits_the_budget(db_path):
    budget = 400
    kb, chat = build(db_path, ZH_CORPUS, report_tokens=budget, max_cluster_size=6)
    with kb:
        prompts = report_prompts(chat)
        # two communities whose contexts come out the same share one (cached) answer
        contexts = kb.conn.execute("SELECT count(DISTINCT context_hash) FROM reports").fetchone()[0]
        assert len(prompts) == len(set(prompts)) == contexts
        for prompt in prompts:
            assert estimate_tokens(data_section(prompt)) <= budget + 20


def test_parents_substitute_sub_community_reports_after_the_children(db_path):
    kb, chat = build(db_path, ZH_CORPUS, report_tokens=400, max_cluster_size=6)
    with kb:
        titles = dict(kb.conn.execute("SELECT community_id, title FROM reports"))
        parents = kb.conn.execute(
            "SELECT DISTINCT parent_id FROM communities WHERE parent_id IS NOT NULL").fetchall()
        assert parents, "the fixture should produce a hierarchy"
        prompts = report_prompts(chat)
        substituted = [p for p in prompts if "-----Sub-community reports-----" in p]
        assert substituted, "a parent too big for the budget must use its children's reports"
        for prompt in substituted:
            cited = re.findall(r"^\d+\|(\d+\.\d+)\|", data_section(prompt), re.MULTILINE)
            assert cited
            for child in cited:
                # the child's finished report (so written before this prompt) stands in the prompt
                assert f"# {titles[child]}" in prompt
                assert kb.conn.execute("SELECT parent_id FROM communities WHERE id = ?",
                                       (child,)).fetchone()[0] is not None


def test_small_communities_fit_without_substitution(db_path):
    kb, chat = build(db_path, EN_CORPUS, delay=0.02, report_tokens=20000)
    with kb:
        assert not any("-----Sub-community reports-----" in p for p in report_prompts(chat))
        # with a generous budget every report is in the first, concurrent wave
        assert chat.max_in_flight > 1


def test_entities_and_relationships_are_ordered_by_degree(db_path):
    kb, chat = build(db_path, EN_CORPUS, report_tokens=20000)
    with kb:
        for prompt in report_prompts(chat):
            data = data_section(prompt)
            entities = data.split("-----Entities-----")[1].split("-----Relationships-----")[0]
            rows = [line.split("|") for line in entities.splitlines() if re.match(r"^\d+\|", line)]
            degrees = [int(r[-1]) for r in rows]  # id|entity|type|description|degree
            assert degrees == sorted(degrees, reverse=True)


def test_reports_are_rebuilt_only_when_communities_change(db_path):
    kb, chat = build(db_path, ZH_CORPUS)  # its scripted graph has communities that split at max 3
    with kb:
        asked = len(report_prompts(chat))
        kb.index([str(ZH_CORPUS)])
        assert len(report_prompts(chat)) == asked
        summary = kb.rebuild("communities", max_cluster_size=3)
        changed = summary.reports
        assert changed > 0
        # new communities need new prompts; unchanged ones came from the cache
        assert len(report_prompts(chat)) > asked


def test_incremental_index_refreshes_reports_whose_material_changed(db_path, tmp_path):
    extra = tmp_path / "extra.txt"
    kb, chat = build(db_path, EN_CORPUS)
    with kb:
        asked = set(report_prompts(chat))
        extra.write_text("The Three Spirits wore purple umbrellas. The Ghost saw the Three Spirits.")
        kb.index([str(extra)])
        after = dict(kb.conn.execute("SELECT community_id, full_text FROM reports"))
        new = [p for p in report_prompts(chat) if p not in asked]
        # the communities whose material changed were asked again; the others came from the cache
        assert new and any("purple umbrellas" in p for p in new)
        assert len(new) < len(after)
        # the store is up to date: rebuilding every report from scratch changes nothing
        kb.rebuild("reports")
        assert dict(kb.conn.execute("SELECT community_id, full_text FROM reports")) == after


class _TimedChat(ScriptedChat):
    """Records when each call starts and ends (seconds from the first start)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.spans: list[tuple[str, float, float]] = []

    def complete(self, prompt: str, **params):
        started = time.monotonic()
        try:
            return super().complete(prompt, **params)
        finally:
            self.spans.append((prompt, started, time.monotonic()))


def test_a_parent_report_starts_once_its_children_are_in_not_after_the_whole_wave(db_path):
    chat = _TimedChat(delay=0.05)
    kb = tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder(), concurrency=4)
    with kb:
        kb.index([str(ZH_CORPUS)], **SMALL, report_tokens=400, max_cluster_size=6)
        reports = [(p, a, b) for p, a, b in chat.spans if chat.llm.kind(p) == "community_report"]
        parents = [a for p, a, _ in reports if "-----Sub-community reports-----" in p]
        first_wave = [b for p, _, b in reports if "-----Sub-community reports-----" not in p]
        assert parents and first_wave
        # the first parent is asked while reports that need no sub-reports are still in flight
        assert min(parents) < max(first_wave), (min(parents), max(first_wave))
        assert chat.max_in_flight <= 4


def test_material_fits_says_what_raw_context_says(db_path):
    """The report stage decides which communities wait for sub-reports with material_fits,
    which stops at the first row past the budget: the same answer as making the context."""
    from tgr.build.report import _Graph, material_fits, raw_context

    kb, _ = build(db_path, ZH_CORPUS, max_cluster_size=6)
    with kb:
        members: dict[str, list[str]] = {}
        for cid, eid in kb.conn.execute("SELECT community_id, entity_id FROM community_members ORDER BY 1, 2"):
            members.setdefault(cid, []).append(eid)
        graph = _Graph(kb.conn)
        answers = [(raw_context(graph, m, budget)[1], material_fits(graph, m, budget))
                   for budget in (60, 150, 400, 1200, 5000) for m in members.values()]
        assert {raw for raw, _ in answers} == {True, False}, "both answers occur"
        assert all(raw == fits for raw, fits in answers)


def test_contexts_do_not_depend_on_how_many_rows_are_kept(db_path):
    """A report stage keeps the texts of its last rows only (its peak memory must not grow with
    the graph): the contexts come out the same with room for three rows as with room for all."""
    from tgr.build.report import _Graph, raw_context

    kb, _ = build(db_path, ZH_CORPUS, max_cluster_size=6)
    with kb:
        members: dict[str, list[str]] = {}
        for cid, eid in kb.conn.execute("SELECT community_id, entity_id FROM community_members ORDER BY 1, 2"):
            members.setdefault(cid, []).append(eid)
        small, large = _Graph(kb.conn, rows_kept=3), _Graph(kb.conn, rows_kept=10**6)
        contexts = [[raw_context(graph, m, budget) for budget in (150, 1200) for m in members.values()]
                    for graph in (small, large)]
        assert contexts[0] == contexts[1] and any(text for text, _ in contexts[0])
        assert len(small._entity_texts) + len(small._edge_texts) <= 6 < len(large._entity_texts)


def _substituted_by_trying_each(graph, community, child_reports, budget):
    """substituted_context as first written: the raw material made after every sub-report."""
    from tgr.build.report import _counted, _table, raw_context
    from tgr.text import shorten

    children = sorted((c for c in community.children if c in child_reports),
                      key=lambda c: (-len(child_reports[c][1]), c))
    covered, report_rows = set(), []
    for child in children:
        report_rows.append(_counted(f"{child}|{shorten(child_reports[child][0], 1500)}"))
        covered.update(child_reports[child][1])
        rep_text, used = _table("Sub-community reports", "report", report_rows, budget)
        rest, fits = raw_context(graph, [m for m in community.members if m not in covered], max(0, budget - used))
        if fits or child == children[-1]:
            return "\n".join(t for t in (rep_text, rest) if t)
    return raw_context(graph, community.members, budget)[0]


def test_material_too_large_for_the_budget_is_not_made(db_path):
    """A top-level community's material is most of the graph: material_fits and
    substituted_context see from its entity count alone that it cannot fit, never make it,
    and give the contexts they gave when they made it."""
    from tgr.build.report import _Community, _Graph, material_fits, substituted_context

    kb, _ = build(db_path, ZH_CORPUS, max_cluster_size=6)
    with kb:
        rows = kb.conn.execute("SELECT id, level, parent_id FROM communities ORDER BY level, id").fetchall()
        communities = {cid: _Community(cid, level, parent, []) for cid, level, parent in rows}
        for cid, eid in kb.conn.execute("SELECT community_id, entity_id FROM community_members ORDER BY 1, 2"):
            communities[cid].members.append(eid)
        for c in communities.values():
            if c.parent_id in communities:
                communities[c.parent_id].children.append(c.id)
        reports = dict(kb.conn.execute("SELECT community_id, full_text FROM reports"))
        child_reports = {cid: (reports[cid], communities[cid].members) for cid in reports}
        parents = [c for c in communities.values() if len(c.children) > 1]
        largest = max(parents, key=lambda c: len(c.members))
        budget = len(largest.members)  # two tokens a row: its entity rows alone pass it
        graph = _Graph(kb.conn)
        assert not material_fits(graph, largest.members, budget)
        assert tuple(largest.members) not in graph._materials
        for budget in (60, 150, 400, 1200):
            for parent in parents:
                assert substituted_context(graph, parent, child_reports, budget) == \
                    _substituted_by_trying_each(_Graph(kb.conn), parent, child_reports, budget)
        substituted_context(graph, largest, child_reports, 60)
        assert tuple(largest.members) not in graph._materials


def test_graph_rows_of_most_entities_read_whole_are_those_looked_up_by_id(hierarchy_store):
    """A report graph of most of the store's entities is read whole and filtered: the same rows,
    by id, as the lookup by id, and its material comes in degree order, then id."""
    import json
    import sqlean as sqlite3
    from tgr.build.report import _IN, _Graph, _graph_rows

    conn = sqlite3.connect(f"file:{hierarchy_store}?mode=ro", uri=True)
    ids = [r[0] for r in conn.execute("SELECT id FROM entities ORDER BY id")]
    only = set(ids[: len(ids) * 3 // 4])
    args = (json.dumps(sorted(only)),)
    entities, edges = _graph_rows(conn, only)
    assert sorted(entities) == sorted(conn.execute(
        f"SELECT id, name, type, description, degree FROM entities WHERE id {_IN}", args).fetchall())
    assert edges == conn.execute(f"SELECT id, source_id, target_id, description, weight FROM relationships "
                                 f"WHERE source_id {_IN} AND target_id {_IN} ORDER BY id", args * 2).fetchall()
    graph = _Graph(conn, only)
    ranked, internal = graph.material(sorted(only))
    assert [e["id"] for e in ranked] == [e[0] for e in sorted(entities, key=lambda e: (-e[4], e[0]))]
    degree = {e[0]: e[4] for e in entities}
    assert [e["id"] for e in internal] == [e[0] for e in sorted(
        edges, key=lambda e: (-(degree[e[1]] + degree[e[2]]), -e[4], e[0]))]


def _top_by_degree(conn, community_id: str, count: int) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT e.name FROM community_members m JOIN entities e ON e.id = m.entity_id "
        "WHERE m.community_id = ? ORDER BY e.degree DESC, e.id LIMIT ?", (community_id, count))]


def test_a_giant_community_is_reported_from_its_most_connected_members(db_path, tmp_path, monkeypatch):
    """A community of more than REPORTED_MEMBERS entities is profiled from that many of its
    highest-degree members (its named members are among them), its report states its whole size,
    and a store a document was added to holds what rebuilding every report makes."""
    from tgr.build import report

    monkeypatch.setattr(report, "REPORTED_MEMBERS", 3)
    with tgr.open(db_path) as kb:  # the offline writer
        # (both corpora: the extra document leaves the words every document repeats as they are)
        kb.index([str(EN_CORPUS), str(ZH_CORPUS)], **SMALL)
        extra = tmp_path / "extra.txt"
        extra.write_text("Scrooge and Bob Cratchit met the Ghost of Christmas Past in London. "
                         "Bob Cratchit told Tiny Tim about Scrooge and the Ghost.")
        kb.index([str(extra)])
        conn = kb.conn
        giants = conn.execute("SELECT c.id, c.size, r.summary, r.findings FROM communities c "
                              "JOIN reports r ON r.community_id = c.id WHERE c.size > 3").fetchall()
        assert giants, "the fixture should have communities of more than three entities"
        for community_id, size, summary, findings in giants:
            top = _top_by_degree(conn, community_id, 3)
            named = [f["summary"].rsplit(" (", 1)[0] for f in json.loads(findings) if "(" in f["summary"]]
            assert named and set(named) <= set(top), (community_id, named, top)
            assert summary.startswith((f"{size} entities", f"{size} 个实体"))
        after = dict(conn.execute("SELECT community_id, full_text FROM reports"))
        kb.rebuild("reports")
        assert dict(conn.execute("SELECT community_id, full_text FROM reports")) == after


def test_a_graph_read_for_groups_gives_each_group_the_material_of_the_whole_graph(hierarchy_store):
    """The report graph of an add keeps only the relationships inside one of the communities
    it reports on: each of them has the material it has in the whole graph, and fewer rows are held."""
    import sqlean as sqlite3
    from tgr.build.report import _Graph

    conn = sqlite3.connect(f"file:{hierarchy_store}?mode=ro", uri=True)
    groups = [[r[0] for r in conn.execute("SELECT entity_id FROM community_members WHERE community_id = ? "
                                          "ORDER BY entity_id", (cid,))]
              for (cid,) in conn.execute("SELECT id FROM communities WHERE size > 2 ORDER BY size DESC LIMIT 6")]
    whole, part = _Graph(conn), _Graph(conn, {m for g in groups for m in g}, groups=groups)
    for group in groups:
        assert part.material(group) == whole.material(group)
    assert len(part.edges) < len(_Graph(conn, {m for g in groups for m in g}).edges)


def test_the_relationships_of_groups_read_from_the_indexes_are_those_inside_one_group(hierarchy_store):
    """A report graph of a few communities (under half the store's entities) finds which
    relationships join two members of one community from the ends' indexes, then reads those
    rows: the rows, by id, of every relationship among the members that lies inside one group."""
    import json
    import sqlean as sqlite3
    from tgr.build.report import _IN, _graph_rows

    conn = sqlite3.connect(f"file:{hierarchy_store}?mode=ro", uri=True)
    total = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
    groups, only = [], set()
    for (cid,) in conn.execute("SELECT id FROM communities WHERE size > 2 ORDER BY level DESC, size DESC, id"):
        group = [r[0] for r in conn.execute("SELECT entity_id FROM community_members WHERE community_id = ?", (cid,))]
        if 2 * len(only | set(group)) >= total:
            break
        groups.append(group)
        only |= set(group)
    assert len(groups) > 2
    args = (json.dumps(sorted(only)),)
    among = conn.execute(f"SELECT id, source_id, target_id, description, weight FROM relationships "
                         f"WHERE source_id {_IN} AND target_id {_IN} ORDER BY id", args * 2).fetchall()
    inside = [r for r in among if any(r[1] in g and r[2] in g for g in map(set, groups))]
    assert 0 < len(inside) < len(among)
    entities, edges = _graph_rows(conn, only, groups)
    assert edges == inside
    assert sorted(entities) == sorted(conn.execute(
        f"SELECT id, name, type, description, degree FROM entities WHERE id {_IN}", args).fetchall())
