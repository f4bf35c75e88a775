"""`tgr index --batch`: each wave's prompts answered through the provider's Batch API.

The gateway hands the runner the prompts of one wave that miss the cache (Gateway.chat_many).
Those not already in an open job go to the provider as new jobs (a JSONL upload, then a
batch), each recorded in batch_jobs / batch_items before anything waits on it. The runner
polls until the jobs holding the wave's prompts are finished, stores their answers in
llm_cache and the ledger (at the batch price) in one transaction per job, and the wave goes
on from those answers exactly as after synchronous calls: every later stage is unchanged.
Requests that failed or expired are sent again in the next job (at most MAX_ATTEMPTS times
per prompt), or handed back for synchronous calls with fallback. With wait=False the runner
stops with BatchPending once the wave's jobs are submitted; `tgr index STORE` run later
finds them in the store (runner_for) and collects them.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable

from ..models.batch_api import BatchNotFound, JobStatus, batch_api_for, completion_from_body, read_results, request_line
from ..store.db import Connection, transaction
from ..errors import BatchPending, ModelError, TransientModelError  # noqa: F401 - BatchPending: part of this API

BATCH_PRICE = 0.5           # of the synchronous price, at OpenAI and Zhipu
MAX_REQUESTS = 50_000       # per job: OpenAI's and Zhipu's limit
MAX_BYTES = 90_000_000      # per input file: under Zhipu's 100 MB (OpenAI's is 200 MB)
MAX_ATTEMPTS = 3            # batch jobs one prompt is sent in before giving up on it
MAX_POLL_FAILURES = 10      # status checks failing in a row (network) before the run stops
RETRY_TEMPERATURE = 0.3     # an answer that failed its check is asked again with some sampling
_OPEN = "outcome IS NULL"

Progress = Callable[[str, int, int], None]


@dataclass
class BatchOptions:
    """How `tgr index --batch` waits: poll until done (wait) or stop once submitted; answer
    failed or expired requests synchronously (fallback) or in the next job."""

    wait: bool = True
    fallback: bool = False
    poll_first: float = 1.0     # seconds between status checks, growing 1.5x ...
    poll_max: float = 60.0      # ... up to this
    only_open: bool = False     # batch only to collect jobs the store holds open (else synchronous)


def open_jobs(conn: Connection, model: str) -> int:
    """How many of this chat model's batch jobs the store holds uncollected."""
    return conn.execute(f"SELECT count(*) FROM batch_jobs WHERE model = ? AND {_OPEN}", (model,)).fetchone()[0]


def billed_tokens(conn: Connection, group: str) -> dict:
    """Prompt + completion tokens of the calls paid for, each at its price, by `group`
    ("stage, kind" or "run_id"). A store older than the price column was all synchronous."""
    price = "price" if "price" in {r[1] for r in conn.execute("PRAGMA table_info(model_calls)")} else "1"
    found = {}
    for *key, billed in conn.execute(
            f"SELECT {group}, round(sum((prompt_tokens + completion_tokens) * {price})) FROM model_calls "
            f"WHERE cache_hit = 0 GROUP BY {group}"):
        found[tuple(key) if len(key) > 1 else key[0]] = int(billed or 0)
    return found


def runner_for(conn: Connection, chat, options: BatchOptions | bool | None,
               progress: Progress | None = None) -> "BatchRunner | None":
    """The batch runner of an indexing run, or None for synchronous calls. options None:
    batch only if the store holds open jobs of this chat model (a run that did not wait)."""
    if chat is None or options is False:
        return None
    if not isinstance(options, BatchOptions):
        options = BatchOptions(only_open=options is None)
    if options.only_open and not open_jobs(conn, chat.name):
        return None
    api = batch_api_for(chat)
    if api is None:
        raise ModelError(f"{chat.name} has no Batch API here; index without --batch")
    return BatchRunner(conn, chat, api, options, progress)


class BatchRunner:
    """Sends waves of prompts as batch jobs, waits for them and stores their answers."""

    def __init__(self, conn: Connection, chat, api, options: BatchOptions, progress: Progress | None = None):
        self.conn, self.chat, self.api, self.options = conn, chat, api, options
        self.model = chat.name
        self.progress = progress or (lambda *a: None)
        self._rejected: dict[str, str] = {}  # key -> the last answer that failed its check
        self._poll_failures = 0

    def close(self) -> None:
        self.api.close()

    def abandon_stale(self) -> None:
        """After a complete run: jobs still open hold prompts no stage asks any more."""
        with transaction(self.conn):
            stale = f"SELECT id FROM batch_jobs WHERE model = ? AND {_OPEN}"
            self.conn.execute(f"UPDATE batch_items SET state = 'unclaimed' WHERE state = 'sent' "
                              f"AND job_id IN ({stale})", (self.model,))
            self.conn.execute(f"UPDATE batch_jobs SET outcome = 'abandoned' WHERE model = ? AND {_OPEN}",
                              (self.model,))

    def settle(self, gateway, stage: str, misses: dict, idle=None) -> tuple[list, dict]:
        """Answer a wave's misses (key -> [ChatJob]) through batch jobs.

        Returns ([(job, text)] answered, the misses left for synchronous calls: those that
        failed or expired, with fallback). Raises BatchPending when not waiting."""
        pending, answered, left = dict(misses), [], {}
        while pending:
            to_send = self._plan(stage, pending, answered, left)
            if to_send:
                self._submit(gateway, stage, to_send)
            if not pending:
                break
            self._wait(gateway, stage, pending, answered, idle)
        return answered, left

    # -- planning and submitting ----------------------------------------------------------

    def _history(self, keys) -> dict[str, tuple[int, str, str]]:
        """key -> (jobs it was sent in, its state in the latest, that one's error)."""
        return {key: (count, state, error or "") for key, count, _, state, error in self.conn.execute(
            "SELECT i.key, count(*), max(i.job_id), i.state, i.error FROM batch_items i "
            "JOIN batch_jobs j ON j.id = i.job_id WHERE j.model = ? "
            "AND i.key IN (SELECT value FROM json_each(?)) GROUP BY i.key",
            (self.model, json.dumps(list(keys)))).fetchall()}

    def _plan(self, stage: str, pending: dict, answered: list, left: dict) -> list[tuple[str, object, bool]]:
        """(key, job, retry) to send now; moves what goes no further to answered or left."""
        to_send, given_up = [], []
        for key, (count, state, error) in {**{k: (0, "", "") for k in pending}, **self._history(pending)}.items():
            exhausted, failed = count >= MAX_ATTEMPTS, state in ("failed", "expired")
            if state == "sent":
                continue  # in a job that is still open
            if state == "rejected" and exhausted and key in self._rejected:
                answered.extend((job, self._rejected[key]) for job in pending.pop(key))  # used once
            elif (state == "rejected" and exhausted) or (failed and self.options.fallback):
                left[key] = pending.pop(key)  # the gateway asks (and checks) synchronously
            elif failed and exhausted:
                given_up.append(error or state)
            else:  # never sent, or sent again (an answer lost or rejected, a request failed)
                to_send.append((key, pending[key][0], state == "rejected"))
        if given_up:
            raise ModelError(f"{len(given_up)} {stage} requests failed in {MAX_ATTEMPTS} batch jobs each "
                             f"(last: {given_up[0]}); run again with --batch-fallback to answer them "
                             "synchronously")
        return to_send

    def _submit(self, gateway, stage: str, to_send: list) -> None:
        """Upload and create jobs of at most MAX_REQUESTS / MAX_BYTES, each recorded at once."""
        lines: list[tuple[str, bytes]] = []
        for key, job, retry in to_send:
            params = {**job.params, "temperature": RETRY_TEMPERATURE} if retry else job.params
            lines.append((key, request_line(key, self.api.endpoint, self.chat.request_body(job.prompt, **params))))
        for part in _parts(lines):
            data = b"".join(line for _, line in part)
            batch_id, file_id = gateway.retried(lambda: self.api.submit(data, {"tgr_stage": stage}))[0]
            with transaction(self.conn):
                job_id = self.conn.execute(
                    "INSERT INTO batch_jobs(model, stage, batch_id, input_file_id, status, requests, run_id) "
                    "VALUES (?, ?, ?, ?, 'submitted', ?, ?)",
                    (self.model, stage, batch_id, file_id, len(part), gateway.run_id)).lastrowid
                self.conn.executemany("INSERT INTO batch_items(job_id, key, state) VALUES (?, ?, 'sent')",
                                      [(job_id, key) for key, _ in part])

    # -- waiting and collecting -----------------------------------------------------------

    def _wait(self, gateway, stage: str, pending: dict, answered: list, idle) -> None:
        """Poll the open jobs holding pending prompts until one is collected."""
        delay = self.options.poll_first
        while True:
            jobs = self._jobs_for(pending)
            if not jobs:
                return
            done = total = 0
            collected = False
            for job_id, batch_id, requests in jobs:
                try:
                    status = self._status(batch_id)
                except BatchNotFound as exc:  # its requests are sent again
                    self._forget(job_id, str(exc))
                    collected = True
                    continue
                total += requests
                if status is None:
                    continue
                done += min(requests, status.completed + status.failed)
                self._note(job_id, status)
                if status.finished:
                    self._collect(gateway, stage, job_id, status, pending, answered)
                    collected = True
            self.progress(f"{stage} (batch)", done, total)
            if collected:
                return
            if not self.options.wait:
                raise BatchPending(f"{stage}: {len(jobs)} batch job(s) with {total} requests are running at "
                                   f"the provider ({done} answered so far)", len(jobs), total)
            self._sleep(delay, idle)
            delay = min(delay * 1.5, self.options.poll_max)

    def _jobs_for(self, pending: dict) -> list[tuple[int, str, int]]:
        return self.conn.execute(
            f"SELECT j.id, j.batch_id, j.requests FROM batch_jobs j WHERE j.model = ? AND j.{_OPEN} "
            "AND EXISTS (SELECT 1 FROM batch_items i WHERE i.job_id = j.id AND i.state = 'sent' "
            "AND i.key IN (SELECT value FROM json_each(?))) ORDER BY j.id",
            (self.model, json.dumps(list(pending)))).fetchall()

    def _status(self, batch_id: str) -> JobStatus | None:
        """The job's status; None when the check failed in a way worth trying again."""
        try:
            status = self.api.status(batch_id)
        except TransientModelError:
            self._poll_failures += 1
            if self._poll_failures > MAX_POLL_FAILURES:
                raise
            return None
        self._poll_failures = 0
        return status

    def _forget(self, job_id: int, error: str) -> None:
        """A job the provider does not know: abandoned, its requests failed (sent again)."""
        with transaction(self.conn):
            self.conn.execute("UPDATE batch_items SET state = 'failed', error = ? WHERE job_id = ? AND state = 'sent'",
                              (error[:300], job_id))
            self.conn.execute("UPDATE batch_jobs SET outcome = 'abandoned' WHERE id = ?", (job_id,))

    def _note(self, job_id: int, status: JobStatus) -> None:
        with transaction(self.conn):
            self.conn.execute("UPDATE batch_jobs SET status = ?, completed = ?, failed = ?, "
                              "updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
                              (status.status[:40], status.completed, status.failed, job_id))

    def _collect(self, gateway, stage: str, job_id: int, status: JobStatus, pending: dict, answered: list) -> None:
        """Store a finished job's answers (cache + ledger) and its items' states in one transaction."""
        from ..models.gateway import _Outcome

        results: dict = {}
        for file_id in (status.error_file_id, status.output_file_id):  # answers win over errors
            if file_id:
                results.update(read_results(self.api.download(file_id)))
        missing = (None, status.errors or f"not answered (batch {status.status})")
        keys = [r[0] for r in self.conn.execute(
            "SELECT key FROM batch_items WHERE job_id = ? AND state = 'sent'", (job_id,))]
        with transaction(self.conn):
            for key in keys:
                body, error = results.get(key, missing)
                jobs = pending.get(key)
                state = "expired" if "expire" in error or status.status == "expired" else "failed"
                if body is not None and jobs is None:
                    state, error = "unclaimed", "no stage of this run asked for it"
                elif body is not None:
                    try:
                        completion = completion_from_body(body, jobs[0].prompt)
                    except ValueError as exc:
                        body, error = None, str(exc)
                if body is not None and jobs is not None:
                    job = jobs[0]
                    valid = job.validate is None or job.validate(completion.text)
                    gateway.record_answer(stage, self.model, _Outcome(job, key, completion, attempts=1,
                                                                      valid=valid, price=BATCH_PRICE))
                    state, error = ("answered", "") if valid else ("rejected", "the answer failed its check")
                    if valid:
                        answered.extend((j, completion.text) for j in pending.pop(key))
                    else:
                        self._rejected[key] = completion.text
                self.conn.execute("UPDATE batch_items SET state = ?, error = ? WHERE job_id = ? AND key = ?",
                                  (state, error[:300] or None, job_id, key))
            self.conn.execute("UPDATE batch_jobs SET outcome = 'collected' WHERE id = ?", (job_id,))

    @staticmethod
    def _sleep(seconds: float, idle) -> None:
        """Wait, doing the pipeline's idle work (e.g. chunk vectors) meanwhile."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if idle is not None and idle():
                continue
            time.sleep(min(remaining, 0.2))


def _parts(lines: list[tuple[str, bytes]]) -> list[list[tuple[str, bytes]]]:
    """Consecutive runs of request lines within one job's limits (at least one line each)."""
    parts: list[list[tuple[str, bytes]]] = []
    size = 0
    for line in lines:
        if not parts or len(parts[-1]) >= MAX_REQUESTS or size + len(line[1]) > MAX_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line[1])
    return parts
