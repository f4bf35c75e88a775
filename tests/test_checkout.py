"""The tests run against this source tree, not an installed copy of tgr."""
from pathlib import Path

import tgr

ROOT = Path(__file__).resolve().parent.parent


def test_tgr_is_imported_from_the_checkout():
    assert Path(tgr.__file__).resolve().parent == ROOT / "tgr"

