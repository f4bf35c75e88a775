"""Read-only lookups for agents and tools: an entity with its relationships, communities and
sources; communities with their reports; the text of retrieved chunks.

Store text is untrusted and passes through tgr.store.untrusted_text.xml_safe (no control characters).
"""
from __future__ import annotations

import json

from . import name_match
from ..store.db import Connection
from ..store.untrusted_text import xml_safe
from ..text import normalise_name

MAX_RELATIONSHIPS = 50


def _clean(value):
    return xml_safe(value) if isinstance(value, str) else value


def _row(keys: tuple[str, ...], row) -> dict:
    return {k: _clean(v) for k, v in zip(keys, row)}


def match_entity(conn: Connection, name: str) -> name_match.Match | None:
    """The entity name means, and how it was found: its own name (normalised, as merge keys
    it), a recorded alias, the same name but for case, accents, `·` or traditional characters
    ('folded'), or a name a few typos away ('typo'); None when nothing is that close."""
    from ..text import name_key

    short = str(name)[:name_match.MAX_NAME_CHARS * 2]
    for key in dict.fromkeys((normalise_name(short), name_key(short))):  # "Mr. Scrooge's" is keyed "scrooge"
        # the id itself, or a disambiguated "<key>#<n>": a range on the primary key, not a LIKE scan
        row = conn.execute("SELECT id, name FROM entities WHERE id = ?1 OR (id >= ?1 || '#' AND id < ?1 || '$') "
                           "ORDER BY degree DESC, id LIMIT 1", (key,)).fetchone()
        if row:
            return name_match.Match(row[0], row[1], "name")
        alias = name_match.alias_entity(conn, key)  # "Scrooge", "U.S.": any of its recorded names
        if alias:  # an alias that is also the entity's display name is its name
            return name_match.Match(alias[0], alias[1], "name" if normalise_name(alias[1]) == key else "alias")
    return name_match.resolve(conn, name)


def find_entity(conn: Connection, name: str) -> str | None:
    """The id of the entity name means (see match_entity), or None."""
    match = match_entity(conn, name)
    return match.entity_id if match else None


def similar_entities(conn: Connection, name: str, limit: int = 10) -> list[str]:
    """Names of entities whose name contains name (case-insensitive), by degree, then names
    that resemble it (shared words, a few edits)."""
    needle = normalise_name(str(name)[:name_match.MAX_NAME_CHARS * 2])
    needle = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    names = [_clean(r[0]) for r in conn.execute(
        "SELECT name FROM entities WHERE id LIKE '%' || ? || '%' ESCAPE '\\' ORDER BY degree DESC, id LIMIT ?",
        (needle, limit))]
    for other in name_match.name_index(conn).similar(name, limit):
        if len(names) < limit and _clean(other) not in names:
            names.append(_clean(other))
    return names


def entity_details(conn: Connection, name: str, *, sources: int = 5) -> dict:
    """Description, relationships (by weight), communities with report titles, and source
    chunks with their document, of the entity called name; {"found": False, "similar": [...]}
    when there is none."""
    match = match_entity(conn, name)
    if match is None:
        return {"found": False, "name": _clean(name), "similar": similar_entities(conn, name)}
    entity_id = match.entity_id
    keys = ("id", "name", "type", "description", "degree", "mentions")
    entity = _row(keys, conn.execute(f"SELECT {', '.join(keys)} FROM entities WHERE id = ?", (entity_id,)).fetchone())
    if match.how != "name":  # say what was asked and which spelling it was taken for
        entity["matched"] = {"query": _clean(name), "by": match.how, "as": _clean(match.surface)}
    entity["aliases"] = name_match.name_index(conn).aliases_of(entity_id)
    relationships = []
    for row in conn.execute(
            "SELECT r.source_id, s.name, r.predicate, r.target_id, t.name, r.description, r.weight "
            "FROM relationships r JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
            "WHERE r.source_id = ?1 OR r.target_id = ?1 ORDER BY r.weight DESC, r.id LIMIT ?2",
            (entity_id, MAX_RELATIONSHIPS)):
        relationships.append(_row(("source_id", "source", "predicate", "target_id", "target", "description",
                                   "weight"), row))
    communities = [_row(("id", "level", "title"), row) for row in conn.execute(
        "SELECT c.id, c.level, r.title FROM community_members m JOIN communities c ON c.id = m.community_id "
        "LEFT JOIN reports r ON r.community_id = c.id WHERE m.entity_id = ? ORDER BY c.level, c.id", (entity_id,))]
    chunks = [_row(("chunk_id", "document_id", "source", "title", "ordinal", "char_start", "char_end", "text"), row)
              for row in conn.execute(
                  "SELECT c.id, d.id, d.source, d.title, c.ordinal, c.char_start, c.char_end, c.text "
                  "FROM entity_mentions m JOIN chunks c ON c.id = m.chunk_id JOIN documents d ON d.id = c.document_id "
                  "WHERE m.entity_id = ? ORDER BY d.source, d.id, c.ordinal LIMIT ?", (entity_id, sources))]
    return {"found": True, **entity, "relationships": relationships, "communities": communities, "sources": chunks}


def list_communities(conn: Connection, level: int | None = None, limit: int = 50) -> list[dict]:
    """Communities (at one level, or all) with their report's title, summary and rating,
    best-rated first within a level."""
    rows = conn.execute(
        "SELECT c.id, c.level, c.parent_id, c.size, r.title, r.summary, r.rating FROM communities c "
        "LEFT JOIN reports r ON r.community_id = c.id WHERE ?1 IS NULL OR c.level = ?1 "
        "ORDER BY c.level, r.rating IS NULL, r.rating DESC, c.size DESC, c.id LIMIT ?2", (level, limit))
    return [_row(("id", "level", "parent_id", "size", "title", "summary", "rating"), row) for row in rows]


def community_report(conn: Connection, community_id: str) -> dict | None:
    """One community's full report (findings parsed) and member entities, or None."""
    row = conn.execute(
        "SELECT c.id, c.level, c.parent_id, c.size, r.title, r.summary, r.rating, r.rating_explanation, "
        "r.findings, r.full_text FROM communities c LEFT JOIN reports r ON r.community_id = c.id "
        "WHERE c.id = ?", (community_id,)).fetchone()
    if row is None:
        return None
    report = _row(("id", "level", "parent_id", "size", "title", "summary", "rating", "rating_explanation",
                   "findings", "full_text"), row)
    try:
        findings = json.loads(report["findings"]) if report["findings"] else []
    except ValueError:
        findings = []
    report["findings"] = [{k: _clean(v) for k, v in f.items() if k in ("summary", "explanation")}
                          for f in findings if isinstance(f, dict)] if isinstance(findings, list) else []
    report["children"] = [r[0] for r in conn.execute(
        "SELECT id FROM communities WHERE parent_id = ? ORDER BY id", (community_id,))]
    report["entities"] = [_clean(r[0]) for r in conn.execute(
        "SELECT e.name FROM community_members m JOIN entities e ON e.id = m.entity_id "
        "WHERE m.community_id = ? ORDER BY e.degree DESC, e.id LIMIT 100", (community_id,))]
    return report


def chunk_details(conn: Connection, chunk_id: str) -> dict | None:
    """One chunk with its document (source, title) and place in it, or None."""
    row = conn.execute(
        "SELECT c.id, d.id, d.source, d.title, c.ordinal, c.char_start, c.char_end, c.text "
        "FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ?", (chunk_id,)).fetchone()
    return None if row is None else _row(("chunk_id", "document_id", "source", "title", "ordinal",
                                          "char_start", "char_end", "text"), row)


def cited_item(conn: Connection, ident: str) -> dict:
    """What an id an answer lists names: a chunk, a community's report, or an entity (by id or
    name), with "kind" saying which; {"kind": None, "found": False, "similar": [...]} when none."""
    chunk = chunk_details(conn, ident)
    if chunk is not None:
        return {"kind": "chunk", "found": True, **chunk}
    report = community_report(conn, ident)
    if report is not None:
        return {"kind": "report", "found": True, **report}
    entity = entity_details(conn, ident)
    return {"kind": "entity" if entity["found"] else None, **entity}
