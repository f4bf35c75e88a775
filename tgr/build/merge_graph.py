"""Merge stage: raw per-chunk extractions -> one entity graph with provenance.

Same normalised name -> one entity (optionally split by LLM disambiguation of same-name
mentions, the seed's ENTITY_DISAMBIGUATION done right); descriptions combined, and
summarised by the LLM only when they exceed a token budget; a name used in a
relationship but never extracted as an entity becomes an entity of its own; relationship
weight = how many times it was seen. The graph is rebuilt from the extraction rows, so it
is deterministic and always consistent with them.
"""
from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

from . import stage_inputs as freshness
from ..store.db import Connection, Rows, in_pages, transaction
from .stage_inputs import InputHash
from ..models.gateway import ChatJob, Gateway
from ..parsing import parse_transformation
from ..prompts import Prompts
from ..offline.entity_types import entity_type
from ..offline.name_words import CHINESE_TITLES
from .resolve import KeysAhead, assign_keys, write_aliases
from .role_providers import summariser_for
from ..text import content_hash, estimate_tokens, fit_tokens, normalise_name, split_sentences

Progress = Callable[[str, int, int], None]
MAX_ENTRIES_PER_DISAMBIGUATION = 12


@dataclass(slots=True)  # (one per extraction row: no __dict__ each)
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
    _type: str | None = field(default=None, repr=False, compare=False)
    _aliases: Counter | None = field(default=None, repr=False, compare=False)

    def surface(self) -> str:
        names = self.aliases()
        # a title alone ("祖师", however often it is said) names no one but by its bearer's name
        return min(names, key=lambda n: (n in CHINESE_TITLES, -names[n], n))

    def types(self) -> Counter:
        return Counter(m.type for m in self.mentions)

    def aliases(self) -> Counter:
        """Each surface form with the number of extraction rows that used it; like type(),
        asked for once the mentions are all in, so counted once."""
        if self._aliases is None:
            self._aliases = Counter(" ".join(m.name.split()) for m in self.mentions)
        return self._aliases

    def type(self) -> str:
        """The type a person would give it (tgr.offline.entity_types); asked for once the mentions
        are all in (the summary jobs, then the stored row), so computed once."""
        if self._type is None:
            self._type = entity_type(self.surface(), self.types(), self.aliases())
        return self._type

    def settle(self) -> None:
        """Work out its type and aliases, then let its mentions go: once its descriptions are
        joined, the rest of a merge needs only those (a merge held every mention's text to
        its end: ~30 MB per 10 M mixed-language characters)."""
        self.type()
        self.mentions, self.extra_descriptions = [], []

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


MENTIONS_SQL = ("SELECT e.chunk_id, e.name, e.type, e.description, e.position, e.key FROM extracted_entities e "
                "JOIN chunks c ON c.id = e.chunk_id {where} ORDER BY c.document_id, c.ordinal, e.position")
RELATIONS_SQL = ("SELECT r.chunk_id, r.source, r.target, r.predicate, r.description, r.position, "
                 "r.source_key, r.target_key "
                 "FROM extracted_relations r JOIN chunks c ON c.id = r.chunk_id {where} "
                 "ORDER BY c.document_id, c.ordinal, r.position")
IN_KEYS = "IN (SELECT value FROM json_each(?))"


@dataclass
class MergeInputs:
    """What a merge is to look at: its settings' hash, and the names whose extraction rows
    changed since the last merge (merge_pending), or None for every row."""
    settings: str
    names: list[str] | None


def merge_settings(prompts: Prompts, summariser, summary_tokens: int, disambiguate: bool) -> str:
    """Hash of the merge settings and of the prompts and model used for summaries and splits
    (the summariser's model name and prompt: None and "" offline)."""
    return InputHash("merge", summary_tokens, disambiguate, summariser.name, summariser.prompt,
                     prompts.disambiguate if disambiguate else "").hexdigest()[:32]


def graph_state(conn: Connection, settings: str) -> str:
    """What the stored graph was merged from: the settings and every entity's input hash
    (each a hash of all the extraction rows naming it). Recorded as freshness 'merge'."""
    digest = InputHash().rows(conn.execute("SELECT id, input_hash FROM entities ORDER BY id").fetchall())
    return f"{settings}:{digest.hexdigest()}"


def needs_merge(conn: Connection, gateway: Gateway, prompts: Prompts, summary_tokens: int,
                disambiguate: bool, keys_ahead: KeysAhead | None = None) -> MergeInputs | None:
    """What the merge must look at if its inputs changed since the last merge (extraction
    rows, settings, prompts), else None. Only names in merge_pending can have changed rows
    while the settings are the same; other settings (or LLM disambiguation) look at every row.
    keys_ahead: see assign_keys."""
    assign_keys(conn, keys_ahead)  # which names are one entity: each row's key (tgr.build.resolve)
    summariser = summariser_for(gateway, prompts)
    llm = summariser.asks_model  # LLM disambiguation asks the summariser's chat model too
    settings = merge_settings(prompts, summariser, summary_tokens, disambiguate and llm)
    recorded = freshness.recorded(conn, "merge") or ""
    names = [r[0] for r in conn.execute("SELECT name FROM merge_pending ORDER BY name").fetchall()]
    same = recorded.split(":", 1)[0] == settings
    if same and not names:
        return None
    return MergeInputs(settings, names if same and not (disambiguate and llm) else None)


@dataclass
class MergePlan:
    """A merge computed but not stored yet: the entities and relationships of the scope being
    recomputed, what is stored for that scope, and the description summaries to ask for."""
    inputs: MergeInputs
    summary_tokens: int
    steps: int                     # progress steps: each mention, each relation, then the write
    hashes: dict[str, str]         # entity id -> hash of its inputs
    dirty: set[str] | None         # the entity ids recomputed (None: every entity)
    entities: dict[str, _Entity]
    edges: dict[str, list[str]]    # relationship id -> its chunks (in order)
    edge_rows: dict[str, tuple]    # relationship id -> (source, target, predicate, description, weight)
    edge_ends: set[str]            # entities at either end of a changed relationship
    stored: "_Stored"
    summaries: "_SummaryJobs"      # each entity's joined descriptions, and the summaries to ask for

    @property
    def jobs(self) -> list[ChatJob]:
        """Every summary job (summarise() takes them a few at a time instead)."""
        return self.summaries.take(None)

    @property
    def descriptions(self) -> dict[str, str]:
        """Each entity's joined (or trimmed) descriptions."""
        self.summaries.take(None)
        return self.summaries.combined

    def graph(self) -> tuple[list[str], list[tuple[str, str, float]]]:
        """The nodes and weighted edges the merge will store (for the scope it recomputes)."""
        return list(self.entities), [(row[0], row[1], row[4]) for row in self.edge_rows.values()]

    def row_steps(self, per_step: int = 200):
        """An idle step (see Gateway.chat_many) that works out each entity's name, type and
        aliases ahead of store_merge, per_step entities at a time (each is computed once)."""
        pending = list(self.entities.values())

        def step() -> bool:
            for entity in pending[-per_step:]:
                entity.type()
            del pending[-per_step:]
            return bool(pending)

        return step


@dataclass
class _Stored:
    """What is stored for the scope of a merge; only rows that differ are written."""
    entities: dict[str, tuple]
    edges: dict[str, tuple]
    entity_mentions: set
    edge_mentions: set


def merge_graph(conn: Connection, gateway: Gateway, prompts: Prompts, *, disambiguate: bool = False,
                summary_tokens: int = 300, progress: Progress | None = None, inputs: MergeInputs | None = None,
                everything: bool = False) -> dict:
    """Bring entities, relationships and mentions in line with the extraction rows:
    plan_merge, then summarise (the model wait), then store_merge.

    Each entity records a hash of its own inputs (settings, its mention rows and every
    relationship row that names it); only entities whose hash changed are recomputed,
    with their relationships (with LLM disambiguation on, or everything=True, all are).
    With inputs naming the changed names, only the rows naming those are read. The result
    is the same as merging everything again.
    """
    plan = plan_merge(conn, gateway, prompts, disambiguate=disambiguate, summary_tokens=summary_tokens,
                      progress=progress, inputs=inputs, everything=everything)
    return store_merge(conn, plan, summarise(gateway, plan, progress), progress)


def plan_merge(conn: Connection, gateway: Gateway, prompts: Prompts, *, disambiguate: bool = False,
               summary_tokens: int = 300, progress: Progress | None = None, inputs: MergeInputs | None = None,
               everything: bool = False, keys_assigned: bool = False) -> MergePlan:
    """The merge up to its summary wave: reads the extraction rows (LLM disambiguation
    asks the model here), builds the entities and relationships, and lists the summaries.
    keys_assigned: needs_merge has just keyed the rows (no write since), so they are not
    keyed again (that reads every row of the store)."""
    report = progress or (lambda *a: None)
    summariser = summariser_for(gateway, prompts)
    llm = summariser.asks_model  # LLM disambiguation asks the summariser's chat model too
    if inputs is None or everything:
        inputs = MergeInputs(merge_settings(prompts, summariser, summary_tokens, disambiguate and llm), None)
    key_of = _memo(normalise_name)
    if not keys_assigned:
        assign_keys(conn)  # rows stored without keys (by hand) get theirs too
    mentions, relations, hashes, stored_hashes = _read_rows(
        conn, inputs, key_of, repr((summary_tokens, summariser.name, summariser.prompt)))
    steps = len(mentions) + relations.count + 1
    report("merge", 0, steps)
    if everything or (disambiguate and llm):
        dirty = None  # splits of one name can move relationships of another
    else:
        dirty = {k for k, h in hashes.items() if stored_hashes.get(k) != h} | (stored_hashes.keys() - hashes.keys())
    read = len(mentions)
    groups, relations = _in_scope(mentions, relations, dirty)
    del mentions  # (the groups hold the mentions in scope)
    report("merge", read, steps)
    splits = _disambiguate(gateway, prompts, groups, report) if (disambiguate and llm) else {}
    # rows read whole: every key a relationship row gives is hashed; all of them recomputed (a
    # first build), no end is left as stored and _entities need not read the rows for one
    ends_as_stored = dirty is not None and not (inputs.names is None and dirty.issuperset(hashes))
    entities, by_key = _entities(groups, splits, relations, dirty if ends_as_stored else None)
    edges = _edges(relations, entities, by_key)
    report("merge", steps - 1, steps)
    edge_rows: dict[str, tuple] = {}
    edge_chunks: dict[str, list[str]] = {}  # what is left of each relationship besides its row
    for rid in list(edges):  # (each working dict let go as its row is made)
        e = edges.pop(rid)
        edge_rows[rid] = (e["source"], e["target"], _top(e["predicates"]),
                          fit_tokens(" ".join(e["descriptions"]), summary_tokens), float(e["weight"]))
        edge_chunks[rid] = e["chunks"]
    del edges
    stored = _stored_rows(conn, dirty, edge_rows)
    changed_edges = {i for i, row in edge_rows.items() if stored.edges.get(i) != row} | \
        (stored.edges.keys() - edge_rows.keys())
    edge_ends = set()
    for rid in changed_edges:  # a relationship is part of both ends' material
        for row in (edge_rows.get(rid), stored.edges.get(rid)):
            if row:
                edge_ends.update(row[:2])
    return MergePlan(inputs, summary_tokens, steps, hashes, dirty, entities, edge_chunks, edge_rows, edge_ends,
                     stored, _SummaryJobs(summariser, entities, summary_tokens))


def _read_rows(conn: Connection, inputs: MergeInputs, key_of, settings: str):
    """The extraction rows of the merge's scope (every row, or those naming a changed name),
    the input hash of each name they give, and the hashes stored for those names."""
    # merge_pending holds names and the entity keys their rows had or have (tgr.build.resolve)
    keys = None if inputs.names is None else sorted(({key_of(n) for n in inputs.names} | set(inputs.names)) - {""})
    # with keys, the rows of the changed names only: everything their entities are computed from
    args = () if keys is None else (json.dumps(keys),)
    intern = sys.intern  # a chunk's id, a name, a type and a key are said by many rows: one string each
    mentions = [(_Mention(intern(chunk), intern(name), intern(kind), description), position, key and intern(key))
                for chunk, name, kind, description, position, key in in_pages(conn.execute(
                    MENTIONS_SQL.format(where="" if keys is None else f"WHERE e.key {IN_KEYS}"), args))]
    relations = Rows(conn, RELATIONS_SQL.format(where="" if keys is None else
                                                f"WHERE r.source_key {IN_KEYS} OR r.target_key {IN_KEYS}"), args * 2)
    hashes = _key_hashes(settings, mentions, relations)
    if keys is None:
        stored = dict(conn.execute("SELECT id, input_hash FROM entities").fetchall())
    else:  # rows naming a changed name also name other entities: those are not recomputed
        hashes = {k: hashes[k] for k in keys if k in hashes}
        stored = dict(conn.execute(f"SELECT id, input_hash FROM entities WHERE id {IN_KEYS}", args).fetchall())
    return mentions, relations, hashes, stored


class _InScope:
    """The relationship rows (with their ends' keys, without the position) of the entities
    recomputed, read as they are iterated (each pass reads them again)."""

    def __init__(self, relations, dirty: set[str] | None):
        self.relations, self.dirty = relations, dirty

    def __iter__(self):
        if self.dirty is None:
            return (row[:5] + row[6:] for row in self.relations)
        inside = self.dirty.__contains__
        return (row[:5] + row[6:] for row in self.relations if inside(row[6] or "") or inside(row[7] or ""))


def _in_scope(mentions, relations, dirty: set[str] | None):
    """The mentions grouped by entity key, and the relationship rows (with their ends' keys),
    of the entities recomputed (an iterable: relations is read again on each pass)."""
    inside = (lambda key: True) if dirty is None else dirty.__contains__
    groups: dict[str, list[_Mention]] = defaultdict(list)
    for mention, _, key in mentions:
        if key and inside(key):
            groups[key].append(mention)
    return groups, _InScope(relations, dirty)


def _entities(groups, splits, relations, dirty: set[str] | None):
    """The entities of each name (several where disambiguation split one), by id and by name;
    with dirty, a stand-in for each key of a relationship end that is not recomputed."""
    entities: dict[str, _Entity] = {}
    by_key: dict[str, list[_Entity]] = {}
    for key, group in groups.items():
        parts = splits.get(key, [group])
        by_key[key] = []
        for index, part in enumerate(parts):
            entity_id = key if index == 0 else f"{key}#{index + 1}"
            entity = _Entity(entity_id, list(part), chunks={m.chunk_id for m in part})
            entities[entity_id] = entity
            by_key[key].append(entity)
    if dirty is not None:  # the unchanged end of a relationship: as stored, not rewritten
        for *_, source_key, target_key in relations:
            for key in (source_key, target_key):
                if key and key not in dirty and key not in by_key:
                    by_key[key] = [_Entity(key)]
    return entities, by_key


def _edges(relations, entities: dict[str, _Entity], by_key) -> dict[str, dict]:
    """One relationship per pair of entities, with its predicates, descriptions, chunks (in
    order, each once) and weight."""
    edges: dict[str, dict] = {}
    ids: dict[tuple[str, str], str] = {}  # (a, b) -> the relationship's id, hashed once
    said: dict[str, set[str]] = {}        # a long list of descriptions, to test without a scan
    intern = sys.intern
    for chunk_id, source, target, predicate, description, source_key, target_key in relations:
        ends = [_resolve(entities, by_key, name, key, chunk_id, description)
                for name, key in ((source, source_key), (target, target_key))]
        if None in ends or ends[0].id == ends[1].id:
            continue
        a, b = ends[0].id, ends[1].id
        rel_id = ids.get((a, b)) or ids.setdefault((a, b), content_hash(*sorted((a, b))))
        edge = edges.get(rel_id)
        if edge is None:  # (not a new Counter per row to throw away)
            edge = edges[rel_id] = {"source": a, "target": b, "predicates": Counter(),
                                    "descriptions": [], "chunks": [], "weight": 0}
        edge["predicates"][" ".join(predicate.split())] += 1
        # (the raw text against the tidied ones, as it was): in the list while it is short,
        # a set beside it once it is long (a set per relationship was ~12 MB per 10 M characters)
        descriptions = edge["descriptions"]
        seen = said.get(rel_id, descriptions)
        if description and description not in seen:
            tidied = " ".join(description.split())
            descriptions.append(tidied)
            if seen is not descriptions:
                seen.add(tidied)
            elif len(descriptions) >= _SCANNED:
                said[rel_id] = set(descriptions)
        # the rows come in chunk order, so a chunk repeats only right after itself: a list, not
        # a set per relationship, and one string per chunk id (each row read brings its own)
        chunk_id = intern(chunk_id)
        chunks = edge["chunks"]
        if not chunks or chunks[-1] != chunk_id:
            chunks.append(chunk_id)
        edge["weight"] += 1
        ends[0].chunks.add(chunk_id)
        ends[1].chunks.add(chunk_id)
    return edges


_SCANNED = 8  # a relationship's descriptions looked through in a list, up to this many


def _stored_rows(conn: Connection, dirty: set[str] | None, edge_rows: dict[str, tuple]) -> _Stored:
    """The rows stored for the merge's scope (every row when dirty is None)."""
    scope = "" if dirty is None else "WHERE {} " + IN_KEYS
    scoped = () if dirty is None else (json.dumps(sorted(dirty)),)
    entities = {r[0]: tuple(r[1:]) for r in conn.execute(
        "SELECT id, name, type, description, degree, mentions, input_hash FROM entities "
        + scope.format("id"), scoped).fetchall()}
    edges = {r[0]: tuple(r[1:]) for r in conn.execute(
        "SELECT id, source_id, target_id, predicate, description, weight FROM relationships "
        + scope.format(f"source_id {IN_KEYS} OR target_id" if scoped else ""), scoped * 2).fetchall()}
    entity_mentions = set(conn.execute("SELECT entity_id, chunk_id FROM entity_mentions "
                                       + scope.format("entity_id"), scoped).fetchall())
    edge_mentions = set(conn.execute(
        f"SELECT relationship_id, chunk_id FROM relationship_mentions WHERE relationship_id {IN_KEYS}",
        (json.dumps(sorted(edges.keys() | edge_rows.keys())),)).fetchall())
    return _Stored(entities, edges, entity_mentions, edge_mentions)


def store_merge(conn: Connection, plan: MergePlan, descriptions: dict[str, str],
                progress: Progress | None = None) -> dict:
    """Write the planned merge with its final descriptions: only rows that differ."""
    degree = Counter()
    for row in plan.edge_rows.values():
        degree[row[0]] += 1
        degree[row[1]] += 1
    entity_rows = {e.id: (e.surface(), e.type(), descriptions[e.id], degree[e.id], len(e.chunks),
                          plan.hashes.get(e.id)) for e in plan.entities.values()}
    entity_chunks = {e.id: e.chunks for e in plan.entities.values()}
    old = plan.stored
    changed = {i for i, row in entity_rows.items() if old.entities.get(i) != row} | \
        (old.entities.keys() - entity_rows.keys()) | plan.edge_ends
    with transaction(conn):
        conn.executemany("DELETE FROM entities WHERE id = ?",
                         [(i,) for i in sorted(old.entities.keys() - entity_rows.keys())])
        conn.executemany("DELETE FROM relationships WHERE id = ?",
                         [(i,) for i in sorted(old.edges.keys() - plan.edge_rows.keys())])
        conn.executemany(
            "INSERT INTO entities(id, name, type, description, degree, mentions, input_hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET name = excluded.name, "
            "type = excluded.type, description = excluded.description, degree = excluded.degree, "
            "mentions = excluded.mentions, input_hash = excluded.input_hash",
            [(i, *row) for i, row in sorted(entity_rows.items()) if old.entities.get(i) != row])
        write_aliases(conn, {e.id: e.aliases() for e in plan.entities.values()},
                      old.entities.keys() - entity_rows.keys())
        conn.executemany("DELETE FROM entity_mentions WHERE entity_id = ? AND chunk_id = ?",
                         _gone_pairs(old.entity_mentions, entity_chunks))
        conn.executemany("INSERT OR IGNORE INTO entity_mentions(entity_id, chunk_id) VALUES (?, ?)",
                         _new_pairs(entity_chunks, old.entity_mentions))
        conn.executemany(
            "INSERT INTO relationships(id, source_id, target_id, predicate, description, weight) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET source_id = excluded.source_id, "
            "target_id = excluded.target_id, predicate = excluded.predicate, "
            "description = excluded.description, weight = excluded.weight",
            [(i, *row) for i, row in sorted(plan.edge_rows.items()) if old.edges.get(i) != row])
        conn.executemany("DELETE FROM relationship_mentions WHERE relationship_id = ? AND chunk_id = ?",
                         _gone_pairs(old.edge_mentions, plan.edges))
        conn.executemany("INSERT OR IGNORE INTO relationship_mentions(relationship_id, chunk_id) VALUES (?, ?)",
                         _new_pairs(plan.edges, old.edge_mentions))
        _done_pending(conn, plan.inputs)
    (progress or (lambda *a: None))("merge", plan.steps, plan.steps)
    total = conn.execute("SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM relationships)").fetchone()
    return {"entities": total[0], "relationships": total[1], "changed_entities": changed,
            "recomputed": len(plan.entities)}


def _new_pairs(chunks: dict[str, list[str] | set[str]], stored: set[tuple[str, str]]):
    """The (owner, chunk) mention pairs not stored, sorted, made as they are written (a set
    of every pair of a 100 M-character corpus, its difference and their sorted copy held
    hundreds of MB at once)."""
    for owner in sorted(chunks):
        for chunk in sorted(chunks[owner]):
            if (owner, chunk) not in stored:
                yield owner, chunk


def _gone_pairs(stored: set[tuple[str, str]], chunks: dict[str, list[str] | set[str]]) -> list[tuple[str, str]]:
    """The stored (owner, chunk) mention pairs no longer made, sorted."""
    kept: dict[str, set[str]] = {}
    gone = []
    for owner, chunk in stored:
        now = kept.get(owner)
        if now is None:
            now = kept[owner] = set(chunks.get(owner, ()))
        if chunk not in now:
            gone.append((owner, chunk))
    return sorted(gone)


def _done_pending(conn: Connection, inputs: MergeInputs) -> None:
    """Unlist the names merged and record what the graph was merged from (in the caller's transaction)."""
    if inputs.names is None:
        conn.execute("DELETE FROM merge_pending")
    else:
        conn.execute(f"DELETE FROM merge_pending WHERE name {IN_KEYS}", (json.dumps(inputs.names),))
    freshness.record(conn, "merge", graph_state(conn, inputs.settings))


def _memo(fn):
    cache: dict = {}

    def memo(arg):
        if arg not in cache:
            cache[arg] = fn(arg)
        return cache[arg]

    return memo


def _key_hashes(settings: str, mentions, relations) -> dict[str, str]:
    """Per entity key: a hash of the settings, its mention rows and every relationship
    row that names it (in merge order): all an entity of that key is computed from.
    content_hash(settings, *its rows), fed a row at a time rather than from a copy of them all."""
    start = hashlib.sha256(f"{settings}\x1f".encode("utf-8"))
    hashers: dict = {}

    def add(key: str, text: str) -> None:
        hasher = hashers.get(key)
        if hasher is None:
            hasher = hashers[key] = start.copy()
        hasher.update(f"{text}\x1f".encode("utf-8"))

    for mention, position, key in mentions:
        if key:
            add(key, repr((mention.chunk_id, position, mention.name, mention.type, mention.description)))
    for row in relations:
        text = repr(row)
        for key in {row[6], row[7]}:
            if key:
                add(key, text)
    return {key: hasher.hexdigest()[:32] for key, hasher in hashers.items()}


def _top(counter: Counter) -> str:
    return min(counter, key=lambda p: (-counter[p], p)) if counter else "related to"


def _resolve(entities, by_key, name, key, chunk_id, description) -> _Entity | None:
    """The entity a relationship end (name, its key) refers to; creates one for a
    never-extracted name."""
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


class _SummaryJobs:
    """Each entity's descriptions joined (trimmed to budget where the summariser asks
    nothing), and the summary jobs of those over budget, worked out as they are taken: the
    first summaries are asked while the others are still being found."""

    def __init__(self, summariser, entities: dict[str, _Entity], budget: int):
        self.summariser, self.budget = summariser, budget
        self.combined: dict[str, str] = {}
        self.found: list[ChatJob] = []
        self._rest = iter(list(entities.values()))

    def take(self, count: int | None) -> list[ChatJob]:
        """The next count jobs found (fewer once every entity is looked at); None: every job."""
        if count is None:
            for _ in self._more(None):
                pass
            return self.found
        return list(self._more(count))

    def _more(self, count: int | None):
        found = 0
        for entity in self._rest:
            parts = entity.descriptions()
            text = " ".join(parts)
            self.combined[entity.id] = text
            entity.settle()
            if estimate_tokens(text) > self.budget:
                job = self.summariser.job(entity.id, entity.surface(), entity.type(), parts, self.budget)
                if job is None:
                    self.combined[entity.id] = fit_tokens(text, self.budget)
                else:
                    self.found.append(job)
                    yield job
                    found += 1
                    if count is not None and found >= count:
                        return


SUMMARY_STEP, SUMMARY_AHEAD = 16, 48  # jobs found at a time; most waiting for an answer


def summarise(gateway: Gateway, plan: MergePlan, progress: Progress | None = None, idle=None) -> dict[str, str]:
    """The summary wave: each entity's final description, LLM-summarised when over budget.
    The jobs are found while the first are answered (at most SUMMARY_AHEAD waiting; all at
    once for a Batch API). idle: work to do while the answers are awaited (see Gateway.chat_many)."""
    report = progress or (lambda *a: None)
    summaries, budget = plan.summaries, plan.summary_tokens
    answers: list[tuple[ChatJob, str]] = []
    first = list(summaries.take(None)) if gateway.batch is not None else []
    handed = len(first)

    def more() -> list[ChatJob]:
        nonlocal handed
        if handed - len(answers) >= SUMMARY_AHEAD:
            return []
        if handed == len(summaries.found):
            summaries.take(SUMMARY_STEP)
        fresh, handed = summaries.found[handed:], len(summaries.found)
        return fresh

    report("summarize", 0, len(summaries.found))
    for job, answer in gateway.chat_many("summarize", first, idle, more):
        answers.append((job, answer))
        report("summarize", len(answers), len(summaries.found))
    combined = dict(plan.descriptions)
    for job, answer in answers:
        if job.validate(answer):  # else keep the trimmed descriptions rather than a bad answer
            combined[job.tag] = fit_tokens(" ".join(answer.split()), budget)
        else:
            combined[job.tag] = fit_tokens(combined[job.tag], budget)
    return combined


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
