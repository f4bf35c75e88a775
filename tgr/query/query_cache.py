"""The warm state of the query path, one QueryCache per connection.

A QueryCache owns what the query path keeps between questions on one connection: values
computed from the store (stopword counts, in-memory copies of vector tables), kept until the
store changes, and how many questions the connection has answered, which decides whether the
warm paths are worth taking. There is no other query state: nothing is counted per process.

A connection that has answered WARM_QUERIES questions is a long-lived one (an eval, a server,
a notebook): it pays once for importing numpy (tgr.offline.pagerank), and, once it has answered that
many since the store last changed, for in-memory copies of small int8 vector tables
(tgr.query.vector_matrix). Each later query runs faster with the same results, bit for bit.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

WARM_QUERIES = 8

# connection -> its QueryCache; an entry goes with its connection
_caches: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class QueryCache:
    """Per-connection values and warm-path decisions. Get one with QueryCache.of(conn)."""

    def __init__(self, conn):
        self._conn = weakref.ref(conn)  # the registry holds the cache: it must not hold conn
        self._version: tuple | None = None
        self._values: dict = {}
        self.questions = 0               # questions this connection has answered
        self.questions_since_change = 0  # ... since the store last changed

    @classmethod
    def of(cls, conn) -> "QueryCache":
        """The connection's cache (made on first use)."""
        cache = _caches.get(conn)
        if cache is None:
            cache = _caches[conn] = cls(conn)
        return cache

    def get(self, key: Any, build: Callable[[], Any]) -> Any:
        """build()'s value for this key, computed again once the store has changed."""
        self._refresh()
        if key not in self._values:
            self._values[key] = build()
        return self._values[key]

    def question(self) -> None:
        """Count one question (once per question, whatever the mode)."""
        self._refresh()
        self.questions += 1
        self.questions_since_change += 1

    @property
    def numpy_walk(self) -> bool:
        """Whether PageRank runs on numpy (same numbers; worth the import only when warm)."""
        return self.questions > WARM_QUERIES

    @property
    def vector_copies(self) -> bool:
        """Whether KNN searches in-memory copies of int8 vector tables (same neighbours)."""
        return self.questions_since_change > WARM_QUERIES

    def _refresh(self) -> None:
        """Forget the values once the store has changed (data_version moves when another
        connection commits, total_changes when this one writes)."""
        conn = self._conn()
        version = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        if version != self._version:
            self._version, self._values, self.questions_since_change = version, {}, 0
