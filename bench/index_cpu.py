"""CPU seconds of an offline build, checkouts taking turns (a busy machine slows each alike).

    python bench/index_cpu.py [--runs 3] [--tree DIR --tree DIR2[=PYTHON] ...] [--before-calls] CORPUS...

For each corpus, each run, each --tree in turn: a fresh `python -m tgr.cli index STORE CORPUS
--offline --embed-model tgr:hash-384 -q` in its own process (PYTHONPATH=the tree, run from a
temporary directory; DIR=PYTHON runs that tree on another interpreter, e.g. a venv
with other versions of the dependencies), timed by the kernel (user + system CPU of the process and its threads)
and by the wall clock. Prints each tree's median and least CPU and wall, and each median CPU
as a multiple of the first tree's (issue 16: an offline build at most 1.3 times the CPU of
9659030's on Moby-Dick and 西游记).

--before-calls times only what an index run does before its first model call instead: read
the file and store its document and chunks (chunking included) into a fresh store, the serial
part of a large first build (`bench/run.py --corpus 10m` writes a 10 M-character corpus).
Only the standard library and tgr are needed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
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


def measure(corpus: Path, trees: list[str], runs: int, before_calls: bool) -> dict[str, tuple[list, list, list]]:
    """Per tree: the wall and CPU seconds and peak RSS of each run, trees taking turns."""
    results: dict[str, tuple[list, list, list]] = {tree: ([], [], []) for tree in trees}
    with tempfile.TemporaryDirectory(prefix="tgr-index-cpu-") as work:
        for run in range(runs):
            for number, tree in enumerate(trees):
                path, _, python = tree.partition("=")
                env = dict(os.environ, PYTHONPATH=str(Path(path).resolve()))
                store = Path(work) / f"run{run}-tree{number}.db"
                wall, cpu, rss = run_once(command_for(corpus, store, before_calls, python or sys.executable), work, env)
                results[tree][0].append(wall)
                results[tree][1].append(cpu)
                results[tree][2].append(rss)
                print(f"  {corpus.name} run {run + 1} {tree}: CPU {cpu:.2f} s, wall {wall:.2f} s, "
                      f"peak RSS {rss:.0f} MB", flush=True)
                store.unlink()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="+", help="files to index (one build each)")
    parser.add_argument("--tree", action="append", default=[], help="a checkout to measure (repeatable); DIR=PYTHON: with that interpreter")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before-calls", action="store_true", help="only read, chunk and store")
    args = parser.parse_args(argv)
    trees = args.tree or [str(ROOT)]
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    for corpus in map(Path, args.corpus):
        results = measure(corpus.resolve(), trees, args.runs, args.before_calls)
        first = statistics.median(results[trees[0]][1])
        millions = len(corpus.read_text(encoding="utf-8", errors="replace")) / 1e6
        for tree, (walls, cpus, rss) in results.items():
            cpu = statistics.median(cpus)
            print(f"{corpus.name} {tree}: CPU median {cpu:.2f} s (least {min(cpus):.2f}), "
                  f"{cpu / millions:.2f} CPU-s per M chars ({millions:.3f} M), "
                  f"wall median {statistics.median(walls):.2f} s, peak RSS median {statistics.median(rss):.0f} MB, "
                  f"CPU x {cpu / first:.3f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
