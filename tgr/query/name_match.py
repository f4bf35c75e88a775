"""Entity lookups that forgive: recorded aliases, case, accents, `·` and hyphens, traditional
Chinese for simplified, and typos ("Scroge", "Jacob Marly").

Every entity name and alias is folded once into a key (`fold`); a lookup folds the query the
same way and looks the key up, and only then looks for a key within a few edits of it
(rapidfuzz's optimal-string-alignment distance, so a swapped pair of letters is one edit).
The folded index of a connection is cached until the store changes. Store text is untrusted:
names are cut to MAX_NAME_CHARS before any matching, so a huge name costs no more than a long one.

named_entities weighs the entities a question names for local retrieval's walk, and
titled_chunks finds the documents whose title it names.
"""
from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass
from functools import lru_cache

from ..store.db import Connection, has_table
from .query_cache import QueryCache
from .graph_walk import specificity
from ..text import has_cjk, normalise_name, without_accents

MAX_NAME_CHARS = 120
MAX_ALIASES = 200_000       # rows of an alias table read at most (an untrusted store may hold millions)
_SEPARATORS = re.compile(r"[·・•‧∙⋅･\-‐‑‒–—_.,'’‘`]+")
_SPACES = re.compile(r"\s+")
_CJK_SPACE = re.compile(r"(?<=[^\x00-\u2fff]) (?=[^\x00-\u2fff])")


@lru_cache(maxsize=1)
def _t2s():
    """OpenCC's traditional-to-simplified converter (its dictionaries ship in the wheel)."""
    import opencc

    return opencc.OpenCC("t2s")


@lru_cache(maxsize=3)
def _s2(config: str):
    import opencc

    return opencc.OpenCC(config)


def chinese_variants(names: list[str]) -> dict[str, str]:
    """{character: its simplified form} for every traditional or regional variant of a Chinese
    character of names (孫 -> 孙, 後 -> 后): what a page needs to fold a query the way fold()
    folds names, without shipping OpenCC. Characters that are their own simplified form and
    have no other form are left out."""
    chars = sorted({ch for name in names for ch in str(name) if has_cjk(ch)})
    if not chars:
        return {}
    simplified = _t2s().convert("\n".join(chars)).split("\n")
    if len(simplified) != len(chars):
        simplified = [_t2s().convert(ch) for ch in chars]
    # a character the names keep when folded whole stays itself: 乾 of 乾坤 (alone OpenCC makes it 干)
    kept = set(_t2s().convert("\n".join(str(name) for name in names)))
    simplified = [ch if ch in kept else s for ch, s in zip(chars, simplified)]
    variants = {ch: s for ch, s in zip(chars, simplified) if s != ch}
    plain = sorted(set(simplified))
    for config in ("s2t", "s2tw", "s2hk"):
        forms = _s2(config).convert("\n".join(plain)).split("\n")
        for s, form in zip(plain, forms if len(forms) == len(plain) else []):
            if form != s and len(form) == 1:
                variants.setdefault(form, s)
    return variants


def fold(name: str) -> str:
    """The forgiving key of a name: normalised and case-folded, accents removed, `·`, hyphens,
    dots and apostrophes dropped or spaced, traditional Chinese characters made simplified."""
    return fold_many([name])[0]


def fold_many(names: list[str]) -> list[str]:
    """fold() of every name; Chinese names go through OpenCC in one call (a call costs far more
    than its characters)."""
    keys = [_fold_plain(str(name)[:MAX_NAME_CHARS * 2]) for name in names]
    chinese = [k for k, key in enumerate(keys) if has_cjk(key)]
    if chinese:
        joined = _t2s().convert("\n".join(keys[k] for k in chinese)).split("\n")
        converted = joined if len(joined) == len(chinese) else [_t2s().convert(keys[k]) for k in chinese]
        for k, text in zip(chinese, converted):
            keys[k] = text
    return [_tidy(key) for key in keys]


def _fold_plain(text: str) -> str:
    if text.isascii():  # most names: nothing to decompose
        return text.strip().strip("\"'()[]").lower()
    return without_accents(normalise_name(text))


def _tidy(text: str) -> str:
    if text.isascii():
        return " ".join(_SEPARATORS.sub(" ", text).split())[:MAX_NAME_CHARS]
    text = _SEPARATORS.sub(lambda m: "" if _between_cjk(m) else " ", text.replace("\n", " "))
    text = _SPACES.sub(" ", text).strip()
    return _CJK_SPACE.sub("", text)[:MAX_NAME_CHARS]


def _between_cjk(match: re.Match) -> bool:
    text, start, end = match.string, match.start(), match.end()
    return (start > 0 and ord(text[start - 1]) > 0x2FFF) or (end < len(text) and ord(text[end]) > 0x2FFF)


def max_edits(key: str) -> int:
    """Typos forgiven in a folded name of this length: none up to four characters (or two
    Chinese characters), one up to seven, two up to fifteen, three beyond."""
    n = len(key)
    if n <= 4 and not (has_cjk(key) and n > 2):
        return 0
    return 1 if n <= 7 else 2 if n <= 15 else 3


# --- the one reader of entity_aliases (tgr.build.resolve writes it) --------------------------

_ALIAS_COLUMNS = {"entity_id", "alias", "key", "mentions"}


def _has_aliases(conn: Connection) -> bool:
    """Whether the store has an entity_aliases table with the columns migration 6 gives it
    (a store from elsewhere may have a table of that name shaped otherwise)."""
    if not has_table(conn, "entity_aliases"):
        return False
    return _ALIAS_COLUMNS <= {row[1] for row in conn.execute("PRAGMA table_info(entity_aliases)")}


def stored_aliases(conn: Connection) -> list[tuple[str, str]]:
    """(entity id, alias) pairs from the store's entity_aliases table when it has one."""
    if not _has_aliases(conn):
        return []
    return [(str(e), str(a)) for e, a in conn.execute(
        "SELECT entity_id, alias FROM entity_aliases WHERE alias IS NOT NULL AND entity_id IS NOT NULL "
        "ORDER BY entity_id, alias LIMIT ?", (MAX_ALIASES,))]


def alias_entity(conn: Connection, key: str) -> tuple[str, str] | None:
    """(entity id, name) of the entity with the recorded alias key (normalised), the most
    used alias first; None when there is none."""
    if not key or not _has_aliases(conn):
        return None
    row = conn.execute("SELECT a.entity_id, e.name FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
                       "WHERE a.key = ? ORDER BY a.mentions DESC, e.degree DESC, e.id LIMIT 1", (key,)).fetchone()
    return (str(row[0]), str(row[1])) if row else None


def alias_mentions(conn: Connection, keys: list[str]) -> list[tuple[str, int, str]]:
    """(entity id, the entity's mentions, alias key) for each recorded alias with one of keys,
    whose entity's own id is not among keys (that one is found by its name)."""
    if not keys or not _has_aliases(conn):
        return []
    wanted = json.dumps(keys, ensure_ascii=False)
    return [(str(e), int(m or 0), str(k)) for e, m, k in conn.execute(
        "SELECT a.entity_id, e.mentions, a.key FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
        "WHERE a.key IN (SELECT value FROM json_each(?1)) AND a.entity_id NOT IN (SELECT value FROM json_each(?1))",
        (wanted,))]


def _alias_hits(conn: Connection, keys: list[str]) -> list[str]:
    """Ids of entities with a recorded alias whose key (tgr.text.normalise_name) is one of keys
    (through the index on key: no scan of the table per question)."""
    if not _has_aliases(conn):
        return []
    return [str(row[0]) for row in conn.execute(
        "SELECT DISTINCT a.entity_id FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
        "WHERE a.key IN (SELECT value FROM json_each(?))", (json.dumps(keys, ensure_ascii=False),))]


# Latin letters with accents (Latin-1 Supplement to Latin Extended-B, Latin Extended Additional):
# only a name with one of them can fold to a different plain-ASCII spelling
_ACCENTED = "*[À-ɏḀ-ỿ]*"
_NOT_ASCII = "length(CAST({0} AS BLOB)) > length({0})"  # more UTF-8 bytes than characters


def _accented_names(conn: Connection, keys: set[str]) -> list[str]:
    """Ids of entities whose name or recorded alias has accented Latin letters and folds to
    one of keys ("francois truffaut" -> François Truffaut)."""
    folded = QueryCache.of(conn).get("accented names", lambda: _fold_accented(conn))
    return sorted({eid for key in keys for eid in folded.get(key, ())})


def _fold_accented(conn: Connection) -> dict[str, list[str]]:
    """{folded spelling: entity ids} of the names and aliases with accented Latin letters
    (one scan per store version, kept by the connection's QueryCache)."""
    # Only a name with a byte past ASCII is matched against the pattern: the same rows, and a
    # quarter of the time in a big English store (GLOB with a leading * costs ~1 us a name)
    # The names are read from their index (entities_by_name: a tenth of the pages the rows
    # with their descriptions fill, 20 ms instead of 50-180 ms at 100 M characters), then
    # the entities so named
    names = [r[0] for r in conn.execute(f"SELECT name FROM entities WHERE {_NOT_ASCII.format('name')} "
                                        "AND name GLOB ? LIMIT ?", (_ACCENTED, MAX_ALIASES)) if isinstance(r[0], str)]
    rows = conn.execute("SELECT id, name FROM entities WHERE name IN (SELECT value FROM json_each(?)) LIMIT ?",
                        (json.dumps(names, ensure_ascii=False), MAX_ALIASES)).fetchall() if names else []
    if _has_aliases(conn):
        rows += conn.execute(f"SELECT entity_id, alias FROM entity_aliases WHERE {_NOT_ASCII.format('alias')} "
                             "AND alias GLOB ? LIMIT ?", (_ACCENTED, MAX_ALIASES)).fetchall()
    rows = [(str(e), str(n)) for e, n in rows if e is not None and n is not None]
    folded: dict[str, list[str]] = {}
    for (entity_id, _), key in zip(rows, fold_many([n for _, n in rows])):
        folded.setdefault(key, []).append(entity_id)
    return folded


@dataclass(frozen=True)
class Match:
    """An entity found for a query, and how: 'name', 'alias', 'folded' (accents, `·`, case,
    traditional/simplified) or 'typo' (edits = how many)."""

    entity_id: str
    surface: str
    how: str
    edits: int = 0


class NameIndex:
    """Every entity name and alias of a store, folded, for exact and near-miss lookups."""

    def __init__(self, entities: list[tuple[str, str, int]], aliases: list[tuple[str, str]]):
        degree = {eid: deg for eid, _, deg in entities}
        self.names = {eid: name for eid, name, _ in entities}
        surfaces: dict[str, list[tuple[str, str]]] = {}
        pairs = [(eid, name) for eid, name, _ in entities] + [(eid, a) for eid, a in aliases if eid in degree]
        for (eid, surface), key in zip(pairs, fold_many([surface for _, surface in pairs])):
            surfaces.setdefault(key, []).append((eid, surface))
        for key in surfaces:  # the most linked entity first when several share a key
            surfaces[key] = sorted(set(surfaces[key]), key=lambda p: (-degree[p[0]], p[0], p[1]))
        surfaces.pop("", None)
        self.surfaces = surfaces
        self.keys = list(surfaces)
        self.alias_keys: dict[str, str] = {}
        for eid, alias in sorted((p for p in aliases if p[0] in degree), key=lambda p: (-degree[p[0]], p)):
            self.alias_keys.setdefault(normalise_name(alias[:MAX_NAME_CHARS * 2]), eid)
        self.degree = degree
        self.words: dict[str, list[str]] = {}  # word of a folded name -> entities, most linked first
        for key, pairs in surfaces.items():
            for word in set(key.split()):
                self.words.setdefault(word, []).extend(eid for eid, _ in pairs)
        for word, ids in self.words.items():
            self.words[word] = sorted(set(ids), key=lambda e: (-degree[e], e))
        self.aliases: dict[str, list[str]] = {}
        for eid, alias in aliases:
            if eid in degree and alias != self.names[eid] and alias not in self.aliases.get(eid, []):
                self.aliases.setdefault(eid, []).append(alias)

    def aliases_of(self, entity_id: str) -> list[str]:
        """The recorded aliases of an entity (not its name), as stored."""
        return list(self.aliases.get(entity_id, []))

    def exact(self, name: str) -> Match | None:
        """The entity whose alias or folded name equals name's, or None."""
        alias = self.alias_keys.get(normalise_name(str(name)[:MAX_NAME_CHARS * 2]))
        if alias is not None:
            return Match(alias, self.names[alias], "alias")
        found = self.surfaces.get(fold(name))
        return Match(found[0][0], found[0][1], "folded") if found else None

    def near(self, name: str, limit: int = 1) -> list[Match]:
        """Entities whose folded name or alias is within max_edits of name's, fewest edits first
        (then the most linked)."""
        return self._near_key(fold(name), limit)

    def _near_key(self, key: str, limit: int) -> list[Match]:
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        edits = max_edits(key)
        if edits == 0:
            return []
        hits = process.extract(key, self.keys, scorer=OSA.distance, score_cutoff=edits, limit=max(10, limit * 4))
        found: dict[str, Match] = {}
        for surface_key, distance, _ in sorted(
                hits, key=lambda h: (h[1], -self.degree[self.surfaces[h[0]][0][0]], h[0])):
            for eid, surface in self.surfaces[surface_key]:
                found.setdefault(eid, Match(eid, surface, "typo", int(distance)))
        return list(found.values())[:limit]

    def similar(self, name: str, limit: int = 10) -> list[str]:
        """Names of entities that resemble name: a few typos away, sharing one of its words,
        or a few typos away from one of its longer words; the most linked first within each."""
        key = fold(name)
        if not key:
            return []
        found = [m.entity_id for m in self._near_key(key, limit)]
        for word in key.split()[:12]:
            if len(word) > 2:
                found += self.words.get(word, [])[:limit]
            if len(word) >= 5:
                found += [m.entity_id for m in self._near_key(word, limit)]
        names: list[str] = []
        for eid in found:
            if self.names[eid] not in names:
                names.append(self.names[eid])
        return names[:limit]


_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def name_index(conn: Connection) -> NameIndex:
    """The NameIndex of the store behind conn, rebuilt only when the store has changed
    (SQLite's data_version for other connections' commits, total_changes for this one's)."""
    stamp = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
    cached = _cache.get(conn)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    entities = [(str(eid), str(name), int(deg or 0)) for eid, name, deg in conn.execute(
        "SELECT id, name, degree FROM entities WHERE name IS NOT NULL ORDER BY id")]
    index = NameIndex(entities, stored_aliases(conn))
    _cache[conn] = (stamp, index)
    return index


def resolve(conn: Connection, name: str) -> Match | None:
    """The entity name most likely means: its exact id, a recorded alias, the same folded name,
    or else the nearest name within a few typos; None when nothing is close."""
    index = name_index(conn)
    exact = index.exact(name)
    if exact is not None:
        return exact
    near = index.near(name, limit=1)
    return near[0] if near else None


def entities_named(conn: Connection, spans: dict[str, bool]) -> dict[str, bool]:
    """For question seeding: entity ids (flagged cased) that capitalised spans name by a
    recorded alias or by their folded spelling: traditional characters, `·` or accents in
    the question ("孫悟空"), or accents the question leaves out ("Francois Truffaut" for
    François Truffaut). Cheap: indexed lookups and the accented names folded once per
    connection, no name index built. No typo matching here: a question's words are not all names."""
    cased = [key[:MAX_NAME_CHARS * 2] for key, is_cased in spans.items() if is_cased]
    if not cased:
        return {}
    wide = [key for key in cased if not key.isascii()]
    variants = {v for key, folded in zip(wide, fold_many(wide))
                for v in (folded, folded.replace(" ", "")) if v != key}
    found = {row[0]: True for row in conn.execute(
        "SELECT id FROM entities WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(variants), ensure_ascii=False),))}
    for entity_id in _alias_hits(conn, sorted(set(cased) | variants)):
        found[entity_id] = True
    plain = {fold(key) for key in cased if key.isascii() and any(c.isalpha() for c in key)}
    for entity_id in _accented_names(conn, plain) if plain else []:
        found[entity_id] = True
    return {eid: flag for eid, flag in found.items() if eid not in spans}


def titled_chunks(conn: Connection, spans: list[tuple[str, bool]]) -> dict[str, float]:
    """Chunks of documents whose title the question names, or names but for the title's
    parenthesised qualifier ("William Copley" for "William Copley (politician)")."""
    titles = sorted({text.casefold() for text, _ in spans if len(text) > 1})
    if not titles:
        return {}
    rows = conn.execute(
        "SELECT c.id FROM documents d JOIN chunks c ON c.document_id = d.id "
        "WHERE d.title COLLATE NOCASE IN (SELECT value FROM json_each(?)) AND d.title != ''",
        (json.dumps(titles, ensure_ascii=False),)).fetchall()
    for title in titles:  # a range on the title index: "<title> (" up to "<title> )"
        rows += conn.execute(
            "SELECT c.id FROM documents d JOIN chunks c ON c.document_id = d.id "
            "WHERE d.title COLLATE NOCASE >= ?1 || ' (' AND d.title COLLATE NOCASE < ?1 || ' )'",
            (title,)).fetchall()
    return {cid: 1.0 for (cid,) in rows}


def named_entities(conn: Connection, spans: list[tuple[str, bool]], total: int) -> dict[str, float]:
    """Entities the question names, weighted by specificity (rare names weigh more).

    A single lower-case word of the question that only matches a capitalised entity
    ("which country" / "Country") weighs little: it is a common word, not a name."""
    if not spans:
        return {}
    surface = {}
    for text, cased in spans:
        key = normalise_name(text)
        surface[key] = surface.get(key, False) or cased
    # a capitalised span that is no entity's name may be one's alias or spelling variant
    surface.update(entities_named(conn, surface))
    keys = json.dumps(sorted(surface), ensure_ascii=False)
    rows = conn.execute(
        "SELECT id, mentions, id FROM entities WHERE id IN (SELECT value FROM json_each(?))", (keys,)).fetchall()
    rows += alias_mentions(conn, sorted(surface))  # "Mr. Scrooge", "U.S.": an entity's other names
    weights = {}
    for eid, mentions, key in rows:
        weight = specificity(mentions, total)
        if not surface[key]:
            weight *= 0.1
        weights[eid] = max(weights.get(eid, 0.0), weight)
    # a name inside a longer matched name ("york" in "new york") is not named on its own
    for eid in list(weights):
        if any(other != eid and _contains_words(other, eid) for other in weights):
            weights[eid] *= 0.2
    return weights


def _contains_words(longer: str, shorter: str) -> bool:
    return len(longer) > len(shorter) and f" {shorter} " in f" {longer} "
