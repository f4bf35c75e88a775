"""docs/examples/fastapi_service.py, the service of docs/service.md, run by a real ASGI server
(uvicorn, in a process of its own) over a store whose models are the fake OpenAI-compatible
server at 0.5 s per chat call (fixtures/fakellm.py, a process of its own too): many questions
at once are answered together, a streamed answer arrives in pieces, and retrieval answers.
Nothing of tgr's own is patched."""
from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager

import httpx
import pytest

import tgr
from conftest import EN_CORPUS, ROOT, SMALL
from test_threads import KEY, LATENCY, fake_server, models, questions

pytest.importorskip("fastapi", reason="the service example needs fastapi (in the test extra)")

AT_ONCE = 30


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("service") / "carol.db"
    with fake_server(0.0) as url, tgr.open(path, **models(url)) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
    return path


@contextmanager
def service(store, model_url: str):
    """The example app under uvicorn on a free port: its base URL."""
    env = {**os.environ, "TGR_STORE": str(store), "TGR_BASE_URL": model_url, "TGR_API_KEY": KEY,
           "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "uvicorn", "fastapi_service:app", "--app-dir",
                                str(ROOT / "docs" / "examples"), "--port", "0", "--no-access-log"],
                               stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in process.stderr:  # "Uvicorn running on http://127.0.0.1:PORT (Press CTRL+C to quit)"
            found = re.search(r"running on (http://\S+)", line)
            if found:
                break
        else:
            pytest.fail("uvicorn did not start")
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_the_service_answers_many_questions_at_once_and_streams(store):
    asked = questions(AT_ONCE)
    with fake_server(LATENCY) as slow, service(store, slow) as base:
        async def main():
            async with httpx.AsyncClient(base_url=base, timeout=120) as client:
                started = time.perf_counter()
                for question in asked[:2]:
                    assert (await client.get("/ask", params={"q": question})).status_code == 200
                one_by_one = (time.perf_counter() - started) / 2 * AT_ONCE
                started = time.perf_counter()
                answers = await asyncio.gather(*(client.get("/ask", params={"q": q}) for q in asked))
                together = time.perf_counter() - started
                arrivals, text = [], []
                started = time.perf_counter()
                async with client.stream("GET", "/stream", params={"q": "Who is Scrooge's nephew?"}) as streamed:
                    async for piece in streamed.aiter_text():
                        arrivals.append(time.perf_counter() - started)
                        text.append(piece)
                whole = (await client.get("/ask", params={"q": "Who is Scrooge's nephew?"})).json()
                passages = (await client.get("/retrieve", params={"q": "Marley", "k": 3})).json()
                bad = await client.get("/ask", params={"q": "Marley", "mode": "deep"})
            return one_by_one, together, answers, arrivals, "".join(text), whole, passages, bad

        one_by_one, together, answers, arrivals, text, whole, passages, bad = asyncio.run(main())
    print(f"{AT_ONCE} questions at once: {together:.2f} s; one after another: {one_by_one:.2f} s")
    assert all(a.status_code == 200 and a.json()["answer"] and a.json()["model"] == "openai:fake" for a in answers)
    assert one_by_one / AT_ONCE >= LATENCY and together * 10 <= one_by_one
    assert len(arrivals) > 3 and arrivals[-1] - arrivals[0] > 0.1  # pieces, as the model wrote them
    assert text == whole["answer"]
    assert len(passages) == 3 and all(p["text"] for p in passages)
    assert bad.status_code == 422
