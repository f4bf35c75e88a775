"""What `tgr check` costs on a large store, before and after issue 38, and what per-read page
checksums (SQLite's cksumvfs) would cost `tgr ask`.

    python bench/check_cost.py STORE [--tree OLD] [--runs 3]
    python bench/check_cost.py STORE --cksumvfs PATH/cksumvfs.so [--questions 20]

First part: wall seconds of `tgr check STORE` in a fresh process with this tree and with each
--tree (e.g. a checkout of main: `git worktree add ../main-38 26d577e`), alternating, the median
of --runs; and the content digest alone (what every build now adds at its end).

Second part (--cksumvfs: a build of SQLite's ext/misc/cksumvfs.c as a loadable extension, e.g.
`gcc -O2 -fPIC -shared -DSQLITE_CKSUMVFS_INIT_FUNCNAME='"cksum_init"' cksumvfs.c -o cksumvfs.so`):
a copy of STORE with 8 reserved bytes a page (checksums written by VACUUM), then --questions local
questions, each on a fresh read-only connection (cold page cache, as a `tgr ask` process has),
on the copy with verification on and off, alternating; stock sqlite3 reads the copy too.
Nothing here changes STORE.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUESTIONS = ["Who is Ahab?", "What does Scrooge say about Christmas?", "Who is Jacob Marley?",
             "What happens to the Pequod?", "Who is Queequeg?", "Where does Ishmael sail from?",
             "What is the white whale?", "Who is Bob Cratchit?", "What did Starbuck say?",
             "Who is Fezziwig?"]


def timed_check(tree: Path, store: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tgr", "check", str(store)], cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    return time.perf_counter() - started, done.returncode


def check_times(store: Path, trees: list[Path], runs: int) -> None:
    times: dict[Path, list[float]] = {tree: [] for tree in trees}
    for _ in range(runs):
        for tree in trees:
            seconds, code = timed_check(tree, store)
            times[tree].append(seconds)
            print(f"  {tree}: {seconds:.2f} s, exit {code}", flush=True)
    for tree, values in times.items():
        print(f"tgr check, {tree}: median {statistics.median(values):.2f} s of {runs}")
    from tgr.store import db, integrity

    conn = db.open_file(store, readonly=True)
    started = time.perf_counter()
    digest = integrity.content_digest(conn)
    hashed = time.perf_counter() - started
    started = time.perf_counter()
    damage = integrity.damage(conn)
    checked = time.perf_counter() - started
    conn.close()
    print(f"content digest alone: {hashed:.2f} s ({digest}); integrity_check + FTS5 check: {checked:.2f} s "
          f"({damage or 'ok'})")


def cksum_costs(store: Path, extension: Path, questions: int) -> None:
    import sqlean as sqlite3

    loader = sqlite3.connect(":memory:")
    loader.enable_load_extension(True)
    loader.load_extension(str(extension))  # the checksum VFS is the process's default from now on
    loader.close()
    import tgr
    from tgr.store import db

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "checksummed.db"
        shutil.copy(store, copy)
        started = time.perf_counter()
        for step in ("reserve", "rewrite"):  # pages spilled before page 1 (reserve 8) get no checksum
            conn = sqlite3.connect(str(copy), isolation_level=None)  # in the first VACUUM: a second
            conn.enable_load_extension(True)                         # one, verification off, writes all
            conn.load_extension(db.vec_extension_path())
            conn.execute("SELECT cksum_init('main')" if step == "reserve" else "PRAGMA checksum_verification = OFF")
            conn.execute("VACUUM")
            conn.close()
        print(f"checksummed copy: two VACUUMs {time.perf_counter() - started:.1f} s, "
              f"{store.stat().st_size / 1e6:.1f} -> {copy.stat().st_size / 1e6:.1f} MB")
        conn = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
        conn.execute("PRAGMA checksum_verification = OFF")
        valid = conn.execute("SELECT count(*), sum(verify_checksum(data)) FROM sqlite_dbpage").fetchone()
        conn.execute("PRAGMA checksum_verification = ON")
        try:
            quick = conn.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            quick = f"error: {exc}"
        conn.close()
        print(f"pages with a valid checksum: {valid[1]} of {valid[0]}; quick_check with verification on: {quick}")
        import sqlite3 as stock  # the stdlib module, linked to the system's SQLite
        plain = stock.connect(f"file:{copy}?mode=ro", uri=True)
        chunks = plain.execute("SELECT count(*) FROM chunks").fetchone()[0]
        print(f"stock sqlite3 {stock.sqlite_version} reads it: {chunks} chunks")
        plain.close()
        times = {"on": [], "off": []}
        for n in range(questions):
            question = QUESTIONS[n % len(QUESTIONS)]
            for verify in (("on", "off") if n % 2 == 0 else ("off", "on")):
                try:
                    with tgr.open(copy, readonly=True) as kb:
                        kb.conn.execute(f"PRAGMA checksum_verification = {verify.upper()}")
                        started = time.perf_counter()
                        kb.retrieve(question, mode="local", k=10)
                        times[verify].append(time.perf_counter() - started)
                except Exception as exc:  # noqa: BLE001 (a measurement: say what failed and go on)
                    print(f"  {question!r}, verification {verify}: {type(exc).__name__}: {exc}")
        if not (times["on"] and times["off"]):
            return
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(f"local retrieval on a fresh connection, median of {questions}: verification on {on * 1000:.1f} ms, "
              f"off {off * 1000:.1f} ms ({(on / off - 1) * 100:+.1f} %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--tree", type=Path, action="append", default=[], help="another checkout to compare")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cksumvfs", type=Path, help="a built cksumvfs loadable extension")
    parser.add_argument("--questions", type=int, default=20)
    args = parser.parse_args()
    store = args.store.resolve()
    print(f"{store}: {store.stat().st_size / 1e6:.1f} MB")
    if args.cksumvfs:
        cksum_costs(store, args.cksumvfs.resolve(), args.questions)
    else:
        check_times(store, [ROOT, *[t.resolve() for t in args.tree]], args.runs)


if __name__ == "__main__":
    main()
