"""Embed stage: keep vec_entities, vec_chunks and vec_reports in step with their rows.

A row is (re-)embedded only when the text it would embed changed: embed_hash is the hash
of the text in its vector, and a change of that text sets it to NULL (schema.sql's
triggers on entities and reports, whoever writes: the merge, a report, an edit by hand;
chunk text never changes), so the stage reads only the rows marked NULL, and re-running
an index embeds nothing.
"""
from __future__ import annotations

import itertools
from typing import Callable

from ..store.db import Connection, drop_vec_tables, ensure_vec_tables, serialize, transaction, vec_param
from ..store.vector_rows import TARGETS, embedded_texts
from ..models.gateway import Gateway
from ..models.clients import embeds, vector_type
from ..text import content_hash, estimate_tokens

Progress = Callable[[str, int, int], None]

BATCH = 256
PAGE = 4096  # rows read at a time
EMBED_REQUEST = 64  # one embedding request: what an idle step may do between answers


def embed_all(conn: Connection, gateway: Gateway, kinds=("chunks", "entities", "reports"),
              progress: Progress | None = None, page: int = PAGE) -> int:
    """Embed every row whose text changed since it was last embedded, reading page rows at a
    time; returns rows embedded."""
    ensure_vec_tables(conn, gateway.embedder.dim, vector_type(gateway.embedder))
    total = 0
    for kind in kinds:
        total += _embed_kind(conn, gateway, kind, progress or (lambda *a: None), page)
    return total


def _todo(conn: Connection, gateway: Gateway, kind: str, after: str | None = None,
          limit: int | None = None) -> list[tuple[str, str, str]]:
    """(id, text, hash) of the rows whose text changed since it was last embedded, by id:
    up to limit (all if None) after the id `after`."""
    model = gateway.embedder.name
    return [(rid, text, content_hash(model, text))
            for rid, text, _ in embedded_texts(conn, kind, "embed_hash IS NULL", after=after, limit=limit)]


def _todo_pages(conn: Connection, gateway: Gateway, kind: str, size: int = PAGE):
    """_todo a page at a time, each read once the one before is done: the texts of a whole
    store are never in memory together."""
    after = None
    while page := _todo(conn, gateway, kind, after, size):
        yield page
        if len(page) < size:  # the read reached the table's end: no row is left after it
            return
        after = page[-1][0]


def _todo_count(conn: Connection, kind: str) -> int:
    _, table, _, _ = TARGETS[kind]
    return conn.execute(f"SELECT count(*) FROM {table} WHERE embed_hash IS NULL").fetchone()[0]


def reusable_vectors(rows, model: str, width: int) -> dict[str, bytes]:
    """{text hash: vector} of another store's (text, recorded hash, vector) rows whose recorded
    hash is their text's with model and whose vector has width bytes: safe to take as made."""
    return {recorded: blob for text, recorded, blob in rows
            if isinstance(text, str) and isinstance(blob, bytes) and len(blob) == width
            and recorded == content_hash(model, text)}


def _write(conn: Connection, kind: str, batch: list[tuple[str, str, str]], vectors, vtype: str,
           replacing: bool = True) -> None:
    """Store a batch's vectors; replacing=False: the vec table holds none of its rows yet."""
    vec_table, table, key, _ = TARGETS[kind]
    with transaction(conn):
        if replacing:
            conn.executemany(f"DELETE FROM {vec_table} WHERE id = ?", [(rid,) for rid, _, _ in batch])
        conn.executemany(f"INSERT INTO {vec_table}(id, embedding) VALUES (?, {vec_param(vtype)})",
                         [(rid, serialize(v, vtype)) for (rid, _, _), v in zip(batch, vectors)])
        conn.executemany(f"UPDATE {table} SET embed_hash = ? WHERE {key} = ?",
                         [(h, rid) for rid, _, h in batch])


def _embed_kind(conn: Connection, gateway: Gateway, kind: str, report: Progress, page_size: int = PAGE) -> int:
    vec_table, table, key, _ = TARGETS[kind]
    if not embeds(kind, gateway.embedder.name):
        with transaction(conn):  # up to date with this model, with no vector (a store built
            conn.execute(f"DELETE FROM {vec_table}")  # before this rule loses its unused ones)
            for page in _todo_pages(conn, gateway, kind, page_size):
                conn.executemany(f"UPDATE {table} SET embed_hash = ? WHERE {key} = ?",
                                 [(h, rid) for rid, _, h in page])
        return 0
    with transaction(conn):  # vectors of rows that no longer exist
        conn.executemany(f"DELETE FROM {vec_table} WHERE id = ?", _stale_vectors(conn, vec_table, table, key))
    # an empty vec table (a first build) has no old vector to delete before each insert
    replacing = conn.execute(f"SELECT 1 FROM {vec_table} LIMIT 1").fetchone() is not None
    stage = f"embed-{kind}"
    pages = _todo_pages(conn, gateway, kind, page_size)
    first = next(pages, [])
    # one page holds them all (an add): counted without another pass over the table
    total = len(first) if len(first) < page_size else _todo_count(conn, kind)
    report(stage, 0, total)
    done = 0
    for page in itertools.chain([first], pages):
        for start in range(0, len(page), BATCH):
            batch = page[start:start + BATCH]
            _write(conn, kind, batch, gateway.embed(stage, [text for _, text, _ in batch]),
                   vector_type(gateway.embedder), replacing)
            done += len(batch)
            report(stage, done, max(total, done))
    return done


def _stale_vectors(conn: Connection, vec_table: str, table: str, key: str) -> list[tuple[str]]:
    """The ids of vec_table's vectors whose row no longer exists, from sqlite-vec's id list
    (its shadow table {vec_table}_rowids): a scan of the vec0 table itself reads every chunk
    of vectors (0.23 CPU-s of 89 k entities at 100 M characters; the list alone 0.04)."""
    return conn.execute(f"SELECT id FROM {vec_table}_rowids WHERE id NOT IN (SELECT {key} FROM {table}) "
                        "ORDER BY rowid").fetchall()


class EmbedWhileWaiting:
    """An idle step for Gateway.chat_many: each call embeds one request's worth of rows, so
    that embedding overlaps the wait for chat answers. Returns False when nothing is left."""

    def __init__(self, conn: Connection, gateway: Gateway, kinds=("chunks", "entities"), page: int = PAGE):
        ensure_vec_tables(conn, gateway.embedder.dim, vector_type(gateway.embedder))
        self.conn, self.gateway = conn, gateway
        self.kinds = list(kinds)
        self.kind, self.page = "", page
        self.after: str | None = None  # the last id of the kind's page read
        self.todo: list[tuple[str, str, str]] = []

    def __call__(self) -> bool:
        while not self.todo:  # the next page of this kind, else the next kind
            if self.kind:
                self.todo = _todo(self.conn, self.gateway, self.kind, self.after, self.page)
                if self.todo:
                    self.after = self.todo[-1][0]
                    break
            if not self.kinds:
                return False
            self.kind, self.after = self.kinds.pop(0), None
        take = _request_rows(self.todo, getattr(self.gateway.embedder, "request_tokens", None))
        batch, self.todo = self.todo[:take], self.todo[take:]
        vectors = self.gateway.embed(f"embed-{self.kind}", [text for _, text, _ in batch], EMBED_REQUEST)
        _write(self.conn, self.kind, batch, vectors, vector_type(self.gateway.embedder))
        return True


def _request_rows(todo: list[tuple[str, str, str]], budget: int | None) -> int:
    """Rows for one idle request: EMBED_REQUEST, or fewer when the embedder names a token
    budget (an in-process model holds the main thread for as long as it computes)."""
    if budget is None:
        return EMBED_REQUEST
    used = 0
    for n, (_, text, _) in enumerate(todo[:EMBED_REQUEST]):
        used += estimate_tokens(text)
        if n and used > budget:
            return n
    return EMBED_REQUEST


def clear_embeddings(conn: Connection) -> None:
    """Forget every embedding (used when switching embedding models)."""
    with transaction(conn):
        drop_vec_tables(conn)
        for _, table, _, _ in TARGETS.values():
            conn.execute(f"UPDATE {table} SET embed_hash = NULL")
