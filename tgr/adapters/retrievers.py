"""Retrievers over a tgr store for LangChain (extra tgr[langchain]) and LlamaIndex (extra
tgr[llamaindex]).

Both run `KnowledgeBase.retrieve(question, mode, k)` on the store opened read-only, opened on the
first query and shared by every later one, from whichever worker thread the framework calls it
(a KnowledgeBase serves any number of threads, tgr/session.py); their async methods
(LangChain's ainvoke, LlamaIndex's aretrieve) await `KnowledgeBase.aretrieve` instead. Given several stores (paths, or
a tgr.open_many object: its paths and open options), each is asked in turn and the rankings are fused by rank as
tgr.multi_store fuses them; each passage's metadata names its store. The frameworks are imported
only when a retriever is made, so tgr imports without them.
"""
from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import Sequence, Union

from ..errors import TgrError
from ..query.retrieve import MODES, Passage

# store bookkeeping: kept in the metadata, left out of what an LLM or embedder is shown
INTERNAL_KEYS = ["document_id", "chunk_id", "score", "ordinal", "char_start", "char_end", "store"]

# one store's path, several stores' paths, or a tgr.open_many object (tgr.multi_store.Stores)
StoreSpec = Union[str, os.PathLike, Sequence[Union[str, os.PathLike]], "Stores"]


def passages(store: str | os.PathLike | tuple[str, ...], question: str, mode: str = "local", k: int = 10,
             options: dict | None = None) -> list[Passage]:
    """The k best passages for the question, from the store (or each of several stores, their
    rankings fused by rank) opened read-only with the given open options."""
    opened = Opened(store, options)
    try:
        return opened.passages(question, mode, k)
    finally:
        opened.close()


class Opened:
    """The store, or each of several stores, a retriever asks: opened read-only on its first
    query (a missing store is an error then, and is not created) and shared by every thread that
    asks afterwards; a copy of a retriever opens its own."""

    def __init__(self, store: str | tuple[str, ...], options: dict | None = None):
        self.store, self.options = store, options or {}
        self._lock = threading.Lock()
        self._stores: list | None = None

    def passages(self, question: str, mode: str = "local", k: int = 10) -> list[Passage]:
        """The k best passages (several stores' rankings fused by rank, as passages() gives them)."""
        from ..multi_store import fuse

        stores = self._opened()
        rankings = [kb.retrieve(question, mode, k) for kb in stores]
        if isinstance(self.store, (str, os.PathLike)):
            return rankings[0]
        return fuse(rankings, [str(p) for p in self.store])[:k]

    async def apassages(self, question: str, mode: str = "local", k: int = 10) -> list[Passage]:
        """passages(), awaited: the stores opened and asked on the async API's worker threads,
        all at once (KnowledgeBase.aretrieve)."""
        import asyncio

        from ..models.async_calls import in_thread
        from ..multi_store import fuse

        stores = await in_thread(self._opened)
        rankings = await asyncio.gather(*(kb.aretrieve(question, mode, k) for kb in stores))
        if isinstance(self.store, (str, os.PathLike)):
            return rankings[0]
        return fuse(list(rankings), [str(p) for p in self.store])[:k]

    def _opened(self) -> list:
        from ..knowledge_base import open_readonly

        with self._lock:
            if self._stores is None:
                names = [self.store] if isinstance(self.store, (str, os.PathLike)) else list(self.store)
                self._stores = open_readonly(names, **self.options)
            return self._stores

    def close(self) -> None:
        with self._lock:
            for kb in self._stores or ():
                kb.close()
            self._stores = None

    def __deepcopy__(self, memo) -> "Opened":
        return Opened(self.store, self.options)

    __copy__ = lambda self: Opened(self.store, self.options)  # noqa: E731


def passage_metadata(passage: Passage) -> dict:
    """A passage's document metadata, then its place in the store and its score."""
    return {**passage.metadata, "source": passage.source, "title": passage.title,
            "document_id": passage.document_id, "external_id": passage.external_id,
            "chunk_id": passage.chunk_id, "score": passage.score, "ordinal": passage.ordinal,
            "char_start": passage.char_start, "char_end": passage.char_end, "page": passage.page,
            **({"store": passage.store} if passage.store is not None else {})}


def _check(store: StoreSpec, mode: str, k: int) -> tuple[str | tuple[str, ...], dict]:
    """(the store's path or the stores' paths, their open options), the arguments checked."""
    from ..multi_store import Stores

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if isinstance(store, Stores):
        return tuple(store.names), dict(store.options)
    if isinstance(store, (str, os.PathLike)):
        return os.fspath(store), {}
    paths = tuple(os.fspath(p) for p in store)
    if not paths:
        raise ValueError("give at least one store")
    return paths, {}


def _need(module: str, package: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise TgrError(f"this retriever needs {package}: pip install 'tgr[{extra}]'") from None


@lru_cache(maxsize=None)
def _langchain_class():
    retrievers = _need("langchain_core.retrievers", "langchain-core", "langchain")
    from langchain_core.documents import Document
    from pydantic import Field, PrivateAttr

    class TgrRetriever(retrievers.BaseRetriever):
        """LangChain retriever over a tgr store: Documents best first, metadata per passage."""

        store: str | tuple[str, ...]  # a path, or several stores' paths
        mode: str = "local"
        k: int = 10
        # the stores' open options (from a tgr.open_many object): never shown, they may hold a key
        options: dict = Field(default_factory=dict, repr=False, exclude=True)
        _opened: Opened | None = PrivateAttr(default=None)

        def model_post_init(self, context) -> None:
            super().model_post_init(context)
            self._opened = Opened(self.store, self.options)

        def _get_relevant_documents(self, query: str, *, run_manager=None) -> list:
            return [document(p) for p in self._opened.passages(query, self.mode, self.k)]

        async def _aget_relevant_documents(self, query: str, *, run_manager=None) -> list:
            return [document(p) for p in await self._opened.apassages(query, self.mode, self.k)]

    def document(p: Passage):
        return Document(page_content=p.text, metadata=passage_metadata(p), id=p.chunk_id)

    return TgrRetriever


@lru_cache(maxsize=None)
def _llamaindex_class():
    base = _need("llama_index.core.retrievers", "llama-index-core", "llamaindex")
    from llama_index.core.schema import NodeWithScore, TextNode

    class TgrLlamaRetriever(base.BaseRetriever):
        """LlamaIndex retriever over a tgr store: NodeWithScore best first."""

        def __init__(self, store: str | tuple[str, ...], mode: str = "local", k: int = 10,
                     options: dict | None = None, **kwargs):
            self.store, self.mode, self.k, self.options = store, mode, k, options or {}
            self._opened = Opened(store, self.options)
            super().__init__(**kwargs)

        def _retrieve(self, query_bundle) -> list:
            return [node(p) for p in self._opened.passages(query_bundle.query_str, self.mode, self.k)]

        async def _aretrieve(self, query_bundle) -> list:
            return [node(p) for p in await self._opened.apassages(query_bundle.query_str, self.mode, self.k)]

    def node(p: Passage):
        # several stores may hold the same chunk (copies, shards): LlamaIndex keeps one node per id
        ident = p.chunk_id if p.store is None else f"{p.store}#{p.chunk_id}"
        return NodeWithScore(node=TextNode(id_=ident, text=p.text, metadata=passage_metadata(p),
                                           excluded_llm_metadata_keys=INTERNAL_KEYS,
                                           excluded_embed_metadata_keys=INTERNAL_KEYS),
                             score=p.score)

    return TgrLlamaRetriever


def langchain_retriever(store: StoreSpec, mode: str = "local", k: int = 10):
    """A LangChain BaseRetriever over the store at `store`, or over several (a list of paths
    or a tgr.open_many object) fused by rank (needs tgr[langchain])."""
    paths, options = _check(store, mode, k)
    return _langchain_class()(store=paths, mode=mode, k=k, options=options)


def llamaindex_retriever(store: StoreSpec, mode: str = "local", k: int = 10):
    """A LlamaIndex BaseRetriever over the store at `store`, or over several (a list of paths
    or a tgr.open_many object) fused by rank (needs tgr[llamaindex])."""
    paths, options = _check(store, mode, k)
    return _llamaindex_class()(paths, mode, k, options)
