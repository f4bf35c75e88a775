"""The summarise role: an entity's descriptions in one, within the summary budget.

LLMSummariser asks the chat model to summarise descriptions over budget (each answer
checked against the entity's own material); OfflineSummariser asks nothing, and the merge
joins and trims the descriptions. tgr.build.role_providers chooses one (summariser_for).
"""
from __future__ import annotations

from ..models.gateway import ChatJob, Gateway
from ..prompts import Prompts
from ..text import fit_tokens, match_terms


class LLMSummariser:
    """Summaries by the chat model; its name and prompt are part of the merge settings."""
    asks_model = True

    def __init__(self, gateway: Gateway, prompts: Prompts):
        self.name = gateway.chat_model.name
        self.prompt = prompts.summarize_descriptions

    def job(self, tag: str, name: str, type_: str, parts: list[str], budget: int) -> ChatJob | None:
        """The chat job summarising parts (several descriptions over budget), or None for one."""
        if len(parts) < 2:
            return None
        prompt = self.prompt.format(name=name, type=type_, max_words=max(40, budget // 2),
                                    descriptions="\n".join(f"- {fit_tokens(p, budget)}" for p in parts[:20]))
        return ChatJob(tag, prompt, validate=summary_check(name, parts))


class OfflineSummariser:
    """No summaries: descriptions over budget are joined and trimmed by the merge."""
    asks_model = False
    name = None
    prompt = ""

    def job(self, tag: str, name: str, type_: str, parts: list[str], budget: int) -> ChatJob | None:
        return None


def summary_check(name: str, descriptions: list[str]):
    """A summary must be plain text that talks about the entity's own material.

    Words and Chinese bigrams (match_terms), not jieba's words: this runs for every summary
    before the wave is sent, and segmenting a hub's many descriptions (plus loading jieba's
    dictionary) took seconds on a large Chinese graph."""
    known = set(match_terms(name + " " + " ".join(descriptions)))

    def valid(text: str) -> bool:
        text = text.strip()
        if not text or "<" in text[:20] or text.lower().startswith(("sorry", "i cannot", "i can't")):
            return False
        return len(known & set(match_terms(text))) >= 2 or len(known) < 2

    return valid
