"""Latency of asking two stores together against one (issue 15 target: at most 1.5x).

    PYTHONPATH=. python bench/many_stores.py A.db B.db QUESTIONS.jsonl [--limit 30] [--mode local]

Opens A alone and A + B together (tgr.open_many: each store on its own thread, rankings fused
by rank), warms both with every question once, then times `retrieve(question, mode, 10)` and
`ask(question, mode)` (extractive, no model calls) on each question, alternating one store and
two so that machine load hits both alike. Prints the medians and their ratio.

Then the CPU time of the same calls, summed over the questions: one store's (this process),
and with two stores this process's and the other store's process's (Linux /proc; the second
store is asked in a forked process). On a machine with a free core the two run side by side,
so the larger of the two is what two stores would take there: printed as "CPU critical path"
with its ratio to one store's CPU time. On a loaded machine (no free core) wall times can't
show that; this can.
"""
from __future__ import annotations

import argparse
import json
import os
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
                cpu_one = cpu_time(lambda: [run(one, q) for q in questions])
                child = getattr((getattr(two, "_workers", None) or [None])[0], "_process", None)  # None: a thread
                other_before = process_cpu(child.pid) if child else 0.0
                cpu_here = cpu_time(lambda: [run(two, q) for q in questions])
                cpu_other = process_cpu(child.pid) - other_before if child else float("nan")
                n = len(questions)
                path = max(cpu_here, cpu_other)
                print(f"{'':16} CPU per question: one store {cpu_one / n * 1000:6.1f} ms   two stores: this process "
                      f"{cpu_here / n * 1000:6.1f} ms, the other store's {cpu_other / n * 1000:6.1f} ms   "
                      f"CPU critical path ratio {path / cpu_one:4.2f}")


def cpu_time(work) -> float:
    """CPU seconds this process spent on work()."""
    started = time.process_time()
    work()
    return time.process_time() - started


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) another process has used so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
