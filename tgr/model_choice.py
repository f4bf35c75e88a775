"""Which chat model and embedder a store is used with, built once, and the gateways over them.

The specs given to tgr.open win; otherwise the store's meta says which models built it.
Models this object built are closed with it; models passed in belong to the caller.
"""
from __future__ import annotations

from .db import set_meta, transaction
from .errors import ModelMismatch
from .gateway import Gateway
from .models import ChatModel, Embedder, vector_type
from .providers import (OFFLINE_NAMES, chat_for_store, chat_name, embedder_for_store, keep_store_vector_type,
                        make_embedder)
from .query_models import QueryModels, resolve_query_models


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
        self.asking: QueryModels | None = None  # the models questions use (tgr/query_models.py)
        self._note: str | None = None  # ... and what they left out, kept once they are released

    def release(self) -> None:
        """Close the gateways and the model clients built here; they are rebuilt on use."""
        for gateway in (self._gateway, self._reader):
            if gateway:
                gateway.close()
        for model in (*(self._resolved or ()), *(self.asking.models() if self.asking else ())):
            if model is not None and hasattr(model, "close") and model not in (self.chat_spec, self.embed_spec):
                model.close()  # only what this store created; models passed in belong to the caller
        self._note = self.note
        self._gateway = self._reader = self._resolved = self.asking = None

    @property
    def note(self) -> str | None:
        """What questions leave out here (models out of reach), once they have been asked."""
        return self.asking.note if self.asking else self._note

    def models(self) -> tuple[ChatModel | None, Embedder]:
        """The chat model and embedder for building, made once from the specs (questions
        resolve theirs in tgr/query_models.py, leaving out what cannot be reached)."""
        if self._resolved is None:
            chat = self.chat_model()
            embedder = self.embed_spec
            if embedder is None or isinstance(embedder, str):
                embedder = self._embedder_for_run(embedder)
            else:
                built = self.store.meta.get("embed_model")
                if built and built != embedder.name:
                    raise ModelMismatch(f"this store was built with the embedding model {built}, "
                                        f"not {embedder.name}")
                embedder = keep_store_vector_type(embedder, self.store.meta)
            self._resolved = (chat, embedder)
        return self._resolved

    def _embedder_for_run(self, spec: str | None) -> Embedder:
        """The store's recorded embedder; another one named explicitly only while the store
        holds no vector yet (a first run that stopped before embedding anything)."""
        try:
            return keep_store_vector_type(embedder_for_store(self.store.meta, spec, **self.model_options),
                                          self.store.meta)
        except ModelMismatch:
            if spec is None or spec.lower() in OFFLINE_NAMES or has_vectors(self.store.conn):
                raise
        return make_embedder(spec, **self.model_options)

    def chat_model(self) -> ChatModel | None:
        """The chat model from its spec, else the one the store records (None: extractive)."""
        chat = self.chat_spec
        if chat is not None and not isinstance(chat, str):
            return chat
        return chat_for_store(self.store.meta, chat, **self.model_options)[0]

    def gateway(self, run_id: int | None = None) -> Gateway:
        """The model gateway for indexing: reads and writes the cache and the ledger."""
        if self._gateway is None:
            chat, embedder = self.models()
            self._gateway = Gateway(self.store.conn, chat, embedder, **self.gateway_options)
        self._gateway.run_id = run_id
        return self._gateway

    def query_gateway(self) -> Gateway:
        """Queries read the cache but never write: asking leaves the file untouched. Models
        out of reach are left out (tgr/query_models.py), said in self.note."""
        if self._reader is None:
            self.asking = resolve_query_models(self.store.meta, self.chat_spec, self.embed_spec, **self.model_options)
            self._reader = Gateway(self.store.conn, self.asking.chat, self.asking.embedder, write_cache=False,
                                   **self.gateway_options)
        return self._reader

    def check_chat_model(self, chat: ChatModel | None) -> None:
        """Refuse to continue a store with another chat model than it was built with,
        unless one was asked for explicitly (a missing key must not silently switch an
        LLM-built store to the offline extractor, or the other way round)."""
        built = self.store.meta.get("chat_model")
        current = chat_name(chat)
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
        # fail here, before the old vectors are dropped (retried like every request)
        Gateway(self.store.conn, None, embedder, **self.gateway_options).retried(
            lambda: embedder.embed(["embedding probe"]))
        self.embed_spec = embedder
        clear_vectors()
        with transaction(self.store.conn):
            set_meta(self.store.conn, embed_model=embedder.name, embed_dim=embedder.dim,
                     embed_vector=vector_type(embedder))
        self.release()


def has_vectors(conn) -> bool:
    """Whether any chunk, entity or report of the store has a vector (of its own embedder)."""
    return any(conn.execute(f"SELECT 1 FROM {table} WHERE embed_hash IS NOT NULL LIMIT 1").fetchone()
               for table in ("chunks", "entities", "reports"))
