"""Offline extraction is committed a batch of chunks at a time: a failure keeps what was done."""
from __future__ import annotations

import pytest

import tgr
from conftest import EN_CORPUS
from tgr.build.extract import extract_chunks
from tgr.ingest.corpus import store_documents
from tgr.ingest.sources import read_documents
from tgr.offline.providers import HashEmbedder, OfflineExtractor


class StopsAfter(OfflineExtractor):
    """The offline extractor, stopped by an error after its first `count` chunks."""

    def __init__(self, count: int):
        super().__init__()
        self.count = count

    def extract(self, chunks, save, idle=None) -> None:
        super().extract(chunks[:self.count], save, idle)
        raise RuntimeError("stopped")


def test_offline_extraction_keeps_the_chunks_done_before_a_failure(tmp_path):
    with tgr.open(tmp_path / "store.db", embedder=HashEmbedder()) as kb:
        store_documents(kb.conn, read_documents([str(EN_CORPUS / "carol_stave1_part1.txt")], print),
                        chunk_size=300, chunk_overlap=40)
        total = kb.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        assert total > 5 and OfflineExtractor.save_batch > 3  # 3 chunks: less than one batch
        with pytest.raises(RuntimeError, match="stopped"):
            extract_chunks(kb.conn, StopsAfter(3))
        assert kb.conn.execute("SELECT count(*) FROM extractions").fetchone()[0] == 3
        assert extract_chunks(kb.conn, OfflineExtractor()) == total - 3  # the rest, on the next run
        assert kb.conn.execute("SELECT count(*) FROM extractions").fetchone()[0] == total
