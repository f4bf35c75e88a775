"""Time to the first printed words against time to the whole answer, `tgr ask --stream` vs
`--no-stream`, local and global mode, against the fake LLM (0.5 s per call by default).

    python bench/first_words.py [--corpus fixtures/corpus_en] [--latency 0.5] [--piece-delay 0.02]
                                [--rounds 3] [--question "Who is Marley?"]

Builds a store of the corpus with the fake LLM (no latency while indexing), then runs `tgr ask`
as a user would (a new process each time, stdout a pipe, --stream/--no-stream given). The fake
model writes at one speed however it sends the answer: `latency` seconds to the first piece,
then `piece_delay` seconds per piece (streamed: each piece as it is written; not streamed: the
whole answer once the last is written). Prints, per mode and flag, the median seconds from the process start to
the first byte of the answer on stdout and to the end of the answer (the line before
"Sources:"), and the model calls. The questions differ per round (a number appended) so that no
answer comes from the cache.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))

from fakellm import FakeServer  # noqa: E402


def timed_ask(store: Path, question: str, mode: str, flag: str, url: str) -> tuple[float, float]:
    """(seconds to the first answer byte, seconds to the end of the answer) of one tgr ask."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TGR_BASE_URL": url}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "tgr.cli", "ask", str(store), question, "--mode", mode, flag],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, bufsize=0)
    first, end, seen = None, None, b""
    while True:
        byte = process.stdout.read(1)
        if not byte:
            break
        if first is None:
            first = time.perf_counter() - started
        seen += byte
        if end is None and (seen.endswith(b"\n\nSources:") or seen.endswith(b"\n\nReports considered")):
            end = time.perf_counter() - started
    process.wait()
    if process.returncode != 0 or first is None:
        raise SystemExit(f"tgr ask failed ({process.returncode}): {seen[-300:]!r}")
    return first, end or time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(ROOT / "fixtures" / "corpus_en"))
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--piece-delay", type=float, default=0.02)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--question", default="Who is Marley?")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeServer(piece_delay=args.piece_delay) as fake:
        store = Path(tmp) / "store.db"
        subprocess.run([sys.executable, "-m", "tgr.cli", "index", str(store), args.corpus, "--base-url", fake.url,
                        "--chat-model", "fake-chat", "--embed-model", "tgr:hash-384", "-q"],
                       check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
        fake.latency, fake.paced = args.latency, True
        print(f"fake LLM: {args.latency} s to the first piece of an answer, then {args.piece_delay} s per piece "
              f"whether streamed or not; medians of {args.rounds} runs")
        print(f"{'mode':<8}{'flag':<13}{'first words s':>14}{'whole answer s':>16}{'chat calls':>12}")
        for mode in ("local", "global"):
            for flag in ("--no-stream", "--stream"):
                firsts, ends, calls = [], [], fake.stats.chat_calls
                for n in range(args.rounds):
                    first, end = timed_ask(store, f"{args.question} ({flag} {n})", mode, flag, fake.url)
                    firsts.append(first)
                    ends.append(end)
                calls = (fake.stats.chat_calls - calls) / args.rounds
                print(f"{mode:<8}{flag:<13}{statistics.median(firsts):>14.2f}{statistics.median(ends):>16.2f}"
                      f"{calls:>12.1f}")


if __name__ == "__main__":
    main()
