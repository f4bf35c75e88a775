"""API embedders' vectors are stored as int8 in a new store (a quarter of float32), and a
store built with float32 vectors keeps them: tgr reads the type from the store, never assumes."""
from __future__ import annotations

import tgr
from conftest import EN_CORPUS, SMALL, FakeServer, rows
from tgr.models.clients import OpenAIChat, OpenAIEmbedder

PART1, PART2 = (str(EN_CORPUS / f"carol_stave1_part{n}.txt") for n in (1, 2))


def store(path, server, embedder=None):
    return tgr.open(path, chat=OpenAIChat("fake", server.url, api_key="k"),
                    embedder=embedder or OpenAIEmbedder("fake-embedding", server.url, api_key="k"))


def float32_embedder(server) -> OpenAIEmbedder:
    """The fake endpoint's embedder writing float32, as every API store was built before int8."""
    embedder = OpenAIEmbedder("fake-embedding", server.url, api_key="k")
    embedder.vector_type = "float32"
    return embedder


def vec_sql(path) -> str:
    return rows(path, "SELECT sql FROM sqlite_master WHERE name = 'vec_chunks'")[0][0]


def test_a_new_api_store_keeps_int8_vectors_and_finds_the_same_passages(tmp_path):
    with FakeServer() as server:
        old_style = float32_embedder(server)
        with store(tmp_path / "float.db", server, old_style) as kb:
            kb.index([PART1], **SMALL)
        with store(tmp_path / "int8.db", server) as kb:
            kb.index([PART1], **SMALL)
            assert kb.meta["embed_vector"] == "int8"
            compact = kb.retrieve("Marley's ghost and the chains", "naive", k=5)
        with store(tmp_path / "float.db", server) as kb:
            full = kb.retrieve("Marley's ghost and the chains", "naive", k=5)
    assert "int8[64]" in vec_sql(tmp_path / "int8.db") and "float[64]" in vec_sql(tmp_path / "float.db")
    assert [p.chunk_id for p in compact] == [p.chunk_id for p in full]
    size = lambda name: rows(tmp_path / name, "SELECT sum(length(vectors)) FROM vec_chunks_vector_chunks00")[0][0]
    assert size("int8.db") * 4 == size("float.db")


def test_a_float32_store_from_before_int8_stays_float32(tmp_path):
    path = tmp_path / "old.db"
    with FakeServer() as server:
        old_style = float32_embedder(server)
        with store(path, server, old_style) as kb:
            kb.index([PART1], **SMALL)
        import sqlean

        conn = sqlean.connect(str(path))  # a store written before meta recorded embed_vector
        conn.execute("DELETE FROM meta WHERE key = 'embed_vector'")
        conn.commit()
        conn.close()
        with store(path, server) as kb:  # an embedder that would write int8 in a new store
            kb.index([PART2], **SMALL)
            answer = kb.ask("Who is Marley?", "naive")
        assert "float[64]" in vec_sql(path)
        assert rows(path, "SELECT count(*) FROM vec_chunks_rowids")[0][0] == rows(path, "SELECT count(*) FROM chunks")[0][0]
        assert answer.sources


def test_rebuilding_the_embeddings_moves_a_float32_store_to_int8(tmp_path):
    path = tmp_path / "old.db"
    with FakeServer() as server:
        old_style = float32_embedder(server)
        with store(path, server, old_style) as kb:
            kb.index([PART1], **SMALL)
        with store(path, server) as kb:
            kb.rebuild("embeddings")
            assert kb.meta["embed_vector"] == "int8"
            assert kb.retrieve("Marley's ghost", "naive", k=3)
    assert "int8[64]" in vec_sql(path)
