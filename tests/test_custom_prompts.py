"""--entity-types and --prompts: the prompts in force are recorded in the store and used by
later runs, rebuilds and questions unless overridden."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, SMALL, ScriptedChat, ScriptedEmbedder
from fakellm import FakeLLM, FakeServer
from tgr.cli import main
from tgr.errors import StoreError
from tgr.prompts import ANSWER, COMMUNITY_REPORT, EXTRACT, Prompts, load_prompts_file

PART1 = EN_CORPUS / "carol_stave1_part1.txt"
PART2 = EN_CORPUS / "carol_stave1_part2.txt"
EXTRACT_MARKED = "Domain: Victorian ledgers.\n" + EXTRACT
REPORT_MARKED = "Domain: Victorian ledgers (reports).\n" + COMMUNITY_REPORT


class RecordingLLM(FakeLLM):
    """The fake model, keeping every prompt it was asked (over HTTP)."""

    def __init__(self):
        super().__init__()
        self.asked: list[str] = []

    def answer(self, prompt: str) -> str:
        self.asked.append(prompt)
        return super().answer(prompt)


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def meta(path) -> dict:
    with tgr.open(path, create=False, readonly=True) as kb:
        return kb.meta


def test_api_prompts_are_recorded_and_used_by_later_runs_and_rebuilds(db_path):
    first = ScriptedChat()
    custom = Prompts(extract=EXTRACT_MARKED, entity_types="person, ledger, spirit")
    with tgr.open(db_path, chat=first, embedder=ScriptedEmbedder(), prompts=custom) as kb:
        kb.index([PART1], **SMALL)
    extractions = [p for p in first.prompts if p.startswith("Domain: Victorian ledgers.")]
    assert extractions and all("types: person, ledger, spirit" in p for p in extractions)
    recorded = meta(db_path)
    assert json.loads(recorded["prompts"]) == {"extract": EXTRACT_MARKED}
    assert json.loads(recorded["setting.entity_types"]) == "person, ledger, spirit"

    later = ScriptedChat()  # no prompts given: the recorded ones are in force
    with tgr.open(db_path, chat=later, embedder=ScriptedEmbedder()) as kb:
        kb.index([PART2])
    extractions = [p for p in later.prompts if "-Text-" in p and "Output only tags" in p]
    assert extractions and all(p.startswith("Domain: Victorian ledgers.") for p in extractions)
    assert all("types: person, ledger, spirit" in p for p in extractions)

    rebuilt = ScriptedChat()  # a dict works too, and adds to what is recorded
    with tgr.open(db_path, chat=rebuilt, embedder=ScriptedEmbedder(),
                  prompts={"community_report": REPORT_MARKED}) as kb:
        summary = kb.rebuild("reports")
    assert summary.reports and rebuilt.calls == summary.calls_by_stage["report"]
    assert all(p.startswith("Domain: Victorian ledgers (reports).") for p in rebuilt.prompts)
    assert set(json.loads(meta(db_path)["prompts"])) == {"extract", "community_report"}

    again = ScriptedChat()  # the same prompts again: every report comes from the cache
    with tgr.open(db_path, chat=again, embedder=ScriptedEmbedder()) as kb:
        assert kb.rebuild("reports").cache_hits == summary.reports
        assert kb.info()["prompts"] == "community_report, extract (custom)"
    assert again.calls == 0


def test_recorded_answer_prompt_is_used_by_questions(db_path):
    marked = "Answer briefly, as a clerk would.\n" + ANSWER
    with tgr.open(db_path, chat=ScriptedChat(), embedder=ScriptedEmbedder(), prompts={"answer": marked}) as kb:
        kb.index([PART1], **SMALL)
    asker = ScriptedChat()
    with tgr.open(db_path, chat=asker, embedder=ScriptedEmbedder()) as kb:
        kb.ask("Who is Marley?")
    assert asker.prompts and asker.prompts[0].startswith("Answer briefly, as a clerk would.")


def test_cli_entity_types_and_prompts_file_over_http(db_path, tmp_path):
    prompts = tmp_path / "prompts.toml"
    prompts.write_text('extract = """\n' + EXTRACT_MARKED.replace("\\", "\\\\") + '"""\n'
                       'entity_types = "person, spirit"\n', encoding="utf-8")
    llm = RecordingLLM()
    with FakeServer(llm=llm) as server:
        base = ["--base-url", server.url, "--chat-model", "fake-chat", "--embed-model", "tgr:hash-384"]
        result = run("index", db_path, PART1, *base, "--prompts", prompts, "--entity-types", "person,ledger , org",
                     "--chunk-size", "300", "-q")
        assert result.exit_code == 0, result.output
        extractions = [p for p in llm.asked if p.startswith("Domain: Victorian ledgers.")]
        # --entity-types wins over the file's entity_types
        assert extractions and all("types: person, ledger, org" in p for p in extractions)
        llm.asked.clear()
        again = run("index", db_path, PART2, *base, "-q")  # later run: nothing repeated
        assert again.exit_code == 0, again.output
        extractions = [p for p in llm.asked if "Output only tags" in p]
        assert extractions and all(p.startswith("Domain: Victorian ledgers.") for p in extractions)
        assert all("types: person, ledger, org" in p for p in extractions)
    info = json.loads(run("info", db_path, "--json").output)
    assert info["prompts"] == "extract (custom)" and info["settings"]["entity_types"] == "person, ledger, org"


@pytest.mark.parametrize("content, suffix, message", [
    ('{"extract_everything": "x"}', ".json", "unknown prompt 'extract_everything'"),
    ('{"extract": "Find entities in the text."}', ".json", "has no {text}"),
    ('{"answer": "{question} {context} {response_type} {mood}"}', ".json", "has unknown {mood}"),
    ('{"answer": "{question} {context} {response_type} {"}', ".json", "literal braces"),
    ('{"extract": ', ".json", "not valid JSON"),
    ('extract = 3', ".toml", "must be text"),
    ('["extract"]', ".json", "expected a table"),
])
def test_bad_prompt_files_are_refused_in_one_line(db_path, tmp_path, content, suffix, message):
    path = tmp_path / f"prompts{suffix}"
    path.write_text(content, encoding="utf-8")
    result = run("index", db_path, PART1, "--prompts", path, "-q")
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0]
    assert not db_path.exists()


def test_empty_entity_types_are_refused(db_path):
    result = run("index", db_path, PART1, "--entity-types", " , ", "-q")
    assert result.exit_code == 2 and "--entity-types" in result.output


def test_a_custom_extract_may_name_its_types_itself(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"extract": "People and ships only.\n-Text-\n{text}\n-Output-\n"}), encoding="utf-8")
    assert set(load_prompts_file(path)) == {"extract"}


def test_unusable_recorded_prompts_are_a_store_error(db_path):
    with tgr.open(db_path, chat="offline") as kb:
        kb.index([PART1], **SMALL)
        with kb.conn:
            kb.conn.execute("UPDATE meta SET value = ? WHERE key = 'prompts'",
                            (json.dumps({"answer": "no placeholders at all"}),))
    with tgr.open(db_path, chat="offline") as kb:
        with pytest.raises(StoreError, match="prompts recorded in this store"):
            kb.ask("Who is Marley?")
