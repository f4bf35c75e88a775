"""Answers as they are written: both providers' streams at the HTTP layer (the fake server
speaks OpenAI's and zhipuai's APIs), the gateway's retries, cache replay and broken streams,
kb.ask_stream in every mode, and `tgr ask --stream`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, ROOT, SMALL
from fakellm import FakeServer
from tgr.cli import main
from tgr.errors import ModelError
from tgr.models.gateway import Gateway
from tgr.models.clients import Completion, OpenAIChat, ZhipuChat
from tgr.offline.providers import HashEmbedder
from tgr.query.modes import Answer
from tgr.models.streamed_calls import stream_chat

PROMPT = ("-Goal-\nAnswer the question using only the data tables below.\n\n-Question-\nWho is Marley?\n\n"
          "-Data tables-\n-----Sources-----\nid|text\n1|Marley was dead: to begin with, and Scrooge his "
          "partner signed the register of his burial.\n2|Scrooge and Marley were partners for many years.\n")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "carol.db"
    with tgr.open(path, embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    return path


@pytest.fixture
def slow_fake():
    """0.2 s to the first piece, then a piece every 0.03 s."""
    with FakeServer(latency=0.2, piece_delay=0.03) as server:
        yield server


def timed(items):
    """(seconds at which each item arrived, the items)."""
    start, times, got = time.perf_counter(), [], []
    for item in items:
        times.append(time.perf_counter() - start)
        got.append(item)
    return times, got


@pytest.mark.parametrize("provider", ["openai", "zhipuai"])
def test_each_provider_streams_the_answer_piece_by_piece(slow_fake, provider):
    chat = (OpenAIChat("fake-chat", slow_fake.url, api_key="test-key") if provider == "openai" else
            ZhipuChat("glm-4-flash", api_key="id.secret", base_url=slow_fake.zhipu_url))
    whole = chat.complete(PROMPT).text
    times, items = timed(chat.stream(PROMPT, history=[{"role": "user", "content": "Hello?"},
                                                      {"role": "assistant", "content": "Hello."}]))
    pieces, completion = items[:-1], items[-1]
    assert isinstance(completion, Completion) and completion.usage_source == "api"
    assert len(pieces) > 5 and "".join(pieces) == completion.text == whole
    # the first piece came long before the last: text arrived while the answer was written
    assert times[-1] - times[0] >= 0.5 * 0.03 * (len(pieces) - 1)
    assert slow_fake.conversations[-1][:2] == [{"role": "user", "content": "Hello?"},
                                               {"role": "assistant", "content": "Hello."}]


@pytest.mark.parametrize("provider", ["openai", "zhipuai"])
def test_a_broken_stream_is_one_clear_line_and_nothing_is_cached(store, provider, tmp_path):
    with FakeServer(break_after=3) as fake:
        chat = (OpenAIChat("fake-chat", fake.url, api_key="test-key") if provider == "openai" else
                ZhipuChat("glm-4-flash", api_key="id.secret", base_url=fake.zhipu_url))
        with tgr.open(store, readonly=True, create=False) as kb:
            gateway = Gateway(kb.conn, chat, HashEmbedder(384), max_retries=2, backoff=0.01, write_cache=False)
            got = []
            with pytest.raises(ModelError, match="broke off after") as raised:
                for piece in stream_chat(gateway, "query", PROMPT, {}):
                    got.append(piece)
            assert len(got) == 3 and "\n" not in str(raised.value)
            assert fake.stats.chat_calls == 1  # text was given out: not asked again
            assert gateway.total_usage().calls == 0


def test_transient_errors_before_the_first_piece_are_retried(store):
    with FakeServer(faults=1.0, fault_kinds=("429",)) as fake:
        with tgr.open(store, readonly=True, create=False) as kb:
            gateway = Gateway(kb.conn, OpenAIChat("m", fake.url, api_key="k"), HashEmbedder(384),
                              backoff=0.01, write_cache=False)
            text = "".join(stream_chat(gateway, "query", PROMPT, {}))
        assert text.startswith("According to the data") and fake.stats.faults_injected == 1
        assert fake.stats.chat_calls == 2 and gateway.total_usage().calls == 1


def test_a_cached_answer_is_replayed_at_once(store, tmp_path):
    copy = tmp_path / "copy.db"
    copy.write_bytes(store.read_bytes())
    with FakeServer(latency=0.3, piece_delay=0.05) as fake, tgr.open(copy) as kb:
        gateway = Gateway(kb.conn, OpenAIChat("m", fake.url, api_key="k"), HashEmbedder(384))
        first = list(stream_chat(gateway, "query", PROMPT, {}))  # streamed, then cached
        assert len(first) > 3
        started = time.perf_counter()
        again = list(stream_chat(gateway, "query", PROMPT, {}))
        assert again == ["".join(first)] and time.perf_counter() - started < 0.25
        assert fake.stats.chat_calls == 1 and gateway.total_usage().cache_hits == 1


@pytest.mark.parametrize("mode", ["local", "naive", "global"])
def test_ask_stream_gives_text_before_the_answer_ends(store, slow_fake, mode):
    with tgr.open(store, readonly=True, create=False, chat="openai:fake-chat", base_url=slow_fake.url) as kb:
        times, items = timed(kb.ask_stream("Who is Marley?", mode))
        whole = kb.ask("Who is Marley?", mode)
        first = next(kb.ask("Who is Marley?", mode, stream=True))
    pieces, answer = items[:-1], items[-1]
    assert isinstance(answer, Answer) and all(isinstance(p, str) for p in pieces)
    assert len(pieces) > 3 and "".join(pieces) == answer.answer == whole.answer
    assert times[-1] - times[0] >= 0.5 * 0.03 * (len(pieces) - 1)  # the first words came early
    assert answer.model_calls == whole.model_calls >= 1 and answer.sources == whole.sources
    assert first == pieces[0]


@pytest.mark.parametrize("mode", ["local", "global"])
def test_an_offline_answer_comes_whole(store, mode):
    with tgr.open(store, readonly=True, create=False) as kb:
        items = list(kb.ask_stream("Who is Marley?", mode))
        assert len(items) == 2 and items[0] == items[1].answer == kb.ask("Who is Marley?", mode).answer


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def test_tgr_ask_streams_and_prints_the_sources_after(store, slow_fake):
    env = {"TGR_BASE_URL": slow_fake.url}
    streamed = run("ask", store, "Who is Marley?", "--chat-model", "openai:fake-chat", "--stream", env=env)
    whole = run("ask", store, "Who is Marley?", "--chat-model", "openai:fake-chat", "--no-stream", env=env)
    assert streamed.exit_code == 0 and whole.exit_code == 0, streamed.output + whole.output
    assert streamed.stdout == whole.stdout and "\nSources:\n" in streamed.stdout
    as_json = run("ask", store, "Who is Marley?", "--chat-model", "openai:fake-chat", "--json", env=env)
    from tgr.query.citations import numbered
    from tgr.query.modes import Answer
    # --json: never streamed, its own citation numbers; the plain text numbers them 1..N
    assert numbered(Answer(**json.loads(as_json.stdout)))[0] in streamed.stdout
    offline = [run("ask", store, "Who is Marley?", flag).stdout for flag in ("--stream", "--no-stream")]
    assert offline[0] == offline[1] and "Sources:" in offline[0]


def test_a_stream_that_breaks_in_tgr_ask_ends_with_one_error_line(store):
    with FakeServer(break_after=4) as fake:
        result = run("ask", store, "Who is Marley?", "--chat-model", "openai:fake-chat", "--stream",
                     env={"TGR_BASE_URL": fake.url})
    assert result.exit_code == 1
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and "broke off after" in errors[0]
    assert result.stdout.endswith("\n") and "Sources" not in result.stdout


def test_ctrl_c_stops_a_streamed_answer_cleanly(store):
    with FakeServer(latency=0.1, piece_delay=1.0) as fake:
        process = subprocess.Popen(
            [sys.executable, "-m", "tgr.cli", "ask", str(store), "Who is Marley?", "--chat-model",
             "openai:fake-chat", "--stream"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={"PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"], "TGR_BASE_URL": fake.url,
                 "TGR_EMBED_MODEL": "tgr:hash-384"})
        first = process.stdout.read(5)  # the first words are out; the answer is still being written
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert first and process.returncode == 130
    assert err.decode().strip().splitlines()[-1] == "interrupted" and "Traceback" not in err.decode()
