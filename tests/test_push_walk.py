"""The local walk by forward push (tgr.query.push_walk): the exact walk's scores, its graph read lazily."""
from __future__ import annotations

from pathlib import Path

import pytest

from tgr.store.db import open_file

from tgr.query import graph_walk, push_walk
from tgr.query.name_match import titled_chunks
from tgr.query.retrieve import SEED_CHUNKS, Retriever, question_spans

QUESTIONS = ["Who is Scrooge?", "Who did Scrooge work for?", "What did Marley's ghost carry?",
             "孙悟空的师父是谁？", "What are the main themes?"]


def _walks(conn, question: str, push_edges: int, epsilon: float, monkeypatch):
    """The walk of a question with the given bound on exact walks and push threshold."""
    retriever = Retriever(conn)
    spans = question_spans(question)
    monkeypatch.setattr(graph_walk, "PUSH_EDGES", push_edges)
    monkeypatch.setattr(push_walk, "EPSILON", epsilon)
    return graph_walk.walk(conn, retriever.named_entities(spans), retriever.bm25(question, SEED_CHUNKS),
                           titled_chunks(conn, spans), retriever.chunk_total(), numpy=False)


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_fine_push_gives_the_exact_walks_scores(hierarchy_store, question, monkeypatch):
    """With a tiny threshold the pushed scores are the power iteration's (which stops 2e-7 short
    of the fixed point) for every chunk and entity, so the rankings agree."""
    conn = open_file(Path(hierarchy_store), readonly=True)
    exact_chunks, exact_entities = _walks(conn, question, 10**9, 0.0, monkeypatch)
    chunks, entities = _walks(conn, question, 0, 1e-12, monkeypatch)
    conn.close()
    assert exact_chunks and exact_entities
    assert chunks.keys() == exact_chunks.keys() and entities.keys() == exact_entities.keys()
    for exact, pushed in ((exact_chunks, chunks), (exact_entities, entities)):
        assert max(abs(exact[k] - pushed[k]) for k in exact) < 1e-6


def test_a_coarse_push_reads_less_of_the_graph(hierarchy_store, monkeypatch):
    """A larger threshold leaves the nodes that receive little mass unread: fewer scored chunks
    and entities, and the best chunk is still the exact walk's."""
    conn = open_file(Path(hierarchy_store), readonly=True)
    question = "Who is Scrooge?"
    exact_chunks, exact_entities = _walks(conn, question, 10**9, 0.0, monkeypatch)
    chunks, entities = _walks(conn, question, 0, 1e-2, monkeypatch)
    conn.close()
    assert len(chunks) < len(exact_chunks) and len(entities) < len(exact_entities)
    assert max(chunks, key=chunks.get) == max(exact_chunks, key=exact_chunks.get)


def test_the_lazy_graph_reads_the_exact_walks_edges(hierarchy_store):
    """Once every node is read, the lazy graph holds the exact walk's subgraph: the same
    entity-chunk edges, each weighed by its entity's specificity."""
    conn = open_file(Path(hierarchy_store), readonly=True)
    retriever = Retriever(conn)
    question = "Who is Scrooge?"
    spans = question_spans(question)
    named = retriever.named_entities(spans)
    seeds = {cid for cid, _ in retriever.bm25(question, SEED_CHUNKS)} | set(titled_chunks(conn, spans))
    reached = graph_walk._reached(conn, named, seeds)
    exact = graph_walk._subgraph(conn, reached)
    graph = graph_walk._lazy_graph(conn, reached, retriever.chunk_total())
    graph.read(sorted(graph.edges))
    conn.close()
    pairs = {(e, key) for e, keys in exact.entity_chunks.items() for key in keys}
    read = {(key[2:], other) for key, edges in graph.edges.items() if key[0] == "e"
            for other in edges if other[0] == "c"}
    assert read == pairs
