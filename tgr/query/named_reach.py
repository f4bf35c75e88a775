"""What the entities a question names reach, for global search: the communities that hold them,
and the chunks that mention them or an entity related to them.

A report's title and summary name a community's most connected members only: a river named once
sits in a small community whose title names it, or in a large one whose summary never does, as
Leiden happens to place it; and a large community's chunks that best match the question's common
words ("state", "country") are seldom the ones about that river. Read from the members and the
relationships instead, the named entity's community and its neighbourhood are found wherever
the partition put them."""
from __future__ import annotations

import json
import math

from ..store.db import Connection

NEAR_WEIGHT = 3.0  # a chunk mentioning a named entity counts up to 1 + this times its BM25 score
# (global R@5, musique over four Leiden seeds / hotpotqa: 0 -> 0.556 / 0.795, 3 -> 0.590 / 0.805,
# 10 -> 0.607 / 0.805, but hotpotqa R@2 0.620 at 3 and 0.615 at 10)


def named_communities(conn: Connection, named: dict[str, float], level: int) -> dict[str, float]:
    """{community id: share of the named entities' weight its members hold}, 0..1, over the
    communities at `level` and the shallower leaves (those global search ranks); named: entity
    id -> weight (tgr.query.name_match.named_entities: rare names weigh more)."""
    total = sum(named.values())
    if total <= 0:
        return {}
    held: dict[str, float] = {}
    for entity, community in conn.execute(
            "SELECT m.entity_id, m.community_id FROM community_members m JOIN communities c ON c.id = m.community_id "
            "WHERE m.entity_id IN (SELECT value FROM json_each(?)) AND (c.level = ? OR (c.level < ? AND c.is_leaf = 1)) "
            "ORDER BY m.community_id, m.entity_id", (json.dumps(sorted(named), ensure_ascii=False), level, level)):
        held[community] = held.get(community, 0.0) + named[entity] / total
    return held


def nearer_first(retriever, spans: list[tuple[str, bool]], scores: dict[str, float]) -> dict[str, float]:
    """The chunks' scores, each times 1 + NEAR_WEIGHT * how near it is to the entities the
    question's spans name (chunk_nearness). Kept for the last two questions: the offline
    global answer asks again for each of its themes."""
    memo = retriever.cache.get(("nearer first",), dict)
    key = (tuple(spans), frozenset(scores.items()))
    if key not in memo:
        while len(memo) >= 2:
            memo.pop(next(iter(memo)))
        near = chunk_nearness(retriever.conn, retriever.named_entities(spans), sorted(scores), retriever.chunk_total())
        memo[key] = {chunk: score * (1 + NEAR_WEIGHT * near.get(chunk, 0.0)) for chunk, score in scores.items()}
    return memo[key]


def chunk_nearness(conn: Connection, named: dict[str, float], chunks: list[str], chunk_total: int) -> dict[str, float]:
    """{chunk: nearness}, 0..1, of the chunks that mention a named entity or one related to it
    (a relationship): the named entity's share of the named weight, for a related entity times
    its specificity against an entity mentioned once (the Bubye River's tributary is nearer to
    it than the country it flows through, which half the corpus names); the most of these."""
    total = sum(named.values())
    if total <= 0 or not chunks:
        return {}
    mentions = conn.execute("SELECT chunk_id, entity_id FROM entity_mentions WHERE chunk_id IN "
                            "(SELECT value FROM json_each(?))", (json.dumps(chunks, ensure_ascii=False),)).fetchall()
    mentioned = {entity for _, entity in mentions}
    near = {entity: weight / total for entity, weight in named.items()}
    related: dict[str, float] = {}  # a related entity these chunks mention -> its named entity's share
    for entity in sorted(named):  # by the indexes on either end (a name is related to few, a hub to thousands)
        for (other,) in conn.execute("SELECT target_id FROM relationships WHERE source_id = ? UNION "
                                     "SELECT source_id FROM relationships WHERE target_id = ?", (entity, entity)):
            if other in mentioned:
                related[other] = max(related.get(other, 0.0), near[entity])
    top = math.log(1 + chunk_total)
    for other, count in conn.execute("SELECT id, mentions FROM entities WHERE id IN (SELECT value FROM json_each(?))",
                                     (json.dumps(sorted(related), ensure_ascii=False),)):
        near[other] = max(near.get(other, 0.0), related[other] * math.log(1 + chunk_total / max(1, count or 1)) / top)
    found: dict[str, float] = {}
    for chunk, entity in mentions:
        if entity in near:
            found[chunk] = max(found.get(chunk, 0.0), near[entity])
    return found
