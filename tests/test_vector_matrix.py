"""The in-memory copy of an int8 vec0 table finds sqlite-vec's neighbours, distances bit for bit."""
from __future__ import annotations

import random
import struct

from tgr.store.db import raw_connection
from tgr.query.vector_matrix import nearest

DIM = 24


def int8(values) -> bytes:
    return struct.pack(f"{len(values)}b", *values)


def table(rng: random.Random, rows: int):
    conn = raw_connection()
    conn.execute(f"CREATE VIRTUAL TABLE vec_t USING vec0(id TEXT PRIMARY KEY, "
                 f"embedding int8[{DIM}] distance_metric=cosine, chunk_size=8)")
    vectors = [[rng.randint(-127, 127) for _ in range(DIM)] for _ in range(rows)]
    vectors[5] = vectors[9] = vectors[17]  # equal vectors: equal distances, a tie to break
    vectors[30] = [2 * x // 3 for x in vectors[3]]  # nearly the same direction
    for n, v in enumerate(vectors):
        conn.execute("INSERT INTO vec_t(id, embedding) VALUES (?, vec_int8(?))", (f"v{n:03d}", int8(v)))
    return conn, vectors


def sqlite_vec(conn, query: bytes, k: int):
    return conn.execute("SELECT id, distance FROM vec_t WHERE embedding MATCH vec_int8(?) AND k = ? "
                        "ORDER BY distance", (query, k)).fetchall()


def test_neighbours_and_distances_are_sqlite_vecs():
    rng = random.Random(4)
    conn, vectors = table(rng, 60)
    queries = [int8(vectors[17]), int8(vectors[3])] + [
        int8([rng.randint(-127, 127) for _ in range(DIM)]) for _ in range(30)]
    for query in queries:
        for k in (1, 5, 20, 60, 100):
            assert nearest(conn, "vec_t", query, k) == sqlite_vec(conn, query, k)


def test_the_copy_follows_the_table_and_steps_aside_where_it_cannot_stand_in():
    rng = random.Random(8)
    conn, vectors = table(rng, 40)
    query = int8(vectors[0])
    assert nearest(conn, "vec_t", query, 3)[0][0] == "v000"
    conn.execute("INSERT INTO vec_t(id, embedding) VALUES ('new', vec_int8(?))", (query,))
    # the copy is read again once the table has changed
    assert {i for i, _ in nearest(conn, "vec_t", query, 2)} == {"new", "v000"}
    assert nearest(conn, "vec_t", query, 2) == sqlite_vec(conn, query, 2)
    assert nearest(conn, "vec_t", int8([0] * DIM), 3) is None  # a zero query: no cosine
    assert nearest(conn, "vec_t", int8([1] * (DIM - 1)), 3) is None  # the wrong length
    conn.execute("INSERT INTO vec_t(id, embedding) VALUES ('zero', vec_int8(?))", (int8([0] * DIM),))
    assert nearest(conn, "vec_t", query, 3) is None  # a zero vector stored: sqlite-vec decides
