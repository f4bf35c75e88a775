"""Read-only lookups behind `tgr mcp`, on a real offline store (and a tampered copy)."""
from __future__ import annotations

import shutil

import pytest
import sqlean as sqlite3

import tgr
from tgr.query import lookup


@pytest.fixture(scope="module")
def store(hierarchy_store):
    return hierarchy_store


def test_entity_lookup_by_any_spelling_and_similar_names(store):
    with tgr.open(store, create=False, readonly=True) as kb:
        for spelling in ("Scrooge", "  SCROOGE ", "“scrooge”"):
            assert lookup.find_entity(kb.conn, spelling) == "ebenezer scrooge"  # the full name the text gives
        assert lookup.find_entity(kb.conn, "Ebenezer Scrooge") == "ebenezer scrooge"
        details = lookup.entity_details(kb.conn, "Marley")
        assert details["found"] and details["name"] == "Marley" and details["id"] == "jacob marley"
        assert all("jacob marley" in (r["source_id"], r["target_id"]) for r in details["relationships"])
        assert [c["level"] for c in details["communities"]] == sorted(c["level"] for c in details["communities"])
        missing = lookup.entity_details(kb.conn, "Marl")
        assert missing == {"found": False, "name": "Marl", "similar": lookup.similar_entities(kb.conn, "Marl")}
        assert "Marley" in missing["similar"]
        # LIKE wildcards in a name are literal
        assert lookup.similar_entities(kb.conn, "%") == [] and lookup.similar_entities(kb.conn, "_") == []


def test_communities_and_reports(store):
    with tgr.open(store, create=False, readonly=True) as kb:
        level0 = lookup.list_communities(kb.conn, 0, limit=1000)
        assert level0 and all(c["level"] == 0 for c in level0)
        rated = [c["rating"] for c in level0 if c["rating"] is not None]
        assert rated == sorted(rated, reverse=True)
        assert len(lookup.list_communities(kb.conn, None, limit=3)) == 3
        parent = next(c for c in lookup.list_communities(kb.conn, 1, limit=1000))["parent_id"]
        report = lookup.community_report(kb.conn, parent)
        assert report["level"] == 0 and report["children"] and report["entities"]
        assert lookup.community_report(kb.conn, "no-such-community") is None


def test_tampered_text_comes_back_clean(store, tmp_path):
    path = tmp_path / "tampered.db"
    shutil.copy(store, path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE entities SET description = ? WHERE id = 'ebenezer scrooge'",
                 ("evil\x1b]52;c;cHduZWQ=\x07 text\x00",))
    conn.execute("UPDATE reports SET findings = '{not json' WHERE community_id = "
                 "(SELECT community_id FROM reports ORDER BY community_id LIMIT 1)")
    conn.commit()
    conn.close()
    with tgr.open(path, create=False, readonly=True) as kb:
        assert lookup.entity_details(kb.conn, "scrooge")["description"] == "evil text?"
        first = kb.conn.execute("SELECT community_id FROM reports ORDER BY community_id LIMIT 1").fetchone()[0]
        assert lookup.community_report(kb.conn, first)["findings"] == []
