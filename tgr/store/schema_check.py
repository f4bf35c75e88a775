"""Compare a store's schema with the one tgr creates, before anything in it is used.

The expected objects are not a hand-kept list: schema.sql and the vec0 DDL are run into a
scratch in-memory database, and whatever SQLite creates there (tables, indexes, views,
triggers, FTS5 and vec0 shadow tables) is what a store may hold under those names.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from . import db
from .db import SCHEMA_VERSION

# SQLite's own objects a store may legitimately hold.
_INTERNAL_TABLES = {"sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4"}
_USING = re.compile(r"\bUSING\s+(\w+)", re.IGNORECASE)
_PUNCT_SPACE = re.compile(r" ?([(),;=]) ?")


# Immutable records as NamedTuples: a frozen dataclass takes ~0.5 ms to create, on every command.
class Expected(NamedTuple):
    type: str               # table | index | view | trigger
    kind: str               # for tables: 'table' or the virtual table module ('fts5', 'vec0')
    sql: str | None         # for views and triggers: the exact definition


class Finding(NamedTuple):
    fatal: bool             # True: tgr refuses the store
    name: str
    message: str


def normal_sql(sql: str | None) -> str:
    """A definition with layout and case folded, so that formatting never matters."""
    text = " ".join((sql or "").lower().split())
    return _PUNCT_SPACE.sub(r"\1", text)


_normal = normal_sql


def _kind(sql: str | None) -> str:
    if sql and sql.lstrip().upper().startswith("CREATE VIRTUAL TABLE"):
        match = _USING.search(sql)
        return match.group(1).lower() if match else "?"
    return "table"


@lru_cache(maxsize=1)
def expected_objects() -> dict[str, Expected]:
    """name -> what tgr creates under that name (schema.sql + vec0 tables + shadow tables)."""
    conn = db.raw_connection()
    try:
        db.create_schema(conn)
        db.ensure_vec_tables(conn, 8)
        db.ensure_portable_tables(conn, 8)
        return {name: Expected(type, _kind(sql) if type == "table" else type,
                               _normal(sql) if type in ("view", "trigger") else None)
                for type, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master")}
    finally:
        conn.close()


def expected_views() -> list[str]:
    return sorted(name for name, want in expected_objects().items() if want.type == "view")


def inspect(conn) -> list[Finding]:
    """Everything about the store's schema that differs from tgr's, worst first.

    A view of an older schema version may predate tgr's current definition: that is a note
    (migrate() recreates the views), and the statement watchdog bounds whatever it does.
    """
    expected = expected_objects()
    older = conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION
    findings = []
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid").fetchall()
    for type, name, table, sql in rows:
        want = expected.get(name)
        label = f"{type} {name!r}"
        if want is None:
            if type == "trigger":
                findings.append(Finding(True, name, f"unknown trigger {name!r} on {table!r} "
                                                    "(tgr creates no such trigger; it could change the store)"))
            elif name.startswith("sqlite_"):
                if not (name in _INTERNAL_TABLES or name.startswith("sqlite_autoindex_")):
                    findings.append(Finding(True, name, f"unexpected internal object {label}"))
            elif type == "table" and _kind(sql) not in ("table", "fts5", "vec0"):
                findings.append(Finding(True, name, f"virtual table {name!r} uses the foreign module "
                                                    f"{_kind(sql)!r}"))
            else:
                findings.append(Finding(False, name, f"extra {label} (not created by tgr; ignored)"))
            continue
        if type != want.type:
            findings.append(Finding(True, name, f"{label} where tgr expects a {want.type}"))
        elif type == "table" and _kind(sql) != want.kind:
            what = "an ordinary table" if want.kind == "table" else f"a {want.kind} virtual table"
            got = "an ordinary table" if _kind(sql) == "table" else f"a {_kind(sql)} virtual table"
            findings.append(Finding(True, name, f"table {name!r} is {got} where tgr expects {what}"))
        elif want.sql is not None and _normal(sql) != want.sql:
            lenient = older and type == "view"
            findings.append(Finding(not lenient, name, f"{label} differs from tgr's definition"
                                    + (" (older schema; the next index recreates it)" if lenient else "")))
    # worst first; among refusals, one of tgr's own triggers that differs comes last: it is
    # usually the trace of its table having been renamed or replaced, the finding to name
    findings.sort(key=lambda f: (not f.fatal, f.name in expected and expected[f.name].type == "trigger"))
    return findings


def fatal(conn) -> Finding | None:
    """The first reason to refuse this store, or None."""
    for finding in inspect(conn):
        if finding.fatal:
            return finding
    return None
