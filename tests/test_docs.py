"""The manual says what the code does: docs/cli.md and the package tree are generated from it
(`python docs/generate.py`), every command and option is documented, and every path or
module the README and docs/ name exists."""
from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from tgr.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", ROOT / "bench" / "README.md", *DOCS]


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_the_generated_blocks_match_the_code():
    generate = _generator()
    stale = generate.stale()
    assert not stale, f"{stale} out of date with tgr's --help or package tree: run `{generate.COMMAND}`"


def test_every_command_and_option_is_in_the_cli_reference():
    reference = _text(ROOT / "docs" / "cli.md")
    sections = dict(re.findall(r"^## tgr (\w+)\n(.*?)(?=^## |\Z)", reference, re.M | re.S))
    missing = []
    for name, command in cli.commands.items():
        if name not in sections:
            missing.append(f"tgr {name}")
            continue
        for param in command.params:
            flags = [f for f in param.opts + param.secondary_opts if f.startswith("--")]
            missing += [f"tgr {name} {f}" for f in flags if f not in sections[name]]
    assert not missing, f"undocumented in docs/cli.md: {missing}; run `{_generator().COMMAND}`"


def test_the_readme_command_table_has_every_command():
    readme = _text(ROOT / "README.md")
    rows = set(re.findall(r"^\| `tgr (\w+)", readme, re.M))
    assert rows == set(cli.commands), (f"README.md's command table: missing {sorted(set(cli.commands) - rows)}, "
                                       f"unknown {sorted(rows - set(cli.commands))} (one row per command)")


def test_the_readme_is_a_front_page_and_ci_runs_its_test_command():
    readme = _text(ROOT / "README.md")
    assert len(readme.splitlines()) <= 200
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    test_command = next(line for block in blocks for line in block.splitlines() if "pytest" in line)
    assert test_command in _text(ROOT / ".ci" / "run").splitlines()


# a repository path: a known top folder, then a name with one of these suffixes
_PATH = re.compile(r"(?<![\w./-])((?:tgr|bench|tests|fixtures|docs|\.ci)/[\w./-]*\.(?:py|md|sql|png|html|js|db|gz))\b")
# a module named from inside tgr/, as the architecture page does: `build/pipeline.py`
_SUBPACKAGE_PATH = re.compile(r"(?<![\w./-])((?:store|ingest|offline|models|build|query|export|adapters)/\w+\.py)\b")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_MODULE = re.compile(r"(?<![\w./-])tgr(?:\.[A-Za-z_]\w*)+")


def _defined(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(_text(path)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _module_exists(dotted: str) -> bool:
    """tgr.a.b(.Name(.attr)): the longest prefix is a module or package of the checkout, the
    next part a name it defines, anything after that a word in its source."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if path.is_file():
            rest = parts[cut:]
            if not rest:
                return True
            if rest[0] not in _defined(path) and not (base / f"{rest[0]}.py").is_file():
                return False
            return all(re.search(rf"\b{re.escape(word)}\b", _text(path)) for word in rest[1:])
    return False


def _anchors(page: Path) -> set[str]:
    """GitHub's ids for a page's headings (code blocks left out)."""
    text = re.sub(r"^```.*?^```", "", _text(page), flags=re.M | re.S)
    headings = re.findall(r"^#+ (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _broken(page: Path, link: str) -> bool:
    if re.match(r"[a-z]+:", link):
        return False  # a URL
    target, _, anchor = link.partition("#")
    path = (page.parent / target) if target else page
    if not path.exists():
        return True
    return bool(anchor) and path.suffix == ".md" and anchor not in _anchors(path)


def test_every_path_and_module_the_docs_name_exists():
    missing = []
    for page in PAGES:
        text = _text(page)
        where = page.relative_to(ROOT)
        missing += [f"{where}: link {link}" for link in _LINK.findall(text) if _broken(page, link)]
        missing += [f"{where}: {p}" for p in _PATH.findall(text) if not (ROOT / p).exists()]
        missing += [f"{where}: {p}" for p in _SUBPACKAGE_PATH.findall(text) if not (ROOT / "tgr" / p).exists()]
        missing += [f"{where}: {m}" for m in set(_MODULE.findall(text)) if not _module_exists(m)]
    assert not missing, "the docs name what does not exist: " + "; ".join(sorted(missing))


def test_the_path_checks_see_what_is_missing():
    assert _module_exists("tgr.query.retrieve.Passage") and _module_exists("tgr.open")
    assert not _module_exists("tgr.integrations") and not _module_exists("tgr.query.retrieve.Nowhere")
    assert _PATH.findall("see tgr/boilerplate.py and docs/old.txt") == ["tgr/boilerplate.py"]
    assert _SUBPACKAGE_PATH.findall("`build/pipeline.py`, tgr/build/x.py") == ["build/pipeline.py"]
    docs = ROOT / "docs" / "models.md"
    assert not _broken(docs, "asking.md#many-stores-one-question") and not _broken(docs, "https://x.org/a")
    assert _broken(docs, "asking.md#no-such-heading") and _broken(docs, "../nowhere.md")

