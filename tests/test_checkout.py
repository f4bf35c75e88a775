"""The tests run against this source tree, not an installed copy of tgr."""
from pathlib import Path

import tgr

ROOT = Path(__file__).resolve().parent.parent


def test_tgr_is_imported_from_the_checkout():
    assert Path(tgr.__file__).resolve().parent == ROOT / "tgr"


def test_bench_readme_names_every_benchmark():
    bench = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted(ROOT.glob("bench/*.py")) if p.name not in bench]
    assert not missing, f"bench/README.md does not list {missing}"
