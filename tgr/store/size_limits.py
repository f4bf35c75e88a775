"""Bounds on what a store (or a model answer) can make tgr do.

A shipped .db is a stranger's file: its meta values choose the embedder's dimension and the
settings, and its text columns feed contexts. Values outside these bounds are refused (meta)
or cut (text) before they are processed.
"""
from __future__ import annotations

import json
import re

MAX_EMBED_DIM = 8192
MAX_META_CHARS = 64 * 1024
MAX_JSON_DEPTH = 32
MAX_MODEL_JSON_CHARS = 1_000_000
# Longest description / chunk text / report taken into a query context, in characters.
MAX_CONTEXT_TEXT = 20_000

_HASH_EMBEDDER = re.compile(r"tgr:hash-(\d+)")


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


def loads(text: str, *, max_chars: int = MAX_META_CHARS, max_depth: int = MAX_JSON_DEPTH):
    """json.loads that refuses (ValueError) text too large or nested too deep to parse safely."""
    if too_deep_or_large(text, max_chars, max_depth):
        raise ValueError(f"JSON too large or nested deeper than {max_depth} levels")
    return json.loads(text)


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
                loads(str(value))
            except ValueError:
                problems.append(f"meta {key[:60]!r} is not a small JSON value")
    return problems


def cap(text: str | None, limit: int = MAX_CONTEXT_TEXT) -> str:
    """text cut to limit characters (marked with an ellipsis)."""
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + "…"
