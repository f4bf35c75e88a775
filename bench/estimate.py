"""How close `tgr index --estimate` comes to what indexing then spends.

    python bench/estimate.py                          # the fixtures, 300/600/1200-token chunks
    python bench/estimate.py --sizes 300,1200 PATH... # other corpora (files or directories)

For each corpus and chunk size: estimate into a fresh store, index with the scripted
model of tests/conftest.py (fixtures/fakellm.py in process, hashed embeddings), and
print estimated / measured chat calls, report calls and tokens (from the store's
model_calls ledger, chat rows only), with the ratio. Standard library, tgr and the
fixtures only.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "fixtures")]

import tgr  # noqa: E402
from conftest import ScriptedChat  # noqa: E402
from tgr.offline.providers import HashEmbedder  # noqa: E402


def measure(corpus: str, size: int, overlap: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, \
            tgr.open(Path(tmp) / "bench.db", chat=ScriptedChat(), embedder=HashEmbedder()) as kb:
        estimate = kb.estimate([corpus], chunk_size=size, chunk_overlap=overlap)
        kb.index([corpus], chunk_size=size, chunk_overlap=overlap)
        calls, prompt, completion = kb.conn.execute(
            "SELECT count(*), sum(prompt_tokens), sum(completion_tokens) FROM model_calls "
            "WHERE kind = 'chat' AND cache_hit = 0").fetchone()
        reports = kb.conn.execute("SELECT count(*) FROM model_calls WHERE stage = 'report' "
                                  "AND cache_hit = 0").fetchone()[0]
    return {"reports": (estimate["report_calls_estimate"], reports), "calls": (estimate["calls"], calls),
            "prompt tokens": (estimate["prompt_tokens"], prompt),
            "completion tokens": (estimate["completion_tokens"], completion)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="*", default=[str(ROOT / "fixtures/corpus_en"),
                                                       str(ROOT / "fixtures/corpus_zh")])
    parser.add_argument("--sizes", default="300,600,1200", help="chunk sizes in tokens")
    args = parser.parse_args(argv)
    heads = ("reports", "chat calls", "prompt tokens", "completion tokens")
    print(f"{'corpus':<28}{'chunk':>6}  " + "  ".join(f"{h + ' est / real':>26}" for h in heads))
    for corpus in args.corpora:
        for size in (int(s) for s in args.sizes.split(",")):
            row = measure(corpus, size, min(100, size // 8))
            cells = "  ".join(f"{f'{e:,} / {m:,} ({e / m:.2f})':>26}" for e, m in row.values())
            print(f"{Path(corpus).name[-28:]:<28}{size:>6}  {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
