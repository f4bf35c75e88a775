"""The one choke point for model calls: cache, retries, concurrency, cost ledger.

Every chat call goes through Gateway.chat_many: answers are looked up in / stored to the
store's llm_cache table (key = hash of model + prompt + params), transient errors are
retried with exponential backoff + jitter (honouring Retry-After), calls run on worker
threads up to `concurrency` at once (optionally capped in requests per minute), and each
call or cache hit is written to the model_calls ledger. With a batch runner attached
(tgr/build/batch.py), a wave's misses go to the provider's Batch API instead, and land in the
same cache and ledger. SQLite is only touched from the
calling thread: workers do network I/O and nothing else.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..store.db import Connection, rollback_open, transaction
from ..errors import ModelError, StreamBroken, TransientModelError
from .clients import ChatModel, Completion, Embedder, is_local
from .turns import TURNS
from ..text import CJK_RUN, content_hash, estimate_tokens


@dataclass
class ChatJob:
    """One prompt to answer. `tag` is the caller's handle; `validate` rejects bad answers."""

    tag: Any
    prompt: str
    params: dict = field(default_factory=dict)
    validate: Callable[[str], bool] | None = None
    finish_reason: str | None = None  # set with the answer: why it ended (None: cached, or not said)


@dataclass
class _Outcome:
    job: ChatJob
    key: str
    completion: Completion | None = None
    attempts: int = 0
    latency: float = 0.0
    error: BaseException | None = None
    valid: bool = True
    price: float = 1.0  # of a synchronous call (a Batch API answer: 0.5)


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0
    local: int = 0  # local computations (e.g. hashed embeddings): not model calls
    batched: int = 0  # calls answered through a Batch API
    billed_tokens: float = 0.0  # prompt + completion tokens, each call at its price
    cut: int = 0  # answers that did not end by themselves (max_tokens, or stopped looping)
    retried: int = 0  # attempts beyond each call's first (errors, rejected answers)

    def add(self, other: "Usage") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def count(self, kind: str, hit: bool, prompt_tokens: int, completion_tokens: int, prompt_chars: int,
              price: float, attempts: int = 1, cut: bool = False) -> None:
        """Count one request: a cache hit, a local computation (never a call), or a paid call."""
        if hit:
            self.cache_hits += 1
        elif kind == "local":
            self.local += 1
        else:
            self.calls += 1
            self.batched += int(price < 1.0)
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.billed_tokens += (prompt_tokens + completion_tokens) * price
            self.prompt_chars += prompt_chars
            self.retried += max(0, attempts - 1)
            self.cut += int(cut)


MAX_RETRY_AFTER = 60.0  # seconds; a server asking for longer gets retried after this
# After Ctrl-C, answers of calls already in flight are awaited this long and cached, so that
# the resumed run does not pay for them again (a second Ctrl-C stops waiting).
INTERRUPT_GRACE_S = 15.0


def cache_key(model: str, prompt: str, params: dict) -> str:
    import hashlib  # here: an offline question never needs it, and OpenSSL is slow to load

    blob = json.dumps([model, prompt, params], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def retry_delay(gateway: "Gateway", exc: TransientModelError, attempt: int) -> float:
    """Seconds the gateway waits before retrying after this failed attempt (Retry-After, else
    backoff with jitter); ModelError once its retries are spent."""
    if attempt > gateway.max_retries:
        raise ModelError(f"{exc} (gave up after {attempt} attempts; "
                         "re-run to resume: finished calls are cached)") from None
    delay = None if exc.retry_after is None else min(exc.retry_after, MAX_RETRY_AFTER)
    if delay is None:
        delay = min(gateway.max_backoff, gateway.backoff * 2 ** (attempt - 1))
        delay *= 0.5 + gateway._jitter.random()
    return delay


class _RateLimiter:
    """Spaces call starts at least 60/rpm seconds apart across all workers."""

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self.lock = threading.Lock()
        self.next_start = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_start)
            self.next_start = start + self.interval
        if start > now:
            time.sleep(start - now)


class _Slots:
    """How many chat calls may be in flight at once; narrowed to one when the endpoint turns
    out to serve one request at a time (a streamed answer broken while another was asked:
    llama-cpp-python's server drops the running stream to start the next)."""

    def __init__(self, size: int):
        self.size, self.busy = size, 0
        self._ready = threading.Condition()

    def __enter__(self) -> "_Slots":
        with self._ready:
            while self.busy >= self.size:
                self._ready.wait()
            self.busy += 1
        return self

    def __exit__(self, *exc) -> None:
        with self._ready:
            self.busy -= 1
            self._ready.notify_all()

    def narrow(self) -> bool:
        """One call at a time from now on; True the first time."""
        with self._ready:
            first, self.size = self.size > 1, 1
            return first


def prompt_was_cut(prompt: str, prompt_tokens: int) -> bool:
    """Whether a server reported far fewer prompt tokens than the prompt can hold: it cut the
    prompt to its context window (Ollama's default num_ctx does so in silence). Tokenizers
    differ, so the bound is loose: about 5 characters a token, 2 CJK characters a token."""
    cjk = sum(map(len, CJK_RUN.findall(prompt)))
    least = (len(prompt) - cjk) / 5 + cjk / 2
    return least >= 600 and prompt_tokens < 0.75 * least


class _UntilDone:
    """Calls an idle step until it first returns False, then never again."""

    def __init__(self, step: Callable[[], bool]):
        self.step, self.done = step, False

    def __call__(self) -> bool:
        if not self.done:
            self.done = not self.step()
        return not self.done


class _Workers:
    """A small pool of daemon threads (exit never waits on them; see INTERRUPT_GRACE_S),
    started as tasks come, up to size: a run that asks a few questions starts a few."""

    def __init__(self, size: int):
        self.inbox: queue.PriorityQueue = queue.PriorityQueue()  # (0 urgent / 1, order, task)
        self.outbox: queue.Queue = queue.Queue()
        self.batches = 0
        self.size = size
        self._order = 0
        self.threads: list[threading.Thread] = []

    def _loop(self) -> None:
        while True:
            task = self.inbox.get()[2]
            if task is None:
                return
            batch, fn, arg = task
            self.outbox.put((batch, fn(arg)))

    def new_batch(self) -> int:
        self.batches += 1
        return self.batches

    def submit(self, batch: int, fn, arg, urgent: bool = False) -> None:
        """Queue a task; an urgent one goes before every task not started yet."""
        if len(self.threads) < self.size:  # one more thread per task until the pool is full
            thread = threading.Thread(target=self._loop, daemon=True)
            thread.start()  # waiting on the inbox before the task is in it, as a pool started ahead
            self.threads.append(thread)
        self._order += 1
        # in the submitter's context: an async caller's model calls go out on its loop (loop_transport)
        task = (batch, functools.partial(contextvars.copy_context().run, fn), arg)
        self.inbox.put((0 if urgent else 1, self._order, task))

    def next_result(self, batch: int, idle: Callable[[], bool] | None = None):
        """The next result of this batch; results of abandoned batches are dropped.

        While none is ready, idle() runs (on this thread) until it returns False.
        """
        while True:  # a timed get keeps the main thread responsive to Ctrl-C
            try:
                if idle is not None:
                    owner, result = self.outbox.get_nowait()
                else:
                    with TURNS.given_up():  # an async question's turn, while it waits (turns.py)
                        owner, result = self.outbox.get(timeout=0.2)
            except queue.Empty:
                if idle is not None and not idle():
                    idle = None
                continue
            if owner == batch:
                return result

    def results(self, batch: int, count: int, deadline: float) -> Iterator:
        """Up to count more results of this batch, as they arrive before the deadline."""
        while count > 0:
            try:
                with TURNS.given_up():
                    owner, result = self.outbox.get(timeout=max(0.0, min(0.2, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return
                continue
            if owner == batch:
                count -= 1
                yield result

    def drain_pending(self) -> int:
        """Drop the tasks not yet started; returns how many."""
        dropped = 0
        while True:
            try:
                self.inbox.get_nowait()
                dropped += 1
            except queue.Empty:
                return dropped

    def close(self) -> None:
        self.drain_pending()
        for _ in self.threads:
            self._order += 1
            self.inbox.put((2, self._order, None))


class Gateway:
    """Cached, concurrent, retried, metered access to one chat model and one embedder."""

    def __init__(self, conn: Connection, chat: ChatModel | None, embedder: Embedder, *,
                 concurrency: int = 8, rpm: float | None = None, max_retries: int = 6,
                 backoff: float = 1.0, max_backoff: float = 30.0, run_id: int | None = None,
                 write_cache: bool = True):
        self.conn = conn
        self.chat_model = chat
        self.embedder = embedder
        self.concurrency = max(1, int(concurrency))
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.run_id = run_id
        self.write_cache = write_cache
        self.usage: dict[str, Usage] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._limiter = _RateLimiter(rpm)
        self._slots = _Slots(self.concurrency)
        self.notices: list[str] = []  # what the run should tell its author once (see note())
        self._noted: set[str] = set()
        self._workers: _Workers | None = None
        self._jitter = random.Random(0)
        self.batch = None  # a tgr.build.batch.BatchRunner: misses go to the provider's Batch API
        # vectors this embedder made before, by content_hash(embedder name, text) (tgr merge:
        # the inputs' entity and report vectors): such a text is not embedded again
        self.known_vectors: dict[str, Sequence[float]] = {}
        self.known_portable: dict[str, bytes] = {}  # tgr merge: portable vectors the inputs made

    # -- public API ---------------------------------------------------------------------

    def chat(self, stage: str, prompt: str, **params) -> str:
        """One chat call (cached, retried, metered)."""
        for _, text in self.chat_many(stage, [ChatJob(None, prompt, params)]):
            return text
        raise ModelError("no answer")  # unreachable: chat_many yields once per job

    def cached_answer(self, stage: str, key: str) -> str | None:
        """The cached answer under this key (recorded as a cache hit), or None."""
        row = self.conn.execute(
            "SELECT response, prompt_tokens, completion_tokens FROM llm_cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        self._ledger(stage, "chat", self.chat_model.name, True, 0, row[1], row[2], "cache", 0.0, 0)
        return row[0]

    def chat_many(self, stage: str, jobs: Iterable[ChatJob], idle: Callable[[], bool] | None = None,
                  more: Callable[[], list[ChatJob]] | None = None) -> Iterator[tuple[ChatJob, str]]:
        """Answer every job, yielding (job, text) as answers arrive; cache hits come first.

        The caller should store each result before asking for the next, so that an
        interrupted run keeps everything already answered. idle, if given, is a small
        step of other main-thread work, run while no answer is ready; it returns False
        when it has nothing left (it may use SQLite and single-batch embed(), never chat).
        more, if given, is called after each answer is handed back and returns further jobs
        (those the answers so far made ready: a parent's report once its children's are in);
        they join the calls in flight, so no slot waits for a whole wave to end.
        """
        jobs = list(jobs)
        if not jobs:
            jobs = more() if more is not None else []
            if not jobs:
                return
        if self.chat_model is None:
            raise ModelError("this operation needs a chat model, and none is configured")
        model = self.chat_model.name
        misses: dict[str, list[ChatJob]] = {}  # identical prompts are asked once
        yield from _cached(self, stage, model, jobs, misses)
        idle = _UntilDone(idle) if idle is not None else None
        if misses and self.batch is not None and self.write_cache:
            answered, misses = self.batch.settle(self, stage, misses, idle)
            yield from answered
            more, later = None, more  # a Batch API job is one wave: what it unblocks is the next
        else:
            later = None
        if misses or more is not None:
            yield from _answer(self, stage, model, misses, idle, more)
        if later is not None:
            yield from self.chat_many(stage, [], idle, later)

    def embed(self, stage: str, texts: list[str], batch_size: int = 64) -> list[list[float]]:
        """Embed texts in batches, concurrently, retried and metered (not cached).
        The "query" stage embeds questions (embed_query where the embedder has it)."""
        if self.known_vectors and stage != "query":
            return self._embed_unknown(stage, texts, batch_size)
        return self._embed_texts(stage, texts, batch_size)

    def _embed_texts(self, stage: str, texts: list[str], batch_size: int) -> list[list[float]]:
        if not texts:
            return []
        batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
        # an embedder computed under the GIL gains nothing from threads, only their hand-offs
        if len(batches) == 1 or self.concurrency == 1 or getattr(self.embedder, "in_caller_thread", False):
            return [v for b in batches for v in self._embed_batch(stage, b)]
        results: dict[int, list[list[float]]] = {}
        workers = self._pool()
        owner = workers.new_batch()
        for index, batch in enumerate(batches):
            workers.submit(owner, self._run_embed, (index, batch, self._embed_call(stage)))
        try:
            for _ in batches:
                index, vectors, attempts, latency, error = workers.next_result(owner)
                if error is not None:
                    raise error
                self._record_embed(stage, batches[index], attempts, latency)
                results[index] = vectors
        finally:
            workers.drain_pending()
        return [v for i in range(len(batches)) for v in results[i]]

    def _embed_unknown(self, stage: str, texts: list[str], batch_size: int) -> list[list[float]]:
        """The vectors of texts: known ones as they were made, only the others embedded."""
        known, name = self.known_vectors, self.embedder.name
        hashes = [content_hash(name, text) for text in texts]
        unknown = [text for text, h in zip(texts, hashes) if h not in known]
        made = iter(self._embed_texts(stage, unknown, batch_size))
        return [list(known[h]) if h in known else next(made) for h in hashes]

    def stage_usage(self, stage: str) -> Usage:
        return self.usage.setdefault(stage, Usage())

    def total_usage(self) -> Usage:
        total = Usage()
        for usage in self.usage.values():
            total.add(usage)
        return total

    def close(self) -> None:
        if self._workers:
            self._workers.close()
            self._workers = None

    # -- internals ----------------------------------------------------------------------

    def _pool(self) -> _Workers:
        if self._workers is None:
            self._workers = _Workers(self.concurrency)
        return self._workers

    def embed_dim(self) -> int:
        """The embedder's dimension. An endpoint that has to be asked for it (tgr.models.
        OpenAIEmbedder.probe) is asked like any request: retried with backoff, Retry-After and
        max_retries, so a transient error on the run's first request costs time, not the run,
        and written to the ledger."""
        probe = getattr(self.embedder, "probe", None)
        if probe is not None:
            start = time.perf_counter()
            asked, attempts = self.retried(probe)
            if asked:  # a billed request like any other: in the ledger, stage "embed"
                with transaction(self.conn) if self.write_cache else contextlib.nullcontext():
                    self._record_embed("embed", [self.embedder.PROBE_TEXT], attempts, time.perf_counter() - start)
        return self.embedder.dim

    def retried(self, call: Callable[[], Any]) -> tuple[Any, int]:
        """(call(), attempts): call retried on transient errors (429, 5xx, timeouts) with
        exponential backoff and jitter, honouring Retry-After, at most max_retries times."""
        attempt = 0
        while True:
            attempt += 1
            self.wait_turn()
            try:
                return call(), attempt
            except StreamBroken as exc:
                if self._slots.busy > 1:
                    raise  # another call at the server broke it: _run_chat asks again, one at a time
                with TURNS.given_up():
                    time.sleep(retry_delay(self, exc, attempt))
            except TransientModelError as exc:
                with TURNS.given_up():
                    time.sleep(retry_delay(self, exc, attempt))

    def _one_at_a_time(self) -> None:
        if self._slots.narrow():
            drop = getattr(self.chat_model, "drop_waiting", None)
            if callable(drop):  # the others queued at the server would each be cut again
                drop()
            self.note("the endpoint serves one request at a time (it ended an answer early to start "
                      "another): chat calls are now sent one at a time")

    def note(self, message: str) -> None:
        """Keep a message for the run to say once (tgr.build.pipeline prints gateway.notices)."""
        with self._lock:
            if message not in self._noted:
                self._noted.add(message)
                self.notices.append(message)

    def wait_turn(self) -> None:
        """Wait until the requests-per-minute cap allows another call."""
        with TURNS.given_up():
            self._limiter.wait()

    def _run_chat(self, outcome: _Outcome) -> _Outcome:
        return _run_chat(self, outcome)

    def _embed_call(self, stage: str):
        """Questions go to embed_query where the embedder has one (E5's "query: " prefix)."""
        if stage == "query":
            return getattr(self.embedder, "embed_query", None) or self.embedder.embed
        return self.embedder.embed

    def _run_embed(self, item):
        index, batch, embed = item
        start = time.perf_counter()
        self._enter()
        try:
            vectors, attempts = self.retried(functools.partial(embed, batch))
            return index, vectors, attempts, time.perf_counter() - start, None
        except BaseException as exc:
            return index, None, 0, time.perf_counter() - start, exc
        finally:
            self._leave()

    def _embed_batch(self, stage: str, batch: list[str]) -> list[list[float]]:
        start = time.perf_counter()
        vectors, attempts = self.retried(functools.partial(self._embed_call(stage), batch))
        self._record_embed(stage, batch, attempts, time.perf_counter() - start)
        return vectors

    def _record_embed(self, stage: str, batch: list[str], attempts: int, latency: float) -> None:
        """Ledger row of one embedding request (tokens estimated: the APIs report totals only)."""
        if is_local(self.embedder):  # computed here: recorded as such, never as calls or tokens
            self._ledger(stage, "local", self.embedder.name, False, attempts, 0, 0, "local", latency, 0)
            return
        self._ledger(stage, "embed", self.embedder.name, False, attempts,
                     sum(estimate_tokens(t) for t in batch), 0, "estimate", latency,
                     sum(len(t) for t in batch))

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def store_answer(self, stage: str, model: str, outcome: "_Outcome") -> None:
        """Cache (where this gateway writes its cache) and record one answered call."""
        self._store(stage, model, outcome)

    def _store(self, stage: str, model: str, outcome: _Outcome) -> None:
        """Cache the answer and record the call, in one transaction (one commit per call)."""
        with transaction(self.conn) if self.write_cache else contextlib.nullcontext():
            self.record_answer(stage, model, outcome)

    def record_answer(self, stage: str, model: str, outcome: _Outcome) -> None:
        """Cache a valid answer and write its ledger row (inside the caller's transaction)."""
        c = outcome.completion
        if self.write_cache and outcome.valid:  # a rejected answer is used once, never cached
            self.conn.execute(
                "INSERT OR REPLACE INTO llm_cache(key, model, prompt, params, response, "
                "prompt_tokens, completion_tokens) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (outcome.key, model, outcome.job.prompt,
                 json.dumps(outcome.job.params, sort_keys=True), c.text,
                 c.prompt_tokens, c.completion_tokens))
        self._ledger(stage, "chat", model, False, outcome.attempts, c.prompt_tokens,
                     c.completion_tokens, c.usage_source, outcome.latency, len(outcome.job.prompt),
                     outcome.price, cut=c.cut)

    def _ledger(self, stage, kind, model, hit, attempts, prompt_tokens, completion_tokens,
                source, latency, prompt_chars, price: float = 1.0, cut: bool = False) -> None:
        self.stage_usage(stage).count(kind, hit, prompt_tokens, completion_tokens, prompt_chars, price,
                                      attempts, cut)
        if self.write_cache:
            self.conn.execute(
                "INSERT INTO model_calls(run_id, stage, kind, model, cache_hit, attempts, "
                "prompt_tokens, completion_tokens, usage_source, latency_ms, price) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self.run_id, stage, kind, model, int(hit), attempts, prompt_tokens,
                 completion_tokens, source, round(latency * 1000, 2), price))


# --- chat_many's parts (module functions: the Gateway class stays short) ---------------

def _run_chat(gateway: Gateway, outcome: _Outcome) -> _Outcome:
    """One chat job on a worker thread: asked (retried, one at a time once the server needs it),
    asked again once or twice with a little sampling if its answer is rejected, never when it
    was cut; errors are handed to the main thread in outcome.error."""
    job = outcome.job
    start = time.perf_counter()
    gateway._enter()
    try:
        tries, spent_prompt, spent_completion = 0, 0, 0
        crowded = 0  # answers another call at a one-slot server cut short
        while True:
            params = dict(job.params)
            if tries:  # a rejected answer: ask again with a little sampling
                params["temperature"] = 0.3
            wide = gateway._slots.size > 1
            try:
                with gateway._slots:
                    completion, attempts = gateway.retried(
                        functools.partial(gateway.chat_model.complete, job.prompt, **params))
            except StreamBroken:
                if crowded > 20:
                    raise
                completion = None
            # broken, or ended early by a one-slot server to start another call: asked again, alone
            if completion is None or (completion.finish_reason == "unfinished" and wide and crowded <= 20):
                crowded += 1
                gateway._one_at_a_time()
                continue
            outcome.attempts += attempts
            spent_prompt += completion.prompt_tokens
            spent_completion += completion.completion_tokens
            tries += 1
            if completion.usage_source == "api" and prompt_was_cut(job.prompt, completion.prompt_tokens):
                gateway.note(f"{gateway.chat_model.name} read {completion.prompt_tokens} tokens of a prompt of "
                             f"about {estimate_tokens(job.prompt)}: the server cut it to its context window; "
                             "give the server a larger window (Ollama: use the ollama: provider, which sets "
                             "num_ctx) or tell tgr its size with --context-tokens")
            outcome.valid = job.validate is None or job.validate(completion.text)
            # an answer cut at max_tokens or stopped looping would be cut again: not asked twice
            if outcome.valid or tries > 2 or completion.cut:
                break
        completion.prompt_tokens, completion.completion_tokens = spent_prompt, spent_completion
        outcome.completion = completion
    except BaseException as exc:  # handed to the main thread, which re-raises it
        outcome.error = exc
    finally:
        gateway._leave()
        outcome.latency = time.perf_counter() - start
    return outcome


def _cached(gateway: "Gateway", stage: str, model: str, jobs: list[ChatJob], misses: dict[str, list[ChatJob]]):
    """Yield the jobs the cache answers; add the others to misses (by cache key)."""
    for job in jobs:
        key = cache_key(model, job.prompt, job.params)
        if key in misses:
            misses[key].append(job)
            continue
        cached = gateway.cached_answer(stage, key)
        if cached is not None:
            yield job, cached
        else:
            misses[key] = [job]


def _answer(gateway: "Gateway", stage: str, model: str, misses: dict[str, list[ChatJob]], idle, more):
    """Ask the missed prompts on the workers, yielding answers as they arrive; then the
    jobs more() adds (see chat_many)."""
    workers = gateway._pool()
    batch = workers.new_batch()
    pending, error, asked = 0, None, set()

    def submit_new(urgent: bool = False) -> None:
        nonlocal pending
        for key, same in misses.items():
            if key not in asked:
                asked.add(key)
                workers.submit(batch, gateway._run_chat, _Outcome(same[0], key), urgent)
                pending += 1

    def add_more():
        while more is not None and error is None:
            extra = more()
            if not extra:
                break
            yield from _cached(gateway, stage, model, extra, misses)
        submit_new(urgent=True)  # what the answers unblocked is the longest path left

    try:
        submit_new()
        yield from add_more()
        while pending:
            outcome = workers.next_result(batch, idle)
            pending -= 1
            if outcome.error is not None:
                if error is None:  # stop asking, but keep what is already paid for
                    error = outcome.error
                    pending -= workers.drain_pending()
                continue
            gateway._store(stage, model, outcome)
            if error is None:
                asked.discard(outcome.key)  # a later job of the same prompt: the cache, or asked anew
                for job in misses.pop(outcome.key):
                    job.finish_reason = outcome.completion.finish_reason
                    yield job, outcome.completion.text
                yield from add_more()
    except KeyboardInterrupt:  # keep the answers already paid for (those in flight)
        rollback_open(gateway.conn)  # the one the Ctrl-C cut short, if it landed in a write
        in_flight, pending = pending - workers.drain_pending(), 0
        for outcome in workers.results(batch, in_flight, time.monotonic() + INTERRUPT_GRACE_S):
            if outcome.error is None:
                gateway._store(stage, model, outcome)
        raise
    finally:
        if pending:  # the caller stopped early: calls not started are dropped
            workers.drain_pending()
    if error is not None:
        raise error
