"""What a corpus repeats in most of its documents: names and words that tell no theme apart.

A transcript corpus starts each part with its file-name line ("Transcript Behind the Tech
Episode 12 ...") and the host's speaker label ("KEVIN SCOTT: ..."); chapters carry the same
header (西游记 第二回) and source line (来源：...). Such a line is in every document, so the names
and words in it are too: they say which corpus a passage is from, not what it is about. The
test is BM25's own: a term in half the documents or more has no inverse document frequency
(tgr.query.common_terms drops such question words for the same reason). It is by documents, not
chunks, and only where a store has several documents: in one novel the hero is in every chunk
and still names its themes. A name must also be where a repeated line is (a document's first
line, a line's start, after a label), so that a hero named in most chapters still names themes.

The offline global answer (tgr.offline.global_answer) leaves such names out of a theme's names,
such words out of its "about:" words, and drops a community that has no other name.
"""
from __future__ import annotations

import json
import math
import re
import sys

from ..text import CJK_RUN

EVERYWHERE = 0.5   # a name or word in at least this share of a store's documents is everywhere
MIN_DOCUMENTS = 4  # ... of a store of at least this many documents (fewer: nothing is)
_WORD = re.compile(r"[^\W_]+")
# A label before a name on a repeated line ("KEVIN SCOTT: ", "来源："): up to 20 characters and
# a colon. Its characters are taken whole (possessive, from Python 3.11): giving some back
# could never reach a colon (the colon is not one of them), and trying to at every newline
# was half the time of the search over thousands of chunks. The same matches either way.
_LABEL = "[^\n:：]{1,20}+" if sys.version_info >= (3, 11) else "[^\n:：]{1,20}"


def _documents(conn) -> int:
    return conn.execute("SELECT count(*) FROM documents").fetchone()[0]


def everywhere_names(conn, community_ids: list[str], names: list[str]) -> set[str]:
    """Those of the names (of these communities' members) that at least half the store's
    documents name, and name where a repeated line is: in their first line, or at the start of
    a line (after a label: "来源：古典文学在线"). A hero named in every chapter's story is no
    boilerplate. Only the names a theme would show are tested: a big store's communities have
    thousands of members."""
    total = _documents(conn)
    names = sorted({n for n in names if isinstance(n, str) and n})
    if total < MIN_DOCUMENTS or not community_ids or not names:
        return set()
    needed = math.ceil(EVERYWHERE * total)
    members = conn.execute(
        "SELECT e.id, e.name FROM entities e WHERE e.name IN (SELECT value FROM json_each(?)) AND EXISTS "
        "(SELECT 1 FROM community_members m WHERE m.entity_id = e.id AND m.community_id IN "
        "(SELECT value FROM json_each(?)))",
        (json.dumps(names), json.dumps(sorted(set(community_ids))))).fetchall()
    return {name for entity, name in members
            if _documents_naming(conn, entity, needed) >= needed and _where_lines_repeat(conn, entity, name, needed)}


def _documents_naming(conn, entity: str, most: int) -> int:
    """How many documents have a chunk that names the entity, counted up to `most` (the
    scan stops there: a name in every document of a big store has many thousands of chunks)."""
    return conn.execute(
        "SELECT count(*) FROM (SELECT DISTINCT c.document_id FROM entity_mentions em JOIN chunks c "
        "ON c.id = em.chunk_id WHERE em.entity_id = ? LIMIT ?)", (entity, most)).fetchone()[0]


def _where_lines_repeat(conn, entity: str, name: str, needed: int) -> bool:
    """Whether at least `needed` documents name the entity in their first line or at the start
    of a line. The chunks naming it are read as they come, with their texts (one statement: a
    statement a chunk cost more than the texts of decided documents read in vain), and the
    reading stops once `needed` documents have: what every document repeats is found within a
    few chunks."""
    # at the text's start, or after a newline: two patterns, so that the second starts with its
    # newline and is looked for as such (a third of the time of one pattern trying "^|\n" at
    # every character of thousands of chunks)
    rest = rf"[ \t]*(?:{_LABEL}[:：][ \t]*)?{re.escape(name)}"
    at_text_start, at_line_start = re.compile(rest, re.IGNORECASE), re.compile("\n" + rest, re.IGNORECASE)
    lowered = name.lower()
    found: set[str] = set()
    for document, ordinal, text in conn.execute(
            "SELECT c.document_id, c.ordinal, c.text FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
            "WHERE em.entity_id = ?", (entity,)):
        if document in found:
            continue
        text = text if isinstance(text, str) else ""
        first = text.lstrip().split("\n", 1)[0][:200] if ordinal == 0 else ""
        if lowered in first.lower() or at_text_start.match(text) or at_line_start.search(text):
            found.add(document)
            if len(found) >= needed:
                return True
    return False


def everywhere_words(conn, words: list[str]) -> set[str]:
    """Those of the words (or phrases) that at least half the store's documents hold."""
    total = _documents(conn)
    if total < MIN_DOCUMENTS:
        return set()
    found = set()
    for word in dict.fromkeys(words):
        match = _fts_match(word)
        documents = conn.execute("SELECT count(DISTINCT document_id) FROM chunks WHERE seq IN "
                                 "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)",
                                 (match,)).fetchone()[0] if match else 0
        if documents >= EVERYWHERE * total:
            found.add(word)
    return found


def _fts_match(phrase: str) -> str:
    """An FTS5 query for the chunks that hold a phrase: its words in a row, and each bigram of
    its Chinese runs (the index holds a Chinese run as its bigrams, tgr.text.index_terms)."""
    words = _WORD.findall(CJK_RUN.sub(" ", phrase).lower())
    parts = [f'"{" ".join(words)}"'] if words else []
    parts += [f'"{run[i:i + 2]}"' for run in CJK_RUN.findall(phrase) for i in range(max(1, len(run) - 1))]
    return " AND ".join(parts)
