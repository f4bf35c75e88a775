"""Ctrl-C and kill -9 in the middle of a real `tgr index` process, then resume."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import sqlean as sqlite3

from conftest import EN_CORPUS, ROOT, FakeServer

from tgr.store.db import transaction

CORPUS = EN_CORPUS / "carol_stave1_part1.txt"


def index_command(db_path, url):
    return [sys.executable, "-m", "tgr.cli", "index", str(db_path), str(CORPUS), "--base-url", url,
            "--chat-model", "fake-chat", "--embed-model", "openai:fake-embed", "--concurrency", "2",
            "--chunk-size", "300", "--chunk-overlap", "40", "-q"]


def count(db_path, sql):
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def start_and_interrupt(db_path, server, sig):
    """Start an index, wait until some chunks are stored, then send sig."""
    env = {**os.environ, "TGR_API_KEY": "test-key", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(index_command(db_path, server.url), cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if db_path.exists():
            try:
                if count(db_path, "SELECT count(*) FROM extractions") >= 2:
                    break
            except sqlite3.OperationalError:  # schema not there yet
                pass
        time.sleep(0.05)
    process.send_signal(sig)
    out, err = process.communicate(timeout=30)
    return process.returncode, out, err, env


def finish(db_path, server, env):
    result = subprocess.run(index_command(db_path, server.url), cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result


def test_ctrl_c_exits_cleanly_and_resumes(tmp_path):
    db_path = tmp_path / "store.db"
    with FakeServer(latency=0.15) as server:
        code, _, err, env = start_and_interrupt(db_path, server, signal.SIGINT)
        assert code == 130
        assert "interrupted" in err and "run the same command again" in err
        assert "Traceback" not in err
        done = count(db_path, "SELECT count(*) FROM extractions")
        total = count(db_path, "SELECT count(*) FROM chunks")
        cached = count(db_path, "SELECT count(*) FROM llm_cache")
        assert 0 < done < total and cached >= done
        assert count(db_path, "SELECT status FROM runs ORDER BY id LIMIT 1") == "interrupted"

        calls_before = server.stats.chat_calls
        finish(db_path, server, env)
        resumed_calls = server.stats.chat_calls - calls_before
        # the finished extractions were not asked again
        assert resumed_calls == count(db_path, "SELECT count(*) FROM llm_cache") - cached
        assert count(db_path, "SELECT count(*) FROM extractions") == total
        assert count(db_path, "SELECT count(*) FROM reports") > 0


def test_kill_9_loses_nothing_committed(tmp_path):
    db_path = tmp_path / "store.db"
    with FakeServer(latency=0.15) as server:
        code, _, _, env = start_and_interrupt(db_path, server, signal.SIGKILL)
        assert code == -signal.SIGKILL
        done = count(db_path, "SELECT count(*) FROM extractions")
        cached = count(db_path, "SELECT count(*) FROM llm_cache")
        assert done >= 2 and cached >= done
        calls_before = server.stats.chat_calls
        finish(db_path, server, env)
        assert server.stats.chat_calls - calls_before == count(db_path, "SELECT count(*) FROM llm_cache") - cached
        assert count(db_path, "SELECT count(*) FROM extractions") == count(db_path, "SELECT count(*) FROM chunks")

        # and the result is the same as an uninterrupted run
        clean = tmp_path / "clean.db"
        finish(clean, server, env)
        assert count(db_path, "SELECT count(*) FROM chunks_unindexed") == 0  # every chunk searchable
        for table, key in (("chunks", "id, terms"), ("entities", "id, description"), ("relationships", "id, weight"),
                           ("communities", "id, size"), ("reports", "community_id, title")):
            sql = f"SELECT group_concat(x, ';') FROM (SELECT {key.replace(', ', ' || ')} AS x FROM {table} ORDER BY 1)"
            assert count(db_path, sql) == count(clean, sql), table


def test_answers_arriving_after_ctrl_c_are_kept(tmp_path):
    """Calls in flight when Ctrl-C arrives are awaited and cached: resuming never pays twice."""
    db_path = tmp_path / "store.db"
    env = {**os.environ, "TGR_API_KEY": "test-key", "PYTHONPATH": str(ROOT)}
    with FakeServer(latency=1.0) as server:
        process = subprocess.Popen(index_command(db_path, server.url), cwd=ROOT, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while server.stats.chat_calls < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the next calls are in flight now
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 130 and "Traceback" not in err, err
        paid = server.stats.chat_calls
        assert count(db_path, "SELECT count(*) FROM llm_cache") == paid
        finish(db_path, server, env)
        assert server.stats.chat_calls == count(db_path, "SELECT count(*) FROM llm_cache")  # none paid twice


def test_an_interrupted_store_is_finished_without_its_input_files(tmp_path):
    db_path = tmp_path / "store.db"
    with FakeServer(latency=0.15) as server:
        code, _, _, env = start_and_interrupt(db_path, server, signal.SIGINT)
        assert code == 130
        total = count(db_path, "SELECT count(*) FROM chunks")
        done = count(db_path, "SELECT count(*) FROM extractions")
        run = lambda *args: subprocess.run([sys.executable, "-m", "tgr.cli", *args], cwd=ROOT, env=env,  # noqa: E731
                                           capture_output=True, text=True, timeout=60)
        checked = run("check", str(db_path))
        assert f"{total - done} of {total} chunks are not extracted yet" in checked.stdout
        assert f"`tgr index {db_path}` finishes them" in checked.stdout
        assert "entity names changed since the graph was last merged" in checked.stdout

        # no PATHS: only what the store holds is finished (as for a shipped file without its corpus)
        finished = run("index", str(db_path), "--base-url", server.url, "--chat-model", "fake-chat",
                       "--embed-model", "openai:fake-embed", "-q")
        assert finished.returncode == 0, finished.stderr
        assert count(db_path, "SELECT count(*) FROM extractions") == total
        assert count(db_path, "SELECT count(*) FROM documents") == 1
        assert count(db_path, "SELECT count(*) FROM reports") > 0
        assert count(db_path, "SELECT count(*) FROM chunks WHERE embed_hash IS NULL") == 0
        assert "is a complete tgr store" in run("check", str(db_path)).stdout


def test_index_without_paths_creates_nothing(tmp_path):
    missing = tmp_path / "new.db"
    result = subprocess.run([sys.executable, "-m", "tgr.cli", "index", str(missing), "--offline"], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "nothing to index" in result.stderr
    assert not missing.exists()


def test_a_commit_that_fails_leaves_no_transaction_open(tmp_path):
    """A COMMIT that fails (as one a Ctrl-C interrupts does) keeps its transaction open in SQLite:
    `transaction` rolls it back, so the next write of the run (the Ctrl-C handler's own saves)
    can begin instead of failing with 'cannot start a transaction within a transaction'."""
    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    conn.executescript("PRAGMA foreign_keys = ON; CREATE TABLE parent(id INTEGER PRIMARY KEY);"
                       "CREATE TABLE child(parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);")
    with pytest.raises(sqlite3.IntegrityError):
        with transaction(conn):
            conn.execute("INSERT INTO child VALUES (7)")  # checked only at COMMIT
    assert not conn.in_transaction
    with transaction(conn):
        conn.execute("INSERT INTO parent VALUES (7)")
    assert conn.execute("SELECT count(*) FROM child").fetchone()[0] == 0
