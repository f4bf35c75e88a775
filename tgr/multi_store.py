"""Many stores, one question: retrieval from every store, one ranking fused by rank.

Each store ranks its own passages (with its own embedder, graph and reports); the rankings are
fused by reciprocal rank (RRF: a passage scores the sum of 1 / (RRF_K + its rank) in each
list), because scores of different embedders and corpora are not comparable while ranks are.
Each passage names its store (the path as given). The answer is written from the fused
ranking, as naive mode writes one from its ranking, with the first store's models (and its
notes: what each store leaves out is said once, with the store's name). A global question is
answered from the stores' community reports instead: offline, their themes ranked together;
with the first store's chat model, a map over every store's reports ranked together by rank
and a reduce, each report cited with its store.

Every store is opened read-only, as `tgr ask` opens one: untrusted, never written. The first
store works on the calling thread, each other one in a process of its own (tgr.multi_store_workers:
retrieval is mostly Python, which threads would take in turns), so a question is asked of all
the stores at once.

One Stores serves any number of threads. The workers answer one call at a time: a call that
finds them busy (another thread's) asks the other stores itself, on its own thread, through
KnowledgeBase objects shared by all such calls (thread-safe, see tgr/session.py); the first
store is one KnowledgeBase for every thread. The answers are the same either way.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from typing import Callable, Iterator, Sequence

from .knowledge_base import AsyncTwins
from .offline.global_answer import COMMUNITIES, render
from .offline.providers import OFFLINE_WRITER
from .query.global_search import batches
from .query.modes import CONTEXT_ONLY, LOCAL_PASSAGES, Answer, QuerySettings, final_answer
from .query.retrieve import MODES, Passage

RRF_K = 60  # the usual constant: the top ranks of every list count, none dominates

Warn = Callable[[str], None]


class Stores(AsyncTwins):
    """Several stores asked as one. Use tgr.open_many(paths); close() it (or use `with`).
    From asyncio: aask, astream and aretrieve (see tgr.knowledge_base.AsyncTwins; the stores
    past the first answer from their own processes, whose model calls are their own)."""

    def __init__(self, paths: list[str | os.PathLike], **options):
        from .knowledge_base import KnowledgeBase
        from .multi_store_workers import store_worker

        if not paths:
            raise ValueError("give at least one store")
        self.names = [str(p) for p in paths]
        self.options = dict(options)  # as given to open_many (the retrievers reopen the stores with them)
        self._workers = []
        self.stores = []
        self._turn = threading.Lock()  # held by the call the workers answer
        self._sharing = threading.Lock()
        self._here: list | None = None  # the other stores in this process, for calls while the workers are busy
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
        for kb in self.stores + (self._here or []):
            kb.close()
        for worker in self._workers:
            worker.close()
        self.stores, self._workers, self._here = [], [], None

    def _each(self, method: str, *args, warn: Warn | None = None, **kwargs) -> list:
        """store.method(*args, **kwargs) of every store at once (each on its own worker), in
        order; the notes each gives through warn are said with its name."""
        return self._each_own(method, [(args, kwargs)] * len(self.names), warn)

    def _each_own(self, method: str, calls: list[tuple[tuple, dict]], warn: Warn | None = None) -> list:
        """store.method(*args, **kwargs) of every store at once, with each store's own
        (args, kwargs) of calls, in order (see _each); on this thread, one store after the
        other, while the workers answer another thread's call."""
        if not self._workers:
            return self._each_here(method, calls, warn)
        if not self._turn.acquire(blocking=False):
            return self._each_here(method, calls, warn)
        try:
            return self._each_on_workers(method, calls, warn)
        finally:
            self._turn.release()

    def _each_here(self, method: str, calls: list[tuple[tuple, dict]], warn: Warn | None) -> list:
        """_each_own, every store asked on the calling thread."""
        results, failed = [], None
        for kb, name, (args, kwargs) in zip([self.stores[0], *self._shared()], self.names, calls):
            if warn is not None:
                kwargs = kwargs | {"warn": _named(warn, name)}
            try:
                results.append(getattr(kb, method)(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - raised once every store has answered, as below
                failed = failed or exc
        if failed is not None:
            raise failed
        return results

    def _shared(self) -> list:
        """The stores after the first, opened in this process (once) for every thread's calls."""
        from .knowledge_base import open_readonly

        with self._sharing:
            if self._here is None:
                self._here = open_readonly(self.names[1:], **self.options)
            return self._here

    def _each_on_workers(self, method: str, calls: list[tuple[tuple, dict]], warn: Warn | None) -> list:
        """_each_own, the other stores asked on their workers."""
        for worker, (args, kwargs) in zip(self._workers, calls[1:]):
            worker.send(method, *args, **(kwargs | {"warn": True} if warn is not None else kwargs))
        args, kwargs = calls[0]
        if warn is not None:
            kwargs = kwargs | {"warn": _named(warn, self.names[0])}
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
        (k as one store's ask ranks: top_k, or in local mode at least LOCAL_PASSAGES); in global
        mode, from every store's reports (see _global; context_only: the reports themselves, see
        _global_context); history and stream as for KnowledgeBase.ask."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        if mode == "global" and context_only:
            answer = self._global_context(question, warn, query_settings, history)
            return iter([answer]) if stream else answer
        if mode == "global":
            return self._global(question, warn, query_settings, stream, history)
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

    def _global(self, question: str, warn: Warn | None, query_settings: dict, stream: bool,
                history: Sequence[dict] | None = None) -> Answer | Iterator[str | Answer]:
        """The global answer over every store, written with the first store's models: offline,
        their themes ranked together (see _themes; a store with a chat model of its own gives
        its themes too); with a chat model, its map and reduce over every store's reports ranked
        together (see _reports). After a conversation (history), each store ranks for the
        question resolved against it, and the chat model reads its latest turns."""
        found = self._each("themes", question, warn=warn, history=history, **query_settings)
        if found[0] is None:
            steps = self._reports(question, warn, query_settings, stream, history)
            return steps if stream else final_answer(steps)
        if None in found:  # (notes were said by the first round)
            found = self._each("themes", question, history=history, always=True, **query_settings)
        answer = self._themes(question, self._searched(question, history) if history else question, found)
        return iter([answer.answer, answer]) if stream else answer  # written whole: its one piece, then itself

    def _ranked_reports(self, question: str, warn: Warn | None, query_settings: dict,
                        history: Sequence[dict] | None) -> list[tuple[int, tuple]]:
        """(store index, report) of the best global_top of every store's candidate reports for
        the question, ranked together by rank (RRF, as passages are)."""
        listed = self._each("global_reports", question, warn=warn, history=history, **query_settings)
        ranked = reciprocal_rank(listed, lambda report: report[0])
        return [(n, report) for _, n, report in ranked[:query_settings.get("global_top", QuerySettings.global_top)]]

    def _global_context(self, question: str, warn: Warn | None, query_settings: dict,
                        history: Sequence[dict] | None) -> Answer:
        """A global question's context over every store, as one store gives it: the reports
        its map would read, each headed by its store and community ("b.db: 0.3"), and the
        passages behind the best five as the sources, fused by rank. No model is asked."""
        started = time.perf_counter()
        top = self._ranked_reports(question, warn, query_settings, history)
        reports = [(f"{self.names[n]}: {report[0]}", *report[1:]) for n, report in top]
        map_tokens = query_settings.get("map_tokens", QuerySettings.map_tokens)
        context = "\n\n".join(r.block for batch in batches(reports, map_tokens) for r in batch)
        sources = self._sources_behind([(n, report[0]) for n, report in top[:5]], question, history)
        return Answer(question, "global", "", context, CONTEXT_ONLY, reports=[cid for cid, *_ in reports],
                      sources=sources, timings={"total_s": round(time.perf_counter() - started, 4)})

    def _sources_behind(self, reports: list[tuple[int, str]], question: str,
                        history: Sequence[dict] | None) -> list[dict]:
        """The numbered source records of the passages behind reports ((store index, community
        id) each), every store asked for its own, fused by rank."""
        calls = [(([cid for m, cid in reports if m == n], question, history), {}) for n in range(len(self.names))]
        passages = fuse(self._each_own("report_passages", calls), self.names)
        return [{"ref": ref, **p.to_dict()} for ref, p in enumerate(passages, 1)]

    def _searched(self, question: str, history: Sequence[dict]) -> str:
        """The question and the names each store carries over from the conversation (see
        KnowledgeBase.searched), or its pronouns as each store reads them, each once, in the
        stores' order."""
        asked = question.strip()
        carried = [s[len(asked):].strip() if s.startswith(asked) else s
                   for s in self._each("searched", question, history)]
        return " ".join(dict.fromkeys([asked, *filter(None, carried)]))

    def _themes(self, question: str, searched: str, found: list[tuple[list, bool]]) -> Answer:
        """The offline global answer over every store: their themes ranked together (those
        that match the question first, as one store ranks them), each cited with its store;
        searched: the question resolved against the conversation (see _searched), which the
        answer's first line names the topic of, as one store's answer does."""
        started = time.perf_counter()
        matched = any(m for _, m in found)
        every = [replace(t, store=name) for name, (themes, m) in zip(self.names, found) for t in themes
                 if m or not matched]
        ranked = sorted(every, key=lambda t: t.order() + (self.names.index(t.store),))
        # the main themes of several stores: each store's first one, then the best of the rest
        first = [] if matched else list({t.store: t for t in reversed(ranked)}.values())[:COMMUNITIES]
        chosen = sorted(first + [t for t in ranked if t not in first][:COMMUNITIES - len(first)],
                        key=ranked.index)
        written = render(searched, chosen, matched, many=True)
        sources, seen = [], set()
        for theme in chosen:
            by_id = {p.chunk_id: p for p in theme.passages}
            for chunk_id in theme.chunks:
                if (theme.store, chunk_id) not in seen and chunk_id in by_id:
                    seen.add((theme.store, chunk_id))
                    sources.append({"ref": len(sources) + 1,
                                    **_with(by_id[chunk_id], theme.store, 1.0 / (len(sources) + 1)).to_dict()})
        context = "-----Key points-----\n" + "\n".join(written.points)
        return Answer(question, "global", written.text, context, OFFLINE_WRITER, sources=sources,
                      reports=[f"{t.store}: {t.community}" for t in chosen],
                      timings={"total_s": round(time.perf_counter() - started, 4)})

    def _reports(self, question: str, warn: Warn | None, query_settings: dict, stream: bool,
                 history: Sequence[dict] | None = None) -> Iterator[str | Answer]:
        """The first store's chat model maps every store's candidate reports, ranked together
        by rank (RRF, as passages are), and reduces their key points; each report is cited with
        its store, and the sources are the passages behind the cited reports, fused by rank.
        The answer's pieces as the reduce call writes them, then the Answer."""
        started = time.perf_counter()
        top = self._ranked_reports(question, None, query_settings, history)  # (notes: said by themes)
        labels = {f"{n + 1}-{report[0]}": (n, report[0]) for n, report in top}
        names = {label: f"{self.names[n]}: {cid}" for label, (n, cid) in labels.items()}
        reports = [(f"{n + 1}-{report[0]}", *report[1:]) for n, report in top]
        written = self.stores[0].answer_reports(question, reports, names, warn=_named(warn, self.names[0]),
                                                history=history, stream=stream, **query_settings)
        for answer in written if stream else [written]:
            if not isinstance(answer, Answer):
                yield answer
        if not answer.answer and answer.notes:  # no usable key point (said in the note): the themes, as offline
            found = self._each("themes", question, history=history, always=True, **query_settings)
            themes = self._themes(question, self._searched(question, history) if history else question, found)
            themes.model, themes.notes = answer.model, answer.notes
            themes.model_calls, themes.prompt_tokens = answer.model_calls, answer.prompt_tokens
            themes.completion_tokens = answer.completion_tokens
            if stream:
                yield themes.answer
            yield themes
            return
        answer.sources = self._sources_behind([labels[label] for label in answer.reports], question, history)
        answer.reports = [names[label] for label, *_ in reports]  # the reports read, as one store's answer lists them
        answer.timings["total_s"] = round(time.perf_counter() - started, 4)
        yield answer


def fuse(rankings: list[list[Passage]], names: list[str]) -> list[Passage]:
    """One ranking of several stores' rankings by reciprocal rank; each passage's score is
    its fused score and its store the name of the ranking it came from."""
    return [_with(passage, names[n], score)
            for score, n, passage in reciprocal_rank(rankings, lambda p: p.chunk_id, names)]


def reciprocal_rank(rankings: list[list], key: Callable, groups: Sequence | None = None) -> list[tuple]:
    """(score, index of its ranking, item) of every item of several rankings, best first: an
    item scores 1 / (RRF_K + its rank), once per group (a ranking's store; default: each
    ranking its own), as its group's first ranking to list it ranks it; ties by the group's
    first ranking, then by key."""
    groups = list(groups) if groups is not None else list(range(len(rankings)))
    fused: dict[tuple, tuple] = {}
    for n, ranking in enumerate(rankings):
        first = groups.index(groups[n])
        for rank, item in enumerate(ranking, 1):
            fused.setdefault((groups[n], key(item)), (1.0 / (RRF_K + rank), first, item))
    return sorted(fused.values(), key=lambda entry: (-entry[0], entry[1], key(entry[2])))


def _with(passage: Passage, store: str, score: float) -> Passage:
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
