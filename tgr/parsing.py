"""Tolerant parsers for model output: XML-ish tags, JSON reports, scored points; and JSON
parsed only when it is small and shallow (a model's answer or a store's value is untrusted).

Models wrap answers in code fences, add chatter, drop closing tags, or get cut off at the
token limit. These parsers take what is usable and say (by returning None or empty) when
nothing is.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

from .text import CJK_RUN

MAX_JSON_DEPTH = 32
MAX_MODEL_JSON_CHARS = 1_000_000
SMALL_JSON_CHARS = 64 * 1024  # loads()'s default: settings, findings, a store's meta values

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\n?|```")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_PARTIAL_KEY = re.compile(r'([,{])\s*"[^"]*"?\s*:?\s*$')


def json_brackets(text: str):
    """The brackets of JSON text outside strings, in order, and last a bool: whether the
    text ended inside a string (one linear scan, no recursion)."""
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{]}":
            yield ch
    yield in_string


def json_depth(text: str) -> int:
    """Deepest nesting of [ and { outside JSON strings."""
    depth = deepest = 0
    for ch in json_brackets(text):
        if ch in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ("]", "}"):
            depth = max(0, depth - 1)
    return deepest


def too_deep_or_large(text: str, max_chars: int = MAX_MODEL_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH) -> bool:
    if len(text) > max_chars:
        return True
    if text.count("[") + text.count("{") <= max_depth:  # cannot nest deeper than it opens (C-speed count)
        return False
    return json_depth(text) > max_depth


def loads(text: str, *, max_chars: int = SMALL_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH):
    """json.loads that refuses (ValueError) text too large or nested too deep to parse safely."""
    if too_deep_or_large(text, max_chars, max_depth):
        raise ValueError(f"JSON too large or nested deeper than {max_depth} levels")
    return json.loads(text)


@dataclass
class RawEntity:
    name: str
    type: str
    description: str


@dataclass
class RawRelation:
    source: str
    target: str
    predicate: str
    description: str
    strength: float = 1.0


def strip_fences(text: str) -> str:
    return _FENCE.sub("", text or "")


def tag_contents(text: str, tag: str) -> list[str]:
    """Contents of every <tag>...</tag>; an unclosed last tag runs to the next sibling or the end."""
    text = text or ""
    opener = re.compile(rf"<\s*{tag}\b[^>/]*>", re.IGNORECASE)
    closer = re.compile(rf"<\s*/\s*{tag}\s*>", re.IGNORECASE)
    results, pos = [], 0
    while True:
        start = opener.search(text, pos)
        if not start:
            break
        close = closer.search(text, start.end())
        following = opener.search(text, start.end())
        if close and (not following or close.start() < following.start()):
            results.append(text[start.end():close.start()])
            pos = close.end()
        else:  # unclosed: take up to the next opener of the same tag, or the end
            end = following.start() if following else len(text)
            results.append(text[start.end():end])
            pos = end
    return results


def first_tag(text: str, *tags: str) -> str:
    """Cleaned content of the first of these tags present, or ''."""
    for tag in tags:
        found = tag_contents(text, tag)
        if found:
            return _clean(re.sub(r"<[^>]*>.*", "", found[0], flags=re.DOTALL) or found[0])
    return ""


def _clean(value: str) -> str:
    value = " ".join(value.split())
    return value.strip().strip("\"'").strip()


def _number(text: str, default: float) -> float:
    match = _NUMBER.search(text or "")
    return float(match.group()) if match else default


def says_none(text: str) -> bool:
    """True when the model explicitly answered that there is nothing to extract."""
    body = strip_fences(text).strip().lower()
    return bool(re.search(r"<\s*none\s*/?\s*>", body)) or body in {"none", "none.", "无", "没有", "n/a"}


def parse_entities(text: str) -> list[RawEntity]:
    """<entity> (or the seed's <concept>) blocks with name, type and description."""
    text = strip_fences(text)
    entities = []
    for block in tag_contents(text, "entity") + tag_contents(text, "concept"):
        name = first_tag(block, "name")
        if not name or len(name) > 200:
            continue
        entities.append(RawEntity(
            name=name,
            type=(first_tag(block, "type") or "concept").lower()[:40],
            description=first_tag(block, "description", "desc"),
        ))
    return entities


def parse_relations(text: str) -> list[RawRelation]:
    """<relation> (source/target) or the seed's <triplet> (subject/object) blocks."""
    text = strip_fences(text)
    relations = []
    for block in tag_contents(text, "relation") + tag_contents(text, "triplet"):
        source = first_tag(block, "source", "subject")
        target = first_tag(block, "target", "object")
        if not source or not target or source == target:
            continue
        predicate = first_tag(block, "predicate") or "related to"
        strength = first_tag(block, "strength")
        relations.append(RawRelation(
            source=source, target=target, predicate=predicate[:120],
            description=first_tag(block, "description") or predicate,
            strength=min(10.0, max(0.0, _number(strength, 1.0))) if strength else 1.0,
        ))
    return relations


def extraction_is_valid(text: str) -> bool:
    """An answer worth keeping: it has entities or relations, or says there are none (in tags,
    or as JSON with an empty entity list)."""
    data = _json_extraction(text)
    if data is not None and (_json_entities(data) or _json_relations(data)
                             or (isinstance(data.get("entities"), list) and not data["entities"])):
        return True
    return bool(parse_entities(text) or parse_relations(text) or says_none(text))


# the field names models write instead of the ones asked for (recorded answers of small models)
_ENTITY_LISTS = ("entities", "entity", "nodes", "people", "items")
_RELATION_LISTS = ("relations", "relationships", "relation", "edges", "links", "triplets")
_NAME_KEYS = ("name", "entity", "entity_name", "title", "label", "id")
_SOURCE_KEYS = ("source", "subject", "from", "head", "source_entity", "entity1")
_TARGET_KEYS = ("target", "object", "to", "tail", "target_entity", "entity2")
_PREDICATE_KEYS = ("predicate", "relation", "relationship", "type", "label")


def parse_extraction(text: str) -> tuple[list[RawEntity], list[RawRelation]]:
    """Entities and relations of an extraction answer: a JSON object (as asked for under a
    schema, field names read tolerantly) or the portable tags, whichever the answer holds."""
    data = _json_extraction(text)
    if data is not None:
        entities, relations = _json_entities(data), _json_relations(data)
        if entities or relations:
            return entities, relations
    return parse_entities(text), parse_relations(text)


def _json_extraction(text: str) -> dict | None:
    """The JSON object an extraction answer holds, if it holds one."""
    data = parse_json_object(text) if "{" in (text or "") else None
    return data if isinstance(data, dict) else None


def _first_list(data: dict, keys: tuple[str, ...]) -> list:
    for key in keys:
        value = data.get(key)
        if isinstance(value, list):
            return value
    return []


def _field(item: dict, keys: tuple[str, ...]) -> str:
    for key in keys:
        value = item.get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            return _clean(str(value))
    return ""


def _json_entities(data: dict) -> list[RawEntity]:
    entities = []
    for item in _first_list(data, _ENTITY_LISTS):
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict):
            continue
        name = _field(item, _NAME_KEYS)
        if not name or len(name) > 200:
            continue
        kind = _field(item, ("type", "entity_type", "category", "kind")) or "concept"
        entities.append(RawEntity(name=name, type=kind.lower()[:40],
                                  description=_field(item, ("description", "desc", "summary", "about"))))
    return entities


def _json_relations(data: dict) -> list[RawRelation]:
    relations = []
    for item in _first_list(data, _RELATION_LISTS):
        if not isinstance(item, dict):
            continue
        source, target = _field(item, _SOURCE_KEYS), _field(item, _TARGET_KEYS)
        if not source or not target or source == target:
            continue
        predicate = _field(item, _PREDICATE_KEYS) or "related to"
        strength = item.get("strength", item.get("weight"))
        strength = _number(str(strength), 1.0) if strength is not None else 1.0
        relations.append(RawRelation(source=source, target=target, predicate=predicate[:120],
                                     description=_field(item, ("description", "desc")) or predicate,
                                     strength=min(10.0, max(0.0, strength))))
    return relations


_WORD = re.compile(r"\w+")


def grounded(entities: list[RawEntity], relations: list[RawRelation], text: str,
             common: frozenset[str] = frozenset()) -> tuple[list[RawEntity], list[RawRelation]]:
    """What an extraction says about this text: entities whose name the text writes, and the
    relations between them. A small model copies the prompt's example ("Captain Ahab") or
    invents names; a strong one may complete a name ("Ebenezer Scrooge" where the chunk says
    "Scrooge"). A name is kept when the text writes it whole, or writes one of its words that
    is not a common word (`common`: lower-cased), or for CJK a two-character part of it."""
    folded = text.casefold()
    words = set(_WORD.findall(folded))

    def in_text(name: str) -> bool:
        key = name.casefold().strip()
        if not key:
            return False
        if key in folded:
            return True
        if CJK_RUN.search(key):
            return any(key[i:i + 2] in folded for i in range(len(key) - 1) if CJK_RUN.fullmatch(key[i:i + 2]))
        return any(w in words for w in _WORD.findall(key) if len(w) > 2 and w not in common)

    kept = [e for e in entities if in_text(e.name)]
    names = {e.name.casefold() for e in kept}
    linked = [r for r in relations
              if (r.source.casefold() in names or in_text(r.source)) and (r.target.casefold() in names or in_text(r.target))]
    return kept, linked


def parse_json_object(text: str) -> dict | None:
    """The first JSON object in text, repairing common damage; None if hopeless
    (or too large / too deeply nested to parse safely)."""
    if isinstance(text, str) and too_deep_or_large(text):
        return None
    text = strip_fences(text or "")
    start = text.find("{")
    if start < 0:
        return None
    body = text[start:]
    try:  # the object itself, ignoring any chatter after it
        value, _ = json.JSONDecoder().raw_decode(body)
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    end = body.rfind("}")
    candidates = [body[:end + 1]] if end > 0 else []
    candidates.append(_close_brackets(_drop_partial_key(body)))
    for candidate in candidates:
        for attempt in (candidate, _repair(candidate)):
            value = _load(attempt)
            if isinstance(value, dict):
                return value
    return None


def _load(text: str):
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:  # single quotes, Python literals
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _drop_partial_key(text: str) -> str:
    """Remove an object key (and colon) that a truncated answer left without a value."""
    return _PARTIAL_KEY.sub(lambda m: "" if m.group(1) == "," else "{", text)


def _repair(text: str) -> str:
    text = text.replace("“", '"').replace("”", '"')
    text = re.sub(r",\s*([}\]])", r"\1", text)  # trailing commas
    text = re.sub(r"\bNone\b", "null", text)
    text = re.sub(r"\bTrue\b", "true", text)
    return re.sub(r"\bFalse\b", "false", text)


def _close_brackets(text: str) -> str:
    """Close the strings, lists and objects a truncated JSON answer left open."""
    stack, in_string = [], False
    for item in json_brackets(text):
        if item is True or item is False:
            in_string = item
        elif item in "{[":
            stack.append("}" if item == "{" else "]")
        elif stack:
            stack.pop()
    tail = '"' if in_string else ""
    body = re.sub(r",\s*$", "", text + tail)
    return body + "".join(reversed(stack))


def parse_report(text: str) -> dict | None:
    """A community report with title, summary, rating (0-10), rating_explanation, findings."""
    data = parse_json_object(text)
    if not data:
        return None
    title = _clean(str(data.get("title") or ""))
    summary = " ".join(str(data.get("summary") or "").split())
    if not title or not summary:
        return None
    findings = []
    raw_findings = data.get("findings") or []
    if isinstance(raw_findings, (str, dict)):
        raw_findings = [raw_findings]
    for item in raw_findings:
        if isinstance(item, dict):
            head = " ".join(str(item.get("summary") or "").split())
            body = " ".join(str(item.get("explanation") or "").split())
        else:
            head, body = " ".join(str(item).split()), ""
        if head or body:
            findings.append({"summary": head, "explanation": body})
    rating = data.get("rating", 0)
    rating = rating if isinstance(rating, (int, float)) else _number(str(rating), 0.0)
    return {
        "title": title,
        "summary": summary,
        "rating": float(min(10.0, max(0.0, rating))),
        "rating_explanation": " ".join(str(data.get("rating_explanation") or "").split()),
        "findings": findings,
    }


def parse_points(text: str) -> list[tuple[str, int]]:
    """Scored key points (description, score 0-100) from a global-search map answer."""
    points = []
    for block in tag_contents(strip_fences(text), "point"):
        description = first_tag(block, "description")
        score_text = first_tag(block, "score")
        if not description or not score_text:
            continue
        if not _NUMBER.search(score_text):
            continue  # "high" is not a score
        score = int(round(min(100.0, max(0.0, _number(score_text, 0.0)))))
        points.append((description, score))
    return points


def parse_transformation(text: str) -> dict[str, str]:
    """The id -> id merge map of a disambiguation answer ({} for None or garbage)."""
    text = strip_fences(text or "")
    found = tag_contents(text, "transformation") or tag_contents(text, "transform")
    body = (found[0] if found else text).strip()
    if not body or body.lower().startswith("none"):
        return {}
    data = parse_json_object(body)
    if not data:
        return {}
    return {str(k).strip(): str(v).strip() for k, v in data.items() if isinstance(v, (str, int))}
