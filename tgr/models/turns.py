"""Who an async question's worker thread works for, and the turns those threads take.

ASKING_LOOP: the event loop the current thread's model calls go out on (tgr/models/loop_transport.py;
None: the thread sends them itself). TURNS: the async API's worker threads run Python a few at a
time (tgr/models/async_calls.py); one waiting for a model gives its turn up meanwhile. Imported
by the gateway, so kept free of asyncio and httpx: a cold `tgr ask` loads neither for it.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading

ASKING_LOOP: contextvars.ContextVar = contextvars.ContextVar("tgr_asking_loop", default=None)


class Turns:
    """The async API's worker threads take turns at running Python, a few at a time (one fewer
    than the cores), and one waiting for the loop gives its turn up meanwhile: fifty questions'
    threads all ranking at once would keep the loop thread from the interpreter lock for a long
    time (it gets it once in each turn of the runnable threads). A core is left to the loop:
    with as many turns as cores, a busy machine's scheduler pauses a thread that holds the lock,
    and the loop waits for it (worst lag 75-105 ms against 21-39 ms with one turn, on 2 cores
    with two other busy processes; the same rate of answers, for the lock lets one thread run
    Python at a time anyway)."""

    def __init__(self, size: int):
        self._free = threading.Semaphore(size)
        self._held = threading.local()

    @contextlib.contextmanager
    def taken(self):
        """The calling thread holds a turn for the block."""
        self._free.acquire()
        self._held.turn = True
        try:
            yield
        finally:
            self._held.turn = False
            self._free.release()

    @contextlib.contextmanager
    def given_up(self):
        """The calling thread's turn, if it holds one, is free for the block."""
        held = getattr(self._held, "turn", False)
        if held:
            self._held.turn = False
            self._free.release()
        try:
            yield
        finally:
            if held:
                self._free.acquire()
                self._held.turn = True


TURNS = Turns(max(1, min(3, (os.cpu_count() or 1) - 1)))
