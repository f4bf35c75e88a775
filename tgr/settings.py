"""IndexSettings (how a store is built, kept in meta) and IndexSummary (what one run did)."""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace

from .ingest.chunking import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS
from .errors import StoreError
from .parsing import loads
from .prompts import DEFAULT_ENTITY_TYPES, Prompts, check_templates


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

    def cluster_options(self) -> dict:
        """The settings Leiden is run with (and that a stored clustering is checked against)."""
        return dict(max_cluster_size=self.max_cluster_size, seed=self.seed, resolution=self.resolution)


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
    portable_vectors: int = 0        # rows given a portable (local) vector this run: no model, no tokens
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0
    batch_calls: int = 0             # of model_calls, answered through a Batch API (half price)
    billed_tokens: int = 0           # prompt + completion tokens, each call at its price
    max_in_flight: int = 0
    extracted_by: str = ""           # who extracted the store's chunks (model, offline fallback and why)
    reports_by: dict = field(default_factory=dict)  # reports by generator (model, 'fallback', ...)
    answers_cut: int = 0             # model answers stopped looping or cut at max_tokens
    retries: int = 0                 # attempts beyond each call's first
    stage_seconds: dict = field(default_factory=dict)
    calls_by_stage: dict = field(default_factory=dict)
    wall_s: float = 0.0
    warnings: list = field(default_factory=list)
    boilerplate: dict = field(default_factory=dict)  # characters dropped as boilerplate, by file

    def to_dict(self) -> dict:
        return asdict(self)

    @contextmanager
    def timed(self, stage: str):
        """Add the block's wall time to stage_seconds[stage]."""
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = self.stage_seconds
            seconds[stage] = round(seconds.get(stage, 0) + time.perf_counter() - start, 4)


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


def given_prompts(prompts: Prompts | dict | None) -> tuple[dict, str | None]:
    """(templates that differ from the defaults, entity types or None) from a Prompts or a dict."""
    if prompts is None:
        return {}, None
    if isinstance(prompts, Prompts):
        types = prompts.entity_types if prompts.entity_types != DEFAULT_ENTITY_TYPES else None
        return prompts.overrides(), types
    templates = dict(prompts)
    types = templates.pop("entity_types", None)
    return check_templates(templates), types


def with_types(prompts: Prompts, entity_types: str) -> Prompts:
    """The prompts with these entity types."""
    return prompts if prompts.entity_types == entity_types else replace(prompts, entity_types=entity_types)
