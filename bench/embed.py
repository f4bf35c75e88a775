"""How much CPU the local embedder (local-embed extra) costs per chunk, passage and question.

    python bench/embed.py [--corpus en|zh|PATH] [--chunks 4] [--passages 64] [--queries 20]

Cuts the corpus with tgr's own chunker (1,200 estimated tokens, 100 overlap), embeds a few
chunks, a batch of short passages (the first sentence of each chunk: entity-description
sized) and single questions one at a time, and prints wall and CPU seconds per item. CPU
seconds are the figure to compare across machines; wall time depends on free cores.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tgr.ingest.chunking import chunk_text  # noqa: E402
from tgr.models.local_embedder import LocalEmbedder  # noqa: E402
from tgr.text import split_sentences  # noqa: E402

CORPORA_DIR = Path(os.environ.get("TGR_CORPORA", ROOT.parent / "shared" / "corpora"))
CORPORA = {"en": "en_moby_dick.txt", "zh": "zh_xiyouji.txt", "carol": "en_christmas_carol.txt"}


def timed(fn, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="en")
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--passages", type=int, default=64)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    path = Path(args.corpus) if args.corpus not in CORPORA else CORPORA_DIR / CORPORA[args.corpus]
    text = path.read_text(encoding="utf-8")
    chunks = [c.text for c in chunk_text(text, "bench", 1200, 100)]
    middle = len(chunks) // 2  # skip front matter
    sample = chunks[middle:middle + args.chunks]
    passages = [c[slice(*split_sentences(c)[0])].strip()[:300] for c in chunks[:args.passages]]
    questions = [f"What is said about {p[:60]}?" for p in passages[:args.queries]]

    embedder = LocalEmbedder()
    _, load_wall, _ = timed(embedder.embed, ["warm up"])
    engine = embedder._engine()
    tokens = sum(engine.token_count(c) for c in sample)
    _, wall, cpu = timed(embedder.embed, sample)
    print(f"corpus {path.name}: {len(chunks)} chunks; first call (load + one text) {load_wall:.2f} s wall")
    print(f"chunks    {len(sample):4d} x ~1,200 tgr tokens ({tokens / len(sample):.0f} model tokens): "
          f"{wall / len(sample):.2f} s wall, {cpu / len(sample):.2f} CPU-s per chunk "
          f"({cpu / tokens * 1000:.2f} CPU-ms per model token)")
    _, wall, cpu = timed(embedder.embed, passages)
    print(f"passages  {len(passages):4d} short (mean {sum(map(len, passages)) / len(passages):.0f} chars): "
          f"{wall / len(passages) * 1000:.1f} ms wall, {cpu / len(passages) * 1000:.1f} CPU-ms per passage")
    walls, cpus = [], []
    for question in questions:
        _, wall, cpu = timed(embedder.embed_query, [question])
        walls.append(wall)
        cpus.append(cpu)
    walls.sort()
    print(f"questions {len(questions):4d} one at a time: median {walls[len(walls) // 2] * 1000:.1f} ms wall, "
          f"{sum(cpus) / len(cpus) * 1000:.1f} CPU-ms each")
    print(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'all cores')}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, cores {os.cpu_count()}")


if __name__ == "__main__":
    main()
