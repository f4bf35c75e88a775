"""Exports of a real offline store: GraphML with the hierarchy, JSON, the self-contained page."""
from __future__ import annotations

import json
import re
import shutil
from importlib import resources

import networkx as nx
import pytest
import sqlean as sqlite3
from click.testing import CliRunner

import tgr
from tgr.cli import main
from tgr.export.writers import export_store, read_graph, render_html, script_json

from conftest import rows

HOSTILE = "</script><script>alert(1)</script><!--\u2028\u2029\x1b]0;pwned\x07 & <b>bold</b>\x00"


@pytest.fixture(scope="module")
def store(hierarchy_store):
    return hierarchy_store


def levels(path) -> list[int]:
    return [level for (level,) in rows(path, "SELECT DISTINCT level FROM communities ORDER BY level")]


def export(path, out, **options):
    with tgr.open(path, create=False, readonly=True) as kb:
        return export_store(kb.conn, out, **options)


def page_data(page: str, part: str = "data") -> dict:
    match = re.search(rf'<script type="application/json" id="tgr-{part}">(.*?)</script>', page, re.S)
    assert match, f"the page embeds its {part}"
    return json.loads(match.group(1))


def test_graphml_is_directed_and_carries_every_level(store, tmp_path):
    out = tmp_path / "g.graphml"
    done = export(store, out)
    graph = nx.read_graphml(out)
    assert done["format"] == "graphml" and graph.is_directed()
    assert graph.number_of_nodes() == rows(store, "SELECT count(*) FROM entities")[0][0]
    assert graph.number_of_edges() == rows(store, "SELECT count(*) FROM relationships")[0][0]
    for src, dst, predicate, weight in rows(store, "SELECT source_id, target_id, predicate, weight FROM relationships"):
        edge = graph.edges[src, dst]  # direction kept: source -> target
        assert edge["predicate"] == predicate and edge["weight"] == pytest.approx(weight)
    nested = rows(store, "SELECT m.entity_id, c.id, c.parent_id FROM community_members m "
                         "JOIN communities c ON c.id = m.community_id WHERE c.level = 1")
    assert nested, "the fixture store has a second level"
    for entity, community, parent in nested:
        node = graph.nodes[entity]
        assert node["community_1"] == community and node["community_0"] == parent == node["community"]
        assert node["community_path"].split()[:2] == [parent, community]
    assert graph.graph["levels"] == " ".join(str(level) for level in levels(store))


def test_json_has_nodes_edges_hierarchy_and_reports(store, tmp_path):
    out = tmp_path / "g.json"
    export(store, out)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["format"] == "tgr-graph" and data["levels"] == levels(store)
    assert len(data["nodes"]) == rows(store, "SELECT count(*) FROM entities")[0][0]
    assert len(data["edges"]) == rows(store, "SELECT count(*) FROM relationships")[0][0]
    degrees = [n["degree"] for n in data["nodes"]]
    assert degrees == sorted(degrees, reverse=True)
    communities = {c["id"]: c for c in data["communities"]}
    assert len(communities) == rows(store, "SELECT count(*) FROM communities")[0][0]
    for c in communities.values():
        if c["level"] > 0:
            assert communities[c["parent"]]["level"] == c["level"] - 1
            assert set(c["entities"]) <= set(communities[c["parent"]]["entities"])
        for entity in c["entities"]:
            node = next(n for n in data["nodes"] if n["id"] == entity)
            assert node["communities"][str(c["level"])] == c["id"]
    reports = {r["community"]: r for r in data["reports"]}
    stored = rows(store, "SELECT community_id, title, findings FROM reports")
    assert len(reports) == len(stored) > 0
    for cid, title, findings in stored:
        assert reports[cid]["title"] == title == communities[cid]["title"]
        assert [f["summary"] for f in reports[cid]["findings"]] == [f["summary"] for f in json.loads(findings)]


def test_html_page_is_self_contained_with_script_and_data(store, tmp_path):
    out = tmp_path / "g.html"
    export(store, out, level=1, top=5)
    page = out.read_text(encoding="utf-8")
    script = (resources.files("tgr.export") / "static" / "graph.js").read_text(encoding="utf-8")
    assert script.strip()[-200:] in page
    assert not re.search(r'(src|href)\s*=\s*["\']?\s*(https?:)?//', page, re.I)
    assert "default-src 'none'" in page  # the page may not fetch anything either
    assert page.count("<script") == page.count("</script>") == 3
    data, details = page_data(page), page_data(page, "details")
    assert data["level"] == 1 and data["top"] == 5 and data["levels"] == levels(store)
    assert len(data["nodes"]) == rows(store, "SELECT count(*) FROM entities")[0][0]
    names = {n["id"]: n for n in data["nodes"]}
    top_id, top_name = rows(store, "SELECT id, name FROM entities ORDER BY degree DESC, id LIMIT 1")[0]
    top = names[top_id]
    assert top["name"] == top_name and data["nodes"][0]["id"] == top_id
    # its passages come from chunks that mention it, with their document
    chunk_texts = [t for (t,) in rows(store, "SELECT c.text FROM entity_mentions m JOIN chunks c "
                                            "ON c.id = m.chunk_id WHERE m.entity_id = ?", (top_id,))]
    passages = details["passages"][0]
    assert passages and all(any(p[2].strip("…") in text for text in chunk_texts) for p in passages)
    sources = {s for (s,) in rows(store, "SELECT source FROM documents")}
    assert {details["documents"][p[0]][0] for p in passages} <= sources
    assert details["descriptions"][0] == rows(store, "SELECT description FROM entities WHERE id = ?", (top_id,))[0][0]
    assert len(details["edges"]) == len(data["edges"])
    # every entity has a position and its community per level
    assert all(isinstance(n["x"], (int, float)) and isinstance(n["y"], (int, float)) for n in data["nodes"])
    assert top["c"][0] == rows(store, "SELECT m.community_id FROM community_members m JOIN communities c "
                                      "ON c.id = m.community_id WHERE c.level = 0 AND m.entity_id = ?",
                                      (top_id,))[0][0]


def test_page_script_never_writes_markup():
    script = (resources.files("tgr.export") / "static" / "graph.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script


def test_exports_are_deterministic(store, tmp_path):
    for suffix in ("json", "html", "graphml"):
        export(store, tmp_path / f"a.{suffix}")
        export(store, tmp_path / f"b.{suffix}")
        assert (tmp_path / f"a.{suffix}").read_bytes() == (tmp_path / f"b.{suffix}").read_bytes(), suffix


def test_hostile_store_text_stays_inert(store, tmp_path):
    path = tmp_path / "hostile.db"
    shutil.copy(store, path)
    conn = sqlite3.connect(path)
    top = conn.execute("SELECT id FROM entities ORDER BY degree DESC, id LIMIT 1").fetchone()[0]
    conn.execute("UPDATE entities SET name = ?, description = ?, type = ?, degree = 'lots' WHERE id = ?",
                 (HOSTILE, HOSTILE, HOSTILE, top))
    conn.execute("UPDATE relationships SET predicate = ?, weight = 'heavy' WHERE id = "
                 "(SELECT id FROM relationships ORDER BY id LIMIT 1)", (HOSTILE,))
    conn.execute("UPDATE reports SET title = ?, findings = 'not json {' WHERE community_id = "
                 "(SELECT community_id FROM reports ORDER BY community_id LIMIT 1)", (HOSTILE,))
    conn.execute("UPDATE documents SET title = ?", (HOSTILE,))
    conn.commit()
    conn.close()

    export(path, tmp_path / "h.graphml")
    graph = nx.read_graphml(tmp_path / "h.graphml")  # still valid XML
    clean = graph.nodes[top]["name"]
    assert "\x1b" not in clean and "\x00" not in clean and "</script>" in clean

    export(path, tmp_path / "h.json")
    data = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))
    hostile_node = next(n for n in data["nodes"] if n["id"] == top)
    assert hostile_node["name"] == clean and hostile_node["degree"] == 0

    export(path, tmp_path / "h.html")
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    assert page.count("<script") == page.count("</script>") == 3  # nothing broke out of the data
    assert "<!--" not in page.split('id="tgr-data">', 1)[1]
    assert "\u2028" not in page and "\u2029" not in page
    assert "alert(1)" in page and "<b>bold</b>" not in page
    assert next(n for n in page_data(page)["nodes"] if n["id"] == top)["name"] == clean


def test_script_json_round_trips():
    value = {"a": HOSTILE, "b": ["&", ">", "\u2028"]}
    text = script_json(value)
    assert not set(text) & set("<>&\u2028\u2029")
    assert json.loads(text) == value


def test_empty_store_exports(tmp_path):
    path = tmp_path / "empty.db"
    tgr.open(path, create=True).close()  # an empty store, made on purpose
    for suffix in ("graphml", "json", "html"):
        done = export(path, tmp_path / f"e.{suffix}")
        assert done["entities"] == 0
    assert page_data((tmp_path / "e.html").read_text(encoding="utf-8"))["nodes"] == []
    with tgr.open(path, create=False, readonly=True) as kb:
        assert read_graph(kb.conn).levels == []
    assert "<html" in render_html(read_graph_of(path))


def read_graph_of(path):
    with tgr.open(path, create=False, readonly=True) as kb:
        return read_graph(kb.conn)


def test_cli_picks_the_format_from_the_suffix(store, tmp_path):
    runner = CliRunner()
    for suffix, check in (("graphml", nx.read_graphml), ("json", lambda p: json.loads(p.read_text())),
                          ("html", lambda p: page_data(p.read_text(encoding="utf-8")))):
        out = tmp_path / f"graph.{suffix}"
        result = runner.invoke(main, ["export", str(store), str(out)])
        assert result.exit_code == 0, result.output
        assert f"({suffix})" in result.output
        assert check(out)
    bad = runner.invoke(main, ["export", str(store), str(tmp_path / "graph.txt")])
    assert bad.exit_code != 0 and "unknown export format" in bad.output and not (tmp_path / "graph.txt").exists()
    level = runner.invoke(main, ["export", str(store), str(tmp_path / "x.html"), "--level", "9"])
    assert level.exit_code != 0 and "no community level 9" in level.output
    assert not (tmp_path / "x.html").exists()


def test_page_layout_groups_communities_and_fits_the_main_component(store, tmp_path):
    out = tmp_path / "g.html"
    export(store, out)
    data = page_data(out.read_text(encoding="utf-8"))
    nodes = data["nodes"]
    main = [n for n in nodes if not n.get("o")]
    islands = [n for n in nodes if n.get("o")]
    assert main and islands, "the fixture store has a main component and islands"
    x0, y0, x1, y1 = data["view"]
    inside = lambda n: x0 <= n["x"] <= x1 and y0 <= n["y"] <= y1  # noqa: E731
    if len(main) >= max(0.3 * len(nodes), min(len(nodes), 20)):
        assert all(inside(n) for n in main) and not any(inside(n) for n in islands)
    else:  # mostly islands: the first view shows everything
        assert all(inside(n) for n in nodes)
    # every community of the main component is a disk holding its members; disks do not overlap
    disks = {cid: c["d"] for cid, c in data["communities"].items() if "d" in c}
    assert disks and all(data["communities"][cid]["level"] == 0 for cid in disks)
    for n in main:
        cx, cy, r = disks[n["c"][0]]
        assert (n["x"] - cx) ** 2 + (n["y"] - cy) ** 2 <= (r + 1) ** 2
    items = list(disks.values())
    for i, (ax, ay, ar) in enumerate(items):
        for bx, by, br in items[i + 1:]:
            assert (ax - bx) ** 2 + (ay - by) ** 2 >= (ar + br) ** 2 * 0.999


SCROOGE = "ebenezer scrooge"  # entity resolution keys Scrooge by his full name


def test_page_shows_recorded_aliases(store, tmp_path):
    path = tmp_path / "aliases.db"
    shutil.copy(store, path)
    conn = sqlite3.connect(path)
    conn.executemany("INSERT OR IGNORE INTO entity_aliases (entity_id, alias, key, mentions) VALUES (?, ?, ?, 1)",
                     [(SCROOGE, "Ebenezer", "ebenezer"), (SCROOGE, HOSTILE, "hostile")])
    conn.commit()
    conn.close()
    export(path, tmp_path / "a.html")
    page = (tmp_path / "a.html").read_text(encoding="utf-8")
    node = next(n for n in page_data(page)["nodes"] if n["id"] == SCROOGE)
    hostile = next(a for a in node["a"] if "</script>" in a)
    assert "Ebenezer" in node["a"] and "</script>" in hostile and "\x1b" not in hostile
    assert page.count("<script") == page.count("</script>") == 3
    export(path, tmp_path / "a.json")
    nodes = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))["nodes"]
    assert "Ebenezer" in next(n for n in nodes if n["id"] == SCROOGE)["aliases"]


def test_page_search_folds_traditional_characters_to_the_names_simplified_ones(store, tmp_path):
    path = tmp_path / "zh.db"
    shutil.copy(store, path)
    conn = sqlite3.connect(path)
    conn.execute("INSERT OR IGNORE INTO entity_aliases (entity_id, alias, key, mentions) VALUES (?, '孙悟空', '孙悟空', 1)",
                 (SCROOGE,))
    conn.commit()
    conn.close()
    export(path, tmp_path / "zh.html")
    data = page_data((tmp_path / "zh.html").read_text(encoding="utf-8"))
    variants = data["zh"]
    assert variants["孫"] == "孙" and "悟" not in variants and "空" not in variants  # 悟 and 空 have one form
    names = "".join(n["name"] + "".join(n.get("a", [])) for n in data["nodes"])
    assert set(variants.values()) <= set(names)  # only what the page's own names need
