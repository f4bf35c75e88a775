"""Sliding-window chunking on sentence boundaries, measured in estimated tokens."""
from __future__ import annotations

from dataclasses import dataclass

from ..text import cjk_counts, content_hash, has_cjk, split_sentences, tokens_of

DEFAULT_CHUNK_TOKENS = 1200
DEFAULT_OVERLAP_TOKENS = 100


@dataclass
class Chunk:
    id: str
    ordinal: int
    text: str
    start: int
    end: int
    tokens: int


def chunk_text(text: str, document_id: str, size: int = DEFAULT_CHUNK_TOKENS,
               overlap: int = DEFAULT_OVERLAP_TOKENS) -> list[Chunk]:
    """Windows of at most ~size tokens that end on sentence boundaries where possible.

    Consecutive windows share about `overlap` tokens of whole sentences. A sentence longer
    than a window is cut into window-sized pieces.
    """
    if size < 16:
        raise ValueError("chunk size must be at least 16 tokens")
    if not 0 <= overlap < size:
        raise ValueError("chunk overlap must be >= 0 and smaller than the chunk size")
    pieces = _pieces(text, size)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(pieces):
        j, tokens = i, 0
        while j < len(pieces) and (j == i or tokens + pieces[j][2] <= size):
            tokens += pieces[j][2]
            j += 1
        spans.append((i, j))
        if j >= len(pieces):
            break
        # step back over whole sentences worth about `overlap` tokens (at least one
        # sentence, if it is under half a window), but always advance
        k, back = j, 0
        while k - 1 > i and (back + pieces[k - 1][2] <= overlap
                             or (overlap and k == j and pieces[k - 1][2] <= size // 2)):
            back += pieces[k - 1][2]
            k -= 1
        i = k
    cjk_before = [0]  # the pieces are consecutive: a window's CJK count is the sum of its pieces'
    for piece in pieces:
        cjk_before.append(cjk_before[-1] + piece[3])
    chunks = []
    for ordinal, (i, j) in enumerate(spans):
        start, end = pieces[i][0], pieces[j - 1][1]
        body = text[start:end]
        if not body.strip():
            continue
        chunks.append(Chunk(id=content_hash(document_id, str(ordinal), body), ordinal=len(chunks), text=body,
                            start=start, end=end, tokens=tokens_of(end - start, cjk_before[j] - cjk_before[i])))
    return chunks


def _pieces(text: str, size: int) -> list[tuple[int, int, int, int]]:
    """Consecutive sentence spans (start, end, tokens, CJK characters); over-long sentences
    split to fit a window."""
    pieces = []
    sentences = split_sentences(text)
    for (start, end), cjk in zip(sentences, cjk_counts(text, [start for start, _ in sentences])):
        tokens = tokens_of(end - start, cjk)
        if tokens <= size:
            pieces.append((start, end, tokens, cjk))
            continue
        a, acc, cjk = start, 0.0, 0  # cut by accumulated tokens: scripts differ in density
        for position in range(start, end):
            weight = 1.0 if has_cjk(text[position]) else 0.25
            if acc + weight > size - 1 and position > a:
                pieces.append((a, position, tokens_of(position - a, cjk), cjk))
                a, acc, cjk = position, 0.0, 0
            acc += weight
            cjk += weight == 1.0
        pieces.append((a, end, tokens_of(end - a, cjk), cjk))
    return pieces
