"""In-process query latency of `KnowledgeBase.retrieve` (or, with --ask, of the whole offline
answer, `KnowledgeBase.ask`), per mode, with an optional profile.

    python bench/latency.py STORE.db QUESTIONS.jsonl [--mode local --mode naive] [--rounds 3]
                            [--ask] [--profile local] [--top 25]

Opens the store once, asks every question once to warm caches (page cache, the embedder), then
times `rounds` passes over the questions, alternating the modes question by question so that a
change in the machine's load hits every mode alike. Prints, per mode, the median and p95 of the
wall milliseconds of one retrieval and the CPU milliseconds per retrieval (CPU time is the figure
to compare on a shared machine). `--profile MODE` runs cProfile over one pass of that mode and
prints the `top` functions by own time. The questions file has the `tgr eval` format
(`question` per JSONL line; other fields are ignored).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402

K = 40  # what `tgr eval` asks for: 10 documents x 4 passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store")
    parser.add_argument("questions")
    parser.add_argument("--mode", action="append", dest="modes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", metavar="MODE")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--ask", action="store_true", help="time the whole answer (kb.ask), not retrieval")
    args = parser.parse_args()
    modes = args.modes or ["local", "naive"]
    with open(args.questions, encoding="utf-8") as handle:
        questions = [json.loads(line)["question"] for line in handle if line.strip()]
    kb = tgr.open(args.store, readonly=True)
    run = (lambda q, mode: kb.ask(q, mode)) if args.ask else (lambda q, mode: kb.retrieve(q, mode=mode, k=K))
    for q in questions:  # warm up
        for mode in modes:
            run(q, mode)
    wall: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, float] = {m: 0.0 for m in modes}
    for _ in range(args.rounds):
        for q in questions:
            for mode in modes:
                w, c = time.perf_counter(), time.process_time()
                run(q, mode)
                wall[mode].append((time.perf_counter() - w) * 1000)
                cpu[mode] += (time.process_time() - c) * 1000
    print(f"{Path(args.store).name}: {len(questions)} questions x {args.rounds} rounds, {'ask' if args.ask else 'retrieve'}")
    for mode in modes:
        times = sorted(wall[mode])
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(f"  {mode:6s} median {statistics.median(times):7.2f} ms   p95 {p95:7.2f} ms   "
              f"CPU {cpu[mode] / len(times):7.2f} ms per query")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for q in questions:
            run(q, args.profile)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    kb.close()


if __name__ == "__main__":
    main()
