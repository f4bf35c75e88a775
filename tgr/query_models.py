"""The models a question is asked with, and what is left out when they cannot be reached.

A shipped store must answer anyone, with no key and no network (DESIGN §5). Questions use the
chat model and embedder the store records (their keys and endpoints from the environment).
When one of them cannot be reached here (no key, no endpoint, --offline), the question is
still answered from everything else the file holds:
- no chat model: extractive answers (tgr.answerers);
- no embedder: the store's portable local vectors if it carries them (`tgr index --portable`),
  else full text, the graph walk and the reports, without vector search.
What was left out, and how to get it back, is said in one note per store (QueryModels.note).
A store's vectors are never queried with another embedder's vectors: a model named
explicitly that does not match the store is still refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .db import PORTABLE_MODEL_KEY, PORTABLE_TABLES
from .errors import ModelError, ModelMismatch, tell
from .models import ChatModel, Embedder
from .providers import (LOCAL_PROVIDERS, OFFLINE_NAMES, REMOTE_PROVIDERS, chat_for_store, embedder_for_store,
                        keep_store_vector_type, make_embedder, out_of_reach_note)
from .safe import terminal_safe



class NoVectors:
    """Stands in for an embedder that cannot be reached: retrieval leaves vectors out."""

    name = ""  # lexical: tgr.retrieve never asks it for a vector
    dim = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ModelError("no embedder is available for this store's vectors")


@dataclass
class QueryModels:
    """What questions on one store are answered with."""

    chat: ChatModel | None
    embedder: Embedder
    vectors: str = "store"           # which vectors answer: "store", "portable" or "none"
    chat_note: str | None = None     # why answers are extractive (None: they are not, or by choice)
    vector_note: str | None = None   # what vector search is missing and how to get it back

    said: set = field(default_factory=set)  # notes already given to a warn callback

    @property
    def note(self) -> str | None:
        """One line saying everything that was left out, or None."""
        return "; ".join(self.notes_for(context_only=False)) or None

    def notes_for(self, context_only: bool) -> list[str]:
        """What a question leaves out (a context needs no chat model); the chat model and the
        embedder left out for the same reason in one note."""
        notes = [n for n in (None if context_only else self.chat_note, self.vector_note) if n]
        if len(notes) == 2:
            (chat, _, chat_why), (embed, _, embed_why) = (n.partition(" out of reach (") for n in notes)
            (reason, _, chat_then), (other, _, embed_then) = (w.rpartition("): ") for w in (chat_why, embed_why))
            if reason == other:
                return [out_of_reach_note(f"{chat} and {embed}", reason, f"{chat_then}, {embed_then}")]
        return notes

    def say(self, notes: list[str], warn) -> None:
        """Give warn, on one line, the notes it has not heard yet: each is said once per store
        (with no warn callback, as a tgr.TgrWarning)."""
        unsaid = [n for n in notes if n not in self.said]
        if unsaid:
            self.said.update(unsaid)
            tell(warn, "; ".join(unsaid))

    @property
    def tables(self) -> dict[str, str] | None:
        """The vector tables searched, where they are not the store's own."""
        return PORTABLE_TABLES if self.vectors == "portable" else None

    def models(self) -> tuple:
        return self.chat, self.embedder


def resolve_query_models(meta: dict, chat_spec: ChatModel | str | None, embed_spec: Embedder | str | None,
                         **options) -> QueryModels:
    """The chat model and embedder for questions on a store with this meta; options are the
    keys and endpoint (base_url, api_key, timeout). Raises ModelMismatch only for an embedder
    named explicitly that is not the store's."""
    if chat_spec is not None and not isinstance(chat_spec, str):
        chat, chat_note = chat_spec, None
    else:
        chat, chat_note = chat_for_store(meta, chat_spec, lenient=True, **options)
    if embed_spec is not None and not isinstance(embed_spec, str):
        built = meta.get("embed_model")
        if built and built != embed_spec.name:
            raise ModelMismatch(f"this store was built with the embedding model {built}, not {embed_spec.name}")
        return QueryModels(chat, keep_store_vector_type(embed_spec, meta), chat_note=chat_note)
    try:
        embedder = keep_store_vector_type(embedder_for_store(meta, embed_spec, **options), meta)
        return QueryModels(chat, embedder, chat_note=chat_note)
    except ModelMismatch as exc:
        if not _out_of_reach(meta.get("embed_model"), embed_spec):
            raise
        reason = getattr(exc, "reason", None) or terminal_safe(str(exc))
    embedder, vectors, note = _fallback(meta, reason, offline=embed_spec is not None and embed_spec.lower() in OFFLINE_NAMES)
    return QueryModels(chat, embedder, vectors, chat_note, note)


def _out_of_reach(built: str | None, spec: str | None) -> bool:
    """Whether the store's own embedder failed to build for want of a key or endpoint (or
    because --offline forbids the network), rather than because another one was named."""
    if not built or built.partition(":")[0].lower() not in REMOTE_PROVIDERS:
        return False
    return spec is None or spec.lower() in OFFLINE_NAMES or spec == built


def _fallback(meta: dict, reason: str, offline: bool) -> tuple[Embedder, str, str]:
    """(embedder, vectors, note) when the store's embedder is out of reach."""
    built = terminal_safe(meta.get("embed_model", ""))
    if offline:
        reason = "--offline: drop it to use them"
    portable = meta.get(PORTABLE_MODEL_KEY)
    if portable and portable.partition(":")[0].lower() in LOCAL_PROVIDERS:  # never a remote one
        try:
            embedder = make_embedder(portable)
        except (ModelError, ValueError) as exc:
            reason += f"; nor its portable {terminal_safe(portable)} vectors: {terminal_safe(str(exc))}"
        else:
            if embedder.name == portable and str(embedder.dim) == str(meta.get("portable_embed_dim")):
                return embedder, "portable", out_of_reach_note(built, reason,
                                                               f"searching its portable {embedder.name} vectors")
    return NoVectors(), "none", out_of_reach_note(built, reason, "without vectors")
