"""The offline Chinese name finder on jieba.posseg (pure Python, tgr up to issue 27) and on
rjieba.tag (jieba in Rust, the same dictionary): CPU and the entities each gives.

    python bench/zh_tagger.py [--chunks 120] [--seed 7] [CORPUS]

Chunks the corpus (default ../shared/corpora/zh_xiyouji.txt) as `tgr index` does (1,200 /
100 tokens), takes --chunks of them at random (0: all), and runs the offline extraction
(tgr.offline.providers.extract_heuristic) on each with either tagger in names_zh. Prints the
CPU of each, how many of the entities kept per chunk (at most 20) both give, how many of the
distinct names, and the names of the whole sample only one of them finds (the most frequent
first). Needs jieba (a dependency of tgr) for the posseg side.
"""
from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tgr.ingest.chunking import chunk_text  # noqa: E402
from tgr.offline import names_zh  # noqa: E402
from tgr.offline.providers import extract_heuristic  # noqa: E402


def posseg_tagged(sentence: str) -> list[tuple[int, str, str]]:
    """names_zh._tagged as it was: jieba.posseg's words and flags."""
    import jieba
    from jieba import posseg

    jieba.setLogLevel(logging.WARNING)
    spans, position = [], 0
    for pair in posseg.lcut(sentence):
        spans.append((position, pair.word, pair.flag))
        position += len(pair.word)
    return spans


def posseg_chunk_tags(sentences: list[str], text: str):
    """names_zh._chunk_tags on jieba.posseg: each sentence's words and flags, alone, joined by a
    "\n" word (flag x); each word's start; the index of the "\n" after each sentence."""
    words, flags, ends = [], [], []
    for sentence in sentences:
        for _, word, flag in posseg_tagged(sentence):
            words.append(word)
            flags.append(flag)
        ends.append(len(words))
        words.append("\n")
        flags.append("x")
    words, flags = tuple(words[:-1]), tuple(flags[:-1])
    starts = [0]
    for word in words:
        starts.append(starts[-1] + len(word))
    return words, flags, starts, ends


def entities_with(tagger, texts: list[str]) -> tuple[float, list[list[str]]]:
    """CPU seconds and the entity names of each chunk with this tagger in names_zh."""
    names_zh._chunk_tags = tagger
    tagger(["预热"], "预热")  # load the dictionary before the clock starts
    started = time.process_time()
    found = [[e.name for e in extract_heuristic(text)[0]] for text in texts]
    return time.process_time() - started, found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpora" / "zh_xiyouji.txt"))
    parser.add_argument("--chunks", type=int, default=120, help="chunks sampled (0: all)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    text = Path(args.corpus).read_text(encoding="utf-8")
    chunks = [c.text for c in chunk_text(text, "d", 1200, 100)]
    if args.chunks:
        chunks = random.Random(args.seed).sample(chunks, min(args.chunks, len(chunks)))
    fast = names_zh._chunk_tags
    slow_cpu, slow = entities_with(posseg_chunk_tags, chunks)
    fast_cpu, quick = entities_with(fast, chunks)
    names_zh._chunk_tags = fast
    chars = sum(map(len, chunks))
    print(f"{len(chunks)} chunks, {chars:,} characters of {Path(args.corpus).name}")
    print(f"extraction CPU: jieba.posseg {slow_cpu:.2f} s, rjieba.tag {fast_cpu:.2f} s "
          f"({slow_cpu / fast_cpu:.1f}x)")
    both = sum(len(set(a) & set(b)) for a, b in zip(slow, quick))
    total_a, total_b = sum(map(len, slow)), sum(map(len, quick))
    print(f"entities kept per chunk: posseg {total_a}, rjieba {total_b}, in both {both} "
          f"({both / total_a:.1%} of posseg's, {both / total_b:.1%} of rjieba's)")
    count_a = Counter(n for names in slow for n in names)
    count_b = Counter(n for names in quick for n in names)
    shared = count_a.keys() & count_b.keys()
    print(f"distinct names: posseg {len(count_a)}, rjieba {len(count_b)}, in both {len(shared)} "
          f"({len(shared) / len(count_a):.1%} of posseg's)")
    top_a = [n for n, _ in count_a.most_common(100)]
    top_b = [n for n, _ in count_b.most_common(100)]
    print(f"the 100 names in most chunks: {len(set(top_a) & set(top_b))} in both lists")
    print("only posseg (most chunks first):", " ".join(n for n, _ in count_a.most_common() if n not in count_b)[:400])
    print("only rjieba (most chunks first):", " ".join(n for n, _ in count_b.most_common() if n not in count_a)[:400])
    return 0


if __name__ == "__main__":
    sys.exit(main())
