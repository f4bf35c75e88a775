"""The LangChain retriever (real langchain-core) over a real offline store, and the clear
error of a retriever whose framework is not installed. The LlamaIndex retriever is checked
by bench/llamaindex_check.py: llama-index-core is too heavy for the test extra (README)."""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

import tgr
from conftest import EN_CORPUS, ROOT, SMALL, ZH_CORPUS
from tgr.adapters.retrievers import langchain_retriever

SERVER_PATH = os.pathsep.join([str(ROOT)] + [p for p in sys.path if p])
WHALE = {"doc_id": "whale-36", "title": "The Quarter-Deck", "url": "https://example.org/whale/36",
         "meta": {"chapter": 36},
         "text": "Captain Ahab nails a gold doubloon to the mainmast of the Pequod. Ahab promises the "
                 "doubloon to the first sailor who raises the white whale. Starbuck objects to Ahab."}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("integ")
    rows = tmp / "whale.jsonl"
    rows.write_text(json.dumps(WHALE) + "\n", encoding="utf-8")
    path = tmp / "mixed.db"
    with tgr.open(path) as kb:
        kb.index([str(EN_CORPUS), str(rows)], **SMALL)
    return path


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("mode", ["local", "naive", "global"])
def test_langchain_documents_are_the_ranked_passages(store, mode):
    retriever = langchain_retriever(store, mode=mode, k=4)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("What does Marley's ghost tell Scrooge?")
    with tgr.open(store, readonly=True) as kb:
        expected = kb.retrieve("What does Marley's ghost tell Scrooge?", mode, 4)
    assert 0 < len(docs) <= 4 and all(isinstance(d, Document) for d in docs)
    assert [d.metadata["chunk_id"] for d in docs] == [p.chunk_id for p in expected]
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert [d.page_content for d in docs] == [p.text for p in expected]


@pytest.mark.parametrize("mode", ["local", "naive", "global"])
def test_langchain_async_documents_are_the_sync_ones(store, chinese, mode):
    """ainvoke (_aget_relevant_documents, on KnowledgeBase.aretrieve) gives what invoke gives, for
    one store and for several; many at once from one loop too."""
    question = "What does Marley's ghost tell Scrooge? 孙悟空是谁？"
    for spec in (store, [store, chinese]):
        retriever = langchain_retriever(spec, mode=mode, k=5)
        sync = retriever.invoke(question)

        async def main():
            return await asyncio.gather(*(retriever.ainvoke(question) for _ in range(4)))

        for docs in asyncio.run(main()):
            assert [(d.id, d.metadata, d.page_content) for d in docs] == \
                [(d.id, d.metadata, d.page_content) for d in sync]
        assert sync


def test_langchain_metadata_names_document_and_offsets(store):
    docs = langchain_retriever(store, mode="naive", k=3).invoke("doubloon mainmast Pequod")
    top = docs[0]
    assert "doubloon" in top.page_content
    meta = top.metadata
    assert (meta["external_id"], meta["title"], meta["url"], meta["chapter"]) == \
        ("whale-36", "The Quarter-Deck", WHALE["url"], 36)
    assert meta["source"].endswith("whale.jsonl") and top.id == meta["chunk_id"]
    with tgr.open(store, readonly=True) as kb:
        text = kb.conn.execute("SELECT text FROM documents WHERE id = ?", (meta["document_id"],)).fetchone()[0]
    assert text[meta["char_start"]:meta["char_end"]] == top.page_content
    assert meta["page"] is None and meta["ordinal"] == 0
    carol = [d for d in docs[1:] if d.metadata["source"].endswith(".txt")]
    assert all(d.metadata["external_id"] is None for d in carol)


def test_langchain_batch_from_threads_leaves_the_file_untouched(store):
    before = digest(store)
    retriever = langchain_retriever(store, k=2)
    questions = ["Who is Scrooge's clerk?", "Who raises the white whale?", "What is Marley's chain made of?"]
    batches = retriever.batch(questions, config={"max_concurrency": 3})
    assert [len(b) for b in batches] == [2, 2, 2]
    assert "whale" in " ".join(d.page_content.lower() for d in batches[1])
    assert digest(store) == before
    assert not [p for p in store.parent.iterdir() if p.name.startswith(store.name + "-")]  # no -wal/-shm left


def test_retriever_checks_its_arguments(store, tmp_path):
    with pytest.raises(ValueError, match="unknown mode 'deep'"):
        langchain_retriever(store, mode="deep")
    with pytest.raises(ValueError, match="k must be at least 1"):
        langchain_retriever(store, k=0)
    missing = tmp_path / "none.db"
    with pytest.raises(tgr.StoreError, match="no such tgr store"):
        langchain_retriever(missing).invoke("Scrooge")
    assert not missing.exists()


@pytest.mark.parametrize("module, make, package, extra", [
    ("langchain_core", "langchain_retriever", "langchain-core", "langchain"),
    ("llama_index", "llamaindex_retriever", "llama-index-core", "llamaindex")])
def test_missing_framework_names_the_extra(store, module, make, package, extra):
    blocked = (f"import sys; sys.modules[{module!r}] = None\n"
               "from tgr.adapters.retrievers import " + make + "\n"
               "try:\n    " + make + "(sys.argv[1])\n"
               "except Exception as exc:\n    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", blocked, str(store)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SERVER_PATH}, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"TgrError this retriever needs {package}: " \
                                  f"pip install 'tgr[{extra}]'"


def test_tgr_imports_without_the_frameworks():
    probe = ("import sys; sys.modules['langchain_core'] = None; sys.modules['llama_index'] = None\n"
             "import tgr, tgr.adapters.retrievers; print('ok')")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SERVER_PATH}, cwd=ROOT, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    path = tmp_path_factory.mktemp("integ-zh") / "xiyou.db"
    with tgr.open(path, chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(ZH_CORPUS)], **SMALL)
    return path


def test_langchain_over_several_stores_gives_the_fused_ranking_naming_each_store(store, chinese):
    question = "Who raises the white whale? 孙悟空是谁？"
    before = [digest(store), digest(chinese)]
    with tgr.open_many([store, chinese]) as stores:
        expected = stores.retrieve(question, "local", 6)
        from_object = langchain_retriever(stores, mode="local", k=6)
    for retriever in (from_object, langchain_retriever([store, chinese], mode="local", k=6)):
        batches = retriever.batch([question, question], config={"max_concurrency": 2})  # worker threads
        for docs in batches:
            assert [(d.metadata["store"], d.metadata["chunk_id"], d.metadata["score"]) for d in docs] == \
                [(p.store, p.chunk_id, p.score) for p in expected]
            assert [d.page_content for d in docs] == [p.text for p in expected]
    assert {p.store for p in expected} == {str(store), str(chinese)}
    assert [digest(store), digest(chinese)] == before
    alone = langchain_retriever(store, k=2).invoke("Who raises the white whale?")
    assert "store" not in alone[0].metadata  # one store: its metadata as before
    with pytest.raises(ValueError, match="at least one store"):
        langchain_retriever([])


def test_the_retrievers_never_show_a_stores_key(store, chinese):
    with tgr.open_many([store, chinese], api_key="sk-secret-123") as stores:
        retriever = langchain_retriever(stores)
    assert "sk-secret" not in repr(retriever) and "sk-secret" not in json.dumps(retriever.model_dump(), default=str)


def test_a_retriever_opens_its_store_once_and_serves_every_thread(store):
    """The frameworks call a retriever from worker threads: it opens the store on its first query
    and every thread shares it (no 10-20 ms open per query), with the rankings of one thread."""
    retriever = langchain_retriever(store, k=3)
    questions = ["Who is Scrooge's clerk?", "Who raises the white whale?", "What is Marley's chain made of?"] * 3
    alone = [[d.id for d in retriever.invoke(q)] for q in questions]
    opened = retriever._opened._stores
    batches = retriever.batch(questions, config={"max_concurrency": 9})
    assert [[d.id for d in docs] for docs in batches] == alone
    assert retriever._opened._stores is opened and len(opened) == 1
    assert opened[0]._store.threads.leased == 0  # every thread gave its connection back
