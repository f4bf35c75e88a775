"""The async API (aask, astream, aretrieve, aindex; issue 40) from one event loop, against the fake
OpenAI-compatible server over loopback HTTP (fixtures/fakellm.py, in a process of its own, as
tests/test_threads.py runs it): many questions in flight at once, none holding the loop, the
same answers as the sync API, and the model calls sent by the loop's own httpx.AsyncClient.
Nothing of tgr's own is patched."""
from __future__ import annotations

import asyncio
import gc
import shutil
import time

import pytest

import tgr
from conftest import EN_CORPUS, SMALL
from fakellm import FakeServer
from test_threads import LATENCY, models, questions, server, slow  # noqa: F401 - server, slow: fixtures
from tgr.models.loop_transport import async_client

QUESTIONS = 50
SEQUENTIAL_SAMPLE = 4  # questions timed one after another (the other 46 would take 23 s more)
MAX_LAG = 0.05  # CPU seconds the loop's thread may spend before it answers an asyncio.sleep(0) probe


@pytest.fixture(scope="module")
def store(server, tmp_path_factory):
    path = tmp_path_factory.mktemp("async") / "carol.db"
    with tgr.open(path, **models(server)) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    return path


class LagProbe:
    """Measures, while it runs, the longest the loop took to come back to an asyncio.sleep(0),
    probing every PROBE_EVERY seconds (a probe with no pause would keep the loop busy itself):
    worst in the loop thread's CPU time (work that holds the loop: what tgr must not do there),
    worst_wall in wall time (that too, plus the time a loaded machine gave the thread no core)."""

    PROBE_EVERY = 0.005

    def __init__(self):
        self.worst, self.worst_wall, self.rounds, self._task = 0.0, 0.0, 0, None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.PROBE_EVERY)
            started, wall = time.thread_time(), time.perf_counter()
            await asyncio.sleep(0)
            self.worst = max(self.worst, time.thread_time() - started)
            self.worst_wall = max(self.worst_wall, time.perf_counter() - wall)
            self.rounds += 1

    def __enter__(self) -> "LagProbe":
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc) -> None:
        self._task.cancel()


def test_fifty_questions_from_one_loop(store, server, slow):
    """50 different questions awaited together: the sync answers, at least 10x faster than one
    after another, the loop answering its probe within MAX_LAG throughout, and the model calls
    sent through the loop's connection pool."""
    asked = questions(QUESTIONS)
    with tgr.open(store, **models(server)) as quick:  # a sample's sync answers (all 50: 40 s more)
        alone = [quick.ask(q).answer for q in asked[::5]]

    async def main():
        # The objects earlier tests left in this worker are set aside from the collector: a full
        # collection over them would pause the loop for the suite's history, not for tgr's work
        # (tgr's own objects, made from here on, are collected as usual).
        gc.collect()
        gc.freeze()
        try:
            return await asked_together()
        finally:
            gc.unfreeze()

    async def asked_together():
        with tgr.open(store, **models(slow)) as kb:
            started = time.perf_counter()
            for question in asked[:SEQUENTIAL_SAMPLE]:
                await kb.aask(question)
            one_by_one = (time.perf_counter() - started) / SEQUENTIAL_SAMPLE * QUESTIONS
            sent = []
            async def count(request):
                sent.append(request.url.path)

            async_client(asyncio.get_running_loop()).event_hooks["request"].append(count)
            with LagProbe() as probe:
                started = time.perf_counter()
                answers = await asyncio.gather(*(kb.aask(q) for q in asked))
                together = time.perf_counter() - started
            pool = async_client(asyncio.get_running_loop())
            await tgr.close_async_client()  # the public call a service's shutdown awaits
            assert pool.is_closed and async_client(asyncio.get_running_loop()) is not pool
            await tgr.close_async_client()
        return one_by_one, together, probe, [a.answer for a in answers], sent

    one_by_one, together, probe, answers, sent = asyncio.run(main())
    print(f"{QUESTIONS} aask: {together:.2f} s; one after another: {one_by_one:.2f} s; "
          f"worst loop lag {probe.worst * 1000:.1f} ms of CPU, {probe.worst_wall * 1000:.1f} ms of wall, "
          f"over {probe.rounds} probes")
    assert answers[::5] == alone and len(set(answers)) > QUESTIONS // 2 and all(answers)
    assert one_by_one / QUESTIONS >= LATENCY  # each question waited for the model once at least
    assert together * 10 <= one_by_one
    assert probe.rounds > 100 and probe.worst <= MAX_LAG
    # every question's model calls went out on the loop's AsyncClient, none from a thread
    assert sent.count("/v1/chat/completions") >= QUESTIONS


def test_astream_gives_pieces_while_the_model_writes(store):
    """The first piece arrives long before the last, and the pieces add up to the sync answer."""
    question = "Who is Scrooge?"
    with FakeServer(latency=0.2, piece_delay=0.05) as fake:
        with tgr.open(store, **models(fake.url)) as kb:
            expected = kb.ask(question).answer

            async def main():
                times, items, started = [], [], time.perf_counter()
                async for item in kb.astream(question):
                    times.append(time.perf_counter() - started)
                    items.append(item)
                return times, items

            times, items = asyncio.run(main())
    pieces, answer = items[:-1], items[-1]
    assert len(pieces) > 5 and "".join(pieces) == answer.answer == expected
    assert times[-1] - times[0] >= 0.5 * 0.05 * (len(pieces) - 1)


def test_leaving_a_stream_early_stops_it_and_gives_its_connection_back(store, server):
    with tgr.open(store, **models(server)) as kb:
        async def main():
            stream = kb.astream("Who is Scrooge?")
            async for _ in stream:
                break
            await stream.aclose()
            return kb._store.threads.leased

        assert asyncio.run(main()) == 0


def test_aretrieve_and_aindex_match_the_sync_api(store, server, tmp_path):
    with tgr.open(store, **models(server)) as kb:
        sync = [(p.chunk_id, p.score) for p in kb.retrieve("Marley's ghost", "local", 5)]
        async_ = asyncio.run(kb.aretrieve("Marley's ghost", "local", 5))
        assert [(p.chunk_id, p.score) for p in async_] == sync
    text = tmp_path / "marley.txt"
    text.write_text(" ".join(EN_CORPUS.joinpath("carol_stave1_part1.txt").read_text(encoding="utf-8").split()[:200]),
                    encoding="utf-8")
    built = {}
    for way in ("sync", "async"):
        with tgr.open(tmp_path / f"{way}.db", **models(server)) as kb:
            summary = (kb.index([str(text)], **SMALL) if way == "sync" else
                       asyncio.run(kb.aindex([str(text)], **SMALL)))
            info = kb.info()
            built[way] = (summary.documents_added, [info[k] for k in ("chunks", "entities", "relationships", "reports")])
    assert built["async"] == built["sync"] and built["sync"][0] == 1 and built["sync"][1][1] > 0


def test_stores_answer_from_one_loop(store, server, tmp_path):
    other = tmp_path / "other.db"
    shutil.copy(store, other)
    question = "What does Marley's ghost tell Scrooge?"
    with tgr.open_many([store, other], **models(server)) as stores:
        expected = stores.ask(question).answer
        ranked = [p.chunk_id for p in stores.retrieve(question, "local", 6)]

        async def main():
            answers = await asyncio.gather(*(stores.aask(question) for _ in range(3)))
            pieces = [item async for item in stores.astream(question)]
            passages = await stores.aretrieve(question, "local", 6)
            return answers, pieces, passages

        answers, pieces, passages = asyncio.run(main())
    assert [a.answer for a in answers] == [expected] * 3
    assert pieces[-1].answer == expected
    assert [p.chunk_id for p in passages] == ranked


def test_aask_refuses_stream(store, server):
    with tgr.open(store, **models(server)) as kb, pytest.raises(ValueError, match="astream"):
        asyncio.run(kb.aask("Who is Scrooge?", stream=True))


def test_writes_awaited_together_take_turns(server, tmp_path):
    """More aindex calls on one store than the async API's worker threads take turns at Python
    (tgr/models/turns.py): each waits for the writer before it, and all finish."""
    words = EN_CORPUS.joinpath("carol_stave1_part1.txt").read_text(encoding="utf-8").split()
    texts = []
    for n in range(6):
        texts.append(tmp_path / f"part{n}.txt")
        texts[-1].write_text(" ".join(words[n * 40:(n + 1) * 40]), encoding="utf-8")
    with tgr.open(tmp_path / "parts.db", **models(server)) as kb:
        async def main():
            return await asyncio.wait_for(asyncio.gather(*(kb.aindex([str(t)], **SMALL) for t in texts)), 120)

        summaries = asyncio.run(main())
        assert sum(s.documents_added for s in summaries) == 6 and kb.info()["documents"] == 6
