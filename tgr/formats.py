"""Format readers: decoded file text (or raw bytes) -> documents' text, title and metadata.

One small function per format; tgr/ingest.py finds the files, decodes them and picks the
reader by suffix. Readers never raise for one bad row: they warn and go on.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

Warn = Callable[[str], None]

ID_FIELDS = ("doc_id", "id")
TITLE_LIMIT = 200


@dataclass
class Record:
    """One document as a format reader found it (ingest gives it its content-hash id)."""
    text: str
    title: str
    external_id: str | None = None
    metadata: dict = field(default_factory=dict)
    where: str = ""  # file:line for messages, when a file holds many documents


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def first_line_title(text: str, default: str) -> str:
    """The first non-empty line (markdown '#' removed), or default."""
    title = next((line.strip().lstrip("#").strip() for line in text.splitlines() if line.strip()), "")
    return (title or default)[:TITLE_LIMIT]


def read_plain(source: str, text: str, warn: Warn) -> list[Record]:
    """.txt / .md: the whole file is one document titled by its first line."""
    text = normalise_newlines(text)
    if not text.strip():
        warn(f"{source}: empty file, skipped")
        return []
    return [Record(text=text, title=first_line_title(text, source))]


def row_record(fields: dict, where: str, warn: Warn) -> Record | None:
    """A document from one row of a row format (JSONL, CSV).

    `text` is required; the id comes from `doc_id` or `id`; `title` may be empty; a nested
    `meta` object is merged into the metadata, and every other field is kept there as is.
    """
    text = fields.get("text")
    if not isinstance(text, str) or not text.strip():
        warn(f"{where}: no text, skipped")
        return None
    metadata: dict = {}
    if isinstance(fields.get("meta"), dict):
        metadata.update(fields["meta"])
    id_field = next((f for f in ID_FIELDS if _present(fields.get(f))), None)
    for key, value in fields.items():
        if key in ("text", "title", id_field) or (key == "meta" and isinstance(value, dict)):
            continue
        metadata[key] = value
    title = fields.get("title")
    title = "" if title is None else str(title).strip()
    external_id = str(fields[id_field]).strip() if id_field else None
    return Record(text=normalise_newlines(text), title=title[:TITLE_LIMIT], external_id=external_id,
                  metadata=metadata, where=where)


def _present(value) -> bool:
    return value is not None and str(value).strip() != ""


def read_jsonl(source: str, text: str, warn: Warn) -> list[Record]:
    """.jsonl: one JSON object per line (blank lines ignored); see row_record for the fields."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            fields = json.loads(line)
        except (ValueError, RecursionError) as exc:
            warn(f"{where}: not valid JSON ({str(exc).splitlines()[0][:80]}), skipped")
            continue
        if not isinstance(fields, dict):
            warn(f"{where}: not a JSON object, skipped")
            continue
        record = row_record(fields, where, warn)
        if record is not None:
            records.append(record)
    return records
