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

import bisect
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
    runs = _Runs(conn)
    return {name for entity, name in members
            if _where_lines_repeat(conn, name, _chunks_by_document(conn, entity, runs, needed), needed)}


class _Runs:
    """Which document each chunk is in: the store's chunk seqs, cut into runs of consecutive
    seqs of one document (a document's chunks are added together: a store has about as many
    runs as documents; a seq between runs, of a chunk removed, is in none). Read from the
    index by document (chunks_by_document, a JSON array of seqs a document), ~20 ms at 100 M
    characters, where looking a chunk's document up in its row reads a page a chunk (~3 us:
    the names a theme shows have tens of thousands of chunks). Read when first asked: a
    store of many short documents (1,000 in 1,000 chunks) seldom has a name or word in as many
    chunks as half its documents, and reading them costs ~25 ms."""

    def __init__(self, conn):
        self._conn = conn
        self._read = False

    def _read_runs(self) -> None:
        self._read = True
        rows = self._conn.execute("SELECT document_id, json_group_array(seq) FROM chunks GROUP BY document_id")
        document_of = {seq: document for document, seqs in rows for seq in json.loads(seqs)}
        self.firsts: list[int] = []
        self.lasts: list[int] = []
        self.documents: list[str] = []
        for seq in sorted(document_of):
            if self.documents and self.documents[-1] == document_of[seq] and self.lasts[-1] == seq - 1:
                self.lasts[-1] = seq
            else:
                self.firsts.append(seq)
                self.lasts.append(seq)
                self.documents.append(document_of[seq])

    def grouped(self, seqs: list[int]) -> dict[str, list[int]]:
        """These chunk seqs by document, in order; a seq of no chunk when the runs were read (a
        chunk added since: seqs only grow) is in none. A bisection a run, not a look-up a seq."""
        if not self._read:
            self._read_runs()
        seqs = sorted(seqs)
        grouped: dict[str, list[int]] = {}
        i = 0
        while i < len(seqs):
            run = bisect.bisect_right(self.firsts, seqs[i]) - 1
            if run < 0 or seqs[i] > self.lasts[run]:
                i += 1
                continue
            end = bisect.bisect_right(seqs, self.lasts[run], i)
            grouped.setdefault(self.documents[run], []).extend(seqs[i:end])
            i = end
        return grouped


def _chunks_by_document(conn, entity: str, runs: _Runs, needed: int) -> list[list[int]]:
    """The seqs of the chunks that name the entity, a list per document, the documents with
    the fewest first (the cheapest to rule out); none where fewer than `needed` chunks do (as
    few documents do)."""
    seqs = json.loads(conn.execute(
        "SELECT json_group_array(c.seq) FROM entity_mentions em JOIN chunks c ON c.id = em.chunk_id "
        "WHERE em.entity_id = ?", (entity,)).fetchone()[0])
    if len(seqs) < needed:
        return []
    grouped = runs.grouped(seqs)
    return [grouped[d] for d in sorted(grouped, key=lambda d: (len(grouped[d]), d))]


def _where_lines_repeat(conn, name: str, documents: list[list[int]], needed: int) -> bool:
    """Whether at least `needed` of the documents (each the seqs of its chunks that name the
    entity) name it in their first line or at the start of a line. The documents are read one
    at a time, each until a chunk of it does (one statement a document: a statement a chunk
    cost more than reading a decided document's texts in vain); the reading stops once
    `needed` documents have, or once too few are left to: a name most documents hold but
    only one repeats is ruled out by its rarest documents' few chunks."""
    if len(documents) < needed:  # before its patterns are made (most names of a big store)
        return False
    # at the text's start, or after a newline: two patterns, so that the second starts with its
    # newline and is looked for as such (a third of the time of one pattern trying "^|\n" at
    # every character of thousands of chunks)
    rest = rf"[ \t]*(?:{_LABEL}[:：][ \t]*)?{re.escape(name)}"
    at_text_start, at_line_start = re.compile(rest, re.IGNORECASE), re.compile("\n" + rest, re.IGNORECASE)
    lowered = name.lower()
    found = 0
    for left, seqs in zip(range(len(documents), 0, -1), documents):
        if found + left < needed:
            return False
        for ordinal, text in conn.execute("SELECT ordinal, text FROM chunks WHERE seq IN "
                                          "(SELECT value FROM json_each(?))", (json.dumps(seqs),)):
            text = text if isinstance(text, str) else ""
            first = text.lstrip().split("\n", 1)[0][:200] if ordinal == 0 else ""
            if lowered in first.lower() or at_text_start.match(text) or at_line_start.search(text):
                found += 1
                break
        if found >= needed:
            return True
    return False


def everywhere_words(conn, words: list[str]) -> set[str]:
    """Those of the words (or phrases) that at least half the store's documents hold."""
    total = _documents(conn)
    if total < MIN_DOCUMENTS or not words:
        return set()
    needed = math.ceil(EVERYWHERE * total)
    runs = _Runs(conn)
    return {word for word in dict.fromkeys(words) if len(_documents_holding(conn, word, runs, needed)) >= needed}


def _documents_holding(conn, phrase: str, runs: _Runs, needed: int) -> set[str]:
    """The documents with a chunk the full-text index finds the phrase in (a chunk's rowid
    there is its seq; one the chunks table no longer holds is in no document); none where
    fewer than `needed` chunks hold it (as few documents do)."""
    match = _fts_match(phrase)
    if not match:
        return set()
    seqs = json.loads(conn.execute("SELECT json_group_array(rowid) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                   (match,)).fetchone()[0])
    return set(runs.grouped(seqs)) if len(seqs) >= needed else set()


def _fts_match(phrase: str) -> str:
    """An FTS5 query for the chunks that hold a phrase: its words in a row, and each bigram of
    its Chinese runs (the index holds a Chinese run as its bigrams, tgr.text.index_terms)."""
    words = _WORD.findall(CJK_RUN.sub(" ", phrase).lower())
    parts = [f'"{" ".join(words)}"'] if words else []
    parts += [f'"{run[i:i + 2]}"' for run in CJK_RUN.findall(phrase) for i in range(max(1, len(run) - 1))]
    return " AND ".join(parts)
