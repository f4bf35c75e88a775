"""Nearest neighbours among a vec0 table's int8 vectors, from a copy held in memory.

sqlite-vec compares a query with every stored vector in plain C, one at a time: ~8 ms for the
6,500 entity vectors (384-d) of a dev-set store, on every local query. A long-lived process
keeps a small int8 table as a numpy matrix instead (read once, ~50 ms; again only after the
store changes) and finds the same neighbours in ~1 ms. Same numbers, bit for bit: the int8 dot
products and squared norms are integers below 2 ** 24, exact in float32 whatever the order of
the sums, and the distance is computed as sqlite-vec does, 1 - dot / (sqrt(|a|²) * sqrt(|b|²))
in double precision, rounded to float32; equal distances keep the table's order.
"""
from __future__ import annotations

import math

from .query_cache import QueryCache

MAX_BYTES = 64 << 20  # a table whose float32 copy would be larger stays with sqlite-vec


def nearest(conn, table: str, query: bytes, k: int) -> list[tuple[str, float]] | None:
    """(id, cosine distance) of the k vectors of an int8 vec0 table nearest to an int8 query,
    nearest first; None where the copy cannot stand in for sqlite-vec (too large a table, a
    zero vector, a length that does not match)."""
    matrix = QueryCache.of(conn).get(("int8 vectors", table), lambda: _load(conn, table))
    if matrix is None or k <= 0:
        return None
    import numpy as np

    ids, vectors, norms = matrix
    q = np.frombuffer(query, dtype=np.int8).astype(np.float32)
    q_norm = float(np.einsum("i,i->", q, q))
    if q.shape[0] != vectors.shape[1] or q_norm == 0:
        return None
    # einsum, not a BLAS product: OpenBLAS threads would spin on the other core after
    # every query (measured: 6.7 CPU-ms per query against 1.0), slowing the next embedding
    dot = np.einsum("ij,j->i", vectors, q).astype(np.float64)
    distance = (1 - dot / (norms * math.sqrt(q_norm))).astype(np.float32)
    order = np.argsort(distance, kind="stable")[:k]
    return [(ids[i], float(distance[i])) for i in order.tolist()]


def _load(conn, table: str):
    import numpy as np

    count, width = conn.execute(f"SELECT count(*), max(length(embedding)) FROM {table}").fetchone()
    if not count or count * (width or 0) * 4 > MAX_BYTES:
        return None
    rows = conn.execute(f"SELECT id, embedding FROM {table}").fetchall()
    if any(len(blob) != width for _, blob in rows):
        return None  # a malformed vector in a file made elsewhere: sqlite-vec decides
    vectors = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.int8).reshape(len(rows), width)
    vectors = vectors.astype(np.float32)
    squares = (vectors * vectors).sum(axis=1, dtype=np.float64)
    if not squares.all():
        return None  # a zero vector: its cosine distance is undefined
    return [r[0] for r in rows], vectors, np.sqrt(squares)
