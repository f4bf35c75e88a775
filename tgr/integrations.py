"""Retrievers over a tgr store for LangChain (extra tgr[langchain]) and LlamaIndex (extra
tgr[llamaindex]).

Both run `KnowledgeBase.retrieve(question, mode, k)` on the store opened read-only, once per
query: a store connection belongs to the thread that opened it, and frameworks call
retrievers from worker threads. The frameworks are imported only when a retriever is made,
so tgr imports without them.
"""
from __future__ import annotations

import os
from functools import lru_cache

from .errors import TgrError
from .retrieve import MODES, Passage

# store bookkeeping: kept in the metadata, left out of what an LLM or embedder is shown
INTERNAL_KEYS = ["document_id", "chunk_id", "score", "ordinal", "char_start", "char_end"]


def passages(store: str | os.PathLike, question: str, mode: str = "local", k: int = 10) -> list[Passage]:
    """The k best passages for the question, from the store opened read-only."""
    from .store import KnowledgeBase

    with KnowledgeBase(store, create=False, readonly=True) as kb:
        return kb.retrieve(question, mode, k)


def passage_metadata(passage: Passage) -> dict:
    """A passage's document metadata, then its place in the store and its score."""
    return {**passage.metadata, "source": passage.source, "title": passage.title,
            "document_id": passage.document_id, "external_id": passage.external_id,
            "chunk_id": passage.chunk_id, "score": passage.score, "ordinal": passage.ordinal,
            "char_start": passage.char_start, "char_end": passage.char_end, "page": passage.page}


def _check(store: str | os.PathLike, mode: str, k: int) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    return os.fspath(store)


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

    class TgrRetriever(retrievers.BaseRetriever):
        """LangChain retriever over a tgr store: Documents best first, metadata per passage."""

        store: str
        mode: str = "local"
        k: int = 10

        def _get_relevant_documents(self, query: str, *, run_manager=None) -> list:
            return [Document(page_content=p.text, metadata=passage_metadata(p), id=p.chunk_id)
                    for p in passages(self.store, query, self.mode, self.k)]

    return TgrRetriever


@lru_cache(maxsize=None)
def _llamaindex_class():
    base = _need("llama_index.core.retrievers", "llama-index-core", "llamaindex")
    from llama_index.core.schema import NodeWithScore, TextNode

    class TgrLlamaRetriever(base.BaseRetriever):
        """LlamaIndex retriever over a tgr store: NodeWithScore best first."""

        def __init__(self, store: str, mode: str = "local", k: int = 10, **kwargs):
            self.store, self.mode, self.k = store, mode, k
            super().__init__(**kwargs)

        def _retrieve(self, query_bundle) -> list:
            return [NodeWithScore(node=TextNode(id_=p.chunk_id, text=p.text, metadata=passage_metadata(p),
                                                excluded_llm_metadata_keys=INTERNAL_KEYS,
                                                excluded_embed_metadata_keys=INTERNAL_KEYS),
                                  score=p.score)
                    for p in passages(self.store, query_bundle.query_str, self.mode, self.k)]

    return TgrLlamaRetriever


def langchain_retriever(store: str | os.PathLike, mode: str = "local", k: int = 10):
    """A LangChain BaseRetriever over the store at `store` (needs tgr[langchain])."""
    return _langchain_class()(store=_check(store, mode, k), mode=mode, k=k)


def llamaindex_retriever(store: str | os.PathLike, mode: str = "local", k: int = 10):
    """A LlamaIndex BaseRetriever over the store at `store` (needs tgr[llamaindex])."""
    return _llamaindex_class()(_check(store, mode, k), mode, k)
