"""Every build role's provider, chosen here once: the chat model's, or the offline one
when there is no chat model. (The answer role's provider: tgr.answerers.answerer_for.)

- extract: LLMExtractor (tgr.extract) or OfflineExtractor (tgr.offline)
- summarise: LLMSummariser or OfflineSummariser (tgr.summarisers)
- report: LLMReportWriter (tgr.reports) or ProfileReportWriter (tgr.community_profile)
"""
from __future__ import annotations

from .community_profile import ProfileReportWriter
from .db import Connection
from .extract import Extractor, LLMExtractor
from .gateway import Gateway
from .offline import OfflineExtractor
from .prompts import Prompts
from .reports import LLMReportWriter, ReportWriter
from .summarisers import LLMSummariser, OfflineSummariser


def extractor_for(gateway: Gateway, prompts: Prompts, *, two_step: bool = False,
                  gleanings: int = 0) -> Extractor:
    """The chat model's extractor, or the offline heuristic one when there is no chat model."""
    if gateway.chat_model is None:
        return OfflineExtractor()
    return LLMExtractor(gateway, prompts, two_step=two_step, gleanings=gleanings)


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
