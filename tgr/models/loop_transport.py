"""The model calls of a question asked from asyncio, sent by the event loop that asked.

tgr's async API (KnowledgeBase.aask, aretrieve, astream, aindex; tgr/models/async_calls.py) runs a
question's own work (SQLite reads, ranking, the answer's assembly) on a worker thread, as a sync
question runs. Its HTTP requests to the chat and embedding models go out on the asking loop: one
httpx.AsyncClient per loop, so that every question in flight shares one connection pool and no
thread waits on a socket of its own. The model clients keep one code path: their httpx.Client's
transport (LoopTransport) hands a request to the loop's AsyncClient when the calling thread works
for that loop (the context variable turns.ASKING_LOOP, set by tgr/models/async_calls.py), and sends it itself
otherwise. Timeouts, streaming and errors are httpx's own on both paths.
"""
from __future__ import annotations

import asyncio
import threading
import weakref

import httpx

from .turns import ASKING_LOOP, TURNS

_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]" = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()


def loop_client(timeout: float) -> httpx.Client:
    """The httpx.Client a model client sends with: direct from a sync caller, through the asking
    loop for an async one."""
    return httpx.Client(timeout=timeout, transport=LoopTransport())


def async_client(loop: asyncio.AbstractEventLoop) -> httpx.AsyncClient:
    """The loop's AsyncClient (made on first use; its pool is shared by every store and model)."""
    with _clients_lock:
        client = _clients.get(loop)
        if client is None:
            client = _clients[loop] = httpx.AsyncClient(timeout=None)  # each request carries its own
        return client


async def close_async_client() -> None:
    """Close the running loop's AsyncClient, if it made one (a later call makes a new one)."""
    with _clients_lock:
        client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


class LoopTransport(httpx.BaseTransport):
    """httpx's own transport, or the asking loop's AsyncClient (see the module)."""

    def __init__(self):
        self._direct = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        loop = ASKING_LOOP.get()
        if loop is None or not loop.is_running() or _runs_here(loop):
            return self._direct.handle_request(request)
        request.read()
        sent = httpx.Request(request.method, request.url, headers=request.headers, content=request.content,
                             extensions=request.extensions)  # the extensions carry the timeouts
        response = _on(loop, async_client(loop).send(sent, stream=True))
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_LoopStream(response, loop), extensions=response.extensions)

    def close(self) -> None:
        self._direct.close()


class _LoopStream(httpx.SyncByteStream):
    """A response body read on the loop, piece by piece, for the thread that reads it."""

    def __init__(self, response: httpx.Response, loop: asyncio.AbstractEventLoop):
        self._response, self._loop = response, loop
        self._pieces = response.aiter_raw()

    def __iter__(self):
        while True:
            piece = _on(self._loop, _next_piece(self._pieces))
            if piece is None:
                return
            yield piece

    def close(self) -> None:
        if not self._loop.is_closed():
            _on(self._loop, self._response.aclose())


async def _next_piece(pieces) -> bytes | None:
    try:
        return await pieces.__anext__()
    except StopAsyncIteration:  # a future cannot carry it across threads as it is
        return None


def _on(loop: asyncio.AbstractEventLoop, coroutine):
    """Run a coroutine on the loop and wait for its result here (a worker thread)."""
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    with TURNS.given_up():
        return future.result()


def _runs_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
