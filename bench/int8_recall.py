"""Recall of a store whose vectors are float32 against the same store with int8 vectors.

    python bench/int8_recall.py --corpus ../shared/eval/cmrc2018_trial/corpus.jsonl \
        --questions ../shared/eval/cmrc2018_trial/questions.jsonl

Indexes the corpus once, offline, with the bundled local embedder (local:multilingual-e5-small,
the local-embed extra; or --embed-model tgr:hash-384, in seconds) keeping float32 vectors, copies the file, rewrites the copy's vec0
tables as int8 (tgr's scheme: each vector scaled by 127 / its largest component; the same
vectors, no second embedding), and prints `tgr eval` of both (local and naive modes) and both
files' size. A real model, never the fake: the fake's vectors say nothing about recall.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402
from tgr.store.db import VEC_TABLES, ensure_vec_tables, serialize, set_meta, transaction  # noqa: E402
from tgr.models.registry import make_embedder  # noqa: E402


def to_int8(path: Path) -> None:
    """Rewrite a store's float32 vec0 tables as int8, vector for vector."""
    from tgr.store.opening import connect

    conn = connect(path, create=False)
    try:
        dim = int(conn.execute("SELECT value FROM meta WHERE key = 'embed_dim'").fetchone()[0])
        saved = {t: conn.execute(f"SELECT id, vec_to_json(embedding) FROM {t}").fetchall() for t in VEC_TABLES}
        with transaction(conn):
            for table in VEC_TABLES:
                conn.execute(f"DROP TABLE {table}")
            ensure_vec_tables(conn, dim, "int8")
            for table, rows in saved.items():
                conn.executemany(f"INSERT INTO {table}(id, embedding) VALUES (?, vec_int8(?))",
                                 [(i, serialize(json.loads(v), "int8")) for i, v in rows])
            set_meta(conn, embed_vector="int8")
    finally:
        conn.close()
    vacuum(path)


def vacuum(path: Path) -> None:
    from tgr.store.opening import connect

    conn = connect(path, create=False)
    try:
        conn.execute("VACUUM")
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--embed-model", default="local:multilingual-e5-small",
                        help="an in-process embedder: local:multilingual-e5-small or tgr:hash-384 (fast)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tgr-bench-int8-"))
    float_store, int8_store = work / "float32.db", work / "int8.db"
    embedder = make_embedder(args.embed_model)
    embedder.vector_type = "float32"
    started = time.monotonic()
    with tgr.open(float_store, chat="offline", embedder=embedder) as kb:
        kb.index([args.corpus])
    print(f"indexed {args.corpus} in {time.monotonic() - started:.0f} s", flush=True)
    vacuum(float_store)
    shutil.copy(float_store, int8_store)
    to_int8(int8_store)
    for store in (float_store, int8_store):
        print(f"\n{store.name}: {store.stat().st_size / 1e6:.2f} MB", flush=True)
        subprocess.run([sys.executable, "-m", "tgr.cli", "eval", str(store), args.questions], check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})


if __name__ == "__main__":
    main()
