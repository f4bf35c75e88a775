"""Keys and endpoints follow the ecosystem's conventions: flags > TGR_* > the provider's own
variables (OPENAI_API_KEY, OPENAI_BASE_URL, ZHIPUAI_API_KEY), OpenAI's endpoint by default;
a store's recorded endpoint host is shown, never sent anything."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS
from tgr.cli import main
from tgr.errors import ModelError, ModelMismatch
from tgr.models.registry import OPENAI_URL, make_chat, make_embedder
from tgr.models.selection import chat_for_store

ONE_FILE = EN_CORPUS / "carol_stave1_part1.txt"


def authorization(model) -> str:
    return model._http.headers["Authorization"]


def test_openai_models_read_the_openai_variables(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    chat = make_chat("openai:gpt-4o-mini")
    assert chat.base_url == OPENAI_URL and authorization(chat) == "Bearer sk-openai"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.example:8080/v1")
    embedder = make_embedder("openai:text-embedding-3-small")
    assert embedder.base_url == "http://proxy.example:8080/v1" and authorization(embedder) == "Bearer sk-openai"


def test_flags_then_tgr_variables_then_the_providers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://openai-var.example/v1")
    monkeypatch.setenv("TGR_API_KEY", "sk-tgr")
    monkeypatch.setenv("TGR_BASE_URL", "http://tgr-var.example/v1")
    chat = make_chat("openai:m")
    assert chat.base_url == "http://tgr-var.example/v1" and authorization(chat) == "Bearer sk-tgr"
    chat = make_chat("openai:m", base_url="http://flag.example/v1", api_key="sk-flag")
    assert chat.base_url == "http://flag.example/v1" and authorization(chat) == "Bearer sk-flag"
    monkeypatch.setenv("ZHIPUAI_API_KEY", "zhipu.var")
    assert make_chat("zhipuai:glm-4-flash")._key == "sk-tgr"
    monkeypatch.delenv("TGR_API_KEY")
    assert make_chat("zhipuai:glm-4-flash")._key == "zhipu.var"


def test_openais_endpoint_needs_a_key_and_says_which(monkeypatch):
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        make_chat("openai:gpt-4o-mini")
    # a named endpoint (Ollama, vLLM) needs none
    assert make_chat("openai:qwen", base_url="http://127.0.0.1:11434/v1").base_url == "http://127.0.0.1:11434/v1"


def test_the_recorded_host_is_shown_never_sent_a_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    meta = {"chat_model": "openai:fake-chat", "endpoint_host": "evil.example:8000"}
    with pytest.raises(ModelMismatch, match="evil.example:8000.*--base-url") as caught:
        chat_for_store(meta, None)
    assert "sk-secret" not in str(caught.value)
    chat, note = chat_for_store(meta, None, lenient=True)
    assert chat is None and "evil.example:8000" in note
    # the user names an endpoint: that one is used
    monkeypatch.setenv("OPENAI_BASE_URL", "http://mine.example/v1")
    assert chat_for_store(meta, None)[0].base_url == "http://mine.example/v1"


def test_the_cli_indexes_with_the_openai_variables(db_path, fake_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.url)
    result = CliRunner().invoke(main, ["index", str(db_path), str(ONE_FILE), "--chat-model", "openai:fake-chat",
                                       "--embed-model", "openai:fake-embed", "--chunk-size", "300", "-q"])
    assert result.exit_code == 0, result.output
    assert fake_server.stats.chat_calls > 0
    with tgr.open(db_path, readonly=True) as kb:
        assert kb.meta["endpoint_host"] == fake_server.url.split("/")[2]
        assert "sk-openai" not in str(kb.meta)


def test_an_endpoint_model_name_with_a_colon_is_not_read_as_a_provider(monkeypatch):
    """Ollama names its models "qwen2.5:7b": with a base URL that is the endpoint's model, not a
    provider called qwen2.5; without one, an unknown prefix is still refused."""
    monkeypatch.setenv("TGR_API_KEY", "k")
    chat = make_chat("qwen2.5:7b", base_url="http://127.0.0.1:9/v1")
    assert chat.name == "openai:qwen2.5:7b"
    assert make_chat(chat.name, base_url="http://127.0.0.1:9/v1").name == chat.name  # as a store records it
    assert make_embedder("nomic-embed-text:v1.5", base_url="http://127.0.0.1:9/v1").name == "openai:nomic-embed-text:v1.5"
    with pytest.raises(ModelError, match="unknown chat provider"):
        make_chat("qwen2.5:7b")


def test_a_bare_model_name_follows_the_openai_variables(monkeypatch):
    """A user of the openai SDK's variables passes a bare name: it goes to that endpoint (or to
    OpenAI's with only OPENAI_API_KEY), not to zhipuai; a zhipuai key keeps bare names on zhipuai."""
    for name in ("TGR_BASE_URL", "TGR_API_KEY", "ZHIPUAI_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    chat = make_chat("qwen2.5:7b")
    assert chat.name == "openai:qwen2.5:7b" and chat.base_url == "http://127.0.0.1:9/v1"
    assert make_embedder("nomic-embed-text").name == "openai:nomic-embed-text"
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert make_chat("gpt-4o-mini").name == "openai:gpt-4o-mini"
    monkeypatch.setenv("ZHIPUAI_API_KEY", "zk-test")
    assert make_chat("glm-4-flash").name == "zhipuai:glm-4-flash"


def test_the_embedders_dimension_probe_is_in_the_ledger(db_path, fake_server, monkeypatch):
    """Every request the endpoint answers is a ledger row: the run's first, the dimension probe, too."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.url)
    result = CliRunner().invoke(main, ["index", str(db_path), str(ONE_FILE), "--chat-model", "openai:fake-chat",
                                       "--embed-model", "openai:fake-embed", "--chunk-size", "300", "-q"])
    assert result.exit_code == 0, result.output
    with tgr.open(db_path, readonly=True) as kb:
        rows = kb.conn.execute("SELECT count(*) FROM model_calls WHERE kind = 'embed'").fetchone()[0]
    assert rows == fake_server.stats.embed_calls
