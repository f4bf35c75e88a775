"""Citations a reader can follow: an answer's [Sources: ...], [Entities: ...] and [Reports: ...]
renumbered 1..N in the order they are first cited, each number listed with what it names.

The answer records what each citation means: source n is `sources[n-1]` (its `ref`), entity n
the n-th id of `entities` (the local context's Entities table), a report is cited by its
community id. `numbered()` (or Renumbering, piece by piece as an answer streams) rewrites the
plain text only (`--json` keeps the model's own numbering, unchanged); a citation the answer
does not resolve is listed as such. `tgr show STORE ID` prints
any listed chunk, entity or report.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_GROUP = re.compile(r"\[(?:Data:\s*)?((?:Sources?|Entities|Reports?)\b[^\[\]]*)\]")
_PART = re.compile(r"(Sources?|Entities|Reports?)\s*[:(]?\s*([^;:()A-Za-z\]]*(?:\([^)]*\))?)")
MAX_CITATION = 300  # the longest citation held back while an answer streams
_ID = re.compile(r"\d+(?:\.\d+)*")  # a source or entity row number, a community id


@dataclass(frozen=True)
class Cited:
    """One cited thing: kind (source, entity, report), its id in the store, and a label."""

    kind: str
    id: str
    label: str
    store: str | None = None


class Renumbering:
    """An answer's citations renumbered 1..N in the order first cited, as its text arrives,
    whole or in streamed pieces (a citation cut between pieces is held back until it closes)."""

    def __init__(self):
        self.order: dict[tuple[str, str], int] = {}
        self._held = ""

    def feed(self, piece: str) -> str:
        """The text to print now: the piece with every complete citation renumbered."""
        text, self._held = self._held + piece, ""
        cut = text.rfind("[")
        if cut != -1 and "]" not in text[cut:] and len(text) - cut < MAX_CITATION:
            text, self._held = text[:cut], text[cut:]
        return _GROUP.sub(self._rewrite, text)

    def end(self) -> str:
        """What was held back, once the text is complete."""
        text, self._held = self._held, ""
        return _GROUP.sub(self._rewrite, text)

    def _rewrite(self, match: re.Match) -> str:
        numbers = [self.order.setdefault((_kind(kind), ref), len(self.order) + 1)
                   for kind, ids in _PART.findall(match.group(1)) for ref in _ID.findall(ids)]
        return f"[{', '.join(str(n) for n in dict.fromkeys(numbers))}]" if numbers else match.group(0)

    def cited(self, answer, conn=None) -> list[Cited]:
        """What each number names, in order; with the store's connection, entities and reports
        are labelled with their names and titles."""
        found = []
        for kind, ref in self.order:
            cited = _resolve(answer, kind, ref) or Cited(kind, ref, f"{kind} {ref}: not in this answer's context")
            found.append(_labelled(cited, conn) if conn is not None else cited)
        return found


def numbered(answer, conn=None) -> tuple[str, list[Cited]]:
    """The answer's text with every citation as [n] (consecutive, first cited first), and what
    each number names (see Renumbering.cited)."""
    renumbering = Renumbering()
    text = renumbering.feed(answer.answer) + renumbering.end()
    return text, renumbering.cited(answer, conn)


def _kind(word: str) -> str:
    word = word.lower()
    return "entity" if word == "entities" else word.rstrip("s")


def _labelled(cited: Cited, conn) -> Cited:
    """An entity as its name and type, a report as its title (as the store has them)."""
    if cited.kind == "entity":
        row = conn.execute("SELECT name, type FROM entities WHERE id = ?", (cited.id,)).fetchone()
        label = f"entity {row[0]} ({row[1]}), id {cited.id}" if row else None
    elif cited.kind == "report":
        row = conn.execute("SELECT title FROM reports WHERE community_id = ?", (cited.id,)).fetchone()
        label = f"report {cited.id}: {row[0]}" if row and row[0] else None
    else:
        label = None
    return Cited(cited.kind, cited.id, label, cited.store) if label else cited


def _resolve(answer, kind: str, ref: str) -> Cited | None:
    """What one citation names in this answer (None: nothing it records)."""
    if kind == "source" and ref.isdigit():
        source = next((s for s in answer.sources if s.get("ref") == int(ref)), None)
        if source is not None:
            return Cited("source", source["chunk_id"], source_label(source), source.get("store"))
    elif kind == "entity" and ref.isdigit() and 0 < int(ref) <= len(answer.entities):
        entity_id = answer.entities[int(ref) - 1]
        return Cited("entity", entity_id, f"entity {entity_id}")
    elif kind == "report" and ref in answer.reports:
        return Cited("report", ref, f"report {ref}")
    return None


def document_name(source: dict) -> str:
    """The store (of several), the file, and the document's own id or the PDF page where a
    passage has one."""
    name = source["source"]
    if source.get("external_id"):
        name += f" id {source['external_id']}"
    if source.get("page"):
        name += f" p. {source['page']}"
    return f"{source['store']}: {name}" if source.get("store") else name


def source_label(source: dict) -> str:
    """The document and the chunk, as `tgr ask` lists a source."""
    return f"{document_name(source)} (chunk {source['ordinal']}, {source['chunk_id']})"


def describe(item: dict) -> list[str]:
    """The lines `tgr show` prints for a cited chunk, report or entity (tgr.query.lookup.cited_item)."""
    if item["kind"] == "chunk":
        title = f" ({item['title']})" if item.get("title") else ""
        return [f"chunk {item['chunk_id']}: {item['source']}{title}, chunk {item['ordinal']}, "
                f"characters {item['char_start']}-{item['char_end']}", "", item["text"]]
    if item["kind"] == "report":
        lines = [f"report {item['id']} (level {item['level']}, {item['size']} entities): {item.get('title') or ''}"]
        lines += [f"rating {item['rating']:g}" + (f": {item['rating_explanation']}" if item.get("rating_explanation")
                                                  else "")] if item.get("rating") is not None else []
        lines += ["", item["summary"]] if item.get("summary") else []
        lines += [f"- {f.get('summary', '')}: {f.get('explanation', '')}" for f in item.get("findings", [])]
        lines += ["", "entities: " + ", ".join(item["entities"])] if item.get("entities") else []
        return lines
    if item["kind"] == "entity":
        lines = [f"entity {item['name']} ({item['type']}), id {item['id']}; "
                 f"{item['mentions']} mentions, degree {item['degree']}"]
        lines += ["aliases: " + ", ".join(item["aliases"])] if item.get("aliases") else []
        lines += ["", item["description"]] if item.get("description") else []
        if item["relationships"]:
            lines += ["", f"relationships ({len(item['relationships'])}):"]
            lines += [f"  {r['source']} -[{r['predicate']}]- {r['target']}: {r['description']} ({r['weight']:g})"
                      for r in item["relationships"]]
        lines += ["", "communities: " + ", ".join(f"{c['id']} {c['title'] or ''}".strip()
                                                 for c in item["communities"])] if item["communities"] else []
        lines += ["sources: " + ", ".join(f"{s['source']} chunk {s['ordinal']} ({s['chunk_id']})"
                                          for s in item["sources"])] if item["sources"] else []
        return lines
    similar = f"; similar entity names: {', '.join(item['similar'])}" if item.get("similar") else ""
    return [f"no chunk, report or entity {item.get('name')!r} in this store{similar}"]
