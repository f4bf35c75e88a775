"""`tgr check` exit codes a shipping script can rely on: 0 only for a complete store, 1 for an
unfinished one (one line each on what `tgr index STORE` will do), 2 for a file that is not a
tgr store or is refused; --json says the same."""
from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS
from tgr.cli import main

ONE_FILE = EN_CORPUS / "carol_stave1_part1.txt"


def check(*args):
    return CliRunner().invoke(main, ["check", *map(str, args)])


@pytest.fixture
def complete(tmp_path):
    path = tmp_path / "done.db"
    with tgr.open(path, chat="offline") as kb:
        kb.index([str(ONE_FILE)], chunk_size=300, chunk_overlap=40)
    return path


def test_a_complete_store_exits_0(complete):
    result = check(complete)
    assert result.exit_code == 0 and result.stdout.startswith("ok"), result.output
    data = json.loads(check(complete, "--json").stdout)
    assert data["status"] == "complete" and data["exit_code"] == 0 and data["problems"] == []


def test_unextracted_chunks_and_missing_vectors_exit_1_with_one_line_each(complete):
    conn = sqlite3.connect(complete)
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    conn.execute("DELETE FROM extractions")  # as a run interrupted before any chunk was extracted
    conn.execute("DELETE FROM meta WHERE key = 'content_digest'")  # (a run removes it when it starts)
    conn.execute("UPDATE chunks SET embed_hash = NULL")
    conn.commit()
    conn.close()
    result = check(complete)
    assert result.exit_code == 1, result.output
    lines = result.stdout.strip().splitlines()
    assert all(line.startswith("unfinished") and f"`tgr index {complete}`" in line for line in lines), lines
    assert any(f"{total} of {total} chunks are not extracted yet" in line for line in lines)
    assert any(f"no vector yet for {total} chunks" in line for line in lines)
    data = json.loads(check(complete, "--json").stdout)
    assert data["status"] == "unfinished" and data["exit_code"] == 1 and len(data["problems"]) == len(lines)


def test_missing_portable_vectors_and_stale_reports_are_unfinished(complete):
    conn = sqlite3.connect(complete)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('portable_embed_model', "
                 "'local:multilingual-e5-small')")  # a --portable run interrupted before its first vector
    conn.execute("UPDATE meta SET value = 'other' WHERE key = 'fresh.cluster'")
    conn.execute("DELETE FROM meta WHERE key = 'content_digest'")  # (a run removes it when it starts)
    conn.commit()
    conn.close()
    result = check(complete)
    assert result.exit_code == 1, result.output
    assert "no portable local:multilingual-e5-small vector yet for" in result.stdout
    assert "community reports are not up to date" in result.stdout


def test_a_file_that_is_not_a_store_exits_2(tmp_path):
    for name, content in (("empty.db", b""), ("notes.db", b"just some text, not SQLite at all\n" * 10)):
        path = tmp_path / name
        path.write_bytes(content)
        result = check(path)
        assert result.exit_code == 2 and "refused" in result.stdout, result.output
        assert json.loads(check(path, "--json").stdout)["status"] == "refused"
        assert path.read_bytes() == content
