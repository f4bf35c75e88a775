"""tgr delete and replacement on re-index: the store stays in step with its documents."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import tgr
from conftest import EN_CORPUS, SMALL, ZH_CORPUS
from tgr.cli import main
from tgr.errors import InputError

PART1 = EN_CORPUS / "carol_stave1_part1.txt"
PART2 = EN_CORPUS / "carol_stave1_part2.txt"
ZH1 = ZH_CORPUS / "xiyouji_ch1_part1.txt"


def offline_store(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def count(kb, sql, *args):
    return kb.conn.execute(sql, args).fetchone()[0]


def check_in_step(kb):
    """Chunks, their index rows and vectors agree; nothing points at a removed row."""
    kb.conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    assert count(kb, "SELECT count(*) FROM chunks_fts") == count(kb, "SELECT count(*) FROM chunks")
    assert count(kb, "SELECT count(*) FROM vec_chunks WHERE id NOT IN (SELECT id FROM chunks)") == 0
    assert count(kb, "SELECT count(*) FROM vec_chunks") == count(kb, "SELECT count(*) FROM chunks")
    assert count(kb, "SELECT count(*) FROM vec_entities WHERE id NOT IN (SELECT id FROM entities)") == 0
    assert count(kb, "SELECT count(*) FROM vec_reports WHERE id NOT IN (SELECT community_id FROM reports)") == 0
    assert count(kb, "SELECT count(*) FROM entities e WHERE NOT EXISTS "
                     "(SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)") == 0
    assert count(kb, "SELECT count(*) FROM extractions WHERE chunk_id NOT IN (SELECT id FROM chunks)") == 0


def test_delete_by_path_title_and_id(db_path):
    with offline_store(db_path) as kb:
        kb.index([str(PART1), str(PART2), str(ZH1)], **SMALL)
        zh_id, zh_title = kb.conn.execute("SELECT id, title FROM documents WHERE source = ?", (str(ZH1),)).fetchone()
        part2_chunks = count(kb, "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                                 "WHERE d.source = ?", str(PART2))
        chunks = count(kb, "SELECT count(*) FROM chunks")

        summary = kb.delete([str(PART2)])
        assert summary.documents_removed == [str(PART2)] and summary.documents == 2
        assert summary.chunks == chunks - part2_chunks
        check_in_step(kb)

        kb.delete([zh_id[:10]])  # a unique prefix of the document id
        assert count(kb, "SELECT count(*) FROM documents") == 1
        assert count(kb, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH '\"花果 果山\"'") == 0
        assert zh_title  # the title is another way to name it: covered by the CLI test
        check_in_step(kb)
        names = {r[0] for r in kb.conn.execute("SELECT name FROM entities")}
        assert "Scrooge" in names and not any("\u4e00" <= ch <= "\u9fff" for n in names for ch in n)


def test_dry_run_and_unknown_names_remove_nothing(db_path):
    with offline_store(db_path) as kb:
        kb.index([str(PART1), str(PART2)], **SMALL)
        before = count(kb, "SELECT count(*) FROM chunks"), count(kb, "SELECT count(*) FROM entities")
        plan = kb.delete([str(PART1)], dry_run=True)
        assert plan.documents_removed == [str(PART1)]
        with pytest.raises(InputError, match="no such document: nowhere.txt"):
            kb.delete([str(PART1), "nowhere.txt"])
        with pytest.raises(InputError, match="nothing to delete"):
            kb.delete([])
        assert (count(kb, "SELECT count(*) FROM chunks"), count(kb, "SELECT count(*) FROM entities")) == before


def test_deleted_fact_is_gone_and_same_shape_fact_is_found(tmp_path, db_path):
    """The issue's stale-graph case through delete: same counts, other content."""
    nemo, ahab = tmp_path / "nemo.txt", tmp_path / "ahab.txt"
    nemo.write_text("Captain Nemo commands the Nautilus.\n")
    ahab.write_text("Captain Ahab commands the Pequod.\n")
    with offline_store(db_path) as kb:
        kb.index([str(nemo)], **SMALL)
        kb.delete([str(nemo)])
        assert count(kb, "SELECT count(*) FROM entities") == 0
        kb.index([str(ahab)])
        context = kb.ask("Who commands the Nautilus?", context_only=True).context
        assert "Pequod" in context and "Nautilus" not in context and "Nemo" not in context


def test_reindexing_a_changed_file_replaces_it(tmp_path, db_path):
    doc = tmp_path / "notes.txt"
    doc.write_text("Captain Nemo commands the Nautilus. Professor Aronnax admires Captain Nemo.\n")
    with offline_store(db_path) as kb:
        kb.index([str(doc)], **SMALL)
        doc.write_text("Captain Ahab commands the Pequod. Ishmael sails with Captain Ahab.\n")
        warnings = []
        summary = kb.index([str(doc)], warn=warnings.append)
        assert summary.documents == 1 and summary.documents_removed == [str(doc)]
        assert f"{doc}: content changed since it was indexed; replaced the old version" in warnings
        names = {r[0] for r in kb.conn.execute("SELECT name FROM entities")}
        assert "Ahab" in " ".join(names) and "Nemo" not in " ".join(names)
        check_in_step(kb)
        assert count(kb, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'nautilus'") == 0
        assert count(kb, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'pequod'") == 1


def test_the_warning_about_a_changed_row_names_its_file_and_line(tmp_path, db_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "a", "text": "Captain Nemo commands the Nautilus."}\n', encoding="utf-8")
    with offline_store(db_path) as kb:
        kb.index([str(rows)], **SMALL)
        rows.write_text('{"id": "b", "text": "Ishmael sails."}\n{"id": "a", "text": "Ahab commands the Pequod."}\n',
                        encoding="utf-8")
        warnings = []
        kb.index([str(rows)], warn=warnings.append)
    assert warnings == [f"{rows}:2: content changed since it was indexed; replaced the old version"]


def test_cli_delete(tmp_path):
    store = tmp_path / "s.db"
    runner = CliRunner()
    built = runner.invoke(main, ["index", str(store), str(PART1), str(PART2), "--offline", "-q",
                                 "--chunk-size", "300", "--chunk-overlap", "40"])
    assert built.exit_code == 0, built.output
    with offline_store(store) as kb:
        title = kb.conn.execute("SELECT title FROM documents WHERE source = ?", (str(PART2),)).fetchone()[0]
    dry = runner.invoke(main, ["delete", str(store), title, "--dry-run"])
    assert dry.exit_code == 0 and dry.output.strip() == f"would delete {PART2}"
    missing = runner.invoke(main, ["delete", str(store), "no-such-doc"])
    assert missing.exit_code != 0 and "no such document: no-such-doc" in missing.output
    assert len(missing.output.strip().splitlines()) == 1
    done = runner.invoke(main, ["delete", str(store), str(PART2), "--json", "-q"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["documents_removed"] == [str(PART2)] and data["documents"] == 1
    with offline_store(store) as kb:
        check_in_step(kb)
