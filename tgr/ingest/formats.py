"""Format readers: decoded file text (or raw bytes) -> documents' text, title and metadata.

One small function per format; tgr/ingest/sources.py finds the files, decodes them and picks the
reader by suffix. Readers never raise for one bad row: they warn and go on.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Callable

Warn = Callable[[str], None]

ID_FIELDS = ("doc_id", "id")
ROW_FIELDS = {"text", "title", "meta", *ID_FIELDS}
TITLE_LIMIT = 200
ROW_WARNINGS = 5  # per file; then one line counts the rest
PDF_HINT = "pip install 'tgr[pdf]'"


class Unreadable(Exception):
    """A whole file cannot be read in its format (one-line message naming it)."""


@dataclass
class Record:
    """One document as a format reader found it (ingest gives it its content-hash id)."""
    text: str
    title: str
    external_id: str | None = None
    metadata: dict = field(default_factory=dict)
    where: str = ""  # file:line for messages, when a file holds many documents
    whole: "Whole | None" = None  # set on a part of a text read in parts (in_parts)


@dataclass(frozen=True)
class Whole:
    """What a part of a text read in parts (in_parts) is part of: the text's own id (None for
    a file's one text) and how many parts it was cut into."""

    external_id: str | None
    parts: int


def part_id(whole_id: str | None, k: int) -> str:
    """The id of a text's part k (1-based): "part k", after the text's own id if it has one."""
    return f"{whole_id} part {k}" if whole_id else f"part {k}"


def in_parts(record: Record, most: int) -> list[Record]:
    """The record, or, when its text is longer than most characters, its parts of at most that
    many, each ending at a paragraph (else a line, else a space) where the text has one in its
    second half: a text too big for one value of the store (a whole corpus in one file) is kept
    as several documents of that file, named part 1, 2, ... (their ids, so that a new version of
    the file replaces them)."""
    text = record.text
    if len(text) <= most:
        return [record]
    cuts, start = [], 0
    while len(text) - start > most:
        end = start + most
        for separator in ("\n\n", "\n", " "):
            at = text.rfind(separator, start + most // 2, end)
            if at != -1:
                end = at + len(separator)
                break
        cuts.append((start, end))
        start = end
    cuts.append((start, len(text)))
    whole = Whole(record.external_id, len(cuts))
    return [Record(text=text[a:b], title=f"{record.title} (part {k} of {len(cuts)})",
                   external_id=part_id(record.external_id, k), metadata=dict(record.metadata),
                   where=f"{record.where or ''} part {k}".strip(), whole=whole)
            for k, (a, b) in enumerate(cuts, 1)]


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def first_line_title(text: str, default: str) -> str:
    """The first line with a letter or digit in it (markdown '#' removed), or default.

    Lines of punctuation only (reStructuredText over- and underlines, rules) are passed over.
    """
    title = next((line.strip().lstrip("#").strip() for line in text.splitlines()
                  if any(ch.isalnum() for ch in line)), "")
    return (title or default)[:TITLE_LIMIT]


def read_plain(source: str, text: str, warn: Warn, keep_boilerplate: bool = False) -> list[Record]:
    """.txt / .md: the whole file is one document titled by its first line (boilerplate
    such as a Project Gutenberg licence dropped first, and said: tgr.ingest.boilerplate)."""
    from .boilerplate import strip_boilerplate

    text = normalise_newlines(text)
    if not text.strip():
        warn(f"{source}: empty file, skipped")
        return []
    if keep_boilerplate:
        return [Record(text=text, title=first_line_title(text, source))]
    cleaned = strip_boilerplate(text)
    if not cleaned.text.strip():
        return [Record(text=text, title=first_line_title(text, source))]  # nothing but boilerplate: keep it
    metadata = {"boilerplate_chars": cleaned.dropped} if cleaned.dropped else {}
    if cleaned.dropped:
        warn(f"{source}: dropped {cleaned.dropped:,} of {len(text):,} characters as boilerplate (licence "
             "header or footer, credits, contents lists); --keep-boilerplate keeps them")
    title = (cleaned.title or first_line_title(cleaned.text, source))[:TITLE_LIMIT]
    return [Record(text=cleaned.text, title=title, metadata=metadata)]


class RowWarnings:
    """Warnings about a row format's rows: the first few in full, then one count."""

    def __init__(self, source: str, warn: Warn):
        self.source, self.warn, self.count = source, warn, 0

    def __call__(self, message: str) -> None:
        self.count += 1
        if self.count <= ROW_WARNINGS:
            self.warn(message)

    def close(self) -> None:
        if self.count > ROW_WARNINGS:
            self.warn(f"{self.source}: {self.count - ROW_WARNINGS} more rows with problems like these")


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


def _json(text: str):
    """json.loads, with NaN and Infinity (which Python accepts) as null: metadata stays JSON."""
    return json.loads(text, parse_constant=lambda name: None)


def read_jsonl(source: str, text: str, warn: Warn) -> list[Record]:
    """.jsonl: one JSON object per line (blank lines ignored); see row_record for the fields."""
    records = []
    warn = RowWarnings(source, warn)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            fields = _json(line)
        except (ValueError, RecursionError) as exc:
            warn(f"{where}: not valid JSON ({str(exc).splitlines()[0][:80]}), skipped")
            continue
        if not isinstance(fields, dict):
            warn(f"{where}: not a JSON object, skipped")
            continue
        record = row_record(fields, where, warn)
        if record is not None:
            records.append(record)
    warn.close()
    return records


def read_json(source: str, text: str, warn: Warn) -> list[Record]:
    """.json: a list of document objects (the JSONL fields), or one such object."""
    try:
        value = _json(text)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"{source}: not valid JSON ({str(exc).splitlines()[0][:80]})") from None
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, dict) for item in items):
        raise Unreadable(f"{source}: expected a JSON object or a list of objects with a 'text' field")
    warn = RowWarnings(source, warn)
    records = [r for n, item in enumerate(items, 1) if (r := row_record(item, f"{source}[{n}]", warn))]
    warn.close()
    return records


def read_csv(source: str, text: str, warn: Warn) -> list[Record]:
    """.csv / .tsv with a header row; the same fields as JSONL (empty cells are left out)."""
    lines = text.splitlines()
    header = lines[0] if lines else ""
    delimiter = "\t" if source.lower().endswith(".tsv") else max(",;\t", key=header.count)
    limit = csv.field_size_limit()
    csv.field_size_limit(1 << 30)  # a document's text is often longer than csv's 128 KiB default
    try:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        names = [name.strip() for name in next(reader, [])]
        # spreadsheet headers are often capitalised: "Text", "Title", "ID"
        names = [name.lower() if name.lower() in ROW_FIELDS else name for name in names]
        if "text" not in names:
            raise Unreadable(f"{source}: no 'text' column in the header row "
                             f"(columns: {', '.join(names)[:200] or 'none'})")
        records = []
        warn = RowWarnings(source, warn)
        line = reader.line_num
        for cells in reader:
            where, line = f"{source}:{line + 1}", reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) > len(names):
                warn(f"{where}: {len(cells)} cells for {len(names)} columns, skipped")
                continue
            fields = {name: cell for name, cell in zip(names, cells) if cell.strip() and name}
            record = row_record(fields, where, warn)
            if record is not None:
                records.append(record)
        warn.close()
    except csv.Error as exc:
        raise Unreadable(f"{source}: not valid CSV at line {reader.line_num} ({exc})") from None
    finally:
        csv.field_size_limit(limit)
    return records


def read_rst(source: str, text: str, warn: Warn, keep_boilerplate: bool = False) -> list[Record]:
    """.rst: read as plain text; the title is the first line that is not an adornment."""
    return read_plain(source, text, warn, keep_boilerplate)


# Elements whose content is not text a reader sees, and elements that start a new line.
HTML_HIDDEN = {"script", "style", "noscript", "template", "svg", "math"}
HTML_BLOCKS = {"address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
               "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
               "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tr", "td",
               "th", "ul", "caption", "body", "html"}
HTML_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
             "track", "wbr"}


class _HTMLText(HTMLParser):
    """Visible text of an HTML page, with block elements as line breaks."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.metadata: dict = {}
        self.hidden = 0
        self.in_title = False
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        attrs = {k: v for k, v in attrs if v is not None}
        if tag == "title" and not self.hidden:  # not an <svg> element's <title>
            self.in_title = True
        elif tag == "html" and attrs.get("lang"):
            self.metadata["lang"] = attrs["lang"]
        elif tag == "link" and "canonical" in attrs.get("rel", "").split() and attrs.get("href"):
            self.metadata["url"] = attrs["href"]
        elif tag == "meta" and attrs.get("name", "").lower() in ("description", "author", "date") \
                and attrs.get("content"):
            self.metadata[attrs["name"].lower()] = attrs["content"]
        if tag in HTML_HIDDEN and tag not in HTML_VOID:
            self.hidden += 1
        if tag == "pre":
            self.pre += 1
        if tag in HTML_BLOCKS:
            self.parts.append("\n")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in HTML_VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if tag in HTML_HIDDEN and self.hidden:
            self.hidden -= 1
        if tag == "pre" and self.pre:
            self.pre -= 1
        if tag in HTML_BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.in_title:
            self.title.append(data)
        elif not self.hidden:
            self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self) -> str:
        lines = (line.strip() for line in "".join(self.parts).split("\n"))
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


HTML_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)


def html_charset(raw: bytes) -> str | None:
    """The encoding a page declares in a <meta> tag near its start, if Python knows it."""
    match = HTML_CHARSET.search(raw[:4096])
    if not match:
        return None
    try:
        return codecs.lookup(match.group(1).decode("ascii")).name
    except LookupError:
        return None


def read_html(source: str, text: str, warn: Warn) -> list[Record]:
    """.html / .htm: visible text (scripts and styles dropped), <title> as the title."""
    parser = _HTMLText()
    parser.feed(text)
    parser.close()
    body = parser.text()
    if not body.strip():
        warn(f"{source}: no visible text, skipped")
        return []
    title = " ".join("".join(parser.title).split())
    return [Record(text=body, title=(title or first_line_title(body, source))[:TITLE_LIMIT],
                   metadata=parser.metadata)]


def read_pdf(source: str, raw: bytes, warn: Warn) -> list[Record]:
    """.pdf (needs the `pdf` extra): the text of every page; metadata["pages"] holds the
    character offset where each page starts, so a passage can be cited by page."""
    try:
        import pypdf
    except ImportError:
        raise Unreadable(f"{source}: reading PDF needs pypdf: {PDF_HINT}") from None
    with _captured_log("pypdf") as problems:
        text, offsets, title = _pdf_pages(source, pypdf, raw)
    if problems:
        warn(f"{source}: damaged PDF, read anyway (pypdf: {problems[0][:100]}"
             f"{f' and {len(problems) - 1} more problems' if len(problems) > 1 else ''})")
    if not text.strip():
        warn(f"{source}: no text in the PDF (scanned pages need OCR first), skipped")
        return []
    return [Record(text=text + "\n", title=(title or first_line_title(text, source))[:TITLE_LIMIT],
                   metadata={"pages": offsets})]


def _pdf_pages(source: str, pypdf, raw: bytes) -> tuple[str, list[int], str]:
    """(text of all pages, offset where each page starts, title from the PDF's info)."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable(f"{source}: encrypted PDF; decrypt it first (e.g. qpdf --decrypt)")
        pages = [normalise_newlines(page.extract_text() or "").strip() for page in reader.pages]
        info = reader.metadata or {}
        title = str(info.get("/Title") or "").strip()
    except Unreadable:
        raise
    except Exception as exc:  # pypdf raises many kinds of errors on damaged files
        raise Unreadable(f"{source}: not a readable PDF ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:100] if str(exc) else 'no details'})") from None
    offsets, text = [], ""
    for page in pages:
        if text:
            text += "\n\n"
        offsets.append(len(text))
        text += page
    return text, offsets, title


@contextmanager
def _captured_log(name: str):
    """Collect what a library logs (instead of it reaching stderr: tgr never prints)."""
    logger = logging.getLogger(name)
    messages: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(" ".join(record.getMessage().split()))
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
