"""The read side of a store: questions, passages, lookups, the graph, info, export.

Nothing here writes the file: questions go through the query gateway, which reads the
answer cache but never writes it.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Iterator

from ..errors import StoreError
from ..models.registry import chat_name
from .modes import Answer, QuerySettings, Searcher
from .retrieve import Passage
from ..store.extractors import extracted_by
from ..store.untrusted_text import terminal_safe
from ..settings import IndexSettings


def searcher(store, question: str, settings: QuerySettings) -> Searcher:
    """A Searcher over the store (a tgr/session.py StoreAdmin) for this question."""
    if not question or not question.strip():
        raise ValueError("the question is empty")
    if not store.meta.get("embed_model"):
        if store.has_rows("chunks"):  # made by an older tgr that recorded its models late
            raise StoreError(f"{store.path}: an unfinished store (its first index was interrupted before its "
                             f"models were recorded); `tgr index {store.path}` with its model options finishes it")
        raise StoreError(f"{store.path}: empty store; index documents first (tgr index {store.path} DOCS...)")
    gateway = store.models.query_gateway()
    return Searcher(store.conn, gateway, store.prompts, settings, store.models.asking.tables)


def ask(store, question: str, mode: str, *, context_only: bool, warn, query_settings: dict, history=None,
        stream: bool = False) -> Iterator[str | Answer]:
    """The answer's text pieces (with stream), then the Answer of a question asked after a
    conversation (history: role/content turns); what it leaves out (models out of reach) is
    said once through warn and kept in the answer's notes."""
    history = _checked(history)
    found = searcher(store, question, QuerySettings(**query_settings))
    found.warn = warn
    notes, unfinished = store.models.asking.notes_for(context_only), unfinished_note(store)
    store.models.asking.say(notes, warn)
    store.models.asking.say(unfinished, warn)  # a line of its own
    notes += unfinished
    return _noted(found.ask_stream(question.strip(), mode, context_only, history, stream=stream), notes)


def answer_from(store, question: str, passages: list[Passage], mode: str, *, context_only: bool, warn,
                query_settings: dict, history=None, stream: bool = False) -> Iterator[str | Answer]:
    """An answer written from given ranked passages, as ask() does."""
    history = _checked(history)
    found = searcher(store, question, QuerySettings(**query_settings))
    found.warn = warn
    notes = store.models.asking.notes_for(context_only)
    store.models.asking.say(notes, warn)
    return _noted(found.answer_passages(question.strip(), passages, mode, context_only, history, stream), notes)


def searched(store, question: str, history=None) -> str:
    """The question resolved against the conversation (see Searcher.searched)."""
    found = searcher(store, question, QuerySettings())
    found.follow(_checked(history))
    return found.searched(question.strip())


def themes(store, question: str, *, warn, query_settings: dict, history=None,
           always: bool = False) -> tuple[list, bool] | None:
    """The themes of an offline global answer (see Searcher.themes), for several stores'
    global answer (tgr.multi_store); after a conversation (history), of the question resolved
    against it."""
    found = searcher(store, question, QuerySettings(**query_settings))
    store.models.asking.say(store.models.asking.notes_for(False), warn)
    return found.themes(question.strip(), _checked(history), always=always)


def global_reports(store, question: str, *, warn, query_settings: dict,
                   history=None) -> list[tuple[str, str, str, float]]:
    """(community id, title, full text, rating) of the reports global search reads for the
    question (resolved against the conversation, if any), best first, for several stores'
    global answer (tgr.multi_store)."""
    found = searcher(store, question, QuerySettings(**query_settings))
    store.models.asking.say(store.models.asking.notes_for(context_only=True), warn)
    found.follow(_checked(history))
    return found.candidate_reports(found.searched(question.strip()), found.settings.level)


def report_passages(store, community_ids: list[str], question: str, history=None) -> list[Passage]:
    """The passages behind the given reports, best first (for the question resolved against
    the conversation, if any)."""
    from .global_search import report_sources

    found = searcher(store, question, QuerySettings())
    found.follow(_checked(history))
    return report_sources(found, community_ids, found.searched(question.strip()))


def answer_reports(store, question: str, reports: list[tuple], names: dict[str, str], *, warn,
                   query_settings: dict, history=None, stream: bool = False) -> Iterator[str | Answer]:
    """A chat model's global answer over given labelled reports (see Searcher.over_reports)."""
    history = _checked(history)
    found = searcher(store, question, QuerySettings(**query_settings))
    found.warn = warn
    notes = store.models.asking.notes_for(False)
    store.models.asking.say(notes, warn)
    return _noted(found.over_reports(question.strip(), reports, names, history, stream), notes)


def _checked(history) -> list[dict]:
    """The conversation as role/content turns (tgr.query.conversation, loaded only for one)."""
    if not history:
        return []
    from .conversation import checked_history

    return checked_history(history)


def _noted(items: Iterator[str | Answer], notes: list[str]) -> Iterator[str | Answer]:
    """The items, the Answer's notes led by the given ones (what the question leaves out)."""
    for item in items:
        if isinstance(item, Answer):
            item.notes = notes + [n for n in item.notes if n not in notes]
        yield item


def retrieve(store, question: str, mode: str, k: int, warn=None, history=None) -> list[Passage]:
    """The k passages that best answer the question (resolved against the conversation in
    history), best first; vectors out of reach are said once through warn."""
    history = _checked(history)
    found = searcher(store, question, QuerySettings())
    store.models.asking.say(store.models.asking.notes_for(context_only=True), warn)
    found.follow(history)
    return found.retriever.retrieve(found.searched(question.strip()), mode, k).passages


def unfinished_note(store) -> list[str]:
    """[a note] when the store's last run did not finish (interrupted, failed, waiting for a
    batch job): answers come from what it holds so far."""
    last = store.conn.execute("SELECT status FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    if last is None or last[0] == "done":
        return []
    return [f"{store.path} is unfinished (its last run is {terminal_safe(str(last[0]))}): answering from what it "
            f"holds so far; `tgr index {store.path}` finishes it"]


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
    from ..store.integrity import DIGEST_KEY

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
        "content_digest": terminal_safe(meta.get(DIGEST_KEY, "-")),  # as recorded; `tgr check` verifies it
        "chat_model": chat,
        "embed_model": meta.get("embed_model", "-"),
        "embed_dim": int(meta.get("embed_dim", 0) or 0),
        "embed_vector": meta.get("embed_vector", "float32"),
        "endpoint_host": meta.get("endpoint_host", "-"),
        "portable_vectors": _portable(conn, meta),
        "quality": (f"offline default: heuristic extraction, {embeddings} embeddings, extractive "
                    "reports and answers (lower quality than an LLM)") if offline else "LLM-built",
        "documents": count("SELECT count(*) FROM documents"),
        "boilerplate_dropped": _boilerplate(conn),
        "chunks": count("SELECT count(*) FROM chunks"),
        "chunks_extracted": count("SELECT count(*) FROM extractions"),
        "extracted_by": extracted_by(conn, chat),
        "reports_by": {terminal_safe(str(g)): n for g, n in conn.execute(
            "SELECT generator, count(*) FROM reports GROUP BY generator ORDER BY count(*) DESC, generator")},
        "chat_output_form": meta.get("chat_output_form", "-"),
        "chat_context_tokens": meta.get("chat_context_tokens", "-"),
        "entities": count("SELECT count(*) FROM entities"),
        "relationships": count("SELECT count(*) FROM relationships"),
        "levels": levels,
        "reports": count("SELECT count(*) FROM reports"),
        "cached_answers": count("SELECT count(*) FROM llm_cache"),
        "runs": count("SELECT count(*) FROM runs"),
        "settings": asdict(IndexSettings.from_meta(meta)),
        "prompts": _recorded_prompt_names(meta.get("prompts")),
    }


def _portable(conn, meta: dict) -> dict:
    """The portable embedder and how many rows of each kind have its vector ({}: none kept)."""
    from ..store.db import PORTABLE_MODEL_KEY, PORTABLE_TABLES, has_table

    model = meta.get(PORTABLE_MODEL_KEY)
    if not model:
        return {}
    from ..models.clients import embeds

    found = {"model": terminal_safe(model)}
    for kind, table in PORTABLE_TABLES.items():
        if not embeds(kind, model):  # e.g. the local model's reports: none are made
            continue
        rows = conn.execute(f"SELECT count(*) FROM {kind}").fetchone()[0]
        have = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] if has_table(conn, table) else 0
        found[kind] = f"{have}/{rows}"
    return found


def _boilerplate(conn) -> dict:
    """{document source: characters dropped as boilerplate when it was read}, where any were."""
    dropped = {}
    for source, chars in conn.execute(
            "SELECT source, json_extract(metadata, '$.boilerplate_chars') FROM documents "
            "WHERE json_valid(metadata) AND json_extract(metadata, '$.boilerplate_chars') > 0 ORDER BY source"):
        if isinstance(chars, int):  # a store made elsewhere may hold anything
            dropped[terminal_safe(str(source))] = chars
    return dropped


def _recorded_prompt_names(recorded: str | None) -> str:
    """For info: which templates the store customises (names only)."""
    try:
        names = sorted(json.loads(recorded)) if recorded else []
    except (ValueError, TypeError):
        return "unreadable"
    return ", ".join(terminal_safe(str(n)) for n in names) + " (custom)" if names else "defaults"
