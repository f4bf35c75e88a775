"""The local walk by forward push against the exact walk (tgr.query.push_walk, graph_walk).

    python bench/push_walk.py STORE.db [--epsilon 1e-6 --epsilon 3e-7 ...] QUESTION ...

For each question, the walk's seeds as local mode chooses them (without the hashed vectors'
nearest chunks), walked exactly (power iteration with numpy, whatever the subgraph's size) and
by forward push at each threshold: CPU seconds of each, and how far the push's 40 best chunks
and 10 best entities agree with the exact walk's (the same up to which rank, and how many in
common). Run from a checkout (PYTHONPATH=.).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from tgr.query import graph_walk, push_walk
from tgr.query.name_match import titled_chunks
from tgr.query.retrieve import SEED_CHUNKS, Retriever, question_spans
from tgr.store.db import open_file


def best(scores: dict[str, float], k: int) -> list[str]:
    return [key for key, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def same_to(a: list[str], b: list[str]) -> int:
    """How many first places two rankings share."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("questions", nargs="+")
    parser.add_argument("--epsilon", type=float, action="append")
    args = parser.parse_args()
    conn = open_file(Path(args.store), readonly=True)
    retriever = Retriever(conn)
    for question in args.questions:
        spans = question_spans(question)
        walk_args = (conn, retriever.named_entities(spans), retriever.bm25(question, SEED_CHUNKS),
                     titled_chunks(conn, spans), retriever.chunk_total())
        graph_walk.PUSH_EDGES = 10 ** 12
        start = time.process_time()
        chunks, entities = graph_walk.walk(*walk_args, numpy=True)
        print(f"{question}: {graph_walk._size(graph_walk._reached(*walk_args[:2], {c for c, _ in walk_args[2]} | set(walk_args[3])))}"
              f" edges, exact walk {time.process_time() - start:.3f} CPU-s")
        for epsilon in args.epsilon or [push_walk.EPSILON]:
            graph_walk.PUSH_EDGES, push_walk.EPSILON = 0, epsilon
            start = time.process_time()
            pushed_chunks, pushed_entities = graph_walk.walk(*walk_args, numpy=False)
            seconds = time.process_time() - start
            c, pc, e, pe = best(chunks, 40), best(pushed_chunks, 40), best(entities, 10), best(pushed_entities, 10)
            print(f"  epsilon {epsilon:g}: {seconds:.3f} CPU-s; 40 best chunks the same to rank {same_to(c, pc)}, "
                  f"{len(set(c) & set(pc))} in common; 10 best entities the same to rank {same_to(e, pe)}, "
                  f"{len(set(e) & set(pe))} in common")


if __name__ == "__main__":
    main()
