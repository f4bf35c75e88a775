"""Every build role's provider, chosen here once: the chat model's, or the offline one when
there is no chat model. (The answer role's provider: tgr.query.answerers.answerer_for.)

- extract: LLMExtractor (tgr.build.extract) or OfflineExtractor (tgr.offline.providers)
- summarise: LLMSummariser or OfflineSummariser (below). LLMSummariser asks the chat model to
  summarise an entity's descriptions over the summary budget (each answer checked against the
  entity's own material); OfflineSummariser asks nothing, and the merge joins and trims them.
- report: LLMReportWriter (tgr.build.report) or ProfileReportWriter (tgr.offline.community_reports)
"""
from __future__ import annotations

from ..models.gateway import ChatJob, Gateway
from ..offline.community_reports import ProfileReportWriter
from ..offline.providers import OfflineExtractor
from ..prompts import Prompts
from ..store.db import Connection
from ..text import fit_tokens, match_terms
from .extract import Extractor, LLMExtractor
from .report import LLMReportWriter, ReportWriter


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
        # a summary of max_words words: about 2 tokens a word leaves room, and stops a loop
        return ChatJob(tag, prompt, {"max_tokens": 2 * max(40, budget // 2) + 64},
                       validate=summary_check(name, parts))


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


def extractor_for(gateway: Gateway, prompts: Prompts, *, two_step: bool = False,
                  gleanings: int = 0, warn=None) -> Extractor:
    """The chat model's extractor, or the offline heuristic one when there is no chat model."""
    if gateway.chat_model is None:
        return OfflineExtractor()
    return LLMExtractor(gateway, prompts, two_step=two_step, gleanings=gleanings, warn=warn)


def summariser_for(gateway: Gateway, prompts: Prompts) -> LLMSummariser | OfflineSummariser:
    """The chat model's summariser, or the offline one (join and trim) when there is none."""
    if gateway.chat_model is None:
        return OfflineSummariser()
    return LLMSummariser(gateway, prompts)


def report_writer_for(gateway: Gateway, prompts: Prompts, conn: Connection | None = None) -> ReportWriter:
    """The chat model's report writer, or without a chat model the offline one, which reads
    the store (conn) for each community's profile."""
    if gateway.chat_model is None:
        return ProfileReportWriter(conn)
    return LLMReportWriter(gateway, prompts)
