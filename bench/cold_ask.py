"""Cold `tgr ask` of a store, checkouts compared: CPU seconds per question and mode, and
whether the checkouts print the same answer.

    python bench/cold_ask.py STORE.db --tree DIR [--tree DIR2 ...] [--rounds 3]
                             "QUESTION|MODE" ["QUESTION|MODE" ...]

Each question is asked offline (`python -m tgr.cli ask STORE Q --offline --mode MODE`) in a
fresh process with each checkout DIR as PYTHONPATH, once to warm the bytecode and the page
cache, then `rounds` times, the checkouts in turn and their order alternating round by round
(a busy machine slows each alike). Prints the median and every run's CPU seconds (user +
system of the child, from the kernel) and whether the printed answers (text and sources) of
every checkout are the same. Only the standard library is needed.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys


def ask(tree: str, store: str, question: str, mode: str, bytecode: bool = False) -> tuple[float, str]:
    """(CPU seconds, stdout) of one cold ask with this checkout."""
    env = dict(os.environ, PYTHONPATH=tree)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "tgr.cli", "ask", store, question, "--offline", "--mode", mode],
                          cwd=tree, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("asks", nargs="+", metavar="QUESTION|MODE")
    parser.add_argument("--tree", action="append", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asks = [tuple(a.rsplit("|", 1)) for a in args.asks]
    for question, mode in asks:
        for tree in args.tree:
            ask(tree, args.store, question, mode, bytecode=True)
    cpu = {(a, t): [] for a in asks for t in args.tree}
    answers: dict[tuple, str] = {}
    for n in range(args.rounds):
        for a in asks:
            for tree in (args.tree if n % 2 == 0 else args.tree[::-1]):
                seconds, answers[a, tree] = ask(tree, args.store, *a)
                cpu[a, tree].append(seconds)
    for a in asks:
        same = len({answers[a, t] for t in args.tree}) == 1
        runs = "  ".join(f"{statistics.median(cpu[a, t]):.2f} {[round(s, 2) for s in cpu[a, t]]}" for t in args.tree)
        print(f"{a[0]} {a[1]}: {runs}  same answer: {same}")


if __name__ == "__main__":
    main()
