"""The build side of a store: index, delete, rebuild and estimate.

One run is one Build whose stages read top to bottom:
ingest -> store documents -> extract -> merge -> cluster -> report -> embed.
Each stage does only what its inputs say is needed; the runs ledger frames the run.
Imported only by the commands that build: a question never loads the stages.
"""
from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from typing import Callable, Iterable

from . import stage_inputs as freshness
from .batch import BatchPending, runner_for
from .cluster import cluster, is_clustered
from ..ingest.corpus import delete_documents, document_count, find_documents, index_pending, store_documents
from ..store.db import begin_writing, rollback_open, set_meta, transaction, unfinished_message
from ..store.integrity import DigestTracker, record_digest
from .embed import clear_embeddings, embed_all
from ..errors import InputError, StoreError, tell
from .estimate import estimate_index
from .extract import chunk_size_for, extract_chunks
from ..models.gateway import Gateway
from ..ingest.sources import read_documents
from .ledger import (fill_summary, finish_run, learn_chat_endpoint, record_dimension, record_models,
                     remember_chat_endpoint, start_run, usage_before)
from .merge_graph import needs_merge, plan_merge, store_merge, summarise
from .idle_work import Overlap
from .memory import give_back
from .portable_vectors import DEFAULT_PORTABLE, keep_portable, refresh_portable, start_portable
from ..models.registry import make_embedder
from .report import build_reports, report_settings, reports_state
from .resolve import forget_resolutions
from .role_providers import extractor_for, report_writer_for
from ..settings import IndexSettings, IndexSummary, with_types

Progress = Callable[[str, int, int], None]
Warn = Callable[[str], None]
REBUILD_STAGES = ("graph", "embeddings", "communities", "reports")
COLLECT_FROM_CHUNKS = 2000  # chunks from which each stage ends with a full garbage collection


class Build:
    """One run's stages over a store (tgr/session.py StoreAdmin), in the order they run."""

    def __init__(self, store, gateway: Gateway, settings: IndexSettings, summary: IndexSummary,
                 progress: Progress | None, warn: Warn | None = None):
        self.store, self.conn, self.gateway = store, store.conn, gateway
        self.settings, self.summary = settings, summary
        self.progress = progress or (lambda *a: None)
        self.warn = warn or (lambda m: None)
        self.prompts = with_types(store.prompts, settings.entity_types)
        self.cluster_settings = settings.cluster_options()
        self.overlap = Overlap(self.conn, gateway, self.cluster_settings)
        self.report_writer = report_writer_for(gateway, self.prompts, self.conn)
        self._is_large = False

    @contextmanager
    def stage(self, name: str):
        """A stage: its wall time in the summary, and the memory it freed given back after it."""
        try:
            with self.summary.timed(name):
                yield
        finally:
            if self._large():  # what a stage left in reference cycles, freed before the next one starts
                gc.collect()
            give_back()

    def _large(self) -> bool:
        """A store big enough that a full collection after each stage pays for itself (on a small
        one it costs more than it frees: a collection walks every live object, dictionaries included)."""
        if not self._is_large:
            self._is_large = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] >= COLLECT_FROM_CHUNKS
        return self._is_large

    def index(self, documents: list) -> None:
        """The whole pipeline for new documents (none: finish what the store holds)."""
        self.store.record_prompts()
        if documents:
            self.fit_chunks()
        self.store_documents(documents)
        self.extract()
        self.derive()

    def derive(self, *, force_merge: bool = False, force_cluster: bool = False, force_reports: bool = False) -> None:
        """Every stage after extraction, each only if its inputs changed (or forced)."""
        self.index_terms()
        reports_complete, report_key = self.reports_complete()
        merge_inputs = needs_merge(self.conn, self.gateway, self.prompts, self.settings.summary_tokens,
                                   self.settings.disambiguate, self.overlap.keys_ahead)
        self.overlap.keys_ahead = None  # (every document's names and words: needed no more this run)
        merged = force_merge or merge_inputs is not None
        # if the communities match the graph before the merge, the merge says what moved
        clustered_before = merged and not force_cluster and is_clustered(self.conn, **self.cluster_settings)
        first_clustering = not self.store.has_rows("communities")
        try:
            changed = self.merge(merge_inputs, force_merge, first_clustering, clustered_before) if merged else set()
            clustered = self.cluster(force_cluster, set(changed) if clustered_before else None)
        finally:
            self.overlap.close()  # no child outlives the run
        changed |= clustered["changed_ids"]
        self.report(merged or clustered["changed"] or not reports_complete, force_reports,
                    changed if reports_complete else None, report_key)
        self.embed()

    def store_documents(self, documents: list) -> None:
        def replaced(doc, old_source: str) -> None:
            self.warn(f"{doc.where}: content changed since it was indexed; replaced the old version")
            self.summary.documents_removed.append(old_source)

        with self.stage("ingest"):
            self.summary.documents_added = store_documents(
                self.conn, documents, chunk_size=self.settings.chunk_size,
                chunk_overlap=self.settings.chunk_overlap, progress=self.progress, replaced=replaced)

    def fit_chunks(self) -> None:
        """A new store's chunks, smaller where the chat model's context window (known) could not
        hold an extraction prompt and its answer: smaller chunks rather than cut prompts."""
        window = getattr(self.gateway.chat_model, "context_tokens", None)
        size = self.settings.chunk_size
        if not window or chunk_size_for(window) >= size or self.store.has_rows("chunks"):
            return
        fit = chunk_size_for(window)
        self.settings.chunk_size = fit
        self.settings.chunk_overlap = min(self.settings.chunk_overlap, fit // 10)
        with transaction(self.conn):
            set_meta(self.conn, **self.settings.to_meta())
        self.warn(f"{self.gateway.chat_model.name} reads {window} tokens at most: chunks of {fit} tokens "
                  f"instead of {size}, so that each extraction prompt and its answer fit")

    def extract(self) -> None:
        settings = self.settings
        with self.stage("extract"):
            extractor = extractor_for(self.gateway, self.prompts, two_step=settings.two_step,
                                      gleanings=settings.gleanings, warn=self.warn)
            self.summary.chunks_extracted = extract_chunks(
                self.conn, extractor, progress=self.progress, idle=self.overlap.during_extraction())

    def index_terms(self) -> None:
        with self.stage("fts"):  # terms the extraction wave left (or an interrupted run)
            index_pending(self.conn)

    def reports_complete(self) -> tuple[bool, str]:
        """Were the reports complete for the graph and communities as they are before this run?"""
        s = self.settings
        key = report_settings(self.report_writer, s.report_tokens, s.min_community_size)
        return freshness.recorded(self.conn, "reports") == reports_state(self.conn, key), key

    def merge(self, inputs, everything: bool, first_clustering: bool, clustered_before: bool) -> set[str]:
        """Extractions -> the entity graph; returns the entities that changed."""
        s = self.settings
        with self.stage("merge"):
            plan = plan_merge(self.conn, self.gateway, self.prompts, disambiguate=s.disambiguate,
                              summary_tokens=s.summary_tokens, progress=self.progress, inputs=inputs,
                              everything=everything, keys_assigned=True)  # by needs_merge in derive()
            idle = self.overlap.during_summaries(plan, first_clustering=first_clustering,
                                                 incremental=clustered_before)
            descriptions = summarise(self.gateway, plan, self.progress, idle)
            return store_merge(self.conn, plan, descriptions, self.progress)["changed_entities"]

    def cluster(self, force: bool, changed: set[str] | None) -> dict:
        """The graph -> its communities (one progress step: Leiden gives none of its own)."""
        with self.stage("cluster"):
            self.progress("cluster", 0, 1)
            clustered = cluster(self.conn, **self.cluster_settings, force=force, changed=changed,
                                precomputed=self.overlap.clustered_meanwhile)
            self.progress("cluster", 1, 1)
        return clustered

    def report(self, refresh: bool, force: bool, changed: set[str] | None, report_key: str) -> None:
        """Reports whose material changed are rewritten; only those are looked at."""
        s = self.settings
        with self.stage("report"):
            build_reports(self.conn, self.report_writer, budget=s.report_tokens,
                          min_size=s.min_community_size, refresh=refresh, force=force, changed=changed,
                          progress=self.progress, idle=self.overlap.during_reports())
            with transaction(self.conn):
                freshness.record(self.conn, "reports", reports_state(self.conn, report_key))

    def embed(self) -> None:
        with self.stage("embed"):  # whatever the waits left over, and the reports
            embed_all(self.conn, self.gateway, ("chunks", "entities", "reports"), self.progress)
        with self.stage("portable"):  # the local embedder's vectors, where the store keeps them
            self.summary.portable_vectors += keep_portable(self.conn, self.store.models.model_options,
                                                           self.progress, known=self.gateway.known_portable)


def index(store, paths: Iterable[str], *, progress: Progress | None, warn: Warn | None, stdin,
          overrides: dict, portable: bool | str = False, batch=None, keep_boilerplate: bool = False) -> IndexSummary:
    """Ingest documents and bring every stage up to date (see KnowledgeBase.index); portable
    (True or a local embedder's spec): keep portable vectors too (tgr/build/portable_vectors.py); batch: see
    KnowledgeBase.index."""
    warnings: list[str] = []

    def on_warning(message: str) -> None:
        warnings.append(message)
        tell(warn, message)

    paths = list(paths)
    documents = read_documents(paths, on_warning, stdin=stdin, keep_boilerplate=keep_boilerplate) if paths else []
    if not documents and (paths or not store.has_rows("documents")):
        said = "each file skipped is named above" if warn else "; ".join(warnings)  # no line twice
        raise InputError("nothing to index: " + (f"no document could be read ({said})" if warnings
                                                 else "no documents given"))
    store.writable("index", on_warning)  # before the settings: another run may be choosing them
    if portable:
        start_portable(store.conn, make_embedder(DEFAULT_PORTABLE if portable is True else portable))
    settings = store.settings(**overrides)
    if settings.disambiguate and store.models.models()[0] is None:
        on_warning("--disambiguate needs a chat model; the offline default merges same-name entities")
    boilerplate = {d.source: d.metadata["boilerplate_chars"] for d in documents
                   if d.metadata.get("boilerplate_chars")}
    summary = _run(store, "index", settings,  # (the documents leave the list as they are stored)
                   lambda gw, s: Build(store, gw, settings, s, progress, on_warning).index(documents),
                   batch=batch, progress=progress)
    summary.warnings = warnings
    summary.boilerplate = boilerplate
    return summary


def rebuild(store, stage: str, *, progress: Progress | None, overrides: dict) -> IndexSummary:
    """Rebuild one derived stage from what the file holds (see KnowledgeBase.rebuild)."""
    if stage not in REBUILD_STAGES:
        raise ValueError(f"stage must be one of {', '.join(REBUILD_STAGES)}")
    store.writable(f"rebuild {stage}")
    settings = store.settings(**overrides)
    if stage == "embeddings":
        store.models.switch_embedder(lambda: clear_embeddings(store.conn))

    def body(gateway: Gateway, summary: IndexSummary) -> None:
        store.record_prompts()
        if stage == "graph":
            forget_resolutions(store.conn)  # every document resolved afresh too, as a fresh build does
        Build(store, gateway, settings, summary, progress).derive(
            force_merge=stage == "graph", force_cluster=stage == "communities", force_reports=stage == "reports")

    return _run(store, f"rebuild {stage}", settings, body, progress=progress)


def add_portable(store, spec: str, *, progress: Progress | None) -> IndexSummary:
    """Keep portable vectors of the local embedder spec in a built store (`tgr rebuild STORE
    embeddings --add SPEC`): every chunk, entity and report is embedded with it, the store's
    own vectors stay as they are (see tgr.build.portable_vectors)."""
    embedder = make_embedder(spec)
    if embedder.name == store.meta.get("embed_model"):
        raise InputError(f"{store.path}: its own vectors are {embedder.name}'s already; "
                         "portable vectors of it would repeat them")
    if not store.has_rows("documents"):
        raise StoreError(f"{store.path}: empty store; index documents first (tgr index {store.path} DOCS...)")

    def body(gateway: Gateway, summary: IndexSummary) -> None:
        start_portable(store.conn, embedder)
        with summary.timed("portable"):
            summary.portable_vectors = refresh_portable(store.conn, embedder, progress)

    return _run(store, f"rebuild embeddings --add {embedder.name}", store.settings(), body)


def delete(store, specs: list[str], *, dry_run: bool, progress: Progress | None) -> IndexSummary:
    """Remove documents and bring the derived stages up to date (see KnowledgeBase.delete)."""
    if not specs:
        raise InputError("nothing to delete: no documents given")
    found, missing = find_documents(store.conn, specs)
    if missing:
        raise InputError(f"{store.path}: no such document: {', '.join(missing)} "
                         f"(give a path, title or document id)")
    if dry_run:
        return IndexSummary(documents_removed=[d.source for d in found], documents=document_count(store.conn))
    settings = store.settings()

    def body(gateway: Gateway, summary: IndexSummary) -> None:
        build = Build(store, gateway, settings, summary, progress)
        with summary.timed("delete"):
            with transaction(store.conn):
                delete_documents(store.conn, [d.id for d in found])
        summary.documents_removed = [d.source for d in found]
        build.derive()

    return _run(store, "delete", settings, body)


def estimate(store, paths: Iterable[str], overrides: dict, batch: bool = False) -> dict:
    """Expected model calls and tokens of indexing these paths, before spending anything."""
    settings = store.settings(**overrides)
    chat = store.models.chat_model()  # the embedder is not needed for an estimate
    return estimate_index(store.conn, chat, with_types(store.prompts, settings.entity_types),
                          read_documents(list(paths)), chunk_size=settings.chunk_size,
                          chunk_overlap=settings.chunk_overlap, two_step=settings.two_step,
                          gleanings=settings.gleanings, batch=batch)


def run_ledgered(store, command: str, settings: IndexSettings, body) -> IndexSummary:
    """One ledgered run of a build defined elsewhere (tgr/build/merge_stores.py: `tgr merge`); see _run."""
    return _run(store, command, settings, body)


@contextmanager
def _fewer_collections(young: int = 50_000):
    """Python's cyclic garbage collector run every `young` allocations, not every 700, while a
    build runs. A build allocates millions of short-lived objects and few cycles; at 700 the
    collector traverses its ever larger heap again and again. Building 西游记 (cachegrind, 2 MB
    L2): 7 full collections, a third of the build's L2 misses and 0.3-0.5 CPU-s; at 10,000 no
    full one, a quarter of the collector's time; at 50,000 a fifth; the same peak memory.
    The thresholds are put back afterwards; a collector turned off stays off."""
    thresholds = gc.get_threshold()
    if 0 < thresholds[0] < young:
        gc.set_threshold(young, *thresholds[1:])
    try:
        yield
    finally:
        if gc.get_threshold()[0] == young:  # (unless changed meanwhile)
            gc.set_threshold(*thresholds)


def _run(store, command: str, settings: IndexSettings, body, batch=None, progress=None) -> IndexSummary:
    """One ledgered run: lock and migrate, check the models, body(gateway, summary), then
    record the run's status and counts and fold the WAL in, whatever happened. batch: see
    KnowledgeBase.index (tgr/build/batch.py; None collects the jobs the store holds open)."""
    started = time.perf_counter()
    store.writable(command)
    chat, embedder = store.models.models()
    store.models.check_chat_model(chat)
    begin_writing(store.conn)
    tracker = DigestTracker(store.conn)  # before the run's first write: the digest follows its rows
    if "embed_model" not in store.meta:  # vectors of a run whose embedder never answered: not ours
        clear_embeddings(store.conn)
    record_models(store.conn, settings, chat, embedder)  # before the first model call
    run_id = start_run(store.conn, command, settings)
    gateway = store.models.gateway(run_id)
    before = usage_before(gateway)
    if callable(getattr(progress, "watch_usage", None)):  # the CLI's progress shows tokens per second
        progress.watch_usage(gateway.total_usage)
    summary = IndexSummary()
    status = "failed"
    try:
        record_dimension(store.conn, gateway)  # the embedder's probe, if it needs one: retried
        learn_chat_endpoint(store.conn, gateway, store.models.context_tokens)  # its form and window
        gateway.batch = runner_for(store.conn, chat, batch, progress)
        with _fewer_collections():
            body(gateway, summary)
        if gateway.batch:
            gateway.batch.abandon_stale()
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BatchPending:
        status = "waiting"  # for its batch jobs: the next run collects them
        raise
    finally:
        rollback_open(store.conn)  # what a Ctrl-C cut short (it may land between BEGIN and the with)
        if gateway.batch:
            gateway.batch.close()
            gateway.batch = None
        summary.wall_s = round(time.perf_counter() - started, 3)
        remember_chat_endpoint(store.conn, chat)
        fill_summary(store.conn, summary, gateway, before)
        finish_run(store.conn, run_id, status, summary)
        record_digest(store.conn, tracker)  # what `tgr check` compares the content with
        complete = store.settle()  # (with no other thread of this process keeping the WAL open)
        store.release_lock()
    if not complete:  # the work is saved, but the .db alone is not the whole store yet
        raise StoreError(unfinished_message(store.path))
    return summary

