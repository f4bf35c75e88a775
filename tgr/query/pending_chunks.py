"""Full-text search over the chunks an interrupted run stored but did not index yet.

An index run stores chunks first and adds their full-text rows while it waits for the model
(tgr.ingest.corpus, chunks_unindexed). A run stopped in between leaves chunks that FTS5
cannot find; a question asked of that unfinished store scores them here, in memory, with the
same BM25 as FTS5's bm25() (k1 = 1.2, b = 0.75, its idf floor), without writing to the file.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ..store.db import Connection, has_table
from ..text import index_text

MAX_PENDING = 20_000  # pending chunks scored: an unfinished store answers in bounded time
K1, B = 1.2, 0.75
IDF_FLOOR = 1e-6  # FTS5's, for a term in more than half the chunks


@dataclass
class PendingChunks:
    """The terms of the pending chunks (chunk id, term counts, length)."""

    chunks: list[tuple[str, Counter, int]]

    @classmethod
    def read(cls, conn: Connection) -> "PendingChunks":
        """Compute the terms of up to MAX_PENDING pending chunks, as index_pending would
        (none in a finished store, or one older than the pending list)."""
        if not has_table(conn, "chunks_unindexed"):
            return cls([])
        rows = conn.execute(
            "SELECT c.id, d.title, c.text FROM chunks_unindexed u JOIN chunks c ON c.seq = u.seq "
            "JOIN documents d ON d.id = c.document_id ORDER BY u.seq LIMIT ?", (MAX_PENDING,)).fetchall()
        chunks = []
        for chunk_id, title, text in rows:
            terms = index_text(f"{title}\n{text}").split()
            chunks.append((chunk_id, Counter(terms), len(terms)))
        return cls(chunks)

    def bm25(self, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of the best pending chunks holding any of the terms."""
        if not self.chunks:
            return []
        wanted = {t.lower() for t in terms}
        total = len(self.chunks)
        average = sum(length for _, _, length in self.chunks) / total or 1.0
        held = Counter(t for _, counts, _ in self.chunks for t in wanted if t in counts)
        idf = {t: max(math.log((total - n + 0.5) / (n + 0.5)), IDF_FLOOR) for t, n in held.items()}
        scored = []
        for chunk_id, counts, length in self.chunks:
            score = 0.0
            for term, weight in idf.items():
                f = counts.get(term, 0)
                if f:
                    score += weight * f * (K1 + 1) / (f + K1 * (1 - B + B * length / average))
            if score:
                scored.append((chunk_id, score))
        scored.sort(key=lambda hit: (-hit[1], hit[0]))
        return scored[:limit]
