"""Values computed from a store, kept per connection until the store changes."""
from __future__ import annotations

import weakref
from typing import Any, Callable

# connection -> (store version, {key: value})
_entries: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def cached(conn, key: Any, build: Callable[[], Any]) -> Any:
    """build()'s value for this connection and key, computed again once the store has changed
    (data_version moves when another connection commits, total_changes when this one writes)."""
    version = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
    entry = _entries.get(conn)
    if entry is None or entry[0] != version:
        entry = (version, {})
        _entries[conn] = entry
    values = entry[1]
    if key not in values:
        values[key] = build()
    return values[key]
