"""The model providers by name, and the chat model or embedder a spec string makes.

Spec strings: "zhipuai:glm-4-flash", "openai:gpt-4o-mini", "ollama:qwen2.5:7b" (Ollama's own
API, tgr.models.ollama), "litellm:anthropic/claude-..." (any provider LiteLLM knows, with its
own variables: the litellm extra, tgr.models.litellm_chat), "tgr:hash-384"
(hashed, no weights), "local:multilingual-e5-small" (the local-embed extra), "offline" (no
chat model: extractive mode; as an embedder: the offline default). A bare name goes to the
OpenAI-compatible endpoint when a base URL is given, else to zhipuai.
With nothing configured and no ZHIPUAI_API_KEY, tgr runs on the offline default; its embedder
is local:multilingual-e5-small when the local-embed extra is installed, else tgr:hash-384.
Which of them a store is built and asked with is tgr.models.selection's business.

Keys and endpoints, first found wins (docs: README "Keys and endpoints"):
  openai:   --base-url, TGR_BASE_URL, OPENAI_BASE_URL, else OpenAI's own endpoint;
            the key: api_key=, TGR_API_KEY, OPENAI_API_KEY (none needed at a named endpoint).
  zhipuai:  the key: api_key=, TGR_API_KEY, ZHIPUAI_API_KEY.
  ollama:   --base-url, TGR_BASE_URL, OLLAMA_HOST, else 127.0.0.1:11434; no key.
A store records the host of the endpoint it was built at (never a key) and shows it; the host
is never used to send anything: with no endpoint named, a store built elsewhere than at
OpenAI's endpoint (ollama: than on this machine) is refused (building) or left out
(questions), naming the host.
"""
from __future__ import annotations

import os

from ..errors import ModelError, OutOfReach
from ..store.untrusted_text import terminal_safe
from ..offline.providers import OFFLINE_WRITER, HashEmbedder
from .clients import (
    ZHIPU_CHAT_DEFAULT,
    ZHIPU_EMBED_DEFAULT,
    ChatModel,
    Embedder,
    OpenAIChat,
    OpenAIEmbedder,
    ZhipuChat,
    ZhipuEmbedder,
)
from .local_embedder import LocalEmbedder
from .local_embedder import available as local_embed_available
from .ollama import DEFAULT_URL as OLLAMA_URL
from .ollama import OllamaChat, OllamaEmbedder, ollama_url

OFFLINE_NAMES = {"offline", "none", "extractive", OFFLINE_WRITER}
REMOTE_PROVIDERS = {"zhipuai", "openai", "ollama", "litellm"}  # embedders that need a key or an endpoint
LOCAL_PROVIDERS = ("tgr", "local")  # embedders that run in process, with no key or endpoint


def _split(spec: str, base_url: str | None, api_key: str | None = None) -> tuple[str, str]:
    """(provider, model name). A name without a known provider prefix ("glm-4-flash", or Ollama's
    "qwen2.5:7b") goes where bare names go (see _bare_name_provider); an unknown prefix is
    refused unless that is an OpenAI-compatible endpoint, whose own model names may hold colons."""
    provider, colon, name = spec.partition(":")
    bare = _bare_name_provider(base_url, api_key)
    if colon and (provider.lower() in CHAT_PROVIDERS.keys() | EMBED_PROVIDERS.keys() or bare != "openai"):
        return provider.lower(), name
    return bare, spec


def _bare_name_provider(base_url: str | None, api_key: str | None) -> str:
    """Where a model name without a provider goes: a named endpoint (--base-url, TGR_BASE_URL,
    OPENAI_BASE_URL); else zhipuai when a key for it is set; else OpenAI's endpoint when only
    OPENAI_API_KEY is; else zhipuai (whose missing key the error then names)."""
    if named_base_url(base_url):
        return "openai"
    if api_key or os.environ.get("TGR_API_KEY") or os.environ.get("ZHIPUAI_API_KEY"):
        return "zhipuai"
    return "openai" if os.environ.get("OPENAI_API_KEY") else "zhipuai"


OPENAI_URL = "https://api.openai.com/v1"
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "zhipuai": "ZHIPUAI_API_KEY"}


def named_base_url(base_url: str | None = None) -> str | None:
    """The OpenAI-compatible endpoint the user named: the argument, TGR_BASE_URL, OPENAI_BASE_URL."""
    return base_url or os.environ.get("TGR_BASE_URL") or os.environ.get("OPENAI_BASE_URL") or None


def api_key_for(provider: str, api_key: str | None = None) -> str | None:
    """The key for a provider: the argument, TGR_API_KEY, then the provider's own variable."""
    return api_key or os.environ.get("TGR_API_KEY") or os.environ.get(KEY_VARIABLES.get(provider, "")) or None


def endpoint_host(url: str | None) -> str | None:
    """host[:port] of an endpoint URL (never its user or password), as a store records it."""
    from urllib.parse import urlsplit

    if not url:
        return None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    return f"{host}:{port}" if host and port else host


def model_host(model) -> str | None:
    """The endpoint host a model sends to (None: zhipuai's own, or computed in process)."""
    remote = getattr(model, "name", "").startswith(("openai:", "ollama:"))
    return endpoint_host(getattr(model, "base_url", None)) if remote else None


def _openai_endpoint(spec: str, base_url: str | None, api_key: str | None,
                     recorded_host: str | None) -> tuple[str, str]:
    """(URL, key) for an openai: model: the endpoint named, else OpenAI's own. A store built
    at another host than OpenAI's is not sent to OpenAI: the user names its endpoint."""
    named = named_base_url(base_url)
    key = api_key_for("openai", api_key)
    if named:
        return named, key or ""
    if recorded_host and recorded_host != endpoint_host(OPENAI_URL):
        host = terminal_safe(recorded_host)
        raise OutOfReach(f"{spec} was used at {host}: pass --base-url with that endpoint's URL (or set "
                         "TGR_BASE_URL or OPENAI_BASE_URL)", f"used at {host}; set TGR_BASE_URL or --base-url")
    if not key:
        raise OutOfReach(f"{spec} at OpenAI's endpoint needs a key: set OPENAI_API_KEY (or TGR_API_KEY), "
                         "or pass --base-url for another OpenAI-compatible endpoint", "no OPENAI_API_KEY")
    return OPENAI_URL, key


def _openai_chat(name, *, spec, base_url, api_key, timeout, recorded_host=None) -> ChatModel:
    url, key = _openai_endpoint(f"openai:{name}", base_url, api_key, recorded_host)
    return OpenAIChat(name, url, api_key=key, timeout=timeout)


def _openai_embedder(name, *, spec, base_url, api_key, timeout, dim, recorded_host=None) -> Embedder:
    url, key = _openai_endpoint(f"openai:{name}", base_url, api_key, recorded_host)
    return OpenAIEmbedder(name, url, dim=dim, api_key=key, timeout=timeout)


def _ollama_endpoint(spec: str, base_url: str | None, recorded_host: str | None) -> str:
    """The Ollama server of an ollama: model: the one named (--base-url, TGR_BASE_URL,
    OLLAMA_HOST), else this machine's; a store built at another host is not sent here."""
    if base_url or os.environ.get("OLLAMA_HOST"):
        return ollama_url(base_url)
    if recorded_host and recorded_host not in (endpoint_host(OLLAMA_URL), "localhost:11434"):
        host = terminal_safe(recorded_host)
        raise OutOfReach(f"{spec} was used at {host}: pass --base-url with that Ollama server's URL (or set "
                         "OLLAMA_HOST)", f"used at {host}; set OLLAMA_HOST or --base-url")
    return OLLAMA_URL


def _ollama_chat(name, *, spec, base_url, api_key, timeout, recorded_host=None) -> ChatModel:
    return OllamaChat(name, _ollama_endpoint(f"ollama:{name}", base_url, recorded_host), timeout=timeout)


def _ollama_embedder(name, *, spec, base_url, api_key, timeout, dim, recorded_host=None) -> Embedder:
    return OllamaEmbedder(name, _ollama_endpoint(f"ollama:{name}", base_url, recorded_host), dim=dim,
                          timeout=timeout)


def _litellm_chat(name, *, spec, base_url, api_key, timeout, recorded_host=None) -> ChatModel:
    from .litellm_chat import LiteLLMChat  # the litellm extra, imported with its first model

    return LiteLLMChat(name, base_url, api_key=api_key, timeout=timeout)


def _litellm_embedder(name, *, spec, base_url, api_key, timeout, dim, recorded_host=None) -> Embedder:
    from .litellm_chat import LiteLLMEmbedder

    return LiteLLMEmbedder(name, base_url, dim=dim, api_key=api_key, timeout=timeout)


def _hashed(name: str, **_) -> Embedder:
    size = name.rsplit("-", 1)[-1]
    return HashEmbedder(int(size) if size.isdigit() else 384)


# provider prefix -> factory(name, *, spec, base_url, api_key, timeout[, dim]); a new provider is one entry
# (recorded_host: where the store used an OpenAI-compatible model, see _openai_endpoint)
CHAT_PROVIDERS = {
    "zhipuai": lambda name, *, spec, base_url, api_key, timeout, recorded_host=None: ZhipuChat(
        name, api_key=api_key_for("zhipuai", api_key), timeout=timeout),
    "openai": _openai_chat,
    "ollama": _ollama_chat,
    "litellm": _litellm_chat,
}
EMBED_PROVIDERS = {
    "tgr": _hashed,
    "local": lambda name, **_: LocalEmbedder(name),
    "zhipuai": lambda name, *, spec, base_url, api_key, timeout, dim, recorded_host=None: ZhipuEmbedder(
        name, dim=dim, api_key=api_key_for("zhipuai", api_key), timeout=timeout),
    "openai": _openai_embedder,
    "ollama": _ollama_embedder,
    "litellm": _litellm_embedder,
}


def make_chat(spec: str | None, *, base_url: str | None = None, api_key: str | None = None,
              timeout: float = 120.0, recorded_host: str | None = None) -> ChatModel | None:
    """A chat model for the spec, or None for the offline (extractive) mode (recorded_host:
    where the store used it, see _openai_endpoint)."""
    base_url = base_url or os.environ.get("TGR_BASE_URL")
    if spec is None:
        if base_url:
            spec = os.environ.get("TGR_CHAT_MODEL")
            if not spec:
                raise ModelError("a base URL needs a chat model: pass --chat-model NAME")
        elif api_key or os.environ.get("ZHIPUAI_API_KEY"):
            spec = f"zhipuai:{ZHIPU_CHAT_DEFAULT}"
        else:
            return None
    if spec.lower() in OFFLINE_NAMES:
        return None
    provider, name = _split(spec, base_url, api_key)
    factory = CHAT_PROVIDERS.get(provider)
    if factory is None:
        raise ModelError(f"unknown chat provider in {spec!r} (use {', '.join(f'{p}:' for p in CHAT_PROVIDERS)} "
                         "or offline)")
    return factory(name, spec=spec, base_url=base_url, api_key=api_key, timeout=timeout, recorded_host=recorded_host)


def chat_name(chat: ChatModel | None) -> str:
    """The name a store records for its chat model (the offline extractive one for None)."""
    return chat.name if chat is not None else OFFLINE_WRITER


def make_embedder(spec: str | None, *, base_url: str | None = None, api_key: str | None = None,
                  timeout: float = 120.0, dim: int | None = None, recorded_host: str | None = None) -> Embedder:
    """An embedder for the spec; with no spec, zhipuai if a key is set, else the offline one."""
    base_url = base_url or os.environ.get("TGR_BASE_URL")
    if spec is not None and spec.lower() in OFFLINE_NAMES:
        return offline_embedder()
    if spec is None:
        spec = os.environ.get("TGR_EMBED_MODEL")
    if spec is None:
        if api_key or os.environ.get("ZHIPUAI_API_KEY"):
            spec = f"zhipuai:{ZHIPU_EMBED_DEFAULT}"
        else:
            return offline_embedder()
    provider, name = _split(spec, base_url, api_key)
    factory = EMBED_PROVIDERS.get(provider)
    if factory is None:
        raise ModelError(f"unknown embedding provider in {spec!r} "
                         "(use zhipuai:, openai:, ollama:, litellm:, local:multilingual-e5-small or tgr:hash-384)")
    return factory(name, spec=spec, base_url=base_url, api_key=api_key, timeout=timeout, dim=dim,
                   recorded_host=recorded_host)


def offline_embedder() -> Embedder:
    """The embedder of a new offline store: TGR_EMBED_MODEL if it names an in-process one,
    else the local model when the local-embed extra is installed, else the hashed one."""
    spec = os.environ.get("TGR_EMBED_MODEL")
    if spec and spec.partition(":")[0].lower() in LOCAL_PROVIDERS:
        return make_embedder(spec)
    return LocalEmbedder() if local_embed_available() else HashEmbedder()
