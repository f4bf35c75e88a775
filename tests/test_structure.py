"""The shape of the code: tgr's modules import each other without cycles, and no function
is longer than a reader can hold. Run as a script to print both:

    python tests/test_structure.py          # import cycles, then the longest functions
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

TGR = Path(__file__).resolve().parent.parent / "tgr"
MAX_FUNCTION_LINES = 80


def _imported(tree: ast.AST, module: str) -> set[str]:
    """The tgr modules a module imports, at module level or inside functions."""
    found = set()
    package = "tgr"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("tgr.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and not (node.module or "").startswith(package):
                continue
            base = (node.module or "").split(".")
            if node.level == 0:
                base = base[1:]  # "tgr.x" -> ["x"]
            if base and base[0]:
                found.add(base[0])
            else:  # "from . import a, b"
                found |= {a.name for a in node.names}
    return {name for name in found if (TGR / f"{name}.py").exists() and name != module}


def import_graph() -> dict[str, set[str]]:
    return {path.stem: _imported(ast.parse(path.read_text(encoding="utf-8")), path.stem)
            for path in sorted(TGR.glob("*.py"))}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def function_lengths() -> list[tuple[int, str]]:
    """(lines, 'module.py:Class.function') for every function in tgr/, longest first."""
    lengths = []
    for path in sorted(TGR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = f"{prefix}{child.name}"
                    lengths.append((child.end_lineno - child.lineno + 1, f"{path.name}:{name}"))
                    walk(child, f"{name}.")
                elif isinstance(child, ast.ClassDef):
                    walk(child, f"{prefix}{child.name}.")

        walk(tree, "")
    return sorted(lengths, reverse=True)


def test_the_import_graph_finds_tgr_imports_of_every_form():
    """The check below could pass by finding no edges at all."""
    graph = import_graph()
    assert "db" in graph["store"] or "db" in graph["admin"]           # from .db import ...
    assert "lookup" in graph["store"]                                  # inside a method
    assert {"ledger", "reading"} <= graph["store"]                     # from . import a, b


def test_tgr_modules_import_each_other_without_cycles():
    assert cycles(import_graph()) == []


# What opens a store and runs the stages; the stages and db below them never import these.
RUNNERS = {"__init__", "store", "admin", "model_choice", "storefile", "migrations", "pipeline", "overlap", "fresh",
           "reading", "ledger", "check", "cli", "mcp_server", "serve", "evaluate", "integrations", "shards", "many",
           "store_workers"}


def test_the_stages_never_import_what_runs_them():
    graph = import_graph()
    assert RUNNERS <= graph.keys()
    upward = {module: sorted(deps & RUNNERS) for module, deps in graph.items()
              if module not in RUNNERS and deps & RUNNERS}
    assert upward == {}
    assert "migrations" in graph["storefile"] and "embeddings" in graph["migrations"]  # migrations sit above


# Where "is there a chat model?" may be asked: the modules that choose each role's provider, and
# the gateway, which refuses a chat call without one. Everywhere else asks its provider.
PROVIDER_MODULES = {"providers", "roles", "answerers", "gateway"}
CHAT_MODEL_BRANCH = re.compile(r"chat_model\s+is\s+(not\s+)?None|if\s+[\w.]*chat_model\s*(else|:)")


def chat_model_branches() -> list[tuple[str, int, str]]:
    """(module, line, text) of every test of whether a chat model is set, outside the provider modules."""
    return [(path.stem, n, line.strip()) for path in sorted(TGR.glob("*.py")) if path.stem not in PROVIDER_MODULES
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if CHAT_MODEL_BRANCH.search(line)]


def test_only_the_provider_modules_ask_whether_there_is_a_chat_model():
    assert PROVIDER_MODULES <= import_graph().keys()
    assert chat_model_branches() == []
    assert CHAT_MODEL_BRANCH.search("x = a if gateway.chat_model else b")  # the pattern finds each spelling
    assert CHAT_MODEL_BRANCH.search("if self.chat_model is not None:")


def test_the_offline_writer_is_spelled_once():
    spelled = [path.stem for path in sorted(TGR.glob("*.py")) if '"offline-extractive"' in path.read_text(encoding="utf-8")]
    assert spelled == ["offline"]


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_function_in_tgr_is_longer_than_the_limit():
    too_long = [(n, name) for n, name in function_lengths() if n > MAX_FUNCTION_LINES]
    assert too_long == []


if __name__ == "__main__":
    found = cycles(import_graph())
    print(f"import cycles: {len(found)}", *(" -> ".join(c) for c in found), sep="\n  ")
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    print("longest functions:")
    for n, name in function_lengths()[:limit]:
        print(f"  {n:4d}  {name}")
