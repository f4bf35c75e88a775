"""The ollama: provider against a fake Ollama server (fixtures/fakeollama.py, Ollama's own API):
num_ctx and num_predict on every request, the extraction schema as `format`, the window from
/api/show, a looping answer stopped and its chunk extracted offline, the store's record and a
resume with it, and one clear line for a model the server does not have."""
from __future__ import annotations

import pytest
import sqlean as sqlite3
from click.testing import CliRunner

from conftest import EN_CORPUS, rows
from fakellm import prompt_kind
from fakeollama import FakeOllama
from tgr.cli import main
from tgr.errors import ModelError, OutOfReach
from tgr.models.ollama import DEFAULT_NUM_CTX, OllamaChat, ollama_url
from tgr.models.registry import make_chat, make_embedder

MODEL = "qwen2.5:0.5b"
SMALL = ["--chunk-size", "300", "--chunk-overlap", "40", "-q"]
LOOPS = "Marley was dead, to begin with."  # the extraction of the chunk that says this loops


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def meta(path) -> dict:
    return dict(rows(path, "SELECT key, value FROM meta"))


def loops(prompt: str) -> bool:
    return prompt_kind(prompt) == "extract" and LOOPS in prompt


@pytest.fixture
def ollama():
    with FakeOllama(models={MODEL: 32768, "tiny:latest": 4096}, loop_when=loops) as server:
        yield server


def test_a_store_built_with_ollama_sets_num_ctx_and_the_schema_and_resumes_with_it(db_path, ollama):
    result = run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", "--base-url", ollama.url,
                 "--chat-model", f"ollama:{MODEL}", "--embed-model", "ollama:nomic-embed-text", *SMALL)
    assert result.exit_code == 0, result.output
    chats = ollama.requests["/api/chat"]
    assert chats and {c["options"]["num_ctx"] for c in chats} == {DEFAULT_NUM_CTX}  # min(32768, 8192)
    assert all(isinstance(c["options"]["num_predict"], int) and c["options"]["temperature"] == 0.0
               and c["stream"] is True for c in chats)
    extracting = [c for c in chats if prompt_kind(c["messages"][-1]["content"]) == "extract"]
    assert extracting and all(c["format"]["properties"]["entities"]["type"] == "array" for c in extracting)
    assert all(c["options"]["num_predict"] < 4096 for c in extracting)  # bounded by the chunk
    reporting = [c for c in chats if prompt_kind(c["messages"][-1]["content"]) == "community_report"]
    assert reporting and all("findings" in c["format"]["properties"] for c in reporting)
    assert ollama.requests["/api/show"][0] == {"model": MODEL}

    recorded = meta(db_path)
    assert recorded["chat_model"] == f"ollama:{MODEL}" and recorded["embed_model"] == "ollama:nomic-embed-text"
    assert recorded["chat_context_tokens"] == str(DEFAULT_NUM_CTX)
    assert recorded["chat_output_form"] == "ollama"
    assert recorded["endpoint_host"] == ollama.url.removeprefix("http://")

    # the looping answer was stopped (the client hung up) and its chunk extracted offline
    assert ollama.hung_up >= 1
    by = {(LOOPS in " ".join(text.split()), extractor) for text, extractor in rows(
        db_path, "SELECT c.text, x.extractor FROM extractions x JOIN chunks c ON c.id = x.chunk_id")}
    assert by == {(True, "fallback: looping answer"), (False, f"ollama:{MODEL}")}
    assert rows(db_path, "SELECT count(*) FROM entities")[0][0] > 0

    # resumed with no model options: the recorded models, at the server OLLAMA_HOST names; the
    # output form another endpoint took (as if recorded there) is no use to Ollama's own API
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE meta SET value = 'json_schema' WHERE key = 'chat_output_form'")
    conn.close()
    before = len(chats)
    host = ollama.url.removeprefix("http://")
    again = run("index", db_path, EN_CORPUS / "carol_stave1_part2.txt", *SMALL, env={"OLLAMA_HOST": host})
    assert again.exit_code == 0, again.output
    later = ollama.requests["/api/chat"][before:]
    assert later and {c["model"] for c in later} == {MODEL}
    assert {c["options"]["num_ctx"] for c in later} == {DEFAULT_NUM_CTX}
    assert all("format" in c for c in later if prompt_kind(c["messages"][-1]["content"]) == "extract")
    assert meta(db_path)["chat_output_form"] == "ollama"
    answer = run("ask", db_path, "Who is Marley?", env={"OLLAMA_HOST": host})
    assert answer.exit_code == 0, answer.output
    assert ollama.requests["/api/chat"][-1]["model"] == MODEL and "warning" not in answer.output


def test_a_model_the_server_does_not_have_is_one_clear_line(db_path, ollama):
    result = run("index", db_path, EN_CORPUS / "carol_stave1_part1.txt", "--base-url", ollama.url,
                 "--chat-model", "ollama:llama3.2", *SMALL)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "ollama pull llama3.2" in lines[0], result.output
    asked = [c["messages"][-1]["content"] for c in ollama.requests["/api/chat"]]
    assert len(asked) == len(set(asked))  # never asked again


def test_the_window_is_the_models_own_at_most_the_default_or_the_size_given(ollama):
    tiny = OllamaChat("tiny", ollama.url)  # "tiny" is "tiny:latest", 4096 tokens
    assert tiny.context_window() == 4096 and tiny.context_tokens == 4096
    tiny.context_tokens = 100_000  # --context-tokens larger than the model: the model's
    assert tiny.context_tokens == 4096
    big = OllamaChat(MODEL, ollama.url, context_tokens=16_384)
    assert big.context_window() == 16_384 and big.request_body("hi")["options"]["num_ctx"] == 16_384
    assert OllamaChat(MODEL, ollama.url).context_window() == DEFAULT_NUM_CTX
    unknown = OllamaChat("absent", ollama.url)  # /api/show says 404: unknown, never raised
    assert unknown.context_window() is None and unknown.context_tokens == DEFAULT_NUM_CTX
    assert len(ollama.requests["/api/show"]) == 4  # asked once per client


def test_the_answer_ends_where_ollama_says(ollama):
    chat = OllamaChat(MODEL, ollama.url)
    cut = chat.complete("Build a knowledge graph from the text below.\n-Text-\nScrooge met Marley in London.\n"
                        "-Output-\n", max_tokens=2)
    assert cut.finish_reason == "length" and cut.cut and cut.usage_source == "api"
    whole = chat.complete("hello", history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "OK"}])
    assert whole.finish_reason == "stop" and whole.text == "OK"
    assert [m["role"] for m in ollama.requests["/api/chat"][-1]["messages"]] == ["user", "assistant", "user"]
    assert "format" not in ollama.requests["/api/chat"][-1]


def test_where_the_server_is(monkeypatch):
    assert ollama_url() == "http://127.0.0.1:11434"
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")
    assert ollama_url() == "http://127.0.0.1:11434"
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:8080")
    assert ollama_url() == "http://gpu-box:8080"
    assert ollama_url("http://localhost:11434/v1/") == "http://localhost:11434"  # its OpenAI-compatible URL
    assert make_chat("ollama:qwen2.5:7b").base_url == "http://gpu-box:8080"
    monkeypatch.delenv("OLLAMA_HOST")
    with pytest.raises(OutOfReach, match="gpu-box:8080.*--base-url"):  # a store built elsewhere
        make_chat("ollama:qwen2.5:7b", recorded_host="gpu-box:8080")
    assert make_chat("ollama:qwen2.5:7b", recorded_host="127.0.0.1:11434").name == "ollama:qwen2.5:7b"
    assert make_embedder("ollama:nomic-embed-text", base_url="http://h:1").name == "ollama:nomic-embed-text"


def test_errors_say_nothing_of_the_url_password(ollama):
    port = ollama.url.rsplit(":", 1)[1]
    chat = OllamaChat("llama3.2", f"http://user:s3cret@127.0.0.1:{port}")
    with pytest.raises(ModelError) as error:
        chat.complete("hi")
    assert "s3cret" not in str(error.value) and "ollama pull llama3.2" in str(error.value)
