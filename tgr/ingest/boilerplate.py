"""Boilerplate that is not the work's knowledge, recognised when a plain-text file is read.

Dropped from the document's text (so it is neither extracted nor searched): a Project
Gutenberg header and licence footer, only at the start and end of the text (before a
"*** START OF THE PROJECT GUTENBERG EBOOK" line near the start, after an "*** END OF ..." line
near the end: such a line in the middle of a file drops nothing; in text flattened onto one
line, the marker itself up to its closing asterisks), producers' and transcribers' credits and
a printer's imprint (ISBN, "FIRST PUBLISHED") near the start (a paragraph, or in flattened text
the credit's or imprint's own words within one), a boxed transcriber's note, tables of contents
and lists of illustrations (a heading such as "CONTENTS" and the list-like paragraphs after
it), and "[Illustration]" markers (a caption's own words stay). What was dropped is counted
in the document's metadata and said when a file is read (`tgr index --keep-boilerplate`
keeps it all); the rest of the text is kept exactly.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# a marker line, or (in text flattened onto one line) the marker up to its closing asterisks
_START = re.compile(r"^\*\*\*\s*START OF (?:THE|THIS) PROJECT GUTENBERG[^*\n]*(?:\*\*\*[^\n]*?$|\*\*\*)?"
                    r"|\*\*\*\s*START OF (?:THE|THIS) PROJECT GUTENBERG[^*\n]{0,200}\*\*\*", re.I | re.M)
_END = re.compile(r"^\*\*\*\s*END OF (?:THE|THIS) PROJECT GUTENBERG[^*\n]*(?:\*\*\*[^\n]*?$|\*\*\*)?"
                  r"|\*\*\*\s*END OF (?:THE|THIS) PROJECT GUTENBERG[^*\n]{0,200}\*\*\*", re.I | re.M)
# a producers' credit inside a paragraph (text flattened onto one line): up to the team or its address
_INLINE_CREDITS = re.compile(r"(?i:\b(?:Produced by|E-?text prepared by|Transcribed by)\b.{0,300}?"
                             r"(?:Proofread(?:ing|ers)(?: Team)?(?: at (?:https?://)?[\w./-]+)?|"
                             r"(?:https?://|www\.)[\w./-]+))"
                             # a printer's imprint run together: "FIRST PUBLISHED 1915 REPRINTED 1923, ... ISBN: 0-397-...",
                             # two items or more (one ISBN in prose is the text's own: a book's article cites it)
                             r"|(?:\b(?:FIRST PUBLISHED|REPRINTED|PRINTED IN|ISBN)\b[:\s]*"
                             r"(?:[\dX][\d,X\s-]*|[A-Z]+(?: [A-Z]+)?\b)\s*){2,}",
                             re.S)
_HEADER_TITLE = re.compile(r"^Title:\s*(.+)$", re.M)
_CREDITS = re.compile(r"^(?:Produced by|E-?text prepared by|Transcribed by|ISBN|(?:FIRST )?PUBLISHED|"
                      r"REPRINTED|PRINTED (?:IN|BY)|COPYRIGHT)\b", re.I)
_ABOUT_THE_ETEXT = re.compile(r"Project Gutenberg|\be-?texts?\b|proofread|Distributed Proofreaders", re.I)
_TRANSCRIBER_BOX = re.compile(r"\+-{10,}\+\s*\|[^+]{0,1500}?Transcriber'?s? note[^+]{0,1500}?\+-{10,}\+", re.I)
_TRANSCRIBER = re.compile(r"^[\s|+\-]*Transcriber'?s? note", re.I)  # anywhere, often boxed in |...|
_ENTRY = re.compile(r"^(?:(?:CHAPTER|Chapter|STAVE|Stave|BOOK|Book|PART|Part|VOLUME|Volume)\s+[\dIVXLC]+\b|"
                    r"[A-Z][A-Z ,;'\-]+\.?$)")  # "CHAPTER 56. Of the Less ...", "EPILOGUE."
_LIST_HEADING = re.compile(r"^\s*(?:(?:TABLE OF )?CONTENTS|LIST OF (?:[A-Z]+ )*ILLUSTRATIONS|"
                           r"ILLUSTRATIONS)\.?\s*$", re.I)
_PAGE_REFERENCE = re.compile(r"(?:\s{2,}|\t)(?:\d+(?:-\d+)?|[ivxlc]+|_[A-Za-z]+_)\s*$")
_ILLUSTRATION = re.compile(r"\[Illustration(?::\s*([^\]]*))?\]", re.S)
_LIST_LINE = 60  # a table-of-contents entry is short; Gutenberg prose is wrapped at ~70
_CREDITS_WITHIN = 5000  # credits come at the start of a text
_CREDITS_PARAGRAPH = 400  # a longer paragraph is the work (text flattened onto one line): its credit alone goes
_FRONT_MATTER = 0.2  # a contents list is looked for only in the first fifth of a text
_HEADER_WITHIN = 20_000  # a Gutenberg header ends with a START line this close to the start (~1-15 KB)
_FOOTER_WITHIN = 40_000  # its licence footer starts with an END line this close to the end (~19 KB)


@dataclass
class Cleaned:
    text: str
    title: str | None  # the work's title where the boilerplate names it ("Title: ...")
    dropped: int  # characters of boilerplate removed


def strip_boilerplate(text: str) -> Cleaned:
    """The text without the boilerplate described in the module docstring. Paragraphs are
    looked at one by one and the kept ones cut out of the text once: a big file is held about
    twice, not once per paragraph list, join and substitution."""
    original = len(text)
    text, title, marked = _gutenberg_bodies(text)
    kept: list[list[int]] = []  # [start, end) spans of the text kept, adjacent ones joined
    in_list, kept_chars, start = False, 0, 0  # kept_chars: the length of the spans kept so far
    for paragraph_end, after in _paragraph_ends(text):
        paragraph = text[start:paragraph_end]
        stripped = paragraph.strip()
        span, start = (start, after), after
        if _LIST_HEADING.match(stripped) and kept_chars < _FRONT_MATTER * len(text):
            in_list = True
            continue
        if in_list and (not stripped or _list_like(paragraph)):
            continue
        in_list = False
        front = kept_chars < _CREDITS_WITHIN
        if front and len(stripped) <= _CREDITS_PARAGRAPH and (_CREDITS.match(stripped) or _ABOUT_THE_ETEXT.search(stripped)) \
                or _TRANSCRIBER.match(stripped):
            continue
        if kept and kept[-1][1] == span[0]:
            kept[-1][1] = span[1]
        else:
            kept.append(list(span))
        kept_chars += span[1] - span[0]
    if kept != [[0, len(text)]]:
        text = "".join(text[a:b] for a, b in kept)
    head = text[:_CREDITS_WITHIN]
    cleaned_head = _INLINE_CREDITS.sub("", head)
    if cleaned_head != head:
        text = cleaned_head + text[_CREDITS_WITHIN:]
    text = _TRANSCRIBER_BOX.sub("", text)  # (the same string back when nothing matches)
    text = _ILLUSTRATION.sub(lambda m: " ".join((m.group(1) or "").strip("_ ").split()), text)
    if marked or len(text) != original:
        text = text.strip("\n") + "\n"
    return Cleaned(text, title, max(0, original - len(text)))


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def _paragraph_ends(text: str):
    """(end of a paragraph, start of the next) for each paragraph, the blank lines after it
    being part of it, as re.split(r"(\n[ \t]*\n)", text) cuts the text."""
    for match in _PARAGRAPH_BREAK.finditer(text):
        yield match.start(), match.end()
    yield len(text), len(text)


def _gutenberg_bodies(text: str) -> tuple[str, str | None, bool]:
    """The text without a Project Gutenberg header (up to a START line near the start of the
    text) and footer (from an END line near its end), the title the header gives, and whether
    either was found. A START or END line anywhere else (books joined into one file, an
    anthology, a scraped dump) splits nothing and drops nothing."""
    starts = [m for m in _START.finditer(text) if m.start() <= _HEADER_WITHIN]
    ends = [m for m in _END.finditer(text) if len(text) - m.start() <= _FOOTER_WITHIN]
    begin = starts[0].end() if starts else 0
    ends = [m for m in ends if m.start() >= begin]
    finish = ends[-1].start() if ends else len(text)
    if not starts and not ends:
        return text, None, False
    header = _HEADER_TITLE.search(text, 0, starts[0].start()) if starts else None
    return text[begin:finish].strip("\n"), (header.group(1).strip() if header else None), True


def _list_like(paragraph: str) -> bool:
    """An entry of a contents or illustrations list: ends with a page reference, or is
    made only of short lines (a heading, a wrapped caption, "CHAPTER 1. Loomings.")."""
    lines = [line.strip() for line in paragraph.strip("\n").splitlines() if line.strip()]
    if not lines:
        return True
    if _PAGE_REFERENCE.search(paragraph.rstrip()) or _ILLUSTRATION.fullmatch(lines[0]) or _ENTRY.match(lines[0]):
        return True
    return all(len(line) <= _LIST_LINE for line in lines) and (
        len(lines) > 1 or len(lines[0]) <= _LIST_LINE)
