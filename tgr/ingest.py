"""Read documents: files, directories (recursive, every supported format) and stdin.

This module finds and decodes files; tgr/formats.py turns a file's text into documents.
"""
from __future__ import annotations

import codecs
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from . import formats
from .errors import InputError
from .text import content_hash

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text"}
READERS = {**{suffix: formats.read_plain for suffix in TEXT_SUFFIXES}, ".jsonl": formats.read_jsonl}
STDIN = "-"


@dataclass
class Document:
    id: str
    source: str
    title: str
    text: str
    external_id: str | None = None  # the document's own id, e.g. a JSONL row's `id`
    metadata: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How messages name it: the path, and the row id for row formats."""
        return f"{self.source} (id {self.external_id})" if self.external_id else self.source


def read_documents(paths: Iterable[str], warn: Callable[[str], None] = lambda m: None,
                   stdin=None) -> list[Document]:
    """Documents from the given paths, deduplicated by content.

    Empty and binary files are skipped with a warning; a file that is not UTF-8 raises
    InputError naming it (before anything is stored).
    """
    documents: dict[str, Document] = {}
    for path in paths:
        for source, raw in _sources(path, warn, stdin):
            text = _decode(source, raw, warn)
            if text is None:
                continue
            reader = READERS.get(Path(source).suffix.lower(), formats.read_plain)
            for record in reader(source, text, warn):
                doc = Document(id=content_hash(record.text), source=source, title=record.title,
                               text=record.text, external_id=record.external_id, metadata=record.metadata)
                if doc.id in documents:
                    warn(f"{record.where or doc.label}: same content as {documents[doc.id].label}, skipped")
                    continue
                documents[doc.id] = doc
    return list(documents.values())


def _sources(path: str, warn, stdin):
    if path == STDIN:
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read()
        yield "<stdin>", data.encode("utf-8") if isinstance(data, str) else data
        return
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in READERS
                       and not any(part.startswith(".") for part in f.relative_to(p).parts))
        if not files:
            warn(f"{path}: no .txt or .md files found")
        for f in files:
            yield str(f), f.read_bytes()
    else:
        yield str(p), p.read_bytes()


def _decode(source: str, raw: bytes, warn) -> str | None:
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # what Windows Notepad ("Unicode") and PowerShell 5 redirection write
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            raise InputError(f"{source}: starts like UTF-16 but does not decode; convert it to UTF-8") from None
    if b"\x00" in raw[:8192]:
        warn(f"{source}: binary file, skipped")
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{source}: not UTF-8 (invalid byte at offset {exc.start}); "
            f"convert it first, e.g. iconv -f GB18030 -t UTF-8") from None
    return text
