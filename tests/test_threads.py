"""One KnowledgeBase (tgr.open) or Stores (tgr.open_many) shared by many threads, as a sync web
server shares it: each thread other than the opening one reads through a connection of its own
(tgr/store/thread_connections.py). The models are the fake OpenAI-compatible server over
loopback HTTP (fixtures/fakellm.py, in a process of its own so that its work does not take
turns with the threads under test): one answering at once, one taking 0.5 s per chat call.
Both answer a prompt the same way. Nothing of tgr's own is patched."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import tgr
from conftest import EN_CORPUS, FIXTURES, SMALL
from tgr.errors import StoreError
from tgr.models.clients import OpenAIChat, OpenAIEmbedder

KEY = "sk-threads-4242"
LATENCY = 0.5  # seconds per chat call, as issue 40 measures
THREADS = 50
SEQUENTIAL_SAMPLE = 4  # questions timed one after another (the other 46 would take 23 s more)


def models(url: str) -> dict:
    embedder = OpenAIEmbedder("fake-embedding", url, api_key=KEY)
    # float32 vectors: sqlite-vec's search then serves every question. With int8 ones a connection
    # that has answered WARM_QUERIES questions searches a copy in memory (tgr.query.vector_matrix),
    # which orders equal distances differently, and the fake's hashed vectors tie often (distance
    # 1.0): a warm connection's answer could differ from a cold one's, threads or not.
    embedder.vector_type = "float32"
    return dict(chat=OpenAIChat("fake", url, api_key=KEY), embedder=embedder)


def questions(n: int) -> list[str]:
    """n different questions about the fixture corpus (one per name it mentions, then per word)."""
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted(EN_CORPUS.glob("*.txt")))
    words = list(dict.fromkeys(w for w in re.findall(r"[A-Z][a-z]{3,}", text)))
    words += [w for w in dict.fromkeys(re.findall(r"[a-z]{6,}", text)) if w not in words]
    return [f"What does the story say about {w}?" for w in words[:n]]


@contextmanager
def fake_server(latency: float):
    """The URL of fixtures/fakellm.py serving on a free port, in a process of its own."""
    process = subprocess.Popen([sys.executable, str(FIXTURES / "fakellm.py"), "--port", "0", "--latency",
                                str(latency)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(FIXTURES.parent)})
    try:
        line = process.stdout.readline()  # "fake LLM serving at http://127.0.0.1:PORT/v1 (...)"
        yield re.search(r"(http://\S+/v1)", line).group(1)
    finally:
        process.terminate()
        process.communicate(timeout=10)


@pytest.fixture(scope="module")
def server():
    with fake_server(0.0) as url:
        yield url


@pytest.fixture(scope="module")
def slow():
    with fake_server(LATENCY) as url:
        yield url


@pytest.fixture(scope="module")
def stores(server, tmp_path_factory) -> list[Path]:
    """Two stores built with the fake server's models: one per half of the English corpus."""
    root = tmp_path_factory.mktemp("threads")
    paths = []
    for n, doc in enumerate(sorted(EN_CORPUS.glob("*.txt"))):
        path = root / f"part{n + 1}.db"
        with tgr.open(path, **models(server)) as kb:
            kb.index([str(doc)], **SMALL)
        paths.append(path)
    return paths


def in_threads(call, items: list) -> tuple[list, list[BaseException], float]:
    """(results, errors, seconds): call(item) for every item, each on a thread of its own, all
    started together."""
    results, errors = [None] * len(items), []
    start = threading.Barrier(len(items) + 1)

    def run(n: int) -> None:
        start.wait()
        try:
            results[n] = call(items[n])
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(items))]
    for thread in threads:
        thread.start()
    start.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join(timeout=120)
    return results, errors, time.perf_counter() - started


def one_after_another(call, items: list) -> float:
    started = time.perf_counter()
    for item in items:
        call(item)
    return time.perf_counter() - started


def answer_of(asked):
    return lambda question: asked.ask(question).answer


def check_concurrent(open_store, server: str, slow: str) -> None:
    """50 different questions from 50 threads sharing one open_store(slow): no error, every answer
    the one asked alone gives, and at least 10x faster than asking them one after another."""
    asked_list = questions(THREADS)
    assert len(set(asked_list)) == THREADS
    with open_store(server) as quick:  # the same model answering at once: the reference, quickly
        alone = [answer_of(quick)(q) for q in asked_list]
    with open_store(slow) as shared:
        # as a server runs: imports done, and the connections of as many threads as it serves open
        warm, errors, _ = in_threads(answer_of(shared), asked_list)
        assert errors == [] and warm == alone
        sequential = one_after_another(answer_of(shared), asked_list[:SEQUENTIAL_SAMPLE])
        answers, errors, concurrent = in_threads(answer_of(shared), asked_list)
    assert errors == []
    assert answers == alone
    assert sequential / SEQUENTIAL_SAMPLE >= LATENCY  # each question waited for the model once at least
    one_by_one = sequential / SEQUENTIAL_SAMPLE * THREADS  # the 50 one after another, extrapolated
    print(f"{THREADS} threads: {concurrent:.2f} s; one after another: {one_by_one:.2f} s")
    assert concurrent * 10 <= one_by_one, f"{THREADS} threads: {concurrent:.2f} s against {one_by_one:.2f} s"


def test_one_knowledge_base_serves_fifty_threads(stores, server, slow):
    kbs = []

    def open_store(url: str):
        kbs.append(tgr.open(stores[0], **models(url)))
        return kbs[-1]

    check_concurrent(open_store, server, slow)
    threads = kbs[-1]._store.threads
    assert threads.leased == 0 and not threads._all  # every connection given back, and closed with the store


def test_one_stores_serves_fifty_threads(stores, server, slow):
    check_concurrent(lambda url: tgr.open_many(stores, **models(url)), server, slow)


def test_every_read_method_from_other_threads(stores, server):
    """The read side works from any thread, streaming included (the stream holds its thread's
    connection until it ends, whichever thread reads it)."""
    with tgr.open(stores[0], **models(server)) as kb:
        question = questions(1)[0]
        expected = kb.ask(question)
        calls = {
            "retrieve": lambda: [p.chunk_id for p in kb.retrieve(question, "local", 5)],
            "global": lambda: [p.chunk_id for p in kb.retrieve(question, "global", 5)],
            "info": lambda: kb.info()["chunks"],
            "meta": lambda: kb.meta["embed_model"],
            "stats": lambda: sorted(kb.stats()),
            "communities": lambda: kb.communities(limit=3),
            "document_names": kb.document_names,
        }
        here = {name: call() for name, call in calls.items()}
        there, errors, _ = in_threads(lambda name: calls[name](), list(calls))
        assert errors == [] and dict(zip(calls, there)) == here
        streams, errors, _ = in_threads(lambda q: kb.ask(q, stream=True), [question] * 3)
        assert errors == []
        assert kb._store.threads.leased == 3  # each stream holds its connection ...
        pieces = list(streams[0])  # ... read here, on another thread than the one that asked
        assert "".join(p for p in pieces if isinstance(p, str)) == expected.answer
        assert pieces[-1].answer == expected.answer
        streams[1].close()
        del streams[2], streams  # dropped unread: the connection is given back all the same
        assert kb._store.threads.leased == 0


@pytest.mark.parametrize("writer", ["another thread", "the opening thread"])
def test_a_write_while_other_threads_read(stores, server, tmp_path, writer):
    """Threads keep asking while a thread indexes: the index completes (its WAL is folded back
    in: idle readers are closed first, and no new question starts meanwhile), no question fails,
    and every thread then sees the new document."""
    import shutil

    path = tmp_path / "store.db"
    shutil.copy(stores[0], path)
    other = str(sorted(EN_CORPUS.glob("*.txt"))[1])
    with tgr.open(path, **models(server)) as kb:
        stop, errors, asked = threading.Event(), [], []

        def reader(question: str) -> None:
            while not stop.is_set():
                try:
                    asked.append(kb.ask(question, warn=lambda note: None).answer)  # (the run is unfinished)
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)
                    return

        readers = [threading.Thread(target=reader, args=(q,)) for q in questions(4)]
        for thread in readers:
            thread.start()
        time.sleep(0.2)  # the readers are asking (and have connections, idle or not) before the write
        during: list = []

        def progress(stage: str, done: int, total: int) -> None:
            if not during:  # the run has begun (WAL): a question on a thread that then stays idle
                during.append(in_threads(lambda q: kb.ask(q, warn=lambda note: None).answer, questions(1)))

        index = lambda doc: kb.index([doc], progress=progress, **SMALL)  # noqa: E731
        if writer == "another thread":
            summary, failed, _ = in_threads(index, [other])
        else:
            summary, failed = [index(other)], []
        stop.set()
        for thread in readers:
            thread.join()
        assert failed == [] and errors == [] and during[0][1] == []
        assert summary[0].documents == 2 and len(asked) >= 4
        assert not Path(f"{path}-wal").exists()  # one complete file
        assert kb.info()["documents"] == 2  # seen from the opening thread ...
        assert in_threads(lambda _: kb.info()["documents"], [0, 1, 2])[0] == [2, 2, 2]  # ... and from others


def test_an_in_memory_store_serves_its_own_thread_only():
    with tgr.open(":memory:") as kb:
        kb.info()
        _, errors, _ = in_threads(lambda _: kb.info(), [0])
        assert len(errors) == 1 and isinstance(errors[0], StoreError)
        assert "in-memory" in str(errors[0])


def test_a_store_closes_from_any_thread(stores, server):
    """A server may close the store on another thread than the one that opened it: every
    connection closes, and a later call says the store is closed."""
    kb = tgr.open(stores[0], **models(server))
    assert in_threads(lambda q: len(kb.retrieve(q)), questions(3))[1] == []
    assert in_threads(lambda _: kb.close(), [0])[1] == []
    assert not kb._store.threads._all
    _, errors, _ = in_threads(lambda q: kb.retrieve(q), questions(1))
    assert len(errors) == 1 and "closed" in str(errors[0])
