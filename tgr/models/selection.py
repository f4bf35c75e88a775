"""Which chat model and embedder a store is built and asked with, and the gateways over them.

The specs given to tgr.open win; otherwise the store's meta says which models built it. A store
always queries with the embedder it was built with, never another's, and by default with the chat
model it records; only keys and endpoints come from the environment.

A shipped store must answer anyone, with no key and no network (DESIGN §5). When a model a
question needs cannot be reached here (no key, no endpoint, --offline), the question is still
answered from everything else the file holds:
- no chat model: extractive answers (tgr.query.answerers);
- no embedder: the store's portable local vectors if it carries them (`tgr index --portable`),
  else full text, the graph walk and the reports, without vector search.
What was left out, and how to get it back, is said in one note per store (QueryModels.note).
A store's vectors are never queried with another embedder's vectors: a model named explicitly
that does not match the store is still refused. Models ModelChoice built are closed with it;
models passed in belong to the caller.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Sequence

from ..errors import ModelError, ModelMismatch, tell
from ..store.db import PORTABLE_MODEL_KEY, PORTABLE_TABLES, set_meta, transaction
from ..store.untrusted_text import terminal_safe
from .clients import ChatModel, Embedder, vector_type
from .gateway import Gateway
from .registry import LOCAL_PROVIDERS, OFFLINE_NAMES, REMOTE_PROVIDERS, chat_name, make_chat, make_embedder


def keep_store_vector_type(embedder: Embedder, meta: dict) -> Embedder:
    """A built store keeps its vectors as they were stored: meta embed_vector, or float32 for
    a store older than int8 vectors (API embedders wrote float32 before they wrote int8)."""
    if meta.get("embed_model"):
        stored = meta.get("embed_vector", "float32")
        if stored in ("float32", "int8") and vector_type(embedder) != stored:
            embedder.vector_type = stored
    return embedder


def embedder_for_store(meta: dict, spec: str | None, **kwargs) -> Embedder:
    """The embedder to use with an existing store: the one it was built with."""
    built = meta.get("embed_model")
    if not built:
        return make_embedder(spec, **kwargs)
    dim = int(meta.get("embed_dim", 0)) or None
    if spec is not None and spec.lower() in OFFLINE_NAMES:
        # offline means no network: the store's own embedder if it is local, never a swap
        if built.partition(":")[0].lower() in REMOTE_PROVIDERS:
            mismatch = ModelMismatch(f"this store's embeddings were made by {terminal_safe(built)}, which needs "
                                     f"its API; it cannot be queried offline")
            mismatch.reason = "--offline: no network"
            raise mismatch
        spec = None
    wanted = spec or built
    try:
        embedder = make_embedder(wanted, dim=dim, recorded_host=meta.get("endpoint_host"), **kwargs)
    except ModelError as exc:
        mismatch = ModelMismatch(f"this store's embeddings were made by {built} (dim {dim}); "
                                 f"it cannot be queried without it: {exc}")
        mismatch.reason = reason_of(exc)
        raise mismatch from None
    if embedder.name != built or (dim and embedder.dim != dim):
        raise ModelMismatch(f"this store was built with the embedding model {built} (dim {dim}), "
                            f"not {embedder.name}; query it with --embed-model {built}, or re-embed "
                            f"it with `tgr rebuild STORE embeddings --embed-model {embedder.name}`")
    return embedder


def chat_for_store(meta: dict, spec: str | None, *, lenient: bool = False,
                   **kwargs) -> tuple[ChatModel | None, str | None]:
    """The chat model for an existing store, and a note when it had to fall back.

    With no spec, the model the store records is used (its key or endpoint from the
    environment). If that model cannot be built here, lenient callers (questions) get
    None, the extractive mode, with a one-line note saying why; others get the error.
    """
    recorded = meta.get("chat_model")
    host = meta.get("endpoint_host")
    if spec is not None or not recorded:
        return make_chat(spec, recorded_host=host, **kwargs), None
    if recorded.lower() in OFFLINE_NAMES:
        return None, None
    try:
        return make_chat(recorded, recorded_host=host, **kwargs), None
    except ModelError as exc:
        shown = terminal_safe(recorded)
        if not lenient:
            raise ModelMismatch(f"this store was built with the chat model {shown}: {exc} "
                                f"(or name another one with --chat-model)") from None
        return None, out_of_reach_note(shown, reason_of(exc), "extractive answers")


def reason_of(exc: Exception) -> str:
    """Why a model is out of reach, in a few words (the message itself where it gives none)."""
    return getattr(exc, "reason", None) or terminal_safe(str(exc))


def out_of_reach_note(name: str, reason: str, consequence: str) -> str:
    """The note a question gives for a model it leaves out (QueryModels.notes_for joins two
    with the same reason into one)."""
    return f"{name} out of reach ({reason}): {consequence}"


class NoVectors:
    """Stands in for an embedder that cannot be reached: retrieval leaves vectors out."""

    name = ""  # lexical: tgr.query.retrieve never asks it for a vector
    dim = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ModelError("no embedder is available for this store's vectors")


@dataclass
class QueryModels:
    """What questions on one store are answered with."""

    chat: ChatModel | None
    embedder: Embedder
    vectors: str = "store"           # which vectors answer: "store", "portable" or "none"
    chat_note: str | None = None     # why answers are extractive (None: they are not, or by choice)
    vector_note: str | None = None   # what vector search is missing and how to get it back

    said: set = field(default_factory=set)  # notes already given to a warn callback

    @property
    def note(self) -> str | None:
        """One line saying everything that was left out, or None."""
        return "; ".join(self.notes_for(context_only=False)) or None

    def notes_for(self, context_only: bool) -> list[str]:
        """What a question leaves out (a context needs no chat model); the chat model and the
        embedder left out for the same reason in one note."""
        notes = [n for n in (None if context_only else self.chat_note, self.vector_note) if n]
        if len(notes) == 2:
            (chat, _, chat_why), (embed, _, embed_why) = (n.partition(" out of reach (") for n in notes)
            (reason, _, chat_then), (other, _, embed_then) = (w.rpartition("): ") for w in (chat_why, embed_why))
            if reason == other:
                return [out_of_reach_note(f"{chat} and {embed}", reason, f"{chat_then}, {embed_then}")]
        return notes

    def say(self, notes: list[str], warn) -> None:
        """Give warn, on one line, the notes it has not heard yet: each is said once per store
        (with no warn callback, as a tgr.TgrWarning)."""
        unsaid = [n for n in notes if n not in self.said]
        if unsaid:
            self.said.update(unsaid)
            tell(warn, "; ".join(unsaid))

    @property
    def tables(self) -> dict[str, str] | None:
        """The vector tables searched, where they are not the store's own."""
        return PORTABLE_TABLES if self.vectors == "portable" else None

    def models(self) -> tuple:
        return self.chat, self.embedder


def resolve_query_models(meta: dict, chat_spec: ChatModel | str | None, embed_spec: Embedder | str | None,
                         **options) -> QueryModels:
    """The chat model and embedder for questions on a store with this meta; options are the
    keys and endpoint (base_url, api_key, timeout). Raises ModelMismatch only for an embedder
    named explicitly that is not the store's."""
    if chat_spec is not None and not isinstance(chat_spec, str):
        chat, chat_note = chat_spec, None
    else:
        chat, chat_note = chat_for_store(meta, chat_spec, lenient=True, **options)
    if embed_spec is not None and not isinstance(embed_spec, str):
        built = meta.get("embed_model")
        if built and built != embed_spec.name:
            raise ModelMismatch(f"this store was built with the embedding model {built}, not {embed_spec.name}")
        return QueryModels(chat, keep_store_vector_type(embed_spec, meta), chat_note=chat_note)
    try:
        embedder = keep_store_vector_type(embedder_for_store(meta, embed_spec, **options), meta)
        return QueryModels(chat, embedder, chat_note=chat_note)
    except ModelMismatch as exc:
        if not _out_of_reach(meta.get("embed_model"), embed_spec):
            raise
        reason = getattr(exc, "reason", None) or terminal_safe(str(exc))
    embedder, vectors, note = _fallback(meta, reason, offline=embed_spec is not None and embed_spec.lower() in OFFLINE_NAMES)
    return QueryModels(chat, embedder, vectors, chat_note, note)


def _out_of_reach(built: str | None, spec: str | None) -> bool:
    """Whether the store's own embedder failed to build for want of a key or endpoint (or
    because --offline forbids the network), rather than because another one was named."""
    if not built or built.partition(":")[0].lower() not in REMOTE_PROVIDERS:
        return False
    return spec is None or spec.lower() in OFFLINE_NAMES or spec == built


def _fallback(meta: dict, reason: str, offline: bool) -> tuple[Embedder, str, str]:
    """(embedder, vectors, note) when the store's embedder is out of reach."""
    built = terminal_safe(meta.get("embed_model", ""))
    if offline:
        reason = "--offline: drop it to use them"
    portable = meta.get(PORTABLE_MODEL_KEY)
    if portable and portable.partition(":")[0].lower() in LOCAL_PROVIDERS:  # never a remote one
        try:
            embedder = make_embedder(portable)
        except (ModelError, ValueError) as exc:
            reason += f"; nor its portable {terminal_safe(portable)} vectors: {terminal_safe(str(exc))}"
        else:
            if embedder.name == portable and str(embedder.dim) == str(meta.get("portable_embed_dim")):
                return embedder, "portable", out_of_reach_note(built, reason,
                                                               f"searching its portable {embedder.name} vectors")
    return NoVectors(), "none", out_of_reach_note(built, reason, "without vectors")


class ModelChoice:
    """The models of one open store. `store` has .conn, .meta and .path (tgr/session.py)."""

    def __init__(self, store, *, chat, embedder, base_url, api_key, timeout, concurrency, rpm, max_retries,
                 context_tokens=None):
        self.store = store
        self.context_tokens = context_tokens  # the chat model's context window, as the user gave it
        self.chat_spec = chat
        self.embed_spec = embedder
        self.model_options = dict(base_url=base_url, api_key=api_key, timeout=timeout)
        self.gateway_options = dict(concurrency=concurrency, rpm=rpm, max_retries=max_retries)
        self._gateway: Gateway | None = None
        self._reader: Gateway | None = None
        # the query gateways of the other threads' connections (tgr/store/thread_connections.py):
        # connection -> (the QueryModels it was made with, gateway); a gateway's pool of calls
        # belongs to one question at a time, as its connection does
        self._readers: dict = {}
        self._choosing = threading.Lock()
        self._resolved: tuple[ChatModel | None, Embedder] | None = None
        self.asking: QueryModels | None = None  # the models questions use
        self._note: str | None = None  # ... and what they left out, kept once they are released

    def release(self, closing: bool = False) -> None:
        """Close the gateways and the model clients built here; they are rebuilt on use. Other
        threads' questions still running keep theirs (closing: the store closes, nothing runs)."""
        in_use = not closing and self.store.threads.leased > 0
        with self._choosing:
            readers = [] if in_use else [gateway for _, gateway in self._readers.values()]
            if not in_use:
                self._readers = {}
            for gateway in (self._gateway, self._reader, *readers):
                if gateway:
                    gateway.close()
            for model in (*(self._resolved or ()), *(() if in_use or not self.asking else self.asking.models())):
                if model is not None and hasattr(model, "close") and model not in (self.chat_spec, self.embed_spec):
                    model.close()  # only what this store created; models passed in belong to the caller
            self._note = self.note
            self._gateway = self._reader = self._resolved = self.asking = None

    def forget(self, conn) -> None:
        """Close the query gateway of another thread's connection, which is closing."""
        with self._choosing:
            _, gateway = self._readers.pop(conn, (None, None))
        if gateway is not None:
            gateway.close()

    @property
    def note(self) -> str | None:
        """What questions leave out here (models out of reach), once they have been asked."""
        return self.asking.note if self.asking else self._note

    def models(self) -> tuple[ChatModel | None, Embedder]:
        """The chat model and embedder for building, made once from the specs (questions
        resolve theirs in tgr/models/selection.py, leaving out what cannot be reached)."""
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
        """The model gateway for indexing: reads and writes the cache and the ledger (through
        the writing thread's connection: writers take turns, see tgr/session.py)."""
        conn = self.store.conn
        if self._gateway is not None and self._gateway.conn is not conn:  # another thread wrote before
            self._gateway.close()
            self._gateway = None
        if self._gateway is None:
            chat, embedder = self.models()
            self._gateway = Gateway(conn, chat, embedder, **self.gateway_options)
        self._gateway.run_id = run_id
        return self._gateway

    def query_gateway(self) -> Gateway:
        """Queries read the cache but never write: asking leaves the file untouched. Models
        out of reach are left out, said in self.note. Each thread's connection has its own
        gateway; the models are chosen once and shared."""
        conn = self.store.conn
        if self.store.on_home_thread:
            if self._reader is None:
                with self._choosing:
                    asking = self._asking()
                    self._reader = Gateway(conn, asking.chat, asking.embedder, write_cache=False,
                                           **self.gateway_options)
            return self._reader
        with self._choosing:
            asking = self._asking()
            made, gateway = self._readers.get(conn, (None, None))
            if made is not asking:  # new, or its models were released since
                if gateway is not None:
                    gateway.close()
                gateway = Gateway(conn, asking.chat, asking.embedder, write_cache=False, **self.gateway_options)
                self._readers[conn] = (asking, gateway)
        return gateway

    def _asking(self) -> QueryModels:
        """The models questions use, chosen on first use (holding self._choosing)."""
        if self.asking is None:
            self.asking = resolve_query_models(self.store.meta, self.chat_spec, self.embed_spec, **self.model_options)
        return self.asking

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
