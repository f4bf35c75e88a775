"""The author's run with an API model (fixtures/fakellm.py's loopback server, real processes):
the models are fixed when the run starts and kept by a resume with no model options, every
request is retried alike (the embedder's first one too), and a run interrupted anywhere
resumes to the store an uninterrupted run makes."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import sqlean as sqlite3
from click.testing import CliRunner

import tgr

from conftest import ROOT, FakeServer
from tgr.cli import main

TEXT = ("Marley was dead, to begin with. Scrooge and Marley were partners for many years. "
        "Scrooge never painted out Old Marley's name above the warehouse door. "
        "Bob Cratchit copied letters for Scrooge in a dismal little cell. "
        "Fred, the nephew of Scrooge, wished Bob Cratchit a merry Christmas. "
        "Fred invited Scrooge to dinner, and Scrooge refused Fred. "
        "Old Fezziwig kept a warehouse in London. Scrooge was his apprentice, and "
        "Fezziwig gave a Christmas ball for everyone who worked for him.\n")
MODELS = ["--chat-model", "openai:fake-chat", "--embed-model", "openai:fake-embed"]
SHAPE = ["--chunk-size", "30", "--chunk-overlap", "0", "--concurrency", "2", "-q"]


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "carol.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def tgr_process(*args, env=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TGR_API_KEY": "test-key", **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "tgr.cli", *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tgr_run(*args, env=None):
    process = tgr_process(*args, env=env)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def value(path, sql):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute(sql).fetchone()
        return row[0] if row else None
    finally:
        conn.close()


def store_state(path) -> dict:
    """What a store holds that an interruption must not change: its models and every derived row."""
    with tgr.open(path, readonly=True) as kb:
        state = {key: kb.meta.get(key) for key in ("chat_model", "embed_model", "embed_dim", "embed_vector",
                                                   "endpoint_host")}
        for table, key in (("chunks", "id || text"), ("entities", "id || description"),
                           ("relationships", "id || weight"), ("communities", "id || size"),
                           ("reports", "community_id || title"), ("vec_chunks", "id || hex(embedding)"),
                           ("vec_entities", "id || hex(embedding)"), ("vec_reports", "id || hex(embedding)")):
            state[table] = kb.conn.execute(f"SELECT group_concat(x, ';') FROM (SELECT {key} AS x FROM {table} "
                                           "ORDER BY 1)").fetchone()[0]
    return state


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def interrupt_when(process, ready, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before the point it was to be interrupted at"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err, err


def cached(path):
    try:
        return value(path, "SELECT count(*) FROM llm_cache")
    except sqlite3.OperationalError:
        return 0


@pytest.mark.parametrize("point", ["unreachable", "during-probe", "during-first-chat", "after-first-chat",
                                   "after-first-vectors"])
def test_a_resume_with_no_model_options_gives_the_uninterrupted_store(tmp_path, text, point):
    store, clean = tmp_path / "dd2.db", tmp_path / "clean.db"
    with FakeServer(latency=0.3, embed_latency=0.3) as server:
        first = ["index", store, text, "--base-url", server.url, *MODELS, *SHAPE]
        if point == "unreachable":  # the endpoint is down: the run stops at its first request
            code, _, err = tgr_run("index", store, text, "--base-url", closed_port_url(), *MODELS, *SHAPE,
                                   "--retries", "0")
            assert code == 1 and "Traceback" not in err
        else:
            ready = {"during-probe": lambda: server.stats.embed_calls >= 1,
                     "during-first-chat": lambda: server.stats.chat_calls >= 1,
                     "after-first-chat": lambda: cached(store) >= 1,
                     "after-first-vectors": lambda: server.stats.embed_calls >= 3}[point]
            interrupt_when(tgr_process(*first), ready)
        if point in ("unreachable", "during-probe"):  # before a document was stored: no file is kept
            assert not store.exists()
            code, _, err = tgr_run(*first)
        else:  # the README's resume: the endpoint from the environment, no model options
            assert value(store, "SELECT value FROM meta WHERE key = 'embed_model'") == "openai:fake-embed"
            code, _, err = tgr_run("index", store, "-q", env={"TGR_BASE_URL": server.url})
        assert code == 0, err
        code, _, err = tgr_run("index", clean, text, "--base-url", server.url, *MODELS, *SHAPE)
        assert code == 0, err
    resumed, uninterrupted = store_state(store), store_state(clean)
    assert resumed["embed_model"] == "openai:fake-embed" and resumed["chat_model"] == "openai:fake-chat"
    assert resumed["vec_chunks"] and resumed["reports"]
    assert resumed == uninterrupted


def test_a_resume_that_cannot_reach_the_recorded_models_names_what_to_pass(tmp_path, text):
    store = tmp_path / "dd2.db"
    with FakeServer(latency=2.0) as server:
        interrupt_when(tgr_process("index", store, text, "--base-url", server.url, *MODELS, *SHAPE),
                       lambda: server.stats.chat_calls >= 1)
    host = value(store, "SELECT value FROM meta WHERE key = 'endpoint_host'")
    assert host == server.url.split("/")[2]
    code, out, err = tgr_run("index", store, "-q")  # no endpoint named: the recorded host is not used
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert "openai:fake-chat" in lines[0] and host in lines[0] and "--base-url" in lines[0]
    assert value(store, "SELECT value FROM meta WHERE key = 'embed_model'") == "openai:fake-embed"


def test_the_embedders_first_request_is_retried_like_every_other(tmp_path, text, fake_server):
    fake_server.embed_faults = 1.0  # every embedding request fails once (429 or 500)
    store = tmp_path / "faulty.db"
    result = CliRunner().invoke(main, ["index", str(store), str(text), "--base-url", fake_server.url, *MODELS,
                                       *SHAPE])
    assert result.exit_code == 0, result.output
    assert fake_server.stats.faults_injected >= 2
    assert value(store, "SELECT count(*) FROM chunks WHERE embed_hash IS NULL") == 0
    assert value(store, "SELECT value FROM meta WHERE key = 'embed_dim'") == "64"
