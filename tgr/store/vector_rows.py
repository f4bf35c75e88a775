"""Which rows each vec0 table holds the vectors of, and the text each vector is made from.

A row's embed_hash is the hash of that text with the embedding model that made its vector
(NULL: no vector yet, or its text changed). The embed stage (tgr/build/embed.py) writes the
vectors; a migration (tgr/store/migrations.py) resets the hashes that are not current.
"""
from __future__ import annotations

from .db import Connection
from .size_limits import MAX_CONTEXT_TEXT
from ..text import content_hash

# (vec table, source table, key column, SQL for the text to embed)
TARGETS = {
    "entities": ("vec_entities", "entities", "id", "name || ': ' || description"),
    "chunks": ("vec_chunks", "chunks", "id", "text"),
    "reports": ("vec_reports", "reports", "community_id", "title || ': ' || summary"),
}


def embedded_texts(conn: Connection, kind: str, where: str, *, after: str | None = None,
                   limit: int | None = None) -> list[tuple[str, str, str | None]]:
    """(id, text to embed, embed_hash) of the rows of one kind that match where, by id: up to
    limit of them (all if None), with an id after `after` if given."""
    _, table, key, text_sql = TARGETS[kind]
    # no embedder reads more than this; a store's oversized text must not cost more
    later, args = ("", ()) if after is None else (f" AND {key} > ?", (after,))
    return conn.execute(f"SELECT {key}, substr({text_sql}, 1, {MAX_CONTEXT_TEXT}), embed_hash FROM {table} "
                        f"WHERE ({where}){later} ORDER BY {key} LIMIT ?",
                        (*args, -1 if limit is None else limit)).fetchall()


def forget_stale_embed_hashes(conn: Connection, model: str | None) -> int:
    """Set embed_hash to NULL wherever it is not the hash of the row's text with this
    embedding model (None: everywhere), so the embed stage redoes exactly those rows
    (inside the caller's transaction). Returns how many were reset."""
    reset = 0
    for kind, (_, table, key, _) in TARGETS.items():
        stale = [(rid,) for rid, text, old in embedded_texts(conn, kind, "embed_hash IS NOT NULL")
                 if model is None or old != content_hash(model, text)]
        conn.executemany(f"UPDATE {table} SET embed_hash = NULL WHERE {key} = ?", stale)
        reset += len(stale)
    return reset
