"""Export a store's graph: GraphML with the community hierarchy, JSON, or one self-contained HTML page.

Everything read from the store is untrusted text (a .db may come from anywhere): every
string passes through tgr.store.untrusted_text.xml_safe, every number is coerced, and the HTML page
embeds the data as escaped JSON that its script only ever puts into textContent.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..version import __version__
from ..store.db import Connection
from ..errors import InputError
from ..query.name_match import chinese_variants, stored_aliases
from ..store.untrusted_text import xml_safe

FORMATS = {".graphml": "graphml", ".json": "json", ".html": "html", ".htm": "html"}
DEFAULT_TOP = 400           # hubs the overview may label at most (more labels appear as you zoom)
MAX_ALIASES = 20            # aliases kept per entity in exports
PASSAGES_PER_ENTITY = 3     # source passages the page keeps for each entity
PASSAGE_CHARS = 300         # characters of a passage around the entity's first mention
EDGE_TEXT_CHARS = 160       # the page shows the start of each relationship's description
DESCRIPTION_CHARS = 1200    # the page shows the start of each entity's description ...
FINDING_CHARS = 400         # ... and of each report finding's explanation
BIG_STORE = 2000            # past this many entities the page keeps less text per item (see detail_limits)


@dataclass
class GraphData:
    """The graph of one store, cleaned: entities by degree, relationships, communities, reports."""

    entities: list[dict] = field(default_factory=list)
    relationships: list[dict] = field(default_factory=list)
    communities: list[dict] = field(default_factory=list)
    reports: dict[str, dict] = field(default_factory=dict)
    levels: list[int] = field(default_factory=list)


def export_format(path: str | Path) -> str:
    """'graphml', 'json' or 'html' from the output file's suffix; InputError otherwise."""
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unknown export format; name the file .graphml, .json or .html")
    return fmt


def export_store(conn: Connection, out: str | Path, *, level: int = 0, top: int = DEFAULT_TOP,
                 title: str = "tgr store") -> dict:
    """Write the store's graph to out in the format its suffix names; returns what was written."""
    fmt = export_format(out)
    data = read_graph(conn)
    if fmt == "html" and data.levels and level not in data.levels:
        raise InputError(f"no community level {level}; this store has levels "
                         f"{data.levels[0]}-{data.levels[-1]}")
    if fmt == "graphml":
        write_graphml(data, out)
    elif fmt == "json":
        write_json(data, out)
    else:
        limits = detail_limits(len(data.entities))
        write_html(data, out, title=title, level=level, top=top,
                   passages=read_passages(conn, limits["passages"], limits["passage_chars"]))
    return {"format": fmt, "entities": len(data.entities), "relationships": len(data.relationships),
            "communities": len(data.communities), "reports": len(data.reports), "path": str(out)}


# -- reading ------------------------------------------------------------------------------

def _text(value) -> str:
    return xml_safe("" if value is None else value)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def _float(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return number if number == number and abs(number) != float("inf") else 0.0


def _findings(raw) -> list[dict]:
    """A report's findings column (JSON written by tgr, but untrusted) as [{summary, explanation}]."""
    try:
        items = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        return []
    findings = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            findings.append({"summary": _text(item.get("summary", "")),
                             "explanation": _text(item.get("explanation", ""))})
        elif isinstance(item, str):
            findings.append({"summary": _text(item), "explanation": ""})
    return findings


def read_graph(conn: Connection) -> GraphData:
    """Entities (degree order, with their community at every level), relationships,
    communities (level order, with parents and members) and reports."""
    data = GraphData()
    membership: dict[str, dict[int, str]] = {}
    members: dict[str, list[str]] = {}
    for entity_id, community_id, level in conn.execute(
            "SELECT m.entity_id, m.community_id, c.level FROM community_members m "
            "JOIN communities c ON c.id = m.community_id ORDER BY c.level, m.community_id, m.entity_id"):
        entity_id, community_id = _text(entity_id), _text(community_id)
        membership.setdefault(entity_id, {})[_int(level)] = community_id
        members.setdefault(community_id, []).append(entity_id)
    aliases: dict[str, list[str]] = {}
    for entity_id, alias in stored_aliases(conn):
        aliases.setdefault(_text(entity_id), []).append(_text(alias))
    for eid, name, etype, desc, degree, mentions in conn.execute(
            "SELECT id, name, type, description, degree, mentions FROM entities ORDER BY degree DESC, id"):
        eid, name = _text(eid), _text(name)
        data.entities.append({"id": eid, "name": name, "type": _text(etype),
                              "description": _text(desc), "degree": _int(degree),
                              "mentions": _int(mentions), "communities": membership.get(eid, {}),
                              "aliases": [a for a in aliases.get(eid, [])[:MAX_ALIASES] if a != name]})
    for rid, src, dst, predicate, desc, weight in conn.execute(
            "SELECT id, source_id, target_id, predicate, description, weight FROM relationships "
            "ORDER BY weight DESC, id"):
        data.relationships.append({"id": _text(rid), "source": _text(src), "target": _text(dst),
                                   "predicate": _text(predicate), "description": _text(desc),
                                   "weight": _float(weight)})
    for cid, level, parent, size, is_leaf in conn.execute(
            "SELECT id, level, parent_id, size, is_leaf FROM communities ORDER BY level, size DESC, id"):
        cid = _text(cid)
        data.communities.append({"id": cid, "level": _int(level),
                                 "parent": None if parent is None else _text(parent),
                                 "size": _int(size), "is_leaf": bool(_int(is_leaf)),
                                 "entities": members.get(cid, [])})
    for cid, title, summary, rating, explanation, findings, full_text, generator in conn.execute(
            "SELECT community_id, title, summary, rating, rating_explanation, findings, full_text, "
            "generator FROM reports ORDER BY community_id"):
        cid = _text(cid)
        data.reports[cid] = {"community": cid, "title": _text(title), "summary": _text(summary),
                             "rating": _float(rating), "rating_explanation": _text(explanation),
                             "findings": _findings(findings), "full_text": _text(full_text),
                             "generator": _text(generator)}
    data.levels = sorted({c["level"] for c in data.communities})
    return data


def read_passages(conn: Connection, per_entity: int = PASSAGES_PER_ENTITY,
                  chars: int = PASSAGE_CHARS) -> tuple[list[dict], dict[str, list[list]]]:
    """Documents, and for each entity up to per_entity passages [document index, chunk ordinal,
    text around the entity's first mention] in document order."""
    documents: list[dict] = []
    doc_index: dict[str, int] = {}
    passages: dict[str, list[list]] = {}
    rows = conn.execute(  # rank the mentions first, then read the texts of only those kept
        "SELECT p.entity_id, e.name, c.document_id, d.source, d.title, c.ordinal, c.text FROM ("
        " SELECT m.entity_id, m.chunk_id,"
        "  row_number() OVER (PARTITION BY m.entity_id ORDER BY d.source, c.document_id, c.ordinal) AS n"
        " FROM entity_mentions m JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = c.document_id"
        ") p JOIN entities e ON e.id = p.entity_id JOIN chunks c ON c.id = p.chunk_id"
        " JOIN documents d ON d.id = c.document_id WHERE p.n <= ? ORDER BY p.entity_id, p.n", (per_entity,))
    for entity_id, name, document_id, source, title, ordinal, text in rows:
        if document_id not in doc_index:
            doc_index[document_id] = len(documents)
            documents.append({"id": _text(document_id), "source": _text(source), "title": _text(title)})
        passage = _around(_text(text), _text(name), chars)
        passages.setdefault(_text(entity_id), []).append([doc_index[document_id], _int(ordinal), passage])
    return documents, passages


def _shorten(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def _around(text: str, name: str, chars: int) -> str:
    """About chars characters of text centred on the first mention of name."""
    if len(text) <= chars:
        return text
    at = text.lower().find(name.lower()) if name else -1
    start = max(0, min(len(text) - chars, (at if at >= 0 else 0) - chars // 3))
    if start > 0:  # begin at a word boundary when there is one nearby
        space = text.find(" ", start, start + 30)
        start = space + 1 if space >= 0 else start
    piece = text[start:start + chars].strip()
    return ("…" if start > 0 else "") + piece + ("…" if start + chars < len(text) else "")


# -- GraphML and JSON ---------------------------------------------------------------------

def to_networkx(data: GraphData):
    """A networkx.DiGraph: entities with their community at every level (community_0,
    community_1, ...; 'community' is level 0), relationships with predicate and weight."""
    import networkx as nx

    graph = nx.DiGraph(levels=" ".join(str(level) for level in data.levels), tgr_version=__version__)
    for e in data.entities:
        attrs = {"name": e["name"], "type": e["type"], "description": e["description"],
                 "degree": e["degree"], "mentions": e["mentions"],
                 "community": e["communities"].get(0, ""), "aliases": "; ".join(e["aliases"])}
        path = [e["communities"][level] for level in sorted(e["communities"])]
        attrs["community_path"] = " ".join(path)
        for level, cid in e["communities"].items():
            attrs[f"community_{level}"] = cid
        graph.add_node(e["id"], **attrs)
    for r in data.relationships:
        if r["source"] in graph and r["target"] in graph:
            graph.add_edge(r["source"], r["target"], id=r["id"], predicate=r["predicate"],
                           description=r["description"], weight=r["weight"])
    return graph


def write_graphml(data: GraphData, out: str | Path) -> None:
    """GraphML for Gephi, Cytoscape or networkx, with the community hierarchy as node attributes."""
    import networkx as nx

    nx.write_graphml(to_networkx(data), str(out))


def to_json(data: GraphData) -> dict:
    """nodes, edges, communities (with parents, levels, members) and reports, as plain data."""
    return {
        "format": "tgr-graph", "version": 1, "tgr_version": __version__, "levels": data.levels,
        "nodes": [{**e, "communities": {str(k): v for k, v in sorted(e["communities"].items())}}
                  for e in data.entities],
        "edges": data.relationships,
        "communities": [{**c, "title": data.reports.get(c["id"], {}).get("title")} for c in data.communities],
        "reports": list(data.reports.values()),
    }


def write_json(data: GraphData, out: str | Path) -> None:
    """The JSON export (UTF-8, deterministic)."""
    Path(out).write_text(json.dumps(to_json(data), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


# -- the HTML page ------------------------------------------------------------------------

def layout(data: GraphData, seed: int | None = None):
    """Positions for every entity: communities as disks, members inside (a tgr.export.graph_layout.Layout)."""
    from .graph_layout import LAYOUT_SEED, compute_layout  # numpy and igraph: only when a page is written

    index = {e["id"]: i for i, e in enumerate(data.entities)}
    edges = [(index[r["source"]], index[r["target"]], r["weight"]) for r in data.relationships
             if r["source"] in index and r["target"] in index]
    groups = [e["communities"].get(min(e["communities"])) if e["communities"] else None for e in data.entities]
    return compute_layout(len(data.entities), edges, groups, seed=LAYOUT_SEED if seed is None else seed)


def page_data(data: GraphData, *, title: str, level: int, top: int) -> dict:
    """What the page draws from (entities refer to each other by index): names, aliases,
    positions, communities with their titles and disks, relationships, the first view."""
    index = {e["id"]: i for i, e in enumerate(data.entities)}
    levels = data.levels or [0]
    placed = layout(data)
    nodes = []
    for i, e in enumerate(data.entities):
        node = {"id": e["id"], "name": e["name"], "type": e["type"], "degree": e["degree"],
                "x": placed.x[i], "y": placed.y[i],
                "c": [e["communities"].get(lv) for lv in range(max(levels) + 1)]}
        if e.get("aliases"):
            node["a"] = e["aliases"]
        if not placed.main[i]:
            node["o"] = 1  # outside the main component
        nodes.append(node)
    edges = [[index[r["source"]], index[r["target"]], r["weight"]]
             for r in data.relationships if r["source"] in index and r["target"] in index]
    communities = {}
    for c in data.communities:
        entry = {"level": c["level"], "parent": c["parent"], "size": c["size"],
                 "title": data.reports.get(c["id"], {}).get("title", "")}
        if c["id"] in placed.disks:
            entry["d"] = list(placed.disks[c["id"]])
        communities[c["id"]] = entry
    names = [n["name"] for n in nodes] + [a for n in nodes for a in n.get("a", [])]
    return {"title": _text(title), "tgr_version": __version__, "levels": levels, "level": level,
            "top": max(1, int(top)), "nodes": nodes, "edges": edges, "communities": communities,
            "view": [round(v, 1) for v in placed.view],
            "zh": chinese_variants(names)}  # the search folds 孫悟空 to 孙悟空 with it


def detail_limits(entities: int) -> dict[str, int]:
    """How much text the page keeps per item: everything up to BIG_STORE entities; past that
    fewer and shorter passages and descriptions, so a 10,000-entity page stays near 1 KB per
    entity (the whole text is in the store, and in the JSON export)."""
    if entities <= BIG_STORE:
        return {"passages": PASSAGES_PER_ENTITY, "passage_chars": PASSAGE_CHARS, "description": DESCRIPTION_CHARS,
                "edge": EDGE_TEXT_CHARS, "finding": FINDING_CHARS, "findings": 10}
    return {"passages": 2 if entities <= 2 * BIG_STORE else 1, "passage_chars": 200, "description": 160,
            "edge": 0, "finding": 160, "findings": 3}


def page_details(data: GraphData, passages: tuple[list[dict], dict[str, list[list]]] | None = None) -> dict:
    """What the page reads only when a panel opens: descriptions and source passages per entity,
    predicate and description per relationship, reports per community."""
    documents, by_entity = passages or ([], {})
    limits = detail_limits(len(data.entities))
    index = {e["id"] for e in data.entities}
    reports = {}
    for cid, report in data.reports.items():
        reports[cid] = {"summary": _shorten(report["summary"], limits["description"]), "rating": report["rating"],
                        "findings": [[f["summary"], _shorten(f["explanation"], limits["finding"])]
                                     for f in report["findings"][:limits["findings"]]]}
    return {"descriptions": [_shorten(e["description"], limits["description"]) for e in data.entities],
            "passages": [by_entity.get(e["id"], []) for e in data.entities],
            "edges": [[r["predicate"], _shorten(r["description"], limits["edge"]) if limits["edge"] else ""]
                      for r in data.relationships if r["source"] in index and r["target"] in index],
            "reports": reports,
            "documents": [[d["source"], _shorten(d["title"], 120)] for d in documents]}


def script_json(value) -> str:
    """JSON that is safe inside an HTML <script> element: no '<', '>' or '&' (so no '</script>'
    or '<!--'), and no U+2028/U+2029 line separators."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def _static(name: str) -> str:
    from importlib import resources  # imported here: `tgr ask` loads this module (cli) but never reads a page

    return resources.files("tgr.export").joinpath("static", name).read_text(encoding="utf-8")


def render_html(data: GraphData, *, title: str = "tgr store", level: int = 0, top: int = DEFAULT_TOP,
                passages: tuple[list[dict], dict[str, list[list]]] | None = None) -> str:
    """One self-contained HTML page: its canvas renderer script and the data (no library, nothing fetched)."""
    import html

    parts = {
        "<!--TGR-TITLE-->": html.escape(_text(title)),
        "<!--TGR-DATA-->": script_json(page_data(data, title=title, level=level, top=top)),
        "<!--TGR-DETAILS-->": script_json(page_details(data, passages)),
        "<!--TGR-SCRIPT-->": _static("graph.js"),
    }
    page = _static("graph.html")
    pieces = []
    for marker, value in parts.items():  # one pass each, in template order: inserted text is never rescanned
        head, sep, page = page.partition(marker)
        if not sep:
            raise RuntimeError(f"graph.html lacks {marker}")
        pieces += [head, value]
    return "".join(pieces) + page


def write_html(data: GraphData, out: str | Path, *, title: str = "tgr store", level: int = 0,
               top: int = DEFAULT_TOP, passages: tuple[list[dict], dict[str, list[list]]] | None = None) -> None:
    """Write the graph page."""
    Path(out).write_text(render_html(data, title=title, level=level, top=top, passages=passages),
                         encoding="utf-8")
