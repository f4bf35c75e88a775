"""Reading documents: formats with ids and metadata, encodings, directories, symlinks.

Every test writes its own small files and indexes them into a real offline store.
"""
from __future__ import annotations

import codecs
import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tgr
from conftest import ROOT, SMALL
from handmade_pdf import make_pdf
from tgr.errors import InputError
from tgr.ingest.sources import read_documents

WHALE = ("Captain Ahab commands the Pequod out of Nantucket. Ahab hunts Moby Dick across the Pacific. "
         "Starbuck, the first mate of the Pequod, doubts the hunt.")
CAROL = ("Ebenezer Scrooge keeps a counting-house in London. Bob Cratchit works for Scrooge. "
         "Jacob Marley was the partner of Scrooge.")


def offline_store(path):
    return tgr.open(path, chat="offline", embedder="tgr:hash-384")


def index(db_path, paths, **kwargs):
    warnings: list[str] = []
    with offline_store(db_path) as kb:
        summary = kb.index([str(p) for p in paths], warn=warnings.append, **SMALL, **kwargs)
    return summary, warnings


def documents(db_path) -> dict:
    """external_id or source -> (title, metadata) as stored."""
    with offline_store(db_path) as kb:
        rows = kb.conn.execute("SELECT source, external_id, title, metadata FROM documents").fetchall()
    return {ext or source: (title, json.loads(meta)) for source, ext, title, meta in rows}


def source_of(db_path, question: str, external_id: str) -> dict:
    with offline_store(db_path) as kb:
        sources = kb.ask(question, mode="naive").sources
    found = [s for s in sources if s["external_id"] == external_id]
    assert found, sources
    return found[0]


def test_jsonl_rows_become_documents_with_ids_titles_and_metadata(tmp_path, db_path):
    rows = tmp_path / "corpus.jsonl"
    lines = [
        {"doc_id": "whale-1", "title": "Moby-Dick", "text": WHALE, "url": "https://example.org/whale",
         "date": "1851-10-18", "meta": {"source": "gutenberg", "chapter": 36}},
        {"id": 7, "title": "", "text": CAROL, "tags": ["ghost", "christmas"]},
        {"id": "no-text", "title": "Empty"},
        {"id": "blank", "text": "   "},
    ]
    rows.write_text("\n".join(json.dumps(line) for line in lines[:2]) + "\n\n"
                    + "\n".join(json.dumps(line) for line in lines[2:]) + "\nnot json at all\n[1, 2]\n",
                    encoding="utf-8")
    summary, warnings = index(db_path, [rows])
    assert summary.documents == 2
    assert f"{rows}:4: no text, skipped" in warnings
    assert f"{rows}:5: no text, skipped" in warnings
    assert any(w.startswith(f"{rows}:6: not valid JSON") for w in warnings)
    assert f"{rows}:7: not a JSON object, skipped" in warnings
    docs = documents(db_path)
    assert docs["whale-1"] == ("Moby-Dick", {"url": "https://example.org/whale", "date": "1851-10-18",
                                             "source": "gutenberg", "chapter": 36})
    assert docs["7"] == ("", {"tags": ["ghost", "christmas"]})
    with offline_store(db_path) as kb:
        assert {r[0] for r in kb.conn.execute("SELECT source FROM documents")} == {str(rows)}
    source = source_of(db_path, "Who commands the Pequod?", "whale-1")
    assert source["title"] == "Moby-Dick" and source["source"] == str(rows)
    assert source["metadata"]["url"] == "https://example.org/whale"


@pytest.mark.parametrize("index_kept", ["as made", "dropped", "on other columns"])
def test_passages_read_their_documents_ids_and_metadata_with_or_without_the_index(tmp_path, index_kept):
    """documents_extras lets a passage's document id and metadata be read without the text;
    a store without it (made before it) or with another index of that name reads the same."""
    import sqlean

    from tgr.query.retrieve import _document_extras

    rows = tmp_path / "corpus.jsonl"
    rows.write_text(json.dumps({"id": "w", "text": WHALE, "url": "u", "meta": {"n": 1}}) + "\n"
                    + json.dumps({"id": "c", "text": CAROL}) + "\n", encoding="utf-8")
    index(tmp_path / "s.db", [rows])
    if index_kept != "as made":
        conn = sqlean.connect(tmp_path / "s.db")
        conn.execute("DROP INDEX documents_extras")
        if index_kept == "on other columns":
            conn.execute("CREATE INDEX documents_extras ON documents(title)")
        conn.commit()
        conn.close()
    with offline_store(tmp_path / "s.db") as kb:
        ids = {r[0]: r[1] for r in kb.conn.execute("SELECT external_id, id FROM documents")}
        plan = " ".join(r[3] for r in kb.conn.execute(
            "EXPLAIN QUERY PLAN SELECT id, external_id, metadata FROM documents INDEXED BY documents_extras "
            "WHERE id IN (SELECT value FROM json_each('[]'))")) if index_kept == "as made" else ""
        first = _document_extras(kb.conn, {ids["w"], "no such document"})
        again = _document_extras(kb.conn, {ids["w"], ids["c"]})  # one read before, one not
        sources = {s["external_id"]: s["metadata"] for s in kb.ask("Who commands the Pequod?", mode="naive").sources}
    assert first == {ids["w"]: ("w", {"url": "u", "n": 1})}
    assert again == {ids["w"]: ("w", {"url": "u", "n": 1}), ids["c"]: ("c", {})}
    assert sources["w"] == {"url": "u", "n": 1}
    assert index_kept != "as made" or "COVERING INDEX documents_extras" in plan


def test_metadata_stays_json_that_sqlite_can_query(tmp_path, db_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "w", "text": "%s", "score": NaN, "url": "https://example.org/w"}\n' % WHALE,
                    encoding="utf-8")
    index(db_path, [rows])
    with offline_store(db_path) as kb:
        assert kb.conn.execute("SELECT json_extract(metadata, '$.url'), json_type(metadata, '$.score') "
                               "FROM documents WHERE external_id = 'w'").fetchone() == ("https://example.org/w", "null")


def test_jsonl_rows_with_the_same_text_are_one_document(tmp_path):
    rows = tmp_path / "dupes.jsonl"
    rows.write_text(json.dumps({"id": "a", "text": WHALE}) + "\n" + json.dumps({"id": "b", "text": WHALE}) + "\n",
                    encoding="utf-8")
    warnings: list[str] = []
    docs = read_documents([str(rows)], warnings.append)
    assert [d.external_id for d in docs] == ["a"]
    assert warnings == [f"{rows}:2: same content as {rows} (id a), skipped"]


def test_plain_files_have_no_external_id_and_empty_metadata(tmp_path):
    path = tmp_path / "whale.txt"
    path.write_text("# The Whale\n\n" + WHALE, encoding="utf-8")
    [doc] = read_documents([str(path)])
    assert (doc.title, doc.external_id, doc.metadata) == ("The Whale", None, {})


def test_a_jsonl_file_without_any_text_is_nothing_to_index(tmp_path, db_path):
    rows = tmp_path / "ids.jsonl"
    rows.write_text('{"id": "x"}\n', encoding="utf-8")
    with offline_store(db_path) as kb:
        with pytest.raises(InputError, match=r"nothing to index: .*ids.jsonl:1: no text"):
            kb.index([str(rows)])


# -- other formats ----------------------------------------------------------------------------

def test_csv_rows_with_ids_titles_urls_and_other_columns(tmp_path, db_path):
    table = tmp_path / "articles.csv"
    with table.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "title", "text", "url", "year", "notes"])
        writer.writerow(["w1", "Moby-Dick", WHALE, "https://example.org/whale", "1851", ""])
        writer.writerow(["c1", "A Christmas Carol", CAROL.replace(". ", ".\n"), "https://example.org/carol", "1843",
                         "multi-line, quoted"])
        writer.writerow(["x1", "No text", "", "https://example.org/none", "", ""])
    summary, warnings = index(db_path, [table])
    assert summary.documents == 2
    assert warnings == [f"{table}:6: no text, skipped"]  # lines 3-5 are one row (a quoted cell with newlines)
    docs = documents(db_path)
    assert docs["w1"] == ("Moby-Dick", {"url": "https://example.org/whale", "year": "1851"})
    assert docs["c1"][1]["notes"] == "multi-line, quoted"
    source = source_of(db_path, "Who works for Scrooge?", "c1")
    assert source["title"] == "A Christmas Carol" and source["metadata"]["url"] == "https://example.org/carol"


def test_csv_without_a_text_column_is_refused_by_name(tmp_path, db_path):
    table = tmp_path / "ids.csv"
    table.write_text("id;name\n1;Ahab\n", encoding="utf-8")
    with offline_store(db_path) as kb:
        with pytest.raises(InputError, match=r"ids.csv: no 'text' column in the header row \(columns: id, name\)"):
            kb.index([str(table)])


def test_html_visible_text_with_title_and_block_breaks(tmp_path, db_path):
    page = tmp_path / "whale.html"
    page.write_text(
        '<!DOCTYPE html><html lang="en"><head><title>The  Pequod &amp; her crew</title>'
        '<link rel="canonical" href="https://example.org/pequod">'
        '<style>body { color: red }</style><script>var secret = "Captain Nobody";</script></head>'
        '<body><h1>Crew</h1><p>Captain <b>Ahab</b> commands the Pequod.</p><div>Starbuck is the first mate.'
        '</div><ul><li>Stubb</li><li>Flask</li></ul><svg><title>icon</title></svg></body></html>',
        encoding="utf-8")
    summary, _ = index(db_path, [page])
    assert summary.documents == 1
    with offline_store(db_path) as kb:
        title, text, metadata = kb.conn.execute("SELECT title, text, metadata FROM documents").fetchone()
    assert title == "The Pequod & her crew"
    assert text == "Crew\n\nCaptain Ahab commands the Pequod.\n\nStarbuck is the first mate.\n\nStubb\n\nFlask\n"
    assert json.loads(metadata) == {"lang": "en", "url": "https://example.org/pequod"}
    assert "secret" not in text and "color" not in text and "icon" not in text
    source = source_of_path(db_path, "Who commands the Pequod?")
    assert source["metadata"]["url"] == "https://example.org/pequod"


def source_of_path(db_path, question: str) -> dict:
    with offline_store(db_path) as kb:
        sources = kb.ask(question, mode="naive").sources
    assert sources
    return sources[0]


def test_rst_title_skips_adornment_lines(tmp_path):
    path = tmp_path / "guide.rst"
    path.write_text("=========\nThe Whale\n=========\n\nIntro\n-----\n\n" + WHALE + "\n", encoding="utf-8")
    [doc] = read_documents([str(path)])
    assert doc.title == "The Whale" and WHALE in doc.text


def test_pdf_pages_keep_their_offsets_and_sources_say_the_page(tmp_path, db_path):
    pdf = tmp_path / "whale.pdf"
    pdf.write_bytes(make_pdf([["Loomings.", "Call me Ishmael. Ishmael goes to sea."],
                              ["The Quarter-Deck.", "Captain Ahab nails a gold doubloon to the mast.",
                               "Ahab hunts the white whale."]], title="Moby-Dick"))
    summary, _ = index(db_path, [pdf])
    assert summary.documents == 1
    with offline_store(db_path) as kb:
        title, text, metadata = kb.conn.execute("SELECT title, text, metadata FROM documents").fetchone()
    pages = json.loads(metadata)["pages"]
    assert title == "Moby-Dick" and pages[0] == 0 and len(pages) == 2
    assert text[pages[1]:].startswith("The Quarter-Deck.") and "Call me Ishmael" in text[:pages[1]]
    with offline_store(db_path) as kb:
        sources = kb.ask("What does Ahab nail to the mast?", mode="naive").sources
    assert sources and sources[0]["metadata"]["pages"] == pages
    assert sources[0]["page"] == (2 if sources[0]["char_start"] >= pages[1] else 1)


def test_pdf_sources_cite_the_page_a_passage_starts_on(tmp_path, db_path):
    pdf = tmp_path / "long.pdf"
    page_lines = [[f"Page {n} tells of the harpooner number {n} and his ship."] * 30 for n in range(1, 4)]
    page_lines[2][-1] = "Queequeg carves his coffin at the end of the third page."
    pdf.write_bytes(make_pdf(page_lines))
    index(db_path, [pdf])
    with offline_store(db_path) as kb:
        sources = kb.ask("Who carves a coffin?", mode="naive").sources
    pages = sources[0]["metadata"]["pages"]
    assert len(pages) == 3
    for source in sources:
        page = source["page"]
        assert pages[page - 1] <= source["char_start"] and (page == 3 or source["char_start"] < pages[page])
    # a page holds more than one chunk, so the passage with the last line starts on that page
    assert sources[0]["page"] == 3


def test_pdf_without_pypdf_names_the_extra(tmp_path):
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(make_pdf([["Call me Ishmael."]]))
    # a Python where pypdf cannot be imported, as after a plain `pip install tgr`
    code = ("import sys; sys.modules['pypdf'] = None\n"
            "from tgr.ingest.sources import read_documents\n"
            "from tgr.errors import InputError\n"
            "try:\n    read_documents([sys.argv[1]])\n"
            "except InputError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code, str(pdf)], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == f"{pdf}: reading PDF needs pypdf: pip install 'tgr[pdf]'"


def test_a_damaged_pdf_is_one_line_error_alone_and_a_warning_in_a_directory(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")
    (docs / "whale.txt").write_text(WHALE, encoding="utf-8")
    with pytest.raises(InputError, match=r"broken.pdf: not a readable PDF"):
        read_documents([str(docs / "broken.pdf")])
    warnings: list[str] = []
    assert [d.source for d in read_documents([str(docs)], warnings.append)] == [str(docs / "whale.txt")]
    assert any("broken.pdf: not a readable PDF" in w and w.endswith("skipped") for w in warnings)


# -- directories, encodings, symlinks ---------------------------------------------------------

def test_a_directory_reads_every_format_and_names_the_files_it_skips(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text(WHALE, encoding="utf-8")
    (docs / "sub" / "b.jsonl").write_text(json.dumps({"id": "carol", "text": CAROL}) + "\n", encoding="utf-8")
    (docs / "sub" / "c.htm").write_text("<p>Queequeg is a harpooner from Kokovoko.</p>", encoding="utf-8")
    (docs / "d.rst").write_text("Stubb\n=====\n\nStubb is the second mate.\n", encoding="utf-8")
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    (docs / "sub" / "table.xlsx").write_bytes(b"PK\x03\x04")
    (docs / ".hidden.txt").write_text("not indexed", encoding="utf-8")
    warnings: list[str] = []
    found = read_documents([str(docs)], warnings.append)
    assert sorted(Path(d.source).name for d in found) == ["a.txt", "b.jsonl", "c.htm", "d.rst"]
    assert warnings == [f"{docs}: skipped 2 file(s) of unsupported types: {docs / 'photo.png'}, "
                        f"{docs / 'sub' / 'table.xlsx'}"]


CHINESE = "孙悟空是花果山的美猴王，他拜须菩提祖师学艺，学会了七十二变和筋斗云。后来他大闹天宫，被如来佛祖压在五行山下。"
TRADITIONAL = "孫悟空是花果山的美猴王，他拜須菩提祖師學藝，學會了七十二變和筋斗雲。後來他大鬧天宮，被如來佛祖壓在五行山下。"
FRENCH = "Le café de la gare est fermé. Noël approche et la crème brûlée du chef reste célèbre à Zürich."


@pytest.mark.parametrize("name, text, codec, recorded", [
    ("gb.txt", CHINESE, "gb18030", "gb18030"),
    ("gbk.txt", CHINESE, "gbk", "gb18030"),
    ("big5.txt", TRADITIONAL, "big5", "big5"),
    ("cp950.txt", TRADITIONAL + "恒心。", "cp950", "cp950"),  # 恒 is one of Microsoft's Big5 extensions
    ("latin1.txt", FRENCH, "latin-1", "cp1252"),
    ("cp1252.txt", "He said \u201cit\u2019s \u20ac5\u201d \u2014 " + FRENCH, "cp1252", "cp1252"),
    ("utf16.txt", "Scrooge met Marley in the counting-house. " * 3, "utf-16-le", "utf-16-le"),
])
def test_legacy_encodings_decode_and_are_recorded(tmp_path, name, text, codec, recorded):
    path = tmp_path / name
    path.write_bytes(codecs.encode(text, codec))
    [doc] = read_documents([str(path)])
    assert doc.text == text and doc.metadata == {"encoding": recorded}


def test_long_cp1252_prose_with_curly_quotes_and_dashes_decodes(tmp_path):
    # the detector calls this much typography "messy"; that it reads as English settles it
    paragraphs = ["\u201cCall me Ishmael,\u201d he said \u2014 and then, \u2018Some years ago\u2019 \u2014 never "
                  "mind how long precisely \u2014 having little or no money in my purse, I thought I would sail "
                  "about a little and see the watery part of the world.",
                  "\u201cIt\u2019s a way I have of driving off the spleen,\u201d said he; \u201cwhenever it is a damp, "
                  "drizzly November in my soul \u2014 then I account it high time to get to sea.\u201d"] * 50
    path = tmp_path / "loomings.txt"
    text = "\n\n".join(paragraphs)
    path.write_bytes(text.encode("cp1252"))
    [doc] = read_documents([str(path)])
    assert doc.text == text and doc.metadata == {"encoding": "cp1252"}


def test_korean_is_not_mistaken_for_chinese(tmp_path):
    path = tmp_path / "hangul.txt"
    path.write_bytes(("대한민국은 동아시아의 한반도 남부에 위치한 민주공화국이다. " * 3).encode("euc-kr"))
    with pytest.raises(InputError, match="hangul.txt: not UTF-8 .*it may be CP949"):
        read_documents([str(path)])


def test_legacy_encoded_documents_answer_with_their_encoding_in_the_sources(tmp_path, db_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "xiyou.txt").write_bytes(CHINESE.encode("gb18030"))
    (docs / "rows.jsonl").write_bytes((json.dumps({"id": "tw", "title": "西遊記", "text": TRADITIONAL},
                                                  ensure_ascii=False) + "\n").encode("big5"))
    summary, _ = index(db_path, [docs])
    assert summary.documents == 2
    with offline_store(db_path) as kb:
        sources = kb.ask("孙悟空学会了什么？", mode="naive").sources
    assert {s["source"]: s["metadata"]["encoding"] for s in sources} == {
        str(docs / "rows.jsonl"): "big5", str(docs / "xiyou.txt"): "gb18030"}
    assert {s["external_id"] for s in sources} == {"tw", None}


def test_undecodable_and_binary_files_are_skipped_in_a_directory_but_refused_alone(tmp_path, db_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    japanese = ("吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。"
                "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。")
    (docs / "neko.txt").write_bytes(japanese.encode("shift_jis"))
    (docs / "blob.txt").write_bytes(bytes(range(256)) * 4)
    (docs / "whale.md").write_text(WHALE, encoding="utf-8")
    summary, warnings = index(db_path, [docs])
    assert summary.documents == 1
    assert any(w.startswith(f"{docs / 'neko.txt'}: not UTF-8") and "CP932" in w and w.endswith("skipped")
               for w in warnings), warnings
    assert f"{docs / 'blob.txt'}: binary file, skipped" in warnings
    with offline_store(db_path) as kb:
        with pytest.raises(InputError, match=r"neko.txt: not UTF-8 .*it may be CP932: convert it first, "
                                             r"e.g. iconv -f CP932 -t UTF-8$"):
            kb.index([str(docs / "neko.txt")])
        assert kb.info()["documents"] == 1
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "neko.txt").write_bytes(japanese.encode("shift_jis"))
    with offline_store(db_path) as kb:
        with pytest.raises(InputError, match="nothing to index: .*neko.txt: not UTF-8"):
            kb.index([str(only_bad)])


def test_damaged_utf8_is_named_as_such(tmp_path):
    path = tmp_path / "damaged.txt"
    good = (CHINESE * 20).encode("utf-8")
    path.write_bytes(good[:300] + b"\xff" + good[300:])
    with pytest.raises(InputError, match="looks like UTF-8 with an invalid byte at offset 300"):
        read_documents([str(path)])


def test_symlinks_leading_out_of_a_directory_are_not_followed(tmp_path):
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "passwd.txt").write_text("root:x:0:0:root:/root:/bin/bash", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "inner").mkdir(parents=True)
    (docs / "inner" / "whale.txt").write_text(WHALE, encoding="utf-8")
    (docs / "leak.txt").symlink_to(secret / "passwd.txt")
    (docs / "leakdir").symlink_to(secret, target_is_directory=True)
    (docs / "alias").symlink_to(docs / "inner", target_is_directory=True)  # inside: followed
    (docs / "loop").symlink_to(docs, target_is_directory=True)  # inside, and a loop: visited once
    warnings: list[str] = []
    found = read_documents([str(docs)], warnings.append)
    assert [d.source for d in found] == [str(docs / "inner" / "whale.txt")]  # once, by its real path
    assert not any("same content" in w for w in warnings)
    assert f"{docs}: not following 2 symlink(s) that lead outside it: {docs / 'leak.txt'}, {docs / 'leakdir'}" \
        in warnings
    assert not any("root:x" in d.text for d in found)
    # a symlink named on the command line is the user's explicit choice
    [doc] = read_documents([str(docs / "leak.txt")])
    assert doc.text.startswith("root:x")


def test_json_lists_of_documents_and_capitalised_csv_headers(tmp_path):
    listing = tmp_path / "docs.json"
    listing.write_text(json.dumps([{"id": "w", "title": "Whale", "text": WHALE, "year": 1851},
                                   {"id": "empty", "text": ""}]), encoding="utf-8")
    table = tmp_path / "sheet.csv"
    table.write_text(f'ID,Title,Text,Author\nc,Carol,"{CAROL}",Dickens\n', encoding="utf-8")
    warnings: list[str] = []
    docs = read_documents([str(listing), str(table)], warnings.append)
    assert [(d.external_id, d.title, d.metadata) for d in docs] == [
        ("w", "Whale", {"year": 1851}), ("c", "Carol", {"Author": "Dickens"})]
    assert warnings == [f"{listing}[2]: no text, skipped"]
    listing.write_text('{"not": "a document"', encoding="utf-8")
    with pytest.raises(InputError, match="docs.json: not valid JSON"):
        read_documents([str(listing)])


def test_many_duplicate_rows_give_a_few_warnings_and_a_count(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": f"r{n}", "text": WHALE}) + "\n" for n in range(9)), encoding="utf-8")
    warnings: list[str] = []
    assert [d.external_id for d in read_documents([str(rows)], warnings.append)] == ["r0"]
    assert warnings == [f"{rows}:{n}: same content as {rows} (id r0), skipped" for n in range(2, 7)] + [
        f"{rows}: 3 more rows with problems like these"]


def test_one_id_for_two_texts_is_kept_with_a_warning(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "x", "text": WHALE}) + "\n" + json.dumps({"id": "x", "text": CAROL}) + "\n",
                    encoding="utf-8")
    warnings: list[str] = []
    assert [d.external_id for d in read_documents([str(rows)], warnings.append)] == ["x", "x"]
    assert warnings == [f"{rows}:2: id x also names {rows}:1"]


def test_many_bad_rows_give_a_few_warnings_and_a_count(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": n}) + "\n" for n in range(12)) + json.dumps({"text": WHALE}) + "\n",
                    encoding="utf-8")
    warnings: list[str] = []
    assert len(read_documents([str(rows)], warnings.append)) == 1
    assert warnings == [f"{rows}:{n}: no text, skipped" for n in range(1, 6)] + [
        f"{rows}: 7 more rows with problems like these"]


def test_html_line_breaks_and_preformatted_text(tmp_path):
    page = tmp_path / "poem.htm"
    page.write_text("<p>Call me<br/>Ishmael.<br>Some years ago</p><pre>never  mind\nhow long</pre>", encoding="utf-8")
    [doc] = read_documents([str(page)])
    assert doc.text == "Call me\nIshmael.\nSome years ago\n\nnever  mind\nhow long\n"
    assert doc.title == "Call me"


def test_a_damaged_but_readable_pdf_is_read_with_one_warning_and_nothing_printed(tmp_path, capfd):
    pdf = tmp_path / "damaged.pdf"
    pdf.write_bytes(make_pdf([["Call me Ishmael."]]).replace(b"startxref\n", b"startxref\n1"))
    warnings: list[str] = []
    [doc] = read_documents([str(pdf)], warnings.append)
    assert doc.text == "Call me Ishmael.\n"
    assert len(warnings) == 1 and warnings[0].startswith(f"{pdf}: damaged PDF, read anyway (pypdf: ")
    assert capfd.readouterr() == ("", "")


def test_the_cli_warns_and_names_row_ids_and_pdf_pages_in_sources(tmp_path, db_path):
    from click.testing import CliRunner

    from tgr.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rows.jsonl").write_text(json.dumps({"id": "whale-1", "text": WHALE}) + "\n{}\n", encoding="utf-8")
    (docs / "carol.pdf").write_bytes(make_pdf([["A Christmas Carol"], CAROL.split(". ")]))
    result = CliRunner().invoke(main, ["index", str(db_path), str(docs), "--offline", "-q"])
    assert result.exit_code == 0, result.output
    assert f"warning: {docs / 'rows.jsonl'}:2: no text, skipped" in result.output
    result = CliRunner().invoke(main, ["ask", str(db_path), "Who commands the Pequod?", "--mode", "naive"])
    assert result.exit_code == 0, result.output
    assert f"{docs / 'rows.jsonl'} id whale-1 (chunk 0," in result.output
    result = CliRunner().invoke(main, ["ask", str(db_path), "Who works for Scrooge?", "--mode", "naive"])
    assert f"{docs / 'carol.pdf'} p. 1 (chunk 0," in result.output


def test_html_in_the_encoding_its_meta_tag_declares(tmp_path):
    page = tmp_path / "privet.html"
    text = "Привет, как дела? Это страница на русском языке."
    page.write_bytes(f'<html><head><meta charset="windows-1251"><title>Привет</title></head>'
                     f'<body><p>{text}</p></body></html>'.encode("cp1251"))
    [doc] = read_documents([str(page)])
    assert (doc.title, doc.text, doc.metadata) == ("Привет", text + "\n", {"encoding": "cp1251"})
    # without the declaration, Cyrillic is not among the encodings tgr guesses
    page.write_bytes(f"<p>{text}</p>".encode("cp1251"))
    with pytest.raises(InputError, match="privet.html: not UTF-8"):
        read_documents([str(page)])


def test_a_file_the_system_cannot_read_is_a_one_line_error(tmp_path):
    # /proc/self/mem exists but reading it from the start fails (EIO), even for root
    with pytest.raises(InputError, match=r"^/proc/self/mem: cannot read it \(Input/output error\)$"):
        read_documents(["/proc/self/mem"])


def test_a_rows_own_encoding_field_is_kept(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes((json.dumps({"id": "a", "text": CHINESE, "encoding": "as scanned"}, ensure_ascii=False)
                      + "\n").encode("gb18030"))
    [doc] = read_documents([str(rows)])
    assert doc.metadata == {"encoding": "as scanned"} and doc.text == CHINESE


def test_rst_json_and_tsv_round_trip_into_sources(tmp_path, db_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "stubb.rst").write_text("=====\nStubb\n=====\n\nStubb is the second mate of the Pequod.\n", encoding="utf-8")
    (docs / "list.json").write_text(json.dumps([{"doc_id": "q1", "title": "Queequeg", "text": "Queequeg is a "
                                                 "harpooner from Kokovoko.", "url": "https://example.org/q"}]),
                                    encoding="utf-8")
    (docs / "mates.tsv").write_text("id\ttitle\ttext\tdate\nf1\tFlask\tFlask is the third mate, from Tisbury.\t1851\n",
                                    encoding="utf-8")
    summary, warnings = index(db_path, [docs])
    assert summary.documents == 3 and warnings == []
    with offline_store(db_path) as kb:
        found = {}
        for question in ("Who is the second mate?", "Where is Queequeg from?", "Where is Flask from?"):
            best = kb.ask(question, mode="naive").sources[0]
            found[best["title"]] = (Path(best["source"]).name, best["external_id"], best["metadata"])
    assert found == {"Stubb": ("stubb.rst", None, {}),
                     "Queequeg": ("list.json", "q1", {"url": "https://example.org/q"}),
                     "Flask": ("mates.tsv", "f1", {"date": "1851"})}


def test_a_text_too_big_for_one_value_is_read_as_numbered_parts(tmp_path):
    """A plain-text file longer than one stored value holds (a whole corpus in one file) is
    read as parts of it, each under the limit, cut at paragraphs, that join to its text and
    carry ids (part 1, part 2, ...) so a new version of the file replaces them."""
    from tgr.ingest.formats import Record, in_parts
    from tgr.ingest.sources import MAX_DOCUMENT_CHARS
    from tgr.store.hardening import MAX_VALUE_BYTES

    paragraph = "Marley was dead, to begin with. 孙悟空拜师学艺。\n\n"
    text = paragraph * (MAX_DOCUMENT_CHARS // len(paragraph) + 10)
    (tmp_path / "corpus.txt").write_text(text, encoding="utf-8")
    docs = read_documents([str(tmp_path / "corpus.txt")])
    assert [d.external_id for d in docs] == ["part 1", "part 2"]
    assert "".join(d.text for d in docs).strip("\n") == text.strip("\n")
    assert all(len(d.text.encode("utf-8")) <= MAX_VALUE_BYTES and d.text.endswith("\n\n") for d in docs[:-1])
    assert docs[0].title.endswith("(part 1 of 2)") and len({d.id for d in docs}) == 2
    # rows keep their own id before the part's; a text without a break is cut where it must be
    parts = in_parts(Record(text="x" * 25, title="t", external_id="row 7"), 10)
    assert [p.text for p in parts] == ["x" * 10, "x" * 10, "x" * 5]
    assert [p.external_id for p in parts] == ["row 7 part 1", "row 7 part 2", "row 7 part 3"]
    assert in_parts(Record(text="short", title="t"), 10)[0].external_id is None


def test_a_file_read_in_parts_replaces_its_whole_and_its_outgrown_parts(tmp_path):
    """A file indexed whole that grows past one document's limit is read as parts: the parts
    replace the whole (no stale copy beside them); read again in fewer parts, or whole, the
    parts it no longer has leave too. (Parts made with a small limit: in_parts' own argument.)"""
    from tgr.ingest.corpus import store_documents
    from tgr.ingest.formats import Record, in_parts
    from tgr.ingest.sources import Document
    from tgr.text import content_hash

    path = str(tmp_path / "grows.txt")

    def read(text: str, most: int) -> list[Document]:
        return [Document(id=content_hash(r.text), source=path, title=r.title, text=r.text,
                         external_id=r.external_id, whole=r.whole)
                for r in in_parts(Record(text=text, title="grows"), most)]

    def stored(kb) -> list[tuple]:
        return kb.conn.execute("SELECT external_id, text FROM documents ORDER BY external_id").fetchall()

    paragraphs = [f"Paragraph {i} says Marley was dead, to begin with.\n\n" for i in range(12)]
    replaced = []
    with tgr.open(tmp_path / "store.db") as kb:
        def store(docs):
            store_documents(kb.conn, docs, chunk_size=300, chunk_overlap=40,
                            replaced=lambda doc, source: replaced.append((doc.external_id, source)))

        store(read("".join(paragraphs[:5]), 10_000))
        assert stored(kb) == [(None, "".join(paragraphs[:5]))]
        grown = "".join(paragraphs)
        store(read(grown, 200))  # now in parts
        parts = stored(kb)
        assert len(parts) > 2 and all(e and e.startswith("part ") for e, _ in parts)
        assert "".join(t for _, t in sorted(parts, key=lambda p: int(p[0].split()[1]))) == grown
        assert replaced == [("part 1", path)]
        fewer = read("".join(paragraphs[:6]), 200)
        assert 1 < len(fewer) < len(parts)
        ids = [d.external_id for d in fewer]
        store(fewer)  # (store_documents empties the list as it stores)
        assert [e for e, _ in stored(kb)] == ids
        store(read("".join(paragraphs[:2]), 10_000))  # whole again
        assert stored(kb) == [(None, "".join(paragraphs[:2]))]
        chunks = kb.conn.execute("SELECT count(DISTINCT document_id) FROM chunks").fetchone()[0]
        assert chunks == 1
        # a read that gives the same text again changes nothing
        store(read("".join(paragraphs[:2]), 10_000))
        assert stored(kb) == [(None, "".join(paragraphs[:2]))]
        # a whole whose text is the same as its first part's now: kept, as part 1
        store(read("".join(paragraphs[:4]), 10_000))
        kept = kb.conn.execute("SELECT id FROM documents").fetchone()[0]
        replaced.clear()
        store(read(grown, 200))
        assert "".join(t for _, t in sorted(stored(kb), key=lambda p: int(p[0].split()[1]))) == grown
        assert kb.conn.execute("SELECT external_id FROM documents WHERE id = ?", (kept,)).fetchone() == ("part 1",)
        assert ("part 1", path) not in replaced
