"""One chat call streamed through the gateway's cache, retries and ledger (tgr.models.gateway).

- A cached answer is replayed at once, as one piece; a model that cannot stream is asked
  whole (one piece, through the gateway's ordinary call).
- Transient errors before the first piece are retried as any call is (backoff, Retry-After,
  the requests-per-minute cap).
- Once text has been given out a failure cannot be retried without repeating it: the stream
  ends with one ModelError line saying how much arrived and why it stopped; nothing is cached.
- A finished answer is recorded in the ledger (and cached where the gateway writes its cache).
- Stopping early (Ctrl-C, or a consumer that closes the iterator) closes the connection.
"""
from __future__ import annotations

import time
from typing import Iterator

from ..errors import ModelError, TransientModelError
from .gateway import ChatJob, Gateway, _Outcome, cache_key, retry_delay
from .clients import Completion
from .turns import TURNS


def stream_chat(gateway: Gateway, stage: str, prompt: str, params: dict) -> Iterator[str]:
    """The answer's text pieces as the gateway's chat model writes them (see the module's docstring)."""
    model = gateway.chat_model
    key = cache_key(model.name, prompt, params)
    cached = gateway.cached_answer(stage, key)
    if cached is not None:
        yield cached
        return
    if not callable(getattr(model, "stream", None)):
        yield gateway.chat(stage, prompt, **params)
        return
    started, attempt = time.perf_counter(), 0
    while True:
        attempt += 1
        gateway.wait_turn()
        written: list[str] = []
        try:
            completion = yield from _pieces(model.stream(prompt, **params), written)
            break
        except (TransientModelError, ModelError) as exc:
            if written:
                raise ModelError(f"the answer broke off after {len(''.join(written))} characters: "
                                 f"{exc}") from None
            if not isinstance(exc, TransientModelError):
                raise
            with TURNS.given_up():  # an async question's turn (tgr/models/turns.py)
                time.sleep(retry_delay(gateway, exc, attempt))
    outcome = _Outcome(ChatJob(None, prompt, params), key, completion, attempt, time.perf_counter() - started)
    gateway.store_answer(stage, model.name, outcome)


def _pieces(stream, written: list[str]):
    """Yield the stream's text pieces (kept in written); return its Completion."""
    try:
        for item in stream:
            if isinstance(item, Completion):
                return item
            if item:
                written.append(item)
                yield item
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    raise TransientModelError("the stream ended before the answer did")
