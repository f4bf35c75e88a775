"""Question terms too common to rank by, found once per store and connection.

A term in half of the chunks or more gets no BM25 weight from FTS5: it clamps the IDF
log((N - n + 0.5) / (n + 0.5)), which is <= 0 there, to 1e-6. Yet matching the term reads its
posting list, the longest in the index ("the", "of": nearly every chunk, dozens of positions
each), so a question's stopwords cost most of its full-text query and, on a large store, grow
with the whole corpus. Only stopwords are looked up (one count per word, remembered until the
store changes): other words are seldom that common, and counting every Chinese substring of a
question would cost more than it saves.
"""
from __future__ import annotations

from .query_cache import QueryCache
from ..text import STOPWORDS


def common_terms(conn, terms: list[str]) -> set[str]:
    """Those of the terms that are in at least half of the store's chunks."""
    candidates = [t for t in terms if t in STOPWORDS]
    if not candidates:
        return set()
    total, counts = QueryCache.of(conn).get("stopword counts", lambda: (
        conn.execute("SELECT count(*) FROM chunks").fetchone()[0], {}))
    for term in candidates:
        if term not in counts:
            counts[term] = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                        (f'"{term}"',)).fetchone()[0]
    return {t for t in candidates if total and 2 * counts[t] >= total}
