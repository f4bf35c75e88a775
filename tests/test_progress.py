"""Progress for every stage, through the library's callback and on the CLI without a TTY."""
from __future__ import annotations

import re

from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, SMALL, ScriptedChat, ScriptedEmbedder
from tgr.cli import _Lines, main

PLAIN_LINE = r"\S+ +\d+/\d+ \(\d+%\) \d+\.\d s"
STAGES = ["ingest", "extract", "merge", "cluster", "report", "embed-chunks", "embed-entities", "embed-reports"]


def collect():
    seen: list[tuple[str, int, int]] = []
    return seen, lambda stage, done, total: seen.append((stage, done, total))


def check_reports(seen):
    """Every stage ends at done == total, and done never goes back within a stage."""
    last: dict[str, tuple[int, int]] = {}
    for stage, done, total in seen:
        assert 0 <= done <= total
        if stage in last and last[stage][1] == total:
            assert done >= last[stage][0], (stage, done, last[stage])
        last[stage] = (done, total)
    assert all(done == total for done, total in last.values()), last
    return last


def test_every_stage_reports_progress(db_path):
    seen, progress = collect()
    with tgr.open(db_path, chat=ScriptedChat(), embedder=ScriptedEmbedder()) as kb:
        summary = kb.index([EN_CORPUS], progress=progress, disambiguate=True, summary_tokens=40, **SMALL)
        last = check_reports(seen)
        order = list(dict.fromkeys(stage for stage, _, _ in seen))
        assert [s for s in order if s in STAGES] == STAGES
        # the LLM steps inside merge report too, as their own stages
        assert {"disambiguate", "summarize"} <= set(order)
        assert last["merge"][1] > summary.entities  # merge counts mentions and relations
        assert last["summarize"][1] == summary.calls_by_stage["summarize"]

        seen.clear()
        kb.rebuild("communities", progress=progress)
        stages = set(check_reports(seen))
        assert {"cluster", "report"} <= stages


def test_cli_without_a_tty_prints_plain_progress_lines(db_path):
    result = CliRunner().invoke(main, ["index", str(db_path), str(EN_CORPUS), "--chunk-size", "300"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines and all(re.fullmatch(PLAIN_LINE, line) for line in lines), lines
    finished = {line.split()[0] for line in lines if "(100%)" in line}
    assert set(STAGES) <= finished
    assert "\r" not in result.stderr and "\x1b" not in result.stderr  # no bar redraws
    quiet = CliRunner().invoke(main, ["index", str(db_path), str(EN_CORPUS), "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_plain_lines_come_every_few_seconds(capsys):
    now = [0.0]
    lines = _Lines(interval=5.0, clock=lambda: now[0])
    for t, done in [(0, 0), (1, 10), (4.9, 20), (5.5, 30), (6, 40), (11, 50), (12, 60)]:
        now[0] = t
        lines("extract", done, 100)
    lines("merge", 0, 0)  # an empty stage prints nothing and does not end the current one
    now[0] = 13
    lines("report", 0, 4)  # a new stage: the last state of the previous one is shown first
    lines.close()
    out = capsys.readouterr().err.splitlines()
    assert [line.split()[:2] for line in out] == [
        ["extract", "0/100"], ["extract", "30/100"], ["extract", "50/100"], ["extract", "60/100"],
        ["report", "0/4"]]
    assert out[1].endswith("(30%) 5.5 s · about 13 s left")  # 70 left at 30 per 5.5 s


def test_plain_lines_say_tokens_per_second_and_time_left_of_a_slow_model(capsys):
    from tgr.models.gateway import Usage

    now, usage = [0.0], Usage()
    lines = _Lines(interval=5.0, clock=lambda: now[0])
    lines.watch_usage(lambda: usage)
    lines("extract", 0, 10)
    now[0], usage.completion_tokens = 120.0, 1800
    lines("extract", 2, 10)
    out = capsys.readouterr().err.splitlines()
    assert out[-1] == "extract           2/10 (20%) 120.0 s · 15.0 tokens/s · about 8 min left"


def test_delete_and_rebuild_report_progress_as_plain_lines_too(db_path):
    """Every command that reports progress draws it the same way: without a TTY, no bare stage
    names (what click's bars print there), only the plain lines."""
    built = CliRunner().invoke(main, ["index", str(db_path), str(EN_CORPUS), "--chunk-size", "300", "-q"])
    assert built.exit_code == 0, built.output
    for command in (["rebuild", str(db_path), "communities"],
                    ["delete", str(db_path), str(EN_CORPUS / "carol_stave1_part2.txt")]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0, result.output
        lines = result.stderr.splitlines()
        assert lines and all(re.fullmatch(PLAIN_LINE, line) for line in lines), (command, lines)
        assert "cluster" in {line.split()[0] for line in lines if "(100%)" in line}
