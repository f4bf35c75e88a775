"""Quick checks of the fake LLM and its OpenAI-compatible server (fixtures/fakellm.py)."""
import json
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
sys.path.insert(0, os.path.join(HERE, ".."))

import httpx  # noqa: E402

from fakellm import FakeLLM, FakeServer, prompt_kind  # noqa: E402
from tgr import parsing, prompts  # noqa: E402

ENGLISH = (
    "Ishmael signed on to the Pequod, a whaler commanded by Captain Ahab. "
    "Captain Ahab hunts Moby Dick across the Pacific. "
    "Mr. Starbuck doubts Captain Ahab, but Ishmael admires Queequeg. "
    "The crew sails from Nantucket."
)
CHINESE = "孙悟空住在花果山水帘洞。唐僧在长安收孙悟空为徒弟。孙悟空和猪八戒保护唐僧去西天取经。"
AUTH = {"Authorization": "Bearer test-key"}


def extract(text):
    prompt = prompts.EXTRACT.format(entity_types=prompts.DEFAULT_ENTITY_TYPES, text=text)
    assert prompt_kind(prompt) == "extract"
    answer = FakeLLM().answer(prompt)
    return parsing.parse_entities(answer), parsing.parse_relations(answer)


def chat(client, url, prompt):
    return client.post(f"{url}/chat/completions", headers=AUTH,
                       json={"model": "m", "messages": [{"role": "user", "content": prompt}]})


def test_english_extraction_parses():
    entities, relations = extract(ENGLISH)
    names = [e.name for e in entities]
    assert {"Ishmael", "Pequod", "Captain Ahab", "Moby Dick", "Starbuck"} <= set(names)
    assert "The" not in names and "Mr" not in names
    assert next(e for e in entities if e.name == "Captain Ahab").type == "person"
    assert next(e for e in entities if e.name == "Starbuck").type == "person"
    assert relations and all(r.source in names and r.target in names for r in relations)
    assert extract(ENGLISH) == (entities, relations)  # deterministic


def test_chinese_extraction_parses():
    entities, relations = extract(CHINESE)
    names = [e.name for e in entities]
    assert len(entities) >= 3 and "孙悟空" in names
    assert relations and all(r.source in names and r.target in names for r in relations)


def test_triplets_use_given_names_and_glean_says_none():
    llm = FakeLLM()
    answer = llm.answer(prompts.EXTRACT_TRIPLETS.format(
        entities="Captain Ahab\nMoby Dick\nIshmael", text=ENGLISH))
    pairs = {(r.source, r.target) for r in parsing.parse_relations(answer)}
    assert ("Captain Ahab", "Moby Dick") in pairs
    assert parsing.says_none(llm.answer(prompts.GLEAN.format(text=ENGLISH, previous="<none/>")))


def test_report_parses():
    context = ("-----Entities-----\nid,entity,description\n"
               "1,Captain Ahab,\"Ahab, the captain, commands the Pequod.\"\n"
               "2,Pequod,A whaling ship.\n3,Moby Dick,A white whale.\n"
               "-----Relationships-----\nid,source,target,description\n"
               "1,Captain Ahab,Pequod,Ahab commands the Pequod.\n")
    report = parsing.parse_report(FakeLLM().answer(prompts.COMMUNITY_REPORT.format(context=context)))
    assert report is not None
    assert "Captain Ahab" in report["title"]
    assert report["rating"] == 1.5 and len(report["findings"]) == 3


def test_map_points_cite_reports():
    context = "----- Report 7 -----\nAhab\nCaptain Ahab hunts the whale.\n----- Report 8 -----\nFood\nChowder."
    answer = FakeLLM().answer(prompts.MAP_POINTS.format(question="Who hunts the whale?", context=context))
    points = parsing.parse_points(answer)
    assert points and "[Reports: 7]" in points[0][0] and points[0][1] > 0


def test_http_chat_and_embeddings():
    with FakeServer() as srv, httpx.Client(timeout=5) as client:
        prompt = prompts.EXTRACT.format(entity_types=prompts.DEFAULT_ENTITY_TYPES, text=ENGLISH)
        data = chat(client, srv.url, prompt).json()
        assert data["object"] == "chat.completion"
        message = data["choices"][0]["message"]
        assert message["role"] == "assistant" and data["choices"][0]["finish_reason"] == "stop"
        assert parsing.parse_entities(message["content"])
        assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"]

        response = client.post(f"{srv.url}/embeddings", headers=AUTH,
                               json={"model": "e", "input": ["Captain Ahab", "孙悟空"]})
        body = response.json()
        assert body["object"] == "list" and [d["index"] for d in body["data"]] == [0, 1]
        vector = body["data"][0]["embedding"]
        assert len(vector) == 64 and math.isclose(sum(v * v for v in vector), 1.0, rel_tol=1e-6)
        again = client.post(f"{srv.url}/embeddings", headers=AUTH, json={"model": "e", "input": "Captain Ahab"})
        assert again.json()["data"][0]["embedding"] == vector

        assert client.post(f"{srv.url}/embeddings", json={"input": "x"}).status_code == 401
        assert client.post(f"{srv.url}/nowhere", headers=AUTH, json={}).status_code == 404
        stats = srv.stats
        assert (stats.chat_calls, stats.embed_calls, stats.requests) == (1, 2, 5)
        assert stats.calls_by_kind["extract"] == 1 and stats.prompt_chars == len(prompt)


def test_concurrent_requests_overlap():
    with FakeServer(latency=0.2) as srv, httpx.Client(timeout=5) as client:
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda i: chat(client, srv.url, f"hello {i}").status_code, range(8)))
        assert codes == [200] * 8
        assert srv.stats.max_in_flight >= 4
        srv.reset_stats()
        assert srv.stats.chat_calls == 0


def test_fault_on_first_attempt_only():
    with FakeServer(faults=1.0, fault_kinds=("429",)) as srv, httpx.Client(timeout=5) as client:
        first = chat(client, srv.url, "please fail once")
        assert first.status_code == 429 and first.headers["Retry-After"] == "0.05"
        assert first.json()["error"]["type"] == "rate_limit"
        second = chat(client, srv.url, "please fail once")
        assert second.status_code == 200 and second.json()["choices"][0]["message"]["content"] == "OK"
        assert srv.stats.faults_injected == 1


def test_malformed_fault_is_unparseable():
    with FakeServer(faults=1.0, fault_kinds=("malformed",)) as srv, httpx.Client(timeout=5) as client:
        prompt = prompts.COMMUNITY_REPORT.format(context="id,entity\n1,Ahab\n")
        first = chat(client, srv.url, prompt).json()["choices"][0]["message"]["content"]
        second = chat(client, srv.url, prompt).json()["choices"][0]["message"]["content"]
        assert parsing.parse_report(first) is None
        assert parsing.parse_report(second) is not None
        assert json.loads(second)["title"] == "Ahab"


def test_runs_as_a_standalone_script_with_tgrs_stopwords(tmp_path):
    """`python fixtures/fakellm.py` from anywhere, tgr not installed: it finds tgr/text.py's
    stopword list beside it and answers as the in-process fake does."""
    import signal
    import subprocess

    from tgr.text import STOPWORDS
    import fakellm

    assert fakellm.STOPWORDS is STOPWORDS  # one list, not a copy
    script = os.path.join(HERE, "..", "fixtures", "fakellm.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    server = subprocess.Popen([sys.executable, script, "--port", "0"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().split(" serving at ")[1].split()[0]
        prompt = prompts.EXTRACT.format(entity_types=prompts.DEFAULT_ENTITY_TYPES, text=ENGLISH)
        answer = httpx.post(f"{url}/chat/completions", headers=AUTH, timeout=30, json={
            "model": "fake", "messages": [{"role": "user", "content": prompt}]}).json()
        assert answer["choices"][0]["message"]["content"] == FakeLLM().answer(prompt)
    finally:
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=30)
    assert json.loads(out.splitlines()[-1])["chat_calls"] == 1, err
