"""Build in pieces, merge once: the time of `tgr merge` beside the builds it saves.

    python bench/merge.py                     # two ~1 M-char shards, offline
    python bench/merge.py --chars 200000      # smaller shards (a quick look)
    python bench/merge.py --single            # also one build of both shards' documents
    python bench/merge.py --json
    python bench/merge.py --dir DIR           # keep the shards in DIR; shards already there are not rebuilt

Moby-Dick and Journey to the West (../shared/corpora, or TGR_CORPORA; 1.97 M characters
together) are cut into documents of about 50,000 characters at paragraph breaks; pairs of
documents (one of each book) alternate between two shards of about --chars characters each. Each shard is indexed into
its own store (as a job runner would, one process each, here one after the other), then
`tgr merge` unites them. Prints the wall time of each build, of the merge (by stage) and,
with --single, of one build of every document, with the counts of each store; with
--single the merged store is compared with the single build (documents, chunks, entities,
relationships, communities and reports).

Offline (heuristic extraction, hashed embeddings): the model's time is not in these numbers,
so the merge is compared with tgr's own work; with an LLM, the builds also wait for every
extraction call, which the merge never makes. Standard library and tgr only.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402

CORPORA_DIR = Path(os.environ.get("TGR_CORPORA", ROOT.parent / "shared" / "corpora"))
BOOKS = ("en_moby_dick.txt", "zh_xiyouji.txt")
DOCUMENT_CHARS = 50_000


def documents(total_chars: int) -> list[str]:
    """Documents of about DOCUMENT_CHARS characters (fewer for small runs: at least 8 documents),
    the two books interleaved, total_chars in all."""
    size = max(2_000, min(DOCUMENT_CHARS, total_chars // 8))
    per_book = []
    for name in BOOKS:
        text = (CORPORA_DIR / name).read_text(encoding="utf-8")
        docs, current = [], ""
        for paragraph in text.split("\n\n"):
            current = f"{current}\n\n{paragraph}" if current else paragraph
            if len(current) >= size:
                docs.append(current.strip())
                current = ""
        per_book.append(docs)
    english, chinese = per_book
    mixed = [d for pair in zip(english, chinese) for d in pair]
    mixed += english[len(chinese):] + chinese[len(english):]
    result, used = [], 0
    for doc in mixed:
        if used >= total_chars:
            break
        result.append(doc)
        used += len(doc)
    return result


def counts(path: Path) -> dict:
    with tgr.open(path, readonly=True) as kb:
        info = kb.info()
    return {k: info[k] for k in ("documents", "chunks", "entities", "relationships", "reports")} | \
        {"communities": sum(v["communities"] for v in info["levels"].values())}


def build(path: Path, files: list[Path]) -> dict:
    started = time.perf_counter()
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(f) for f in files])
    return {"wall_s": round(time.perf_counter() - started, 2), "chars": sum(len(f.read_text("utf-8")) for f in files),
            **counts(path)}


def kept(path: Path, files: list[Path]) -> dict:
    """A shard store already in --dir (its build time unknown), else built now."""
    if not path.exists():
        return build(path, files)
    return {"wall_s": float("nan"), "chars": sum(len(f.read_text("utf-8")) for f in files), **counts(path)}


def same_rows(a: Path, b: Path) -> dict:
    """Which row sets of the two stores are equal (communities and reports by their members)."""
    def rows(path):
        with tgr.open(path, readonly=True) as kb:
            q = lambda sql: sorted(kb.conn.execute(sql).fetchall())  # noqa: E731
            members = {}
            for cid, eid in q("SELECT community_id, entity_id FROM community_members"):
                members.setdefault(cid, []).append(eid)
            return {"documents": q("SELECT id FROM documents"),
                    "chunks": q("SELECT id, document_id, ordinal, terms FROM chunks"),
                    "entities": q("SELECT id, name, type, description, degree, mentions FROM entities"),
                    "relationships": q("SELECT id, source_id, target_id, predicate, description, weight "
                                       "FROM relationships"),
                    "communities": sorted(members.values()),
                    "reports": q("SELECT c.level, r.title, r.full_text FROM reports r "
                                 "JOIN communities c ON c.id = r.community_id")}
    left, right = rows(a), rows(b)
    return {key: left[key] == right[key] for key in left}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=1_000_000, help="characters per shard")
    parser.add_argument("--single", action="store_true", help="also build every document into one store")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, help="work in DIR (kept); its shard stores are reused, not rebuilt")
    args = parser.parse_args()
    docs = documents(2 * args.chars)
    with tempfile.TemporaryDirectory(prefix="tgr-merge-") as tmp:
        root = args.dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        files = []
        for i, text in enumerate(docs):
            files.append(root / f"doc{i:03d}.txt")
            files[-1].write_text(text, encoding="utf-8")
        # pairs (one document of each book) alternate: both shards hold both languages
        shards = [[f for i, f in enumerate(files) if (i // 2) % 2 == part] for part in (0, 1)]
        result = {"shards": [kept(root / f"shard{i}.db", part) if args.dir else build(root / f"shard{i}.db", part)
                             for i, part in enumerate(shards)]}
        (root / "merged.db").unlink(missing_ok=True)
        started = time.perf_counter()
        summary = tgr.merge_stores(root / "merged.db", [root / "shard0.db", root / "shard1.db"])
        result["merge"] = {"wall_s": round(time.perf_counter() - started, 2), "stage_seconds": summary.stage_seconds,
                           "model_calls": summary.model_calls, **counts(root / "merged.db")}
        if args.single:
            (root / "single.db").unlink(missing_ok=True)
            result["single"] = build(root / "single.db", files)
            result["merged_equals_single"] = same_rows(root / "merged.db", root / "single.db")
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for i, shard in enumerate(result["shards"]):
        print(f"build shard {i}  {shard['chars']:>9,} chars  {shard['wall_s']:>7.1f} s  "
              f"{shard['chunks']} chunks, {shard['entities']} entities, {shard['communities']} communities")
    merged = result["merge"]
    stages = ", ".join(f"{k} {v:.1f}" for k, v in merged["stage_seconds"].items())
    print(f"merge            {sum(s['chars'] for s in result['shards']):>9,} chars  {merged['wall_s']:>7.1f} s  "
          f"{merged['chunks']} chunks, {merged['entities']} entities, {merged['communities']} communities; "
          f"{merged['model_calls']} model calls ({stages})")
    if args.single:
        single = result["single"]
        print(f"single build     {single['chars']:>9,} chars  {single['wall_s']:>7.1f} s  "
              f"{single['chunks']} chunks, {single['entities']} entities, {single['communities']} communities")
        print("merged == single: " + ", ".join(f"{k} {'yes' if v else 'NO'}"
                                               for k, v in result["merged_equals_single"].items()))


if __name__ == "__main__":
    main()
