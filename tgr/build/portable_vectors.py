"""Portable vectors: the bundled local embedder's vectors, shipped beside an API embedder's.

A store built with an API embedder can only search its own vectors where that API can be
reached. Its author may also keep portable vectors (`tgr index STORE --portable`): the local
embedder's int8 vectors of every chunk, entity and report, in vec_portable_* tables (each row
with the hash of the text it embeds, so a later run embeds only what changed, and drops what
went). Meta records the portable embedder (portable_embed_model, _dim, _vector); once a store
has portable vectors, every index, delete and rebuild keeps them in step. A recipient with no
key searches them (tgr.models.selection); one who has the key searches the store's own.
`tgr merge` keeps them when an input does, and reuses the inputs' vectors of texts that are
unchanged in the union (portable_vectors) instead of embedding them again.
"""
from __future__ import annotations

from typing import Callable

from ..store.db import (PORTABLE_MODEL_KEY, PORTABLE_TABLES, Connection, ensure_portable_tables, get_meta, has_table,
                 serialize, set_meta, transaction, vec_param, vector_bytes)
from .embed import TARGETS, reusable_vectors
from ..errors import ModelError
from ..store.size_limits import MAX_CONTEXT_TEXT
from ..models.clients import Embedder, embeds, vector_type
from ..text import content_hash

DEFAULT_PORTABLE = "local:multilingual-e5-small"
BATCH = 16  # rows per engine call: the progress moves every few seconds on a small machine
PORTABLE_META = (PORTABLE_MODEL_KEY, "portable_embed_dim", "portable_embed_vector")

Progress = Callable[[str, int, int], None]


def portable_model(conn: Connection) -> str | None:
    """The portable embedder the store keeps vectors of, or None."""
    return get_meta(conn).get(PORTABLE_MODEL_KEY)


def start_portable(conn: Connection, embedder: Embedder) -> None:
    """Record that this store keeps portable vectors of this (local) embedder (inside no
    transaction); a store that keeps another one's is refused."""
    if not embedder.name.startswith("local:"):  # hashed vectors add nothing to full text
        raise ModelError(f"portable vectors need a local model embedder (local:multilingual-e5-small), "
                         f"not {embedder.name}")
    kept = portable_model(conn)
    if kept and kept != embedder.name:
        raise ModelError(f"this store keeps portable vectors of {kept}, not {embedder.name}")
    with transaction(conn):
        set_meta(conn, **{PORTABLE_MODEL_KEY: embedder.name, "portable_embed_dim": embedder.dim,
                          "portable_embed_vector": vector_type(embedder)})


def keep_portable(conn: Connection, model_options: dict, progress: Progress | None = None,
                  known: dict[str, bytes] | None = None) -> int:
    """Refresh the portable vectors if the store keeps them (the index pipeline's last step)."""
    from ..models.registry import make_embedder

    spec = portable_model(conn)
    if not spec:
        return 0
    options = {k: v for k, v in model_options.items() if k == "timeout"}  # a local model: no key, no URL
    return refresh_portable(conn, make_embedder(spec, **options), progress, known)


def portable_vectors(conn: Connection, source: Connection) -> dict[str, bytes]:
    """source's portable vectors by the hash of the text each was made from, where source keeps
    those of conn's portable embedder (same name, dimension and element type) and the row it
    belongs to still holds that text (an interrupted run may have left a stale one)."""
    want, have = get_meta(conn), get_meta(source)
    if not want.get(PORTABLE_MODEL_KEY) or any(str(want.get(k)) != str(have.get(k)) for k in PORTABLE_META):
        return {}
    width = vector_bytes(int(want["portable_embed_dim"]), want["portable_embed_vector"])
    found: dict[str, bytes] = {}
    for kind, (_, table, key, text_sql) in TARGETS.items():
        vec_table = PORTABLE_TABLES[kind]
        if not has_table(source, vec_table):
            continue
        texts = dict(source.execute(f"SELECT {key}, substr({text_sql}, 1, {MAX_CONTEXT_TEXT}) FROM {table}"))
        rows = ((texts.get(rid), recorded, blob)
                for rid, blob, recorded in source.execute(f"SELECT id, embedding, input_hash FROM {vec_table}"))
        found.update(reusable_vectors(rows, want[PORTABLE_MODEL_KEY], width))
    return found


def adopt_portable(conn: Connection, sources: list[Connection]) -> None:
    """A store that keeps no portable vectors starts keeping those of the first source that
    does (tgr merge: the union of portable shards is portable too)."""
    if portable_model(conn):
        return
    for source in sources:
        meta = get_meta(source)
        if meta.get(PORTABLE_MODEL_KEY, "").startswith("local:") and meta.get("portable_embed_dim"):
            with transaction(conn):
                set_meta(conn, **{k: meta[k] for k in PORTABLE_META if k in meta})
            return


def refresh_portable(conn: Connection, embedder: Embedder, progress: Progress | None = None,
                     known: dict[str, bytes] | None = None) -> int:
    """Bring the portable vectors in step with the chunks, entities and reports: embed the
    rows whose text changed or that have none (known: vectors already made, by the hash of
    their text, stored as they are), drop those of rows that went. Returns rows embedded."""
    vtype = vector_type(embedder)
    ensure_portable_tables(conn, embedder.dim, vtype)
    report = progress or (lambda *a: None)
    total = 0
    for kind, (_, table, key, text_sql) in TARGETS.items():
        vec_table = PORTABLE_TABLES[kind]
        if not embeds(kind, embedder.name):  # unused (tgr.models.clients.embeds)
            with transaction(conn):
                conn.execute(f"DELETE FROM {vec_table}")
            continue
        kept = dict(conn.execute(f"SELECT id, input_hash FROM {vec_table}").fetchall())
        rows = conn.execute(f"SELECT {key}, substr({text_sql}, 1, {MAX_CONTEXT_TEXT}) FROM {table} "
                            f"ORDER BY {key}").fetchall()
        todo = [(rid, text, content_hash(embedder.name, text)) for rid, text in rows]
        todo = [(rid, text, h) for rid, text, h in todo if kept.get(rid) != h]
        gone = set(kept) - {rid for rid, _ in rows}
        reused = [(rid, known[h], h) for rid, _, h in todo if known and h in known]
        todo = [(rid, text, h) for rid, text, h in todo if not (known and h in known)]
        with transaction(conn):
            conn.executemany(f"DELETE FROM {vec_table} WHERE id = ?",
                             [(rid,) for rid in sorted(gone | {r for r, _, _ in reused})])
            conn.executemany(f"INSERT INTO {vec_table}(id, embedding, input_hash) VALUES (?, {vec_param(vtype)}, ?)",
                             reused)
        stage = f"portable-{kind}"
        report(stage, 0, len(todo))
        for start in range(0, len(todo), BATCH):
            batch = todo[start:start + BATCH]
            vectors = embedder.embed([text for _, text, _ in batch])
            with transaction(conn):
                conn.executemany(f"DELETE FROM {vec_table} WHERE id = ?", [(rid,) for rid, _, _ in batch])
                conn.executemany(f"INSERT INTO {vec_table}(id, embedding, input_hash) VALUES (?, {vec_param(vtype)}, ?)",
                                 [(rid, serialize(v, vtype), h) for (rid, _, h), v in zip(batch, vectors)])
            report(stage, min(len(todo), start + BATCH), len(todo))
        total += len(todo)
    return total
