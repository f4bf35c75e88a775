"""`tgr index --batch` against the fake LLM's Batch API: whole pipeline, stopped and resumed.

    python bench/batch.py                         # A Christmas Carol (../shared/corpora)
    python bench/batch.py --corpus fixtures/corpus_en --batch-delay 1 --failures 0.05 --expire 0.05

Starts fixtures/fakellm.py's FakeServer in this process, then:
1. builds a store synchronously (the reference: calls, tokens, price);
2. builds another with `tgr index STORE CORPUS --batch --no-wait` in a child process, which
   submits the first wave's job and exits (code 3), then runs `tgr index STORE --no-wait`
   every --poll seconds, each run a new process that collects what is done and submits the
   next wave, until one exits 0;
and prints: the runs it took, the jobs and requests the fake server saw, the requests it
answered more than once (must be 0), the synchronous calls made in batch mode, the ledger's
billed tokens of both stores and their ratio (must be 0.5), and whether both stores hold the
same rows (entities, relationships, communities, reports, cached answers).
Standard library, tgr and fixtures/fakellm.py only; bounded by --timeout.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT / "fixtures"), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from fakellm import FakeServer  # noqa: E402

CORPORA_DIR = Path(os.environ.get("TGR_CORPORA", ROOT.parent / "shared" / "corpora"))
CONTENT = ("SELECT id, name, type, description FROM entities ORDER BY id",
           "SELECT id, source_id, target_id, predicate, weight FROM relationships ORDER BY id",
           "SELECT id, level, parent_id, size FROM communities ORDER BY id",
           "SELECT community_id, title, summary, rating, findings FROM reports ORDER BY community_id",
           "SELECT key, response FROM llm_cache ORDER BY key")
KEY = "sk-bench-batch"


def tgr_cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TGR_API_KEY": KEY}
    return subprocess.run([sys.executable, "-m", "tgr.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def content_digest(path: Path) -> str:
    import sqlean

    conn = sqlean.connect(str(path))
    try:
        digest = hashlib.sha256()
        for sql in CONTENT:
            digest.update(json.dumps(conn.execute(sql).fetchall(), ensure_ascii=False).encode())
        return digest.hexdigest()[:16]
    finally:
        conn.close()


def ledger(path: Path) -> dict:
    """Chat calls, tokens and billed tokens (each call at its price) of a store's ledger."""
    import sqlean

    conn = sqlean.connect(str(path))
    try:
        calls, tokens, billed = conn.execute(
            "SELECT count(*), sum(prompt_tokens + completion_tokens), sum((prompt_tokens + completion_tokens) "
            "* price) FROM model_calls WHERE kind = 'chat' AND cache_hit = 0").fetchone()
        jobs = conn.execute("SELECT count(*) FROM batch_jobs").fetchone()[0]
        return {"chat_calls": calls, "tokens": tokens, "billed_tokens": round(billed or 0), "jobs": jobs}
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=str(CORPORA_DIR / "en_christmas_carol.txt"))
    parser.add_argument("--batch-delay", type=float, default=2.0, help="seconds the fake takes per job")
    parser.add_argument("--failures", type=float, default=0.0, help="share of requests failed once")
    parser.add_argument("--expire", type=float, default=0.0, help="share of requests left unfinished once")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between the resuming runs")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="tgr-bench-batch-"))
    with FakeServer(batch_delay=args.batch_delay, batch_failures=args.failures, batch_expire=args.expire) as server:
        models = ["--base-url", server.url, "--chat-model", "openai:fake", "--embed-model", "openai:fake-embed", "-q"]
        sync_store, batch_store = work / "sync.db", work / "batch.db"
        done = tgr_cli("index", str(sync_store), args.corpus, *models, timeout=args.timeout)
        if done.returncode:
            sys.exit(f"synchronous build failed: {done.stderr.strip()}")
        sync_calls = server.stats.chat_calls
        server.reset_stats()
        runs, codes = 0, []
        first = [args.corpus, "--batch"]
        while time.monotonic() - started < args.timeout:
            runs += 1
            result = tgr_cli("index", str(batch_store), *first, "--no-wait", *models, timeout=args.timeout)
            codes.append(result.returncode)
            first = []
            if result.returncode != 3:
                break
            time.sleep(args.poll)
        if codes[-1] != 0:
            sys.exit(f"batch build failed (exit {codes[-1]}): {result.stderr.strip()}")
        stats, desk = server.stats, dict(server.batches.counts)
    sync, batch = ledger(sync_store), ledger(batch_store)
    same = content_digest(sync_store) == content_digest(batch_store)
    print(f"corpus {args.corpus}: {os.path.getsize(args.corpus):,} bytes; fake job delay {args.batch_delay} s, "
          f"failures {args.failures}, expire {args.expire}")
    print(f"synchronous build: {sync_calls} chat calls; ledger {sync['tokens']:,} tokens, "
          f"billed {sync['billed_tokens']:,}")
    print(f"batch build: {runs} tgr processes (exit codes {' '.join(map(str, codes))}), {batch['jobs']} jobs; "
          f"fake server: {stats.batch_items} requests answered in jobs, {desk.get('failed', 0)} failed, "
          f"{desk.get('expired', 0)} expired, {stats.chat_calls} synchronous calls, {stats.repaid} answered twice")
    print(f"batch ledger: {batch['chat_calls']} calls, {batch['tokens']:,} tokens, billed {batch['billed_tokens']:,} "
          f"= {batch['billed_tokens'] / max(1, sync['billed_tokens']):.3f} x the synchronous price")
    print(f"same rows as the synchronous store: {'yes' if same else 'NO'}; wall {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
