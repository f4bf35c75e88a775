"""CPU seconds the fake LLM spends answering the prompts of a benchmark store, per prompt kind.

    python bench/run.py --corpus /tmp/big2m.txt --no-rerun --latency 0 --out bench/out
    python bench/fake_cpu.py bench/out/big2m.db

A real model does not run on tgr's cores; the fake server does (bench/run.py runs it in a
child process on the same machine), so its CPU time is a benchmark artifact to keep small.
This replays every prompt of the store's LLM cache through fixtures/fakellm.py's FakeLLM
(after one warm-up answer, which loads jieba's dictionary) and prints the CPU seconds per
prompt kind, split by whether the prompt holds Chinese text.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))

import fakellm  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", help="a store built by bench/run.py (kept with --out)")
    args = parser.parse_args(argv)
    conn = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    prompts = [r[0] for r in conn.execute("SELECT prompt FROM llm_cache ORDER BY key")]
    conn.close()
    if not prompts:
        raise SystemExit(f"{args.store}: no cached prompts")
    llm = fakellm.FakeLLM()
    llm.answer(prompts[0])
    seconds: dict[tuple[str, str], float] = defaultdict(float)
    calls: Counter = Counter()
    for prompt in prompts:
        script = "zh" if fakellm.has_cjk(prompt) else "en"  # tgr's templates are English
        key = (fakellm.prompt_kind(prompt), script)
        start = time.process_time()
        llm.answer(prompt)
        seconds[key] += time.process_time() - start
        calls[key] += 1
    print(f"{'kind':<18}{'script':>7}{'prompts':>9}{'CPU s':>9}{'ms each':>9}")
    for key in sorted(seconds):
        print(f"{key[0]:<18}{key[1]:>7}{calls[key]:>9}{seconds[key]:>9.2f}{1000 * seconds[key] / calls[key]:>9.1f}")
    print(f"{'total':<25}{sum(calls.values()):>9}{sum(seconds.values()):>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
