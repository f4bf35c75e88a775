"""Asking and re-indexing a store use the models it records; only keys and endpoints come
from the environment. The chat model is reached at the wire level (the loopback fake server).
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS
from tgr.cli import main
from tgr.errors import ModelMismatch
from tgr.models.clients import ZhipuChat
from tgr.models.selection import chat_for_store, embedder_for_store

ONE_FILE = EN_CORPUS / "carol_stave1_part1.txt"
SMALL_ARGS = ["--chunk-size", "300", "--chunk-overlap", "40", "-q"]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def llm_store(db_path, fake_server):
    """A store built by an OpenAI-compatible chat model with a local (non-default) embedder."""
    built = run("index", db_path, ONE_FILE, "--base-url", fake_server.url, "--chat-model", "fake-chat",
                "--embed-model", "tgr:hash-128", *SMALL_ARGS)
    assert built.exit_code == 0, built.output
    return db_path


def test_ask_uses_the_recorded_chat_model_with_the_endpoint_from_the_environment(
        llm_store, fake_server, monkeypatch):
    monkeypatch.setenv("TGR_BASE_URL", fake_server.url)
    before = fake_server.stats.chat_calls
    result = run("ask", llm_store, "Who is Marley?", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"] == "openai:fake-chat"
    assert fake_server.stats.chat_calls == before + 1
    assert "warning" not in result.stderr

    with tgr.open(llm_store) as kb:  # the Python API does the same
        answer = kb.ask("Who is Marley?", mode="global")
        assert answer.model == "openai:fake-chat" and kb.model_note is None


def test_ask_without_the_endpoint_answers_extractively_and_says_so(llm_store, fake_server):
    before = fake_server.stats.chat_calls
    result = run("ask", llm_store, "Who is Marley?", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["answer"] and data["model"] != "openai:fake-chat"
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("warning: ")
    assert "openai:fake-chat" in warning[0] and "TGR_BASE_URL" in warning[0]
    assert fake_server.stats.chat_calls == before

    notes = []
    with tgr.open(llm_store) as kb:
        answer = kb.ask("Who is Marley?", warn=notes.append)
    assert answer.answer and notes == [kb.model_note] and "openai:fake-chat" in notes[0]


def test_ask_offline_keeps_a_local_embedder(llm_store, fake_server):
    before = fake_server.stats.chat_calls
    result = run("ask", llm_store, "Who is Marley?", "--offline", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["answer"] and result.stderr == ""
    assert fake_server.stats.chat_calls == before


def test_a_remote_embedder_that_cannot_be_reached_is_left_out_in_one_line(db_path, fake_server):
    built = run("index", db_path, ONE_FILE, "--base-url", fake_server.url, "--chat-model", "fake-chat",
                "--embed-model", "openai:fake-embed", *SMALL_ARGS)
    assert built.exit_code == 0, built.output
    for extra in ([], ["--offline"]):  # tests/test_keyless.py asks every mode
        result = run("ask", db_path, "Who is Marley?", *extra)
        assert result.exit_code == 0, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "openai:fake-embed" in lines[0]
    assert "TGR_BASE_URL" in run("ask", db_path, "Who is Marley?").stderr
    assert "offline" in run("ask", db_path, "Who is Marley?", "--offline").stderr


def test_reindexing_uses_the_recorded_chat_model(llm_store, fake_server, monkeypatch):
    extra = EN_CORPUS / "carol_stave1_part2.txt"
    missing = run("index", llm_store, extra, "-q")  # no endpoint: refused, nothing switched
    assert missing.exit_code == 1 and "openai:fake-chat" in missing.output and "TGR_BASE_URL" in missing.output
    monkeypatch.setenv("TGR_BASE_URL", fake_server.url)
    before = fake_server.stats.chat_calls
    again = run("index", llm_store, extra, "-q")
    assert again.exit_code == 0, again.output
    assert fake_server.stats.chat_calls > before
    with tgr.open(llm_store) as kb:
        assert kb.meta["chat_model"] == "openai:fake-chat" and kb.info()["documents"] == 2


def test_chat_for_store_resolution(monkeypatch):
    zhipu = {"chat_model": "zhipuai:glm-4-plus"}
    with pytest.raises(ModelMismatch, match="zhipuai:glm-4-plus.*ZHIPUAI_API_KEY"):
        chat_for_store(zhipu, None)
    chat, note = chat_for_store(zhipu, None, lenient=True)
    assert chat is None and "zhipuai:glm-4-plus" in note and "ZHIPUAI_API_KEY" in note
    monkeypatch.setenv("ZHIPUAI_API_KEY", "id.secret-for-tests")
    chat, note = chat_for_store(zhipu, None)
    assert isinstance(chat, ZhipuChat) and chat.name == "zhipuai:glm-4-plus" and note is None
    monkeypatch.setenv("TGR_CHAT_MODEL", "other")  # an ambient default does not override the store
    assert chat_for_store(zhipu, None)[0].name == "zhipuai:glm-4-plus"
    assert chat_for_store(zhipu, "glm-4-air")[0].name == "zhipuai:glm-4-air"  # an explicit one does
    # a store built offline stays offline, whatever key is around
    assert chat_for_store({"chat_model": "offline-extractive"}, None) == (None, None)
    # a name from an untrusted file is shown without its control characters
    _, note = chat_for_store({"chat_model": "bogus:\x1b]0;pwned\x07x"}, None, lenient=True)
    assert "\x1b" not in note and "\x07" not in note


def test_offline_embedder_spec_never_swaps_the_stores():
    assert embedder_for_store({}, "offline").name == "tgr:hash-384"
    local = {"embed_model": "tgr:hash-128", "embed_dim": "128"}
    assert embedder_for_store(local, "offline").name == "tgr:hash-128"
    with pytest.raises(ModelMismatch, match="zhipuai:embedding-3.*offline"):
        embedder_for_store({"embed_model": "zhipuai:embedding-3", "embed_dim": "1024"}, "offline")
