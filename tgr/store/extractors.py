"""Who extracted a store's chunks: the chat model, or the offline extractor in its place.

A chunk the chat model's answer gave no usable entities for (looping, cut, nothing the text
names, a prompt over the context window) is extracted offline by tgr.build.extract and
recorded with extractions.extractor = FALLBACK + the reason.
"""
from __future__ import annotations

from .untrusted_text import terminal_safe

FALLBACK = "fallback: "


def extracted_by(conn, chat: str) -> str:
    """Who extracted the chunks: "8 of 10 chunks by the model, 2 by the offline fallback
    (2 looping answer)" (tgr.build.extract records a fallback's reason in extractions.extractor)."""
    total = model = 0
    reasons: dict[str, int] = {}
    for extractor, n in conn.execute("SELECT extractor, count(*) FROM extractions GROUP BY 1"):
        total += n
        text = str(extractor)
        if text.startswith(FALLBACK):
            reason = terminal_safe(text[len(FALLBACK):])
            reasons[reason] = reasons.get(reason, 0) + n
        elif text == chat:
            model += n
    if not total or (not reasons and model == total):
        return f"{total} chunks by {terminal_safe(chat)}" if total else "-"
    fallback = sum(reasons.values())
    said = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda r: -r[1]))
    other = total - model - fallback
    return (f"{model} of {total} chunks by the model, {fallback} by the offline fallback ({said})"
            + (f", {other} by other extractors" if other else ""))
