"""Many stores, one question: retrieval from every store, one ranking fused by rank.

Each store ranks its own passages (with its own embedder, graph and reports); the rankings are
fused by reciprocal rank (RRF: a passage scores the sum of 1 / (RRF_K + its rank) in each
list), because scores of different embedders and corpora are not comparable while ranks are.
Each passage names its store (the path as given). The answer is written from the fused
ranking, as naive mode writes one from its ranking, with the first store's models (and its
notes: what each store leaves out is said once, with the store's name).

Every store is opened read-only, as `tgr ask` opens one: untrusted, never written. The first
store works on the calling thread, each other one in a process of its own (tgr.multi_store_workers:
retrieval is mostly Python, which threads would take in turns), so a question is asked of all
the stores at once.
"""
from __future__ import annotations

import os
from typing import Callable, Iterator, Sequence

from .query.modes import LOCAL_PASSAGES, Answer, QuerySettings
from .query.retrieve import MODES, Passage

RRF_K = 60  # the usual constant: the top ranks of every list count, none dominates

Warn = Callable[[str], None]


class Stores:
    """Several stores asked as one. Use tgr.open_many(paths); close() it (or use `with`)."""

    def __init__(self, paths: list[str | os.PathLike], **options):
        from .knowledge_base import KnowledgeBase
        from .multi_store_workers import store_worker

        if not paths:
            raise ValueError("give at least one store")
        self.names = [str(p) for p in paths]
        self.options = dict(options)  # as given to open_many (the retrievers reopen the stores with them)
        self._workers = []
        self.stores = []
        try:
            # the others' workers first: a forked process had better not inherit an open store
            self._workers = [store_worker(path, options) for path in paths[1:]]
            # the first store works on the calling thread (a hop costs more than a small query)
            self.stores = [KnowledgeBase(paths[0], create=False, readonly=True, **options)]
            for worker in self._workers:
                worker.opened()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "Stores":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for kb in self.stores:
            kb.close()
        for worker in self._workers:
            worker.close()
        self.stores, self._workers = [], []

    def _each(self, method: str, *args, warn: Warn | None = None, **kwargs) -> list:
        """store.method(*args, **kwargs) of every store at once (each on its own worker), in
        order; the notes each gives through warn are said with its name."""
        if warn is not None:
            kwargs["warn"] = True
        for worker in self._workers:
            worker.send(method, *args, **kwargs)
        if warn is not None:
            kwargs["warn"] = _named(warn, self.names[0])
        results, failed = [], None
        try:
            results.append(getattr(self.stores[0], method)(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - raised once every worker has answered
            failed = exc
        for worker, name in zip(self._workers, self.names[1:]):
            try:  # every worker's answer is taken, so that none is left for the next call
                result, notes = worker.receive()
            except Exception as exc:  # noqa: BLE001
                failed = failed or exc
                continue
            for note in notes if warn else ():
                _named(warn, name)(note)
            results.append(result)
        if failed is not None:
            raise failed
        return results

    def each(self, method: str, *args, **kwargs) -> list[tuple[str, object]]:
        """(store name, store.method(*args, **kwargs)) for every store, asked at once; method is
        a KnowledgeBase method's name (the stores live in other processes)."""
        return list(zip(self.names, self._each(method, *args, **kwargs)))

    def document_names(self) -> list[tuple[str, str, str]]:
        """(key, source, title) of every document of every store (see KnowledgeBase.document_names)."""
        return [row for _, names in self.each("document_names") for row in names]

    def retrieve(self, question: str, mode: str = "local", k: int = 10, *,
                 warn: Warn | None = None, history: Sequence[dict] | None = None) -> list[Passage]:
        """The k best passages of all the stores, one ranking fused by rank; each names its store.
        After a conversation (history), each store resolves the question against it."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        rankings = self._each("retrieve", question, mode, k, warn=warn, history=history)
        return fuse(rankings, self.names)[:k]

    def ask(self, question: str, mode: str = "local", *, context_only: bool = False,
            warn: Warn | None = None, history: Sequence[dict] | None = None, stream: bool = False,
            **query_settings) -> Answer | Iterator[str | Answer]:
        """An answer from the best k of the fused ranking of every store's sources in this mode
        (k as one store's ask ranks: top_k, or in local mode at least LOCAL_PASSAGES); history
        and stream as for KnowledgeBase.ask."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        top_k = query_settings.get("top_k", QuerySettings.top_k)
        k = max(LOCAL_PASSAGES, top_k) if mode == "local" else top_k  # as one store's ask ranks
        rankings = self._each("retrieve", question, mode, k, warn=warn, history=history)
        return self.stores[0].answer_from(question, fuse(rankings, self.names)[:k], mode, context_only=context_only,
                                          warn=_named(warn, self.names[0]), history=history, stream=stream,
                                          **query_settings)

    def ask_stream(self, question: str, mode: str = "local", **options) -> Iterator[str | Answer]:
        """ask(), as it is written (see KnowledgeBase.ask_stream)."""
        return self.ask(question, mode, stream=True, **options)

    def chat(self, mode: str = "local", **options):
        """A conversation with all the stores (tgr.query.chat_session.Chat)."""
        from .query.chat_session import Chat

        return Chat(self, mode, **options)


def fuse(rankings: list[list[Passage]], names: list[str]) -> list[Passage]:
    """One ranking of several stores' rankings by reciprocal rank; each passage's score is
    its fused score and its store the name of the ranking it came from."""
    fused: dict[tuple[str, str], tuple[float, Passage]] = {}
    for name, ranking in zip(names, rankings):
        for rank, passage in enumerate(ranking, 1):
            key = (name, passage.chunk_id)
            if key in fused:  # a store lists a passage once; keep its best rank
                continue
            fused[key] = (1.0 / (RRF_K + rank), passage)
    ordered = sorted(fused.items(), key=lambda kv: (-kv[1][0], names.index(kv[0][0]), kv[0][1]))
    return [_with(passage, name, score) for (name, _), (score, passage) in ordered]


def _with(passage: Passage, store: str, score: float) -> Passage:
    from dataclasses import replace

    return replace(passage, store=store, score=round(score, 6))


def _passage(source: dict) -> Passage:
    """A source record of an Answer back as a Passage."""
    fields = {k: v for k, v in source.items() if k in Passage.__dataclass_fields__}
    return Passage(**fields)


def _named(warn: Warn | None, name: str) -> Warn | None:
    """warn, with the store's name before each note."""
    return (lambda message: warn(f"{name}: {message}")) if warn else None


def open_many(paths: list[str | os.PathLike], **options) -> Stores:
    """Open several stores (read-only) to ask them together. Options as for tgr.open."""
    return Stores(paths, **options)
