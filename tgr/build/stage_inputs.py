"""Freshness: one rule for every derived stage.

A stage records a hash of exactly the inputs it was computed from; it is redone when the
hash of its current inputs differs. Whole-stage hashes live in meta as 'fresh.<stage>'
(merge, cluster, reports); per-row hashes live on the rows themselves (input_hash on
entities, embed_hash on chunks, entities and reports, context_hash on reports), so those
stages redo only changed items. Where recomputing a hash would read the whole store, it
is kept up to date when its inputs are written instead: the merge's changed names
(merge_pending, kept by triggers), embed_hash set to NULL by triggers when a row's text changes, and
the merge hash made of the entities' input hashes.
"""
from __future__ import annotations

import hashlib
from typing import Iterable

from ..store.db import Connection, get_meta, set_meta


class InputHash:
    """A running hash over values (settings, prompts, rows), each hashed with its repr."""

    def __init__(self, *values):
        self._hash = hashlib.sha256()
        self.add(*values)

    def add(self, *values) -> "InputHash":
        for value in values:
            self._hash.update(repr(value).encode("utf-8"))
            self._hash.update(b"\x00")
        return self

    def rows(self, rows: Iterable) -> "InputHash":
        """Add every row (a tuple of values), in order."""
        self._hash.update("\x00".join(repr(tuple(row)) for row in rows).encode("utf-8"))
        self._hash.update(b"\x01")
        return self

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def recorded(conn: Connection, stage: str) -> str | None:
    """The input hash the stage's stored output was computed from (None: never run)."""
    return get_meta(conn).get(f"fresh.{stage}")


def is_fresh(conn: Connection, stage: str, digest: str) -> bool:
    return recorded(conn, stage) == digest


def record(conn: Connection, stage: str, digest: str) -> None:
    """Remember what the stage was computed from (inside the transaction that wrote it)."""
    set_meta(conn, **{f"fresh.{stage}": digest})
