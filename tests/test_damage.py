"""`tgr check` on damaged copies of a shipped store: every copy whose content changed, or that
SQLite finds corrupt, exits 2; an untouched (or merely VACUUMed) copy exits 0; the file is never
written. Whether a copy changed is judged independently of tgr: the stdlib sqlite3 module reads
every table of the copy and of the original, and runs its own integrity_check."""
from __future__ import annotations

import random
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES
from tgr.cli import main

DEMO = FIXTURES / "demo_carol.db"
COPIES = 40


def content(path: Path):
    """Every ordinary table's rows (sorted) and the schema, read by stdlib sqlite3; None when the
    file cannot be read through, or SQLite's own integrity_check finds it corrupt."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = bytes  # damaged text need not be UTF-8
    try:
        if conn.execute("PRAGMA integrity_check").fetchall() != [(b"ok",)]:
            return None
        schema = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
        tables = [name.decode() for kind, name, _, sql in schema
                  if kind == b"table" and not (sql or b"").upper().startswith(b"CREATE VIRTUAL")]
        assert "chunks" in tables or not tables
        rows = {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}
        return schema, rows
    except (sqlite3.DatabaseError, UnicodeDecodeError):  # (an error message quoting damaged bytes)
        return None
    finally:
        conn.close()


def damage(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One seeded kind of damage: bytes flipped, a page zeroed or duplicated, the file cut short."""
    page = int.from_bytes(data[16:18], "big")
    pages = len(data) // page
    kind = rng.choice(["flip", "flip", "zero", "duplicate", "truncate"])
    out = bytearray(data)
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            offset = rng.randrange(len(out))
            out[offset] ^= 1 << rng.randrange(8)
    elif kind == "zero":
        start = rng.randrange(pages) * page
        out[start:start + page] = bytes(page)
    elif kind == "duplicate":
        source, target = rng.sample(range(1, pages), 2)
        out[target * page:(target + 1) * page] = data[source * page:(source + 1) * page]
    else:
        out = out[:rng.randrange(page, len(out))]
    return kind, bytes(out)


def check(path: Path) -> int:
    return CliRunner().invoke(main, ["check", str(path)]).exit_code


@pytest.fixture(scope="module")
def original():
    return content(DEMO)


def test_the_untouched_and_a_vacuumed_copy_exit_0(tmp_path, original):
    copy = tmp_path / "copy.db"
    shutil.copy(DEMO, copy)
    assert check(copy) == 0
    vacuumed = tmp_path / "vacuumed.db"
    conn = sqlite3.connect(copy)
    conn.execute(f"VACUUM INTO '{vacuumed}'")
    conn.close()
    assert vacuumed.read_bytes() != DEMO.read_bytes()  # other pages, the same content
    assert content(vacuumed) == original and check(vacuumed) == 0


def damaged_copies(folder: Path):
    """(n, kind of damage, path, bytes) of COPIES seeded damaged copies of DEMO written in folder."""
    rng = random.Random(38)
    data = DEMO.read_bytes()
    for n in range(COPIES):
        kind, damaged = damage(data, rng)
        path = folder / f"copy{n}.db"
        path.write_bytes(damaged)
        yield n, kind, path, damaged


def test_every_damaged_copy_whose_content_changed_exits_2(tmp_path, original):
    started = time.monotonic()
    changed = 0
    for n, kind, path, damaged in damaged_copies(tmp_path):
        expected = 0 if content(path) == original else 2
        changed += expected == 2
        assert check(path) == expected, f"copy {n} ({kind}): expected exit {expected}"
        assert path.read_bytes() == damaged  # check never writes
    assert changed >= COPIES // 2  # the damage reached content often enough to test something
    assert time.monotonic() - started < 60


def test_asking_a_damaged_copy_answers_or_says_in_one_line_that_it_is_damaged(tmp_path):
    """Where the question meets the damage, nothing is answered: one line naming the store and
    `tgr check`, exit 1; never a traceback, never a write."""
    refused = 0
    for _, _, path, damaged in damaged_copies(tmp_path):
        result = CliRunner().invoke(main, ["ask", str(path), "Who is Jacob Marley?", "--no-stream"])
        assert result.exit_code in (0, 1)
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        if result.exit_code:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and str(path) in lines[0], result.output
            assert "tgr check" in lines[0] or "not a usable SQLite database" in lines[0], lines
            refused += 1
        assert path.read_bytes() == damaged
    assert refused >= COPIES // 4
