"""tgr eval: recall@k, complete@k, fact coverage and latency from a store and a question set."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from tgr.cli import main
from tgr.query import evaluate as evaluate_module
from tgr.query.evaluate import evaluate, load_questions
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
    assert data["evidence"] == {"ids": 3, "exact": 3, "by_path_or_title": 0, "missing": []}
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


def write_questions(path, evidence: list[list[str]]):
    path.write_text("".join(json.dumps({"question": q["question"], "evidence_doc_ids": e}) + "\n"
                            for q, e in zip(QUESTIONS, evidence)), encoding="utf-8")
    return path


def test_evidence_naming_no_document_warns_with_an_example_id_and_fails_when_strict(files, tmp_path):
    store, _ = files
    wrong = write_questions(tmp_path / "wrong.jsonl", [["doc-1"], ["doc-2", "doc-3"], ["doc-4"]])
    result = CliRunner().invoke(main, ["eval", str(store), str(wrong), "--mode", "naive"])
    assert result.exit_code == 0
    [warning] = result.stderr.splitlines()
    assert warning.startswith("warning: none of the 4 evidence ids names a document of the store")
    assert "doc_id or id" in warning and "path as typed" in warning
    assert warning.split("e.g. ")[1].strip("'") in {d["id"] for d in DOCS}  # an id from the store
    strict = CliRunner().invoke(main, ["eval", str(store), str(wrong), "--strict"])
    assert strict.exit_code == 1 and strict.stdout == ""
    assert strict.stderr.startswith("Error: none of the 4") and len(strict.stderr.splitlines()) == 1


def test_partly_matching_evidence_says_how_many_matched(files, tmp_path):
    store, _ = files
    partly = write_questions(tmp_path / "partly.jsonl", [["inn"], ["ship", "wale"], ["chapel"]])
    result = CliRunner().invoke(main, ["eval", str(store), str(partly), "--mode", "naive", "--strict"])
    assert result.exit_code == 1
    assert "3 of 4 evidence ids name a document of the store (0 by path or title); not 'wale'" in result.stderr
    ok = CliRunner().invoke(main, ["eval", str(store), str(write_questions(
        tmp_path / "all.jsonl", [["inn"], ["ship", "whale"], ["chapel"]])), "--strict"])
    assert ok.exit_code == 0 and ok.stderr == ""


TEXTS = {"harbour/inn.txt": "The Spouter Inn\nThe Spouter Inn in New Bedford is kept by Peter Coffin.",
         "harbour/ship.txt": "The Pequod\nThe Pequod is a whaling ship out of Nantucket, commanded by Ahab.",
         "sea/ship.txt": "The Rachel\nThe Rachel is a ship whose captain searches for his lost son.",
         "sea/whale.txt": "Moby Dick\nMoby Dick is a white sperm whale hunted by Captain Ahab."}


def test_file_evidence_matches_however_the_folder_was_typed(tmp_path, monkeypatch):
    """Files are stored under the path typed to tgr index (here ../project/docs/...); evidence
    written relative to the docs folder, by title or as the absolute path finds the same files."""
    docs = tmp_path / "project" / "docs"
    for name, text in TEXTS.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    store = tmp_path / "files.db"
    with tgr.open(store, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index(["../project/docs"], **SMALL)
    question = [{"question": "Who keeps the Spouter Inn?", "evidence_doc_ids": ids, "qid": "q"} for ids in (
        ["../project/docs/harbour/inn.txt"],  # the id, as stored
        ["harbour/inn.txt"], ["inn.txt"], [str(docs / "harbour" / "inn.txt")], ["The Spouter Inn"],
        ["sea/ship.txt"], ["ship.txt"])]  # the last names two files: not a match
    with tgr.open(store, readonly=True) as kb:
        matched = evaluate_module.match_evidence(kb, question)
        naive, = evaluate(kb, question, ["naive"], ks=(1,))
    assert matched.exact == 1 and matched.by_name == 5 and matched.missing == ["ship.txt"]
    assert matched.keys["sea/ship.txt"] == "../project/docs/sea/ship.txt"
    assert len({matched.keys[e] for e in ("harbour/inn.txt", "inn.txt", str(docs / "harbour" / "inn.txt"),
                                          "The Spouter Inn")} | {"../project/docs/harbour/inn.txt"}) == 1
    recall = [row["recall@1"] for row in naive.rows]
    assert recall[:5] == [1.0] * 5 and recall[6] == 0.0


def test_answer_matching_is_normalised_whole_words_and_chinese_without_spaces():
    assert evaluate_module.answer_found([["The Pequod"]], "It was the pequod, out of Nantucket.")
    assert not evaluate_module.answer_found([["no"]], "Nothing is known")  # words whole
    assert evaluate_module.answer_found([["须菩提 祖师"]], "那洞中有一个神仙，称名须菩提祖师。")
    assert evaluate_module.answer_found([["Ａbc"]], "x ABC y")  # NFKC and case
    assert evaluate_module.answer_found([["a"], ["b", "c"]], "a and c") is False  # "a" is an article
    assert evaluate_module.answer_found([["x1"], ["y2", "z3"]], "x1 then z3")
    assert not evaluate_module.answer_found([["x1"], ["y2"]], "x1 only")  # every item
    assert evaluate_module.answer_found([["50%"]], "联发科市占率突破50%大关")  # Chinese letters bound a number
    assert not evaluate_module.answer_found([["5"]], "突破50%大关")  # still whole: 5 is not 50


def test_gold_answers_use_items_else_answer_and_aliases():
    assert evaluate_module.gold_answers({"answer": "A B", "answer_aliases": ["AB"]}) == [["A B", "AB"]]
    assert evaluate_module.gold_answers({"answer": "x；y", "meta": {"answer_items": ["x", ["y", "yy"]]}}) \
        == [["x"], ["y", "yy"]]
    assert evaluate_module.gold_answers({"answer": "", "answer_aliases": []}) == []


def test_answers_are_scored_per_mode_in_the_api_and_the_cli(files, tmp_path):
    store, _ = files
    questions = tmp_path / "q.jsonl"
    rows = [dict(QUESTIONS[0], answer="Peter Coffin"), dict(QUESTIONS[1], answer="Pequod"),
            dict(QUESTIONS[2], answer="Jonah"), {"question": "Who preaches about Jonah?",
                                                 "evidence_doc_ids": ["chapel"]}]  # no answer: not scored
    questions.write_text("\n".join(json.dumps(q) for q in rows) + "\n", encoding="utf-8")
    with tgr.open(store, readonly=True) as kb:
        naive, = evaluate(kb, load_questions(questions), ["naive"], answers=True)
    by_qid = {r["qid"]: r for r in naive.rows}
    assert by_qid["q1"]["context_hit"] and by_qid["q1"]["answer_hit"] and "Peter Coffin" in by_qid["q1"]["answer"]
    assert not by_qid["q3"]["context_hit"] and not by_qid["q3"]["answer_hit"]  # zzz qqq finds nothing
    assert "answer_hit" not in by_qid["q4"]
    assert naive.answers["questions"] == 3 and naive.answers["ask_ms_median"] > 0
    assert naive.answers["answer_hit"] == pytest.approx(sum(by_qid[q]["answer_hit"] for q in ("q1", "q2", "q3")) / 3)
    out = CliRunner().invoke(main, ["eval", str(store), str(questions), "--answers", "--mode", "local"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    head = lines.index("answers (3 questions with a gold answer)")
    assert lines[head + 1].split()[:5] == ["mode", "answer", "hit", "context", "hit"]
    assert lines[head + 2].split()[0] == "local" and float(lines[head + 2].split()[2]) >= 1 / 3
    plain = CliRunner().invoke(main, ["eval", str(store), str(questions), "--mode", "local"])
    assert "answers (" not in plain.output
