"""A real small model's answers, recorded from its server (tests/fixtures/real_model, made by
bench/record_real_answers.py from SmolLM2-135M on llama-cpp-python) and replayed at the HTTP
layer (fixtures/replay_llm.py): what tgr builds from each kind of answer."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import tgr
from tgr.parsing import parse_extraction

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))

from replay_llm import ReplayServer, recording, whole  # noqa: E402

CAROL = (ROOT / "fixtures" / "corpus_en" / "carol_stave1_part1.txt").read_text(encoding="utf-8")
MODELS = dict(chat="openai:smollm2", embedder="tgr:hash-384")


def is_extraction(body: dict) -> bool:
    return "Build a knowledge graph" in body["messages"][-1]["content"]


def build(tmp_path, server, text: str = CAROL[:4500], **options) -> tgr.KnowledgeBase:
    source = tmp_path / "carol.txt"
    source.write_text(text, encoding="utf-8")
    kb = tgr.open(tmp_path / "store.db", base_url=server.url, **{**MODELS, **options})
    kb.index([str(source)], warn=lambda message: None)
    return kb


def extractors(kb) -> list[str]:
    return [row[0] for row in kb.conn.execute("SELECT extractor FROM extractions ORDER BY chunk_id")]


def answered_with(name: str, reports: str | None = None):
    """Every extraction request answered with the recording `name`, every other with `reports`
    (default: the recorded report answer)."""
    chosen, other = recording(name), recording(reports or "report_refusal")
    return lambda body: chosen if is_extraction(body) else other


def test_the_recordings_are_what_the_tests_say_they_are():
    loop = whole(recording("extract_tags_loops")["events"])["choices"][0]
    assert loop["finish_reason"] == "length" and "<entity>" not in loop["message"]["content"]
    refused = recording("extract_json_schema_refused")
    assert refused["status"] >= 400 and "json_schema" in refused["body"]
    cut = whole(recording("extract_json_truncated")["events"])["choices"][0]
    assert cut["finish_reason"] == "length"
    held = whole(recording("extract_json_object_schema")["events"])["choices"][0]  # under the grammar, it looped
    entities, relations = parse_extraction(held["message"]["content"])
    assert held["finish_reason"] == "length" and entities[0].name == "Scrooge" and relations
    prose = whole(recording("extract_tags_prose")["events"])["choices"][0]["message"]["content"]
    assert "Ishmael" in prose and "Ishmael" not in CAROL  # the prompt's example, copied


def test_a_looping_answer_is_stopped_not_asked_again_and_its_chunk_extracted_offline(tmp_path):
    with ReplayServer(answered_with("extract_tags_loops")) as server:
        with build(tmp_path, server) as kb:
            asked = [b for b in server.requests if is_extraction(b)]
            info = kb.info()
            assert extractors(kb) == ["fallback: looping answer"]
            assert info["entities"] > 0  # the names of the text, found offline
    assert len(asked) == 1  # an answer that loops is not paid for twice
    assert info["extracted_by"] == "0 of 1 chunks by the model, 1 by the offline fallback (1 looping answer)"
    summary = recording("extract_tags_loops")
    assert asked[0]["max_tokens"] < 4096 and summary["request"]["max_tokens"] < 4096


def test_the_form_a_server_refuses_is_learnt_from_the_refusal_and_recorded(tmp_path):
    refused, answer = recording("extract_json_schema_refused"), recording("extract_json_object_schema")

    def choose(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return refused
        return answer if is_extraction(body) else recording("report_refusal")

    with ReplayServer(choose) as server:
        with build(tmp_path, server) as kb:
            assert kb.meta["chat_output_form"] == "json_object+schema"
            by_model = extractors(kb) == ["openai:smollm2"]
            names = {r[0] for r in kb.conn.execute("SELECT name FROM entities")}
    forms = [(b.get("response_format") or {}).get("type") for b in server.requests if is_extraction(b)]
    assert forms[0] == "json_schema" and forms[-1] == "json_object"
    assert by_model and "Scrooge" in names


@pytest.mark.parametrize("name, reason", [
    ("extract_tags_prose", "looping answer"),  # the example's names copied, then a loop
    ("report_refusal", "no usable entities in the answer"),
])
def test_an_answer_without_entities_the_text_names_is_said_and_extracted_offline(tmp_path, name, reason):
    with ReplayServer(answered_with(name)) as server:
        with build(tmp_path, server) as kb:
            assert extractors(kb) == [f"fallback: {reason}"]
            assert kb.info()["entities"] > 0


def test_a_truncated_answer_keeps_what_it_gave_and_json_with_other_names_is_read(tmp_path):
    for name in ("extract_json_truncated", "extract_json_mode_fields"):
        with ReplayServer(answered_with(name)) as server:
            folder = tmp_path / name
            folder.mkdir()
            with build(folder, server, CAROL[4000:8500]) as kb:
                kept = extractors(kb)
        assert kept[0] in ("openai:smollm2", "fallback: answer cut at max_tokens",
                           "fallback: no usable entities in the answer"), kept


def test_a_one_slot_server_is_asked_one_call_at_a_time_once_it_cuts_an_answer(tmp_path):
    with ReplayServer(answered_with("extract_json_object_schema"), one_slot=True, event_delay=0.005) as server:
        warnings = []
        source = tmp_path / "carol.txt"
        source.write_text(CAROL, encoding="utf-8")
        with tgr.open(tmp_path / "store.db", base_url=server.url, concurrency=4, **MODELS) as kb:
            kb.index([str(source)], warn=warnings.append, chunk_size=300)
            naming = [("Scrooge" in text) for (text,) in kb.conn.execute("SELECT text FROM chunks ORDER BY id")]
            by = extractors(kb)
    assert len(naming) >= 4 and server.streams_cut >= 1
    # every answer cut short to serve another was asked again, alone, and gave the recorded
    # answer (Scrooge, before it loops): the chunks that name him are the model's
    assert [b == "openai:smollm2" for b in by] == naming
    assert any("one request at a time" in w for w in warnings)
