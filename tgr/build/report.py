"""Report stage: a GraphRAG-style JSON report for every community worth one.

Context for a community: its entities and internal relationships, most connected first
(relationships ordered by the combined degree of their ends), under a token budget. When
that raw material does not fit and the community has sub-communities, their reports are
substituted for their members' material, largest sub-community first, until it fits
(the GraphRAG method). Communities whose raw material fits are asked first; one that needs
sub-community reports is asked, in the same stream of calls, as soon as those reports are
in (with a Batch API: in the next job). Malformed JSON is repaired, then asked again; as a last resort the report is
assembled extractively, so a bad answer never stops the run. The writer is the chat
model's (LLMReportWriter) or, with no chat model, the offline extractive one; both sit
behind the ReportWriter interface.
"""
from __future__ import annotations

import itertools
import json
import operator
from collections import OrderedDict
from itertools import chain, compress
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterator, Protocol

from . import stage_inputs as freshness
from ..store.db import Connection, in_pages, transaction
from ..models.gateway import ChatJob, Gateway
from ..offline.providers import extractive_report
from ..models.output_forms import output_form, report_schema, wants_json
from ..parsing import parse_report
from ..prompts import Prompts
from ..text import cjk_counts, content_hash, estimate_tokens, shorten, tokens_of

Progress = Callable[[str, int, int], None]


@dataclass
class _Community:
    id: str
    level: int
    parent_id: str | None
    members: list[str]
    children: list[str] = field(default_factory=list)
    reported: list[str] | None = None  # the members its report is made from (see REPORTED_MEMBERS)

    @property
    def material_members(self) -> list[str]:
        """The members whose material the report reads: all, or a giant's most connected."""
        return self.members if self.reported is None else self.reported

    @property
    def capped(self) -> bool:
        return self.reported is not None and len(self.reported) < len(self.members)


def report_text(report: dict) -> str:
    """The markdown rendering of a report used as query context."""
    lines = [f"# {report['title']}", "", report["summary"], ""]
    for finding in report["findings"]:
        lines.append(f"## {finding['summary']}")
        if finding.get("explanation"):
            lines.append(finding["explanation"])
        lines.append("")
    return "\n".join(lines).strip()


_IN = "IN (SELECT value FROM json_each(?))"


class _Graph:
    """Entities and relationships of the store (or of the given entities and the
    relationships among them), loaded once for all reports."""

    def __init__(self, conn: Connection, only: set[str] | None = None, rows_kept: int | None = None,
                 groups: list[list[str]] | None = None):
        """groups: the member lists whose material will be asked for (None: any); only the
        relationships inside one of them are kept (the union's hubs relate across them)."""
        import numpy as np

        entity_rows, edge_rows = _graph_rows(conn, only, groups)
        self.entities = {r[0]: {"id": r[0], "name": r[1], "type": r[2], "description": r[3], "degree": r[4]}
                         for r in entity_rows}
        # an end is the entity's own id string, not the one each row read brings (two strings
        # per relationship: ~90 MB of a 100 M-character mixed store's 591 k relationships)
        same = {i: i for i in self.entities}.get
        self.edges = [{"id": r[0], "source": same(r[1], r[1]), "target": same(r[2], r[2]), "description": r[3],
                       "weight": r[4]} for r in edge_rows]  # (by id)
        # material's orders, sorted once: entities by degree (then id), relationships by the
        # combined degree of their ends (then weight, id); a community's is a subset of each.
        # (Stable sorts on keys made in C: a key tuple from a lambda each took a third of the time.)
        negated = {i: -e["degree"] for i, e in self.entities.items()}
        self._ranked_entities = [self.entities[i] for i in sorted(sorted(negated), key=negated.__getitem__)]
        self._entity_rank = {e["id"]: n for n, e in enumerate(self._ranked_entities)}
        degree = {i: -d for i, d in negated.items()}.get
        zeros = itertools.repeat(0)
        combined = np.fromiter(map(operator.add, map(degree, (r[1] for r in edge_rows), zeros),
                                   map(degree, (r[2] for r in edge_rows), zeros)), float, len(edge_rows))
        weight = np.fromiter((r[4] for r in edge_rows), float, len(edge_rows))
        self._ranked_edges = [self.edges[n] for n in np.lexsort((-weight, -combined)).tolist()]
        # entity id -> the ranks of its relationships and, in step, each one's other end (two flat
        # lists, not a tuple per end: ~60 bytes a relationship instead of ~140)
        self.edges_of: dict[str, tuple[list[int], list[str]]] = {}
        for n, edge in enumerate(self._ranked_edges):
            for end, other in ((edge["source"], edge["target"]), (edge["target"], edge["source"])):
                ranks, others = self.edges_of.get(end) or self.edges_of.setdefault(end, ([], []))
                ranks.append(n)
                others.append(other)
        # a row's length and CJK characters are counted once for all the contexts it is in (a
        # member is in one community per level); its text is kept only for the last rows made
        self._entity_sizes: dict[str, int] = {}  # entity id -> length << 32 | CJK characters
        self._edge_sizes: dict[str, int] = {}    # relationship id -> the same
        self._entity_texts: OrderedDict[str, str] = OrderedDict()
        self._edge_texts: OrderedDict[str, str] = OrderedDict()
        self._rows_kept = ROWS_KEPT if rows_kept is None else rows_kept
        self._materials: OrderedDict[tuple, tuple[list[dict], list[dict]]] = OrderedDict()

    def entity_count(self, members) -> int:
        """How many of members are entities (the rows of their material's entity table)."""
        rank = self._entity_rank
        return sum(1 for m in members if m in rank)

    def material(self, members: list[str]) -> tuple[list[dict], list[dict]]:
        """Entities by degree, internal edges by combined degree (then weight). Remembered for
        the last communities asked: a report's context and its writer read the same."""
        key = tuple(members)
        found = self._materials.get(key)
        if found is None:
            found = self._materials[key] = self._material(members)
            if len(self._materials) > MATERIALS_KEPT:
                self._materials.popitem(last=False)
        else:
            self._materials.move_to_end(key)
        return list(found[0]), list(found[1])  # (lists the caller may change)

    def entity_row(self, entity: dict) -> tuple[str, int]:
        """An entity's context row, and the CJK characters in it."""
        return self._row(self._entity_texts, self._entity_sizes, entity, self._entity_text)

    def edge_row(self, edge: dict) -> tuple[str, int]:
        """A relationship's context row, and the CJK characters in it."""
        return self._row(self._edge_texts, self._edge_sizes, edge, self._edge_text)

    def entity_size(self, entity: dict) -> tuple[int, int]:
        """The length of an entity's context row and the CJK characters in it."""
        size = self._entity_sizes.get(entity["id"])
        return (size >> 32, size & _CJK) if size is not None else _size_of(*self.entity_row(entity))

    def edge_size(self, edge: dict) -> tuple[int, int]:
        """The length of a relationship's context row and the CJK characters in it."""
        size = self._edge_sizes.get(edge["id"])
        return (size >> 32, size & _CJK) if size is not None else _size_of(*self.edge_row(edge))

    def _row(self, texts: OrderedDict, sizes: dict[str, int], element: dict, make) -> tuple[str, int]:
        key = element["id"]
        text = texts.get(key)
        if text is None:
            text = texts[key] = make(element)
            if len(texts) > self._rows_kept:
                texts.popitem(last=False)
        else:
            texts.move_to_end(key)
        size = sizes.get(key)
        if size is None:
            size = sizes[key] = len(text) << 32 | cjk_counts(text, [0])[0]
        return text, size & _CJK

    @staticmethod
    def _entity_text(entity: dict) -> str:
        return f"{entity['name']}|{entity['type']}|{shorten(entity['description'], 600)}|{entity['degree']}"

    def _edge_text(self, edge: dict) -> str:
        name = lambda i: self.entities[i]["name"]  # noqa: E731
        return f"{name(edge['source'])}|{name(edge['target'])}|{shorten(edge['description'], 400)}|{edge['weight']:g}"

    def _material(self, members: list[str]) -> tuple[list[dict], list[dict]]:
        inside, rank = set(members), self._entity_rank
        entities = [self._ranked_entities[n] for n in sorted(rank[m] for m in members if m in rank)]
        internal: set[int] = set()  # (a member's relationships are internal where their other end is a member)
        for m in members:
            found = self.edges_of.get(m)
            if found:
                internal.update(compress(found[0], map(inside.__contains__, found[1])))
        return entities, [self._ranked_edges[n] for n in sorted(internal)]


def _inside_one(edge_rows: list[tuple], groups: list[list[str]]) -> list[tuple]:
    """The relationship rows whose ends are both in one of the groups."""
    masks: dict[str, int] = {}
    for n, group in enumerate(groups):
        bit = 1 << n
        for member in group:
            masks[member] = masks.get(member, 0) | bit
    return [r for r in edge_rows if masks.get(r[1], 0) & masks.get(r[2], 0)]


def _graph_rows(conn: Connection, only: set[str] | None,
                groups: list[list[str]] | None = None) -> tuple[list[tuple], list[tuple]]:
    """The rows of the entities (of only, if given) and of the relationships among them (inside
    one of groups, if given), by id. When only names most entities (a top-level community's
    members), every row is read and those outside are left out here: a lookup per id cost more
    than reading the rest."""
    entities = "SELECT id, name, type, description, degree FROM entities"
    edges = "SELECT id, source_id, target_id, description, weight FROM relationships"
    if only is None or 2 * len(only) >= conn.execute("SELECT count(*) FROM entities").fetchone()[0]:
        entity_rows = conn.execute(entities).fetchall()
        edge_rows = conn.execute(edges + " ORDER BY id").fetchall()
        if only is not None:
            entity_rows = [r for r in entity_rows if r[0] in only]
            edge_rows = [r for r in edge_rows if r[1] in only and r[2] in only]
        return entity_rows, edge_rows if groups is None else _inside_one(edge_rows, groups)
    args = (json.dumps(sorted(only)),)
    entity_rows = conn.execute(f"{entities} WHERE id {_IN}", args).fetchall()
    if groups is None:
        return entity_rows, conn.execute(f"{edges} WHERE source_id {_IN} AND target_id {_IN} ORDER BY id",
                                         args * 2).fetchall()
    # which relationships join two members of one group, from the ends' indexes alone (the
    # table's row of each relationship of a member, read to see its other end, cost 2 µs each:
    # 329 k of a 100 M-character store's add, four in five of them across groups); then the rows
    sources = dict(conn.execute(f"SELECT rowid, source_id FROM relationships WHERE source_id {_IN}", args).fetchall())
    ends = [(r, sources[r], target) for r, target in
            conn.execute(f"SELECT rowid, target_id FROM relationships WHERE target_id {_IN}", args).fetchall()
            if r in sources]
    del sources
    kept = json.dumps([r for r, _, _ in _inside_one(ends, groups)])
    return entity_rows, conn.execute(f"{edges} WHERE rowid {_IN} ORDER BY id", (kept,)).fetchall()


MATERIALS_KEPT = 128  # communities whose material a report stage keeps at hand (more than are handed on at once)
ROWS_KEPT = 4096     # row texts a report stage keeps (the last made: a parent reads its children's soon after)
_CJK = (1 << 32) - 1  # the CJK characters' part of a packed row size
_HEADINGS = len("-----Entities-----") + 1 + len("-----Relationships-----")  # joined by a newline


def _size_of(row: str, cjk: int) -> tuple[int, int]:
    return len(row), cjk


def _counted(row: str) -> tuple[str, int]:
    return row, cjk_counts(row, [0])[0]


def _table(title: str, header: str, rows, budget: int) -> tuple[str, int]:
    """A numbered table with as many rows ((text, its CJK characters), taken one by one) as fit
    in budget tokens, and the tokens it used: tgr.text.ContextTable's rows and count, from
    counts made once per row."""
    lines = [f"-----{title}-----", "id|" + header]
    used = estimate_tokens("\n".join(lines))
    for n, (row, cjk) in enumerate(rows, 1):
        cost = tokens_of(len(row) + len(str(n)) + 1, cjk) + 1  # estimate_tokens(f"{n}|{row}") + 1
        if used + cost > budget:
            break
        lines.append(f"{n}|{row}")
        used += cost
    return ("\n".join(lines), used) if len(lines) > 2 else ("", 0)


def material_fits(graph: _Graph, members: list[str], budget: int) -> bool:
    """raw_context's second value, without making its tables: the token estimate of its
    full text grows with every row, so the rows stop at the first that passes the budget."""
    if _too_many_entities(graph.entity_count(members), budget):
        return False  # (a top-level community's material is most of the graph: not made for this)
    entities, edges = graph.material(members)
    if 2 * (len(entities) + len(edges)) + 20 > budget:
        return False  # (each row costs two tokens or more besides its text)
    sizes = chain(map(graph.entity_size, entities), map(graph.edge_size, edges))
    length, cjk, count = _HEADINGS, 0, 0
    for row_length, row_cjk in sizes:  # the text joins both headings and every row with newlines
        length, cjk, count = length + row_length + 1, cjk + row_cjk, count + 1
        if tokens_of(length, cjk) + 2 * count + 20 > budget:
            return False
    return tokens_of(length, cjk) + 2 * count + 20 <= budget


def _too_many_entities(entities: int, budget: int) -> bool:
    """Whether that many entity rows alone leave raw_context no room (each row costs two
    tokens or more besides its text): it then says the material does not fit."""
    return 2 * entities + 20 > budget


def raw_context(graph: _Graph, members: list[str], budget: int) -> tuple[str, bool]:
    """The community's own material under budget; second value: did all of it fit?"""
    entities, edges = graph.material(members)
    # rows are made as the tables take them: those past the first that does not fit are never
    # made (a top-level community's material is most of the graph)
    entity_rows, edge_rows = map(graph.entity_row, entities), map(graph.edge_row, edges)
    room = budget - 2 * (len(entities) + len(edges)) - 20
    fits = False
    if room >= 0:  # (every row is needed: count the whole text, both headings and every row on a line)
        entity_rows, edge_rows = list(entity_rows), list(edge_rows)
        rows = entity_rows + edge_rows
        fits = tokens_of(_HEADINGS + sum(len(r) + 1 for r, _ in rows), sum(c for _, c in rows)) <= room
    # entities get up to half the budget; relationships take the rest
    ent_text, used = _table("Entities", "entity|type|description|degree", entity_rows, budget // 2)
    rel_text, _ = _table("Relationships", "source|target|description|weight", edge_rows, budget - used)
    return "\n".join(t for t in (ent_text, rel_text) if t), fits


def substituted_context(graph: _Graph, community: _Community, child_reports: dict[str, tuple[str, list[str]]],
                        budget: int) -> str:
    """Replace the largest sub-communities' material by their reports until the context fits."""
    children = sorted((c for c in community.children if c in child_reports),
                      key=lambda c: (-len(child_reports[c][1]), c))
    members = community.material_members  # (what children cover is told by all their members)
    inside = set(members)
    covered: set[str] = set()
    left = graph.entity_count(members)  # entities of the members not covered yet
    report_rows: list[tuple[str, int]] = []
    for child in children:
        report_rows.append(_counted(f"{child}|{shorten(child_reports[child][0], 1500)}"))
        newly = {m for m in child_reports[child][1] if m in inside} - covered
        covered |= newly
        left -= graph.entity_count(newly)
        rep_text, used = _table("Sub-community reports", "report", report_rows, budget)
        if child != children[-1] and _too_many_entities(left, max(0, budget - used)):
            continue  # raw_context would say it does not fit: its material is not made
        remaining = [m for m in members if m not in covered]
        rest, fits = raw_context(graph, remaining, max(0, budget - used))
        if fits or child == children[-1]:
            return "\n".join(t for t in (rep_text, rest) if t)
    return raw_context(graph, members, budget)[0]


def _parent_contexts(graph: _Graph, ready: list[_Community], child_reports: dict[str, tuple[str, list[str]]],
                     budget: int) -> list[tuple[_Community, str]]:
    """Each community made ready with its context (substituted_context); its sub-communities'
    reports are let go: no other community reads them."""
    contexts = [(c, substituted_context(graph, c, child_reports, budget)) for c in ready]
    for child in (child for c in ready for child in c.children):
        child_reports.pop(child, None)
    return contexts


def _with_ancestors(communities: dict[str, "_Community"], ids: set[str]) -> set[str]:
    """The communities of ids, with all their ancestors."""
    touched = ids & communities.keys()
    for cid in list(touched):
        parent = communities[cid].parent_id
        while parent in communities and parent not in touched:
            touched.add(parent)
            parent = communities[parent].parent_id
    return touched


def reports_state(conn: Connection, settings_key: str) -> str:
    """What complete reports are made for: their settings and the graph and communities
    (by the merge and cluster input hashes). Recorded as freshness 'reports'."""
    return f"{settings_key}:{freshness.recorded(conn, 'merge')}:{freshness.recorded(conn, 'cluster')}"


def report_settings(writer: ReportWriter, budget: int, min_size: int) -> str:
    """Hash of what every report depends on besides its community: writer, prompt, budget."""
    return content_hash(writer.name, writer.prompt, str(budget), str(min_size), f"cap {REPORTED_MEMBERS}")


@dataclass
class ReportItem:
    """One report to write: a tag to hand back, its context, and its raw material
    (entities, relationships) on demand, for writers that work from the graph itself."""
    tag: object
    context: str
    material: Callable[[], tuple[list[dict], list[dict]]]
    size: int | None = None  # the community's entities (None: those of its material)


FEED_STEP, FEED_AHEAD = 16, 48  # first-wave reports handed on at a time; most waiting for an answer


class _Order:
    """Which reports can be written when: first those whose raw material fits (or that have
    no sub-communities), then each other community as soon as the reports of all its
    sub-communities being written are in (its context substitutes them)."""

    def __init__(self, todo: list[_Community], graph: _Graph, budget: int):
        # a community whose material fits, or without sub-communities, is written first; its
        # context is made when it is handed to the writer (first_items), not all before the first call
        self.first: list[tuple[_Community, None]] = []
        self._waiting: dict[str, _Community] = {}
        self._graph, self._budget = graph, budget
        for community in todo:
            if not community.children or not community.capped and material_fits(graph, community.members, budget):
                self.first.append((community, None))
            else:
                self._waiting[community.id] = community
        ids = {c.id for c in todo}
        self._children = {cid: {child for child in c.children if child in ids} for cid, c in self._waiting.items()}
        parents = {child: cid for cid, c in self._waiting.items() for child in c.children}

        def waiting_above(community: _Community) -> int:
            depth, cid = 0, community.id
            while cid in parents:
                depth, cid = depth + 1, parents[cid]
            return depth

        self.first.sort(key=lambda item: -waiting_above(item[0]))  # the longest chains of reports start first
        self._ready = [cid for cid, children in self._children.items() if not children]
        self._parent = {child: cid for cid, children in self._children.items() for child in children}

    def first_items(self, count: int) -> list[tuple[_Community, str]]:
        """The next count communities of the first wave, with their contexts."""
        batch, self.first = self.first[:count], self.first[count:]
        return [(c, raw_context(self._graph, c.material_members, self._budget)[0]) for c, _ in batch]

    def done(self, community_id: str) -> None:
        """This community's report is written (or kept): its parent may be ready now."""
        parent = self._parent.pop(community_id, None)
        if parent is not None:
            self._children[parent].discard(community_id)
            if not self._children[parent]:
                self._ready.append(parent)

    def waiting(self, community_id: str | None) -> bool:
        """Whether this community is still to be written from its sub-communities' reports."""
        return community_id in self._waiting

    def released(self) -> list[_Community]:
        """The communities that became ready since the last call, deepest first."""
        ready, self._ready = self._ready, []
        return sorted((self._waiting.pop(cid) for cid in ready), key=lambda c: (-c.level, c.id))


class ReportWriter(Protocol):
    """What the report stage needs: a name and a prompt (part of each report's context hash,
    the prompt empty for a writer that asks no model) and a batch method."""
    name: str
    prompt: str

    def write(self, items: list[ReportItem], idle=None, more=None) -> Iterator[tuple[object, dict, str]]:
        """(tag, report, generator) for each item, in any order; more(), called after an
        item is handed back, returns further items to write in the same stream."""


REPORT_MAX_TOKENS = 1500  # a report of six findings is about 700 tokens; a looping one stops here


def report_params(chat) -> dict:
    """The params of a report request: its token budget, and its JSON schema where the
    endpoint holds answers to one (tgr.models.output_forms)."""
    params = {"max_tokens": REPORT_MAX_TOKENS}
    if wants_json(output_form(chat)):
        params["schema"] = {"name": "community_report", "schema": report_schema()}
    return params


class LLMReportWriter:
    """Reports by the chat model from each community's context; a malformed answer is
    repaired or asked again by the gateway, and as a last resort written extractively."""

    def __init__(self, gateway: Gateway, prompts: Prompts):
        self.gateway, self.prompt = gateway, prompts.community_report
        self.name = gateway.chat_model.name

    def write(self, items: list[ReportItem], idle=None, more=None) -> Iterator[tuple[object, dict, str]]:
        params = report_params(self.gateway.chat_model)
        jobs = lambda items: [ChatJob(item, self.prompt.format(context=item.context), dict(params),  # noqa: E731
                                      validate=lambda t: parse_report(t) is not None) for item in items]
        more_jobs = (lambda: jobs(more())) if more is not None else None
        for job, answer in self.gateway.chat_many("report", jobs(items), idle, more_jobs):
            parsed = parse_report(answer)
            if parsed:
                yield job.tag.tag, parsed, self.name
            else:
                yield job.tag.tag, extractive_report(*job.tag.material()), "fallback"


def _to_write(conn: Connection, min_size: int, refresh: bool, force: bool, changed: set[str] | None):
    """(every community by id, those whose report is to be written or checked, deepest
    first, whether all were looked at). Removes the reports of communities below min_size."""
    # every community row (small); members, reports and graph only for the communities looked at
    rows = conn.execute("SELECT id, level, parent_id, size FROM communities ORDER BY level DESC, id").fetchall()
    communities = {cid: _Community(cid, level, parent, []) for cid, level, parent, _ in rows}
    for c in communities.values():
        if c.parent_id in communities:
            communities[c.parent_id].children.append(c.id)
    qualified = {cid for cid, _, _, size in rows if size >= min_size}
    with transaction(conn):
        conn.execute("DELETE FROM reports WHERE community_id IN (SELECT id FROM communities WHERE size < ?)",
                     (min_size,))
    missing = {r[0] for r in conn.execute(
        "SELECT id FROM communities c WHERE NOT EXISTS (SELECT 1 FROM reports r WHERE r.community_id = c.id)")}
    everything = force or changed is None
    if everything:
        look = set(communities)
    else:
        holding = {r[0] for r in conn.execute(
            f"SELECT DISTINCT community_id FROM community_members WHERE entity_id {_IN}",
            (json.dumps(sorted(changed)),)).fetchall()}
        unhashed = {r[0] for r in conn.execute("SELECT community_id FROM reports WHERE context_hash IS NULL")}
        look = _with_ancestors(communities, holding | changed) | unhashed
    todo = [communities[cid] for cid in communities
            if cid in qualified and ((refresh and cid in look) or cid in missing)]
    return communities, todo, everything


def _material(conn: Connection, communities: dict[str, _Community], todo: list[_Community] | None):
    """Fill in the members of the communities to write (todo; None: all) and of their
    children; returns their stored reports (id -> (full text, context hash)) and their graph."""
    needed = None if todo is None else {c.id for c in todo} | {child for c in todo for child in c.children}
    scope = (lambda column: "") if needed is None else (lambda column: f"WHERE {column} {_IN}")
    args = () if needed is None else (json.dumps(sorted(needed)),)
    for cid, eid in conn.execute("SELECT community_id, entity_id FROM community_members "
                                 f"{scope('community_id')} ORDER BY 1, 2", args).fetchall():
        communities[cid].members.append(eid)
    _cap(conn, [communities[cid] for cid in (communities if needed is None else needed)])
    existing = {r[0]: (r[1], r[2]) for r in conn.execute(
        f"SELECT community_id, full_text, context_hash FROM reports {scope('community_id')}", args).fetchall()}
    # (a sub-community's members only tell what its report covers: no rows of theirs are read)
    graph = (_Graph(conn) if todo is None else
             _Graph(conn, {m for c in todo for m in c.material_members}, groups=[c.material_members for c in todo]))
    return existing, graph


REPORTED_MEMBERS = 500  # a community of more entities is reported from this many, the most connected


def _cap(conn: Connection, communities: list[_Community]) -> None:
    """Set the members a giant community's report is made from: its REPORTED_MEMBERS entities
    of the highest degree (then id), as the context's rows are ranked; in id order. (GraphRAG
    budgets a report's context; this bounds what is read to make it, so that adding a document
    to a giant community reads a bounded part of it, and a full build reads the same.)"""
    giants = [c for c in communities if len(c.members) > REPORTED_MEMBERS]
    if not giants:
        return
    ids = sorted({m for c in giants for m in c.members})
    degree = dict(in_pages(conn.execute(f"SELECT id, degree FROM entities WHERE id {_IN}", (json.dumps(ids),))))
    for c in giants:
        ranked = sorted((m for m in c.members if m in degree), key=lambda m: (-degree[m], m))
        c.reported = sorted(ranked[:REPORTED_MEMBERS])


class _Saving:
    """Reports on their way to the store: committed one by one (a model's report cost a call),
    or save_batch at a time for a writer that has one (the offline writer: a commit per report
    was ~22 KB written for each of 西游记's 999 reports). On exit, the writer's end() (if it
    has one) lets go of what it read for the stage."""

    def __init__(self, conn: Connection, writer):
        self.conn, self.batch = conn, max(1, getattr(writer, "save_batch", 1))
        self.rows: list[tuple] = []
        self.end = getattr(writer, "end", lambda: None)

    def add(self, *row) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.batch:
            self.flush()

    def __enter__(self) -> "_Saving":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.flush()
        finally:  # a writer that read the store lets it go: the stages after this one need none of it
            self.end()

    def flush(self) -> None:
        if self.rows:
            with transaction(self.conn):  # (one statement for the batch's rows)
                self.conn.executemany(_SAVE, [_report_row(*row) for row in self.rows])
            self.rows.clear()


# the vector is redone only if the embedded text changed (schema.sql's trigger)
_SAVE = ("INSERT INTO reports(community_id, title, summary, rating, rating_explanation, "
         "findings, full_text, generator, context_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
         "ON CONFLICT(community_id) DO UPDATE SET "
         "title = excluded.title, summary = excluded.summary, "
         "rating = excluded.rating, rating_explanation = excluded.rating_explanation, "
         "findings = excluded.findings, full_text = excluded.full_text, "
         "generator = excluded.generator, context_hash = excluded.context_hash")


def _report_row(community_id: str, parsed: dict, full: str, generator: str, context_hash: str) -> tuple:
    """One report's row, as _SAVE takes it."""
    return (community_id, parsed["title"], parsed["summary"], parsed["rating"],
            parsed["rating_explanation"], json.dumps(parsed["findings"], ensure_ascii=False),
            full, generator, context_hash)


def _context_hash(writer, community: _Community, context: str) -> str:
    """What a report is made from: its writer, prompt and context; a giant's size besides
    (its report says it; its context holds its most connected members alone)."""
    sized = (f"size {len(community.members)}",) if community.capped else ()
    return content_hash(writer.name, writer.prompt, context, *sized)


def _item(graph: _Graph, community: _Community, context: str, context_hash: str) -> ReportItem:
    return ReportItem((community, context_hash), context, partial(graph.material, community.material_members),
                      len(community.members))


def _begin(writer, todo: list[_Community]) -> None:
    """Tell a writer that reads the store itself that a stage starts (read it as it is now) and
    which communities' members it will be asked about (read where they are mentioned at once)."""
    getattr(writer, "begin", lambda: None)()
    getattr(writer, "expect", lambda members: None)([m for c in todo for m in c.material_members])


def build_reports(conn: Connection, writer: ReportWriter, *, budget: int = 3000,
                  min_size: int = 2, refresh: bool = False, force: bool = False,
                  changed: set[str] | None = None, progress: Progress | None = None, idle=None) -> int:
    """Write a report (by writer: tgr.build.role_providers.report_writer_for) for every community of
    min_size or more that has none; returns how many.

    refresh: also rewrite reports whose context changed since they were written (after
    the graph or the communities changed); a report whose context, writer and prompt are
    the same is kept, with its row, rating and vector. force: rewrite every report (the
    LLM cache still answers unchanged prompts). changed: with refresh, look only at
    communities that hold one of these entity or community ids (and their ancestors);
    None looks at all. Reports of communities that no longer qualify are removed. A
    rewritten report is re-embedded only if its text changed.
    idle: optional main-thread work to do while answers are awaited (see Gateway.chat_many).
    """
    report = progress or (lambda *a: None)
    communities, todo, everything = _to_write(conn, min_size, refresh or force, force, changed)
    total = len(todo)
    report("report", 0, total)
    if not todo:
        return 0
    existing, graph = _material(conn, communities, None if everything else todo)
    _begin(writer, todo)
    child_reports = {cid: (text, communities[cid].members) for cid, (text, _) in existing.items()
                     if cid in communities}
    written, checked = 0, 0

    def unchanged(community: _Community, context_hash: str) -> bool:
        nonlocal checked
        same = not force and existing.get(community.id, (None, None))[1] == context_hash
        if same:
            checked += 1
            report("report", written + checked, total)
        return same

    def save(community: _Community, parsed: dict, generator: str, context_hash: str) -> None:
        nonlocal written
        saving.add(community.id, parsed, full := report_text(parsed), generator, context_hash)
        if order.waiting(community.parent_id):  # only a parent still to write reads it (and lets it go)
            child_reports[community.id] = (full, community.members)
        written += 1
        report("report", written + checked, total)

    # first what fits (or has no sub-reports), handed on while fewer than FEED_AHEAD wait; a
    # community that needs its sub-communities' reports starts once those are written
    order = _Order(todo, graph, budget)
    inputs = getattr(writer, "inputs", None)  # what else a writer reads (offline: the chunks)

    def items(batch: list[tuple[_Community, str]]) -> list[ReportItem]:
        batch = [(c, ctx + inputs(c.material_members)) for c, ctx in batch] if inputs else batch
        fresh = []
        for community, context in batch:
            if unchanged(community, context_hash := _context_hash(writer, community, context)):  # (hashed once)
                order.done(community.id)
            else:
                fresh.append(_item(graph, community, context, context_hash))
        return fresh

    handed = 0  # items handed to the writer: those not written yet are queued or in flight

    def released() -> list[ReportItem]:  # parents whose sub-reports are in, else more of the first wave
        nonlocal handed
        while True:
            ready = order.released()
            if ready:
                fresh = items(_parent_contexts(graph, ready, child_reports, budget))
            elif order.first and handed - written < FEED_AHEAD:
                fresh = items(order.first_items(FEED_STEP))
            else:
                return []
            handed += len(fresh)
            if fresh:  # (a kept report may release its parent in turn: loop)
                return fresh

    with _Saving(conn, writer) as saving:  # (what was written before a failure or Ctrl-C is kept)
        while batch := released():  # one stream; only a writer that takes no more(...) goes wave by wave
            for (community, context_hash), parsed, generator in writer.write(batch, idle, more=released):
                save(community, parsed, generator, context_hash)
                order.done(community.id)
    return written
