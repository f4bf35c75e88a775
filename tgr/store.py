"""KnowledgeBase: the facade over one .db file (index, ask, info, stats, rebuild)."""
from __future__ import annotations

import json
import os
from collections import Counter
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from . import __version__
from .chunking import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS, chunk_text
from .db import (Connection, begin_writing, connect, get_meta, migrate, set_meta, settle, transaction,
                 unfinished_message)
from .errors import InputError, ModelMismatch, StoreError
from .gateway import Gateway, Usage
from .limits import loads
from .models import ChatModel, Embedder, vector_type
from .offline import OFFLINE_EXTRACTOR
from .prompts import DEFAULT_ENTITY_TYPES, Prompts, check_templates
from .providers import chat_for_store, chat_name, embedder_for_store, make_embedder
from .query import Answer, QuerySettings, Searcher
from .query_models import QueryModels, resolve_query_models
from .retrieve import Passage
from .safe import terminal_safe
from .writelock import WriterLock

if TYPE_CHECKING:
    from .ingest import Document

# The indexing stages (ingest, extract, merge, cluster, report, embed) are imported by the
# methods that run them: a question never needs them, and a cold `tgr ask` would pay for them.

Progress = Callable[[str, int, int], None]
Warn = Callable[[str], None]


@dataclass
class IndexSettings:
    """How a store is built; recorded in meta and reused by later runs on the same file."""

    chunk_size: int = DEFAULT_CHUNK_TOKENS
    chunk_overlap: int = DEFAULT_OVERLAP_TOKENS
    two_step: bool = False           # the seed's entities-then-triplets prompts (2 calls/chunk)
    gleanings: int = 0               # extra "what did you miss" rounds per chunk
    disambiguate: bool = False       # LLM check of same-name entities
    summary_tokens: int = 300        # descriptions longer than this are summarised
    max_cluster_size: int = 10
    seed: int = 42
    resolution: float = 1.0
    min_community_size: int = 2      # smaller communities get no report
    report_tokens: int = 3000        # context budget of one community report
    entity_types: str = DEFAULT_ENTITY_TYPES

    @classmethod
    def from_meta(cls, meta: dict) -> "IndexSettings":
        settings = cls()
        for f in fields(cls):
            raw = meta.get(f"setting.{f.name}")
            if raw is not None:
                setattr(settings, f.name, _setting_value(f.name, raw, getattr(settings, f.name)))
        return settings

    def to_meta(self) -> dict:
        return {f"setting.{k}": json.dumps(v) for k, v in asdict(self).items()}


@dataclass
class IndexSummary:
    documents_added: int = 0
    documents_removed: list = field(default_factory=list)  # sources of documents deleted or replaced
    documents: int = 0
    chunks: int = 0
    chunks_extracted: int = 0
    entities: int = 0
    relationships: int = 0
    communities: dict = field(default_factory=dict)
    reports: int = 0
    model_calls: int = 0
    local_computations: int = 0      # e.g. hashed embedding batches: no model, no tokens
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0
    max_in_flight: int = 0
    stage_seconds: dict = field(default_factory=dict)
    calls_by_stage: dict = field(default_factory=dict)
    wall_s: float = 0.0
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


class KnowledgeBase:
    """One tgr store. Use tgr.open(path) to get one; close() it (or use `with`)."""

    def __init__(self, path: str | os.PathLike, *, chat: ChatModel | str | None = None,
                 embedder: Embedder | str | None = None, base_url: str | None = None,
                 api_key: str | None = None, concurrency: int = 8, rpm: float | None = None,
                 timeout: float = 120.0, max_retries: int = 6, prompts: Prompts | dict | None = None,
                 create: bool = True, readonly: bool = False):
        self.path = Path(path)
        # Opening never migrates or writes an existing store; the first writing call does.
        self.conn: Connection = connect(self.path, create=create and not readonly, readonly=readonly,
                                        upgrade=False)
        self._upgraded = False
        self._lock = WriterLock(self.path) if str(path) != ":memory:" else None
        self.readonly = readonly or (str(path) != ":memory:" and not os.access(self.path, os.W_OK))
        self._prompt_templates, self._prompt_types = _given_prompts(prompts)
        self._model_options = dict(base_url=base_url, api_key=api_key, timeout=timeout)
        self._chat_spec = chat
        self._embed_spec = embedder
        self._gateway_options = dict(concurrency=concurrency, rpm=rpm, max_retries=max_retries)
        self._gateway: Gateway | None = None
        self._reader: Gateway | None = None
        self._resolved: tuple[ChatModel | None, Embedder] | None = None
        self._asking: QueryModels | None = None  # the models questions use (tgr.query_models)
        self.model_note: str | None = None  # why questions fell back to extractive answers

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._release_models()
        self.conn.close()
        if self._lock:
            self._lock.close()  # after the connection: see tgr/writelock.py

    def _release_models(self) -> None:
        """Close the gateways and the model clients this store created; they are rebuilt on use."""
        for gateway in (self._gateway, self._reader):
            if gateway:
                gateway.close()
        for model in (*(self._resolved or ()), *(self._asking.models() if self._asking else ())):
            if model is not None and hasattr(model, "close") and model not in (self._chat_spec, self._embed_spec):
                model.close()  # only what this store created; models passed in belong to the caller
        self._gateway = self._reader = self._resolved = self._asking = None

    @property
    def meta(self) -> dict:
        return get_meta(self.conn)

    @property
    def prompts(self) -> Prompts:
        """The prompts in force: tgr's defaults, then those the store records, then those given."""
        recorded = self.meta.get("prompts")
        try:
            stored = check_templates(json.loads(recorded)) if recorded else {}
        except (ValueError, TypeError, AttributeError) as exc:  # a .db made elsewhere is untrusted
            raise StoreError(f"{self.path}: the prompts recorded in this store are not usable: {exc}") from None
        return Prompts().with_overrides({**stored, **self._prompt_templates})

    def _record_prompts(self) -> None:
        """Keep the templates in force in meta (those that differ from the defaults)."""
        with transaction(self.conn):
            set_meta(self.conn, prompts=json.dumps(self.prompts.overrides(), sort_keys=True, ensure_ascii=False))

    def _models(self, lenient: bool = False) -> tuple[ChatModel | None, Embedder]:
        """The chat model and embedder, built once per KnowledgeBase from the specs.

        lenient (questions only): a recorded chat model that cannot be reached here
        falls back to extractive answers, noted in self.model_note.
        """
        if self._resolved is None:
            chat = self._chat_model(lenient)
            embedder = self._embed_spec
            if embedder is None or isinstance(embedder, str):
                embedder = embedder_for_store(self.meta, embedder, **self._model_options)
            else:
                built = self.meta.get("embed_model")
                if built and built != embedder.name:
                    raise ModelMismatch(f"this store was built with the embedding model {built}, "
                                        f"not {embedder.name}")
            self._resolved = (chat, embedder)
        return self._resolved

    def _chat_model(self, lenient: bool = False) -> ChatModel | None:
        """The chat model from its spec, else the one the store records (None: extractive)."""
        chat = self._chat_spec
        if chat is not None and not isinstance(chat, str):
            return chat
        chat, self.model_note = chat_for_store(self.meta, chat, lenient=lenient, **self._model_options)
        return chat

    def gateway(self, run_id: int | None = None) -> Gateway:
        """The model gateway for indexing: reads and writes the cache and the ledger."""
        if self._gateway is None:
            chat, embedder = self._models()
            self._gateway = Gateway(self.conn, chat, embedder, **self._gateway_options)
        self._gateway.run_id = run_id
        return self._gateway

    def _query_gateway(self) -> Gateway:
        """Queries read the cache but never write: asking leaves the file untouched. Models
        out of reach are left out (see tgr.query_models), noted in self.model_note."""
        if self._reader is None:
            self._asking = resolve_query_models(self.meta, self._chat_spec, self._embed_spec, **self._model_options)
            self.model_note = self._asking.note
            self._reader = Gateway(self.conn, self._asking.chat, self._asking.embedder, write_cache=False,
                                   **self._gateway_options)
        return self._reader

    def _writable(self, command: str, warn: Warn | None = None) -> None:
        """Called before writing: refuse a read-only store, take the writer lock (waiting for
        another process's run to finish), run pending migrations."""
        if self.readonly:
            raise StoreError(f"{self.path}: read-only file, cannot {command}")
        if self._lock and not self._lock.try_acquire():
            (warn or (lambda m: None))(f"another tgr process is writing to {self.path}; waiting for it "
                                       "to finish (its model answers will be reused, not paid again)")
            # an open connection would keep the other run from folding its WAL back in
            self._release_models()
            self.conn.close()
            self._lock.wait()
            self.conn = connect(self.path, create=False, upgrade=False)
            self._upgraded = False
        if not self._upgraded:
            migrate(self.conn)
            self._upgraded = True

    # -- indexing -------------------------------------------------------------------------

    def settings(self, **overrides) -> IndexSettings:
        """The store's settings (from meta), with overrides applied and checked."""
        settings = IndexSettings.from_meta(self.meta)
        if overrides.get("entity_types") is None and self._prompt_types:  # given with the prompts
            overrides = {**overrides, "entity_types": self._prompt_types}
        has_chunks = self.conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None
        for name, value in overrides.items():
            if value is None:
                continue
            if name not in IndexSettings.__dataclass_fields__:
                raise TypeError(f"unknown index setting {name!r}")
            if has_chunks and name in ("chunk_size", "chunk_overlap") and getattr(settings, name) != value:
                raise StoreError(f"{self.path}: chunked with {name.replace('_', ' ')} "
                                 f"{getattr(settings, name)}; use a new store for {value}")
            setattr(settings, name, value)
        return settings

    def index(self, paths: Iterable[str], *, progress: Progress | None = None, warn: Warn | None = None,
              stdin=None, portable: bool | str = False, **overrides) -> IndexSummary:
        """Ingest documents and bring every stage up to date; returns a summary.

        Safe to interrupt: everything committed is kept, and the same call resumes. With no
        paths, only the work the store itself still holds is finished (chunks not yet
        extracted, then every derived stage): a shipped or interrupted file needs no input files.
        portable (True, or a local embedder's spec): also keep the local embedder's vectors,
        for recipients who cannot reach the store's own embedder (see tgr.portable).
        """
        from .ingest import read_documents

        warnings: list[str] = []

        def on_warning(message: str) -> None:
            warnings.append(message)
            (warn or (lambda m: None))(message)

        paths = list(paths)
        documents = read_documents(paths, on_warning, stdin=stdin) if paths else []
        if not documents and (paths or not self._has_documents()):
            raise InputError("nothing to index: " + ("; ".join(warnings) if warnings else "no documents given"))
        self._writable("index", on_warning)  # before the settings: another run may be choosing them
        if portable:
            from .portable import DEFAULT_PORTABLE, start_portable
            start_portable(self.conn, make_embedder(DEFAULT_PORTABLE if portable is True else portable))
        settings = self.settings(**overrides)
        if settings.disambiguate and self._models()[0] is None:
            on_warning("--disambiguate needs a chat model; the offline default merges same-name entities")
        summary = self._run("index", settings,
                            lambda gw, s: self._index(gw, settings, documents, s, progress, on_warning))
        summary.warnings = warnings
        return summary

    def _has_documents(self) -> bool:
        return self.conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None

    def _run(self, command: str, settings: IndexSettings, body) -> IndexSummary:
        from .embeddings import clear_embeddings

        started = time.perf_counter()
        self._writable(command)
        chat, embedder = self._models()
        self._check_chat_model(chat)
        begin_writing(self.conn)
        if "embed_model" not in self.meta:  # vectors of a run whose embedder never answered: not ours
            clear_embeddings(self.conn)
        with transaction(self.conn):
            run_id = self.conn.execute(
                "INSERT INTO runs(command, settings, status) VALUES (?, ?, 'running')",
                (command, json.dumps(asdict(settings)))).lastrowid
        gateway = self.gateway(run_id)
        before = {k: Usage(**asdict(v)) for k, v in gateway.usage.items()}
        summary = IndexSummary()
        status = "failed"
        gateway.on_answer = self._model_recorder(settings, chat, embedder)
        try:
            body(gateway, summary)
            gateway.on_answer(None)  # a run that needed no model call still records them
            status = "done"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            summary.wall_s = round(time.perf_counter() - started, 3)
            self._fill_summary(summary, gateway, before)
            with transaction(self.conn):
                self.conn.execute("UPDATE runs SET status = ?, counts = ?, wall_s = ? WHERE id = ?",
                                  (status, json.dumps(summary.to_dict()), summary.wall_s, run_id))
            complete = settle(self.conn)
            if self._lock:
                self._lock.release()
        if not complete:  # the work is saved, but the .db alone is not the whole store yet
            raise StoreError(unfinished_message(self.path))
        return summary

    def _check_chat_model(self, chat: ChatModel | None) -> None:
        """Refuse to continue a store with another chat model than it was built with,
        unless one was asked for explicitly (a missing key must not silently switch an
        LLM-built store to the offline extractor, or the other way round)."""
        built = self.meta.get("chat_model")
        current = chat_name(chat)
        if self._chat_spec is not None or not built or built == current:
            return
        if self.conn.execute("SELECT 1 FROM extractions LIMIT 1").fetchone() is None:
            return
        raise ModelMismatch(f"{self.path} was built with the chat model {built}, but {current} is what is "
                            f"configured now; pass --chat-model {built} (with its key or endpoint) to "
                            f"continue, or name another model with --chat-model to mix them on purpose")

    def _model_recorder(self, settings: IndexSettings, chat: ChatModel | None, embedder: Embedder):
        """Record the settings now, and each model in meta once it has answered (an unreachable
        endpoint leaves meta as it was). Returns the gateway's on_answer hook."""
        with transaction(self.conn):
            set_meta(self.conn, **settings.to_meta(), tgr_version=__version__)
        pending = {"chat", "embed"}

        def record(kind: str | None) -> None:
            kinds = pending & ({"chat", "embed"} if kind is None else {kind})
            if chat is None:  # the offline extractor cannot fail to answer
                kinds |= pending & {"chat"}
            if not kinds:
                return
            pending.difference_update(kinds)
            meta, values = self.meta, {}
            if "chat" in kinds:
                values.update(chat_model=chat_name(chat),
                              extractor=chat.name if chat else OFFLINE_EXTRACTOR)
                if "created_with" not in meta:
                    values["created_with"] = values["chat_model"]
            if "embed" in kinds and "embed_model" not in meta:
                values.update(embed_model=embedder.name, embed_dim=embedder.dim, embed_vector=vector_type(embedder))
            if values:
                set_meta(self.conn, **values)  # inside the answer's own transaction

        return record

    def _index(self, gateway: Gateway, settings: IndexSettings, documents: list[Document],
               summary: IndexSummary, progress: Progress | None, warn: Warn) -> None:
        from .corpus import IndexWhileWaiting
        from .embeddings import EmbedWhileWaiting
        from .extract import extract_chunks

        timer = _stage_timer(summary)
        self._record_prompts()
        with timer("ingest"):
            summary.documents_added = self._store_documents(documents, settings, progress, warn, summary)
        prompts = _with_types(self.prompts, settings.entity_types)
        # chunks were stored without their full-text terms: those, then chunk vectors, are
        # computed while extraction answers are awaited
        idle = _one_after_another(IndexWhileWaiting(self.conn), EmbedWhileWaiting(self.conn, gateway, ("chunks",)))
        with timer("extract"):
            summary.chunks_extracted = extract_chunks(
                self.conn, gateway, prompts, two_step=settings.two_step, gleanings=settings.gleanings,
                progress=progress, idle=idle)
        self._derive(gateway, settings, summary, progress, timer, force_merge=False)

    def _derive(self, gateway: Gateway, settings: IndexSettings, summary: IndexSummary,
                progress: Progress | None, timer, force_merge: bool,
                force_cluster: bool = False, force_reports: bool = False) -> None:
        """merge -> embed -> cluster -> report -> embed reports, each only if needed."""
        from . import freshness
        from .cluster_ahead import ClusterAhead
        from .communities import ClusterMeanwhile, cluster, is_clustered
        from .corpus import index_pending
        from .embeddings import EmbedWhileWaiting, embed_all
        from .merge import merge_graph, needs_merge
        from .reports import build_reports, report_settings, reports_state

        with timer("fts"):  # terms the extraction wave left (or an interrupted run)
            index_pending(self.conn)
        prompts = _with_types(self.prompts, settings.entity_types)
        # were the reports complete for the graph and communities as they are before this run?
        report_key = report_settings(gateway, prompts, settings.report_tokens, settings.min_community_size)
        reports_complete = freshness.recorded(self.conn, "reports") == reports_state(self.conn, report_key)
        changed: set[str] = set()
        merge_inputs = needs_merge(self.conn, gateway, prompts, settings.summary_tokens, settings.disambiguate)
        merged = force_merge or merge_inputs is not None
        cluster_settings = dict(max_cluster_size=settings.max_cluster_size, seed=settings.seed,
                                resolution=settings.resolution)
        # if the communities match the graph before the merge, the merge says what moved
        clustered_before = merged and not force_cluster and is_clustered(self.conn, **cluster_settings)
        # a first clustering needs only the graph: it runs while the summaries are awaited
        ahead = ClusterAhead(cluster_settings) if merged and not self.conn.execute(
            "SELECT 1 FROM communities LIMIT 1").fetchone() else None
        # an incremental one, of the graph the merge is about to store, in the same wait
        meanwhile = ClusterMeanwhile(self.conn, cluster_settings) if clustered_before and not ahead else None
        try:
            if merged:
                with timer("merge"):
                    changed |= merge_graph(self.conn, gateway, prompts, disambiguate=settings.disambiguate,
                                           summary_tokens=settings.summary_tokens, progress=progress,
                                           inputs=merge_inputs, everything=force_merge,
                                           before_summaries=ahead.start if ahead else None,
                                           while_summaries=meanwhile.prepare if meanwhile else None
                                           )["changed_entities"]
            report = progress or (lambda *a: None)
            with timer("cluster"):  # one step: Leiden gives no progress of its own
                report("cluster", 0, 1)
                clustered = cluster(self.conn, **cluster_settings, force=force_cluster,
                                    changed=set(changed) if clustered_before else None, ahead=ahead,
                                    meanwhile=meanwhile)
                changed |= clustered["changed_ids"]
                report("cluster", 1, 1)
        finally:
            if ahead is not None:  # no child outlives the run
                ahead.close()
        with timer("report"):  # reports whose material changed are rewritten, only those are looked at
            build_reports(self.conn, gateway, prompts, budget=settings.report_tokens,
                          min_size=settings.min_community_size, refresh=merged or clustered["changed"]
                          or not reports_complete, force=force_reports,
                          changed=changed if reports_complete else None, progress=progress,
                          idle=EmbedWhileWaiting(self.conn, gateway))
            with transaction(self.conn):
                freshness.record(self.conn, "reports", reports_state(self.conn, report_key))
        with timer("embed"):  # whatever the waits left over, and the reports
            embed_all(self.conn, gateway, ("chunks", "entities", "reports"), progress)
        with timer("portable"):  # the local embedder's vectors, where the store keeps them
            from .portable import keep_portable
            keep_portable(self.conn, self._model_options, progress)

    def _store_documents(self, documents: list[Document], settings: IndexSettings,
                         progress: Progress | None, warn: Warn, summary: IndexSummary) -> int:
        from .corpus import add_document, delete_documents, source_key

        known = {r[0]: (r[1], r[2]) for r in self.conn.execute("SELECT id, source, external_id FROM documents")}
        by_source: dict[tuple, list[str]] = {}  # (file, row id) -> stored documents
        for doc_id, (source, external_id) in known.items():
            key = source_key(source)
            if key is not None:
                by_source.setdefault((key, external_id), []).append(doc_id)
        # a file that gives several documents without ids (rows with no id): nothing says which
        # stored document a changed one replaces, so those are only ever added
        unnamed = Counter(source_key(d.source) for d in documents if d.external_id is None)
        new = [d for d in documents if d.id not in known]
        report = progress or (lambda *a: None)
        report("ingest", 0, len(new))
        for done, doc in enumerate(new, 1):
            chunks = chunk_text(doc.text, doc.id, settings.chunk_size, settings.chunk_overlap)
            # the same file (or the same row id of a file) with other content is a new version:
            # it replaces the old one
            key = source_key(doc.source)
            old = by_source.pop((key, doc.external_id), []) if key is not None else []
            if len(old) > 1 or (doc.external_id is None and unnamed[key] > 1):
                old = []
            with transaction(self.conn):
                delete_documents(self.conn, old)
                add_document(self.conn, doc, chunks, index=False)  # terms: see _index
            for old_id in old:
                warn(f"{doc.where}: content changed since it was indexed; replaced the old version")
                summary.documents_removed.append(known.pop(old_id)[0])
            report("ingest", done, len(new))
        return len(new)

    def _fill_summary(self, summary: IndexSummary, gateway: Gateway, before: dict) -> None:
        count = lambda sql: self.conn.execute(sql).fetchone()[0]
        summary.documents = count("SELECT count(*) FROM documents")
        summary.chunks = count("SELECT count(*) FROM chunks")
        summary.entities = count("SELECT count(*) FROM entities")
        summary.relationships = count("SELECT count(*) FROM relationships")
        summary.communities = {str(level): n for level, n in self.conn.execute(
            "SELECT level, count(*) FROM communities GROUP BY level ORDER BY level")}
        summary.reports = count("SELECT count(*) FROM reports")
        total = Usage()
        for stage, usage in gateway.usage.items():
            delta = Usage(**{k: getattr(usage, k) - getattr(before.get(stage, Usage()), k)
                             for k in Usage.__dataclass_fields__})
            if delta.calls or delta.cache_hits:
                summary.calls_by_stage[stage] = delta.calls
            total.add(delta)
        summary.model_calls = total.calls
        summary.local_computations = total.local
        summary.cache_hits = total.cache_hits
        summary.prompt_tokens = total.prompt_tokens
        summary.completion_tokens = total.completion_tokens
        summary.prompt_chars = total.prompt_chars
        summary.max_in_flight = gateway.max_in_flight

    def rebuild(self, stage: str, *, progress: Progress | None = None, **overrides) -> IndexSummary:
        """Rebuild one derived stage from what the file holds: graph, embeddings, communities, reports."""
        from .embeddings import clear_embeddings

        stages = ("graph", "embeddings", "communities", "reports")
        if stage not in stages:
            raise ValueError(f"stage must be one of {', '.join(stages)}")
        self._writable(f"rebuild {stage}")
        settings = self.settings(**overrides)
        if stage == "embeddings":
            # re-embedding is how a store moves to another embedding model
            embedder = self._embed_spec
            if embedder is None or isinstance(embedder, str):
                embedder = make_embedder(embedder, **self._model_options)
            embedder.embed(["embedding probe"])  # fail here, before the old vectors are dropped
            self._embed_spec = embedder
            clear_embeddings(self.conn)
            with transaction(self.conn):
                set_meta(self.conn, embed_model=embedder.name, embed_dim=embedder.dim,
                         embed_vector=vector_type(embedder))
            self._release_models()

        def body(gateway: Gateway, summary: IndexSummary) -> None:
            timer = _stage_timer(summary)
            self._record_prompts()
            self._derive(gateway, settings, summary, progress, timer, force_merge=stage == "graph",
                         force_cluster=stage == "communities", force_reports=stage == "reports")

        return self._run(f"rebuild {stage}", settings, body)

    def delete(self, documents: Iterable[str], *, dry_run: bool = False,
               progress: Progress | None = None) -> IndexSummary:
        """Remove documents (by id or unique id prefix, source path, or title) with their
        chunks, index rows, vectors and extractions, and bring the graph, communities and
        reports up to date: what only those documents said disappears, nothing else is redone.

        dry_run: only say which documents would go (summary.documents_removed). An unknown
        name raises InputError before anything is removed.
        """
        from .corpus import delete_documents, find_documents

        specs = [d for d in documents]
        if not specs:
            raise InputError("nothing to delete: no documents given")
        found, missing = find_documents(self.conn, specs)
        if missing:
            raise InputError(f"{self.path}: no such document: {', '.join(missing)} "
                             f"(give a path, title or document id)")
        if dry_run:
            return IndexSummary(documents_removed=[d.source for d in found],
                                documents=self.conn.execute("SELECT count(*) FROM documents").fetchone()[0])
        settings = self.settings()

        def body(gateway: Gateway, summary: IndexSummary) -> None:
            timer = _stage_timer(summary)
            with timer("delete"):
                with transaction(self.conn):
                    delete_documents(self.conn, [d.id for d in found])
            summary.documents_removed = [d.source for d in found]
            self._derive(gateway, settings, summary, progress, timer, force_merge=False)

        return self._run("delete", settings, body)

    def estimate(self, paths: Iterable[str], **overrides) -> dict:
        """Expected model calls and tokens of indexing these paths, before spending anything."""
        from .estimate import estimate_index
        from .ingest import read_documents

        settings = self.settings(**overrides)
        chat = self._chat_model()  # the embedder is not needed for an estimate
        return estimate_index(self.conn, chat, _with_types(self.prompts, settings.entity_types),
                              read_documents(list(paths)), chunk_size=settings.chunk_size,
                              chunk_overlap=settings.chunk_overlap, two_step=settings.two_step,
                              gleanings=settings.gleanings)

    # -- querying -------------------------------------------------------------------------

    def ask(self, question: str, mode: str = "local", *, context_only: bool = False,
            warn: Warn | None = None, **query_settings) -> Answer:
        """Answer a question: mode 'local' (default), 'global' or 'naive'.

        Uses the models the store records unless others were given; what cannot be reached
        here is left out (see tgr.query_models) and said once through warn (and in
        model_note and the answer's notes).
        """
        searcher = self._searcher(question, QuerySettings(**query_settings))
        notes = self._asking.notes_for(context_only)
        self._asking.say(notes, warn)
        answer = searcher.ask(question.strip(), mode, context_only=context_only)
        answer.notes = notes
        return answer

    def answer_from(self, question: str, passages: list[Passage], mode: str = "naive", *,
                    context_only: bool = False, warn: Warn | None = None, **query_settings) -> Answer:
        """An answer from given ranked passages (tgr.many: several stores' fused ranking), with
        this store's models, as ask() would write it from them."""
        searcher = self._searcher(question, QuerySettings(**query_settings))
        notes = self._asking.notes_for(context_only)
        self._asking.say(notes, warn)
        answer = searcher.answer_passages(question.strip(), passages, mode, context_only)
        answer.notes = notes
        return answer

    def retrieve(self, question: str, mode: str = "local", k: int = 10, *,
                 warn: Warn | None = None) -> list[Passage]:
        """The k passages that best answer the question, best first, with their text, score,
        document (source, title, own id, metadata) and character offsets. No model is asked
        for an answer; global mode gives the chunks behind the best community reports.
        Vectors out of reach are left out, said once through warn (and in model_note)."""
        searcher = self._searcher(question, QuerySettings())
        self._asking.say(self._asking.notes_for(context_only=True), warn)
        return searcher.retriever.retrieve(question.strip(), mode, k).passages

    def _searcher(self, question: str, settings: QuerySettings) -> Searcher:
        if not question or not question.strip():
            raise ValueError("the question is empty")
        if not self.meta.get("embed_model"):
            raise StoreError(f"{self.path}: empty store; index documents first (tgr index {self.path} DOCS...)")
        gateway = self._query_gateway()
        return Searcher(self.conn, gateway, self.prompts, settings, self._asking.tables)

    # -- inspection -----------------------------------------------------------------------

    def graph(self):
        """The entity graph as a networkx.Graph (node and edge attributes from the store)."""
        import networkx as nx

        graph = nx.Graph()
        level0 = dict(self.conn.execute(
            "SELECT m.entity_id, m.community_id FROM community_members m "
            "JOIN communities c ON c.id = m.community_id WHERE c.level = 0"))
        for eid, name, etype, desc, degree, mentions in self.conn.execute(
                "SELECT id, name, type, description, degree, mentions FROM entities ORDER BY id"):
            graph.add_node(eid, name=name, type=etype, description=desc, degree=degree,
                           mentions=mentions, community=level0.get(eid, ""))
        for rid, src, dst, predicate, desc, weight in self.conn.execute(
                "SELECT id, source_id, target_id, predicate, description, weight FROM relationships ORDER BY id"):
            graph.add_edge(src, dst, id=rid, predicate=predicate, description=desc, weight=weight)
        return graph

    def info(self) -> dict:
        """Counts, models, settings, levels and size of the store."""
        meta = self.meta
        count = lambda sql: self.conn.execute(sql).fetchone()[0]
        levels = {str(level): {"communities": n, "reports": r} for level, n, r in self.conn.execute(
            "SELECT c.level, count(*), count(r.community_id) FROM communities c "
            "LEFT JOIN reports r ON r.community_id = c.id GROUP BY c.level ORDER BY c.level")}
        chat = meta.get("chat_model", "-")
        offline = chat == chat_name(None)
        embeddings = "hashed" if meta.get("embed_model", "tgr:").startswith("tgr:") else meta["embed_model"]
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {
            "path": str(self.path),
            "size_bytes": size,
            "tgr_version": meta.get("tgr_version"),
            "schema_version": int(meta.get("schema_version", 0)),
            "chat_model": chat,
            "embed_model": meta.get("embed_model", "-"),
            "embed_dim": int(meta.get("embed_dim", 0) or 0),
            "embed_vector": meta.get("embed_vector", "float32"),
            "quality": (f"offline default: heuristic extraction, {embeddings} embeddings, extractive "
                        "reports and answers (lower quality than an LLM)") if offline else "LLM-built",
            "documents": count("SELECT count(*) FROM documents"),
            "chunks": count("SELECT count(*) FROM chunks"),
            "chunks_extracted": count("SELECT count(*) FROM extractions"),
            "entities": count("SELECT count(*) FROM entities"),
            "relationships": count("SELECT count(*) FROM relationships"),
            "levels": levels,
            "reports": count("SELECT count(*) FROM reports"),
            "cached_answers": count("SELECT count(*) FROM llm_cache"),
            "runs": count("SELECT count(*) FROM runs"),
            "settings": asdict(IndexSettings.from_meta(meta)),
            "prompts": _recorded_prompt_names(meta.get("prompts")),
        }

    def stats(self) -> dict:
        """The cost ledger: calls and tokens per stage, and per run."""
        by_stage = [dict(zip(("stage", "kind", "calls", "cache_hits", "prompt_tokens", "completion_tokens",
                              "model_seconds"), row)) for row in self.conn.execute(
            "SELECT stage, kind, sum(calls), sum(cache_hits), sum(prompt_tokens), sum(completion_tokens), "
            "round(sum(model_seconds), 2) FROM cost_by_stage GROUP BY stage, kind "
            "ORDER BY (SELECT min(id) FROM model_calls m WHERE m.stage = cost_by_stage.stage)")]
        runs = []
        for run_id, command, status, started, wall in self.conn.execute(
                "SELECT id, command, status, started_at, wall_s FROM runs ORDER BY id"):
            calls, hits, pt, ct = self.conn.execute(  # local computations are not calls
                "SELECT coalesce(sum(CASE WHEN kind != 'local' THEN 1 - cache_hit END), 0), "
                "coalesce(sum(cache_hit), 0), "
                "coalesce(sum(CASE WHEN cache_hit = 0 THEN prompt_tokens END), 0), "
                "coalesce(sum(CASE WHEN cache_hit = 0 THEN completion_tokens END), 0) "
                "FROM model_calls WHERE run_id = ?", (run_id,)).fetchone()
            runs.append({"run": run_id, "command": command, "status": status, "started_at": started,
                         "wall_s": wall, "calls": calls, "cache_hits": hits, "prompt_tokens": pt,
                         "completion_tokens": ct})
        return {"by_stage": by_stage, "runs": runs}


def _setting_value(name: str, raw: str, default):
    """A setting from a store's meta, checked against the type and range of its default."""
    try:
        value = loads(raw)
    except ValueError:
        value = None
    kind = type(default)
    ok = type(value) is kind or (kind is float and type(value) is int)
    if ok and kind in (int, float):
        ok = 0 <= value <= 10_000_000
    if ok and kind is str:
        ok = len(value) <= 10_000
    if not ok:
        raise StoreError(f"meta setting.{name} holds {str(raw)[:40]!r}, not a valid {kind.__name__}")
    return value


def _stage_timer(summary: IndexSummary):
    """timer(stage) -> a context manager adding the block's wall time to the summary."""

    @contextmanager
    def timed(stage: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = summary.stage_seconds
            seconds[stage] = round(seconds.get(stage, 0) + time.perf_counter() - start, 4)

    return timed


def _one_after_another(*steps):
    """An idle step that runs each step until it has nothing left, then the next."""
    pending = list(steps)

    def step() -> bool:
        while pending:
            if pending[0]():
                return True
            pending.pop(0)
        return False

    return step


def _recorded_prompt_names(recorded: str | None) -> str:
    """For info: which templates the store customises (names only)."""
    try:
        names = sorted(json.loads(recorded)) if recorded else []
    except (ValueError, TypeError):
        return "unreadable"
    return ", ".join(terminal_safe(str(n)) for n in names) + " (custom)" if names else "defaults"


def _given_prompts(prompts: Prompts | dict | None) -> tuple[dict, str | None]:
    """(templates that differ from the defaults, entity types or None) from a Prompts or a dict."""
    if prompts is None:
        return {}, None
    if isinstance(prompts, Prompts):
        types = prompts.entity_types if prompts.entity_types != DEFAULT_ENTITY_TYPES else None
        return prompts.overrides(), types
    templates = dict(prompts)
    types = templates.pop("entity_types", None)
    return check_templates(templates), types


def _with_types(prompts: Prompts, entity_types: str) -> Prompts:
    from dataclasses import replace

    return prompts if prompts.entity_types == entity_types else replace(prompts, entity_types=entity_types)


def open(path: str | os.PathLike, **options) -> KnowledgeBase:  # noqa: A001 - mirrors tgr.open
    """Open (or create) the store at path. Options: chat, embedder, base_url, api_key,
    concurrency, rpm, timeout, max_retries, prompts, create, readonly.

    A store is untrusted input: it is checked before use, and opening or asking never
    writes it; the first index/rebuild migrates it (one writer process at a time)."""
    return KnowledgeBase(path, **options)
