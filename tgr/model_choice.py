"""Which chat model and embedder a store is used with, built once, and the gateways over them.

The specs given to tgr.open win; otherwise the store's meta says which models built it.
Models this object built are closed with it; models passed in belong to the caller.
"""
from __future__ import annotations

from .db import set_meta, transaction
from .errors import ModelMismatch
from .gateway import Gateway
from .models import ChatModel, Embedder, vector_type
from .providers import chat_for_store, embedder_for_store, make_embedder


class ModelChoice:
    """The models of one open store. `store` has .conn, .meta and .path (tgr/admin.py)."""

    def __init__(self, store, *, chat, embedder, base_url, api_key, timeout, concurrency, rpm, max_retries):
        self.store = store
        self.chat_spec = chat
        self.embed_spec = embedder
        self.model_options = dict(base_url=base_url, api_key=api_key, timeout=timeout)
        self.gateway_options = dict(concurrency=concurrency, rpm=rpm, max_retries=max_retries)
        self._gateway: Gateway | None = None
        self._reader: Gateway | None = None
        self._resolved: tuple[ChatModel | None, Embedder] | None = None
        self.note: str | None = None  # why questions fell back to extractive answers

    def release(self) -> None:
        """Close the gateways and the model clients built here; they are rebuilt on use."""
        for gateway in (self._gateway, self._reader):
            if gateway:
                gateway.close()
        for model in self._resolved or ():
            if model is not None and hasattr(model, "close") and model not in (self.chat_spec, self.embed_spec):
                model.close()  # only what this store created; models passed in belong to the caller
        self._gateway = self._reader = self._resolved = None

    def models(self, lenient: bool = False) -> tuple[ChatModel | None, Embedder]:
        """The chat model and embedder, built once from the specs.

        lenient (questions only): a recorded chat model that cannot be reached here
        falls back to extractive answers, noted in self.note.
        """
        if self._resolved is None:
            chat = self.chat_model(lenient)
            embedder = self.embed_spec
            if embedder is None or isinstance(embedder, str):
                embedder = embedder_for_store(self.store.meta, embedder, **self.model_options)
            else:
                built = self.store.meta.get("embed_model")
                if built and built != embedder.name:
                    raise ModelMismatch(f"this store was built with the embedding model {built}, "
                                        f"not {embedder.name}")
            self._resolved = (chat, embedder)
        return self._resolved

    def chat_model(self, lenient: bool = False) -> ChatModel | None:
        """The chat model from its spec, else the one the store records (None: extractive)."""
        chat = self.chat_spec
        if chat is not None and not isinstance(chat, str):
            return chat
        chat, self.note = chat_for_store(self.store.meta, chat, lenient=lenient, **self.model_options)
        return chat

    def gateway(self, run_id: int | None = None) -> Gateway:
        """The model gateway for indexing: reads and writes the cache and the ledger."""
        if self._gateway is None:
            chat, embedder = self.models()
            self._gateway = Gateway(self.store.conn, chat, embedder, **self.gateway_options)
        self._gateway.run_id = run_id
        return self._gateway

    def query_gateway(self) -> Gateway:
        """Queries read the cache but never write: asking leaves the file untouched."""
        if self._reader is None:
            chat, embedder = self.models(lenient=True)
            self._reader = Gateway(self.store.conn, chat, embedder, write_cache=False, **self.gateway_options)
        return self._reader

    def check_chat_model(self, chat: ChatModel | None) -> None:
        """Refuse to continue a store with another chat model than it was built with,
        unless one was asked for explicitly (a missing key must not silently switch an
        LLM-built store to the offline extractor, or the other way round)."""
        built = self.store.meta.get("chat_model")
        current = chat.name if chat else "offline-extractive"
        if self.chat_spec is not None or not built or built == current:
            return
        if self.store.conn.execute("SELECT 1 FROM extractions LIMIT 1").fetchone() is None:
            return
        raise ModelMismatch(f"{self.store.path} was built with the chat model {built}, but {current} is what is "
                            f"configured now; pass --chat-model {built} (with its key or endpoint) to "
                            f"continue, or name another model with --chat-model to mix them on purpose")

    def switch_embedder(self, clear_vectors) -> None:
        """Move the store to the embedder given (or the default): probe it first, then
        clear_vectors() and record it; re-embedding is how a store changes embedding model."""
        embedder = self.embed_spec
        if embedder is None or isinstance(embedder, str):
            embedder = make_embedder(embedder, **self.model_options)
        embedder.embed(["embedding probe"])  # fail here, before the old vectors are dropped
        self.embed_spec = embedder
        clear_vectors()
        with transaction(self.store.conn):
            set_meta(self.store.conn, embed_model=embedder.name, embed_dim=embedder.dim,
                     embed_vector=vector_type(embedder))
        self.release()
