"""The offline global answer: the store's main communities, each named, described and cited.

Without a chat model, a global question is answered from the community reports themselves
(see tgr.offline.community_reports): each community's name, its key phrases and a representative
sentence, with the chunks it comes from as numbered sources. Communities whose report matches
the question's terms come first (relevance, then importance); a corpus-wide question ("What
are the main themes?") matches none, and the most important communities are listed.
Words that only say the question is corpus-wide ("main", "themes") do not count as matches.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..store.size_limits import MAX_CONTEXT_TEXT, cap, loads
from .providers import score_overlap
from ..text import match_terms, shorten

COMMUNITIES = 5          # communities an answer lists
SOURCES_PER_COMMUNITY = 3
IMPORTANCE_WEIGHT = 0.3  # rating/10 against relevance (0-1) in the order of relevant communities
# words of a question about the whole corpus rather than about something in it
CORPUS_WIDE = frozenset("""main major key central important principal overall general chief
    theme themes topic topics subject subjects idea ideas story stories book books text texts
    corpus store document documents summary summarise summarize summarized overview about
    discussed covered describe described mentioned talk talked""".split())


@dataclass
class OfflineGlobal:
    """The answer text, the chunks it cites (in source order), the communities it lists and
    one key point per community (for the context shown with --context)."""
    text: str
    chunks: list[tuple[str, float]] = field(default_factory=list)
    communities: list[str] = field(default_factory=list)
    points: list[str] = field(default_factory=list)


@dataclass
class _Community:
    id: str
    title: str
    summary: str
    rating: float
    phrases: list[str]
    sentences: list[tuple[str, str]]   # (sentence, chunk id)
    relevance: float = 0.0


def _read(conn, report_ids: list[str]) -> list[_Community]:
    """The candidate reports, parsed defensively (a store from elsewhere may hold anything)."""
    communities = []
    for cid in report_ids:
        row = conn.execute(f"SELECT title, substr(summary, 1, {MAX_CONTEXT_TEXT}), rating, findings "
                           "FROM reports WHERE community_id = ?", (cid,)).fetchone()
        if row is None:
            continue
        try:
            findings = loads(row[3], max_chars=MAX_CONTEXT_TEXT * 10)
        except ValueError:
            findings = []
        findings = [f for f in findings if isinstance(f, dict)] if isinstance(findings, list) else []
        phrases = next((f["key_phrases"] for f in findings if isinstance(f.get("key_phrases"), list)), [])
        sentences = [(cap(str(f.get("explanation", ""))), f["chunk_id"]) for f in findings
                     if isinstance(f.get("chunk_id"), str) and f.get("explanation")]
        rating = row[2] if isinstance(row[2], (int, float)) else 0.0
        communities.append(_Community(cid, cap(str(row[0])), str(row[1]), float(rating),
                                      [cap(str(p)) for p in phrases if isinstance(p, str)][:8], sentences))
    return communities


def topic_terms(question: str) -> list[str]:
    """The question's terms that say what it is about (none for "What are the main themes?")."""
    return [t for t in match_terms(question) if t not in CORPUS_WIDE]


def _order(communities: list[_Community], question: str) -> tuple[list[_Community], str]:
    """The communities to list, best first, and the line that says how they were chosen."""
    terms = topic_terms(question)
    for c in communities:
        text = " ".join([c.title, c.summary, *c.phrases, *(s for s, _ in c.sentences)])
        c.relevance = score_overlap(terms, text) if terms else 0.0
    relevant = [c for c in communities if c.relevance > 0]
    if relevant:
        relevant.sort(key=lambda c: (-(c.relevance + IMPORTANCE_WEIGHT * c.rating / 10), c.id))
        return relevant[:COMMUNITIES], "The communities that match the question, most relevant first:"
    ranked = sorted(communities, key=lambda c: (-c.rating, c.id))
    heading = "The main communities of this store, most important first:"
    if terms:
        heading = "No community report mentions the question's words. " + heading
    return ranked[:COMMUNITIES], heading


def _best_sentence(community: _Community, question: str, said: set[str]) -> tuple[str, str] | None:
    """The community's representative sentence that best matches the question (else its
    first), and not one an earlier community already gave."""
    terms = topic_terms(question)
    scored = [(score_overlap(terms, s) if terms else 0.0, -n, (s, cid))
              for n, (s, cid) in enumerate(community.sentences) if s not in said]
    return max(scored)[2] if scored else None


def offline_global_answer(conn, retriever, question: str, report_ids: list[str]) -> OfflineGlobal:
    """The offline answer to a global question over the candidate reports (best first, as
    tgr.query.retrieve ranks them); retriever.report_chunks gives each community's chunks that
    best match the question."""
    communities, heading = _order(_read(conn, report_ids), question)
    if not communities:
        return OfflineGlobal("I don't know: this store has no community reports yet.")
    existing = {r[0] for r in conn.execute(
        "SELECT id FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps([cid for c in communities for _, cid in c.sentences]),))}
    chunks: list[tuple[str, float]] = []
    ref = {}
    lines = [heading]
    points, said = [], set()
    for rank, community in enumerate(communities, 1):
        sentence = _best_sentence(community, question, said)
        said.add(sentence[0] if sentence else "")
        mine = [sentence[1]] if sentence and sentence[1] in existing else []
        mine += [cid for cid, _ in retriever.report_chunks([community.id], question)]
        cited = []
        for chunk_id in dict.fromkeys(mine):
            if len(cited) == SOURCES_PER_COMMUNITY:
                break
            if chunk_id not in ref:
                chunks.append((chunk_id, 1.0 / rank))
                ref[chunk_id] = len(chunks)
            cited.append(str(ref[chunk_id]))
        line = f"{rank}. {community.title}"
        phrases = [p for p in community.phrases if p not in community.title]  # the title has the first
        if phrases:
            line += f" (key phrases: {', '.join(phrases)})"
        body = f'"{shorten(sentence[0], 300)}"' if sentence else shorten(community.summary, 300)
        line += f": {body} [Reports: {community.id}]"
        if cited:
            line += f" [Sources: {', '.join(cited)}]"
        lines.append(line)
        points.append(f"{round(100 * community.relevance)}|{line[len(str(rank)) + 2:]}")
    return OfflineGlobal("\n".join(lines), chunks, [c.id for c in communities], points)

