"""What tgr does for a weak or small model: loops stopped, output forms learnt, bounded answers,
one-slot servers, names grounded in the chunk. Answers of a real model replayed at the HTTP layer
are in tests/test_real_model_replay.py."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from tgr.build.extract import extraction_budget
from tgr.models.clients import OpenAIChat
from tgr.models.output_forms import JSON_OBJECT, JSON_OBJECT_SCHEMA, JSON_SCHEMA, NONE, next_form, refuses_form
from tgr.models.repetition import RepetitionWatch, before_loop, loop_period
from tgr.parsing import RawEntity, RawRelation, grounded, parse_extraction

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fixtures"))

# what llama-cpp-python 0.3.36's server answered a response_format of type json_schema (HTTP 500)
LLAMA_CPP_PYTHON_REFUSAL = json.dumps({"error": {"message": "1 validation error:\n  {'type': 'literal_error', "
                                                 "'loc': ('body', 'response_format', 'type'), 'msg': \"Input should "
                                                 "be 'text' or 'json_object'\", 'input': 'json_schema'}",
                                      "type": "internal_server_error", "param": None, "code": None}})


def sse(*pieces: str, finish: str | None = "stop") -> bytes:
    events = [{"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    if finish:
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                       "usage": {"prompt_tokens": 50, "completion_tokens": len(pieces)}})
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


# --- loops ------------------------------------------------------------------------------

def test_a_loop_is_found_where_it_starts_repeating_back_to_back():
    lines = "The Ghost said, 'I am not a ghost.'\nScrooge looked at the Ghost.\n"
    text = "You see this toothpick.\n" + lines * 6
    assert loop_period(text) == len(lines)
    assert before_loop(text, len(lines)) == "You see this toothpick.\n" + lines


def test_a_sentence_repeated_between_other_names_is_no_loop():
    sentence = ("Scrooge and Marley and Fred were at the office on Christmas Eve, a cold bleak biting day, "
                "with the fog coming in at every chink and keyhole.")
    relations = "".join(f"<relation><source>Scrooge</source><target>{name}</target><description>{sentence}"
                        "</description><strength>8</strength></relation>\n"
                        for name in ("Marley", "Fred", "Bob", "Tim", "Belle"))
    assert loop_period(relations) == 0


def test_the_watch_says_so_while_the_answer_is_written():
    watch = RepetitionWatch()
    unit = "<entity><name>Scrooge</name><type>person</type></entity>\n"
    for n in range(40):
        if watch.add(unit):
            break
    assert watch.period == len(unit) and n < 10
    assert watch.kept() == unit


def test_a_looping_stream_is_stopped_and_what_came_before_is_kept():
    unit = "Scrooge looked at the Ghost and said, 'You are not a ghost.'\n"
    body = sse("<entity><name>Scrooge</name></entity>\n", *[unit] * 200, finish="length")
    seen = []

    def respond(request):
        seen.append(json.loads(request.content))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    chat = OpenAIChat("m", "http://llm.test/v1", api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(respond)))
    completion = chat.complete("extract", max_tokens=900)
    assert completion.finish_reason == "loop" and completion.cut
    assert completion.text == "<entity><name>Scrooge</name></entity>\n" + unit
    assert seen[0]["stream"] is True and seen[0]["max_tokens"] == 900


# --- output forms -----------------------------------------------------------------------

def test_a_refused_form_is_followed_by_the_next_one():
    assert refuses_form(500, LLAMA_CPP_PYTHON_REFUSAL)
    assert not refuses_form(500, '{"error": "out of memory"}') and not refuses_form(429, LLAMA_CPP_PYTHON_REFUSAL)
    assert [next_form(f) for f in (JSON_SCHEMA, JSON_OBJECT_SCHEMA, JSON_OBJECT, NONE)] == [
        JSON_OBJECT_SCHEMA, JSON_OBJECT, NONE, NONE]


def test_the_client_learns_the_form_from_the_first_refusal():
    sent = []

    def respond(request):
        body = json.loads(request.content)
        sent.append(body.get("response_format"))
        if body.get("response_format", {}).get("type") == "json_schema":
            return httpx.Response(500, content=LLAMA_CPP_PYTHON_REFUSAL.encode())
        return httpx.Response(200, content=sse('{"entities": [], "relations": []}'),
                              headers={"content-type": "text/event-stream"})

    chat = OpenAIChat("m", "http://llm.test/v1", api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(respond)))
    schema = {"name": "g", "schema": {"type": "object"}}
    assert chat.complete("x", schema=schema).text == '{"entities": [], "relations": []}'
    assert chat.output_form == JSON_OBJECT_SCHEMA
    chat.complete("y", schema=schema)
    assert [f["type"] for f in sent] == ["json_schema", "json_object", "json_object"]
    assert sent[1]["schema"] == {"type": "object"}
    chat.complete("z")  # no schema asked for: no response_format
    assert sent[-1] is None


def test_extraction_answers_are_bounded_by_the_chunk():
    small, large = extraction_budget(100), extraction_budget(1200)
    assert small[0] < large[0] <= 4096 and small[1] < large[1]
    assert extraction_budget(100_000) == (4096, 60)


# --- what an answer says about its chunk ------------------------------------------------

def test_json_with_other_field_names_is_read():
    entities, relations = parse_extraction(json.dumps({
        "nodes": [{"entity_name": "Scrooge", "category": "person", "desc": "a miser"}, "Marley"],
        "edges": [{"head": "Scrooge", "relationship": "partner of", "tail": "Marley", "weight": "9"}]}))
    assert [(e.name, e.type) for e in entities] == [("Scrooge", "person"), ("Marley", "concept")]
    assert (relations[0].source, relations[0].predicate, relations[0].target, relations[0].strength) == (
        "Scrooge", "partner of", "Marley", 9.0)


def test_names_the_chunk_does_not_write_are_dropped():
    text = "Old Scrooge sat in his counting-house with Bob Cratchit. 孙悟空拜见了师父。"
    entities = [RawEntity("Captain Ahab", "person", ""), RawEntity("Ebenezer Scrooge", "person", ""),
                RawEntity("Pequod", "object", ""), RawEntity("Cratchit", "person", ""),
                RawEntity("悟空", "person", ""), RawEntity("唐僧", "person", "")]
    relations = [RawRelation("Captain Ahab", "Pequod", "commands", ""),
                 RawRelation("Ebenezer Scrooge", "Cratchit", "employs", "")]
    kept, linked = grounded(entities, relations, text, frozenset({"captain", "old"}))
    assert [e.name for e in kept] == ["Ebenezer Scrooge", "Cratchit", "悟空"]
    assert [(r.source, r.target) for r in linked] == [("Ebenezer Scrooge", "Cratchit")]


def test_calls_refused_at_once_move_the_client_one_form_on():
    import threading

    barrier, lock, forms = threading.Barrier(8), threading.Lock(), []

    def respond(request):
        body = json.loads(request.content)
        kind = body["response_format"]["type"]
        with lock:
            forms.append(kind)
        if kind == "json_schema":
            barrier.wait(timeout=10)  # all eight are refused together
            return httpx.Response(500, content=LLAMA_CPP_PYTHON_REFUSAL.encode())
        return httpx.Response(200, content=sse('{"entities": []}'), headers={"content-type": "text/event-stream"})

    chat = OpenAIChat("m", "http://llm.test/v1", api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(respond)))
    schema = {"name": "g", "schema": {"type": "object"}}
    threads = [threading.Thread(target=chat.complete, args=(f"chunk {n}",), kwargs={"schema": schema}) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert chat.output_form == JSON_OBJECT_SCHEMA
    assert sorted(set(forms)) == ["json_object", "json_schema"] and len(forms) == 16


def test_a_stream_whose_body_ends_mid_answer_is_a_broken_stream_not_an_answer():
    from tgr.errors import StreamBroken

    cut = b'data: {"choices": [{"index": 0, "delta": {"content": "Marley was"}, "finish_reason": null}]}\n\n'

    def respond(request):
        return httpx.Response(200, content=cut, headers={"content-type": "text/event-stream"})

    chat = OpenAIChat("m", "http://llm.test/v1", api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(respond)))
    with pytest.raises(StreamBroken, match="ended before the answer did"):
        chat.complete("Who is Marley?")
    pieces = chat.stream("Who is Marley?")
    assert next(pieces) == "Marley was"
    with pytest.raises(StreamBroken):
        next(pieces)
