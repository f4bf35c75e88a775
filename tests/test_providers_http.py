"""The model providers at the HTTP layer, without any network.

zhipuai: the real zhipuai SDK behind tgr.models.clients.ZhipuChat / ZhipuEmbedder, talking to an
httpx.MockTransport that answers with the real API's JSON shapes. OpenAI-compatible:
tgr.models.clients.OpenAIChat / OpenAIEmbedder against the loopback fake server (and a
MockTransport for error statuses). tgr.models.registry: spec resolution and the refusal to
query a store with another embedder than the one it was built with.
"""
from __future__ import annotations

import json

import httpx
import pytest

import tgr
from conftest import EN_CORPUS, SMALL, ScriptedChat, ScriptedEmbedder
from tgr.errors import ModelError, ModelMismatch, TransientModelError
from tgr.models.clients import EMBED_BATCH, OpenAIChat, OpenAIEmbedder, ZhipuChat, ZhipuEmbedder
from tgr.offline.providers import HashEmbedder
from tgr.models.registry import make_chat, make_embedder
from tgr.models.selection import embedder_for_store

# A distinctive key: an "id.secret" zhipuai key that must never show up in a message.
SECRET_KEY = "tgrtestid42.S3CR3T-do-not-leak-9f8e7d"
ONE_FILE = str(EN_CORPUS / "carol_stave1_part1.txt")


# --- a mock zhipuai API ------------------------------------------------------------------

def chat_body(content: str = "Hello from GLM.", usage: dict | None = None) -> dict:
    body = {
        "id": "20240101-abc",
        "created": 1_700_000_000,
        "model": "glm-4-flash",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "request_id": "req-1",
    }
    body["usage"] = usage if usage is not None else {
        "prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    return body


def vector_for(text: str, dim: int) -> list[float]:
    """A vector whose first component identifies the input ("item-17" -> 17.0)."""
    first = float(text.rsplit("-", 1)[-1]) if text.startswith("item-") else 0.5
    return [first] + [0.0] * (dim - 1)


def embed_body(inputs: list[str], dim: int, reverse: bool = False) -> dict:
    rows = [{"embedding": vector_for(t, dim), "index": i, "object": "embedding"}
            for i, t in enumerate(inputs)]
    if reverse:  # the API does not promise order: tgr must sort by index
        rows.reverse()
    return {"model": "embedding-3", "data": rows, "object": "list",
            "usage": {"prompt_tokens": len(inputs), "completion_tokens": 0,
                      "total_tokens": len(inputs)}}


class MockZhipu:
    """An httpx handler recording requests and answering like open.bigmodel.cn."""

    def __init__(self, respond=None):
        self.requests: list[httpx.Request] = []
        self.respond = respond

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.respond is not None:
            return self.respond(request)
        body = json.loads(request.content)
        if request.url.path.endswith("/embeddings"):
            return httpx.Response(200, json=embed_body(body["input"], body.get("dimensions", 1024),
                                                       reverse=True))
        return httpx.Response(200, json=chat_body())

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    def bodies(self) -> list[dict]:
        return [json.loads(r.content) for r in self.requests]


def zhipu_chat(handler: MockZhipu, **kwargs) -> ZhipuChat:
    return ZhipuChat(api_key=SECRET_KEY, http_client=handler.client(), **kwargs)


def zhipu_embedder(handler: MockZhipu, **kwargs) -> ZhipuEmbedder:
    return ZhipuEmbedder(api_key=SECRET_KEY, http_client=handler.client(), **kwargs)


def error_response(status: int, headers: dict | None = None):
    """An error answer that echoes the Authorization header, as a careless server might."""

    def respond(request: httpx.Request) -> httpx.Response:
        echoed = request.headers.get("Authorization", "")
        return httpx.Response(status, headers=headers or {}, json={
            "error": {"code": "1000", "message": f"request rejected; you sent {echoed}"}})

    return respond


# --- zhipuai chat ------------------------------------------------------------------------

def test_zhipu_chat_request_and_usage():
    handler = MockZhipu()
    chat = zhipu_chat(handler)
    assert chat.name == "zhipuai:glm-4-flash"
    completion = chat.complete("Who is Scrooge?")
    assert completion.text == "Hello from GLM."
    assert (completion.prompt_tokens, completion.completion_tokens) == (11, 7)
    assert completion.usage_source == "api"

    assert len(handler.requests) == 1
    request = handler.requests[0]
    assert request.method == "POST"
    assert request.url.path.endswith("/chat/completions")
    assert request.url.host == "open.bigmodel.cn"
    body = json.loads(request.content)
    assert body["model"] == "glm-4-flash"
    assert body["messages"] == [{"role": "user", "content": "Who is Scrooge?"}]
    assert body["do_sample"] is False  # temperature 0 -> greedy decoding
    assert body["max_tokens"] == 4096


def test_zhipu_auth_header_is_the_raw_key():
    # zhipuai 2.x defaults to disable_token_cache=True, which sends the key itself as
    # the bearer token (no JWT is signed from "id.secret").
    handler = MockZhipu()
    zhipu_chat(handler).complete("hi")
    zhipu_embedder(handler).embed(["hi"])
    assert len(handler.requests) == 2
    for request in handler.requests:
        assert request.headers["Authorization"] == f"Bearer {SECRET_KEY}"


def test_zhipu_chat_sampling_and_custom_base_url():
    handler = MockZhipu()
    chat = zhipu_chat(handler, base_url="https://glm.example.test/api/paas/v4")
    chat.complete("hi", temperature=0.3, max_tokens=50)
    request = handler.requests[0]
    assert request.url.host == "glm.example.test"
    assert request.url.path == "/api/paas/v4/chat/completions"
    body = json.loads(request.content)
    assert body["temperature"] == 0.3 and "do_sample" not in body
    assert body["max_tokens"] == 50


def test_zhipu_chat_without_usage_estimates_tokens():
    body = chat_body("An answer of a few words.")
    del body["usage"]
    handler = MockZhipu(lambda request: httpx.Response(200, json=body))
    completion = zhipu_chat(handler).complete("a prompt of some length")
    assert completion.text == "An answer of a few words."
    assert completion.usage_source == "estimate"
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0


def test_zhipu_429_is_transient_with_retry_after():
    handler = MockZhipu(error_response(429, {"Retry-After": "7"}))
    with pytest.raises(TransientModelError) as caught:
        zhipu_chat(handler).complete("hi")
    assert caught.value.retry_after == 7.0
    assert len(handler.requests) == 1  # the SDK must not retry on its own (max_retries=0)
    assert SECRET_KEY not in str(caught.value)


def test_zhipu_500_is_transient():
    handler = MockZhipu(error_response(500))
    with pytest.raises(TransientModelError) as caught:
        zhipu_chat(handler).complete("hi")
    assert caught.value.retry_after is None
    assert len(handler.requests) == 1
    assert SECRET_KEY not in str(caught.value)


@pytest.mark.parametrize("status", [400, 401])
def test_zhipu_4xx_is_a_model_error(status):
    handler = MockZhipu(error_response(status))
    with pytest.raises(ModelError) as caught:
        zhipu_chat(handler).complete("hi")
    assert not isinstance(caught.value, TransientModelError)
    message = str(caught.value)
    assert SECRET_KEY not in message
    assert "***" in message  # the echoed key was redacted, not just absent
    assert len(handler.requests) == 1


def test_zhipu_timeout_is_transient():
    def respond(request):
        raise httpx.ReadTimeout(f"read timed out ({SECRET_KEY})", request=request)

    handler = MockZhipu(respond)
    with pytest.raises(TransientModelError) as caught:
        zhipu_chat(handler).complete("hi")
    assert SECRET_KEY not in str(caught.value)
    assert len(handler.requests) == 1


def test_zhipu_connection_error_is_transient():
    def respond(request):
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(TransientModelError):
        zhipu_chat(MockZhipu(respond)).complete("hi")


def test_zhipu_empty_choices_is_transient():
    body = chat_body()
    body["choices"] = []
    handler = MockZhipu(lambda request: httpx.Response(200, json=body))
    with pytest.raises(TransientModelError):
        zhipu_chat(handler).complete("hi")


def test_zhipu_missing_key_names_the_variable():
    with pytest.raises(ModelError, match="ZHIPUAI_API_KEY"):
        ZhipuChat()
    with pytest.raises(ModelError, match="ZHIPUAI_API_KEY"):
        ZhipuEmbedder()
    with pytest.raises(ModelError, match="ZHIPUAI_API_KEY"):
        make_chat("zhipuai:glm-4-flash")


def test_zhipu_key_from_environment(monkeypatch):
    monkeypatch.setenv("ZHIPUAI_API_KEY", SECRET_KEY)
    handler = MockZhipu()
    ZhipuChat(http_client=handler.client()).complete("hi")
    assert handler.requests[0].headers["Authorization"] == f"Bearer {SECRET_KEY}"


# --- zhipuai embeddings ------------------------------------------------------------------

def test_zhipu_embedding3_request_shape():
    handler = MockZhipu()
    embedder = zhipu_embedder(handler)
    assert embedder.name == "zhipuai:embedding-3" and embedder.dim == 1024
    vectors = embedder.embed(["item-1", "item-2", ""])
    assert [v[0] for v in vectors] == [1.0, 2.0, 0.5]
    assert all(len(v) == 1024 for v in vectors)
    request = handler.requests[0]
    assert request.url.path.endswith("/embeddings")
    assert request.headers["Authorization"].startswith("Bearer ")
    body = json.loads(request.content)
    assert body["model"] == "embedding-3"
    assert body["dimensions"] == 1024
    assert body["input"] == ["item-1", "item-2", " "]  # empty inputs are not sent empty


def test_zhipu_embedding3_custom_dim():
    handler = MockZhipu()
    embedder = zhipu_embedder(handler, dim=256)
    vectors = embedder.embed(["item-3"])
    assert len(vectors[0]) == 256
    assert handler.bodies()[0]["dimensions"] == 256


def test_zhipu_other_embedding_model_sends_no_dimensions():
    handler = MockZhipu()
    embedder = zhipu_embedder(handler, model="embedding-2")
    assert embedder.name == "zhipuai:embedding-2"
    embedder.embed(["item-1"])
    body = handler.bodies()[0]
    assert body["model"] == "embedding-2" and "dimensions" not in body


def test_zhipu_embedding_batches_are_split_and_reassembled():
    handler = MockZhipu()
    texts = [f"item-{i}" for i in range(2 * EMBED_BATCH + 5)]
    vectors = zhipu_embedder(handler).embed(texts)
    sizes = [len(body["input"]) for body in handler.bodies()]
    assert sizes == [EMBED_BATCH, EMBED_BATCH, 5]
    assert max(sizes) <= 64
    assert [v[0] for v in vectors] == [float(i) for i in range(len(texts))]
    sent = [t for body in handler.bodies() for t in body["input"]]
    assert sent == texts


def test_zhipu_embedding_wrong_dimension_is_an_error():
    def respond(request):
        body = json.loads(request.content)
        return httpx.Response(200, json=embed_body(body["input"], 512))

    with pytest.raises(ModelError, match="512"):
        zhipu_embedder(MockZhipu(respond)).embed(["item-1"])


def test_zhipu_embedding_errors_are_translated():
    handler = MockZhipu(error_response(429, {"Retry-After": "2"}))
    with pytest.raises(TransientModelError) as caught:
        zhipu_embedder(handler).embed(["item-1"])
    assert caught.value.retry_after == 2.0
    assert SECRET_KEY not in str(caught.value)
    with pytest.raises(ModelError) as caught:
        zhipu_embedder(MockZhipu(error_response(401))).embed(["item-1"])
    assert not isinstance(caught.value, TransientModelError)
    assert SECRET_KEY not in str(caught.value)


# --- OpenAI-compatible -------------------------------------------------------------------

def test_openai_chat_against_fake_server(fake_server):
    chat = OpenAIChat("fake", fake_server.url, api_key="k")
    assert chat.name == "openai:fake"
    completion = chat.complete("Say something.")
    assert completion.text == fake_server.llm.answer("Say something.")
    assert completion.usage_source == "api"
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0
    stats = fake_server.stats
    assert stats.chat_calls == 1
    assert stats.prompt_tokens == completion.prompt_tokens
    assert stats.completion_tokens == completion.completion_tokens


def test_openai_embedder_probes_dimension_once(fake_server):
    embedder = OpenAIEmbedder("fake-embed", fake_server.url, api_key="k")
    assert embedder.name == "openai:fake-embed"
    assert embedder.dim == 64
    assert fake_server.stats.embed_calls == 1
    assert embedder.dim == 64
    assert fake_server.stats.embed_calls == 1  # probed once, then remembered
    vectors = embedder.embed(["Scrooge", "Marley", ""])
    assert len(vectors) == 3 and all(len(v) == 64 for v in vectors)
    assert vectors[0] != vectors[1]


def test_openai_embedder_batches(fake_server):
    embedder = OpenAIEmbedder("fake-embed", fake_server.url, api_key="k", dim=64)
    texts = [f"text number {i}" for i in range(EMBED_BATCH + 3)]
    vectors = embedder.embed(texts)
    assert len(vectors) == len(texts)
    stats = fake_server.stats
    assert stats.embed_calls == 2 and stats.embed_inputs == len(texts)
    single = embedder.embed([texts[-1]])[0]
    assert vectors[-1] == single  # reassembled in input order


def test_openai_embedder_declared_dim_is_checked(fake_server):
    embedder = OpenAIEmbedder("fake-embed", fake_server.url, api_key="k", dim=128)
    with pytest.raises(ModelError, match="64"):
        embedder.embed(["x"])


def test_fake_server_rejects_missing_bearer_but_tgr_always_sends_one(fake_server):
    raw = httpx.post(f"{fake_server.url}/chat/completions",
                     json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert raw.status_code == 401
    # with no key configured tgr still sends a Bearer header, so the fake accepts it
    assert OpenAIChat("fake", fake_server.url, api_key=None).complete("hi").text


def openai_mock(status: int, headers: dict | None = None, body=None):
    requests: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if body is not None:
            return httpx.Response(status, headers=headers or {}, content=body)
        echoed = request.headers.get("Authorization", "")
        return httpx.Response(status, headers=headers or {},
                              json={"error": {"message": f"bad token {echoed}"}})

    return httpx.Client(transport=httpx.MockTransport(respond)), requests


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_openai_4xx_is_a_model_error_without_the_key(status):
    client, requests = openai_mock(status)
    chat = OpenAIChat("m", "http://llm.test/v1", api_key=SECRET_KEY, http_client=client)
    with pytest.raises(ModelError) as caught:
        chat.complete("hi")
    assert not isinstance(caught.value, TransientModelError)
    assert f"HTTP {status}" in str(caught.value)
    assert SECRET_KEY not in str(caught.value)
    assert requests[0].url.path == "/v1/chat/completions"
    assert requests[0].headers["Authorization"] == f"Bearer {SECRET_KEY}"


@pytest.mark.parametrize("status,retry_after", [(429, "3"), (500, None), (503, None)])
def test_openai_transient_statuses(status, retry_after):
    headers = {"Retry-After": retry_after} if retry_after else {}
    client, _ = openai_mock(status, headers)
    chat = OpenAIChat("m", "http://llm.test/v1", api_key=SECRET_KEY, http_client=client)
    with pytest.raises(TransientModelError) as caught:
        chat.complete("hi")
    assert caught.value.retry_after == (float(retry_after) if retry_after else None)
    assert SECRET_KEY not in str(caught.value)


def test_openai_timeout_and_bad_json_are_transient():
    def timeout(request):
        raise httpx.ReadTimeout("read timed out", request=request)

    client = httpx.Client(transport=httpx.MockTransport(timeout))
    with pytest.raises(TransientModelError, match="timed out"):
        OpenAIChat("m", "http://llm.test/v1", api_key="k", http_client=client).complete("hi")

    client, _ = openai_mock(200, body=b"<html>gateway</html>")
    with pytest.raises(TransientModelError, match="not JSON"):
        OpenAIChat("m", "http://llm.test/v1", api_key="k", http_client=client).complete("hi")

    client, _ = openai_mock(200, body=b'{"choices": []}')
    with pytest.raises(TransientModelError, match="malformed"):
        OpenAIChat("m", "http://llm.test/v1", api_key="k", http_client=client).complete("hi")

    client, _ = openai_mock(200, body=b'{"data": [{"no": "embedding"}]}')
    with pytest.raises(TransientModelError, match="malformed"):
        OpenAIEmbedder("e", "http://llm.test/v1", api_key="k", dim=4, http_client=client).embed(["x"])


def test_openai_embeddings_path_and_body():
    seen = []

    def respond(request):
        seen.append(request)
        body = json.loads(request.content)
        return httpx.Response(200, json=embed_body(body["input"], 4, reverse=True))

    client = httpx.Client(transport=httpx.MockTransport(respond))
    embedder = OpenAIEmbedder("e", "http://llm.test/v1/", api_key="k", dim=4, http_client=client)
    vectors = embedder.embed(["item-5", "item-6"])
    assert [v[0] for v in vectors] == [5.0, 6.0]
    assert seen[0].url.path == "/v1/embeddings"  # trailing slash of the base URL dropped
    assert json.loads(seen[0].content) == {"model": "e", "input": ["item-5", "item-6"]}


# --- provider resolution -----------------------------------------------------------------

def test_offline_default_without_environment(monkeypatch):
    monkeypatch.delenv("TGR_EMBED_MODEL")
    assert make_chat(None) is None
    embedder = make_embedder(None)  # the local-embed extra is part of the test install
    assert embedder.name == "local:multilingual-e5-small" and embedder.dim == 384
    for spec in ("offline", "none", "extractive", "OFFLINE"):
        assert make_chat(spec) is None


def test_zhipuai_is_the_default_with_a_key(monkeypatch):
    monkeypatch.delenv("TGR_EMBED_MODEL")
    monkeypatch.setenv("ZHIPUAI_API_KEY", SECRET_KEY)
    chat = make_chat(None)
    assert isinstance(chat, ZhipuChat) and chat.name == "zhipuai:glm-4-flash"
    embedder = make_embedder(None)
    assert isinstance(embedder, ZhipuEmbedder)
    assert embedder.name == "zhipuai:embedding-3" and embedder.dim == 1024
    bare = make_chat("glm-4-plus")  # a bare name without a base URL goes to zhipuai
    assert isinstance(bare, ZhipuChat) and bare.name == "zhipuai:glm-4-plus"


def test_openai_specs_need_a_base_url(monkeypatch):
    with pytest.raises(ModelError, match="base-url|TGR_BASE_URL"):
        make_chat("openai:qwen2.5")
    with pytest.raises(ModelError, match="base-url|TGR_BASE_URL"):
        make_embedder("openai:nomic-embed-text")
    chat = make_chat("openai:qwen2.5", base_url="http://localhost:11434/v1")
    assert isinstance(chat, OpenAIChat) and chat.name == "openai:qwen2.5"
    assert chat.base_url == "http://localhost:11434/v1"
    bare = make_chat("qwen2.5", base_url="http://localhost:11434/v1")
    assert isinstance(bare, OpenAIChat) and bare.name == "openai:qwen2.5"
    embedder = make_embedder("openai:nomic", base_url="http://localhost:11434/v1", dim=768)
    assert isinstance(embedder, OpenAIEmbedder) and embedder.dim == 768

    monkeypatch.setenv("TGR_BASE_URL", "http://localhost:8000/v1")
    with pytest.raises(ModelError, match="chat model"):
        make_chat(None)  # a base URL alone does not say which model
    monkeypatch.setenv("TGR_CHAT_MODEL", "llama3")
    env_chat = make_chat(None)
    assert isinstance(env_chat, OpenAIChat) and env_chat.name == "openai:llama3"
    assert env_chat.base_url == "http://localhost:8000/v1"


def test_tgr_hash_specs_and_unknown_providers():
    assert make_embedder("tgr:hash-384").name == "tgr:hash-384"
    small = make_embedder("tgr:hash-128")
    assert small.name == "tgr:hash-128" and small.dim == 128
    assert len(small.embed(["Scrooge"])[0]) == 128
    with pytest.raises(ModelError, match="unknown"):
        make_chat("bogus:model")
    with pytest.raises(ModelError, match="unknown"):
        make_embedder("bogus:model")


def test_embedder_for_store_resolution(monkeypatch):
    monkeypatch.delenv("TGR_EMBED_MODEL")
    assert embedder_for_store({}, "tgr:hash-384").name == "tgr:hash-384"
    built = {"embed_model": "tgr:hash-384", "embed_dim": "384"}
    assert embedder_for_store(built, None).name == "tgr:hash-384"
    assert embedder_for_store(built, "tgr:hash-384").dim == 384
    with pytest.raises(ModelMismatch, match="tgr:hash-384"):
        embedder_for_store(built, "tgr:hash-128")
    monkeypatch.setenv("ZHIPUAI_API_KEY", SECRET_KEY)
    with pytest.raises(ModelMismatch, match="tgr:hash-384"):
        embedder_for_store(built, "zhipuai:embedding-3")
    # a key in the environment does not switch a store built offline to zhipuai
    assert embedder_for_store(built, None).name == "tgr:hash-384"
    zhipu_built = {"embed_model": "zhipuai:embedding-3", "embed_dim": "1024"}
    assert embedder_for_store(zhipu_built, None).name == "zhipuai:embedding-3"
    monkeypatch.delenv("ZHIPUAI_API_KEY")
    with pytest.raises(ModelMismatch, match="zhipuai:embedding-3"):
        embedder_for_store(zhipu_built, None)  # the store's embedder is unavailable


def test_store_built_with_scripted_embedder_refuses_others(db_path):
    with tgr.open(db_path, chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        kb.index([ONE_FILE], **SMALL)
        assert kb.meta["embed_model"] == "scripted:embed"
    for other in (HashEmbedder(), "tgr:hash-384", None):
        with tgr.open(db_path, chat="offline", embedder=other, max_retries=0) as kb:
            with pytest.raises(ModelMismatch, match="scripted:embed"):
                kb.ask("Who is Scrooge?")
    with tgr.open(db_path, chat=ScriptedChat(), embedder=HashEmbedder()) as kb:
        with pytest.raises(ModelMismatch, match="scripted:embed"):
            kb.index([ONE_FILE], **SMALL)
    with tgr.open(db_path, chat="offline", embedder=ScriptedEmbedder()) as kb:
        answer = kb.ask("Who is Scrooge?")  # the right embedder works
        assert answer.answer


def test_offline_store_refuses_zhipu_embedder(db_path, monkeypatch):
    with tgr.open(db_path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([ONE_FILE], **SMALL)
        assert kb.meta["embed_model"] == "tgr:hash-384"
    monkeypatch.setenv("ZHIPUAI_API_KEY", SECRET_KEY)
    with tgr.open(db_path, chat="offline", embedder="zhipuai:embedding-3", max_retries=0) as kb:
        with pytest.raises(ModelMismatch, match="tgr:hash-384") as caught:
            kb.ask("Who is Scrooge?")
        assert SECRET_KEY not in str(caught.value)
    with tgr.open(db_path, embedder="zhipuai:embedding-3", max_retries=0) as kb:
        with pytest.raises(ModelMismatch, match="tgr:hash-384"):
            kb.ask("Who is Scrooge?", mode="global")
    # with no embedder named, the key in the environment does not override the store's
    with tgr.open(db_path, chat="offline") as kb:
        assert kb.ask("Who is Scrooge?").answer
