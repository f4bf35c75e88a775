"""Copy what one checked input store holds into the target of a merge (tgr/build/merge_stores.py).

Only primary rows are copied: documents (re-chunked here with the shared settings, so every
chunk id is checked to be the content hash tgr would give it), extraction rows, chunk vectors
whose recorded hash proves they were made from that text by the shared embedder, the model
cache (rows whose key is not the hash of their own model, prompt and parameters are left
out) and the runs ledger with provenance. Everything derived (graph, communities, reports,
entity and report vectors) is computed again on the union, but the input's entity and report
vectors are offered to it (known_vectors): a text of the union the input embedded already, by
the same embedder, is not embedded again. All inside the caller's transaction; the input is
only ever read.
"""
from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from typing import Callable

from ..ingest.chunking import chunk_text
from ..ingest.corpus import add_document
from ..store.db import Connection, has_table, vec_param, vector_bytes
from ..errors import StoreError
from ..models.gateway import cache_key
from ..ingest.sources import Document
from ..parsing import MAX_MODEL_JSON_CHARS, loads
from ..store.size_limits import MAX_CONTEXT_TEXT
from ..text import content_hash

_BATCH = 500  # rows per executemany


@dataclass
class Copied:
    """What one input added to the target."""
    documents: int = 0
    chunks: int = 0
    extractions: int = 0
    chunk_vectors: int = 0
    cached_answers: int = 0
    runs: int = 0
    skipped_cache_rows: int = 0
    known_vectors: int = 0  # entity and report vectors offered to the union's embed step
    new_chunks: list[str] = field(default_factory=list)


@dataclass
class Target:
    """The shared settings every input was built with, and the target connection."""
    conn: Connection
    chunk_size: int
    chunk_overlap: int
    embed_model: str
    embed_dim: int
    embed_vector: str


def copy_store(target: Target, source: Connection, label: str,
               report: Callable[[int], None] | None = None) -> Copied:
    """Copy one input's documents, extractions, chunk vectors, cache and runs into the target."""
    copied = Copied()
    _copy_documents(target, source, label, copied, report or (lambda n: None))
    _copy_extractions(target.conn, source, label, copied)
    _copy_chunk_vectors(target, source, copied)
    _copy_cache(target.conn, source, label, copied)
    _copy_runs(target.conn, source, label, copied)
    return copied


def _refuse(label: str, what: str) -> StoreError:
    return StoreError(f"{label}: refused, {what}")


def _text(label: str, table: str, value, *, optional: bool = False):
    if (value is None and optional) or isinstance(value, str):
        return value
    raise _refuse(label, f"a {table} row holds {type(value).__name__} where text belongs")


def _copy_documents(target: Target, source: Connection, label: str, copied: Copied, report) -> None:
    """Each document new to the target, with the chunks tgr's chunking gives it; the input's
    chunk ids must be exactly those (same chunking, ids that are content hashes)."""
    conn = target.conn
    known = {r[0] for r in conn.execute("SELECT id FROM documents")}
    rows = source.execute("SELECT id, source, title, text, external_id, metadata, added_at FROM documents "
                          "ORDER BY added_at, id")
    for done, (doc_id, where, title, text, external_id, metadata, added_at) in enumerate(rows, 1):
        for value, optional in ((doc_id, False), (where, False), (title, False), (text, False),
                                (external_id, True), (metadata, False), (added_at, False)):
            _text(label, "documents", value, optional=optional)
        report(done)
        if doc_id != content_hash(text):
            raise _refuse(label, f"document {doc_id[:40]!r} is not the hash of its text")
        if doc_id in known:
            continue
        chunks = chunk_text(text, doc_id, target.chunk_size, target.chunk_overlap)
        stored = {r[0] for r in source.execute("SELECT id FROM chunks WHERE document_id = ?", (doc_id,))}
        if stored != {c.id for c in chunks}:
            raise _refuse(label, f"the chunks of document {doc_id} are not what chunk size {target.chunk_size} "
                                 f"and overlap {target.chunk_overlap} give (made by another tgr version?)")
        try:
            extra = loads(metadata, max_chars=MAX_MODEL_JSON_CHARS)
        except ValueError:
            extra = None
        if not isinstance(extra, dict):
            raise _refuse(label, f"document {doc_id}: its metadata is not a JSON object")
        doc = Document(id=doc_id, source=where, title=title, text=text, external_id=external_id, metadata=extra)
        copied.chunks += add_document(conn, doc, chunks, index=False)  # terms: the derive step
        conn.execute("UPDATE documents SET added_at = ? WHERE id = ?", (added_at, doc_id))
        copied.new_chunks.extend(c.id for c in chunks)
        copied.documents += 1
        known.add(doc_id)


def _copy_extractions(conn: Connection, source: Connection, label: str, copied: Copied) -> None:
    """The extraction rows of the chunks the target had none for (key columns are left for
    the merge to fill in: they are tgr's to compute, not the input's to say)."""
    have = {r[0] for r in conn.execute("SELECT chunk_id FROM extractions")}
    wanted = {r[0] for r in conn.execute("SELECT id FROM chunks")} - have
    queries = [
        ("SELECT chunk_id, extractor, entities, relations, created_at FROM extractions",
         "INSERT INTO extractions(chunk_id, extractor, entities, relations, created_at) VALUES (?, ?, ?, ?, ?)",
         (1, 4)),
        ("SELECT chunk_id, position, name, type, description FROM extracted_entities",
         "INSERT INTO extracted_entities(chunk_id, position, name, type, description) VALUES (?, ?, ?, ?, ?)",
         (2, 3, 4)),
        ("SELECT chunk_id, position, source, target, predicate, description, strength FROM extracted_relations",
         "INSERT INTO extracted_relations(chunk_id, position, source, target, predicate, description, strength) "
         "VALUES (?, ?, ?, ?, ?, ?, ?)", (2, 3, 4, 5)),
    ]
    for select, insert, text_columns in queries:
        table = select.rsplit(" ", 1)[1]
        cursor = source.execute(select)
        while batch := cursor.fetchmany(_BATCH):
            keep = [row for row in batch if row[0] in wanted]
            for row in keep:
                for i in text_columns:
                    _text(label, table, row[i])
                if table == "extracted_relations" and not isinstance(row[6], (int, float)):
                    raise _refuse(label, "an extracted_relations row holds a strength that is not a number")
            conn.executemany(insert, keep)
            if table == "extractions":
                copied.extractions += len(keep)


def _copy_chunk_vectors(target: Target, source: Connection, copied: Copied) -> None:
    """Vectors of the new chunks whose recorded embed hash is the hash of their text with the
    shared embedder (the others are embedded again by the derive step)."""
    if not copied.new_chunks or not has_table(source, "vec_chunks"):
        return
    conn = target.conn
    width = vector_bytes(target.embed_dim, target.embed_vector)
    new = set(copied.new_chunks)
    recorded = {cid: h for cid, h in source.execute("SELECT id, embed_hash FROM chunks WHERE embed_hash IS NOT NULL")
                if cid in new}
    claimed = {}  # the hash of the text as stored here (tgr's chunking), not as the input says
    for cid, text in conn.execute(f"SELECT id, substr(text, 1, {MAX_CONTEXT_TEXT}) FROM chunks "
                                  "WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(recorded)),)):
        if recorded[cid] == content_hash(target.embed_model, text):
            claimed[cid] = recorded[cid]
    rows = []
    for cid, blob in source.execute("SELECT id, embedding FROM vec_chunks"):
        if cid in claimed and isinstance(blob, bytes) and len(blob) == width:
            rows.append((cid, blob, claimed[cid]))
    parameter = vec_param(target.embed_vector)
    for start in range(0, len(rows), _BATCH):
        batch = rows[start:start + _BATCH]
        conn.executemany("DELETE FROM vec_chunks WHERE id = ?", [(cid,) for cid, _, _ in batch])
        conn.executemany(f"INSERT INTO vec_chunks(id, embedding) VALUES (?, {parameter})",
                         [(cid, blob) for cid, blob, _ in batch])
        conn.executemany("UPDATE chunks SET embed_hash = ? WHERE id = ?", [(h, cid) for cid, _, h in batch])
    copied.chunk_vectors = len(rows)


def known_vectors(target: Target, source: Connection) -> dict[str, array]:
    """The input's entity and report vectors by the hash of the text they were made from
    (content_hash(embedder, text), as tgr.build.embed records it), where that hash is the
    hash of the row's text as the input holds it with the shared embedder."""
    from .embed import TARGETS, reusable_vectors

    width = vector_bytes(target.embed_dim, target.embed_vector)
    code = "b" if target.embed_vector == "int8" else "f"
    found: dict[str, array] = {}
    for kind in ("entities", "reports"):
        vec_table, table, key, text_sql = TARGETS[kind]
        if not has_table(source, vec_table):
            continue
        texts = {rid: (text, recorded) for rid, text, recorded in source.execute(
            f"SELECT {key}, substr({text_sql}, 1, {MAX_CONTEXT_TEXT}), embed_hash FROM {table} "
            "WHERE embed_hash IS NOT NULL")}
        rows = ((*texts[rid], blob) for rid, blob in source.execute(f"SELECT id, embedding FROM {vec_table}")
                if rid in texts)
        found.update((h, array(code, blob)) for h, blob in reusable_vectors(rows, target.embed_model, width).items())
    return found


def _copy_cache(conn: Connection, source: Connection, label: str, copied: Copied) -> None:
    """Every cached model answer the target lacks, if its key is its own hash."""
    cursor = source.execute("SELECT key, model, prompt, params, response, prompt_tokens, completion_tokens, "
                            "created_at FROM llm_cache")
    while batch := cursor.fetchmany(_BATCH):
        keep = []
        for row in batch:
            key, model, prompt, params, response, prompt_tokens, completion_tokens, _ = row
            try:
                ok = all(isinstance(v, str) for v in (key, model, prompt, params, response)) and \
                    isinstance(prompt_tokens, int) and isinstance(completion_tokens, int) and \
                    cache_key(model, prompt, loads(params)) == key
            except ValueError:
                ok = False
            if ok:
                keep.append(row)
            else:
                copied.skipped_cache_rows += 1
        before = conn.total_changes
        conn.executemany("INSERT OR IGNORE INTO llm_cache(key, model, prompt, params, response, prompt_tokens, "
                         "completion_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", keep)
        copied.cached_answers += conn.total_changes - before


def _copy_runs(conn: Connection, source: Connection, label: str, copied: Copied) -> None:
    """The input's runs, named '<command> (from <input>)', with their ledger rows; a run the
    target already holds (the same input merged twice) is not copied again."""
    seen = {(r[0], r[1]) for r in conn.execute("SELECT started_at, counts FROM runs")}
    for run_id, command, settings, status, counts, started_at, wall_s in source.execute(
            "SELECT id, command, settings, status, counts, started_at, wall_s FROM runs ORDER BY id").fetchall():
        if (started_at, counts) in seen or not all(isinstance(v, str) for v in (command, settings, status)):
            continue
        name = command if " (from " in command else f"{command} (from {label})"
        new_id = conn.execute("INSERT INTO runs(command, settings, status, counts, started_at, wall_s) "
                              "VALUES (?, ?, ?, ?, ?, ?)",
                              (name, settings, status, counts, started_at, wall_s)).lastrowid
        calls = source.execute(
            "SELECT stage, kind, model, cache_hit, attempts, prompt_tokens, completion_tokens, usage_source, "
            "latency_ms, created_at FROM model_calls WHERE run_id = ? ORDER BY id", (run_id,))
        while batch := calls.fetchmany(_BATCH):
            conn.executemany(
                "INSERT INTO model_calls(run_id, stage, kind, model, cache_hit, attempts, prompt_tokens, "
                "completion_tokens, usage_source, latency_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(new_id, *row) for row in batch])
        copied.runs += 1
