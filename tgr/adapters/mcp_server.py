"""`tgr mcp`: stores as a read-only MCP server over stdio (the official `mcp` SDK, extra tgr[mcp]).

Tools: ask (local/global/naive), retrieve (ranked passages with text), entity (description,
relationships, communities, sources), communities (with report titles, by level) and
community_report. The store is opened read-only; asking never writes to it. Store calls run
as the async API runs them (tgr/models/async_calls.py): on worker threads, with their model
calls sent by the server's event loop, so that one client's questions do not wait for each
other's. Several stores
(tgr.multi_store) answer ask and retrieve with one fused ranking; the lookups answer per store.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Literal

from typing_extensions import TypedDict  # pydantic needs it (not typing's) before Python 3.12

from ..errors import TgrError
from ..models.async_calls import in_thread
from ..multi_store import Stores
from ..store.untrusted_text import xml_safe
from ..knowledge_base import KnowledgeBase

Mode = Literal["local", "global", "naive"]


class Turn(TypedDict):
    """One turn of a conversation, as the OpenAI API has them."""

    role: Literal["user", "assistant"]
    content: str

MAX_K = 100
INSTRUCTIONS = (
    "A tgr GraphRAG knowledge store: documents split into chunks, an entity graph extracted from "
    "them, and hierarchical communities with reports. Use `retrieve` for ranked source passages, "
    "`ask` for an answer with citations (mode local for specific questions, global for themes across "
    "the corpus, naive for plain text search), `entity` to look up one entity with its relationships "
    "and sources, and `communities` / `community_report` to browse the community reports."
)


def _sdk():
    """(server class, ToolError) of the installed SDK: MCPServer (mcp 2.x) or FastMCP (mcp 1.x),
    which share the decorator API tgr uses."""
    try:
        import mcp  # noqa: F401 - is the SDK there at all?
    except ImportError:
        raise TgrError("tgr mcp needs the MCP SDK: pip install 'tgr[mcp]'") from None
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        return MCPServer, ToolError
    except ImportError:
        from mcp.server.fastmcp import FastMCP
        from mcp.server.fastmcp.exceptions import ToolError
        return FastMCP, ToolError


def _incomplete_field_warning() -> type[Warning]:
    try:
        from pydantic_settings import IncompleteFieldDefinitionWarning
        return IncompleteFieldDefinitionWarning
    except ImportError:  # an older pydantic-settings, which does not warn
        return UserWarning


def _safe(value):
    """Store and model text with control characters removed, recursively."""
    if isinstance(value, str):
        return xml_safe(value)
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return value


class StoreWorker:
    """The store, opened here, and its calls run as the async API runs them (on its worker
    threads, tgr/models/async_calls.py): a tool's model calls go out on the server's event loop,
    and one client's questions do not wait for each other's."""

    def __init__(self, open_store: Callable[[], KnowledgeBase | Stores], tool_error: type[Exception] = Exception):
        self.tool_error = tool_error
        self.kb = open_store()

    async def call(self, fn: Callable, *args, **kwargs):
        return await in_thread(fn, *args, **kwargs)

    async def call_tool(self, fn: Callable, *args, **kwargs):
        """call(), with tgr's own errors (bad input, missing model key, ...) given to the client
        as the tool's error message; anything else stays a crash the SDK logs."""
        try:
            return _safe(await self.call(fn, *args, **kwargs))
        except (TgrError, ValueError) as exc:
            raise self.tool_error(xml_safe(str(exc))) from None

    def close(self) -> None:
        self.kb.close()


def _check_range(name: str, value: int, low: int = 1, high: int = MAX_K) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}")


def build_server(worker: StoreWorker):
    """The MCP server with tgr's read-only tools bound to the worker's store."""
    from mcp.types import ToolAnnotations

    server_class, worker.tool_error = _sdk()
    with warnings.catch_warnings():
        # the SDK's settings model has a forward reference pydantic-settings warns about on every
        # start (seen with mcp 1.19 and pydantic-settings 2.16); nothing for a tgr user to act on
        warnings.filterwarnings("ignore", message="Field 'lifespan' has an incomplete definition",
                                category=_incomplete_field_warning())
        server = server_class(name="tgr", instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations.model_validate({"readOnlyHint": True, "idempotentHint": True})
    kb = worker.kb

    def do_ask(question: str, mode: str, level: int, top_k: int, history: list[dict] | None = None) -> dict:
        _check_range("top_k", top_k)
        _check_range("level", level, 0, 64)
        result = kb.ask(question, mode, level=level, top_k=top_k, history=history)
        return {"question": question, "mode": mode, "answer": result.answer, "model": result.model,
                "sources": result.sources, "entities": result.entities, "reports": result.reports,
                "model_calls": result.model_calls, "notes": result.notes}

    def do_retrieve(question: str, mode: str, k: int) -> dict:
        _check_range("k", k)
        passages = [{"rank": n, **p.to_dict()} for n, p in enumerate(kb.retrieve(question, mode, k), 1)]
        return {"question": question, "mode": mode, "passages": passages}

    def do_communities(level: int | None, limit: int) -> dict:
        _check_range("limit", limit, 1, 1000)
        return _communities(kb, level, limit)

    @server.tool(annotations=read_only)
    async def ask(question: str, mode: Mode = "local", level: int = 0, top_k: int = 10,
                  history: list[Turn] | None = None) -> dict[str, Any]:
        """Answer a question from the store, citing its sources as [Sources: n]. mode: local
        (entities and their neighbourhood; specific questions), global (community reports at
        `level`; themes across the whole corpus) or naive (full-text search of chunks).
        history: the conversation so far, oldest first, as {"role": "user" or "assistant",
        "content": text} turns; a follow-up ("what is his family like?") is then answered in
        its light."""
        turns = None if history is None else [dict(turn) for turn in history]
        return await worker.call_tool(do_ask, question, mode, level, top_k, turns)

    @server.tool(annotations=read_only)
    async def retrieve(question: str, k: int = 10, mode: Mode = "local") -> dict[str, Any]:
        """The source passages most relevant to a question, best first, each with its text,
        document (source, title) and character offsets. No answer is generated."""
        return await worker.call_tool(do_retrieve, question, mode, k)

    @server.tool(annotations=read_only)
    async def entity(name: str) -> dict[str, Any]:
        """One entity by name: type, description, relationships (strongest first), the
        communities it belongs to at every level, its aliases, and the source chunks it was
        extracted from. The name may be an alias, differ in case, accents or `·`, or have a
        typo or two: then `matched` says which name it was taken for. When nothing is that
        close: found=false and similar names."""
        return await worker.call_tool(_entity, kb, name)

    @server.tool(annotations=read_only)
    async def communities(level: int | None = None, limit: int = 50) -> dict[str, Any]:
        """Communities of the entity graph with their report title, summary and rating, best
        rated first; level 0 is the coarsest. Omit level for every level."""
        return await worker.call_tool(do_communities, level, limit)

    @server.tool(annotations=read_only)
    async def community_report(community_id: str) -> dict[str, Any]:
        """One community's full report (summary, findings, rating), its parent, children and
        member entities."""
        return await worker.call_tool(_report, kb, community_id)

    return server


def _in_stores(kb: KnowledgeBase | Stores, method: str, *args) -> list[tuple[str, Any]]:
    """(store, store.method(*args)) for the store, or for each of several."""
    if isinstance(kb, Stores):
        return kb.each(method, *args)
    return [("", getattr(kb, method)(*args))]


def _entity(kb: KnowledgeBase | Stores, name: str) -> dict:
    found = _in_stores(kb, "entity", name)
    if not isinstance(kb, Stores):
        return found[0][1]
    return {"stores": [{"store": store, **details} for store, details in found]}


def _communities(kb: KnowledgeBase | Stores, level: int | None, limit: int) -> dict:
    found = _in_stores(kb, "communities", level, limit)
    if not isinstance(kb, Stores):
        return {"communities": found[0][1]}
    return {"communities": [{"store": store, **c} for store, listed in found for c in listed]}


def _report(kb: KnowledgeBase | Stores, community_id: str) -> dict:
    found = [(store, report) for store, report in _in_stores(kb, "community_report", community_id) if report]
    if not found:
        raise ValueError(f"no community {community_id!r}; list them with the communities tool")
    if not isinstance(kb, Stores):
        return found[0][1]
    return {"reports": [{"store": store, **report} for store, report in found]}


def serve(open_store: Callable[[], KnowledgeBase | Stores]) -> None:
    """Open the store (errors surface before serving) and serve it over stdio until the client
    closes the connection."""
    _sdk()  # a missing SDK is reported before the store is opened
    worker = StoreWorker(open_store)
    try:
        build_server(worker).run()
    finally:
        worker.close()
