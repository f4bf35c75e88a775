"""Bounds on what a store (or a model answer) can make tgr do.

A shipped .db is a stranger's file: its meta values choose the embedder's dimension and the
settings, and its text columns feed contexts. Values outside these bounds are refused (meta)
or cut (text) before they are processed. The bounds on JSON (from a store or a model) are
tgr/parsing.py's.
"""
from __future__ import annotations

import re

from ..parsing import loads

MAX_EMBED_DIM = 8192
MAX_META_CHARS = 64 * 1024
# Longest description / chunk text / report taken into a query context, in characters.
MAX_CONTEXT_TEXT = 20_000

_HASH_EMBEDDER = re.compile(r"tgr:hash-(\d+)")


def meta_problems(meta: dict[str, str]) -> list[str]:
    """Why a store's meta values are unsafe to act on; [] when they are fine."""
    problems = []
    for key, value in meta.items():
        if len(str(value)) > MAX_META_CHARS:
            problems.append(f"meta value {key!r} is {len(str(value))} characters long")
    dim = meta.get("embed_dim")
    if dim is not None and not (str(dim).isdigit() and 1 <= int(dim) <= MAX_EMBED_DIM):
        problems.append(f"meta embed_dim {str(dim)[:40]!r} is not a dimension from 1 to {MAX_EMBED_DIM}")
    match = _HASH_EMBEDDER.fullmatch(str(meta.get("embed_model", "")))
    if match and not 1 <= int(match.group(1)[:8]) <= MAX_EMBED_DIM:
        problems.append(f"meta embed_model {match.group(0)[:40]!r} has a dimension outside 1..{MAX_EMBED_DIM}")
    for key, value in meta.items():
        if key.startswith("setting."):
            try:
                loads(str(value), max_chars=MAX_META_CHARS)
            except ValueError:
                problems.append(f"meta {key[:60]!r} is not a small JSON value")
    return problems


def cap(text: str | None, limit: int = MAX_CONTEXT_TEXT) -> str:
    """text cut to limit characters (marked with an ellipsis)."""
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + "…"
