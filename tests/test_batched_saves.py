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


class SmallPages(OfflineExtractor):
    """The offline extractor, handed the pending chunks three at a time."""
    page_size = 3

    def __init__(self):
        super().__init__()
        self.pages: list[int] = []

    def extract(self, chunks, save, idle=None) -> None:
        self.pages.append(len(chunks))
        super().extract(chunks, save, idle)


def _extracted(conn) -> list[tuple]:
    return conn.execute("SELECT chunk_id, position, name, type, description FROM extracted_entities "
                        "ORDER BY chunk_id, position").fetchall()


def test_chunks_are_read_a_page_at_a_time_with_the_same_rows(tmp_path):
    """A run holds one page of pending chunks, not the corpus: the pages cover every chunk
    once, in document order, and give the rows of one pass over all of them."""
    files = [str(p) for p in sorted(EN_CORPUS.glob("*.txt"))[:3]]
    rows = {}
    for name, extractor in (("paged", SmallPages()), ("whole", OfflineExtractor())):
        with tgr.open(tmp_path / f"{name}.db", embedder=HashEmbedder()) as kb:
            store_documents(kb.conn, read_documents(files, print), chunk_size=300, chunk_overlap=40)
            total = kb.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            assert extract_chunks(kb.conn, extractor) == total
            rows[name] = _extracted(kb.conn)
            if name == "paged":
                assert sum(extractor.pages) == total and len(extractor.pages) == -(-total // 3)
                assert set(extractor.pages[:-1]) == {3}
    assert rows["paged"] and rows["paged"] == rows["whole"]
