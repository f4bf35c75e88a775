"""The tests run against this source tree, not an installed copy of tgr."""
from pathlib import Path

import tgr

ROOT = Path(__file__).resolve().parent.parent


def test_tgr_is_imported_from_the_checkout():
    assert Path(tgr.__file__).resolve().parent == ROOT / "tgr"


def test_the_readme_layout_names_every_module_and_benchmark():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    files = sorted(ROOT.glob("tgr/*.py")) + sorted(ROOT.glob("bench/*.py"))
    missing = [str(f.relative_to(ROOT)) for f in files if f"`{f.name}`" not in layout]
    assert not missing, f"README's Layout does not list {missing}"
    assert layout.count("- `bench/`") == 1
