"""Citations a reader can follow: numbered 1..N in the plain answer, each listed; tgr show."""
from __future__ import annotations

import json

from click.testing import CliRunner

import tgr
from tgr.query.citations import numbered
from tgr.cli import main
from tgr.query.modes import Answer


def _answer(text: str) -> Answer:
    sources = [{"ref": n, "chunk_id": f"c{n}", "source": "a.txt", "ordinal": n, "text": "t"} for n in (1, 2, 5)]
    return Answer("q", "local", text, "", "m", sources=sources, entities=["scrooge", "marley"], reports=["0.1", "1.3"])


def test_every_kind_is_numbered_in_order_of_first_citation():
    text, cited = numbered(_answer("A [Sources: 5]. B [Entities: 2] [Reports: 1.3]. C [Data: Sources (1, 5); "
                                   "Entities (1)]. D [Sources: 9]."))
    assert text == "A [1]. B [2] [3]. C [4, 1, 5]. D [6]."
    assert [(c.kind, c.id) for c in cited] == [("source", "c5"), ("entity", "marley"), ("report", "1.3"),
                                               ("source", "c1"), ("entity", "scrooge"), ("source", "9")]
    assert cited[0].label == "a.txt (chunk 5, c5)"
    assert cited[5].label == "source 9: not in this answer's context"  # the answer has no source 9


def test_a_streamed_answer_is_renumbered_as_it_arrives():
    from tgr.query.citations import Renumbering
    answer = _answer("A [Sources: 5]. B [Entities: 2] [Sources: 1, 5].")
    renumbering = Renumbering()
    pieces = ["A [Sour", "ces: 5]. B [Entities:", " 2] [Sources: 1,", " 5]."]
    printed = [renumbering.feed(p) for p in pieces] + [renumbering.end()]
    assert printed == ["A ", "[1]. B ", "[2] ", "[3, 1].", ""]  # a citation cut in two waits for its end
    assert "".join(printed) == numbered(answer)[0]
    assert [c.id for c in renumbering.cited(answer)] == ["c5", "marley", "c1"]


def test_ask_lists_what_it_cites_and_show_prints_each(hierarchy_store):
    out = CliRunner().invoke(main, ["ask", str(hierarchy_store), "Who did Scrooge work for?"])
    assert out.exit_code == 0, out.output
    answer, listing = out.output.split("\nSources:\n")
    numbers = sorted({int(n) for n in __import__("re").findall(r"\[(\d+)\]", answer)})
    listed = [line for line in listing.splitlines() if line.startswith("  [")]
    assert numbers == list(range(1, len(listed) + 1))  # consecutive, and every one listed
    chunk_id = listed[0].rsplit(", ", 1)[1].rstrip(")")
    shown = CliRunner().invoke(main, ["show", str(hierarchy_store), chunk_id])
    assert shown.exit_code == 0 and shown.output.startswith(f"chunk {chunk_id}: ")
    with tgr.open(hierarchy_store, readonly=True) as kb:
        text = kb.conn.execute("SELECT text FROM chunks WHERE id = ?", (chunk_id,)).fetchone()[0]
        report_id = kb.conn.execute("SELECT community_id FROM reports ORDER BY community_id LIMIT 1").fetchone()[0]
    assert text.strip()[:40] in shown.output
    data = json.loads(CliRunner().invoke(main, ["ask", str(hierarchy_store), "Who did Scrooge work for?",
                                                "--json"]).output)
    assert "[Sources: " in data["answer"]  # --json keeps the answer's own numbering
    report = CliRunner().invoke(main, ["show", str(hierarchy_store), report_id])
    assert report.exit_code == 0 and report.output.startswith(f"report {report_id} (level ")


def test_show_an_entity_by_name_and_nothing_is_exit_1(hierarchy_store):
    entity = CliRunner().invoke(main, ["show", str(hierarchy_store), "Scrooge"])
    assert entity.exit_code == 0, entity.output
    first = entity.output.splitlines()[0]
    assert first.startswith("entity Scrooge (person), id ") and "relationships (" in entity.output
    as_json = json.loads(CliRunner().invoke(main, ["show", str(hierarchy_store), "Scrooge", "--json"]).output)
    assert as_json["kind"] == "entity" and as_json["relationships"] and "aliases" in as_json
    missing = CliRunner().invoke(main, ["show", str(hierarchy_store), "zzqqxx"])
    assert missing.exit_code == 1 and missing.output.startswith("no chunk, report or entity 'zzqqxx'")
