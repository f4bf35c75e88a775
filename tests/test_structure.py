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
MAX_CLASS_LINES = 300
MAX_TOP_LEVEL_MODULES = 13  # version.py: a leaf the lower layers read the version from

# The subpackages from the bottom up (with the top-level modules that sit between them): a module
# imports from its own layer or below. The facade, the session, the CLI and the several-store
# front sit above everything. No import goes the other way (issue 38 turned the last ones down:
# the version from tgr/version.py, name_key from tgr/text.py, JSON bounds from tgr/parsing.py, the
# embed rows from tgr/store/vector_rows.py, tgr merge's store opener passed in by tgr.merge_stores),
# and the query layer never imports the build layer (nor the other way).
LAYERS = [
    {"errors", "text", "prompts", "version", "parsing"},
    {"store"},
    {"ingest"},
    {"settings", "offline"},
    {"models"},
    {"build"},
    {"query"},
    {"export"},
    {"adapters", "session", "knowledge_base", "multi_store", "multi_store_workers", "cli", "__init__", "__main__"},
]
SIBLINGS = [("query", "build")]  # layers that never import each other


def module_name(path: Path) -> str:
    """'store.db' for tgr/store/db.py, 'cli' for tgr/cli.py, 'store' for tgr/store/__init__.py."""
    parts = list(path.relative_to(TGR).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(TGR.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The tgr module a dotted name (relative to tgr) refers to, or None."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imported(tree: ast.AST, module: str) -> set[str]:
    """The tgr modules a module imports, at module level or inside functions."""
    found = set()
    package = module.rpartition(".")[0] if not MODULES[module].name == "__init__.py" else module
    if module == "__init__":
        package = ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name[4:] for a in node.names if a.name.startswith("tgr.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if not (node.module or "").startswith("tgr"):
                    continue
                base = (node.module or "")[4:]
            else:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:  # "from .pkg import mod" names a module; "from .mod import f" a name
                candidate = f"{base}.{alias.name}" if base else alias.name
                found.add(candidate if candidate in MODULES else base or "__init__")  # "from .. import x"
    resolved = {_resolve(name) for name in found if name}
    return {name for name in resolved if name and name != module}


def import_graph() -> dict[str, set[str]]:
    return {name: _imported(ast.parse(path.read_text(encoding="utf-8")), name) for name, path in MODULES.items()}


def layer(module: str) -> int:
    head = module.split(".")[0]
    return next(i for i, group in enumerate(LAYERS) if head in group)


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) for each import from a lower layer into a higher one."""
    return {(module, dep) for module, deps in graph.items() for dep in deps if layer(dep) > layer(module)}


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


def _definitions():
    """(kind, lines, 'store/db.py:Class.function') for every function and class in tgr/."""
    for path in sorted(TGR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(TGR).as_posix()
        stack = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    kind = "class" if isinstance(child, ast.ClassDef) else "function"
                    yield kind, child.end_lineno - child.lineno + 1, f"{where}:{name}"
                    stack.append((child, f"{name}."))


def function_lengths() -> list[tuple[int, str]]:
    """(lines, 'store/db.py:Class.function') for every function in tgr/, longest first."""
    return sorted(((n, name) for kind, n, name in _definitions() if kind == "function"), reverse=True)


def class_lengths() -> list[tuple[int, str]]:
    """(lines, 'query/retrieve.py:Retriever') for every class in tgr/, longest first."""
    return sorted(((n, name) for kind, n, name in _definitions() if kind == "class"), reverse=True)


def test_the_import_graph_finds_tgr_imports_of_every_form():
    """The checks below could pass by finding no edges at all."""
    graph = import_graph()
    assert "store.db" in graph["session"]                              # from .store.db import ...
    assert "query.lookup" in graph["knowledge_base"]                   # inside a method
    assert {"build.ledger", "query.read_api"} <= graph["knowledge_base"]  # from .pkg import a, b
    assert "store.db" in graph["build.embed"]                          # from ..store.db import ...
    assert "__init__" in graph["cli"]                                  # from . import merge_stores
    assert _imported(ast.parse("from .. import __version__"), "store.db") == {"__init__"}  # the root
    assert _imported(ast.parse("from ..build.resolve import name_key"), "query.lookup") == {"build.resolve"}


def test_tgr_modules_import_each_other_without_cycles():
    assert cycles(import_graph()) == []


def test_every_module_belongs_to_a_layer_and_every_import_points_down():
    graph = import_graph()
    assert all(layer(module) >= 0 for module in graph)
    assert upward_imports(graph) == set()
    for low, high in SIBLINGS:
        across = {(m, d) for m, deps in graph.items() for d in deps
                  if {m.split(".")[0], d.split(".")[0]} == {low, high}}
        assert across == set(), f"{low} and {high} import each other: {sorted(across)}"


def test_the_arrows_issue_38_turned_down_stay_down():
    """Each of them, as a reader names it: a lower module importing a higher one."""
    graph = import_graph()
    assert "build.embed" not in graph["store.migrations"]
    assert not {"__init__"} & (graph["store.db"] | graph["export.writers"] | graph["build.ledger"])
    assert not any(d.startswith("build") for d in graph["query.lookup"])
    assert "session" not in graph["build.merge_stores"]
    assert not any(d.startswith("store") for d in graph["parsing"] | graph["settings"])


def test_the_layer_check_sees_an_upward_import():
    assert upward_imports({"store.db": {"query.retrieve"}, "query.retrieve": {"store.db"}}) == {
        ("store.db", "query.retrieve")}


def test_the_top_level_holds_few_modules_and_subpackages_start_empty():
    top = [path.name for path in TGR.glob("*.py")]
    assert len(top) <= MAX_TOP_LEVEL_MODULES, sorted(top)
    inits = [path for path in TGR.glob("*/__init__.py")]
    assert len(inits) >= 8
    # an __init__ that imported its modules would load them all on a cold `tgr ask`
    assert [p for p in inits if ast.parse(p.read_text(encoding="utf-8")).body
            and not all(isinstance(n, ast.Expr) for n in ast.parse(p.read_text(encoding="utf-8")).body)] == []


# What opens a store and runs the stages; the stages and db below them never import these.
RUNNERS = {"__init__", "__main__", "knowledge_base", "session", "models.selection", "store.opening", "store.migrations",
           "build.pipeline", "build.idle_work", "build.new_store", "query.read_api", "build.ledger", "build.check",
           "cli", "adapters.mcp_server", "adapters.datasette", "query.evaluate", "adapters.retrievers",
           "build.merge_stores", "multi_store", "multi_store_workers"}


def test_the_stages_never_import_what_runs_them():
    graph = import_graph()
    assert RUNNERS <= graph.keys()
    upward = {module: sorted(deps & RUNNERS) for module, deps in graph.items()
              if module not in RUNNERS and deps & RUNNERS}
    assert upward == {}
    assert "store.migrations" in graph["store.opening"] and "store.vector_rows" in graph["store.migrations"]


# Where "is there a chat model?" may be asked: the modules that choose each role's provider, and
# the gateway, which refuses a chat call without one. Everywhere else asks its provider.
PROVIDER_MODULES = {"models.registry", "build.role_providers", "query.answerers", "models.gateway"}
CHAT_MODEL_BRANCH = re.compile(r"chat_model\s+is\s+(not\s+)?None|if\s+[\w.]*chat_model\s*(else|:)")


def chat_model_branches() -> list[tuple[str, int, str]]:
    """(module, line, text) of every test of whether a chat model is set, outside the provider modules."""
    return [(name, n, line.strip()) for name, path in MODULES.items() if name not in PROVIDER_MODULES
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if CHAT_MODEL_BRANCH.search(line)]


def test_only_the_provider_modules_ask_whether_there_is_a_chat_model():
    assert PROVIDER_MODULES <= import_graph().keys()
    assert chat_model_branches() == []
    assert CHAT_MODEL_BRANCH.search("x = a if gateway.chat_model else b")  # the pattern finds each spelling
    assert CHAT_MODEL_BRANCH.search("if self.chat_model is not None:")


def test_the_offline_writer_is_spelled_once():
    spelled = [name for name, path in MODULES.items() if '"offline-extractive"' in path.read_text(encoding="utf-8")]
    assert spelled == ["offline.providers"]


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_function_in_tgr_is_longer_than_the_limit():
    too_long = [(n, name) for n, name in function_lengths() if n > MAX_FUNCTION_LINES]
    assert too_long == []


def test_no_class_in_tgr_is_longer_than_the_limit():
    assert class_lengths()  # the walk finds classes at all
    too_long = [(n, name) for n, name in class_lengths() if n > MAX_CLASS_LINES]
    assert too_long == []


if __name__ == "__main__":
    graph = import_graph()
    found = cycles(graph)
    print(f"import cycles: {len(found)}", *(" -> ".join(c) for c in found), sep="\n  ")
    print("upward imports:", *(f"{a} -> {b}" for a, b in sorted(upward_imports(graph))), sep="\n  ")
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    print("longest functions:")
    for n, name in function_lengths()[:limit]:
        print(f"  {n:4d}  {name}")
    print("longest classes:")
    for n, name in class_lengths()[:limit]:
        print(f"  {n:4d}  {name}")
