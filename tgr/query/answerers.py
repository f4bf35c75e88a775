"""The answer role: who turns a retrieved context into an answer, chosen once per query.

With a chat model, LLMAnswerer asks it (one call for local and naive; map calls over batches
of community reports, then a reduce call, for global). Without one, the offline provider's
ExtractiveAnswerer (tgr.offline.providers) assembles the answer from the retrieved text itself, with
citations. Both sit behind the Answerer interface, as the extractor (tgr.build.extract) and the
report writer (tgr.build.report) do; tgr.query.modes never asks which one it has.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol, Sequence

from ..models.gateway import ChatJob, Gateway
from ..offline.providers import ExtractiveAnswerer
from ..offline.global_answer import OfflineGlobal, offline_global_answer
from ..parsing import parse_points
from ..prompts import Prompts


@dataclass
class ReportText:
    """One community report as global search reads it: the block a chat model maps."""

    id: str
    block: str


class Answerer(Protocol):
    """answer and reduce take the conversation the question follows (history: role/content
    turns, oldest first); their *_stream twins give the same text in pieces as it is written."""

    name: str  # recorded as the answer's model

    def answer(self, question: str, passages: list[tuple[str, str]], *, context: str = "",
               names: Sequence[str] = (), history: Sequence[dict] = (), linked: bool = False,
               searched: str = "") -> str:
        """Local and naive: an answer from the context tables, or from (citation, text) passages
        (linked: local mode's, which the graph walk linked; searched: the question as retrieval
        searched it, a follow-up's carried names added)."""

    def answer_stream(self, question: str, passages: list[tuple[str, str]], *, context: str = "",
                      names: Sequence[str] = (), history: Sequence[dict] = (), linked: bool = False,
                      searched: str = "") -> Iterator[str]:
        """answer()'s text in pieces as it is written."""

    def whole_global(self, conn, retriever, question: str, report_ids: list[str]) -> OfflineGlobal | None:
        """A global answer written whole from the store (None: map and reduce instead)."""

    def key_points(self, question: str, batches: list[list[ReportText]]) -> list[tuple[int, str]]:
        """Global's map step: (importance 0-100, cited text) points from batches of reports."""

    def reduce(self, question: str, points: list[tuple[int, str]], *, history: Sequence[dict] = ()) -> str:
        """Global's reduce step: an answer from the best points (highest first)."""

    def reduce_stream(self, question: str, points: list[tuple[int, str]], *,
                      history: Sequence[dict] = ()) -> Iterator[str]:
        """reduce()'s text in pieces as it is written."""

    def no_key_points(self, question: str, reports: list[tuple], level: int) -> tuple[list[tuple[int, str]], str]:
        """(points to cite, answer) when no report gave a point."""


# answers are a few paragraphs; a small model that loops stops here (and is stopped sooner when
# it repeats itself: tgr.models.repetition)
ANSWER_MAX_TOKENS = 1200
MAP_MAX_TOKENS = 1000  # a map call's scored points


class LLMAnswerer:
    """The chat model's answerer: the answer, map and reduce prompts through the gateway."""

    def __init__(self, gateway: Gateway, prompts: Prompts, response_type: str):
        self.gateway = gateway
        self.prompts = prompts
        self.response_type = response_type
        self.name = gateway.chat_model.name

    def answer(self, question: str, passages: list[tuple[str, str]], *, context: str = "",
               names: Sequence[str] = (), history: Sequence[dict] = (), linked: bool = False,
               searched: str = "") -> str:
        return self.gateway.chat("query", self._answer_prompt(question, context),
                                 **_conversation(history, ANSWER_MAX_TOKENS)).strip()

    def answer_stream(self, question: str, passages: list[tuple[str, str]], *, context: str = "",
                      names: Sequence[str] = (), history: Sequence[dict] = (), linked: bool = False,
                      searched: str = "") -> Iterator[str]:
        return _streamed(self.gateway, self._answer_prompt(question, context), history, ANSWER_MAX_TOKENS)

    def _answer_prompt(self, question: str, context: str) -> str:
        return self.prompts.answer.format(question=question, context=context, response_type=self.response_type)

    def whole_global(self, conn, retriever, question: str, report_ids: list[str]) -> None:
        return None  # map calls over the reports, then a reduce call

    def key_points(self, question: str, batches: list[list[ReportText]]) -> list[tuple[int, str]]:
        jobs = [ChatJob(i, self.prompts.map_points.format(
                    question=question, context="\n\n".join(r.block for r in batch)), {"max_tokens": MAP_MAX_TOKENS})
                for i, batch in enumerate(batches)]
        points = []
        for _, answer in self.gateway.chat_many("query", jobs):
            points.extend((score, text) for text, score in parse_points(answer))
        return points

    def reduce(self, question: str, points: list[tuple[int, str]], *, history: Sequence[dict] = ()) -> str:
        return self.gateway.chat("query", self._reduce_prompt(question, points),
                                 **_conversation(history, ANSWER_MAX_TOKENS)).strip()

    def reduce_stream(self, question: str, points: list[tuple[int, str]], *,
                      history: Sequence[dict] = ()) -> Iterator[str]:
        return _streamed(self.gateway, self._reduce_prompt(question, points), history, ANSWER_MAX_TOKENS)

    def _reduce_prompt(self, question: str, points: list[tuple[int, str]]) -> str:
        key_points = "\n".join(f"{n}. (importance {score}) {text}" for n, (score, text) in enumerate(points, 1))
        return self.prompts.reduce_answer.format(question=question, context=key_points,
                                                 response_type=self.response_type)

    def no_key_points(self, question: str, reports: list[tuple], level: int) -> tuple[list[tuple[int, str]], str]:
        return [], (f"I don't know: none of the {len(reports)} community reports at level "
                    f"{level} is relevant to the question.")


class OfflineAnswerer(ExtractiveAnswerer):
    """The offline provider's answerer: extractive answers, and a global answer naming the main
    communities (tgr.offline.global_answer) rather than a map and reduce over report items. It reads
    no conversation (retrieval has already resolved a follow-up against it) and writes its
    answer whole: a stream of it is one piece."""

    def answer(self, question: str, passages: list[tuple[str, str]], *, context: str = "",
               names: Sequence[str] = (), history: Sequence[dict] = (), linked: bool = False,
               searched: str = "") -> str:
        return super().answer(searched or question, passages, context=context, names=names, linked=linked)

    def answer_stream(self, question: str, passages: list[tuple[str, str]], *, context: str = "",
                      names: Sequence[str] = (), history: Sequence[dict] = (), linked: bool = False,
                      searched: str = "") -> Iterator[str]:
        return iter([self.answer(question, passages, context=context, names=names, linked=linked,
                                 searched=searched)])

    def whole_global(self, conn, retriever, question: str, report_ids: list[str]) -> OfflineGlobal:
        return offline_global_answer(conn, retriever, question, report_ids)


def _conversation(history: Sequence[dict], max_tokens: int) -> dict:
    """The chat call's params: its token budget, and the conversation so far if there is one."""
    return {"max_tokens": max_tokens, **({"history": [dict(turn) for turn in history]} if history else {})}


def _streamed(gateway: Gateway, prompt: str, history: Sequence[dict], max_tokens: int) -> Iterator[str]:
    """A query's chat call, its text in pieces as the model writes it (tgr.models.streamed_calls)."""
    from ..models.streamed_calls import stream_chat  # a question that is not streamed never needs it

    return stream_chat(gateway, "query", prompt, _conversation(history, max_tokens))


def answerer_for(gateway: Gateway, prompts: Prompts, response_type: str) -> Answerer:
    """The answerer for the gateway's chat model: the offline one when it has none."""
    if gateway.chat_model is None:
        return OfflineAnswerer()
    return LLMAnswerer(gateway, prompts, response_type)
