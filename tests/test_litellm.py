"""The litellm: provider: the real LiteLLM library against the fake OpenAI-compatible server
(fixtures/fakellm.py, loopback HTTP), through LiteLLM's `openai/` route with api_base from
--base-url and the key from LiteLLM's own variable (OPENAI_API_KEY). It indexes, answers local
and global questions, is cached (a rebuild asks nothing) and counted in the ledger."""
from __future__ import annotations

import importlib.util
import os
import sys

import pytest
from click.testing import CliRunner

from conftest import EN_CORPUS, rows
from fakellm import FakeServer
from tgr.cli import main
from tgr.errors import ModelError, TransientModelError
from tgr.models.litellm_chat import load_litellm

# imported here only through tgr, which sets LiteLLM's offline defaults first
pytestmark = pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="the litellm extra")

SMALL = ["--chunk-size", "300", "--chunk-overlap", "40", "-q"]
KEY = "sk-fake-litellm-0123456789"


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env={"OPENAI_API_KEY": KEY, **(env or {})})


def chat_ledger(path) -> tuple[int, int, int, int]:
    """(calls, cache hits, prompt tokens, completion tokens) of the store's chat calls."""
    return rows(path, "SELECT sum(1 - cache_hit), sum(cache_hit), sum(prompt_tokens * (1 - cache_hit)), "
                      "sum(completion_tokens * (1 - cache_hit)) FROM model_calls WHERE kind = 'chat' "
                      "AND model = 'litellm:openai/fake'")[0]


def test_a_litellm_model_indexes_answers_and_is_cached_and_counted(db_path):
    with FakeServer() as server:
        built = run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", "--base-url", server.url,
                    "--chat-model", "litellm:openai/fake", "--embed-model", "litellm:openai/fake-embedding", *SMALL)
        assert built.exit_code == 0, built.output
        assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # set by tgr: no price map fetched
        made = server.stats
        assert made.calls_by_kind["extract"] > 0 and made.calls_by_kind["community_report"] > 0
        assert made.embed_calls > 0
        meta = dict(rows(db_path, "SELECT key, value FROM meta"))
        assert meta["chat_model"] == "litellm:openai/fake" and meta["embed_model"] == "litellm:openai/fake-embedding"
        assert meta["embed_dim"] == "64"
        assert rows(db_path, "SELECT count(*) FROM entities")[0][0] > 0
        assert rows(db_path, "SELECT count(*) FROM extractions WHERE extractor = 'litellm:openai/fake'")[0][0] > 0

        # every call is in the ledger, with the tokens the server counted (LiteLLM's usage)
        calls, hits, prompt_tokens, completion_tokens = chat_ledger(db_path)
        assert (calls, prompt_tokens, completion_tokens) == (made.chat_calls, made.prompt_tokens,
                                                             made.completion_tokens)
        assert rows(db_path, "SELECT DISTINCT usage_source FROM model_calls WHERE kind = 'chat'") == [("api",)]
        assert KEY not in open(db_path, "rb").read().decode("latin-1")

        # the same prompts again: answered from the cache, no new HTTP call
        again = run("rebuild", db_path, "reports", "--base-url", server.url)
        assert again.exit_code == 0, again.output
        assert server.stats.chat_calls == made.chat_calls
        assert chat_ledger(db_path)[1] - (hits or 0) >= made.calls_by_kind["community_report"]

        for question, mode in (("Who is Marley?", "local"), ("Who is Scrooge?", "global")):
            before = server.stats.chat_calls
            answer = run("ask", db_path, question, "--mode", mode, "--base-url", server.url)
            assert answer.exit_code == 0, answer.output
            assert "warning" not in answer.output and answer.output.strip()
            assert server.stats.chat_calls > before  # answered by the model, through LiteLLM
        assert any("Marley" in m[-1]["content"] for m in server.conversations)


def test_streamed_answers_end_where_the_model_says(fake_server):
    from tgr.models.registry import make_chat

    chat = make_chat("litellm:openai/fake", base_url=fake_server.url, api_key=KEY)
    pieces = list(chat.stream("hello", history=[{"role": "user", "content": "hi"},
                                                 {"role": "assistant", "content": "OK"}]))
    completion = pieces[-1]
    assert "".join(pieces[:-1]) == completion.text == "OK"
    assert completion.finish_reason == "stop" and not completion.cut and completion.usage_source == "api"
    assert [m["role"] for m in fake_server.conversations[-1]] == ["user", "assistant", "user"]
    whole = chat.complete("hello")
    assert whole.text == "OK" and whole.prompt_tokens == 2


def test_without_the_extra_one_line_says_how_to_install_it(db_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "litellm", None)  # as if not installed: `import litellm` fails
    result = run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", "--chat-model",
                 "litellm:anthropic/claude-3-5-haiku-latest", *SMALL)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "pip install 'tgr[litellm]'" in lines[0], result.output


def test_errors_are_one_line_without_the_key(monkeypatch):
    from tgr.models.litellm_chat import LiteLLMChat

    litellm = load_litellm()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    chat = LiteLLMChat("anthropic/claude-3-5-haiku-latest")
    refused = chat._translate(litellm.AuthenticationError(
        message="invalid x-api-key sk-ant-secret-value\nsee docs", llm_provider="anthropic", model="claude"))
    assert type(refused) is ModelError and "sk-ant-secret-value" not in str(refused)
    assert "\n" not in str(refused) and "ANTHROPIC_API_KEY" in str(refused)
    limited = chat._translate(litellm.RateLimitError(message="slow down", llm_provider="anthropic", model="claude"))
    assert isinstance(limited, TransientModelError)
