"""A shipped .db is untrusted input: every hostile case here is built by the test itself.

Each case runs the real CLI in a subprocess (bounded by a timeout) and checks the exit code,
a one-line message without a traceback, that nothing planted ever fired, and that reading
commands leave the file byte-identical.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time

import pytest
import sqlean as sqlite3

import tgr
from click.testing import CliRunner
from conftest import EN_CORPUS, ROOT
from tgr.store import db, opening as storefile
from tgr.cli import main
from tgr.errors import StoreError

TEXT = EN_CORPUS / "carol_stave1_part1.txt"
SMALL = ["--chunk-size", "300", "--chunk-overlap", "40", "-q", "--offline"]


def tgr_cli(*args, timeout=30, env=None):
    """Run the CLI in its own process (cases that could hang); returns (exit code, stdout, stderr)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run([sys.executable, "-m", "tgr.cli", *map(str, args)], env=environment,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def cli(*args):
    """Run the CLI in this process (quicker); an escaping exception would be a traceback."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def refused(result, *words):
    """A clean refusal: non-zero exit, one line on stderr naming the words, no traceback."""
    code, out, err = result
    assert code != 0, (out, err)
    assert "Traceback" not in err + out, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One small offline store, copied by each test that plants something in it."""
    path = tmp_path_factory.mktemp("built") / "clean.db"
    code, out, err = cli("index", path, TEXT, *SMALL)
    assert code == 0, err
    return path


@pytest.fixture
def store(built, tmp_path):
    path = tmp_path / "shipped.db"
    shutil.copy(built, path)
    return path


def plant(path, *statements):
    """Change a store with a plain SQLite connection, as an attacker would."""
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.executescript(sql)
    conn.commit()
    conn.close()


def count(path, sql):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


# -- planted schema objects --------------------------------------------------------------

def test_trigger_on_runs_never_fires_during_index(store):
    chunks = count(store, "SELECT count(*) FROM chunks")
    plant(store, "CREATE TRIGGER wipe AFTER INSERT ON runs BEGIN DELETE FROM chunks; END;")
    before = digest(store)
    refused(cli("index", store, TEXT, *SMALL), "wipe", "trigger")
    assert count(store, "SELECT count(*) FROM chunks") == chunks
    assert digest(store) == before


def test_trigger_on_meta_refused_by_every_command_and_the_api(store):
    plant(store, "CREATE TRIGGER rewrite AFTER UPDATE ON meta "
                 "BEGIN UPDATE entities SET description = 'pwned'; END;")
    before = digest(store)
    for command in (["ask", store, "Who is Scrooge?"], ["info", store], ["stats", store],
                    ["rebuild", store, "reports", "--offline", "-q"]):
        refused(cli(*command), "rewrite")
    with pytest.raises(StoreError, match="rewrite"):
        tgr.open(store)
    assert digest(store) == before
    assert count(store, "SELECT count(*) FROM entities WHERE description = 'pwned'") == 0


def test_view_over_an_endless_cte_in_place_of_a_table(store):
    plant(store, "PRAGMA legacy_alter_table = ON; ALTER TABLE entities RENAME TO old_entities;",
          "CREATE VIEW entities AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
          "SELECT i AS id, 'x' AS name, 'x' AS type, 'x' AS description, 0 AS degree, 0 AS mentions, "
          "NULL AS embed_hash FROM n;")
    before = digest(store)
    refused(tgr_cli("ask", store, "Who is Scrooge?", timeout=20), "entities", "view")  # own process: could hang
    for command in (["info", store], ["export", store, store.with_suffix(".graphml")]):
        refused(cli(*command), "entities", "view")
    assert digest(store) == before


def test_recursive_trigger_is_refused_before_index_runs(store):
    plant(store, "CREATE TABLE spin(n INTEGER);",
          "CREATE TRIGGER again AFTER INSERT ON spin BEGIN INSERT INTO spin VALUES (new.n + 1); END;",
          "CREATE TRIGGER start AFTER INSERT ON model_calls BEGIN INSERT INTO spin VALUES (0); END;")
    refused(tgr_cli("index", store, TEXT, *SMALL, timeout=20), "trigger")
    assert count(store, "SELECT count(*) FROM spin") == 0


def test_view_of_tgr_replaced_and_foreign_virtual_table(store, tmp_path):
    plant(store, "DROP VIEW cost_by_stage;",
          "CREATE VIEW cost_by_stage AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
          "SELECT i AS run_id, 'x' AS stage, 'chat' AS kind, 'm' AS model, 1 AS calls, 0 AS cache_hits, "
          "0 AS prompt_tokens, 0 AS completion_tokens, 0 AS model_seconds FROM n;")
    refused(tgr_cli("stats", store, timeout=20), "cost_by_stage", "differs")
    other = tmp_path / "rtree.db"
    shutil.copy(store, other)
    plant(other, "DROP VIEW cost_by_stage; DROP TABLE communities;",
          "CREATE VIRTUAL TABLE communities USING rtree(id, a, b);")
    refused(cli("info", other), "communities", "rtree")


def test_extra_tables_and_indexes_are_tolerated(store):
    plant(store, "CREATE TABLE notes(x TEXT); CREATE INDEX notes_x ON notes(x);")
    code, out, err = cli("info", store)
    assert code == 0, err


# -- the connection itself ---------------------------------------------------------------

def test_statement_watchdog_stops_a_runaway_query(store, monkeypatch):
    monkeypatch.setenv("TGR_STATEMENT_SECONDS", "0.5")
    conn = storefile.connect(store, readonly=True)
    try:
        with pytest.raises(StoreError, match="took too long"):
            conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                         "SELECT count(*) FROM n").fetchone()
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0  # still usable
    finally:
        conn.close()


def test_the_watchdog_bounds_each_run_of_an_executemany_not_the_whole_batch(tmp_path, monkeypatch):
    # a 100 M-character build inserts millions of rows in one executemany: together they may
    # take longer than one statement may, while a runaway row is still stopped
    monkeypatch.setenv("TGR_STATEMENT_SECONDS", "0.02")
    conn = storefile.connect(tmp_path / "kb.db")
    try:
        conn.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT)")
        started = time.thread_time()
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO t(b) VALUES (?)", ((f"row {i}" * 8,) for i in range(200_000)))
        conn.execute("COMMIT")
        assert time.thread_time() - started > 0.04 and conn.execute("SELECT count(*) FROM t").fetchone()[0] == 200_000
        with pytest.raises(StoreError, match="took too long"):
            conn.executemany("INSERT INTO t(b) SELECT count(*) FROM (WITH RECURSIVE n(i) AS "
                             "(SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT i FROM n)", [(1,), (10 ** 9,)])
    finally:
        conn.close()


def test_defensive_mode_and_query_only(store):
    conn = storefile.connect(store)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        with pytest.raises(sqlite3.DatabaseError):
            conn.execute("UPDATE sqlite_master SET sql = 'x' WHERE name = 'meta'")
        assert conn.execute("PRAGMA trusted_schema").fetchone()[0] == 0
        with pytest.raises(StoreError, match="MB limit"):
            conn.execute("SELECT length(zeroblob(?))", (db.hardening.MAX_VALUE_BYTES + 1,)).fetchone()
    finally:
        conn.close()
    reader = storefile.connect(store, readonly=True)
    try:
        assert reader.execute("PRAGMA query_only").fetchone()[0] == 1
    finally:
        reader.close()


def test_asking_an_old_schema_store_through_the_api_neither_migrates_nor_writes(store):
    plant(store, "ALTER TABLE reports DROP COLUMN context_hash; PRAGMA user_version = 1;")
    before = digest(store)
    with tgr.open(store) as kb:
        assert kb.ask("Who is Scrooge?").answer
        assert kb.info()["documents"] == 1
    assert digest(store) == before
    assert count(store, "PRAGMA user_version") == 1


# -- bounded by what the store says ------------------------------------------------------

@pytest.mark.parametrize("key, value, word", [
    ("embed_model", "tgr:hash-3000000000", "embed_model"),
    ("embed_model", "tgr:hash-0", "embed_model"),
    ("embed_dim", "0", "embed_dim"),
    ("setting.max_cluster_size", "[" * 200_000 + "]" * 200_000, "setting.max_cluster_size"),
])
def test_unsafe_meta_values_are_refused(store, key, value, word):
    conn = sqlite3.connect(store)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
    conn.commit()
    conn.close()
    before = digest(store)
    for command in (["ask", store, "Who is Scrooge?"], ["info", store], ["index", store, TEXT, *SMALL]):
        refused(cli(*command), word)
    code, out, _ = cli("check", store)
    assert code == 2 and word in out
    assert digest(store) == before


def test_huge_description_is_refused_or_cut_not_swallowed(store, tmp_path):
    top = "(SELECT id FROM entities ORDER BY degree DESC, id LIMIT 1)"
    bigger = tmp_path / "bigger.db"
    shutil.copy(store, bigger)
    # 8 MB: read, but only its first characters reach the context
    plant(store, f"UPDATE entities SET description = replace(hex(zeroblob(500000)), '0', 'Scrooge ') "
                 f"WHERE id = {top};")
    code, out, err = cli("ask", store, "Who is Scrooge?", "--context-only")
    assert code == 0, err
    assert len(out) < 200_000
    # 72 MB: over the length limit, refused in one line
    plant(bigger, f"UPDATE entities SET description = replace(hex(zeroblob(4500000)), '0', 'Scrooge ') "
                  f"WHERE id = {top};")
    refused(cli("ask", bigger, "Who is Scrooge?"), "MB limit")


def test_deeply_nested_json_in_a_report_answer_is_survived(tmp_path):
    from conftest import ScriptedChat
    from fakellm import prompt_kind

    class Nested(ScriptedChat):
        def complete(self, prompt, **params):
            answer = super().complete(prompt, **params)
            if prompt_kind(prompt) == "community_report":
                answer.text = '{"title": "deep", "findings": ' + "[" * 100_000 + "]" * 100_000 + "}"
            return answer

    with tgr.open(tmp_path / "nested.db", chat=Nested(), embedder="tgr:hash-64") as kb:
        summary = kb.index([str(TEXT)], chunk_size=300, chunk_overlap=40)
        assert summary.reports > 0  # written by the fallback, not lost to a RecursionError
        generators = {r[0] for r in kb.conn.execute("SELECT generator FROM reports")}
        assert "scripted:fake" not in generators


# -- safe output -------------------------------------------------------------------------

def test_escape_sequences_in_store_text_never_reach_the_terminal(store):
    evil = "\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x9b31m"
    conn = sqlite3.connect(store)
    conn.execute("UPDATE entities SET description = ? || description, name = name || ?", (evil, evil))
    conn.execute("UPDATE chunks SET text = ? || text || ?", (evil, evil))
    conn.execute("UPDATE documents SET source = ? || source, title = ? || title", (evil, evil))
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('created_with', ?)", (evil,))
    conn.commit()
    conn.close()
    outputs = []
    for command in (["ask", store, "Who is Scrooge?"], ["ask", store, "Scrooge", "--context-only"],
                    ["ask", store, "Scrooge", "--json"], ["ask", store, "Scrooge", "--mode", "naive"],
                    ["info", store], ["info", store, "--json"], ["stats", store]):
        code, out, err = cli(*command)
        assert code == 0, err
        outputs.append(out + err)
    assert "owned" in "".join(outputs)  # the text is shown ...
    for out in outputs:  # ... without its escape sequences
        assert not set(out) & {"\x1b", "\x07", "\x9b"}, out[:300]


# -- one complete file -------------------------------------------------------------------

READER = """
import sqlean, sys
conn = sqlean.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
print(conn.execute("SELECT count(*) FROM chunks").fetchone()[0], flush=True)
sys.stdin.read()  # hold the snapshot until the test closes stdin
conn.execute("COMMIT")
"""


def test_a_reader_in_another_process_makes_index_say_the_store_is_unfinished(store):
    plant(store, "PRAGMA journal_mode = WAL;")  # as left by a run a reader joined
    reader = subprocess.Popen([sys.executable, "-c", READER, str(store)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert int(reader.stdout.readline()) > 0
        err = refused(tgr_cli("index", store, EN_CORPUS, *SMALL, timeout=60), "tgr check --fix")
        assert "not one complete file" in err
        code, out, _ = cli("check", store)
        assert code == 1 and "unfinished" in out
    finally:
        reader.stdin.close()
        reader.wait(timeout=10)
    code, out, err = cli("check", "--fix", store)
    assert code == 0, out + err
    assert not db.pending_wal(store)
    alone = store.with_name("alone.db")  # the .db alone now holds everything
    shutil.copy(store, alone)
    assert count(alone, "SELECT count(*) FROM documents") == 2


def test_after_kill_9_every_command_opens_the_store_and_the_next_write_finishes_it(store):
    import signal
    import time

    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen([sys.executable, "-m", "tgr.cli", "index", str(store), str(EN_CORPUS), *SMALL],
                           env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wal = store.with_name(store.name + "-wal")
    deadline = time.monotonic() + 30
    while not (wal.exists() and wal.stat().st_size > 0) and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.01)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=10)
    assert wal.exists(), "the run finished before it could be killed"
    for command in (["info", store], ["ask", store, "Who is Scrooge?"], ["stats", store]):
        code, out, err = cli(*command)
        assert code == 0, err
    code, out, _ = cli("check", store)
    assert code == 1 and "unfinished" in out, out
    code, out, err = cli("index", store, EN_CORPUS, *SMALL)
    assert code == 0, err
    assert not db.pending_wal(store)
    code, out, _ = cli("check", store)
    assert code == 0 and out.startswith("ok")


# -- no surprises in cost or state -------------------------------------------------------

def test_an_unreachable_endpoint_leaves_no_store(tmp_path):
    path = tmp_path / "new.db"
    code, _, err = cli("index", path, TEXT, "--base-url", "http://127.0.0.1:9/v1", "--chat-model", "x",
                       "--embed-model", "openai:e", "--timeout", "0.5", "--retries", "0", "-q")
    assert code == 1 and "Traceback" not in err
    assert not path.exists()  # the embedder is asked before any document is stored
    code, _, err = cli("index", path, TEXT, "-q")  # a plain index afterwards is not refused
    assert code == 0, err
    assert count(path, "SELECT value FROM meta WHERE key = 'chat_model'") == "offline-extractive"


def test_two_index_processes_pay_each_prompt_once(tmp_path):
    from conftest import FakeServer

    path = tmp_path / "shared.db"
    command = [sys.executable, "-m", "tgr.cli", "index", str(path), str(TEXT), "--chat-model", "fake-chat",
               "--embed-model", "openai:fake-embed", "--concurrency", "2", "--chunk-size", "300",
               "--chunk-overlap", "40", "-q"]
    with FakeServer(latency=0.1) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TGR_API_KEY": "k", "TGR_BASE_URL": server.url}
        runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(2)]
        results = [(run.wait(timeout=120), run.stderr.read()) for run in runs]
        assert [code for code, _ in results] == [0, 0], results
        assert any("waiting for it" in err for _, err in results), results
        assert server.stats.chat_calls == count(path, "SELECT count(*) FROM llm_cache") > 0
    assert not db.pending_wal(path)


def test_settings_of_the_wrong_type_are_refused(store):
    conn = sqlite3.connect(store)
    conn.execute("UPDATE meta SET value = '\"ten\"' WHERE key = 'setting.max_cluster_size'")
    conn.commit()
    conn.close()
    refused(cli("info", store), "setting.max_cluster_size")
    refused(cli("index", store, TEXT, *SMALL), "setting.max_cluster_size")
    code, out, _ = cli("check", store)
    assert code == 2 and "setting.max_cluster_size" in out


def test_reading_commands_leave_the_file_byte_identical_and_alone(store, tmp_path):
    before = digest(store)
    for command in (["ask", store, "Who is Scrooge?"], ["ask", store, "Scrooge", "--mode", "global"],
                    ["ask", store, "Scrooge", "--mode", "naive", "--json"], ["info", store], ["stats", store],
                    ["export", store, tmp_path / "graph.graphml"], ["check", store]):
        code, _, err = cli(*command)
        assert code == 0, err
    with tgr.open(store) as kb:
        kb.ask("Who is Scrooge?")
    assert digest(store) == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["graph.graphml", "shipped.db"]


def test_an_older_store_with_an_older_view_is_read_and_its_view_renewed(store):
    plant(store, "DROP VIEW report_overview;",
          "CREATE VIEW report_overview AS SELECT c.level, c.id AS community_id FROM communities c;",
          "ALTER TABLE reports DROP COLUMN context_hash; PRAGMA user_version = 1;",
          "DELETE FROM meta WHERE key = 'content_digest';")  # (older tgrs recorded none)
    code, out, err = cli("check", store)
    assert code == 0 and "report_overview" in out and "older schema" in out, out + err
    assert cli("ask", store, "Who is Scrooge?")[0] == 0
    code, _, err = cli("index", store, TEXT, *SMALL)
    assert code == 0, err
    code, out, _ = cli("check", store)
    assert code == 0 and out.startswith("ok"), out


def test_an_older_store_with_an_endless_view_is_stopped_by_the_watchdog(store):
    plant(store, "DROP VIEW cost_by_stage;",
          "CREATE VIEW cost_by_stage AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
          "SELECT i AS run_id, 'x' AS stage, 'chat' AS kind, 'm' AS model, 1 AS calls, 0 AS cache_hits, "
          "0 AS prompt_tokens, 0 AS completion_tokens, 0 AS model_seconds FROM n;",
          "ALTER TABLE reports DROP COLUMN context_hash; PRAGMA user_version = 1;",
          "DELETE FROM meta WHERE key = 'content_digest';")  # (older tgrs recorded none)
    before = digest(store)
    refused(tgr_cli("stats", store, timeout=30, env={"TGR_STATEMENT_SECONDS": "1"}), "took too long", "hostile")
    assert digest(store) == before
