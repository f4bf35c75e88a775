"""A conversation with a store: kb.chat() (or several stores': tgr.open_many(...).chat()).

Each question is asked after the turns before it (tgr.query.conversation): retrieval resolves a
follow-up against the last turn and the chat model reads the latest turns. The session keeps
the history (role/content turns, the shape the OpenAI API uses), the mode and the query
settings (e.g. level), which may change between questions.
"""
from __future__ import annotations

from typing import Callable, Iterator, Sequence

from .conversation import checked_history
from .modes import Answer
from .retrieve import MODES


class Chat:
    """A conversation with `asked` (a KnowledgeBase or tgr.multi_store.Stores)."""

    def __init__(self, asked, mode: str = "local", *, history: Sequence[dict] | None = None,
                 warn: Callable[[str], None] | None = None, **query_settings):
        self.asked = asked
        self.mode = mode
        self.warn = warn
        self.settings = dict(query_settings)
        self.history: list[dict] = checked_history(history)
        self.last: Answer | None = None  # the latest answer (its sources, entities, ...)

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        self._mode = mode

    def ask(self, question: str) -> Answer:
        """The answer to the next question of the conversation."""
        answer = self.asked.ask(question, self.mode, history=list(self.history), warn=self.warn, **self.settings)
        self._remember(question, answer)
        return answer

    def ask_stream(self, question: str) -> Iterator[str | Answer]:
        """The next answer's text pieces as they are written, then the Answer."""
        items = self.asked.ask_stream(question, self.mode, history=list(self.history), warn=self.warn,
                                      **self.settings)
        for item in items:
            if isinstance(item, Answer):
                self._remember(question, item)
            yield item

    def reset(self) -> None:
        """Forget the conversation (the next question starts a new one)."""
        self.history, self.last = [], None

    def _remember(self, question: str, answer: Answer) -> None:
        self.last = answer
        self.history += [{"role": "user", "content": question.strip()},
                         {"role": "assistant", "content": answer.answer}]
