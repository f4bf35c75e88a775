"""`tgr merge`: stores built from random splits of a corpus, merged, equal one build of every
document (documents, chunks, entities, relationships, mentions, communities, reports), and the
merge asks for no extraction. Inputs that cannot be merged are refused with one line, and no
input is ever written."""
from __future__ import annotations

import hashlib
import random
import shutil

import pytest
import sqlean as sqlite3

import tgr
from conftest import EN_CORPUS, ZH_CORPUS, ScriptedChat, ScriptedEmbedder
from fakellm import prompt_kind
from test_community_chunks import check_community_chunks
from test_equivalence import TINY, check_hierarchy, pieces, snapshot
from test_hostile import cli, refused
from tgr.build.check import diagnose

EXTRACTION_KINDS = {"extract", "extract_entities", "extract_triplets", "glean"}


def offline(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def write_files(tmp_path, texts):
    files = []
    for i, text in enumerate(texts):
        files.append(tmp_path / f"doc{i}.txt")
        files[-1].write_text(text, encoding="utf-8")
    return files


def random_split(files, rng) -> list[list]:
    """The files shuffled and cut into 2 or 3 non-empty shards."""
    files = list(files)
    rng.shuffle(files)
    parts = rng.randint(2, min(3, len(files)))
    cuts = sorted(rng.sample(range(1, len(files)), parts - 1))
    return [files[a:b] for a, b in zip([0, *cuts], [*cuts, len(files)])]


def build(path, files, open_store):
    with open_store(path) as kb:
        kb.index([str(f) for f in files], **TINY)
    return path


def strict(kb) -> dict:
    """Beyond snapshot(): community ids, parents and every report's text."""
    q = lambda sql: sorted(kb.conn.execute(sql).fetchall())  # noqa: E731
    return {"communities": q("SELECT id, level, parent_id, size, is_leaf FROM communities"),
            "members": q("SELECT community_id, entity_id FROM community_members"),
            "community_chunks": q("SELECT community_id, chunks FROM community_chunks"),
            "reports": q("SELECT community_id, title, summary, rating, findings, full_text FROM reports"),
            "extractions": q("SELECT x.chunk_id, x.extractor, x.entities, x.relations FROM extractions x"),
            "extracted": q("SELECT chunk_id, position, name, type, description, key FROM extracted_entities")}


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def merge_run_calls(path) -> list[tuple]:
    """(stage, kind, cache_hit) of every ledger row of the merge run."""
    with offline(path) as kb:
        return kb.conn.execute("SELECT m.stage, m.kind, m.cache_hit FROM model_calls m JOIN runs r "
                               "ON r.id = m.run_id WHERE r.command = 'merge'").fetchall()


def cache_keys(path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT key FROM llm_cache")}
    finally:
        conn.close()


def check_equal(out, one, open_store):
    with open_store(out) as merged, open_store(one) as single:
        check_community_chunks(merged)
        assert snapshot(merged) == snapshot(single)
        assert strict(merged) == strict(single)
        check_hierarchy(merged)


@pytest.mark.parametrize("corpus,seed", [("en", 1), ("en", 2), ("zh", 3), ("zh", 4)])
def test_offline_random_splits_merge_to_one_build(tmp_path, corpus, seed):
    files = write_files(tmp_path, pieces(EN_CORPUS if corpus == "en" else ZH_CORPUS, 4))
    shards = random_split(files, random.Random(seed))
    inputs = [build(tmp_path / f"shard{i}.db", part, offline) for i, part in enumerate(shards)]
    before = [digest(p) for p in inputs]
    one = build(tmp_path / "one.db", files, offline)
    summary = tgr.merge_stores(tmp_path / "out.db", inputs)
    assert summary.documents == len(files) and summary.documents_added == len(files)
    assert summary.chunks_extracted == 0 and summary.calls_by_stage.get("extract", 0) == 0
    assert [part["documents"] for part in summary.inputs] == [len(part) for part in shards]
    check_equal(tmp_path / "out.db", one, offline)
    assert not [row for row in merge_run_calls(tmp_path / "out.db") if row[0].startswith("extract")]
    assert [digest(p) for p in inputs] == before  # the inputs are only read
    assert diagnose(tmp_path / "out.db") == []  # one complete file, nothing left to do


@pytest.mark.parametrize("seed", [5, 6])
def test_scripted_llm_random_splits_merge_to_one_build_without_extraction(tmp_path, seed):
    files = write_files(tmp_path, pieces(EN_CORPUS, 2) + pieces(ZH_CORPUS, 2))
    shards = random_split(files, random.Random(seed))

    def scripted(path, chat=None):
        return tgr.open(path, chat=chat or ScriptedChat(), embedder=ScriptedEmbedder())

    inputs = [build(tmp_path / f"shard{i}.db", part, scripted) for i, part in enumerate(shards)]
    single_chat = ScriptedChat()
    one = build(tmp_path / "one.db", files, lambda p: scripted(p, single_chat))
    chat, embedder = ScriptedChat(), ScriptedEmbedder()
    summary = tgr.merge_stores(tmp_path / "out.db", inputs, chat=chat, embedder=embedder)
    kinds = [prompt_kind(p) for p in chat.prompts]
    assert not EXTRACTION_KINDS & set(kinds), kinds  # no extraction prompt reached the model
    assert "extract" not in summary.calls_by_stage
    # what the model was asked is at most what one build asked besides extraction
    assert len(kinds) <= len([p for p in single_chat.prompts if prompt_kind(p) not in EXTRACTION_KINDS])
    assert summary.cache_hits > 0  # prompts the shards had seen were answered from the cache
    check_equal(tmp_path / "out.db", one, scripted)
    shard_keys = set().union(*(cache_keys(p) for p in inputs))
    assert shard_keys and shard_keys <= cache_keys(tmp_path / "out.db")  # every answer a shard paid for
    assert not [row for row in merge_run_calls(tmp_path / "out.db") if row[0].startswith("extract")]


def test_union_into_an_existing_store_equals_one_build(tmp_path):
    files = write_files(tmp_path, pieces(EN_CORPUS, 3) + pieces(ZH_CORPUS, 1))
    a = build(tmp_path / "a.db", files[:2], offline)
    b = build(tmp_path / "b.db", files[2:3], offline)
    c = build(tmp_path / "c.db", files[3:], offline)
    one = build(tmp_path / "one.db", files, offline)
    out = tmp_path / "out.db"
    shutil.copy(a, out)
    tgr.merge_stores(out, [b])
    again = tgr.merge_stores(out, [c, b])  # b a second time adds nothing
    assert again.documents_added == 1
    with offline(out) as merged, offline(one) as single:
        assert snapshot(merged) == snapshot(single)
        check_hierarchy(merged)
        runs = [r[0] for r in merged.conn.execute("SELECT command FROM runs ORDER BY id")]
    # the ledger keeps every run with where it came from, once
    assert runs == ["index", "merge", f"index (from {b})", "merge", f"index (from {c})"], runs


def test_vectors_of_chunks_are_taken_not_computed_again(tmp_path):
    files = write_files(tmp_path, pieces(EN_CORPUS, 2))
    inputs = [build(tmp_path / f"s{i}.db", [f], offline) for i, f in enumerate(files)]
    tgr.merge_stores(tmp_path / "out.db", inputs)
    assert not [r for r in merge_run_calls(tmp_path / "out.db") if r[0] == "embed-chunks"]
    with offline(tmp_path / "out.db") as kb:
        assert kb.conn.execute("SELECT count(*) FROM chunks WHERE embed_hash IS NULL").fetchone()[0] == 0
        assert kb.conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == \
            kb.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        passages = kb.retrieve("Scrooge and Marley", "naive", k=3)
    assert passages and "Scrooge" in passages[0].text



class RecordingEmbedder(ScriptedEmbedder):
    """The scripted embedder, keeping every text it was asked to embed."""

    def __init__(self):
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


def embedded_texts(path) -> dict[str, str]:
    """embed_hash -> kind of every entity and report row that has a vector."""
    with offline(path) as kb:
        return {h: kind for kind, table in (("entity", "entities"), ("report", "reports"))
                for (h,) in kb.conn.execute(f"SELECT embed_hash FROM {table} WHERE embed_hash IS NOT NULL")}


def test_entity_and_report_vectors_of_the_shards_are_not_made_again(tmp_path):
    from tgr.text import content_hash

    files = write_files(tmp_path, pieces(EN_CORPUS, 3) + pieces(ZH_CORPUS, 1))
    store = lambda path: tgr.open(path, chat="offline", embedder=RecordingEmbedder())  # noqa: E731
    inputs = [build(tmp_path / "a.db", files[:2], store), build(tmp_path / "b.db", files[2:], store)]
    one = build(tmp_path / "one.db", files, store)
    embedder = RecordingEmbedder()
    summary = tgr.merge_stores(tmp_path / "out.db", inputs, chat="offline", embedder=embedder)
    check_equal(tmp_path / "out.db", one, offline)
    union, shards = embedded_texts(tmp_path / "out.db"), {**embedded_texts(inputs[0]), **embedded_texts(inputs[1])}
    new = {h for h in union if h not in shards}
    asked = [content_hash(embedder.name, text) for text in embedder.texts]
    assert sorted(asked) == sorted(new)  # only texts new to the union, each once
    assert len(asked) < len(union) and {"entity", "report"} <= {union[h] for h in set(union) - new}
    assert sum(part["known_vectors"] for part in summary.inputs) >= len(set(union) - new)
    with offline(tmp_path / "out.db") as merged, offline(one) as single:  # the vectors one build makes
        for table in ("vec_entities", "vec_reports", "vec_chunks"):
            vectors = lambda kb: sorted(kb.conn.execute(f"SELECT id, embedding FROM {table}").fetchall())  # noqa: E731
            assert vectors(merged) == vectors(single), table


# -- refusals ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    files = write_files(root, pieces(EN_CORPUS, 2))
    return [build(root / f"s{i}.db", [f], offline) for i, f in enumerate(files)], files


def test_cli_merge_prints_the_union(two_shards, tmp_path):
    (a, b), _ = two_shards
    code, out, err = cli("merge", tmp_path / "out.db", a, b, "-q")
    assert code == 0, err
    assert f"from {a}: 1 documents" in out and "out.db: 2 documents" in out
    code, out, err = cli("info", tmp_path / "out.db")
    assert "documents         2" in out or "documents" in out


def test_cli_merge_through_an_endpoint_asks_no_extraction(tmp_path, fake_server):
    """Shards built through the OpenAI-compatible fake server; the merge, given only the
    endpoint (the chat and embedding models come from the stores), is counted at the server."""
    files = write_files(tmp_path, pieces(EN_CORPUS, 2) + pieces(ZH_CORPUS, 1))
    endpoint = ["--base-url", fake_server.url, "-q"]
    models = ["--chat-model", "fake-chat", "--embed-model", "openai:fake-embed"]
    for name, part in (("a.db", files[:2]), ("b.db", files[2:])):
        code, _, err = cli("index", tmp_path / name, *part, *models, *endpoint, "--chunk-size", "120",
                           "--chunk-overlap", "20")
        assert code == 0, err
    fake_server.reset_stats()
    code, out, err = cli("merge", tmp_path / "out.db", tmp_path / "a.db", tmp_path / "b.db", *endpoint)
    assert code == 0, err
    kinds = fake_server.stats.calls_by_kind
    assert not EXTRACTION_KINDS & {k for k, n in kinds.items() if n}, kinds
    with tgr.open(tmp_path / "out.db", readonly=True) as kb:
        assert kb.meta["chat_model"] == "openai:fake-chat" and kb.meta["embed_model"] == "openai:fake-embed"
        assert kb.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == \
            kb.conn.execute("SELECT count(*) FROM extractions").fetchone()[0] > 0
    # the vectors of chunks came from the shards, and those of every entity and report text a
    # shard had embedded (here the union's are all such): the server embedded nothing
    stages = {stage for stage, kind, hit in merge_run_calls(tmp_path / "out.db") if kind == "embed"}
    assert stages == set() and fake_server.stats.embed_calls == 0, stages
    with tgr.open(tmp_path / "out.db", readonly=True) as kb:
        for table, vectors in (("entities", "vec_entities"), ("reports", "vec_reports")):
            assert kb.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == \
                kb.conn.execute(f"SELECT count(*) FROM {vectors}").fetchone()[0] > 0


@pytest.mark.parametrize("case", ["chunking", "chat model", "embedder", "newer schema", "not tgr", "corrupted",
                                  "unfinished", "edited", "same as out", "missing"])
def test_incompatible_inputs_are_refused_in_one_line(two_shards, tmp_path, case):
    (a, b), files = two_shards
    other = tmp_path / "other.db"
    out = tmp_path / "out.db"
    words = []
    if case == "chunking":
        with offline(other) as kb:
            kb.index([str(files[0])], chunk_size=200, chunk_overlap=20)
        words = ["setting chunk size", "200"]
    elif case == "chat model":
        build(other, files[:1], lambda p: tgr.open(p, chat=ScriptedChat(), embedder="tgr:hash-384"))
        words = ["the chat model", "scripted:fake"]
    elif case == "embedder":
        build(other, files[:1], lambda p: tgr.open(p, chat="offline", embedder=ScriptedEmbedder()))
        words = ["the embedding model"]
    elif case == "newer schema":
        shutil.copy(b, other)
        conn = sqlite3.connect(other)
        conn.execute("PRAGMA user_version = 99")
        conn.close()
        words = ["newer tgr"]
    elif case == "not tgr":
        conn = sqlite3.connect(other)
        conn.execute("CREATE TABLE t(x)")
        conn.close()
        words = ["not a tgr store"]
    elif case == "corrupted":
        data = bytearray(b.read_bytes())
        data[5000:40000] = b"\xa5" * 35000
        other.write_bytes(bytes(data))
        words = [str(other)]
    elif case == "unfinished":
        shutil.copy(b, other)
        conn = sqlite3.connect(other)
        conn.execute("DELETE FROM extractions WHERE rowid IN (SELECT rowid FROM extractions LIMIT 2)")
        conn.execute("DELETE FROM meta WHERE key = 'content_digest'")  # (a run removes it when it starts)
        conn.commit()
        conn.close()
        words = ["2 chunks are not extracted", "never extracts"]
    elif case == "edited":  # a sound file whose rows are not those its build recorded
        shutil.copy(b, other)
        conn = sqlite3.connect(other)
        conn.execute("UPDATE chunks SET text = text || ' (edited)' WHERE seq = 1")
        conn.commit()
        conn.close()
        words = ["content changed since it was built", "tgr check"]
    elif case == "same as out":
        shutil.copy(a, out)
        other = out
        words = ["output store"]
    elif case == "missing":
        other = tmp_path / "nowhere.db"
        words = ["no such file"]
    existed = out.exists()
    before = {p: digest(p) for p in (a, b, other) if p.exists()}
    refused(cli("merge", out, a, other, "-q"), *words)
    assert {p: digest(p) for p in before} == before  # nothing was changed
    assert out.exists() == existed  # a refused merge leaves no new file behind


def test_planted_trigger_in_an_input_never_runs(two_shards, tmp_path):
    (a, b), _ = two_shards
    hostile = tmp_path / "hostile.db"
    shutil.copy(b, hostile)
    conn = sqlite3.connect(hostile)
    conn.execute("CREATE TRIGGER evil AFTER INSERT ON runs BEGIN DELETE FROM documents; END")
    conn.commit()
    conn.close()
    before = digest(hostile)
    refused(cli("merge", tmp_path / "out.db", a, hostile, "-q"), "unknown trigger")
    assert digest(hostile) == before and not (tmp_path / "out.db").exists()


def test_read_only_inputs_merge(two_shards, tmp_path):
    (a, b), _ = two_shards
    copies = []
    for p in (a, b):
        copies.append(tmp_path / p.name)
        shutil.copy(p, copies[-1])
        copies[-1].chmod(0o444)
    summary = tgr.merge_stores(tmp_path / "out.db", copies)
    assert summary.documents == 2


def test_a_document_in_two_shards_is_merged_once(tmp_path):
    files = write_files(tmp_path, pieces(EN_CORPUS, 3))
    a = build(tmp_path / "a.db", files[:2], offline)
    b = build(tmp_path / "b.db", files[1:], offline)
    one = build(tmp_path / "one.db", files, offline)
    summary = tgr.merge_stores(tmp_path / "out.db", [a, b])
    assert [part["documents"] for part in summary.inputs] == [2, 1]
    check_equal(tmp_path / "out.db", one, offline)
