"""Offline communities as a reader meets them: the global answer to "What are the main themes?".

    python bench/communities.py [--question Q] [--lines N] [PATH ...]

Builds an offline store (tgr:hash-384) in a temporary directory from each PATH (default: the
demo corpus, fixtures/corpus_en, with the demo store's chunk settings), asks the question in
global mode and prints the index's wall and CPU seconds, the number of reports and the first
N lines of the answer. For the demo corpus it also prints the issue 16 target: the answer opens
with the Scrooge/Marley community. Only tgr and the standard library are needed.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402

DEMO = ROOT / "fixtures" / "corpus_en"
DEMO_SETTINGS = dict(chunk_size=300, chunk_overlap=40)


def measure(path: Path, question: str, lines: int, folder: Path) -> str:
    """Index path offline, ask the question globally; the answer's first lines."""
    store = folder / f"{path.stem}.db"
    settings = DEMO_SETTINGS if path == DEMO else {}
    with tgr.open(store, chat="offline", embedder="tgr:hash-384") as kb:
        wall, cpu = time.perf_counter(), time.process_time()
        kb.index([str(path)], **settings)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        reports = kb.conn.execute("SELECT count(*) FROM reports").fetchone()[0]
        answer = kb.ask(question, mode="global").answer
    print(f"{path.name}: index {wall:.1f} s wall, {cpu:.1f} s CPU; {reports} reports")
    head = answer.splitlines()[:lines]
    for line in head:
        print("   ", line)
    return head[1] if len(head) > 1 else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--question", default="What are the main themes?")
    parser.add_argument("--lines", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for path in args.paths or [DEMO]:
            first = measure(path.resolve(), args.question, args.lines, Path(folder))
            if path.resolve() == DEMO:
                met = first.startswith("1. Scrooge") or first.startswith("1. Marley")
                print(f"    target (opens with the Scrooge/Marley community): {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
