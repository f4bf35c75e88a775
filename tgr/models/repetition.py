"""Noticing an answer that repeats itself, while it is being written.

Small local models, asked for a format they cannot hold, often write the same few lines again
and again until their token limit: minutes of a 2-core machine for nothing. A streamed answer
is checked as it grows: once it ends in the same run of characters written TIMES times back to
back (and at least LEAST characters in all), it is looping, and the stream is stopped (a server
stops generating when the client hangs up), keeping the answer up to the loop's first round.

Back to back matters: a good answer repeats itself too (one sentence as the description of
three relations), but with other names between the copies.
"""
from __future__ import annotations

LEAST = 200  # characters of repetition before an answer counts as looping
TIMES = 3
PROBE = 32  # the answer's last characters, looked for earlier to find a period
CHECK_EVERY = 64  # characters appended between two checks
LONGEST_PERIOD = 4000


class RepetitionWatch:
    """Feed it the pieces of an answer; add() says when the answer has started to loop."""

    def __init__(self):
        self.parts: list[str] = []
        self.length = 0
        self.period = 0  # of the loop found (0: none)
        self._checked_at = 0

    def add(self, piece: str) -> bool:
        """Append a piece; True once the answer loops."""
        self.parts.append(piece)
        self.length += len(piece)
        if self.length - self._checked_at < CHECK_EVERY or self.length < LEAST:
            return False
        self._checked_at = self.length
        self.period = loop_period(self.text())
        return self.period > 0

    def text(self) -> str:
        joined = "".join(self.parts)
        self.parts = [joined]
        return joined

    def kept(self) -> str:
        """The answer, up to the end of its loop's first round when it loops."""
        text = self.text()
        return before_loop(text, self.period) if self.period else text


def loop_period(text: str) -> int:
    """The length of the run text ends in, written TIMES times or more back to back and LEAST
    characters or more in all; 0 when it does not end in one."""
    if len(text) < LEAST:
        return 0
    tail = text[-PROBE:]
    end = len(text) - PROBE
    at = text.rfind(tail, 0, len(text) - 1)
    while at >= 0:
        period = end - at
        if period > LONGEST_PERIOD or period * TIMES > len(text):
            return 0
        copies = max(TIMES, -(-LEAST // period))
        span = period * copies
        if span <= len(text) and text[-span:] == text[-period:] * copies:
            return period
        at = text.rfind(tail, 0, at + PROBE - 1)
    return 0


def before_loop(text: str, period: int) -> str:
    """text without the repeated rounds of its loop (its first round kept)."""
    cut = len(text) - period
    while cut - period >= 0 and text[cut - period:cut] == text[cut:cut + period]:
        cut -= period
    return text[:cut + period]
