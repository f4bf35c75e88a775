"""The read side of a store: questions, passages, lookups, the graph, info, export.

Nothing here writes the file: questions go through the query gateway, which reads the
answer cache but never writes it.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from ..errors import StoreError
from ..models.registry import chat_name
from .modes import Answer, QuerySettings, Searcher
from .retrieve import Passage
from ..store.untrusted_text import terminal_safe
from ..settings import IndexSettings


def searcher(store, question: str, settings: QuerySettings) -> Searcher:
    """A Searcher over the store (a tgr/session.py StoreAdmin) for this question."""
    if not question or not question.strip():
        raise ValueError("the question is empty")
    if not store.meta.get("embed_model"):
        raise StoreError(f"{store.path}: empty store; index documents first (tgr index {store.path} DOCS...)")
    gateway = store.models.query_gateway()
    return Searcher(store.conn, gateway, store.prompts, settings, store.models.asking.tables)


def ask(store, question: str, mode: str, *, context_only: bool, warn, query_settings: dict) -> Answer:
    """Answer a question; what it leaves out (models out of reach) is said once through warn
    and kept in the answer's notes."""
    found = searcher(store, question, QuerySettings(**query_settings))
    notes = store.models.asking.notes_for(context_only)
    store.models.asking.say(notes, warn)
    answer = found.ask(question.strip(), mode, context_only=context_only)
    answer.notes = notes
    return answer


def answer_from(store, question: str, passages: list[Passage], mode: str, *, context_only: bool, warn,
                query_settings: dict) -> Answer:
    """An answer written from given ranked passages, as ask() does."""
    found = searcher(store, question, QuerySettings(**query_settings))
    notes = store.models.asking.notes_for(context_only)
    store.models.asking.say(notes, warn)
    answer = found.answer_passages(question.strip(), passages, mode, context_only)
    answer.notes = notes
    return answer


def retrieve(store, question: str, mode: str, k: int, warn=None) -> list[Passage]:
    """The k passages that best answer the question, best first; vectors out of reach are
    said once through warn."""
    found = searcher(store, question, QuerySettings())
    store.models.asking.say(store.models.asking.notes_for(context_only=True), warn)
    return found.retriever.retrieve(question.strip(), mode, k).passages


def graph(conn):
    """The entity graph as a networkx.Graph (node and edge attributes from the store)."""
    import networkx as nx

    g = nx.Graph()
    level0 = dict(conn.execute(
        "SELECT m.entity_id, m.community_id FROM community_members m "
        "JOIN communities c ON c.id = m.community_id WHERE c.level = 0"))
    for eid, name, etype, desc, degree, mentions in conn.execute(
            "SELECT id, name, type, description, degree, mentions FROM entities ORDER BY id"):
        g.add_node(eid, name=name, type=etype, description=desc, degree=degree,
                   mentions=mentions, community=level0.get(eid, ""))
    for rid, src, dst, predicate, desc, weight in conn.execute(
            "SELECT id, source_id, target_id, predicate, description, weight FROM relationships ORDER BY id"):
        g.add_edge(src, dst, id=rid, predicate=predicate, description=desc, weight=weight)
    return g


def info(conn, path: Path, meta: dict) -> dict:
    """Counts, models, settings, levels and size of the store."""
    count = lambda sql: conn.execute(sql).fetchone()[0]
    levels = {str(level): {"communities": n, "reports": r} for level, n, r in conn.execute(
        "SELECT c.level, count(*), count(r.community_id) FROM communities c "
        "LEFT JOIN reports r ON r.community_id = c.id GROUP BY c.level ORDER BY c.level")}
    chat = meta.get("chat_model", "-")
    offline = chat == chat_name(None)
    embeddings = "hashed" if meta.get("embed_model", "tgr:").startswith("tgr:") else meta["embed_model"]
    size = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    return {
        "path": str(path),
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


def _recorded_prompt_names(recorded: str | None) -> str:
    """For info: which templates the store customises (names only)."""
    try:
        names = sorted(json.loads(recorded)) if recorded else []
    except (ValueError, TypeError):
        return "unreadable"
    return ", ".join(terminal_safe(str(n)) for n in names) + " (custom)" if names else "defaults"
