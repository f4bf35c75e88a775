"""The model providers by name, and the chat model or embedder a spec string makes.

Spec strings: "zhipuai:glm-4-flash", "openai:qwen2.5" (needs a base URL), "tgr:hash-384"
(hashed, no weights), "local:multilingual-e5-small" (the local-embed extra), "offline" (no
chat model: extractive mode; as an embedder: the offline default). A bare name goes to the
OpenAI-compatible endpoint when a base URL is given, else to zhipuai.
With nothing configured and no ZHIPUAI_API_KEY, tgr runs on the offline default; its embedder
is local:multilingual-e5-small when the local-embed extra is installed, else tgr:hash-384.
Which of them a store is built and asked with is tgr.models.selection's business.
"""
from __future__ import annotations

import os

from ..errors import ModelError
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

OFFLINE_NAMES = {"offline", "none", "extractive", OFFLINE_WRITER}
REMOTE_PROVIDERS = {"zhipuai", "openai"}  # embedders that need a key or an endpoint
LOCAL_PROVIDERS = ("tgr", "local")  # embedders that run in process, with no key or endpoint


def _split(spec: str, base_url: str | None) -> tuple[str, str]:
    if ":" in spec:
        provider, _, name = spec.partition(":")
        return provider.lower(), name
    return ("openai" if base_url else "zhipuai"), spec


def _endpoint(spec: str, base_url: str | None) -> str:
    if not base_url:
        raise ModelError(f"{spec} needs an OpenAI-compatible endpoint: pass --base-url or set TGR_BASE_URL")
    return base_url


def _hashed(name: str, **_) -> Embedder:
    size = name.rsplit("-", 1)[-1]
    return HashEmbedder(int(size) if size.isdigit() else 384)


# provider prefix -> factory(name, *, spec, base_url, api_key, timeout[, dim]); a new provider is one entry
CHAT_PROVIDERS = {
    "zhipuai": lambda name, *, spec, base_url, api_key, timeout: ZhipuChat(name, api_key=api_key, timeout=timeout),
    "openai": lambda name, *, spec, base_url, api_key, timeout: OpenAIChat(
        name, _endpoint(spec, base_url), api_key=api_key, timeout=timeout),
}
EMBED_PROVIDERS = {
    "tgr": _hashed,
    "local": lambda name, **_: LocalEmbedder(name),
    "zhipuai": lambda name, *, spec, base_url, api_key, timeout, dim: ZhipuEmbedder(
        name, dim=dim, api_key=api_key, timeout=timeout),
    "openai": lambda name, *, spec, base_url, api_key, timeout, dim: OpenAIEmbedder(
        name, _endpoint(spec, base_url), dim=dim, api_key=api_key, timeout=timeout),
}


def make_chat(spec: str | None, *, base_url: str | None = None, api_key: str | None = None,
              timeout: float = 120.0) -> ChatModel | None:
    """A chat model for the spec, or None for the offline (extractive) mode."""
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
    provider, name = _split(spec, base_url)
    factory = CHAT_PROVIDERS.get(provider)
    if factory is None:
        raise ModelError(f"unknown chat provider in {spec!r} (use {', '.join(f'{p}:' for p in CHAT_PROVIDERS)} "
                         "or offline)")
    return factory(name, spec=spec, base_url=base_url, api_key=api_key, timeout=timeout)


def chat_name(chat: ChatModel | None) -> str:
    """The name a store records for its chat model (the offline extractive one for None)."""
    return chat.name if chat is not None else OFFLINE_WRITER


def make_embedder(spec: str | None, *, base_url: str | None = None, api_key: str | None = None,
                  timeout: float = 120.0, dim: int | None = None) -> Embedder:
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
    provider, name = _split(spec, base_url)
    factory = EMBED_PROVIDERS.get(provider)
    if factory is None:
        raise ModelError(f"unknown embedding provider in {spec!r} "
                         "(use zhipuai:, openai:, local:multilingual-e5-small or tgr:hash-384)")
    return factory(name, spec=spec, base_url=base_url, api_key=api_key, timeout=timeout, dim=dim)


def offline_embedder() -> Embedder:
    """The embedder of a new offline store: TGR_EMBED_MODEL if it names an in-process one,
    else the local model when the local-embed extra is installed, else the hashed one."""
    spec = os.environ.get("TGR_EMBED_MODEL")
    if spec and spec.partition(":")[0].lower() in LOCAL_PROVIDERS:
        return make_embedder(spec)
    return LocalEmbedder() if local_embed_available() else HashEmbedder()
