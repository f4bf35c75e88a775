"""Hostile-store figures: every case of issue 7 against the real CLI, each in its own process.

    python bench/hostile.py            # a table, then the totals
    python bench/hostile.py --json

For each case a small offline store is built, something hostile is planted in it with a
plain SQLite connection, and tgr commands run against it (each bounded by --timeout).
Per command: exit code, seconds, whether stderr was one line, whether a traceback appeared,
whether the file changed (reading commands must leave it byte-identical) and whether the
planted payload fired. Then two concurrent `tgr index` runs against the fake LLM server,
counting prompts paid twice. Standard library, tgr and fixtures/fakellm.py only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sqlean as sqlite3

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))
TEXT = ROOT / "fixtures" / "corpus_en" / "carol_stave1_part1.txt"
OFFLINE = ["--chunk-size", "300", "--chunk-overlap", "40", "-q", "--offline"]
EVIL = "\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J"
CTE = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
TOP = "(SELECT id FROM entities ORDER BY degree DESC, id LIMIT 1)"

# name -> (statements planted, payload check SQL that must stay 0 or None)
CASES = {
    "trigger on runs": (["CREATE TRIGGER wipe AFTER INSERT ON runs BEGIN DELETE FROM chunks; END;"],
                        "SELECT count(*) = 0 FROM chunks"),
    "trigger on meta": (["CREATE TRIGGER rw AFTER UPDATE ON meta BEGIN UPDATE entities SET description='x'; END;"],
                        "SELECT count(*) FROM entities WHERE description = 'x'"),
    "view over endless CTE": ([f"PRAGMA legacy_alter_table = ON; ALTER TABLE entities RENAME TO e0; "
                               f"CREATE VIEW entities AS {CTE} SELECT i AS id, 'x' AS name, 'x' AS type, "
                               f"'x' AS description, 0 AS degree, 0 AS mentions, NULL AS embed_hash FROM n;"], None),
    "recursive trigger": (["CREATE TABLE spin(n); CREATE TRIGGER again AFTER INSERT ON spin "
                           "BEGIN INSERT INTO spin VALUES (new.n + 1); END; CREATE TRIGGER go AFTER INSERT "
                           "ON model_calls BEGIN INSERT INTO spin VALUES (0); END;"], "SELECT count(*) FROM spin"),
    "200 MB description": ([f"UPDATE entities SET description = replace(hex(zeroblob(25000000)), '0', "
                            f"'Scrooge ') WHERE id = {TOP};"], None),
    "8 MB description": ([f"UPDATE entities SET description = replace(hex(zeroblob(500000)), '0', "
                          f"'Scrooge ') WHERE id = {TOP};"], None),
    "embed_model tgr:hash-3000000000": (["UPDATE meta SET value = 'tgr:hash-3000000000' WHERE key = 'embed_model';"],
                                        None),
    "embed_model tgr:hash-0": (["UPDATE meta SET value = 'tgr:hash-0' WHERE key = 'embed_model';"], None),
    "nested JSON setting": ([f"UPDATE meta SET value = '{'[' * 100000}{']' * 100000}' "
                             f"WHERE key = 'setting.max_cluster_size';"], None),
    "escapes in text": ([f"UPDATE entities SET description = '{EVIL}' || description; "
                         f"UPDATE chunks SET text = '{EVIL}' || text; "
                         f"UPDATE documents SET source = '{EVIL}' || source;"], None),
}
READING = [["ask", "{db}", "Who is Scrooge?"], ["ask", "{db}", "Scrooge", "--context-only"], ["info", "{db}"],
           ["stats", "{db}"], ["export", "{db}", "{dir}/g.graphml"]]
WRITING = [["index", "{db}", str(TEXT), *OFFLINE]]


def cli(args, timeout):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "tgr.cli", *args], env=env, capture_output=True,
                              timeout=timeout)
        return done.returncode, done.stdout, done.stderr, time.monotonic() - start, False
    except subprocess.TimeoutExpired:
        return None, b"", b"", time.monotonic() - start, True


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_case(name, statements, payload, clean: Path, work: Path, timeout: float) -> list[dict]:
    rows = []
    for command in READING + WRITING:
        case_dir = work / f"{len(rows)}"
        case_dir.mkdir()
        db = case_dir / "shipped.db"
        shutil.copy(clean, db)
        conn = sqlite3.connect(db)
        for sql in statements:
            conn.executescript(sql)
        conn.commit()
        conn.close()
        before = digest(db)
        args = [a.format(db=db, dir=case_dir) for a in command]
        code, out, err, seconds, hung = cli(args, timeout)
        fired = False
        if payload:
            conn = sqlite3.connect(db)
            fired = bool(conn.execute(payload).fetchone()[0])
            conn.close()
        text = err.decode("utf-8", "replace")
        rows.append({"case": name, "command": command[0] + (" --context-only" if "--context-only" in command else ""),
                     "exit": code, "seconds": round(seconds, 2), "hung": hung,
                     "traceback": "Traceback" in text, "one_line": len(text.strip().splitlines()) <= 1,
                     "escapes_out": any(c in (out + err).decode("utf-8", "replace") for c in "\x1b\x07"),
                     "changed": command[0] != "index" and digest(db) != before, "fired": fired})
    return rows


def two_writers(work: Path, timeout: float) -> dict:
    from fakellm import FakeServer

    db = work / "shared.db"
    args = ["index", str(db), str(TEXT), "--chat-model", "fake-chat", "--embed-model", "openai:fake-embed",
            "--concurrency", "2", "--chunk-size", "300", "--chunk-overlap", "40", "-q"]
    with FakeServer(latency=0.1) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TGR_API_KEY": "k", "TGR_BASE_URL": server.url}
        procs = [subprocess.Popen([sys.executable, "-m", "tgr.cli", *args], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for _ in range(2)]
        codes = [p.wait(timeout=timeout * 4) for p in procs]
        conn = sqlite3.connect(db)
        prompts = conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0]
        conn.close()
        return {"exits": codes, "prompts": prompts, "requests": server.stats.chat_calls,
                "repaid": server.stats.chat_calls - prompts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per command (a hang above this)")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        clean = work / "clean.db"
        code, _, err, _, _ = cli(["index", str(clean), str(TEXT), *OFFLINE], options.timeout)
        if code != 0:
            sys.exit(f"could not build the clean store: {err.decode()}")
        rows = []
        for n, (name, (statements, payload)) in enumerate(CASES.items()):
            case_work = work / f"case{n}"
            case_work.mkdir()
            rows += run_case(name, statements, payload, clean, case_work, options.timeout)
        writers = two_writers(work, options.timeout)
    totals = {"commands": len(rows), "cases": len(CASES), "hangs": sum(r["hung"] for r in rows),
              "tracebacks": sum(r["traceback"] for r in rows), "multi_line_errors": sum(not r["one_line"] for r in rows),
              "escapes_printed": sum(r["escapes_out"] for r in rows), "files_changed_by_reading": sum(r["changed"] for r in rows),
              "payloads_fired": sum(r["fired"] for r in rows), "slowest_s": max(r["seconds"] for r in rows),
              "two_writers": writers}
    if options.json:
        print(json.dumps({"rows": rows, "totals": totals}, indent=2))
        return
    print(f"{'case':<34}{'command':<22}{'exit':>5}{'s':>7}  flags")
    for r in rows:
        flags = [k for k in ("hung", "traceback", "escapes_out", "changed", "fired") if r[k]]
        flags += [] if r["one_line"] else ["multi-line"]
        print(f"{r['case']:<34}{r['command']:<22}{str(r['exit']):>5}{r['seconds']:>7.2f}  {' '.join(flags) or '-'}")
    print()
    for key, value in totals.items():
        print(f"{key:<26}{value}")


if __name__ == "__main__":
    main()
