"""Honest accounting: what is computed here (the bundled embedder, portable vectors) is never a
model call or billed tokens, in the summary, `tgr stats` or the ledger; portable vectors show in
`tgr info`, the summary and the progress, with counts as they go."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from tgr.cli import main

TEXT = ("Marley was dead, to begin with. Scrooge and Marley were partners for many years. "
        "Bob Cratchit copied letters for Scrooge in a dismal little cell. "
        "Fred, the nephew of Scrooge, invited Scrooge to dinner, and Scrooge refused Fred.\n")


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "marley.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def test_the_bundled_embedder_is_never_billed(tmp_path, text):
    store = tmp_path / "e5.db"
    result = run("index", store, text, "--offline", "--embed-model", "local:multilingual-e5-small",
                 "--chunk-size", "30", "--chunk-overlap", "0", "--json", "-q")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["local_computations"] > 0
    assert summary["model_calls"] == summary["prompt_tokens"] == summary["billed_tokens"] == 0
    assert summary["calls_by_stage"] == {}
    stats = json.loads(run("stats", store, "--json").stdout)
    assert all(row["billed_tokens"] == 0 and row["prompt_tokens"] == 0 for row in stats["by_stage"])
    assert all(r["calls"] == 0 and r["billed_tokens"] == 0 for r in stats["runs"])
    plain = run("index", tmp_path / "again.db", text, "--offline", "--embed-model", "local:multilingual-e5-small",
                "--chunk-size", "30", "--chunk-overlap", "0", "-q")
    assert "model calls    none (computed locally" in plain.stdout and "tokens" not in plain.stdout


def test_portable_vectors_show_in_the_summary_info_and_progress(tmp_path, text):
    store = tmp_path / "portable.db"
    result = run("index", store, text, "--offline", "--portable", "--chunk-size", "30", "--chunk-overlap", "0")
    assert result.exit_code == 0, result.output
    made = int(re.search(r"^portable\s+(\d+) vectors computed locally", result.stdout, re.M).group(1))
    progress = [line for line in result.stderr.splitlines() if line.startswith("portable-")]
    assert progress and all(re.match(r"portable-\w+\s+\d+/\d+ ", line) for line in progress), progress
    info = json.loads(run("info", store, "--json").stdout)
    portable = info["portable_vectors"]
    assert portable["model"] == "local:multilingual-e5-small"
    chunks, entities = (int(portable[k].split("/")[0]) for k in ("chunks", "entities"))
    assert portable["chunks"] == f"{info['chunks']}/{info['chunks']}"
    assert portable["entities"] == f"{info['entities']}/{info['entities']}"
    assert made == chunks + entities
    assert "portable_vectors" in run("info", store).stdout
