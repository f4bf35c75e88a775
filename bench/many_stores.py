"""Latency of asking two stores together against one (issue 15 target: at most 1.5x).

    PYTHONPATH=. python bench/many_stores.py A.db B.db QUESTIONS.jsonl [--limit 30] [--mode local]

Opens A alone and A + B together (tgr.open_many: each store on its own thread, rankings fused
by rank), warms both with every question once, then times `retrieve(question, mode, 10)` and
`ask(question, mode)` (extractive, no model calls) on each question, alternating one store and
two so that machine load hits both alike. Prints the medians and their ratio.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import tgr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("questions")
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--mode", action="append")
    args = parser.parse_args()
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][:args.limit]
    with tgr.open(args.first, readonly=True, create=False) as one, \
            tgr.open_many([args.first, args.second]) as two:
        for mode in args.mode or ["local", "naive"]:
            for call in ("retrieve", "ask"):
                run = (lambda kb, q: kb.retrieve(q, mode, 10)) if call == "retrieve" else \
                      (lambda kb, q: kb.ask(q, mode))
                for q in questions:  # warm: page cache, common terms, numpy
                    run(one, q), run(two, q)
                times = {"one": [], "two": []}
                for q in questions:
                    for name, kb in (("one", one), ("two", two)):
                        started = time.perf_counter()
                        run(kb, q)
                        times[name].append((time.perf_counter() - started) * 1000)
                a, b = statistics.median(times["one"]), statistics.median(times["two"])
                print(f"{mode:<7}{call:<9} one store {a:7.1f} ms   two stores {b:7.1f} ms   ratio {b / a:4.2f}")


if __name__ == "__main__":
    main()
