"""The runs ledger: one `runs` row a command, its counts, the models it recorded, and the
cost report (`tgr stats`) read from model_calls."""
from __future__ import annotations

import json
from dataclasses import asdict

from ..version import __version__
from ..store.db import Connection, get_meta, set_meta, transaction
from ..store.integrity import forget_digest
from ..models.gateway import Gateway, Usage
from ..models.clients import ChatModel, Embedder, vector_type
from ..models.output_forms import ALL_FORMS, OLLAMA
from ..store.extractors import extracted_by
from ..offline.providers import OFFLINE_EXTRACTOR
from ..models.registry import chat_name, model_host
from ..settings import IndexSettings, IndexSummary


def start_run(conn: Connection, command: str, settings: IndexSettings) -> int:
    """A new 'running' row; returns its id. The recorded content digest goes: the content is
    about to change (the run records a new one when it ends, tgr/build/pipeline.py)."""
    with transaction(conn):
        forget_digest(conn)
        return conn.execute("INSERT INTO runs(command, settings, status) VALUES (?, ?, 'running')",
                            (command, json.dumps(asdict(settings)))).lastrowid


def finish_run(conn: Connection, run_id: int, status: str, summary: IndexSummary) -> None:
    with transaction(conn):
        conn.execute("UPDATE runs SET status = ?, counts = ?, wall_s = ? WHERE id = ?",
                     (status, json.dumps(summary.to_dict()), summary.wall_s, run_id))


def usage_before(gateway: Gateway) -> dict:
    """The gateway's usage so far, to subtract from its usage at the end of a run."""
    return {k: Usage(**asdict(v)) for k, v in gateway.usage.items()}


def fill_summary(conn: Connection, summary: IndexSummary, gateway: Gateway, before: dict) -> None:
    """The store's counts and this run's model usage (the gateway's, less `before`)."""
    count = lambda sql: conn.execute(sql).fetchone()[0]
    summary.documents = count("SELECT count(*) FROM documents")
    summary.chunks = count("SELECT count(*) FROM chunks")
    summary.entities = count("SELECT count(*) FROM entities")
    summary.relationships = count("SELECT count(*) FROM relationships")
    summary.communities = {str(level): n for level, n in conn.execute(
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
    summary.batch_calls, summary.billed_tokens = total.batched, round(total.billed_tokens)
    summary.max_in_flight = gateway.max_in_flight
    summary.answers_cut, summary.retries = total.cut, total.retried
    summary.extracted_by = extracted_by(conn, str(get_meta(conn).get("extractor", "")))
    summary.reports_by = dict(conn.execute("SELECT generator, count(*) FROM reports GROUP BY 1 ORDER BY 2 DESC"))


def record_models(conn: Connection, settings: IndexSettings, chat: ChatModel | None, embedder: Embedder) -> None:
    """Record the settings and this run's models before its first model call: the chat model,
    the embedder's name and vector type, and the endpoint host (never a key), so that a run
    resumed with no model options continues with exactly these (tgr.providers). The
    embedder's dimension follows once known (record_dimension)."""
    meta = get_meta(conn)
    values = dict(settings.to_meta(), tgr_version=__version__, chat_model=chat_name(chat),
                  extractor=chat.name if chat else OFFLINE_EXTRACTOR, embed_model=embedder.name,
                  embed_vector=vector_type(embedder))
    if "created_with" not in meta:
        values["created_with"] = values["chat_model"]
    host = model_host(chat) or model_host(embedder)
    with transaction(conn):
        if meta.get("embed_model") != embedder.name:  # a store with no vectors yet switched embedder
            conn.execute("DELETE FROM meta WHERE key = 'embed_dim'")
        conn.execute("DELETE FROM meta WHERE key = 'endpoint_host'")
        set_meta(conn, **values, **({"endpoint_host": host} if host else {}))


def learn_chat_endpoint(conn: Connection, gateway: Gateway, context_tokens: int | None = None) -> None:
    """What the chat endpoint can do, from the store's record, else as it shows, recorded:
    the structured-output form it takes (tgr.models.output_forms: the client moves on from
    a form the endpoint refuses; remember_chat_endpoint records it) and its context window
    (given, recorded, or as its server says)."""
    chat = gateway.chat_model
    if chat is None:
        return
    meta, values = get_meta(conn), {}
    recorded = meta.get("chat_output_form")
    # else learnt from the first refusal; Ollama's own API has its own form, which no other takes
    if (recorded in ALL_FORMS and hasattr(chat, "output_form")
            and (recorded == OLLAMA) == (chat.output_form == OLLAMA)):
        chat.output_form = recorded
    recorded_window = meta.get("chat_context_tokens")
    window = context_tokens or (int(recorded_window) if str(recorded_window).isdigit() else None)
    if window is None and callable(getattr(chat, "context_window", None)):
        window = chat.context_window()
    if window:
        chat.context_tokens = window
        window = chat.context_tokens or window  # a client may hold less (ollama: the model's own length)
        if str(window) != str(recorded_window):
            values["chat_context_tokens"] = window
    if values:
        with transaction(conn):
            set_meta(conn, **values)


def remember_chat_endpoint(conn: Connection, chat) -> None:
    """Record the structured-output form the chat client ended the run with (it moves on to
    the next form when the endpoint refuses one)."""
    form = getattr(chat, "output_form", None)
    if form in ALL_FORMS and get_meta(conn).get("chat_output_form") != form:
        with transaction(conn):
            set_meta(conn, chat_output_form=form)


def record_dimension(conn: Connection, gateway: Gateway) -> None:
    """Record the embedder's dimension (asking an endpoint for it, retried like every call)."""
    dim = gateway.embed_dim()
    if str(get_meta(conn).get("embed_dim")) != str(dim):
        with transaction(conn):
            set_meta(conn, embed_dim=dim)


def stats(conn: Connection) -> dict:
    """The cost ledger: calls and tokens per stage, and per run (billed: each call at its
    price, a Batch API answer at half)."""
    from .batch import billed_tokens

    billed_stages, billed_runs = billed_tokens(conn, "stage, kind"), billed_tokens(conn, "run_id")
    by_stage = [dict(zip(("stage", "kind", "calls", "cache_hits", "prompt_tokens", "completion_tokens",
                          "model_seconds"), row)) for row in conn.execute(
        "SELECT stage, kind, sum(calls), sum(cache_hits), sum(prompt_tokens), sum(completion_tokens), "
        "round(sum(model_seconds), 2) FROM cost_by_stage GROUP BY stage, kind "
        "ORDER BY (SELECT min(id) FROM model_calls m WHERE m.stage = cost_by_stage.stage)")]
    for row in by_stage:
        row["billed_tokens"] = billed_stages.get((row["stage"], row["kind"]), 0)
    runs = []
    for run_id, command, status, started, wall in conn.execute(
            "SELECT id, command, status, started_at, wall_s FROM runs ORDER BY id"):
        calls, hits, pt, ct = conn.execute(  # local computations are not calls
            "SELECT coalesce(sum(CASE WHEN kind != 'local' THEN 1 - cache_hit END), 0), "
            "coalesce(sum(cache_hit), 0), "
            "coalesce(sum(CASE WHEN cache_hit = 0 THEN prompt_tokens END), 0), "
            "coalesce(sum(CASE WHEN cache_hit = 0 THEN completion_tokens END), 0) "
            "FROM model_calls WHERE run_id = ?", (run_id,)).fetchone()
        runs.append({"run": run_id, "command": command, "status": status, "started_at": started,
                     "wall_s": wall, "calls": calls, "cache_hits": hits, "prompt_tokens": pt,
                     "completion_tokens": ct, "billed_tokens": billed_runs.get(run_id, 0)})
    return {"by_stage": by_stage, "runs": runs}
