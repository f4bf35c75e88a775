"""The click CLI, driven through CliRunner, checking the files it leaves behind."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from conftest import EN_CORPUS, ZH_CORPUS, rows
from tgr.cli import main

ROOT = Path(__file__).resolve().parent.parent
SMALL_ARGS = ["--chunk-size", "300", "--chunk-overlap", "40", "-q"]


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def test_index_prints_summary_and_writes_the_store(db_path):
    result = run("index", db_path, EN_CORPUS, *SMALL_ARGS)
    assert result.exit_code == 0, result.output
    for label in ("documents", "chunks", "entities", "relationships", "communities", "reports",
                  "model calls", "wall time"):
        assert label in result.output
    # offline: local hashing is not shown as model calls and tokens
    assert re.search(r"^model calls +none \(computed locally; \d+ local embedding batches\)$",
                     result.output, re.M)
    assert "tokens" not in result.output
    assert rows(db_path, "SELECT count(*) FROM documents")[0][0] == 2
    assert rows(db_path, "SELECT count(*) FROM entities")[0][0] > 10
    assert rows(db_path, "SELECT status FROM runs")[0][0] == "done"
    assert rows(db_path, "SELECT value FROM meta WHERE key = 'chat_model'")[0][0] == "offline-extractive"


def test_index_json_and_stdin(db_path):
    result = run("index", db_path, "-", "--json", *SMALL_ARGS,
                 input="Captain Ahab commands the Pequod. Ishmael sails on the Pequod with Queequeg.")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["documents"] == 1 and summary["entities"] >= 3
    assert rows(db_path, "SELECT source FROM documents")[0][0] == "<stdin>"


def test_ask_modes_json_and_context_only(db_path):
    assert run("index", db_path, ZH_CORPUS, *SMALL_ARGS).exit_code == 0
    for mode in ("local", "global", "naive"):
        result = run("ask", db_path, "孙悟空拜谁为师？", "--mode", mode, "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["mode"] == mode and data["answer"]
        assert set(data) >= {"answer", "mode", "sources", "model_calls", "prompt_tokens", "timings", "context"}
    context = run("ask", db_path, "孙悟空", "--context-only")
    assert context.exit_code == 0 and "-----Entities-----" in context.output
    plain = run("ask", db_path, "孙悟空")
    answer, listing = plain.output.split("\nSources:\n")
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
    assert cited == set(range(1, len(cited) + 1))  # numbered 1..N
    assert cited and all(f"  [{n}] " in listing for n in cited)  # the cited passages are listed
    assert "passages in the context" in listing


def test_info_and_stats(db_path):
    run("index", db_path, EN_CORPUS, *SMALL_ARGS)
    info = run("info", db_path, "--json")
    assert info.exit_code == 0
    data = json.loads(info.output)
    assert data["documents"] == 2 and data["embed_model"] == "tgr:hash-384"
    assert "0" in data["levels"] and data["size_bytes"] > 0
    text = run("info", db_path)
    assert "offline default" in text.output
    stats = run("stats", db_path)
    assert stats.exit_code == 0 and "embed-chunks" in stats.output and "index" in stats.output
    assert re.search(r"^embed-chunks +local ", stats.output, re.M)  # shown as a local computation
    assert not re.search(r"^\S+ +embed ", stats.output, re.M)
    data = json.loads(run("stats", db_path, "--json").output)
    assert {row["kind"] for row in data["by_stage"]} == {"local"}
    assert all(row["prompt_tokens"] == row["completion_tokens"] == 0 for row in data["by_stage"])
    assert data["runs"][0]["calls"] == data["runs"][0]["prompt_tokens"] == 0


def test_estimate_spends_nothing(db_path, fake_server):
    result = run("index", db_path, EN_CORPUS, "--estimate", "--json", "--base-url", fake_server.url,
                 "--chat-model", "openai:fake", "--chunk-size", "300", "--chunk-overlap", "40")
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.output)
    assert estimate["extraction_calls"] == estimate["new_chunks"] > 0
    assert estimate["prompt_tokens"] > 0
    assert fake_server.stats.chat_calls == 0
    assert not db_path.exists()


def test_index_through_an_openai_compatible_endpoint(db_path, fake_server):
    result = run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", "--base-url", fake_server.url,
                 "--chat-model", "fake-chat", "--embed-model", "openai:fake-embed", "--concurrency", "4",
                 *SMALL_ARGS)
    assert result.exit_code == 0, result.output
    assert rows(db_path, "SELECT value FROM meta WHERE key = 'chat_model'")[0][0] == "openai:fake-chat"
    assert rows(db_path, "SELECT value FROM meta WHERE key = 'embed_model'")[0][0] == "openai:fake-embed"
    calls = fake_server.stats.chat_calls
    assert calls > 0
    answer = run("ask", db_path, "Who is Marley?", "--base-url", fake_server.url, "--chat-model", "fake-chat")
    assert answer.exit_code == 0, answer.output
    assert fake_server.stats.chat_calls == calls + 1
    again = run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", "--base-url", fake_server.url,
                "--chat-model", "fake-chat", "--embed-model", "openai:fake-embed", "-q")
    assert again.exit_code == 0 and fake_server.stats.chat_calls == calls + 1


def test_errors_are_one_line_and_non_zero(tmp_path, db_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00garbage" * 200)
    result = run("ask", junk, "anything")
    assert result.exit_code == 1 and "not a usable SQLite database" in result.output
    assert len(result.output.strip().splitlines()) == 1

    result = run("ask", tmp_path / "absent.db", "anything")
    assert result.exit_code == 1 and "no such tgr store" in result.output
    assert not (tmp_path / "absent.db").exists()

    bad = tmp_path / "sjis.txt"
    bad.write_bytes("吾輩は猫である。名前はまだ無い。".encode("shift_jis"))
    result = run("index", db_path, bad, "-q")
    assert result.exit_code == 1 and "not UTF-8" in result.output

    run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", *SMALL_ARGS)
    result = run("ask", db_path, "Who?", "--embed-model", "openai:other", "--base-url", "http://127.0.0.1:9",
                 "--chat-model", "offline")
    assert result.exit_code == 1 and "tgr:hash-384" in result.output

    result = run("ask", db_path, "Who?", "--mode", "sideways")
    assert result.exit_code == 2


def test_a_failed_first_index_leaves_no_file_and_an_existing_store_stays(tmp_path):
    store = tmp_path / "stores" / "new.db"
    store.parent.mkdir()
    result = run("index", store, tmp_path / "nosuchdir", "-q")
    assert result.exit_code == 1 and "nosuchdir: no such file or directory" in result.output
    assert list(store.parent.iterdir()) == []  # no store, no -wal, no -shm
    result = run("index", store, "--chat-model", "nosuch:model", EN_CORPUS, "-q")
    assert result.exit_code != 0 and list(store.parent.iterdir()) == []

    assert run("index", store, EN_CORPUS / "carol_stave1_part1.txt", *SMALL_ARGS).exit_code == 0
    result = run("index", store, tmp_path / "nosuchdir", "-q")
    assert result.exit_code == 1 and rows(store, "SELECT count(*) FROM documents")[0][0] == 1
    touched = tmp_path / "stores" / "touched.db"  # a file that was there before is not ours to remove
    touched.touch()
    assert run("index", touched, tmp_path / "nosuchdir", "-q").exit_code == 1 and touched.exists()


def test_ctrl_c_before_a_document_is_stored_says_nothing_was_kept(tmp_path):
    """Interrupted while reading stdin: the new file is removed, and the message does not
    promise a resume from it."""
    store = tmp_path / "new.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "tgr.cli", "index", str(store), "-", "-q"], cwd=ROOT,
                               env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not store.exists():  # the store is created, stdin is being read
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)  # stdin stays open: an end of input must not race the signal
    err = process.stderr.read()
    process.stdin.close()
    process.stdout.close()
    process.stderr.close()
    assert process.returncode == 130, err
    assert "was not kept" in err and "resume" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_model_errors_do_not_leak_the_key(db_path, monkeypatch):
    secret = "sk-cli-secret-98765"
    monkeypatch.setenv("TGR_API_KEY", secret)
    # nothing listens on port 9: a connection error, retried, then reported
    result = run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", "--base-url", "http://127.0.0.1:9/v1",
                 "--chat-model", "x", "--embed-model", "tgr:hash-384", "--timeout", "0.5", *SMALL_ARGS,
                 "--concurrency", "2", "--retries", "1")
    assert result.exit_code == 1
    assert secret not in result.output
    assert "re-run to resume" in result.output or "127.0.0.1:9" in result.output
    assert rows(db_path, "SELECT count(*) FROM documents")[0][0] == 1  # what was ingested stays


def test_export_graphml(db_path, tmp_path):
    import networkx as nx

    run("index", db_path, EN_CORPUS, *SMALL_ARGS)
    out = tmp_path / "graph.graphml"
    result = run("export", db_path, out)
    assert result.exit_code == 0, result.output
    graph = nx.read_graphml(out)
    assert graph.number_of_nodes() == rows(db_path, "SELECT count(*) FROM entities")[0][0]
    assert graph.number_of_edges() == rows(db_path, "SELECT count(*) FROM relationships")[0][0]
    top = rows(db_path, "SELECT id, name FROM entities ORDER BY degree DESC, id LIMIT 1")[0]
    assert graph.nodes[top[0]]["name"] == top[1] and graph.nodes[top[0]]["community"].startswith("0.")


def test_python_dash_m_tgr_runs_the_command_line():
    from conftest import ROOT

    out = subprocess.run([sys.executable, "-m", "tgr", "--version"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("tgr, version ")
    out = subprocess.run([sys.executable, "-m", "tgr", "ask"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 2 and "Usage:" in out.stderr
