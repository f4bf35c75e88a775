"""Topic evidence for ranking community reports: how much of what the passages naming a
community's members say is about the question's topic (BM25 over the chunks)."""
from __future__ import annotations

import json

from ..offline.global_answer import topic_terms

TOPIC_MATCHES = 1000          # best BM25 chunks of the question's topic words looked at
EVIDENCE_SIZE_POWER = 0.5     # a community's evidence is over this power of its chunks: 0.5 beat 0 and 1 on every dev set


def topic_evidence(retriever, question: str, community_ids: list[str], level: int | None = None,
                   power: float = EVIDENCE_SIZE_POWER) -> dict[str, float]:
    """How much the passages naming each community's members say about the question's
    topic, 0..1 (1: the best of these communities): the BM25 scores of the chunks that
    match its topic terms (tgr.offline.global_answer.topic_terms) and mention a member, summed,
    over the square root of all the chunks that mention one (EVIDENCE_SIZE_POWER): a
    community named everywhere does not win by size alone, nor one named once by chance.
    Empty for a question about the whole corpus. level: the communities' level, to keep
    their chunk counts between questions; power: of the chunk count (1: the share of what is
    said of a community that is about the topic, as the offline answer orders its themes).

    Fused into Retriever.ranked_reports with EVIDENCE_WEIGHT, global R@10 of the offline dev stores
    rose: hotpotqa 0.715 -> 0.760, cmrc2018_trial 0.870 -> 0.990, rgb_zh 0.456 -> 0.568 (stores
    rebuilt with issue 25's cleaner graph; on the old graphs 0.785, 0.980, 0.566)."""
    terms = topic_terms(question)
    matched = dict(retriever.bm25(" ".join(terms), TOPIC_MATCHES)) if terms else {}
    if not matched or not community_ids:
        return {}
    wanted = set(community_ids)
    found = {cid: sum(matched[c] for c in chunks.split(",")) for cid, chunks in retriever.conn.execute(
        # by the chunk index; a row per community (the chunk ids are hex: a comma parts them)
        "SELECT m.community_id, group_concat(DISTINCT em.chunk_id) FROM entity_mentions em "
        "JOIN community_members m ON m.entity_id = em.entity_id "
        "WHERE em.chunk_id IN (SELECT value FROM json_each(?)) GROUP BY m.community_id",
        (json.dumps(sorted(matched)),)) if cid in wanted}
    if not found:
        return {}
    sizes = _community_chunks(retriever, sorted(found), level)
    scored = {cid: score / max(1, sizes.get(cid, 1)) ** power for cid, score in found.items()}
    best = max(scored.values()) or 1.0
    return {cid: score / best for cid, score in scored.items()}


def _community_chunks(retriever, community_ids: list[str], level: int | None) -> dict[str, int]:
    """How many chunks mention a member of each community (kept per level between questions)."""
    count = lambda ids: dict(retriever.conn.execute(
        "SELECT m.community_id, count(DISTINCT em.chunk_id) FROM community_members m "
        "JOIN entity_mentions em ON em.entity_id = m.entity_id "
        "WHERE m.community_id IN (SELECT value FROM json_each(?)) GROUP BY m.community_id",
        (json.dumps(ids),)).fetchall())
    if level is None:
        return count(community_ids)
    known = retriever.cache.get(("community chunks", level), dict)
    missing = [c for c in community_ids if c not in known]
    if missing:
        known.update(dict.fromkeys(missing, 0) | count(missing))
    return known
