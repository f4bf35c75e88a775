"""Ollama's own API (`ollama:NAME`): chat that sets the context window on every request.

Ollama's OpenAI-compatible /v1 endpoint cannot set the context window, and Ollama's default
window (2,048 or 4,096 tokens) cuts a longer prompt in silence: the most reported cause of
"0 entities" with local models. OllamaChat asks Ollama's own POST /api/chat instead, with
`options.num_ctx` (one value for the client's life: Ollama reloads the model when it changes),
`num_predict` (max_tokens), `temperature`, and `format`: the JSON schema Ollama holds the
answer to (output form "ollama", tgr.models.output_forms).

The window is the model's own context length (POST /api/show: model_info
`<arch>.context_length`) capped at DEFAULT_NUM_CTX, or the size given (--context-tokens, or the
store's record), never more than the model's. Answers stream as NDJSON lines, read as they
come (a read timeout is then the time without a token), and are stopped when they loop
(tgr.models.repetition). OllamaEmbedder embeds with POST /api/embed.

The server: --base-url (or TGR_BASE_URL), else OLLAMA_HOST ("host:port" or a URL, as Ollama
reads it), else http://127.0.0.1:11434. Ollama takes no key; none is sent.
"""
from __future__ import annotations

import json
import os
import re
import threading
from typing import TYPE_CHECKING, Iterator
from urllib.parse import urlsplit

if TYPE_CHECKING:  # both imported with the first request: a cold question needs neither
    import httpx

    from .chat_stream import StreamEnd

from ..errors import ModelError, StreamBroken, TransientModelError
from .clients import (DEFAULT_TIMEOUT, BatchedEmbedder, Completion, _completion_of, _is_transient_status,
                      _retry_after, messages, read_watched, redact)
from .output_forms import OLLAMA, wants_json

DEFAULT_URL = "http://127.0.0.1:11434"
DEFAULT_NUM_CTX = 8192  # the window asked for unless told otherwise (the model's own if smaller)
SHOW_TIMEOUT = 10.0  # seconds for /api/show (it reads the model's metadata, not its weights)
_UNASKED = object()


def ollama_url(base_url: str | None = None) -> str:
    """The Ollama server's URL: base_url, else OLLAMA_HOST, else DEFAULT_URL. As Ollama reads
    OLLAMA_HOST, a value without a scheme is "host[:port]" (port 11434) and 0.0.0.0 (the
    server listening everywhere) means this machine. A trailing /v1 or /api is dropped: they
    are the OpenAI-compatible and API paths of the same server."""
    value = (base_url or os.environ.get("OLLAMA_HOST") or "").strip()
    if not value:
        return DEFAULT_URL
    if "://" not in value:
        parts = urlsplit(f"http://{value}")
        host = parts.hostname or "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        value = f"http://{host}:{parts.port or 11434}{parts.path}"
    value = re.sub(r"/+(v1|api)?/*$", "", value)
    return re.sub(r"(://(?:[^/@]*@)?)(?:0\.0\.0\.0|\[::\])(?=[:/]|$)", r"\g<1>127.0.0.1", value)


def _shown(url: str) -> str:
    """The URL as messages show it: without a user or password."""
    return re.sub(r"://[^/@]*@", "://", url)


def context_length(show: dict) -> int | None:
    """The model's context length in an /api/show answer (model_info `<arch>.context_length`)."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    arch = info.get("general.architecture")
    value = info.get(f"{arch}.context_length") if isinstance(arch, str) else None
    if not isinstance(value, int):  # an architecture name that differs from its keys' prefix
        value = next((v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)), None)
    return value if isinstance(value, int) and value > 0 else None


class _OllamaBase:
    def __init__(self, model: str, base_url: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 http_client: httpx.Client | None = None):
        from .loop_transport import loop_client  # httpx comes with the first remote model

        self.model = model
        self.base_url = ollama_url(base_url)
        self.shown = _shown(self.base_url)
        self.timeout = timeout
        self._secret = urlsplit(self.base_url).password
        self._owns_http = http_client is None
        self._http = http_client or loop_client(timeout)

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def _say(self, message: str) -> str:
        """message on one line, without the URL's password."""
        return redact(" ".join(message.split()), self._secret)

    def _post(self, path: str, body: dict) -> dict:
        import httpx

        try:
            response = self._http.post(f"{self.base_url}{path}", json=body)
        except httpx.TimeoutException:
            raise TransientModelError(f"{self.shown}{path}: request timed out") from None
        except httpx.TransportError as exc:
            raise TransientModelError(self._say(f"{self.shown}: {exc}")) from None
        if response.status_code >= 400:
            raise self._status_error(response, path)
        try:
            data = response.json()
        except ValueError:
            raise TransientModelError(f"{self.shown}{path}: response is not JSON") from None
        if not isinstance(data, dict):
            raise TransientModelError(f"{self.shown}{path}: malformed response")
        return data

    def _status_error(self, response, path: str) -> Exception:
        """tgr's error for an HTTP error answer: transient (429, 5xx: worth a retry), else for
        good; a model the server does not have says how to get it."""
        said = _error_of(response)
        if response.status_code == 404 and "not found" in said.lower():
            return ModelError(self._say(f"ollama:{self.model} is not on the Ollama server at {self.shown}: "
                                        f"run `ollama pull {self.model}` there (Ollama said: {said[:200]})"))
        message = self._say(f"{self.shown}{path}: HTTP {response.status_code}: {said[:300]}")
        if _is_transient_status(response.status_code):
            return TransientModelError(message, _retry_after(response.headers))
        return ModelError(message)


def _error_of(response) -> str:
    """What Ollama said in an error answer: its {"error": ...}, else the body."""
    try:
        data = response.json()
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    return str(error) if error else response.text


class OllamaChat(_OllamaBase):
    """Chat through Ollama's POST /api/chat, streamed, with num_ctx and num_predict on every
    request and a `schema` param sent as `format`."""

    output_form = OLLAMA  # Ollama's own API holds any model to a schema: nothing to probe or learn

    def __init__(self, model: str, base_url: str | None = None, *, context_tokens: int | None = None, **kwargs):
        super().__init__(model, base_url, **kwargs)
        self.name = f"ollama:{model}"
        self._length = _UNASKED
        self._num_ctx: int | None = None
        self._fixing = threading.Lock()  # the first requests of a run come from several threads
        if context_tokens:
            self.context_tokens = context_tokens

    @property
    def context_tokens(self) -> int:
        """The context window every request asks for (num_ctx): as set, else the model's own
        length capped at DEFAULT_NUM_CTX; fixed once read."""
        if self._num_ctx is None:
            with self._fixing:
                if self._num_ctx is None:
                    self._num_ctx = self._fit(DEFAULT_NUM_CTX)
        return self._num_ctx

    @context_tokens.setter
    def context_tokens(self, wanted: int) -> None:
        self._num_ctx = self._fit(int(wanted))

    def _fit(self, wanted: int) -> int:
        length = self.model_context_length()
        return min(wanted, length) if length else wanted

    def model_context_length(self) -> int | None:
        """The model's own context length, as /api/show says (asked once); None when it does
        not say. Never raises."""
        if self._length is _UNASKED:
            import httpx

            try:
                response = self._http.post(f"{self.base_url}/api/show", json={"model": self.model},
                                           timeout=SHOW_TIMEOUT)
                self._length = context_length(response.json()) if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                self._length = None
        return self._length

    def context_window(self) -> int | None:
        """The window the model runs with here (tgr.build.ledger records it): num_ctx when set,
        else the model's context length capped at DEFAULT_NUM_CTX; None when Ollama does not
        say (requests then ask for DEFAULT_NUM_CTX). Never raises."""
        if self._num_ctx is not None:
            return self._num_ctx
        length = self.model_context_length()
        return min(length, DEFAULT_NUM_CTX) if length else None

    def request_body(self, prompt: str, **params) -> dict:
        """The JSON body of one /api/chat request."""
        body = {"model": self.model, "messages": messages(prompt, params), "stream": True,
                "options": {"num_ctx": self.context_tokens, "num_predict": params.get("max_tokens", 4096),
                            "temperature": params.get("temperature", 0.0)}}
        schema = params.get("schema")
        if schema and wants_json(self.output_form):
            body["format"] = schema["schema"]
        return body

    def complete(self, prompt: str, **params) -> Completion:
        """One answer read as a stream, stopped when it loops (what came before is kept)."""
        return read_watched(prompt, self._pieces(self.request_body(prompt, **params)), f"{self.shown}/api/chat")

    def stream(self, prompt: str, **params) -> Iterator[str | Completion]:
        """The answer's text pieces as Ollama writes them, then its Completion."""
        return _completion_of(prompt, self._pieces(self.request_body(prompt, **params)))

    def _pieces(self, body: dict) -> Iterator[str | StreamEnd]:
        """Text pieces of one streamed /api/chat request, then a StreamEnd."""
        import httpx

        where = f"{self.shown}/api/chat"
        try:
            with self._http.stream("POST", f"{self.base_url}/api/chat", json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self._status_error(response, "/api/chat")
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    piece, end = _chat_line(line, where)
                    if piece:
                        yield piece
                    if end is not None:
                        yield end
                        return
        except httpx.TimeoutException:
            raise TransientModelError(f"{where}: timed out: no answer, or no token of it, "
                                      f"for {self.timeout:g} s") from None
        except httpx.RemoteProtocolError as exc:
            raise StreamBroken(self._say(f"{where}: {exc}")) from None
        except httpx.HTTPError as exc:
            raise TransientModelError(self._say(f"{where}: {exc}")) from None
        raise TransientModelError(f"{where}: the stream ended before the answer did")


def _chat_line(line: str, where: str) -> tuple[str, StreamEnd | None]:
    """(text piece, StreamEnd on the last line) of one NDJSON line of /api/chat."""
    from .chat_stream import StreamEnd

    try:
        data = json.loads(line)
    except ValueError:
        raise TransientModelError(f"{where}: a streamed line is not JSON") from None
    if not isinstance(data, dict):
        raise TransientModelError(f"{where}: malformed streamed line")
    if data.get("error"):  # an error once the answer had started (the status stays 200)
        said = " ".join(str(data["error"]).split())[:300]
        raise TransientModelError(f"{where}: the model stopped with an error: {said}")
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    piece = content if isinstance(content, str) else ""
    if not data.get("done"):
        return piece, None
    prompt_tokens, completion_tokens = data.get("prompt_eval_count"), data.get("eval_count")
    usage = ({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens
              if isinstance(completion_tokens, int) else 0} if isinstance(prompt_tokens, int) else None)
    reason = data.get("done_reason")  # "stop", "length"; absent before Ollama 0.1.3x: it stopped
    return piece, StreamEnd(usage, reason if isinstance(reason, str) and reason else "stop")


class OllamaEmbedder(BatchedEmbedder, _OllamaBase):
    """Embeddings through Ollama's POST /api/embed."""

    PROVIDER = "ollama"

    def embed_batch(self, batch: list[str]) -> list[list[float]]:
        data = self._post("/api/embed", {"model": self.model, "input": batch})
        rows = data.get("embeddings")
        if not isinstance(rows, list) or len(rows) != len(batch):
            raise TransientModelError(f"{self.shown}/api/embed: malformed embeddings response")
        try:
            return [[float(x) for x in row] for row in rows]
        except (TypeError, ValueError):
            raise TransientModelError(f"{self.shown}/api/embed: malformed embeddings response") from None
