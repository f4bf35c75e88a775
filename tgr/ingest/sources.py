"""Read documents: files, directories (recursive, every supported format) and stdin.

This module finds files and decodes them; tgr/ingest/formats.py turns a file into documents.
"""
from __future__ import annotations

import codecs
import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from . import formats
from ..errors import InputError
from ..store.hardening import MAX_VALUE_BYTES
from ..text import content_hash

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text"}
READERS = {
    **{suffix: formats.read_plain for suffix in TEXT_SUFFIXES},
    ".rst": formats.read_rst,
    ".jsonl": formats.read_jsonl,
    ".json": formats.read_json,
    ".csv": formats.read_csv,
    ".tsv": formats.read_csv,
    ".html": formats.read_html,
    ".htm": formats.read_html,
    ".pdf": formats.read_pdf,
}
BINARY_FORMATS = {".pdf"}  # their readers take the raw bytes
DECLARED_ENCODING = {".html": formats.html_charset, ".htm": formats.html_charset}
STDIN = "-"
# Legacy encodings tried when a file is not UTF-8, in this order of preference.
LEGACY_ENCODINGS = ["utf_16_le", "utf_16_be", "gb18030", "big5", "cp950", "big5hkscs", "cp1252", "latin_1"]
# Big5 as written in practice often holds Microsoft (cp950) or Hong Kong extensions: the
# narrowest of these that decodes the whole file is the one recorded.
FAMILIES = {name: ["big5", "cp950", "big5hkscs"] for name in ("big5", "cp950", "big5hkscs")}
# charset-normalizer's "mess" ratio above which a decoding is not trusted, unless the text
# also reads as a language (coherence): English with many curly quotes and dashes in CP1252
# scores a mess of 0.17 and a coherence of 0.78; Korean decoded as GB18030 0.17 and 0.
MAX_CHAOS, MAX_CHAOS_COHERENT, MIN_COHERENCE = 0.1, 0.2, 0.5
NAMES_SHOWN = 10
# the most characters one stored document holds: its UTF-8 text fits one value of the store
# (tgr.store.hardening.MAX_VALUE_BYTES) whatever the script; a longer one is stored in parts
MAX_DOCUMENT_CHARS = MAX_VALUE_BYTES // 4

Warn = Callable[[str], None]


@dataclass
class Document:
    id: str
    source: str
    title: str
    text: str
    external_id: str | None = None  # the document's own id, e.g. a JSONL row's `id`
    metadata: dict = field(default_factory=dict)
    where: str = ""  # how messages name it (not stored): file:line of a row, else its label
    whole: formats.Whole | None = None  # set on a part of a text too big for one document

    @property
    def whole_id(self) -> str | None:
        """The id of the text this document is of: its own, or for a part, the whole text's."""
        return self.whole.external_id if self.whole else self.external_id

    def __post_init__(self):
        self.where = self.where or self.label

    @property
    def label(self) -> str:
        """How messages name it: the path, and the row id for row formats."""
        return f"{self.source} (id {self.external_id})" if self.external_id else self.source


@dataclass
class _File:
    source: str
    raw: bytes
    explicit: bool  # named on the command line (errors stop the run) or found in a directory (warn)


def read_documents(paths: Iterable[str], warn: Warn = lambda m: None, stdin=None,
                   keep_boilerplate: bool = False) -> list[Document]:
    """Documents from the given paths, deduplicated by content (keep_boilerplate: plain text
    is kept whole, see tgr.boilerplate).

    Empty, binary and undecodable files found in a directory are skipped with a warning; a
    file named explicitly that cannot be read raises InputError (before anything is stored).
    """
    documents: dict[str, Document] = {}
    ids: dict[str, Document] = {}
    for path in paths:
        for file in _files(path, warn, stdin):
            about_rows = formats.RowWarnings(file.source, warn)  # a big file's duplicates: a few lines
            for doc in _read(file, warn, keep_boilerplate):
                if doc.id in documents:
                    about_rows(f"{doc.where}: same content as {documents[doc.id].label}, skipped")
                    continue
                if doc.external_id is not None:
                    if doc.external_id in ids:  # kept: its text differs, but citations will be ambiguous
                        about_rows(f"{doc.where}: id {doc.external_id} also names {ids[doc.external_id].where}")
                    ids.setdefault(doc.external_id, doc)
                documents[doc.id] = doc
            about_rows.close()
    return list(documents.values())


def _read(file: _File, warn: Warn, keep_boilerplate: bool = False) -> list[Document]:
    suffix = Path(file.source).suffix.lower() if file.source != "<stdin>" else ""
    reader = READERS.get(suffix, formats.read_plain)
    if keep_boilerplate and reader in (formats.read_plain, formats.read_rst):
        reader = functools.partial(reader, keep_boilerplate=True)
    try:
        if suffix in BINARY_FORMATS:
            records, encoding = reader(file.source, file.raw, warn), None
        else:
            declared = DECLARED_ENCODING[suffix](file.raw) if suffix in DECLARED_ENCODING else None
            decoded = decode(file.source, file.raw, warn, declared)
            if decoded is None:
                return []
            text, encoding = decoded
            records = reader(file.source, text, warn)
    except formats.Unreadable as exc:
        if file.explicit:
            raise InputError(str(exc)) from None
        warn(f"{exc}; skipped")
        return []
    docs = []
    for record in (part for whole in records for part in formats.in_parts(whole, MAX_DOCUMENT_CHARS)):
        # a row's own "encoding" field, if it has one, is its data and wins
        metadata = {"encoding": encoding, **record.metadata} if encoding else record.metadata
        docs.append(Document(id=content_hash(record.text), source=file.source, title=record.title,
                             text=record.text, external_id=record.external_id, metadata=metadata,
                             where=record.where, whole=record.whole))
    return docs


def decode(source: str, raw: bytes, warn: Warn, declared: str | None = None) -> tuple[str, str | None] | None:
    """(text, encoding) of a text file; encoding is None for UTF-8, the fast path.

    Binary files give None (with a warning); a file that is neither UTF-8, nor in the
    encoding it declares (`declared`, e.g. an HTML <meta charset>), nor confidently one of
    LEGACY_ENCODINGS raises formats.Unreadable with a hint naming its likely encoding.
    """
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        # what Windows Notepad ("Unicode") and PowerShell 5 redirection write
        try:
            return raw.decode("utf-16"), "utf-16"
        except UnicodeDecodeError:
            raise formats.Unreadable(f"{source}: starts like UTF-16 but does not decode; "
                                     f"convert it to UTF-8") from None
    try:
        text = raw.decode("utf-8-sig")
        if "\x00" not in text[:8192]:
            return text, None
    except UnicodeDecodeError:
        pass
    if declared and declared != "utf-8":
        try:
            return raw.decode(declared), declared
        except UnicodeDecodeError:
            pass
    found = _detect(raw)
    if found is not None:
        return found
    if b"\x00" in raw[:8192]:
        warn(f"{source}: binary file, skipped")
        return None
    raise formats.Unreadable(f"{source}: not UTF-8 and not confidently GB18030, Big5, UTF-16 or "
                             f"Latin-1/CP1252{_hint(raw)}")


def _detect(raw: bytes) -> tuple[str, str] | None:
    """The legacy encoding charset-normalizer is confident about, if any."""
    from charset_normalizer import from_bytes  # imported only for files that need it

    best = from_bytes(raw, cp_isolation=LEGACY_ENCODINGS, threshold=MAX_CHAOS_COHERENT).best()
    if best is None or best.chaos > (MAX_CHAOS_COHERENT if best.coherence >= MIN_COHERENCE else MAX_CHAOS):
        return None
    if best.encoding.startswith("utf_16") and (len(raw) % 2 or b"\x00" not in raw and not best.coherence):
        return None  # UTF-16 without a BOM is believed only for even lengths that look like text
    for encoding in FAMILIES.get(best.encoding, [best.encoding]):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:  # the detector judges samples of large files
            continue
        return (None if "\x00" in text else (text, codecs.lookup(encoding).name))
    return None


def _hint(raw: bytes) -> str:
    from charset_normalizer import from_bytes

    text = raw.decode("utf-8", "replace")
    bad = text.count("\ufffd")
    if sum(ord(ch) > 127 for ch in text) - bad > bad:  # mostly valid multi-byte UTF-8: damaged
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return (f"; it looks like UTF-8 with an invalid byte at offset {exc.start}: "
                    f"repair it or save it as UTF-8")
    best = from_bytes(raw).best()
    if best is None:
        return "; it does not look like text in any encoding"
    name = codecs.lookup(best.encoding).name.upper()
    return f"; it may be {name}: convert it first, e.g. iconv -f {name} -t UTF-8"


def _files(path: str, warn: Warn, stdin) -> Iterator[_File]:
    if path == STDIN:
        stream = stdin if stdin is not None else sys.stdin.buffer
        data = stream.read()
        yield _File("<stdin>", data.encode("utf-8") if isinstance(data, str) else data, True)
        return
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory")
    if not p.is_dir():
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        yield _File(str(p), raw, True)
        return
    files, unsupported, outside = _walk(p)
    if unsupported:
        warn(f"{path}: skipped {len(unsupported)} file(s) of unsupported types: {_names(unsupported)}")
    if outside:
        warn(f"{path}: not following {len(outside)} symlink(s) that lead outside it: {_names(outside)}")
    if not files:
        warn(f"{path}: no files of a supported type ({', '.join(sorted(READERS))})")
    for f in files:
        try:
            raw = f.read_bytes()
        except OSError as exc:
            warn(f"{f}: cannot read it ({exc.strerror or exc}), skipped")
            continue
        yield _File(str(f), raw, False)


def _walk(root: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """Supported files under root (sorted), unsupported ones, and symlinks leading outside.

    Hidden entries (a leading '.') are passed over. Symlinks are followed only when they
    resolve inside root; a file or directory reached twice (through a link) is taken once,
    by its real path where that is inside the walk (no symlink loops).
    """
    top = root.resolve()
    found: dict[Path, Path] = {}  # real path -> path as reached
    outside: list[Path] = []
    seen = {top}
    pending, linked = [root], []
    while pending or linked:
        if pending:
            directory = pending.pop()
        else:  # a linked directory only after every real one, and only if not seen yet
            directory = linked.pop(0)
            if directory.resolve() in seen:
                continue
            seen.add(directory.resolve())
        with os.scandir(directory) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.startswith("."):
                    continue
                path = Path(entry.path)
                is_link = entry.is_symlink()
                real = path.resolve()
                if is_link and not real.is_relative_to(top):
                    outside.append(path)
                elif entry.is_dir():
                    if is_link:
                        linked.append(path)
                    elif real not in seen:
                        seen.add(real)
                        pending.append(path)
                elif entry.is_file() and (real not in found or found[real].is_symlink()):
                    found[real] = path
    files = sorted(found.values())
    return ([f for f in files if f.suffix.lower() in READERS],
            [f for f in files if f.suffix.lower() not in READERS], sorted(outside))


def _names(paths: list[Path]) -> str:
    shown = ", ".join(str(p) for p in paths[:NAMES_SHOWN])
    return shown + (f" and {len(paths) - NAMES_SHOWN} more" if len(paths) > NAMES_SHOWN else "")
