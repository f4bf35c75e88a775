"""Every other provider through LiteLLM (`litellm:PROVIDER/MODEL`, the `litellm` extra).

`litellm:anthropic/claude-3-5-haiku-latest`, `litellm:gemini/gemini-2.0-flash`,
`litellm:bedrock/...`, `litellm:vertex_ai/...`, `litellm:azure/DEPLOYMENT`: the name after
`litellm:` is LiteLLM's own model string, and keys and endpoints come from LiteLLM's own
variables (ANTHROPIC_API_KEY, GEMINI_API_KEY, AZURE_API_KEY and AZURE_API_BASE, AWS_..., ...);
tgr adds none of its own. --base-url (or TGR_BASE_URL) and api_key= (Python), when given, are
passed on as LiteLLM's api_base and api_key.

Answers are streamed (stream=True, usage asked with stream_options) and read as tgr reads every
stream: stopped where they loop, finish_reason "length" kept (tgr.models.clients.read_watched).
LiteLLM's own retries are off (tgr's gateway retries): its transient errors become
TransientModelError, the others one-line ModelErrors with every key redacted.

litellm is imported with the first model made, never by a question on a store built without
it. Before that import tgr sets LITELLM_LOCAL_MODEL_COST_MAP=True (otherwise LiteLLM fetches
its price map from GitHub on import, and retries for about ten seconds where it cannot),
unless the variable is already set.
"""
from __future__ import annotations

import os
from typing import Iterator, Sequence

from ..errors import ModelError, OutOfReach, TransientModelError
from .clients import (DEFAULT_TIMEOUT, BatchedEmbedder, Completion, _completion_of, _is_transient_status,
                      messages, read_watched, redact)
from .output_forms import JSON_SCHEMA, NONE, response_format

INSTALL = "pip install 'tgr[litellm]'"
# set before litellm is imported, unless the user set them: no download of the price map
DEFAULTS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
# LiteLLM's errors worth a retry (the others are for good: auth, bad request, unknown model)
TRANSIENT = ("RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError",
             "InternalServerError", "BadGatewayError")


def load_litellm():
    """The litellm module, imported with tgr's defaults; OutOfReach naming the extra if missing."""
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
    try:
        import litellm
    except ImportError:
        raise OutOfReach(f"litellm: models need the litellm extra: {INSTALL}", "litellm is not installed") from None
    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on every error
    return litellm


def _secrets(api_key: str | None) -> list[str]:
    """The key given and every key-like variable of the environment (LiteLLM reads its own)."""
    found = [value for name, value in os.environ.items()
             if name.upper().endswith(("_KEY", "_SECRET", "_TOKEN", "_SECRET_ACCESS_KEY")) and len(value) >= 6]
    return [api_key, *found] if api_key else found


class _LiteLLMBase:
    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT):
        self._litellm = load_litellm()
        self.model = model
        self.base_url = base_url
        self.timeout = timeout
        self._key = api_key
        # only what the user named: LiteLLM reads each provider's own variables itself
        self._where = {k: v for k, v in (("api_base", base_url), ("api_key", api_key)) if v}

    def close(self) -> None:
        """Nothing to close: LiteLLM keeps its own HTTP clients."""

    def _translate(self, exc: Exception) -> Exception:
        """tgr's error for one of LiteLLM's: transient (worth a retry) or for good, on one line
        without any key."""
        kind = type(exc).__name__
        said = redact(" ".join(str(exc).split()), *_secrets(self._key))[:300]
        message = f"litellm:{self.model}: {kind}: {said}"
        status = getattr(exc, "status_code", None)
        if kind in TRANSIENT or (isinstance(status, int) and _is_transient_status(status)):
            return TransientModelError(message)
        if kind == "AuthenticationError":
            return ModelError(f"litellm:{self.model}: the provider refused the key (set LiteLLM's variable "
                              f"for it, e.g. ANTHROPIC_API_KEY): {said}")
        return ModelError(message)


class LiteLLMChat(_LiteLLMBase):
    """Chat through litellm.completion, streamed; a `schema` param is sent as a json_schema
    response_format where LiteLLM says the model takes one (else the tag prompts are used)."""

    def __init__(self, model: str, base_url: str | None = None, **kwargs):
        super().__init__(model, base_url, **kwargs)
        self.name = f"litellm:{model}"
        try:
            schema = self._litellm.supports_response_schema(model=model)
        except Exception:  # a model LiteLLM's price map does not know
            schema = False
        self.output_form = JSON_SCHEMA if schema else NONE

    def request(self, prompt: str, **params) -> dict:
        """The keyword arguments of one litellm.completion call."""
        request = {"model": self.model, "messages": messages(prompt, params),
                   "temperature": params.get("temperature", 0.0), "max_tokens": params.get("max_tokens", 4096),
                   "stream": True, "stream_options": {"include_usage": True}, "timeout": self.timeout,
                   "num_retries": 0, **self._where}
        schema = params.get("schema")
        if schema and self.output_form == JSON_SCHEMA:
            request["response_format"] = response_format(JSON_SCHEMA, schema["schema"], schema.get("name", "answer"))
        return request

    def complete(self, prompt: str, **params) -> Completion:
        """One answer read as a stream, stopped when it loops (what came before is kept)."""
        return read_watched(prompt, self._pieces(self.request(prompt, **params)), self.name)

    def stream(self, prompt: str, **params) -> Iterator[str | Completion]:
        """The answer's text pieces as the provider writes them, then its Completion."""
        return _completion_of(prompt, self._pieces(self.request(prompt, **params)))

    def _pieces(self, request: dict):
        """Text pieces of one streamed completion, then a StreamEnd (usage, finish_reason)."""
        from .chat_stream import StreamEnd

        response = None
        usage = finish = None
        try:
            response = self._litellm.completion(**request)
            for chunk in response:
                usage = getattr(chunk, "usage", None) or usage
                for choice in getattr(chunk, "choices", None) or ():
                    finish = getattr(choice, "finish_reason", None) or finish
                    piece = getattr(getattr(choice, "delta", None), "content", None)
                    if piece:
                        yield piece
        except (ModelError, GeneratorExit):
            raise
        except Exception as exc:  # LiteLLM's errors, raised when called or while streaming
            raise self._translate(exc) from None
        finally:
            closing = getattr(getattr(response, "completion_stream", None), "close", None)
            if callable(closing):  # stopped early (a loop): the connection closes now
                try:
                    closing()
                except Exception:
                    pass
        yield StreamEnd(_usage_dict(usage), finish or "unfinished")


def _usage_dict(usage) -> dict | None:
    """LiteLLM's Usage as the dict tgr reads (None when the provider reported none)."""
    prompt_tokens = getattr(usage, "prompt_tokens", None)
    if not isinstance(prompt_tokens, int):
        return None
    return {"prompt_tokens": prompt_tokens, "completion_tokens": getattr(usage, "completion_tokens", 0) or 0}


class LiteLLMEmbedder(BatchedEmbedder, _LiteLLMBase):
    """Embeddings through litellm.embedding (`litellm:PROVIDER/MODEL`)."""

    PROVIDER = "litellm"

    def embed_batch(self, batch: list[str]) -> list[list[float]]:
        try:
            response = self._litellm.embedding(model=self.model, input=batch, timeout=self.timeout,
                                               num_retries=0, **self._where)
        except Exception as exc:
            raise self._translate(exc) from None
        return _vectors(self.name, response.data, len(batch))


def _vectors(name: str, rows: Sequence, count: int) -> list[list[float]]:
    """The vectors of an embedding answer's rows, in input order."""
    try:
        rows = sorted(rows, key=lambda row: row["index"])
        vectors = [[float(x) for x in row["embedding"]] for row in rows]
    except (KeyError, TypeError, ValueError):
        raise TransientModelError(f"{name}: malformed embeddings response") from None
    if len(vectors) != count:
        raise TransientModelError(f"{name}: {len(vectors)} vectors for {count} texts")
    return vectors
