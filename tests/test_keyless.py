"""A store built with a chat model and an API embedder answers anyone: with no key, no
endpoint or --offline it answers from what the file holds, exits 0 and says once what was
left out. The models are reached at the wire level (fixtures/fakellm.py's server)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS
from tgr.cli import main
from tgr.models.clients import embeds
from tgr.errors import ModelMismatch
from tgr.adapters.retrievers import passages

ONE_FILE = EN_CORPUS / "carol_stave1_part1.txt"
SMALL_ARGS = ["--chunk-size", "300", "--chunk-overlap", "40", "-q"]
QUESTION = "Who is Marley?"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def api_store(db_path, fake_server, monkeypatch):
    """Built by the scripted LLM with an OpenAI-compatible embedder; then the endpoint goes."""
    monkeypatch.delenv("TGR_BASE_URL", raising=False)
    built = run("index", db_path, ONE_FILE, "--base-url", fake_server.url, "--chat-model", "fake-chat",
                "--embed-model", "openai:fake-embed", *SMALL_ARGS)
    assert built.exit_code == 0, built.output
    return db_path


@pytest.mark.parametrize("mode", ["local", "naive", "global"])
@pytest.mark.parametrize("extra", [[], ["--offline"]])
def test_every_mode_answers_with_no_endpoint_and_says_once_what_was_left_out(api_store, fake_server, mode, extra):
    calls = fake_server.stats.chat_calls
    result = run("ask", api_store, QUESTION, "--mode", mode, "--json", *extra)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["answer"] and not data["answer"].startswith("I don't know")
    assert data["model"] == "offline-extractive"
    assert data["sources"] and all(s["text"] and s["score"] > 0 for s in data["sources"])
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("warning: ")
    assert "; ".join(data["notes"]) == warnings[0].removeprefix("warning: ")
    assert "openai:fake-embed" in warnings[0] and "without vectors" in warnings[0]
    # how to get it back
    assert ("--offline" in warnings[0]) if extra else ("TGR_BASE_URL" in warnings[0])
    if not extra:  # --offline chose extractive answers: only the vectors are missing
        assert "openai:fake-chat" in warnings[0]
    assert fake_server.stats.chat_calls == calls


def test_context_only_and_plain_answers_need_no_endpoint(api_store):
    context = run("ask", api_store, QUESTION, "--context-only")
    assert context.exit_code == 0, context.output
    assert "Marley" in context.stdout and "-----Sources-----" in context.stdout
    assert "openai:fake-embed" in context.stderr and "openai:fake-chat" not in context.stderr
    plain = run("ask", api_store, QUESTION)
    assert plain.exit_code == 0 and "Marley" in plain.stdout and "\nSources:\n  [1] " in plain.stdout


def test_eval_python_api_and_retrievers_need_no_endpoint(api_store, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": QUESTION, "evidence_doc_ids": [str(ONE_FILE)]}) + "\n")
    evaluated = run("eval", api_store, questions, "--mode", "local", "--mode", "naive", "--mode", "global")
    assert evaluated.exit_code == 0, evaluated.output
    assert evaluated.stderr.count("warning: ") == 1 and "openai:fake-embed" in evaluated.stderr
    notes = []
    with tgr.open(api_store, readonly=True) as kb:
        for mode in ("local", "naive", "global"):
            assert kb.retrieve(QUESTION, mode, 3, warn=notes.append)
            assert kb.ask(QUESTION, mode, warn=notes.append).answer
    assert len(notes) == 2 and "openai:fake-embed" in notes[0] and "openai:fake-chat" in notes[1]
    assert [p.text for p in passages(api_store, QUESTION, "naive", 3)]


def test_with_the_endpoint_the_stores_own_models_answer_and_nothing_is_said(api_store, fake_server, monkeypatch):
    monkeypatch.setenv("TGR_BASE_URL", fake_server.url)
    embeds, calls = fake_server.stats.embed_calls, fake_server.stats.chat_calls
    result = run("ask", api_store, QUESTION, "--json")
    assert result.exit_code == 0 and result.stderr == ""
    data = json.loads(result.stdout)
    assert data["model"] == "openai:fake-chat" and data["notes"] == []
    assert fake_server.stats.embed_calls > embeds and fake_server.stats.chat_calls == calls + 1


def test_another_embedder_named_explicitly_is_still_refused(api_store):
    result = run("ask", api_store, QUESTION, "--embed-model", "tgr:hash-384")
    assert result.exit_code == 1 and "openai:fake-embed" in result.output
    with pytest.raises(ModelMismatch):
        with tgr.open(api_store, embedder="tgr:hash-384", readonly=True) as kb:
            kb.ask(QUESTION)


def test_a_store_built_offline_says_nothing(db_path):
    built = run("index", db_path, ONE_FILE, "--offline", "--embed-model", "tgr:hash-128", *SMALL_ARGS)
    assert built.exit_code == 0, built.output
    for extra in ([], ["--offline"]):
        result = run("ask", db_path, QUESTION, "--json", *extra)
        assert result.exit_code == 0 and result.stderr == ""
        assert json.loads(result.stdout)["notes"] == []


def test_portable_vectors_answer_where_the_api_embedder_cannot(db_path, fake_server, monkeypatch, tmp_path):
    # a tiny corpus: the local embedder is slow on a loaded machine
    first, second = tmp_path / "marley.txt", tmp_path / "fezziwig.txt"
    first.write_text("Marley was dead, to begin with. Scrooge and Marley were partners for many years. "
                     "Scrooge never painted out Old Marley's name above the warehouse door. "
                     "Bob Cratchit copied letters for Scrooge in a dismal little cell. "
                     "Fred, the nephew of Scrooge, wished Bob Cratchit a merry Christmas. "
                     "Fred invited Scrooge to dinner, and Scrooge refused Fred.\n", encoding="utf-8")
    second.write_text("Old Fezziwig kept a warehouse in London. Scrooge was his apprentice, and "
                      "Fezziwig gave a Christmas ball for everyone who worked for him.\n", encoding="utf-8")
    monkeypatch.delenv("TGR_BASE_URL", raising=False)
    built = run("index", db_path, first, "--base-url", fake_server.url, "--chat-model", "fake-chat",
                "--embed-model", "openai:fake-embed", "--portable", "--chunk-size", "30", "--chunk-overlap", "0", "-q")
    assert built.exit_code == 0, built.output

    def counts():
        with tgr.open(db_path, readonly=True) as kb:
            assert kb.meta["portable_embed_model"] == "local:multilingual-e5-small"
            return {kind: kb.conn.execute(f"SELECT (SELECT count(*) FROM {kind}), "
                                          f"(SELECT count(*) FROM vec_portable_{kind} WHERE input_hash IS NOT NULL)"
                                          ).fetchone() for kind in ("chunks", "entities", "reports")}

    found = counts()
    assert all(rows > 0 and portable == portable_rows(kind, rows) for kind, (rows, portable) in found.items()), found
    assert found["reports"][1] == 0  # the local model's report vectors: unused, not made
    for mode in ("local", "naive", "global"):
        result = run("ask", db_path, QUESTION, "--mode", mode, "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["answer"] and data["sources"] and all(s["text"] and s["score"] >= 0 for s in data["sources"])
        assert data["sources"][0]["score"] > 0  # fused scores are scaled: the last one may be 0
        assert "portable local:multilingual-e5-small vectors" in result.stderr
    # with its endpoint, the store's own vectors answer
    monkeypatch.setenv("TGR_BASE_URL", fake_server.url)
    assert run("ask", db_path, QUESTION, "--json").stderr == ""
    # a later run keeps them in step: the new document's rows get portable vectors too
    again = run("index", db_path, second, "-q")
    assert again.exit_code == 0, again.output
    assert all(portable == portable_rows(kind, rows) for kind, (rows, portable) in counts().items())


def portable_rows(kind: str, rows: int) -> int:
    """How many portable vectors a kind's rows get (tgr.build.embed.embeds)."""
    return rows if embeds(kind, "local:multilingual-e5-small") else 0


def test_portable_vectors_added_to_a_built_store(db_path, fake_server, monkeypatch, tmp_path):
    """`tgr rebuild STORE embeddings --add local:...`: what `index --portable` keeps, added later."""
    text = tmp_path / "marley.txt"
    text.write_text("Marley was dead, to begin with. Scrooge and Marley were partners for many years. "
                    "Bob Cratchit copied letters for Scrooge in a dismal little cell.\n", encoding="utf-8")
    monkeypatch.delenv("TGR_BASE_URL", raising=False)
    endpoint = ["--base-url", fake_server.url]
    built = run("index", db_path, text, *endpoint, "--chat-model", "fake-chat", "--embed-model", "openai:fake-embed",
                "--chunk-size", "30", "--chunk-overlap", "0", "-q")
    assert built.exit_code == 0, built.output

    def own_vectors():
        with tgr.open(db_path, readonly=True) as kb:
            return {kind: sorted(kb.conn.execute(f"SELECT id, embedding FROM vec_{kind}").fetchall())
                    for kind in ("chunks", "entities", "reports")}

    before = own_vectors()
    assert "portable" not in run("ask", db_path, QUESTION, "--json").stderr
    refused = run("rebuild", db_path, "graph", "--add", "local:multilingual-e5-small")
    assert refused.exit_code == 2 and "--add goes with the embeddings stage" in refused.output
    hashed = run("rebuild", db_path, "embeddings", "--add", "tgr:hash-128", *endpoint)
    assert hashed.exit_code == 1 and "portable vectors need a local model embedder" in hashed.stderr
    added = run("rebuild", db_path, "embeddings", "--add", "local:multilingual-e5-small", *endpoint)
    assert added.exit_code == 0, added.output
    with tgr.open(db_path, readonly=True) as kb:
        assert kb.meta["portable_embed_model"] == "local:multilingual-e5-small"
        for kind in ("chunks", "entities", "reports"):
            rows, portable = kb.conn.execute(f"SELECT (SELECT count(*) FROM {kind}), "
                                             f"(SELECT count(*) FROM vec_portable_{kind})").fetchone()
            assert rows > 0 and portable == portable_rows(kind, rows), kind
        runs = [r[0] for r in kb.conn.execute("SELECT command FROM runs ORDER BY id")]
    assert runs[-1] == "rebuild embeddings --add local:multilingual-e5-small"
    assert own_vectors() == before  # the store's own vectors are as they were
    asked = run("ask", db_path, QUESTION, "--mode", "naive", "--json")
    assert asked.exit_code == 0 and json.loads(asked.stdout)["sources"]
    assert "portable local:multilingual-e5-small vectors" in asked.stderr


def test_merged_portable_shards_keep_portable_vectors_without_embedding_them_again(tmp_path):
    """`tgr merge` of portable shards: the union keeps portable vectors, each shard's vector
    of a text the union still holds is taken as it is, and they equal one portable build's."""
    texts = ["Marley was dead, to begin with. Scrooge and Marley were partners for many years. "
             "Bob Cratchit copied letters for Scrooge in a dismal little cell.\n",
             "Old Fezziwig kept a warehouse in London. Scrooge was his apprentice, and "
             "Fezziwig gave a Christmas ball for Bob Cratchit and everyone who worked for him.\n"]
    files = []
    for i, text in enumerate(texts):
        files.append(tmp_path / f"doc{i}.txt")
        files[-1].write_text(text, encoding="utf-8")
    options = dict(chat="offline", embedder="tgr:hash-128")
    stores = {}
    for name, part in (("a", files[:1]), ("b", files[1:]), ("one", files)):
        stores[name] = tmp_path / f"{name}.db"
        with tgr.open(stores[name], **options) as kb:
            kb.index([str(f) for f in part], portable=True, chunk_size=30, chunk_overlap=0)
    steps = []
    tgr.merge_stores(tmp_path / "out.db", [stores["a"], stores["b"]],
                     progress=lambda stage, done, total: steps.append((stage, total)), **options)

    def portable(path):
        with tgr.open(path, readonly=True, **options) as kb:
            assert kb.meta["portable_embed_model"] == "local:multilingual-e5-small"
            return {kind: dict(kb.conn.execute(f"SELECT id, embedding FROM vec_portable_{kind}").fetchall())
                    for kind in ("chunks", "entities", "reports")}

    merged, one, shards = portable(tmp_path / "out.db"), portable(stores["one"]), [portable(stores[s]) for s in "ab"]
    assert merged == one  # every row of the union has the vector one build makes
    assert {stage: total for stage, total in steps if stage == "portable-chunks"} == {"portable-chunks": 0}
    shard_vectors = {v for shard in shards for vectors in shard.values() for v in vectors.values()}
    embedded = {stage: total for stage, total in steps if stage.startswith("portable-")}
    fresh = sum(v not in shard_vectors for vectors in merged.values() for v in vectors.values())
    assert sum(embedded.values()) == fresh < sum(len(v) for v in merged.values())
