"""Check the LlamaIndex retriever (tgr.adapters.retrievers.llamaindex_retriever) against the real
llama-index-core, and time a retrieval through it and through the LangChain retriever.

llama-index-core is not in the test extra (it pulls ~60 packages, ~245 MB: nltk, SQLAlchemy,
numpy, tiktoken, pillow, aiohttp), so this script is its check. It needs
`pip install -e '.[llamaindex,langchain]'`, builds an offline store of fixtures/corpus_en in a
temp dir, and exits non-zero on any mismatch (retrieve and aretrieve alike):

    python bench/llamaindex_check.py
"""
from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tgr  # noqa: E402
from tgr.adapters.retrievers import langchain_retriever, llamaindex_retriever  # noqa: E402

QUESTIONS = ["What does Marley's ghost tell Scrooge?", "Who is Bob Cratchit?", "What are the main themes?"]


def main() -> int:
    from llama_index.core.schema import MetadataMode, NodeWithScore

    os.environ.setdefault("TGR_EMBED_MODEL", "tgr:hash-384")
    failures = []
    with tempfile.TemporaryDirectory(prefix="tgr-llamaindex-") as tmp:
        store = Path(tmp) / "carol.db"
        with tgr.open(store) as kb:
            kb.index([str(ROOT / "fixtures" / "corpus_en")], chunk_size=300, chunk_overlap=40)
        before = hashlib.sha256(store.read_bytes()).hexdigest()
        for mode in ("local", "naive", "global"):
            retriever = llamaindex_retriever(store, mode=mode, k=5)
            for question in QUESTIONS:
                start = time.perf_counter()
                nodes = retriever.retrieve(question)
                took = time.perf_counter() - start
                with tgr.open(store, readonly=True) as kb:
                    expected = kb.retrieve(question, mode, 5)
                if not nodes or not all(isinstance(n, NodeWithScore) for n in nodes):
                    failures.append(f"{mode} {question!r}: no NodeWithScore results")
                if [n.node.node_id for n in nodes] != [p.chunk_id for p in expected]:
                    failures.append(f"{mode} {question!r}: ranking differs from kb.retrieve")
                awaited = asyncio.run(retriever.aretrieve(question))  # _aretrieve, on the async API
                if [(n.node.node_id, n.score) for n in awaited] != [(n.node.node_id, n.score) for n in nodes]:
                    failures.append(f"{mode} {question!r}: aretrieve differs from retrieve")
                if [n.score for n in nodes] != sorted((n.score for n in nodes), reverse=True):
                    failures.append(f"{mode} {question!r}: scores not descending")
                shown = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM) if nodes else ""
                if "chunk_id" in shown or "source:" not in shown:
                    failures.append(f"{mode} {question!r}: LLM view of a node: {shown[:80]!r}")
                start = time.perf_counter()
                langchain_retriever(store, mode=mode, k=5).invoke(question)
                lc = time.perf_counter() - start
                print(f"{mode:6} {len(nodes)} nodes, top {nodes[0].score:.4f} {nodes[0].node.metadata['source']}"
                      f"  llamaindex {took * 1000:.0f} ms  langchain {lc * 1000:.0f} ms  {question}")
        failures += several_stores(store, Path(tmp) / "carol-copy.db")
        if hashlib.sha256(store.read_bytes()).hexdigest() != before:
            failures.append("the store file changed")
    for failure in failures:
        print("FAIL", failure)
    print("ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


def several_stores(store: Path, copy: Path) -> list[str]:
    """The retriever over two stores (paths, and an open_many object) gives open_many's fused
    ranking, each node naming its store."""
    import shutil

    shutil.copy(store, copy)
    failures = []
    with tgr.open_many([store, copy]) as stores:
        expected = [(p.store, p.chunk_id) for p in stores.retrieve(QUESTIONS[0], "local", 6)]
        retrievers = [llamaindex_retriever(stores, k=6), llamaindex_retriever([store, copy], k=6)]
    for retriever in retrievers:
        for nodes in (retriever.retrieve(QUESTIONS[0]), asyncio.run(retriever.aretrieve(QUESTIONS[0]))):
            if [(n.node.metadata["store"], n.node.metadata["chunk_id"]) for n in nodes] != expected:
                failures.append("several stores: ranking differs from open_many's")
    print(f"two stores: {len(expected)} nodes from {sorted({s for s, _ in expected})}")
    return failures


if __name__ == "__main__":
    sys.exit(main())
