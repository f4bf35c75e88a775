"""Shared test fixtures: the fixture corpora, a scripted chat model, the fake server.

The scripted model is fixtures/fakellm.FakeLLM behind tgr's ChatModel seam: it answers
tgr's real prompts deterministically, so the full LLM pipeline runs offline. Tests of
the HTTP providers use FakeServer (a loopback OpenAI-compatible server) instead.
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
sys.path.insert(0, str(FIXTURES))

# A suite started as a background job (`pytest &`) inherits SIGINT ignored, and so would the
# `tgr index` processes the Ctrl-C tests interrupt: with a handler here, they start with the
# default disposition (an exec resets a handled signal), as they would from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from fakellm import FakeLLM, FakeServer, fake_embedding  # noqa: E402

from tgr.models.clients import Completion  # noqa: E402
from tgr.text import estimate_tokens  # noqa: E402

EN_CORPUS = FIXTURES / "corpus_en"
ZH_CORPUS = FIXTURES / "corpus_zh"
SMALL = dict(chunk_size=300, chunk_overlap=40)  # small chunks keep the fixture runs quick


class ScriptedChat:
    """A ChatModel answering from FakeLLM; records prompts and concurrency.

    delay: seconds each call takes (to observe overlap); fail: callable(prompt, n) that
    may raise to inject errors on the n-th call of a prompt.
    """

    def __init__(self, name: str = "scripted:fake", delay: float = 0.0, fail=None, llm=None):
        self.name = name
        self.delay = delay
        self.fail = fail
        self.llm = llm or FakeLLM()
        self.prompts: list[str] = []
        self.attempts: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def complete(self, prompt: str, **params) -> Completion:
        with self._lock:
            self.prompts.append(prompt)
            n = self.attempts[prompt] = self.attempts.get(prompt, 0) + 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            if self.fail:
                self.fail(prompt, n)
            text = self.llm.answer(prompt)
        finally:
            with self._lock:
                self.in_flight -= 1
        return Completion(text, estimate_tokens(prompt), estimate_tokens(text), "estimate")

    @property
    def calls(self) -> int:
        return len(self.prompts)


class ScriptedEmbedder:
    """The fake server's 64-dim hashed embeddings, in process."""

    name = "scripted:embed"
    dim = 64

    def __init__(self):
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        return [fake_embedding(t, self.dim) for t in texts]


@pytest.fixture
def scripted_chat():
    return ScriptedChat()


@pytest.fixture
def scripted_embedder():
    return ScriptedEmbedder()


@pytest.fixture
def fake_server():
    with FakeServer() as server:
        yield server


def rows(path, sql, params=()) -> list[tuple]:
    """The rows of one query on a store file, read with its own short-lived connection."""
    import sqlean

    conn = sqlean.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="session")
def hierarchy_store(tmp_path_factory, _hashed_embedder_by_default):
    """An offline store of both fixture corpora with small communities, so that its community
    hierarchy has several levels. Shared by read-only tests: copy it before changing anything."""
    import tgr

    path = tmp_path_factory.mktemp("hierarchy") / "carol.db"
    with tgr.open(path) as kb:
        kb.index([str(EN_CORPUS), str(ZH_CORPUS)], **SMALL, max_cluster_size=4)
    return path


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "store.db"


@pytest.fixture(scope="session", autouse=True)
def _hashed_embedder_by_default():
    """Module-scoped stores are built before the per-test fixture below runs: give them the
    hashed embedder too, for the whole session."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TGR_EMBED_MODEL", "tgr:hash-384")
        yield


@pytest.fixture(autouse=True)
def _no_model_environment(monkeypatch):
    """Tests never see a developer's real keys or endpoints. New offline stores get the hashed
    embedder (the local model costs seconds of CPU per chunk); tests of the local model and of
    the default choice name it or clear TGR_EMBED_MODEL themselves."""
    for name in ("ZHIPUAI_API_KEY", "TGR_BASE_URL", "TGR_API_KEY", "TGR_CHAT_MODEL", "TGR_EMBED_MODEL",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TGR_EMBED_MODEL", "tgr:hash-384")
