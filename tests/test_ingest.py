"""Reading documents: formats with ids and metadata, encodings, directories, symlinks.

Every test writes its own small files and indexes them into a real offline store.
"""
from __future__ import annotations

import json

import pytest

import tgr
from conftest import SMALL
from tgr.errors import InputError
from tgr.ingest import read_documents

WHALE = ("Captain Ahab commands the Pequod out of Nantucket. Ahab hunts Moby Dick across the Pacific. "
         "Starbuck, the first mate of the Pequod, doubts the hunt.")
CAROL = ("Ebenezer Scrooge keeps a counting-house in London. Bob Cratchit works for Scrooge. "
         "Jacob Marley was the partner of Scrooge.")


def offline_store(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def index(db_path, paths, **kwargs):
    warnings: list[str] = []
    with offline_store(db_path) as kb:
        summary = kb.index([str(p) for p in paths], warn=warnings.append, **SMALL, **kwargs)
    return summary, warnings


def documents(db_path) -> dict:
    """external_id or source -> (title, metadata) as stored."""
    with offline_store(db_path) as kb:
        rows = kb.conn.execute("SELECT source, external_id, title, metadata FROM documents").fetchall()
    return {ext or source: (title, json.loads(meta)) for source, ext, title, meta in rows}


def source_of(db_path, question: str, external_id: str) -> dict:
    with offline_store(db_path) as kb:
        sources = kb.ask(question, mode="naive").sources
    found = [s for s in sources if s["external_id"] == external_id]
    assert found, sources
    return found[0]


def test_jsonl_rows_become_documents_with_ids_titles_and_metadata(tmp_path, db_path):
    rows = tmp_path / "corpus.jsonl"
    lines = [
        {"doc_id": "whale-1", "title": "Moby-Dick", "text": WHALE, "url": "https://example.org/whale",
         "date": "1851-10-18", "meta": {"source": "gutenberg", "chapter": 36}},
        {"id": 7, "title": "", "text": CAROL, "tags": ["ghost", "christmas"]},
        {"id": "no-text", "title": "Empty"},
        {"id": "blank", "text": "   "},
    ]
    rows.write_text("\n".join(json.dumps(line) for line in lines[:2]) + "\n\n"
                    + "\n".join(json.dumps(line) for line in lines[2:]) + "\nnot json at all\n[1, 2]\n",
                    encoding="utf-8")
    summary, warnings = index(db_path, [rows])
    assert summary.documents == 2
    assert f"{rows}:4: no text, skipped" in warnings
    assert f"{rows}:5: no text, skipped" in warnings
    assert any(w.startswith(f"{rows}:6: not valid JSON") for w in warnings)
    assert f"{rows}:7: not a JSON object, skipped" in warnings
    docs = documents(db_path)
    assert docs["whale-1"] == ("Moby-Dick", {"url": "https://example.org/whale", "date": "1851-10-18",
                                             "source": "gutenberg", "chapter": 36})
    assert docs["7"] == ("", {"tags": ["ghost", "christmas"]})
    with offline_store(db_path) as kb:
        assert {r[0] for r in kb.conn.execute("SELECT source FROM documents")} == {str(rows)}
    source = source_of(db_path, "Who commands the Pequod?", "whale-1")
    assert source["title"] == "Moby-Dick" and source["source"] == str(rows)
    assert source["metadata"]["url"] == "https://example.org/whale"


def test_jsonl_rows_with_the_same_text_are_one_document(tmp_path):
    rows = tmp_path / "dupes.jsonl"
    rows.write_text(json.dumps({"id": "a", "text": WHALE}) + "\n" + json.dumps({"id": "b", "text": WHALE}) + "\n",
                    encoding="utf-8")
    warnings: list[str] = []
    docs = read_documents([str(rows)], warnings.append)
    assert [d.external_id for d in docs] == ["a"]
    assert warnings == [f"{rows}:2: same content as {rows} (id a), skipped"]


def test_plain_files_have_no_external_id_and_empty_metadata(tmp_path):
    path = tmp_path / "whale.txt"
    path.write_text("# The Whale\n\n" + WHALE, encoding="utf-8")
    [doc] = read_documents([str(path)])
    assert (doc.title, doc.external_id, doc.metadata) == ("The Whale", None, {})


def test_a_jsonl_file_without_any_text_is_nothing_to_index(tmp_path, db_path):
    rows = tmp_path / "ids.jsonl"
    rows.write_text('{"id": "x"}\n', encoding="utf-8")
    with offline_store(db_path) as kb:
        with pytest.raises(InputError, match=r"nothing to index: .*ids.jsonl:1: no text"):
            kb.index([str(rows)])
