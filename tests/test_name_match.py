"""Lookups that forgive, on a real offline store: aliases, accents, `·`, traditional characters,
typos; and what they must not do: match unrelated names, or hang on an untrusted store's names."""
from __future__ import annotations

import shutil

import pytest
import sqlean as sqlite3

import tgr
from tgr.query import lookup, name_match
from tgr.query.retrieve import Retriever


@pytest.fixture(scope="module")
def store(hierarchy_store):
    return hierarchy_store


# entity resolution keys Scrooge and Marley by their full names; "Scrooge" is an alias
SCROOGE, MARLEY = "ebenezer scrooge", "jacob marley"


@pytest.fixture(scope="module")
def aliased(hierarchy_store, tmp_path_factory):
    """A copy of the store with an entity_aliases table, as entity resolution records them."""
    path = tmp_path_factory.mktemp("aliases") / "aliased.db"
    shutil.copy(hierarchy_store, path)
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO entity_aliases (entity_id, alias, key, mentions) VALUES (?, ?, ?, 1)",
                     [(SCROOGE, "Old Sinner", "old sinner"), (MARLEY, "Old Jake", "old jake"),
                      (MARLEY, "Jacques Marlé", "jacques marlé")])
    conn.commit()
    conn.close()
    return path


def test_fold_forgives_case_accents_separators_and_traditional_characters():
    assert name_match.fold("Jacob MARLÉY") == name_match.fold("jacob marley") == "jacob marley"
    assert name_match.fold("艾蒂安·拉莫特") == name_match.fold("艾蒂安拉莫特") == "艾蒂安拉莫特"
    assert name_match.fold("香港特別行政區") == name_match.fold("香港特别行政区")
    assert name_match.fold("Jean-Luc") == name_match.fold("jean luc")
    assert name_match.fold("Scrooge") != name_match.fold("Marley")


@pytest.mark.parametrize("query, expected, how", [
    ("Scroge", SCROOGE, "typo"),          # a letter missing
    ("Scorogе", None, None),              # a Cyrillic е and two errors in seven letters: too far
    ("Scrooeg", SCROOGE, "typo"),         # two letters swapped: one edit
    ("MARLÉY", MARLEY, "folded"),
    ("ebenezer scrooge", SCROOGE, "name"),
    ("scrooge", SCROOGE, "name"),         # its display name, recorded as an alias
    ("Ebenezer", SCROOGE, "alias"),
])
def test_misspellings_are_found_and_far_ones_are_not(store, query, expected, how):
    with tgr.open(store, create=False, readonly=True) as kb:
        match = lookup.match_entity(kb.conn, query)
        assert (match.entity_id if match else None) == expected
        assert (match.how if match else None) == how


def test_unrelated_and_short_names_are_not_matched(store):
    with tgr.open(store, create=False, readonly=True) as kb:
        for query in ("Xavier Quincey", "Bob", "Marl", "Scrooge's nephew's dog", ""):
            assert lookup.find_entity(kb.conn, query) is None, query
        details = lookup.entity_details(kb.conn, "Scroge")
        assert details["found"] and details["id"] == SCROOGE
        assert details["matched"] == {"query": "Scroge", "by": "typo", "as": "Scrooge"}
        assert "matched" not in lookup.entity_details(kb.conn, "Scrooge")
        assert "Scrooge" in lookup.similar_entities(kb.conn, "Ebenezer Scroge")


def test_recorded_aliases_are_found_and_shown(aliased):
    with tgr.open(aliased, create=False, readonly=True) as kb:
        details = lookup.entity_details(kb.conn, "old jake")
        assert details["found"] and details["id"] == MARLEY
        assert details["matched"]["by"] == "alias" and "Old Jake" in details["aliases"]
        assert lookup.find_entity(kb.conn, "Mr Scrooge") == SCROOGE  # an alias, folded
        assert {"Ebenezer Scrooge", "Old Sinner"} <= set(lookup.entity_details(kb.conn, "Scrooge")["aliases"])


def test_question_seeding_reads_aliases_and_spelling_variants(aliased):
    with tgr.open(aliased, create=False, readonly=True) as kb:
        named = Retriever(kb.conn).retrieve("What did Old Jake tell the Old Sinner?", "local", 5).named_entities
        assert {MARLEY, SCROOGE} <= set(named)
        plain = Retriever(kb.conn).retrieve("What did MARLÉY say?", "local", 5).named_entities
        assert MARLEY in plain
        # the accents a question leaves out: "Jacques Marle" names the alias "Jacques Marlé"
        unaccented = Retriever(kb.conn).retrieve("What did Jacques Marle say?", "local", 5).named_entities
        assert MARLEY in unaccented
        assert MARLEY not in Retriever(kb.conn).retrieve("What did Jacques Merle say?", "local", 5).named_entities
        # a typo is not seeded: questions are full of words that are nobody's name
        assert SCROOGE not in Retriever(kb.conn).retrieve("What did Scroge say?", "local", 5).named_entities


def test_index_follows_changes_to_the_store(store, tmp_path):
    path = tmp_path / "changing.db"
    shutil.copy(store, path)
    with tgr.open(path) as kb:
        assert lookup.find_entity(kb.conn, "Scroge") == SCROOGE
        kb.conn.execute("UPDATE entities SET name = 'Ebenezer Scrooge' WHERE id = ?", (SCROOGE,))
        assert lookup.match_entity(kb.conn, "Ebenezer Scroge").entity_id == SCROOGE


def test_huge_names_in_an_untrusted_store_are_cut_not_matched_whole(store, tmp_path):
    path = tmp_path / "huge.db"
    shutil.copy(store, path)
    conn = sqlite3.connect(path)
    huge = "Scrooge " * 200_000
    conn.executemany("INSERT INTO entities (id, name, type, description) VALUES (?, ?, 'concept', '')",
                     [(f"huge {n}", f"{n} {huge}") for n in range(30)])
    conn.executemany("INSERT INTO entity_aliases (entity_id, alias, key, mentions) VALUES (?, ?, ?, 1)",
                     [(MARLEY, f"{n}{huge}", f"{n}{huge}".lower()) for n in range(30)])
    conn.commit()
    conn.close()
    with tgr.open(path, create=False, readonly=True) as kb:
        assert lookup.find_entity(kb.conn, "Scroge") == SCROOGE
        assert lookup.find_entity(kb.conn, "Marley " * 100_000) is None
        index = name_match.name_index(kb.conn)
        assert max(len(key) for key in index.keys) <= name_match.MAX_NAME_CHARS
