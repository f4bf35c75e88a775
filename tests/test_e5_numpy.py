"""tgr.models.e5_engine's shortcuts against the plain computation they replace (no model needed):
attention batched over padded windows, the folded gelu, the split into forward passes."""
from __future__ import annotations

import math

import numpy as np

from tgr.models.e5_engine import Layout, _parts, attention, gelu_folded


def one_window_at_a_time(qkv: np.ndarray, lengths: list[int], heads: int) -> np.ndarray:
    """Softmax attention of each window on its own tokens, in float64."""
    width = qkv.shape[1] // 3
    out = np.zeros((len(qkv), width))
    start = 0
    for n in lengths:
        rows = qkv[start:start + n].astype(np.float64)
        for h in range(heads):
            cols = slice(h * width // heads, (h + 1) * width // heads)
            q, k, v = (rows[:, part * width:(part + 1) * width][:, cols] for part in range(3))
            scores = q @ k.T
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[start:start + n, cols] = (weights / weights.sum(axis=1, keepdims=True)) @ v
        start += n
    return out


def test_batched_attention_equals_one_window_at_a_time():
    heads, width = 4, 32
    lengths = [300, 300, 300, 40, 38, 37, 37, 20, 20, 20, 19, 9, 3, 3, 2]  # longest first, as in forward
    rng = np.random.default_rng(7)
    qkv = rng.standard_normal((sum(lengths), 3 * width)).astype(np.float32)
    layout = Layout(np.array(lengths), heads)
    assert [count for _, _, count, _ in layout.batches] == [2, 1, 1, 1, 2, 3, 1, 1, 2, 1]  # 300s: scores cap
    got = attention(qkv, layout, np.full((len(qkv), width), np.nan, np.float32))
    assert np.abs(got - one_window_at_a_time(qkv, lengths, heads)).max() < 1e-5


def test_attention_shifts_scores_that_exp_cannot_hold():
    """Scores of +-300 overflow exp (and underflow it) in float32: those rows are shifted by
    their largest score first, and the result is still softmax attention."""
    heads, width = 2, 16
    lengths = [50, 7, 7]
    rng = np.random.default_rng(11)
    qkv = rng.standard_normal((sum(lengths), 3 * width)).astype(np.float32)
    for scale in (60.0, -60.0):  # scores up to about +-300: every row overflows or underflows
        scaled = qkv.copy()
        scaled[:, :width] *= scale
        got = attention(scaled, Layout(np.array(lengths), heads), np.empty((len(qkv), width), np.float32))
        assert np.isfinite(got).all()
        assert np.abs(got - one_window_at_a_time(scaled, lengths, heads)).max() < 1e-4


def test_folded_gelu_is_sqrt2_gelu_of_sqrt2_y():
    rng = np.random.default_rng(3)
    z = np.concatenate([np.linspace(-9, 9, 4001), rng.standard_normal(3999) * 3]).astype(np.float32).reshape(-1, 100)
    bias = np.linspace(-0.5, 0.5, 100).astype(np.float32)
    y = z.astype(np.float64) + bias
    expected = np.vectorize(lambda v: v * (1 + math.erf(v)))(y)
    got = gelu_folded(z.copy(), bias)
    assert np.all(np.abs(got - expected) <= 4e-6 * np.abs(y) + 1e-6 * np.abs(expected) + 1e-7)  # erf to 4e-6
    x = np.sqrt(2) * y  # the model's gelu, before the folding
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)
    assert np.all(np.abs(got / np.sqrt(2) - gelu) <= 3e-6 * np.abs(x) + 1e-6)


def test_windows_split_into_passes_of_about_equal_work():
    lengths = [512, 300, 7, 60, 60, 59, 250, 12, 500, 3] * 4
    for threads in (1, 2, 3):
        parts = _parts(lengths, threads)
        assert sorted(i for part in parts for i in part) == list(range(len(lengths)))
        assert len(parts) % threads == 0 and len(parts) >= sum(lengths) // 4096
        tokens = [sum(lengths[i] for i in part) for part in parts]
        assert max(tokens) - min(tokens) <= 512
    assert _parts([20, 30], 2) == [[1, 0]]  # too little for a second thread
