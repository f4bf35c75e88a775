"""tgr eval: recall@k, complete@k, fact coverage and latency from a store and a question set."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from tgr.cli import main
from tgr.evaluate import evaluate, load_questions
from tgr.errors import InputError

from conftest import SMALL

DOCS = [
    {"id": "whale", "title": "Moby Dick", "text": "Moby Dick is a white sperm whale hunted by Captain Ahab."},
    {"id": "ship", "title": "Pequod", "text": "The Pequod is a whaling ship out of Nantucket, commanded by Ahab."},
    {"id": "inn", "title": "Spouter Inn", "text": "The Spouter Inn in New Bedford is kept by Peter Coffin."},
    {"id": "chapel", "title": "Whaleman's Chapel", "text": "Father Mapple preaches in the chapel about Jonah."},
]
QUESTIONS = [
    {"qid": "q1", "question": "Who keeps the Spouter Inn?", "evidence_doc_ids": ["inn"],
     "meta": {"answer_items": ["Peter Coffin"]}},
    {"qid": "q2", "question": "Which whaling ship out of Nantucket hunts the white whale?",
     "evidence_doc_ids": ["ship", "whale"], "meta": {"answer_items": [["Pequod", "the Pequod"]]}},
    {"qid": "q3", "question": "zzz qqq", "evidence_doc_ids": ["chapel"]},
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    corpus, questions = root / "corpus.jsonl", root / "questions.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n", encoding="utf-8")
    questions.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n", encoding="utf-8")
    store = root / "store.db"
    with tgr.open(store, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(corpus)], **SMALL)
    return store, questions


def test_recall_counts_evidence_documents_among_the_first_k(files):
    store, questions = files
    with tgr.open(store, readonly=True) as kb:
        naive, = evaluate(kb, load_questions(questions), ["naive"], ks=(1, 2, 5))
    rows = {r["qid"]: r for r in naive.rows}
    assert rows["q1"]["retrieved"][0] == "inn" and rows["q1"]["recall@1"] == 1.0
    assert rows["q2"]["recall@5"] == 1.0 and set(rows["q2"]["retrieved"][:2]) == {"ship", "whale"}
    assert rows["q3"]["recall@5"] == 0.0 and rows["q3"]["retrieved"] == []  # nothing matches zzz qqq
    assert naive.recall[5] == pytest.approx((1 + 1 + 0) / 3)
    assert naive.complete[5] == pytest.approx(2 / 3)
    assert rows["q1"]["facts@1"] == 1.0 and "facts@1" not in rows["q3"]
    assert naive.facts[5] == pytest.approx(1.0)  # the two questions that name facts find them
    assert naive.latency_ms_median > 0


def test_cli_prints_a_table_and_json_rows(files):
    store, questions = files
    table = CliRunner().invoke(main, ["eval", str(store), str(questions), "--mode", "local", "--mode", "naive"])
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert lines[0] == f"3 questions, {store}"
    assert lines[1].split()[:4] == ["mode", "R@2", "R@5", "R@10"]
    assert [line.split()[0] for line in lines[2:]] == ["local", "naive"]
    data = json.loads(CliRunner().invoke(main, ["eval", str(store), str(questions), "--json", "--limit", "2"]).output)
    assert data["questions"] == 2 and [r["mode"] for r in data["results"]] == ["local", "naive"]
    assert [row["qid"] for row in data["results"][0]["rows"]] == ["q1", "q2"]


def test_a_bad_question_file_is_one_line(files, tmp_path):
    store, _ = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "no evidence"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="bad.jsonl:1: needs 'question' and 'evidence_doc_ids'"):
        load_questions(bad)
    result = CliRunner().invoke(main, ["eval", str(store), str(bad)])
    assert result.exit_code != 0 and "evidence_doc_ids" in result.output
    assert len(result.output.strip().splitlines()) == 1
