"""Store size with API-sized vectors: float32 against int8 (issue 17 item 4).

    python bench/vector_size.py                               # Moby-Dick, 1,536-d vectors
    python bench/vector_size.py --corpus ../shared/corpora/zh_xiyouji.txt --dim 1024

Builds the corpus twice through fixtures/fakellm.py's FakeServer (no latency), with the
fake's embeddings at --dim dimensions (the size of OpenAI's text-embedding-3-small; Zhipu's
embedding-3 at tgr's default is 1,024): once with the vectors stored as float32 (how API
vectors were stored before), once as int8 (now the default for API embedders), and prints
each file's size, MB per million characters of corpus and the vec0 tables' share. The fake's
vectors say nothing about recall: that is measured with a real model (README, "The local
embedder": the same int8 scheme keeps recall@5/@10 of multilingual-e5-small unchanged).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT / "fixtures"), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import fakellm  # noqa: E402
import tgr  # noqa: E402
from tgr.models.clients import OpenAIChat, OpenAIEmbedder  # noqa: E402

CORPORA_DIR = Path(os.environ.get("TGR_CORPORA", ROOT.parent / "shared" / "corpora"))


def build(path: Path, url: str, corpus: str, vectors: str) -> float:
    embedder = OpenAIEmbedder("fake-embedding", url, api_key="k")
    embedder.vector_type = vectors
    started = time.monotonic()
    with tgr.open(path, chat=OpenAIChat("fake", url, api_key="k"), embedder=embedder, concurrency=16) as kb:
        kb.index([corpus])
    return time.monotonic() - started


def vec_bytes(path: Path) -> int:
    """Bytes of the pages the vec0 tables hold (dbstat)."""
    import sqlean

    conn = sqlean.connect(str(path))
    try:
        return conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'vec_%'").fetchone()[0]
    except sqlean.OperationalError:
        return 0
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(CORPORA_DIR / "en_moby_dick.txt"))
    parser.add_argument("--dim", type=int, default=1536)
    args = parser.parse_args()
    chars = len(Path(args.corpus).read_text(encoding="utf-8"))
    fakellm.EMBED_DIM = args.dim  # the fake's vectors, when the request names no dimensions
    work = Path(tempfile.mkdtemp(prefix="tgr-bench-vectors-"))
    with fakellm.FakeServer() as server:
        print(f"corpus {args.corpus}: {chars:,} characters; {args.dim}-d vectors")
        for vectors in ("float32", "int8"):
            path = work / f"{vectors}.db"
            wall = build(path, server.url, args.corpus, vectors)
            size = path.stat().st_size
            vec = vec_bytes(path)
            print(f"{vectors:<8} {size / 1e6:8.1f} MB  {size / 1e6 / (chars / 1e6):6.1f} MB per M chars  "
                  f"vec0 tables {vec / 1e6:6.1f} MB ({100 * vec / size:.0f} %)  built in {wall:.0f} s")


if __name__ == "__main__":
    main()
