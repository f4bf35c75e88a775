"""Adding one document to a built store (issue 41: <= 5 CPU-s at 100 M characters), tree against tree.

    python bench/add_cost.py STORE DOC [--tree OLD --tree NEW] [--runs 3] [--work DIR] [--store-of NEW=STORE2]

Each run copies STORE (with its -wal, if any) into DIR and adds DOC to the copy with
`python -m tgr.cli index COPY DOC --offline -q`, PYTHONPATH the tree; the trees take turns, run
after run, so that a machine whose speed drifts slows each alike. Prints each run's CPU seconds
(user + system of the process, from wait4) and peak RSS, and each tree's median. Then the copies
the first two trees made are compared table by table (every ordinary table, the FTS5 and
sqlite-vec shadow tables included; the runs ledger and the timestamps of documents and
extractions left out): an add by a faster tree must leave what the other's leaves. STORE is
never written. --store-of TREE=STORE gives a tree a store of its own (one that tree refreshed,
when its reports are made otherwise): the copies are not compared then. Only the standard
library is needed (and tgr in each tree).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import sqlite3
import statistics
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from coldstart import run_child  # noqa: E402

LEDGER = {"runs", "model_calls", "sqlite_sequence"}
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
DIGEST_KEYS = {"content_digest", "content_digest_state"}  # (they hash the ledger's times too)


def copy_store(store: Path, to: Path) -> None:
    for suffix in ("-wal", "-shm", ""):
        target = Path(str(to) + suffix)
        target.unlink(missing_ok=True)
        if suffix != "-shm" and Path(str(store) + suffix).exists():
            shutil.copyfile(Path(str(store) + suffix), target)


def add_once(tree: str, store: Path, doc: Path, copy: Path) -> tuple[float, float]:
    copy_store(store, copy)
    command = [sys.executable, "-m", "tgr.cli", "index", str(copy), str(doc), "--offline", "-q"]
    _, cpu, rss, _ = run_child(command, tree, dict(os.environ, PYTHONPATH=str(Path(tree).resolve())))
    return cpu, rss


def table_rows(conn, table: str) -> Counter:
    """The table's rows as a multiset of hashes, timestamps masked."""
    rows = Counter()
    for row in conn.execute(f'SELECT * FROM "{table}"'):
        if table == "meta" and row[0] in DIGEST_KEYS:
            continue
        masked = tuple("<time>" if isinstance(v, str) and STAMP.match(v) else v for v in row)
        rows[hashlib.blake2b(repr(masked).encode(), digest_size=16).digest()] += 1
    return rows


def differences(a: Path, b: Path) -> list[str]:
    """The tables whose rows differ between two stores (virtual tables through their shadow tables)."""
    one, two = (sqlite3.connect(f"file:{p}?mode=ro", uri=True) for p in (a, b))
    names = lambda c: [n for n, sql in c.execute(  # noqa: E731
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
        if not (sql or "").upper().startswith("CREATE VIRTUAL") and not n.startswith("sqlite_stat")]
    tables_a, tables_b = names(one), names(two)
    found = [f"tables {sorted(set(tables_a) ^ set(tables_b))}"] if tables_a != tables_b else []
    return found + [t for t in tables_a if t in tables_b and t not in LEDGER
                    and table_rows(one, t) != table_rows(two, t)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("doc", type=Path)
    parser.add_argument("--tree", action="append", help="a checkout to run (repeat; default: this one)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, help="where the copies go (default: next to STORE)")
    parser.add_argument("--store-of", action="append", default=[], help="TREE=STORE: that tree's own store")
    args = parser.parse_args()
    trees = args.tree or [str(HERE.parent)]
    own = dict(item.split("=", 1) for item in args.store_of)
    stores = {tree: Path(own.get(tree, args.store)).resolve() for tree in trees}
    work = args.work or args.store.parent
    copies = {tree: work / f"add-cost-{n}-{args.store.name}" for n, tree in enumerate(trees)}
    cpu: dict[str, list[float]] = {tree: [] for tree in trees}
    for run in range(args.runs):
        for tree in trees:
            seconds, rss = add_once(tree, stores[tree], args.doc.resolve(), copies[tree])
            cpu[tree].append(seconds)
            print(f"run {run + 1} {tree}: {seconds:.2f} CPU-s, {rss:.0f} MB, load {os.getloadavg()[0]:.1f}", flush=True)
    for tree in trees:
        print(f"{tree}: median {statistics.median(cpu[tree]):.2f} CPU-s of {', '.join(f'{c:.2f}' for c in cpu[tree])}")
    if len(trees) > 1 and stores[trees[0]] == stores[trees[1]]:
        differ = differences(copies[trees[0]], copies[trees[1]])
        print("tables: " + ("the same" if not differ else "DIFFERENT: " + ", ".join(differ)))


if __name__ == "__main__":
    main()
