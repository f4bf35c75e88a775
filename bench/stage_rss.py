"""Memory of an offline build, stage by stage: what grows with the corpus (issue 41 item 2).

    python bench/stage_rss.py STORE CORPUS [--trace] [--trim] [--grown] [--peak-site] [--split]

Indexes CORPUS into a new STORE offline (tgr:hash-384) in this process and prints, as each
stage starts, the process's resident set (VmRSS) and its peak so far (ru_maxrss); --trace also
the Python heap (tracemalloc: current and peak traced MB, and the 15 largest allocation sites
at the largest traced heap seen; slows the build ~2x and adds its own RSS); --trim calls glibc's
malloc_trim(0) at each stage change and prints the RSS after it (what freed memory the
allocator was only keeping); --grown prints, as each stage starts, the 6 allocation sites (8 frames
deep) whose live memory grew most since the previous stage started: what a stage keeps;
--peak-site samples RSS every 20 ms in a thread and prints, for each stage, the main thread's
stack when the RSS was at its highest (where the peak is, at full speed: no tracing); --split
prints what the RSS is made of as each stage starts: anonymous and file-backed pages
(/proc/self/status RssAnon, RssFile), SQLite's own heap now and its highest since the previous
stage (sqlite3_memory_used / _highwater of the driver's library) and the Python objects the
cyclic collector tracks (no tracing: full speed). Run it at two sizes (e.g. 4 and 10 M chars)
and compare the rows.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import resource
import sys
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402


def split() -> str:
    """RssAnon / RssFile, SQLite's heap (now, highest since the last call) and gc-tracked objects."""
    import gc
    import importlib

    with open("/proc/self/status") as status:
        fields = {k: int(v.split()[0]) // 1024 for k, v in (line.split(":", 1) for line in status)
                  if k in ("RssAnon", "RssFile", "RssShmem")}
    lib = ctypes.CDLL(importlib.import_module("sqlean._sqlite3").__file__)
    lib.sqlite3_memory_used.restype = lib.sqlite3_memory_highwater.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
    used, high = lib.sqlite3_memory_used() >> 20, lib.sqlite3_memory_highwater(1) >> 20
    return (f"anon {fields.get('RssAnon')} MB, file {fields.get('RssFile')} MB, sqlite {used} MB "
            f"(highest {high} MB), gc objects {len(gc.get_objects()) // 1000}k, "
            f"blocks {sys.getallocatedblocks() // 1000}k")


def rss_mb() -> tuple[int, int]:
    """(current VmRSS, peak ru_maxrss) in MB."""
    with open("/proc/self/status") as status:
        current = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
    return current // 1024, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


class PeakSite:
    """A thread that samples RSS and keeps, for each stage, the main thread's stack at its
    highest sample (stage: what progress last named)."""

    def __init__(self, state: dict, every: float = 0.02):
        import threading
        import traceback

        self.highest: dict = {}  # stage -> (RSS MB, stack)
        main = threading.main_thread().ident
        self.done = threading.Event()

        def run() -> None:
            while not self.done.wait(every):
                current, stage = rss_mb()[0], state["stage"]
                if current > self.highest.get(stage, (0, None))[0]:
                    frame = sys._current_frames().get(main)
                    self.highest[stage] = (current, traceback.format_stack(frame)[-7:] if frame else [])

        threading.Thread(target=run, daemon=True).start()

    def report(self) -> None:
        self.done.set()
        for stage, (rss, stack) in self.highest.items():
            print(f"highest sampled RSS during {stage}: {rss} MB, main thread at:")
            for line in stack:
                print("   " + line.rstrip().replace("\n", "\n   "))


def grown(state: dict) -> None:
    """Print the sites whose live memory grew most since the last call."""
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    if state["previous"] is not None:
        for stat in snapshot.compare_to(state["previous"], "traceback")[:6]:
            print(f"   +{stat.size_diff >> 10:7d} KB {stat.count_diff:+8d} blocks", flush=True)
            for frame in stat.traceback.format()[-16::2]:
                print(f"        {frame.strip()}")
    state["previous"] = snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--trace", action="store_true", help="also tracemalloc's heap and top allocation sites")
    parser.add_argument("--trim", action="store_true", help="malloc_trim(0) at each stage change")
    parser.add_argument("--grown", action="store_true", help="the sites that grew most since the previous stage")
    parser.add_argument("--peak-site", action="store_true", help="the main thread's stack at the highest RSS")
    parser.add_argument("--split", action="store_true",
                        help="anonymous / file pages, SQLite's heap and Python objects at each stage")
    args = parser.parse_args()
    args.store.unlink(missing_ok=True)
    state = {"stage": None, "largest": 0, "snapshot": None, "previous": None}
    if args.trace or args.grown:
        tracemalloc.start(8 if args.grown else 1)

    def progress(stage: str, done: int, total: int) -> None:
        if stage != state["stage"]:
            current, peak = rss_mb()
            line = f"-> {stage}: RSS {current} MB, peak {peak} MB"
            if args.trace:
                traced, traced_peak = tracemalloc.get_traced_memory()
                line += f", traced {traced >> 20} MB (peak {traced_peak >> 20} MB)"
            if args.split:
                line += ", " + split()
            if args.trim:
                ctypes.CDLL("libc.so.6").malloc_trim(0)
                line += f", after malloc_trim {rss_mb()[0]} MB"
            print(line, flush=True)
            if args.grown:
                grown(state)
            state["stage"] = stage
        if args.trace and done % 50 == 0 and tracemalloc.get_traced_memory()[0] > state["largest"]:
            state["largest"] = tracemalloc.get_traced_memory()[0]
            state["snapshot"] = (stage, tracemalloc.take_snapshot())

    sampler = PeakSite(state) if args.peak_site else None
    with tgr.open(args.store, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(args.corpus)], progress=progress)
    if sampler:
        sampler.report()
    current, peak = rss_mb()
    print(f"end: RSS {current} MB, peak {peak} MB" + (", " + split() if args.split else ""), flush=True)
    if state["snapshot"]:
        stage, snapshot = state["snapshot"]
        print(f"largest traced heap {state['largest'] >> 20} MB, during {stage}:")
        for stat in snapshot.statistics("lineno")[:15]:
            print(f"  {stat.size >> 20:5d} MB {stat.count:9d} blocks  {stat.traceback}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
