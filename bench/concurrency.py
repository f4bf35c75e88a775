"""Questions per second against the number in flight, through the async API (issue 40).

Builds a store of fixtures/corpus_en with the fake OpenAI-compatible model (fixtures/fakellm.py,
answering at once), then asks it through KnowledgeBase.aask from one event loop, with the fake at
--latency seconds per chat call: for each number in flight, 2x that many different questions
(10 at least), each new to the store's cache. Prints questions per second, the median and
slowest answer, and the worst time the loop took to answer an asyncio.sleep(0) probe.

    python bench/concurrency.py                   # local and global, 1 5 10 25 50 in flight
    python bench/concurrency.py --latency 0.5 --in-flight 1 10 50 --modes local
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "fixtures")]

import tgr  # noqa: E402
from test_threads import fake_server, models, questions  # noqa: E402

CORPUS = ROOT / "fixtures" / "corpus_en"


async def asked(kb, mode: str, batch: list[str], in_flight: int) -> tuple[float, list[float], float]:
    """(wall seconds, each answer's seconds, worst probe lag) of the batch, in_flight at a time."""
    gate, took, worst = asyncio.Semaphore(in_flight), [], [0.0]

    async def one(question: str) -> None:
        async with gate:
            started = time.perf_counter()
            await kb.aask(question, mode)
            took.append(time.perf_counter() - started)

    async def probe() -> None:
        while True:
            await asyncio.sleep(0.005)
            started = time.perf_counter()
            await asyncio.sleep(0)
            worst[0] = max(worst[0], time.perf_counter() - started)

    prober = asyncio.get_running_loop().create_task(probe())
    started = time.perf_counter()
    await asyncio.gather(*(one(q) for q in batch))
    wall = time.perf_counter() - started
    prober.cancel()
    return wall, took, worst[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5, help="the fake model's seconds per chat call")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 5, 10, 25, 50])
    parser.add_argument("--modes", nargs="+", default=["local", "global"])
    args = parser.parse_args()
    pool = [f"{q} ({n})" for n in range(4) for q in questions(400)]  # each asked once: no cache hit
    with tempfile.TemporaryDirectory(prefix="tgr-concurrency-") as tmp:
        store = Path(tmp) / "carol.db"
        with fake_server(0.0) as url, tgr.open(store, **models(url)) as kb:
            kb.index([str(CORPUS)], chunk_size=300, chunk_overlap=40)
        print(f"fake model: {args.latency} s per chat call; store: {CORPUS.name}")
        print(f"{'mode':6} {'in flight':>9} {'questions':>9} {'q/s':>7} {'median s':>9} {'slowest s':>9} {'loop lag ms':>11}")
        with fake_server(args.latency) as url, tgr.open(store, readonly=True, **models(url)) as kb:
            for mode in args.modes:
                for in_flight in args.in_flight:
                    batch = [pool.pop() for _ in range(max(10, 2 * in_flight))]
                    wall, took, lag = asyncio.run(asked(kb, mode, batch, in_flight))
                    print(f"{mode:6} {in_flight:9} {len(batch):9} {len(batch) / wall:7.2f} "
                          f"{statistics.median(took):9.2f} {max(took):9.2f} {lag * 1000:11.1f}", flush=True)


if __name__ == "__main__":
    main()
