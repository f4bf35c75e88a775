"""Many stores, one question: `tgr ask A.db B.db QUESTION`, tgr.open_many, `tgr eval A B Q`.
Real stores (built offline from the English and Chinese corpora), asked read-only."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, ROOT, SMALL, ZH_CORPUS
from tgr.cli import main
from tgr.multi_store import RRF_K, fuse
from tgr.query.retrieve import Passage

DEMO = ROOT / "fixtures" / "demo_carol.db"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory):
    """(English store, Chinese store), as paths relative to nothing: given as typed."""
    folder = tmp_path_factory.mktemp("many")
    english = folder / "carol.db"
    shutil.copy(DEMO, english)
    chinese = folder / "xiyou.db"
    with tgr.open(chinese, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(ZH_CORPUS)], **SMALL)
    return english, chinese


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_one_question_to_two_stores_gives_one_ranking_naming_each_store(two_stores):
    english, chinese = two_stores
    before = [digest(english), digest(chinese)]
    for mode in ("local", "naive", "global"):
        result = run("ask", english, chinese, "Who is Marley? 孙悟空是谁？", "--mode", mode, "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["answer"] and data["sources"], mode
        stores = {s["store"] for s in data["sources"]}
        assert stores == {str(english), str(chinese)}, mode  # the paths as given
        scores = [s["score"] for s in data["sources"]]
        assert scores == sorted(scores, reverse=True) and all(s["text"] for s in data["sources"])
    plain = run("ask", english, chinese, "Who is Marley? 孙悟空是谁？")
    assert plain.exit_code == 0 and f"{english}: " in plain.stdout
    assert [digest(english), digest(chinese)] == before  # read-only


def test_the_python_api_fuses_by_rank(two_stores):
    english, chinese = two_stores
    with tgr.open(english, readonly=True) as kb:
        alone = kb.retrieve("Who is Marley?", "naive", 10)
    with tgr.open_many([english, chinese]) as stores:
        together = stores.retrieve("Who is Marley?", "naive", 10)
        answer = stores.ask("孙悟空是谁？", "local")
    ours = [p for p in together if p.store == str(english)]
    assert ours and [p.chunk_id for p in ours] == [p.chunk_id for p in alone][:len(ours)]  # its order kept
    assert together[0].score == pytest.approx(1 / (RRF_K + 1), abs=1e-6)
    assert answer.answer and any(s["store"] == str(chinese) for s in answer.sources)


def test_fuse_interleaves_rankings_and_keeps_them_apart():
    def ranking(*ids):
        return [Passage(i, 1.0, f"text {i}", "d", "s", "t", 0, 0, 1) for i in ids]

    fused = fuse([ranking("a1", "a2", "a3"), ranking("b1", "b2"), ranking("a1")], ["A", "B", "C"])
    assert [(p.store, p.chunk_id) for p in fused] == [
        ("A", "a1"), ("B", "b1"), ("C", "a1"), ("A", "a2"), ("B", "b2"), ("A", "a3")]
    assert fused[0].score == pytest.approx(1 / (RRF_K + 1), abs=1e-6)


def test_eval_asks_several_stores_and_the_last_positional_is_the_question(two_stores, tmp_path):
    english, chinese = two_stores
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "Who is Marley?",
                                     "evidence_doc_ids": [str(EN_CORPUS / "carol_stave1_part1.txt")]}) + "\n")
    result = run("eval", english, chinese, questions, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["store"] == [str(english), str(chinese)]
    missing = run("ask", "Who is Marley?")  # one positional: the question, and no store
    assert missing.exit_code == 2 and "missing the store" in missing.output
    nostore = run("ask", english, tmp_path / "none.db", "Who is Marley?")
    assert nostore.exit_code == 1 and "none.db" in nostore.output


PROCESS_CHECK = """
import sys, tgr
english, chinese = sys.argv[1:3]
with tgr.open_many([english, chinese]) as stores:
    worker = stores._workers[0]
    assert type(worker).__name__ == "StoreProcess" and worker._process.is_alive()
    try:
        stores.retrieve("   ", "naive")  # its error is raised here ...
    except ValueError as exc:
        assert "empty" in str(exc)
    else:
        raise AssertionError("no error")
    again = stores.retrieve("孙悟空是谁？", "naive", 5)  # ... and leaves no answer behind for the next call
    assert any(p.store == chinese and "悟空" in p.text for p in again)
    assert stores.each("communities", 0, 2)[1][0] == chinese
assert not worker._process.is_alive()
print("ok")
"""


def test_each_other_store_is_asked_in_a_process_of_its_own(two_stores):
    """In a process of its own (no other thread: the store workers are forked), as the CLI is."""
    english, chinese = two_stores
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT)] + [p for p in sys.path if p])}
    done = subprocess.run([sys.executable, "-c", PROCESS_CHECK, str(english), str(chinese)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_threaded_caller_gets_the_same_ranking(two_stores):
    import threading

    english, chinese = two_stores
    with tgr.open_many([english, chinese]) as stores:
        forked = stores.retrieve("Who is Marley? 孙悟空是谁？", "local", 10)
    done = threading.Event()
    waiting = threading.Thread(target=done.wait)  # another thread: no fork, the store on a thread
    waiting.start()
    try:
        with tgr.open_many([english, chinese]) as stores:
            assert type(stores._workers[0]).__name__ == "StoreThread"
            threaded = stores.retrieve("Who is Marley? 孙悟空是谁？", "local", 10)
    finally:
        done.set()
        waiting.join()
    assert [(p.store, p.chunk_id, p.score) for p in threaded] == [(p.store, p.chunk_id, p.score) for p in forked]
    rankings = []
    for path in (english, chinese):  # the same as each store asked alone, fused
        with tgr.open(path, readonly=True) as kb:
            rankings.append(kb.retrieve("Who is Marley? 孙悟空是谁？", "local", 10))
    alone = fuse(rankings, [str(english), str(chinese)])[:10]
    assert [(p.store, p.chunk_id, p.text) for p in alone] == [(p.store, p.chunk_id, p.text) for p in forked]
