"""What every document of a corpus repeats (a file-name line, a host's speaker label, a chapter
header and source line) names no theme and is none of its "about:" words; a hero named in most
chapters' stories still names themes (tgr.offline.everywhere)."""
from __future__ import annotations

import re

import pytest

import tgr
from conftest import EN_CORPUS, SMALL, ZH_CORPUS
from tgr.offline.global_answer import PHRASES

GUESTS = ["Ada Brennan", "Otto Lindqvist", "Mira Castell", "Hugo Ferrand", "Lena Marsh", "Ivo Petrak"]


def _sentences(folder, pattern: str) -> list[str]:
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt")))
    return [" ".join(s.split()) for s in re.split(pattern, text) if 40 < len(s.strip()) < 300]


def transcripts(folder) -> None:
    """Six podcast parts: each starts with its file-name line and the host's label, then its
    guest and the host speak sentences of the fixture Carol."""
    said = _sentences(EN_CORPUS, r"(?<=[.!?])\s+")
    for n, guest in enumerate(GUESTS):
        lines = [f"Transcript Behind the Tech Episode {n + 1} {guest}.txt", "",
                 f"KEVIN SCOTT: Welcome to Behind the Tech. Today my guest is {guest}."]
        lines += [f"{guest.upper() if i % 2 else 'KEVIN SCOTT'}: {' '.join(said[n * 12 + 2 * i:n * 12 + 2 * i + 2])}"
                  for i in range(6)]
        (folder / f"episode_{n + 1}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def chapters(folder) -> None:
    """Six chapters: each starts with the book's header and a source line, then sentences of
    the fixture 西游记 in which 猴王 is named again and again."""
    said = _sentences(ZH_CORPUS, r"(?<=[。！？])")
    for n in range(6):
        lines = [f"西游记 第{'一二三四五六'[n]}回", "来源：古典文学在线 整理", ""]
        lines += ["".join(said[n * 8 + 2 * i:n * 8 + 2 * i + 2]) for i in range(4)]
        (folder / f"chapter_{n + 1}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("write, question, repeated", [
    (transcripts, "What are the main themes?", ["kevin scott", "transcript", "behind the tech", "episode", "tech"]),
    (transcripts, "Which guests talk about Christmas?", ["kevin scott", "transcript", "behind the tech", "episode"]),
    (chapters, "这些章节讲了哪些主题？", ["西游记", "古典文学", "来源", "在线", "整理"]),
])
def test_what_every_document_repeats_names_no_theme(tmp_path, write, question, repeated):
    folder = tmp_path / "corpus"
    folder.mkdir()
    write(folder)
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(folder)], **SMALL)
        themes, _ = kb.themes(question)
        answer = kb.ask(question, "global").answer
    assert themes
    named = [n.lower() for t in themes for n in t.names]
    about = [p.lower() for t in themes for p in t.phrases[:PHRASES]]
    assert not [n for n in named if any(r in n for r in repeated)], named
    assert not [p for p in about if p in repeated], about
    first = answer.splitlines()[1].lower()  # the leading theme
    assert not any(r in first.split("—")[0].split("——")[0] for r in repeated), first


def test_a_single_document_keeps_its_hero_among_the_names(tmp_path):
    """In one document every name is in every document: nothing is repeated boilerplate there."""
    with tgr.open(tmp_path / "carol.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(EN_CORPUS / "carol_stave1_part1.txt")], **SMALL)
        themes, _ = kb.themes("What are the main themes?")
    assert any("Scrooge" in n for t in themes for n in t.names)


def test_a_label_is_taken_whole_and_the_line_starts_found_are_those_of_the_plain_pattern():
    import random

    from tgr.offline import everywhere

    rng = random.Random(41)
    alphabet = list("ab :：\n\tXY") + ["Kevin", "KEVIN SCOTT", "kevin"]
    for name in ["Kevin", "Kevin Scott", "a:b", "凯文"]:
        rest = f"[ \\t]*(?:{everywhere._LABEL}[:：][ \\t]*)?{re.escape(name)}"
        plain = rf"[ \t]*(?:[^\n:：]{{1,20}}[:：][ \t]*)?{re.escape(name)}"
        ours = re.compile("\n" + rest, re.IGNORECASE), re.compile(rest, re.IGNORECASE)
        theirs = re.compile("\n" + plain, re.IGNORECASE), re.compile(plain, re.IGNORECASE)
        for _ in range(4000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
            text = text.replace("Y", rng.choice(["", " " * 19, "x" * 20, "x" * 21, "凯文"]))
            assert bool(ours[0].search(text)) == bool(theirs[0].search(text)), (name, text)
            assert bool(ours[1].match(text)) == bool(theirs[1].match(text)), (name, text)
    assert re.search("\n[ \\t]*(?:" + everywhere._LABEL + "[:：][ \\t]*)?Kevin", "\n" + "x" * 20 + ":Kevin")
    assert not re.search("\n[ \\t]*(?:" + everywhere._LABEL + "[:：][ \\t]*)?Kevin", "\n" + "x" * 21 + ":Kevin")


def _documents_repeating(conn, entity: str, name: str) -> int:
    """The reference: how many documents name the entity in their first line or at a line's
    start, every chunk naming it read (no reading stops early, no document order)."""
    pattern = re.compile(rf"(?:^|\n)[ \t]*(?:[^\n:：]{{1,20}}[:：][ \t]*)?{re.escape(name)}", re.IGNORECASE)
    found = set()
    for document, ordinal, text in conn.execute(
            "SELECT c.document_id, c.ordinal, c.text FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
            "WHERE em.entity_id = ?", (entity,)):
        first = text.lstrip().split("\n", 1)[0][:200] if ordinal == 0 else ""
        if name.lower() in first.lower() or pattern.search(text):
            found.add(document)
    return len(found)


def test_the_documents_read_in_turn_decide_as_reading_every_chunk_would(tmp_path):
    """Reading a name's documents fewest chunks first, and stopping once the threshold is met
    or out of reach, decides every threshold as the reference that reads every chunk does; a
    word's documents counted from the map of each chunk's document are SQL's."""
    import math

    from tgr.offline.everywhere import (EVERYWHERE, _chunks_by_document, _documents_holding, _Runs,
                                        _fts_match, _where_lines_repeat, everywhere_names, everywhere_words)
    from tgr.store.db import open_file

    folder = tmp_path / "corpus"
    folder.mkdir()
    transcripts(folder)
    chapters(folder)
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(folder)], **SMALL)
    conn = open_file(tmp_path / "s.db", readonly=True)
    total = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    members = conn.execute("SELECT DISTINCT e.id, e.name FROM entities e JOIN community_members m "
                           "ON m.entity_id = e.id").fetchall()
    runs = _Runs(conn)
    counts = {}
    for entity, name in members:
        counts[entity] = _documents_repeating(conn, entity, name)
        for needed in range(1, total + 2):
            documents = _chunks_by_document(conn, entity, runs, needed)
            assert _where_lines_repeat(conn, name, documents, needed) == (counts[entity] >= needed), (name, needed)
    needed = math.ceil(EVERYWHERE * total)
    assert total == 12 and 0 < sum(c >= needed for c in counts.values()) < len(counts)
    assert any(c == needed for c in counts.values())  # a name just at the threshold (KEVIN SCOTT's label)
    communities = [r[0] for r in conn.execute("SELECT id FROM communities")]
    names_of = {}
    for entity, name in members:
        names_of.setdefault(name, []).append(entity)
    expected = {name for name, entities in names_of.items() if any(counts[e] >= needed for e in entities)}
    assert everywhere_names(conn, communities, [n for _, n in members]) == expected
    words = ["kevin scott", "transcript", "西游记", "来源", "Scrooge", "古典文学", "nowhere", ""] + [n for _, n in members]
    for word in words:  # the documents holding a word: by the runs as by SQL
        match = _fts_match(word)
        by_sql = conn.execute("SELECT count(DISTINCT document_id) FROM chunks WHERE seq IN "
                              "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)", (match,)).fetchone()[0] if match else 0
        assert len(_documents_holding(conn, word, runs, 1)) == by_sql, word
    assert everywhere_words(conn, words) >= {"kevin scott", "transcript", "西游记", "来源"}


def test_chunks_are_grouped_by_document_as_each_chunks_own_document_says():
    """The runs of one document's chunks group seqs as looking each chunk's document up does,
    where documents' chunks interleave and seqs have gaps; a seq of no chunk is in none."""
    import random

    import sqlean

    from tgr.offline.everywhere import _Runs

    rng = random.Random(41)
    for _ in range(50):
        conn = sqlean.connect(":memory:")
        conn.execute("CREATE TABLE chunks(seq INTEGER PRIMARY KEY, document_id TEXT)")
        seqs = rng.sample(range(1, 200), rng.randint(0, 80))
        owner = {seq: rng.choice(["d1", "d2", "d3"][:rng.randint(1, 3)]) for seq in seqs}
        conn.executemany("INSERT INTO chunks VALUES (?, ?)", owner.items())
        runs = _Runs(conn)
        asked = rng.sample(range(0, 220), rng.randint(0, 60))
        expected: dict[str, list[int]] = {}
        for seq in sorted(asked):
            if seq in owner:
                expected.setdefault(owner[seq], []).append(seq)
        assert runs.grouped(asked) == expected


def test_repeated_words_are_read_from_a_to_z_only(tmp_path):
    """repeated_words reads only the full-text index's terms from 'a' to 'z' (a mixed store's
    Chinese terms are most of them): words at both ends of that range are still found."""
    from tgr.offline.community_reports import repeated_words

    folder = tmp_path / "corpus"
    folder.mkdir()
    for n, story in enumerate(["孙悟空拜师学艺。", "猪八戒吃西瓜。", "沙和尚挑着担子。", "唐僧念经。"]):
        (folder / f"part_{n}.txt").write_text(f"Zephyr Abbey Records, part {n + 1}.\n\n{story}\n", encoding="utf-8")
    with tgr.open(tmp_path / "s.db", chat="offline", embedder="tgr:hash-384") as kb:
        kb.index([str(folder)], **SMALL)
        repeated = repeated_words(kb.conn)
    assert {"zephyr", "abbey", "records"} <= repeated, repeated
    assert not any(ord(w[0]) > 127 for w in repeated)
