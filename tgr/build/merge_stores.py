"""Build in pieces, merge once: `tgr merge OUT.db A.db B.db ...` (tgr.merge_stores in Python).

Stores indexed separately with the same settings (other machines, other days) are united
into OUT: their documents, chunks, extraction rows, chunk vectors, model cache and runs
ledger (tgr/build/merge_stores_copy.py). Then the derived stages (graph merge, clustering, reports,
entity and report vectors) run once on the union, through the same pipeline `tgr index
OUT.db` uses to finish what a file holds; every prompt an input has seen is answered from
the cache, no chunk is extracted again, and an entity or report text an input has embedded
already takes that input's vector (only texts new to the union are embedded). The same holds
for portable vectors (tgr/build/portable_vectors.py): the union keeps them when an input does. OUT may be new
or an existing store built with the same settings.

Inputs are untrusted: each is opened read-only with tgr's usual defences and checks
(tgr/store/db.py), nothing in it runs and nothing is written to it. An input that is not a
complete tgr store of this schema, or was built with other settings or models, is refused
with one line before OUT is touched.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..store import db, integrity, opening as storefile
from ..errors import InputError, StoreError
from ..store.untrusted_text import terminal_safe
from .merge_stores_copy import Copied, Target, copy_store, known_vectors
from .pipeline import Build, run_ledgered
from .portable_vectors import adopt_portable, portable_vectors
from ..settings import IndexSettings, IndexSummary

Progress = Callable[[str, int, int], None]
Warn = Callable[[str], None]

# meta that must agree between inputs (besides the index settings), and how to name it
_MODEL_KEYS = {"chat_model": "the chat model", "extractor": "the extractor", "embed_model": "the embedding model",
               "embed_dim": "embedding dimension", "embed_vector": "vector type"}
# meta a new OUT takes from its inputs
_INHERITED = ("chat_model", "extractor", "created_with", "embed_model", "embed_dim", "embed_vector", "prompts")


# tgr.open's model options and their defaults
_MODEL_DEFAULTS = dict(chat=None, embedder=None, base_url=None, api_key=None, concurrency=8, rpm=None,
                       timeout=120.0, max_retries=6)


@dataclass
class MergeSummary(IndexSummary):
    """An index summary of the union, with what each input added."""
    inputs: list = field(default_factory=list)


@dataclass
class _Input:
    label: str           # the path as given
    conn: db.Connection
    meta: dict
    documents: int


def merge_stores(out: str | os.PathLike, stores: Iterable[str | os.PathLike], *, open_store: Callable,
                 progress: Progress | None = None, warn: Warn | None = None, **options) -> MergeSummary:
    """Unite the stores into out (new, or an existing store built with the same settings) and
    bring the graph, communities, reports and embeddings up to date on the union.

    open_store opens OUT as the facade does (tgr.session.StoreAdmin: passed in by tgr.merge_stores,
    so that this stage never imports what runs it). options are those of tgr.open (chat, embedder,
    base_url, api_key, concurrency, ...): they serve the summaries and reports new to the union;
    extraction is never asked for. Raises StoreError (one line) for an input that cannot be
    merged; the inputs are never written.
    """
    warnings: list[str] = []

    def on_warning(message: str) -> None:
        warnings.append(message)
        (warn or (lambda m: None))(message)

    labels = _distinct(out, [str(s) for s in stores])
    inputs: list[_Input] = []
    try:
        for label in labels:
            inputs.append(_open_input(label))
        for empty in [i for i in inputs if not i.documents]:
            on_warning(f"{empty.label}: holds no documents; nothing to take from it")
        inputs = [i for i in inputs if i.documents]
        if not inputs:
            raise InputError("nothing to merge: " + ("the stores hold no documents" if labels else "no stores given"))
        _check_compatible(inputs[0].label, inputs[0].meta, inputs[1:])
        summary = _merge_into(Path(out), inputs, open_store, options, progress, on_warning)
    finally:
        for i in inputs:
            i.conn.close()
    summary.warnings = warnings
    return summary


def _distinct(out, labels: list[str]) -> list[str]:
    """The inputs, each once; OUT itself is not an input."""
    result: list[str] = []
    for label in labels:
        path = Path(label)
        if not path.is_file():
            raise StoreError(f"{label}: no such file")
        if Path(out).exists() and os.path.samefile(out, path):
            raise InputError(f"{label} is the output store; name it once, first (the others are merged into it)")
        if not any(os.path.samefile(path, seen) for seen in result):
            result.append(label)
    return result


def _open_input(label: str) -> _Input:
    """One input, opened read-only and checked: a complete tgr store of this schema."""
    wal = Path(f"{label}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(f"{label}: refused, its write-ahead log is not folded in (a run still writing, or "
                         f"interrupted); finish it with `tgr check --fix {label}`")
    conn = storefile.connect(label, create=False, readonly=True)  # refuses hostile, foreign and newer files
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < db.SCHEMA_VERSION:
            raise StoreError(f"{label}: refused, schema {version} is older than this tgr's {db.SCHEMA_VERSION}; "
                             f"upgrade it first with `tgr index {label}` (on a copy, if it must stay as it is)")
        damage = integrity.damage(conn)  # as `tgr check` reads it: every page, the full-text index
        if damage:
            raise StoreError(f"{label}: refused, damaged: {'; '.join(map(str, damage))}")
        recorded = integrity.recorded_digest(conn)
        if recorded is not None and recorded != integrity.digest_like(conn, recorded):
            raise StoreError(f"{label}: refused, its content changed since it was built (content digest); "
                             f"see `tgr check {label}`")
        meta = db.get_meta(conn)
        IndexSettings.from_meta(meta)  # refuses unusable settings
        if "embed_model" not in meta or not str(meta.get("embed_dim", "")).isdigit():
            raise StoreError(f"{label}: refused, it records no embedding model (an unfinished first index); "
                             f"finish it with `tgr index {label}` first")
        count = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        pending = count("SELECT count(*) FROM chunks c WHERE NOT EXISTS "
                        "(SELECT 1 FROM extractions x WHERE x.chunk_id = c.id)")
        if pending:
            raise StoreError(f"{label}: refused, {pending} chunks are not extracted yet (an interrupted index); "
                             f"finish it with `tgr index {label}` first: a merge never extracts")
        return _Input(label, conn, meta, count("SELECT count(*) FROM documents"))
    except BaseException:
        conn.close()
        raise


def _fingerprint(meta: dict) -> dict:
    """What must be the same for two stores to merge: index settings, prompts, models."""
    settings = {f"setting {k.replace('_', ' ')}": v for k, v in asdict(IndexSettings.from_meta(meta)).items()}
    try:
        prompts = json.loads(meta.get("prompts") or "{}")
    except ValueError:
        prompts = meta.get("prompts")
    return {**settings, "prompts": prompts,
            **{name: meta.get(key, "-") for key, name in _MODEL_KEYS.items()}}


def _check_compatible(reference: str, meta: dict, inputs: list[_Input]) -> None:
    """Refuse the first input whose settings or models differ from the reference's."""
    want = _fingerprint(meta)
    for i in inputs:
        got = _fingerprint(i.meta)
        for name, value in want.items():
            if got[name] != value:
                raise StoreError(f"{i.label}: refused, built with {_shown(name, got[name])}, but {reference} with "
                                 f"{_shown(name, value)}; only stores built with the same settings and models merge")


def _shown(name: str, value) -> str:
    if name == "prompts":
        return "custom prompts" if value else "the default prompts"
    return f"{name} {terminal_safe(repr(value))[:80]}"


def _merge_into(out: Path, inputs: list[_Input], open_store: Callable, options: dict, progress: Progress | None,
                warn: Warn) -> MergeSummary:
    """Open (or create) OUT, unite the inputs into it, then run the derived stages once."""
    existed = out.exists() and out.stat().st_size > 0
    store = open_store(out, create=True, readonly=False, prompts=None, **_model_options(options))
    united = False
    try:
        store.writable("merge", warn)
        if store.has_rows("documents"):
            _check_compatible(str(out), store.meta, inputs)
            _check_complete(store.conn, out)
        else:
            _inherit_meta(store.conn, inputs[0].meta)
        adopt_portable(store.conn, [i.conn for i in inputs])
        settings = store.settings()
        recluster = store.has_rows("communities")
        copies: list[Copied] = []

        def body(gateway, summary: IndexSummary) -> None:
            nonlocal united
            with summary.timed("union"):
                copies.extend(_unite(store.conn, settings, inputs, progress, gateway.known_vectors))
                for i in inputs:
                    gateway.known_portable.update(portable_vectors(store.conn, i.conn))
            united = True
            summary.documents_added = sum(c.documents for c in copies)
            # an existing store's communities are clustered again from scratch, so that the
            # union's are those of one build of every document (ids stay where members do)
            Build(store, gateway, settings, summary, progress, warn).derive(
                force_cluster=recluster and summary.documents_added > 0)

        summary = run_ledgered(store, "merge", settings, body)
    except BaseException:
        store.close()
        if not existed and not united:  # nothing of the inputs was kept: leave no half-made file
            for leftover in (out, *db.pending_wal(out)):
                leftover.unlink(missing_ok=True)
        raise
    store.close()
    result = MergeSummary(**summary.to_dict())
    result.inputs = [{"store": i.label, **{k: v for k, v in asdict(c).items() if k != "new_chunks"}}
                     for i, c in zip(inputs, copies)]
    return result


def _model_options(options: dict) -> dict:
    """tgr.open's model options, with its defaults (prompts are the inputs' own: none here)."""
    unknown = set(options) - set(_MODEL_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown option {sorted(unknown)[0]!r}")
    return {**_MODEL_DEFAULTS, **options}


def _check_complete(conn: db.Connection, out: Path) -> None:
    pending = conn.execute("SELECT count(*) FROM chunks c WHERE NOT EXISTS "
                           "(SELECT 1 FROM extractions x WHERE x.chunk_id = c.id)").fetchone()[0]
    if pending:
        raise StoreError(f"{out}: {pending} chunks are not extracted yet (an interrupted index); finish it with "
                         f"`tgr index {out}` first: a merge never extracts")


def _inherit_meta(conn: db.Connection, meta: dict) -> None:
    """A new OUT is built with its inputs' settings, prompts and models."""
    from .embed import clear_embeddings

    clear_embeddings(conn)  # an empty OUT may hold vectors of another embedder
    values = {k: v for k, v in meta.items() if k.startswith("setting.") or k in _INHERITED}
    with db.transaction(conn):
        db.set_meta(conn, **values)


def _unite(conn: db.Connection, settings: IndexSettings, inputs: list[_Input],
           progress: Progress | None, vectors: dict) -> list[Copied]:
    """Copy every input in one transaction: a refused row leaves OUT as it was. Each input's
    entity and report vectors go into vectors (hash of their text -> vector) for the embed step."""
    meta = db.get_meta(conn)
    target = Target(conn, settings.chunk_size, settings.chunk_overlap, meta["embed_model"],
                    int(meta["embed_dim"]), meta.get("embed_vector", "float32"))
    report = progress or (lambda *a: None)
    total = sum(i.documents for i in inputs)
    offset = 0
    copies = []
    db.ensure_vec_tables(conn, target.embed_dim, target.embed_vector)
    vectors.update(known_vectors(target, conn))  # OUT's own, where it held a store already
    report("union", 0, total)
    with db.transaction(conn):
        for i in inputs:
            try:
                copies.append(copy_store(target, i.conn, i.label, lambda n, o=offset: report("union", o + n, total)))
            except db.DatabaseError as exc:  # e.g. rows an input holds twice
                raise StoreError(f"{i.label}: refused, it holds rows that cannot be united ({exc}); "
                                 "nothing was merged") from None
            offset += i.documents
            found = known_vectors(target, i.conn)
            copies[-1].known_vectors = len(found)
            vectors.update(found)
    return copies
