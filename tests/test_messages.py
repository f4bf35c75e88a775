"""The messages a new user meets, each one line that says what to do (issue 26 item 8), and the
Python API that creates nothing it was not asked to (item 7)."""
from __future__ import annotations

import json
import signal
import warnings

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, FakeServer
from test_author_run import MODELS, SHAPE, interrupt_when, tgr_process, tgr_run
from tgr.cli import main
from tgr.errors import StoreError

ONE_FILE = EN_CORPUS / "carol_stave1_part1.txt"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def offline_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("msg") / "demo.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(ONE_FILE)], chunk_size=300, chunk_overlap=40)
    return path


def test_a_forgotten_question_is_named(offline_store):
    result = run("ask", offline_store)
    assert result.exit_code == 2 and "missing the question" in result.stderr and "Missing argument" not in result.stderr
    assert f'tgr ask {offline_store} "QUESTION"' in result.stderr


def test_an_empty_file_is_not_called_missing(tmp_path):
    empty = tmp_path / "zero.db"
    empty.touch()
    for command in (["ask", empty, "Who?"], ["info", empty], ["stats", empty]):
        result = run(*command)
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1 and "empty file (0 bytes)" in lines[0], result.output
    assert empty.read_bytes() == b""


def test_one_line_per_skipped_file_and_no_repeat(tmp_path):
    blob, other = tmp_path / "blob.txt", tmp_path / "other.txt"
    blob.write_bytes(b"\x00\x01\x02binary" * 100)
    other.write_bytes(b"\x00\xff\xfe" * 100)
    result = run("index", tmp_path / "b.db", blob, other, "--offline")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1
    assert sum("blob.txt" in line for line in lines) == 1 and sum("other.txt" in line for line in lines) == 1
    assert len(lines) == 3 and "nothing to index" in lines[-1]


def test_asking_an_unfinished_store_answers_and_says_so_in_a_line_of_its_own(tmp_path):
    store = tmp_path / "int.db"
    text = tmp_path / "carol.txt"
    text.write_text(ONE_FILE.read_text(encoding="utf-8")[:3000], encoding="utf-8")
    with FakeServer(latency=2.0) as server:
        interrupt_when(tgr_process("index", store, text, "--base-url", server.url, *MODELS, *SHAPE),
                       lambda: server.stats.chat_calls >= 1)
        host = server.url.split("/")[2]
    code, out, err = tgr_run("ask", store, "Who is Marley?")
    lines = err.strip().splitlines()
    assert code == 0 and "Marley" in out, err
    assert len(lines) == 2, lines
    keyless, unfinished = lines
    # the keyless note: at most two lines of a terminal, naming the host the author used
    assert len(keyless) <= 200 and host in keyless and "openai:fake-chat" in keyless and "--base-url" in keyless
    assert "unfinished" in unfinished and f"`tgr index {store}`" in unfinished and "empty store" not in err


def test_the_python_api_creates_a_file_only_to_build(tmp_path):
    typo = tmp_path / "typo.db"
    with pytest.raises(StoreError, match="no such tgr store"):
        with tgr.open(typo) as kb:
            kb.ask("Who is Scrooge?")
    assert not typo.exists()
    with tgr.open(tmp_path / "made.db", create=True):
        pass
    assert (tmp_path / "made.db").exists()
    with tgr.open(tmp_path / "built.db", chat="offline") as kb:
        kb.index([str(ONE_FILE)], chunk_size=300, chunk_overlap=40)
        assert kb.info()["documents"] == 1


def test_degrade_notes_are_python_warnings(tmp_path, fake_server):
    store = tmp_path / "api.db"
    built = run("index", store, ONE_FILE, "--base-url", fake_server.url, *MODELS, "--chunk-size", "300", "-q")
    assert built.exit_code == 0, built.output
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tgr.open(store, readonly=True) as kb:
            answer = kb.ask("Who is Marley?")
    said = [w for w in caught if issubclass(w.category, tgr.TgrWarning)]
    assert len(said) == 1 and "openai:fake-embed" in str(said[0].message) and answer.answer
    assert said[0].filename == __file__  # points at the script's own line
