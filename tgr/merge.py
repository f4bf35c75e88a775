"""Merge stage: raw per-chunk extractions -> one entity graph with provenance.

Same normalised name -> one entity (optionally split by LLM disambiguation of same-name
mentions, the seed's ENTITY_DISAMBIGUATION done right); descriptions combined, and
summarised by the LLM only when they exceed a token budget; a name used in a
relationship but never extracted as an entity becomes an entity of its own; relationship
weight = how many times it was seen. The graph is rebuilt from the extraction rows, so it
is deterministic and always consistent with them.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

from . import freshness
from .db import Connection, transaction
from .freshness import InputHash
from .gateway import ChatJob, Gateway
from .parsing import parse_transformation
from .prompts import Prompts
from .text import content_hash, estimate_tokens, fit_tokens, normalise_name, search_terms, split_sentences

Progress = Callable[[str, int, int], None]
MAX_ENTRIES_PER_DISAMBIGUATION = 12
PROGRESS_EVERY = 5000  # mentions or relations between two progress reports


@dataclass
class _Mention:
    chunk_id: str
    name: str
    type: str
    description: str


@dataclass
class _Entity:
    id: str
    mentions: list[_Mention] = field(default_factory=list)
    extra_descriptions: list[str] = field(default_factory=list)
    chunks: set[str] = field(default_factory=set)

    def surface(self) -> str:
        names = Counter(" ".join(m.name.split()) for m in self.mentions)
        return min(names, key=lambda n: (-names[n], n))

    def type(self) -> str:
        types = Counter(m.type for m in self.mentions if m.type != "concept") or \
            Counter(m.type for m in self.mentions)
        return min(types, key=lambda t: (-types[t], t)) if types else "concept"

    def descriptions(self) -> list[str]:
        """Distinct descriptions, each without sentences an earlier one already said
        (overlapping chunks often repeat the same sentence)."""
        seen, result = set(), []
        for text in [m.description for m in self.mentions] + self.extra_descriptions:
            text = " ".join(text.split())
            fresh = []
            for a, b in split_sentences(text):
                sentence = text[a:b].strip()
                key = sentence.casefold()
                if key and key not in seen:
                    seen.add(key)
                    fresh.append(sentence)
            if fresh:
                result.append(" ".join(fresh))
        return result


def merge_inputs(conn: Connection, prompts: Prompts, chat_model: str | None, summary_tokens: int,
                 disambiguate: bool) -> str:
    """Hash of exactly what a merge reads: every extraction row with its text, in merge
    order, the merge settings, and the prompts and model used for summaries and splits."""
    digest = InputHash("merge", summary_tokens, disambiguate, chat_model,
                       prompts.summarize_descriptions if chat_model else "",
                       prompts.disambiguate if disambiguate else "")
    digest.rows(conn.execute(
        "SELECT e.chunk_id, e.position, e.name, e.type, e.description FROM extracted_entities e "
        "JOIN chunks c ON c.id = e.chunk_id ORDER BY c.document_id, c.ordinal, e.position"))
    digest.add("relations")
    digest.rows(conn.execute(
        "SELECT r.chunk_id, r.position, r.source, r.target, r.predicate, r.description "
        "FROM extracted_relations r JOIN chunks c ON c.id = r.chunk_id "
        "ORDER BY c.document_id, c.ordinal, r.position"))
    return digest.hexdigest()


def needs_merge(conn: Connection, gateway: Gateway, prompts: Prompts, summary_tokens: int,
                disambiguate: bool) -> bool:
    """Did the extraction rows, the settings or the prompts change since the last merge?"""
    chat = gateway.chat_model.name if gateway.chat_model is not None else None
    return not freshness.is_fresh(conn, "merge", merge_inputs(conn, prompts, chat, summary_tokens,
                                                              disambiguate and chat is not None))


def merge_graph(conn: Connection, gateway: Gateway, prompts: Prompts, *, disambiguate: bool = False,
                summary_tokens: int = 300, progress: Progress | None = None, before_summaries=None) -> dict:
    """Rebuild entities, relationships and mentions from the extraction rows.

    before_summaries(nodes, edges), if given, is called with the merged graph just before
    the description-summary wave (only when there is one), e.g. to cluster meanwhile."""
    report = progress or (lambda *a: None)
    llm = gateway.chat_model is not None
    inputs = merge_inputs(conn, prompts, gateway.chat_model.name if llm else None, summary_tokens,
                          disambiguate and llm)
    mentions = [_Mention(*row) for row in conn.execute(
        "SELECT e.chunk_id, e.name, e.type, e.description FROM extracted_entities e "
        "JOIN chunks c ON c.id = e.chunk_id ORDER BY c.document_id, c.ordinal, e.position")]
    relation_count = conn.execute("SELECT count(*) FROM extracted_relations r "
                                  "JOIN chunks c ON c.id = r.chunk_id").fetchone()[0]
    steps = len(mentions) + relation_count + 1  # each mention, each relation, then the write
    report("merge", 0, steps)
    groups: dict[str, list[_Mention]] = defaultdict(list)
    for done, mention in enumerate(mentions, 1):
        if done % PROGRESS_EVERY == 0:
            report("merge", done, steps)
        key = normalise_name(mention.name)
        if key:
            groups[key].append(mention)

    entities: dict[str, _Entity] = {}
    by_key: dict[str, list[_Entity]] = {}
    splits = _disambiguate(gateway, prompts, groups, report) if (disambiguate and llm) else {}
    for key, group in groups.items():
        parts = splits.get(key, [group])
        by_key[key] = []
        for index, part in enumerate(parts):
            entity_id = key if index == 0 else f"{key}#{index + 1}"
            entity = _Entity(entity_id, list(part), chunks={m.chunk_id for m in part})
            entities[entity_id] = entity
            by_key[key].append(entity)

    relations = conn.execute(
        "SELECT r.chunk_id, r.source, r.target, r.predicate, r.description FROM extracted_relations r "
        "JOIN chunks c ON c.id = r.chunk_id ORDER BY c.document_id, c.ordinal, r.position").fetchall()
    edges: dict[str, dict] = {}
    for done, (chunk_id, source, target, predicate, description) in enumerate(relations, 1):
        if done % PROGRESS_EVERY == 0:
            report("merge", len(mentions) + done, steps)
        ends = [_resolve(entities, by_key, name, chunk_id, description) for name in (source, target)]
        if None in ends or ends[0].id == ends[1].id:
            continue
        a, b = ends[0].id, ends[1].id
        rel_id = content_hash(*sorted((a, b)))
        edge = edges.setdefault(rel_id, {"source": a, "target": b, "predicates": Counter(),
                                         "descriptions": [], "chunks": set(), "weight": 0})
        edge["predicates"][" ".join(predicate.split())] += 1
        if description and description not in edge["descriptions"]:
            edge["descriptions"].append(" ".join(description.split()))
        edge["chunks"].add(chunk_id)
        edge["weight"] += 1
        ends[0].chunks.add(chunk_id)
        ends[1].chunks.add(chunk_id)

    report("merge", steps - 1, steps)
    graph = lambda: (list(entities), [(e["source"], e["target"], float(e["weight"])) for e in edges.values()])
    descriptions = _combine(gateway, prompts, entities, summary_tokens, report,
                            (lambda: before_summaries(*graph())) if before_summaries else None)
    degree = Counter()
    for edge in edges.values():
        degree[edge["source"]] += 1
        degree[edge["target"]] += 1

    entity_rows = {e.id: (e.surface(), e.type(), descriptions[e.id], degree[e.id], len(e.chunks))
                   for e in entities.values()}
    edge_rows = {rid: (e["source"], e["target"], _top(e["predicates"]),
                       fit_tokens(" ".join(e["descriptions"]), summary_tokens), float(e["weight"]))
                 for rid, e in edges.items()}
    entity_mentions = {(e.id, c) for e in entities.values() for c in e.chunks}
    edge_mentions = {(rid, c) for rid, e in edges.items() for c in e["chunks"]}
    # only rows that differ are written: unchanged entities keep their rows (and vectors)
    old_entities = {r[0]: tuple(r[1:]) for r in conn.execute(
        "SELECT id, name, type, description, degree, mentions FROM entities")}
    old_edges = {r[0]: tuple(r[1:]) for r in conn.execute(
        "SELECT id, source_id, target_id, predicate, description, weight FROM relationships")}
    old_entity_mentions = set(conn.execute("SELECT entity_id, chunk_id FROM entity_mentions"))
    old_edge_mentions = set(conn.execute("SELECT relationship_id, chunk_id FROM relationship_mentions"))
    changed = {i for i, row in entity_rows.items() if old_entities.get(i) != row} | (old_entities.keys() - entity_rows.keys())
    changed_edges = {i for i, row in edge_rows.items() if old_edges.get(i) != row} | (old_edges.keys() - edge_rows.keys())
    for rid in changed_edges:  # a relationship is part of both ends' material
        for row in (edge_rows.get(rid), old_edges.get(rid)):
            if row:
                changed.update(row[:2])
    with transaction(conn):
        conn.executemany("DELETE FROM entities WHERE id = ?",
                         [(i,) for i in sorted(old_entities.keys() - entity_rows.keys())])
        conn.executemany("DELETE FROM relationships WHERE id = ?",
                         [(i,) for i in sorted(old_edges.keys() - edge_rows.keys())])
        conn.executemany(
            "INSERT INTO entities(id, name, type, description, degree, mentions) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET name = excluded.name, type = excluded.type, "
            "description = excluded.description, degree = excluded.degree, mentions = excluded.mentions",
            [(i, *row) for i, row in sorted(entity_rows.items()) if old_entities.get(i) != row])
        conn.executemany("DELETE FROM entity_mentions WHERE entity_id = ? AND chunk_id = ?",
                         sorted(old_entity_mentions - entity_mentions))
        conn.executemany("INSERT OR IGNORE INTO entity_mentions(entity_id, chunk_id) VALUES (?, ?)",
                         sorted(entity_mentions - old_entity_mentions))
        conn.executemany(
            "INSERT INTO relationships(id, source_id, target_id, predicate, description, weight) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET source_id = excluded.source_id, "
            "target_id = excluded.target_id, predicate = excluded.predicate, "
            "description = excluded.description, weight = excluded.weight",
            [(i, *row) for i, row in sorted(edge_rows.items()) if old_edges.get(i) != row])
        conn.executemany("DELETE FROM relationship_mentions WHERE relationship_id = ? AND chunk_id = ?",
                         sorted(old_edge_mentions - edge_mentions))
        conn.executemany("INSERT OR IGNORE INTO relationship_mentions(relationship_id, chunk_id) VALUES (?, ?)",
                         sorted(edge_mentions - old_edge_mentions))
        freshness.record(conn, "merge", inputs)
    report("merge", steps, steps)
    return {"entities": len(entities), "relationships": len(edges), "changed_entities": changed}


def _top(counter: Counter) -> str:
    return min(counter, key=lambda p: (-counter[p], p)) if counter else "related to"


def _resolve(entities, by_key, name, chunk_id, description) -> _Entity | None:
    """The entity a relationship end refers to; creates one for a never-extracted name."""
    key = normalise_name(name)
    if not key:
        return None
    candidates = by_key.get(key)
    if candidates and len(candidates) == 1:
        return candidates[0]
    if not candidates:
        entity = _Entity(key)
        entity.mentions.append(_Mention(chunk_id, " ".join(name.split()), "concept", ""))
        entity.extra_descriptions.append(description)
        entity.chunks.add(chunk_id)
        entities[key] = entity
        by_key[key] = [entity]
        return entity
    for entity in candidates:  # a split same-name entity: the one mentioned in this chunk
        if chunk_id in {m.chunk_id for m in entity.mentions}:
            return entity
    return candidates[0]


def _combine(gateway: Gateway, prompts: Prompts, entities: dict[str, _Entity],
             budget: int, report: Progress, before_wave=None) -> dict[str, str]:
    """Each entity's description: joined, or LLM-summarised when over budget."""
    combined, jobs = {}, []
    for entity in entities.values():
        parts = entity.descriptions()
        text = " ".join(parts)
        combined[entity.id] = text
        if estimate_tokens(text) > budget:
            if gateway.chat_model is not None and len(parts) > 1:
                prompt = prompts.summarize_descriptions.format(
                    name=entity.surface(), type=entity.type(), max_words=max(40, budget // 2),
                    descriptions="\n".join(f"- {fit_tokens(p, budget)}" for p in parts[:20]))
                jobs.append(ChatJob(entity.id, prompt, validate=_summary_check(entity.surface(), parts)))
            else:
                combined[entity.id] = fit_tokens(text, budget)
    report("summarize", 0, len(jobs))
    if jobs and before_wave is not None:
        before_wave()
    for done, (job, answer) in enumerate(gateway.chat_many("summarize", jobs), 1):
        if job.validate(answer):  # else keep the trimmed descriptions rather than a bad answer
            combined[job.tag] = fit_tokens(" ".join(answer.split()), budget)
        else:
            combined[job.tag] = fit_tokens(combined[job.tag], budget)
        report("summarize", done, len(jobs))
    return combined


def _summary_check(name: str, descriptions: list[str]):
    """A summary must be plain text that talks about the entity's own material."""
    known = set(search_terms(name + " " + " ".join(descriptions)))

    def valid(text: str) -> bool:
        text = text.strip()
        if not text or "<" in text[:20] or text.lower().startswith(("sorry", "i cannot", "i can't")):
            return False
        return len(known & set(search_terms(text))) >= 2 or len(known) < 2

    return valid


def _disambiguate(gateway: Gateway, prompts: Prompts, groups: dict[str, list[_Mention]],
                  report: Progress) -> dict[str, list[list[_Mention]]]:
    """Ask the LLM which same-name mentions are the same thing; returns the splits."""
    jobs = []
    for key, group in groups.items():
        chunks = []
        for mention in group:  # one entry per chunk: the chunk is the unit of provenance
            if mention.chunk_id not in [c[0].chunk_id for c in chunks]:
                chunks.append([mention])
            else:
                next(c for c in chunks if c[0].chunk_id == mention.chunk_id).append(mention)
        distinct = {" ".join(c[0].description.split()).casefold() for c in chunks}
        if len(chunks) < 2 or len(distinct) < 2:
            continue
        chunks = chunks[:MAX_ENTRIES_PER_DISAMBIGUATION]
        entries = "\n".join(f"m{i + 1}: ({c[0].type}) {fit_tokens(c[0].description, 80)}"
                            for i, c in enumerate(chunks))
        prompt = prompts.disambiguate.format(name=group[0].name, entries=entries)
        jobs.append(ChatJob((key, chunks), prompt))
    splits = {}
    report("disambiguate", 0, len(jobs))
    for done, (job, answer) in enumerate(gateway.chat_many("disambiguate", jobs), 1):
        report("disambiguate", done, len(jobs))
        key, chunks = job.tag
        pairs = [(_entry_index(src, len(chunks)), _entry_index(dst, len(chunks)))
                 for src, dst in parse_transformation(answer).items()]
        root = _union(len(chunks), [(a, b) for a, b in pairs if a is not None and b is not None])
        parts: dict[int, list[_Mention]] = {}
        for i, chunk_mentions in enumerate(chunks):
            parts.setdefault(root[i], []).extend(chunk_mentions)
        covered = {m.chunk_id for c in chunks for m in c}
        rest = [m for m in groups[key] if m.chunk_id not in covered]
        ordered = [parts[root] for root in sorted(parts)]
        ordered[0].extend(rest)  # mentions beyond the prompt's cap join the main entity
        if len(ordered) > 1:
            splits[key] = ordered
    return splits


def _union(count: int, pairs: list[tuple[int, int]]) -> list[int]:
    """Union-find: for each of count items, the smallest index of its merged group."""
    parent = list(range(count))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        ra, rb = find(a), find(b)
        parent[max(ra, rb)] = min(ra, rb)
    return [find(i) for i in range(count)]


def _entry_index(entry: str, count: int) -> int | None:
    entry = entry.strip().lower().lstrip("m").strip()
    if entry.isdigit() and 1 <= int(entry) <= count:
        return int(entry) - 1
    return None
