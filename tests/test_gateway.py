"""The gateway: concurrency, cache, retries, validation, rate cap, ledger, and resume.

Everything goes through tgr's real pipeline with the scripted chat model (in process) or
the loopback fake server (over HTTP), on one small fixture file with small chunks.
"""
from __future__ import annotations

import threading
import time

import pytest

import tgr
from conftest import EN_CORPUS, SMALL, FakeLLM, FakeServer, ScriptedChat, ScriptedEmbedder
from fakellm import prompt_kind
from tgr.store.opening import connect
from tgr.errors import ModelError, TransientModelError
from tgr.models.gateway import ChatJob, Gateway, cache_key
from tgr.models.clients import OpenAIChat, OpenAIEmbedder
from tgr.text import estimate_tokens

ONE_FILE = str(EN_CORPUS / "carol_stave1_part1.txt")
CHAT_STAGES = ("extract", "summarize", "disambiguate", "report")
# Tables holding the store's content; the ledger (model_calls), cache (llm_cache), runs,
# meta and the vector / full-text tables are left out.
CONTENT_TABLES = ("documents", "chunks", "extractions", "extracted_entities", "extracted_relations",
                  "entities", "entity_mentions", "relationships", "relationship_mentions",
                  "communities", "community_members", "reports")


def dump(path) -> dict[str, list[tuple]]:
    """Every content table as a sorted list of rows, timestamps left out."""
    conn = connect(path, create=False)
    try:
        content = {}
        for table in CONTENT_TABLES:
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")
                       if not row[1].endswith("_at")]
            rows = conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            content[table] = sorted((tuple(r) for r in rows), key=repr)
        return content
    finally:
        conn.close()


def query(path, sql, args=()):
    conn = connect(path, create=False)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def index(path, chat, embedder=None, **options):
    with tgr.open(path, chat=chat, embedder=embedder or ScriptedEmbedder(), **options) as kb:
        return kb.index([ONE_FILE], **SMALL)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """An uninterrupted, fault-free run: (store path, the chat model that built it)."""
    path = tmp_path_factory.mktemp("clean") / "clean.db"
    chat = ScriptedChat()
    summary = index(path, chat)
    assert summary.entities and summary.relationships and summary.reports
    return path, chat


# --- concurrency ---------------------------------------------------------------------------

def test_concurrent_calls_overlap(db_path):
    chat = ScriptedChat(delay=0.05)
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder(), concurrency=8) as kb:
        summary = kb.index([ONE_FILE], **SMALL)
        assert chat.max_in_flight >= 4
        assert kb.gateway().max_in_flight >= 4
        assert summary.max_in_flight == kb.gateway().max_in_flight
        assert kb.gateway().max_in_flight <= 8


def test_concurrency_one_is_sequential(db_path, clean_run):
    chat = ScriptedChat(delay=0.01)
    summary = index(db_path, chat, concurrency=1)
    assert chat.max_in_flight == 1
    assert summary.max_in_flight == 1
    assert dump(db_path) == dump(clean_run[0])  # the order of answers changes nothing


def test_concurrency_over_http(db_path):
    with FakeServer(latency=0.05) as server:
        chat = OpenAIChat("fake", server.url, api_key="k")
        embedder = OpenAIEmbedder("fake-embed", server.url, api_key="k")
        with tgr.open(db_path, chat=chat, embedder=embedder, concurrency=8) as kb:
            summary = kb.index([ONE_FILE], **SMALL)
            info = kb.info()
        stats = server.stats
    assert stats.max_in_flight >= 4
    assert stats.chat_calls == sum(v for k, v in summary.calls_by_stage.items() if k in CHAT_STAGES)
    assert stats.calls_by_kind["extract"] == summary.chunks
    assert info["embed_model"] == "openai:fake-embed" and info["embed_dim"] == 64
    assert info["entities"] > 0 and info["relationships"] > 0 and info["reports"] > 0
    assert info["levels"] and sum(level["communities"] for level in info["levels"].values()) > 0
    members = query(db_path, "SELECT count(*) FROM community_members")[0][0]
    titles = query(db_path, "SELECT title FROM reports WHERE generator = 'openai:fake'")
    assert members > 0 and titles and all(t[0] for t in titles)


# --- faults over HTTP -----------------------------------------------------------------------

def http_index(path, server, files, backoff=0.02):
    chat = OpenAIChat("fake", server.url, api_key="k", timeout=0.3)
    embedder = OpenAIEmbedder("fake-embed", server.url, api_key="k", timeout=5)
    with tgr.open(path, chat=chat, embedder=embedder, concurrency=8) as kb:
        kb.gateway().backoff = backoff  # KnowledgeBase has no backoff option: keep retries quick
        return kb.index(files, **SMALL)


def test_faults_over_http_give_the_clean_result(tmp_path):
    # both fixture files: enough prompts that every fault kind (429, 500, timeout,
    # malformed) is drawn at a 30% fault rate
    files = [str(EN_CORPUS)]
    clean_path, faulty_path = tmp_path / "clean.db", tmp_path / "faulty.db"
    with FakeServer() as server:
        http_index(clean_path, server, files)
        clean_calls = server.stats.chat_calls
    with FakeServer(faults=0.3, timeout_sleep=1.0) as server:
        started = time.perf_counter()
        summary = http_index(faulty_path, server, files)
        elapsed = time.perf_counter() - started
        stats = server.stats
        prompts = [row[0] for row in query(faulty_path, "SELECT prompt FROM llm_cache")]
        kinds = {server.fault_for(p) for p in prompts} - {None}
    assert stats.faults_injected >= 5
    assert kinds == {"429", "500", "timeout", "malformed"}
    assert stats.chat_calls > clean_calls  # the faulted prompts were asked again
    assert elapsed < 10
    retried = query(faulty_path, "SELECT count(*) FROM model_calls WHERE kind = 'chat' AND attempts > 1")
    assert retried[0][0] >= stats.faults_injected - 1
    faulty, clean = dump(faulty_path), dump(clean_path)
    assert faulty["entities"] and faulty["communities"] and faulty["reports"]
    for table in CONTENT_TABLES:
        assert faulty[table] == clean[table], table
    assert summary.reports == len(clean["reports"])


# --- interrupted runs resume ----------------------------------------------------------------

class Boom(Exception):
    """A failure that is neither transient nor a ModelError (a bug, say)."""


class FailAtDistinct:
    """fail() hook raising `error` on the n-th distinct prompt's first attempt."""

    def __init__(self, n: int, error: type[BaseException]):
        self.n, self.error = n, error
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, prompt: str, attempt: int) -> None:
        with self.lock:
            if prompt not in self.seen:
                self.seen.append(prompt)
            position = self.seen.index(prompt) + 1
        if position == self.n and attempt == 1:
            raise self.error("stop here")


@pytest.mark.parametrize("at,error,status,concurrency", [
    (10, KeyboardInterrupt, "interrupted", 1),   # during extraction
    (10, Boom, "failed", 1),
    (19, KeyboardInterrupt, "interrupted", 1),   # during merge (the summarize call)
    (24, KeyboardInterrupt, "interrupted", 1),   # during the reports
    (10, KeyboardInterrupt, "interrupted", 4),   # with calls in flight when it stops
])
def test_interrupted_index_resumes(db_path, clean_run, at, error, status, concurrency):
    clean_path, clean_chat = clean_run
    total = clean_chat.calls
    assert total > at
    first = ScriptedChat(delay=0.005 if concurrency > 1 else 0, fail=FailAtDistinct(at, error))
    with pytest.raises(error):
        index(db_path, first, concurrency=concurrency)

    runs = query(db_path, "SELECT id, status FROM runs ORDER BY id")
    assert runs == [(1, status)]
    cached = {row[0] for row in query(db_path, "SELECT prompt FROM llm_cache")}
    extracted = query(db_path, "SELECT count(*) FROM extractions")[0][0]
    assert extracted > 0
    assert 0 < len(cached) < total
    answered = set(first.prompts) - {first.fail.seen[at - 1]}
    if error is not KeyboardInterrupt or concurrency == 1:
        # every answer that came back is kept, also those that arrived after the failure
        assert cached == answered
    if concurrency == 1:
        assert len(cached) >= at - 1
    cached_extractions = [p for p in cached if prompt_kind(p) == "extract"]
    assert extracted <= len(cached_extractions)  # each saved extraction has its cached answer

    second = ScriptedChat()
    summary = index(db_path, second)
    assert second.calls == total - len(cached)
    assert not cached & set(second.prompts)  # no paid-for answer was asked for again
    assert set(second.prompts) | cached == set(clean_chat.prompts)
    assert sum(summary.calls_by_stage.get(s, 0) for s in CHAT_STAGES) == second.calls
    assert dump(db_path) == dump(clean_path)
    runs = query(db_path, "SELECT status FROM runs ORDER BY id")
    assert [r[0] for r in runs] == [status, "done"]


def test_rerun_makes_no_model_calls(db_path):
    chat = ScriptedChat()
    first = index(db_path, chat)
    calls = chat.calls
    assert calls > 0 and first.model_calls >= calls
    before = dump(db_path)
    again = index(db_path, chat)
    assert chat.calls == calls
    assert again.model_calls == 0
    assert all(again.calls_by_stage.get(stage, 0) == 0 for stage in CHAT_STAGES)
    assert dump(db_path) == before
    # a store whose reports are rebuilt answers every report prompt from its cache
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder()) as kb:
        rebuilt = kb.rebuild("reports")
    reports = first.calls_by_stage["report"]
    assert chat.calls == calls
    assert rebuilt.calls_by_stage.get("report", 0) == 0
    assert rebuilt.cache_hits == reports
    assert dump(db_path) == before


# --- the ledger -----------------------------------------------------------------------------

def test_ledger_matches_the_calls_made(db_path):
    chat = ScriptedChat()
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder()) as kb:
        summary = kb.index([ONE_FILE], **SMALL)
        stats = kb.stats()
    rows = query(db_path, "SELECT stage, attempts, prompt_tokens, completion_tokens, usage_source, "
                          "run_id FROM model_calls WHERE kind = 'chat' AND cache_hit = 0")
    assert len(rows) == len(set(chat.prompts))
    assert sum(r[1] for r in rows) == chat.calls
    assert {r[4] for r in rows} == {"estimate"}  # ScriptedChat reports estimated usage
    assert {r[5] for r in rows} == {1}
    llm = FakeLLM()
    assert sum(r[2] for r in rows) == sum(estimate_tokens(p) for p in chat.prompts)
    assert sum(r[3] for r in rows) == sum(estimate_tokens(llm.answer(p)) for p in chat.prompts)

    all_rows = query(db_path, "SELECT stage, prompt_tokens, completion_tokens FROM model_calls "
                              "WHERE cache_hit = 0")
    assert summary.model_calls == len(all_rows)
    assert summary.prompt_tokens == sum(r[1] for r in all_rows)
    assert summary.completion_tokens == sum(r[2] for r in all_rows)
    for stage in CHAT_STAGES:
        assert summary.calls_by_stage.get(stage, 0) == sum(1 for r in rows if r[0] == stage)

    by_stage = stats["by_stage"]
    assert sum(s["calls"] for s in by_stage) == len(all_rows)
    assert sum(s["prompt_tokens"] for s in by_stage) == summary.prompt_tokens
    assert sum(s["completion_tokens"] for s in by_stage) == summary.completion_tokens
    chat_stages = [s for s in by_stage if s["kind"] == "chat"]
    assert sum(s["calls"] for s in chat_stages) == len(rows)
    assert stats["runs"][0]["calls"] == summary.model_calls
    assert stats["runs"][0]["status"] == "done"


def test_ledger_counts_attempts_and_cache_hits(db_path):
    conn = connect(db_path)
    chat = ScriptedChat(fail=lambda p, n: _transient(n <= 2))
    gateway = Gateway(conn, chat, ScriptedEmbedder(), backoff=0.001, run_id=None)
    try:
        assert gateway.chat("query", "first question") == FakeLLM().answer("first question")
        assert gateway.chat("query", "first question") == FakeLLM().answer("first question")
        gateway.chat("query", "first question", temperature=0.5)  # other params: another call
    finally:
        gateway.close()
    rows = conn.execute("SELECT cache_hit, attempts, usage_source FROM model_calls ORDER BY id").fetchall()
    conn.close()
    # the third call is the same prompt's 4th attempt: the fail hook lets it through
    assert rows == [(0, 3, "estimate"), (1, 0, "cache"), (0, 1, "estimate")]
    assert chat.calls == 4
    usage = gateway.stage_usage("query")
    assert (usage.calls, usage.cache_hits) == (2, 1)


def _transient(fail: bool, retry_after: float | None = None) -> None:
    if fail:
        raise TransientModelError("HTTP 503", retry_after=retry_after)


# --- retries --------------------------------------------------------------------------------

def test_retry_after_is_honoured(db_path, clean_run, monkeypatch):
    chat = ScriptedChat(fail=lambda p, n: _transient(n == 1, retry_after=0.01))
    waits: list[float] = []
    sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda seconds: (waits.append(seconds), sleep(seconds))[1])
    index(db_path, chat)
    attempts = query(db_path, "SELECT DISTINCT attempts FROM model_calls "
                              "WHERE kind = 'chat' AND cache_hit = 0")
    assert attempts == [(2,)]
    assert chat.calls == 2 * len(set(chat.prompts))
    # each retry waited the 0.01 s the server asked for, not the default backoff (0.5-1.5 s, doubled)
    assert len(waits) >= chat.calls // 2 and max(waits) == 0.01
    assert dump(db_path) == dump(clean_run[0])


def test_backoff_grows_and_gives_up(db_path):
    conn = connect(db_path)
    try:
        times: list[float] = []

        def fail(prompt, n):
            times.append(time.perf_counter())
            _transient(n <= 2)

        chat = ScriptedChat(fail=fail)
        gateway = Gateway(conn, chat, ScriptedEmbedder(), backoff=0.05, max_retries=3)
        assert gateway.chat("s", "hello")
        gaps = [b - a for a, b in zip(times, times[1:])]
        assert len(gaps) == 2
        assert gaps[0] >= 0.05 * 0.5 and gaps[1] >= 0.1 * 0.5  # 0.05 then 0.1, jittered x0.5-1.5
        assert gaps[0] < 0.3 and gaps[1] < 0.4  # not the default 1 s backoff
        gateway.close()

        always = ScriptedChat(fail=lambda p, n: _transient(True))
        gateway = Gateway(conn, always, ScriptedEmbedder(), backoff=0.001, max_retries=3)
        with pytest.raises(ModelError, match="gave up after 4 attempts"):
            gateway.chat("s", "never answered")
        assert always.attempts["never answered"] == 4
        assert conn.execute("SELECT count(*) FROM llm_cache WHERE prompt = 'never answered'"
                            ).fetchone()[0] == 0
        gateway.close()
    finally:
        conn.close()


def test_model_error_aborts_the_index(db_path):
    target: list[str] = []

    def fail(prompt, n):
        if prompt_kind(prompt) == "extract" and (not target or target[0] == prompt):
            target[:1] = [prompt]
            raise ModelError("HTTP 401: invalid api key")

    chat = ScriptedChat(fail=fail)
    with pytest.raises(ModelError, match="invalid api key"):
        index(db_path, chat, concurrency=1)
    assert chat.attempts[target[0]] == 1  # not retried
    assert query(db_path, "SELECT status FROM runs") == [("failed",)]
    assert query(db_path, "SELECT count(*) FROM reports")[0][0] == 0
    # the answers that did come back are kept (paid for), the failed one is not
    cached = {row[0] for row in query(db_path, "SELECT prompt FROM llm_cache")}
    assert cached == set(chat.prompts) - {target[0]}


# --- validation -----------------------------------------------------------------------------

class GarbageFirst:
    """A FakeLLM that first answers each prompt of the given kinds with garbage."""

    def __init__(self, kinds=("extract",), garbage="Sorry, I cannot help with that."):
        self.llm = FakeLLM()
        self.kinds, self.garbage = kinds, garbage
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def answer(self, prompt: str) -> str:
        with self.lock:
            first = prompt not in self.seen
            self.seen.add(prompt)
        if first and prompt_kind(prompt) in self.kinds:
            return self.garbage
        return self.llm.answer(prompt)


def test_invalid_answers_are_asked_again(db_path, clean_run):
    chat = ScriptedChat(llm=GarbageFirst(("extract", "community_report")))
    index(db_path, chat)
    rows = query(db_path, "SELECT stage, attempts FROM model_calls WHERE kind = 'chat' AND cache_hit = 0")
    assert {attempts for stage, attempts in rows if stage in ("extract", "report")} == {2}
    cached = query(db_path, "SELECT response FROM llm_cache")
    assert cached and all("Sorry" not in r[0] for r in cached)
    assert query(db_path, "SELECT count(*) FROM reports WHERE generator = 'fallback'")[0][0] == 0
    assert dump(db_path) == dump(clean_run[0])


def test_garbage_summary_is_asked_again(db_path, clean_run):
    # A summarize answer that is a refusal ("Sorry, I cannot help with that.") is as
    # malformed as a broken extraction: it must not become the entity's description.
    chat = ScriptedChat(llm=GarbageFirst(("summarize",)))
    index(db_path, chat)
    summarize = [p for p in chat.prompts if prompt_kind(p) == "summarize"]
    assert summarize  # the fixture has an entity whose descriptions need summarising
    descriptions = [r[0] for r in query(db_path, "SELECT description FROM entities")]
    assert not [d for d in descriptions if "Sorry, I cannot help" in d]
    assert dump(db_path) == dump(clean_run[0])


def test_validation_retry_uses_the_original_cache_key(db_path):
    conn = connect(db_path)
    try:
        chat = ScriptedChat(llm=GarbageFirst(kinds=("unknown",), garbage="garbage"))
        gateway = Gateway(conn, chat, ScriptedEmbedder())
        job = ChatJob("tag", "plain question", validate=lambda text: text != "garbage")
        [(done, text)] = list(gateway.chat_many("query", [job]))
        assert done is job and text == FakeLLM().answer("plain question")
        assert chat.calls == 2
        key = cache_key(chat.name, "plain question", {})
        row = conn.execute("SELECT response, params FROM llm_cache WHERE key = ?", (key,)).fetchone()
        assert row == (text, "{}")
        assert list(gateway.chat_many("query", [job])) == [(job, text)]
        assert chat.calls == 2
        gateway.close()
    finally:
        conn.close()


# --- rate cap and embeddings ----------------------------------------------------------------

def test_rpm_spaces_call_starts(db_path):
    conn = connect(db_path)
    try:
        starts: list[float] = []
        chat = ScriptedChat(fail=lambda p, n: starts.append(time.monotonic()))
        gateway = Gateway(conn, chat, ScriptedEmbedder(), concurrency=4, rpm=600)
        began = time.monotonic()
        jobs = [ChatJob(i, f"question {i}") for i in range(4)]
        answers = list(gateway.chat_many("query", jobs))
        elapsed = time.monotonic() - began
        gateway.close()
    finally:
        conn.close()
    assert len(answers) == 4 and chat.max_in_flight >= 1
    # 600 rpm = one start every 0.1 s: the i-th call cannot start before began + i * 0.1
    starts.sort()
    offsets = [start - began for start in starts]
    assert all(offset >= i * 0.1 - 0.005 for i, offset in enumerate(offsets)), offsets
    assert elapsed >= 0.25


def test_the_pool_starts_a_thread_per_task_up_to_the_concurrency(db_path):
    conn = connect(db_path)
    try:
        chat = ScriptedChat(delay=0.05)
        gateway = Gateway(conn, chat, ScriptedEmbedder(), concurrency=6)
        assert len(list(gateway.chat_many("query", [ChatJob(i, f"few {i}") for i in range(2)]))) == 2
        assert len(gateway._pool().threads) == 2  # two questions: two threads, not six
        assert len(list(gateway.chat_many("query", [ChatJob(i, f"many {i}") for i in range(20)]))) == 20
        assert len(gateway._pool().threads) == 6 and chat.max_in_flight == 6
        gateway.close()
    finally:
        conn.close()


def test_concurrent_embedding_keeps_order(db_path):
    conn = connect(db_path)
    try:
        embedder = ScriptedEmbedder()
        gateway = Gateway(conn, None, embedder, concurrency=4)
        texts = [f"text {i}" for i in range(10)]
        vectors = gateway.embed("embed-test", texts, batch_size=3)
        gateway.close()
        assert vectors == ScriptedEmbedder().embed(texts)
        assert embedder.calls == 4
        rows = conn.execute("SELECT count(*), sum(attempts) FROM model_calls "
                            "WHERE kind = 'embed' AND stage = 'embed-test'").fetchone()
        assert rows == (4, 4)
        with pytest.raises(ModelError, match="no chat model|needs a chat model"):
            gateway.chat("query", "hello")
    finally:
        conn.close()


def test_identical_prompts_in_one_batch_are_asked_once(db_path):
    chat = ScriptedChat(delay=0.01)
    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder(), concurrency=4) as kb:
        gateway = kb.gateway()
        jobs = [ChatJob(n, "Build a knowledge graph from the text below. Same text.") for n in range(3)]
        jobs.append(ChatJob(3, "another prompt"))
        answers = dict((job.tag, text) for job, text in gateway.chat_many("extract", jobs))
    assert sorted(answers) == [0, 1, 2, 3]
    assert answers[0] == answers[1] == answers[2]
    assert chat.calls == 2


def test_idle_work_runs_while_answers_are_awaited(db_path):
    chat = ScriptedChat(delay=0.05)
    steps = []

    def idle():
        steps.append(time.perf_counter())
        return len(steps) < 5  # five steps of work, then nothing left

    with tgr.open(db_path, chat=chat, embedder=ScriptedEmbedder(), concurrency=2) as kb:
        jobs = [ChatJob(n, f"prompt {n}") for n in range(4)]
        answers = [job.tag for job, _ in kb.gateway().chat_many("extract", jobs, idle)]
    assert sorted(answers) == [0, 1, 2, 3]
    assert len(steps) == 5  # ran, and stopped asking once it said it was done


def test_index_embeds_everything_with_the_overlap(db_path):
    with tgr.open(db_path, chat=ScriptedChat(delay=0.01), embedder=ScriptedEmbedder(), concurrency=4) as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], chunk_size=300, chunk_overlap=40)
        for table, source in (("vec_chunks", "chunks"), ("vec_entities", "entities"), ("vec_reports", "reports")):
            assert kb.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == \
                kb.conn.execute(f"SELECT count(*) FROM {source}").fetchone()[0] > 0
