"""Topic evidence for ranking community reports: how much of what the passages naming a
community's members say is about the question's topic (BM25 over the chunks, then the words
near the topic's words in long chunks)."""
from __future__ import annotations

import bisect
import json
import re
from collections import defaultdict

from ..offline.global_answer import topic_terms
from ..store.size_limits import MAX_CONTEXT_TEXT
from ..text import has_cjk

TOPIC_MATCHES = 1000          # best BM25 chunks of the question's topic words looked at
EVIDENCE_SIZE_POWER = 0.5     # a community's evidence is over this power of its chunks: 0.5 beat 0 and 1 on every dev set
PASSAGE_TOKENS = 900          # a chunk up to this long is one passage (at 600 tokens, cmrc2018_trial R@2 0.97 -> 0.94)
NEAR_TOKENS = 15              # in a longer chunk, a member is near a topic word this close


def topic_evidence(retriever, question: str, community_ids: list[str],
                   power: float = EVIDENCE_SIZE_POWER, prior: float = 0.0) -> dict[str, float]:
    """How much the passages naming each community's members say about the question's
    topic, 0..1 (1: the best of these communities): the BM25 scores of the chunks that
    match its topic terms (tgr.offline.global_answer.topic_terms) and mention a member, summed,
    over the square root of all the chunks that mention one (EVIDENCE_SIZE_POWER): a
    community named everywhere does not win by size alone, nor one named once by chance.
    A chunk longer than a passage (PASSAGE_TOKENS: a novel's chunk holds several scenes) counts
    for a community by the share of its topic words that have a member named near them
    (NEAR_TOKENS): "poor Bob", not "Scrooge" three pages from "the poor".
    Empty for a question about the whole corpus. power: of the chunk count (1: the share of what
    is said of a community that is about the topic); prior: chunks added to every community's
    count, so that one named in a single passage that holds the topic's word does not
    outweigh one the topic is said of again and again (the offline answer's order of themes).

    The raw scores are kept for the connection's last question, so ranking the reports and
    writing the offline answer look them up once.

    Fused into Retriever.ranked_reports with EVIDENCE_WEIGHT, global R@10 of the offline dev stores
    rose: hotpotqa 0.715 -> 0.760, cmrc2018_trial 0.870 -> 0.990, rgb_zh 0.456 -> 0.568 (stores
    rebuilt with issue 25's cleaner graph; on the old graphs 0.785, 0.980, 0.566)."""
    if not community_ids:
        return {}
    raw = _raw_evidence(retriever, question, community_ids)
    found = {cid: raw[cid] for cid in community_ids if raw.get(cid, 0.0) > 0}
    if not found:
        return {}
    sizes = _community_chunks(retriever, sorted(found))
    scored = {cid: score / (max(1, sizes.get(cid, 1)) + prior) ** power for cid, score in found.items()}
    best = max(scored.values()) or 1.0
    return {cid: score / best for cid, score in scored.items()}


def _raw_evidence(retriever, question: str, community_ids: list[str]) -> dict[str, float]:
    """These communities' summed topic evidence (before the size), kept for the last question
    (ranking the reports asks for all of a level's, the offline answer for some of them)."""
    memo = retriever.cache.get(("topic evidence",), dict)
    wanted = set(community_ids)
    if memo.get("question") != question or not wanted <= memo["communities"]:
        memo.clear()
        memo.update(question=question, communities=wanted, raw=_evidence_of(retriever, question, sorted(wanted)))
    return memo["raw"]


def best_matches(retriever, text: str, limit: int) -> dict[str, float]:
    """{chunk id: BM25 score} of the best full-text matches of a text (Retriever.bm25), kept
    for the last two sets of terms asked: a global answer looks up the same ones for every
    theme, and the question ("Who is Scrooge?") and its topic ("scrooge") often match the same
    terms once the commonest are left out (the same thousand matches, 0.1 s each at 100 M)."""
    memo = retriever.cache.get(("best matches",), dict)
    key = (tuple(retriever.bm25_terms(text)), limit)
    if key not in memo:
        while len(memo) >= 2:
            memo.pop(next(iter(memo)))
        memo[key] = dict(retriever.bm25(text, limit))
    return memo[key]


def _evidence_of(retriever, question: str, community_ids: list[str]) -> dict[str, float]:
    terms = topic_terms(question)
    matched = best_matches(retriever, " ".join(terms), TOPIC_MATCHES) if terms else {}
    if not matched:
        return {}
    conn = retriever.conn
    ids = json.dumps(sorted(matched))
    long_chunks = {cid: (text, tokens) for cid, text, tokens in conn.execute(
        f"SELECT id, substr(text, 1, {MAX_CONTEXT_TEXT}), tokens FROM chunks "
        f"WHERE id IN (SELECT value FROM json_each(?)) AND tokens > {PASSAGE_TOKENS}", (ids,))
        if isinstance(text, str) and isinstance(tokens, int)}  # a store made elsewhere may hold anything
    # the matched chunks' mentions; in a long chunk, which of its topic words each mentioned
    # entity is named near; then the communities (among those asked about) of the entities
    # that count: those named in a short chunk, and those named near a topic word (a tenth of
    # all at 100 M characters: looking up every mentioned entity's cost 0.1-0.25 s)
    mentioned = conn.execute("SELECT chunk_id, entity_id FROM entity_mentions "
                             "WHERE chunk_id IN (SELECT value FROM json_each(?))", (ids,)).fetchall()
    near, topic_words = _near_words(conn, terms, long_chunks, mentioned) if long_chunks else ({}, {})
    entities = {e for c, e in mentioned if c not in long_chunks} | {e for _, e in near}
    communities: dict[str, list[str]] = defaultdict(list)
    for entity, community in conn.execute(
            "SELECT entity_id, community_id FROM community_members WHERE entity_id IN (SELECT value FROM "
            "json_each(?)) AND +community_id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(entities)), json.dumps(community_ids))):
        communities[entity].append(community)
    named_in: dict[str, dict[str, None]] = defaultdict(dict)  # community -> short chunks naming a member
    for chunk, entity in mentioned:
        if chunk not in long_chunks:
            for community in communities[entity]:
                named_in[community][chunk] = None
    raw: dict[str, float] = defaultdict(float)
    for community, chunks in named_in.items():
        raw[community] += sum(matched[c] for c in chunks)
    if long_chunks:
        for (community, chunk), share in _near_shares(near, topic_words, communities).items():
            raw[community] += matched[chunk] * share
    return dict(raw)


def _near_words(conn, terms: list[str], chunks: dict[str, tuple[str, int]], mentioned: list[tuple[str, str]]
                ) -> tuple[dict[tuple[str, str], set[int]], dict[str, int]]:
    """For chunks longer than a passage: (chunk, entity) -> the chunk's topic words (their
    numbers) that have the entity named near them (NEAR_TOKENS), for the mentions
    (chunk, entity) with one; and each chunk's number of topic words."""
    spans = _topic_spans(terms)
    windows = {}
    for chunk, (text, tokens) in chunks.items():
        reach = round(NEAR_TOKENS * len(text) / max(1, tokens))  # as many characters as that many tokens here
        windows[chunk] = [text[max(0, start - reach):end + reach] for start, end in spans(text)]
    mentioned = [(chunk, entity) for chunk, entity in mentioned if windows.get(chunk)]
    names: dict[str, set[str]] = defaultdict(set)
    for entity, name in conn.execute(
            "SELECT id, name FROM entities WHERE id IN (SELECT value FROM json_each(?1)) UNION "
            "SELECT entity_id, alias FROM entity_aliases WHERE entity_id IN (SELECT value FROM json_each(?1))",
            (json.dumps(sorted({e for _, e in mentioned})),)):
        if isinstance(name, str) and name:
            names[entity].add(name)
    joined = {chunk: _Joined(found) for chunk, found in windows.items()}
    near: dict[tuple[str, str], set[int]] = {}
    for chunk, entity in mentioned:
        close = joined[chunk].naming(names[entity])
        if close:
            near[(chunk, entity)] = close
    return near, {chunk: len(found) for chunk, found in windows.items()}


class _Joined:
    """A chunk's windows joined by NUL, to find which of them hold a name: the name's
    occurrences in the joined text, a window each at most, instead of a test a window (a
    long chunk of a novel has dozens of windows, and its mentions hundreds of names)."""

    def __init__(self, windows: list[str]):
        self.windows = windows
        self.text = "\0".join(windows)
        self.starts = [0]
        for window in windows[:-1]:
            self.starts.append(self.starts[-1] + len(window) + 1)

    def naming(self, names: set[str]) -> set[int]:
        """The numbers of the windows that hold one of the names."""
        close: set[int] = set()
        for name in names:
            if "\0" in name:  # an occurrence could span two windows: each tested
                close |= {i for i, window in enumerate(self.windows) if name in window}
                continue
            at = self.text.find(name)
            while at >= 0:
                window = bisect.bisect_right(self.starts, at) - 1
                close.add(window)
                if window + 1 == len(self.starts):
                    break
                at = self.text.find(name, self.starts[window + 1])
        return close


def _near_shares(near: dict[tuple[str, str], set[int]], topic_words: dict[str, int],
                 communities: dict[str, list[str]]) -> dict[tuple[str, str], float]:
    """(community, chunk) -> the share of the chunk's topic words that have one of the
    community's members named near them (near and topic_words: _near_words'), for chunks
    longer than a passage; communities: each entity's."""
    words: dict[tuple[str, str], set[int]] = defaultdict(set)  # (community, chunk) -> its topic words
    for (chunk, entity), close in near.items():
        for community in communities[entity]:
            words[(community, chunk)] |= close
    return {key: len(found) / topic_words[key[1]] for key, found in words.items()}


# The characters past ASCII that change what an ignore-case match of ASCII words finds when
# it is run as a plain match on the lower-cased text instead: İ, ı, ſ and the Kelvin sign K
# match ASCII letters ignoring case (or lower-case to more than one character). For every other
# character, lower() keeps one character, keeps it a word character or not, and makes it no
# ASCII letter (tests/test_global_topics.py checks this over all of Unicode).
_CASE_TRAPS = "\u0130\u0131\u017f\u212a"  # looked for one by one: `in` is 25 times as fast as a class


def _topic_spans(terms: list[str]):
    """A function giving the (start, end) of each match of _topic_words(terms) in a text.

    Ignoring case costs the regular expression engine its fast search for a word's first
    letters (three times the time over a thousand 5,000-character chunks at 100 M characters):
    when the terms are ASCII, the same matches are found by a plain match of the lower-cased
    terms in the lower-cased text, unless the text holds one of _CASE_TRAPS."""
    hit = _topic_words(terms)
    if not all(t.isascii() for t in terms):
        return lambda text: [m.span() for m in hit.finditer(text)]
    plain = re.compile(_topic_pattern([t.lower() for t in terms]))  # the same pattern, not ignoring case

    def spans(text: str) -> list[tuple[int, int]]:
        if any(trap in text for trap in _CASE_TRAPS):
            return [m.span() for m in hit.finditer(text)]
        return [m.span() for m in plain.finditer(text.lower())]
    return spans


def _topic_words(terms: list[str]) -> re.Pattern:
    """The topic words, longest first, in any case; a word of letters not right after another
    word character. That test comes after the word, as a look back over the word and the
    character before it (an ignore-case word matches as many characters as it has): a
    pattern that starts with a look back is tried at every character of a chunk, one that
    starts with a word's letters is not (twice as fast over a thousand 20,000-character chunks)."""
    return re.compile(_topic_pattern(terms), re.IGNORECASE)


def _topic_pattern(terms: list[str]) -> str:
    return "|".join(re.escape(t) if has_cjk(t) else rf"{re.escape(t)}(?<!\w(?s:.){{{len(t)}}})"
                    for t in sorted(set(terms), key=len, reverse=True))


def _community_chunks(retriever, community_ids: list[str]) -> dict[str, int]:
    """How many chunks mention a member of each community (kept between questions): the
    counts the store keeps (community_chunks, written by the cluster stage), and for a
    community without one (a store made before them, or one whose count a change dropped),
    counted here."""
    known = retriever.cache.get(("community chunks",), dict)
    missing = [c for c in community_ids if c not in known]
    if missing and _counts_kept(retriever):
        known.update(retriever.conn.execute(
            "SELECT community_id, chunks FROM community_chunks WHERE community_id IN "
            "(SELECT value FROM json_each(?))", (json.dumps(missing),)).fetchall())
        missing = [c for c in missing if c not in known]
    if missing:
        known.update(dict.fromkeys(missing, 0) | dict(retriever.conn.execute(
            "SELECT m.community_id, count(DISTINCT em.chunk_id) FROM community_members m "
            "JOIN entity_mentions em ON em.entity_id = m.entity_id "
            "WHERE m.community_id IN (SELECT value FROM json_each(?)) GROUP BY m.community_id",
            (json.dumps(missing),)).fetchall()))
    return known


def _counts_kept(retriever) -> bool:
    """Does the store have community_chunks (a store of schema 8 or later)?"""
    return retriever.cache.get(("community chunks kept",), lambda: retriever.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'community_chunks'").fetchone() is not None)
