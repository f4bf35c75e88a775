"""The two model seams and their providers.

ChatModel.complete(prompt, **params) -> Completion and Embedder.embed(texts) -> vectors,
each with a `name` (recorded in the store's meta). Providers: zhipuai (official SDK),
any OpenAI-compatible endpoint (plain httpx: Ollama, vLLM, DeepSeek, Zhipu's own
compatible endpoint) and the offline embedder in tgr.offline.providers. API keys come from the
environment or arguments and are never stored or printed.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence

if TYPE_CHECKING:  # httpx is imported when a remote model is built
    import httpx

from ..errors import ModelError, OutOfReach, TransientModelError
from ..text import estimate_tokens
from .output_forms import (JSON_OBJECT, NONE, OPENAI_FORMS, next_form, refuses_form, response_format,
                           wants_json)
from .repetition import RepetitionWatch

ZHIPU_CHAT_DEFAULT = "glm-4-flash"
ZHIPU_EMBED_DEFAULT = "embedding-3"
ZHIPU_EMBED_DIM = 1024  # embedding-3 offers 256/512/1024/2048; 1024 keeps files small
DEFAULT_TIMEOUT = 120.0
EMBED_BATCH = 64  # the most inputs zhipuai's embedding-3 accepts per request


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    usage_source: str = "api"  # "api" when the provider reported usage, else "estimate"
    # why the answer ended: "stop", "length" (max_tokens), "loop" (tgr stopped an answer that
    # repeated itself: tgr.models.repetition), "unfinished" (a stream that ended without saying
    # why), None when the provider did not say
    finish_reason: str | None = None

    @property
    def cut(self) -> bool:
        """The answer did not end by itself: asking again the same way would not finish it."""
        return self.finish_reason in ("length", "loop")


class ChatModel(Protocol):
    """Optional: stream(prompt, **params) yields the answer's text pieces as the model writes
    them, then its Completion (tgr.gateway replays a model without it whole). A `history`
    param (role/content messages) is the conversation the prompt follows."""

    name: str

    def complete(self, prompt: str, **params) -> Completion: ...


class Embedder(Protocol):
    """Optional extras: embed_query(texts) embeds questions where the model wants them
    embedded differently from passages (E5's "query: " prefix); vector_type = "int8" lets
    the store keep its vectors as int8 (default "float32"); request_tokens caps the estimated
    tokens of one request made while chat answers are awaited (for in-process models)."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def is_local(model) -> bool:
    """True for a model computed in this process (no API, no tokens): `local = True`, or tgr:*."""
    local = getattr(model, "local", None)
    return bool(local) if local is not None else str(getattr(model, "name", "")).startswith("tgr:")


def vector_type(embedder: Embedder) -> str:
    """How the store keeps this embedder's vectors: "float32", or "int8" where the model allows."""
    return getattr(embedder, "vector_type", "float32")


def embeds(kind: str, model: str) -> bool:
    """Whether rows of this kind ("chunks", "entities", "reports") get vectors from this
    embedding model: all but the bundled local model's reports, which global ranking does not
    use (tgr.query.retrieve.ranks_reports) and which were a quarter of its indexing time."""
    return not (kind == "reports" and model.startswith("local:"))


PROMPT_TOKENS_PER_SECOND_FLOOR = 10.0  # a loaded CPU reading a long prompt (SmolLM2-135M on 2 busy cores: ~30)


def first_token_timeout(idle: float, prompt: str) -> float:
    """How long a streamed answer may go without a piece: the idle timeout, plus the time a slow
    local server may take to read the prompt before its first token (about 10 tokens a second)."""
    return idle + estimate_tokens(prompt) / PROMPT_TOKENS_PER_SECOND_FLOOR


def is_local_endpoint(url: str) -> bool:
    """Whether an endpoint runs on this machine or its network (a local model server)."""
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith((".local", ".internal", ".lan")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def redact(message: str, *secrets: str | None) -> str:
    """Remove secrets from a message before it is shown or raised."""
    for secret in secrets:
        if secret:
            message = message.replace(secret, "***")
    return message


def _usage(prompt: str, text: str, usage) -> tuple[int, int, str]:
    if usage and getattr(usage, "get", None) is None:
        usage = {"prompt_tokens": getattr(usage, "prompt_tokens", None),
                 "completion_tokens": getattr(usage, "completion_tokens", None)}
    if usage and usage.get("prompt_tokens") is not None:
        return int(usage["prompt_tokens"]), int(usage.get("completion_tokens") or 0), "api"
    return estimate_tokens(prompt), estimate_tokens(text), "estimate"


def messages(prompt: str, params: dict) -> list[dict]:
    """The chat messages of a request: the conversation so far (params["history"]), then the prompt."""
    earlier = [{"role": m["role"], "content": m["content"]} for m in params.get("history") or ()]
    return [*earlier, {"role": "user", "content": prompt}]


def _completion_of(prompt: str, pieces) -> Iterator[str | Completion]:
    """A stream's text pieces, then its Completion (usage as reported, else estimated); a stream
    that starts repeating itself is stopped there (tgr.models.repetition)."""
    from .chat_stream import StreamEnd

    watch = RepetitionWatch()
    try:
        for item in pieces:
            if isinstance(item, StreamEnd):
                joined = watch.text()
                yield Completion(joined, *_usage(prompt, joined, item.usage), finish_reason=item.finish_reason)
                return
            yield item
            if watch.add(item):  # looping: stopped here, the repeated rounds left out of what is kept
                yield Completion(watch.kept(), *_usage(prompt, watch.text(), None), finish_reason="loop")
                return
    finally:
        pieces.close()  # stopped early: the connection is closed now, not when collected


def _is_transient_status(status: int) -> bool:
    return status in (408, 409, 425, 429) or status >= 500


def _retry_after(headers) -> float | None:
    value = (headers or {}).get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


# --- zhipuai -------------------------------------------------------------------------

class _ZhipuBase:
    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, http_client: httpx.Client | None = None):
        from zhipuai import ZhipuAI  # imported here: the SDK is slow to import

        self._key = api_key or os.environ.get("ZHIPUAI_API_KEY")
        if not self._key:
            raise OutOfReach("zhipuai needs an API key: set ZHIPUAI_API_KEY (or TGR_API_KEY)",
                             "no ZHIPUAI_API_KEY")
        self.model = model
        # tgr retries itself (with backoff and the cache), so the SDK must not.
        self._client = ZhipuAI(api_key=self._key, base_url=base_url, timeout=timeout,
                               max_retries=0, http_client=http_client)

    def close(self) -> None:
        self._client.close()

    def _translate(self, exc: Exception) -> Exception:
        from zhipuai.core import _errors as zerr

        message = redact(f"zhipuai {self.model}: {exc}", self._key)
        if isinstance(exc, (zerr.APITimeoutError, zerr.APIConnectionError)):
            return TransientModelError(message)
        if isinstance(exc, zerr.APIStatusError):
            status = exc.response.status_code
            if _is_transient_status(status):
                return TransientModelError(message, _retry_after(exc.response.headers))
            return ModelError(message)
        import httpx

        if isinstance(exc, (httpx.TimeoutException, httpx.TransportError)):
            return TransientModelError(message)
        return ModelError(message)


class ZhipuChat(_ZhipuBase):
    """GLM chat models through the official zhipuai SDK."""

    output_form = JSON_OBJECT  # GLM-4's JSON mode: response_format {"type": "json_object"}

    def __init__(self, model: str = ZHIPU_CHAT_DEFAULT, **kwargs):
        super().__init__(model, **kwargs)
        self.name = f"zhipuai:{model}"

    def request_body(self, prompt: str, **params) -> dict:
        """The JSON body of one chat request (the same in a batch job's input file)."""
        sampling = {"do_sample": False} if params.get("temperature", 0.0) == 0.0 else {
            "temperature": params["temperature"]}
        body = {"model": self.model, "messages": messages(prompt, params),
                "max_tokens": params.get("max_tokens", 4096), **sampling}
        if params.get("schema") and wants_json(self.output_form):  # GLM's JSON mode (no schema)
            body["response_format"] = {"type": "json_object"}
        return body

    def complete(self, prompt: str, **params) -> Completion:
        try:
            response = self._client.chat.completions.create(**self.request_body(prompt, **params))
        except Exception as exc:  # the SDK's errors are translated to tgr's
            raise self._translate(exc) from None
        try:
            text = response.choices[0].message.content or ""
            finish = getattr(response.choices[0], "finish_reason", None)
        except (AttributeError, IndexError) as exc:
            raise TransientModelError(f"zhipuai {self.model}: malformed response ({exc})") from None
        return Completion(text, *_usage(prompt, text, response.usage),
                          finish_reason=finish if isinstance(finish, str) else None)

    def stream(self, prompt: str, **params) -> Iterator[str | Completion]:
        """The answer's text pieces as GLM writes them, then its Completion."""
        from .chat_stream import zhipu_pieces

        return _completion_of(prompt, zhipu_pieces(self._client, self.request_body(prompt, **params),
                                                   self._translate))


class ZhipuEmbedder(_ZhipuBase):
    """zhipuai embedding models (embedding-3 by default, cosine)."""

    vector_type = "int8"  # in a new store (see tgr.models.registry.keep_store_vector_type; README)

    def __init__(self, model: str = ZHIPU_EMBED_DEFAULT, dim: int | None = None, **kwargs):
        super().__init__(model, **kwargs)
        self.dim = dim or (ZHIPU_EMBED_DIM if model == "embedding-3" else 1024)
        self.name = f"zhipuai:{model}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        extra = {"dimensions": self.dim} if self.model == "embedding-3" else {}
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = [t or " " for t in texts[start:start + EMBED_BATCH]]
            try:
                response = self._client.embeddings.create(model=self.model, input=batch, **extra)
            except Exception as exc:
                raise self._translate(exc) from None
            rows = sorted(response.data, key=lambda d: d.index)
            vectors.extend(list(row.embedding) for row in rows)
        _check_dims(self.name, self.dim, vectors)
        return vectors


# --- OpenAI-compatible HTTP ----------------------------------------------------------

class _OpenAIBase:
    def __init__(self, model: str, base_url: str, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, http_client: httpx.Client | None = None):
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._key = api_key if api_key is not None else (os.environ.get("TGR_API_KEY")
                                                          or os.environ.get("OPENAI_API_KEY"))
        headers = {"Authorization": f"Bearer {self._key or 'none'}"}
        self._owns_http = http_client is None
        from .loop_transport import loop_client  # httpx comes with the first remote model

        self._http = http_client or loop_client(timeout)
        self._http.headers.update(headers)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def _post(self, path: str, body: dict) -> dict:
        import httpx

        url = f"{self.base_url}{path}"
        try:
            response = self._http.post(url, json=body)
        except httpx.TimeoutException:
            raise TransientModelError(f"{self.base_url}: request timed out") from None
        except httpx.TransportError as exc:
            raise TransientModelError(redact(f"{self.base_url}: {exc}", self._key)) from None
        if response.status_code >= 400:
            raise self._status_error(response, path, body)
        try:
            return response.json()
        except ValueError:
            raise TransientModelError(f"{self.base_url}{path}: response is not JSON") from None

    def _status_error(self, response, path: str, body: dict | None = None) -> Exception:
        """tgr's error for an HTTP error answer (transient: worth a retry; FormRefused: the
        request's response_format is not taken here)."""
        detail = redact(response.text[:300], self._key)
        if body and "response_format" in body and refuses_form(response.status_code, response.text):
            return FormRefused(f"{self.base_url}{path}: response_format refused: {detail}")
        message = f"{self.base_url}{path}: HTTP {response.status_code}: {detail}"
        if _is_transient_status(response.status_code):
            return TransientModelError(message, _retry_after(response.headers))
        return ModelError(message)


class _LiveStream:
    """A streamed request in progress: its response (once open) and whether text has come."""

    def __init__(self):
        self.response = None
        self.answering = False

    def open(self, response) -> None:
        self.response = response

    def answered(self) -> None:
        self.answering = True

    def close(self) -> bool:
        if self.response is None or self.answering:
            return False
        try:
            self.response.close()
        except Exception:  # closing from another thread: whatever state it is in, it is gone
            pass
        return True


class FormRefused(ModelError):
    """The endpoint refused the request's response_format (tgr.models.output_forms)."""


class OpenAIChat(_OpenAIBase):
    """Chat through any OpenAI-compatible /chat/completions endpoint.

    Answers are streamed and read as they are written: a read timeout is then the time
    without a token (a slow local model is not cut off while it writes), and an answer
    that repeats itself is stopped (tgr.models.repetition). A `schema` param (name and
    JSON schema) is sent in the structured-output form the endpoint takes (output_form:
    learnt by probe_output_form or from the first refusal)."""

    stream_answers = True

    def __init__(self, model: str, base_url: str, **kwargs):
        super().__init__(model, base_url, **kwargs)
        self.name = f"openai:{model}"
        self.output_form: str | None = None  # unknown until probed, refused or recorded
        self.context_tokens: int | None = None  # the context window, where known
        self._live: set[_LiveStream] = set()
        self._live_lock = threading.Lock()

    def drop_waiting(self) -> int:
        """Hang up the streamed requests that have no answer text yet (they wait at a
        one-slot server, which skips a request whose client is gone); their callers see a
        broken stream and ask again. Returns how many were dropped."""
        with self._live_lock:
            waiting = [live for live in self._live if not live.answering]
        return sum(live.close() for live in waiting)

    def request_body(self, prompt: str, form: str | None = None, **params) -> dict:
        """The JSON body of one chat request (the same in a batch job's input file), a `schema`
        param asked in this structured-output form (default: the client's)."""
        body = {"model": self.model, "messages": messages(prompt, params),
                "temperature": params.get("temperature", 0.0), "max_tokens": params.get("max_tokens", 4096)}
        schema = params.get("schema")
        if schema:
            form = response_format(form or self.output_form or OPENAI_FORMS[0], schema["schema"],
                                   schema.get("name", "answer"))
            if form is not None:
                body["response_format"] = form
        return body

    def complete(self, prompt: str, **params) -> Completion:
        while True:
            form = self.output_form or OPENAI_FORMS[0]
            body = self.request_body(prompt, form, **params)
            try:
                completion = self._streamed(prompt, body) if self.stream_answers else self._whole(prompt, body)
            except FormRefused:  # ask again in the next form (the last, none, is never refused)
                with self._live_lock:  # calls refused at once move on once, not once each
                    if (self.output_form or OPENAI_FORMS[0]) == form:
                        self.output_form = next_form(form)
                continue
            if "response_format" in body and self.output_form is None:
                self.output_form = OPENAI_FORMS[0]  # taken: the store records it
            return completion

    def probe_output_form(self) -> str:
        """Find the first structured-output form the endpoint takes, with one tiny request
        per form tried (a refusal costs no tokens); sets and returns output_form."""
        schema = {"name": "probe", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                              "required": ["ok"]}}
        form = self.output_form or OPENAI_FORMS[0]
        while form != NONE:
            self.output_form = form
            try:
                self._whole("probe", self.request_body('Answer with the JSON object {"ok": true}.', form,
                                                       schema=schema, max_tokens=8))
                return form
            except FormRefused:
                form = next_form(form)
        self.output_form = NONE
        return NONE

    def context_window(self) -> int | None:
        """The server's context window in tokens, where it says (llama.cpp's /props n_ctx);
        None otherwise. Never raises."""
        import httpx

        if not is_local_endpoint(self.base_url):  # a cloud API has no such page
            return None
        root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        try:
            response = self._http.get(f"{root}/props", timeout=5.0)
            data = response.json() if response.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return None
        settings = data.get("default_generation_settings") if isinstance(data, dict) else None
        for value in (data.get("n_ctx") if isinstance(data, dict) else None,
                      settings.get("n_ctx") if isinstance(settings, dict) else None):
            if isinstance(value, int) and value > 0:
                return value
        return None

    def _whole(self, prompt: str, body: dict) -> Completion:
        from .chat_stream import completion_parts

        text, usage, finish = completion_parts(self._post("/chat/completions", body), self.base_url)
        return Completion(text, *_usage(prompt, text, usage), finish_reason=finish)

    def _streamed(self, prompt: str, body: dict) -> Completion:
        """One answer read as a stream, stopped when it loops (what came before is kept)."""
        from .chat_stream import openai_pieces

        path = "/chat/completions"
        describe = lambda exc: TransientModelError(redact(f"{self.base_url}: {exc}", self._key))  # noqa: E731
        live = _LiveStream()
        pieces = openai_pieces(self._http, f"{self.base_url}{path}", body, describe,
                               lambda response: self._status_error(response, path, body), opened=live.open,
                               read_timeout=first_token_timeout(self.timeout, prompt))
        with self._live_lock:
            self._live.add(live)
        try:
            return read_watched(prompt, pieces, self.base_url, live.answered)
        finally:
            with self._live_lock:
                self._live.discard(live)

    def stream(self, prompt: str, **params) -> Iterator[str | Completion]:
        """The answer's text pieces as the endpoint streams them (SSE), then its Completion."""
        from .chat_stream import openai_pieces

        path = "/chat/completions"
        body = self.request_body(prompt, **params)
        describe = lambda exc: TransientModelError(redact(f"{self.base_url}: {exc}", self._key))  # noqa: E731
        return _completion_of(prompt, openai_pieces(
            self._http, f"{self.base_url}{path}", body, describe,
            lambda response: self._status_error(response, path, body)))


class BatchedEmbedder:
    """What an API embedder has in common: its dimension, learnt from the first answer (or one
    probe) unless given, and texts sent EMBED_BATCH at a time to embed_batch(texts), each
    answer checked for that dimension. A subclass names its PROVIDER and writes embed_batch."""

    PROBE_TEXT = "dimension probe"
    PROVIDER: str  # the name's prefix: "openai", "ollama", "litellm"
    vector_type = "int8"  # in a new store (see tgr.models.registry.keep_store_vector_type; README)

    def __init__(self, model: str, base_url: str | None = None, dim: int | None = None, **kwargs):
        super().__init__(model, base_url, **kwargs)
        self.name = f"{self.PROVIDER}:{model}"
        self._dim = dim

    @property
    def dim(self) -> int:
        self.probe()
        return self._dim

    def probe(self) -> bool:
        """Ask the endpoint once for the dimension, unless it is known (from the store, or an
        answer); True if it asked. tgr.gateway.Gateway.embed_dim retries and records it like
        every request."""
        if self._dim is not None:
            return False
        self._dim = len(self.embed([self.PROBE_TEXT])[0])
        return True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            vectors.extend(self.embed_batch([t or " " for t in texts[start:start + EMBED_BATCH]]))
        if self._dim is None and vectors:
            self._dim = len(vectors[0])
        _check_dims(self.name, self._dim, vectors)
        return vectors

    def embed_batch(self, batch: list[str]) -> list[list[float]]:
        """The vectors of one request's texts, in their order."""
        raise NotImplementedError


class OpenAIEmbedder(BatchedEmbedder, _OpenAIBase):
    """Embeddings through any OpenAI-compatible /embeddings endpoint."""

    PROVIDER = "openai"

    def embed_batch(self, batch: list[str]) -> list[list[float]]:
        data = self._post("/embeddings", {"model": self.model, "input": batch})
        try:
            rows = sorted(data["data"], key=lambda d: d["index"])
            return [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError):
            raise TransientModelError(f"{self.base_url}: malformed embeddings response") from None


def read_watched(prompt: str, pieces, where: str, on_piece: Callable[[], None] | None = None) -> Completion:
    """One streamed answer (text pieces, then a StreamEnd) read to its end, or stopped where it
    starts to loop (tgr.models.repetition), what came before kept; on_piece() is told of each
    piece. An end with no reason is "unfinished": llama-cpp-python's server ends a stream so
    when another request waits (tgr.models.gateway then sends one call at a time)."""
    from .chat_stream import StreamEnd

    watch, usage, finish = RepetitionWatch(), None, None
    try:
        for item in pieces:
            if isinstance(item, StreamEnd):
                usage, finish = item.usage, item.finish_reason or "unfinished"
                break
            if on_piece is not None:
                on_piece()
            if watch.add(item):
                finish = "loop"
                break
        else:
            raise TransientModelError(f"{where}: the stream ended before the answer did")
    finally:
        pieces.close()  # a stopped loop: the connection closes, and the server stops writing
    prompt_tokens, completion_tokens, source = _usage(prompt, watch.text(), usage)
    return Completion(watch.kept(), prompt_tokens, completion_tokens, source, finish_reason=finish)


def _check_dims(name: str, dim: int, vectors: list[list[float]]) -> None:
    for vector in vectors:
        if len(vector) != dim:
            raise ModelError(f"{name} returned {len(vector)}-dim vectors, expected {dim}")
