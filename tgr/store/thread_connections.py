"""Connections for the other threads that share one open store (tgr/session.py StoreAdmin).

The thread that opens a store keeps the connection it opened: a script, the CLI and a cold
`tgr ask` open one connection, as before. Any other thread (a web server's workers) gets a
connection of its own for the length of a call, a lease: an idle one, or one opened the way a
reader opens a store (tgr.store.opening.connect: read-only, query_only, hardened, its schema
checked), given back afterwards with its warm caches (tgr.query.query_cache is per connection).
A call that writes (index, rebuild, delete) gets a writable connection of its own instead, closed
after it; writers of one process take turns (StoreAdmin.writing), as writers of two processes do.

A write while other threads read behaves as a write while other processes read: readers see
the store as of their statement (WAL), and before the WAL is folded back in (settle) idle
connections are closed and no new lease starts, so that a reader that read during the run does
not keep the log open (a question still running is waited for, as another process's is).
"""
from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Callable, Iterator

from ..errors import StoreError
from .db import Connection


_HANDED_OVER = object()  # see ThreadConnections.handed_over


class ThreadConnections:
    """The leased connections of one store; conn() is the calling thread's (see the module)."""

    def __init__(self, path: Path, opener: Callable[[bool], Connection]):
        self.path = path
        self._open_one = opener          # opener(writable) -> a new connection
        self._state = threading.Condition()
        self._idle: list[Connection] = []  # read-only ones, free for the next lease
        self._all: set[Connection] = set()
        self._writable: set[Connection] = set()
        self._kept: set[Connection] = set()  # kept by their threads outside a lease (conn())
        self._leased = 0
        self._paused = 0
        self._closed = False
        self._local = threading.local()
        self.on_close: Callable[[Connection], None] | None = None  # told before a connection closes

    def current(self) -> Connection | None:
        """The calling thread's connection, if it holds one."""
        conn = getattr(self._local, "conn", None)
        return None if conn is _HANDED_OVER else conn

    def conn(self) -> Connection:
        """The calling thread's connection. Outside a lease (a tool using KnowledgeBase.conn on its
        own thread) the thread keeps one until the store closes."""
        conn = self.current()
        if conn is None:
            conn = self._local.conn = self._take(False)
            with self._state:
                self._kept.add(conn)
        return conn

    def replace(self, conn: Connection) -> None:
        """The calling thread's connection is now conn (the old one was closed by the caller)."""
        with self._state:
            old = self.current()
            self._all.discard(old)
            self._writable.discard(old)
            self._kept.discard(old)
            self._all.add(conn)
            self._writable.add(conn)
        self._local.conn = conn

    @property
    def leased(self) -> int:
        """How many connections threads hold now."""
        return self._leased

    @contextlib.contextmanager
    def lease(self, writable: bool = False) -> Iterator[Connection]:
        """The calling thread's connection for the block (a writable one for a write)."""
        held = self.current()
        if held is not None and (not writable or held in self._writable):
            yield held
            return
        conn = self._local.conn = self._take(writable)
        try:
            yield conn
        finally:
            now = getattr(self._local, "conn", None)
            if now is not _HANDED_OVER:
                self._give_back(now or conn)  # (now: another, if the write replaced it)
            self._local.conn = held

    @contextlib.contextmanager
    def using(self, conn: Connection) -> Iterator[Connection]:
        """conn is the calling thread's connection for the block (one the caller owns: an
        estimate's in-memory store)."""
        held = self.current()
        self._local.conn = conn
        try:
            yield conn
        finally:
            self._local.conn = held

    def kept(self, items: Iterator, conn: Connection) -> "Kept":
        """items (a streamed answer reading through conn), holding conn's lease until it ends or
        is closed, from whichever thread iterates it. Call inside the lease, then handed_over()."""
        return Kept(self, items, conn)

    def handed_over(self) -> None:
        """The calling thread's lease belongs to a kept() iterator now: its block ends without
        giving the connection back."""
        self._local.conn = _HANDED_OVER

    @contextlib.contextmanager
    def paused(self) -> Iterator[Callable[[], None]]:
        """While the block runs (a writer folds its WAL back in), no lease starts and a
        connection given back is closed; yields close_idle() to call before each attempt."""
        with self._state:
            self._paused += 1
        try:
            yield self.close_idle
        finally:
            with self._state:
                self._paused -= 1
                self._state.notify_all()

    def close_idle(self) -> None:
        with self._state:
            idle, self._idle = self._idle, []
        for conn in idle:
            self._close(conn)

    def close(self) -> None:
        """Close the idle connections and those threads keep; a leased one closes when its
        call ends (a connection is never used by two threads at once: the driver's SQLite is
        built for one thread per connection at a time)."""
        with self._state:
            self._closed = True
            done, self._idle = self._idle + list(self._kept), []
            self._kept.clear()
            self._state.notify_all()
        for conn in done:
            self._close(conn)

    def _take(self, writable: bool) -> Connection:
        with self._state:
            while self._paused and not self._closed:
                self._state.wait()
            if self._closed:
                raise StoreError(f"{self.path}: the store is closed")
            self._leased += 1
            if not writable and self._idle:
                return self._idle.pop()
        try:
            conn = self._open_one(writable)
        except BaseException:
            with self._state:
                self._leased -= 1
            raise
        with self._state:
            self._all.add(conn)
            if writable:
                self._writable.add(conn)
        return conn

    def _give_back(self, conn: Connection) -> None:
        with self._state:
            self._leased -= 1
            if conn not in self._all:
                return  # closed with the store
            if conn not in self._writable and not self._paused and not self._closed:
                self._idle.append(conn)
                return
        self._close(conn)  # a writer's, or while a writer settles, or after the store closed

    def _close(self, conn: Connection) -> None:
        with self._state:
            if conn not in self._all:
                return
            self._all.discard(conn)
            self._writable.discard(conn)
        if self.on_close is not None:
            self.on_close(conn)
        conn.close()


class Kept:
    """An iterator that holds a connection's lease until it is exhausted, closed or dropped
    (see ThreadConnections.kept); each step runs with the connection as its thread's."""

    def __init__(self, threads: ThreadConnections, items: Iterator, conn: Connection):
        self._threads, self._items, self._conn, self._done = threads, items, conn, False

    def __iter__(self) -> "Kept":
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        local = self._threads._local
        before = getattr(local, "conn", None)
        local.conn = self._conn
        try:
            return next(self._items)
        except BaseException:
            self.close()
            raise
        finally:
            local.conn = before

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            close = getattr(self._items, "close", None)
            if close is not None:
                close()
        finally:
            self._threads._give_back(self._conn)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the store may be gone already
            pass
