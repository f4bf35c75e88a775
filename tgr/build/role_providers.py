"""Every build role's provider, chosen here once: the chat model's, or the offline one
when there is no chat model. (The answer role's provider: tgr.query.answerers.answerer_for.)

- extract: LLMExtractor (tgr.build.extract) or OfflineExtractor (tgr.offline.providers)
- summarise: LLMSummariser or OfflineSummariser (tgr.build.summarisers)
- report: LLMReportWriter (tgr.build.report) or ProfileReportWriter (tgr.offline.community_reports)
"""
from __future__ import annotations

from ..offline.community_reports import ProfileReportWriter
from ..store.db import Connection
from .extract import Extractor, LLMExtractor
from ..models.gateway import Gateway
from ..offline.providers import OfflineExtractor
from ..prompts import Prompts
from .report import LLMReportWriter, ReportWriter
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
