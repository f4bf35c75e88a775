"""HashEmbedder's vectors for a batch of texts at once, with numpy: the same numbers as its
one-text path (tgr.offline.providers.HashEmbedder._vector), bit for bit.

A vector is the sum, per bucket, of ±log1p(count × weight) over a text's features in the order
first seen (words and trigrams, then CJK bigrams), the feature's CRC-32 choosing bucket
(digest % dim) and sign (its top bit). Here the words' CRCs are taken in C-level passes, and
the CJK bigrams' are computed with numpy: a bigram feature is "b:" and two BMP characters, always
8 bytes of UTF-8, and CRC-32 over messages of one length is affine, so crc("b:" + x + y) =
first[x] ^ second[y] from two tables over the code points. np.bincount then adds every text's
contributions in their original order (a bucket's floats summed in another order could differ
in the last bit), and the squares of the norm are summed in order too.
"""
from __future__ import annotations

import math
import zlib
from array import array
from functools import lru_cache
from operator import itemgetter
from typing import Callable, Mapping, Sequence

import numpy as np

from ..text import cjk_table


def hashed_vectors(texts: Sequence[str], word_features: Callable[[str], Mapping[str, int]], dim: int,
                   weights: dict[str, float]) -> list[list[float]]:
    """The vectors of texts, given a text's word and trigram feature counts (in the order first
    seen; no bigrams: they are found here) and the weight of each kind of feature."""
    vectors: list[list[float]] = []
    start = 0
    while start < len(texts):
        # texts of GROUP_CHARS characters at a time: arrays of some 100 kB, which the C heap
        # reuses (a whole batch's, megabytes, left it fragmented: +65 MB peak RSS on 西游记)
        end, size = start + 1, len(texts[start])
        while end < len(texts) and size + len(texts[end]) <= GROUP_CHARS:
            size += len(texts[end])
            end += 1
        vectors += _group_vectors(texts[start:end], word_features, dim, weights)
        start = end
    return vectors


GROUP_CHARS = 16000


def _group_vectors(texts: Sequence[str], word_features: Callable[[str], Mapping[str, int]], dim: int,
                   weights: dict[str, float]) -> list[list[float]]:
    digests, counts, kinds, sizes = array("I"), array("q"), array("B"), []
    for features in map(word_features, texts):
        digests.extend(map(zlib.crc32, map(str.encode, features)))
        counts.extend(features.values())
        kinds.extend(map(ord, map(itemgetter(0), features)))
        sizes.append(len(features))
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), sizes)
    digests, counts, kinds = np.asarray(digests, np.uint32), np.asarray(counts, np.int64), np.asarray(kinds, np.int64)
    bigram_rows, bigram_digests, bigram_counts = _bigrams(texts)
    rows = np.concatenate([rows, bigram_rows])
    digests = np.concatenate([digests, bigram_digests])
    kinds = np.concatenate([kinds, np.full(len(bigram_counts), ord("b"))])
    counts = np.concatenate([counts, bigram_counts])
    most = 1 << int(counts.max(initial=0)).bit_length()  # a power of 2: few tables to keep
    values = _log1p_table(tuple(weights.items()), most)[kinds, counts]
    signed = np.where(digests & np.uint32(0x80000000), values, -values)
    # bincount sums each bin's weights in the order given, from zero: each bucket's terms are
    # added as the one-text path adds them
    matrix = np.bincount(rows * dim + (digests % np.uint32(dim)).astype(np.int64), signed, len(texts) * dim)
    return _unit_rows(matrix.reshape(len(texts), dim)).tolist()


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1, its squares summed in order (cumsum, not sum's pairwise
    order); a row of zeros (an empty text) becomes the first axis."""
    norms = np.sqrt(np.cumsum(matrix * matrix, axis=1)[:, -1])
    empty = norms == 0
    norms[empty] = 1.0
    matrix = matrix / norms[:, None]
    matrix[empty, 0] = 1.0
    return matrix


@lru_cache(maxsize=32)
def _log1p_table(weights: tuple[tuple[str, float], ...], most: int) -> np.ndarray:
    """log1p(count × weight) by [ord(kind), count] for counts up to most, from math.log1p
    (numpy's log1p need not round as the C library's does)."""
    table = np.zeros((128, most + 1), np.float64)
    for kind, weight in weights:
        table[ord(kind)] = [math.log1p(count * weight) for count in range(most + 1)]
    return table


def _bigrams(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(text index, CRC-32, count) of each distinct CJK bigram of each text, texts in order and
    each text's bigrams in the order first seen (as CJK_RUN's runs give them)."""
    joined = "\n".join(texts)  # a line break is no CJK character: no bigram spans two texts
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
    if not len(codes):
        return np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.int64)
    first, second, is_cjk = _tables()
    cjk = is_cjk[codes & 0xFFFF] & (codes <= 0xFFFF)  # (a code point above the BMP is never CJK)
    at = np.flatnonzero(cjk[:-1] & cjk[1:])
    if not len(at):
        return np.zeros(0, np.int64), np.zeros(0, np.uint32), np.zeros(0, np.int64)
    starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
    text_of = np.searchsorted(starts, at, side="right") - 1
    keys = (text_of.astype(np.uint64) << np.uint64(32)) | (codes[at].astype(np.uint64) << np.uint64(16)) \
        | codes[at + 1].astype(np.uint64)
    # each distinct key's first place and count, then the places in order (no second sort)
    by_key = np.argsort(keys, kind="stable")
    ordered = keys[by_key]
    group = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    counts = np.zeros(len(keys), np.int64)
    counts[by_key[group]] = np.diff(np.append(group, len(keys)))
    seen = np.flatnonzero(counts)
    at = at[seen]
    return text_of[seen], first[codes[at]] ^ second[codes[at + 1]], counts[seen]


@lru_cache(maxsize=None)
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every BMP code point: the CRC-32 part of "b:" + it as a bigram's first character
    (with the constant), as its second, and whether it is CJK (as tgr.text counts it)."""
    points = np.arange(0x10000, dtype=np.uint32)
    # its UTF-8 as three bytes (right for the CJK ranges, all from U+0800; others are never used)
    utf8 = [0xE0 | (points >> 12), 0x80 | ((points >> 6) & 0x3F), 0x80 | (points & 0x3F)]
    zero = zlib.crc32(bytes(8))
    # the linear part of each byte value at each position of an 8-byte message
    by_position = [np.array([zlib.crc32(bytes(p) + bytes([b]) + bytes(7 - p)) ^ zero for b in range(256)],
                            np.uint32) for p in range(8)]
    first = np.full(0x10000, zlib.crc32(b"b:" + bytes(6)), np.uint32)
    second = np.zeros(0x10000, np.uint32)
    for i in range(3):
        first ^= by_position[2 + i][utf8[i]]
        second ^= by_position[5 + i][utf8[i]]
    return first, second, cjk_table()
