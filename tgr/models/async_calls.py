"""tgr's sync work, awaited from asyncio: the async API's one way of running it.

A call runs on a worker thread of a pool shared by every store (SQLite reads and writes, ranking,
an answer's assembly: never on the event loop), with ASKING_LOOP set to the loop that awaits it,
so that its model calls go out on that loop's httpx.AsyncClient (tgr/models/loop_transport.py).
The pool is large because its threads mostly wait for a model: each question in flight holds one.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import AsyncIterator, Callable, Iterator, TypeVar

from .turns import ASKING_LOOP, TURNS

WORKERS = 64  # questions (or index runs) in flight at once; more wait for a thread

T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_END = object()


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="tgr-async")
        return _pool


def _for_this_loop(call: Callable[..., T], *args, **kwargs) -> Callable[[], T]:
    """The call, to run in a context whose model calls go out on the running loop."""
    context = contextvars.copy_context()
    context.run(ASKING_LOOP.set, asyncio.get_running_loop())
    return functools.partial(context.run, call, *args, **kwargs)


def _in_turn(call: Callable[..., T], *args, **kwargs) -> T:
    with TURNS.taken():  # tgr/models/turns.py
        return call(*args, **kwargs)


async def _awaited(call: Callable[[], T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(_workers(), call)


async def in_thread(call: Callable[..., T], *args, **kwargs) -> T:
    """call(*args, **kwargs), run on a worker thread in a turn (see the module) and awaited."""
    return await _awaited(_for_this_loop(_in_turn, call, *args, **kwargs))


async def written_in_thread(call: Callable[..., T], *args, **kwargs) -> T:
    """in_thread() for a write (index): it runs without a turn, for it waits for the store's other
    writers, and a writer holding turns while it waits would keep the one writing from its next."""
    return await _awaited(_for_this_loop(call, *args, **kwargs))


async def iterated_in_thread(make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """The items of the iterator make() returns, made and read on a worker thread, as they come.
    Leaving the loop early (break, an exception, aclose) closes the iterator on its thread."""
    loop = asyncio.get_running_loop()
    items: asyncio.Queue = asyncio.Queue()
    stop = threading.Event()

    def produce() -> None:
        put = functools.partial(loop.call_soon_threadsafe, items.put_nowait)
        try:
            iterator = make()
            try:
                for item in iterator:
                    if stop.is_set():
                        break
                    put((item, None))
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - raised again where the items are read
            put((_END, exc))

    done = loop.run_in_executor(_workers(), _for_this_loop(_in_turn, produce))
    try:
        while True:
            item, error = await items.get()
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        await asyncio.shield(done)  # the iterator is closed on its thread before this returns
