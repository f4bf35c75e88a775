"""Asking with a weak model: what SmolLM2-135M really answered, replayed at the HTTP layer.

tests/fixtures/smollm2/ holds the raw response bodies of a llama-cpp-python server running
SmolLM2-135M-Instruct, recorded by bench/record_answers.py from `tgr ask fixtures/demo_carol.db`
(its README says how). fixtures/replayed.ReplayServer (the loopback fake server) sends them back
to tgr's own OpenAI-compatible client, so nothing of tgr is patched. What the model did:

- global: its one map answer is prose, no <point> tag ("The Good Samaritan" until max_tokens for
  the main themes; St. Dunstan and the Holy Grail for the poor). tgr answers with the store's themes (the offline global answer) and says so in
  one line, rather than "I don't know".
- local: an answer that cites nothing, a few sentences near the passages, then the same invented
  quote over and over. tgr answers with the passages' own sentences (the extractive answer),
  cited, and says so in one line.
"""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

import tgr
from conftest import FIXTURES
from replayed import ReplayServer, recordings
from tgr.cli import main
from tgr.query.grounding import GROUNDED, ground

DEMO = FIXTURES / "demo_carol.db"
RECORDED = FIXTURES.parent / "tests" / "fixtures" / "smollm2"
SMOLLM2 = ["--chat-model", "openai:smollm2"]


@pytest.fixture(scope="module")
def recorded():
    return recordings(RECORDED)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "demo_carol.db"
    shutil.copy(DEMO, path)
    return path


@pytest.fixture
def smollm2(recorded):
    with ReplayServer(recorded, piece_delay=0.0) as server:
        yield server


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def offline(store, question, mode) -> dict:
    result = run("ask", store, question, "--mode", mode, "--offline", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def warnings_of(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("warning: ")]


# --- what was recorded -----------------------------------------------------------------

def test_the_recordings_are_the_weak_answers_this_file_is_about(recorded):
    assert set(recorded) >= {"map_points", "answer"}
    themes, poor = recorded["map_points"]
    assert not themes.streamed and themes.completion()["choices"][0]["finish_reason"] == "length"
    assert "<point>" not in themes.text and "Good Samaritan" in themes.text
    assert poor.completion()["choices"][0]["finish_reason"] == "stop"  # it stopped, in prose
    assert "<point>" not in poor.text and "Holy Grail" in poor.text
    marley = next(r for r in recorded["answer"] if "Who is Jacob Marley?" in r.request["messages"][-1]["content"])
    assert marley.streamed and "[Sources" not in marley.text
    assert marley.text.count("I would rather die than live another seven years") > 10  # a loop


# --- global ----------------------------------------------------------------------------

@pytest.mark.parametrize("question, heading", [("What are the main themes?", "The main themes of this store"),
                                                ("What does the story say about the poor?", 'The themes about "poor"')])
def test_global_answers_with_the_themes_when_no_map_answer_is_usable(store, smollm2, question, heading):
    result = run("ask", store, question, "--mode", "global", "--base-url", smollm2.url, *SMOLLM2, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    themes = offline(store, question, "global")
    assert data["answer"] == themes["answer"] and not data["answer"].startswith("I don't know")
    assert data["answer"].startswith(heading) and "\n5. " in data["answer"]
    assert [s["chunk_id"] for s in data["sources"]] == [s["chunk_id"] for s in themes["sources"]]
    (note,) = data["notes"]
    assert note.startswith("openai:smollm2 gave no usable key points for the 8 community reports (1 map answer: "
                           "no scored <point> in it)") and "main themes" in note
    assert warnings_of(result) == [f"warning: {note}"]
    assert smollm2.stats.calls_by_kind == {"map_points": 1}  # no reduce call over nothing


def test_global_fallback_prints_as_the_offline_answer_prints(store, smollm2):
    question = "What are the main themes?"
    plain = run("ask", store, question, "--mode", "global", "--base-url", smollm2.url, *SMOLLM2)
    streamed = run("ask", store, question, "--mode", "global", "--base-url", smollm2.url, *SMOLLM2, "--stream")
    offline_plain = run("ask", store, question, "--mode", "global", "--offline")
    assert plain.exit_code == streamed.exit_code == 0, plain.output + streamed.output
    assert plain.stdout == streamed.stdout == offline_plain.stdout
    assert "\nSources:\n  [1] report 0.0" in plain.stdout and len(warnings_of(plain)) == 1


def test_python_api_hears_the_note_through_warn(store, smollm2):
    heard = []
    with tgr.open(store, chat="openai:smollm2", base_url=smollm2.url) as kb:
        answer = kb.ask("What are the main themes?", mode="global", warn=heard.append)
    assert heard == answer.notes and "no usable key points" in heard[0]
    with tgr.open(store, chat="openai:smollm2", base_url=smollm2.url) as kb:
        with pytest.warns(tgr.TgrWarning, match="no usable key points"):
            kb.ask("What are the main themes?", mode="global")


# --- local -----------------------------------------------------------------------------

def test_an_uncited_looping_local_answer_keeps_its_first_round_cited_or_gives_way(store, smollm2):
    """SmolLM2's recorded answer loops for 2,053 tokens: the loop is stopped (tgr.models.repetition),
    and what it said once is cited where it matches a passage, or gives way to the extractive
    answer when it mostly matches none; either way said in one note."""
    question = "Who is Jacob Marley?"
    result = run("ask", store, question, "--base-url", smollm2.url, *SMOLLM2, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "[Sources: " in data["answer"]
    paragraphs = [p for p in data["answer"].split("\n") if p.strip()]
    assert len(paragraphs) == len(set(paragraphs))  # the loop's rounds are not kept
    (note,) = data["notes"]
    assert note.startswith("openai:smollm2's answer cites no source")
    assert warnings_of(result) == [f"warning: {note}"]
    assert smollm2.stats.calls_by_kind == {"answer": 1}


def test_the_plain_output_cites_inline_under_one_heading(store, smollm2):
    question = "Who is Jacob Marley?"
    plain = run("ask", store, question, "--base-url", smollm2.url, *SMOLLM2)
    assert plain.exit_code == 0, plain.output
    answer, listing = plain.stdout.split("\nSources:\n")
    assert "[1]" in answer and "[Sources" not in answer
    assert listing.startswith("  [1] fixtures/corpus_en/carol_stave1_part")
    assert "\nSources:\n  [1] " in run("ask", store, question, "--offline").stdout  # the same heading


def test_a_streamed_invented_answer_is_followed_by_the_passages(store, smollm2, recorded):
    question = "Who is Jacob Marley?"
    streamed = run("ask", store, question, "--base-url", smollm2.url, *SMOLLM2, "--stream")
    assert streamed.exit_code == 0, streamed.output
    # the model's text as it was written, stopped where it began to loop, then its sources
    model_text, _, listing = streamed.stdout.partition("\nSources:\n")
    assert listing.startswith("  [1] ") and len(warnings_of(streamed)) == 1
    answer = next(r for r in recorded["answer"] if question in r.request["messages"][-1]["content"])
    assert len(model_text.strip()) < len(answer.text) / 2


def test_grounding_reads_the_recorded_answer_sentence_by_sentence(recorded):
    marley = next(r for r in recorded["answer"] if "Who is Jacob Marley?" in r.request["messages"][-1]["content"])
    grounded = ground(marley.text, _sources_table(marley.request))
    assert grounded.invented and grounded.matched < GROUNDED * grounded.judged
    first = grounded.text.split("\n")[0]  # its opening sentences are near the passages: cited
    assert first.count("[Sources: ") >= 2


def test_grounding_cites_matching_sentences_and_leaves_cited_answers_alone():
    passages = [("1", "Marley was dead: to begin with. There is no doubt whatever about that."),
                ("2", "Scrooge and he were partners for I don't know how many years.")]
    grounded = ground("Scrooge and Marley were partners for many years. Marley was dead, no doubt.", passages)
    assert grounded.text == ("Scrooge and Marley were partners for many years. [Sources: 2] "
                             "Marley was dead, no doubt. [Sources: 1]")
    assert not grounded.invented and grounded.matched == grounded.judged == 2
    for kept in ("Marley was a wizard in Paris [Sources: 1].", "I don't know."):
        assert ground(kept, passages).text == kept and not ground(kept, passages).invented
    assert ground("A wizard flew over Paris with seven dragons.", passages).invented


def _sources_table(request: dict) -> list[tuple[str, str]]:
    """The (id, text) rows of the Sources table of a recorded local prompt."""
    table = request["messages"][-1]["content"].split("-----Sources-----\n", 1)[1]
    rows = [line.split("|", 1) for line in table.split("\n")[1:] if "|" in line]
    return [(ref, text) for ref, text in rows if ref.isdigit()]


def test_a_local_answer_that_cites_nothing_gets_the_citations_of_its_sentences(store, smollm2):
    question = "What does Scrooge think of Christmas?"
    result = run("ask", store, question, "--base-url", smollm2.url, *SMOLLM2, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # what SmolLM2 wrote (wrong: his nephew is Fred), cited with the passage that holds most of
    # its words (Scrooge, Jacob, good, friend; not nephew): lexical, as the module says
    assert data["answer"] == "Scrooge's nephew, Jacob Scrooge, was a good friend to Scrooge. [Sources: 4]"
    assert all(word in data["sources"][3]["text"] for word in ("Scrooge", "Jacob", "good", "friend"))
    assert data["notes"] == ["openai:smollm2's answer cites no source: tgr cited the passage its sentence found in "
                             "the sources comes from"]
    plain = run("ask", store, question, "--base-url", smollm2.url, *SMOLLM2)
    streamed = run("ask", store, question, "--base-url", smollm2.url, *SMOLLM2, "--stream")
    assert plain.stdout == streamed.stdout  # a streamed answer gets the citations at its end
    assert plain.stdout.startswith("Scrooge's nephew, Jacob Scrooge, was a good friend to Scrooge. [1]\n\nSources:\n"
                                   f"  [1] {data['sources'][3]['source']} (chunk {data['sources'][3]['ordinal']}, ")
    assert warnings_of(plain) == warnings_of(streamed) == [f"warning: {data['notes'][0]}"]


def test_a_point_that_says_nothing_is_not_a_key_point():
    from tgr.query.global_search import usable_point

    for empty in ("I don't know.", " i do not know ", "the point, citing reports as [Reports: id, id]", "", "不知道。"):
        assert not usable_point(empty), empty
    for said in ("Scrooge and Marley were partners [Reports: 0.0]", "I don't know who Fred is, but Scrooge does."):
        assert usable_point(said), said


def test_tgr_chat_streams_a_warning_on_a_line_of_its_own(store, smollm2):
    result = CliRunner().invoke(main, ["chat", str(store), "--base-url", smollm2.url, *SMOLLM2, "--stream"],
                                input="What does Scrooge think of Christmas?\n")
    assert result.exit_code == 0, result.output
    assert "Jacob Scrooge, was a good friend to Scrooge. [1]\n" in result.stdout
    assert len(warnings_of(result)) == 1 and "Sources:\n" in result.stdout


def test_an_empty_local_answer_gives_way_to_the_passages(store):
    """(Scripted, not recorded: a stream the server ended with no text, as SmolLM2's did when its
    server restarted mid-answer.)"""
    from conftest import ScriptedChat
    from fakellm import FakeLLM, prompt_kind

    class Silent(FakeLLM):
        def answer(self, prompt: str) -> str:
            return "" if prompt_kind(prompt) == "answer" else super().answer(prompt)

    heard = []
    with tgr.open(store, chat=ScriptedChat(llm=Silent())) as kb:
        answer = kb.ask("Who is Jacob Marley?", warn=heard.append)
    assert answer.answer == offline(store, "Who is Jacob Marley?", "local")["answer"]
    assert heard == answer.notes == ["scripted:fake gave an empty answer: answered with the passages' own sentences "
                                     "instead, as tgr answers offline"]


def test_several_stores_answer_with_their_themes_when_no_map_answer_is_usable(store, tmp_path, smollm2):
    other = tmp_path / "other.db"
    shutil.copy(DEMO, other)
    question = "What are the main themes?"
    result = run("ask", store, other, question, "--mode", "global", "--base-url", smollm2.url, *SMOLLM2, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    themes = run("ask", store, other, question, "--mode", "global", "--offline", "--json")
    assert data["answer"] == json.loads(themes.stdout)["answer"]
    assert data["answer"].startswith("The main themes of these stores")
    assert len(data["notes"]) == 1 and "gave no usable key points" in data["notes"][0]
    (warning,) = warnings_of(result)
    assert warning.startswith("warning: ") and "gave no usable key points" in warning, warning
    assert smollm2.stats.calls_by_kind["map_points"] >= 1 and "reduce" not in smollm2.stats.calls_by_kind
    streamed = run("ask", store, other, question, "--mode", "global", "--base-url", smollm2.url, *SMOLLM2, "--stream")
    assert streamed.exit_code == 0 and streamed.stdout == run("ask", store, other, question, "--mode", "global",
                                                              "--offline").stdout


def test_grounding_reads_chinese_by_character_bigrams():
    passages = [("1", "孙悟空是花果山的石猴，拜菩提祖师为师。"), ("2", "唐僧带着徒弟去西天取经。")]
    grounded = ground("孙悟空是花果山的石猴。他后来去了月球开餐馆。", passages)
    assert grounded.text.startswith("孙悟空是花果山的石猴。 [Sources: 1]") and grounded.matched == 1
    assert ground("他后来去了月球开餐馆，还养了三条龙。", passages).invented
