"""CPU seconds of an offline build, checkouts taking turns (a busy machine slows each alike).

    python bench/index_cpu.py [--runs 3] [--tree DIR --tree DIR2[=PYTHON] ...] [--before-calls | --instructions [--cache-misses]] CORPUS...

For each corpus, each run, each --tree in turn: a fresh `python -m tgr.cli index STORE CORPUS
--offline --embed-model tgr:hash-384 -q` in its own process (PYTHONPATH=the tree, run from a
temporary directory; DIR=PYTHON runs that tree on another interpreter, e.g. a venv
with other versions of the dependencies), timed by the kernel (user + system CPU of the process and its threads)
and by the wall clock. Each run builds every corpus with every tree back to back, so a machine
whose speed drifts over minutes (this one's does, by ±15 %) slows the builds of one round alike.
Prints each tree's median and least CPU and wall, each median CPU as a multiple of the first
tree's (issue 16: an offline build at most 1.3 times the CPU of 9659030's on Moby-Dick and
西游记), and, with several corpora, the median over rounds of each corpus's CPU per char as a
multiple of the first corpus's in the same round (issue 27: Chinese ÷ English).

--instructions counts instead the instructions each build executes, under valgrind's callgrind
(`apt install valgrind`; ~50 times slower, so one run each, the builds in parallel on every
core, PYTHONHASHSEED=0): the same figure on a busy or idle machine, where CPU seconds drift by
a third within minutes. Prints each build's instructions per M chars and, per tree, each
corpus's per-char count as a multiple of the first corpus's (issue 27: Chinese ÷ English).

--cache-misses (with --instructions) runs valgrind's cachegrind instead, simulating a 2 MB
last-level cache (this machine's per-core L2; its 300 MB L3 is shared with other machines'
work, so how much of it a build gets varies): it prints the instructions, the first-level
data cache misses and the 2 MB level's misses (data and instructions) per M chars. Chinese
builds miss the cache more per instruction than English ones, which is why their CPU-seconds
ratio exceeds the instructions'.

--before-calls times only what an index run does before its first model call instead: read
the file and store its document and chunks (chunking included) into a fresh store, the serial
part of a large first build (`bench/run.py --corpus 10m` writes a 10 M-character corpus).
Only the standard library and tgr are needed.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from coldstart import run_once  # noqa: E402  (wall, CPU and peak RSS of one process)
BEFORE_CALLS = """
import sys, tgr
from tgr.ingest.corpus import store_documents
from tgr.ingest.sources import read_documents
from tgr.offline.providers import HashEmbedder
with tgr.open(sys.argv[1], embedder=HashEmbedder()) as kb:
    store_documents(kb.conn, read_documents([sys.argv[2]], print), chunk_size=1200, chunk_overlap=100)
"""


def command_for(corpus: Path, store: Path, before_calls: bool, python: str = sys.executable) -> list[str]:
    if before_calls:
        return [python, "-c", BEFORE_CALLS, str(store), str(corpus)]
    return [python, "-m", "tgr.cli", "index", str(store), str(corpus),
            "--offline", "--embed-model", "tgr:hash-384", "-q"]


def measure(corpora: list[Path], trees: list[str], runs: int, before_calls: bool) -> dict[tuple[str, Path], tuple[list, list, list]]:
    """Per (tree, corpus): the wall and CPU seconds and peak RSS of each run; each run builds
    every corpus with every tree in turn."""
    results: dict[tuple[str, Path], tuple[list, list, list]] = {(t, c): ([], [], []) for t in trees for c in corpora}
    with tempfile.TemporaryDirectory(prefix="tgr-index-cpu-") as work:
        for run in range(runs):
            for corpus in corpora:
                for number, tree in enumerate(trees):
                    path, _, python = tree.partition("=")
                    env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()))
                    store = Path(work) / f"run{run}-tree{number}.db"
                    wall, cpu, rss = run_once(command_for(corpus, store, before_calls, python or sys.executable), work, env)
                    for values, value in zip(results[tree, corpus], (wall, cpu, rss)):
                        values.append(value)
                    print(f"  {corpus.name} run {run + 1} {tree}: CPU {cpu:.2f} s, wall {wall:.2f} s, "
                          f"peak RSS {rss:.0f} MB", flush=True)
                    store.unlink()
    return results


def instructions(command: list[str], cwd: str, env: dict, cache: bool = False) -> dict[str, int]:
    """What one run of command executes: {"Ir": instructions} (callgrind's total), or with
    cache also {"D1": first-level data misses, "LL": the 2 MB level's misses, data and
    instructions} (cachegrind's); a failure stops."""
    tool = (["--tool=cachegrind", "--cache-sim=yes", "--LL=2097152,16,64", "--cachegrind-out-file=/dev/null"] if cache
            else ["--tool=callgrind", "--callgrind-out-file=/dev/null"])
    run = subprocess.run(["valgrind", *tool, *command], check=False, cwd=cwd,
                         env={**env, "PYTHONHASHSEED": "0"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    patterns = ({"Ir": r"I\s+refs:\s+([\d,]+)", "D1": r"D1\s+misses:\s+([\d,]+)", "LL": r"LL misses:\s+([\d,]+)"} if cache
                else {"Ir": r"Collected : (\d+)"})
    found = {key: re.search(pattern, run.stderr) for key, pattern in patterns.items()}
    if run.returncode != 0 or not all(found.values()):
        raise SystemExit(f"valgrind run failed ({run.returncode}): {run.stderr.strip().splitlines()[-1:]}")
    return {key: int(match.group(1).replace(",", "")) for key, match in found.items()}


def count_all(corpora: list[Path], trees: list[str], cache: bool) -> dict[tuple[str, Path], dict[str, int]]:
    """Instructions of a fresh offline build of each corpus by each tree, builds in parallel."""
    with tempfile.TemporaryDirectory(prefix="tgr-index-instructions-") as work, \
            ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        jobs = {}
        for number, tree in enumerate(trees):
            path, _, python = tree.partition("=")
            env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()))
            for corpus in corpora:
                store = Path(work) / f"tree{number}-{corpus.stem}.db"
                jobs[tree, corpus] = pool.submit(instructions, command_for(corpus, store, False, python or sys.executable),
                                                 work, env, cache)
        return {key: job.result() for key, job in jobs.items()}


def print_instructions(corpora: list[Path], trees: list[str], cache: bool) -> None:
    counts = count_all(corpora, trees, cache)
    millions = {c: len(c.read_text(encoding="utf-8", errors="replace")) / 1e6 for c in corpora}
    for tree in trees:
        first = {key: value / millions[corpora[0]] for key, value in counts[tree, corpora[0]].items()}
        for corpus in corpora:
            per_m = {key: value / millions[corpus] for key, value in counts[tree, corpus].items()}
            line = (f"{corpus.name} {tree}: {counts[tree, corpus]['Ir'] / 1e9:.2f} G instructions, {per_m['Ir'] / 1e9:.2f} G per M chars "
                    f"({millions[corpus]:.3f} M), per char x {per_m['Ir'] / first['Ir']:.3f} of {corpora[0].name}")
            if cache:
                line += "".join(f"; {key} misses {counts[tree, corpus][key] / 1e6:.1f} M, {per_m[key] / 1e6:.1f} M per M chars, "
                                f"per char x {per_m[key] / first[key]:.3f}" for key in ("D1", "LL"))
            print(line, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="+", help="files to index (one build each)")
    parser.add_argument("--tree", action="append", default=[], help="a checkout to measure (repeatable); DIR=PYTHON: with that interpreter")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before-calls", action="store_true", help="only read, chunk and store")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind's callgrind instead of timing (one run each)")
    parser.add_argument("--cache-misses", action="store_true",
                        help="with --instructions: under cachegrind, with the cache misses of a 2 MB last level")
    args = parser.parse_args(argv)
    trees = args.tree or [str(ROOT)]
    if args.instructions:
        print_instructions([Path(c).resolve() for c in args.corpus], trees, args.cache_misses)
        return 0
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    corpora = [Path(c).resolve() for c in args.corpus]
    results = measure(corpora, trees, args.runs, args.before_calls)
    millions = {c: len(c.read_text(encoding="utf-8", errors="replace")) / 1e6 for c in corpora}
    for corpus in corpora:
        first = statistics.median(results[trees[0], corpus][1])
        for tree in trees:
            walls, cpus, rss = results[tree, corpus]
            cpu = statistics.median(cpus)
            print(f"{corpus.name} {tree}: CPU median {cpu:.2f} s (least {min(cpus):.2f}), "
                  f"{cpu / millions[corpus]:.2f} CPU-s per M chars ({millions[corpus]:.3f} M), "
                  f"wall median {statistics.median(walls):.2f} s, peak RSS median {statistics.median(rss):.0f} MB, "
                  f"CPU x {cpu / first:.3f}", flush=True)
    for tree in trees:
        base = [cpu / millions[corpora[0]] for cpu in results[tree, corpora[0]][1]]
        for corpus in corpora[1:]:
            ratios = [per_m / (cpu / millions[corpus]) for per_m, cpu in zip(base, results[tree, corpus][1])]
            print(f"{tree}: {corpora[0].name} ÷ {corpus.name} CPU per char, median of {len(ratios)} rounds "
                  f"{statistics.median(ratios):.3f} (each round: {' '.join(f'{r:.2f}' for r in ratios)})", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
