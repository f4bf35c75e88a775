"""`tgr index --batch` end to end: the real openai and zhipuai SDKs against the fake LLM's
Batch API (fixtures/fakebatch.py) over loopback HTTP. Every count of answers is taken at
the fake server, never from tgr."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, SMALL, FakeServer, rows
from tgr.build.batch import BATCH_PRICE, BatchOptions, BatchPending
from tgr.cli import main
from tgr.models.clients import OpenAIChat, OpenAIEmbedder, ZhipuChat

ONE_FILE = str(EN_CORPUS / "carol_stave1_part1.txt")
KEY = "sk-batch-secret-4242"
FAST = dict(poll_first=0.02, poll_max=0.05)  # the fake's jobs finish in a tenth of a second
CONTENT = ("SELECT id, name, type, description FROM entities ORDER BY id",
           "SELECT id, source_id, target_id, predicate, weight FROM relationships ORDER BY id",
           "SELECT id, level, parent_id, size FROM communities ORDER BY id",
           "SELECT community_id, title, summary, rating, findings FROM reports ORDER BY community_id",
           "SELECT key, model, prompt, params, response FROM llm_cache ORDER BY key")


def open_store(path, server, chat=None):
    return tgr.open(path, chat=chat or OpenAIChat("fake", server.url, api_key=KEY),
                    embedder=OpenAIEmbedder("fake-embedding", server.url, api_key=KEY))


def index_batch(path, server, paths=(ONE_FILE,), **options):
    with open_store(path, server) as kb:
        return kb.index(list(paths), batch=BatchOptions(**{**FAST, **options}), **SMALL)


def ledger(path):
    """(price, calls, prompt + completion tokens, billed tokens) of the chat rows of the ledger."""
    return rows(path, "SELECT price, count(*), sum(prompt_tokens + completion_tokens), "
                      "sum((prompt_tokens + completion_tokens) * price) FROM model_calls "
                      "WHERE kind = 'chat' AND cache_hit = 0 GROUP BY price ORDER BY price")


def test_a_batch_built_store_equals_a_synchronous_one_at_half_the_price(tmp_path):
    with FakeServer() as sync_server, open_store(tmp_path / "sync.db", sync_server) as kb:
        kb.index([ONE_FILE], **SMALL)
        sync_calls = sync_server.stats.chat_calls
    with FakeServer(batch_delay=0.05) as server:
        summary = index_batch(tmp_path / "batch.db", server)
        stats = server.stats
    assert stats.chat_calls == 0 and stats.batch_items == sync_calls > 0  # every prompt in a job
    assert stats.repaid == 0
    assert summary.batch_calls == sync_calls
    for sql in CONTENT:
        assert rows(tmp_path / "batch.db", sql) == rows(tmp_path / "sync.db", sql), sql
    (price, calls, tokens, billed), = ledger(tmp_path / "batch.db")
    (sync_price, sync_calls_2, sync_tokens, sync_billed), = ledger(tmp_path / "sync.db")
    assert (price, sync_price) == (BATCH_PRICE, 1.0) and calls == sync_calls_2
    assert tokens == sync_tokens and billed == sync_billed / 2
    jobs = rows(tmp_path / "batch.db", "SELECT stage, status, outcome FROM batch_jobs ORDER BY id")
    assert [stage for stage, _, _ in jobs][:2] == ["extract", "summarize"] and jobs[-1][0] == "report"
    assert {(status, outcome) for _, status, outcome in jobs} == {("completed", "collected")}
    assert KEY.encode() not in (tmp_path / "batch.db").read_bytes()


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_stopped_between_submit_and_collect_then_resumed_with_nothing_paid_twice(tmp_path, monkeypatch):
    monkeypatch.setenv("TGR_API_KEY", KEY)
    store = tmp_path / "store.db"
    models = ("--base-url", None, "--chat-model", "openai:fake", "--embed-model", "openai:fake-embedding")
    with FakeServer(batch_delay=0.2) as server:
        flags = [server.url if a is None else a for a in models]
        first = cli("index", store, ONE_FILE, *flags, "--batch", "--no-wait", "-q",
                    "--chunk-size", 300, "--chunk-overlap", 40)
        assert first.exit_code == 3, first.output
        assert "extract: 1 batch job(s)" in first.output and f"tgr index {store}" in first.output
        assert rows(store, "SELECT status FROM runs") == [("waiting",)]
        assert rows(store, "SELECT count(*) FROM extractions") == [(0,)]  # submitted, not collected
        exits = []
        for _ in range(20):  # each run collects what is done and submits the next wave
            again = cli("index", store, *flags, "--no-wait", "-q")
            exits.append(again.exit_code)
            if again.exit_code != 3:
                break
            import time
            time.sleep(0.2)
        assert exits[-1] == 0 and 3 in exits, (exits, again.output)
        stats = server.stats
    assert stats.chat_calls == 0 and stats.repaid == 0 and stats.batch_items > 0
    assert rows(store, "SELECT count(*) FROM reports")[0][0] > 0
    assert rows(store, "SELECT count(*) FROM batch_jobs WHERE outcome IS NOT 'collected'") == [(0,)]
    table = cli("stats", store)
    assert "billed tok" in table.output and "waiting" in table.output


def test_failed_requests_go_in_the_next_job(tmp_path):
    with FakeServer(batch_delay=0.02, batch_failures=0.3) as server:
        index_batch(tmp_path / "store.db", server)
        stats, failed = server.stats, server.batches.counts["failed"]
    assert failed > 0 and stats.chat_calls == 0 and stats.repaid == 0
    states = dict(rows(tmp_path / "store.db", "SELECT state, count(*) FROM batch_items GROUP BY state"))
    assert states == {"answered": stats.batch_items, "failed": failed}
    assert rows(tmp_path / "store.db", "SELECT count(*) FROM extractions")[0][0] > 0


def test_an_expired_job_keeps_its_answers_and_sends_the_rest_again(tmp_path):
    with FakeServer(batch_delay=0.02, batch_expire=0.3) as server:
        index_batch(tmp_path / "store.db", server)
        expired = server.batches.counts["expired"]
        assert server.stats.repaid == 0 and server.stats.chat_calls == 0
    assert expired > 0
    states = dict(rows(tmp_path / "store.db", "SELECT state, count(*) FROM batch_items GROUP BY state"))
    assert states["expired"] == expired
    jobs = rows(tmp_path / "store.db", "SELECT status FROM batch_jobs ORDER BY id")
    assert jobs[0] == ("expired",) and ("completed",) in jobs  # its rest went in the next job


def test_batch_fallback_answers_failures_synchronously(tmp_path):
    with FakeServer(batch_delay=0.02, batch_failures=0.3) as server:
        summary = index_batch(tmp_path / "store.db", server, fallback=True)
        stats, failed = server.stats, server.batches.counts["failed"]
    assert failed > 0 and stats.chat_calls == failed and stats.repaid == 0
    assert summary.batch_calls == stats.batch_items
    prices = {price: calls for price, calls, _, _ in ledger(tmp_path / "store.db")}
    assert prices == {BATCH_PRICE: stats.batch_items, 1.0: failed}


def test_an_endpoint_without_a_batch_api_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TGR_API_KEY", KEY)
    store = tmp_path / "store.db"
    with FakeServer(batch_api=False) as server:
        result = cli("index", store, ONE_FILE, "--base-url", server.url, "--chat-model", "openai:fake",
                     "--embed-model", "openai:fake-embedding", "--batch", "-q", "--retries", "0")
        assert server.stats.chat_calls == 0
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Batch API" in lines[0] and "404" in lines[0], result.output
    assert KEY not in result.output
    assert rows(store, "SELECT count(*) FROM documents") == [(1,)]  # what was ingested stays


def test_zhipuai_batches_through_its_own_sdk(tmp_path):
    key = "batchid42.S3CR3T-zhipu"
    with FakeServer(batch_delay=0.02) as server:
        chat = ZhipuChat("glm-4-flash", api_key=key, base_url=server.url)
        with open_store(tmp_path / "store.db", server, chat=chat) as kb:
            summary = kb.index([ONE_FILE], batch=BatchOptions(**FAST), **SMALL)
        stats = server.stats
    assert stats.chat_calls == 0 and stats.batch_items == summary.batch_calls > 0
    assert summary.reports > 0 and key.encode() not in (tmp_path / "store.db").read_bytes()


def test_no_wait_raises_pending_and_a_plain_index_collects(tmp_path):
    with FakeServer(batch_delay=0.1) as server:
        with pytest.raises(BatchPending) as pending:
            index_batch(tmp_path / "store.db", server, wait=False)
        assert pending.value.requests > 0
        with open_store(tmp_path / "store.db", server) as kb:  # no batch option: the open jobs decide
            kb.index([], batch=BatchOptions(only_open=True, **FAST))
        assert server.stats.chat_calls == 0 and server.stats.repaid == 0


def test_estimate_shows_the_batch_price(tmp_path):
    with FakeServer() as server, open_store(":memory:", server) as kb:
        synchronous = kb.estimate([ONE_FILE], **SMALL)
        batch = kb.estimate([ONE_FILE], batch=True, **SMALL)
    assert synchronous["billed_tokens"] > 0
    assert batch["billed_tokens"] == pytest.approx(synchronous["billed_tokens"] / 2, abs=1)
    assert json.dumps(batch)  # printable as --json


def test_an_answer_that_fails_its_check_is_asked_again_in_the_next_job(tmp_path):
    faults = dict(faults=0.3, fault_kinds=("malformed",))
    with FakeServer(**faults) as sync_server, open_store(tmp_path / "sync.db", sync_server) as kb:
        kb.index([ONE_FILE], **SMALL)
    with FakeServer(batch_delay=0.02, **faults) as server:
        index_batch(tmp_path / "batch.db", server)
        stats = server.stats
    assert stats.faults_injected > 0 and stats.chat_calls == 0
    states = dict(rows(tmp_path / "batch.db", "SELECT state, count(*) FROM batch_items GROUP BY state"))
    assert states["rejected"] == stats.faults_injected
    assert rows(tmp_path / "batch.db", "SELECT count(*) FROM batch_items WHERE state = 'rejected' AND key IN "
                                       "(SELECT key FROM llm_cache)") == [(stats.faults_injected,)]
    for sql in CONTENT:  # the second answer is the one kept, as with synchronous calls
        assert rows(tmp_path / "batch.db", sql) == rows(tmp_path / "sync.db", sql), sql


def test_a_job_the_provider_does_not_know_is_sent_again(tmp_path):
    store = tmp_path / "store.db"
    with FakeServer(batch_delay=5) as first:  # submitted to one server, which then goes away
        with pytest.raises(BatchPending):
            index_batch(store, first, wait=False)
    problems = CliRunner().invoke(main, ["check", str(store)]).output
    assert "Batch API jobs are submitted and not collected yet" in problems
    with FakeServer(batch_delay=0.02) as second:
        index_batch(store, second)
        assert second.stats.chat_calls == 0 and second.stats.repaid == 0
    outcomes = rows(store, "SELECT outcome FROM batch_jobs ORDER BY id")
    assert outcomes[0] == ("abandoned",) and set(outcomes[1:]) == {("collected",)}
    assert rows(store, "SELECT count(*) FROM reports")[0][0] > 0


def test_ctrl_c_while_waiting_for_a_job_then_a_plain_index_collects_it(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    store = tmp_path / "store.db"
    env = {**os.environ, "TGR_API_KEY": KEY, "PYTHONPATH": str(ROOT)}
    with FakeServer(batch_delay=60) as server:
        models = ["--base-url", server.url, "--chat-model", "openai:fake", "--embed-model", "openai:fake-embedding"]
        process = subprocess.Popen([sys.executable, "-m", "tgr.cli", "index", str(store), ONE_FILE, *models,
                                    "--batch", "--chunk-size", "300", "--chunk-overlap", "40"],
                                   cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not server.batches.counts["batches"]:
            time.sleep(0.05)
        time.sleep(0.5)  # polling now, with its progress line
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        assert process.returncode == 130 and "interrupted" in err and "extract (batch)" in err, err
        assert rows(store, "SELECT status FROM runs") == [("interrupted",)]
        server.batches.delay = 0  # the job finishes while nobody is waiting; the next ones at once
        done = subprocess.run([sys.executable, "-m", "tgr.cli", "index", str(store), *models, "-q"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "batch" in done.stdout  # the `batch  N calls at half price` line
        assert server.stats.chat_calls == 0 and server.stats.repaid == 0
    assert rows(store, "SELECT count(*) FROM batch_jobs WHERE outcome IS NULL") == [(0,)]


def test_a_wave_larger_than_one_job_is_split_at_the_providers_limits():
    from tgr.build.batch import MAX_BYTES, MAX_REQUESTS, _parts

    small = [(str(i), b"{}\n") for i in range(MAX_REQUESTS + 1)]
    assert [len(p) for p in _parts(small)] == [MAX_REQUESTS, 1]
    big = b"x" * (MAX_BYTES // 2 + 1)
    assert [len(p) for p in _parts([("a", big), ("b", big), ("c", b"{}\n")])] == [1, 2]
