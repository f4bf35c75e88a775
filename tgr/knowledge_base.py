"""KnowledgeBase: the facade over one .db file. It holds no SQL and only delegates:

- tgr/session.py      the connection, writer lock, migration on first write, meta, settings,
                    and (tgr/models/selection.py) the models the store is used with;
- tgr/build/pipeline.py   the build side: index, delete, rebuild, estimate;
- tgr/query/read_api.py    the read side: ask, retrieve, lookups, graph, info, export;
- tgr/build/ledger.py     the runs ledger and `stats`.
"""
from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import AsyncIterator, Callable, Iterable, Iterator, Sequence

from .build import ledger
from .query import read_api as reading
from .session import StoreAdmin
from .store.db import Connection
from .models.gateway import Gateway
from .models.clients import ChatModel, Embedder
from .prompts import Prompts
from .query.modes import Answer, QuerySettings, Searcher, final_answer
from .query.retrieve import Passage
from .settings import IndexSettings, IndexSummary

# The build side (tgr/build/pipeline.py and the stages it runs) is imported by the methods that
# build: a question never needs it, and a cold `tgr ask` would pay for it.

__all__ = ["KnowledgeBase", "IndexSettings", "IndexSummary", "open"]

Progress = Callable[[str, int, int], None]
Warn = Callable[[str], None]


def _reads(method):
    """The method, run with a connection of the calling thread's (tgr/session.py: one
    KnowledgeBase serves any number of threads; the opening thread uses its own)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        store = self._store
        if threading.get_ident() == store.home:
            return method(self, *args, **kwargs)
        with store.reading():
            return method(self, *args, **kwargs)
    return call


def _written(store: StoreAdmin, write: Callable[[], Iterator[str | Answer]],
             stream: bool) -> Answer | Iterator[str | Answer]:
    """The Answer of write()'s steps, or with stream the steps themselves; on a thread other
    than the opening one, they hold the thread's connection until they end."""
    if threading.get_ident() == store.home or store.threads.current() is not None:
        steps = write()
        return steps if stream else final_answer(steps)
    with store.threads.lease() as conn:
        steps = write()
        if not stream:
            return final_answer(steps)
        store.threads.handed_over()
        return store.threads.kept(steps, conn)


def _writes(method):
    """The method, after this process's other writers, with a writable connection."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with self._store.writing():
            return method(self, *args, **kwargs)
    return call


class AsyncTwins:
    """The async twins of ask, ask_stream and retrieve, for a KnowledgeBase or a Stores.

    Each runs its sync twin on a worker thread and awaits it (tgr/models/async_calls.py): the
    event loop never waits for SQLite, and the OpenAI-compatible and Ollama models' calls go out
    on the loop's own httpx.AsyncClient, one connection pool for every question in flight.
    (zhipuai's SDK and LiteLLM send their calls from the worker thread.)"""

    async def aask(self, question: str, mode: str = "local", **options) -> Answer:
        """ask(), awaited: the complete Answer (astream() gives it in pieces)."""
        from .models.async_calls import in_thread  # asyncio: not for a cold `tgr ask`

        if options.pop("stream", False):
            raise ValueError("aask answers whole: use astream() for the pieces")
        return await in_thread(self.ask, question, mode, **options)

    def astream(self, question: str, mode: str = "local", **options) -> AsyncIterator[str | Answer]:
        """ask_stream(), as an async iterator: the answer's text in pieces as the model writes
        them, then the complete Answer. Leaving it early stops the answer."""
        from .models.async_calls import iterated_in_thread

        return iterated_in_thread(lambda: self.ask_stream(question, mode, **options))

    async def aretrieve(self, question: str, mode: str = "local", k: int = 10, **options) -> list[Passage]:
        """retrieve(), awaited."""
        from .models.async_calls import in_thread

        return await in_thread(self.retrieve, question, mode, k, **options)


class KnowledgeBase(AsyncTwins):
    """One tgr store. Use tgr.open(path) to get one; close() it (or use `with`).

    Any number of threads may share one (each thread other than the opening one reads through
    a connection of its own; writes take turns), and asyncio tasks through AsyncTwins and aindex."""

    def __init__(self, path: str | os.PathLike, *, chat: ChatModel | str | None = None,
                 embedder: Embedder | str | None = None, base_url: str | None = None,
                 api_key: str | None = None, concurrency: int = 8, rpm: float | None = None,
                 timeout: float = 120.0, max_retries: int = 6, prompts: Prompts | dict | None = None,
                 create: bool | None = None, readonly: bool = False, context_tokens: int | None = None):
        self._store = StoreAdmin(path, create=create, readonly=readonly, prompts=prompts, chat=chat,
                                 embedder=embedder, base_url=base_url, api_key=api_key, timeout=timeout,
                                 concurrency=concurrency, rpm=rpm, max_retries=max_retries,
                                 context_tokens=context_tokens)

    # -- lifecycle and state --------------------------------------------------------------

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._store.close()

    @property
    def path(self) -> Path:
        return self._store.path

    @property
    def conn(self) -> Connection:
        """The store's SQLite connection (for tests and tools that write it; tgr's own code goes
        through methods). A store not made yet is made, as by index()."""
        self._store.create_if_missing()
        return self._store.conn

    @property
    def readonly(self) -> bool:
        return self._store.readonly

    @property
    def model_note(self) -> str | None:
        """What questions leave out here (models out of reach; None: nothing)."""
        return self._store.models.note

    @property
    @_reads
    def meta(self) -> dict:
        return self._store.meta

    @property
    @_reads
    def prompts(self) -> Prompts:
        """The prompts in force: tgr's defaults, then those the store records, then those given."""
        return self._store.prompts

    @_reads
    def settings(self, **overrides) -> IndexSettings:
        """The store's settings (from meta), with overrides applied and checked."""
        return self._store.settings(**overrides)

    def gateway(self, run_id: int | None = None) -> Gateway:
        """The model gateway for indexing: reads and writes the cache and the ledger (a store not
        made yet is made, as by index())."""
        self._store.create_if_missing()
        return self._store.models.gateway(run_id)

    # -- building -------------------------------------------------------------------------

    def index(self, paths: Iterable[str], *, progress: Progress | None = None, warn: Warn | None = None,
              stdin=None, portable: bool | str = False, batch=None, keep_boilerplate: bool = False,
              **overrides) -> IndexSummary:
        """Ingest documents and bring every stage up to date; returns a summary.

        Safe to interrupt: everything committed is kept, and the same call resumes. With no
        paths, only the work the store itself still holds is finished (chunks not yet
        extracted, then every derived stage): a shipped or interrupted file needs no input files.
        portable (True, or a local embedder's spec): also keep the local embedder's vectors,
        for recipients who cannot reach the store's own embedder (see tgr.build.portable_vectors).
        batch: a tgr.build.batch.BatchOptions (or True) to send each wave through the provider's
        Batch API at half the price; None does so only to collect jobs the store holds open
        (tgr.build.batch.BatchPending is raised when not waiting for them); False never.
        keep_boilerplate: keep plain text whole (by default a licence header or footer at the
        start or end of a file is dropped, and said: tgr.ingest.boilerplate, summary.boilerplate).
        """
        from .build import pipeline

        self._store.create_if_missing()
        with self._store.writing():
            return pipeline.index(self._store, paths, progress=progress, warn=warn, stdin=stdin, overrides=overrides,
                                  portable=portable, batch=batch, keep_boilerplate=keep_boilerplate)

    async def aindex(self, paths: Iterable[str], **options) -> IndexSummary:
        """index(), awaited (on a worker thread, where progress and warn are called; writes take turns)."""
        from .models.async_calls import written_in_thread
        return await written_in_thread(self.index, paths, **options)

    @_writes
    def rebuild(self, stage: str, *, progress: Progress | None = None, add: str | None = None,
                **overrides) -> IndexSummary:
        """Rebuild one derived stage from what the file holds: graph, embeddings, communities, reports.

        add (stage 'embeddings' only): instead, keep portable vectors of this local embedder
        beside the store's own (e.g. 'local:multilingual-e5-small'; see tgr.build.portable_vectors)."""
        from .build import pipeline

        if add is not None:
            if stage != "embeddings" or overrides:
                raise ValueError("add goes with the embeddings stage alone")
            return pipeline.add_portable(self._store, add, progress=progress)
        return pipeline.rebuild(self._store, stage, progress=progress, overrides=overrides)

    @_writes
    def delete(self, documents: Iterable[str], *, dry_run: bool = False,
               progress: Progress | None = None) -> IndexSummary:
        """Remove documents (by id or unique id prefix, source path, or title) with their
        chunks, index rows, vectors and extractions, and bring the graph, communities and
        reports up to date: what only those documents said disappears, nothing else is redone.

        dry_run: only say which documents would go (summary.documents_removed). An unknown
        name raises InputError before anything is removed.
        """
        from .build import pipeline

        return pipeline.delete(self._store, list(documents), dry_run=dry_run, progress=progress)

    def estimate(self, paths: Iterable[str], *, batch: bool = False, **overrides) -> dict:
        """Expected model calls and tokens of indexing these paths, before spending anything
        (billed at half the price with batch: the provider's Batch API)."""
        from .build import pipeline

        with self._store.in_memory_if_missing():  # estimating creates nothing
            return pipeline.estimate(self._store, paths, overrides, batch=batch)

    # -- reading --------------------------------------------------------------------------

    def ask(self, question: str, mode: str = "local", *, context_only: bool = False,
            warn: Warn | None = None, history: Sequence[dict] | None = None, stream: bool = False,
            **query_settings) -> Answer | Iterator[str | Answer]:
        """Answer a question: mode 'local' (default), 'global' or 'naive'.

        history: the conversation the question follows, as role/content turns (oldest first,
        the shape the OpenAI API uses): retrieval resolves the question against it and the
        chat model reads its latest turns. stream=True: ask_stream() instead.
        Uses the models the store records unless others were given; what cannot be reached
        here is left out (see tgr.models.selection) and said once through warn (and in
        model_note and the answer's notes).
        """
        return _written(self._store, lambda: reading.ask(
            self._store, question, mode, context_only=context_only, warn=warn, query_settings=query_settings,
            history=history, stream=stream), stream)

    def ask_stream(self, question: str, mode: str = "local", **options) -> Iterator[str | Answer]:
        """ask(), as it is written: the answer's text in pieces as the chat model writes them
        (the reduce step's in global mode; an answer written without a model comes whole),
        then the complete Answer. Options as for ask()."""
        return self.ask(question, mode, stream=True, **options)

    def chat(self, mode: str = "local", *, history: Sequence[dict] | None = None, warn: Warn | None = None,
             **query_settings):
        """A conversation (tgr.query.chat_session.Chat): each question is asked after the turns before it."""
        from .query.chat_session import Chat

        return Chat(self, mode, history=history, warn=warn, **query_settings)

    @_reads
    def retrieve(self, question: str, mode: str = "local", k: int = 10, *,
                 warn: Warn | None = None, history: Sequence[dict] | None = None) -> list[Passage]:
        """The k passages that best answer the question, best first, with their text, score,
        document (source, title, own id, metadata) and character offsets. No model is asked
        for an answer; global mode gives the chunks behind the best community reports.
        A question after a conversation (history) is resolved against it (see ask).
        Vectors out of reach are left out, said once through warn (and in model_note)."""
        return reading.retrieve(self._store, question, mode, k, warn=warn, history=history)

    def answer_from(self, question: str, passages: list[Passage], mode: str = "naive", *,
                    context_only: bool = False, warn: Warn | None = None, history: Sequence[dict] | None = None,
                    stream: bool = False, **query_settings) -> Answer | Iterator[str | Answer]:
        """An answer from given ranked passages (tgr.multi_store: several stores' fused ranking), with
        this store's models, as ask() would write it from them (history and stream as for ask)."""
        return _written(self._store, lambda: reading.answer_from(
            self._store, question, passages, mode, context_only=context_only, warn=warn,
            query_settings=query_settings, history=history, stream=stream), stream)

    @_reads
    def searched(self, question: str, history: Sequence[dict] | None = None) -> str:
        """What retrieval searches this store for: the question, and after a conversation
        (history) that names no entity of the store, the ones its last turn named."""
        return reading.searched(self._store, question, history)

    @_reads
    def themes(self, question: str, *, warn: Warn | None = None, history: Sequence[dict] | None = None,
               always: bool = False, **query_settings) -> tuple[list, bool] | None:
        """The themes (tgr.offline.global_answer.Theme) an offline global answer lists for the
        question (resolved against the conversation, history, if any), with their passages, and
        whether they match it; None where the store's chat model writes global answers, unless
        always. Several stores' themes are ranked together (tgr.multi_store)."""
        return reading.themes(self._store, question, warn=warn, query_settings=query_settings,
                              history=history, always=always)

    @_reads
    def global_reports(self, question: str, *, warn: Warn | None = None, history: Sequence[dict] | None = None,
                       **query_settings) -> list[tuple]:
        """(community id, title, full text, rating) of the reports global search reads for the
        question (resolved against the conversation, if any), best first (several stores'
        reports are ranked together, tgr.multi_store)."""
        return reading.global_reports(self._store, question, warn=warn, query_settings=query_settings,
                                      history=history)

    @_reads
    def report_passages(self, community_ids: list[str], question: str,
                        history: Sequence[dict] | None = None) -> list[Passage]:
        """The passages behind the given community reports, best first."""
        return reading.report_passages(self._store, community_ids, question, history)

    def answer_reports(self, question: str, reports: list[tuple], names: dict[str, str], *,
                       warn: Warn | None = None, history: Sequence[dict] | None = None, stream: bool = False,
                       **query_settings) -> Answer | Iterator[str | Answer]:
        """A global answer by this store's chat model over given reports, best first, whose ids
        are labels (names: label -> how the answer cites it): several stores' reports map-reduced
        together (tgr.multi_store), after the conversation (history), if any. The Answer's
        reports are the cited labels; it has no sources."""
        return _written(self._store, lambda: reading.answer_reports(
            self._store, question, reports, names, warn=warn, query_settings=query_settings, history=history,
            stream=stream), stream)

    @_reads
    def _searcher(self, question: str, settings: QuerySettings) -> Searcher:
        return reading.searcher(self._store, question, settings)

    @_reads
    def entity(self, name: str) -> dict:
        """One entity by name with its relationships, communities and sources (found=False
        and similar names when there is none)."""
        from .query.lookup import entity_details

        return entity_details(self._store.conn, name)

    @_reads
    def show(self, ident: str) -> dict:
        """What an id cited in an answer names: a chunk (its text and document), a community's
        report, or an entity (aliases, type, relationships); "kind" says which (None: nothing)."""
        from .query.lookup import cited_item

        return cited_item(self._store.conn, ident)

    @_reads
    def communities(self, level: int | None = None, limit: int = 50) -> list[dict]:
        """Communities with their report title, summary and rating, best rated first."""
        from .query.lookup import list_communities

        return list_communities(self._store.conn, level, limit)

    @_reads
    def community_report(self, community_id: str) -> dict | None:
        """One community's report (None: no such community)."""
        from .query.lookup import community_report

        return community_report(self._store.conn, community_id)

    @_reads
    def document_names(self) -> list[tuple[str, str, str]]:
        """(key, source, title) of every document; the key (a row's own id, else the source
        path) is what retrieval ranks documents by and `tgr eval` matches evidence to."""
        from .ingest.corpus import document_names

        return document_names(self._store.conn)

    @_reads
    def graph(self):
        """The entity graph as a networkx.Graph (node and edge attributes from the store)."""
        return reading.graph(self._store.conn)

    @_reads
    def export(self, output: str | os.PathLike, *, level: int = 0, top: int | None = None,
               title: str = "tgr store") -> dict:
        """Write the graph to output (.graphml, .json or .html); returns what was written."""
        from .export.writers import DEFAULT_TOP, export_store

        return export_store(self._store.conn, output, level=level, top=top or DEFAULT_TOP,
                            title=title)

    @_reads
    def datasette_metadata(self, name: str) -> dict:
        """Datasette's metadata for browsing this store under name (tgr serve)."""
        from .adapters.datasette import metadata

        return metadata(self._store.conn, name)

    @_reads
    def info(self) -> dict:
        """Counts, models, settings, levels and size of the store."""
        return reading.info(self._store.conn, self.path, self.meta)

    @_reads
    def stats(self) -> dict:
        """The cost ledger: calls and tokens per stage, and per run."""
        return ledger.stats(self._store.conn)


def open(path: str | os.PathLike, **options) -> KnowledgeBase:  # noqa: A001 - mirrors tgr.open
    """Open the store at path; a new one is made by its first index() (or now, with create=True;
    create=False never makes one). Options: chat, embedder, base_url, api_key, concurrency,
    rpm, timeout, max_retries, prompts, create, readonly.

    A store is untrusted input: it is checked before use, and opening or asking never
    writes it; the first index/rebuild migrates it (one writer process at a time)."""
    return KnowledgeBase(path, **options)


def open_readonly(paths, **options) -> list[KnowledgeBase]:
    """Each store opened read-only for questions, in order; if one cannot be opened, those
    already open are closed and the error raised."""
    opened: list[KnowledgeBase] = []
    try:
        for path in paths:
            opened.append(KnowledgeBase(path, create=False, readonly=True, **options))
    except BaseException:
        for kb in opened:
            kb.close()
        raise
    return opened
