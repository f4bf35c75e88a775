"""Boilerplate is dropped only where it is boilerplate: a licence header at the start of a
file, a footer at its end; a Gutenberg marker in the middle of a file (an omnibus, an
anthology, a scraped dump) splits nothing and drops nothing. What was dropped is said."""
from __future__ import annotations

import json

from click.testing import CliRunner

from tgr.ingest.boilerplate import strip_boilerplate
from tgr.cli import main

PROSE = ("Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my "
         "purse, and nothing particular to interest me on shore, I thought I would sail about a little and "
         "see the watery part of the world.\n\n")
HEADER = ("The Project Gutenberg eBook of A Christmas Carol\n\nThis ebook is for the use of anyone anywhere "
          "in the United States and most other parts of the world at no cost.\n\nTitle: A Christmas Carol\n\n"
          "*** START OF THE PROJECT GUTENBERG EBOOK A CHRISTMAS CAROL ***\n\n")
CAROL = "Marley was dead, to begin with. There is no doubt whatever about that.\n\n" * 40
FOOTER = ("*** END OF THE PROJECT GUTENBERG EBOOK A CHRISTMAS CAROL ***\n\n"
          + "Updated editions will replace the previous one. Section 1. General Terms of Use.\n\n" * 30)


def test_a_marker_in_the_middle_of_a_file_drops_nothing_before_it():
    omnibus = PROSE * 400 + HEADER + CAROL + FOOTER  # Moby-Dick, then the Gutenberg Carol
    cleaned = strip_boilerplate(omnibus)
    assert cleaned.text.count("Call me Ishmael") == 400
    assert "START OF THE PROJECT GUTENBERG EBOOK" in cleaned.text  # kept where it stands
    assert cleaned.text.count("Marley was dead") == 40
    assert "General Terms of Use" not in cleaned.text  # the footer at the end is the file's own
    assert cleaned.text == (PROSE * 400 + HEADER + CAROL).rstrip("\n") + "\n"  # all but the footer, exactly


def test_a_header_at_the_start_and_a_footer_at_the_end_are_dropped():
    cleaned = strip_boilerplate(HEADER + CAROL + FOOTER)
    assert cleaned.text.startswith("Marley was dead") and cleaned.title == "A Christmas Carol"
    assert "Gutenberg" not in cleaned.text and cleaned.text.count("Marley was dead") == 40


def test_what_is_dropped_is_said_on_stderr_in_the_summary_and_in_info(tmp_path):
    book = tmp_path / "carol.txt"
    book.write_text(HEADER + CAROL + FOOTER, encoding="utf-8")
    store = tmp_path / "s.db"
    result = CliRunner().invoke(main, ["index", str(store), str(book), "--offline", "-q"])
    assert result.exit_code == 0, result.output
    dropped = len(HEADER + CAROL + FOOTER) - len(strip_boilerplate(HEADER + CAROL + FOOTER).text)
    warning = [line for line in result.stderr.splitlines() if "boilerplate" in line]
    assert len(warning) == 1 and str(book) in warning[0] and f"{dropped:,}" in warning[0]
    assert f"boilerplate    {dropped:,} characters dropped from {book}" in result.stdout
    info = json.loads(CliRunner().invoke(main, ["info", str(store), "--json"]).stdout)
    assert info["boilerplate_dropped"] == {str(book): dropped}

    kept = tmp_path / "kept.db"
    result = CliRunner().invoke(main, ["index", str(kept), str(book), "--offline", "--keep-boilerplate", "--json",
                                       "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["boilerplate"] == {} and "boilerplate" not in result.stderr
    info = json.loads(CliRunner().invoke(main, ["info", str(kept), "--json"]).stdout)
    assert info["boilerplate_dropped"] == {}
