"""Entity resolution: which extracted names are one thing, decided before the merge.

Every extraction row carries the key of the entity it merges into (extracted_entities.key,
extracted_relations.source_key/target_key). The key is decided in two steps:

1. By the name alone (name_key): the normalised name with a leading "the", a possessive, a
   man's or an office's title ("Mr.", "Master", "Captain", "President") and a doubled word
   ("Scrooge Scrooge") removed; known short forms of countries ("U.S.", "USA", "UK") become
   the country's name; "·" and its look-alikes are one character.
2. Within one document (document_keys), from the names that document uses:
   - a surname alone joins the one full name in the document that ends with it
     ("Scrooge" -> "Ebenezer Scrooge") when one of the two is typed a person there; when two full names end with it ("Bob Cratchit",
     "Peter Cratchit") it stays itself. A name with a woman's title ("Mrs. Cratchit",
     "Miss Havisham") is a person of her own and is never merged with another;
   - a given name alone joins the one person's full name of the document that begins with
     it and no full name ends with it ("Jacob" -> "Jacob Marley");
   - an epithet joins its bearer ("Scrooge the Baleful", "Old Marley" -> "Marley") when
     the document also names the bearer alone;
   - a name typed as a place or organisation in the document never joins a person's
     name ("Washington" the state beside "George Washington");
   - a Chinese short form joins the one longer name that keeps its first and last
     characters in order (香港特区 -> 香港特别行政区);
   - a Chinese titled name joins the one longer name that ends with it (菩提祖师 ->
     须菩提祖师), and a title alone ("祖师道") the one titled name of the document that
     ends with it; a title alone that fits no name or several is no entity;
   - a Chinese given name joins the one person's name of the document that is a common
     surname and it (悟空 -> 孙悟空; 和尚 stays itself beside 老和尚);
   - a title before a lone word is kept ("master peter") unless the document also names
     that word without it ("Master Scrooge" beside "Scrooge" is "scrooge"): across
     documents a bare "Peter" may be another man.
   A dictionary's person word that the document uses as a common noun or a verb (和尚, 言语:
   tgr.build.zh_common_nouns) is no entity there.
3. Across documents: a single word that every document resolving it resolves to the same
   full name joins that name in the other documents too (one book in two files), unless a
   document types it a place or an organisation; when documents disagree it stays itself.

assign_keys recomputes every row's key before each merge and marks the rows whose key
changed, so after any add or delete the keys (and the store) equal a fresh build's.
Every surface form of an entity is recorded in entity_aliases (see write_aliases).
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

from ..store.db import Connection, Rows, in_pages, transaction
from ..offline.entity_types import census_first_names
from ..offline.name_words import CHINESE_FUNCTION_WORDS, CHINESE_TITLES, chinese_given_name, chinese_short_forms
from ..text import NAME_CONNECTORS, name_key, normalise_name
from .zh_common_nouns import chinese_common_nouns

# a woman's title: "Mrs. Cratchit" is not "Bob Cratchit" nor "Cratchit"
_OWN_TITLES = frozenset("mrs mrs. miss ms ms. madam madame lady dame".split())
_EPITHETS = frozenset("old young little poor dear good uncle aunt".split())
_PLACE_OR_BODY = frozenset({"location", "organization", "country"})
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def document_keys(names: dict[str, Counter]) -> dict[str, str]:
    """name -> key for the names of one document (names: name -> Counter of its types)."""
    keys = {name: name_key(name) for name in names}
    types: dict[str, Counter] = defaultdict(Counter)
    for name, counter in names.items():
        types[keys[name]].update(counter)
    joined = _surnames(types) | _epithets(types) | chinese_short_forms(types, min_length=3) | _chinese_titles(types) \
        | _chinese_given_names(types)
    final = {name: _final(joined, key) for name, key in keys.items() if key}
    final.update([(name, "") for name, key in final.items() if key in CHINESE_TITLES])  # no entity: whose title?
    return _titles_kept(final, names)


def _chinese_titles(types: dict[str, Counter]) -> dict[str, str]:
    """菩提祖师 -> 须菩提祖师 (the one longer name ending with it), 祖师 -> 须菩提祖师 (the one
    titled name ending with the title, once its short forms have joined it)."""
    titled = [k for k in types if _CJK.fullmatch(k) and k not in CHINESE_TITLES and k.endswith(tuple(CHINESE_TITLES))]
    joined = {}
    for short in titled:
        longer = [k for k in titled if len(k) > len(short) and k.endswith(short)]
        if len(longer) == 1:
            joined[short] = longer[0]
    for title in CHINESE_TITLES.intersection(types):
        bearers = {joined.get(k, k) for k in titled if k.endswith(title)}
        if len(bearers) == 1:
            joined[title] = bearers.pop()
    return joined


def _chinese_given_names(types: dict[str, Counter]) -> dict[str, str]:
    """悟空 -> 孙悟空: two characters, and the one three-character person of the document that
    is a surname and them. Not a place's or a body's name, nor a title (长老 of 唐长老)."""
    full: dict[str, list[str]] = defaultdict(list)
    for key in types:
        given = chinese_given_name(key)
        if given and _CJK.fullmatch(key) and _kind(types[key]) == "person":
            full[given].append(key)
    return {given: longs[0] for given, longs in full.items()
            if len(longs) == 1 and given in types and given not in CHINESE_TITLES
            and given not in CHINESE_FUNCTION_WORDS and _kind(types[given]) not in _PLACE_OR_BODY}


def _titles_kept(final: dict[str, str], names: dict[str, Counter]) -> dict[str, str]:
    """A title before a lone word ("Master Peter") is dropped only when the document also
    names that one without it: in another document "Peter" may be someone else."""
    by_key: dict[str, list[str]] = defaultdict(list)
    for name, key in final.items():
        if key:
            by_key[key].append(name)
    for key, group in by_key.items():
        if " " in key or _CJK.search(key):
            continue
        titled = {name: name_key(name, titles=False) for name in group}
        if all(titled[name] != name_key(name) for name in group):  # every form of it has a title
            chosen = min(group, key=lambda n: (-sum(names[n].values()), n))
            for name in group:
                final[name] = titled[chosen]
    return final


def _kind(counter: Counter) -> str:
    """The type most mentions give, other than "concept" (ties: the first by name); "concept"
    when there is no other."""
    best = None
    for kind, count in counter.items():  # a loop, not a Counter per name: every merge asks for thousands
        if kind != "concept" and (best is None or (-count, kind) < best):
            best = (-count, kind)
    return "concept" if best is None else best[1]


def _latin_words(key: str) -> list[str] | None:
    words = key.split()
    if not words or _CJK.search(key) or any(w in NAME_CONNECTORS for w in words):
        return None
    return words


def _surnames(types: dict[str, Counter]) -> dict[str, str]:
    """"scrooge" -> "ebenezer scrooge": a single word and the one full name ending with it."""
    full: dict[str, list[str]] = defaultdict(list)
    joined = {}
    for key in types:
        words = _latin_words(key)
        if words and len(words) == 2 and words[0] in _EPITHETS and words[1] in types:
            joined[key] = words[1]  # "old marley" is "marley", not a full name
        elif words and 1 < len(words) <= 4:  # "mrs. cratchit" too: it makes "cratchit" ambiguous
            full[words[-1]].append(key)
    joined.update(_given_names(types, full))
    for short, longs in full.items():
        if short not in types or len(longs) != 1:
            continue
        long = longs[0]
        if long.split()[0] in _OWN_TITLES:
            continue
        kinds = {_kind(types[short]), _kind(types[long])}
        if long.split()[0] in census_first_names() and len(long.split()) == 2 and "concept" in kinds:
            kinds.add("person")  # "Jacob Marley": a census first name and a family name
        if "person" not in kinds:
            continue  # "Christmas" is not "Merry Christmas": only people go by a surname
        if kinds & _PLACE_OR_BODY:
            continue  # "Washington" the state, "George Washington" the man
        joined[short] = long
    return joined


def _given_names(types: dict[str, Counter], full: dict[str, list[str]]) -> dict[str, str]:
    """"jacob" -> "jacob marley": a single word that begins exactly one person's full name of
    the document, and ends none ("tim" of "tiny tim" and "tim cratchit" stays itself)."""
    firsts: dict[str, list[str]] = defaultdict(list)
    for longs in full.values():
        for long in longs:
            firsts[long.split()[0]].append(long)
    joined = {}
    for short, longs in firsts.items():
        if short in types and len(longs) == 1 and short not in full and short not in _OWN_TITLES \
                and _kind(types[short]) not in _PLACE_OR_BODY | {"work", "event"} \
                and (_kind(types[longs[0]]) == "person" or short in census_first_names()):
            joined[short] = longs[0]
    return joined


def _epithets(types: dict[str, Counter]) -> dict[str, str]:
    """"scrooge the baleful" -> "scrooge" when the document names "scrooge" alone."""
    joined = {}
    for key in types:
        words = key.split()
        if len(words) == 3 and words[1] == "the" and words[0] in types and not _CJK.search(key) \
                and _kind(types[words[0]]) not in _PLACE_OR_BODY:
            joined[key] = words[0]
    return joined


def _final(joined: dict[str, str], key: str) -> str:
    seen = set()
    while key in joined and key not in seen:
        seen.add(key)
        key = joined[key]
    return key


# what resolved_names was computed by: a store whose meta 'resolved_names' differs resolves every
# document again (raise RULES when a rule or a word list changes what a document's names resolve to)
RULES = "resolve 1"
_IN = "IN (SELECT value FROM json_each(?))"


def _rules() -> str:
    from ..version import __version__

    return f"{RULES}; tgr {__version__}"


def assign_keys(conn: Connection, ahead: "KeysAhead | None" = None) -> None:
    """Give every extraction row the key of its entity (module docstring); rows whose key
    changes, and the keys they leave and join, are marked for the merge (merge_pending).
    ahead: the per-document work done while the extraction answers were awaited (the same
    keys; only what it computed from exactly these rows and texts is taken).

    Each document's own answers (its names' keys before the step across documents, which of
    them are no entity, which it types a place or a body) are kept in resolved_names. Only
    the documents in resolve_pending (their rows, chunks or title changed) are resolved again;
    across documents only the single words they join (or joined) are looked at again, and the
    rows of other documents whose key that changes. The keys are those of resolving every
    document afresh, which a store without meta 'resolved_names' (or of other rules) does."""
    recorded = conn.execute("SELECT value FROM meta WHERE key = 'resolved_names'").fetchone()
    everything = recorded is None or recorded[0] != _rules()
    if everything:
        scope, args, pending = "", (), set()
    else:
        pending = {r[0] for r in conn.execute("SELECT document_id FROM resolve_pending")}
        if not pending:
            return  # no document's inputs changed: every key is as resolved
        scope, args = f" WHERE c.document_id {_IN}", (json.dumps(sorted(pending), ensure_ascii=False),)
    rows = Rows(conn, "SELECT e.rowid, c.document_id, e.name, e.type, e.key FROM extracted_entities e "
                      "JOIN chunks c ON c.id = e.chunk_id" + scope, args)
    relations = Rows(conn, "SELECT r.rowid, c.document_id, r.source, r.target, r.source_key, r.target_key, "
                           "r.strength FROM extracted_relations r JOIN chunks c ON c.id = r.chunk_id" + scope, args)
    if pending:  # a few documents' rows, held, in the whole-store query's order (a scan by rowid), on
        rows, relations = sorted(rows), sorted(relations)  # which the first of tied types depends
    names = _names_by_document((document, name, kind) for _, document, name, kind, _ in rows)
    state = _document_state(conn, names, relations, ahead or KeysAhead(conn))

    was, agreed = _agreed(conn, state, None if everything else pending)
    keys = {(document, name): _row_key(name, key, no_entity, place, agreed)
            for document, found in state.items() for name, (key, _, no_entity, place) in found.items()}
    moved: dict[tuple[str, str], str] = {}  # (document, name) of other documents -> its new key
    if was is not None:
        moved, more_rows, more_relations = _moved(conn, pending, was, agreed)
        rows, relations = rows + more_rows, relations + more_relations

    def key(document: str, name: str, old: str | None) -> str:
        if not everything and document not in pending:  # another document's row: only the names moved change
            return moved.get((document, name), old)
        known = keys.get((document, name))
        return known if known is not None else name_key(name)

    with transaction(conn):
        _write_keys(conn, rows, relations, key)
        if everything:
            conn.execute("DELETE FROM resolved_names")
        else:
            conn.execute(f"DELETE FROM resolved_names WHERE document_id {_IN}", args)
        conn.executemany(
            "INSERT INTO resolved_names(document_id, name, key, joins, no_entity, place) VALUES (?, ?, ?, ?, ?, ?)",
            [(document, name, key, joins, int(no_entity), int(place)) for document, found in sorted(state.items())
             for name, (key, joins, no_entity, place) in sorted(found.items())])
        conn.execute("DELETE FROM resolve_pending")
        conn.execute("INSERT INTO meta(key, value) VALUES ('resolved_names', ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (_rules(),))


def forget_resolutions(conn: Connection) -> None:
    """Have the next assign_keys resolve every document afresh (resolved_names is not trusted)."""
    with transaction(conn):
        conn.execute("DELETE FROM meta WHERE key = 'resolved_names'")


def _agreed(conn: Connection, state: dict[str, dict[str, tuple]], pending: set[str] | None):
    """(single word -> the full name it joins across documents before these documents'
    answers replace their stored ones, and after): a word joins when every document that
    joins it joins the same full name. pending: the documents resolved again (None: every
    document, and nothing before). Only the words these documents join (or joined) and the
    keys they give are looked up."""
    ours = [(d, joins, key) for d, found in state.items() for _, (key, joins, _, _) in found.items()]
    if pending is None:
        return None, _joined(_targets(ours))
    wanted = (json.dumps(sorted(pending), ensure_ascii=False),)
    old = conn.execute(f"SELECT document_id, name, key, joins FROM resolved_names WHERE document_id {_IN}",
                       wanted).fetchall()
    words = {j for _, j, _ in ours if j} | {k for _, _, k in ours if k} | {j for _, _, _, j in old if j}
    others = [(d, j, k) for d, j, k in conn.execute(
        f"SELECT document_id, joins, key FROM resolved_names WHERE joins {_IN}",
        (json.dumps(sorted(words), ensure_ascii=False),)) if d not in pending]
    return _joined(_targets(others + [(d, j, k) for d, _, k, j in old])), _joined(_targets(others + ours))


def _joined(targets: dict[str, set[str]]) -> dict[str, str]:
    return {short: next(iter(keys)) for short, keys in targets.items() if len(keys) == 1}


def _moved(conn: Connection, pending: set[str], was: dict[str, str], agreed: dict[str, str]):
    """The names of other documents whose key moves with the words joined across documents
    ((document, name) -> new key), and their rows (entity rows, relation rows), found by the
    keys they hold."""
    words = sorted(s for s in set(was) | set(agreed) if was.get(s) != agreed.get(s))
    moved, old_keys = {}, set()
    for document, name, key, no_entity, place in conn.execute(
            f"SELECT document_id, name, key, no_entity, place FROM resolved_names WHERE key {_IN}",
            (json.dumps(words, ensure_ascii=False),)):
        if document in pending:
            continue
        then, now = (_row_key(name, key, no_entity, place, w) for w in (was, agreed))
        if then != now:
            moved[(document, name)] = now
            old_keys.add(then)
    if not moved:
        return moved, [], []
    wanted = (json.dumps(sorted(old_keys), ensure_ascii=False),)
    rows = conn.execute("SELECT e.rowid, c.document_id, e.name, e.type, e.key FROM extracted_entities e "
                        f"JOIN chunks c ON c.id = e.chunk_id WHERE e.key {_IN}", wanted).fetchall()
    relations = conn.execute(
        "SELECT r.rowid, c.document_id, r.source, r.target, r.source_key, r.target_key, r.strength "
        f"FROM extracted_relations r JOIN chunks c ON c.id = r.chunk_id "
        f"WHERE r.source_key {_IN} OR r.target_key {_IN}", wanted * 2).fetchall()
    return moved, rows, relations


def _write_keys(conn: Connection, rows: list, relations: list, key) -> None:
    """Store the rows' keys that changed (key(document, name, old key)) and mark the keys they
    leave and join for the merge (inside the caller's transaction)."""
    entity_updates, relation_updates, touched, seen = [], [], set(), set()
    for rowid, document, name, _, old in rows:
        new = key(document, name, old)
        if new != old and rowid not in seen:
            seen.add(rowid)
            entity_updates.append((new, rowid))
            touched.update(k for k in (old, new) if k)
    seen.clear()
    for rowid, document, source, target, old_source, old_target, _ in relations:
        new_source, new_target = key(document, source, old_source), key(document, target, old_target)
        if (new_source, new_target) != (old_source, old_target) and rowid not in seen:
            seen.add(rowid)
            relation_updates.append((new_source, new_target, rowid))
            touched.update(k for k in (old_source, old_target, new_source, new_target) if k)
    conn.executemany("UPDATE extracted_entities SET key = ? WHERE rowid = ?", entity_updates)
    conn.executemany("UPDATE extracted_relations SET source_key = ?, target_key = ? WHERE rowid = ?",
                     relation_updates)
    conn.executemany("INSERT OR IGNORE INTO merge_pending(name) VALUES (?)", [(k,) for k in sorted(touched)])


def _document_state(conn: Connection, names: dict[str, dict[str, Counter]], relations: list,
                    ahead: "KeysAhead") -> dict[str, dict[str, tuple]]:
    """document -> name -> (its key by the document's own names or None, the single word it
    joins across documents or None, no entity?, typed a place or a body?): what a document
    alone decides (resolved_names), for the names its entity rows give."""
    own = {document: ahead.document_keys(document, found) for document, found in names.items()}
    # names that share a sentence with another (the offline extractor's links across sentences are weaker)
    related = {(document, name) for _, document, source, target, _, _, strength in relations if strength >= 1
               for name in (source, target)}
    blank: dict[str, set[str]] = defaultdict(set)
    for document, words in common_words(conn, names, related, ahead.lower_words).items():
        blank[document] |= words  # no entity: a row without a key is merged into none
    for document, words in chinese_common_nouns(conn, names).items():
        blank[document] |= words  # 和尚, 言语: a dictionary's "name" the text uses as a noun
    for document, found in names.items():
        blank[document] |= CHINESE_FUNCTION_WORDS.intersection(found)  # "闻言", "二人": no name
    state: dict[str, dict[str, tuple]] = {}
    for document, found in names.items():
        keys, none = own[document], blank.get(document, set())
        state[document] = {name: (keys.get(name), _joins(name, keys.get(name)), name in none,
                                  _kind(found[name]) in _PLACE_OR_BODY)
                           for name in found if name in keys or name in none}
    return state


def _joins(name: str, key: str | None) -> str | None:
    """The single word a document's name makes its key across documents ("scrooge" of
    "Scrooge" resolved to "ebenezer scrooge"), or None."""
    if key is None:
        return None
    short = name_key(name)
    if key != short and name_key(key) != short and " " not in short and not _CJK.search(short):
        return short
    return None


def _targets(rows) -> dict[str, set[str]]:
    """single word -> the keys documents join it to, from (document, joins, key) rows."""
    targets: dict[str, set[str]] = defaultdict(set)
    for _, joins, key in rows:
        if joins:
            targets[joins].add(key)
    return targets


def _row_key(name: str, key: str | None, no_entity: bool, place: bool, agreed: dict[str, str]) -> str:
    """A name's key in its document: none for no entity, the full name a single word joins
    across documents (not for a place or body), else the document's own key."""
    if no_entity:
        return ""
    if key is None:
        return name_key(name)
    return agreed[key] if key in agreed and not place else key


_CAPITALISED_WORD = re.compile(r"[A-Z][a-z]{2,}")
_LOWER_WORD = re.compile(r"(?<![\w'’-])[a-z]{3,}(?![\w-])")
_PARENTHESISED = re.compile(r"\s*[(（][^()（）]*[)）]")


def common_words(conn: Connection, names: dict[str, dict[str, Counter]],
                 related: set[tuple[str, str]], known: dict[str, set[str]] | None = None) -> dict[str, set[str]]:
    """document -> the names it gives that are only a common word capitalised, a sentence's
    first word or a personification ("the Poor", "Gain", "Doom", "the Porch"): a single word
    no mention types, that the same document also writes in lower case, or that is an English
    word no dictionary capitalises (tgr.offline.entity_types.common_words) and stands in no sentence
    with another name of the document (related: (document, name) of its relationship rows).
    A place the gazetteer knows, a census first name and the document's own title ("Gain
    (album)") stay names. known: document -> its lower-case words (lower_words), where
    already read."""
    from ..offline.entity_types import common_words as dictionary, place_kind

    candidates = {document: found for document, found in
                  ((d, _candidates(found)) for d, found in names.items()) if found}
    if not candidates:
        return {}
    wanted = json.dumps(sorted(candidates))
    titles = {d: _PARENTHESISED.sub("", t or "").strip().lower() for d, t in conn.execute(
        "SELECT id, title FROM documents WHERE id IN (SELECT value FROM json_each(?))", (wanted,))}
    known = dict(known or {})
    known.update(lower_words(conn, [d for d in candidates if d not in known]))
    found = {}
    for document, words in candidates.items():
        lower = known[document]
        common = {n for n in words if (n.lower() in lower or n.lower() in dictionary() and (document, n) not in related)
                  and n.lower() != titles.get(document) and not place_kind(n)}
        if common:
            found[document] = common
    return found


def _candidates(found: dict[str, Counter]) -> set[str]:
    """The names of one document that common_words looks at: a capitalised word no mention types."""
    return {n for n, kinds in found.items() if _CAPITALISED_WORD.fullmatch(n)
            and _kind(kinds) == "concept" and n.lower() not in census_first_names()}


def lower_words(conn: Connection, documents: list[str], chunks: tuple[int, int] | None = None) -> dict[str, set[str]]:
    """document -> the words its text writes in lower case (_LOWER_WORD); chunks: only the
    chunks with ordinal in [start, end). A chunk ends at no word: the words of a whole text
    are those of its chunks together."""
    if not documents:
        return {}
    between = "" if chunks is None else " AND ordinal >= ? AND ordinal < ?"
    words: dict[str, set[str]] = {document: set() for document in documents}
    rows = conn.execute("SELECT document_id, text FROM chunks WHERE document_id IN "
                        f"(SELECT value FROM json_each(?)){between} ORDER BY document_id, ordinal",
                        (json.dumps(sorted(documents)), *(chunks or ())))
    # a chunk at a time (a whole document's words listed at once held ~10 strings per 100 characters)
    for document, text in in_pages(rows, 256):
        words[document].update(_LOWER_WORD.findall(text))
    return words


def _names_by_document(rows) -> dict[str, dict[str, Counter]]:
    """document -> name -> Counter of the types its mentions give, from (document, name, type) rows."""
    names: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for document, name, kind in rows:
        names[document][name][kind] += 1
    return names


def _same(a: dict[str, Counter], b: dict[str, Counter]) -> bool:
    """The same names with the same types, in the same order."""
    return len(a) == len(b) and all(x == y and list(ca.items()) == list(cb.items())
                                    for (x, ca), (y, cb) in zip(a.items(), b.items()))


class KeysAhead:
    """assign_keys' per-document work, done as an idle step while extraction answers are
    awaited (tgr.build.idle_work): each stored document's own keys (document_keys) and its
    lower-case words (for common_words). A document's keys are taken only if its rows are
    exactly the ones they were computed from; its words depend on its text alone, which no
    stage after ingestion changes."""

    CHUNKS_PER_STEP = 64

    def __init__(self, conn: Connection):
        self.conn = conn
        self.lower_words: dict[str, set[str]] = {}  # only documents whose every chunk was read
        self._partial: dict[str, set[str]] = {}
        self._keys: dict[str, tuple[dict[str, Counter], dict[str, str]]] = {}
        self._pending: list | None = None

    def document_keys(self, document: str, names: dict[str, Counter]) -> dict[str, str]:
        """document_keys(names) of the document (a copy: assign_keys changes it)."""
        early = self._keys.get(document)
        if early is not None and _same(early[0], names):
            return dict(early[1])
        return document_keys(names)

    def step(self) -> bool:
        """One piece of the work (an idle step: False when there is none left)."""
        if self._pending is None:
            recorded = self.conn.execute("SELECT value FROM meta WHERE key = 'resolved_names'").fetchone()
            scope = "" if recorded is None or recorded[0] != _rules() else \
                " WHERE c.document_id IN (SELECT document_id FROM resolve_pending)"  # the only ones assign_keys asks for
            names = _names_by_document(self.conn.execute(
                "SELECT c.document_id, e.name, e.type FROM extracted_entities e JOIN chunks c ON c.id = e.chunk_id"
                + scope))
            last = dict(self.conn.execute("SELECT document_id, max(ordinal) FROM chunks GROUP BY document_id"))
            self._pending = [("keys", d, found) for d, found in sorted(names.items())]
            for document, found in sorted(names.items()):
                if _candidates(found):  # only these documents' words are read (common_words)
                    self._partial[document] = set()
                    starts = range(0, last.get(document, -1) + 1, self.CHUNKS_PER_STEP)
                    self._pending += [("words", document, (start, start + self.CHUNKS_PER_STEP)) for start in starts]
                    self._pending.append(("done", document, None))
            self._pending.reverse()
            return bool(self._pending)
        if self._pending:
            what, document, arg = self._pending.pop()
            if what == "keys":
                self._keys[document] = (arg, document_keys(arg))
            elif what == "words":
                self._partial[document] |= lower_words(self.conn, [document], arg)[document]
            else:  # every chunk read: the document's words are complete
                self.lower_words[document] = self._partial.pop(document)
        return bool(self._pending)


def write_aliases(conn: Connection, aliases: dict[str, Counter], removed: set[str] | list[str]) -> None:
    """Store each entity's surface forms (aliases: entity id -> Counter of names) in place of
    what was stored for those entities; removed: entities whose aliases go (inside the
    caller's transaction)."""
    gone = sorted(set(removed) | set(aliases))
    if gone:
        conn.execute("DELETE FROM entity_aliases WHERE entity_id IN (SELECT value FROM json_each(?))",
                     (json.dumps(gone, ensure_ascii=False),))
    conn.executemany(
        "INSERT INTO entity_aliases(entity_id, alias, key, mentions) VALUES (?, ?, ?, ?)",
        [(entity_id, alias, normalise_name(alias), count) for entity_id, names in sorted(aliases.items())
         for alias, count in sorted(names.items())])
