"""A tgr store served over HTTP with FastAPI, async and streaming (docs/service.md).

    pip install tgr fastapi uvicorn
    TGR_STORE=corpus.db uvicorn fastapi_service:app --app-dir docs/examples --port 8000

    curl 'localhost:8000/ask?q=Who+is+Jacob+Marley%3F'
    curl -N 'localhost:8000/stream?q=What+are+the+main+themes%3F&mode=global'

The store is opened read-only once and shared by every request: each question is awaited on
tgr's async API (KnowledgeBase.aask, astream, aretrieve), so none blocks the event loop, and the
chat and embedding calls of all requests in flight share one connection pool. The models are
those the store records (their key and endpoint from the usual variables: TGR_API_KEY,
TGR_BASE_URL, OPENAI_API_KEY, ZHIPUAI_API_KEY, ...), offline when there are none.
"""
from __future__ import annotations

import os
from contextlib import asynccontextmanager
from typing import Literal

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import StreamingResponse

import tgr

STORE = os.environ.get("TGR_STORE", "fixtures/demo_carol.db")
Mode = Literal["local", "global", "naive"]


@asynccontextmanager
async def lifespan(app: FastAPI):
    app.state.kb = tgr.open(STORE, readonly=True)  # a missing or damaged store fails the start
    yield
    app.state.kb.close()
    await tgr.close_async_client()  # the model calls' connection pool of this loop


app = FastAPI(title="tgr", lifespan=lifespan)


@app.get("/ask")
async def ask(q: str = Query(min_length=1, max_length=2000), mode: Mode = "local") -> dict:
    """The answer, with the sources it cites."""
    try:
        answer = await app.state.kb.aask(q, mode)
    except tgr.TgrError as exc:  # a model out of reach, a bad setting: one line, no secret in it
        raise HTTPException(status_code=400, detail=str(exc)) from None
    return {"answer": answer.answer, "sources": answer.sources, "model": answer.model, "notes": answer.notes}


@app.get("/stream")
async def stream(q: str = Query(min_length=1, max_length=2000), mode: Mode = "local") -> StreamingResponse:
    """The answer's text as the model writes it (plain text, chunked)."""
    async def pieces():
        async for piece in app.state.kb.astream(q, mode):
            if isinstance(piece, str):  # the last item is the whole Answer: its text came already
                yield piece

    return StreamingResponse(pieces(), media_type="text/plain; charset=utf-8")


@app.get("/retrieve")
async def retrieve(q: str = Query(min_length=1, max_length=2000), mode: Mode = "local",
                   k: int = Query(5, ge=1, le=100)) -> list[dict]:
    """The k best passages, best first, with their text and where they come from."""
    return [passage.to_dict() for passage in await app.state.kb.aretrieve(q, mode, k)]
