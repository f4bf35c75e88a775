"""Regenerate the parts of the manual that are read from the code, so they cannot drift:

    python docs/generate.py            # rewrite the generated blocks in place
    python docs/generate.py --check    # exit 1 (and say which) if a block is out of date

- docs/cli.md: every `tgr` command's --help, as click prints it (edit the help strings in
  tgr/cli.py, never the block);
- docs/architecture.md: the package tree, one line per subpackage with its modules.

A generated block sits between `<!-- generated: NAME ... -->` and `<!-- end generated: NAME -->`;
everything around it is written by hand. tests/test_docs.py fails when a block is stale.
"""
from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's tgr, never an installed copy

COMMAND = "python docs/generate.py"
HELP_WIDTH = 80  # fixed, so the output does not depend on the terminal
TREE_WIDTH = 100

# One line per subpackage (their __init__.py files stay empty, so the words live here).
SUBPACKAGES = {
    "store": "The one SQLite file: driver and sqlite-vec, schema and migrations, the defensive "
             "open of an untrusted file, size limits, the writer lock",
    "ingest": "Reading documents (files, directories, stdin; one reader per format), boilerplate, "
              "chunking, and the one code path that stores and deletes documents and chunks",
    "offline": "The no-model providers: name finders (English, Chinese), entity types, community "
               "profiles, the offline global answer, PageRank",
    "models": "Chat and embedding providers by name, the gateway every call goes through, streamed "
              "answers, the local embedder, the Batch APIs, which models a store is built and asked with",
    "build": "The pipeline and its stages in order (extract, resolve, merge, cluster, report, "
             "embed), their scheduling, batch jobs, the ledger, `tgr check` and `tgr merge`",
    "query": "The query modes over one ranked retrieval core, the local walk, answerers, lookups, "
             "conversations and the chat session, the per-connection cache, `tgr eval`",
    "export": "GraphML, JSON and the self-contained HTML graph page with its layout",
    "adapters": "tgr seen from other tools: the MCP server, LangChain and LlamaIndex retrievers, Datasette, "
                "the terminal of `tgr chat`",
}


def cli_reference() -> str:
    """Markdown for `tgr --help` and every command's --help, commands in alphabetical order."""
    import click

    from tgr.cli import main

    def help_text(command, parent=None, name="tgr"):
        settings = {**command.context_settings, "terminal_width": HELP_WIDTH, "max_content_width": HELP_WIDTH}
        ctx = click.Context(command, info_name=name, parent=parent, **settings)
        return ctx, command.get_help(ctx).rstrip()

    root, text = help_text(main)
    parts = ["## tgr --help", "", "```", text, "```"]
    for name in sorted(main.commands):
        _, text = help_text(main.commands[name], root, name)
        parts += ["", f"## tgr {name}", "", "```", text, "```"]
    return "\n".join(parts)


def _first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    match = re.match(r"(.+?\.)(\s|$)", paragraph)
    return (match.group(1) if match else paragraph).rstrip(".")


def package_tree() -> str:
    """The tgr package: each top-level module with its docstring's first sentence, then each
    subpackage with its line from SUBPACKAGES and its modules."""
    tgr = ROOT / "tgr"
    modules = sorted(tgr.glob("*.py"), key=lambda p: (not p.name.startswith("__"), p.name))
    packages = sorted(p.parent for p in tgr.glob("*/__init__.py"))
    missing = [p.name for p in packages if p.name not in SUBPACKAGES]
    if missing:
        raise SystemExit(f"docs/generate.py: add a line for {missing} to SUBPACKAGES")
    width = max(len(p.name) for p in modules) + 2
    lines = ["tgr/"]

    def entry(branch: str, rail: str, name: str, *paragraphs: str) -> None:
        first = True
        for paragraph in paragraphs:
            for line in textwrap.wrap(paragraph, TREE_WIDTH - width - 4):
                lines.append(f"{branch} {name:<{width}}{line}" if first else f"{rail}   {'':<{width}}{line}")
                first = False

    for path in modules:
        entry("├──", "│", path.name, _first_sentence(path))
    for i, package in enumerate(packages):
        last = i == len(packages) - 1
        names = sorted(p.stem for p in package.glob("*.py") if p.name != "__init__.py")
        entry("└──" if last else "├──", " " if last else "│", package.name + "/",
              SUBPACKAGES[package.name], "modules: " + ", ".join(names))
    return "```\n" + "\n".join(lines) + "\n```"


BLOCKS = {  # block name -> (file, what fills it)
    "cli": ("docs/cli.md", cli_reference),
    "tree": ("docs/architecture.md", package_tree),
}


def _pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- generated: {name}\b[^\n]*-->)(.*?)(<!-- end generated: {name} -->)", re.S)


def regenerate(text: str, name: str, content: str) -> str:
    """text with block `name` replaced by content; a file without the block is an error."""
    pattern = _pattern(name)
    if not pattern.search(text):
        raise SystemExit(f"docs/generate.py: no '<!-- generated: {name} -->' block to fill")
    return pattern.sub(lambda m: f"{m.group(1)}\n{content}\n{m.group(3)}", text, count=1)


def stale() -> list[str]:
    """The files whose generated blocks differ from what the code says now."""
    out = []
    for name, (relative, make) in BLOCKS.items():
        text = (ROOT / relative).read_text(encoding="utf-8")
        if regenerate(text, name, make()) != text:
            out.append(relative)
    return out


def main(argv: list[str]) -> int:
    if "--check" in argv:
        files = stale()
        for relative in files:
            print(f"{relative} is out of date: run `{COMMAND}`", file=sys.stderr)
        return 1 if files else 0
    for name, (relative, make) in BLOCKS.items():
        path = ROOT / relative
        text = path.read_text(encoding="utf-8")
        new = regenerate(text, name, make())
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"updated {relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
