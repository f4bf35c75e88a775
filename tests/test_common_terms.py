"""Terms in half the chunks or more carry no BM25 weight and are left out of the full-text query."""
from __future__ import annotations

import json

import tgr
from tgr.query.common_terms import common_terms

from conftest import SMALL


def write_corpus(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return str(path)


# every document says "the"; "where" is in one of them; "lighthouse" in two
ROWS = [{"doc_id": f"d{n}", "title": f"Report {n}",
         "text": f"The harbour of town {n} shipped the grain of year {1900 + n}."} for n in range(8)]
ROWS[3]["text"] = "The lighthouse keeper lived where the cliffs end."
ROWS[5]["text"] = "The old lighthouse of the bay was painted red."


def test_common_stopwords_are_found_and_forgotten_when_the_store_changes(tmp_path):
    path = tmp_path / "terms.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([write_corpus(tmp_path / "a.jsonl", ROWS)], **SMALL)
        assert common_terms(kb.conn, ["the", "where", "lighthouse", "of"]) == {"the", "of"}
        # a dozen documents without "of" make it rare: the counts are taken again
        more = [{"doc_id": f"e{n}", "text": f"Tram number {n} runs at dawn."} for n in range(12)]
        kb.index([write_corpus(tmp_path / "b.jsonl", more)], **SMALL)
        assert common_terms(kb.conn, ["the", "where", "of"]) == set()
    with tgr.open(path, readonly=True) as kb:
        assert common_terms(kb.conn, ["the", "of"]) == set()


def test_a_question_ranks_by_its_rare_words_and_matches_nothing_by_its_common_ones(tmp_path):
    path = tmp_path / "terms.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([write_corpus(tmp_path / "a.jsonl", ROWS)], **SMALL)
    with tgr.open(path, readonly=True) as kb:
        ranked = [p.external_id for p in kb.retrieve("Where was the lighthouse of the keeper?", "naive", 10)]
        # only the chunks with a word that is not in half the store are ranked at all
        assert ranked == ["d3", "d5"]
        # a question made only of common words still gets an answer from one of them
        assert kb.retrieve("the of the", "naive", 10)
