"""Questions per second against the number of threads in flight, on one KnowledgeBase (or one
Stores) that every thread shares, as a sync web server shares it (issue 40, item 2).

    python bench/threads.py [--latency 0.5] [--threads 1,2,5,10,20,50] [--modes local,global]
                            [--stores 1] [--per-thread 2] [--corpus fixtures/corpus_en]

Starts fixtures/fakellm.py (an OpenAI-compatible fake, `--latency` seconds per chat call) in a
process of its own, builds the stores from the corpus with it (`--stores 2`: one per file, asked
together through tgr.open_many), then for each thread count N starts N threads, each asking
`--per-thread` different questions one after another (every question is asked once per round:
answers are never cached for questions), and prints questions per second, the wall time and the
speed-up over one thread. One process, one shared object, the threads of this process only.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402
from tgr.models.clients import OpenAIChat, OpenAIEmbedder  # noqa: E402

KEY = "sk-bench-threads"


def fake_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, str(ROOT / "fixtures" / "fakellm.py"), "--port", "0",
                                "--latency", str(latency)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = process.stdout.readline()
    return process, re.search(r"(http://\S+/v1)", line).group(1)


def models(url: str) -> dict:
    return dict(chat=OpenAIChat("fake", url, api_key=KEY), embedder=OpenAIEmbedder("fake-embedding", url, api_key=KEY))


def questions(corpus: Path, n: int) -> list[str]:
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted(corpus.glob("*.txt")))
    words = list(dict.fromkeys(re.findall(r"[A-Z][a-z]{3,}", text)))
    words += [w for w in dict.fromkeys(re.findall(r"[a-z]{6,}", text)) if w not in words]
    if len(words) < n:
        raise SystemExit(f"{corpus}: not enough words for {n} different questions")
    return [f"What does the story say about {w}?" for w in words[:n]]


def round_of(shared, mode: str, threads: int, asked: list[str]) -> float:
    """Seconds for `threads` threads to ask `asked` between them, each its share in turn."""
    shares = [asked[n::threads] for n in range(threads)]
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)

    def run(share: list[str]) -> None:
        start.wait()
        for question in share:
            try:
                shared.ask(question, mode, warn=lambda note: None)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

    workers = [threading.Thread(target=run, args=(share,)) for share in shares]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per chat call of the fake")
    parser.add_argument("--threads", default="1,2,5,10,20,50")
    parser.add_argument("--modes", default="local,global")
    parser.add_argument("--stores", type=int, default=1, help="1: tgr.open; 2: tgr.open_many of one store per file")
    parser.add_argument("--per-thread", type=int, default=2, help="questions each thread asks in a round")
    parser.add_argument("--corpus", type=Path, default=ROOT / "fixtures" / "corpus_en")
    args = parser.parse_args()
    counts = [int(n) for n in args.threads.split(",")]
    process, url = fake_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            files = sorted(args.corpus.glob("*.txt"))
            groups = [files] if args.stores == 1 else [files[n::args.stores] for n in range(args.stores)]
            paths = []
            quick, quick_url = fake_server(0.0)  # building waits for no latency
            try:
                for n, group in enumerate(groups):
                    paths.append(Path(tmp) / f"store{n}.db")
                    with tgr.open(paths[-1], **models(quick_url)) as kb:
                        kb.index([str(f) for f in group], chunk_size=300, chunk_overlap=40)
            finally:
                quick.terminate()
                quick.communicate()
            shared = tgr.open(paths[0], **models(url)) if args.stores == 1 else tgr.open_many(paths, **models(url))
            asked = questions(args.corpus, max(counts) * args.per_thread)
            what = "tgr.open" if args.stores == 1 else f"tgr.open_many of {args.stores} stores"
            print(f"{what}, fake chat model at {args.latency} s per call, {args.per_thread} questions per thread;"
                  f" load average {os.getloadavg()[0]:.1f}")
            print(f"{'mode':<7} {'threads':>7} {'questions':>9} {'wall s':>7} {'q/s':>7} {'x 1 thread':>10}")
            with shared:
                for mode in args.modes.split(","):
                    round_of(shared, mode, min(counts[-1], len(asked)), asked)  # warm: imports, connections
                    base = None
                    for n in counts:
                        share = asked[:n * args.per_thread]
                        wall = round_of(shared, mode, n, share)
                        rate = len(share) / wall
                        base = base or rate
                        print(f"{mode:<7} {n:>7} {len(share):>9} {wall:>7.2f} {rate:>7.1f} {rate / base:>10.1f}",
                              flush=True)
    finally:
        process.terminate()
        process.communicate()


if __name__ == "__main__":
    main()
